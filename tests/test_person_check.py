"""check(person=...) against the record-owner oracle (tests/person_oracle.py).

Random tables give each person 1-6 records, with QIs constant per person or varying from record
to record (a finished release may put one person's records in several groups), and a sensitive
attribute of a few values, NULL among them at times. Every model's verdict, achieved value,
violating groups and persons, and each violating group's size, value and distribution (persons
per value) must be the oracle's.
"""

from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb.checker import check
from anonydb.errors import InputError
from conftest import examples, make_table, same_values
from person_oracle import Table

QI_DOMAINS = {"q1": ["a", "b"], "q2": [1, 2, None], "q3": ["x", "y"]}
TEXT_VALUES = ["flu", "cold", "hiv"]
NUMERIC_VALUES = [10, 20, 30, 40]

SETTINGS = settings(max_examples=examples(30), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def tables(draw, numeric: bool | None = None, one_record: bool = False):
    """(rows as dicts, QI column names): persons p0, p1, ... with 1-6 records each (one with
    ``one_record``), 2-3 QIs constant per person or drawn per record, sensitive values drawn per
    person or per record."""
    qi = list(QI_DOMAINS)[:draw(st.integers(2, 3))]
    numeric = draw(st.booleans()) if numeric is None else numeric
    base = NUMERIC_VALUES if numeric else TEXT_VALUES
    values = base[:draw(st.integers(1, len(base)))] + ([None] if draw(st.integers(0, 2)) == 0 else [])
    varying = draw(st.booleans())
    rows = []
    for p in range(draw(st.integers(1, 8))):
        person_qi = {q: draw(st.sampled_from(QI_DOMAINS[q])) for q in qi}
        person_sa = draw(st.sampled_from(values)) if draw(st.booleans()) else None
        for _ in range(1 if one_record else draw(st.integers(1, 6))):
            row = {"pid": f"p{p}"}
            row.update({q: draw(st.sampled_from(QI_DOMAINS[q])) for q in qi} if varying else person_qi)
            row["s"] = draw(st.sampled_from(values)) if person_sa is None else person_sa
            rows.append(row)
    return rows, qi


#: check's parameters for each l-diversity variant
L_PARAMS = {
    "distinct": st.fixed_dictionaries({"l": st.integers(1, 3)}),
    "probabilistic": st.fixed_dictionaries({"l": st.sampled_from([1, 1.5, 2, 2.5, 3])}),
    "entropy": st.fixed_dictionaries({"l": st.sampled_from([1, 1.2, 1.5, 2, 2.5, 3])}),
    "recursive": st.fixed_dictionaries({"l": st.integers(1, 3), "c": st.sampled_from([0.5, 1, 2, 2.5, 3])}),
}


@st.composite
def model_params(draw, distance: str):
    variant = draw(st.sampled_from(sorted(L_PARAMS)))
    return dict(k=draw(st.integers(1, 4)), alpha=draw(st.sampled_from([0.3, 0.5, 0.6, 0.75, 1])),
                l_variant=variant, **draw(L_PARAMS[variant]),
                t=draw(st.sampled_from([0, 0.1, 0.2, 0.25, 0.5, 1])), distance=distance,
                delta=draw(st.sampled_from([0.2, 0.7, 1.0, 1.5, 3.0])))


def run_check(rows: list[dict], qi: list[str], **params):
    """The report of check(person="pid") (or without person, ``person=None``) on ``rows``, made a
    table of an in-memory DuckDB connection."""
    person = params.pop("person", "pid")
    con = duckdb.connect()
    try:
        cols = ["pid", *qi, "s"]
        make_table(con, "r", cols, [tuple(r[c] for c in cols) for r in rows])
        return check("r", qi, "s", engine=con, person=person, max_groups=None, **params)
    finally:
        con.close()


def same_value(got, want) -> bool:
    """Exact for fractions and integers (of the same type); floats (entropy, delta) to 1e-9."""
    if isinstance(want, float):
        return isinstance(got, float) and (got == want if math.isinf(want) else got == pytest.approx(want, rel=1e-9))
    return type(got) is type(want) and got == want


def assert_matches(verdict, table: Table, model: str, **params) -> None:
    """One verdict of the report against the oracle's outcome for ``model``."""
    want = table.judge(model, **params)
    where = f"{model} {params}: {verdict.model}"
    assert verdict.holds == want.holds, where
    assert verdict.achieved.keys() == want.achieved.keys(), where
    for name, value in want.achieved.items():
        assert same_value(verdict.achieved[name], value), (where, name, verdict.achieved[name], value)
    assert verdict.groups == len(table.groups), where
    assert verdict.violating_groups == want.violating_groups, where
    assert verdict.violating_rows == want.violating_persons, where
    listed = {tuple(g.key[q] for q in table.qi): g for g in verdict.violations}
    assert set(listed) == {k for k, ok in want.ok.items() if not ok}, where
    for key, g in listed.items():
        group = table.groups[key]
        assert g.size == group.n, (where, key)
        assert same_value(g.value, want.values[key]), (where, key, g.value, want.values[key])
        assert g.distribution == group.counts, (where, key)


def check_against_oracle(rows, qi, params) -> None:
    report = run_check(rows, qi, **params)
    table = Table(rows, qi, "s", "pid")
    assert (report.persons, report.rows, report.groups) == (table.N, len(rows), len(table.groups))
    assert report.smallest_group == min(g.n for g in table.groups.values())
    assert report.largest_group == max(g.n for g in table.groups.values())
    assert_matches(report["k-anonymity"], table, "k", k=params["k"])
    assert_matches(report["(alpha,k)"], table, "alpha-k", alpha=params["alpha"], k=params["k"])
    variant = params["l_variant"]
    assert_matches(report["l-diversity"], table, f"l-{variant}", l=params["l"], c=params.get("c"))
    assert_matches(report["t-closeness"], table, f"t-{params['distance']}", t=params["t"])
    assert_matches(report["delta-disclosure"], table, "delta", delta=params["delta"])


@SETTINGS
@given(tables(), model_params("equal"))
def test_models_match_the_oracle_equal_emd(table, params):
    """k, (alpha,k), one l variant, equal-distance t-closeness and delta-disclosure, in one check."""
    check_against_oracle(*table, params)


@SETTINGS
@given(tables(numeric=True), model_params("ordered"))
def test_models_match_the_oracle_ordered_emd(table, params):
    """The same with a numeric sensitive attribute and ordered-distance t-closeness."""
    check_against_oracle(*table, params)


@settings(max_examples=examples(12, slow=75), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(one_record=True), st.booleans(), st.data())
def test_one_record_per_person_is_the_row_level_check(table, numeric, data):
    """With one record per person, check(person=...) is check(...): the same verdicts, achieved
    values, group sizes and violating groups (persons are rows)."""
    rows, qi = table
    params = data.draw(model_params("ordered" if numeric else "equal"))
    if numeric:
        rows = [{**r, "s": data.draw(st.sampled_from(NUMERIC_VALUES + [None]))} for r in rows]
    by_person = run_check(rows, qi, **params)
    by_row = run_check(rows, qi, person=None, **params)
    assert by_person.persons == by_person.rows == by_row.rows == len(rows)
    assert (by_person.groups, by_person.smallest_group, by_person.largest_group) == \
        (by_row.groups, by_row.smallest_group, by_row.largest_group)
    assert [v.model for v in by_person.verdicts] == [v.model for v in by_row.verdicts]
    for a, b in zip(by_person.verdicts, by_row.verdicts):
        assert (a.holds, a.groups, a.violating_groups, a.violating_rows) == \
            (b.holds, b.groups, b.violating_groups, b.violating_rows), a.model
        assert same_values(a.achieved, b.achieved), (a.model, a.achieved, b.achieved)
        assert [(g.key, g.size, g.distribution) for g in a.violations] == \
            [(g.key, g.size, g.distribution) for g in b.violations], a.model
        assert same_values([g.value for g in a.violations], [g.value for g in b.violations]), a.model


def test_two_persons_filling_a_class_of_ten_rows():
    """Row-level k = 10 holds; person-level k fails: zip 1's ten rows belong to two persons.

    zip 1: person A, six records, all flu; person B, four records, two flu and two hiv.
    zip 2: ten persons, one record each, five flu and five cold.
    By rows: both groups have 10 rows; zip 1 has flu 8, hiv 2 (n/mx = 10/8), zip 2 flu 5, cold 5.
    So k = 10, alpha = 8/10 and probabilistic l = 10/8: k = 5, alpha = 0.8, l = 1.25 hold.
    By persons: zip 1 has n = 2, c_flu = 2, c_hiv = 1 (n/mx = 1, alpha = 1, d = 2); zip 2 n = 10,
    n/mx = 2, alpha = 1/2. So k = 2 (zip 1 violates, 2 persons), alpha = 1 and probabilistic
    l = 1: all three fail on zip 1 alone; distinct 2-diversity holds (two values in each group).
    """
    rows = ([{"pid": "A", "zip": 1, "age": 30, "s": "flu"}] * 6
            + [{"pid": "B", "zip": 1, "age": 30, "s": v} for v in ["flu", "flu", "hiv", "hiv"]]
            + [{"pid": f"P{i}", "zip": 2, "age": 40, "s": "flu" if i < 5 else "cold"} for i in range(10)])
    con = duckdb.connect()
    make_table(con, "visits", ["pid", "zip", "age", "s"], [(r["pid"], r["zip"], r["age"], r["s"]) for r in rows])
    params = dict(k=5, alpha=0.8, l=1.25, l_variant="probabilistic")
    by_row = check("visits", ["zip", "age"], "s", engine=con, **params)
    assert by_row.holds and by_row.rows == 20 and by_row.smallest_group == 10
    assert by_row["k-anonymity"].achieved == {"k": 10}
    assert by_row["(alpha,k)"].achieved == {"alpha": Fraction(4, 5), "k": 10}
    assert by_row["l-diversity"].achieved == {"l": Fraction(5, 4)}

    r = check("visits", ["zip", "age"], "s", engine=con, person="pid", **params)
    assert not r.holds
    assert (r.rows, r.persons, r.groups, r.smallest_group, r.largest_group) == (20, 12, 2, 2, 10)
    k = r["k-anonymity"]
    assert not k.holds and k.achieved == {"k": 2}
    assert (k.violating_groups, k.violating_rows) == (1, 2)
    [g] = k.violations
    assert (g.key, g.size, g.value) == ({"zip": 1, "age": 30}, 2, 2)
    ak = r["(alpha,k)"]
    assert not ak.holds and ak.achieved == {"alpha": Fraction(1), "k": 2}
    assert (ak.violating_groups, ak.violating_rows) == (1, 2)
    lv = r["l-diversity"]
    assert not lv.holds and lv.achieved == {"l": Fraction(1)}
    [g] = lv.violations
    assert g.distribution == {"flu": 2, "hiv": 1}
    assert check("visits", ["zip", "age"], "s", engine=con, person="pid", l=2).holds  # two values each
    con.close()


@pytest.mark.parametrize("person, qi, sensitive, null, column", [
    pytest.param("owner", ["zip"], "s", False, "owner", id="missing"),
    pytest.param("pid", ["zip"], "s", True, "pid", id="null-person"),
    pytest.param("pid", ["zip", "pid"], "s", False, "pid", id="person-is-qi"),
    pytest.param("pid", ["zip"], "pid", False, "pid", id="person-is-sensitive"),
])
def test_bad_person_inputs(person, qi, sensitive, null, column):
    con = duckdb.connect()
    rows = [("p1", 1, "flu"), ("p2", 1, "cold"), (None if null else "p3", 2, "flu")]
    make_table(con, "t", ["pid", "zip", "s"], rows)
    with pytest.raises(InputError) as e:
        check("t", qi, sensitive, engine=con, person=person, k=1, l=1)
    message = str(e.value)
    assert "\n" not in message and repr(column) in message, message
    con.close()
