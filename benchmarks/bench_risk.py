"""Time the risk estimates (anonydb.risk) against their floors, on synthetic censuses.

    python benchmarks/bench_risk.py summary --rows 10000000 --repeat 3
    python benchmarks/bench_risk.py full --rows 100000000 --memory-limit 4GB --db /tmp/census100m.duckdb

``summary``: the sample-based summary (prosecutor, journalist, marketer, sample uniqueness) of the
raw census over its 8 QIs against the GROUP BY floor (``SELECT count(*) FROM (SELECT count(*) FROM t
GROUP BY <8 QIs>)``: the one aggregation no estimate can skip), alternating, median of each.
``full``: every estimate but SUDA2 (the summary, population uniqueness at f = 0.01, sdcMicro's
individual risk with weights and household risk) on a census stored in a DuckDB file, with the
memory limit set, in one fresh process; weights (20 + id mod 7) and households (id div 3) are a
view over the census. Prints one Markdown table row per figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.datasets import CENSUS_QIS, synthetic_census  # noqa: E402
from anonydb.risk.assess import assess  # noqa: E402
from anonydb.risk.sample import histograms, summary  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402


def _floor(eng, table: str) -> float:
    t = time.perf_counter()
    eng.scalar(f"SELECT count(*) FROM (SELECT count(*) FROM {ident(table)} GROUP BY "
               f"{', '.join(ident(c) for c in CENSUS_QIS)}) AS g")
    return time.perf_counter() - t


def cmd_summary(args) -> None:
    eng = anonydb.connect()
    t = time.perf_counter()
    synthetic_census(eng, "census", rows=args.rows, seed=1)
    made = time.perf_counter() - t
    floors, ours, s = [], [], None
    for _ in range(args.repeat):
        floors.append(_floor(eng, "census"))
        t = time.perf_counter()
        s = summary(histograms(eng, "census", CENSUS_QIS), 0.2)
        ours.append(time.perf_counter() - t)
    f, o = statistics.median(floors), statistics.median(ours)
    print(f"# sample-based summary, census of {args.rows:,} rows, 8 QIs; {dt.date.today()}; census made in "
          f"{made:.1f} s; command: python benchmarks/bench_risk.py summary --rows {args.rows} --repeat {args.repeat}")
    print("| rows | classes | GROUP BY floor s (runs) | summary s (runs) | ratio |")
    print("|---|---|---|---|---|")
    print(f"| {args.rows:,} | {s['classes']:,} | {f:.2f} ({', '.join(f'{x:.2f}' for x in floors)}) | {o:.2f} "
          f"({', '.join(f'{x:.2f}' for x in ours)}) | {o / f:.2f}x |")


def cmd_full(args) -> None:
    db = Path(args.db)
    eng = anonydb.connect(str(db))
    eng.execute(f"SET memory_limit = '{args.memory_limit}'")
    if args.threads:
        eng.execute(f"SET threads = {int(args.threads)}")
    made = None
    if not eng.exists("census") or int(eng.scalar("SELECT count(*) FROM census")) != args.rows:
        t = time.perf_counter()
        synthetic_census(eng, "census", rows=args.rows, seed=1)
        made = time.perf_counter() - t
    eng.execute("CREATE OR REPLACE VIEW census_w AS SELECT *, CAST(20 + person_id % 7 AS DOUBLE) AS w, "
                "person_id // 3 AS hh FROM census")
    mark = len(eng.log)
    t = time.perf_counter()
    rep = assess("census_w", CENSUS_QIS, engine=eng, fraction=0.01, weights="w", household="hh")
    secs = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    d = rep.to_dict()
    print(f"# every estimate but SUDA2, census of {args.rows:,} rows in {db}, 8 QIs, memory_limit "
          f"{args.memory_limit}; {dt.date.today()}"
          + (f"; census made in {made:.0f} s" if made else "")
          + f"; command: python benchmarks/bench_risk.py full --rows {args.rows} --memory-limit {args.memory_limit} "
            f"--db {args.db}")
    print("| rows | classes | seconds | peak RSS MiB | prosecutor avg | sample uniq. | Dankar (model) | "
          "expected re-ids | household share |")
    print("|---|---|---|---|---|---|---|---|---|")
    p, i = d["population_uniqueness"], d["individual"]
    print(f"| {args.rows:,} | {d['sample']['classes']:,} | {secs:.1f} | {peak:.0f} | "
          f"{d['sample']['prosecutor']['average']:.4f} | {d['sample']['sample_uniqueness']:.4f} | "
          f"{p['dankar']:.4f} ({p['dankar_model']}) | {i['global']['expected_reidentifications']:,.0f} | "
          f"{i['household']['share']:.4f} |")
    statements = [(x.seconds, (x.template or ' '.join(x.sql.split())[:90])) for x in eng.log[mark:] if getattr(x, "seconds", None)]
    for s_, what in sorted(statements, reverse=True)[:6]:
        print(f"#   {s_:7.1f} s  {what}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("summary")
    s.add_argument("--rows", type=int, default=10_000_000)
    s.add_argument("--repeat", type=int, default=3)
    f = sub.add_parser("full")
    f.add_argument("--rows", type=int, default=100_000_000)
    f.add_argument("--memory-limit", default="4GB")
    f.add_argument("--threads", type=int)
    f.add_argument("--db", default="/tmp/census_risk.duckdb")
    args = ap.parse_args()
    {"summary": cmd_summary, "full": cmd_full}[args.cmd](args)


if __name__ == "__main__":
    main()
