"""k-map on PostgreSQL: the same reports as on DuckDB (by rows and by persons, beside
delta-presence) and the same releases (full-domain and Mondrian with kept columns)."""

from __future__ import annotations

import random

import pytest

from anonydb import generalize
from anonydb.methods.presence import presence_anonymize
from anonydb.presence import check_presence
from conftest import make_table, same_values
from test_k_map import HS
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

#: (release, check parameters)
CASES = [("km_rel_persons", dict(k_map=3)), ("km_rel_persons", dict(k_map=5, delta=(0, "1/2"))),
         ("km_rel_visits", dict(k_map=4, person="pid")), ("km_rel_fine", dict(k_map=2)),
         ("km_rel_mondrian", dict(k_map=4))]
#: Spark runs a statement in ~0.1 s: two checks cover by persons, delta beside k-map and a Mondrian
#: release's labels at several hierarchy levels
SPARK_CASES = [("km_rel_visits", dict(k_map=4, delta=(0, "1/2"), person="pid")), ("km_rel_mondrian", dict(k_map=4))]
#: presence_anonymize parameters
RELEASES = [dict(method="fulldomain", k_map=5, keep=["dx"]), dict(method="mondrian", k_map=3, keep=["dx"])]


def km_tables(duck, copy) -> None:
    """P: 60 persons (pid, x, c); T: every third, with 1-3 visit records and a diagnosis; releases of T
    at two full-domain nodes, by persons and by visits, and DuckDB's Mondrian release (its labels of
    c at several hierarchy levels); ``copy`` puts each table on the other engine."""
    rng = random.Random(11)
    public = [(f"p{i}", rng.randint(0, 7), rng.choice("abcd")) for i in range(60)]
    research = [p + (v, rng.choice(["flu", "hiv", None])) for i, p in enumerate(public) if i % 3 == 0
                for v in range(rng.randint(1, 3))]
    make_table(duck, "km_pub", ["pid", "x", "c"], public)
    make_table(duck, "km_visits", ["pid", "x", "c", "visit", "dx"], research)
    duck.execute("CREATE TABLE km_priv AS SELECT pid, x, c, dx FROM km_visits WHERE visit = 0")
    generalize(duck, "km_visits", {"x": 2, "c": 1}, HS, out="km_rel_visits")
    generalize(duck, "km_priv", {"x": 2, "c": 1}, HS, out="km_rel_persons")
    generalize(duck, "km_priv", {"x": 1, "c": 0}, HS, out="km_rel_fine")
    presence_anonymize("km_priv", "km_pub", ["x", "c"], k_map=3, out="km_rel_mondrian", engine=duck, hierarchies=HS,
                       key="pid", method="mondrian", seed=2)
    for t in ("km_pub", "km_priv", "km_rel_visits", "km_rel_persons", "km_rel_fine", "km_rel_mondrian"):
        copy(t)


def unnumbered(report: dict) -> dict:
    """A report without its classes' numbers (each engine numbers the classes in its own order), the
    violating classes in the order of their labels."""
    for v in report["verdicts"]:
        for g in v["violations"]:
            g["key"].pop("class")
        v["violations"].sort(key=lambda g: str(g["key"]))
    return report


def same_k_map(duck, other, norm=lambda d: d, cases=CASES, releases=RELEASES):
    for rel, params in cases:
        d = check_presence(rel, "km_pub", ["x", "c"], engine=duck, hierarchies=HS, max_groups=5, **params)
        o = check_presence(rel, "km_pub", ["x", "c"], engine=other, hierarchies=HS, max_groups=5, **params)
        assert same_values(norm(unnumbered(o.to_dict())), norm(unnumbered(d.to_dict()))), (rel, params)
        assert o.public_outside == d.public_outside, (rel, params)
    for params in releases:
        runs = [presence_anonymize("km_priv", "km_pub", ["x", "c"], out="km_out", engine=e, hierarchies=HS, key="pid",
                                   replace=True, seed=2, **params) for e in (duck, other)]
        assert (runs[1].levels, runs[1].k_map, runs[1].classes) == (runs[0].levels, runs[0].k_map, runs[0].classes)
        got = [sorted(e.fetch_rows("SELECT CAST(x AS VARCHAR), c, dx FROM km_out")[1], key=str) for e in (duck, other)]
        assert got[0] == got[1], params


def test_same_on_postgres(duck, pg):
    km_tables(duck, lambda t: copy_to_pg(duck, pg, t))
    same_k_map(duck, pg)
