"""The release ledger on a real PostgreSQL server: a tracked series gives the same verdicts, the
same ledger and the same fingerprints as on DuckDB [issue 51].

The series (:func:`same_series`, shared with tests/test_ledger_spark.py): a source of 60 (age,
city) cells of 3 records each, the cell's 3 records of 3 different diagnoses; Mondrian with
``key="id"``, k = l = 3 (every cell a class: 3-unique), then 26 records deleted and 30 inserted
and ``method="minvariant"`` with m = 3, then the projection on age alone with l = 3 (a new series,
partitioned anew), which must be refused: read with the m-invariant release its groups break the
series (the refusal's count is the oracle's: groups not m-unique, records whose signature
changed, or records left with fewer than l values). The DuckDB run is the reference for everything but the figures the
plain-Python oracle (tests/series_oracle.py) gives: the fingerprints (HMAC-SHA256 of the id's
text under the secret, by hashlib), the m-invariance of the first two releases and the number of
records the projection exposes.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path
from typing import Callable

import pytest

import anonydb
from anonydb.errors import AnonyDBError
from anonydb.release import ledger

import series_oracle as oracle
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

SECRET = b"ledger parity: 0123456789abcdef"
L = M = 3
SRC, OUT, VIEW = "lg_src", "lg_rel", "lg_age"
#: what an entry keeps that differs by run, not by engine
VOLATILE = ("id", "created", "checksum", "prev")  # prev: the previous checksum, which covers its time


def make_source(duck) -> None:
    duck.execute(f"CREATE OR REPLACE TABLE {SRC} AS SELECT c * 3 + j AS id, 20 + (c % 20) * 2 AS age, "
                 f"'c' || (c // 20) AS city, 'd' || ((c + j) % 5) AS dis FROM range(60) AS t(c), range(3) AS u(j)")


def change_source(duck) -> None:
    duck.execute(f"DELETE FROM {SRC} WHERE id % 7 = 0")
    duck.execute(f"INSERT INTO {SRC} SELECT 1000 + i, 21 + (i * 13) % 40, 'c' || (i % 3), 'd' || (i % 5) "
                 f"FROM range(30) AS t(i)")


def fingerprint(value) -> str:
    """The tracked id's fingerprint as the ledger keeps it, by hashlib (the text of the integer)."""
    return hmac.new(SECRET, str(value).encode(), "sha256").hexdigest()


def releases(eng, secret_file: Path) -> list:
    """The three tracked releases on ``eng``: ("ok", rows) or ("refused", (exposed, l, fewest))."""
    kw = dict(engine=eng, key="id", secret_file=secret_file, seed=1)
    runs = [lambda: anonydb.anonymize(SRC, ["age", "city"], "dis", out=OUT, k=3, l=L, **kw),
            lambda: anonydb.anonymize(SRC, ["age", "city"], "dis", method="minvariant", out=OUT, m=M,
                                      replace=True, **kw),
            lambda: anonydb.anonymize(SRC, ["age"], "dis", out=VIEW, k=3, l=L, **kw)]
    return runs


def outcome(run) -> tuple:
    """("ok", rows), or ("refused", the message without the ledger's ids and times)."""
    try:
        r = run()
    except AnonyDBError as e:
        msg = str(e)
        assert "\n" not in msg and msg.startswith("composed verification failed"), msg
        return "refused", re.sub(r"ledger release \d+( \(series '[^']*', [^)]*\))?", "ledger release #", msg)
    return "ok", r.rows


def refused_count(msg: str, series: list[dict], last: dict) -> int:
    """What the oracle says of the refused release ``last`` read after ``series``, in the terms of
    the refusal ``msg``: groups not m-unique, persons whose group changed signature, or persons
    left with fewer than l values (then also the fewest values left)."""
    if "-unique" in msg:
        return len(oracle.m_unique(last, M))
    if "differ from their earlier groups'" in msg:
        return len([v for v in oracle.m_invariant(series + [last], M) if v[0] != "m-unique" and v[1] == len(series)])
    exposed = oracle.exposed(series + [last], L)
    fewest = re.search(r"as few as (\d+)", msg)
    assert fewest and int(fewest[1]) == min(exposed.values()), msg
    return len(exposed)


def contents(eng) -> list[dict]:
    """The ledger's entries of the series' source, without what differs by run, each with its
    members (fp, grp, hist), values (grp, value, n, counterfeits) and histories (hist, value)."""
    out = []
    for e in ledger.entries(eng):
        if e["source"] != SRC:
            continue
        rid = int(e["id"])
        part = {c: v for c, v in e.items() if c not in VOLATILE}
        for table, cols in ((ledger.MEMBERS, "fp, grp, hist"), (ledger.VALUES, "grp, value, n, counterfeits"),
                            (ledger.HISTS, "hist, value")):
            rows = eng.fetch_rows(f"SELECT {cols} FROM {table} WHERE release_id = {rid}")[1]
            part[table] = sorted(tuple(str(x) for x in r) for r in rows)
        out.append(part)
    return out


def ids_of(duck) -> list[int]:
    return [int(r[0]) for r in duck.fetch_rows(f"SELECT id FROM {SRC}")[1]]


def as_oracle(part: dict) -> dict:
    """A ledger entry as the oracle's release: members by fingerprint, values per group."""
    values: dict = {}
    for grp, value, n, _ in part[ledger.VALUES]:
        values.setdefault(grp, []).extend([value] * int(n))
    return {"members": {fp: grp for fp, grp, _ in part[ledger.MEMBERS]}, "values": values}


