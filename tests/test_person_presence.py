"""delta-presence judged by persons (record owners): ``check_presence(..., person=...)`` and
``check_confident(..., person=...)``.

The public table P holds persons, one row each; the research table T holds 1-4 records per
person (persons drawn from P). For a public person in class E, Pr(in T | T') = (distinct persons
of T in E) / (persons of P in E). A plain-Python oracle (importing nothing from anonydb) computes
the classes, their counts and presences, the verdict and the persons outside the bounds on random
tables and generalizations (exact labels, Mondrian-style ranges with ``_lo``/``_hi`` bounds,
value sets, '*'); with one record per person the result is the row-level one; Nergiz & Clifton's
Tables 1-2 (spec-presence-survey 1.4) give the same presences with some persons' rows repeated.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb import generalize
from anonydb.errors import InputError
from anonydb.presence import check_confident, check_presence, population_marginals

from conftest import examples, make_table
from test_presence import H, QI, TABLE_1

SETTINGS = settings(max_examples=examples(20), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
B_VALUES = ["x", "y", "z"]


# ------------------------------------------------------------------------------------------------
# the oracle: plain Python
# ------------------------------------------------------------------------------------------------
def label_a(a: int, mode: tuple) -> tuple:
    """(label, lo, hi) of an age-like integer: exact, a range of width w, or '*'."""
    if mode[0] == "exact":
        return a, None, None
    if mode[0] == "range":
        lo = a // mode[1] * mode[1]
        return f"[{lo}-{lo + mode[1] - 1}]", lo, lo + mode[1] - 1
    return "*", None, None


def label_b(b: str, mode: tuple) -> str:
    """A text QI's label: exact, the value set of its block ("{x, y}"), or '*'."""
    if mode[0] == "exact":
        return b
    if mode[0] == "sets":
        block = next(blk for blk in mode[1] if b in blk)
        return "{" + ", ".join(block) + "}"
    return "*"


def oracle(public: list[tuple], research: list[tuple], modes: tuple, dmin: F, dmax: F) -> dict:
    """public: (pid, a, b) one per person; research: (pid, a, b, visit). Per class (the labels):
    distinct research persons n_T and public persons n_P; public persons of no class form class 0
    (presence 0)."""
    def cls(a, b):
        return (label_a(a, modes[0])[0], label_b(b, modes[1]))
    persons_t = defaultdict(set)
    for pid, a, b, _ in research:
        persons_t[cls(a, b)].add(pid)
    n_p = defaultdict(int)
    uncovered = 0
    for pid, a, b in public:
        if cls(a, b) in persons_t:
            n_p[cls(a, b)] += 1
        else:
            uncovered += 1
    classes = {c: (len(persons_t[c]), n_p[c]) for c in persons_t}
    groups = [(c, nt, np_) for c, (nt, np_) in classes.items()] + ([(None, 0, uncovered)] if uncovered else [])
    presences = [F(nt, np_) for _, nt, np_ in groups]
    bad = [(c, nt, np_) for c, nt, np_ in groups if not dmin <= F(nt, np_) <= dmax]
    return {"classes": classes, "uncovered": uncovered, "groups": len(groups),
            "achieved": (min(presences), max(presences)), "holds": not bad, "violating_groups": len(bad),
            "outside": sum(np_ for _, _, np_ in bad), "persons": len({r[0] for r in research}),
            "records": len(research)}


# ------------------------------------------------------------------------------------------------
# random tables
# ------------------------------------------------------------------------------------------------
@st.composite
def cases(draw, one_record: bool = False):
    """(public, research, modes, delta): 2-14 public persons; a nonempty subset of them in the
    research table with 1-4 records each (one with ``one_record``); one generalization."""
    n = draw(st.integers(2, 14))
    public = [(f"p{i}", draw(st.integers(0, 5)), draw(st.sampled_from(B_VALUES))) for i in range(n)]
    chosen = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
    research = [(public[i][0], public[i][1], public[i][2], v) for i in sorted(chosen)
                for v in range(1 if one_record else draw(st.integers(1, 4)))]
    mode_a = draw(st.sampled_from([("exact",), ("range", 2), ("range", 3), ("star",)]))
    mode_b = draw(st.sampled_from([("exact",), ("sets", (("x", "y"), ("z",))), ("sets", (("x",), ("y", "z"))),
                                   ("star",)]))
    fracs = sorted(draw(st.lists(st.sampled_from([F(0), F(1, 4), F(1, 3), F(1, 2), F(2, 3), F(3, 4), F(1)]),
                                 min_size=2, max_size=2)))
    return public, research, (mode_a, mode_b), tuple(fracs)


