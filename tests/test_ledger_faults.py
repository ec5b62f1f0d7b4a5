"""Fault injection on tracked releases: a release and its ledger entry are written both or neither
[issue 51; the pattern of tests/test_faults.py].

A DuckDB file holds a source of 100k rows (1M in the slow tier) and an earlier tracked release of
it. ``anonydb anonymize ... --key id --secret-file F --replace`` (Mondrian, and in its own file
``--method minvariant``: m-invariance composes with every release of a source, and Mondrian's
classes are not m-unique) runs in a subprocess killed with SIGKILL at random moments. Afterwards
either the release table is the earlier one (the same rows in the same order: each run orders its
rows by a fresh secret) and the ledger
has no new entry, or the release is a new table and the ledger exactly one new entry, holding
one member per tracked record (the source's ids) and passing its checksum
(:func:`anonydb.release.ledger.chain`). Two runs are killed inside the swap's transaction, by a
driver script that replaces ``anonydb.release.ledger.write`` (on entry to it; and just before
the entry's own row is inserted, its members already in) with a SIGKILL of its own process: the
transaction is lost whole.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import anonydb
from anonydb.release import ledger

ROOT = Path(__file__).resolve().parents[1]
#: the release's rows and a digest of them in the table's order
RELEASE = "SELECT count(*), md5(string_agg(CAST(x AS VARCHAR), '|' ORDER BY rowid)) FROM rel AS x"
SECRET = b"ledger faults: 0123456789abcdef"
METHODS = {"mondrian": ["--k", "10", "--l", "2"], "minvariant": ["--method", "minvariant", "--m", "3"]}


def _run_args(method: str) -> list[str]:
    return ["anonymize", "big", "--qi", "age,sex,zip", "--sensitive", "disease", *METHODS[method], "--out", "rel",
            "--replace", "--db", "db.duckdb", "--quiet", "--key", "id", "--secret-file", "secret"]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ANONYDB_SECRET", None)
    return env


def _start(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "anonydb", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())


def _state(db: Path) -> dict[str, object]:
    """The release table (its rows, and a digest of them in their order: each run's release orders
    its rows by a fresh secret) and the ledger."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out: dict[str, object] = {"rel": con.execute(RELEASE).fetchone()}
        out["source"] = con.execute("SELECT count(*), count(id), sum(hash(x)) FROM big AS x").fetchone()
        have = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        out["counterfeits"] = (con.execute("SELECT count(*) FROM rel_counterfeits").fetchone()[0]
                               if "rel_counterfeits" in have else 0)
        out["stages"] = sorted(t for t in have if t.startswith("__anonydb_stage_"))
    finally:
        con.close()
    eng = anonydb.connect(str(db), read_only=True)
    try:
        out["ledger"] = [(e["id"], e["members"], e["rows"], e["counterfeits"]) for e in ledger.entries(eng)]
        t = ledger.Tracking(key="id", kind="key", secret=SECRET, source="big")
        out["valid"] = [e["id"] for e in ledger.chain(eng, t, "BIGINT")]  # raises on a bad checksum
        out["members"] = dict(eng.fetch_rows(f"SELECT release_id, count(*) FROM {ledger.MEMBERS} GROUP BY 1")[1])
    finally:
        eng.close()
    return out


def _both_or_neither(before: dict, after: dict) -> bool:
    """Asserts the run left the earlier release and ledger, or a new release and one new entry;
    returns whether the release is new."""
    rows, ids, _ = after["source"]
    assert after["source"] == before["source"]
    assert after["valid"] == [e[0] for e in after["ledger"]]  # every entry passes its checksum
    assert set(after["members"]) == set(after["valid"])  # no members without their entry
    if after["rel"] == before["rel"]:
        assert after["ledger"] == before["ledger"], (before, after)
        return False
    assert after["ledger"][:-1] == before["ledger"] and len(after["ledger"]) == len(before["ledger"]) + 1
    rid, members, published, counterfeits = after["ledger"][-1]
    # one member per tracked record: every id of the source; the published rows add the counterfeits
    assert members == ids == after["members"][rid] and counterfeits == after["counterfeits"]
    assert published == after["rel"][0] == rows + after["counterfeits"]
    return True


