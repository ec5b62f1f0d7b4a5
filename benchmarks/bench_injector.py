"""Injector on Adult with the thesis's parameters [Li thesis §3.7; spec-injector-tradeoff-foreground 4]
and how it grows with rows.

    python benchmarks/bench_injector.py rules              # Fig. 3.3: rules and N_i per minExp
    python benchmarks/bench_injector.py attack --runs 10   # §4.3: vulnerable tuples, Anatomy vs Injector
    python benchmarks/bench_injector.py bt                 # §4.4: (B,t) Mondrian, para1-4, b' sweep
    python benchmarks/bench_injector.py omega              # Fig. 3.10: Omega vs exact inference
    python benchmarks/bench_injector.py scale --rows 10000 30000 100000
    python benchmarks/bench_injector.py scale --rows 100000 1000000 --no-bt
    python benchmarks/bench_injector.py workloads          # groups, leftovers, seconds (issue 30)

Adult: QIs age, workclass, education, marital-status, race, sex with the ARX hierarchies of
../shared/datasets/adult (age without one: its values), SA occupation (14 values).
"""

from __future__ import annotations

import argparse
import math
import datetime as dt
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import anonydb  # noqa: E402
from anonydb.attacks.audit import audit_distribution, audit_rules  # noqa: E402
from anonydb.errors import InfeasibleError  # noqa: E402
from anonydb.hierarchy import Hierarchy  # noqa: E402
from anonydb.attacks.knowledge import mine_rules  # noqa: E402
from anonydb.methods import anatomy, anonymize, injector  # noqa: E402

QIS = ["age", "workclass", "education", "marital-status", "race", "sex"]
THESIS_RULES = {0.75: 45, 0.8: 39, 0.85: 32, 0.9: 22, 0.95: 15}
THESIS_N1 = {0.75: 80.4, 0.8: 84.6, 0.85: 87.5, 0.9: 87.9, 0.95: 96.2}


def adult():
    from anonydb.datasets import adult_hierarchy_paths, load_adult

    eng = anonydb.connect()
    eng.execute("SET max_temp_directory_size = '8GB'")
    load_adult(eng, "adult")
    eng.execute("CREATE OR REPLACE TABLE adult AS SELECT row_number() OVER () AS rid, * FROM adult")
    hs = {a: Hierarchy.from_arx(p) for a, p in adult_hierarchy_paths().items()}
    return eng, hs


def qi_hier(hs, qis, sa=True, age=False):
    """The hierarchies of ``qis`` (and the SA's); age's only with ``age`` (rule mining generalizes
    along it; the kernel prior measures age by range instead)."""
    return {a: hs[a] for a in qis + (["occupation"] if sa else []) if a in hs and (age or a != "age")}


def header(title, cmd):
    print(f"# {title}; {dt.date.today()}; command: python benchmarks/bench_injector.py {cmd}")


