"""Keyed pseudonyms (HMAC-SHA256 in SQL, :func:`anonydb.pseudonyms.pseudonym_sql`) on DuckDB,
against a plain ``sha256`` of the same column in the same run, reported as a ratio.

    python benchmarks/bench_pseudonyms.py --rows 10000000 --repeat 5
    python benchmarks/bench_pseudonyms.py --rows 10000000 --repeat 5 --alternatives

A table of ``--rows`` rows holds an integer id (BIGINT, 0..n-1) and a VARCHAR (``person-<id>``, 8
to 14 characters). Each statement is ``SELECT min(<expr>) FROM t`` (every row hashed, one row
back; ``min`` costs both sides the same few nanoseconds a row); the plain hash is
``sha256(CAST(id AS VARCHAR))`` and ``sha256(name)``, the text the pseudonym hashes. Runs
alternate between the two, after one warm-up each, so that load on the machine hits both; the
medians and every run are printed.

``--alternatives``: also the steps and other formulations of the same HMAC (the inner hash alone,
the pads as BLOB literals, the inner digest kept as hex), to see where the time goes. HMAC's
floor is four SHA-256 blocks a value of under 56 bytes (the inner pad's block and the message's,
the outer pad's and the inner digest's), against one for the plain hash.
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
from anonydb.pseudonyms import pads, pseudonym_sql  # noqa: E402

KEY = b"a benchmark key of 32 bytes....."


def alternatives(e, col: str, sql_type: str) -> list[tuple[str, str]]:
    """Other formulations and the steps of the HMAC, over the same column."""
    ipad, opad = pads(KEY)
    text = f"CAST({col} AS VARCHAR)"
    esc = lambda h: "'" + "".join(f"\\x{h[i:i + 2]}" for i in range(0, len(h), 2)) + "'::BLOB"  # noqa: E731
    return [
        ("encode only: sha256(encode(text))", f"sha256(encode({text}))"),
        ("inner hash only: sha256(ipad || m)", f"sha256(unhex('{ipad}') || encode({text}))"),
        ("inner hash, digest back to bytes", f"unhex(sha256(unhex('{ipad}') || encode({text})))"),
        ("HMAC, pads as BLOB literals", f"sha256({esc(opad)} || unhex(sha256({esc(ipad)} || encode({text}))))"),
        ("HMAC, outer over the hex digest (not HMAC: 2 outer blocks)",
         f"sha256(unhex('{opad}') || encode(sha256(unhex('{ipad}') || encode({text}))))"),
        ("two plain hashes: sha256(sha256(text))", f"sha256(sha256({text}))"),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="DuckDB's threads (default: every core)")
    ap.add_argument("--alternatives", action="store_true", help="also time the HMAC's steps and other formulations")
    args = ap.parse_args(argv)

    e = anonydb.connect()
    if args.threads:
        e.execute(f"SET threads = {int(args.threads)}")
    t0 = time.perf_counter()
    e.execute(f"CREATE TABLE t AS SELECT CAST(range AS BIGINT) AS id, 'person-' || range AS name "
              f"FROM range({int(args.rows)})")
    gen = time.perf_counter() - t0
    threads = e.scalar("SELECT current_setting('threads')")
    import duckdb

    print(f"# keyed pseudonyms (HMAC-SHA256) against plain sha256 on DuckDB {duckdb.__version__}, {threads} threads: "
          f"{args.rows:,} rows; {dt.date.today()}; table made in {gen:.1f} s")
    print(f"# command: python benchmarks/{' '.join(sys.argv[0].split('/')[-1:] + (argv or sys.argv[1:]))}")
    print("| column | statement | median s | runs (s) | plain sha256 median s | ratio |")
    print("|---|---|---|---|---|---|")
    for col, sql_type, plain in [('"id"', "BIGINT", 'sha256(CAST("id" AS VARCHAR))'), ('"name"', "VARCHAR", 'sha256("name")')]:
        cases = [("pseudonym_sql (HMAC)", pseudonym_sql(e, col, sql_type, KEY))]
        if args.alternatives:
            cases += alternatives(e, col, sql_type)
        for name, expr in cases:
            mine, base = [], []
            sql, floor = f"SELECT min({expr}) FROM t", f"SELECT min({plain}) FROM t"
            e.scalar(sql), e.scalar(floor)  # warm-up
            for _ in range(args.repeat):  # alternate, so both see the same load
                t = time.perf_counter()
                e.scalar(sql)
                mine.append(time.perf_counter() - t)
                t = time.perf_counter()
                e.scalar(floor)
                base.append(time.perf_counter() - t)
            m, b = statistics.median(mine), statistics.median(base)
            runs = ", ".join(f"{x:.2f}" for x in mine)
            print(f"| {sql_type} {col} | {name} | {m:.2f} | {runs} | {b:.2f} | {m / b:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