@pytest.fixture(scope="module", params=[100_000, pytest.param(1_000_000, marks=pytest.mark.slow)],
                ids=["100k", "1M"])
def rows(request) -> int:
    return request.param


def _warehouse(tmp_path_factory, rows: int, method: str) -> tuple[Path, float]:
    """A database with ``big`` and one earlier tracked release of it; (folder, seconds of a run)."""
    d = tmp_path_factory.mktemp(f"ledger_faults_{method}")
    (d / "secret").write_bytes(SECRET)
    con = duckdb.connect(str(d / "db.duckdb"))
    con.execute(f"CREATE TABLE big AS SELECT range AS id, 18 + hash(range) % 70 AS age, CASE WHEN hash(range + 1) "
                f"% 2 = 0 THEN 'M' ELSE 'F' END AS sex, 'z' || (hash(range + 2) % 400) AS zip, 'd' || "
                f"(hash(range + 3) % 12) AS disease FROM range({rows})")
    con.close()
    t0 = time.perf_counter()
    p = _start(d, *_run_args(method))
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    return d, time.perf_counter() - t0


@pytest.fixture(scope="module")
def mondrian(tmp_path_factory, rows):
    return _warehouse(tmp_path_factory, rows, "mondrian")


@pytest.fixture(scope="module")
def minvariant(tmp_path_factory, rows):
    return _warehouse(tmp_path_factory, rows, "minvariant")


def _killed_runs(d: Path, took: float, method: str, seed: int) -> None:
    rng = random.Random(seed)
    new = 0
    for m in sorted(rng.uniform(0.3, max(0.6, took * 1.1)) for _ in range(3)):
        before = _state(d / "db.duckdb")
        p = _start(d, *_run_args(method))
        time.sleep(m)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=600)
        new += _both_or_neither(before, _state(d / "db.duckdb"))
    # the next run sweeps what SIGKILL left and writes the release with its entry
    before = _state(d / "db.duckdb")
    p = _start(d, *_run_args(method))
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    after = _state(d / "db.duckdb")
    assert _both_or_neither(before, after) and after["stages"] == []


def test_killed_mondrian_runs(mondrian):
    _killed_runs(*mondrian, "mondrian", 20261128)


def test_killed_minvariant_runs(minvariant):
    _killed_runs(*minvariant, "minvariant", 20261129)


#: a driver that runs the CLI with ledger.write replaced by a SIGKILL of its own process: on entry
#: ("entry"), or as it inserts the entry's own row, after its members, values and histories ("row")
DRIVER = '''
import os, signal, sys
from anonydb.release import ledger
from anonydb.workflow.cli import main

real = ledger.write


def write(eng, *args, **kwargs):
    rel = eng.fetch_rows(os.environ["RELEASE"])[1][0]
    assert str(rel[1]) != os.environ["BEFORE"]  # after the swap: the new release is in place
    if sys.argv[1] == "entry":
        os.kill(os.getpid(), signal.SIGKILL)
    execute = eng.execute

    def killing(sql, *a, **k):
        if str(sql).startswith(f'INSERT INTO "{ledger.LEDGER}"'):
            os.kill(os.getpid(), signal.SIGKILL)
        return execute(sql, *a, **k)

    eng.execute = killing
    return real(eng, *args, **kwargs)


ledger.write = write
sys.exit(main(sys.argv[2:]))
'''


@pytest.mark.parametrize("where", ["entry", "row"])
def test_killed_inside_the_transaction(mondrian, tmp_path, where):
    d, _ = mondrian
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    before = _state(d / "db.duckdb")
    p = subprocess.Popen([sys.executable, str(driver), where, *_run_args("mondrian")], cwd=d,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**_env(), "RELEASE": RELEASE, "BEFORE": str(before["rel"][1])})
    _, err = p.communicate(timeout=600)
    assert p.returncode == -signal.SIGKILL, err  # killed where the driver says, not failed before
    after = _state(d / "db.duckdb")
    assert not _both_or_neither(before, after)  # neither: the swap was rolled back with the entry