def cmd_rules(args):
    eng, hs = adult()
    header("Negative association rules on Adult (30,162 rows, 6 QIs), minConf 1", "rules")
    print("| minExp | minimal rules (thesis) | all rules | N_0 | N_1 (thesis) | N_2 | N_3 | N_4 | N_>=5 | mining s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for me in (0.75, 0.8, 0.85, 0.9, 0.95):
        t = time.perf_counter()
        kb = mine_rules("adult", QIS, "occupation", min_exp=me, hierarchies=qi_hier(hs, QIS, False, age=True),
                        engine=eng)
        sec = time.perf_counter() - t
        p = kb.profile
        five = sum(v for i, v in p.items() if i >= 5)
        cells = " | ".join(f"{100 * p.get(i, 0):.1f}%" for i in (2, 3, 4))
        print(f"| {me} | {kb.minimal:,} ({THESIS_RULES[me]}) | {kb.total:,} | {100 * p.get(0, 0):.1f}% | "
              f"{100 * p.get(1, 0):.1f}% ({THESIS_N1[me]}%) | {cells} | {100 * five:.1f}% | {sec:.1f} |")
        kb.close()


THESIS_N = {0.75: [0, 80.4, 15.9, 2.3, 1.2, 0.2], 0.8: [0, 84.6, 12.2, 2.1, 1.0, 0.1], 0.85: [0, 87.5, 9.2, 2.0, 1.0, 0],
            0.9: [0, 87.9, 9.2, 2.5, 0.4, 0], 0.95: [0, 96.2, 1.8, 2.0, 0, 0]}


def _profile(p) -> list[float]:
    """N_0 .. N_4 and N_>=5, percent."""
    return [100 * p.get(i, 0) for i in range(5)] + [100 * sum(v for i, v in p.items() if i >= 5)]


def cmd_sweep(args):
    """Thesis Fig. 3.3 under the choices the thesis leaves open (issue 28): the count an itemset
    needs before rules are formed ('min' = the spec's minSup, the smallest threshold; 'max' = the
    largest, Armed-Forces'; counts between), age as a fuzzy quantitative attribute (§3.3.2) or
    crisp; |R| (minimal rules) and N_0 .. N_>=5 beside the thesis's."""
    eng, hs = adult()
    qis = args.qi.split(",")
    h = qi_hier(hs, qis, False, age=True)
    header(f"Fig. 3.3 sweep on Adult (30,162 rows), QIs {','.join(qis)}, SA occupation, minConf 1",
           f"sweep --qi {args.qi} --support {' '.join(args.support)}")
    print("| minExp | itemset support | age | minimal rules (thesis) | all rules | N_0 | N_1 | N_2 | N_3 | N_4 | N_>=5 | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for me in args.min_exp:
        th = THESIS_N[me]
        print(f"| {me} | thesis | - | {THESIS_RULES[me]} | - | " + " | ".join(f"{x:.1f}%" for x in th) + " | - |")
        for sup in args.support:
            support = sup if sup in ("min", "max") else int(sup)
            for fz in ([], ["age"]):
                t = time.perf_counter()
                kb = mine_rules("adult", qis, "occupation", min_exp=me, hierarchies=h, engine=eng,
                                itemset_support=support, fuzzy=fz, examples=0)
                sec = time.perf_counter() - t
                prof = " | ".join(f"{x:.1f}%" for x in _profile(kb.profile))
                print(f"| {me} | {sup} (>= {math.ceil(max(kb.thresholds.values()) - 1e-9) if sup == 'max' else math.ceil(min(kb.thresholds.values()) - 1e-9) if sup == 'min' else sup}) "
                      f"| {'fuzzy' if fz else 'crisp'} | {kb.minimal:,} ({THESIS_RULES[me]}) | {kb.total:,} | {prof} | {sec:.1f} |",
                      flush=True)
                kb.close()


def cmd_thesis_injector(args):
    """Injector at the thesis's defaults (l = 6, minExp = 0.9, minConf = 1) on Adult (--qi: the
    thesis's 6 QIs of Table 2.6 by default; add native-country for 7), SA occupation, with the
    rules mined under each itemset support: feasible or not, and the vulnerable tuples of the
    release under the same rules (the thesis: 0), beside Anatomy's (mean of --runs seeds)."""
    eng, hs = adult()
    qis = args.qi.split(",")
    h = qi_hier(hs, qis, False, age=True)
    header(f"Injector at the thesis's defaults on Adult, QIs {','.join(qis)}, l = {args.l}, minExp {args.min_exp}",
           f"thesis-injector --qi {args.qi} --runs {args.runs} --support {' '.join(args.support)}")
    print("| itemset support | minimal rules | N_0 | N_1 | Injector | vulnerable (Injector) | groups | mining + Injector s | Anatomy vulnerable (mean) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for sup in args.support:
        support = sup if sup in ("min", "max") else int(sup)
        t = time.perf_counter()
        kb = mine_rules("adult", qis, "occupation", min_exp=args.min_exp, hierarchies=h, engine=eng,
                        itemset_support=support, examples=0)
        p = kb.profile
        try:
            r = injector("adult", qis, "occupation", l=args.l, out="inj", engine=eng, min_exp=args.min_exp,
                         hierarchies=h, replace=True, rules=kb)
            sec = time.perf_counter() - t
            vul = audit_rules(kb, args.l, engine=eng, qit="inj_qit", st="inj_st").vulnerable
            inj = f"feasible | {vul} | {r.groups:,} | {sec:.1f}"
        except InfeasibleError as e:
            inj = f"infeasible ({str(e)[:80]}...) | - | - | {time.perf_counter() - t:.1f}"
        ana = []
        for seed in range(args.runs):
            anatomy("adult", qis, "occupation", l=args.l, out="ana", engine=eng, seed=seed, replace=True)
            ana.append(audit_rules(kb, args.l, engine=eng, qit="ana_qit", st="ana_st").vulnerable)
        print(f"| {sup} | {kb.minimal:,} | {100 * p.get(0, 0):.1f}% | {100 * p.get(1, 0):.1f}% | {inj} | "
              f"{statistics.mean(ana):,.1f} |", flush=True)
        kb.close()


def cmd_attack(args):
    """Vulnerable tuples (fewer than l possible values under the rules mined at minExp 0.9) of
    Anatomy (mean over --runs seeds) and of Injector, l = 3..6 on the QIs where Injector is
    feasible; the time of mining + bucketization."""
    eng, hs = adult()
    qis = args.qi.split(",")
    h = qi_hier(hs, qis, False, age=True)
    header(f"Rule-based attack on Adult, QIs {','.join(qis)}, minExp {args.min_exp}",
           f"attack --qi {args.qi} --runs {args.runs}")
    kb = mine_rules("adult", qis, "occupation", min_exp=args.min_exp, hierarchies=h, engine=eng)
    print(f"rules: {kb.minimal} minimal of {kb.total}; "
          + ", ".join(f"N_{i} {100 * v:.1f}%" for i, v in sorted(kb.profile.items())))
    print("| l | Anatomy vulnerable (mean of runs) | Anatomy runs | Injector vulnerable | Injector groups | "
          "mining + Injector s | Anatomy s |")
    print("|---|---|---|---|---|---|---|")
    for lv in args.l:
        ana, ana_s = [], []
        for seed in range(args.runs):
            t = time.perf_counter()
            try:
                anatomy("adult", qis, "occupation", l=lv, out="ana", engine=eng, seed=seed, replace=True)
            except InfeasibleError:
                ana = None
                break
            ana_s.append(time.perf_counter() - t)
            ana.append(audit_rules(kb, lv, engine=eng, qit="ana_qit", st="ana_st").vulnerable)
        t = time.perf_counter()
        try:
            r = injector("adult", qis, "occupation", l=lv, out="inj", engine=eng, min_exp=args.min_exp,
                         hierarchies=h, replace=True)
            sec = time.perf_counter() - t
            vul = audit_rules(kb, lv, engine=eng, qit="inj_qit", st="inj_st").vulnerable
            inj = f"{vul} | {r.groups:,} | {sec:.1f}"
        except InfeasibleError as e:
            inj = f"infeasible | - | ({str(e)[:60]}...)"
        a = f"{statistics.mean(ana):,.1f} | {', '.join(map(str, ana))}" if ana else "infeasible | -"
        print(f"| {lv} | {a} | {inj} | {statistics.median(ana_s) if ana_s else 0:.2f} |")


def cmd_bt(args):
    """(B,t)-private Mondrian against distinct l-diversity, probabilistic l-diversity and
    t-closeness Mondrian (k = l) on Adult, para1-4 of Table 3.4, b = 0.3; vulnerable tuples for
    the adversary b' (Fig. 3.5)."""
    eng, hs = adult()
    h = qi_hier(hs, QIS)
    paras = {"para1": (3, 0.25), "para2": (4, 0.2), "para3": (5, 0.15), "para4": (6, 0.1)}
    header("(B,t)-privacy on Adult (30,162 rows, 6 QIs, SA occupation, hierarchical EMD), b = 0.3", "bt")
    print("| setting | release | seconds | classes | vulnerable at b'=0.3 | worst D |")
    print("|---|---|---|---|---|---|")
    releases = {}
    for name in args.paras:
        k, t = paras[name]
        for kind, params in [("(B,t)", dict(k=k, bt=(0.3, t))), ("distinct l", dict(l=k)),
                             ("probabilistic l", dict(l=k, l_variant="probabilistic")), ("t-closeness", dict(k=k, t=t))]:
            tt = time.perf_counter()
            try:
                # the row id rides along unverified (as slicing and presence keep theirs): the audit joins
                # each release row back to its source tuple; a release for users never publishes it
                r = anonymize("adult", QIS, "occupation", out="rel", engine=eng, hierarchies=h, replace=True,
                              keep=["rid"], _unjudged=("rid",), **params)
            except InfeasibleError as e:
                print(f"| {name} (k=l={k}, t={t}) | {kind} | infeasible: {e} | | | |")
                continue
            sec = time.perf_counter() - tt
            tbl = f"j_{name}_{kind.replace(' ', '_').replace('(', '').replace(')', '').replace(',', '')}"
            eng.execute(f'CREATE OR REPLACE TABLE "{tbl}" AS SELECT r.eq_class, a.* FROM rel AS r JOIN adult AS a '
                        f"USING (rid)")
            releases[(name, kind)] = tbl
            a = audit_distribution(0.3, t, engine=eng, qi=QIS, sensitive="occupation", group="eq_class", table=tbl,
                                   prior_source="adult", hierarchies=h)
            print(f"| {name} (k=l={k}, t={t}) | {kind} | {sec:.1f} | {r.classes:,} | {a.vulnerable:,} | {a.worst:.4f} |")
    if ("para2", "(B,t)") in releases:
        print("\nFig. 3.5(a): para2 releases (k = l = 4, t = 0.2), adversary b' varies")
        print("| b' | " + " | ".join(k for (p, k) in releases if p == "para2") + " |")
        print("|---|" + "---|" * sum(1 for (p, _) in releases if p == "para2"))
        for bp in args.bprime:
            row = []
            for (p, kind), tbl in releases.items():
                if p == "para2":
                    a = audit_distribution(bp, 0.2, engine=eng, qi=QIS, sensitive="occupation", group="eq_class",
                                           table=tbl, prior_source="adult", hierarchies=h)
                    row.append(f"{a.vulnerable:,}")
            print(f"| {bp} | " + " | ".join(row) + " |")


def cmd_omega(args):
    from anonydb.attacks.posterior import exact_posterior, omega_estimate, variational
    from anonydb.models.prior import kernel_prior

    eng, hs = adult()
    t = time.perf_counter()
    p = kernel_prior("adult", QIS, "occupation", 0.3, engine=eng, hierarchies=qi_hier(hs, QIS, False))
    prior_s = time.perf_counter() - t
    rows = eng.fetch_rows(f"SELECT q._adb_qid, a.occupation FROM adult AS a JOIN {p.qids} AS q ON "
                          + " AND ".join(f'a."{c}" = q."{c}"' for c in QIS))[1]
    pri = defaultdict(dict)
    for qid, s, v in eng.fetch_rows(f"SELECT _adb_qid, _adb_sa, _adb_p FROM {p.table}")[1]:
        pri[qid][s] = v
    header(f"Omega-estimate accuracy on Adult kernel priors (b = 0.3; prior estimated in {prior_s:.1f} s), "
           f"{args.runs} random groups per size, D = variational", "omega")
    print("| group size N | mean rho | max rho |")
    print("|---|---|---|")
    rnd = random.Random(1)
    for n in args.sizes:
        rhos = []
        for _ in range(args.runs):
            g = rnd.sample(rows, n)
            vals = sorted({s for _, s in g} | {s for q, _ in g for s in pri[q]})
            counts = [sum(1 for _, s in g if s == v) for v in vals]
            pr = [[pri[q].get(v, 0.0) for v in vals] for q, _ in g]
            ex, om = exact_posterior(pr, counts), omega_estimate(pr, counts)
            rhos.append(sum(abs(variational(e, x) - variational(o, x)) for e, o, x in zip(ex, om, pr)) / n)
        print(f"| {n} | {statistics.mean(rhos):.4f} | {max(rhos):.4f} |")


def cmd_scale(args):
    """Mining + Injector (l = 3, minExp 0.9, QIs age, sex, race) and (B,t) Mondrian (k = 4,
    b = 0.3, t = 0.2, 6 QIs) on synthetic censuses of growing size (``--no-bt``: Injector only)."""
    from anonydb.datasets import synthetic_census

    header("Growth with rows (synthetic census, SA occupation)",
           "scale --rows " + " ".join(map(str, args.rows)) + (" --no-bt" if args.no_bt else ""))
    print("| rows | Injector l=3 (age,sex,race) s | of which mining s | groups | tuples left over | merges | "
          "(B,t) Mondrian k=4 t=0.2 (6 QIs) s | classes |")
    print("|---|---|---|---|---|---|---|---|")
    q6 = ["age", "sex", "race", "marital_status", "education", "workclass"]
    for n in args.rows:
        eng = anonydb.connect()
        synthetic_census(eng, "census", rows=n, seed=42)
        t = time.perf_counter()
        r = injector("census", ["age", "sex", "race"], "occupation", l=3, out="inj", engine=eng, min_exp=0.9)
        inj_s = time.perf_counter() - t
        bt = "-", "-"
        if not args.no_bt:
            t = time.perf_counter()
            m = anonymize("census", q6, "occupation", out="gen", engine=eng, k=4, bt=(0.3, 0.2))
            bt = f"{time.perf_counter() - t:.1f}", f"{m.classes:,}"
        print(f"| {n:,} | {inj_s:.1f} | {r.mine_seconds:.1f} | {r.groups:,} | {r.leftovers:,} | {r.merges} | "
              f"{bt[0]} | {bt[1]} |", flush=True)
        eng.close()


def cmd_workloads(args):
    """Injector's grouping on three workloads (issue 30): Adult at the thesis's defaults (6 QIs,
    l = 6, itemset support 1000), Adult on age, sex, race at l = 3, and a 100,000-row census at
    l = 3; minExp 0.9: groups, tuples left over by the rounds, merges, seconds with mining."""
    from anonydb.datasets import synthetic_census

    header("Injector's grouping on three workloads", "workloads")
    print("| workload | rows | groups | largest possible (rows // l) | tuples left over | merges | s | of which mining s |")
    print("|---|---|---|---|---|---|---|---|")
    eng, hs = adult()
    six, three = QIS, ["age", "sex", "race"]
    runs = [("Adult, 6 QIs, l = 6, itemset support 1000", "adult", six, 6, qi_hier(hs, six, False, age=True), 1000),
            ("Adult, age/sex/race, l = 3", "adult", three, 3, qi_hier(hs, three, False, age=True), "min")]
    synthetic_census(eng, "census", rows=100_000, seed=42)
    runs.append(("census 100k, age/sex/race, l = 3", "census", three, 3, None, "min"))
    for name, table, qis, lv, h, sup in runs:
        t = time.perf_counter()
        r = injector(table, qis, "occupation", l=lv, out="inj", engine=eng, min_exp=0.9, hierarchies=h,
                     itemset_support=sup, replace=True)
        sec = time.perf_counter() - t
        print(f"| {name} | {r.rows:,} | {r.groups:,} | {r.rows // lv:,} | {r.leftovers:,} | {r.merges} | {sec:.2f} | "
              f"{r.mine_seconds:.2f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("rules")
    a = sub.add_parser("attack")
    a.add_argument("--qi", default="age,sex,race")
    a.add_argument("--min-exp", type=float, default=0.9)
    a.add_argument("--l", type=int, nargs="+", default=[3, 4, 5, 6])
    a.add_argument("--runs", type=int, default=10)
    b = sub.add_parser("bt")
    b.add_argument("--paras", nargs="+", default=["para1", "para2", "para3", "para4"])
    b.add_argument("--bprime", type=float, nargs="+", default=[0.2, 0.3, 0.4, 0.5])
    o = sub.add_parser("omega")
    o.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 6, 8, 10])
    o.add_argument("--runs", type=int, default=100)
    w = sub.add_parser("sweep")
    w.add_argument("--qi", default=",".join(QIS))
    w.add_argument("--min-exp", type=float, nargs="+", default=[0.75, 0.8, 0.85, 0.9, 0.95])
    w.add_argument("--support", nargs="+", default=["min", "1000", "3000", "max"])
    ti = sub.add_parser("thesis-injector")
    ti.add_argument("--qi", default=",".join(QIS))
    ti.add_argument("--l", type=int, default=6)
    ti.add_argument("--min-exp", type=float, default=0.9)
    ti.add_argument("--runs", type=int, default=10)
    ti.add_argument("--support", nargs="+", default=["min", "1000", "3000", "max"])
    s = sub.add_parser("scale")
    s.add_argument("--rows", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    s.add_argument("--no-bt", action="store_true", help="Injector only (no (B,t) Mondrian)")
    sub.add_parser("workloads")
    args = ap.parse_args()
    {"rules": cmd_rules, "attack": cmd_attack, "bt": cmd_bt, "omega": cmd_omega, "scale": cmd_scale,
     "workloads": cmd_workloads,
     "sweep": cmd_sweep, "thesis-injector": cmd_thesis_injector}[args.cmd](args)


if __name__ == "__main__":
    main()
