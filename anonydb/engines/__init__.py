"""Engines beyond the embedded DuckDB default (:mod:`anonydb.engine`).

``connect_postgres(url_or_connection)`` opens a :class:`~anonydb.engines.postgres.PostgresEngine`;
psycopg 3 comes with the ``postgres`` extra (``pip install 'anonydb[postgres]'``) and is imported
only when a PostgreSQL engine is made, so ``anonydb.connect()`` never depends on it.
"""

from __future__ import annotations

from typing import Any


def connect_postgres(url_or_connection: Any):
    """A PostgreSQL engine for a ``postgresql://`` URL (or libpq connection string) or an existing
    psycopg 3 connection (left open by :meth:`close`; the caller owns it)."""
    from .postgres import PostgresEngine

    if isinstance(url_or_connection, PostgresEngine):
        return url_or_connection
    return PostgresEngine(url_or_connection)


__all__ = ["connect_postgres"]
