"""pd-/npd-recursive (c,l)-diversity [Machanavajjhala et al., TKDD 2007, Defs 4.2-4.3] beyond
tests/test_survey_models.py: the monotonicity the anonymizers prune with, the tie rule, the edges
of W and c2, and record owners, all against tests/survey_models_oracle.py."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb.errors import AnonyDBError, InputError
from anonydb.methods import anonymize
from anonydb.models import DisclosureRecursiveDiversity

import survey_models_oracle as oracle
from conftest import examples, make_table

SETTINGS = settings(max_examples=examples(25), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

VALUES = ["a", "b", "c", "d", None]
GROUP = st.lists(st.sampled_from(VALUES), min_size=1, max_size=9)
SUBSET = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3)
C = st.sampled_from([Fraction(1, 3), Fraction(1, 2), 1, Fraction(3, 2), 2, 3])
C2 = st.sampled_from([0, Fraction(1, 4), Fraction(1, 3), Fraction(1, 2), 1])


def _holds(values, l, c, allowed, protected=(), c2=None):
    return oracle.pd_recursive([(0, v) for v in values], 1, l, c, allowed, protected, c2)[0]


@settings(max_examples=examples(300), deadline=None)
@given(g1=GROUP, g2=GROUP, l=st.sampled_from([2, 3, 4]), c=C, allowed=SUBSET, protected=SUBSET, c2=C2)
def test_merging_two_groups_that_hold_keeps_the_model(g1, g2, l, c, allowed, protected, c2):
    """Monotone under merging (paper §4.3), so Mondrian's cuts and full-domain's lattice may prune
    with it: two groups that hold make a union that holds, for pd and npd."""
    for kw in ({}, dict(protected=protected, c2=c2)):
        if _holds(g1, l, c, allowed, **kw) and _holds(g2, l, c, allowed, **kw):
            assert _holds(g1 + g2, l, c, allowed, **kw), (g1, g2, kw)


def _literal(order, l, c, allowed):
    """Def 4.2 on one explicit descending order of (value, count)."""
    r = [None] + [n for _, n in order]
    ys = [i + 1 for i, (v, _) in enumerate(order) if v not in allowed]
    if not ys:
        return True
    y, m = ys[0], len(order)
    tail = (sum(r[l:m + 1]) if y <= l - 1 else sum(r[l - 1:y]) + sum(r[y + 1:m + 1]))
    return r[y] < c * tail


@settings(max_examples=examples(200), deadline=None)
@given(counts=st.lists(st.integers(1, 3), min_size=1, max_size=6), l=st.sampled_from([2, 3, 4]), c=C,
       outside=st.lists(st.booleans(), min_size=6, max_size=6))
def test_ties_do_not_change_the_verdict(counts, l, c, outside):
    """Every descending order of tied counts gives one verdict (at r_{l-1} = r_l the two cases'
    tails agree: n - r_1 - ... - r_{l-1} = n - r_1 - ... - r_{l-2} - r_y), so the SQL may rank a
    value outside Y first among equals and the oracle inside Y first."""
    values = [f"v{i}" for i in range(len(counts))]
    allowed = {v for v, out in zip(values, outside) if not out}
    verdicts = {_literal(order, l, c, allowed) for order in itertools.permutations(zip(values, counts))
                if all(a[1] >= b[1] for a, b in zip(order, order[1:]))}
    assert len(verdicts) == 1


def _one(engine, model, table="t", qi=("g",), sa="s", **kw):
    return anonydb.check(table, list(qi), sa, engine=engine, models=[model], **kw).verdicts[0]


def test_edges(engine):
    """A protected value absent from a group: fails for c2 > 0 and holds for c2 = 0 (0 >= 0 * n);
    a value named twice counts once; NULL is a value outside Y; the paper's c2 percent is a share;
    l needs 2 or more; a Y-only group holds."""
    rows = [("A", "x"), ("A", "x"), ("A", "y"), ("A", "z"), ("B", "x"), ("B", None), ("B", None), ("C", "y")]
    make_table(engine, "t", ["g", "s"], rows)
    cases = [dict(allowed=["y"], protected=["w"], c2=0), dict(allowed=["y"], protected=["w"], c2=Fraction(1, 10)),
             dict(allowed=["y", "y"], protected=["x", "x"], c2=Fraction(1, 3)),
             dict(allowed=["y"], protected=["x"], c2=Fraction(1, 2)), dict(allowed=["y"]), dict(allowed=["x", "y"])]
    for kw in cases:
        for c in (1, 2, 3):
            v = _one(engine, DisclosureRecursiveDiversity(2, c, **kw))
            assert v.holds == oracle.pd_recursive(rows, 1, 2, c, **kw)[0], (c, kw)
    # Y = {y}: A ranks x (2) first, y = 1, tail r_2 + r_3 = 2: 2 < 2c iff c > 1; B: None 2, x 1,
    # y = 1, tail 1: c > 2; C holds y only.
    assert _one(engine, DisclosureRecursiveDiversity(2, Fraction(201, 100), allowed=["y"])).holds
    v = _one(engine, DisclosureRecursiveDiversity(2, 2, allowed=["y"]))
    assert not v.holds and v.achieved["c"] == 2 and [g.key["g"] for g in v.violations] == ["B"]
    # Y = {x, y}: A's z is the 3rd of 3, tail r_1 + r_2 = 3 (case 2); B's None first, tail r_2 = 1.
    assert _one(engine, DisclosureRecursiveDiversity(2, 3, allowed=["x", "y"], protected=["w"], c2=0)).holds
    with pytest.raises(InputError, match="integer l >= 2"):
        DisclosureRecursiveDiversity(1, 2)
    with pytest.raises(InputError, match=r"share in \[0, 1\]"):
        DisclosureRecursiveDiversity(2, 2, protected=["x"], c2=10)


@SETTINGS
@given(rows=st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 4)), min_size=1, max_size=30),
       l=st.sampled_from([2, 3]), c=C, allowed=st.sampled_from([[], ["0"], ["1", "2"]]),
       protected=st.sampled_from([["0"], ["3", "4"], ["9"]]), c2=C2)
def test_npd_matches_the_oracle(engine, rows, l, c, allowed, protected, c2):
    engine.execute("DROP TABLE IF EXISTS t")
    make_table(engine, "t", ["g", "s"], rows)
    v = _one(engine, DisclosureRecursiveDiversity(l, c, allowed=allowed, protected=protected, c2=c2))
    holds, top = oracle.pd_recursive(rows, 1, l, c, allowed, protected, c2)
    assert v.holds == holds and v.achieved["c"] == top


def test_record_owners_count_facts(engine):
    """With person=, a group's counts are its distinct (person, value) facts, as recursive l: a
    person's repeated records count once; the c2 share over facts is at most the share over persons
    (a person holding x and y is one of 2 facts, but 1 of 1 persons), so npd fails closed."""
    rnd = random.Random(7)
    rows = [(rnd.choice("AB"), rnd.randint(1, 6), rnd.choice("xyz")) for _ in range(40)]
    make_table(engine, "v", ["g", "pid", "s"], rows)
    facts = sorted({(g, s) + (p,) for g, p, s in rows})
    for kw in (dict(allowed=["x"]), dict(allowed=["x"], protected=["y"], c2=Fraction(1, 4))):
        for c in (Fraction(1, 2), 1, 2, 3):
            v = _one(engine, DisclosureRecursiveDiversity(2, c, **kw), table="v", person="pid")
            holds, top = oracle.pd_recursive([(g, s) for g, s, _ in facts], 1, 2, c, **kw)
            assert v.holds == holds and v.achieved["c"] == top, (c, kw)
    per = Counter((g, p) for g, p, s in {(g, p, s) for g, p, s in rows})
    assert any(n > 1 for n in per.values())  # some person holds two values: facts differ from persons


@settings(max_examples=examples(8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000))
def test_mondrian_releases_meet_npd(engine, seed):
    rnd = random.Random(seed)
    rows = [(rnd.randint(20, 60), rnd.choice("MF"), rnd.randint(0, 5)) for _ in range(rnd.randint(20, 60))]
    engine.execute("DROP TABLE IF EXISTS src")
    make_table(engine, "src", ["age", "sex", "s"], rows)
    kw = dict(allowed=["0"], protected=["5"], c2=Fraction(1, 10))
    try:
        r = anonymize("src", ["age", "sex"], "s", out="rel", engine=engine, replace=True, seed=1,
                      models=[DisclosureRecursiveDiversity(2, 2, **kw)])
    except AnonyDBError as e:  # only when the whole table fails: nothing is written
        assert not oracle.pd_recursive([("*", x[2]) for x in rows], 1, 2, 2, **kw)[0], e
        return
    rel = engine.fetch_rows("SELECT eq_class, s FROM rel")[1]
    assert len(rel) == len(rows) and r.report.holds
    assert oracle.pd_recursive([(str(g), s) for g, s in rel], 1, 2, 2, **kw)[0]


def test_sql_script_macro_edges(engine):
    """The script's npd macro on the edges: c2 = 0 with a protected value absent from a group, a
    value named twice; l = 1 is refused as in Python."""
    import tempfile

    from test_sql_script import assert_one_line_error, rows as json_rows, run_cli

    from anonydb.sqlscript import script

    rows = [("A", "x"), ("A", "x"), ("A", "y"), ("A", "z"), ("B", "x"), ("B", "w"), ("B", "w"), ("C", "y")]
    make_table(engine, "t", ["g", "s"], rows)
    cases = [("['y'], ['q', 'x'], 0", dict(allowed=["y"], protected=["q", "x"], c2=0)),
             ("['y', 'y'], ['x', 'x'], 0.25", dict(allowed=["y"], protected=["x"], c2=Fraction(1, 4)))]
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as fh:
        fh.write(script())
    setup = f"CREATE TABLE t AS SELECT * FROM (VALUES {', '.join(str(r) for r in rows)}) AS v(g, s);\n"
    got = json_rows(run_cli(None, f".read {fh.name}\n.mode jsonlines\n{setup}" + "".join(
        f"FROM anonydb_check_l_npd_recursive('t', ['g'], 's', 2, 3, {a});\n" for a, _ in cases)).stdout)
    assert len(got) == len(cases)
    for (_, kw), g in zip(cases, got):
        v = _one(engine, DisclosureRecursiveDiversity(2, 3, **kw))
        assert v.holds == oracle.pd_recursive(rows, 1, 2, 3, **kw)[0]
        assert (g["holds"], g["violating_groups"]) == (v.holds, v.violating_groups), kw
    assert_one_line_error(f".read {fh.name}\n{setup}FROM anonydb_check_l_pd_recursive('t', ['g'], 's', 1, 3, []);\n",
                          "l must be an integer >= 2, got 1")
