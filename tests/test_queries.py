"""COUNT query answering and the query-error workload [spec-closeness-slicing 6.4;
spec-presence-survey Table III]: worked example, brute-force oracles, workload properties,
statement counts, Adult."""

from __future__ import annotations

import math
import random
import time
from collections import Counter, defaultdict
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb import Hierarchy
from anonydb.errors import InfeasibleError, InputError
from anonydb.methods import anatomy, anonymize
from anonydb.utility.queries import Query, anatomy_estimate, anatomy_estimates, generalized_estimate, generalized_estimates, query_error, true_count, true_counts, workload

from conftest import examples, make_table, need_shared

# spec-presence-survey Table III(a), with the erratum E8's missing "32 Male" restored: (age, sex, disease, group)
TABLE_III = [(30, "Male", "Hep", 1), (30, "Male", "Hep", 1), (30, "Male", "HIV", 1), (32, "Male", "Hep", 1),
             (32, "Male", "HIV", 1), (32, "Male", "HIV", 1), (36, "Female", "Flu", 2), (38, "Female", "Flu", 2),
             (38, "Female", "Heart", 2), (38, "Female", "Heart", 2)]


def survey_tables(engine):
    make_table(engine, "t3", ["age", "sex", "disease", "g"], TABLE_III)
    make_table(engine, "a_qit", ["age", "sex", "group_id"], [(a, s, g) for a, s, _, g in TABLE_III])
    make_table(engine, "a_st", ["group_id", "disease", "count"],
               [(1, "Hep", 3), (1, "HIV", 3), (2, "Flu", 2), (2, "Heart", 2)])
    box = {1: ("[30, 34]", 30, 34), 2: ("[35, 39]", 35, 39)}  # Table III(b): [30-35) and [35-40)
    make_table(engine, "gen", ["eq_class", "age", "age_lo", "age_hi", "sex", "disease"],
               [(g, *box[g], s, d) for _, s, d, g in TABLE_III])


def test_survey_table_iii(engine):
    """Query "age = 38 AND disease = Heart": true 2, anatomy 3 * 2/4 = 1.5, generalized 2 * 1/5 = 0.4."""
    survey_tables(engine)
    q = Query({"age": {38}}, {"Heart"})
    assert true_count(engine, "t3", q, "disease") == 2
    assert anatomy_estimate(engine, "a_qit", "a_st", q, "disease") == pytest.approx(1.5)
    assert generalized_estimate(engine, "gen", q, "disease") == pytest.approx(0.4)
    # the same query as a range, and the pair released by anonydb's own Anatomy
    q2 = Query({"age": (38, 38)}, {"Heart"})
    anatomy("t3", "age,sex", "disease", l=2, out="an", engine=engine, groups="g")
    assert anatomy_estimate(engine, "an_qit", "an_st", q2, "disease") == pytest.approx(1.5)
    assert generalized_estimate(engine, "gen", q2, "disease") == pytest.approx(0.4)
    err = query_error(engine, "t3", [q, q2], qit="an_qit", st="an_st", sensitive="disease")
    assert err["rho"] == pytest.approx(25.0) and err["median"] == pytest.approx(25.0)
    assert err["actual"] == [2, 2] and err["estimated"] == pytest.approx([1.5, 1.5])
    err = query_error(engine, "t3", [q, q2], release="gen", sensitive="disease")
    assert err["rho"] == pytest.approx(80.0) and err["used"] == 2 and err["dropped"] == 0


