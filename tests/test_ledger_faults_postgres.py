"""Fault injection on tracked releases into PostgreSQL: the release and its ledger entry are written
both or neither [issue 62; tests/test_ledger_faults.py on DuckDB].

A database of its own on the session's server holds a source table of 20k rows (PostgreSQL reads
no files) and an earlier tracked release of it. ``anonydb anonymize big ... --key id --series s
--secret-file F --replace --db postgresql://...`` runs in the driver tests/ledger_kill.py, which
logs every statement it sends and SIGKILLs itself at a chosen one: at statements drawn across a
measured run (one from the whole run, one from each part: before the swap, inside its
transaction, after COMMIT; one mid-statement: a test each, asserting where it landed), and inside
the swap's transaction: on entry to the
ledger's write (the release renamed into place), before the entry's own row (its fingerprints
inserted), before COMMIT is sent. Each kill is judged by the server's own catalog: the release
table (its OID: each run puts a new table in place, a rolled back swap gives the old one back) and
the ledger's rows, read with psycopg. A kill before COMMIT is sent leaves the earlier release and
ledger, one after it returned the new release and its entry, one while it runs either; never one
without the other, never fingerprints without an entry. Afterwards ``anonydb releases --verify``
finds every entry intact and a re-run succeeds.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import anonydb
import ledger_kill as kl
from anonydb.release import ledger

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

ROOT = Path(__file__).resolve().parents[1]
SECRET = b"ledger faults on postgres: 0123456789"
ROWS = 20_000
NEW = {"before": False, "swap": False, "ledger": False, "commit": None, "after": True}


@pytest.fixture(scope="module")
def url(pg_url):
    """A database of its own with the source ``big`` (made by PostgreSQL itself)."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS ledger_faults")
        admin.execute("CREATE DATABASE ledger_faults")
    url = pg_url.rsplit("/", 1)[0] + "/ledger_faults"
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE TABLE big AS SELECT g::bigint AS id, (18 + (g * 7919) % 70)::bigint AS age, "
                    f"CASE WHEN (g * 31 + g / 3) % 2 = 0 THEN 'M' ELSE 'F' END AS sex, 'z' || ((g * 104729) % 400) "
                    f"AS zip, 'd' || ((g * 13 + g / 7) % 12) AS disease FROM generate_series(0, {ROWS - 1}) AS g")
    return url


@pytest.fixture(scope="module")
def folder(url, tmp_path_factory) -> Path:
    """The secret's file, and the first tracked release in place."""
    d = tmp_path_factory.mktemp("ledger_faults_pg")
    (d / "secret").write_bytes(SECRET)
    code, err = _drive(d, url, d / "first.log", "none")
    assert code == 0, err
    return d


def _args(url: str) -> list[str]:
    return ["anonymize", "big", "--qi", "age,sex,zip", "--sensitive", "disease", "--k", "10", "--l", "2", "--out",
            "rel", "--replace", "--db", url, "--quiet", "--key", "id", "--series", "s", "--secret-file", "secret"]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ANONYDB_SECRET", None)
    return env


def _drive(d: Path, url: str, log: Path, plan: str) -> tuple[int, str]:
    p = kl.start("postgres", log, plan, _args(url), d, _env())
    _, err = p.communicate(timeout=600)
    return p.returncode, err


def _cli(d: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "anonydb", *args], cwd=d, env=_env(), capture_output=True,
                          text=True, timeout=600)


