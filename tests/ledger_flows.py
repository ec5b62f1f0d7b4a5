"""What the flow tests of releases over time share [issue 62]: a changing population of persons
written month by month, the candidate release each month would publish (a probe written into a
database of its own, untracked), and the oracle's verdict on it (tests/series_oracle.py: the
intersection attack over every release holding a person, and Byun et al.'s difference attack on
the persons new since an earlier release).

The persons keep their QIs and their sensitive value from month to month; some leave and new ones
come. Everything here is plain Python and DuckDB, apart from the probe, which runs anonydb's own
Mondrian (untracked, in memory) to learn the partition the tracked run will publish; the verdict
on that partition is the oracle's alone.
"""

from __future__ import annotations

import csv
import hmac
import random
from collections import defaultdict
from pathlib import Path

import duckdb

import series_oracle as so

SECRET = "0123456789abcdef-monthly-flows"
DIS = ["flu", "hiv", "cold", "cancer", "ulcer"]
K, L = 8, 3


def population(seed: int, months: int, start: int = 240, churn: float = 0.15, new: int = 40) -> list[dict]:
    """Month by month: rid -> (age, zip, dis). Each month a share of the persons leaves and ``new``
    persons come; a person's values never change."""
    rng = random.Random(seed)
    everyone: dict[int, tuple] = {}
    nxt = 0

    def person() -> int:
        nonlocal nxt
        everyone[nxt] = (rng.randint(20, 70), rng.randint(100, 160), rng.choice(DIS))
        nxt += 1
        return nxt - 1

    alive = [person() for _ in range(start)]
    out = []
    for m in range(months):
        if m:
            alive = [p for p in alive if rng.random() >= churn] + [person() for _ in range(new)]
        out.append({p: everyone[p] for p in alive})
    return out


def write_csv(path: Path, month: dict, columns: tuple[str, ...] = ("rid", "age", "zip", "dis")) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for p, (age, zip_, dis) in sorted(month.items()):
            w.writerow([p, age, zip_, dis])
    return path


def put(con, name: str, month: dict, columns: tuple[str, ...] = ("rid", "age", "zip", "dis")) -> None:
    rid, age, zip_, dis = columns
    con.execute(f"CREATE OR REPLACE TABLE {name} ({rid} BIGINT, {age} BIGINT, {zip_} BIGINT, {dis} VARCHAR)")
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", [[p, *r] for p, r in sorted(month.items())])


def groups(rows: list[tuple], month: dict) -> dict:
    """The oracle's release of a Mondrian table of (age, zip): each person in the one class box
    holding their QIs (strict Mondrian's boxes are disjoint), the values its rows publish."""
    boxes = {r[0]: r[1:5] for r in rows}
    members = {}
    for p, (age, zip_, _) in month.items():
        hit = [g for g, (alo, ahi, zlo, zhi) in boxes.items() if alo <= age <= ahi and zlo <= zip_ <= zhi]
        assert len(hit) == 1, (p, hit)
        members[p] = hit[0]
    values = defaultdict(list)
    for g, *_, dis in rows:
        values[g].append(dis)
    release = {"members": members, "values": dict(values)}
    assert so.well_formed(release) == []
    return release


def read_release(con, table: str, month: dict) -> dict:
    return groups(con.execute(f"SELECT eq_class, age_lo, age_hi, zip_lo, zip_hi, dis FROM {table}").fetchall(),
                  month)


def probe(month: dict) -> dict:
    """The release Mondrian would write for this month (k, l; by persons), untracked, in memory."""
    import anonydb

    con = duckdb.connect()
    put(con, "src", month)
    anonydb.anonymize("src", ["age", "zip"], "dis", out="probe", engine=con, k=K, l=L, person="rid")
    return read_release(con, "probe", month)


def partition(release: dict) -> set:
    by = defaultdict(set)
    for p, g in release["members"].items():
        by[g].add(p)
    return {frozenset(x) for x in by.values()}


def verdict(accepted: list[dict], cand: dict) -> str | None:
    """The oracle's reason to refuse ``cand`` after the ``accepted`` releases, or None."""
    series = accepted + [cand]
    if so.exposed(series, L):
        return "intersection"
    if so.byun_new_exposed(series, L):
        return "difference"
    return None


def fingerprint(value, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), str(value).encode(), "sha256").hexdigest()


def ledger_members(db: str, rid: int) -> dict:
    with duckdb.connect(db, read_only=True) as con:
        return dict(con.execute("SELECT fp, grp FROM anonydb_release_members WHERE release_id = ?", [rid]).fetchall())


def counts(db: str) -> tuple:
    """What a refused run must leave as it was: the ledger's rows and every table's rows."""
    with duckdb.connect(db, read_only=True) as con:
        tables = sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
        return tuple((t, con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in tables)