def release_rows(research: list[tuple], modes: tuple) -> tuple[list[str], list[tuple]]:
    """T' of the research table under ``modes``: the person column kept, each record labelled."""
    ranged = modes[0][0] == "range"
    cols = ["pid", "a"] + (["a_lo", "a_hi"] if ranged else []) + ["b", "visit"]
    rows = []
    for pid, a, b, visit in research:
        lab, lo, hi = label_a(a, modes[0])
        rows.append((pid, lab) + ((lo, hi) if ranged else ()) + (label_b(b, modes[1]), visit))
    return cols, rows


def load(eng, public, research, modes) -> None:
    make_table(eng, "pub", ["pid", "a", "b"], public)
    cols, rows = release_rows(research, modes)
    make_table(eng, "rel", cols, rows)


def label_key(a, b):
    return (None if a is None else str(a), b)


# ------------------------------------------------------------------------------------------------
# the oracle's presences
# ------------------------------------------------------------------------------------------------
@SETTINGS
@given(cases())
def test_presence_by_persons_equals_oracle(case):
    public, research, modes, delta = case
    want = oracle(public, research, modes, *delta)
    eng = anonydb.connect()
    try:
        load(eng, public, research, modes)
        r = check_presence("rel", "pub", ["a", "b"], delta=delta, engine=eng, person="pid", classes_out="per_class")
        per_class = eng.fetch_rows("SELECT class_id, a, b, n_private, n_public FROM per_class")[1]
    finally:
        eng.close()
    v = r.verdicts[0]
    assert (v.achieved["delta_min"], v.achieved["delta_max"]) == want["achieved"]
    assert all(isinstance(x, F) for x in v.achieved.values())
    assert v.holds == want["holds"] == r.holds
    assert v.groups == want["groups"]
    assert v.violating_groups == want["violating_groups"]
    assert v.violating_rows == want["outside"] == r.public_outside
    assert (r.person, r.persons) == ("pid", want["persons"])
    got = {label_key(a, b): (nt, np_) for cid, a, b, nt, np_ in per_class if cid != 0}
    assert got == {label_key(a, b): x for (a, b), x in want["classes"].items()}
    assert sum(np_ for cid, _, _, _, np_ in per_class if cid == 0) == want["uncovered"]
    assert f"{want['records']} records are {want['persons']} persons by pid" in v.note


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(one_record=True))
def test_one_record_per_person_is_row_level(case):
    public, research, modes, delta = case
    eng = anonydb.connect()
    try:
        load(eng, public, research, modes)
        by_person = check_presence("rel", "pub", ["a", "b"], delta=delta, engine=eng, person="pid")
        by_row = check_presence("rel", "pub", ["a", "b"], delta=delta, engine=eng)
    finally:
        eng.close()
    a, b = by_person.verdicts[0], by_row.verdicts[0]
    assert (a.holds, a.achieved, a.groups, a.violating_groups, a.violating_rows) == \
        (b.holds, b.achieved, b.groups, b.violating_groups, b.violating_rows)
    assert groups(a) == groups(b)
    assert by_person.public_outside == by_row.public_outside
    assert sorted(map(sorted_items, by_person.public_outside_rows)) == \
        sorted(map(sorted_items, by_row.public_outside_rows))


def sorted_items(d: dict) -> list:
    return sorted((k, str(x)) for k, x in d.items())


def groups(v) -> list:
    """A verdict's violating groups without their class numbers (the classes are numbered in no
    particular order)."""
    return sorted((sorted_items({k: x for k, x in g.key.items() if k != "class"}), g.size, g.value,
                   sorted(g.distribution.items())) for g in v.violations)


# ------------------------------------------------------------------------------------------------
# Nergiz & Clifton Tables 1-2 (spec-presence-survey 1.4.3), some persons' rows repeated
# ------------------------------------------------------------------------------------------------
REPEATS = {"b": 3, "f": 2, "h": 4}  # visits per person (others: one)


