"""sdcMicro's individual, global and household risk (anonydb.risk.individual) on a local Spark
session: the same figures as on DuckDB (tests/test_risk_individual.py checks DuckDB's against the
oracle)."""

from __future__ import annotations

import pytest

from conftest import spark_view
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)
from test_risk_individual import CASES, parity_table, same_figures

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def test_same_figures(duck, sp, spark):
    name = parity_table(duck, "ir_spark")
    spark_view(duck, spark, name)
    for kw in CASES[2:4]:  # one test, the two richest calls: Spark's statements are slow to start
        same_figures(duck, sp, name, kw)
