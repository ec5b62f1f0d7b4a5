"""Mondrian in SQL: hand-checked cases, equality with the Python reference, property tests."""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from anonydb import Hierarchy
from anonydb.errors import AnonyDBError, InfeasibleError, InputError
from anonydb.methods import anonymize as _mondrian

from conftest import examples, make_table
from mondrian_reference import distinct_l_ok, k_ok, mondrian_reference
from release_checks import (assert_classes_consistent, assert_rows_covered, class_failures, mondrian_supersets,
                            region_failures)

TABLE_1_2 = [  # spec-closeness-slicing 8.1 (Table 1.1 fixes rows 5 and 6)
    (1, "Alice", 47677, 29, "Heart Disease"), (2, "Bob", 47602, 22, "Heart Disease"),
    (3, "Carl", 47678, 27, "Heart Disease"), (4, "David", 47905, 43, "Flu"),
    (5, "Eva", 47909, 52, "Heart Disease"), (6, "Frank", 47906, 47, "Cancer"),
    (7, "Glory", 47605, 30, "Heart Disease"), (8, "Harry", 47673, 36, "Cancer"),
    (9, "Ian", 47607, 32, "Cancer"),
]


def anonymize(source, *args, **kw):
    """Mondrian, with the source's ``id`` (when it has one) riding along in the release unjudged
    (the internal ``_unjudged`` of anonydb.methods.presence), so that a test can follow rows; the
    release is otherwise what a user gets."""
    eng = kw["engine"]
    if "id" in dict(eng.columns(source)) and "keep" not in kw:
        kw.update(keep=["id"], _unjudged=("id",))
    return _mondrian(source, *args, **kw)


def merge_same_boxes(parts: list[frozenset], rows: list[dict], qi: list[str]) -> list[frozenset]:
    """Reference partitions whose boxes publish the same values are one class of the release
    (relaxed cuts of tied rows): numeric QIs as (min, max), the others as their value set."""
    by_id = {r["id"]: r for r in rows}
    merged: dict[tuple, set] = defaultdict(set)
    for p in parts:
        vals = [[by_id[i][q] for i in p] for q in qi]
        box = tuple((min(v), max(v)) if isinstance(v[0], int) else frozenset(v) for v in vals)
        merged[box] |= p
    return sorted((frozenset(v) for v in merged.values()), key=min)


def classes_of(engine, table: str, id_col: str = "id") -> list[frozenset]:
    rows = engine.fetch_rows(f'SELECT eq_class, "{id_col}" FROM "{table}"')[1]
    by = defaultdict(set)
    for c, i in rows:
        by[c].add(i)
    return sorted((frozenset(v) for v in by.values()), key=min)


def test_table_1_2_by_hand(engine):
    """k = 3, QIs (zip, age), strict. Root: both spans 1, zip first, lower median 47677 ->
    {1,2,7,8,9} | {3,4,5,6}. Every further cut leaves a half of 2 (age at 30 / 43, zip at
    47607 / 47905), so both are final."""
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    r = anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, identifiers=["name"])
    assert classes_of(engine, "rel") == [frozenset({1, 2, 7, 8, 9}), frozenset({3, 4, 5, 6})]
    boxes = set(engine.fetch_rows("SELECT DISTINCT zip, zip_lo, zip_hi, age, age_lo, age_hi FROM rel")[1])
    assert boxes == {("[47602, 47677]", 47602, 47677, "[22, 36]", 22, 36),
                     ("[47678, 47909]", 47678, 47909, "[27, 52]", 27, 52)}
    assert [c for c, _ in engine.columns("rel")] == ["eq_class", "id", "zip", "zip_lo", "zip_hi", "age", "age_lo",
                                                    "age_hi", "disease"]
    assert r.utility["dm"] == 5 ** 2 + 4 ** 2
    gcp = 5 * (Fraction(75, 307) + Fraction(14, 30)) + 4 * (Fraction(231, 307) + Fraction(25, 30))
    assert r.utility["gcp"] == pytest.approx(float(gcp))
    assert r.utility["ncp"] == pytest.approx(float(gcp / (9 * 2)))
    assert r.report.holds and r.report["k-anonymity"].achieved == {"k": 4}
    assert r.rows == 9 and r.classes == 2
    # KL: the 9 (zip, age, disease) cells are distinct, p = 1/9 each. Under the uniform assumption
    # G1 covers 5 zips x 6 ages of the table's domain (volume 30), G2 4 x 8 = 32; so
    # p^ = (3/9)/30 for G1's Heart Disease rows, (2/9)/30 for its Cancer rows, (2/9)/32 for G2's
    # Heart Disease rows and (1/9)/32 for its Flu and Cancer rows.
    import math
    kl = (3 * math.log(10) + 2 * math.log(15) + 2 * math.log(16) + 2 * math.log(32)) / 9
    assert r.utility["kl"] == pytest.approx(kl)


