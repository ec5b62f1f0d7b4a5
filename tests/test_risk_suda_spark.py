"""SUDA2 on a local Spark session: the same summary, scores and MSUs as on DuckDB."""

from __future__ import annotations

import pytest

from conftest import spark_view
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)
from test_risk_suda import parity_table, same_as_duckdb

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def test_same_as_duckdb(duck, sp, spark):  # noqa: F811
    """Records, subsets of one key (each size costs Spark a few jobs; every size: the slow test)."""
    spark_view(duck, spark, parity_table(duck, "suda_sp"))
    same_as_duckdb(duck, sp, "suda_sp", persons=(None,), max_size=1)


@pytest.mark.slow
def test_same_as_duckdb_every_size(duck, sp, spark):  # noqa: F811
    spark_view(duck, spark, parity_table(duck, "suda_sp"))
    same_as_duckdb(duck, sp, "suda_sp")