def test_hand_checked_predicates(engine):
    """Ranges across boxes, value sets, no sensitive predicate, sensitive-only, empty sets."""
    survey_tables(engine)
    # ages 31..37, any sex: true 4 (32 x3, 36); group 1 [30, 34] has 4 of 5 ages, group 2 [35, 39] 3 of 5
    q = Query({"age": (31, 37), "sex": ["Male", "Female"]}, None)
    assert true_count(engine, "t3", q, "disease") == 4
    assert anatomy_estimate(engine, "a_qit", "a_st", q, "disease") == pytest.approx(4.0)
    assert generalized_estimate(engine, "gen", q, "disease") == pytest.approx(6 * 4 / 5 + 4 * 3 / 5)
    # only a sensitive predicate: every estimate is exact
    q = Query({}, {"HIV", "Flu"})
    assert true_count(engine, "t3", q, "disease") == 5
    assert anatomy_estimate(engine, "a_qit", "a_st", q, "disease") == pytest.approx(5.0)
    assert generalized_estimate(engine, "gen", q, "disease") == pytest.approx(5.0)
    # no predicate at all: the table size; an empty value set matches nothing
    assert true_count(engine, "t3", Query(), "disease") == 10
    assert anatomy_estimate(engine, "a_qit", "a_st", Query(), "disease") == pytest.approx(10.0)
    assert generalized_estimate(engine, "gen", Query(), None) == pytest.approx(10.0)
    assert true_count(engine, "t3", Query({"sex": set()}), "disease") == 0
    assert generalized_estimate(engine, "gen", Query({"sex": set()}), "disease") == 0.0
    # Male AND 30..31 AND Hep: true 2; anatomy 3 (rows 30,30,30) * 3/6 = 1.5; generalized 3 Hep * 2/5
    q = Query({"sex": {"Male"}, "age": (30, 31)}, {"Hep"})
    assert true_count(engine, "t3", q, "disease") == 2
    assert anatomy_estimate(engine, "a_qit", "a_st", q, "disease") == pytest.approx(1.5)
    assert generalized_estimate(engine, "gen", q, "disease") == pytest.approx(1.2)


def test_survey_table_ii_hierarchy_and_sets(engine):
    """spec-presence-survey Table II(c): (Professional, Male, [35-40]) x3 and (Artist, Female,
    [30-35]) x4 with the taxonomy Professional = {Engineer, Lawyer}, Artist = {Writer, Dancer}."""
    h = Hierarchy.from_rows([("Engineer", "Professional", "*"), ("Lawyer", "Professional", "*"),
                             ("Writer", "Artist", "*"), ("Dancer", "Artist", "*")])
    rows = [(1, "Professional", "Male", "[35, 39]", 35, 39, "Hepatitis"), (1, "Professional", "Male", "[35, 39]", 35, 39, "Hepatitis"),
            (1, "Professional", "Male", "[35, 39]", 35, 39, "HIV"), (2, "Artist", "Female", "[30, 34]", 30, 34, "Flu"),
            (2, "Artist", "Female", "[30, 34]", 30, 34, "HIV"), (2, "Artist", "Female", "[30, 34]", 30, 34, "HIV"),
            (2, "Artist", "Female", "[30, 34]", 30, 34, "HIV")]
    make_table(engine, "c2", ["eq_class", "job", "sex", "age", "age_lo", "age_hi", "disease"], rows)
    # Engineer AND HIV: 1 HIV row of the Professional group, 1 of its 2 jobs
    q = Query({"job": {"Engineer"}}, {"HIV"})
    assert generalized_estimate(engine, "c2", q, "disease", hierarchies={"job": h}) == pytest.approx(0.5)
    # Dancer or Writer, age 30..31: the 4 Artist rows, 2/2 jobs, 2/5 ages
    q = Query({"job": {"Dancer", "Writer"}, "age": (30, 31)})
    assert generalized_estimate(engine, "c2", q, "disease", hierarchies={"job": h}) == pytest.approx(1.6)
    # without the hierarchy "Professional" is a single value, which no job equals
    assert generalized_estimate(engine, "c2", Query({"job": {"Engineer"}}), "disease") == 0.0
    # value-set labels
    make_table(engine, "c3", ["job", "disease"], [("{Engineer, Lawyer}", "HIV"), ("{Dancer, Lawyer, Writer}", "Flu"),
                                                  ("Lawyer", "Flu")])
    q = Query({"job": {"Lawyer", "Writer"}})
    assert generalized_estimate(engine, "c3", q, "disease") == pytest.approx(1 / 2 + 2 / 3 + 1)
    with pytest.raises(InputError, match="enumerated hierarchy"):
        generalized_estimate(engine, "c2", Query({"job": {"Engineer"}}), "disease",
                             hierarchies={"job": Hierarchy.masking(3)})