def test_table_1_2_distinct_l(engine):
    """Distinct 2-diversity: G1 {1,2,7,8,9} holds HD and Cancer; a cut of it at age 30 leaves
    {2,1,7}, all Heart Disease, so it stays whole; same release as k = 3 here."""
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, l=2, identifiers=["name"])
    parts = classes_of(engine, "rel")
    dis = {r[0]: r[4] for r in TABLE_1_2}
    assert all(len({dis[i] for i in p}) >= 2 for p in parts)
    rows = [dict(id=r[0], zip=r[2], age=r[3], disease=r[4]) for r in TABLE_1_2]
    ref = mondrian_reference(rows, ["zip", "age"], {"zip": "numeric", "age": "numeric"},
                             distinct_l_ok(rows, "disease", 2))
    assert parts == [frozenset(rows[i]["id"] for i in p) for p in ref]


# -- equality with the reference ---------------------------------------------------------------
CATS = ["a", "b", "c", "d", "e"]


@st.composite
def small_tables(draw):
    n = draw(st.integers(4, 40))
    x = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from(CATS), min_size=n, max_size=n))
    z = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    s = draw(st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=n, max_size=n))
    return [dict(id=i, x=x[i], y=y[i], z=z[i], s=s[i]) for i in range(n)]


def _load(engine, rows, name="src"):
    make_table(engine, name, ["id", "x", "y", "z", "s"], [(r["id"], r["x"], r["y"], r["z"], r["s"]) for r in rows])


KINDS = {"x": "numeric", "y": "ordered", "z": "numeric"}
#: every round in one recursive statement, one round at a time, or the fragment plan (the top cut
#: without rewriting the rows, the rest in the worker pool): each must match the reference
PLANS = ["recursive", "levelwise", "fragments"]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), k=st.integers(1, 5), relaxed=st.booleans(), order=st.permutations(["x", "y", "z"]),
       plan=st.sampled_from(PLANS))
def test_same_partitions_as_reference_k(engine, rows, k, relaxed, order, plan):
    engine.execute("DROP TABLE IF EXISTS src")
    _load(engine, rows)
    if k > len(rows):
        with pytest.raises(InfeasibleError):
            anonymize("src", order, out="rel", engine=engine, k=k, relaxed=relaxed, replace=True, plan=plan)
        return
    anonymize("src", order, out="rel", engine=engine, k=k, relaxed=relaxed, replace=True, plan=plan)
    ref = mondrian_reference(rows, order, KINDS, k_ok(k), relaxed=relaxed)
    assert classes_of(engine, "rel") == merge_same_boxes(ref, rows, order)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), l=st.integers(1, 3), relaxed=st.booleans(), all_dims=st.booleans(),
       plan=st.sampled_from(PLANS))
def test_same_partitions_as_reference_l(engine, rows, l, relaxed, all_dims, plan):
    engine.execute("DROP TABLE IF EXISTS src")
    _load(engine, rows)
    if len({r["s"] for r in rows}) < l:
        with pytest.raises(InfeasibleError, match="distinct"):
            anonymize("src", "x,y,z", "s", out="rel", engine=engine, l=l, relaxed=relaxed, replace=True)
        return
    anonymize("src", "x,y,z", "s", out="rel", engine=engine, l=l, relaxed=relaxed, try_all_dims=all_dims,
              replace=True, plan=plan)
    ref = mondrian_reference(rows, ["x", "y", "z"], KINDS, distinct_l_ok(rows, "s", l), relaxed=relaxed,
                             try_all_dims=all_dims)
    assert classes_of(engine, "rel") == merge_same_boxes(ref, rows, ["x", "y", "z"])


# -- properties of every release ---------------------------------------------------------------
#: the columns a release of src over QIs x,y,z and sensitive s publishes (y is categorical: a label only)
PUBLISHED = {"eq_class", "x", "x_lo", "x_hi", "y", "z", "z_lo", "z_hi", "s"}


def _y_values(label: str) -> list[str]:
    return label[1:-1].split(", ") if label.startswith("{") else [label]


def _range_label(lo, hi) -> str:
    return str(lo) if lo == hi else f"[{lo}, {hi}]"


def _covers(row, rel) -> bool:
    """The released row ``rel`` is ``row`` generalized: its ranges and its y label hold the
    original values, and the sensitive value is unchanged."""
    return (rel["x_lo"] <= row["x"] <= rel["x_hi"] and rel["z_lo"] <= row["z"] <= rel["z_hi"]
            and row["y"] in _y_values(rel["y"]) and row["s"] == rel["s"])


#: one parameter set per model: the fixed-table property test and the plan-equality test below
MODELS = [dict(k=3), dict(l=2), dict(l=2, l_variant="entropy"), dict(l=2, l_variant="probabilistic"),
          dict(l=2, l_variant="recursive", c=2), dict(k=2, t=0.3), dict(k=2, t=0.3, distance="ordered"),
          dict(k=2, n=8, t=0.2), dict(alpha=0.7, k=2), dict(k=2, delta=2.0)]


def _choices(**spec) -> st.SearchStrategy[dict]:
    """A model's parameters: a list is drawn from (st.sampled_from), anything else is fixed;
    ``optional`` names parameters that may be left out."""
    optional = spec.pop("optional", {})
    as_st = lambda v: st.sampled_from(v) if isinstance(v, list) else st.just(v)  # noqa: E731
    return st.fixed_dictionaries({k: as_st(v) for k, v in spec.items()},
                                 optional={k: as_st(v) for k, v in optional.items()})


