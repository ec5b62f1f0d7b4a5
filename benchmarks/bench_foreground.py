"""The foreground-knowledge attack on Adult in Wong et al.'s setting [spec-injector-tradeoff-foreground
6.10]: QIs age, workclass, marital-status, occupation, race; SA education; x = the education levels
below 9th grade (Preschool, 1st-4th, 5th-6th, 7th-8th); eps = 0.01, sigma = 0.9 (J = 3993).

    python benchmarks/bench_foreground.py                 # Anatomy r = 2, 4 and t-closeness Mondrian
    python benchmarks/bench_foreground.py --runs 5        # Anatomy averaged over 5 seeds
    python benchmarks/bench_foreground.py --k 2 --t 0.2   # the Mondrian release's parameters
    python benchmarks/bench_foreground.py --wall-only     # only the wall time of the test's attack

Wall time: the attack of tests/test_foreground.py::test_adult_anatomy_r2 (Anatomy l = 2, seed 0,
r = 2, truth table, risk table written), timed here as the median of --wall-runs runs (the test
asserts what the attack finds, not how long it takes).

Releases: Anatomy with l = r (the largest feasible l when r is not: on Adult HS-grad holds 32.6% of
the rows, so l <= 3); a (k, t)-closeness Mondrian release attacked on its QI labels (table input,
group eq_class), and the same release seen by the paper's worst-case adversary, who links every
tuple to its group and its original QI values (spec 6.1: generalization reduces to bucketization).
Our Adult has 30,162 rows (the paper's 45,222: train and test), so fewer signatures reach J.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.datasets import load_adult  # noqa: E402
from anonydb.errors import InfeasibleError  # noqa: E402
from anonydb.attacks.foreground import foreground_attack  # noqa: E402
from anonydb.methods import anatomy, anonymize  # noqa: E402

QIS = ["age", "workclass", "marital-status", "occupation", "race"]
LOW_EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th"]
PAPER = {("anatomy", 2): "0.8917 / >99% / <6%", ("anatomy", 4): "0.4640 / >99% / <6%",
         ("t-closeness", 2): "no breaches (groups >= 4000 tuples)", ("t-closeness", 10): "breaches (no figure)"}


def _cols(prefix: str) -> str:
    return ", ".join(f'{prefix}."{c}"' for c in QIS)


def anatomy_rows(eng, r: int, runs: int, min_support: int | None):
    """Attack Anatomy releases (seeds 0..runs-1); return (label, medians and means) for one table row."""
    l, note = r, ""
    res, secs, rel_secs = [], [], []
    for seed in range(runs):
        t = time.perf_counter()
        try:
            anatomy("src", qi=QIS + ["rid"], sensitive="education", l=l, out="ana", engine=eng, seed=seed, replace=True)
        except InfeasibleError:
            l = 3
            note = f" (l = {r} infeasible)"
            anatomy("src", qi=QIS + ["rid"], sensitive="education", l=l, out="ana", engine=eng, seed=seed, replace=True)
        rel_secs.append(time.perf_counter() - t)
        eng.execute(f"CREATE OR REPLACE TABLE truth AS SELECT q.group_id, {_cols('q')}, s.education "
                    f"FROM ana_qit AS q JOIN src AS s USING (rid)")
        t = time.perf_counter()
        res.append(foreground_attack(engine=eng, qi=QIS, sensitive="education", qit="ana_qit", st="ana_st",
                                     targets=LOW_EDUCATION, r=r, truth="truth", min_support=min_support))
        secs.append(time.perf_counter() - t)
    return f"Anatomy l = {l}, r = {r}{note}", res, secs, rel_secs


def attack_wall_time(eng, runs: int) -> list[float]:
    """Seconds of each of ``runs`` runs of the attack in tests/test_foreground.py::test_adult_anatomy_r2:
    Anatomy l = 2 (seed 0), r = 2, with the truth table, writing the risk table."""
    anatomy("src", qi=QIS + ["rid"], sensitive="education", l=2, out="ana", engine=eng, seed=0, replace=True)
    eng.execute(f"CREATE OR REPLACE TABLE truth AS SELECT q.group_id, {_cols('q')}, s.education "
                f"FROM ana_qit AS q JOIN src AS s USING (rid)")
    secs = []
    for _ in range(runs):
        t = time.perf_counter()
        foreground_attack(engine=eng, qi=QIS, sensitive="education", qit="ana_qit", st="ana_st",
                          targets=LOW_EDUCATION, r=2, truth="truth", out="adult_risk", replace=True)
        secs.append(time.perf_counter() - t)
    return secs


def link_rows_to_classes(eng, rows: int) -> None:
    """gen_link(rid, eq_class): each source row's class in the Mondrian release ``gen``, the one
    whose published box (age_lo..age_hi, the value sets of the categorical labels) holds its QIs.
    A release publishes no row id, but strict Mondrian's boxes are disjoint, so the box decides;
    checked: every row in exactly one class, and each class's education counts as released."""
    def holds(q: str) -> str:
        if q == "age":
            return 's."age" BETWEEN c."age_lo" AND c."age_hi"'
        label = f'c."{q}"'
        return (f"list_contains(CASE WHEN starts_with({label}, '{{') THEN string_split({label}[2:-2], ', ') "
                f'ELSE [{label}] END, s."{q}")')
    labels = ", ".join(f'"{q}"' for q in QIS if q != "age")
    eng.execute(f"CREATE OR REPLACE TABLE gen_link AS WITH c AS (SELECT DISTINCT eq_class, age_lo, age_hi, {labels} "
                f"FROM gen) SELECT s.rid, c.eq_class FROM src AS s JOIN c ON {' AND '.join(holds(q) for q in QIS)}")
    linked, distinct = eng.fetch_rows("SELECT count(*), count(DISTINCT rid) FROM gen_link")[1][0]
    off = eng.scalar("SELECT count(*) FROM ((SELECT l.eq_class, s.education, count(*) FROM gen_link AS l "
                     "JOIN src AS s USING (rid) GROUP BY ALL) "
                     "EXCEPT ALL (SELECT eq_class, education, count(*) FROM gen GROUP BY ALL))")
    if not linked == distinct == rows or off:
        raise SystemExit(f"cannot link the Mondrian release to its rows by the boxes: {linked} links, {distinct} rows "
                         f"of {rows}, {off} (class, education) counts differ")


