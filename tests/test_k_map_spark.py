"""k-map on a local Spark session: the same reports as on DuckDB (tests/test_k_map_postgres.py's
Spark cases; the releases' searches run the statements PostgreSQL's test covers)."""

from __future__ import annotations

import pytest

from conftest import spark_view
from test_k_map_postgres import SPARK_CASES, km_tables, same_k_map
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def _source(d):
    d.pop("source", None)
    return d


@pytest.mark.slow  # a parity matrix over every model and variant: the slow tier (.ci/run) runs it
def test_same_on_spark(duck, sp, spark):
    km_tables(duck, lambda t: spark_view(duck, spark, t))
    same_k_map(duck, sp, norm=_source, cases=SPARK_CASES, releases=())