#: every privacy model Mondrian takes, each with its parameters drawn per example
FAMILIES = {
    "k-anonymity": _choices(k=[1, 2, 3, 5]),
    "distinct l": _choices(l=[2, 3], optional=dict(k=[2, 3])),
    "entropy l": _choices(l=[1.5, 2, 2.5], l_variant="entropy"),
    "probabilistic l": _choices(l=[1.5, 2, 3], l_variant="probabilistic"),
    "recursive (c,l)": _choices(l=[2, 3], l_variant="recursive", c=[1, 2, 3.5]),
    "t-closeness (equal)": _choices(t=[0.15, 0.3, 0.5], optional=dict(k=[2, 3])),
    "t-closeness (ordered)": _choices(t=[0.1, 0.2, 0.4], distance="ordered", optional=dict(k=[2, 3])),
    "(n,t)-closeness": _choices(n=[4, 8, 16], t=[0.1, 0.2, 0.35], optional=dict(k=[2, 3])),
    "(alpha,k)-anonymity": _choices(alpha=[0.5, 0.7, 1.0], k=[1, 2, 3]),
    "delta-disclosure": _choices(delta=[1.0, 2.0], optional=dict(k=[2, 3])),
}


def _check_mondrian_release(engine, rows, params, relaxed, r) -> int:
    """Judge the release ``rel`` of ``rows`` from what it publishes; return its number of classes.

    Every source row is released once, generalized to values that cover its own (a matching, no
    row id needed); labels agree with their ranges; eq_class and the published non-sensitive
    tuple are one-to-one; a strict release's boxes are disjoint (each source row lies in exactly
    one); every class meets the model by a direct Python check (release_checks.class_failures),
    (n,t)-closeness against the natural supersets rebuilt from the boxes."""
    assert set(c for c, _ in engine.columns("rel")) == PUBLISHED
    got = engine.fetch("SELECT * FROM rel")
    assert_rows_covered(rows, got, _covers)
    for g in got:
        assert g["x"] == _range_label(g["x_lo"], g["x_hi"]) and g["z"] == _range_label(g["z_lo"], g["z_hi"]), g
        ys = _y_values(g["y"])
        assert ys == sorted(set(ys)) and set(ys) <= set(CATS), g
    assert_classes_consistent(engine, "rel", exclude=("s",))
    classes, boxes = defaultdict(list), {}
    rank = {v: i for i, v in enumerate(sorted({y for g in got for y in _y_values(g["y"])}))}
    for g in got:
        classes[g["eq_class"]].append(g["s"])
        ys = [rank[y] for y in _y_values(g["y"])]
        boxes[g["eq_class"]] = ((g["x_lo"], g["x_hi"]), (min(ys), max(ys)), (g["z_lo"], g["z_hi"]))
    assert r.rows == len(rows) and r.classes == len(classes) and r.report.holds
    if not relaxed:
        for row in rows:
            inside = [c for c, b in boxes.items() if b[0][0] <= row["x"] <= b[0][1] and
                      b[1][0] <= rank[row["y"]] <= b[1][1] and b[2][0] <= row["z"] <= b[2][1]]
            assert len(inside) == 1, (row, inside)
    supersets = None
    if "n" in params:  # strict cuts only: relaxed ones are refused with (n,t)
        supersets = mondrian_supersets(boxes)
        assert supersets is not None
    table = [row["s"] for row in rows]
    assert class_failures(params, classes, table, supersets) == []
    return len(classes)


@pytest.mark.parametrize("family", list(FAMILIES))
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), relaxed=st.booleans(), plan=st.sampled_from(PLANS), data=st.data())
def test_release_properties(engine, family, rows, relaxed, plan, data):
    """Every model, each on its own drawn tables: when the whole table (one class) fails the
    model by the Python oracle, the method raises InfeasibleError and writes nothing; otherwise
    it releases, and the release passes _check_mondrian_release."""
    params = data.draw(FAMILIES[family], label="params")
    if "n" in params:  # (n,t) grows a partition tree round by round: level-wise only
        plan = "levelwise"
    if params.get("distance") == "ordered" and plan == "recursive":  # ASOF: not inside DuckDB's recursion
        plan = "levelwise"
    engine.execute("DROP TABLE IF EXISTS src")
    engine.execute("DROP TABLE IF EXISTS rel")
    _load(engine, rows)
    table = [row["s"] for row in rows]
    whole = class_failures(params, {"whole table": table}, table)

    def run():
        return _mondrian("src", "x,y,z", "s", out="rel", engine=engine, relaxed=relaxed, replace=True, plan=plan,
                         **params)

    if "n" in params and relaxed:  # refused in one line before anything is read or written
        with pytest.raises(InputError, match="needs strict cuts"):
            run()
        assert not engine.exists("rel")
        return
    if whole:
        event(f"{family}: infeasible")
        with pytest.raises(InfeasibleError):
            run()
        assert not engine.exists("rel")
        return
    try:
        r = run()
    except InfeasibleError as e:
        pytest.fail(f"the whole table satisfies {params} (one class is a release), yet: {e}")
    n = _check_mondrian_release(engine, rows, params, relaxed, r)
    event(f"{family}: released, {'one class' if n == 1 else 'several classes'}")