def summarize(label, res, secs, rel_secs, paper):
    mean = lambda xs: statistics.fmean(xs)  # noqa: E731
    a = res[-1]
    return (f"| {label} | {a.groups:,} | {mean(rel_secs):.2f} | {mean(secs):.2f} | {a.J} | "
            f"{sum(a.reliable.values())} / {len(a.reliable)} | {max(x.iterations for x in res)} | "
            f"{mean([x.avg_breach_probability for x in res]):.4f} | {100 * mean([x.recall for x in res]):.2f}% | "
            f"{100 * mean([x.false_positive_share for x in res]):.2f}% | "
            f"{mean([x.avg_delta for x in res if x.avg_delta is not None] or [0]):.4f} | {paper} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1, help="Anatomy seeds to average over (the paper: 100 runs)")
    ap.add_argument("--k", type=int, default=2, help="k of the (k, t)-closeness Mondrian release")
    ap.add_argument("--t", type=float, default=0.2, help="t of the (k, t)-closeness Mondrian release")
    ap.add_argument("--scaled-j", action="store_true",
                    help="also attack Anatomy r = 2 with J scaled to our row count (3993 * 30162 / 45222)")
    ap.add_argument("--wall-runs", type=int, default=3,
                    help="runs of the test's attack (Anatomy l = 2, r = 2, truth, risk table) whose median is printed")
    ap.add_argument("--wall-only", action="store_true", help="print that wall time only")
    args = ap.parse_args(argv)
    if args.wall_runs < 1:
        ap.error("--wall-runs must be >= 1")

    eng = anonydb.connect()
    load_adult(eng, "adult")
    eng.execute("CREATE TABLE src AS SELECT row_number() OVER () AS rid, * FROM adult")
    rows = eng.scalar("SELECT count(*) FROM src")
    wall = attack_wall_time(eng, args.wall_runs)
    wall_line = (f"# wall time of the attack in tests/test_foreground.py::test_adult_anatomy_r2 (Anatomy l = 2, "
                 f"seed 0, r = 2, truth, risk table written): median {statistics.median(wall):.2f} s over "
                 f"{len(wall)} run(s) ({', '.join(f'{x:.2f}' for x in wall)})")
    if args.wall_only:
        print(wall_line)
        return
    low = eng.scalar("SELECT count(*) FROM src WHERE education IN ('Preschool', '1st-4th', '5th-6th', '7th-8th')")
    lines = []
    for r in (2, 4):
        label, res, secs, rel = anatomy_rows(eng, r, args.runs, None)
        lines.append(summarize(label, res, secs, rel, PAPER[("anatomy", r)]))
    if args.scaled_j:
        j = round(3993 * rows / 45222)
        label, res, secs, rel = anatomy_rows(eng, 2, args.runs, j)
        lines.append(summarize(label + f", J = {j}", res, secs, rel, "(no counterpart)"))

    t = time.perf_counter()
    m = anonymize("src", QIS, "education", out="gen", engine=eng, k=args.k, t=args.t, replace=True)
    rel_s = time.perf_counter() - t
    link_rows_to_classes(eng, rows)
    eng.execute(f"CREATE OR REPLACE TABLE gen_qit AS SELECT {_cols('s')}, g.eq_class FROM gen_link AS g "
                f"JOIN src AS s USING (rid)")
    eng.execute("CREATE OR REPLACE TABLE gen_st AS SELECT eq_class, education, count(*) AS count FROM gen GROUP BY ALL")
    eng.execute(f"CREATE OR REPLACE TABLE gen_truth AS SELECT g.eq_class, {_cols('s')}, s.education "
                f"FROM gen_link AS g JOIN src AS s USING (rid)")
    for r in (2, 10):
        t = time.perf_counter()
        a = foreground_attack(engine=eng, qi=QIS, sensitive="education", table="gen", group="eq_class",
                              targets=LOW_EDUCATION, r=r)
        lines.append(summarize(f"(k = {args.k}, t = {args.t})-closeness Mondrian, QI labels, r = {r}", [a],
                               [time.perf_counter() - t], [rel_s], PAPER[("t-closeness", r)]))
        t = time.perf_counter()
        a = foreground_attack(engine=eng, qi=QIS, sensitive="education", qit="gen_qit", st="gen_st", group="eq_class",
                              targets=LOW_EDUCATION, r=r, truth="gen_truth")
        lines.append(summarize(f"same release, original QIs known (worst case), r = {r}", [a],
                               [time.perf_counter() - t], [rel_s], PAPER[("t-closeness", r)]))

    print(f"# Foreground-knowledge attack on Adult ({rows:,} rows, {low:,} sensitive: {100 * low / rows:.2f}%); "
          f"{dt.date.today()}; command: python benchmarks/bench_foreground.py"
          + (" " + " ".join(sys.argv[1:] if argv is None else argv) if (sys.argv[1:] if argv is None else argv) else ""))
    print(f"# QIs {', '.join(QIS)}; SA education; x = {{{', '.join(LOW_EDUCATION)}}}; eps = 0.01, sigma = 0.9; "
          f"Anatomy averaged over {args.runs} seed(s); Mondrian: {m.classes:,} classes, "
          f"average {rows / m.classes:,.0f} tuples")
    print(wall_line)
    print("| release | groups | release s | attack s | J | reliable signatures / attribute sets | EM iterations | "
          "avg breach probability | recall | non-sensitive breached | avg Delta | paper (45,222 rows): "
          "avg breach / recall / false positives |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