def test_real_valued_and_date_bounds(engine):
    """Non-integer bounds use interval lengths; date bounds count days."""
    import datetime as dt
    engine.execute("CREATE TABLE r (x VARCHAR, x_lo DOUBLE, x_hi DOUBLE, d VARCHAR, d_lo DATE, d_hi DATE, s VARCHAR)")
    engine.execute("INSERT INTO r VALUES ('[1, 3]', 1.0, 3.0, '[2020-01-01, 2020-01-10]', DATE '2020-01-01', DATE '2020-01-10', 'a'), "
                   "('2', 2.0, 2.0, '2020-01-05', DATE '2020-01-05', DATE '2020-01-05', 'b')")
    assert generalized_estimate(engine, "r", Query({"x": (2.5, 10)}), "s") == pytest.approx(0.25)
    assert generalized_estimate(engine, "r", Query({"x": (0, 2)}), "s") == pytest.approx(1.5)
    assert generalized_estimate(engine, "r", Query({"x": {2.0}}), "s") == pytest.approx(1.0)  # a point has length 0
    q = Query({"d": (dt.date(2020, 1, 4), dt.date(2020, 1, 5))})
    assert generalized_estimate(engine, "r", q, "s") == pytest.approx(2 / 10 + 1)
    assert generalized_estimate(engine, "r", Query({"d": {dt.date(2020, 1, 5)}}, {"a"}), "s") == pytest.approx(0.1)
    engine.execute("CREATE TABLE src (d DATE, n VARCHAR, s VARCHAR)")
    engine.execute("INSERT INTO src VALUES (DATE '2020-01-04', '10', 'a'), (DATE '2020-01-09', '9', 'a'), (NULL, NULL, 'b')")
    assert true_count(engine, "src", Query({"d": (dt.date(2020, 1, 1), dt.date(2020, 1, 5))}), "s") == 1
    assert true_count(engine, "src", Query({"n": (9, 10)}), "s") == 2  # a range on text compares numbers
    assert true_count(engine, "src", Query({"n": {"9", "10"}}), "s") == 2
    assert true_count(engine, "src", Query({"n": {None}}), "s") == 0  # NULL matches nothing


# -- brute-force oracles ---------------------------------------------------------------------------
LEAVES = ["x", "y", "z", "w"]
HIER = Hierarchy.from_rows([("x", "A", "*"), ("y", "A", "*"), ("z", "B", "*"), ("w", "B", "*")])
C_VALUES = [0.5, 1.25, 2.0, 3.5, 4.75]


def matches(value, pred) -> bool:
    if value is None:
        return False
    if isinstance(pred, tuple):
        return pred[0] <= value <= pred[1]
    return value in pred


def oracle_true(rows, q: Query) -> int:
    """rows: dicts with a, b, c, s."""
    return sum(1 for r in rows if all(matches(r[c], p) for c, p in q.qi.items())
               and (not q.sensitive or r["s"] in q.sensitive))


def oracle_anatomy(rows, groups, q: Query) -> Fraction:
    by = defaultdict(list)
    for r, g in zip(rows, groups):
        by[g].append(r)
    est = Fraction(0)
    for g, rs in by.items():
        a = sum(1 for r in rs if all(matches(r[c], p) for c, p in q.qi.items()))
        b = sum(1 for r in rs if r["s"] in q.sensitive) if q.sensitive else len(rs)
        est += Fraction(a * b, len(rs))
    return est


def label_values(label: str, hier: Hierarchy | None) -> set[str]:
    if hier is not None:
        leaves = {r[0] for r in hier.rows if label in r}
        if leaves:
            return leaves
    if label.startswith("{") and label.endswith("}"):
        return set(label[1:-1].split(", "))
    return {label}