FIXED = [dict(id=i, x=(i * 7) % 10, y=CATS[(i * 3) % 5], z=(i * 5) % 7 - 3, s=["s1", "s2", "s3"][(i * i + i // 3) % 3])
         for i in range(40)]


@pytest.mark.parametrize("relaxed, plan", [(False, "levelwise"), (True, "recursive")])
@pytest.mark.parametrize("params", MODELS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_release_properties_fixed_table(engine, params, relaxed, plan):
    """Every model on one 40-row table: a release of several classes, judged as above (so that
    no model is only ever seen infeasible or as one class)."""
    if "n" in params or params.get("distance") == "ordered":  # (n,t), ordered EMD: level-wise only
        plan = "levelwise"
    _load(engine, FIXED)
    if "n" in params and relaxed:
        relaxed = False  # refused with relaxed cuts (test_nt_refuses_relaxed_cuts)
    r = _mondrian("src", "x,y,z", "s", out="rel", engine=engine, relaxed=relaxed, plan=plan, **params)
    assert _check_mondrian_release(engine, FIXED, params, relaxed, r) > 1


def test_relaxed_ties_publish_one_tuple_per_class(engine):
    """Six rows (0, a, 0) and two (0, a, 1), k = 2, relaxed: the root is cut on z into 4 + 4
    rows, the second half again into (0, a, 0) x 2 | (0, a, 1) x 2. Two classes then publish the
    same tuple (0, a, 0): eq_class tells apart rows that the published columns cannot."""
    rows = [dict(id=i, x=0, y="a", z=0 if i < 6 else 1, s=f"s{i % 2}") for i in range(8)]
    _load(engine, rows)
    for plan in PLANS:
        _mondrian("src", "x,y,z", "s", out="rel", engine=engine, k=2, relaxed=True, plan=plan, replace=True)
        assert_classes_consistent(engine, "rel", exclude=("s",))


def test_release_checks_catch_violations(engine):
    """The shared checks are not vacuous: a published column that varies within a class, two
    classes with one tuple, and classes violating each model are caught."""
    make_table(engine, "r1", ["eq_class", "x", "s"], [(1, "a", "u"), (1, "b", "v"), (2, "c", "u")])
    make_table(engine, "r2", ["eq_class", "x", "s"], [(1, "a", "u"), (2, "a", "v")])
    make_table(engine, "r3", ["eq_class", "x", "s"], [(1, "a", "u"), (1, "a", "v"), (2, None, "u")])
    for bad in ("r1", "r2"):
        with pytest.raises(AssertionError, match="not one-to-one"):
            assert_classes_consistent(engine, bad, exclude=("s",))
    assert_classes_consistent(engine, "r3", exclude=("s",))
    with pytest.raises(AssertionError):  # s varies within class 1 when it is not excluded
        assert_classes_consistent(engine, "r3")
    table = ["u"] * 6 + ["v"] * 3 + ["w"] * 3
    cls = {1: ["u", "u", "u", "u"], 2: ["u", "u", "v", "w"], 3: ["v", "v", "w", "w"]}
    bad = lambda **p: {c for c, _ in class_failures(p, cls, table)}  # noqa: E731
    assert bad(k=5) == {1, 2, 3} and bad(k=4) == set()
    assert bad(l=2) == {1} and bad(l=3) == {1, 3}
    # entropy: class 2 has H = -(1/2 ln 1/2 + 2 * 1/4 ln 1/4) = 1.5 ln 2 = ln 2.83; class 3 ln 2
    assert bad(l=2, l_variant="entropy") == {1} and bad(l=2.9, l_variant="entropy") == {1, 2, 3}
    assert bad(l=2, l_variant="probabilistic") == {1} and bad(l=2.1, l_variant="probabilistic") == {1, 2, 3}
    # recursive (c, 2): class 2 counts 2,1,1: 2 < c * 2 iff c > 1; class 3 counts 2,2: 2 < c * 2 iff c > 1
    assert bad(l=2, l_variant="recursive", c=1) == {1, 2, 3} and bad(l=2, l_variant="recursive", c=1.5) == {1}
    # equal-distance EMD against (1/2, 1/4, 1/4): class 1 1/2, class 2 0, class 3 1/2
    assert bad(t=0.5) == set() and bad(t=0.49) == {1, 3}
    # ordered (u < v < w): class 1 (1/4 + 1/2) / 2 = 3/8, class 3 (1/2 + 1/4) / 2 = 3/8
    assert bad(t=0.375, distance="ordered") == set() and bad(t=0.37, distance="ordered") == {1, 3}
    assert bad(alpha=0.5, k=1) == {1} and bad(alpha=0.49, k=1) == {1, 2, 3}
    # delta: class 2 is |ln(1/2 / 1/2)| = 0 on u and 0 on v, w; classes 1 and 3 lack a value
    assert bad(delta=0.01) == {1, 3}
    # (n,t) against the whole table only: as t-closeness; with {1, 2} as a natural superset too
    # (u 6/8, v 1/8, w 1/8): class 1 at EMD 1/4 from it, class 2 at 1/4 from it and 0 from the table
    assert bad(n=12, t=0.5) == set() and bad(n=12, t=0.25) == {1, 3} and bad(n=4, t=0.0) == set()
    sup = [{1, 2, 3}, {1, 2}, {3}]
    assert {c for c, _ in class_failures(dict(n=8, t=0.25), cls, table, sup)} == {3}
    assert {c for c, _ in class_failures(dict(n=8, t=0.2), cls, table, sup)} == {1, 3}
    assert {c for c, _ in class_failures(dict(n=13, t=1.0), cls, table, sup)} == {1, 2, 3}


def test_mondrian_supersets_rebuild_the_cuts():
    """Boxes of a strict cut x <= 1 | x > 1, the left half cut again on z: the natural supersets
    are the whole table, {A, B}, and the singletons. With C at x = 1 only and D from x = 1 on, no
    strict cut exists."""
    boxes = {"A": ((0, 1), (0, 2)), "B": ((0, 1), (3, 5)), "C": ((2, 4), (0, 5))}
    assert mondrian_supersets(boxes) == {frozenset("ABC"), frozenset("AB"), frozenset("A"),
                                         frozenset("B"), frozenset("C")}
    tied = {"A": ((0, 1), (0, 2)), "B": ((0, 1), (3, 5)), "C": ((1, 1), (0, 5)), "D": ((1, 4), (0, 6))}
    assert mondrian_supersets(tied) == {frozenset("ABCD")}  # C and D overlap at x = 1


# the tables of issue 47: relaxed cuts published the first as four single-row classes reported as
# (2, 0.3)-close, and failed their own verification on the second
NT_RELAXED_TABLES = [
    ([dict(id=0, x=1, y="a", z=1, s="s1"), dict(id=1, x=0, y="a", z=0, s="s1"),
      dict(id=2, x=1, y="a", z=2, s="s2"), dict(id=3, x=1, y="a", z=0, s="s2")], dict(n=2, t=0.3)),
    ([dict(id=i, x=0, y="a", z=0, s="s1") for i in range(16)] + [dict(id=16, x=0, y="a", z=1, s="s2")],
     dict(n=4, t=0.2)),
]


def test_region_oracle_on_the_first_table():
    """(x, z) = (1,1,s1), (0,0,s1), (1,2,s2), (1,0,s2), by hand: the boxes of >= 2 records
    around (0,0) hold {(0,0),(1,0)} (EMD 1/2), x, z in [0,1] (s1 2/3: 1/3) or more (1/2, 1/3);
    around (1,1) the closest is x, z in [0,1] (1/3); around (1,2) and (1,0), x = 1 with z in
    [0,2] (1/3). As four single-row classes every one fails n = 2 at t = 0.3 and holds at t = 1/2;
    one class of all four holds (n reached)."""
    points = [(1, 1), (0, 0), (1, 2), (1, 0)]
    values = ["s1", "s1", "s2", "s2"]
    singles = {i: [i] for i in range(4)}
    assert {c for c, _ in region_failures(dict(n=2, t=0.3), points, values, singles)} == {0, 1, 2, 3}
    assert region_failures(dict(n=2, t=0.5), points, values, singles) == []
    assert region_failures(dict(n=2, t=0.3), points, values, {0: [0, 1, 2, 3]}) == []


@pytest.mark.parametrize("plan", ["levelwise", "auto"])
@pytest.mark.parametrize("rows, params", NT_RELAXED_TABLES, ids=["four rows", "seventeen rows"])
def test_nt_refuses_relaxed_cuts(engine, rows, params, plan):
    """Relaxed cuts split equal QI tuples, so a partition's ancestors are no regions of the QI
    space: (n,t) with relaxed cuts is refused in one line and nothing is written; with strict cuts
    the same tables release and every small class has a region of >= n records within t."""
    _load(engine, rows)
    with pytest.raises(InputError, match="needs strict cuts") as e:
        _mondrian("src", "x,y,z", "s", out="rel", engine=engine, relaxed=True, plan=plan, **params)
    assert "\n" not in str(e.value) and not engine.exists("rel")
    r = _mondrian("src", "x,y,z", "s", out="rel", engine=engine, plan=plan, **params)
    _check_mondrian_release(engine, rows, params, False, r)
    got = engine.fetch("SELECT eq_class, x_lo, x_hi, z_lo, z_hi, s FROM rel")
    points = [(row["x"], row["z"]) for row in rows]
    classes = defaultdict(list)
    for i, (x, z) in enumerate(points):
        box = {g["eq_class"] for g in got if g["x_lo"] <= x <= g["x_hi"] and g["z_lo"] <= z <= g["z_hi"]}
        assert len(box) == 1
        classes[box.pop()].append(i)
    assert region_failures(params, points, [row["s"] for row in rows], classes) == []


# -- hierarchies, labels, errors, fail-closed --------------------------------------------------
EDU = Hierarchy.from_rows([
    ("a", "ab", "*"), ("b", "ab", "*"), ("c", "cde", "*"), ("d", "cde", "*"), ("e", "cde", "*")])


def test_hierarchical_split_labels_are_nodes(engine):
    rows = [(i, i % 10, CATS[(i * 7) % 5], i % 3, ["s1", "s2", "s3"][i % 3]) for i in range(60)]
    make_table(engine, "src", ["id", "x", "y", "z", "s"], rows)
    r = anonymize("src", "y,x", "s", out="rel", engine=engine, k=4, hierarchies={"y": EDU})
    labels = {row[0] for row in engine.fetch_rows("SELECT DISTINCT y FROM rel")[1]}
    assert labels <= {"a", "b", "c", "d", "e", "ab", "cde", "*"}
    # the first cut is along the root's children: no class mixes ab and cde values
    for cls, ys in engine.fetch_rows("SELECT eq_class, list(DISTINCT s.y) FROM rel JOIN src AS s USING (id) "
                                     "GROUP BY ALL")[1]:
        assert set(ys) <= {"a", "b"} or set(ys) <= {"c", "d", "e"}
    assert r.report.holds


#: (n,t) grows a partition tree round by round; ordered EMD joins with ASOF, which DuckDB does not
#: run inside a recursive statement (plan="recursive" refuses it: test_ordered_emd_on_a_small_table...)
ONE_STATEMENT_MODELS = [m for m in MODELS if "n" not in m and m.get("distance") != "ordered"]


@settings(max_examples=examples(20, slow=120), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), mi=st.integers(0, len(ONE_STATEMENT_MODELS) - 1), relaxed=st.booleans(),
       hier=st.booleans(), all_dims=st.booleans(), narrow=st.booleans())
def test_recursive_plan_equals_levelwise(engine, rows, mi, relaxed, hier, all_dims, narrow):
    """The one-statement plan and the round-by-round plan write the same release, row for row,
    equivalence-class ids and the (seeded) shuffled order included, and report the same rounds.
    ``narrow``: few distinct values and NULLs (categorical), so that rows repeat their QI tuple (the
    one-statement plan then cuts the distinct tuples with their counts)."""
    params = ONE_STATEMENT_MODELS[mi]
    engine.execute("DROP TABLE IF EXISTS src")
    if narrow:
        rows = [dict(r, x=r["x"] % 3, z=r["z"] % 2, y=None if r["x"] == 9 and not hier else r["y"]) for r in rows]
    _load(engine, rows)
    got = {}
    for plan in ("recursive", "levelwise"):
        try:
            r = anonymize("src", "y,x,z", "s", out=f"rel_{plan}", engine=engine, relaxed=relaxed, replace=True,
                          plan=plan, try_all_dims=all_dims, seed=11, hierarchies={"y": EDU} if hier else None, **params)
        except InfeasibleError as e:
            got[plan] = str(e)
            continue
        got[plan] = (r.rounds, r.classes, r.utility["dm"],
                     engine.fetch_rows(f"SELECT * FROM rel_{plan}")[1])
    assert got["recursive"] == got["levelwise"]


def test_plan_parameter(engine):
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    with pytest.raises(InputError, match="plan must be"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, plan="fast")
    with pytest.raises(InputError, match="levelwise"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=2, n=4, t=0.5, plan="recursive")
    assert not engine.exists("rel")
    seen = []
    r = anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, plan="recursive",
                  progress=seen.append)
    # one report at the end: the rounds of test_table_1_2_by_hand (root cut, then both halves final)
    # (classes so far: 2; done: the table's 9 rows closed)
    assert seen == [{"round": 2, "open": 0, "classes": 2, "rows_open": 0, "done": 9}] and r.rounds == 2


def test_plan_auto_falls_back_before_duckdb_1_3(engine, monkeypatch):
    """USING KEY came with DuckDB 1.3: on an older DuckDB "auto" runs the level-wise plan and
    "recursive" says why it cannot run."""
    import duckdb

    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    monkeypatch.setattr(duckdb, "__version__", "1.2.2")
    with pytest.raises(InputError, match="needs DuckDB 1.3 or later"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, plan="recursive")
    engine.log.clear()
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3)
    used = {x.template for x in engine.log}
    assert "mondrian_cand.sql.j2" in used and "mondrian_recursive.sql.j2" not in used
    assert classes_of(engine, "rel") == [frozenset({1, 2, 7, 8, 9}), frozenset({3, 4, 5, 6})]


def test_identifiers_dropped_and_order_shuffled(engine):
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, identifiers=["name"])
    cols = [c for c, _ in engine.columns("rel")]
    assert "name" not in cols
    # rows are not in source order; a seed reproduces the order, no seed gives a fresh one (over 9
    # rows two secret orders agree with probability 1/9!, and neither equals the seeded one)
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, identifiers=["name"], seed=7,
              replace=True)
    ids = [r[0] for r in engine.fetch_rows("SELECT id FROM rel")[1]]
    assert sorted(ids) == list(range(1, 10)) and ids != sorted(ids)
    anonymize("t12", ["zip", "age"], "disease", out="rel2", engine=engine, k=3, identifiers=["name"], seed=7)
    assert [r[0] for r in engine.fetch_rows("SELECT id FROM rel2")[1]] == ids
    orders = set()
    for i in range(3):
        anonymize("t12", ["zip", "age"], "disease", out=f"rel_s{i}", engine=engine, k=3, identifiers=["name"])
        orders.add(tuple(r[0] for r in engine.fetch_rows(f"SELECT id FROM rel_s{i}")[1]))
    assert len(orders) == 3 and tuple(ids) not in orders


