"""What the ``anonydb`` commands share: the engine of --db/--engine, the exports and their notes, the
presence options (:mod:`anonydb.workflow.cli`)."""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError

#: the files this run's --export wrote, named after the result (:func:`_after_build`)
_WRITTEN: list[str] = []


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


def _itemset_support(text: str | None) -> str | int:
    if text is None or text in ("min", "max"):
        return text or "min"
    try:
        return int(text)
    except ValueError:
        raise InputError(f"--itemset-support must be min, max or a count, got {text!r}") from None