def fraction(row: dict, col: str, pred, hier) -> Fraction:
    """|V ∩ R| / |R| for one released row, written from the definitions (no shared code)."""
    if f"{col}_lo" in row:
        lo, hi = row[f"{col}_lo"], row[f"{col}_hi"]
        if isinstance(lo, int):
            values = range(lo, hi + 1)
            return Fraction(sum(1 for v in values if matches(v, pred)), len(values))
        lo, hi = Fraction(lo), Fraction(hi)
        if lo == hi:
            return Fraction(int(matches(lo, pred if isinstance(pred, tuple) else {Fraction(v) for v in pred})))
        if not isinstance(pred, tuple):
            return Fraction(0)
        a, b = Fraction(pred[0]), Fraction(pred[1])
        return max(Fraction(0), min(hi, b) - max(lo, a)) / (hi - lo)
    r = label_values(row[col], hier)
    if isinstance(pred, tuple):
        return Fraction(sum(1 for v in r if matches(float(v), pred)), len(r))
    return Fraction(len(r & {str(v) for v in pred}), len(r))


def oracle_generalized(release_rows, q: Query, hierarchies=None) -> Fraction:
    hierarchies = hierarchies or {}
    est = Fraction(0)
    for row in release_rows:
        if q.sensitive and row["s"] not in q.sensitive:
            continue
        w = Fraction(1)
        for c, p in q.qi.items():
            w *= fraction(row, c, p, hierarchies.get(c))
        est += w
    return est


def generalize_groups(rows, groups, b_mode: str) -> list[dict]:
    """A release in Mondrian's format from a grouping: a, c as [lo, hi] with bounds, b as a value
    set or a hierarchy node (the lowest common ancestor)."""
    by = defaultdict(list)
    for r, g in zip(rows, groups):
        by[g].append(r)
    out = []
    for g, rs in by.items():
        alo, ahi = min(r["a"] for r in rs), max(r["a"] for r in rs)
        clo, chi = min(r["c"] for r in rs), max(r["c"] for r in rs)
        bs = sorted({r["b"] for r in rs})
        if b_mode == "hier":
            anc = [set(HIER.ancestors(v)) for v in bs]
            common = set.intersection(*anc)
            blabel = next(n for n in HIER.ancestors(bs[0]) if n in common)
        else:
            blabel = bs[0] if len(bs) == 1 else "{" + ", ".join(bs) + "}"
        for r in rs:
            out.append(dict(eq_class=g, a=f"[{alo}, {ahi}]", a_lo=alo, a_hi=ahi, b=blabel,
                            c=f"[{clo}, {chi}]", c_lo=clo, c_hi=chi, s=r["s"]))
    return out


@st.composite
def tables(draw):
    n = draw(st.integers(1, 25))
    rows = [dict(a=draw(st.integers(0, 9)), b=draw(st.sampled_from(LEAVES)), c=draw(st.sampled_from(C_VALUES)),
                 s=draw(st.sampled_from(["p", "q", "r"]))) for _ in range(n)]
    groups = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    return rows, groups


@st.composite
def queries(draw):
    qi = {}
    if draw(st.booleans()):
        if draw(st.booleans()):
            lo = draw(st.integers(-1, 10))
            qi["a"] = (lo, lo + draw(st.integers(-1, 6)))
        else:
            qi["a"] = set(draw(st.lists(st.integers(0, 10), max_size=3)))
    if draw(st.booleans()):
        qi["b"] = set(draw(st.lists(st.sampled_from(LEAVES + ["v"]), max_size=3)))
    if draw(st.booleans()):
        if draw(st.booleans()):
            lo = draw(st.sampled_from([0.0, 0.5, 1.0, 1.25, 2.5, 3.5]))
            qi["c"] = (lo, lo + draw(st.sampled_from([0.0, 0.75, 1.5, 3.0])))
        else:
            qi["c"] = set(draw(st.lists(st.sampled_from(C_VALUES), max_size=2)))
    sens = draw(st.one_of(st.none(), st.sets(st.sampled_from(["p", "q", "r", "t"]), max_size=3)))
    return Query(qi, sens)


