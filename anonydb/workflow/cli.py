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



def _use_engine(args: argparse.Namespace) -> None:
    """--engine spark...: the engine is the Spark session it names (given as ``args.db``, which every
    command hands to :func:`anonydb.connect`); refused beside --db, whose file or server it would
    silently replace."""
    from ..engines import is_spark_url

    name = getattr(args, "engine", None)
    if name in (None, "duckdb"):
        return
    if not is_spark_url(name):
        raise InputError(f"--engine must be duckdb, spark, local[N], spark://host:port or sc://host:port, got {name!r}")
    if args.db:
        raise InputError(f"--db {args.db!r} names a DuckDB file or a PostgreSQL server; with --engine {name} the "
                         f"tables live in the Spark session's catalog: drop --db")
    if args.command in SPARK_REFUSED:
        from ..errors import NotAvailable

        raise NotAvailable(f"{args.command} ({SPARK_REFUSED[args.command]})", "spark")
    args.db = name


#: commands --engine spark refuses, and why
SPARK_REFUSED = {
    "evaluate": "its attacks build DuckDB lists and structs per tuple; evaluate an exported release with DuckDB",
    "tradeoff": "its sweep runs hundreds of small releases; on Spark each statement is a job",
    "audit": "its rule miner builds DuckDB lists and structs, as on PostgreSQL",
}


def _engine_for(args: argparse.Namespace, read_only: bool = False, existing: bool | None = None):
    """The engine of ``--db``: DuckDB (a file, or memory) or PostgreSQL (a postgresql:// URL).
    ``read_only``: the command only reads (a DuckDB file opened read-only, a Postgres session whose
    transactions are read-only). ``existing`` (default: ``read_only``): :func:`_existing_db`."""
    from ..engines import connect

    if read_only if existing is None else existing:
        _existing_db(args)
    return connect(args.db, read_only=read_only and bool(args.db))


def _existing_db(args: argparse.Namespace) -> None:
    """Refuse a --db DuckDB file that is not there, rather than create it (a mistyped --db of a
    command that reads, or drops ledger entries)."""
    from pathlib import Path

    from ..engines import is_postgres_url, is_spark_url

    db = args.db
    if isinstance(db, str) and db != ":memory:" and not is_postgres_url(db) and not is_spark_url(db) \
            and not Path(db).exists():
        raise InputError(f"--db {db!r}: no database at that path (anonydb {args.command} opens an existing one, "
                         f"never creates it)")


#: the files this run's --export wrote, named after the result (:func:`_after_build`)
_WRITTEN: list[str] = []


def _export(engine, table: str, path: str) -> None:
    """Write ``table`` (a table or view) to a .csv or .parquet file, atomically (checked by
    :func:`_export_targets` before the run)."""
    from pathlib import Path

    from .. import events
    from ..release.publish import export, exported

    done = [w for w in exported() if w == str(Path(path))]  # written by the release's commit
    if not done:
        events.phase("writing")
    _WRITTEN.extend(done or export(engine, [(table, Path(path))]))


def _inputs(args: argparse.Namespace) -> list[str]:
    """The files a run reads (never a target, even with --replace)."""
    out = [getattr(args, n, None) for n in ("source", "db", "public", "marginals", "private", "original")]
    out += [h.split("=", 1)[1] for h in getattr(args, "hierarchy", []) or [] if "=" in h]
    return [x for x in out if x]


def _export_targets(args: argparse.Namespace) -> list[str]:
    """Refuse, before any work, an export path that exists (without --replace), is an input, or
    cannot be written. Returns the notes to print once the release is built: that it will not be
    kept (no --db, no --export)."""
    from pathlib import Path

    from ..release.publish import guard_file

    from ..engines import is_spark_url

    spark = is_spark_url(args.db)
    if not args.export:
        if not args.db:
            return ["no --db and no --export: the release was built and verified in memory, then discarded; "
                    "keep it with --db FILE or --export out.csv"]
        if spark and (args.db == "spark" or args.db.startswith("local[")):
            return ["a local Spark session's catalog ends with the run: the release was built and verified, then "
                    "discarded; keep it with --export out.parquet"]
        return []
    if Path(args.export).suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"--export must end in .csv or .parquet, got {args.export!r}")
    if spark and Path(args.export).suffix.lower() == ".csv":
        from ..errors import NotAvailable

        raise NotAvailable("--export to .csv (Spark writes a Parquet folder: --export out.parquet)", "spark")
    path = Path(args.export)
    pair = args.method in ("anatomy", "injector") and not _presence_args(args)
    targets = [path.with_name(f"{path.stem}_{p}{path.suffix}") for p in ("qit", "st")] if pair else [path]
    for t in targets:
        guard_file(t, args.replace, _inputs(args))
    args.exports = dict(zip([f"{args.out}_qit", f"{args.out}_st"] if pair else [args.out], targets))
    return []


