"""Spark backend (work in progress, issue 26): the :class:`~anonydb.engines.base.Engine` interface
over a ``pyspark.sql.SparkSession``.

The rest of anonydb generates DuckDB-dialect SQL (``sql/*.sql.j2`` rendered with ``dialect =
"spark"``). This engine parses each statement as DuckDB SQL, rewrites what Spark reads
differently (below), writes it out as Spark SQL with sqlglot and runs it with ``spark.sql``.
Nothing is collected to the driver but the results a caller fetches (verdicts, statistics).

Every way Spark differs from DuckDB for anonydb is in this file:

=====================================  ==========================================================
DuckDB                                 on Spark
=====================================  ==========================================================
CREATE TEMP TABLE t AS q               q, locally checkpointed (computed once, lineage cut), as
                                       the session's temporary view t
CREATE TABLE t AS q                    q saved as the catalog table t (``saveAsTable``)
DROP TABLE t (a scratch table)         the temporary view dropped (``dropTempView``)
ALTER TABLE t RENAME COLUMN a TO b     t's view re-registered with the column renamed (views
                                       take no ALTER)
OVER (w ROWS BETWEEN ...)              the named window w inlined (Spark cannot add a frame to
                                       a named window)
row_number() OVER ()                   row_number() OVER (ORDER BY 1) (Spark wants an order)
WITH x AS MATERIALIZED (...)           the hint dropped (Spark's CTEs take none)
=====================================  ==========================================================

What runs so far: every privacy-model check (tests/test_spark.py compares each report with
DuckDB's, on the column-keyed and the integer-keyed plans). The methods, releases and the CLI on
Spark come with the rest of issue 26; until then the engine is made directly,
``SparkEngine(spark)``, and :func:`anonydb.connect` does not hand it out.

    >>> from anonydb.engines.spark import SparkEngine          # doctest: +SKIP
    >>> eng = SparkEngine(spark)                                # doctest: +SKIP
    >>> anonydb.check("people", ["age", "zip"], "disease", engine=eng, k=5, l=3)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Sequence

import sqlglot
from sqlglot import exp

from .base import Engine
from ..errors import InputError

#: Spark's simple type names -> DuckDB's (DESCRIBE), which the rest of anonydb reads
TYPE_NAMES = {"int": "INTEGER", "bigint": "BIGINT", "smallint": "SMALLINT", "tinyint": "TINYINT",
              "string": "VARCHAR", "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE",
              "timestamp": "TIMESTAMP", "binary": "BLOB"}


def duckdb_type_name(spark_type: str) -> str:
    """DuckDB's name for a Spark type (``decimal(38,0)`` -> ``DECIMAL(38,0)``)."""
    return TYPE_NAMES.get(spark_type, spark_type.upper())


def _q(name: str) -> str:
    """A name quoted for Spark's catalog calls."""
    return "`" + name.replace("`", "``") + "`"


def _inline_windows(tree: exp.Expression) -> exp.Expression:
    """Every ``OVER w`` / ``OVER (w ROWS ...)`` of a SELECT with ``WINDOW w AS (...)`` takes w's
    partition and order in place: Spark cannot extend a named window with a frame."""
    for sel in list(tree.find_all(exp.Select)):
        named = {w.this.name: w for w in (sel.args.get("windows") or [])}
        if not named:
            continue
        for w in list(sel.find_all(exp.Window)):
            ref = w.args.get("alias")
            if ref is not None and w.args.get("over") and ref.name in named:
                d = named[ref.name]
                w.set("alias", None)
                w.set("partition_by", [p.copy() for p in d.args.get("partition_by") or []])
                if d.args.get("order") is not None:
                    w.set("order", d.args["order"].copy())
        sel.set("windows", None)
    return tree


def _ordered_row_numbers(tree: exp.Expression) -> exp.Expression:
    """``row_number() OVER ()`` -> ``row_number() OVER (ORDER BY 1)``: Spark requires an order (the
    numbering is then Spark's scan order, as DuckDB's is its own)."""
    for w in tree.find_all(exp.Window):
        if isinstance(w.this, exp.RowNumber) and w.args.get("order") is None and not w.args.get("alias"):
            w.set("order", exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(1))]))
    return tree


def to_spark(tree: exp.Expression) -> str:
    """One DuckDB statement tree as Spark SQL."""
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    return _ordered_row_numbers(_inline_windows(tree)).sql(dialect="spark")


class SparkEngine(Engine):
    """A ``pyspark.sql.SparkSession`` (local or a cluster's)."""

    dialect = "spark"

    def __init__(self, spark: Any):
        super().__init__()
        self.spark = spark

    def _temp_views(self) -> set[str]:
        return {t.name for t in self.spark.catalog.listTables() if t.isTemporary}

    def _execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        if params:
            raise InputError("the Spark engine takes no statement parameters")
        for tree in sqlglot.parse(sql, read="duckdb"):
            if tree is None:
                continue
            if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE" \
                    and tree.expression is not None:
                self._create_table(tree)
            elif isinstance(tree, exp.Alter) and tree.args.get("actions") \
                    and all(isinstance(a, exp.RenameColumn) for a in tree.args["actions"]):
                name = tree.this.name
                df = self.spark.table(_q(name))
                for a in tree.args["actions"]:
                    df = df.withColumnRenamed(a.this.name, a.args["to"].name)
                df.createOrReplaceTempView(name)
            elif isinstance(tree, exp.Drop) and tree.this is not None and tree.this.name in self._temp_views():
                self.spark.catalog.dropTempView(tree.this.name)
            else:
                self.spark.sql(to_spark(tree))

    def _create_table(self, tree: exp.Create) -> None:
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        name = target.name
        props = tree.args.get("properties")
        temp = props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)
        replace = bool(tree.args.get("replace"))
        df = self.spark.sql(to_spark(tree.expression))
        if temp:
            if not replace and name in self._temp_views():
                raise InputError(f"a temporary table named {name!r} exists")
            df.localCheckpoint().createOrReplaceTempView(name)
        else:
            df.write.mode("overwrite" if replace else "errorifexists").saveAsTable(_q(name))

    def _fetch(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        if params:
            raise InputError("the Spark engine takes no statement parameters")
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
        df = self.spark.sql(to_spark(trees[-1]))
        return list(df.columns), [tuple(r) for r in df.collect()]

    def columns(self, relation: str) -> list[tuple[str, str]]:
        if not self.exists(relation):
            raise InputError(f"no table or view named {relation!r} in the Spark session")
        return [(n, duckdb_type_name(t)) for n, t in self.spark.table(_q(relation)).dtypes]

    def exists(self, name: str) -> bool:
        return any(t.name == name for t in self.spark.catalog.listTables())

    def relations(self, names=(), prefix: str | None = None) -> dict[str, str]:
        wanted = set(names)
        return {t.name: "VIEW" if t.isTemporary or t.tableType == "VIEW" else "BASE TABLE"
                for t in self.spark.catalog.listTables()
                if t.name in wanted or (prefix is not None and t.name.startswith(prefix))}
