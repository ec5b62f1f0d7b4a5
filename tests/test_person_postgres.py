"""Record owners on a real PostgreSQL server: the same reports and releases as on DuckDB
(tests/person_engines.py)."""

from __future__ import annotations

import pytest

from person_engines import linked_tables, same_check, same_linked, same_releases, same_varying, visits
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture(scope="module")
def table(duck, pg):
    name = visits(duck)
    for t in (name, f"{name}_t"):
        copy_to_pg(duck, pg, t)
    return name


def test_check_by_persons_same(duck, pg, table):
    same_check(duck, pg, table)


def test_releases_by_persons_same(duck, pg, table):
    same_releases(duck, pg, table)


def test_varying_qis_same(duck, pg, table):
    same_varying(duck, pg, table)


def test_linked_tables_same(duck, pg):
    t = linked_tables(duck)
    for name in t.values():
        copy_to_pg(duck, pg, name)
    same_linked(duck, pg, t)
