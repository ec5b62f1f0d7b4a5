"""sdcMicro's individual, global and household risk (anonydb.risk.individual) on a real PostgreSQL
server: the same figures as on DuckDB (tests/test_risk_individual.py checks DuckDB's against the
oracle)."""

from __future__ import annotations

import pytest

from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)
from test_risk_individual import CASES, parity_table, same_figures

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture(scope="module")
def table(duck, pg):
    name = parity_table(duck, "ir_pg")
    copy_to_pg(duck, pg, name)
    return name


@pytest.mark.parametrize("kw", CASES)
def test_same_figures(duck, pg, table, kw):
    same_figures(duck, pg, table, kw)