def projection(ids_ages: list[tuple[int, int, str]]) -> dict:
    """The refused release 3 as the oracle reads it: Mondrian on age alone, untracked on a fresh
    DuckDB holding the same rows; each record goes to the class whose age range holds its age."""
    fresh = anonydb.connect()
    try:
        fresh.execute("CREATE TABLE p (id BIGINT, age BIGINT, dis VARCHAR)")
        fresh.execute("INSERT INTO p VALUES " + ", ".join(f"({i}, {a}, '{d}')" for i, a, d in ids_ages))
        anonydb.anonymize("p", ["age"], "dis", out="p_rel", engine=fresh, k=3, l=L, seed=1)
        ranges = fresh.fetch_rows("SELECT DISTINCT eq_class, age_lo, age_hi FROM p_rel")[1]
    finally:
        fresh.close()
    members, values = {}, {}
    for i, a, d in ids_ages:
        (g,) = [c for c, lo, hi in ranges if lo <= a <= hi]
        members[fingerprint(i)] = str(g)
        values.setdefault(str(g), []).append(d)
    return {"members": members, "values": values}


def same_series(other, put: Callable[[object], None], tmp_path: Path) -> None:
    """Run the series on a fresh DuckDB and on ``other`` (``put(duck)`` hands DuckDB's source to
    ``other``) and compare verdicts, ledgers and fingerprints; the figures against the oracle."""
    secret_file = tmp_path / "secret"
    secret_file.write_bytes(SECRET)
    ref = anonydb.connect()
    try:
        make_source(ref)
        put(ref)
        first_ids = ids_of(ref)
        on_duck, on_other = releases(ref, secret_file), releases(other, secret_file)
        got = [(outcome(on_duck[0]), outcome(on_other[0]))]
        change_source(ref)
        put(ref)
        second = ref.fetch_rows(f"SELECT id, age, dis FROM {SRC}")[1]
        got += [(outcome(on_duck[i]), outcome(on_other[i])) for i in (1, 2)]
        d_ledger, o_ledger = contents(ref), contents(other)
    finally:
        ref.close()

    # the verdicts: the same on both engines, and as derived by hand and by the oracle
    assert [o for _, o in got] == [d for d, _ in got]
    (v1, _), (v2, _), (v3, _) = got
    assert v1 == ("ok", 180) and v2[0] == "ok" and v3[0] == "refused"
    # the ledger: the same rows, members, groups, counterfeits and mode on both engines
    assert len(d_ledger) == 2 and o_ledger == d_ledger
    assert [(e["method"], e["mode"], e["m"], e["rows"], e["members"]) for e in o_ledger] == \
        [("mondrian", "intersection", None, 180, 180), ("minvariant", "m-invariance", M, v2[1], len(second))]
    # the fingerprints: hashlib's HMAC of each id present at each release
    assert {m[0] for m in o_ledger[0][ledger.MEMBERS]} == {fingerprint(i) for i in first_ids}
    assert {m[0] for m in o_ledger[1][ledger.MEMBERS]} == {fingerprint(i) for i, _, _ in second}
    # the oracle: releases 1-2 m-invariant; release 3 leaves v3's records with fewer than l values
    series = [as_oracle(e) for e in o_ledger]
    assert oracle.m_invariant(series, M) == []
    n = refused_count(v3[1], series, projection([(int(i), int(a), str(d)) for i, a, d in second]))
    assert n > 0 and re.search(rf"failed: (read with ledger release #, )?{n} (groups|records) ", v3[1]), (n, v3[1])
    # every entry's checksum validates under the secret: the chain accepts them
    key_type = dict(other.columns(SRC))["id"]
    t = ledger.Tracking(key="id", kind="key", secret=SECRET, source=SRC)
    assert [e["id"] for e in ledger.chain(other, t, key_type)] == [e["id"] for e in ledger.entries(other)
                                                                    if e["source"] == SRC]
    bad = ledger.Tracking(key="id", kind="key", secret=b"another secret, 32 bytes long...", source=SRC)
    with pytest.raises(anonydb.errors.InputError, match="keyed by another secret"):
        ledger.chain(other, bad, key_type)


def dropped(eng) -> None:
    """``ledger.drop`` of the series' last entry removes it with its members, values and histories."""
    last = [e["id"] for e in ledger.entries(eng) if e["source"] == SRC][-1]
    assert ledger.drop(eng, [last]) == [last]
    assert last not in [e["id"] for e in ledger.entries(eng)]
    for table in (ledger.MEMBERS, ledger.VALUES, ledger.HISTS):
        assert eng.scalar(f"SELECT count(*) FROM {table} WHERE release_id = {int(last)}") == 0
    t = ledger.Tracking(key="id", kind="key", secret=SECRET, source=SRC)
    assert len(ledger.chain(eng, t, dict(eng.columns(SRC))["id"])) == 1  # the first entry still validates


def test_series_same_on_postgres(pg, tmp_path):
    same_series(pg, lambda ref: copy_to_pg(ref, pg, SRC), tmp_path)
    dropped(pg)


def same_md5_order(other, put) -> None:
    """``md5_number`` (a seeded release's row order and group ids: the m-invariant release's ids
    compared above) orders 2,000 keyed texts as DuckDB does."""
    ref = anonydb.connect()
    try:
        ref.execute("CREATE TABLE lg_md5 AS SELECT range AS i FROM range(2000)")
        put(ref, "lg_md5")
        order = "SELECT i FROM lg_md5 ORDER BY md5_number(CAST(i AS VARCHAR) || 'a key')"
        want = ref.fetch_rows(order)[1]
    finally:
        ref.close()
    assert [int(r[0]) for r in other.fetch_rows(order)[1]] == [int(r[0]) for r in want]
    assert sorted(want) != want


def test_md5_order_same_on_postgres(pg):
    same_md5_order(pg, lambda ref, t: copy_to_pg(ref, pg, t))
