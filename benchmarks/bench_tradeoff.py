"""The privacy-utility trade-off on Adult [Li thesis Ch. 5; spec-injector-tradeoff-foreground 5.4]:
a 20-point sweep (Mondrian k-anonymity over the thesis's k grid, k = 5 with t-closeness over its t
grid, Anatomy l = 3..6), P_loss and U_loss of each release (minSup 0.05, populations over the ARX
hierarchies of all six QIs), the efficient frontier, and an HTML plot.

    python benchmarks/bench_tradeoff.py [--html tradeoff.html]

QIs age, workclass, education, marital-status, race, sex; SA occupation. Mondrian cuts the
categorical QIs along their hierarchies and age by value; t-closeness uses hierarchical EMD on
occupation's hierarchy (the thesis used JS divergence).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.hierarchy import Hierarchy  # noqa: E402
from anonydb.workflow.tradeoff import sweep, write_frontier_html  # noqa: E402

QIS = ["age", "workclass", "education", "marital-status", "race", "sex"]
K = (10, 50, 100, 200, 500, 1000, 2000, 5000)
T = (0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
L = (3, 4, 5, 6)


def main():
    from anonydb.datasets import adult_hierarchy_paths, load_adult

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--html", help="write the frontier plot here")
    args = ap.parse_args()
    eng = anonydb.connect()
    load_adult(eng, "adult")
    hs = {a: Hierarchy.from_arx(p) for a, p in adult_hierarchy_paths().items()}
    cut = {a: hs[a] for a in QIS + ["occupation"] if a != "age"}
    settings = ([("mondrian", {"k": k, "hierarchies": cut}) for k in K]
                + [("mondrian", {"k": 5, "t": t, "hierarchies": cut}) for t in T]
                + [("anatomy", {"l": lv}) for lv in L])
    t0 = time.perf_counter()
    sw = sweep("adult", QIS, "occupation", settings, engine=eng, hierarchies={a: hs[a] for a in QIS})
    total = time.perf_counter() - t0
    print(f"# Trade-off sweep on Adult (30,162 rows), {len(settings)} releases; {dt.date.today()}; "
          f"command: python benchmarks/bench_tradeoff.py")
    print(f"total {total:.1f} s (anonymization {sum(p.seconds for p in sw.points):.1f} s, the rest P_loss/U_loss "
          f"and the populations)")
    print("| release | P_loss | U_loss | frontier | anonymize s |")
    print("|---|---|---|---|---|")
    for p in sw.points:
        print(f"| {p.label} | {p.p_loss:.4f} | {p.u_loss:.4f} | {'yes' if p.efficient else ''} | {p.seconds:.2f} |")
    if args.html:
        write_frontier_html(sw, args.html)


if __name__ == "__main__":
    main()
