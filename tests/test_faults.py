"""Fault injection: a release run killed at random moments never costs a table.

A database holds a source of 100k rows (1M in the slow tier), another table and an earlier
release. ``anonydb anonymize ... --replace`` runs in a subprocess and is killed (SIGKILL, or
SIGTERM) at random moments of its run. Afterwards the source and the other table are unchanged, the release is either the earlier
one (same checksum) or a complete, verified new one, and the next run leaves no staging table.
Two writers at once: one runs, the other is refused with one line and exit 2.
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

ROOT = Path(__file__).resolve().parents[1]
K = 10
RUN = ["anonymize", "big", "--qi", "age,sex,zip", "--sensitive", "disease", "--k", str(K), "--out", "rel",
       "--replace", "--db", "db.duckdb", "--quiet"]


def _start(cwd: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "anonydb", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _state(db: Path) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        out: dict[str, object] = {"tables": names}
        for t in names:
            out[t] = con.execute(f'SELECT count(*), sum(hash(x)) FROM "{t}" AS x').fetchone()
        if "rel" in names:
            out["rel_min_group"] = con.execute(
                "SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY eq_class, age, age_lo, age_hi, sex, zip)"
            ).fetchone()[0]
        return out
    finally:
        con.close()


@pytest.fixture(scope="module", params=[100_000, pytest.param(1_000_000, marks=pytest.mark.slow)],
                ids=["100k", "1M"])
def warehouse(request, tmp_path_factory) -> tuple[Path, dict, float, int]:
    """The database with its earlier release; returns (folder, state, seconds of one full run, rows)."""
    rows = request.param
    d = tmp_path_factory.mktemp("faults")
    con = duckdb.connect(str(d / "db.duckdb"))
    con.execute(f"CREATE TABLE big AS SELECT 18 + hash(range) % 70 AS age, CASE WHEN hash(range + 1) % 2 = 0 THEN "
                f"'M' ELSE 'F' END AS sex, 'z' || (hash(range + 2) % 400) AS zip, 'd' || (hash(range + 3) % 12) AS "
                f"disease, range AS person_id FROM range({rows})")
    con.execute("CREATE TABLE other AS SELECT range AS i, 'v' || range AS v FROM range(1000)")
    con.close()
    t0 = time.perf_counter()
    p = _start(d, *RUN)
    out, err = p.communicate(timeout=600)
    took = time.perf_counter() - t0
    assert p.returncode == 0, err
    return d, _state(d / "db.duckdb"), took, rows


def _assert_intact(d: Path, before: dict, rows: int) -> None:
    after = _state(d / "db.duckdb")
    assert after["big"] == before["big"] and after["other"] == before["other"]
    if after["rel"] != before["rel"]:  # the new release, complete and verified
        assert after["rel"][0] == rows and after["rel_min_group"] >= K


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_killed_runs_lose_nothing(warehouse, sig):
    d, before, took, rows = warehouse
    rng = random.Random(20261125 + int(sig))
    moments = sorted(rng.uniform(0.3, max(0.6, took * 1.1)) for _ in range(4))
    for m in moments:
        p = _start(d, *RUN)
        time.sleep(m)
        p.send_signal(sig)
        _, err = p.communicate(timeout=600)
        if sig == signal.SIGTERM and p.returncode not in (0, -signal.SIGTERM):
            assert p.returncode == 2 and "Traceback" not in err, err
            assert "interrupted by SIGTERM" in err or "anonydb: error:" in err
        _assert_intact(d, before, rows)
        if sig == signal.SIGTERM:  # the handler cleaned up: no staging table even before the next run
            assert not [t for t in _state(d / "db.duckdb")["tables"] if t.startswith("__anonydb_stage_")]
    # the next run sweeps what SIGKILL left and writes a verified release
    p = _start(d, *RUN)
    _, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    state = _state(d / "db.duckdb")
    assert state["tables"] == ["big", "other", "rel"]
    assert state["big"] == before["big"] and state["rel"][0] == rows and state["rel_min_group"] >= K
    before.update(rel=state["rel"], rel_min_group=state["rel_min_group"])


def test_two_writers(warehouse):
    d, before, _, rows = warehouse
    a, b = _start(d, *RUN), _start(d, *RUN)
    (_, ea), (_, eb) = a.communicate(timeout=600), b.communicate(timeout=600)
    codes = sorted([a.returncode, b.returncode])
    assert codes in ([0, 0], [0, 2]), (ea, eb)  # both in turn, or the second refused
    for code, err in ((a.returncode, ea), (b.returncode, eb)):
        if code == 2:
            lines = [x for x in err.splitlines() if x.strip()]
            assert len(lines) == 1 and "is in use by another process" in lines[0], err
    state = _state(d / "db.duckdb")
    assert state["tables"] == ["big", "other", "rel"] and state["big"] == before["big"]
    assert state["rel"][0] == rows and state["rel_min_group"] >= K
