"""The engine interface: every database access goes through it.

An :class:`Engine` runs a statement, fetches a result, and creates, drops or renames a table;
it has a ``dialect`` (a sqlglot dialect name) that the SQL generator renders for. DuckDB is the
embedded default (``:memory:``, a database file, or a user's existing connection); Postgres and
Spark plug in behind the same methods. Every failing statement raises :class:`SQLError` carrying
the SQL and the template it came from.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

from ..errors import InputError, Interrupted, SQLError
from ..sqlgen import Rendered, Templates, ident, literal, temp_name


#: set by :func:`request_stop`: the reason (a signal's name) every later statement raises with
_STOP: list[str] = []
#: statements that clean up, still run after a stop request
_CLEANUP = ("ROLLBACK", "DROP")


def request_stop(reason: str) -> None:
    """Stop the run at its next statement: every later statement but a clean-up (ROLLBACK, DROP)
    raises :class:`Interrupted`. The CLI calls it on SIGINT and SIGTERM. The running statement is
    not interrupted: DuckDB 2.0's interrupt left a recursive Mondrian statement spinning for
    minutes (seen 2026-11-25), where letting it finish costs at most one statement."""
    if not _STOP:
        _STOP.append(reason)


def _check_stop(sql: str) -> None:
    if _STOP and not sql.lstrip().upper().startswith(_CLEANUP):
        raise Interrupted(_STOP[0])


#: statements a read-only engine still runs: its own session-temporary scratch tables
_SCRATCH_WRITE = re.compile(r'^\s*(CREATE\s+(OR\s+REPLACE\s+)?TEMP(ORARY)?\s|(DROP\s+(TABLE|VIEW)\s+(IF\s+EXISTS\s+)?'
                            r'|ALTER\s+TABLE\s+|INSERT\s+INTO\s+|UPDATE\s+|DELETE\s+FROM\s+|ANALYZE\s+)"__'
                            r'|SELECT\b|WITH\b|SET\b|SHOW\b|EXPLAIN\b|BEGIN\b|COMMIT\b|ROLLBACK\b)', re.I)


#: CREATE [OR REPLACE] TABLE/VIEW not already temporary (a plan's replay makes every table temporary)
_TEMP_CREATE = re.compile(r"^(\s*CREATE\s+(OR\s+REPLACE\s+)?)(TABLE|VIEW)\b", re.I | re.M)


def _refuse_write(sql: str) -> None:
    """A read-only engine (``check`` and ``report`` on a server that has no read-only mode for
    temporary tables) refuses anything but queries and its own scratch tables."""
    for stmt in (x for x in sql.split(";") if x.strip()):
        body = re.sub(r"^\s*(--[^\n]*\n\s*)*", "", stmt)
        if not _SCRATCH_WRITE.match(body):
            raise InputError(f"this command only reads the database, but was about to run: {body.strip()[:60]}")


@dataclass(frozen=True)
class Logged:
    sql: str
    template: str | None
    seconds: float


class Engine(abc.ABC):
    """Base class: the few operations the rest of anonydb needs."""

    dialect: str = "duckdb"
    #: a check codes a QI column with at most this many distinct values by a CASE over its values,
    #: inlined as literals, instead of a join with its dictionary (0: always the join)
    inline_codes: int = 0
    #: a level-wise plan whose open groups all hold at most this many rows finishes each group on
    #: its own with :meth:`per_group` (0: never; a distributed engine's workers)
    fragment_rows: int = 0
    #: Mondrian's fragment plan cuts the top until every open group holds at most this many rows,
    #: then finishes each with :meth:`per_group` (0: the engine has no grouped step)
    finish_rows: int = 0
    #: Mondrian's ``plan="auto"`` takes the fragment plan from this many rows (0: never), where it
    #: was measured faster than the level-wise plan (BENCHMARKS.md, Mondrian)
    fragments_from: int = 0
    #: a check whose models read only each group's size and number of distinct sensitive values
    #: (k, distinct l) counts them in one aggregation of the source, the values as bits of an
    #: integer, when the sensitive attribute has at most this many values (0: never)
    group_bits: int = 0
    #: a check whose models judge a group by its sensitive-value counts alone
    #: (:attr:`~anonydb.models.Model.by_distribution`) counts them in one aggregation of the source,
    #: packed into at most this many 128-bit integer sums per group, and judges each distinct count
    #: vector once (0: never; the cells, one row per (group, value))
    packed_sums: int = 0

    def __init__(self) -> None:
        self.templates = Templates(self.dialect)
        self.log: list[Logged] = []  # every statement run and its duration, for plans and reports
        self.temp_only = False  # a plan's replay on a server: every table it creates is session-temporary
        self._secrets: set[str] = set()  # texts never logged nor shown in an error (a release's order key)

    def secret(self, text: str) -> str:
        """Register ``text`` (a key inlined in SQL) so that the log and errors show ``<secret>`` instead."""
        self._secrets.add(str(text))
        return str(text)

    def redact(self, sql: str) -> str:
        for x in self._secrets:
            sql = sql.replace(x, "<secret>")
        return sql

    # -- to implement per backend ------------------------------------------------
    @abc.abstractmethod
    def _execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement on the backend."""

    @abc.abstractmethod
    def _fetch(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Run a query on the backend; return (column names, rows)."""

    # -- shared --------------------------------------------------------------------
    def render(self, template: str, **context: Any) -> Rendered:
        return self.templates.render(template, **context)

    def execute(self, stmt: str | Rendered, params: Sequence[Any] | None = None) -> None:
        r = stmt if isinstance(stmt, Rendered) else Rendered(stmt, None)  # type: ignore[arg-type]
        _check_stop(r.sql)
        if getattr(self, "read_only", False):
            _refuse_write(r.sql)
        if self.temp_only:
            r = Rendered(_TEMP_CREATE.sub(r"\1TEMPORARY \3", r.sql), r.template)
        t0 = time.perf_counter()
        try:
            self._execute(r.sql, params)
        except Exception as e:  # the engine's own error type differs per backend
            raise SQLError(self.redact(f"{type(e).__name__}: {e}"), self.redact(r.sql), r.template) from e
        finally:
            self.log.append(Logged(self.redact(r.sql), r.template, time.perf_counter() - t0))

    def fetch(self, stmt: str | Rendered, params: Sequence[Any] | None = None) -> list[dict[str, Any]]:
        """Run a query and return its rows as dicts (small results only: reports, verdicts)."""
        cols, rows = self.fetch_rows(stmt, params)
        return [dict(zip(cols, row)) for row in rows]

    def fetch_rows(self, stmt: str | Rendered, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        r = stmt if isinstance(stmt, Rendered) else Rendered(stmt, None)  # type: ignore[arg-type]
        _check_stop(r.sql)
        t0 = time.perf_counter()
        try:
            return self._fetch(r.sql, params)
        except Exception as e:
            raise SQLError(self.redact(f"{type(e).__name__}: {e}"), self.redact(r.sql), r.template) from e
        finally:
            self.log.append(Logged(self.redact(r.sql), r.template, time.perf_counter() - t0))

    def scalar(self, stmt: str | Rendered, params: Sequence[Any] | None = None) -> Any:
        _, rows = self.fetch_rows(stmt, params)
        return rows[0][0] if rows else None

    def create_table_as(self, name: str, select: str | Rendered, *, temp: bool = False, replace: bool = False) -> None:
        sel = select.sql if isinstance(select, Rendered) else select
        tmpl = select.template if isinstance(select, Rendered) else None
        kind = "TEMP TABLE" if temp else "TABLE"
        head = f"CREATE OR REPLACE {kind}" if replace else f"CREATE {kind}"
        self.execute(Rendered(f"{head} {ident(name)} AS\n{sel}", tmpl))  # type: ignore[arg-type]

    def drop(self, name: str, *, view: bool = False) -> None:
        kind = "VIEW" if view else "TABLE"
        self.execute(f"DROP {kind} IF EXISTS {ident(name)}")

    def rename(self, old: str, new: str) -> None:
        self.execute(f"ALTER TABLE {ident(old)} RENAME TO {ident(new)}")

    def drop_column(self, table: str, column: str) -> None:
        """Remove ``column`` from ``table`` (a staged release's hidden person key, once verified)."""
        self.execute(f"ALTER TABLE {ident(table)} DROP COLUMN {ident(column)}")

    def row_ids(self, s: "Scratch", relation: str) -> tuple[str, str]:
        """A row id for every row of ``relation``: a numbered copy in scratch ``s``. Returns
        (relation, row-id column). Engines with a stable physical row id override it (no copy)."""
        return s.table(f"SELECT CAST(row_number() OVER () - 1 AS BIGINT) AS _adb_rid, * FROM "
                       f"{ident(relation)}"), "_adb_rid"

    def relations(self, names: Iterable[str] = (), prefix: str | None = None,
                  contains: str | None = None) -> dict[str, str]:
        """Tables and views of the current schema named in ``names``, starting with ``prefix`` or
        containing ``contains``: name -> ``information_schema`` table type ('BASE TABLE', 'VIEW', ...)."""
        names = list(names)
        cond = []
        if names:
            cond.append("table_name IN (" + ", ".join(literal(n) for n in names) + ")")
        if prefix:
            cond.append(f"left(table_name, {len(prefix)}) = {literal(prefix)}")
        if contains:
            cond.append(f"strpos(table_name, {literal(contains)}) > 0")
        if not cond:
            return {}
        rows = self.fetch_rows("SELECT table_name, table_type FROM information_schema.tables WHERE "
                               f"table_schema = current_schema() AND ({' OR '.join(cond)})")[1]
        return {r[0]: r[1] for r in rows}

    def file_select(self, path: Any, fmt: str, delim: str | None = None) -> str:
        """A SELECT of every row of the local file ``path`` ('parquet', or 'csv' with a header and
        ``delim``), typed from all its rows (``sample_size = -1``)."""
        if fmt == "parquet":  # a folder: its part files (a dataset written by Spark)
            where = os.path.join(str(path), "**", "*.parquet") if os.path.isdir(path) else str(path)
            return f"SELECT * FROM read_parquet({literal(where)})"
        return (f"SELECT * FROM read_csv({literal(str(path))}, delim = {literal(delim or ',')}, header = true, "
                f"sample_size = -1)")

    def copy_out(self, table: str, path: Any, fmt: str) -> None:
        """Write ``table`` to the local file ``path`` (``fmt`` 'csv' with a header, or 'parquet')."""
        spec = "PARQUET" if fmt == "parquet" else "CSV, HEADER"
        self.execute(f"COPY (SELECT * FROM {ident(table)}) TO {literal(str(path))} (FORMAT {spec})")

    def text_bytes(self, text: str) -> str:
        """The UTF-8 bytes (a BLOB) of the VARCHAR expression ``text`` (DuckDB's ``encode``; Spark
        runs it as sqlglot writes it, ``encode(text, 'utf-8')``)."""
        return f"encode({text})"

    def hmac_sha256_hex(self, data: str, ipad_hex: str, opad_hex: str) -> str:
        """SHA-256((K' xor opad) || SHA-256((K' xor ipad) || data)), the HMAC of RFC 2104 built from
        plain SHA-256, as 64 lowercase hex characters; NULL for a NULL ``data`` (a BLOB expression).
        The pads (64 bytes each, as 128 lowercase hex characters) are computed and registered with
        :meth:`secret` by the caller (:mod:`anonydb.pseudonyms`). Each sits alone on its line, so an
        error's excerpt of the line it points at (DuckDB's ``LINE n:``) shows no part of it.

        DuckDB's ``sha256`` of a BLOB gives hex, which ``unhex`` turns back into the inner digest's
        32 bytes. Spark runs this as sqlglot writes it: ``sha2(unhex(..) || unhex(sha2(.., 256)), 256)``."""
        return f"sha256(unhex(\n'{opad_hex}'\n) || unhex(sha256(unhex(\n'{ipad_hex}'\n) || {data})))"

    def schemas_holding(self, table: str) -> tuple[str, list[str]]:
        """(the current schema, the schemas that hold a table named ``table``), from the catalog."""
        current = self.scalar("SELECT current_schema()")
        rows = self.fetch_rows(f"SELECT DISTINCT table_schema FROM information_schema.tables "
                               f"WHERE lower(table_name) = {literal(table.lower())}")[1]
        return str(current), sorted(str(r[0]) for r in rows)

    def digest_sum(self, exprs: list[str]) -> str:
        """An aggregate digest of a relation's rows that no row order changes: the sum of a 64-bit
        hash of each row's ``exprs`` (VARCHAR expressions), 0 for no rows (the ledger's checksums;
        DuckDB's ``hash``, summed as HUGEINT)."""
        return f"COALESCE(sum(CAST(hash({', '.join(exprs)}) AS HUGEINT)), 0)"

    def keyed_hash(self, salt: int, exprs: list[str]) -> str:
        """A hash of ``exprs`` keyed by the secret ``salt`` that orders rows where the order must
        not be the table's (DP's contribution bounds): md5 of the texts, NULL as a mark of its own;
        DuckDB overrides it with its 64-bit ``hash``."""
        return text_keyed_hash(salt, exprs)

    def writer_id(self) -> int:
        """Who writes this run's staging tables: the process id (an embedded database is local)."""
        return os.getpid()

    def writer_alive(self, writer: int) -> bool:
        """Whether the writer of a staging table is still running (its tables are not swept)."""
        if writer == os.getpid():
            return True
        try:
            os.kill(writer, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def per_group(self, s: "Scratch", relation: str, key: str, sql: str, schema: str) -> str:
        """Run the DuckDB query ``sql`` once per group of ``relation`` by ``key`` (it reads the group's
        rows under the name ``relation``, and any other scratch table it names); return a scratch
        table of every result, whose columns are ``schema`` ("name TYPE, ..."). Engines with
        workers (Spark's executors, DuckDB's threads) implement it; see :attr:`finish_rows`."""
        from ..errors import NotAvailable

        raise NotAvailable("a per-group step on workers (this engine has none; fragment_rows is 0)", self.dialect)

    def load_frame(self, name: str, frame: Any) -> None:
        """A data frame as the temporary table ``name`` (PostgreSQL): its Arrow columns typed by
        :data:`ARROW_TYPES`, the rows inserted in batches. DuckDB reads a frame in place and Spark
        makes a view of it (their overrides)."""
        table = as_arrow(frame)
        cols = [(f.name, next((sql for p, sql in ARROW_TYPES if str(f.type).startswith(p)), "VARCHAR"))
                for f in table.schema]
        self.create_table_as(name, "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {ident(c)}" for c, t in cols)
                             + " LIMIT 0", temp=True)
        text = {c for c, t in cols if t == "VARCHAR"}
        for batch in table.to_batches(max_chunksize=1000):
            rows = zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns)))
            values = ", ".join("(" + ", ".join(literal(None if v is None else str(v) if c in text else v)
                                               for c, v in zip([c for c, _ in cols], r)) + ")" for r in rows)
            if values:
                self.execute(f"INSERT INTO {ident(name)} VALUES {values}")

    def drop_frame(self, name: str) -> None:
        """Drop what :meth:`load_frame` made."""
        self.drop(name)

    def map_rows(self, s: "Scratch", relation: str, step: Any, columns: list[tuple[str, str]]) -> str:
        """A scratch table of ``step`` (a function: a list of row tuples in, row tuples out, run on
        batches that together hold every row) over the rows of ``relation``; its columns are
        ``columns`` [(name, type)]. Here the rows pass through anonydb's process in one batch (the
        per-group aggregates of a DP release: few); Spark runs ``step`` on its executors."""
        _, rows = self.fetch_rows(f"SELECT * FROM {ident(relation)}")
        out = step(rows)
        name = s.name()
        self.create_table_as(name, "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS {ident(c)}" for c, t in columns)
                             + " LIMIT 0", temp=True)
        for start in range(0, len(out), 500):
            chunk = out[start:start + 500]
            self.execute(f"INSERT INTO {ident(name)} VALUES "
                         + ", ".join("(" + ", ".join(literal(v) for v in r) + ")" for r in chunk))
        return name

    @abc.abstractmethod
    def columns(self, relation: str) -> list[tuple[str, str]]:
        """(name, type) of each column of a table or view."""

    def distinct_estimates(self, relation: str, columns: list[str]) -> list[float] | None:
        """The planner's estimate of each column's number of distinct values, where the engine keeps
        one (PostgreSQL's pg_stats after ANALYZE); None when it has none for every column."""
        return None

    @abc.abstractmethod
    def exists(self, name: str) -> bool:
        """Whether a table or view of this name exists."""

    @contextlib.contextmanager
    def scratch(self, prefix: str = "anonydb_tmp") -> Iterator["Scratch"]:
        """Names for intermediate tables, all dropped when the block ends (success or failure)."""
        s = Scratch(self, prefix)
        try:
            yield s
        finally:
            s.drop_all()