def load(engine, rows, groups, b_mode):
    make_table(engine, "src", ["a", "b", "c", "s", "g"], [(r["a"], r["b"], r["c"], r["s"], g) for r, g in zip(rows, groups)])
    make_table(engine, "qit", ["a", "b", "c", "group_id"], [(r["a"], r["b"], r["c"], g) for r, g in zip(rows, groups)])
    st_rows = Counter((g, r["s"]) for r, g in zip(rows, groups))
    make_table(engine, "st", ["group_id", "s", "count"], [(g, s, k) for (g, s), k in st_rows.items()])
    rel = generalize_groups(rows, groups, b_mode)
    cols = ["eq_class", "a", "a_lo", "a_hi", "b", "c", "c_lo", "c_hi", "s"]
    make_table(engine, "rel", cols, [tuple(r[c] for c in cols) for r in rel])
    return rel


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables(), st.lists(queries(), min_size=1, max_size=8), st.sampled_from(["set", "hier"]))
def test_oracle_random_tables(data, qs, b_mode):
    rows, groups = data
    eng = anonydb.connect()
    try:
        rel = load(eng, rows, groups, b_mode)
        hiers = {"b": HIER} if b_mode == "hier" else None
        assert true_counts(eng, "src", qs, "s") == [oracle_true(rows, q) for q in qs]
        assert anatomy_estimates(eng, "qit", "st", qs, "s") == pytest.approx(
            [float(oracle_anatomy(rows, groups, q)) for q in qs], abs=1e-9)
        assert generalized_estimates(eng, "rel", qs, "s", hierarchies=hiers) == pytest.approx(
            [float(oracle_generalized(rel, q, hiers)) for q in qs], abs=1e-9)
        # one query at a time gives the same answers as the batch
        q = qs[0]
        assert true_count(eng, "src", q, "s") == oracle_true(rows, q)
        # the original table as its own release, and one record per group, are exact
        assert generalized_estimates(eng, "src", qs, "s") == pytest.approx([oracle_true(rows, q) for q in qs])
    finally:
        eng.close()


@settings(max_examples=examples(12, slow=75), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from(LEAVES), st.sampled_from(["p", "q", "r"])),
                min_size=4, max_size=30),
       st.lists(queries(), min_size=1, max_size=6), st.sampled_from(["order", "hierarchy"]))
def test_oracle_on_anonydb_releases(rows, qs, categorical):
    """The releases anonydb writes (Mondrian with value-set or hierarchy-node labels; Anatomy)
    against oracles reading them row by row."""
    qs = [Query({c: p for c, p in q.qi.items() if c != "c"}, q.sensitive) for q in qs]
    eng = anonydb.connect()
    try:
        make_table(eng, "t", ["a", "b", "s"], rows)
        anonymize("t", ["a", "b"], "s", out="rel", engine=eng, k=2, categorical=categorical,
                  hierarchies={"b": HIER} if categorical == "hierarchy" else None)
        cols, data = eng.fetch_rows("SELECT * FROM rel")
        rel = [dict(zip(cols, r)) for r in data]
        hiers = {"b": HIER}
        assert generalized_estimates(eng, "rel", qs, "s", hierarchies=hiers) == pytest.approx(
            [float(oracle_generalized(rel, q, hiers)) for q in qs], abs=1e-9)
        if max(Counter(s for _, _, s in rows).values()) * 2 <= len(rows):  # Anatomy with l = 2 is feasible
            anatomy("t", "a,b", "s", l=2, out="an", engine=eng)
            qit = eng.fetch_rows("SELECT a, b, group_id FROM an_qit")[1]
            st_rows = eng.fetch_rows("SELECT group_id, s, count FROM an_st")[1]
            expected = []
            for q in qs:
                est = Fraction(0)
                for g in {r[2] for r in qit}:
                    a = sum(1 for x, y, gid in qit if gid == g and all(
                        matches({"a": x, "b": y}[c], p) for c, p in q.qi.items()))
                    size = sum(k for gid, _, k in st_rows if gid == g)
                    b = sum(k for gid, v, k in st_rows if gid == g and (not q.sensitive or v in q.sensitive))
                    est += Fraction(a * b, size)
                expected.append(float(est))
            assert anatomy_estimates(eng, "an_qit", "an_st", qs, "s") == pytest.approx(expected, abs=1e-9)
            assert true_counts(eng, "t", qs, "s") == [
                oracle_true([dict(a=a, b=b, c=None, s=s) for a, b, s in rows], q) for q in qs]
    finally:
        eng.close()


