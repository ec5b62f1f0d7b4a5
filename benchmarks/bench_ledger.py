"""Releases over time (issue 51) on DuckDB: the composed verification of a series' latest
release against the release's own verification, and the ledger's overhead on one release.

    python benchmarks/bench_ledger.py series --rows 1000000 --months 12 --repeat 3 --database /tmp/ledger_minv.duckdb
    python benchmarks/bench_ledger.py series --method mondrian --l 3 --k 50 --rows 1000000 --months 12 --repeat 3 \
        --database /tmp/ledger_mondrian.duckdb
    python benchmarks/bench_ledger.py overhead --rows 10000000 --repeat 3 --database /tmp/ledger_10m.duckdb
    python benchmarks/bench_ledger.py overlap --rows 10000000 --months 1 --repeat 3 --database /tmp/overlap.duckdb

``series``: a census (id, age, sex, zip, disease; the generator of tests/test_faults.py, zip an
integer) in a database file is month 1; each later month deletes ~2% of the records and inserts
~3% new ids (a record that stays keeps its values). Every month is released, tracked by
``key="id"`` (``method="minvariant"``, m; or Mondrian with l and k: refused months are reported
and leave the ledger as it was). The last month is then released ``--repeat`` times (its ledger
entry dropped after each run): each run times the composition step alone
(:func:`anonydb.release.ledger.stage_members`) and the release's own verification
(:func:`anonydb.release.publish.verify_published`), both read from the engine's statement log,
alternating with the floors measured in the same run: one hash join of the month's fingerprints
with an earlier release's, one GROUP BY of the month's rows over the QIs and the sensitive value,
one HMAC of every id.

``overhead``: a Mondrian release (k) of a census of ``--rows`` rows, untracked and tracked by
``key="id"`` (the first release of a series: the ledger is dropped before each tracked run),
alternating; the medians, the difference, and the tracked runs' ledger steps: fingerprinting (the
HMAC statement), composition (the rest of ``stage_members``) and the ledger's inserts
(:func:`anonydb.release.ledger.write`).

``overlap``: the join that finds the release's persons among every earlier release's members
(issue 62: composition by population), against one distinct scan of its fingerprints.

Medians are reported; the machine may be shared (other processes), and every ratio is against a
floor or a twin measured in the same process, alternating.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import anonydb  # noqa: E402
from anonydb.pseudonyms import pseudonym_sql  # noqa: E402
from anonydb.release import ledger, publish  # noqa: E402
from statement_log import account  # noqa: E402

QI = ["age", "sex", "zip"]
SA = "disease"
SECRET = "a benchmark secret of 32 bytes.."


class Windows:
    """Wraps the ledger's and the publication's steps; each call's wall time and its statements
    (a slice of ``eng.log``) are kept under the step's name."""

    def __init__(self, eng):
        self.eng = eng
        self.calls: dict[str, list[tuple[float, list]]] = {}
        self._orig = []

    def wrap(self, module, name: str, label: str) -> None:
        fn = getattr(module, name)
        self._orig.append((module, name, fn))

        def timed(*a, **kw):
            i, t0 = len(self.eng.log), time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.calls.setdefault(label, []).append((time.perf_counter() - t0, list(self.eng.log[i:])))
        setattr(module, name, timed)

    def take(self) -> dict[str, tuple[float, list]]:
        """Each step's time (summed over its calls) and statements since the last take."""
        out = {k: (sum(s for s, _ in v), [x for _, log in v for x in log]) for k, v in self.calls.items()}
        self.calls = {}
        return out

    def restore(self) -> None:
        for module, name, fn in reversed(self._orig):
            setattr(module, name, fn)


def statement_key(x) -> str:
    """A statement's kind, for the profiles: the ledger's statements by what they do."""
    s = " ".join(x.sql.split())
    if "sha256(" in s:
        return "fingerprint: HMAC of every tracked id (the _lm side table)"
    if "GROUP BY release_id" in s:
        return "chain: digest of every earlier release (members, values)"
    if "FROM \"anonydb_releases\"" in s or "FROM anonydb_releases" in s:
        return "chain: the ledger's entries"
    if "max(m.release_id)" in s:
        return "last_appearance: join with every earlier member"
    if x.template:
        return x.template
    s = re.sub(r"_adb_\w+", "_adb_*", s)
    return s[:110]