def _state(url: str) -> dict[str, object]:
    """The release table (its OID and rows), the ledger's rows as the server holds them, and what
    anonydb's own reading of the ledger finds wrong (nothing, or it raises)."""
    with psycopg.connect(url, autocommit=True) as con:
        one = lambda sql: con.execute(sql).fetchone()  # noqa: E731
        out: dict[str, object] = {"rel": one("SELECT 'rel'::regclass::oid, (SELECT count(*) FROM rel)")}
        out["source"] = one("SELECT count(*), md5(string_agg(x::text, ',' ORDER BY id)) FROM big AS x")
        have = one("SELECT to_regclass('rel_counterfeits')")[0] is not None
        out["counterfeits"] = int(one("SELECT coalesce(sum(counterfeits), 0) FROM rel_counterfeits")[0]) if have else 0
        out["stages"] = sorted(r[0] for r in con.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE '\\_\\_anonydb\\_stage\\_%'").fetchall())
        out["entries"] = con.execute("SELECT id, members, rows, counterfeits, prev, checksum FROM anonydb_releases "
                                     "ORDER BY id").fetchall()
        out["members"] = dict(con.execute("SELECT release_id, count(*) FROM anonydb_release_members GROUP BY 1")
                              .fetchall())
        out["values"] = {r[0] for r in con.execute("SELECT DISTINCT release_id FROM anonydb_release_values")}
    eng = anonydb.connect(url, read_only=True)
    try:
        t = ledger.Tracking(key="id", kind="key", secret=SECRET, source="big", series="s")
        out["valid"] = [e["id"] for e in ledger.chain(eng, t, "BIGINT")]  # raises on a bad checksum
        out["problems"] = ledger.problems(eng, ledger.entries(eng, dropped=True), SECRET)
    finally:
        eng.close()
    return out


def _both_or_neither(before: dict, after: dict) -> bool:
    """Asserts the earlier release and ledger, or the new release and one new entry; returns
    whether the release is new."""
    assert after["source"] == before["source"]
    assert after["problems"] == {} and after["valid"] == [e[0] for e in after["entries"]]
    assert set(after["members"]) == after["values"] == set(after["valid"])  # no fingerprints without an entry
    if after["rel"][0] == before["rel"][0]:
        assert after["rel"] == before["rel"] and after["entries"] == before["entries"], (before, after)
        return False
    assert after["entries"][:-1] == before["entries"]
    rid, members, rows, counterfeits, prev, _ = after["entries"][-1]
    assert rid == before["entries"][-1][0] + 1 and prev == before["entries"][-1][5]  # linked to the last one
    assert members == after["members"][rid] == ROWS and counterfeits == after["counterfeits"]
    assert rows == after["rel"][1] == ROWS + counterfeits
    return True


def _killed(d: Path, url: str, plan: str, log: Path) -> tuple[kl.Kill, bool]:
    before = _state(url)
    code, err = _drive(d, url, log, plan)
    assert code == -signal.SIGKILL, (plan, err)
    _, kill = kl.read_log(log)
    assert kill is not None, plan
    new = _both_or_neither(before, _state(url))
    assert NEW[kill.phase] in (None, new), (plan, kill, new)
    return kill, new


def _verified_and_rerun(d: Path, url: str) -> None:
    p = _cli(d, "releases", "--db", url, "--secret-file", "secret", "--verify")
    entries = len(_state(url)["entries"])
    assert p.returncode == 0 and f"verified {entries} entries: every entry intact" in p.stdout, p.stdout + p.stderr
    before = _state(url)
    p = _cli(d, *_args(url))
    assert p.returncode == 0, p.stderr
    after = _state(url)
    assert _both_or_neither(before, after) and after["stages"] == []  # the kills' stages swept


#: the kills drawn across a measured run (tests/ledger_kill.py's ``draw``: one statement of the whole
#: run, one of each part, one mid-statement), one test each
DRAWN = 5


@pytest.fixture(scope="module")
def plans(folder, url) -> list[tuple[str, str | None]]:
    """A clean run measures the statements of a run (after an earlier release, as every killed
    run's), and the kills are drawn from them: every part of the run is aimed at."""
    before = _state(url)
    code, err = _drive(folder, url, folder / "clean.log", "none")
    assert code == 0, err
    assert _both_or_neither(before, _state(url))
    stmts, _ = kl.read_log(folder / "clean.log")
    sizes = Counter(s.phase for s in stmts)
    assert sizes["swap"] >= 3 and sizes["ledger"] >= 5 and sizes["commit"] == 1 and sizes["after"] >= 1, sizes
    drawn = kl.draw(random.Random(20261130), stmts)
    aimed = Counter(kl.BUCKET[phase] for _, phase in drawn if phase is not None)
    assert len(drawn) == DRAWN and set(aimed) == {"before", "inside", "after"}, drawn
    return drawn


@pytest.mark.parametrize("i", range(DRAWN))
def test_killed_at_a_random_statement(folder, url, plans, i):
    """Each drawn kill lands where it was aimed (the timed one wherever the run was) and leaves
    both or neither; the ledger still verifies."""
    plan, phase = plans[i]
    kill, _ = _killed(folder, url, plan, folder / f"kill-{i}.log")
    assert phase is None or kill.phase == phase, (plan, kill)
    p = _cli(folder, "releases", "--db", url, "--secret-file", "secret", "--verify")
    assert p.returncode == 0 and "every entry intact" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("plan", ["ledger", "entry", "commit"])
def test_killed_inside_the_swap_transaction(folder, url, tmp_path, plan):
    """On entry to the ledger's write, before the entry's row, before COMMIT is sent: the
    transaction is lost whole, though the release had been renamed into place in it."""
    kill, new = _killed(folder, url, plan, tmp_path / "kill.log")
    assert kill.phase == "ledger" and kill.how == plan and not new
    stmts, _ = kl.read_log(tmp_path / "kill.log")
    renamed = [s.phase for s in stmts if s.sql.startswith("ALTER TABLE") and s.sql.endswith('RENAME TO "rel"')
               and s.returned is not None]
    inserted = [s.sql.split()[2] for s in stmts if s.phase == "ledger" and s.sql.startswith("INSERT INTO")
                and s.returned is not None]
    assert renamed == ["swap"]
    assert inserted == ([] if plan == "ledger" else ['"anonydb_release_members"', '"anonydb_release_values"',
                                                    '"anonydb_release_hists"'] + (['"anonydb_releases"']
                                                                                   if plan == "commit" else []))
    _verified_and_rerun(folder, url)