def _after_build(args: argparse.Namespace, notes: list[str]) -> None:
    """After a release was built: the files --export wrote (a QIT/ST pair is two), then the notes."""
    if _WRITTEN and not args.json:
        if len(_WRITTEN) > 1:
            print(f"  exported {len(_WRITTEN)} files for --export {args.export}: {', '.join(_WRITTEN)}")
        else:
            print(f"  exported: {_WRITTEN[0]}")
    for note in notes:
        print(f"anonydb: note: {note}", file=sys.stderr)



def _presence_args(args: argparse.Namespace) -> bool:
    """Whether the call asks for a model judged against a public table (delta-presence or k-map with
    --public, or --confidence); checks the options fit."""
    k_map = getattr(args, "k_map", None)
    if args.confidence is not None or args.marginals is not None or args.private is not None:
        if args.confidence is None:
            raise InputError("--marginals and --private belong to c-confident delta-presence (--confidence C)")
        if k_map is not None:
            raise InputError("--k-map is judged against --public, not with c-confident delta-presence: drop "
                             "--confidence")
        if not isinstance(args.delta, str):
            raise InputError("--confidence needs --delta MIN,MAX")
        if (args.marginals is None) == (args.public is None):
            raise InputError("--confidence needs the population's counts: --marginals CSV or --public TABLE "
                             "(one of them)")
        return True
    if args.public is None:
        if isinstance(args.delta, str):
            raise InputError("--delta MIN,MAX is delta-presence: give the public table with --public")
        if args.key and getattr(args, "command", None) != "anonymize":  # anonymize: the ledger's record key
            raise InputError("--key belongs to delta-presence and k-map (--public)")
        if k_map is not None:
            raise InputError("--k-map is judged against the population: give the public table with --public")
        return False
    if not isinstance(args.delta, str) and (k_map is None or args.delta is not None):
        raise InputError("--public asks for delta-presence or k-map: give --delta MIN,MAX (e.g. --delta 0.05,0.15) "
                         "or --k-map K")
    others = [f"--{n}" for n in ("k", "l", "t", "n", "alpha", "c") if getattr(args, n, None) is not None]
    if others:
        what = " and ".join(x for x, on in (("delta-presence", args.delta is not None), ("k-map", k_map is not None))
                            if on)
        raise InputError(f"{what} (--public) is checked on its own; drop {', '.join(others)}")
    return True


def _plan(args) -> int:
    from .jobs import plan_spec

    sys.stdout.write(plan_spec(args.spec, db=args.db, full=args.all))
    return 0


def _itemset_support(text: str | None) -> str | int:
    if text is None or text in ("min", "max"):
        return text or "min"
    try:
        return int(text)
    except ValueError:
        raise InputError(f"--itemset-support must be min, max or a count, got {text!r}") from None


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


