"""Time SUDA2 (anonydb.risk.suda) on Adult and on synthetic census tables.

    python benchmarks/bench_suda.py                          # Adult, 8 keys, M = 8, median of 3 + oracle
    python benchmarks/bench_suda.py --rows 1000000 10000000 --max-size 4 5 6

Adult: ../shared/datasets/adult/adult.csv (relative to the repository root; --adult for another
file), keys sex, age, race, marital-status, education, native-country, workclass, occupation,
M = 8 (sdcMicro's default: all keys); the median wall of --repeat runs in one in-memory DuckDB with
the table loaded once, then every record's MSUs compared with the brute-force oracle
(tests/suda_oracle.py; --no-oracle to skip its ~15 s). Target: <= 10 s with the oracle's MSUs.

--rows: synthetic_census tables of that many rows (anonydb.datasets), keys age, sex, race,
marital_status, education, workclass, zip, hours_per_week: one run per --max-size on each table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import anonydb  # noqa: E402
from anonydb.datasets import synthetic_census  # noqa: E402
from anonydb.risk.suda import suda2  # noqa: E402
from anonydb.sqlgen import ident, literal  # noqa: E402

ADULT_KEYS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
CENSUS_KEYS = ["age", "sex", "race", "marital_status", "education", "workclass", "zip", "hours_per_week"]


def timed(fn, repeat: int) -> tuple[float, list[float], object]:
    runs, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs), runs, out


def adult(args) -> None:
    eng = anonydb.connect()
    eng.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv({literal(str(args.adult))}, delim = ';', header = true)")
    n = eng.scalar("SELECT count(*) FROM adult")
    med, runs, r = timed(lambda: suda2(eng, "adult", ADULT_KEYS, max_size=args.adult_max_size), args.repeat)
    print(f"Adult ({n} rows, {len(ADULT_KEYS)} keys, M = {r['max_size']}): median {med:.2f} s of "
          f"{', '.join(f'{x:.2f}' for x in runs)}")
    print(f"  MSUs per size {r['msus']}; records with an MSU {r['records_with_msu']}; score max {r['score']['max']:g} "
          f"mean {r['score']['mean']:.3f}; DIS max {r['dis_score']['max']:.4f} mean {r['dis_score']['mean']:.5f}")
    if args.no_oracle:
        return
    import suda_oracle

    suda2(eng, "adult", ADULT_KEYS, max_size=args.adult_max_size, msus_table="adult_msus")
    got: dict = {}
    for rid, msu in eng.fetch_rows("SELECT row_id, msu FROM adult_msus")[1]:
        got.setdefault(rid, set()).add(frozenset(ADULT_KEYS.index(x) for x in msu.split(", ")))
    rows = [tuple(x) for x in eng.fetch_rows(f"SELECT {', '.join(ident(c) for c in ADULT_KEYS)} FROM adult "
                                             f"ORDER BY rowid")[1]]
    t = time.perf_counter()
    want = suda_oracle.msus(rows, args.adult_max_size)
    same = {u: ss for u, ss in want.items() if ss} == got
    sizes = Counter(len(x) for ss in want.values() for x in ss)
    print(f"  oracle ({time.perf_counter() - t:.1f} s): {dict(sorted(sizes.items()))}; every record's MSUs equal: {same}")


def synthetic(args) -> None:
    for rows in args.rows:
        eng = anonydb.connect()
        t = time.perf_counter()
        synthetic_census(eng, "census", rows=rows)
        print(f"census {rows} rows generated in {time.perf_counter() - t:.1f} s")
        for m in args.max_size:
            t = time.perf_counter()
            r = suda2(eng, "census", CENSUS_KEYS, max_size=m)
            print(f"  M = {m}: {time.perf_counter() - t:.1f} s; MSUs per size {r['msus']}; records with an MSU "
                  f"{r['records_with_msu']}", flush=True)
        eng.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--adult", type=Path, default=ROOT.parent / "shared" / "datasets" / "adult" / "adult.csv")
    ap.add_argument("--adult-max-size", type=int, default=8)
    ap.add_argument("--no-adult", action="store_true")
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--rows", type=int, nargs="*", default=[])
    ap.add_argument("--max-size", type=int, nargs="*", default=[8])
    args = ap.parse_args()
    if not args.no_adult:
        adult(args)
    synthetic(args)


if __name__ == "__main__":
    main()
