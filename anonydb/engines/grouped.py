"""The grouped step that finishes Mondrian's fragments: one group's rows in, an embedded DuckDB runs
the step's SQL over them, its rows out. Spark ships it to its executors (``applyInArrow``); DuckDB
runs it in a pool of threads, at most its ``threads`` at once (``DuckDBEngine.per_group``). One
definition for both, so a fragment is finished by the same statement wherever it runs."""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp


def side_names(sql: str, relation: str) -> set[str]:
    """The relations ``sql`` reads besides ``relation``: the small side tables (a distribution,
    hierarchy codes, a model's prepared counts) each worker gets a copy of."""
    names = {t.name for t in sqlglot.parse_one(sql, read="duckdb").find_all(exp.Table)}
    return {n for n in names if n.lower() != relation.lower()}


def group_step(relation: str, sql: str, side: dict[str, Any], memory_limit: str | None = None) -> tuple[Any, Any]:
    """The functions a grouped step ships to the executors (Arrow, and pandas for pyspark 3.5): a
    group's rows in, ``sql``'s result out, run by an embedded DuckDB. Both are closures over plain
    data that import only DuckDB and pyarrow, so Spark's cloudpickle sends their code by value: a
    cluster's executors need no anonydb (``tests/test_spark_cluster.py`` runs them where it cannot
    be imported)."""
    import pyarrow as pa

    def run(rows: pa.Table) -> pa.Table:  # Spark 4 reads the kind of step from the hints
        import duckdb

        con = duckdb.connect()
        try:
            con.execute("SET threads = 1")  # the worker's task slot is one core
            if memory_limit:
                con.execute(f"SET memory_limit = '{memory_limit}'")
            con.register(relation, rows)
            for name, table in side.items():
                con.register(name, table)
            rel = con.sql(sql)
            return rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()  # DuckDB 2 / 1
        finally:
            con.close()

    def run_pandas(rows: Any) -> Any:
        return run(pa.Table.from_pandas(rows, preserve_index=False)).to_pandas()

    return run, run_pandas
