"""Risk on a real local Spark session: the same estimates as on DuckDB (tests/risk_engines.py)."""

from __future__ import annotations

import pytest

from conftest import spark_view
from risk_engines import people, same_risk
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def test_every_estimate_same(duck, sp, spark):
    tables = people(duck, "rk_people_s")
    for t in tables:
        spark_view(duck, spark, t)
    same_risk(duck, sp, tables)
