"""Time every privacy-model check on a large synthetic census table (default 10,000,000 rows,
8 QIs) inside one DuckDB process, against its floor in the same run: the bare GROUP BY of the
columns the check must count (the least work any exact check must do), the 8 QIs for k and the
QIs with the sensitive attribute for the others, reported as a ratio.

    python benchmarks/bench_checks.py --rows 10000000 --repeat 3
    python benchmarks/bench_checks.py --rows 10000000 --repeat 3 --database /tmp/census10m.duckdb

``--database FILE``: the table in a database file (written there once, reused by later runs with
the same rows and seed), as a warehouse's table is stored: DuckDB compresses a file's columns, and
its GROUP BYs over them run faster than over an in-memory table's (10M rows: the floor 2.4-2.8 s
against 3.3 s in one hour).

``--alternatives``: instead, the plans an exact check of the sensitive-value models could take,
each a bare statement beside the same floor (issue 29: the per-group statistics in one
aggregation, as nested aggregates, keyed by the columns or by the coded key).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import statistics
import sys
import time

import anonydb
from anonydb.datasets import CENSUS_QIS, synthetic_census
from anonydb.presence import check_presence

CHECKS = [
    ("k-anonymity (k=5)", None, dict(k=5)),
    ("distinct l-diversity (l=3)", "occupation", dict(l=3)),
    ("entropy l-diversity (l=3)", "occupation", dict(l=3, l_variant="entropy")),
    ("recursive (c,l)-diversity (c=3, l=3)", "occupation", dict(l=3, l_variant="recursive", c=3)),
    ("probabilistic l-diversity (l=3)", "occupation", dict(l=3, l_variant="probabilistic")),
    ("t-closeness, equal EMD (t=0.2)", "occupation", dict(t=0.2)),
    ("t-closeness, ordered EMD (t=0.2)", "income", dict(t=0.2)),
    ("t-closeness, hierarchical EMD (t=0.2)", "occupation", dict(t=0.2, distance="hierarchical")),
    ("(n,t)-closeness, rollup (n=1000, t=0.2)", "occupation", dict(n=1000, t=0.2, supersets="rollup")),
    ("(alpha,k)-anonymity (alpha=0.5, k=5)", "occupation", dict(alpha=0.5, k=5)),
    ("delta-disclosure (delta=1.5)", "occupation", dict(delta=1.5)),
    ("beta-likeness (beta=2)", "occupation", dict(beta=2)),
    ("enhanced beta-likeness (beta=2)", "occupation", dict(beta=2, beta_variant="enhanced")),
    ("pd-recursive (c,l)-diversity (c=3, l=3, allowed Prof-specialty)", "occupation",
     dict(l=3, l_variant="pd-recursive", c=3, allowed=["Prof-specialty"])),
    ("npd-recursive (c1,c2,l)-diversity (c1=3, c2=0.05, l=3)", "occupation",
     dict(l=3, l_variant="npd-recursive", c=3, allowed=["Prof-specialty"], protected=["Sales"], c2=0.05)),
    ("confidence bounding (Sales=0.3, *=0.5)", "occupation", dict(conf_bound={"Sales": 0.3, "*": 0.5})),
    ("(X,Y)-privacy (k=5, Sales=0.3)", "occupation", dict(xy_k=5, conf_bound={"Sales": 0.3})),
    ("(k,e)-anonymity (k=3, e=10000)", "income", dict(ke=(3, 10000))),
    ("(epsilon,m)-anonymity (epsilon=5000, m=2)", "income", dict(epsilon_m=(5000, 2))),
    ("personalized privacy (breach=0.5, a leaf guard on every 4th row, an inner node on every 4th)", "occupation",
     dict(guard="guard", breach=0.5)),
    ("multiple-QID k-anonymity (k=5, 2 QID sets)", None,
     dict(multi_k=5, qid_sets=[["age", "sex", "zip"], ["race", "education", "workclass", "hours_per_week"]])),
    # against a public table: every 10th row released raw (census_sample), the census the population
    ("k-map (k=5, a 10% sample against the census)", None, dict(k_map=5)),
]


def where_time_goes(log: list, top: int = 3, digits: int = 2) -> str:
    """An engine's statement log (``eng.log``) summed per template (or the statement's first
    words), the ``top`` largest first, with the total and the number of statements."""
    agg: dict[str, float] = collections.defaultdict(float)
    for entry in log:
        name = entry.template or " ".join(entry.sql.split()[:4])[:40]
        agg[name.replace(".sql.j2", "")] += entry.seconds
    total = sum(agg.values())
    parts = [f"{k} {v:.{digits}f}" for k, v in sorted(agg.items(), key=lambda kv: -kv[1])[:top]]
    return f"{'; '.join(parts)} (of {total:.{digits}f} s in {len(log)} statements)"


def occupation_hierarchy():
    from anonydb.datasets import OCCUPATION
    from anonydb.hierarchy import Hierarchy

    groups = {"Tech-support": "Technical", "Craft-repair": "Technical", "Prof-specialty": "Technical",
              "Machine-op-inspct": "Technical", "Farming-fishing": "Technical"}
    return Hierarchy.from_mapping({o: (groups.get(o, "Other"), "*") for o in OCCUPATION})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--database", default=None, help="a database file holding the table (created when absent)")
    ap.add_argument("--only", default=None, help="run the checks whose name contains this text (several: a|b)")
    ap.add_argument("--release", action="store_true",
                    help="check a generalized release of the table (the demo's third level vector) instead of the raw table")
    ap.add_argument("--alternatives", action="store_true",
                    help="time the alternative plans of the per-group statistics instead of the checks")
    args = ap.parse_args(argv)

    e = anonydb.connect(args.database)
    t0 = time.perf_counter()
    stored = f"census_{args.rows}_{args.seed}"  # a file's copy, for the next run
    if args.database and e.exists(stored):
        e.execute(f"CREATE OR REPLACE TABLE census AS SELECT * FROM {stored}")
    else:
        if args.database:
            e.execute("DROP TABLE IF EXISTS census")
        synthetic_census(e, "census", rows=args.rows, seed=args.seed)
        if args.database:
            e.execute(f"CREATE TABLE {stored} AS SELECT * FROM census")
    gen = time.perf_counter() - t0
    if args.release:
        from anonydb.workflow.demo import LADDER, census_hierarchies
        from anonydb.generalize import generalize

        generalize(e, "census", dict(zip(CENSUS_QIS, LADDER[2])), census_hierarchies(), out="census_release")
        e.execute("DROP TABLE census")
        e.execute("ALTER TABLE census_release RENAME TO census")
    qi = ", ".join(f'"{q}"' for q in CENSUS_QIS)
    groups = e.scalar(f"SELECT count(*) FROM (SELECT 1 FROM census GROUP BY {qi})")
    hier = {"occupation": occupation_hierarchy()}

    def peer(sa):
        cols = qi + (f', "{sa}"' if sa else "")
        e.scalar(f"SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY {cols})")

    # personalized privacy's guarding nodes, a function of the row: a quarter of the rows name their
    # own occupation (a leaf), a quarter its inner node of the occupation hierarchy, the rest none
    inner = " ".join(f"WHEN '{o}' THEN '{p}'" for o, p in hier["occupation"].mapping(1))
    e.execute(f"CREATE OR REPLACE TEMP TABLE census_guarded AS SELECT *, CASE hash(rowid) % 4 WHEN 0 THEN occupation "
              f"WHEN 1 THEN CASE occupation {inner} END END AS guard FROM census")
    if args.alternatives:
        return alternatives(e, args, argv, qi, groups)
    what = "a generalized release of a synthetic census" if args.release else "a raw synthetic census"
    what += f" in {args.database}" if args.database else " in memory"
    print(f"# anonydb check timings on {what}: {args.rows:,} rows, {len(CENSUS_QIS)} QIs, {groups:,} QI groups; "
          f"{dt.date.today()}; generated in {gen:.1f} s")
    print(f"# command: python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + (argv or sys.argv[1:]))}")
    print("| check | median s | runs (s) | floor: GROUP BY QIs (+ SA) median s | ratio check/floor |")
    print("|---|---|---|---|---|")
    for name, sa, params in CHECKS:
        if args.only and not any(o in name for o in args.only.split("|")):
            continue
        if "k_map" in params:
            e.execute("CREATE OR REPLACE TABLE census_sample AS SELECT * FROM census WHERE rowid % 10 = 0")
        mine, base = [], []
        for _ in range(args.repeat):  # alternate with the peer so both see the same machine load
            t1 = time.perf_counter(); peer(sa); base.append(time.perf_counter() - t1)
            t1 = time.perf_counter()
            if "k_map" in params:  # the sample's classes with the census mapped onto them (anonydb.presence)
                check_presence("census_sample", "census", CENSUS_QIS, engine=e, **params)
            else:
                anonydb.check("census_guarded" if "guard" in params else "census", CENSUS_QIS, sa, engine=e,
                              hierarchies=hier if params.get("distance") == "hierarchical" or "guard" in params else None,
                          **params)
            mine.append(time.perf_counter() - t1)
        m, b = statistics.median(mine), statistics.median(base)
        print(f"| {name} | {m:.2f} | {', '.join(f'{x:.2f}' for x in mine)} | {b:.2f} | {m / b:.1f} |", flush=True)
    e.close()
    return 0


def alternatives(e, args, argv, qi: str, groups: int) -> int:
    """Each plan of the per-group statistics (n, distinct values d, largest count mx, sum c ln c)
    of the QI groups over the sensitive attribute, beside the floor, in one process."""
    from anonydb.checker import _group_coding
    from anonydb.sqlgen import ident

    sa = "occupation"
    values = [r[0] for r in e.fetch_rows(f"SELECT DISTINCT {sa} FROM census WHERE {sa} IS NOT NULL ORDER BY 1")[1]]
    e.execute(f"CREATE TABLE sa_codes AS SELECT {sa} AS v, CAST(row_number() OVER (ORDER BY {sa}) - 1 AS UBIGINT) AS c "
              f"FROM (SELECT DISTINCT {sa} FROM census)")
    with e.scratch("alt") as s:  # the checker's own dictionary and coded key
        coding, d = _group_coding(e, s, "census", list(CENSUS_QIS), {q: "VARCHAR" for q in CENSUS_QIS})
        cells = e.render("check_cells.sql.j2", qis=coding, dict=d, keytype="BIGINT", sensitive=sa, source="census").sql
        stats = "sum(c) AS n, count(*) AS d, max(c) AS mx, sum(c * ln(c)) AS clnc"
        counts = ", ".join(f"count(*) FILTER (WHERE s.c = {j}) AS c{j}" for j in range(len(values) + 1))
        every = ", ".join(f"c{j}" for j in range(len(values) + 1))
        # each plan's result reads every statistic it computes (an unread aggregate is pruned)
        use = "SELECT min(mx) + max(d) + sum(n) + sum(clnc) FROM"
        plans = [
            ("floor: GROUP BY QIs, SA", f"SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY {qi}, {sa})"),
            ("floor of k: GROUP BY QIs", f"SELECT min(n) FROM (SELECT count(*) AS n FROM census GROUP BY {qi})"),
            ("d only: GROUP BY QIs, bit_or of the value's bit (one aggregation)",
             f"SELECT min(d) FROM (SELECT bit_count(bit_or(CAST(1 AS UBIGINT) << s.c)) AS d FROM census AS b "
             f"JOIN sa_codes AS s ON s.v IS NOT DISTINCT FROM b.{sa} GROUP BY {qi})"),
            ("d only: GROUP BY QIs, count(DISTINCT SA)", f"SELECT min(d) FROM (SELECT count(DISTINCT {sa}) AS d FROM census GROUP BY {qi})"),
            ("all: GROUP BY QIs, histogram(SA) (one aggregation, a map per group)",
             f"SELECT min(cardinality(h)) FROM (SELECT histogram({sa}) AS h FROM census GROUP BY {qi})"),
            (f"all: GROUP BY QIs, one count per value ({len(values)} FILTER counts, one aggregation)",
             f"{use} (SELECT list_sum([x for x in [{every}] if x > 0]) AS n, "
             f"list_count([x for x in [{every}] if x > 0]) AS d, greatest({every}) AS mx, "
             f"list_sum([x * ln(x) for x in [{every}] if x > 0]) AS clnc "
             f"FROM (SELECT {counts} FROM census AS b JOIN sa_codes AS s ON s.v IS NOT DISTINCT FROM b.{sa} "
             f"GROUP BY {qi}))"),
            ("d only: cells by the columns, then GROUP BY QIs (two aggregations)",
             f"SELECT min(d) FROM (SELECT count(*) AS d FROM (SELECT {qi}, {sa} FROM census GROUP BY ALL) GROUP BY {qi})"),
            ("all: cells by the columns, then GROUP BY QIs",
             f"{use} (SELECT {stats} FROM (SELECT {qi}, {sa}, count(*) AS c FROM census GROUP BY ALL) GROUP BY {qi})"),
            ("all: the dictionary, coded cells, then GROUP BY key (the check's plan, inline)",
             None),
        ]
        coded = f"{use} (SELECT {stats} FROM (SELECT _adb_gid, _adb_cnt AS c FROM ({cells}) AS x) GROUP BY _adb_gid)"
        dict_sql = e.render("check_dict.sql.j2", qis=list(CENSUS_QIS), source="census").sql
        print(f"# alternative plans of the per-group statistics over {sa!r}: {args.rows:,} rows, {groups:,} QI groups, "
              f"{dt.date.today()}; command: python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + (argv or sys.argv[1:]))}")
        print("| plan | median s | runs (s) | ratio to the floor |")
        print("|---|---|---|---|")
        floor = None
        for name, sql in plans:
            runs = []
            for _ in range(args.repeat):
                t1 = time.perf_counter()
                if sql is None:  # dictionary + coded cells + groups, each as the check runs it
                    e.scalar(f"SELECT count(*) FROM ({dict_sql}) AS x")
                    e.scalar(coded)
                else:
                    e.scalar(sql)
                runs.append(time.perf_counter() - t1)
            m = statistics.median(runs)
            floor = floor or m
            print(f"| {name} | {m:.2f} | {', '.join(f'{x:.2f}' for x in runs)} | {m / floor:.2f} |", flush=True)
    e.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
