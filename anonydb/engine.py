"""The engine layer: every database access goes through one small interface.

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import duckdb

from .errors import InputError, Interrupted, SQLError
from .sqlgen import Rendered, Templates, ident, temp_name


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


@dataclass(frozen=True)
class Logged:
    sql: str
    template: str | None
    seconds: float


class Engine(abc.ABC):
    """Base class: the few operations the rest of anonydb needs."""

    dialect: str = "duckdb"

    def __init__(self) -> None:
        self.templates = Templates(self.dialect)
        self.log: list[Logged] = []  # every statement run and its duration, for plans and reports
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
        self.execute(Rendered(f"{head} {ident(name, self.dialect)} AS\n{sel}", tmpl))  # type: ignore[arg-type]

    def drop(self, name: str, *, view: bool = False) -> None:
        kind = "VIEW" if view else "TABLE"
        self.execute(f"DROP {kind} IF EXISTS {ident(name, self.dialect)}")

    def rename(self, old: str, new: str) -> None:
        self.execute(f"ALTER TABLE {ident(old, self.dialect)} RENAME TO {ident(new, self.dialect)}")

    @abc.abstractmethod
    def columns(self, relation: str) -> list[tuple[str, str]]:
        """(name, type) of each column of a table or view."""

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


class DuckDBEngine(Engine):
    """DuckDB backend: in-memory by default, a database file, or an existing connection."""

    dialect = "duckdb"

    def __init__(self, database: str | Path | duckdb.DuckDBPyConnection | None = None, *, read_only: bool = False):
        super().__init__()
        inner = database
        for _ in range(3):  # a wrapper around a connection (dbt-duckdb's session holds it in _cursor)
            if isinstance(inner, duckdb.DuckDBPyConnection) or not hasattr(inner, "_cursor"):
                break
            inner = inner._cursor
        if isinstance(inner, duckdb.DuckDBPyConnection):
            self.con, self.owned = inner, False
        elif database is not None and not isinstance(database, (str, Path)):
            raise InputError(f"expected a DuckDB connection, a database file path or None, got "
                             f"{type(database).__name__}")
        else:
            self.con = _open_duckdb(database, read_only)
            self.owned = True
        self.database = None if database is None or self.owned is False else str(database)

    def _execute(self, sql, params=None):
        self.con.execute(sql, params) if params else self.con.execute(sql)

    def _fetch(self, sql, params=None):
        cur = self.con.execute(sql, params) if params else self.con.execute(sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()

    def columns(self, relation: str) -> list[tuple[str, str]]:
        _, rows = self._fetch(f"DESCRIBE SELECT * FROM {ident(relation, self.dialect)}")
        return [(r[0], r[1]) for r in rows]

    def exists(self, name: str) -> bool:
        _, rows = self._fetch(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? "
            "UNION ALL SELECT count(*) FROM duckdb_views() WHERE view_name = ?",
            [name, name],
        )
        return any(r[0] for r in rows)

    def close(self) -> None:
        if self.owned:
            self.con.close()


#: the bytes at offset 8 of every DuckDB database file
DUCKDB_MAGIC = b"DUCK"


def _open_duckdb(database: str | Path | None, read_only: bool) -> "duckdb.DuckDBPyConnection":
    """Open a DuckDB database file (or memory), refusing with one line what DuckDB would open wrongly
    (a CSV opened as an empty database) or report as a traceback (a directory, a missing folder, a
    read-only file, a lock held by another process)."""
    if database is None or str(database) == ":memory:":
        return duckdb.connect(":memory:")
    path = Path(database)
    where = f"--db {str(database)!r}"
    if path.is_dir():
        raise InputError(f"{where} is a directory, not a DuckDB database file")
    if path.exists():
        with open(path, "rb") as f:
            head = f.read(12)
        if path.stat().st_size and head[8:12] != DUCKDB_MAGIC:
            raise InputError(f"{where} is not a DuckDB database (a data file is a source, not --db)")
        if not read_only and not os.access(path, os.W_OK):
            raise InputError(f"{where} is read-only: give a database this user can write, or a copy")
    elif read_only:
        raise InputError(f"{where}: no database at that path (this command only reads an existing one)")
    elif not path.parent.is_dir():
        raise InputError(f"{where}: the folder {str(path.parent)!r} does not exist")
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as e:
        text = str(e)
        if "lock" in text.lower():
            raise InputError(f"database {str(database)!r} is in use by another process; wait for it to finish "
                             f"(DuckDB allows one writer)") from None
        raise InputError(f"cannot open {where}: {text.splitlines()[0]}") from None


def connect(database: str | Path | duckdb.DuckDBPyConnection | Engine | None = None, *, read_only: bool = False) -> Engine:
    """An engine for ``database``: None for in-memory DuckDB, a file path, a DuckDB connection,
    or an engine (returned as is)."""
    if isinstance(database, Engine):
        return database
    return DuckDBEngine(database, read_only=read_only)