@pytest.mark.parametrize("params, message", [
    (dict(k=10), "k-anonymity"),
    (dict(l=4), "distinct"),
    (dict(k=0), "k must be an integer"),
    (dict(t=1.5), "t must lie in"),
])
def test_infeasible_and_bad_parameters(engine, params, message):
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    with pytest.raises((InfeasibleError, InputError), match=message):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, **params)
    assert not engine.exists("rel")


def test_bad_input_names_the_problem(engine):
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    with pytest.raises(InputError, match="'zipcode' not found"):
        anonymize("t12", ["zipcode", "age"], "disease", out="rel", engine=engine, k=2)
    with pytest.raises(InputError, match=r"identifier 'nme' \(identifiers=\) not found"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=2, identifiers=["nme"])
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=2)
    with pytest.raises(InputError, match="already exists"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=2)
    make_table(engine, "nulls", ["a", "s"], [(1, "x"), (None, "y"), (3, "x")])
    with pytest.raises(InputError, match="'a' has 1 NULL"):
        anonymize("nulls", ["a"], "s", out="rel3", engine=engine, k=1)


def test_fail_closed_leaves_nothing(engine, monkeypatch):
    """A verification failure writes nothing and leaves no scratch or staging table."""

    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    before = set(r[0] for r in engine.fetch_rows("SELECT table_name FROM duckdb_tables()")[1])

    def lying_check(*a, **kw):
        rep = real(*a, **kw)
        rep.verdicts[0].holds = False
        return rep

    import anonydb.checker as ck

    real = ck.check
    monkeypatch.setattr(ck, "check", lying_check)
    with pytest.raises(AnonyDBError, match="verification failed: k-anonymity"):
        anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3)
    after = set(r[0] for r in engine.fetch_rows("SELECT table_name FROM duckdb_tables()")[1])
    assert after == before
    assert engine.fetch_rows("SELECT count(*) FROM t12")[1][0][0] == 9


