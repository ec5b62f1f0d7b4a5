"""DP aggregates on the synthetic census: speed against the plain GROUP BY, accuracy against OpenDP's
own Polars front end, in the same run (issue 64).

    python benchmarks/bench_dp.py speed --rows 10000000 --repeat 3
    python benchmarks/bench_dp.py accuracy --rows 10000000 --trials 10

speed: medians of (a) the plain ``SELECT sex, education, count(*), avg(income) ... GROUP BY ALL``
materialized, (b) ``anonydb.dp`` end to end (count and mean of income in [0, 200000] by sex and
education, person = person_id, G = R = 1, keys selected with delta), (c) its bounding statement
alone, and (d) the floor of any person-level bounding: one aggregation by (person, keys), which
every plan must make before it can count a person at most once.

accuracy: the median relative error per released cell (count, and mean) over ``--trials`` releases
at the same epsilon and delta, anonydb's noise on the bounded aggregates against OpenDP Polars'
``group_by(...).agg(dp.len(), income.dp.mean(...))`` (each person one row: contributions = 1).
Needs ``pip install 'opendp[polars]'``."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import anonydb  # noqa: E402
from anonydb.datasets import synthetic_census  # noqa: E402
from anonydb.methods.dp import Bound, add_noise, bounded_sql  # noqa: E402

BY = ["sex", "education"]
HI = 200_000


def census(rows: int, memory: str):
    eng = anonydb.connect(None)
    eng.execute(f"SET memory_limit = '{memory}'")
    t = time.perf_counter()
    synthetic_census(eng, "census", rows=rows)
    print(f"census of {rows:,} rows in {time.perf_counter() - t:.1f} s", flush=True)
    return eng


def timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def speed(args) -> None:
    eng = census(args.rows, args.memory_limit)
    keys = ", ".join(BY)
    plain = (f"CREATE OR REPLACE TEMP TABLE plain AS SELECT {keys}, count(*) AS n, avg(income) AS m FROM census "
             f"GROUP BY ALL")
    floor = (f"CREATE OR REPLACE TEMP TABLE floor AS SELECT person_id, {keys}, count(*) AS n, "
             f"sum(least(greatest(income, 0), {HI})) AS s FROM census GROUP BY ALL")
    bound = f"CREATE OR REPLACE TEMP TABLE bound AS {bounded_sql('census', 'person_id', BY, [Bound('income', 0, HI)], 1, 1)}"
    runs: dict[str, list[float]] = {"plain GROUP BY": [], "anonydb.dp": [], "bounding statement": [],
                                    "floor: one aggregation by person": []}
    for _ in range(args.repeat):
        runs["plain GROUP BY"].append(timed(lambda: eng.execute(plain)))
        runs["anonydb.dp"].append(timed(lambda: anonydb.dp(
            "census", person="person_id", by=BY, means=[f"income:0:{HI}"], epsilon=args.epsilon, delta=args.delta,
            out="dp_out", engine=eng, replace=True)))
        runs["bounding statement"].append(timed(lambda: eng.execute(bound)))
        runs["floor: one aggregation by person"].append(timed(lambda: eng.execute(floor)))
    base = statistics.median(runs["plain GROUP BY"])
    print(f"\n{args.rows:,} rows, median of {args.repeat}, {time.strftime('%Y-%m-%d')}")
    print("| step | median s | x plain GROUP BY |\n|---|---:|---:|")
    for name, xs in runs.items():
        m = statistics.median(xs)
        print(f"| {name} | {m:.2f} | {m / base:.1f} |")


def accuracy(args) -> None:
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    eng = census(args.rows, args.memory_limit)
    keys = ", ".join(BY)
    _, truth_rows = eng.fetch_rows(f"SELECT {keys}, count(*), avg(least(greatest(income, 0), {HI})) FROM census "
                                   f"GROUP BY ALL")
    truth = {tuple(r[:2]): (r[2], r[3]) for r in truth_rows}
    _, bounded = eng.fetch_rows(bounded_sql("census", "person_id", BY, [Bound("income", 0, HI)], 1, 1))
    frame = pl.from_arrow(eng.con.sql(f"SELECT person_id, {keys}, CAST(income AS BIGINT) AS income FROM census").arrow())

    def query():  # a compositor answers one query: a fresh one per release, as a new analysis would
        ctx = dp.Context.compositor(data=frame.lazy(), privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=args.epsilon, delta=args.delta),
                                    split_evenly_over=1, margins=[dp.polars.Margin(by=[], max_length=10 * args.rows)])
        return ctx.query().group_by(*BY).agg(dp.len(), pl.col("income").fill_null(0).dp.mean(bounds=(0, HI)))

    print(query().summarize(alpha=0.05))

    def errors(rows) -> tuple[float, float, int]:
        cn = [abs(n - truth[k][0]) / truth[k][0] for k, n, _ in rows]
        cm = [abs(m - truth[k][1]) / truth[k][1] for k, _, m in rows if truth[k][1]]
        return statistics.median(cn), statistics.median(cm), len(rows)

    ours, theirs = [], []
    t_ours = t_theirs = 0.0
    for _ in range(args.trials):
        t = time.perf_counter()
        out, names, _, thr = add_noise(bounded, 2, True, [], [Bound("income", 0, HI)], args.epsilon, args.delta, 1, 1,
                                       public=False)
        t_ours += time.perf_counter() - t
        ours.append(errors([((r[0], r[1]), r[2], r[6]) for r in out]))
        t = time.perf_counter()
        rel = query().release().collect()
        t_theirs += time.perf_counter() - t
        theirs.append(errors([((r[0], r[1]), r[2], r[3]) for r in rel.iter_rows()]))
    print(f"\n{args.rows:,} rows, {len(truth)} true cells, epsilon {args.epsilon}, delta {args.delta}, "
          f"{args.trials} trials, {time.strftime('%Y-%m-%d')}; anonydb's threshold {thr}")
    print("| front end | median rel. error, count | median rel. error, mean | cells released | noise s/release |")
    print("|---|---:|---:|---:|---:|")
    for name, res, secs in (("anonydb", ours, t_ours), ("OpenDP Polars", theirs, t_theirs)):
        print(f"| {name} | {statistics.median(r[0] for r in res):.2e} | {statistics.median(r[1] for r in res):.2e} "
              f"| {statistics.median(r[2] for r in res):g} | {secs / args.trials:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["speed", "accuracy"])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-7)
    ap.add_argument("--memory-limit", default="4GB")
    args = ap.parse_args()
    (speed if args.what == "speed" else accuracy)(args)


if __name__ == "__main__":
    main()
