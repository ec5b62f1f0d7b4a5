"""The SQL script's checks (issue 27) against the Python path, in one DuckDB process: each check
as a table macro (`FROM anonydb_check_t_equal(...)`, from `anonydb sql`) and as anonydb.check
with the same model, on Adult (or a synthetic census), median of --repeat runs each, interleaved.
Also the DuckDB CLI's wall for the same macro calls (process start and `.read` included).

    python benchmarks/bench_sql_script.py --repeat 7
    python benchmarks/bench_sql_script.py --census 1000000 --repeat 3
    python benchmarks/bench_sql_script.py mondrian --repeat 5            (anonydb_mondrian against anonymize())
    python benchmarks/bench_sql_script.py mondrian --census 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

import anonydb
from anonydb.hierarchy import EnumeratedHierarchy
from anonydb.models import AlphaKAnonymity, DeltaDisclosure, KAnonymity, LDiversity, TCloseness
from anonydb.sqlgen import literal
from anonydb.sqlscript import script

ADULT = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "adult"
ADULT_QIS = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
CENSUS_QIS = ["age", "sex", "race", "marital_status", "education", "workclass", "zip"]

#: (name, macro call with {t} {q} {s}, the model, needs the sensitive attribute)
CASES = [
    ("k-anonymity (k=5)", "anonydb_check_k({t}, {q}, 5)", lambda: KAnonymity(5), False),
    ("distinct l (l=3)", "anonydb_check_l_distinct({t}, {q}, {s}, 3)", lambda: LDiversity(3), True),
    ("entropy l (l=3)", "anonydb_check_l_entropy({t}, {q}, {s}, 3)", lambda: LDiversity(3, "entropy"), True),
    ("recursive (c,l) (c=3, l=3)", "anonydb_check_l_recursive({t}, {q}, {s}, 3, 3)",
     lambda: LDiversity(3, "recursive", 3), True),
    ("t equal EMD (t=0.2)", "anonydb_check_t_equal({t}, {q}, {s}, 0.2)", lambda: TCloseness(0.2, "equal"), True),
    ("t ordered EMD (t=0.2)", "anonydb_check_t_ordered({t}, {q}, {s}, 0.2)", lambda: TCloseness(0.2, "ordered"), True),
    ("t hierarchical EMD (t=0.2)", "anonydb_check_t_hierarchical({t}, {q}, {s}, 0.2, 'h_sa')",
     lambda: TCloseness(0.2, "hierarchical"), True),
    ("(alpha,k) (0.5, 5)", "anonydb_check_alpha_k({t}, {q}, {s}, 0.5, 5)", lambda: AlphaKAnonymity(0.5, 5), True),
    ("delta-disclosure (1.5)", "anonydb_check_delta({t}, {q}, {s}, 1.5)", lambda: DeltaDisclosure(1.5), True),
]


def _data(census: int):
    """A connection with the script's macros and the table `data`: Adult, or a synthetic census of
    ``census`` rows; (connection, engine, QIs, label)."""
    con = duckdb.connect()
    con.execute(script())
    eng = anonydb.connect(con)
    if census:
        from anonydb.datasets import synthetic_census

        synthetic_census(eng, "data", rows=census, seed=42)
        return con, eng, CENSUS_QIS, f"synthetic census, {census:,} rows"
    con.execute(f"CREATE TABLE data AS FROM read_csv({literal(str(ADULT / 'adult.csv'))})")
    return con, eng, ADULT_QIS, "Adult, 30,162 rows"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--census", type=int, default=0, help="a synthetic census of this many rows instead of Adult")
    ap.add_argument("--only", default=None)
    args = ap.parse_args(argv)

    con, eng, qis, label = _data(args.census)
    sa = "occupation"
    h = None if args.census else EnumeratedHierarchy.from_arx(ADULT / "adult_hierarchy_occupation.csv")
    if h is not None:
        con.execute(f"CREATE TABLE h_sa AS FROM anonydb_hierarchy({literal(str(ADULT / 'adult_hierarchy_occupation.csv'))})")
    q = "[" + ", ".join(literal(x) for x in qis) + "]"
    print(f"# {label}; QIs {', '.join(qis)}; sensitive {sa}; duckdb {duckdb.__version__}; {dt.date.today()}")
    print("| check | Python path s | SQL macro s | ratio (macro / Python) |")
    print("|---|---|---|---|")
    for name, call, model, needs in CASES:
        if args.only and args.only not in name:
            continue
        if "hierarchical" in name and h is None:
            continue
        sql = "FROM " + call.format(t="'data'", q=q, s=literal(sa))
        py_t, sql_t = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            anonydb.check("data", qis, sa if needs else None, models=[model()], engine=eng, max_groups=0,
                          hierarchies={sa: h} if "hierarchical" in name else None)
            py_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            con.execute(sql).fetchall()
            sql_t.append(time.perf_counter() - t0)
        p, s = statistics.median(py_t), statistics.median(sql_t)
        print(f"| {name} | {p:.3f} | {s:.3f} | {s / p:.2f} |", flush=True)

    cli = shutil.which("duckdb", path=os.path.dirname(sys.executable)) or shutil.which("duckdb")
    if cli and not args.census:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "anonydb.sql"
            path.write_text(script())
            body = (f".read {path}\nCREATE TABLE data AS FROM read_csv({literal(str(ADULT / 'adult.csv'))});\n"
                    f"FROM anonydb_check_t_equal('data', {q}, {literal(sa)}, 0.2);\n")
            walls = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                subprocess.run([cli, "-batch", ":memory:"], input=body, capture_output=True, text=True, check=True)
                walls.append(time.perf_counter() - t0)
        print(f"\nDuckDB CLI, `.read` + load Adult + t equal EMD: {statistics.median(walls):.3f} s (median of {args.repeat})")
    return 0


def mondrian_main(argv=None) -> int:
    """anonydb_mondrian against anonymize() (the Python path) in one process, interleaved."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--census", type=int, default=0)
    args = ap.parse_args(argv)
    from anonydb.methods.mondrian import anonymize

    con, eng, qis, label = _data(args.census)
    q = "[" + ", ".join(literal(x) for x in qis) + "]"
    print(f"# Mondrian k=10, l=3, t=0.2 (equal EMD); {label}; QIs {', '.join(qis)}; duckdb {duckdb.__version__}")
    py_t, sql_t = [], []
    for i in range(args.repeat):
        t0 = time.perf_counter()
        r = anonymize("data", qis, "occupation", out="py", engine=eng, k=10, l=3, t=0.2, distance="equal", replace=True)
        py_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TABLE rel AS FROM anonydb_mondrian('data', {q}, 'occupation', k := 10, l := 3, t := 0.2)")
        sql_t.append(time.perf_counter() - t0)
    classes = con.execute("SELECT count(DISTINCT eq_class) FROM rel").fetchone()[0]
    p, s = statistics.median(py_t), statistics.median(sql_t)
    print(f"| anonydb_mondrian | anonymize() (Python path) | ratio | classes (SQL / Python) |\n|---|---|---|---|\n"
          f"| {s:.3f} s | {p:.3f} s | {s / p:.2f} | {classes} / {r.classes} |")
    return 0


if __name__ == "__main__":
    sys.exit(mondrian_main(sys.argv[2:]) if sys.argv[1:2] == ["mondrian"] else main())