def _dispatch(args: argparse.Namespace, engine: Any, hierarchies: dict, kinds: dict, progress: Any) -> int:
    """Run the method --method names (inside the ledger's tracking, when the release is tracked)."""
    import json

    from ..methods import anonymize

    if args.method == "slicing":
        return _slicing(args, engine, hierarchies, progress)
    if args.method == "anatomy":
        return _anatomy(args, engine)
    if args.method == "injector":
        return _injector(args, engine, hierarchies)
    if args.method == "fulldomain":
        return _fulldomain(args, engine, hierarchies, progress)
    if args.groups:
        raise InputError("--groups belongs to --method anatomy")
    try:
        result = anonymize(
            args.source, args.qi, args.sensitive, out=args.out, engine=engine, hierarchies=hierarchies, kinds=kinds,
            identifiers=args.identifiers, keep=args.keep, relaxed=args.relaxed, categorical=args.categorical, replace=args.replace,
            seed=args.seed, progress=progress, as_view=args.view, plan=args.plan, k=args.k, l=_int_if_whole(args.l), l_variant=args.l_variant, c=args.c,
            t=args.t, distance=args.distance, n=args.n, alpha=args.alpha, delta=args.delta, reference=args.reference,
            bt=[_bt_arg(x, args.qi) for x in args.bt] or None, bt_distance=args.bt_distance, person=args.person,
            pseudonymize=args.pseudonymize, secret_file=args.secret_file, varying=args.varying_qis,
            max_suppression=args.max_suppression, **_extra(args))
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": result.table, "rows": result.rows, "classes": result.classes,
                          "rounds": result.rounds, "seconds": result.seconds, "utility": result.utility,
                          "verification": result.report.to_dict()}, indent=2, default=str))
    else:
        print(result.format())
    return 0


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


def _fulldomain(args: argparse.Namespace, engine, hierarchies, progress=None) -> int:
    import json

    from ..methods import fulldomain
    from ..schema import split_list

    try:
        r = fulldomain(args.source, args.qi, args.sensitive, hierarchies=hierarchies, out=args.out, engine=engine,
                       max_suppression=args.max_suppression, metric=args.metric, identifiers=args.identifiers,
                       person=args.person, pseudonymize=args.pseudonymize, secret_file=args.secret_file,
                       keep=args.keep,
                       replace=args.replace, seed=args.seed, k=args.k, l=_int_if_whole(args.l),
                       l_variant=args.l_variant, c=args.c, t=args.t, distance=args.distance, alpha=args.alpha,
                       delta=args.delta, reference=args.reference, progress=progress, **_extra(args))
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        qi = split_list(args.qi, "--qi")
        print(json.dumps({"levels": [r.levels[q] for q in qi], "qi": qi, "metric": args.metric, "value": r.metric,
                          "metrics": r.metrics, "suppressed": r.suppressed, "rows": r.rows, "classes": r.classes,
                          "minimal": r.minimal, "checked": r.checked, "lattice": r.lattice, "seconds": r.seconds,
                          "search_seconds": r.search_seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _marginals(engine, s, args) -> dict[str, str]:
    """Per QI a (value, count) relation: from --marginals (attribute, value, count) or --public."""
    from ..presence import population_marginals
    from ..schema import split_list
    from ..sources import open_source
    from ..sqlgen import ident, literal

    qi = split_list(args.qi, "--qi")
    if args.public is not None:
        return population_marginals(engine, open_source(engine, args.public, scratch=s), qi,
                                    prefix=s.name())
    rel = open_source(engine, args.marginals, scratch=s)
    cols = [c for c, _ in engine.columns(rel)]
    if len(cols) != 3:
        raise InputError(f"--marginals {args.marginals}: expected 3 columns (attribute, value, count), got "
                         f"{', '.join(cols)}")
    a, v, n = (ident(c) for c in cols)
    out = {}
    for q in qi:
        out[q] = s.table(f"SELECT CAST({v} AS VARCHAR) AS value, CAST({n} AS BIGINT) AS {ident('count')} "
                         f"FROM {ident(rel)} WHERE CAST({a} AS VARCHAR) = {literal(q)}")
    return out


def _presence(args: argparse.Namespace, hierarchies) -> int:
    import json

    from ..methods.presence import presence_anonymize

    k_map_alone = getattr(args, "k_map", None) is not None and args.delta is None
    if args.identifiers or (args.keep and not k_map_alone):
        raise InputError("delta-presence releases only the generalized QIs: drop --keep and --identifiers (the "
                         "private table's other columns are never published; k-map alone keeps --keep's)")
    if args.confidence is not None:
        return _sfalm(args, hierarchies)

    if args.method not in ("fulldomain", "mondrian"):
        raise InputError("delta-presence and k-map (--public) anonymize with --method fulldomain (SPALM) or mondrian "
                         "(MPALM)")
    from ..schema import split_list

    # k-map alone publishes the research attributes: the sensitive one and --keep's
    keep = ([args.sensitive] if args.sensitive and k_map_alone else []) + split_list(args.keep, "--keep")
    engine = _engine_for(args)
    try:
        r = presence_anonymize(args.source, args.public, args.qi, delta=args.delta, k_map=args.k_map, out=args.out,
                               engine=engine, method=args.method, hierarchies=hierarchies, key=args.key,
                               metric=args.metric, relaxed=args.relaxed, categorical=args.categorical, seed=args.seed,
                               replace=args.replace, keep=keep or None)
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": r.table, "method": r.method, "rows": r.rows, "public_rows": r.public_rows,
                          "classes": r.classes, "levels": r.levels, "k_map": r.k_map, "seconds": r.seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _sfalm(args: argparse.Namespace, hierarchies) -> int:
    import json

    from ..methods.presence import confident_presence

    if args.method != "fulldomain":
        raise InputError("c-confident delta-presence (--confidence) anonymizes with --method fulldomain (SFALM)")
    if args.metric not in ("dm", "loss"):
        raise InputError("c-confident delta-presence ranks nodes by --metric loss (LM, the TR's) or dm")
    engine = _engine_for(args)
    try:
        with engine.scratch("cli") as s:
            r = confident_presence(args.source, args.qi, delta=args.delta, c=args.confidence,
                                   marginals=_marginals(engine, s, args), hierarchies=hierarchies, out=args.out,
                                   engine=engine, metric="lm" if args.metric == "loss" else "dm",
                                   replace=args.replace, seed=args.seed)
        if args.export:
            _export(engine, args.out, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"table": r.table, "levels": r.levels, "lm": r.lm, "dm": r.dm, "rows": r.rows,
                          "classes": r.classes, "evaluated": r.evaluated, "lattice": r.lattice, "seconds": r.seconds,
                          "verification": r.report.to_dict()}, indent=2, default=str))
    else:
        print(r.format())
    return 0


def _slicing(args: argparse.Namespace, engine, hierarchies, progress=None) -> int:
    import json

    from ..methods import slicing
    from ..schema import split_list

    _l_only(args, "slicing", "--l (l-diverse slicing: p(t,s) <= 1/l)")
    cols: object = 2
    if args.columns is not None:
        spec = args.columns.strip()
        if spec.isdigit():
            cols = int(spec)
        else:
            cols = [split_list(part, f"column {i + 1} of --columns") for i, part in enumerate(spec.split("|"))]
    try:
        r = slicing(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                    columns=cols, alpha=args.sensitive_column_size, bins=args.bins, tries=args.tries,
                    column_k=args.column_k, hierarchies=hierarchies, seed=args.seed, replace=args.replace,
                    membership=args.membership, progress=progress)
        m = r.membership
        if args.export:
            _export(engine, r.view, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"view": r.view, "tables": r.tables, "columns": r.columns, "rows": r.rows,
                          "buckets": r.buckets, "rounds": r.rounds, "seconds": r.seconds, "sizes": r.sizes,
                          "moved": r.moved, "worst": r.verdict.worst, "holds": r.verdict.holds,
                          "membership": m.to_dict() if m else None}, indent=2, default=str))
    else:
        print(r.format())
        if m:
            print(m.format())
    return 0