def build_month1(e, rows: int) -> None:
    e.execute("DROP TABLE IF EXISTS census")
    e.execute(f"CREATE TABLE census AS SELECT range AS id, CAST(18 + hash(range) % 70 AS INTEGER) AS age, "
              f"CASE WHEN hash(range + 1) % 2 = 0 THEN 'M' ELSE 'F' END AS sex, "
              f"CAST(10000 + hash(range + 2) % 400 AS INTEGER) AS zip, 'd' || (hash(range + 3) % 12) AS disease "
              f"FROM range({rows})")


def next_month(e, month: int, rows: int) -> None:
    """~2% of the records leave, ~3% of ``rows`` new ids arrive (ids never reused)."""
    e.execute(f"DELETE FROM census WHERE hash(id, {month}) % 50 = 0")
    nxt = int(e.scalar("SELECT max(id) + 1 FROM census"))
    e.execute(f"INSERT INTO census SELECT {nxt} + range, CAST(18 + hash({nxt} + range) % 70 AS INTEGER), "
              f"CASE WHEN hash({nxt} + range + 1) % 2 = 0 THEN 'M' ELSE 'F' END, "
              f"CAST(10000 + hash({nxt} + range + 2) % 400 AS INTEGER), 'd' || (hash({nxt} + range + 3) % 12) "
              f"FROM range({round(rows * 0.03)})")


def release(e, args, month: int):
    """Month ``month``'s release: the next of the m-invariant series, or a Mondrian release as a new
    series of the source (a re-run of a series continues it m-invariant: :func:`anonydb.workflow.jobs.continues`),
    judged with every earlier release by intersection."""
    if args.method == "minvariant":
        return anonydb.anonymize("census", QI, SA, method="minvariant", out="monthly", engine=e, key="id", m=args.m,
                                 series="monthly", replace=True, seed=1)
    return anonymize_mondrian(e, f"month{month}", k=args.k, l=args.l, key="id", series=f"month{month}")


def anonymize_mondrian(e, out: str, key: str | None, **kw):
    kw = {k: v for k, v in kw.items() if v is not None}
    if key is not None:
        kw["key"] = key
    return anonydb.anonymize("census", QI, SA, out=out, engine=e, replace=True, seed=1, **kw)


def row(name: str, xs: list[float]) -> str:
    """A table row: the name, the median and every run."""
    return f"| {name} | {statistics.median(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} |"


def profiles(steps: dict, names: tuple[str, ...], which: str, top: int) -> None:
    """Each step's statements summed by kind (:func:`statement_key`), largest first."""
    for name in names:
        secs, log = steps[name]
        print(f"\n# {name}, {which}:")
        print("\n".join(account(log, secs, key=statement_key)[:top + 1]))


