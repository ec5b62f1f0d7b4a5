"""Time slicing (phi^2 + PAM columns, l-diverse tuple partitioning, verified release) on Adult and
on synthetic censuses of growing size; fit the growth exponent; compare with the thesis's
algorithm run literally (Fig 4.1 with the Fig 4.2 check over every tuple and bucket, in Python).

    python benchmarks/bench_slicing.py adult --repeat 3
    python benchmarks/bench_slicing.py scale --rows 1000 10000 30000 100000
    python benchmarks/bench_slicing.py peer --rows 300 1000
    python benchmarks/bench_slicing.py pairs --rows 30000 100000 300000

``adult``: all 9 attributes (8 QIs and SA occupation), l = 5, c = 3 (the issue's setting), with the
membership measures of the release and of an Anatomy release with the same l, and the
aggregate-query error of both (1000 random COUNT queries, spec 6.4). ``scale``: the
census's 8 QIs with SA occupation, l = 5, c = 3, each size in a fresh process; the exponent is the
least-squares slope of log(time) on log(rows). ``peer``: the same partition search, but every
candidate cut judged by the brute-force check of tests/slicing_oracle.py (p(t,s) tuple by tuple,
bucket by bucket, as Fig 4.2 does), against anonydb on the same table; both must agree on the
verdict of the final release. ``pairs``: the (tuple, matching bucket) pairs the final verification
reads (every check of l-diverse slicing reads them: the buckets holding all of a tuple's column
values), per size, each in a fresh process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import anonydb  # noqa: E402
from anonydb.methods import anatomy, slicing  # noqa: E402

ADULT = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "salary-class"]


def cmd_adult(args) -> None:
    from anonydb.datasets import load_adult
    from anonydb.attacks.membership import anatomy_membership

    eng = anonydb.connect()
    load_adult(eng, "adult")
    runs, r = [], None
    for _ in range(args.repeat):
        t = time.perf_counter()
        r = slicing("adult", ADULT, "occupation", l=5, columns=3, out="adult_sliced", engine=eng, replace=True)
        runs.append(time.perf_counter() - t)
    t = time.perf_counter()
    m = slicing("adult", ADULT, "occupation", l=5, columns=3, out="adult_sliced", engine=eng, replace=True,
                membership=True).membership
    tm = time.perf_counter() - t - statistics.median(runs)
    anatomy("adult", ADULT, "occupation", l=5, out="adult_anat", engine=eng, replace=True)
    ma = anatomy_membership(eng, "adult", "adult_anat_qit", "adult_anat_st", ADULT, "occupation")
    print(f"# Slicing on Adult (30,162 rows, 9 attributes, SA occupation), l = 5, c = 3; {dt.date.today()}; "
          f"command: python benchmarks/bench_slicing.py adult --repeat {args.repeat}")
    print(f"columns: {r.columns}; moved out of the sensitive column: {r.moved}")
    print("| run | median s | runs (s) | buckets | rounds | max p(t,s) | verified |")
    print("|---|---|---|---|---|---|---|")
    print(f"| slicing l=5 c=3 | {statistics.median(runs):.2f} | {', '.join(f'{x:.2f}' for x in runs)} | {r.buckets} | "
          f"{r.rounds} | {r.verdict.worst:.4f} | {r.verdict.holds} |")
    from anonydb.utility.queries import query_error, workload

    qs = workload(eng, "adult", ADULT, "occupation", n=args.queries, dim=2, sel=0.1, seed=1)
    t = time.perf_counter()
    es = query_error(eng, "adult", qs, columns=r.tables, sensitive="occupation")
    tq = time.perf_counter() - t
    ea = query_error(eng, "adult", qs, qit="adult_anat_qit", st="adult_anat_st", sensitive="occupation")
    print(f"\n{args.queries} COUNT queries (dim 2, sel 0.1, seed 1; spec 6.4), average relative error rho "
          f"(median): slicing {es['rho']:.1f}% ({es['median']:.1f}%) in {tq:.2f} s; Anatomy l=5 "
          f"{ea['rho']:.1f}% ({ea['median']:.1f}%)")
    print(f"\nmembership (+{tm:.2f} s): | release | fake tuples | identity fakes | originals <=10 / 11-20 / >20 "
          f"matching buckets | fakes <=10 / 11-20 / >20 |")
    for name, x in (("slicing", m), ("anatomy l=5", ma)):
        ob, fb = x.binned(x.original_matching), x.binned(x.fake_matching)
        how = "" if x.exact else f" (sampled, ± {x.stderr['fakes']:.0f})"
        print(f"| {name} | {x.fakes:,.0f}{how} | {x.identity_fakes:,.0f} | "
              f"{' / '.join(f'{v:,.0f}' for v in ob.values())} | {' / '.join(f'{v:,.0f}' for v in fb.values())} |")


def cmd_scale_one(args) -> None:
    from anonydb.datasets import CENSUS_QIS, synthetic_census

    eng = anonydb.connect()
    synthetic_census(eng, "census", rows=args.one, seed=1)
    eng.log.clear()
    t = time.perf_counter()
    r = slicing("census", CENSUS_QIS, "occupation", l=5, columns=3, out="sliced", engine=eng)
    wall = time.perf_counter() - t
    if args.profile:
        _profile(eng.log, wall, r.rounds)
    print(json.dumps({"rows": args.one, "seconds": wall, "buckets": r.buckets, "rounds": r.rounds,
                      "holds": r.verdict.holds}))


def _profile(log, wall: float, rounds: int) -> None:
    """The whole wall of one slicing call accounted for (benchmarks/statement_log.py): statements by
    template, the diversity checks by mode, untemplated statements by kind, and Python. The last
    'worst' check is the final verification: one pass of the exact check over every tuple and every
    bucket it matches."""
    from statement_log import account

    def key(x) -> str:
        if x.template == "slicing_diversity.sql.j2":
            return "check: " + ("combined (culprits)" if "pm AS" in x.sql else "single cuts" if "lm AS" in x.sql
                                else "whole table (worst)")
        if x.template:
            return x.template
        words = x.sql.split()
        return "small statements: " + (" ".join(words[:3]) if words[0] == "CREATE" else words[0])
    print("profile: " + "\n".join(account(log, wall, key)))
    worst = [x.seconds for x in log if key(x) == "check: whole table (worst)"]
    if worst:
        print(f"the final verification (one exact pass over every tuple's matching buckets): {worst[-1]:.2f} s; "
              f"x {rounds} rounds = {worst[-1] * rounds:.1f} s")


def cmd_scale(args) -> None:
    res = []
    for n in args.rows:
        run = subprocess.run([sys.executable, __file__, "scale-one", "--one", str(n)], capture_output=True, text=True)
        if run.returncode:  # say why a size failed (a refused release, say) and go on with the others
            why = next((x for x in reversed(run.stderr.splitlines()) if x.strip() and not x.startswith(" ")), "")
            print(f"{n:,} rows: failed (exit {run.returncode}): {why[:300]}", file=sys.stderr, flush=True)
            continue
        res.append(json.loads(run.stdout.strip().splitlines()[-1]))
    if len(res) < 2:
        return
    xs = [math.log(r["rows"]) for r in res]
    ys = [math.log(r["seconds"]) for r in res]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"# Slicing on the synthetic census (8 QIs, SA occupation), l = 5, c = 3; {dt.date.today()}; "
          f"command: python benchmarks/bench_slicing.py scale --rows {' '.join(map(str, args.rows))}")
    print("| rows | s | buckets | rounds | verified |")
    print("|---|---|---|---|---|")
    for r in res:
        print(f"| {r['rows']:,} | {r['seconds']:.2f} | {r['buckets']} | {r['rounds']} | {r['holds']} |")
    print(f"\nfitted growth exponent (log-log least squares over all sizes): {slope:.2f}")
    if len(res) > 2:
        xs2, ys2 = xs[1:], ys[1:]
        mx2, my2 = statistics.fmean(xs2), statistics.fmean(ys2)
        s2 = sum((x - mx2) * (y - my2) for x, y in zip(xs2, ys2)) / sum((x - mx2) ** 2 for x in xs2)
        print(f"without the smallest size (fixed costs dominate there): {s2:.2f}")


def cmd_peer(args) -> None:
    """Fig 4.1 literally: a FIFO queue of buckets, one median cut at a time, each judged by the
    brute-force Fig 4.2 check over all tuples and buckets (tests/slicing_oracle.py)."""
    import slicing_oracle as oracle
    from anonydb.datasets import CENSUS_QIS, synthetic_census

    print(f"# Slicing vs the thesis's algorithm run literally in Python (Fig 4.1 + Fig 4.2); {dt.date.today()}; "
          f"command: python benchmarks/bench_slicing.py peer --rows {' '.join(map(str, args.rows))}")
    print("| rows | anonydb s | literal Fig 4.1/4.2 s | ratio | anonydb buckets | literal buckets |")
    print("|---|---|---|---|---|---|")
    qis = CENSUS_QIS[:4]
    for n in args.rows:
        eng = anonydb.connect()
        synthetic_census(eng, "census", rows=n, seed=1)
        attrs = qis + ["occupation"]
        cols = [qis[:2], qis[2:], ["occupation"]]
        t = time.perf_counter()
        r = slicing("census", qis, "occupation", l=4, columns=cols, out="s", engine=eng, tries=1)
        ta = time.perf_counter() - t
        rows = [dict(zip(attrs, x)) for x in eng.fetch_rows(f"SELECT {', '.join(attrs)} FROM census")[1]]
        t = time.perf_counter()
        nb = _literal(oracle, rows, cols, qis, "occupation", 4)
        tl = time.perf_counter() - t
        print(f"| {n:,} | {ta:.2f} | {tl:.2f} | {tl / ta:.1f}x | {r.buckets} | {nb} |")


def _literal(oracle, rows, cols, dims, sensitive, l) -> int:
    n = len(rows)
    ranks = {d: {v: i for i, v in enumerate(sorted({r[d] for r in rows}))} for d in dims}
    spans = {d: max(1, len(ranks[d]) - 1) for d in dims}
    bucket = [0] * n
    queue, final, next_id = [0], [], 1
    members = {0: list(range(n))}
    while queue:
        b = queue.pop(0)
        idx = members[b]
        if len(idx) < 2 * l:
            final.append(b)
            continue
        d = max(dims, key=lambda a: (max(ranks[a][rows[i][a]] for i in idx) - min(ranks[a][rows[i][a]] for i in idx))
                / spans[a])
        order = sorted(idx, key=lambda i: ranks[d][rows[i][d]])
        left, right = order[:len(order) // 2], order[len(order) // 2:]
        trial = bucket[:]
        for i in right:
            trial[i] = next_id
        if oracle.is_l_diverse(rows, cols, sensitive, trial, l):
            bucket = trial
            members[b], members[next_id] = left, right
            queue += [b, next_id]
            next_id += 1
        else:
            final.append(b)
    return len(set(bucket))


def cmd_pairs(args) -> None:
    from anonydb.datasets import CENSUS_QIS, synthetic_census
    from anonydb.models.sliced_diversity import SlicedLDiversity

    if args.one:  # one size, in this process: count the verification's pairs as it runs
        eng = anonydb.connect()
        synthetic_census(eng, "census", rows=args.one, seed=1)
        plan, got = SlicedLDiversity.plan, {}

        def counting(self, e, tuples, chain, srel, mode="worst", **kw):
            r = plan(self, e, tuples, chain, srel, mode=mode, **kw)
            if mode == "worst":  # the verification: its relation m holds one row per (tuple, matching bucket)
                got["pairs"], got["tuples"] = e.fetch_rows(r.sql.split("), pb AS (")[0]
                                                           + ") SELECT count(*), count(DISTINCT tid) FROM m")[1][0]
            return r

        SlicedLDiversity.plan = counting
        r = slicing("census", CENSUS_QIS, "occupation", l=5, columns=3, out="sliced", engine=eng)
        print(json.dumps({"rows": args.one, "buckets": r.buckets, **got}))
        return
    print(f"# (tuple, matching bucket) pairs of the verified slicing (census, l = 5, c = 3); {dt.date.today()}; "
          f"command: python benchmarks/bench_slicing.py pairs --rows {' '.join(map(str, args.rows))}")
    print("| rows | buckets | distinct tuples | pairs | pairs per tuple |")
    print("|---|---|---|---|---|")
    for n in args.rows:
        run = subprocess.run([sys.executable, __file__, "pairs", "--one", str(n)], capture_output=True, text=True)
        if run.returncode:
            print(f"| {n:,} | failed: {run.stderr.strip().splitlines()[-1] if run.stderr.strip() else '?'} |")
            continue
        x = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"| {n:,} | {x['buckets']:,} | {x['tuples']:,} | {x['pairs']:,} | {x['pairs'] / x['tuples']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("adult")
    a.add_argument("--repeat", type=int, default=3)
    a.add_argument("--queries", type=int, default=1000)
    s = sub.add_parser("scale")
    s.add_argument("--rows", type=int, nargs="+", default=[1000, 10000, 30000, 100000])
    o = sub.add_parser("scale-one")
    o.add_argument("--one", type=int, required=True)
    o.add_argument("--profile", action="store_true", help="account for the whole wall by template")
    p = sub.add_parser("peer")
    p.add_argument("--rows", type=int, nargs="+", default=[300, 1000])
    q = sub.add_parser("pairs")
    q.add_argument("--rows", type=int, nargs="+", default=[30000, 100000, 300000])
    q.add_argument("--one", type=int, default=0)
    args = ap.parse_args()
    {"adult": cmd_adult, "scale": cmd_scale, "scale-one": cmd_scale_one, "peer": cmd_peer,
     "pairs": cmd_pairs}[args.cmd](args)


if __name__ == "__main__":
    main()
