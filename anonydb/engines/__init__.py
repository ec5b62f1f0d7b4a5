"""The engine layer: one small interface (:class:`~anonydb.engines.base.Engine`) and one class per
database behind it.

- :mod:`.base`: the interface (execute, fetch, create/drop/rename, transactions, scratch tables,
  the statement log) and what every engine shares;
- :mod:`.duckdb`: the embedded default, whose SQL the templates are written in;
- :mod:`.postgres`: PostgreSQL over psycopg 3, with every difference from DuckDB in that one file;
- :mod:`.spark`: a Spark session (in progress: the checks run; made directly, not by :func:`connect`).

:func:`connect` picks the engine from what it is given. psycopg comes with the ``postgres`` extra
(``pip install 'anonydb[postgres]'``) and is imported only when a PostgreSQL engine is made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Engine
from .duckdb import DuckDBEngine

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(database: Any) -> bool:
    return isinstance(database, str) and database.startswith(POSTGRES_SCHEMES)


def connect(database: str | Path | Any | None = None, *, read_only: bool = False) -> Engine:
    """An engine for ``database``: None for in-memory DuckDB, a DuckDB file path or connection, a
    ``postgresql://`` URL or a psycopg 3 connection, or an engine (returned as is). ``read_only``
    opens DuckDB read-only and runs Postgres sessions with ``default_transaction_read_only``."""
    if isinstance(database, Engine):
        return database
    if is_postgres_url(database) or type(database).__module__.startswith("psycopg"):
        return connect_postgres(database, read_only=read_only)
    return DuckDBEngine(database, read_only=read_only)


def connect_postgres(url_or_connection: Any, *, read_only: bool = False) -> Engine:
    """A PostgreSQL engine for a ``postgresql://`` URL (or libpq connection string) or an existing
    psycopg 3 connection (left open by :meth:`close`; the caller owns it)."""
    from .postgres import PostgresEngine

    if isinstance(url_or_connection, PostgresEngine):
        return url_or_connection
    return PostgresEngine(url_or_connection, read_only=read_only)


__all__ = ["DuckDBEngine", "Engine", "connect", "connect_postgres", "is_postgres_url"]
