"""beta-likeness on PostgreSQL: the same reports as on DuckDB (by rows and by persons)."""

from __future__ import annotations

import pytest

import anonydb
from conftest import same_values
from person_engines import visits
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

CASES = [dict(beta=2), dict(beta=0.5, beta_variant="enhanced"), dict(beta=3, person="pid"),
         dict(beta=1, beta_variant="enhanced", person="pid")]


def same_beta(duck, other, table, norm=lambda d: d, cases=CASES):
    """Each case's report on ``other`` equals DuckDB's (also the survey models' cases)."""
    for params in cases:
        d = anonydb.check(table, ["age", "sex"], "dx", engine=duck, max_groups=5, **params)
        o = anonydb.check(table, ["age", "sex"], "dx", engine=other, max_groups=5, **params)
        assert same_values(norm(o.to_dict()), norm(d.to_dict())), params


def test_same_on_postgres(duck, pg):
    name = visits(duck, "beta_visits")
    copy_to_pg(duck, pg, name)
    same_beta(duck, pg, name)
