"""PostgreSQL backend: the same :class:`~anonydb.engines.base.Engine` interface over a psycopg 3 connection.

The rest of anonydb generates DuckDB-dialect SQL (``sql/*.sql.j2`` rendered with ``dialect =
"postgres"``, see :mod:`anonydb.sqlgen`). This engine runs each statement on PostgreSQL in steps:

1. parse it as DuckDB SQL and apply the hand-written rewrites of :data:`REWRITES`, where sqlglot's
   transpilation alone would give a different answer, SQL that PostgreSQL rejects, or a plan that
   does not scale;
2. refuse, with one line ``not available on postgres: <reason>`` (an
   :class:`~anonydb.errors.InputError`), a construct left that has no PostgreSQL equivalent yet
   (:data:`UNAVAILABLE`); nothing ever falls back to pulling the data into Python;
3. write the tree out as PostgreSQL (sqlglot) and run each resulting statement,
   then ANALYZE a table that CREATE TABLE AS made (:func:`_after`).

Every way PostgreSQL differs from DuckDB for anonydb is in this file:

=====================================  ==========================================================
DuckDB                                 on PostgreSQL
=====================================  ==========================================================
HUGEINT, UBIGINT, UINTEGER, ...        NUMERIC(38, 0), NUMERIC(20, 0), BIGINT, ... (same range)
bare NUMERIC (exact() macro)           NUMERIC(38, 0), not sqlglot's DuckDB default DECIMAL(18, 3)
ln/exp/sqrt/log/pow (DOUBLE only)      the same of CAST(x AS DOUBLE PRECISION) (no NUMERIC math)
x / 0, x // 0, x % 0 = NULL            x / NULLIF(0, 0) (PostgreSQL raises division_by_zero)
to_json(struct_pack(a := x))           CAST(jsonb_build_object('a', x) AS TEXT)
JOIN ON a IS NOT DISTINCT FROM b       JOIN ON ARRAY[a] = ARRAY[b] (hashable, NULL-safe)
CREATE OR REPLACE TABLE t AS           DROP TABLE IF EXISTS t; CREATE TABLE t AS
(no statistics needed)                 ANALYZE t after CREATE TABLE t AS (a 3,000-row sample)
(no JIT, default work_mem)             SET jit = off, work_mem = 128MB for the session (:data:`SESSION`)
? parameters                           %s (psycopg), every other % doubled
sum(BIGINT) -> HUGEINT -> int          sum(bigint) -> numeric -> int (:class:`_NumericLoader`)
DESCRIBE type names                    format_type() mapped to DuckDB's names (:data:`TYPE_NAMES`)
GROUP BY ALL                           GROUP BY the positions of the non-aggregate select items
arg_max(x, y) / arg_min(x, y)          (array_agg(x ORDER BY y DESC|ASC, x) FILTER (WHERE y IS
                                       NOT NULL))[1]; a list [a, b] picks each element alike
any_value(x) (PostgreSQL 16+ only)     min(x): anonydb takes it of per-group constants
md5_number(s) (keyed row order)        a BIGINT of md5(s) sorting as DuckDB's (key stays inlined,
                                       redacted from logs); orders differ from DuckDB's
hash(x), hash(xor(hash(x), k))         64 bits of md5(CAST(x AS TEXT) [|| '/' || k]) (x may be a
                                       whole row); h >> n masked to the unsigned shift
log(b, x)                              ln(x) / ln(b) in DOUBLE (log(b, x) is NUMERIC-only there)
FROM (subquery) without alias          an alias _adb_subN (required before PostgreSQL 16)
string_split(s, sep)                   string_to_array(s, sep); list_contains -> = ANY(...)
COPY (...) TO 'file' (exports)         COPY (...) TO STDOUT streamed into the client's file (CSV)
staging owner: the local process id    pg_backend_pid(), alive while in pg_stat_activity
a check's QI codes: dictionary joins   a CASE over the inlined values for columns of <= 16 values
                                       (:attr:`PostgresEngine.inline_codes`; text and integers)
=====================================  ==========================================================

Refused (:data:`UNAVAILABLE`): ASOF joins, TRY_CAST, structs outside to_json (Injector's rule
mining), list_sort/array_to_string, read_csv/read_parquet, table macros, DuckDB's catalog
functions, recursive CTEs with USING KEY (Mondrian's plan="recursive" is refused up front by
anonymize; plan="auto" takes the level-wise plan). Slicing is refused up front by
:func:`anonydb.methods.slicing` (SELECT * REPLACE, and its column-association plans are not ported).

Transactions: the connection runs in autocommit mode, as a DuckDB connection does, so every
statement commits on its own unless the caller opened a transaction with ``BEGIN TRANSACTION``
(the release swap does: build, verify, rename, ``COMMIT`` or ``ROLLBACK``). PostgreSQL's DDL is
transactional, so a rolled back swap leaves the previous release in place. A borrowed connection
that is not in autocommit mode is switched to it while idle, and switched back by :meth:`close`.

Every fetch records how many rows came back (:attr:`PostgresEngine.fetched`), so a test can bound
what any statement pulls out of the server.

    >>> from anonydb.engines import connect_postgres          # doctest: +SKIP
    >>> eng = connect_postgres("postgresql://user@localhost:5432/db")  # doctest: +SKIP
    >>> anonydb.check("people", ["age", "zip"], "disease", engine=eng, k=5, l=3)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Sequence

from .base import Engine, Logged
from ..errors import InputError, SQLError
from ..sqlgen import ident
from .postgres_sql import NotAvailable, to_postgres  # noqa: F401  (NotAvailable: the engine's API)

try:  # psycopg is an optional extra: pip install 'anonydb[postgres]'
    import psycopg
    from psycopg.types.numeric import NumericLoader
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]
    NumericLoader = object  # type: ignore[assignment,misc]


# ------------------------------------------------------------------------------------------------
# 3. Results: NUMERIC without a fractional part comes back as int, as DuckDB's HUGEINT sums do
#    (sum(bigint) is NUMERIC in PostgreSQL); the checks build exact fractions from them.
# ------------------------------------------------------------------------------------------------
class _NumericLoader(NumericLoader):  # type: ignore[misc,valid-type]
    def load(self, data: Any) -> Any:
        d = super().load(data)
        if isinstance(d, Decimal) and d.is_finite() and d.as_tuple().exponent >= 0:
            return int(d)
        return d


#: PostgreSQL type names (format_type) -> the DuckDB names the rest of anonydb reads (schema.py)
TYPE_NAMES = {
    "smallint": "SMALLINT", "integer": "INTEGER", "bigint": "BIGINT", "real": "FLOAT",
    "double precision": "DOUBLE", "numeric": "DECIMAL", "text": "VARCHAR", "character varying": "VARCHAR",
    "character": "VARCHAR", "boolean": "BOOLEAN", "date": "DATE", "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE", "time without time zone": "TIME",
    "bytea": "BLOB", "uuid": "UUID", "json": "JSON", "jsonb": "JSON", "interval": "INTERVAL",
}


def duckdb_type_name(pg_type: str) -> str:
    base = pg_type.split("(")[0].strip()
    name = TYPE_NAMES.get(base)
    if name is None:
        return pg_type.upper()
    if name == "DECIMAL" and "(" in pg_type:
        return "DECIMAL" + pg_type[pg_type.index("("):]
    return name


#: a statement whose NULL-safe joins were made hashable (:func:`_rw_hash_joins`)
_HASHED_JOIN = re.compile(r"ARRAY\[[^\]]*\] = ARRAY\[")
#: ... runs with enable_nestloop = off. PostgreSQL has no statistics for ARRAY[x] and guesses each
#: such join keeps 1/200 of the pairs, so after a few joins of a 10^6-row table with the small
#: dictionary of each QI it expects one row and nests loops over the 10^6 (the check's per-group
#: counts on 10^6 rows and 8 QIs: 18 s, against ~2 s hashed). Off only for those statements, and
#: restored to the session's setting after each.
_CTAS = re.compile(r'^CREATE (?:TEMPORARY |UNLOGGED )?TABLE ((?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
                   r'(?:\.(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*))*) AS\b')


def _after(stmt: str) -> list[str]:
    """Statements to run right after ``stmt``: ANALYZE a table made by CREATE TABLE AS. DuckDB plans
    without statistics; PostgreSQL's planner needs them and never gathers them for temporary tables
    (autovacuum cannot see them): unanalyzed, a 500-row dictionary is planned as 3 rows and the
    check's join becomes nested loops (30 s instead of 0.3 s on 2*10^5 rows)."""
    m = _CTAS.match(stmt)
    return [f"ANALYZE {m[1]}"] if m else []


