"""Risk on a real PostgreSQL server: the same estimates as on DuckDB (tests/risk_engines.py)."""

from __future__ import annotations

import pytest

from risk_engines import people, same_risk
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")


def test_every_estimate_same(duck, pg):
    tables = people(duck)
    for t in tables:
        copy_to_pg(duck, pg, t)
    same_risk(duck, pg, tables)
