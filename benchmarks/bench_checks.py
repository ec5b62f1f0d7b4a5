"""Time every privacy-model check on a large synthetic census table (default 10,000,000 rows,
8 QIs) inside one DuckDB process, against its floor in the same run: the bare GROUP BY of the
columns the check must count (the least work any exact check must do), the 8 QIs for k and the
QIs with the sensitive attribute for the others, reported as a ratio.

    python benchmarks/bench_checks.py --rows 10000000 --repeat 3
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
    ap.add_argument("--only", default=None, help="run the checks whose name contains this text")
    ap.add_argument("--release", action="store_true",
                    help="check a generalized release of the table (the demo's third level vector) instead of the raw table")
    args = ap.parse_args(argv)

    e = anonydb.connect()
    t0 = time.perf_counter()
    synthetic_census(e, "census", rows=args.rows, seed=args.seed)
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

    what = "a generalized release of a synthetic census" if args.release else "a raw synthetic census"
    print(f"# anonydb check timings on {what}: {args.rows:,} rows, {len(CENSUS_QIS)} QIs, {groups:,} QI groups; "
          f"{dt.date.today()}; generated in {gen:.1f} s")
    print(f"# command: python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + (argv or sys.argv[1:]))}")
    print("| check | median s | runs (s) | floor: GROUP BY QIs (+ SA) median s | ratio check/floor |")
    print("|---|---|---|---|---|")
    for name, sa, params in CHECKS:
        if args.only and args.only not in name:
            continue
        mine, base = [], []
        for _ in range(args.repeat):  # alternate with the peer so both see the same machine load
            t1 = time.perf_counter(); peer(sa); base.append(time.perf_counter() - t1)
            t1 = time.perf_counter()
            anonydb.check("census", CENSUS_QIS, sa, engine=e,
                          hierarchies=hier if params.get("distance") == "hierarchical" else None, **params)
            mine.append(time.perf_counter() - t1)
        m, b = statistics.median(mine), statistics.median(base)
        print(f"| {name} | {m:.2f} | {', '.join(f'{x:.2f}' for x in mine)} | {b:.2f} | {m / b:.1f} |", flush=True)
    e.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
