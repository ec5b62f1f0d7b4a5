"""The ``anonydb`` command: ``check`` a table or file against privacy models, run the ``demo``.

Exit codes: 0 every requested model holds, 1 one fails, 2 bad input (the message says what).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from . import __version__
from .checker import check
from .errors import AnonyDBError, InputError
from .models import DISTANCES, L_VARIANTS


def _add_model_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("privacy models")
    g.add_argument("--k", type=int, help="k-anonymity: every group has at least k records")
    g.add_argument("--l", type=float, help="l-diversity (variant by --l-variant)")
    g.add_argument("--l-variant", choices=L_VARIANTS, default="distinct", help="l-diversity variant (default distinct)")
    g.add_argument("--c", type=float, help="the constant c of recursive (c,l)-diversity")
    g.add_argument("--t", type=float, help="t-closeness: EMD to the table's distribution at most t")
    g.add_argument("--distance", choices=DISTANCES,
                   help="EMD ground distance (default: hierarchical with a hierarchy for the sensitive "
                        "attribute, ordered for a numeric one, equal otherwise)")
    g.add_argument("--reference", choices=("table", "uniform"), default="table",
                   help="t-closeness reference distribution: the table's (default) or uniform over its "
                        "distinct values (paper-compatible weighting only)")
    g.add_argument("--n", type=int, help="with --t: (n,t)-closeness against natural supersets of >= n records")
    g.add_argument("--supersets", choices=("subsets", "rollup"), default="subsets",
                   help="natural supersets for (n,t)-closeness: every QI subset, or QI prefixes")
    g.add_argument("--alpha", type=float, help="with --k: (alpha,k)-anonymity, no value above alpha in a group")
    g.add_argument("--delta", type=float, help="delta-disclosure: |ln(p(E,s)/p(T,s))| < delta")


def _int_if_whole(x: float | None):
    return int(x) if x is not None and float(x).is_integer() else x


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="anonydb", description="SQL-native anonymization checks inside DuckDB")
    ap.add_argument("--version", action="version", version=f"anonydb {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="check which privacy models a table or CSV/Parquet file meets")
    c.add_argument("source", help="a table or view in --db, or a CSV/Parquet file")
    c.add_argument("--qi", required=True, help="quasi-identifiers, comma-separated")
    c.add_argument("--sensitive", help="the sensitive attribute")
    c.add_argument("--db", help="DuckDB database file (default: in memory)")
    c.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH",
                   help="an ARX-format hierarchy file for an attribute (repeatable)")
    c.add_argument("--numeric", default=None, help="attributes that must hold numbers, comma-separated")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--max-groups", type=int, default=20, help="violating groups listed per model (default 20)")
    _add_model_args(c)

    d = sub.add_parser("demo", help="generate a synthetic census table in memory, generalize it and check it")
    d.add_argument("--rows", type=int, default=100_000, help="rows of the synthetic table (default 100000)")
    d.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    d.add_argument("--k", type=int, default=5)
    d.add_argument("--l", type=float, default=3)
    d.add_argument("--t", type=float, default=0.3)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(rows=args.rows, seed=args.seed, k=args.k, l=_int_if_whole(args.l), t=args.t)
    except (InputError, AnonyDBError, FileNotFoundError) as e:
        print(f"anonydb: error: {e}", file=sys.stderr)
        return 2
    return 2


def _check(args: argparse.Namespace) -> int:
    from .engine import DuckDBEngine
    from .hierarchy import parse_hierarchy_arg
    from .schema import split_list

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    kinds = {c: "numeric" for c in split_list(args.numeric, "--numeric")}
    engine = DuckDBEngine(args.db)
    try:
        report = check(
            args.source, args.qi, args.sensitive, engine=engine, hierarchies=hierarchies, kinds=kinds,
            max_groups=args.max_groups, k=args.k, l=_int_if_whole(args.l), l_variant=args.l_variant, c=args.c,
            t=args.t, distance=args.distance, n=args.n, alpha=args.alpha, delta=args.delta, supersets=args.supersets,
            reference=args.reference,
        )
    finally:
        engine.close()
    print(report.to_json() if args.json else report.format())
    return 0 if report.holds else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
