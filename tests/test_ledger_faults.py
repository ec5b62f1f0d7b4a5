"""Fault injection on tracked releases: a release and its ledger entry are written both or neither
[issues 51, 62; the pattern of tests/test_faults.py].

A DuckDB file holds a source of 20k rows (1M in the slow tier) and an earlier tracked release of
it. ``anonydb anonymize ... --key id --secret-file F --replace`` (Mondrian, and in its own test
``--method minvariant``: m-invariance composes with every release of a source, and Mondrian's
classes are not m-unique) runs in a driver (tests/ledger_kill.py) that logs every statement it
sends and SIGKILLs itself at a chosen one. A clean run first measures the run's statements and
where the release's swap begins, sends its COMMIT and gets it back; the kills are then drawn
across the whole run: before a statement drawn from all of them, before one drawn from each part
(before the swap; inside its transaction: the renames and the ledger's entry; after COMMIT), and
a random share of a statement's measured time into it (mid-statement: in the minvariant test, the
COMMIT itself). The test asserts where each kill landed, as the driver recorded it, and that
every part was hit.

After each kill the release table is the earlier one (the same rows in the same order: each run
orders its rows by a fresh secret) and the ledger has no new entry (a kill before COMMIT is
sent), or the release is a new table and the ledger exactly one new entry (a kill after COMMIT
returned; either, for a kill while COMMIT runs), holding one member per tracked record and
passing its checksum (:func:`anonydb.release.ledger.chain`, :func:`~anonydb.release.ledger.problems`).
The next run after the kills sweeps what they left, links its entry to the last one's checksum,
is composed with every earlier entry and holds the fingerprints of the source's ids (HMAC-SHA256
computed here); ``anonydb releases --verify`` finds every entry intact.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest

import anonydb
import ledger_kill as kl
from anonydb.release import ledger

ROOT = Path(__file__).resolve().parents[1]
#: the release's rows and a digest of them in the table's order
RELEASE = "SELECT count(*), md5(string_agg(CAST(x AS VARCHAR), '|' ORDER BY rowid)) FROM rel AS x"
SECRET = b"ledger faults: 0123456789abcdef"
METHODS = {"mondrian": ["--k", "10", "--l", "2"], "minvariant": ["--method", "minvariant", "--m", "3"]}
#: what a kill in each phase must leave: the new release and its entry (True), the earlier ones
#: (False), either (None: COMMIT was running)
NEW = {"before": False, "swap": False, "ledger": False, "commit": None, "after": True}


def _run_args(method: str) -> list[str]:
    return ["anonymize", "big", "--qi", "age,sex,zip", "--sensitive", "disease", *METHODS[method], "--out", "rel",
            "--replace", "--db", "db.duckdb", "--quiet", "--key", "id", "--secret-file", "secret"]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ANONYDB_SECRET", None)
    return env


def _drive(d: Path, log: Path, plan: str, method: str) -> tuple[int, str]:
    p = kl.start("duckdb", log, plan, _run_args(method), d, _env())
    _, err = p.communicate(timeout=600)
    return p.returncode, err


def _state(db: Path) -> dict[str, object]:
    """The release table (its rows, and a digest of them in their order: each run's release orders
    its rows by a fresh secret) and the ledger."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out: dict[str, object] = {"rel": con.execute(RELEASE).fetchone()}
        out["source"] = con.execute("SELECT count(*), count(id), sum(hash(x)) FROM big AS x").fetchone()
        have = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        out["counterfeits"] = (con.execute("SELECT sum(counterfeits) FROM rel_counterfeits").fetchone()[0] or 0
                               if "rel_counterfeits" in have else 0)
        out["stages"] = sorted(t for t in have if t.startswith("__anonydb_stage_"))
        # the chain as stored: each entry's link and checksum, and what it was composed with
        out["links"] = con.execute("SELECT id, prev, checksum, composed FROM anonydb_releases ORDER BY id").fetchall()
    finally:
        con.close()
    eng = anonydb.connect(str(db), read_only=True)
    try:
        out["ledger"] = [(e["id"], e["members"], e["rows"], e["counterfeits"]) for e in ledger.entries(eng)]
        t = ledger.Tracking(key="id", kind="key", secret=SECRET, source="big")
        out["valid"] = [e["id"] for e in ledger.chain(eng, t, "BIGINT")]  # raises on a bad checksum
        out["problems"] = ledger.problems(eng, ledger.entries(eng, dropped=True), SECRET)
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
    assert after["problems"] == {}  # the chain holds, no orphan fingerprints
    assert set(after["members"]) == set(after["valid"])  # no members without their entry
    if after["rel"] == before["rel"]:
        assert after["ledger"] == before["ledger"] and after["links"] == before["links"], (before, after)
        return False
    assert after["ledger"][:-1] == before["ledger"] and len(after["ledger"]) == len(before["ledger"]) + 1
    rid, members, published, counterfeits = after["ledger"][-1]
    # one member per tracked record: every id of the source; the published rows add the counterfeits
    assert members == ids == after["members"][rid] and counterfeits == after["counterfeits"]
    assert published == after["rel"][0] == rows + after["counterfeits"]
    # linked to the last entry's checksum
    assert after["links"][:-1] == before["links"] and after["links"][-1][1] == before["links"][-1][2]
    return True


