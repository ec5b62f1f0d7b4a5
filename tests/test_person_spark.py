"""Record owners on a real local Spark session: the same reports and releases as on DuckDB
(tests/person_engines.py)."""

from __future__ import annotations

import pytest

from conftest import spark_view
from test_spark_methods import duck, sp  # noqa: F401  (fixtures)
from person_engines import CHECKS, linked_tables, same_check, same_linked, same_releases, same_varying, visits

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="module")
def table(duck, spark):
    name = visits(duck, "pv_visits_s")
    for t in (name, f"{name}_t"):
        spark_view(duck, spark, t)
    return name


def _source(d):
    d.pop("source", None)
    return d


def test_check_by_persons_same(duck, sp, table):
    same_check(duck, sp, table, norm=_source, checks=CHECKS[:1])


@pytest.mark.slow
def test_mondrian_by_persons_same(duck, sp, table):
    same_releases(duck, sp, table, mondrian=[dict(k=3)], others=False)


@pytest.mark.slow
def test_every_check_by_persons_same(duck, sp, table):
    same_check(duck, sp, table, norm=_source, checks=CHECKS[1:])


@pytest.mark.slow
def test_releases_by_persons_same(duck, sp, table):
    same_releases(duck, sp, table, mondrian=())  # Mondrian's by-persons classes: the fast test above


@pytest.mark.slow
def test_varying_qis_same(duck, sp, table):
    same_varying(duck, sp, table)


@pytest.mark.slow
def test_linked_tables_same(duck, sp, spark):
    t = linked_tables(duck, "ps")
    for name in t.values():
        spark_view(duck, spark, name)
    same_linked(duck, sp, t)
