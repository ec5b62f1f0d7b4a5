"""The dbt example on a real PostgreSQL server (tests/pg_server.py), with dbt-postgres: `dbt build`
passes on the release anonydb loaded and fails on a violating model, naming the failing test; the
failing-row counts of the generic tests (k_anonymous, l_diverse, t_close; the same SQL text as on
DuckDB) agree with anonydb.check's verdicts on PostgreSQL, in dbt and on random tables; with
`person:` (several rows per person) with a plain-Python count of persons, in dbt (the visits seed)
and on random tables.

The project is examples/dbt_project_postgres (SQL models over sources that its load_sources.py
builds with anonydb in DuckDB and copies in with COPY: dbt-postgres runs no Python models); its
generic tests are ../dbt_project/tests, its profile the `postgres` target of ../dbt_project.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import runpy
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import anonydb

from conftest import ROOT, make_table
from test_dbt import PACKAGE, _dbt, _generic, _owners, person_classes, person_failing_rows, run_person_tests, visits
from test_postgres import copy_to_pg

from anonydb.engines import connect_postgres  # noqa: E402

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

EXAMPLES = ROOT / "examples"
QIS = ["age", "sex", "zip", "education"]
SCHEMA = "dbt_example"  # the models' schema (ANONYDB_PG_SCHEMA); the sources are in "anonydb"


def _dbt_postgres() -> str:
    """The dbt executable, when it has the postgres adapter (else the test skips, saying why)."""
    exe = _dbt()
    if Path(exe).parent == Path(sys.executable).parent:
        has = importlib.util.find_spec("dbt.adapters.postgres") is not None
    else:
        has = "postgres:" in subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120).stdout
    if not has:
        pytest.skip("dbt-postgres is not installed (pip install dbt-postgres 'dbt-core<1.12')")
    return exe


@pytest.fixture(scope="module")
def project(pg_url, tmp_path_factory):  # noqa: F811
    """A copy of both example projects (the Postgres one reads ../dbt_project), the sources loaded,
    and the environment dbt's `postgres` target reads."""
    exe = _dbt_postgres()
    root = tmp_path_factory.mktemp("dbt_pg") / "examples"
    for name in ("dbt_project", "dbt_project_postgres"):
        shutil.copytree(EXAMPLES / name, root / name, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    work = root / "dbt_project_postgres"
    loader = runpy.run_path(str(work / "load_sources.py"))
    assert loader["load"](pg_url, "anonydb") == ["census", "census_release"]
    u = urlsplit(pg_url)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               ANONYDB_PG_HOST=u.hostname, ANONYDB_PG_PORT=str(u.port), ANONYDB_PG_USER=u.username,
               ANONYDB_PG_PASSWORD="", ANONYDB_PG_DBNAME=u.path.lstrip("/"), ANONYDB_PG_SCHEMA=SCHEMA,
               ANONYDB_PG_SOURCE_SCHEMA="anonydb", DBT_SEND_ANONYMOUS_USAGE_STATS="false",
               DBT_ANONYDB_PATH=str(PACKAGE))
    deps = subprocess.run([exe, "deps"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert deps.returncode == 0, deps.stdout[-3000:] + deps.stderr[-3000:]

    def dbt(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, *args, "--profiles-dir", "../dbt_project", "--target", "postgres"], cwd=work,
                              env=env, capture_output=True, text=True, timeout=300)

    return work, dbt


@pytest.fixture(scope="module")
def pg(pg_url):
    eng = connect_postgres(pg_url)
    yield eng
    eng.close()


def _failures(work: Path) -> dict[str, tuple[str, int]]:
    """The last run's tests: {test name: (status, failing rows)} from target/run_results.json."""
    results = json.loads((work / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[2]: (r["status"], r["failures"])
            for r in results if r["unique_id"].startswith("test.")}


def _one(failures: dict, prefix: str) -> tuple[str, int]:
    found = [v for k, v in failures.items() if k.startswith(prefix)]
    assert len(found) == 1, (prefix, failures)
    return found[0]


def _check(pg, table: str, sensitive="occupation", **params):
    pg.con.execute(f"SET search_path TO {SCHEMA}")
    try:
        return anonydb.check(table, QIS, sensitive, engine=pg, max_groups=1, **params)
    finally:
        pg.con.execute("SET search_path TO public")


def test_dbt_build_passes_on_the_release_then_fails_on_a_violating_model(project, pg):
    work, dbt = project
    r = dbt("build")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PASS=13 WARN=0 ERROR=0" in r.stdout  # a seed, 5 models, 7 tests
    assert "target='postgres'" in r.stdout
    got = _failures(work)
    assert sorted(got.values()) == [("pass", 0)] * 7, got
    assert _one(got, "dbt_anonydb_k_anonymous_visits_release_3__patient_id") == ("pass", 0)
    assert _one(got, "dbt_anonydb_l_diverse_visits_release_3__patient_id") == ("pass", 0)
    rep = _check(pg, "census_release", k=5, l=3, t=0.35)
    assert rep.holds and all(v.violating_groups == 0 for v in rep.verdicts), rep.format()
    n, k, l = pg.con.execute(f"SELECT sum(n), min(n), min(d) FROM (SELECT count(*) n, count(DISTINCT occupation) d "
                             f"FROM {SCHEMA}.census_release GROUP BY age, sex, zip, education) g").fetchone()
    assert n == 3000 and k >= 5 and l >= 3
    cols = [c[0] for c in pg.con.execute(f"SELECT column_name FROM information_schema.columns "
                                         f"WHERE table_schema = '{SCHEMA}' AND table_name = 'census_release'")]
    assert cols and "person_id" not in cols and "name" not in cols  # identifiers dropped

    r = dbt("build", "--vars", "{include_violation: true}")
    assert r.returncode != 0
    assert "Failure in test dbt_anonydb_k_anonymous_census_raw_exposed" in r.stdout
    # the raw models' tests fail (the visits' by persons only: by rows every class has 3 visits)
    assert "ERROR=2" in r.stdout
    got = _failures(work)
    status, failing = _one(got, "dbt_anonydb_k_anonymous_census_raw_exposed")
    assert status == "fail"
    assert failing == _check(pg, "census_raw_exposed", k=5)["k-anonymity"].violating_groups > 0
    exposed = person_classes(visits(), ["age", "sex", "zip"], "patient_id")
    assert _one(got, "dbt_anonydb_k_anonymous_visits_exposed_3__age") == ("pass", 0)
    assert _one(got, "dbt_anonydb_k_anonymous_visits_exposed_3__patient_id") == \
        ("fail", sum(p < 3 for _, p, _, _ in exposed.values())) == ("fail", 11)


def test_dbt_failing_rows_agree_with_the_checks_on_the_violating_model(project, pg):
    """l_diverse and t_close (both distances) added to the raw model's tests: every failing-row count
    is anonydb.check's number of violating groups on the same PostgreSQL table."""
    import yaml

    work, dbt = project
    schema = work / "models" / "schema.yml"
    original = schema.read_text()
    doc = yaml.safe_load(original)
    raw = next(m for m in doc["models"] if m["name"] == "census_raw_exposed")
    args = dict(quasi_identifiers=QIS, sensitive="occupation")
    raw["data_tests"] += [{"dbt_anonydb.l_diverse": {"arguments": dict(args, l=3)}},
                          {"dbt_anonydb.t_close": {"arguments": dict(args, t=0.35)}},
                          {"dbt_anonydb.t_close": {"arguments": dict(args, t=0.35, distance="ordered")}}]
    schema.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        r = dbt("build", "--vars", "{include_violation: true}", "--select", "census_raw_exposed")
    finally:
        schema.write_text(original)
    assert r.returncode != 0
    assert "ERROR=4" in r.stdout, r.stdout[-3000:]
    got = _failures(work)
    want = {
        "dbt_anonydb_k_anonymous_census_raw_exposed": _check(pg, "census_raw_exposed", k=5)["k-anonymity"],
        "dbt_anonydb_l_diverse_census_raw_exposed": _check(pg, "census_raw_exposed", l=3)["l-diversity"],
        "dbt_anonydb_t_close_census_raw_exposed_age__sex__zip__education__occupation__0_35":
            _check(pg, "census_raw_exposed", t=0.35, distance="equal")["t-closeness"],
        "dbt_anonydb_t_close_census_raw_exposed_ordered__age__sex__zip__education__occupation__0_35":
            _check(pg, "census_raw_exposed", t=0.35, distance="ordered")["t-closeness"],
    }
    for prefix, verdict in want.items():
        assert f"Failure in test {prefix}" in r.stdout
        status, failing = _one(got, prefix)
        assert status == "fail" and failing == verdict.violating_groups > 0, (prefix, failing, verdict)


@pytest.mark.parametrize("seed", range(8))
def test_generic_tests_agree_with_the_checks_on_postgres(engine, pg, seed):
    """As tests/test_dbt.py on DuckDB: the generic tests' SQL, run by PostgreSQL on random tables
    (NULL quasi-identifier values included), against anonydb.check on the same PostgreSQL table."""
    rnd = random.Random(seed)
    rows = [(rnd.choice(["a", "b", None]), rnd.randint(1, 3), rnd.choice([10, 20, 30, 40, 50]))
            for _ in range(rnd.randint(10, 60))]
    make_table(engine, "t", ["q 1", "q2", "s"], rows)
    copy_to_pg(engine, pg, "t")
    qis = ["q 1", "q2"]
    con = pg.con
    k, l = rnd.randint(2, 5), rnd.randint(2, 3)
    rep = anonydb.check("t", qis, "s", engine=pg, k=k, l=l, max_groups=None)
    bad_k = con.execute(_generic("k_anonymous")(model="t", quasi_identifiers=qis, k=k)).fetchall()
    bad_l = con.execute(_generic("l_diverse")(model="t", quasi_identifiers=qis, sensitive="s", l=l)).fetchall()
    assert len(bad_k) == rep["k-anonymity"].violating_groups
    assert len(bad_l) == rep["l-diversity"].violating_groups
    for distance in ("equal", "ordered"):
        sql = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=-1, distance=distance)
        emds = [r[-1] for r in con.execute(sql).fetchall()]
        want = anonydb.check("t", qis, "s", engine=pg, t=0.5, distance=distance)["t-closeness"].achieved["t"]
        assert isinstance(want, Fraction)
        assert float(max(emds)) == pytest.approx(float(want), abs=1e-12), distance
        # at t = the achieved value the test passes; just below it, it fails
        ok = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=float(want), distance=distance)
        assert con.execute(ok).fetchall() == []
        if want > 0:
            below = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=float(want) - 1e-6,
                                        distance=distance)
            assert con.execute(below).fetchall()