#: the statistics target of those ANALYZEs (PostgreSQL's default, 100, samples 30,000 rows): a
#: level-wise plan makes one or two tables a statement and reads each once or twice, so the row
#: counts and rough distinct counts are all its plans need, and a 3,000-row sample gives them at a
#: fraction of the cost (an ANALYZE of a 30,000-row table: 18 ms -> 4 ms; Mondrian on Adult ran 100
#: of them, 1.85 s -> 0.3 s). Only for these statements: the session's own setting is restored
#: after each (a user's ANALYZE, and autovacuum's later one of a release, use their own).
ANALYZE_TARGET = 10

#: session settings of every connection (restored by :meth:`PostgresEngine.close` on a borrowed one)
SESSION = {
    # No JIT: anonydb's statements are many, each over a large table, so PostgreSQL's cost threshold
    # always fires and every statement pays LLVM compilation (0.4-0.9 s each on the checks of 10^6
    # rows, more than the statement's own work on small tables).
    "jit": "off",
    # Mondrian's per-round histograms (partition x dimension x value) and their window sorts spill
    # to disk at the default 4 MB from a few 10^5 rows on (EXPLAIN ANALYZE: "Disk Usage", "external
    # merge"); 1,000,000-row census, k=10: 77 s -> 64 s. Per sort or hash node of one statement.
    "work_mem": "128MB",
}