@pytest.fixture(scope="module", params=[20_000, pytest.param(1_000_000, marks=pytest.mark.slow)],
                ids=["20k", "1M"])
def rows(request) -> int:
    """The source's rows. The kills are aimed at statements, and a run sends the same statements at
    any size, so 20k rows reach every kill point; 1M rows (slow tier) make the statements long
    enough that a timed kill lands mid-statement in a heavy one."""
    return request.param


def _warehouse(tmp_path_factory, rows: int, method: str) -> Path:
    """A database with ``big`` and one earlier tracked release of it."""
    d = tmp_path_factory.mktemp(f"ledger_faults_{method}")
    (d / "secret").write_bytes(SECRET)
    con = duckdb.connect(str(d / "db.duckdb"))
    con.execute(f"CREATE TABLE big AS SELECT range AS id, 18 + hash(range) % 70 AS age, CASE WHEN hash(range + 1) "
                f"% 2 = 0 THEN 'M' ELSE 'F' END AS sex, 'z' || (hash(range + 2) % 400) AS zip, 'd' || "
                f"(hash(range + 3) % 12) AS disease FROM range({rows})")
    con.close()
    code, err = _drive(d, d / "first.log", "none", method)
    assert code == 0, err
    return d


@pytest.fixture(scope="module")
def mondrian(tmp_path_factory, rows):
    return _warehouse(tmp_path_factory, rows, "mondrian")


@pytest.fixture(scope="module")
def minvariant(tmp_path_factory, rows):
    return _warehouse(tmp_path_factory, rows, "minvariant")


def _fingerprints(ids) -> set[str]:
    """The ledger's fingerprint of each tracked id: HMAC-SHA256 of its text under the secret."""
    return {hmac.new(SECRET, str(i).encode(), hashlib.sha256).hexdigest() for i in ids}


