"""Time Anatomy (QIT/ST releases) on Adult and on synthetic censuses of growing size, and the
aggregate-query error of Anatomy against Mondrian on Adult.

    python benchmarks/bench_anatomy.py adult --repeat 5
    python benchmarks/bench_anatomy.py scale --rows 100000 1000000 10000000 --memory-limit 4GB
    python benchmarks/bench_anatomy.py queries --n 1000

``adult``: l = 5 over the QIs age, workclass, education, marital-status, race, sex (SA occupation,
the largest l Adult allows is 7). ``scale``: l = 10 over the census's 8 QIs with SA income
(occupation's most frequent value holds 15.7% of the rows, so it admits at most l = 6), each size
in a fresh process for its own peak RSS. ``queries``: the thesis's workload (spec 6.4) over
Adult: the average relative error of COUNT estimates from the Anatomy QIT/ST and from a
Mondrian release with the same l, and the time to answer them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.methods import anatomy, anonymize  # noqa: E402

ADULT_QIS = ["age", "workclass", "education", "marital-status", "race", "sex"]


def cmd_adult(args) -> None:
    from anonydb.datasets import load_adult

    eng = anonydb.connect()
    load_adult(eng, "adult")
    runs, r = [], None
    for _ in range(args.repeat):
        t = time.perf_counter()
        r = anatomy("adult", ADULT_QIS, "occupation", l=5, out="adult_anatomy", engine=eng, replace=True)
        runs.append(time.perf_counter() - t)
    print(f"# Anatomy on Adult (30,162 rows), l = 5, SA occupation; {dt.date.today()}; "
          f"command: python benchmarks/bench_anatomy.py adult --repeat {args.repeat}")
    print("| run | median s | runs (s) | groups | verified |")
    print("|---|---|---|---|---|")
    print(f"| anatomy l=5 | {statistics.median(runs):.3f} | {', '.join(f'{x:.3f}' for x in runs)} | {r.groups:,} | "
          f"{r.report.holds} |")


def cmd_scale_one(args) -> None:
    from anonydb.datasets import CENSUS_QIS, synthetic_census

    eng = anonydb.connect()
    eng.execute(f"SET memory_limit = '{args.memory_limit}'")
    t = time.perf_counter()
    synthetic_census(eng, "census", rows=args.rows, seed=42)
    gen = time.perf_counter() - t
    t = time.perf_counter()
    r = anatomy("census", CENSUS_QIS, "income", l=10, out="census_anatomy", engine=eng)
    took = time.perf_counter() - t
    print(json.dumps({"rows": args.rows, "generate": gen, "seconds": took, "groups": r.groups,
                      "holds": r.report.holds, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def cmd_scale(args) -> None:
    print(f"# Anatomy on synthetic censuses, l = 10, 8 QIs, SA income; memory_limit {args.memory_limit}; "
          f"{dt.date.today()}; each size in a fresh process")
    print(f"# command: python benchmarks/bench_anatomy.py scale --rows {' '.join(map(str, args.rows))} "
          f"--memory-limit {args.memory_limit}")
    print("| rows | generate s | anatomy s | groups | verified | peak RSS MB | time ratio vs previous size |")
    print("|---|---|---|---|---|---|---|")
    prev = None
    for n in args.rows:
        out = subprocess.run([sys.executable, __file__, "scale-one", "--rows", str(n), "--memory-limit",
                              args.memory_limit], capture_output=True, text=True, check=True)
        d = json.loads(out.stdout.strip().splitlines()[-1])
        ratio = "—" if prev is None else f"{d['seconds'] / prev[1]:.1f} (rows x{n / prev[0]:g})"
        print(f"| {n:,} | {d['generate']:.1f} | {d['seconds']:.2f} | {d['groups']:,} | {d['holds']} | "
              f"{d['rss_mb']:,.0f} | {ratio} |", flush=True)
        prev = (n, d["seconds"])


def cmd_queries(args) -> None:
    from anonydb.datasets import load_adult
    from anonydb.utility.queries import query_error, workload

    eng = anonydb.connect()
    load_adult(eng, "adult")
    anatomy("adult", ADULT_QIS, "occupation", l=5, out="an", engine=eng, replace=True)
    anonymize("adult", ADULT_QIS, "occupation", out="mon", engine=eng, l=5, replace=True, categorical="order")
    print(f"# Aggregate COUNT queries over Adult: Anatomy (l = 5) vs Mondrian (distinct 5-diversity, sorted "
          f"categorical order); {dt.date.today()}; command: python benchmarks/bench_anatomy.py queries --n {args.n}")
    print("| dim | sel | queries | Anatomy error % | Mondrian error % | workload + answers s |")
    print("|---|---|---|---|---|---|")
    for dim, sel in ((1, 0.1), (2, 0.1), (3, 0.1), (2, 0.05), (2, 0.2)):
        t = time.perf_counter()
        qs = workload(eng, "adult", ADULT_QIS, "occupation", n=args.n, dim=dim, sel=sel, seed=1)
        a = query_error(eng, "adult", qs, qit="an_qit", st="an_st", sensitive="occupation")
        m = query_error(eng, "adult", qs, release="mon", sensitive="occupation")
        took = time.perf_counter() - t
        print(f"| {dim} | {sel} | {len(qs)} | {a['rho']:.1f} (median {a['median']:.1f}) | {m['rho']:.1f} (median {m['median']:.1f}) | {took:.2f} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("adult")
    a.add_argument("--repeat", type=int, default=5)
    s = sub.add_parser("scale")
    s.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    s.add_argument("--memory-limit", default="4GB")
    o = sub.add_parser("scale-one")
    o.add_argument("--rows", type=int, required=True)
    o.add_argument("--memory-limit", default="4GB")
    q = sub.add_parser("queries")
    q.add_argument("--n", type=int, default=1000)
    args = ap.parse_args(argv)
    {"adult": cmd_adult, "scale": cmd_scale, "scale-one": cmd_scale_one, "queries": cmd_queries}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
