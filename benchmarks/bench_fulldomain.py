"""Time the full-domain lattice search on Adult with the shared hierarchies.

    python benchmarks/bench_fulldomain.py
    python benchmarks/bench_fulldomain.py --copies 40     # Adult replicated to 1,206,480 rows
    python benchmarks/bench_fulldomain.py --copies 40 --noise 0.2   # and each QI value redrawn
                                                                    # with probability 0.2
    python benchmarks/bench_fulldomain.py --repeat 7 --only "k=5 0%"  # medians of 7 runs, one row
    python benchmarks/bench_fulldomain.py --growth-qis --repeat 5    # k = 5 over the first 2..8 QIs

Runs k = 5 and k = 100 at 0% and 4% suppression over the 8 QIs age, workclass, education,
marital-status, race, sex, native-country, occupation (metric DM), and k = 5 with equal-distance
t = 0.2 over the 7 QIs without occupation (SA occupation); prints the chosen level vectors, the
metric values, the nodes checked and the time.
"""

from __future__ import annotations

import datetime as dt
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb import Hierarchy  # noqa: E402
from anonydb.datasets import adult_hierarchy_paths, load_adult  # noqa: E402
from anonydb.methods import fulldomain  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402

Q8 = ["age", "workclass", "education", "marital-status", "race", "sex", "native-country", "occupation"]


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=1, help="replicate Adult this many times (same QI structure)")
    ap.add_argument("--noise", type=float, default=0.0,
                    help="redraw each QI value with this probability from the same column of another row "
                         "(deterministic), so that copies are not exact: sparser tuples, same QI structure")
    ap.add_argument("--repeat", type=int, default=1, help="run each row this many times; report medians")
    ap.add_argument("--only", default=None, help='run only the rows named so, e.g. "k=5 0%%" or "k=100 4%%"')
    ap.add_argument("--profile", action="store_true",
                    help="after each row, the last run's statements summed by template (ms), and the wall time "
                         "they leave to Python")
    ap.add_argument("--growth-qis", action="store_true",
                    help="k = 5, 0%% suppression over the first 2, 3, ..., 8 of the QIs (growth with QIs)")
    args = ap.parse_args()
    eng = anonydb.connect()
    load_adult(eng, "adult_once")
    eng.execute(f"CREATE TABLE adult AS SELECT a.* FROM adult_once AS a, range({int(args.copies)})")
    if args.noise:
        _add_noise(eng, "adult", Q8, args.noise)
    hier = {a: Hierarchy.from_arx(p) for a, p in adult_hierarchy_paths().items()}
    rows = eng.scalar("SELECT count(*) FROM adult")
    tuples = eng.scalar(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(ident(q) for q in Q8)} FROM adult)")
    print(f"# Full-domain search on Adult x{args.copies} ({rows:,} rows, {tuples:,} distinct 8-QI tuples), "
          f"shared hierarchies, metric DM; {dt.date.today()}; command: python {shlex.join(sys.argv)}"
          + (f"; medians of {args.repeat} runs" if args.repeat > 1 else ""))
    print("| criteria | QIs | max suppression | s | search s | nodes checked / lattice | levels (QI order) | DM | "
          "suppressed | classes | loss | minimal nodes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    if args.growth_qis:
        for d in range(2, len(Q8) + 1):
            _row(eng, hier, dict(k=5), Q8[:d], "salary-class", 0.0, args.repeat, args.profile)
        return 0
    runs = [(dict(k=5), Q8, "salary-class", 0.0), (dict(k=5), Q8, "salary-class", 0.04),
            (dict(k=100), Q8, "salary-class", 0.0), (dict(k=100), Q8, "salary-class", 0.04),
            (dict(k=5, t=0.2, distance="equal"), Q8[:-1], "occupation", 0.0),
            (dict(k=5, t=0.2, distance="equal"), Q8[:-1], "occupation", 0.04)]
    for params, qi, sa, supp in runs:
        name = " ".join(f"{k}={v}" for k, v in params.items() if k != "distance") + f" {supp:.0%}"
        if args.only is None or args.only == name:
            _row(eng, hier, params, qi, sa, supp, args.repeat, args.profile)
    return 0


def _row(eng, hier, params, qi, sa, supp, repeat, profile=False) -> None:
    took, search = [], []
    for _ in range(repeat):
        mark = len(eng.log)
        t = time.perf_counter()
        r = fulldomain("adult", qi, sa, hierarchies={q: hier[q] for q in qi}, out="fd", engine=eng, replace=True,
                       max_suppression=supp, **params)
        took.append(time.perf_counter() - t)
        search.append(r.search_seconds)

    def fmt(xs):
        m = f"{statistics.median(xs):.3f}"
        return m if len(xs) == 1 else f"{m} ({', '.join(f'{x:.3f}' for x in xs)})"
    crit = ", ".join(f"{k}={v}" for k, v in params.items())
    print(f"| {crit} | {len(qi)} | {supp:.0%} | {fmt(took)} | {fmt(search)} | "
          f"{r.checked} / {r.lattice} | {[r.levels[q] for q in qi]} | {r.metrics['dm']:,} | {r.suppressed} | {r.classes} | "
          f"{r.metrics['loss']:.4f} | {len(r.minimal)} |", flush=True)
    if profile:
        from statement_log import account

        lines = account(eng.log[mark:], took[-1], indent="#   ")
        print(f"#   last run (search {search[-1] * 1000:.1f} ms): {lines[0]}")
        print("\n".join(lines[1:]))


def _add_noise(eng, table: str, qis: list[str], p: float) -> None:
    """Replace each QI value, with probability ``p``, by the same column's value in another row
    (a hash-ordered shuffle of the column; deterministic)."""
    eng.execute(f"CREATE TABLE _rows AS SELECT *, row_number() OVER () AS _rn FROM {table}")
    sel, joins = [], []
    for i, q in enumerate(qis):
        col = ident(q)
        eng.execute(f"CREATE TABLE _sh{i} AS SELECT {col} AS v, row_number() OVER (ORDER BY hash(_rn, {i})) AS _rn "
                    f"FROM _rows")
        sel.append(f"CASE WHEN hash(r._rn, {i}, 'noise') % 1000000 < {int(p * 1_000_000)} THEN s{i}.v "
                   f"ELSE r.{col} END AS {col}")
        joins.append(f"JOIN _sh{i} AS s{i} ON s{i}._rn = r._rn")
    others = [c for c, _ in eng.columns("_rows") if c not in qis and c != "_rn"]
    eng.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT {', '.join(sel)}"
                + "".join(", r." + ident(c) for c in others) + f" FROM _rows AS r {' '.join(joins)}")
    for i in range(len(qis)):
        eng.execute(f"DROP TABLE _sh{i}")
    eng.execute("DROP TABLE _rows")


if __name__ == "__main__":
    sys.exit(main())