def series(args) -> int:
    e = anonydb.connect(args.database)
    win = Windows(e)
    win.wrap(ledger, "stage_members", "composition")
    win.wrap(publish, "verify_published", "verification")
    win.wrap(ledger, "write", "ledger write")
    model = f"minvariant m={args.m}" if args.method == "minvariant" else f"mondrian k={args.k} l={args.l}"
    print(f"# issue 51 series: {model}, tracked by id; month 1 = {args.rows:,} rows, then -2% / +3% a month; "
          f"{args.months} months; {dt.date.today()}; {args.database or 'memory'}; {os.cpu_count()} cores")
    print(f"# command: python benchmarks/{' '.join(['bench_ledger.py'] + sys.argv[1:])}")
    for t in ledger.TABLES:
        e.execute(f"DROP TABLE IF EXISTS {t}")
    build_month1(e, args.rows)
    accepted = []
    for month in range(1, args.months):
        if month > 1:
            next_month(e, month, args.rows)
        t0 = time.perf_counter()
        try:
            release(e, args, month)
            ok = "accepted"
            accepted.append(month)
        except anonydb.AnonyDBError as x:
            ok = f"refused: {str(x)[:140]}"
        steps = win.take()
        print(f"month {month:2d}: {int(e.scalar('SELECT count(*) FROM census')):,} rows, {time.perf_counter() - t0:.1f} s, "
              f"composition {steps.get('composition', (0,))[0]:.2f} s, verification "
              f"{steps.get('verification', (0,))[0]:.2f} s; {ok}", flush=True)
    next_month(e, args.months, args.rows)
    n = int(e.scalar("SELECT count(*) FROM census"))
    members = int(e.scalar(f"SELECT count(*) FROM {ledger.MEMBERS}"))
    print(f"# month {args.months}: {n:,} rows; the ledger holds {len(accepted)} releases, {members:,} members")
    # the floors' inputs: the month's fingerprints, and the last release's members
    fp = pseudonym_sql(e, "id", "BIGINT", os.environ["ANONYDB_SECRET"].encode())
    last = max(accepted) if accepted else None
    walls, comp, ver, fl_join, fl_group, fl_hmac = [], [], [], [], [], []
    profile = None
    for r in range(args.repeat):
        t1 = time.perf_counter()
        e.execute(f"CREATE OR REPLACE TEMP TABLE bench_fp AS SELECT {fp} AS fp FROM census")
        fl_hmac.append(time.perf_counter() - t1)
        if last is not None:
            t1 = time.perf_counter()
            e.scalar(f"SELECT count(*) FROM bench_fp AS c JOIN {ledger.MEMBERS} AS m ON m.fp = c.fp "
                     f"WHERE m.release_id = {last}")
            fl_join.append(time.perf_counter() - t1)
        t1 = time.perf_counter()
        e.scalar(f"SELECT count(*) FROM (SELECT {', '.join(QI)}, {SA}, count(*) FROM census GROUP BY ALL)")
        fl_group.append(time.perf_counter() - t1)
        before = {x["id"] for x in ledger.entries(e)}
        t1 = time.perf_counter()
        try:
            release(e, args, args.months)
            ok = "accepted"
        except anonydb.AnonyDBError as x:
            ok = f"refused: {str(x)[:140]}"
        walls.append(time.perf_counter() - t1)
        new = [x["id"] for x in ledger.entries(e) if x["id"] not in before]
        if new:
            ledger.drop(e, new)
        steps = win.take()
        comp.append(steps["composition"][0])
        ver.append(steps["verification"][0])
        profile = steps
        print(f"run {r + 1}: release {walls[-1]:.2f} s ({ok}), composition {comp[-1]:.2f} s, verification "
              f"{ver[-1]:.2f} s", flush=True)
    win.restore()
    mc, mv = statistics.median(comp), statistics.median(ver)
    print()
    print("| step (release of month %d) | median s | runs (s) |" % args.months)
    print("|---|---|---|")
    print(row("the whole release", walls))
    print(row("composition (stage_members)", comp))
    print(row("the release's own verification (verify_published)", ver))
    print(row(f"floor: HMAC of {n:,} ids into a table", fl_hmac))
    if fl_join:
        print(row(f"floor: hash join of {n:,} fingerprints with release {last}'s", fl_join))
    print(row(f"floor: GROUP BY of {n:,} rows (QIs, SA)", fl_group))
    print(f"\nratio composition / verification: {mc / mv:.2f} (target <= 2)")
    if fl_join:
        print(f"ratio composition / floor (HMAC + join): "
              f"{mc / (statistics.median(fl_hmac) + statistics.median(fl_join)):.2f}")
    profiles(profile, ("composition", "verification"), "last run", args.top)
    e.close()
    return 0


def overhead(args) -> int:
    e = anonydb.connect(args.database)
    stored = f"census_{args.rows}"
    if e.exists(stored):
        e.execute(f"CREATE OR REPLACE TABLE census AS SELECT * FROM {stored}")
    else:
        build_month1(e, args.rows)
        if args.database:
            e.execute(f"CREATE TABLE {stored} AS SELECT * FROM census")
    win = Windows(e)
    win.wrap(ledger, "stage_members", "composition")
    win.wrap(ledger, "write", "ledger write")
    print(f"# issue 51 ledger overhead: Mondrian k={args.k} of a {args.rows:,}-row census (QIs {', '.join(QI)}, "
          f"SA {SA}), untracked and tracked by id (first release of a series); {dt.date.today()}; "
          f"{args.database or 'memory'}; {os.cpu_count()} cores")
    print(f"# command: python benchmarks/{' '.join(['bench_ledger.py'] + sys.argv[1:])}")
    plain, tracked, fpr, comp, wr = [], [], [], [], []
    profile = None

    def no_ledger():  # an untracked release of a tracked source is refused; a tracked one is a series' first
        for t in ledger.TABLES:
            e.execute(f"DROP TABLE IF EXISTS {t}")

    for r in range(args.repeat):
        no_ledger()
        t1 = time.perf_counter()
        anonymize_mondrian(e, "rel_plain", key=None, k=args.k)
        plain.append(time.perf_counter() - t1)
        win.take()
        no_ledger()
        t1 = time.perf_counter()
        anonymize_mondrian(e, "rel_tracked", key="id", k=args.k, series=f"bench{r}")
        tracked.append(time.perf_counter() - t1)
        steps = win.take()
        secs, log = steps["composition"]
        f = sum(x.seconds for x in log if "sha256(" in x.sql)
        fpr.append(f)
        comp.append(secs - f)
        wr.append(steps["ledger write"][0])
        profile = steps
        print(f"run {r + 1}: untracked {plain[-1]:.2f} s, tracked {tracked[-1]:.2f} s (fingerprint {f:.2f}, "
              f"composition {secs - f:.2f}, ledger write {wr[-1]:.2f})", flush=True)
    win.restore()
    mp, mt = statistics.median(plain), statistics.median(tracked)
    print()
    print("| run | median s | runs (s) |")
    print("|---|---|---|")
    for name, xs in (("untracked", plain), ("tracked by id", tracked), ("of which fingerprinting (HMAC)", fpr),
                     ("of which composition (rest of stage_members)", comp), ("of which ledger inserts (write)", wr)):
        print(row(name, xs))
    steps = statistics.median(fpr) + statistics.median(comp) + statistics.median(wr)
    print(f"\noverhead (tracked - untracked) / untracked: {(mt - mp) / mp * 100:.1f}% (target <= 10%); "
          f"the ledger's steps alone: {steps:.2f} s = {steps / mp * 100:.1f}%")
    profiles(profile, ("composition", "ledger write"), "last tracked run", args.top)
    e.close()
    return 0