def _export_pair(engine, result, export: str) -> None:
    """A QIT/ST release to files: PATH.csv -> PATH_qit.csv and PATH_st.csv."""
    from pathlib import Path

    path = Path(export)
    for table, part in ((result.qit, "qit"), (result.st, "st")):
        _export(engine, table, str(path.with_name(f"{path.stem}_{part}{path.suffix}")))


def _bt_arg(text: str, qi: str) -> tuple[Any, float]:
    """--bt B:T -> (b, t): B one number or one per QI (comma-separated, in --qi order)."""
    from ..schema import split_list

    b, sep, t = text.rpartition(":")
    try:
        tv = float(t)
        bs = [float(x) for x in b.split(",")] if sep else []
    except ValueError:
        bs = []
    if not sep or not bs:
        raise InputError(f"--bt expects B:T (e.g. 0.3:0.2, or one bandwidth per QI: 0.3,0.5,...:0.2), got {text!r}")
    if len(bs) == 1:
        return bs[0], tv
    qis = split_list(qi, "--qi")
    if len(bs) != len(qis):
        raise InputError(f"--bt {text!r}: {len(bs)} bandwidths for {len(qis)} quasi-identifiers")
    return dict(zip(qis, bs)), tv


def _dp(args: argparse.Namespace) -> int:
    from . import dpcmd

    return dpcmd.run(args, _engine_for(args))


