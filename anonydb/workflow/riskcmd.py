"""``anonydb risk``: every re-identification risk estimate of a table (:mod:`anonydb.risk`), as text,
JSON or an HTML page."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable


def add_parser(sub: Any, db_help: str, engine_help: str, person_help: str,
               about: Callable[[str, str], dict] = lambda name, summary: {"help": summary}) -> None:
    """``about``: add_parser's keywords for a command and its summary (the CLI's adds its help example)."""
    r = sub.add_parser("risk", **about("risk", "re-identification risk of a table: prosecutor, journalist and "
                                               "marketer risk, population uniqueness, sdcMicro's individual and "
                                               "household risk, SUDA2 (--suda)"))
    r.add_argument("source", help="a table or view in --db, or a CSV/Parquet file (raw or released)")
    r.add_argument("--qi", help="the key variables, comma-separated (default: every column but --sensitive, "
                                "--person, --weights, --household and a release's group_id/bucket_id)")
    r.add_argument("--sensitive", help="the sensitive attribute (left out of the default keys)")
    r.add_argument("--threshold", type=float, default=0.2, help="a record is at risk above this risk (default 0.2)")
    pop = r.add_mutually_exclusive_group()
    pop.add_argument("--population", metavar="TABLE|FILE",
                     help="the population, in the same coding: journalist and marketer risk, and its size N")
    pop.add_argument("--population-size", type=int, metavar="N", help="the population's size (population uniqueness)")
    pop.add_argument("--fraction", type=float, metavar="F", help="the sampling fraction n/N (population uniqueness)")
    pop.add_argument("--region", metavar="NAME", help="a named population size as ARX has them (e.g. usa, uk)")
    r.add_argument("--hierarchy", action="append", default=[], metavar="ATTR=PATH",
                   help="a key's hierarchy: maps a raw --population onto a generalized table's labels (repeatable)")
    r.add_argument("--weights", metavar="COL", help="sampling weights: sdcMicro's individual and global risk")
    r.add_argument("--household", metavar="COL", help="a household id: household risk (needs --weights or 1/f)")
    r.add_argument("--person", metavar="COL", help=person_help)
    r.add_argument("--suda", action="store_true", help="also SUDA2: minimal sample uniques and each record's score")
    r.add_argument("--suda-max-size", type=int, metavar="M", help="SUDA2: subsets of at most M key variables")
    r.add_argument("--db", help=db_help)
    r.add_argument("--engine", metavar="ENGINE", help=engine_help)
    r.add_argument("--html", metavar="PATH", help="also write the risk as an HTML page here")
    r.add_argument("--json", action="store_true", help="print the estimates as JSON")


def run(args: argparse.Namespace, engine: Any) -> int:
    from ..hierarchy import parse_hierarchy_arg
    from ..risk.assess import assess
    from .reporting import write_risk_page

    try:
        rep = assess(args.source, args.qi, engine=engine, sensitive=args.sensitive, threshold=args.threshold,
                     population=args.population, population_size=args.population_size, fraction=args.fraction,
                     region=args.region, weights=args.weights, household=args.household, person=args.person,
                     suda=args.suda or args.suda_max_size is not None, suda_max_size=args.suda_max_size,
                     hierarchies=dict(parse_hierarchy_arg(h) for h in args.hierarchy) or None)
    finally:
        engine.close()
    d = rep.to_dict()
    if args.html:
        write_risk_page(d, args.html)
    print(json.dumps(d, indent=2) if args.json else rep.format())
    return 0