@pytest.fixture
def table1_visits(engine):
    make_table(engine, "p", ["name", "zip", "age", "nat", "sen"], TABLE_1)
    engine.execute("CREATE TABLE t AS SELECT name, zip, age, nat FROM p WHERE sen = 1")
    cases_ = " ".join(f"WHEN '{k}' THEN {n}" for k, n in REPEATS.items())
    engine.execute(f"CREATE TABLE tv AS SELECT t.*, r.visit FROM t, range(CASE name {cases_} ELSE 1 END) AS r(visit)")
    assert engine.scalar("SELECT count(*) FROM tv") == 5 + sum(n - 1 for n in REPEATS.values())
    return engine


@pytest.mark.parametrize("node,lo,hi,classes", [
    ((0, 0, 0), F(0), F(1), 6),
    ((1, 3, 1), F(1, 3), F(2, 3), 3),
    ((3, 3, 2), F(1, 2), F(2, 3), 2),  # the paper's example: (1/2, 2/3)-present
    ((5, 3, 3), F(5, 9), F(5, 9), 1),
])
def test_table_2_with_repeated_records(table1_visits, node, lo, hi, classes):
    e = table1_visits
    generalize(e, "t", dict(zip(QI, node)), H, out="ts")
    generalize(e, "tv", dict(zip(QI, node)), H, out="tvs")
    plain = check_presence("ts", "p", QI, delta="1/2,2/3", engine=e, hierarchies=H)
    r = check_presence("tvs", "p", QI, delta="1/2,2/3", engine=e, hierarchies=H, person="name")
    v, w = r.verdicts[0], plain.verdicts[0]
    assert (v.achieved["delta_min"], v.achieved["delta_max"]) == (lo, hi) == \
        (w.achieved["delta_min"], w.achieved["delta_max"])
    assert v.groups == w.groups == classes
    assert v.holds == w.holds == (F(1, 2) <= lo and hi <= F(2, 3))
    assert groups(v) == groups(w)
    assert r.public_outside == plain.public_outside
    assert (r.person, r.persons) == ("name", 5)
    # by rows, the repeated visits would look like more members than the public class holds
    if node == (0, 0, 0):
        with pytest.raises(InputError, match="more private rows than public rows"):
            check_presence("tvs", "p", QI, delta="1/2,2/3", engine=e, hierarchies=H)


def test_report_speaks_of_persons(table1_visits):
    e = table1_visits
    generalize(e, "tv", {"zip": 1, "age": 3, "nat": 1}, H, out="tvs")
    r = check_presence("tvs", "p", QI, delta="1/2,2/3", engine=e, hierarchies=H, person="name")
    text = r.format()
    assert "the release's 11 records are 5 persons by name" in text
    assert "1 of 3 groups (3 persons) violate" in text
    assert "size 3 persons value 1/3" in text
    d = r.to_dict()
    assert (d["person"], d["persons"]) == ("name", 5)


# ------------------------------------------------------------------------------------------------
# c-confident delta-presence by persons: the row-level check on T's persons
# ------------------------------------------------------------------------------------------------
def confident_oracle(public, research, modes) -> dict:
    """Per class labels: (n1 = distinct research persons, f = per QI the D-persons its label
    covers, D = the public persons not in T)."""
    members = {r[0] for r in research}
    d = [(a, b) for pid, a, b in public if pid not in members]
    out = {}
    for pid, a, b, _ in research:
        la, lb = label_a(a, modes[0])[0], label_b(b, modes[1])
        out.setdefault((la, lb), set()).add(pid)
    sig = {}
    for (la, lb), ps in out.items():
        fa = sum(1 for a, _ in d if label_a(a, modes[0])[0] == la)
        fb = sum(1 for _, b in d if label_b(b, modes[1]) == lb)
        sig[label_key(la, lb)] = (len(ps), [fa, fb])
    return {"signatures": sig, "U": len(d), "persons": len(members)}


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from(["1/2", "9/10", "1"]))
def test_confident_by_persons(case, c):
    public, research, modes, delta = case
    want = confident_oracle(public, research, modes)
    eng = anonydb.connect()
    try:
        load(eng, public, research, modes)
        make_table(eng, "priv", ["pid", "a", "b", "visit"], research)
        # T's persons, one row each, released the same way: the row-level check's input
        eng.execute("CREATE TABLE priv1 AS SELECT DISTINCT pid, a, b FROM priv")
        cols = [c_ for c_, _ in eng.columns("rel") if c_ != "visit"]
        eng.execute(f"CREATE TABLE rel1 AS SELECT DISTINCT {', '.join(cols)} FROM rel")
        marg = population_marginals(eng, "pub", ["a", "b"])
        kw = dict(qi=["a", "b"], delta=delta, c=c, marginals=marg, engine=eng, exact=True, max_classes=100)
        r = check_confident("rel", private="priv", person="pid", **kw)
        row = check_confident("rel1", private="priv1", **kw)
        r_rows = check_confident("rel", want["persons"], private="priv", person="pid", **kw)
    finally:
        eng.close()
    assert (r.holds, r.confidence, r.classes, r.violating, r.rows, r.U) == \
        (row.holds, row.confidence, row.classes, row.violating, row.rows, row.U)
    assert sorted((w["confidence"], sorted(w["class"].items())) for w in r.worst) == \
        sorted((w["confidence"], sorted(w["class"].items())) for w in row.worst)
    assert (r.rows, r.U, r.records, r.person) == (want["persons"], want["U"], len(research), "pid")
    got = {label_key(w["class"]["a"], w["class"]["b"]): (w["n1"], w["f"]) for w in r.worst}
    assert got == want["signatures"]
    assert r_rows.holds == r.holds


