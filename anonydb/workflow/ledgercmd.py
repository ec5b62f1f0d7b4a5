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
    ls.add_argument("--verify", action="store_true",
                    help="check every entry under the publisher's secret (its checksum, the chain of entries, "
                         "fingerprints without an entry); exit 1 when one fails")
    ls.add_argument("--secret-file", metavar="PATH",
                    help="the publisher's secret (else $ANONYDB_SECRET): the entries' checksums are verified with it")


def next_release(args: argparse.Namespace, engine: Any, track: Any, whole: Callable[[Any], Any]) -> int:
    """The next release of a series (--method minvariant, or mondrian/anatomy continuing one);
    ``whole``: the CLI's reading of --l (an integer when it is whole)."""
    import json

    from ..methods.invariant import invariant

    others = [f"--{n.replace('_', '-')}" for n in ("t", "n", "alpha", "delta", "keep")
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
        from .tracking import result_line

        print(result.format())
        print(result_line(track))
        return 0
    if args.json:
        print(json.dumps({"tables": result.tables, "rows": result.rows, "groups": result.groups,
                          "counterfeits": result.counterfeits, "persistent": result.persistent, "new": result.new,
                          "utility": result.utility, "verification": result.report.to_dict()}, indent=2, default=str))
    else:
        print(result.format())
    return 0


def releases(args: argparse.Namespace, engine: Any) -> int:
    """List the ledger with what each release was verified with and whether its entry is intact,
    verify it (``--verify``: exit 1 when an entry is missing, edited or orphaned), or drop entries
    from it (on request only)."""
    import json

    from ..pseudonyms import load_key
    from ..release import ledger

    secret, origin = load_key(args.secret_file)
    secret = None if origin == "fresh" else secret
    if args.verify and secret is None:
        engine.close()
        raise InputError("--verify checks the entries' checksums under the publisher's secret: give --secret-file "
                         "or $ANONYDB_SECRET")
    try:
        if args.drop:
            gone = ledger.drop(engine, args.drop, args.ledger_schema)
            print(f"dropped ledger release(s) {', '.join(map(str, gone))} (the released tables stay)")
            return 0
        every = ledger.entries(engine, schema=args.ledger_schema, dropped=True, dp=True)
        bad = ledger.problems(engine, every, secret, args.ledger_schema) if ledger.present(engine, args.ledger_schema) \
            else {}
        rows = [r for r in every if r["mode"] != ledger.DROPPED]
        if args.series:
            rows = [r for r in rows if r["series"] == args.series]
    finally:
        engine.close()
    for r in rows:
        r["state"] = bad.get(int(r["id"]), "untracked" if r["mode"] == ledger.UNTRACKED else "dp" if r["mode"] == ledger.DP else
                             "ok" if secret is not None else "linked (checksum not verified: no secret)")
    orphans = {i: why for i, why in bad.items() if i not in {int(r["id"]) for r in every}}
    if args.json:
        print(json.dumps({"releases": rows, "problems": {str(i): w for i, w in sorted(bad.items())}} if args.verify
                         else rows, indent=2, default=str))
        return 1 if bad and args.verify else 0
    if not rows and not bad:
        print("no releases in the ledger" + (f" for series {args.series!r}" if args.series else ""))
        return 0
    if rows:
        print(f"{'id':>4}  {'created':<25} {'series':<16} {'source':<16} {'method':<11} {'mode':<13} {'rows':>9} "
              f"{'groups':>7}  composed with (persons shared)")
    for r in rows:
        mode = r["mode"] + (f" m={r['m']}" if r["m"] else "")
        print(f"{r['id']:>4}  {r['created']:<25} {r['series']:<16} {_short(r['source']):<16} {r['method']:<11} "
              f"{mode:<13} {r['rows']:>9} {r['groups']:>7}  {_composed(r)}")
        ach = json.loads(r["achieved"] or "{}")
        if ach:
            print("        achieved: " + "; ".join(f"{m}: {', '.join(f'{k}={v}' for k, v in a.items())}"
                                            for m, a in ach.items()))
        if r["mode"] == ledger.DP:
            print("        promises: " + _dp_promise(r))
        if r["state"] not in ("ok", "untracked", "dp") and not r["state"].startswith("linked"):
            print(f"        PROBLEM: release {r['id']} {r['state']}")
    for i, why in sorted(orphans.items()):
        print(f"   PROBLEM: release {i} {why}")
    if args.verify:
        print(f"verified {len(rows)} entries: " + ("every entry intact" if not bad else
                                                   f"{len(bad)} problem(s); restore the ledger or drop the entries"))
        return 1 if bad else 0
    return 0


def _dp_promise(r: dict) -> str:
    """What a differentially private entry promises, and its series' budget."""
    import json

    m = json.loads(r["models"] or "{}")
    said = (f"({m.get('epsilon')}, {m.get('delta')})-differential privacy for every person of {r['tracked']!r} "
            f"(at most {m.get('max_groups')} groups and {m.get('max_rows')} rows each)")
    if m.get("budget") is not None:
        said += f"; budget {m['budget']}, {m.get('left')} left after it"
    return said


def _short(source: str) -> str:
    """A file source by its name (the ledger keeps its resolved path)."""
    from pathlib import Path

    return Path(source).name if "/" in str(source) else str(source)


def _composed(r: dict) -> str:
    """What an entry was verified with: each earlier release and the persons it shares."""
    import json

    if r["mode"] == "untracked":
        why = json.loads(r["composed"] or "{}").get("untracked", "")
        return "untracked" + (" (no secret)" if why == "no secret" else " (asked)" if why == "asked" else "")
    got = json.loads(r["composed"] or "[]")
    if not got:
        return "nothing earlier"
    return ", ".join(f"{c['id']} ({c['shared']}{'' if c['why'] != ['persons'] else ', outside series and source'})"
                     for c in got)
