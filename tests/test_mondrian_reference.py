"""Hand-computed checks of the pure-Python Mondrian reference (tests/mondrian_reference.py) itself."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian_reference import distinct_l_ok, k_ok, mondrian_reference
from conftest import examples


def one_dim(values):
    return [{"x": v} for v in values]


def fs(*parts):
    return [frozenset(p) for p in parts]


@pytest.mark.parametrize("relaxed", [False, True])
def test_eight_rows_k2_gives_four_pairs(relaxed):
    rows = one_dim([1, 2, 3, 4, 5, 6, 7, 8])
    got = mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2), relaxed=relaxed)
    assert got == fs({0, 1}, {2, 3}, {4, 5}, {6, 7})


def test_row_order_does_not_matter_for_strict():
    rows = one_dim([8, 3, 5, 1, 7, 2, 6, 4])
    got = mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2))
    # pairs {1,2}, {3,4}, {5,6}, {7,8} by value
    assert got == fs({0, 4}, {1, 7}, {2, 6}, {3, 5})  # listed by smallest row id


def test_strict_lower_median_equal_to_max_moves_down():
    # n = 5, lower median values[2] = 2 = max, so m = 1: {1} | {2, 2, 2, 2}; the 2s have span 0
    rows = one_dim([1, 2, 2, 2, 2])
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(1)) == fs({0}, {1, 2, 3, 4})
    # with k = 2 that only cut leaves {1} alone: no cut at all
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2)) == fs({0, 1, 2, 3, 4})


def test_relaxed_splits_ties_by_row_id():
    rows = one_dim([1, 2, 2, 2, 2])
    # first floor(5/2) = 2 rows by (code, id): {0, 1} | {2, 3, 4}; then {0}|{1}; {2,3,4} has span 0
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(1), relaxed=True) == fs({0}, {1}, {2, 3, 4})
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2), relaxed=True) == fs({0, 1}, {2, 3, 4})


def test_relaxed_versus_strict_on_a_heavy_value():
    rows = one_dim([1, 1, 1, 1, 2, 2])
    # strict: m = values[2] = 1 -> {0..3} | {4, 5}
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2)) == fs({0, 1, 2, 3}, {4, 5})
    # relaxed: {0, 1, 2} | {3, 4, 5}; {3,4,5} would split 1 | 2 rows, not 2-anonymous
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, k_ok(2), relaxed=True) == fs({0, 1, 2}, {3, 4, 5})


GRADES = [
    {"age": 10, "grade": "a"},
    {"age": 10, "grade": "b"},
    {"age": 10, "grade": "c"},
    {"age": 10, "grade": "d"},
    {"age": 20, "grade": "a"},
    {"age": 20, "grade": "d"},
]
KINDS = {"age": "numeric", "grade": "ordered"}


def test_categorical_ties_go_to_the_first_qi():
    # spans at the top: age 10/10 = 1, grade (codes 0..3) 3/3 = 1: a tie, so age (first in qi) is cut
    got = mondrian_reference(GRADES, ["age", "grade"], KINDS, k_ok(2))
    # age: {0..3} | {4, 5}; {0..3} on grade codes 0,1,2,3 (m = 1): {0,1} | {2,3}; {4,5} would be 1 | 1
    assert got == fs({0, 1}, {2, 3}, {4, 5})


def test_categorical_with_grade_first():
    # grade codes [0,1,2,3,0,3], m = values[2] = 1: {0,1,4} | {2,3,5}; neither splits further
    got = mondrian_reference(GRADES, ["grade", "age"], KINDS, k_ok(2))
    assert got == fs({0, 1, 4}, {2, 3, 5})


def test_ordered_codes_are_ranks_not_values():
    rows = [{"x": 0, "y": 0}, {"x": 5, "y": 10}, {"x": 5, "y": 20}, {"x": 10, "y": 1000}]

    def cuts(y_kind):
        calls = []
        ok = lambda ids: calls.append(sorted(ids)) or True  # noqa: E731
        mondrian_reference(rows, ["x", "y"], {"x": "numeric", "y": y_kind}, ok)
        return calls

    # top: spans tie at 1, x first: [0,5,5,10], m = 5: {0,1,2} | {3}
    # {0,1,2}: x span 5/10; y span 20/1000 as numbers but 2/3 as ranks
    # numeric y -> cut x: [0,5,5], m = 5 = max -> 0: {0} | {1,2}
    assert cuts("numeric")[:5] == [[0, 1, 2, 3], [0, 1, 2], [3], [0], [1, 2]]
    # ordered y -> cut y: ranks [0,1,2], m = 1: {0,1} | {2}
    assert cuts("ordered")[:5] == [[0, 1, 2, 3], [0, 1, 2], [3], [0, 1], [2]]


def test_try_all_dims():
    rows = [{"a": 0, "b": 0}, {"a": 0, "b": 1}, {"a": 0, "b": 0}, {"a": 10, "b": 1}]
    kinds = {"a": "numeric", "b": "numeric"}
    # spans tie at 1, a first: [0,0,0,10], m = 0: {0,1,2} | {3} fails; b: m = 0: {0,2} | {1,3}
    assert mondrian_reference(rows, ["a", "b"], kinds, k_ok(2)) == fs({0, 2}, {1, 3})
    assert mondrian_reference(rows, ["a", "b"], kinds, k_ok(2), try_all_dims=False) == fs({0, 1, 2, 3})


def test_distinct_l_diversity():
    rows = [{"x": x, "s": s} for x, s in zip([1, 2, 3, 4], "ppqq")]
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, distinct_l_ok(rows, "s", 2)) == fs({0, 1, 2, 3})
    rows = [{"x": x, "s": s} for x, s in zip([1, 2, 3, 4], "pqpq")]
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, distinct_l_ok(rows, "s", 2)) == fs({0, 1}, {2, 3})
    assert mondrian_reference(rows, ["x"], {"x": "numeric"}, distinct_l_ok(rows, "s", 2, k=3)) == fs({0, 1, 2, 3})


def test_infeasible_and_constant():
    with pytest.raises(ValueError, match="infeasible"):
        mondrian_reference(one_dim([1, 2, 3]), ["x"], {"x": "numeric"}, k_ok(4))
    assert mondrian_reference(one_dim([5, 5, 5]), ["x"], {"x": "numeric"}, k_ok(1)) == fs({0, 1, 2})


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from("abcd")), min_size=1, max_size=30),
       st.integers(1, 4), st.booleans())
def test_invariants(data, k, relaxed):
    rows = [{"n": n, "c": c} for n, c in data]
    kinds = {"n": "numeric", "c": "ordered"}
    if len(rows) < k:
        return
    parts = mondrian_reference(rows, ["n", "c"], kinds, k_ok(k), relaxed=relaxed)
    assert sorted(i for p in parts for i in p) == list(range(len(rows)))  # a partition of the rows
    assert all(len(p) >= k for p in parts)
    if relaxed:  # relaxed stops only below 2k rows, or when all QI values are equal
        for p in parts:
            assert len(p) < 2 * k or len({(rows[i]["n"], rows[i]["c"]) for i in p}) == 1