def test_docs_mondrian_example_runs():
    """docs/methods.md's Mondrian example runs as written (on fewer rows)."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "methods.md").read_text()
    block = page.split("## Mondrian: multidimensional generalization", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert "anonymize(" in block and "rows=100_000" in block
    scope: dict = {}
    exec(block.replace("rows=100_000", "rows=3_000"), scope)
    r = scope["r"]
    assert r.report.holds and r.rows == 3000
    assert {"k-anonymity", "l-diversity (distinct)"} <= {v.model for v in r.report.verdicts}
    rows = scope["eng"].fetch("SELECT eq_class, age, age_lo, age_hi, sex, occupation FROM release LIMIT 3")
    assert all(row["age_lo"] <= row["age_hi"] for row in rows)


def test_date_and_ordinal_qis(engine):
    """A date QI is cut on its time line and released as [lo, hi] with typed _lo/_hi; an ordinal
    one in its value order."""
    rows = [(i, f"2024-01-{1 + i % 28:02d}", ["low", "mid", "top"][i % 3], ["x", "y"][i % 2]) for i in range(40)]
    make_table(engine, "d", ["id", "day", "grade", "s"], rows)
    engine.execute("CREATE TABLE d2 AS SELECT id, CAST(day AS DATE) AS day, grade, s FROM d")
    r = anonymize("d2", "day,grade", "s", out="rel", engine=engine, k=4, l=2, kinds={"grade": "ordinal"})
    assert r.report.holds
    got = engine.fetch("SELECT r.day_lo, r.day_hi, r.day, d.day AS orig FROM rel AS r JOIN d2 AS d USING (id)")
    assert all(g["day_lo"] <= g["orig"] <= g["day_hi"] for g in got)
    assert dict(engine.columns("rel"))["day_lo"] == "DATE"
    assert any(g["day"].startswith("[2024-01-") for g in got)


def test_release_as_view_and_replace(engine):
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, as_view=True)
    kinds = dict(engine.fetch_rows("SELECT table_name, table_type FROM information_schema.tables")[1])
    assert kinds["rel"] == "VIEW" and kinds["rel__data"] == "BASE TABLE"
    assert classes_of(engine, "rel") == [frozenset({1, 2, 7, 8, 9}), frozenset({3, 4, 5, 6})]
    # replacing the view by a table (k = 4 gives the same two classes, 5 a single one)
    anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=5, replace=True)
    kinds = dict(engine.fetch_rows("SELECT table_name, table_type FROM information_schema.tables")[1])
    assert kinds["rel"] == "BASE TABLE" and "rel__data" not in kinds
    assert classes_of(engine, "rel") == [frozenset(range(1, 10))]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), k=st.integers(1, 4), relaxed=st.booleans())
# relaxed cuts give two partitions one box, one class: p^ reads the class's counts (KL 0.040938 by
# hand: 22/25 ln(22/21) - 1/25 ln 2 + 1/25 ln 2; read per partition it was 0.052445)
@example(rows=[dict(id=i, x=0, y="a", z=0, s="s1") for i in range(20)]
         + [dict(id=20, x=1, y="a", z=0, s="s1"), dict(id=21, x=0, y="a", z=1, s="s1"),
            dict(id=22, x=0, y="a", z=0, s="s1"), dict(id=23, x=0, y="a", z=1, s="s2"),
            dict(id=24, x=0, y="a", z=0, s="s1")], k=2, relaxed=True)
def test_kl_divergence_oracle(engine, rows, k, relaxed):
    """KL(p || p^) from the released rows, computed directly: p over (x, y, z, s) cells; p^(cell)
    sums, over the classes holding the cell, cnt_G(s)/N / vol(G), vol(G) = (#table values of x in
    [x_lo, x_hi]) * |y's value set| * (#table values of z in [z_lo, z_hi])."""
    import math

    engine.execute("DROP TABLE IF EXISTS src")
    _load(engine, rows)
    if k > len(rows):
        return
    r = anonymize("src", "x,y,z", "s", out="rel", engine=engine, k=k, relaxed=relaxed, replace=True)
    got = engine.fetch("SELECT * FROM rel")
    n = len(rows)
    xs, zs = sorted({q["x"] for q in rows}), sorted({q["z"] for q in rows})
    by_id = {q["id"]: q for q in rows}
    cls = defaultdict(list)
    for g in got:
        cls[g["eq_class"]].append(g)
    vol, cnt = {}, {}
    for c, members in cls.items():
        g = members[0]
        ny = 1 if not g["y"].startswith("{") else len(g["y"][1:-1].split(", "))
        vol[c] = (sum(g["x_lo"] <= v <= g["x_hi"] for v in xs) * ny * sum(g["z_lo"] <= v <= g["z_hi"] for v in zs))
        cnt[c] = Counter(m["s"] for m in members)
    cells = Counter((q["x"], q["y"], q["z"], q["s"]) for q in rows)
    holders = defaultdict(set)
    for g in got:
        q = by_id[g["id"]]
        holders[(q["x"], q["y"], q["z"], q["s"])].add(g["eq_class"])
    kl = sum(c / n * math.log((c / n) / sum(cnt[g][cell[3]] / n / vol[g] for g in holders[cell]))
             for cell, c in cells.items())
    assert r.utility["kl"] == pytest.approx(kl, abs=1e-9)