def overlap(args) -> int:
    """The join that finds a release's persons in the ledger (:func:`anonydb.release.ledger.scope`):
    ``--rows`` fingerprints of the release against ``--months`` earlier releases of as many members
    each (each shifted by a tenth: most persons recur), against the floor of one distinct scan of
    the release's fingerprints, alternating."""
    import duckdb

    con = duckdb.connect(args.database or ":memory:")
    con.execute("SET memory_limit = '4GB'")
    n, months = args.rows, args.months
    con.execute("CREATE OR REPLACE TABLE anonydb_release_members AS " + " UNION ALL ".join(
        f"SELECT {r}::BIGINT AS release_id, sha256((i + {r * n // 10})::VARCHAR) AS fp, (i // 10)::BIGINT AS grp, "
        f"0::BIGINT AS hist FROM range({n}) AS x(i)" for r in range(1, months + 1)))
    con.execute(f"CREATE OR REPLACE TEMP TABLE cur AS SELECT sha256((i + {(months + 1) * n // 10})::VARCHAR) AS fp "
                f"FROM range({n}) AS x(i)")
    ids = ", ".join(map(str, range(1, months + 1)))
    join, floor = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        con.execute(f"SELECT m.release_id, count(*) FROM anonydb_release_members AS m JOIN cur AS c ON c.fp = m.fp "
                    f"WHERE m.release_id IN ({ids}) GROUP BY m.release_id").fetchall()
        join.append(time.perf_counter() - t)
        t = time.perf_counter()
        con.execute("SELECT count(DISTINCT fp) FROM cur").fetchall()
        floor.append(time.perf_counter() - t)
    print(f"| overlap of {n:,} fingerprints with {months} earlier release(s) of {n:,} | "
          f"{statistics.median(join):.2f} ({', '.join(f'{x:.2f}' for x in join)}) | "
          f"{statistics.median(floor):.2f} | {statistics.median(join) / statistics.median(floor):.1f}x |")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["series", "overhead", "overlap"])
    ap.add_argument("--rows", type=int, default=None, help="month 1's rows (series: 1M), the census (overhead: 10M)")
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--database", default=None, help="a database file (the series writes its ledger there)")
    ap.add_argument("--method", choices=["minvariant", "mondrian"], default="minvariant")
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--k", type=int, default=None, help="Mondrian's k (overhead: 10)")
    ap.add_argument("--l", type=int, default=None, help="Mondrian's distinct l")
    ap.add_argument("--top", type=int, default=8, help="statement kinds shown in each profile")
    args = ap.parse_args(argv)
    os.environ.setdefault("ANONYDB_SECRET", SECRET)
    if args.what == "series":
        args.rows = args.rows or 1_000_000
        return series(args)
    if args.what == "overlap":
        args.rows = args.rows or 10_000_000
        return overlap(args)
    args.rows = args.rows or 10_000_000
    args.k = args.k or 10
    return overhead(args)


if __name__ == "__main__":
    sys.exit(main())