def _ui(args: argparse.Namespace) -> int:
    from .ui import server

    return server.run(args, _engine_for(args))


def _risk(args: argparse.Namespace) -> int:
    from . import riskcmd

    return riskcmd.run(args, _engine_for(args, read_only=True))


def _evaluate(args: argparse.Namespace) -> int:
    import json

    from .evaluate import evaluate
    from ..hierarchy import parse_hierarchy_arg
    from ..schema import split_list

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    fg = None
    if args.foreground:
        fg = {"r": _int_if_whole(args.r), "epsilon": args.epsilon, "sigma": args.sigma, "truth": args.truth,
              "targets": split_list(args.targets, "--targets") or None, "max_attrs": args.max_attrs,
              "out": args.risk_out, "replace": bool(args.risk_out)}
    elif args.targets or args.truth or args.risk_out or args.max_attrs:
        raise InputError("--targets, --truth, --max-attrs and --risk-out belong to --foreground")
    engine = _engine_for(args, existing=not args.risk_out)
    try:
        ev = evaluate(args.release, args.qi, args.sensitive, engine=engine, source=args.source, group=args.group,
                      hierarchies=hierarchies, similarity_level=args.similarity_level,
                      similarity_width=args.similarity_width, population=args.population, threshold=args.threshold,
                      min_sup=args.min_sup, foreground=fg)
    finally:
        engine.close()
    print(json.dumps(ev.to_dict(), indent=2, default=str) if args.json else ev.format())
    return 0


def _setting_arg(text: str) -> list[tuple[str, dict[str, Any]]]:
    """METHOD:PARAM=V,... -> settings; PARAM=V1|V2 expands into one setting per value."""
    import itertools

    method, sep, rest = text.partition(":")
    if not sep or not method:
        raise InputError(f"--setting expects METHOD:PARAM=V,... (e.g. mondrian:k=10), got {text!r}")
    grid: list[tuple[str, list[Any]]] = []
    for item in filter(None, rest.split(",")):
        key, eq, vals = item.partition("=")
        if not eq:
            raise InputError(f"--setting {text!r}: {item!r} is not PARAM=VALUE")
        parsed = []
        for v in vals.split("|"):
            try:
                parsed.append(int(v))
            except ValueError:
                try:
                    parsed.append(float(v))
                except ValueError:
                    parsed.append(v)
        grid.append((key.strip().replace("-", "_"), parsed))
    return [(method, dict(zip([k for k, _ in grid], combo))) for combo in itertools.product(*[v for _, v in grid])]


def _tradeoff(args: argparse.Namespace) -> int:
    import json

    from ..hierarchy import parse_hierarchy_arg
    from .tradeoff import sweep, write_frontier_html

    if not args.setting:
        raise InputError("give at least one --setting (e.g. --setting mondrian:k=10|50|100 --setting anatomy:l=4)")
    settings = [x for t in args.setting for x in _setting_arg(t)]
    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    engine = _engine_for(args, existing=True)
    try:
        sw = sweep(args.source, args.qi, args.sensitive, settings, engine=engine, hierarchies=hierarchies,
                   min_sup=args.min_sup)
    finally:
        engine.close()
    if args.html:
        write_frontier_html(sw, args.html)
    print(json.dumps(sw.to_dict(), indent=2, default=str) if args.json else sw.format())
    return 0


def _l_only(args: argparse.Namespace, method: str, takes: str) -> None:
    """Methods whose only privacy model is distinct l: reject the other model options, require --l."""
    others = [f"--{n.replace('_', '-')}" for n in ("k", "t", "n", "alpha", "delta", "c", "groups", "identifiers")
              if getattr(args, n)]
    if args.l_variant != "distinct":
        others.append("--l-variant")
    if others:
        raise InputError(f"--method {method} takes {takes}; not {', '.join(others)}")
    if args.l is None:
        raise InputError(f"--method {method} needs --l")


