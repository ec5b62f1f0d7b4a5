"""Personalized privacy on PostgreSQL: the same reports as on DuckDB (by rows with leaf and inner
guarding nodes, by persons), and a Mondrian release that carries the guard through its
verification and drops it, with DuckDB's classes."""

from __future__ import annotations

import pytest

import anonydb
from anonydb.hierarchy import Hierarchy
from anonydb.methods import anonymize
from conftest import same_values
from person_engines import classes, visits
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

#: the visits' diagnosis codes 1-4 under two inner nodes
DX = Hierarchy.from_rows([("1", "low", "*"), ("2", "low", "*"), ("3", "high", "*"), ("4", "high", "*")])
CASES = [dict(guard="gl", breach=0.6), dict(guard="g", breach=0.6, hierarchies={"dx": DX}),
         dict(guard="g", breach=0.7, person="pid", hierarchies={"dx": DX})]


def guarded(duck, name: str) -> str:
    """The visits with each person's guarding node: g a diagnosis code, an inner node or none, gl
    a code or none."""
    duck.execute(f"CREATE OR REPLACE TABLE {name}_g AS SELECT pid, age, sex, dx, CASE hash(pid) % 4 "
                 f"WHEN 0 THEN CAST(hash(pid) % 3 + 1 AS VARCHAR) WHEN 1 THEN 'low' WHEN 2 THEN 'high' END AS g, "
                 f"CASE WHEN hash(pid) % 2 = 0 THEN CAST(hash(pid) % 4 + 1 AS VARCHAR) END AS gl FROM {name}")
    return f"{name}_g"


def same_personalized(duck, other, table, norm=lambda d: d, release=True):
    """The CASES' reports equal DuckDB's; ``release``: and Mondrian's classes, without the guard."""
    for params in CASES:
        d = anonydb.check(table, ["age", "sex"], "dx", engine=duck, max_groups=5, **params)
        o = anonydb.check(table, ["age", "sex"], "dx", engine=other, max_groups=5, **params)
        assert same_values(norm(o.to_dict()), norm(d.to_dict())), params
    if not release:
        return
    kw = dict(qi=["age", "sex"], sensitive="dx", replace=True, seed=7, k=3, guard="g", breach=1,
              hierarchies={"dx": DX})
    d = anonymize(table, out="pp_mon", engine=duck, **kw)
    o = anonymize(table, out="pp_mon", engine=other, **kw)
    assert not {"g", "gl"} & {c for c, _ in other.columns("pp_mon")}
    assert classes(other, "pp_mon") == classes(duck, "pp_mon") and o.rows == d.rows


def test_same_on_postgres(duck, pg):
    name = guarded(duck, visits(duck, "pers_visits"))
    copy_to_pg(duck, pg, name)
    same_personalized(duck, pg, name)