@pytest.mark.parametrize("seed", range(8))
def test_person_generic_tests_agree_with_a_plain_count_on_postgres(engine, pg, seed):
    """As tests/test_dbt.py on DuckDB: k_anonymous and l_diverse with person, run by PostgreSQL on
    random tables of 1-4 rows a person (NULL persons included), give every failing row a
    plain-Python count of persons gives."""
    rnd = random.Random(seed)
    rows = _owners(rnd)
    make_table(engine, "t", ["p", "q 1", "q2", "s"], rows)
    copy_to_pg(engine, pg, "t")
    k, l = rnd.randint(2, 4), rnd.randint(2, 3)
    assert run_person_tests(pg.con, rows, k, l) == person_failing_rows(rows, k, l)


@pytest.mark.slow
def test_package_release_on_postgres_is_verified_and_refused_when_too_fine(project, pg):
    """dbt_anonydb.generalized_release built by PostgreSQL: only the listed columns, every row,
    k >= 5 and l >= 2 by anonydb.check; too fine for k = 5, it stops with one line and no table."""
    work, dbt = project
    r = dbt("build", "--select", "hier_age", "hier_zip", "census_generalized")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cols = [c[0] for c in pg.con.execute(
        f"SELECT column_name FROM information_schema.columns WHERE table_schema = '{SCHEMA}' "
        f"AND table_name = 'census_generalized' ORDER BY ordinal_position")]
    assert cols == ["age", "sex", "zip", "occupation"]
    pg.con.execute(f"SET search_path TO {SCHEMA}")
    try:
        rep = anonydb.check("census_generalized", ["age", "sex", "zip"], "occupation", engine=pg, k=5, l=2)
    finally:
        pg.con.execute("SET search_path TO public")
    assert rep.holds and rep.rows == 3000
    r = dbt("build", "--select", "census_generalized_unsafe", "--vars", "{include_unsafe_release: true}")
    assert r.returncode != 0
    lines = [x for x in r.stdout.splitlines() if "anonydb: " in x]
    assert len(lines) == 1 and "anonydb: the release is not 5-anonymous:" in lines[0], r.stdout[-2000:]
    assert pg.con.execute(f"SELECT count(*) FROM information_schema.tables WHERE table_schema = '{SCHEMA}' "
                          f"AND table_name LIKE 'census_generalized_unsafe%'").fetchone()[0] == 0