def _injector(args: argparse.Namespace, engine, hierarchies) -> int:
    import json

    from ..methods import injector

    _l_only(args, "injector", "--l, --min-exp and --hierarchy")
    if not args.sensitive:
        raise InputError("--method injector needs --sensitive")
    try:
        result = injector(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                          min_exp=0.9 if args.min_exp is None else args.min_exp, hierarchies=hierarchies or None,
                          seed=args.seed, replace=args.replace, itemset_support=_itemset_support(args.itemset_support))
        if args.export:
            _export_pair(engine, result, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"qit": result.qit, "st": result.st, "rows": result.rows, "groups": result.groups,
                          "rules": result.rules, "rules_total": result.rules_total,
                          "profile": {str(k): v for k, v in result.profile.items()}, "leftovers": result.leftovers,
                          "merges": result.merges, "min_valid": result.min_valid, "seconds": result.seconds,
                          "mine_seconds": result.mine_seconds, "verification": result.report.to_dict()},
                         indent=2, default=str))
    else:
        print(result.format())
    return 0


def _audit(args: argparse.Namespace) -> int:
    """anonydb audit: the background-knowledge attacks of the thesis on an existing release."""
    import json

    from ..attacks.audit import audit_distribution, audit_rules
    from ..hierarchy import parse_hierarchy_arg
    from ..attacks.knowledge import mine_rules
    from ..schema import split_list
    from ..sources import open_source
    from ..sqlgen import ident

    hierarchies = dict(parse_hierarchy_arg(h) for h in args.hierarchy)
    rules_mode = args.l is not None
    dist_mode = args.b is not None or args.t is not None
    if rules_mode == dist_mode:
        raise InputError("give --l (rule-based audit: tuples with fewer than l possible values under the mined rules) "
                         "or --b and --t (distribution-based: tuples whose posterior moves more than t)")
    if dist_mode and (args.b is None or args.t is None):
        raise InputError("the distribution-based audit needs both --b (the adversary's bandwidth) and --t")
    rule_opts = [o for o, v in (("--min-exp", args.min_exp), ("--itemset-support", args.itemset_support))
                 if v is not None]
    if dist_mode and rule_opts:
        raise InputError(f"{' and '.join(rule_opts)}: options of the rule-based audit's mined rules (--l); the "
                         f"distribution-based audit mines none")
    min_exp = 0.9 if args.min_exp is None else args.min_exp  # anonymize --method injector's default
    support = _itemset_support(args.itemset_support)  # and its parsing: min, max or a count
    qi = split_list(args.qi, "--qi")
    engine = _engine_for(args, existing=True)
    if engine.dialect == "duckdb":  # the rule-respecting pairing runs seconds on Adult: no bar on stdout (--json)
        engine.execute("SET enable_progress_bar = false")
    out: dict[str, Any] = {}
    try:
        with engine.scratch("cli_audit") as s:
            src = open_source(engine, args.source, scratch=s)
            qit, st = f"{args.release}_qit", f"{args.release}_st"
            table = None
            if engine.exists(qit) and engine.exists(st):
                group = args.group or "group_id"
            else:
                rel = open_source(engine, args.release, scratch=s)
                cols = dict(engine.columns(rel))
                group = args.group or ("bucket_id" if "bucket_id" in cols and "eq_class" not in cols else "eq_class")
                if group not in cols:
                    raise InputError(f"{args.release!r} has no column {group!r} naming each record's group (--group); "
                                     f"neither are there tables {qit!r} and {st!r}")
                if all(c in cols for c in qi + [args.sensitive]) and not args.key:
                    # exact QIs but no trusted pairing with the values (a sliced or bucketized table): the
                    # groups' QI tuples and value counts, as a QIT/ST pair
                    g = ident(group)
                    qit = s.table(f"SELECT {g}, {', '.join(ident(c) for c in qi)} FROM {ident(rel)}")
                    st = s.table(f"SELECT {g}, {ident(args.sensitive)}, count(*) AS {ident('count')} "
                                 f"FROM {ident(rel)} GROUP BY ALL")
                else:
                    if not args.key:
                        raise InputError("the release generalizes the QIs: give --key, a column kept in the release "
                                         "that identifies the source row, to join back the exact QIs")
                    for name, have in ((args.release, cols), (args.source, dict(engine.columns(src)))):
                        if args.key not in have:
                            raise InputError(f"--key {args.key!r} is not a column of {name!r}")
                    table = s.table(f"SELECT r.{ident(group)}, x.* FROM {ident(rel)} AS r JOIN {ident(src)} AS x "
                                    f"ON r.{ident(args.key)} = x.{ident(args.key)}")
            where = dict(table=table) if table is not None else dict(qit=qit, st=st)
            if rules_mode:
                kb = mine_rules(src, qi, args.sensitive, min_exp=min_exp, hierarchies=hierarchies or None,
                                engine=engine, scratch=s, itemset_support=support)
                res = audit_rules(kb, _int_if_whole(args.l), engine=engine, group=group, sensitive=args.sensitive,
                                  mode=args.mode, **where)
                out = {"kind": "rules", "min_exp": min_exp, "itemset_support": support, "knowledge": kb.settings(),
                       "rules": kb.minimal, "l": res.l, "mode": res.mode,
                       "rows": res.rows, "groups": res.groups, "vulnerable": res.vulnerable,
                       "vulnerable_groups": res.vulnerable_groups, "min_possible": res.min_possible,
                       "by_count": res.by_count}
                text = f"{kb.minimal} minimal rules mined at {kb.describe_settings()}\n" + res.format()
            else:
                res = audit_distribution(_bt_arg(f"{args.b}:{args.t}", args.qi)[0], args.t, engine=engine, qi=qi,
                                         sensitive=args.sensitive, group=group, prior_source=src,
                                         distance=args.distance, hierarchies=hierarchies or None, **where)
                out = {"kind": "distribution", "b": res.b, "t": res.t, "distance": res.distance, "rows": res.rows,
                       "groups": res.groups, "vulnerable": res.vulnerable, "vulnerable_groups": res.vulnerable_groups,
                       "worst": res.worst}
                text = res.format()
    finally:
        engine.close()
    print(json.dumps(out, indent=2, default=str) if args.json else text)
    return 0


