"""delta-presence by persons on a real PostgreSQL server: the same reports as on DuckDB, and the
oracle's (tests/test_person_presence.py)."""

from __future__ import annotations

import random
from fractions import Fraction as F

import pytest

from anonydb.presence import check_confident, check_presence, population_marginals
from conftest import make_table
from test_person_presence import B_VALUES, confident_oracle, groups, label_key, oracle, release_rows
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

MODES = {
    "exact": (("exact",), ("exact",)),
    "range_sets": (("range", 3), ("sets", (("x", "y"), ("z",)))),
    "star": (("star",), ("sets", (("x",), ("y", "z")))),
}
DELTA = (F(1, 4), F(2, 3))


@pytest.fixture(scope="module")
def tables(duck, pg):
    rng = random.Random(48)
    public = [(f"p{i}", rng.randint(0, 8), rng.choice(B_VALUES)) for i in range(120)]
    chosen = rng.sample(range(len(public)), 50)
    research = [public[i] + (v,) for i in sorted(chosen) for v in range(rng.randint(1, 4))]
    make_table(duck, "ppp_pub", ["pid", "a", "b"], public)
    make_table(duck, "ppp_priv", ["pid", "a", "b", "visit"], research)
    copy_to_pg(duck, pg, "ppp_pub")
    copy_to_pg(duck, pg, "ppp_priv")
    for name, modes in MODES.items():
        cols, rows = release_rows(research, modes)
        make_table(duck, f"ppp_{name}", cols, rows)
        copy_to_pg(duck, pg, f"ppp_{name}")
    return public, research


@pytest.mark.parametrize("name", sorted(MODES))
def test_presence_by_persons_same(duck, pg, tables, name):
    public, research = tables
    want = oracle(public, research, MODES[name], *DELTA)
    reports = [check_presence(f"ppp_{name}", "ppp_pub", ["a", "b"], delta=DELTA, engine=e, person="pid")
               for e in (duck, pg)]
    for r in reports:
        v = r.verdicts[0]
        assert (v.achieved["delta_min"], v.achieved["delta_max"]) == want["achieved"]
        assert (v.holds, v.groups, v.violating_groups, v.violating_rows) == \
            (want["holds"], want["groups"], want["violating_groups"], want["outside"])
        assert (r.person, r.persons, r.public_outside) == ("pid", want["persons"], want["outside"])
    assert groups(reports[0].verdicts[0]) == groups(reports[1].verdicts[0])
    assert reports[0].verdicts[0].note == reports[1].verdicts[0].note


@pytest.mark.parametrize("name", ["exact", "star"])  # range QIs: TRY_CAST, DuckDB only
def test_confident_by_persons_same(duck, pg, tables, name):
    public, research = tables
    want = confident_oracle(public, research, MODES[name])
    got = []
    for e in (duck, pg):
        marg = population_marginals(e, "ppp_pub", ["a", "b"], prefix="ppp_marg")
        r = check_confident(f"ppp_{name}", qi=["a", "b"], delta=DELTA, c="1/2", marginals=marg, engine=e,
                            private="ppp_priv", person="pid", exact=True, max_classes=100)
        assert (r.rows, r.U, r.records) == (want["persons"], want["U"], len(research))
        assert {label_key(w["class"]["a"], w["class"]["b"]): (w["n1"], w["f"]) for w in r.worst} == \
            want["signatures"]
        got.append((r.holds, r.confidence, r.classes, r.violating))
    assert got[0] == got[1]
