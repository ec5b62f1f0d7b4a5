"""The ``anonydb`` command: check, anonymize, release, plan, report, audit, evaluate, tradeoff, demo.

Exit codes: 0 every requested model holds, 1 one fails, 2 any error. An error is one line on
stderr naming the thing and the option to change (``--debug`` adds the traceback); SIGINT and
SIGTERM stop the run after its clean-up (staging tables dropped, nothing half-written) with 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Sequence

from ..checker import check
from ..errors import InputError
from . import ledgercmd
from .cliargs import _parser  # noqa: F401  (the parser: anonydb.workflow.cli._parser, as before)
from .cliargs import extra_params as _extra, int_if_whole as _int_if_whole, model_params
from .cliutil import _WRITTEN, _use_engine, _engine_for, _existing_db, _export_targets, _after_build, _presence_args
from .climethods import _dispatch, _marginals, _presence, _minvariant
from .clieval import _audit, _evaluate, _tradeoff




def _plan(args) -> int:
    from .jobs import plan_spec

    sys.stdout.write(plan_spec(args.spec, db=args.db, full=args.all))
    return 0


def _sql(args) -> int:
    from ..sqlscript import script, write

    if args.out is None:
        sys.stdout.write(script())
        return 0
    path = write(args.out, replace=args.replace)
    print(f"wrote {path}: install its macros with `.read {path}` in the DuckDB CLI")
    return 0


def _demo(args) -> int:
    from .demo import run_demo

    return run_demo(rows=args.rows, seed=args.seed, k=args.k, l=_int_if_whole(args.l), t=args.t)


#: the commands that show their phases on stderr (a live line on a terminal, a line a phase elsewhere)
SHOW_PROGRESS = ("anonymize", "release")


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading
    import traceback

    from ..engines import base as _engine
    from ..errors import Interrupted, cli_surface
    from .exits import STOPPED_BY, closed_stdout_ok, on_signal, one_line

    try:
        with closed_stdout_ok():  # --help | head -1 as well
            args = _parser().parse_args(argv)
    except SystemExit as e:  # --help, --version (0) and argparse's one-line errors (2)
        return int(e.code or 0)
    token = cli_surface()
    previous: dict[int, Any] = {}
    STOPPED_BY.clear()
    _engine._STOP.clear()
    if threading.current_thread() is threading.main_thread():  # elsewhere the caller owns the signals
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    from .progress import Progress

    args.progress = Progress(enabled=args.command in SHOW_PROGRESS and not getattr(args, "quiet", False))
    _WRITTEN.clear()
    try:
        _use_engine(args)
        with closed_stdout_ok(), args.progress.running():  # a reader gone early changes no exit code
            return _COMMANDS[args.command](args)
    except (KeyboardInterrupt, Interrupted, Exception) as e:  # noqa: BLE001 -- every error is 2 and one line
        stopped = STOPPED_BY or _engine._STOP
        if stopped or isinstance(e, (KeyboardInterrupt, Interrupted)):
            what = stopped[0] if stopped else "SIGINT"
            print(f"anonydb: error: interrupted by {what}; the run was rolled back and nothing was written",
                  file=sys.stderr)
            return 2
        if args.debug:
            traceback.print_exc()
        print(f"anonydb: error: {one_line(e)}", file=sys.stderr)
        return 2
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _engine._STOP.clear()
        from ..errors import SURFACE

        SURFACE.reset(token)


def _check(args: argparse.Namespace) -> int:
    import json

    from ..hierarchy import parse_hierarchy_arg
    from ..schema import split_list

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    kinds = {c: "numeric" for c in split_list(args.numeric, "--numeric")}
    presence = _presence_args(args)
    listed = args.max_groups if args.max_groups is not None else 20 if args.json else 5  # per model
    fetch = listed if args.json else listed + 1  # the text says how many more there are
    engine = _engine_for(args, read_only=True)
    if presence and args.confidence is not None:
        from ..presence import check_confident

        try:
            with engine.scratch("cli") as s:
                report = check_confident(args.source, qi=args.qi, delta=args.delta, c=args.confidence,
                                         marginals=_marginals(engine, s, args), engine=engine,
                                         hierarchies=hierarchies, private=args.private, person=args.person)
        finally:
            engine.close()
        print(json.dumps(report.to_dict(), indent=2, default=str) if args.json else report.format())
        return 0 if report.holds else 1
    if presence:
        from ..presence import check_presence

        try:
            report = check_presence(args.source, args.public, args.qi, delta=args.delta, k_map=args.k_map, engine=engine,
                                    hierarchies=hierarchies, max_groups=fetch, person=args.person)
        finally:
            engine.close()
        print(report.to_json() if args.json else report.format(listed))
        return 0 if report.holds else 1
    try:
        report = check(args.source, args.qi, args.sensitive, engine=engine, hierarchies=hierarchies, kinds=kinds,
                       max_groups=fetch, person=args.person, **model_params(args))
    finally:
        engine.close()
    print(report.to_json() if args.json else report.format(listed))
    return 0 if report.holds else 1


def _anonymize(args: argparse.Namespace) -> int:
    """anonymize: the release, then what its --export wrote and the notes (never before an error)."""
    from ..release.publish import exporting

    notes = _export_targets(args)
    with exporting(getattr(args, "exports", {})):  # each file renamed into place before its table commits
        code = _build(args)
    _after_build(args, notes)
    return code


def _build(args: argparse.Namespace) -> int:
    from ..hierarchy import parse_hierarchy_arg
    from ..schema import split_list

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    kinds = {c: "numeric" for c in split_list(args.numeric, "--numeric")}
    if args.keep and args.method in ("slicing", "injector"):
        raise InputError(f"--keep: --method {args.method} publishes only its quasi-identifiers and the sensitive "
                         f"attribute")
    progress = args.progress

    slicing_only = [f"--{n.replace('_', '-')}" for n in ("columns", "sensitive_column_size", "column_k", "tries")
                    if getattr(args, n) is not None]
    if slicing_only and args.method != "slicing":
        raise InputError(f"{', '.join(slicing_only)} belong to --method slicing")
    if args.min_exp is not None and args.method != "injector":
        raise InputError("--min-exp belongs to --method injector")
    if args.itemset_support is not None and args.method != "injector":
        raise InputError("--itemset-support belongs to --method injector")
    if (args.bt or args.bt_distance) and args.method != "mondrian":
        raise InputError("--bt and --bt-distance belong to --method mondrian")
    if args.membership and args.method not in ("slicing", "anatomy"):
        raise InputError("--membership belongs to --method slicing or anatomy")
    if (args.pseudonymize or args.secret_file) and args.method in ("slicing", "injector"):
        raise InputError(f"--pseudonymize: --method {args.method} publishes only its quasi-identifiers and the "
                         f"sensitive attribute")
    tracked = args.key or args.series or args.composition or args.m is not None or args.method == "minvariant" \
        or args.ledger_schema or args.person
    if args.secret_file and not args.pseudonymize and not tracked:
        raise InputError("--secret-file keys the pseudonyms (or a series' fingerprints): give --pseudonymize COLS "
                         "or --key COL as well")
    if args.form != "generalized" and args.method != "minvariant":
        raise InputError("--form belongs to --method minvariant")
    if args.varying_qis and args.method != "mondrian":
        raise InputError("--varying-qis belongs to --method mondrian (with --person)")
    if args.person and args.method in ("slicing", "injector"):
        raise InputError(f"--person: --method {args.method} judges rows, not persons; use mondrian, fulldomain or "
                         f"anatomy for several records per person")
    if _presence_args(args):
        return _presence(args, hierarchies)
    engine = _engine_for(args)
    import sys

    from ..release.ledger import tracking
    from .tracking import continues, plan, result_line

    try:
        track = plan(engine, args.source, args.qi, args.sensitive, args.method, args.out, args.person,
                     args.pseudonymize, args.secret_file, args.series, args.key, args.composition, args.m,
                     "anonydb " + " ".join(sys.argv[1:]), {"l": _int_if_whole(args.l), "k": args.k,
                                                            "varying": args.varying_qis}, args.keep,
                     args.ledger_schema, args.untracked)
    except BaseException:
        engine.close()
        raise
    with tracking(track):
        if continues(track, args.method, args.sensitive):  # the next release of the series
            return _minvariant(args, engine, track)
        code = _dispatch(args, engine, hierarchies, kinds, progress)
    line = result_line(track)
    if line and not args.json:
        print(line)
    return code


def _release(args: argparse.Namespace) -> int:
    import json

    from .jobs import run_spec
    from .reporting import release_report

    progress = args.progress
    rel = run_spec(args.spec, db=args.db, progress=progress)
    progress.done()
    if rel.spec.dp is not None:  # a DP release (anonydb.workflow.dpspec)
        from .dpcmd import said

        return said(rel, args.json, rel.spec.report_html, rel.spec.report_json)
    try:
        if args.json:
            print(json.dumps(release_report(rel), indent=2) if rel.tables else
                  json.dumps({"table": rel.table, "files": rel.files, "holds": rel.holds, "rows": rel.rows}, indent=2))
        else:
            from ..errors import SURFACE, cli_surface

            token = cli_surface("spec")  # the text's hints name the spec's keys
            try:
                print(rel.format())
            finally:
                SURFACE.reset(token)
            where = ", ".join(rel.files) if rel.files else ", ".join(f"{k}: {v}" for k, v in rel.tables.items())
            print(f"released {rel.rows} rows to {where} in {rel.seconds:.2f} s ({len(rel.sql)} statements)")
            if rel.ledger_line:
                print(rel.ledger_line.strip())
            sp = rel.spec
            paths = [p for p in ((sp.report_html, sp.report_json) if sp else ()) if p]
            if paths:  # the verdict as the report's page states it (reporting.verdict_line), then where it is
                from .reporting import release_verdicts, verdict_line

                print(f"verdict: {verdict_line({'holds': rel.holds, 'verdicts': release_verdicts(rel)})}")
            for path in paths:
                print(f"report: {path}")
    finally:
        rel.engine.close()
    return 0 if rel.holds else 1


def _report(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from ..hierarchy import parse_hierarchy_arg
    from .reporting import table_report, write_report

    if _presence_args(args):
        raise InputError("report covers k, l, t, (n,t), (alpha,k) and delta-disclosure; check delta-presence and "
                         "k-map with `anonydb check --public`")
    if Path(args.source).suffix.lower() in (".yaml", ".yml"):
        from .jobs import spec_report

        if args.qi or args.original or args.class_column or args.suda:
            raise InputError("a spec's report takes its attributes from the spec: drop --qi/--original/--class-column/--suda")
        _existing_db(args)
        rep = spec_report(args.source, db=args.db, threshold=args.threshold)
    else:
        if not args.qi:
            raise InputError("a table's report needs --qi")
        models = {k: getattr(args, k) for k in ("k", "t", "n", "alpha", "delta", "c") if getattr(args, k) is not None}
        if args.l is not None:
            models.update(l=_int_if_whole(args.l), l_variant=args.l_variant)
        models.update(_extra(args))
        if args.t is not None:
            models.update(distance=args.distance, reference=args.reference)
        engine = _engine_for(args, read_only=True)
        try:
            with engine.scratch("report") as s:
                from ..sources import open_source

                table = open_source(engine, args.source, scratch=s)
                original = open_source(engine, args.original, scratch=s) if args.original else None
                rep = table_report(engine, table, args.qi, args.sensitive, original=original,
                                   class_column=args.class_column, threshold=args.threshold,
                                   hierarchies=dict(parse_hierarchy_arg(h) for h in args.hierarchy) or None,
                                   person=args.person, suda=args.suda, **models)
                rep["title"], rep["tables"] = f"anonydb report {args.source}", {"release": str(args.source)}
        finally:
            engine.close()
    if args.html:
        write_report(rep, html=args.html)
    if args.json or not args.html:
        print(json.dumps(rep, indent=2))
    elif args.html:  # the verdict the page states (reporting.verdict_line), then where the page is
        from .reporting import verdict_line

        print(f"verdict: {verdict_line(rep)}")
        print(f"report: {args.html}")
    return 0 if rep["holds"] else 1


def _dp(args: argparse.Namespace) -> int:
    from . import dpcmd

    return dpcmd.run(args, _engine_for(args))


def _ui(args: argparse.Namespace) -> int:
    from .ui import server

    return server.run(args, _engine_for(args))


def _risk(args: argparse.Namespace) -> int:
    from . import riskcmd

    return riskcmd.run(args, _engine_for(args, read_only=True))


def _releases(args: argparse.Namespace) -> int:
    return ledgercmd.releases(args, _engine_for(args, existing=True))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


#: the subcommands and their handlers
_COMMANDS = {"check": _check, "anonymize": _anonymize, "release": _release, "releases": _releases, "plan": _plan, "report": _report,
             "audit": _audit, "evaluate": _evaluate, "tradeoff": _tradeoff, "demo": _demo,
             "sql": _sql, "risk": _risk, "dp": _dp, "ui": _ui}