def test_partitions_under_twice_the_fewest_rows_have_no_cut(engine):
    """k-anonymity needs k rows in each half of a cut, so a partition of fewer than 2k rows is final
    without being judged; models with no such bound say 1. Table 1.2 with k = 3: the root (9 rows)
    is cut into 5 + 4 rows, both under 6, so the second round judges nothing and both are final."""
    from anonydb.models.k_anonymity import KAnonymity
    from anonydb.models.l_diversity import LDiversity

    assert KAnonymity(7).min_rows() == 7 and LDiversity(2).min_rows() == 1
    make_table(engine, "t12", ["id", "name", "zip", "age", "disease"], TABLE_1_2)
    for plan in ("levelwise", "recursive"):
        engine.log.clear()
        r = anonymize("t12", ["zip", "age"], "disease", out="rel", engine=engine, k=3, plan=plan, replace=True)
        assert r.rounds == 2 and classes_of(engine, "rel") == [frozenset({1, 2, 7, 8, 9}), frozenset({3, 4, 5, 6})]
        cand = [x.sql for x in engine.log if x.template in ("mondrian_cand.sql.j2", "mondrian_recursive.sql.j2")]
        assert cand and all("_adb_n >= 6" in sql for sql in cand)


def test_null_in_a_hierarchical_qi_is_refused_by_name(engine):
    """A hierarchy's leaves never hold NULL: the release would lose those rows, so Mondrian refuses
    up front, naming the column and the count, and writes nothing."""
    make_table(engine, "hn", ["age", "c", "s"],
               [(1, "a", "x"), (2, "b", "y"), (3, None, "x"), (4, "a", "y"), (5, "b", "x"), (6, None, "y")])
    h = Hierarchy.from_rows([("a", "*"), ("b", "*")])
    with pytest.raises(InputError, match=r"quasi-identifier 'c' has 2 NULL values, which its hierarchy does not cover"):
        _mondrian("hn", ["age", "c"], "s", k=2, out="hn_out", engine=engine, hierarchies={"c": h}, seed=1)
    assert not engine.exists("hn_out")


def test_ordered_emd_on_a_small_table_runs_level_by_level(engine):
    """t-closeness with ordered EMD (a numeric sensitive attribute's default) joins with ASOF, which
    DuckDB does not run inside the one-statement recursive plan: plan="auto" takes the level-wise
    plan for it, and plan="recursive" says why it cannot."""
    import anonydb
    from anonydb.datasets import synthetic_census
    from anonydb.methods.mondrian import anonymize

    synthetic_census(engine, "c", rows=3000, seed=3)
    r = anonymize("c", ["age", "race", "workclass"], "income", out="rel", engine=engine, k=8, t=0.3, seed=1)
    assert r.report.holds and r.rows == 3000
    assert anonydb.check("rel", ["eq_class"], "income", engine=engine, k=8, t=0.3, distance="ordered").holds
    with pytest.raises(InputError, match="ASOF"):
        anonymize("c", ["age", "race", "workclass"], "income", out="rel2", engine=engine, k=8, t=0.3, plan="recursive")