# ------------------------------------------------------------------------------------------------
# bad input: one line each
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def small(engine):
    make_table(engine, "pub", ["pid", "a", "b"], [("p1", 1, "x"), ("p2", 1, "x"), ("p3", 2, "y"), ("p4", 2, "y")])
    make_table(engine, "rel", ["pid", "a", "b"], [("p1", 1, "x"), ("p1", 1, "x"), ("p3", 2, "y")])
    make_table(engine, "reln", ["pid", "a", "b"], [("p1", 1, "x"), (None, 1, "x"), ("p3", 2, "y")])
    make_table(engine, "relv", ["pid", "a", "b"], [("p1", 1, "x"), ("p1", 2, "y"), ("p3", 2, "y")])
    make_table(engine, "relbig", ["pid", "a", "b"], [("p1", 1, "x"), ("p2", 1, "x"), ("p5", 1, "x")])
    # p1's two records released under two labels (classes (*, x) and (1, x))
    make_table(engine, "rels", ["pid", "a", "b"], [("p1", "*", "x"), ("p1", "1", "x"), ("p3", "2", "y")])
    return engine


def one_line(excinfo) -> str:
    msg = str(excinfo.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("fn", ["presence", "confident"])
@pytest.mark.parametrize("table,person,match", [
    ("rel", "nope", "person column 'nope' .*not found in the release rel"),
    ("reln", "pid", "a NULL is not a person"),
    ("rel", "a", "both as the person column and as a quasi-identifier"),
])
def test_bad_person(small, fn, table, person, match):
    with pytest.raises(InputError, match=match) as ei:
        if fn == "presence":
            check_presence(table, "pub", ["a", "b"], delta="0,1", engine=small, person=person)
        else:
            marg = population_marginals(small, "pub", ["a", "b"])
            check_confident(table, qi=["a", "b"], delta="0,1", c="1/2", marginals=marg, engine=small, person=person)
    one_line(ei)


def test_presence_more_persons_than_public(small):
    with pytest.raises(InputError, match=r"not within the public table pub: 1 private persons match no public "
                                         r"row|more private persons than public rows") as ei:
        check_presence("relbig", "pub", ["a", "b"], delta="0,1", engine=small, person="pid")
    one_line(ei)


def test_presence_counts_each_class_a_person_lies_in(small):
    # p1's records lie in classes (1, x) and (2, y): counted once in each
    r = check_presence("relv", "pub", ["a", "b"], delta="0,1", engine=small, person="pid", classes_out="k")
    assert sorted(small.fetch_rows("SELECT a, b, n_private, n_public FROM k")[1]) == [(1, "x", 1, 2), (2, "y", 2, 2)]
    assert r.verdicts[0].achieved == {"delta_min": F(1, 2), "delta_max": F(1)}


def test_confident_refuses_a_varying_qi_and_a_split_person(small):
    marg = population_marginals(small, "pub", ["a", "b"])
    kw = dict(qi=["a", "b"], delta="0,1", c="1/2", marginals=marg, engine=small, person="pid")
    with pytest.raises(InputError, match="quasi-identifier 'a' takes several values for person 'p1'") as ei:
        check_confident("relv", **kw)
    one_line(ei)
    with pytest.raises(InputError, match="person 'p1' has records in several classes of the release rels") as ei:
        check_confident("rels", private="rel", **kw)
    one_line(ei)
    with pytest.raises(InputError, match="holds 2 persons, not the 3 expected"):
        check_confident("rel", 3, **kw)
