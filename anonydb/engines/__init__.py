"""The engine layer: one small interface (:class:`~anonydb.engines.base.Engine`) and one class per
database behind it.

- :mod:`.base`: the interface (execute, fetch, create/drop/rename, transactions, scratch tables,
  the statement log) and what every engine shares;
- :mod:`.duckdb`: the embedded default, whose SQL the templates are written in;
- :mod:`.postgres`: PostgreSQL over psycopg 3, with every difference from DuckDB in that one file;
- :mod:`.spark`: a Spark session (local, a cluster's, or Spark Connect), every difference in that file.

:func:`connect` picks the engine from what it is given. psycopg comes with the ``postgres`` extra
(``pip install 'anonydb[postgres]'``), pyspark with ``spark``; each is imported only when its engine is made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Engine
from .duckdb import DuckDBEngine

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SPARK_SCHEMES = ("spark://", "sc://", "local[")


def is_postgres_url(database: Any) -> bool:
    return isinstance(database, str) and database.startswith(POSTGRES_SCHEMES)


def connect(database: str | Path | Any | None = None, *, read_only: bool = False) -> Engine:
    """An engine for ``database``: None for in-memory DuckDB, a DuckDB file path or connection, a
    ``postgresql://`` URL or a psycopg 3 connection, a ``SparkSession`` or a Spark URL (``spark``
    for a local session, ``spark://host:port``, ``sc://host:port``), or an engine (returned as
    is). ``read_only`` opens DuckDB read-only, runs Postgres sessions with
    ``default_transaction_read_only``, and lets a Spark engine make only its scratch views."""
    if isinstance(database, Engine):
        return database
    if is_postgres_url(database) or type(database).__module__.startswith("psycopg"):
        return connect_postgres(database, read_only=read_only)
    if is_spark_url(database) or is_spark_session(database):
        return connect_spark(database, read_only=read_only)
    return DuckDBEngine(database, read_only=read_only)


def is_spark_url(database: Any) -> bool:
    """``spark`` (a local session), ``local[N]``, ``spark://host:port`` or ``sc://host:port``."""
    return isinstance(database, str) and (database == "spark" or database.startswith(SPARK_SCHEMES))


def is_spark_session(obj: Any) -> bool:
    return type(obj).__module__.startswith("pyspark.sql")


def connect_spark(url_or_session: Any, *, read_only: bool = False) -> Engine:
    """A Spark engine on an existing ``SparkSession`` (left running by :meth:`close`; the caller
    owns it) or on a new session for a URL (:func:`anonydb.engines.spark.session_for`)."""
    from .spark import SparkEngine, session_for

    if isinstance(url_or_session, SparkEngine):
        return url_or_session
    if is_spark_session(url_or_session):
        return SparkEngine(url_or_session, read_only=read_only)
    return session_for(url_or_session, read_only=read_only)


def connect_postgres(url_or_connection: Any, *, read_only: bool = False) -> Engine:
    """A PostgreSQL engine for a ``postgresql://`` URL (or libpq connection string) or an existing
    psycopg 3 connection (left open by :meth:`close`; the caller owns it)."""
    from .postgres import PostgresEngine

    if isinstance(url_or_connection, PostgresEngine):
        return url_or_connection
    return PostgresEngine(url_or_connection, read_only=read_only)


__all__ = ["DuckDBEngine", "Engine", "connect", "connect_postgres", "connect_spark", "is_postgres_url", "is_spark_url",
           "safe_url"]


def safe_url(url: str) -> str:
    """A database URL without its password, for what a person sees (messages, the workbench)."""
    from .postgres import _safe_url

    return _safe_url(url)