def _minvariant(args: argparse.Namespace, engine, track: Any) -> int:
    return ledgercmd.next_release(args, engine, track, _int_if_whole)


def _releases(args: argparse.Namespace) -> int:
    return ledgercmd.releases(args, _engine_for(args, existing=True))


def _anatomy(args: argparse.Namespace, engine) -> int:
    import json

    from ..methods import anatomy

    others = [f"--{n.replace('_', '-')}" for n in ("k", "t", "n", "alpha", "delta", "hierarchy")
              if getattr(args, n)]
    if others:
        raise InputError(f"--method anatomy takes --l (with --l-variant, --c), --groups, --keep and --identifiers; "
                         f"not {', '.join(others)}")
    if args.l is None:
        raise InputError("--method anatomy needs --l")
    try:
        result = anatomy(args.source, args.qi, args.sensitive, l=_int_if_whole(args.l), out=args.out, engine=engine,
                         groups=args.groups, l_variant=args.l_variant, c=args.c, seed=args.seed,
                         replace=args.replace, as_view=args.view, keep=args.keep, identifiers=args.identifiers,
                         person=args.person, pseudonymize=args.pseudonymize, secret_file=args.secret_file)
        mem = None
        if args.membership:
            from ..attacks.membership import anatomy_membership
            from ..schema import split_list
            from ..sources import open_source

            with engine.scratch("cli") as s:
                rel = open_source(engine, args.source, scratch=s)
                mem = anatomy_membership(engine, rel, result.qit, result.st, split_list(args.qi, "--qi"),
                                         args.sensitive, seed=args.seed)
        if args.export:
            _export_pair(engine, result, args.export)
    finally:
        engine.close()
    args.progress.done()  # its last line before the result
    if args.json:
        print(json.dumps({"qit": result.qit, "st": result.st, "rows": result.rows, "groups": result.groups,
                          "seconds": result.seconds, "verification": result.report.to_dict(),
                          "membership": mem.to_dict() if mem else None}, indent=2, default=str))
    else:
        print(result.format())
        if mem:
            print(mem.format())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


#: the subcommands and their handlers
_COMMANDS = {"check": _check, "anonymize": _anonymize, "release": _release, "releases": _releases, "plan": _plan, "report": _report,
             "audit": _audit, "evaluate": _evaluate, "tradeoff": _tradeoff, "demo": _demo,
             "sql": _sql, "risk": _risk, "dp": _dp, "ui": _ui}
