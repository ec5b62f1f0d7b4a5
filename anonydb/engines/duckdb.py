"""DuckDB, the embedded default engine: in-memory, a database file, or a user's own connection.

What DuckDB does that the other engines rewrite (medians, list functions, keyed order, recursive
plans, macros) is the SQL the templates are written in; the other dialects' files
(:mod:`anonydb.engines.postgres`) say how they differ from it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from ..errors import InputError
from ..sqlgen import ident, literal
from .base import Engine


class DuckDBEngine(Engine):
    """DuckDB backend: in-memory by default, a database file, or an existing connection."""

    dialect = "duckdb"
    group_bits = 64  # bit_or over a UBIGINT, bit_count (raw 10M census, distinct l: see BENCHMARKS.md)
    packed_sums = 8  # HUGEINT sums (raw 10M census, t-closeness: 40 values in 8 sums 1.3x faster, 64 in 13 no faster)
    #: Mondrian's fragments: batches of about 250,000 rows (1M census: the pool's step 2.8 s against
    #: 3.2 s with 50,000; a statement costs ~50 ms to start); plan="auto" takes the fragment plan from
    #: 20M rows (census, 4 GB: 0.90x the level-wise plan at 10M, 1.13x at 30M, 1.44x at 100M)
    finish_rows = 250_000
    fragments_from = 20_000_000

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
            try:  # the run's phases are anonydb's display
                self.con.execute("SET enable_progress_bar = false")
            except duckdb.InvalidInputException:  # in Jupyter without ipywidgets DuckDB refuses any setting of it
                pass
            self.owned = True
        self.database = None if database is None or self.owned is False else str(database)

    def _execute(self, sql, params=None):
        self.con.execute(sql, params) if params else self.con.execute(sql)

    def _fetch(self, sql, params=None):
        cur = self.con.execute(sql, params) if params else self.con.execute(sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()

    def load_frame(self, name: str, frame: Any) -> None:
        """The frame registered as a view DuckDB reads in place (pandas, Polars and Arrow), no copy."""
        if type(frame).__name__ == "LazyFrame":
            frame = frame.collect()
        self.con.register(name, frame)

    def drop_frame(self, name: str) -> None:
        self.con.unregister(name)

    def keyed_hash(self, salt: int, exprs: list[str]) -> str:
        """DuckDB's 64-bit ``hash`` of the salt and the values (about 3x cheaper than md5 of texts)."""
        return f"hash({int(salt)}, {', '.join(exprs)})"

    def row_ids(self, s, relation: str) -> tuple[str, str]:
        """DuckDB's ``rowid`` of a base table (no copy), else a numbered copy of the source."""
        kind = self.fetch_rows("SELECT table_type FROM information_schema.tables WHERE table_name = ?", [relation])[1]
        if kind and kind[0][0] in ("BASE TABLE", "LOCAL TEMPORARY") and "_adb_rid" not in dict(self.columns(relation)):
            return relation, "rowid"
        return super().row_ids(s, relation)

    def per_group(self, s, relation: str, key: str, sql: str, schema: str) -> str:
        """Every group of ``relation`` by ``key`` through :func:`~anonydb.engines.grouped.group_step`
        in a pool of this DuckDB's ``threads`` Python threads, each group in an embedded
        single-threaded DuckDB with its share of half the memory limit (this connection keeps the
        other half while they run) and a copy of the side tables
        ``sql`` names. A group's rows are read as Arrow (``relation`` is sorted by ``key``, so the
        zone maps skip the other groups' row groups) and its result inserted, both under a lock:
        this connection runs one statement at a time, the embedded ones run in parallel (DuckDB
        releases the GIL while it executes)."""
        import threading
        from concurrent.futures import ThreadPoolExecutor

        from .grouped import group_step, side_names

        cur = self.con
        ours = {n.lower(): n for (n,) in cur.execute("SELECT table_name FROM duckdb_tables() WHERE temporary")
                .fetchall()}
        side = {ours[n.lower()]: _arrow(cur.sql(f"SELECT * FROM {ident(ours[n.lower()])}"))
                for n in side_names(sql, relation) if n.lower() in ours}
        threads, limit = cur.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchone()
        threads = max(1, int(threads))
        half = _bytes(limit) // 2  # the pool's half of the memory limit, shared by its threads; this one keeps the other
        run, _ = group_step(relation, sql, side, f"{max(64, half // threads // 2**20)}MiB" if half else None)
        groups = [g for (g,) in cur.execute(f"SELECT DISTINCT {ident(key)} FROM {ident(relation)} ORDER BY 1").fetchall()]
        out = s.table(f"SELECT * FROM (SELECT {', '.join(f'CAST(NULL AS {t}) AS {c}' for c, t in _pairs(schema))}) "
                      f"AS t LIMIT 0")
        lock = threading.Lock()
        where = f"SELECT * FROM {ident(relation)} WHERE {ident(key)} = "

        def finish(g: Any) -> None:
            with lock:
                rows = _arrow(cur.sql(where + literal(g)))
            done = run(rows)
            with lock:
                cur.register("_adb_done", done)
                try:
                    cur.execute(f"INSERT INTO {ident(out)} SELECT * FROM _adb_done")
                finally:
                    cur.unregister("_adb_done")

        if half:
            cur.execute(f"SET memory_limit = '{max(64, half // 2**20)}MiB'")
        try:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                for f in [pool.submit(finish, g) for g in groups]:
                    f.result()
        finally:
            if half:
                cur.execute(f"SET memory_limit = '{limit}'")
        return out

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


def _arrow(result: Any) -> Any:
    """A result as an Arrow table (DuckDB 2 names it ``to_arrow_table``, 1.x ``fetch_arrow_table``)."""
    return result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()


def _pairs(schema: str) -> list[tuple[str, str]]:
    """("name TYPE, ...") as [(name, type)]."""
    return [tuple(p.strip().split(None, 1)) for p in schema.split(",")]  # type: ignore[misc]


def _bytes(limit: str) -> int:
    """DuckDB's memory limit as it reports it (``'4.0 GiB'``) in bytes; 0 when it cannot be read."""
    units = {"bytes": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3, "mb": 10**6,
             "gb": 10**9, "tb": 10**12}
    try:
        num, unit = limit.split()
        return int(float(num) * units[unit.lower()])
    except (ValueError, KeyError):
        return 0


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
