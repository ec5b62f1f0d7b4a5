"""The floor of an exact k check on Adult in DuckDB, against pycanon's k, in one process.

    python benchmarks/bench_k_floor.py [--repeat 9]

Times pycanon's ``anonymity.k_anonymity`` on a pandas frame of Adult and the bare
``SELECT min(n) FROM (SELECT count(*) AS n FROM adult GROUP BY <7 QIs>)`` on the same frame copied
into DuckDB (QIs age, sex, race, marital-status, education, native-country, workclass), medians
after one warm-up, alternating twice. pycanon's time over the bare GROUP BY's is the largest
speed-up any exact k check that groups the table in DuckDB can show.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import pandas as pd  # noqa: E402

from anonydb.datasets import adult_dir  # noqa: E402
from anonydb.sqlgen import ident  # noqa: E402

QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    from pycanon import anonymity

    df = pd.read_csv(adult_dir() / "adult.csv", sep=";")
    con = duckdb.connect()
    con.register("frame", df)
    con.execute("CREATE TABLE adult AS SELECT * FROM frame")
    sql = f"SELECT min(n) FROM (SELECT count(*) AS n FROM adult GROUP BY {', '.join(ident(q) for q in QI)}) AS g"

    def timed(fn):
        fn()
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t)
        return statistics.median(runs)

    for _ in range(2):
        p = timed(lambda: anonymity.k_anonymity(df, QI))
        g = timed(lambda: con.execute(sql).fetchall())
        print(f"pycanon k {p * 1000:.1f} ms; bare GROUP BY {g * 1000:.2f} ms; ratio {p / g:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
