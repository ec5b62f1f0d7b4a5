"""The survey models of issue 50 on a local Spark session: the same reports as on DuckDB (by rows
and by persons)."""

from __future__ import annotations

import pytest

from conftest import spark_view
from person_engines import visits
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)
from test_survey_models_postgres import same_models, same_tenths, tenths

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def _source(d):
    d.pop("source", None)
    return d


@pytest.mark.slow  # a parity matrix over every model and variant: the slow tier (.ci/run) runs it
def test_same_on_spark(duck, sp, spark):
    name = visits(duck, "survey_visits_s")
    spark_view(duck, spark, name)
    same_models(duck, sp, name, norm=_source)
    spark_view(duck, spark, tenths(duck, name))
    same_tenths(duck, sp, f"{name}_x", norm=_source)