def as_arrow(frame: Any) -> Any:
    """A pandas or Polars data frame (or LazyFrame, collected) as an Arrow table, converted column
    by column, never through Python rows."""
    import pyarrow as pa

    if isinstance(frame, pa.Table):
        return frame
    if type(frame).__name__ == "LazyFrame":
        frame = frame.collect()
    if hasattr(frame, "to_arrow"):  # Polars
        return frame.to_arrow()
    return pa.Table.from_pandas(frame, preserve_index=False)


#: Arrow type ids -> the column type a frame's temporary table gets (anything else: VARCHAR)
ARROW_TYPES = (("bool", "BOOLEAN"), ("int", "BIGINT"), ("uint", "BIGINT"), ("float", "DOUBLE"), ("double", "DOUBLE"),
               ("decimal", "DOUBLE"), ("date", "DATE"), ("timestamp", "TIMESTAMP"))


def text_keyed_hash(salt: int, exprs: list[str]) -> str:
    """:meth:`Engine.keyed_hash` in SQL every engine reads: md5 of the salt and the texts."""
    parts = [literal(str(salt))] + [f"coalesce(CAST({e} AS VARCHAR), '\\N')" for e in exprs]
    return "md5(" + " || '|' || ".join(parts) + ")"


class Scratch:
    def __init__(self, engine: Engine, prefix: str):
        self.engine, self.prefix, self.names = engine, prefix, []
        self.slots: dict[str, str] = {}

    def name(self) -> str:
        n = temp_name(self.prefix)
        self.names.append(n)
        return n

    def table(self, select: str | Rendered) -> str:
        n = self.name()
        self.engine.create_table_as(n, select, temp=True)
        return n

    def put(self, role: str, select: str | Rendered) -> str:
        """(Re)create the table of ``role`` (one name per role, replaced in place): the tables of a
        loop's rounds cost no DROP statements and hold one round at a time."""
        if role not in self.slots:
            self.slots[role] = self.name()
        self.engine.create_table_as(self.slots[role], select, temp=True, replace=True)
        return self.slots[role]

    def drop_since(self, mark: int, keep: Iterable[str] = ()) -> None:
        """Drop the tables made since ``len(self.names) == mark``, except ``keep`` (an anonymizer's
        round-by-round intermediates, so memory stays bounded by one round)."""
        keep = set(keep) | set(self.slots.values())
        made, self.names = self.names[mark:], self.names[:mark]
        for n in reversed(made):
            if n in keep:
                self.names.append(n)
            else:
                self.engine.drop(n)

    def drop(self, name: str) -> None:
        """Drop one scratch table now."""
        if name in self.names:
            self.names.remove(name)
            self.engine.drop(name)

    def drop_all(self) -> None:
        for n in reversed(self.names):
            try:
                self.engine.drop(n)
            except Exception:
                pass
        self.names.clear()
        self.slots.clear()