def _killed_runs(d: Path, method: str, seed: int, mid_commit: bool = False) -> None:
    db = d / "db.duckdb"
    rng = random.Random(seed)
    # a clean run measures the statements (it follows an earlier release, as every killed run does)
    before = _state(db)
    code, err = _drive(d, d / f"clean-{seed}.log", "none", method)
    assert code == 0, err
    assert _both_or_neither(before, _state(db))
    stmts, kill = kl.read_log(d / f"clean-{seed}.log")
    sizes = Counter(s.phase for s in stmts)
    assert kill is None and sizes["swap"] >= 3 and sizes["ledger"] >= 5 and sizes["commit"] == 1, sizes
    assert sizes["after"] >= 1 and sizes["before"] > sizes["swap"] + sizes["ledger"], sizes
    commit = next(s for s in stmts if s.phase == "commit")
    plans = kl.draw(rng, stmts, timed=commit if mid_commit else None)
    landed: list[kl.Kill] = []
    for i, (plan, phase) in enumerate(plans):
        before = _state(db)
        log = d / f"kill-{seed}-{i}.log"
        code, err = _drive(d, log, plan, method)
        assert code == -signal.SIGKILL, (plan, err)
        _, kill = kl.read_log(log)
        assert kill is not None and (phase is None or kill.phase == phase), (plan, kill)
        landed.append(kill)
        new = _both_or_neither(before, _state(db))
        assert NEW[kill.phase] in (None, new), (plan, kill, new)
    # where the kills landed: the drawn ones where they were aimed, and every part of the run hit
    aimed = Counter(kl.BUCKET[k.phase] for k, (_, phase) in zip(landed, plans) if phase is not None)
    assert aimed == Counter(kl.BUCKET[phase] for _, phase in plans if phase is not None), landed
    hits = Counter(kl.BUCKET[k.phase] for k in landed)
    assert set(hits) == {"before", "inside", "after"} and sum(hits.values()) == len(plans), hits
    assert aimed["before"] >= 1 and aimed["inside"] >= 1 and aimed["after"] >= 1
    if mid_commit:
        assert landed[-1].phase in ("commit", "after"), landed[-1]  # COMMIT was sent before the kill
    # the next run sweeps what SIGKILL left and writes the release with its entry, linked to the
    # last entry and composed with every earlier one
    before = _state(db)
    p = subprocess.run([sys.executable, "-m", "anonydb", *_run_args(method)], cwd=d, env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    after = _state(db)
    assert _both_or_neither(before, after) and after["stages"] == []
    rows = after["source"][0]
    composed = json.loads(after["links"][-1][3])
    assert [(c["id"], c["shared"]) for c in composed] == [(e[0], rows) for e in before["ledger"]]
    assert len(before["ledger"]) >= 2 + sum(1 for k in landed if k.phase == "after")
    con = duckdb.connect(str(db), read_only=True)
    try:
        ids = [r[0] for r in con.execute("SELECT id FROM big").fetchall()]
        fps = {r[0] for r in con.execute("SELECT fp FROM anonydb_release_members WHERE release_id = "
                                         "(SELECT max(id) FROM anonydb_releases)").fetchall()}
    finally:
        con.close()
    assert fps == _fingerprints(ids)
    p = subprocess.run([sys.executable, "-m", "anonydb", "releases", "--db", "db.duckdb", "--secret-file", "secret",
                        "--verify"], cwd=d, env=_env(), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"verified {len(after['ledger'])} entries: every entry intact" in p.stdout


def test_killed_mondrian_runs(mondrian):
    _killed_runs(mondrian, "mondrian", 20261128)


def test_killed_minvariant_runs(minvariant):
    _killed_runs(minvariant, "minvariant", 20261129, mid_commit=True)


@pytest.mark.parametrize("where", ["ledger", "entry"])
def test_killed_inside_the_transaction(mondrian, tmp_path, where):
    """Killed on entry to ``ledger.write`` (the release renamed into place in the open transaction,
    nothing of the entry written), or just before the entry's own row is inserted (its members,
    values and histories inserted): the transaction is lost whole."""
    before = _state(mondrian / "db.duckdb")
    log = tmp_path / "kill.log"
    code, err = _drive(mondrian, log, where, "mondrian")
    assert code == -signal.SIGKILL, err  # killed where the driver says, not failed before
    stmts, kill = kl.read_log(log)
    assert kill is not None and kill.phase == "ledger" and kill.how == where
    # the swap had put the new release in place, in the transaction: its rename returned
    assert [s.phase for s in stmts if s.sql.startswith('ALTER TABLE') and s.sql.endswith('RENAME TO "rel"')
            and s.returned is not None] == ["swap"]
    inserted = [s.sql.split()[2] for s in stmts if s.phase == "ledger" and s.sql.startswith("INSERT INTO")
                and s.returned is not None]
    assert inserted == ([] if where == "ledger" else
                        ['"anonydb_release_members"', '"anonydb_release_values"', '"anonydb_release_hists"'])
    after = _state(mondrian / "db.duckdb")
    assert not _both_or_neither(before, after)  # neither: the swap was rolled back with the entry
