"""Record owners (issue 48, ``person=``) on DuckDB: person-level Mondrian and the person check on
an events table, each against a floor timed in the same run, reported as medians and ratios.

    python benchmarks/bench_persons.py --persons 1000000 --repeat 3
    python benchmarks/bench_persons.py --persons 100000 --repeat 3          # a quick run
    python benchmarks/bench_persons.py --only check --repeat 5

The data, made in DuckDB by two statements (no Python loop), from ``--seed``:

- ``persons`` (``--persons`` rows): pid BIGINT 0..n-1; age 18-90, sex F/M, zip3 100-999 (integer),
  marital (5 values), each uniform and independent;
- ``events`` (about 10 x persons rows): each person has 1-19 events (uniform, mean 10), each
  carrying its person's QIs (shape (a): QIs constant per person), an event_id and a diagnosis
  among 20 codes (a person's main code, skewed towards the low codes, on 3 events of 4; any code
  on the rest: about 3.3 distinct codes a person). The events are stored in a random order (a
  warehouse's events come in time order, persons interleaved), not clustered by person.

The QIs are age, sex, zip3, marital (marital in sorted order, ``categorical="order"``).

Mondrian (``--only mondrian``), k = 10, each repetition alternating:

- (a) person-level: ``anonymize(events, QIS, person="pid", k=10)``: partitions the persons and
  releases every event (QI labels and eq_class) under its person's class, verified by persons;
- (a2) the same with ``diagnosis`` sensitive and distinct l = 2 (the partition is then over the
  (person, diagnosis) facts; unless ``--no-sensitive``);
- (b) row-level: ``anonymize(persons, QIS, k=10)``, the same QIs on the person table;
- (c) the floor of releasing every event under its person's class: ``CREATE TABLE AS SELECT`` the
  events joined with a class table of one row a person (pid -> eq_class and the labels, with the
  release's columns: a label per QI, _lo / _hi for the numeric ones; made before the clock from
  5-year age and 10-wide zip3 bands), one pass over the events with a hash join, in no order.
  (c2): the same written in the release's keyed-hash order (md5_number of the row id and a key),
  as every release is (the row-level (b) pays the same order on its own 1M rows).
  (c+dx): (c) with the diagnosis column, the floor beside (a2).

The target: (a) <= 1.5 x ((b) + (c)), medians; also printed against (b) + (c2). (a2)'s row
compares it with (b) + (c+dx).

Check (``--only check``), alternating with its floor:

- ``check(events, QIS, person="pid", k=10)`` against ``SELECT min(n) FROM (SELECT
  count(DISTINCT pid) AS n FROM events GROUP BY QIS)`` (the groups' persons, one row back);
- ``check(events, QIS, "diagnosis", person="pid", k=10, l=2)`` against the person-distinct cells,
  ``count(DISTINCT pid) GROUP BY QIS, diagnosis`` (and the sum of both floors, for information).

The target: the k check <= 2 x its floor.

``--profile``: after the runs, one more call of each (a), (a2) and check, its wall accounted for
from the engine's statement log (``eng.log``; ``statement_log.account``): seconds per template,
the ``--top`` largest.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import anonydb  # noqa: E402
from anonydb.methods.mondrian import anonymize  # noqa: E402
from statement_log import account  # noqa: E402

QIS = ["age", "sex", "zip3", "marital"]
QI_SQL = ", ".join(QIS)
KEY = "a benchmark key"


def make_tables(e, persons: int, seed: int) -> None:
    """persons and events (see the module's docstring), two statements, and the floor's class table."""
    h = lambda *a: f"hash({', '.join(map(str, a))}, {seed})"  # noqa: E731
    e.execute(f"""
        CREATE OR REPLACE TABLE persons AS
        SELECT CAST(range AS BIGINT) AS pid,
               CAST(18 + {h('range', 1)} % 73 AS INTEGER) AS age,
               CASE WHEN {h('range', 2)} % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
               CAST(100 + {h('range', 3)} % 900 AS INTEGER) AS zip3,
               ['Divorced', 'Married', 'Never-married', 'Separated', 'Widowed'][CAST(1 + {h('range', 4)} % 5 AS BIGINT)] AS marital
        FROM range({int(persons)})""")
    main = f"CAST(floor(20 * pow(({h('p.pid', 6)} % 1000000) / 1000000.0, 2)) AS INTEGER)"
    other = f"CASE WHEN {h('p.pid', 'p.j', 8)} % 4 = 0 THEN 1 + {h('p.pid', 'p.j', 9)} % 19 ELSE 0 END"
    e.execute(f"""
        CREATE OR REPLACE TABLE events AS
        SELECT event_id, pid, age, sex, zip3, marital, diagnosis FROM (
            SELECT p.pid * 19 + p.j AS event_id, p.pid, p.age, p.sex, p.zip3, p.marital,
                   'D' || lpad(CAST(({main} + {other}) % 20 AS VARCHAR), 2, '0') AS diagnosis
            FROM (SELECT *, unnest(range(CAST(1 + {h('pid', 5)} % 19 AS BIGINT))) AS j FROM persons) AS p
        ) AS x
        ORDER BY {h('event_id', 7)}""")
    # the floor's class table: one row a person, the release's columns (a label per QI, _lo/_hi of
    # the numeric ones, eq_class), from fixed bands; its classes are not k-anonymous, only its shape counts
    e.execute("""
        CREATE OR REPLACE TABLE person_class AS
        SELECT pid, dense_rank() OVER (ORDER BY a, sex, z, marital) AS eq_class,
               '[' || a || '-' || (a + 4) || ']' AS age, a AS age_lo, a + 4 AS age_hi, sex,
               '[' || z || '-' || (z + 9) || ']' AS zip3, z AS zip3_lo, z + 9 AS zip3_hi, marital
        FROM (SELECT pid, 18 + (age - 18) // 5 * 5 AS a, sex, 100 + (zip3 - 100) // 10 * 10 AS z, marital
              FROM persons) AS t""")


def floor_release(e, out: str, dx: bool, ordered: bool) -> None:
    cols = "c.eq_class, c.age, c.age_lo, c.age_hi, c.sex, c.zip3, c.zip3_lo, c.zip3_hi, c.marital"
    order = f" ORDER BY md5_number(CAST(e.rowid AS VARCHAR) || '{KEY}'), e.rowid" if ordered else ""
    e.execute(f"CREATE OR REPLACE TABLE {out} AS SELECT {cols}{', e.diagnosis' if dx else ''} "
              f"FROM events AS e JOIN person_class AS c ON c.pid = e.pid{order}")
    e.execute(f"DROP TABLE {out}")


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def fmt_runs(xs: list[float]) -> str:
    return ", ".join(f"{x:.2f}" for x in xs)


def profile(e, name: str, fn, top: int) -> None:
    """One more call of ``fn``, its wall accounted for from the statement log, the ``top`` largest templates."""
    n0 = len(e.log)
    wall = timed(fn)
    lines = account(e.log[n0:], wall, key=lambda x: x.template or " ".join(x.sql.split()[:9])[:70])
    print(f"# profile: {name}")
    for line in lines[:top + 1]:
        print(f"#   {line}")
    if len(lines) > top + 1:
        print(f"#   ... {len(lines) - top - 1} more templates")
    del e.log[n0:]  # the log grows with every statement: keep it short


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--persons", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--check-repeat", type=int, default=None, help="repetitions of the checks (default: --repeat)")
    ap.add_argument("--sensitive-repeat", type=int, default=None,
                    help="repetitions of (a2) and (c+dx), the first ones (default: --repeat)")
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--only", choices=["mondrian", "check"], default=None)
    ap.add_argument("--no-sensitive", action="store_true", help="skip the rows with diagnosis sensitive (a2, check l=2)")
    ap.add_argument("--threads", type=int, default=None, help="DuckDB's threads (default: every core)")
    ap.add_argument("--memory-limit", default=None, help="DuckDB's memory_limit, e.g. 8GB")
    ap.add_argument("--profile", action="store_true", help="one more profiled call of each, from eng.log")
    ap.add_argument("--top", type=int, default=12, help="templates listed per profile")
    args = ap.parse_args(argv)

    import duckdb

    e = anonydb.connect()
    if args.threads:
        e.execute(f"SET threads = {int(args.threads)}")
    if args.memory_limit:
        e.execute(f"SET memory_limit = '{args.memory_limit}'")
    gen = timed(lambda: make_tables(e, args.persons, args.seed))
    n_events = e.scalar("SELECT count(*) FROM events")
    facts = e.scalar("SELECT count(*) FROM (SELECT DISTINCT pid, diagnosis FROM events)")
    groups = e.scalar(f"SELECT count(*) FROM (SELECT DISTINCT {QI_SQL} FROM persons)")
    threads = e.scalar("SELECT current_setting('threads')")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "anonydb", "sql"],
                           capture_output=True, text=True).stdout.strip()
    del e.log[:]
    print(f"# record owners (issue 48) on DuckDB {duckdb.__version__}, {threads} threads: {args.persons:,} persons, "
          f"{n_events:,} events, {facts:,} (person, diagnosis) facts, {groups:,} distinct QI tuples; "
          f"{dt.date.today()}; commit {rev or '?'}{' + uncommitted changes in anonydb/ or sql/' if dirty else ''}; "
          f"tables made in {gen:.1f} s; load average {load:.1f}")
    print(f"# command: python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + (argv or sys.argv[1:]))}")

    if args.only in (None, "mondrian"):
        mondrian(e, args)
    if args.only in (None, "check"):
        check(e, args)
    e.close()
    return 0


def mondrian(e, args) -> None:
    sens = not args.no_sensitive
    t: dict[str, list[float]] = {k: [] for k in ("a", "a2", "b", "c", "c2", "cdx")}
    info: dict[str, str] = {}

    def a():
        r = anonymize("events", QIS, out="rel_persons", engine=e, person="pid", k=10, categorical="order",
                      replace=True, seed=1)
        info["a"] = f"{r.rows:,} rows, {r.classes:,} classes, {r.rounds} rounds"
        e.execute("DROP TABLE rel_persons")

    def a2():
        r = anonymize("events", QIS, "diagnosis", out="rel_persons_l", engine=e, person="pid", k=10, l=2,
                      categorical="order", replace=True, seed=1)
        info["a2"] = f"{r.rows:,} rows, {r.classes:,} classes, {r.rounds} rounds"
        e.execute("DROP TABLE rel_persons_l")

    def b():
        r = anonymize("persons", QIS, out="rel_rows", engine=e, k=10, categorical="order", replace=True, seed=1)
        info["b"] = f"{r.rows:,} rows, {r.classes:,} classes, {r.rounds} rounds"
        e.execute("DROP TABLE rel_rows")

    steps = [("b", b), ("c", lambda: floor_release(e, "floor_rel", False, False)), ("a", a),
             ("c2", lambda: floor_release(e, "floor_rel", False, True))]
    if sens:
        steps += [("cdx", lambda: floor_release(e, "floor_rel", True, False)), ("a2", a2)]
    srep = args.sensitive_repeat if args.sensitive_repeat is not None else args.repeat
    for i in range(args.repeat):  # alternate, so load on the machine hits every step
        for name, fn in steps:
            if name in ("cdx", "a2") and i >= srep:
                continue
            t[name].append(timed(fn))
            del e.log[:]
        print(f"# round {i + 1}: " + ", ".join(f"{n} {t[n][-1]:.2f}" for n, _ in steps if len(t[n]) > i), flush=True)
    med = {k: statistics.median(v) for k, v in t.items() if v}
    floor = med["b"] + med["c"]
    print("| workload | median s | runs (s) | result | ratio |")
    print("|---|---|---|---|---|")
    print(f"| (a) person-level Mondrian k=10 on events, person=pid | {med['a']:.2f} | {fmt_runs(t['a'])} | {info['a']} "
          f"| {med['a'] / floor:.2f}x ((b) + (c)) |")
    if sens and srep:
        fdx = med["b"] + med["cdx"]
        print(f"| (a2) the same, diagnosis sensitive, k=10, distinct l=2 | {med['a2']:.2f} | {fmt_runs(t['a2'])} "
              f"| {info['a2']} | {med['a2'] / fdx:.2f}x ((b) + (c+dx)); {med['a2'] / med['a']:.2f}x (a) |")
    print(f"| (b) row-level Mondrian k=10 on persons | {med['b']:.2f} | {fmt_runs(t['b'])} | {info['b']} | - |")
    print(f"| (c) floor: CTAS events JOIN the class table (a row a person), no order | {med['c']:.2f} | {fmt_runs(t['c'])} | - | - |")
    print(f"| (c2) the same in keyed-hash order | {med['c2']:.2f} | {fmt_runs(t['c2'])} | - | "
          f"(a) is {med['a'] / (med['b'] + med['c2']):.2f}x ((b) + (c2)) |")
    if sens and srep:
        print(f"| (c+dx) (c) with diagnosis | {med['cdx']:.2f} | {fmt_runs(t['cdx'])} | - | - |")
    print(f"# (a) / ((b) + (c)) = {med['a']:.2f} / ({med['b']:.2f} + {med['c']:.2f}) = {med['a'] / floor:.2f}x "
          f"(target <= 1.5x: {'met' if med['a'] <= 1.5 * floor else 'not met'}); "
          f"(a) / ((b) + (c2)) = {med['a'] / (med['b'] + med['c2']):.2f}x", flush=True)
    if args.profile:
        profile(e, "(a) person-level Mondrian k=10", a, args.top)
        profile(e, "(b) row-level Mondrian k=10 on persons", b, args.top)
        if sens:
            profile(e, "(a2) person-level Mondrian k=10, l=2", a2, args.top)


def check(e, args) -> None:
    sens = not args.no_sensitive
    rep = args.check_repeat or args.repeat
    t: dict[str, list[float]] = {k: [] for k in ("k", "kf", "l", "lf")}
    info: dict[str, str] = {}

    def ck():
        r = anonydb.check("events", QIS, engine=e, person="pid", k=10)
        info["k"] = f"{r.groups:,} groups, {r.persons:,} persons, holds {r.holds}"

    def cl():
        r = anonydb.check("events", QIS, "diagnosis", engine=e, person="pid", k=10, l=2)
        info["l"] = f"{r.groups:,} groups, holds {r.holds}"

    def kf():
        e.scalar(f"SELECT min(n) FROM (SELECT count(DISTINCT pid) AS n FROM events GROUP BY {QI_SQL})")

    def lf():
        e.scalar(f"SELECT min(n) FROM (SELECT count(DISTINCT pid) AS n FROM events GROUP BY {QI_SQL}, diagnosis)")

    steps = [("kf", kf), ("k", ck)] + ([("lf", lf), ("l", cl)] if sens else [])
    for i in range(rep):
        for name, fn in steps:
            t[name].append(timed(fn))
            del e.log[:]
        print(f"# round {i + 1}: " + ", ".join(f"{n} {t[n][-1]:.2f}" for n, _ in steps), flush=True)
    med = {k: statistics.median(v) for k, v in t.items() if v}
    print("| workload | median s | runs (s) | result | floor median s | floor runs (s) | ratio |")
    print("|---|---|---|---|---|---|---|")
    print(f"| check --person pid, k=10 | {med['k']:.2f} | {fmt_runs(t['k'])} | {info['k']} | {med['kf']:.2f} "
          f"| {fmt_runs(t['kf'])} | {med['k'] / med['kf']:.2f}x |")
    if sens:
        print(f"| check --person pid, k=10, distinct l=2 (diagnosis) | {med['l']:.2f} | {fmt_runs(t['l'])} | {info['l']} "
              f"| cells {med['lf']:.2f} | {fmt_runs(t['lf'])} | {med['l'] / med['lf']:.2f}x the cells; "
              f"{med['l'] / (med['lf'] + med['kf']):.2f}x cells + groups |")
    print(f"# check / floor = {med['k']:.2f} / {med['kf']:.2f} = {med['k'] / med['kf']:.2f}x "
          f"(target <= 2x: {'met' if med['k'] <= 2 * med['kf'] else 'not met'})", flush=True)
    if args.profile:
        profile(e, "check --person, k=10", ck, args.top)
        if sens:
            profile(e, "check --person, k=10, l=2", cl, args.top)


if __name__ == "__main__":
    sys.exit(main())