# -- workload ---------------------------------------------------------------------------------------
def synthetic(engine, n=300, seed=1):
    rnd = random.Random(seed)
    rows = [(rnd.randint(17, 70), rnd.choice(["Male", "Female"]), rnd.choice(["HS", "BA", "MA", "PhD", "Assoc"]),
             str(rnd.randint(100, 140)), rnd.choice(["flu", "hiv", "cancer", "cold", "asthma", "none"])) for _ in range(n)]
    make_table(engine, "syn", ["age", "sex", "edu", "zip", "dis"], rows)
    return rows


@pytest.mark.parametrize("dim,sel", [(1, 0.1), (2, 0.1), (3, 0.3), (4, 0.5), (0, 0.2)])
def test_workload_properties(engine, dim, sel):
    rows = synthetic(engine)
    qi = ["age", "sex", "edu", "zip"]
    qs = workload(engine, "syn", qi, "dis", n=150, dim=dim, sel=sel, seed=7, numeric=["zip"])
    assert len(qs) == 150
    dom = {c: sorted({r[i] for r in rows}, key=(float if c in ("age", "zip") else str))
           for i, c in enumerate(["age", "sex", "edu", "zip", "dis"])}

    def bound(c):
        return max(1, math.floor(sel * len(dom[c]) + 0.5))

    for q in qs:
        assert len(q.qi) == dim and set(q.qi) <= set(qi)
        for c, p in q.qi.items():
            if c in ("age", "zip"):  # numeric (zip: VARCHAR listed in numeric): consecutive domain values
                assert isinstance(p, tuple)
                inside = [v for v in dom[c] if float(p[0]) <= float(v) <= float(p[1])]
                assert p[0] in dom[c] and p[1] in dom[c] and 1 <= len(inside) <= bound(c)
            else:
                assert isinstance(p, frozenset) and p <= set(dom[c]) and 1 <= len(p) <= bound(c)
        assert q.sensitive <= set(dom["dis"]) and 1 <= len(q.sensitive) <= bound("dis")
    counts = true_counts(engine, "syn", qs, "dis")
    assert all(c > 0 for c in counts)
    named = dict(age=0, sex=1, edu=2, zip=3)
    for q, c in list(zip(qs, counts))[:40]:  # brute force
        ok = sum(1 for r in rows if r[4] in q.sensitive and all(
            (float(p[0]) <= float(r[named[k]]) <= float(p[1])) if isinstance(p, tuple) else r[named[k]] in p
            for k, p in q.qi.items()))
        assert ok == c
    # reproducible with the seed, different with another
    assert workload(engine, "syn", qi, "dis", n=150, dim=dim, sel=sel, seed=7, numeric=["zip"]) == qs
    assert workload(engine, "syn", qi, "dis", n=150, dim=dim, sel=sel, seed=8, numeric=["zip"]) != qs


def test_workload_errors(engine):
    synthetic(engine, n=50)
    with pytest.raises(InputError, match="dim"):
        workload(engine, "syn", ["age", "sex"], "dis", dim=3)
    with pytest.raises(InputError, match="sel"):
        workload(engine, "syn", ["age"], "dis", dim=1, sel=1.5)
    with pytest.raises(InputError, match="not found"):
        workload(engine, "syn", ["nope"], "dis", dim=1)
    # x and y are never both non-NULL: every two-predicate query counts 0
    make_table(engine, "apart", ["x", "y", "s"], [(1, None, "a"), (None, "u", "a"), (2, None, "b")])
    with pytest.raises(InfeasibleError, match="true count of 0"):
        workload(engine, "apart", ["x", "y"], "s", n=5, dim=2, max_rounds=3)
    assert workload(engine, "apart", ["x", "y"], "s", n=0) == []


