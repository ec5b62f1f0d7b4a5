"""SUDA2 on a real PostgreSQL server: the same summary, scores and MSUs as on DuckDB."""

from __future__ import annotations

import pytest

from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)
from test_risk_suda import parity_table, same_as_duckdb

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")


def test_same_as_duckdb(duck, pg):  # noqa: F811
    copy_to_pg(duck, pg, parity_table(duck, "suda_pg"))
    same_as_duckdb(duck, pg, "suda_pg")
