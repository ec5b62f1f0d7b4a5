"""Record owners on a real local Spark session: the same reports and releases as on DuckDB
(tests/person_engines.py). test_person_steps_on_workers also runs on a standalone cluster whose
executors cannot import anonydb (tests/test_spark_cluster.py)."""

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


@pytest.mark.slow
@pytest.mark.parametrize("fragment_rows", [4_000_000, 40], ids=["one-fragment", "rounds-then-fragments"])
def test_person_steps_on_workers(duck, sp, spark, table, fragment_rows, monkeypatch):
    """Mondrian by persons (k, and k with l), with varying QIs, and linked tables (a person table and
    its event tables), each finished by Mondrian's grouped step on the workers (Spark's executors)
    from the root, or after whole-table rounds cut it to partitions of at most 40: DuckDB's
    classes, and the step ran for each of the three."""
    calls: list[str] = []
    step = type(sp).per_group

    def counted(self, *args, **kwargs):
        calls.append(args[1])
        return step(self, *args, **kwargs)

    monkeypatch.setattr(sp, "fragment_rows", fragment_rows)
    monkeypatch.setattr(type(sp), "per_group", counted)
    same_releases(duck, sp, table, mondrian=[dict(k=3), dict(k=2, l=2)], others=False)
    assert len(calls) >= 2, calls
    done = len(calls)
    same_varying(duck, sp, table)
    assert len(calls) > done, "the varying-QI release took no grouped step"
    done = len(calls)
    t = linked_tables(duck, f"pw{fragment_rows}")  # the module's DuckDB keeps the other run's tables
    for name in t.values():
        spark_view(duck, spark, name)
    same_linked(duck, sp, t)
    assert len(calls) > done, "the linked release took no grouped step"
