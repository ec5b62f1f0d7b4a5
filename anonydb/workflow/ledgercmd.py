"""``anonydb releases`` (the release ledger: list, drop) and the next release of a tracked series
(``anonymize --method minvariant``, or a re-run of a series): the ledger's commands
(:mod:`anonydb.release.ledger`)."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ..errors import InputError


def add_parser(sub: Any, db_help: str, engine_help: str,
               about: Callable[[str, str], dict] = lambda name, summary: {"help": summary}) -> None:
    """``about``: add_parser's keywords for a command and its summary (the CLI's adds its help example)."""
    ls = sub.add_parser("releases", **about("releases", "list the release ledger of a database (anonydb_releases), "
                                                        "or drop entries from it with --drop ID"))
    ls.add_argument("--db", help=db_help)
    ls.add_argument("--engine", metavar="ENGINE", help=engine_help)
    ls.add_argument("--series", metavar="NAME", help="only this series")
    ls.add_argument("--ledger-schema", metavar="SCHEMA", help="the schema holding the ledger (default: the current one)")
    ls.add_argument("--drop", type=int, action="append", metavar="ID",
                    help="remove this entry (and its fingerprints) from the ledger, repeatable; the released "
                         "tables stay")
    ls.add_argument("--json", action="store_true", help="print the entries as JSON")


def next_release(args: argparse.Namespace, engine: Any, track: Any, whole: Callable[[Any], Any]) -> int:
    """The next release of a series (--method minvariant, or mondrian/anatomy continuing one);
    ``whole``: the CLI's reading of --l (an integer when it is whole)."""
    import json

    from ..methods.invariant import invariant

    others = [f"--{n.replace('_', '-')}" for n in ("t", "n", "alpha", "delta", "keep", "person")
              if getattr(args, n)] + (["--hierarchy"] if args.hierarchy and args.method == "minvariant" else [])
    if others:
        engine.close()
        raise InputError(f"the next release of series {track.series!r} (minvariant) takes --k, --l and --m; "
                         f"not {', '.join(others)}")
    form = "anatomy" if args.method == "anatomy" else args.form
    try:
        result = invariant(args.source, args.qi, args.sensitive, out=args.out, engine=engine, form=form,
                           replace=args.replace, seed=args.seed, identifiers=args.identifiers,
                           **({"k": args.k} if args.k else {}), **({"l": whole(args.l)} if args.l else {}))
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if track.staged.get("id") is not None and not args.json:
        print(result.format())
        print(f"  ledger: release {track.staged['id']} of series {track.series!r}, verified together with "
              f"{len(track.staged.get('earlier', []))} earlier release(s) of {track.source}")
        return 0
    if args.json:
        print(json.dumps({"tables": result.tables, "rows": result.rows, "groups": result.groups,
                          "counterfeits": result.counterfeits, "persistent": result.persistent, "new": result.new,
                          "utility": result.utility, "verification": result.report.to_dict()}, indent=2, default=str))
    else:
        print(result.format())
    return 0


def releases(args: argparse.Namespace, engine: Any) -> int:
    """List the ledger, or drop entries from it (on request only)."""
    import json

    from ..release import ledger

    try:
        if args.drop:
            gone = ledger.drop(engine, args.drop, args.ledger_schema)
            print(f"dropped ledger release(s) {', '.join(map(str, gone))} (the released tables stay)")
            return 0
        rows = ledger.entries(engine, schema=args.ledger_schema)
        if args.series:
            rows = [r for r in rows if r["series"] == args.series]
    finally:
        engine.close()
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    if not rows:
        print("no releases in the ledger" + (f" for series {args.series!r}" if args.series else ""))
        return 0
    print(f"{'id':>4}  {'created':<25} {'series':<16} {'source':<16} {'method':<11} {'mode':<13} {'rows':>9} "
          f"{'groups':>7} {'counterfeits':>12}  achieved")
    for r in rows:
        ach = json.loads(r["achieved"] or "{}")
        short = "; ".join(f"{m}: {', '.join(f'{k}={v}' for k, v in a.items())}" for m, a in ach.items())
        mode = r["mode"] + (f" m={r['m']}" if r["m"] else "")
        print(f"{r['id']:>4}  {r['created']:<25} {r['series']:<16} {r['source']:<16} {r['method']:<11} {mode:<13} "
              f"{r['rows']:>9} {r['groups']:>7} {r['counterfeits']:>12}  {short}")
    return 0