def test_query_error_inputs(engine):
    survey_tables(engine)
    q = Query({"age": {38}}, {"Heart"})
    with pytest.raises(InputError, match="give one release.*not several"):
        query_error(engine, "t3", [q], qit="a_qit", st="a_st", release="gen", sensitive="disease")
    with pytest.raises(InputError, match="both qit and st"):
        query_error(engine, "t3", [q], qit="a_qit", sensitive="disease")
    with pytest.raises(InputError, match="give qit and st"):
        query_error(engine, "t3", [q], sensitive="disease")
    with pytest.raises(InputError, match="sensitive attribute"):
        true_count(engine, "t3", Query({"disease": {"Flu"}}), "disease")
    with pytest.raises(InputError, match="not found"):
        true_count(engine, "t3", Query({"zip": {1}}), "disease")
    with pytest.raises(InputError, match="range"):
        true_count(engine, "t3", Query({"age": (1, 2, 3)}), "disease")
    with pytest.raises(InputError, match="nonzero true count"):
        query_error(engine, "t3", [Query({"age": {99}})], release="gen", sensitive="disease")
    err = query_error(engine, "t3", [q, Query({"age": {99}})], release="gen", sensitive="disease")
    assert err["dropped"] == 1 and err["used"] == 1 and err["errors"][1] is None


def test_statement_count_does_not_grow(engine):
    """A batch is a fixed number of statements, whatever the number of queries."""
    synthetic(engine)
    qi = ["age", "sex", "edu"]
    anonymize("syn", qi, "dis", out="rel", engine=engine, k=5, categorical="order")
    anatomy("syn", qi, "dis", l=2, out="an", engine=engine)
    small = workload(engine, "syn", qi, "dis", n=20, dim=2, seed=1)
    big = workload(engine, "syn", qi, "dis", n=200, dim=2, seed=2)
    h = Hierarchy.from_rows([(v, "any") for v in ["HS", "BA", "MA", "PhD", "Assoc"]])

    def statements(f):
        n0 = len(engine.log)
        f()
        return len(engine.log) - n0

    for run in (lambda qs: true_counts(engine, "syn", qs, "dis"),
                lambda qs: anatomy_estimates(engine, "an_qit", "an_st", qs, "dis"),
                lambda qs: generalized_estimates(engine, "rel", qs, "dis", hierarchies={"edu": h}),
                lambda qs: query_error(engine, "syn", qs, release="rel", sensitive="dis"),
                lambda qs: query_error(engine, "syn", qs, qit="an_qit", st="an_st", sensitive="dis")):
        a, b = statements(lambda: run(small)), statements(lambda: run(big))
        assert a == b <= 5


# -- Adult -----------------------------------------------------------------------------------------
def test_adult_mondrian_query_error():
    need_shared()
    from anonydb.datasets import load_adult

    eng = anonydb.connect()
    try:
        load_adult(eng, "adult")
        qi = ["age", "sex", "race", "education"]
        anonymize("adult", qi, "occupation", out="rel", engine=eng, k=10, categorical="order")
        qs = workload(eng, "adult", qi, "occupation", n=1000, dim=2, sel=0.1, seed=0)
        assert len(qs) == 1000
        n0, t0 = len(eng.log), time.perf_counter()
        err = query_error(eng, "adult", qs, release="rel", sensitive="occupation")
        seconds, statements = time.perf_counter() - t0, len(eng.log) - n0
        assert math.isfinite(err["rho"]) and err["rho"] >= 0 and err["used"] == 1000 and err["dropped"] == 0
        assert math.isfinite(err["median"]) and 0 <= err["median"] <= err["max"]
        assert statements <= 5
        # the original table as the release: every estimate is exact
        exact = query_error(eng, "adult", qs, release="adult", sensitive="occupation")
        assert exact["rho"] == 0 and exact["estimated"] == [float(a) for a in exact["actual"]]
        print(f"\nAdult, 1,000 queries (dim 2, sel 0.1), Mondrian k = 10: rho = {err['rho']:.2f}%, "
              f"median {err['median']:.2f}%, {statements} statements, {seconds:.2f} s")
    finally:
        eng.close()
