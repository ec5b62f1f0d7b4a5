"""The command line on a real PostgreSQL server, as a user drives it: Adult loaded with psql's
``\\copy``, then every command run with ``--db postgresql://...`` and its answer compared with the
same command on DuckDB over the same file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from pg_server import find_bin_dir

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

ADULT = ROOT.parent / "shared" / "datasets" / "adult"
QI = "age,sex,race,marital-status"


def _psql() -> str | None:
    for cand in [shutil.which("psql")] + [str(Path(d) / "psql") for d in ([find_bin_dir()] if find_bin_dir() else [])]:
        if cand and Path(cand).is_file():
            return cand
    return None


@pytest.fixture(scope="module")
def url(pg_url):
    """A database of its own on the session's server, Adult loaded into it with psql's \\copy."""
    if _psql() is None:
        pytest.skip("no psql: install Debian's postgresql package (.ci/run does)")
    if not (ADULT / "adult.csv").is_file():
        pytest.skip(f"the Adult data set is not at {ADULT} (../shared/datasets/adult)")
    psql(pg_url, "CREATE DATABASE cli")
    u = pg_url.rsplit("/", 1)[0] + "/cli"
    cols = ('sex text, age integer, race text, "marital-status" text, education text, "native-country" text, '
            'workclass text, occupation text, "salary-class" text')
    subprocess.run([_psql(), u, "-v", "ON_ERROR_STOP=1", "-q", "-c", f"CREATE TABLE adult ({cols})",
                    "-c", f"\\copy adult FROM '{ADULT / 'adult.csv'}' WITH (FORMAT csv, HEADER true, DELIMITER ';')"],
                   check=True, capture_output=True)
    yield u


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "anonydb", *args], capture_output=True, text=True, env=env, cwd=cwd)


def psql(url: str, sql: str) -> str:
    return subprocess.run([_psql(), url, "-Atc", sql], check=True, capture_output=True, text=True).stdout.strip()


def test_the_copied_table_is_adult(url):
    assert psql(url, "SELECT count(*) FROM adult") == "30162"


def test_check_equals_duckdb(url, tmp_path):
    args = ["--qi", QI, "--sensitive", "occupation", "--k", "5", "--l", "2", "--t", "0.3", "--json"]
    pg = run("check", "adult", "--db", url, *args)
    duck = run("check", str(ADULT / "adult.csv"), *args)
    assert pg.returncode == duck.returncode == 1, pg.stderr
    a, b = json.loads(pg.stdout), json.loads(duck.stdout)
    a.pop("source"), b.pop("source")
    assert a == b
    assert [v["holds"] for v in a["verdicts"]] == [False, False, False]


def test_check_writes_nothing(url):
    before = psql(url, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
    assert run("check", "adult", "--db", url, "--qi", QI, "--k", "2").returncode == 1
    after = psql(url, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
    assert before == after


def test_anonymize_then_check_and_report(url, tmp_path):
    r = run("anonymize", "adult", "--db", url, "--qi", QI, "--sensitive", "occupation", "--k", "10",
            "--out", "adult_k10", "--seed", "7")
    assert r.returncode == 0, r.stderr
    assert psql(url, "SELECT count(*) FROM adult_k10") == "30162"
    # the release holds only the QIs' ranges, the class and the sensitive attribute (no unlisted column)
    cols = psql(url, "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
                     "WHERE table_name = 'adult_k10'")
    assert "education" not in cols and "salary-class" not in cols and "eq_class" in cols
    smallest = int(psql(url, "SELECT min(n) FROM (SELECT count(*) AS n FROM adult_k10 GROUP BY eq_class) AS c"))
    assert smallest >= 10
    again = run("anonymize", "adult", "--db", url, "--qi", QI, "--sensitive", "occupation", "--k", "10",
                "--out", "adult_k10")
    assert again.returncode == 2 and "already exists" in again.stderr and len(again.stderr.strip().splitlines()) == 1
    rep = run("report", "adult_k10", "--db", url, "--qi", "eq_class", "--sensitive", "occupation", "--k", "10",
              "--json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout)["classes"]["min"] == smallest
    assert not psql(url, "SELECT string_agg(tablename, ',') FROM pg_tables WHERE tablename LIKE '\\_\\_anonydb%'")


def test_release_spec_with_database_url_and_plan(url, tmp_path):
    hier = {c: ADULT / f"adult_hierarchy_{c}.csv" for c in ("age", "sex", "race", "marital-status")}
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "source: adult\n"
        f"database: {url}\n"
        "attributes:\n" + "".join(f"  {c}: {{role: qi, hierarchy: {p}}}\n" for c, p in hier.items()) +
        "  occupation: sensitive\n"
        "method: fulldomain\n"
        "privacy: {k: 5}\n"
        "output: {table: adult_fd, replace: false}\n")
    plan = run("plan", str(spec))
    assert plan.returncode == 0, plan.stderr
    assert "replayed on the server" in plan.stdout and "SELECT" in plan.stdout
    assert psql(url, "SELECT count(*) FROM pg_tables WHERE tablename = 'adult_fd'") == "0"  # plan wrote nothing
    rel = run("release", str(spec))
    assert rel.returncode == 0, rel.stderr
    n = int(psql(url, "SELECT count(*) FROM adult_fd"))
    assert 0 < n <= 30162
    smallest = int(psql(url, 'SELECT min(c) FROM (SELECT count(*) AS c FROM adult_fd GROUP BY age, sex, race, '
                             '"marital-status") AS g'))
    assert smallest >= 5
    # the same spec on DuckDB over the CSV gives the same release as a multiset of rows
    duck_spec = tmp_path / "duck.yaml"
    duck_spec.write_text(spec.read_text().replace(f"database: {url}\n", "").replace(
        "source: adult\n", f"source: {ADULT / 'adult.csv'}\n").replace(
        "output: {table: adult_fd, replace: false}", f"output: {{table: adult_fd, format: csv, path: {tmp_path / 'd.csv'}}}"))
    assert run("release", str(duck_spec)).returncode == 0
    exported = tmp_path / "p.csv"
    spec.write_text(spec.read_text().replace("output: {table: adult_fd, replace: false}",
                                             f"output: {{table: adult_fd2, format: csv, path: {exported}}}"))
    assert run("release", str(spec)).returncode == 0
    assert sorted(exported.read_text().splitlines()[1:]) == sorted((tmp_path / "d.csv").read_text().splitlines()[1:])


def test_evaluate_and_tradeoff(url):
    r = run("anonymize", "adult", "--db", url, "--qi", "age,sex", "--sensitive", "occupation", "--method", "anatomy",
            "--l", "3", "--out", "adult_an", "--seed", "1")
    assert r.returncode == 0, r.stderr
    ev = run("evaluate", "adult_an", "--db", url, "--qi", "age,sex", "--sensitive", "occupation", "--json")
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["groups"] == int(psql(url, "SELECT count(DISTINCT group_id) FROM adult_an_st"))
    tr = run("tradeoff", "adult", "--db", url, "--qi", "age,sex", "--sensitive", "occupation",
             "--setting", "mondrian:k=10", "--json")
    assert tr.returncode == 0, tr.stderr
    assert json.loads(tr.stdout)["points"]


def test_bad_url_is_one_line(url):
    bad = url.rsplit(":", 1)[0] + ":1/nowhere"
    r = run("check", "adult", "--db", bad, "--qi", "age", "--k", "2")
    assert r.returncode == 2 and r.stderr.startswith("anonydb: error: cannot connect to PostgreSQL")
    assert len(r.stderr.strip().splitlines()) == 1


def test_docs_postgres_commands_run_as_written(url, tmp_path):
    """docs/engines.md's PostgreSQL commands (psql \\copy, then anonymize), run as written with PG
    set, in a fresh database of the test server, from the repository root (where ../shared is); then
    the README's, in another fresh database after the same load."""
    import re

    def pg_lines(page: str, title: str) -> list[str]:
        section = (ROOT / page).read_text().split(title, 1)[1].split("\n## ", 1)[0]
        block = re.findall(r"```bash\n(.*?)```", section, flags=re.S)[0]
        return [c.strip() for c in block.replace("\\\n", " ").splitlines() if "$PG" in c]

    docs, readme = pg_lines("docs/engines.md", "## PostgreSQL"), pg_lines("README.md", "## Engines")
    load = [c for c in docs if "psql" in c]
    assert load and readme and any(c.startswith("anonydb ") for c in docs)
    for db, cmds in (("readme", docs), ("readme_tour", load + readme)):
        psql(url, f"DROP DATABASE IF EXISTS {db}")
        psql(url, f"CREATE DATABASE {db}")
        pg = url.rsplit("/", 1)[0] + "/" + db
        env = dict(os.environ, PG=pg, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{Path(_psql()).parent}{os.pathsep}{os.environ['PATH']}")
        for cmd in cmds:
            cmd = re.sub(r"^python3 -m venv .*?pip install \S+ && ", "", cmd)  # the install is this test's own
            r = subprocess.run(["bash", "-c", cmd], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
            assert r.returncode == 0, f"{cmd}\n{r.stderr[-2000:]}"
        assert psql(pg, "SELECT count(*) FROM adult_k10") == "30162"