class PostgresError(Exception):
    """PostgreSQL's own error, with the statement as it was sent (the SQLError shows the generated one)."""


@dataclass(frozen=True)
class Fetched:
    sql: str  # the statement as sent to PostgreSQL
    rows: int


class PostgresEngine(Engine):
    """PostgreSQL backend: a ``postgresql://`` URL (or libpq connection string) or a psycopg 3 connection."""

    dialect = "postgres"
    inline_codes = 16  # each dictionary join costs a hash probe per row (1M rows, 8 QIs: cells 3.8 -> 2.7 s)

    def __init__(self, database: Any, *, read_only: bool = False):
        self.read_only = read_only  # Engine.execute refuses writes outside session-temporary scratch tables
        if psycopg is None:
            raise InputError("PostgreSQL needs psycopg 3: pip install 'anonydb[postgres]'")
        super().__init__()
        self._restore_autocommit: bool | None = None
        if isinstance(database, psycopg.Connection):
            self.con, self.owned = database, False
            if not self.con.autocommit:
                if self.con.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    raise InputError("the PostgreSQL connection is inside a transaction: commit or roll it back "
                                     "first (anonydb runs in autocommit mode and opens its own transactions)")
                self._restore_autocommit = False
                self.con.autocommit = True
        elif isinstance(database, str):
            try:
                self.con = psycopg.connect(database, autocommit=True)
            except psycopg.Error as e:
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise InputError(f"cannot connect to PostgreSQL at {_safe_url(database)}: {first}") from None
            self.owned = True
        else:
            raise InputError(f"expected a postgresql:// URL or a psycopg 3 connection, got {type(database).__name__}")
        self.database = _safe_url(database) if isinstance(database, str) else None
        self.fetched: list[Fetched] = []  # rows returned by every fetch, as sent to the server
        with self.con.cursor() as cur:  # restored after each statement that turns it off (_send)
            cur.execute("SELECT current_setting('enable_nestloop'), current_setting('default_statistics_target')")
            self._nestloop, self._stats_target = cur.fetchone()
            self._session: dict[str, str] = {}  # the settings SESSION replaced, restored by close()
            for name, value in SESSION.items():
                cur.execute("SELECT current_setting(%s), set_config(%s, %s, false)", [name, name, value])
                self._session[name] = cur.fetchone()[0]

    # -- statements --------------------------------------------------------------------------
    def _statements(self, sql: str, params: Sequence[Any] | None, hash_joins: bool = True) -> list[str]:
        stmts = to_postgres(sql, with_params=bool(params), hash_joins=hash_joins)
        if params and len(stmts) != 1:
            raise InputError("a statement with parameters must be a single statement on postgres")
        return stmts

    def _run(self, cur: Any, sql: str, params: Sequence[Any] | None) -> str:
        """Run DuckDB-dialect ``sql`` (one or more statements) on ``cur``; return the last statement sent."""
        stmts = self._statements(sql, params)
        try:
            return self._send(cur, stmts, params)
        except PostgresError as e:
            # ARRAY[a] = ARRAY[b] of two element types (int[] vs bigint[]) does not exist: run the
            # NULL-safe join as written (slower, never different). Outside a transaction only: inside
            # one, the failed statement has aborted it and the caller rolls back.
            cause = e.__cause__
            idle = self.con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            if (isinstance(cause, psycopg.errors.UndefinedFunction) and "[] =" in str(cause) and idle
                    and any("ARRAY[" in s for s in stmts)):
                return self._send(cur, self._statements(sql, params, hash_joins=False), params)
            raise

    def _send(self, cur: Any, stmts: list[str], params: Sequence[Any] | None) -> str:
        for i, stmt in enumerate(stmts):
            last = i == len(stmts) - 1
            hashed = _HASHED_JOIN.search(stmt) is not None
            if hashed:
                self._set("enable_nestloop", "off")
            try:
                for sent in (stmt, *_after(stmt)):
                    try:
                        if sent is not stmt:  # ANALYZE of a scratch table, on a small sample (ANALYZE_TARGET)
                            sent = (f"SET default_statistics_target = {ANALYZE_TARGET}; {sent}; "
                                    f"SET default_statistics_target = {int(self._stats_target)}")
                        cur.execute(sent, list(params) if params and last and sent is stmt else None)
                    except psycopg.Error as e:
                        msg = str(e).strip() or type(e).__name__
                        raise PostgresError(f"{type(e).__name__}: {msg}\n--- as sent to PostgreSQL ---\n{sent}") from e
            finally:
                if hashed:
                    self._set("enable_nestloop", self._nestloop)
        return stmts[-1]

    def _set(self, name: str, value: str) -> None:
        """A planner setting for this session, on a cursor of its own (the statement's cursor holds
        its result). Inside a transaction that failed, the SET fails too (ignored: the rollback
        restores the setting as it was)."""
        try:
            with self.con.cursor() as cur:
                cur.execute("SELECT set_config(%s, %s, false)", [name, value])
        except psycopg.Error:
            pass

    def _execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        with self.con.cursor() as cur:
            self._run(cur, sql, params)

    def _fetch(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        with self.con.cursor() as cur:
            cur.adapters.register_loader("numeric", _NumericLoader)
            sent = self._run(cur, sql, params)
            cols = [d.name for d in cur.description] if cur.description else []
            rows = cur.fetchall() if cur.description else []
        self.fetched.append(Fetched(self.redact(sent), len(rows)))
        return cols, rows

    # An unavailable construct is the user's InputError, not a failing statement (SQLError).
    def execute(self, stmt: Any, params: Sequence[Any] | None = None) -> None:
        try:
            super().execute(stmt, params)
        except SQLError as e:
            if isinstance(e.__cause__, InputError):
                raise e.__cause__ from None
            raise

    def fetch_rows(self, stmt: Any, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        try:
            return super().fetch_rows(stmt, params)
        except SQLError as e:
            if isinstance(e.__cause__, InputError):
                raise e.__cause__ from None
            raise

    @property
    def max_rows_fetched(self) -> int:
        """The most rows any one statement returned to Python."""
        return max((f.rows for f in self.fetched), default=0)

    # -- catalog -----------------------------------------------------------------------------
    def _regclass(self, name: str) -> int | None:
        """The table or view ``name`` (one identifier, as anonydb quotes it) on the search path,
        temporary tables first, as PostgreSQL resolves it."""
        with self.con.cursor() as cur:
            cur.execute("SELECT to_regclass(%s)::oid", [ident(name, "postgres")])
            row = cur.fetchone()
        return row[0] if row else None

    def columns(self, relation: str) -> list[tuple[str, str]]:
        oid = self._regclass(relation)
        if oid is None:
            raise InputError(f"no table or view named {relation!r} in the database")
        with self.con.cursor() as cur:
            cur.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                        "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum", [oid])
            return [(n, duckdb_type_name(t)) for n, t in cur.fetchall()]

    def exists(self, name: str) -> bool:
        return self._regclass(name) is not None

    def distinct_estimates(self, relation: str, columns: list[str]) -> list[float] | None:
        oid = self._regclass(relation)
        if oid is None:
            return None
        with self.con.cursor() as cur:  # n_distinct < 0 is a fraction of the rows
            cur.execute("SELECT s.attname, CASE WHEN s.n_distinct < 0 THEN -s.n_distinct * greatest(c.reltuples, 0) "
                        "ELSE s.n_distinct END FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
                        "JOIN pg_stats AS s ON s.schemaname = n.nspname AND s.tablename = c.relname "
                        "WHERE c.oid = %s AND s.attname = ANY(%s)", [oid, list(columns)])
            got = dict(cur.fetchall())
        return [float(got[c]) for c in columns] if all(c in got for c in columns) else None

    def copy_out(self, table: str, path: Any, fmt: str) -> None:
        """A file export streams ``COPY ... TO STDOUT`` to the client's file (a server-side COPY TO
        would write on the server's disk). CSV only."""
        if fmt != "csv":
            raise NotAvailable(f"{fmt} export (PostgreSQL streams CSV; export as .csv)")
        sql = f"COPY (SELECT * FROM {ident(table, 'postgres')}) TO STDOUT (FORMAT csv, HEADER true)"
        try:
            with self.con.cursor() as cur, open(path, "wb") as f:
                with cur.copy(sql) as cp:
                    for chunk in cp:
                        f.write(chunk)
        except psycopg.Error as e:
            raise SQLError(f"PostgresError: {type(e).__name__}: {e}", sql, None) from e
        self.log.append(Logged(sql, None, 0.0))

    def text_bytes(self, text: str) -> str:
        """``convert_to(text, 'UTF8')``: the UTF-8 bytes whatever the database's encoding."""
        return f"pg_catalog.convert_to({text}, 'UTF8')"

    def digest_sum(self, exprs: list[str]) -> str:  # hashtextextended: PostgreSQL 11+; qualified, kept as is
        row = ", ".join(f"COALESCE({e}, '\\N')" for e in exprs)
        return f"COALESCE(sum(pg_catalog.hashtextextended(pg_catalog.concat_ws(chr(31), {row}), 0)), 0)"

    def hmac_sha256_hex(self, data: str, ipad_hex: str, opad_hex: str) -> str:
        """The HMAC of :meth:`Engine.hmac_sha256_hex` with PostgreSQL's built-in ``sha256(bytea)``
        (PostgreSQL 11+, no pgcrypto), which returns bytes: ``encode(sha256(decode(opad, 'hex') ||
        sha256(decode(ipad, 'hex') || data)), 'hex')``. Every function is schema-qualified: sqlglot
        then writes it as it stands (unqualified, it reads sha256, encode and decode as DuckDB's and
        rewrites them), and no function of the search path can stand in for it. sqlglot writes a
        statement on one line, so each pad is kept on a line of its own by newlines inside its
        literal (``decode`` skips them): an error's ``LINE n:`` excerpt shows no part of it."""
        return (f"pg_catalog.encode(pg_catalog.sha256(pg_catalog.decode('\n{opad_hex}\n', 'hex') || "
                f"pg_catalog.sha256(pg_catalog.decode('\n{ipad_hex}\n', 'hex') || {data})), 'hex')")

    def writer_id(self) -> int:
        """The server backend of this session: clients on other machines share the server, so a
        local process id says nothing about them."""
        return int(self.scalar("SELECT pg_backend_pid()"))

    def writer_alive(self, writer: int) -> bool:
        return bool(self.scalar(f"SELECT count(*) FROM pg_stat_activity WHERE pid = {int(writer)}"))

    def close(self) -> None:
        if self.owned:
            self.con.close()
        elif not self.con.closed and self.con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            for name, value in self._session.items():  # the borrowed connection's own settings back
                self._set(name, value)
            if self._restore_autocommit is not None:
                self.con.autocommit = self._restore_autocommit


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(url)
        if parts.password:
            netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
            return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        pass
    return url


#: DuckDB column types -> PostgreSQL types, for copying a DuckDB table into the server
COPY_TYPES = {"BOOLEAN": "boolean", "SMALLINT": "smallint", "INTEGER": "integer", "BIGINT": "bigint",
              "DOUBLE": "double precision", "FLOAT": "real", "VARCHAR": "text", "DATE": "date"}


def _copy_type(t: str) -> str | None:
    """The PostgreSQL column type copy_from_duckdb gives a DuckDB type (a DECIMAL keeps its precision)."""
    d = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", t)
    return f"numeric({d[1]}, {d[2]})" if d else COPY_TYPES.get(t)


def copy_from_duckdb(duck: Engine, pg: "PostgresEngine", table: str) -> None:
    """Copy the DuckDB table ``table`` into PostgreSQL under the same name (replacing it): CSV
    written by DuckDB and streamed through ``COPY ... FROM STDIN``, then analyzed. For tests,
    benchmarks and loading a DuckDB-made table into a server; never on a method's path."""
    import os
    import tempfile

    cols = [(c, t, _copy_type(t)) for c, t in duck.columns(table)]
    unknown = [f"{c} {t}" for c, t, p in cols if p is None]
    if unknown:
        raise InputError(f"cannot copy {table!r} to PostgreSQL: no mapping for column type(s) {', '.join(unknown)}")
    pg.execute(f"DROP TABLE IF EXISTS {ident(table)}")
    pg.con.execute(f"CREATE TABLE {ident(table, 'postgres')} ("
                   + ", ".join(f"{ident(c, 'postgres')} {p}" for c, _, p in cols) + ")")
    fd, path = tempfile.mkstemp(suffix=".csv")
    os.close(fd)
    try:
        duck.execute(f"COPY {ident(table)} TO '{path}' (HEADER, DELIMITER ',')")
        with pg.con.cursor() as cur, open(path, "rb") as f:
            with cur.copy(f"COPY {ident(table, 'postgres')} FROM STDIN (FORMAT csv, HEADER true)") as cp:
                while chunk := f.read(1 << 20):
                    cp.write(chunk)
    finally:
        os.unlink(path)
    pg.con.execute(f"ANALYZE {ident(table, 'postgres')}")
