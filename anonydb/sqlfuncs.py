"""Plain-SQL access inside DuckDB: ``anonydb.register(con)`` adds the vectorized UDFs
(``emd_equal``, ``emd_ordered``, ``emd_hierarchical``, ``hist_entropy``, ``l_entropy``,
``recursive_cl``) and the table macros ``anonydb_group_stats``, ``anonydb_k_anonymity``,
``anonydb_privacy``, ``anonydb_recursive_cl``, ``anonydb_t_closeness``, ``anonydb_class_sizes`` and
``anonydb_risk`` (prosecutor re-identification risk)."""

from __future__ import annotations

from typing import Any


from .engines.duckdb import DuckDBEngine
from .engines import connect
from .udfs import register as register_udfs
from .udfs import unregister as unregister_udfs

MACROS = ("anonydb_group_stats", "anonydb_k_anonymity", "anonydb_privacy", "anonydb_recursive_cl",
          "anonydb_t_closeness", "anonydb_class_sizes", "anonydb_risk")


def register(con: Any) -> Any:
    """Register the UDFs and table macros on a DuckDB connection (or engine); returns it."""
    eng = connect(con)
    if not isinstance(eng, DuckDBEngine):
        raise TypeError("register() needs a DuckDB connection: the UDFs and macros are DuckDB-specific")
    register_udfs(eng.con)
    script = eng.render("register_macros.sql.j2").sql
    for stmt in _split(script):
        eng.execute(stmt)
    return con


def unregister(con: Any) -> None:
    """Remove the UDFs (a CLI must, before it exits) and the macros."""
    eng = connect(con)
    unregister_udfs(eng.con)  # type: ignore[attr-defined]
    for name in MACROS:
        eng.execute(f"DROP MACRO TABLE IF EXISTS {name}")


def _split(script: str) -> list[str]:
    # statements are separated by ';' at line ends; templates hold no ';' inside literals
    parts = [p.strip() for p in script.split(";\n")]
    return [p.rstrip(";") for p in parts if p]


