"""Brute-force oracles: every check against a direct Python computation on random small tables.

Random tables carry NULLs in QIs and in the sensitive attribute (a NULL is a value of its own).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb import checker
from anonydb.checker import check
from conftest import examples, make_table
import oracle

QI_VALUES = st.sampled_from(["a", "b", "c", None])
ROWS = st.lists(st.tuples(QI_VALUES, st.sampled_from([1, 2, 3]), st.sampled_from([10, 20, 30, 40, None])),
                min_size=1, max_size=40)
SETTINGS = settings(max_examples=examples(8, slow=45), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(rows, qi=("q1", "q2"), **params):
    """The report of the check, which must be the same with the QI columns as the group key
    (a small table's default), with the dictionary-coded integer key (large tables'), and there
    with and without the groups counted in one aggregation: k and distinct l with the sensitive
    values as bits (Engine.group_bits); the models that judge a group by its distribution alone
    with its counts packed into integer sums (Engine.packed_sums), in one sum or, with 12-bit
    sums (two counts a sum here), in several."""
    e = anonydb.connect()
    try:
        make_table(e, "r", [*qi, "s"], rows)
        by_columns = check("r", list(qi), "s", engine=e, max_groups=None, **params)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(checker, "COLUMN_KEY_ROWS", 0)
            coded = check("r", list(qi), "s", engine=e, max_groups=None, **params)
            e.group_bits = 0
            packed = check("r", list(qi), "s", engine=e, max_groups=None, **params)
            mp.setattr(checker, "PACKED_WIDTH", 12)
            e.packed_sums = 8
            e.log.clear()
            several = check("r", list(qi), "s", engine=e, max_groups=None, **params)
            models = checker.build_models(**params)
            assert any(x.template == "check_unpack.sql.j2" for x in e.log) == (
                all(m.by_distribution for m in models) and any(m.needs_sensitive for m in models))
            e.packed_sums = 0
            with_cells = check("r", list(qi), "s", engine=e, max_groups=None, **params)
        assert coded.to_dict() == by_columns.to_dict() == packed.to_dict() == several.to_dict() == with_cells.to_dict()
        return by_columns
    finally:
        e.close()


def group_values(verdict):
    return {tuple(g.key.values()): g.value for g in verdict.violations}


@SETTINGS
@given(ROWS, st.integers(1, 6))
def test_k_anonymity_oracle(rows, k):
    groups = oracle.groups_of(rows, [0, 1], 2)
    r = run(rows, k=k)
    v = r["k-anonymity"]
    assert v.achieved["k"] == oracle.k_of(groups)
    bad = {g: len(x) for g, x in groups.items() if len(x) < k}
    assert group_values(v) == {g: Fraction(n) for g, n in bad.items()}
    assert v.violating_rows == sum(bad.values())
    assert r.groups == len(groups)


@SETTINGS
@given(ROWS, st.integers(1, 4), st.sampled_from([None, 1, 3]))
def test_distinct_and_probabilistic_l_oracle(rows, l, k):
    groups = oracle.groups_of(rows, [0, 1], 2)
    r = run(rows, l=l, k=k)
    v = r["l-diversity"]
    assert v.achieved["l"] == min(oracle.distinct_l(x) for x in groups.values())
    assert set(group_values(v)) == {g for g, x in groups.items() if oracle.distinct_l(x) < l}
    for g in v.violations:  # each listed group's distribution, counted from the rows
        values = groups[tuple(g.key.values())]
        assert g.distribution == {s: values.count(s) for s in set(values)}
    if k is not None:
        assert r["k-anonymity"].achieved["k"] == oracle.k_of(groups)
    p = run(rows, l=l, l_variant="probabilistic")["l-diversity"]
    assert p.achieved["l"] == min(Fraction(len(x), max(x.count(s) for s in x)) for x in groups.values())
    assert set(group_values(p)) == {g for g, x in groups.items() if oracle.probabilistic_l(x) < l}


@SETTINGS
@given(ROWS, st.sampled_from([1, 1.5, 2, 2.5, 3]))
def test_entropy_l_oracle(rows, l):
    groups = oracle.groups_of(rows, [0, 1], 2)
    v = run(rows, l=l, l_variant="entropy")["l-diversity"]
    assert v.achieved["l"] == pytest.approx(min(oracle.entropy_l(x) for x in groups.values()), rel=1e-9)
    expect_bad = {g for g, x in groups.items() if math.log(oracle.entropy_l(x)) < math.log(l) - 1e-9}
    assert set(group_values(v)) == expect_bad


@SETTINGS
@given(ROWS, st.integers(1, 4), st.sampled_from([0.5, 1, 2, 2.5, 3]))
def test_recursive_cl_oracle(rows, l, c):
    groups = oracle.groups_of(rows, [0, 1], 2)
    v = run(rows, l=l, l_variant="recursive", c=c)["l-diversity"]
    assert set(group_values(v)) == {g for g, x in groups.items() if not oracle.recursive_holds(x, c, l)}
    # achieved: per group the largest l' that holds with this c; table: the minimum
    best = min(max([lp for lp in range(1, 6) if oracle.recursive_holds(x, c, lp)], default=0) for x in groups.values())
    assert v.achieved["l"] == best


@SETTINGS
@given(ROWS, st.sampled_from(["equal", "ordered"]))
def test_t_closeness_oracle(rows, distance):
    groups = oracle.groups_of(rows, [0, 1], 2)
    table = [r[2] for r in rows]
    dist = oracle.dist_equal if distance == "equal" else oracle.dist_ordered(set(table))
    v = run(rows, t=0, distance=distance)["t-closeness"]
    got = group_values(v)
    q = oracle.distribution(table)
    for g, vals in groups.items():
        d = oracle.emd_lp(oracle.distribution(vals), q, dist)
        assert float(got.get(g, Fraction(0))) == pytest.approx(d, abs=1e-7)
    assert float(v.achieved["t"]) == pytest.approx(max(oracle.emd_lp(oracle.distribution(x), q, dist) for x in groups.values()), abs=1e-7)


@SETTINGS
@given(ROWS, st.integers(1, 12), st.sampled_from([0.0, 0.1, 0.25, 0.5]), st.sampled_from(["equal", "ordered"]))
def test_nt_closeness_oracle(rows, n, t, distance):
    table = [r[2] for r in rows]
    dist = oracle.dist_equal if distance == "equal" else oracle.dist_ordered(set(table))
    expect = oracle.nt_value(rows, [0, 1], 2, n, dist)
    v = run(rows, n=n, t=t, distance=distance)["(n,t)-closeness"]
    got = group_values(v)
    for g, d in expect.items():
        ok = d is not None and d <= t + 1e-9
        assert (g not in got) == ok, (g, d, got.get(g))
        if not ok:
            assert (got[g] is None) == (d is None)
            if d is not None:
                assert float(got[g]) == pytest.approx(d, abs=1e-7)


ROWS3 = st.lists(st.tuples(QI_VALUES, st.sampled_from([1, 2, 3]), st.sampled_from(["x", "y", None]),
                           st.sampled_from([10, 20, 30, 40, None])), min_size=1, max_size=40)


@SETTINGS
@given(ROWS3, st.integers(1, 12), st.sampled_from([0.0, 0.1, 0.25, 0.5]), st.sampled_from(["subsets", "rollup"]))
def test_nt_closeness_lookup_oracle(rows, n, t, supersets):
    """Equal EMD with few supersets: each small group's cells look up their value in every
    superset (nt_closeness_lookup.sql.j2). Against the oracle, and report for report the same as
    the pairs plan (every group paired with each superset), exact values included."""
    from anonydb.models import nt_closeness
    from anonydb.models.nt_closeness import LOOKUP_SUBSETS

    expect = oracle.nt_value(rows, [0, 1, 2], 3, n, oracle.dist_equal, rollup=supersets == "rollup")
    reports = []
    for lookup in (LOOKUP_SUBSETS, 0):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(nt_closeness, "LOOKUP_SUBSETS", lookup)
            reports.append(run(rows, qi=("q1", "q2", "q3"), n=n, t=t, supersets=supersets, distance="equal"))
    assert reports[0].to_dict() == reports[1].to_dict()
    got = group_values(reports[0]["(n,t)-closeness"])
    for g, d in expect.items():
        ok = d is not None and d <= t + 1e-9
        assert (g not in got) == ok, (g, d, got.get(g))
        if not ok and d is not None:
            assert float(got[g]) == pytest.approx(d, abs=1e-7)


@SETTINGS
@given(ROWS, st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([0.3, 0.5, 1.0]), st.integers(1, 3))
def test_delta_and_alpha_oracle(rows, delta, alpha, k):
    groups = oracle.groups_of(rows, [0, 1], 2)
    table = [r[2] for r in rows]
    r = run(rows, delta=delta, alpha=alpha, k=k)
    dv = group_values(r["delta-disclosure"])
    assert set(dv) == {g for g, x in groups.items() if not oracle.delta_of(x, table) < delta}
    for g, val in dv.items():
        assert val == pytest.approx(oracle.delta_of(groups[g], table), rel=1e-9)
    av = r["(alpha,k)"]
    assert av.achieved["alpha"] == max(Fraction(max(x.count(s) for s in x), len(x)) for x in groups.values())
    assert set(group_values(av)) == {g for g, x in groups.items()
                                     if len(x) < k or Fraction(max(x.count(s) for s in x), len(x)) > Fraction(str(alpha))}


@SETTINGS
@given(ROWS, st.lists(st.sampled_from(["x", "y", "z"]), min_size=4, max_size=4), st.booleans())
def test_hierarchical_t_closeness_oracle(rows, parents, two_levels):
    from anonydb.hierarchy import Hierarchy

    values = [10, 20, 30, 40]
    chains = {}
    for v, p in zip(values, parents):
        mid = [p, "xy" if p in "xy" else "z"] if two_levels else [p]
        chains[v] = [str(v)] + mid + ["*"]
    h = Hierarchy.from_rows(chains.values())
    H = h.height
    chains[None] = [None] + [f"null{i}" for i in range(1, H)] + ["*"]  # NULL: its own chain under the root
    dist = oracle.dist_hier(chains)
    e = anonydb.connect()
    try:
        make_table(e, "r", ["q1", "q2", "s"], rows)
        v = check("r", ["q1", "q2"], "s", engine=e, max_groups=None, t=0, hierarchies={"s": h})["t-closeness"]
    finally:
        e.close()
    groups = oracle.groups_of(rows, [0, 1], 2)
    q = oracle.distribution([r[2] for r in rows])
    got = group_values(v)
    for g, vals in groups.items():
        d = oracle.emd_lp(oracle.distribution(vals), q, dist)
        assert float(got.get(g, Fraction(0))) == pytest.approx(d, abs=1e-7)
