"""``anonydb dp``: differentially private counts, sums and means of a table's groups, by person
(:mod:`anonydb.methods.dp`)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable


def add_parser(sub: Any, db_help: str, engine_help: str,
               about: Callable[[str, str], dict] = lambda name, summary: {"help": summary}) -> None:
    d = sub.add_parser("dp", **about("dp", "differentially private aggregates by person: noisy counts, sums and "
                                           "means per group (OpenDP's noise), each with its scale and 95%% interval"))
    d.add_argument("source", nargs="?", help="a table or view in --db, or a CSV/Parquet file (or give --query)")
    d.add_argument("--query", metavar="SQL", help="an aggregate query instead: SELECT keys, count(*), sum(x), avg(x) "
                                                  "FROM t GROUP BY ALL (sums and means clamped in it, or bounded by "
                                                  "--sum x:LO:HI)")
    d.add_argument("--person", required=True, metavar="COL", help="the privacy unit: each person's records together")
    d.add_argument("--by", metavar="COLS", help="the group columns, comma-separated")
    d.add_argument("--count", action="store_true", help="release each group's row count (the default when nothing "
                                                        "else is asked)")
    d.add_argument("--sum", action="append", default=[], metavar="COL:LO:HI", help="a clamped sum (repeatable)")
    d.add_argument("--mean", action="append", default=[], metavar="COL:LO:HI", help="a clamped mean (repeatable)")
    d.add_argument("--epsilon", type=float, required=True, help="the privacy budget this release spends")
    d.add_argument("--delta", type=float, default=0.0,
                   help="the chance a group only few persons hold is released (needed without --keys)")
    d.add_argument("--mechanism", choices=["laplace", "gaussian"], default="laplace",
                   help="OpenDP's noise: laplace (the default; pure epsilon-DP with --keys) or gaussian (the "
                        "discrete Gaussian, composed in zCDP within the release; needs --delta)")
    d.add_argument("--keys", metavar="TABLE", help="a table of the public group keys: every key released, no threshold")
    d.add_argument("--max-groups", type=int, default=1, metavar="G", help="groups a person counts in (default 1)")
    d.add_argument("--max-rows", type=int, default=1, metavar="R", help="rows a person counts per group (default 1)")
    d.add_argument("--budget", type=float, metavar="E", help="the epsilon the releases of --series (and of the source) "
                                                                "may spend in all; a release past it is refused")
    d.add_argument("--series", metavar="NAME", help="the releases that share --budget (default: --out)")
    d.add_argument("--out", required=True, help="the table of noisy aggregates")
    d.add_argument("--replace", action="store_true", help="replace --out if it exists")
    d.add_argument("--db", help=db_help)
    d.add_argument("--engine", metavar="ENGINE", help=engine_help)
    d.add_argument("--html", metavar="PATH", help="write the release's report page (what it promises and spent, "
                                                   "the noise of each aggregate, the largest groups)")
    d.add_argument("--json", action="store_true", help="print what was released and spent as JSON")


def run(args: argparse.Namespace, engine: Any) -> int:
    from ..errors import InputError
    from ..methods.dp import dp, from_query

    if args.html:
        from pathlib import Path

        from .reporting import _check_report_target

        _check_report_target(Path(args.html), "--html", "html")
    try:
        if args.query:
            if args.source or args.by or args.mean or args.count:
                raise InputError("--query names the source, keys and aggregates: give it without SOURCE, --by, "
                                 "--count or --mean (--sum only bounds its sums and means)")
            what = from_query(args.query, args.sum, args.person)
        elif not args.source or not args.by:
            raise InputError("give SOURCE and --by, or --query")
        else:
            what = dict(source=args.source, by=args.by, count=args.count or not (args.sum or args.mean),
                        sums=args.sum, means=args.mean)
        r = dp(what.pop("source"), person=args.person, out=args.out, epsilon=args.epsilon, delta=args.delta,
               keys=args.keys, max_groups=args.max_groups, max_rows=args.max_rows, engine=engine,
               replace=args.replace, series=args.series, budget=args.budget, mechanism=args.mechanism, **what)
        if args.html:
            from .dpreport import dp_report, write_dp_report

            write_dp_report(dp_report(r), html=args.html)
    finally:
        engine.close()
    return said(r, args.json, args.html, None, close=False)


def said(r: Any, as_json: bool, html: str | None, json_path: str | None, close: bool = True) -> int:
    """Print a DP release's result (its text, or JSON) and where its report went; exit 0."""
    try:
        if as_json:
            print(json.dumps({"table": r.table, "groups": r.groups, "epsilon": r.epsilon, "delta": r.delta,
                              "threshold": r.threshold, "scales": r.scales, "columns": r.columns,
                              "series": r.series, "budget": r.budget, "left": r.left, "promises": r.promise()},
                             indent=2))
        else:
            print(r.format())
            for path in (html, json_path):
                if path:
                    print(f"report: {path}")
    finally:
        if close and r.engine is not None:
            r.engine.close()
    return 0
