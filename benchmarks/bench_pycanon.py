"""Time anonydb against pycanon on Adult, check by check, in the same process.

Each check runs on both tools alternately (the order flips every repeat); the table reports
the median seconds and the ratio pycanon / anonydb. anonydb is timed on a DuckDB table created
beforehand and pycanon on a DataFrame read beforehand; the two CSV reads are timed separately.

    python benchmarks/bench_pycanon.py --repeat 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
try:
    import anonydb
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))
    import anonydb

import duckdb
import pandas as pd
import pycanon
from pycanon import anonymity as pa

ADULT = ROOT.parent / "shared" / "datasets" / "adult" / "adult.csv"
FULL_QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
CONFIGS = {  # name: (QIs, categorical SA); ordered t uses SA age with the QIs other than age
    "full": (FULL_QI, "occupation"),
    "coarse": (["sex", "race"], "occupation"),
}


def checks(qi: list[str], sa: str):
    """(name, QIs, SA, anonydb parameters, pycanon call, anonydb result -> shown value)."""
    oq = [q for q in qi if q != "age"]
    first = lambda key: (lambda r: r.verdicts[0].achieved[key])  # noqa: E731
    return [
        ("k-anonymity", qi, sa, dict(k=2), lambda df: pa.k_anonymity(df, qi), first("k")),
        ("distinct l", qi, sa, dict(l=2), lambda df: pa.l_diversity(df, qi, [sa]), first("l")),
        ("entropy l", qi, sa, dict(l=2, l_variant="entropy"), lambda df: pa.entropy_l_diversity(df, qi, [sa]), first("l")),
        ("recursive (c,l)", qi, sa, dict(l=2, l_variant="recursive", c=3),
         lambda df: pa.recursive_c_l_diversity(df, qi, [sa]), first("l")),
        ("t equal", qi, sa, dict(t=0.5, distance="equal"), lambda df: pa.t_closeness(df, qi, [sa]), first("t")),
        ("t ordered (SA age)", oq, "age", dict(t=0.5, distance="ordered"),
         lambda df: pa.t_closeness(df, oq, ["age"]), first("t")),
        ("basic beta-likeness", qi, sa, dict(beta=2), lambda df: pa.basic_beta_likeness(df, qi, [sa]), first("beta")),
    ]


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def show(x) -> str:
    if isinstance(x, tuple):
        return "(" + ", ".join(show(v) for v in x) + ")"
    if isinstance(x, float) or hasattr(x, "denominator") and getattr(x, "denominator") != 1:
        return f"{float(x):.6g}"
    return str(x)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per check and tool (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per check and tool first (default 1)")
    ap.add_argument("--data", type=Path, default=ADULT, help="Adult CSV (';'-separated)")
    ap.add_argument("--config", choices=[*CONFIGS, "all"], default="all")
    ap.add_argument("--output", type=Path, help="also write the Markdown report here")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        ap.error(f"no data at {args.data}")
    warnings.simplefilter("ignore")
    med = lambda xs: statistics.median(xs)  # noqa: E731

    # loading
    csv = str(args.data).replace("'", "''")
    load_pd, load_db = [], []
    e = anonydb.connect()
    for i in range(args.repeat):
        load_pd.append(timed(lambda: pd.read_csv(args.data, sep=";"))[0])
        load_db.append(timed(lambda: e.execute(
            f"CREATE OR REPLACE TABLE adult AS SELECT * FROM read_csv('{csv}', delim = ';', header = true)"))[0])
    df = pd.read_csv(args.data, sep=";")
    csv_check = [timed(lambda: anonydb.check(args.data, FULL_QI, None, engine=e, k=2))[0] for _ in range(args.repeat)]

    rows = []
    names = list(CONFIGS) if args.config == "all" else [args.config]
    for cname in names:
        qi, sa = CONFIGS[cname]
        for name, q, s, params, pc, val in checks(qi, sa):
            run_a = lambda: anonydb.check("adult", q, s, engine=e, **params)  # noqa: E731
            run_p = lambda: pc(df)  # noqa: E731
            for _ in range(args.warmup):
                run_a(), run_p()
            ta, tp = [], []
            for i in range(args.repeat):
                order = [(run_a, ta), (run_p, tp)] if i % 2 == 0 else [(run_p, tp), (run_a, ta)]
                for f, acc in order:
                    t, out = timed(f)
                    acc.append(t)
                    if f is run_a:
                        va = val(out)
                    else:
                        vp = out
            ma, mp = med(ta), med(tp)
            rows.append((cname, len(q), name, ma, mp, mp / ma, show(va), show(vp)))
            print(f"  {cname:6} {name:20} anonydb {ma:8.4f}s  pycanon {mp:8.3f}s  x{mp / ma:7.1f}", file=sys.stderr)
        # the question a user asks: which of these models does the table meet? anonydb answers all
        # five in one call (one scan, shared group statistics); pycanon needs five calls
        from anonydb.models import KAnonymity, LDiversity, TCloseness

        def run_all_a():
            models = [KAnonymity(2), LDiversity(2), LDiversity(2, "entropy"), LDiversity(2, "recursive", 3),
                      TCloseness(0.5, "equal")]
            return anonydb.check("adult", qi, sa, engine=e, models=models)

        def run_all_p():
            return [pc(df) for name, q, s, params, pc, val in checks(qi, sa) if name not in ("t ordered (SA age)", "basic beta-likeness")]

        ta, tp = [], []
        for i in range(args.repeat):
            order = [(run_all_a, ta), (run_all_p, tp)] if i % 2 == 0 else [(run_all_p, tp), (run_all_a, ta)]
            for f, acc in order:
                acc.append(timed(f)[0])
        ma, mp = med(ta), med(tp)
        rows.append((cname, len(qi), "all five above but ordered t, one call", ma, mp, mp / ma, "", ""))
        print(f"  {cname:6} {'all five, one call':20} anonydb {ma:8.4f}s  pycanon {mp:8.3f}s  x{mp / ma:7.1f}", file=sys.stderr)
    e.close()

    cmd = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    out = [
        f"# anonydb vs pycanon on Adult ({dt.date.today().isoformat()})",
        "",
        f"- command: `{cmd}`",
        f"- data: {args.data.name}, {len(df)} rows x {df.shape[1]} columns; median of {args.repeat} runs "
        f"({args.warmup} warm-up), tools alternating",
        f"- versions: python {platform.python_version()}, duckdb {duckdb.__version__}, pycanon {pycanon.__version__}, "
        f"pandas {pd.__version__}; {platform.machine()}, {os.cpu_count()} CPUs",
        "- configs: " + "; ".join(f"{n} = QIs {', '.join(CONFIGS[n][0])}, SA {CONFIGS[n][1]}" for n in names)
        + " (t ordered: SA age, QIs without age)",
        "",
        "| config | QIs | check | anonydb s | pycanon s | pycanon / anonydb | anonydb value | pycanon value |",
        "|---|---:|---|---:|---:|---:|---|---|",
        *(f"| {c} | {n} | {k} | {a:.4f} | {p:.3f} | {r:.1f}x | {va} | {vp} |" for c, n, k, a, p, r, va, vp in rows),
        "",
        "Loading (not in the figures above):",
        "",
        "| step | median s |",
        "|---|---:|",
        f"| pandas read_csv (pycanon's input) | {med(load_pd):.4f} |",
        f"| DuckDB read_csv into a table (anonydb's input) | {med(load_db):.4f} |",
        f"| anonydb check(k) straight from the CSV path (read included) | {med(csv_check):.4f} |",
        "",
        "Values: anonydb's achieved l / t for the requested model; pycanon's own output (entropy l",
        "truncated to an int; recursive returns (c, l) with l the table's distinct l, NaN c when l = 1).",
    ]
    text = "\n".join(out)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
