"""The survey models of issue 50 (pd-/npd-recursive l, confidence bounding, (X,Y)-privacy, (k,e),
(epsilon,m), multiple-QID k) on PostgreSQL: the same reports as on DuckDB, by rows and by persons."""

from __future__ import annotations

import pytest

import anonydb
from conftest import same_values
from person_engines import visits
from test_beta_likeness_postgres import same_beta
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

CASES = [dict(l=2, l_variant="pd-recursive", c=2, allowed=["1"]),
         dict(l=2, l_variant="npd-recursive", c=3, allowed=["1"], protected=["2"], c2=0.2),
         dict(l=2, l_variant="npd-recursive", c=3, allowed=["1"], protected=["4", "2"], c2=0),
         dict(conf_bound={"1": 0.5, "*": 0.6}), dict(xy_k=2, conf_bound={"2": 0.5}),
         dict(ke=(2, 1)), dict(epsilon_m=(1, 1.5))]


def same_models(duck, other, table, norm=lambda d: d):
    same_beta(duck, other, table, norm, cases=CASES + [dict(p, person="pid") for p in CASES]
              + [dict(multi_k=2, qid_sets="age;sex")])


def tenths(duck, name: str) -> str:
    """The visits with fractional sensitive values a multiple of 0.4 apart, DECIMAL and DOUBLE: a
    range or distance of exactly e or epsilon, which DOUBLE arithmetic misjudges."""
    duck.execute(f"CREATE OR REPLACE TABLE {name}_x AS SELECT pid, age, sex, CAST(2 + 0.4 * dx AS DECIMAL(4, 1)) AS x, "
                 f"CAST(2 + 0.4 * dx AS DOUBLE) AS xd FROM {name}")
    return f"{name}_x"


def same_tenths(duck, other, table, norm=lambda d: d):
    """(k,e) and (epsilon,m) on the fractional values: the same exact verdicts and values."""
    for sa in ("x", "xd"):
        for params in (dict(ke=(2, 0.4)), dict(ke=(2, 0.8), person="pid"), dict(epsilon_m=(0.4, 1.5)),
                       dict(epsilon_m=(0.8, 1.2), person="pid")):
            d = anonydb.check(table, ["age", "sex"], sa, engine=duck, max_groups=5, **params)
            o = anonydb.check(table, ["age", "sex"], sa, engine=other, max_groups=5, **params)
            assert same_values(norm(o.to_dict()), norm(d.to_dict())), (sa, params)
            assert o.verdicts[0].achieved == d.verdicts[0].achieved, (sa, params)


def test_same_on_postgres(duck, pg):
    name = visits(duck, "survey_visits")
    copy_to_pg(duck, pg, name)
    same_models(duck, pg, name)
    copy_to_pg(duck, pg, tenths(duck, name))
    same_tenths(duck, pg, f"{name}_x")
