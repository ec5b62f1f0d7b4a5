"""The release ledger on a local Spark session: the tracked series of tests/test_ledger_postgres.py
gives the same verdicts, the same ledger (kept in Spark's catalog) and the same fingerprints as on
DuckDB, and ``ledger.drop`` removes an entry from tables that take no DELETE [issue 51]."""

from __future__ import annotations

import pytest

from conftest import spark_view
from test_ledger_postgres import SRC, dropped, same_md5_order, same_series
from test_spark_methods import sp  # noqa: F401  (fixtures)

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


@pytest.mark.slow  # about 3 minutes on local[2]: a few hundred Spark jobs for 180 rows
def test_series_same_on_spark(sp, spark, tmp_path):
    same_series(sp, lambda ref: spark_view(ref, spark, SRC), tmp_path)
    dropped(sp)


def test_md5_order_same_on_spark(sp, spark):
    same_md5_order(sp, lambda ref, t: spark_view(ref, spark, t))


def test_delete_from_catalog_tables(sp, spark):
    """DELETE on Spark's own file tables (which refuse it), in the current schema and in another
    (the ledger's, ``--ledger-schema``): the rows whose condition is not true are kept, in place."""
    spark.sql("CREATE DATABASE IF NOT EXISTS lg_schema")
    for schema in (None, "lg_schema"):
        name = f"{schema}.lg_del" if schema else "lg_del"
        spark.range(10).selectExpr("id AS i", "IF(id = 4, NULL, CAST(id AS STRING)) AS v") \
            .write.mode("overwrite").saveAsTable(name)
        quoted = ".".join(f'"{p}"' for p in name.split("."))
        sp.execute(f"DELETE FROM {quoted} WHERE i % 3 = 0 OR v = '5'")  # v NULL: not true, kept
        assert sorted(r[0] for r in spark.table(name).collect()) == [1, 2, 4, 7, 8]
        assert not spark.catalog.tableExists(f"{name}_adb_del")
        assert [t.name for t in spark.catalog.listTables(schema or "default") if t.name == "lg_del"] == ["lg_del"]
