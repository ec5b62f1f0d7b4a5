"""Cross-check anonydb against pycanon (an independent checker; see docs/pycanon.md).

Part 1: on Adult, anonydb, pycanon and a hand computation agree on k, distinct l, entropy l
and t-closeness (equal EMD for a categorical SA, ordered EMD for a numeric one).
Part 2: where pycanon is wrong, anonydb's value is asserted against a hand computation and
pycanon's different output is asserted too, so a change in pycanon makes the test fail.

pycanon conventions: entropy l = int(min_E e**H(E)) with natural log, truncated to an int;
t-closeness picks ordered EMD (rank distance / (m-1)) for numeric columns and equal EMD for
string columns; recursive_c_l_diversity returns (c, l) with l = the table's distinct l.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

pycanon = pytest.importorskip("pycanon", reason="pycanon is not installed (pip install 'anonydb[test]')")
pd = pytest.importorskip("pandas", reason="pandas is needed to feed pycanon")
from pycanon import anonymity as pa  # noqa: E402

import anonydb  # noqa: E402
from anonydb.sqlgen import literal  # noqa: E402

from conftest import DATASETS  # noqa: E402
ADULT = DATASETS / "adult" / "adult.csv"

FULL_QI = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
CONFIGS = {  # name: (QIs, categorical SA)
    "full": (FULL_QI, "occupation"),
    "four": (["sex", "race", "marital-status", "workclass"], "salary-class"),
    "coarse": (["sex", "race"], "occupation"),
}
#: the configurations the agreement tests take: all QIs (pycanon takes 100 s on t) in the slow tier
CFG = [pytest.param("full", marks=pytest.mark.slow), "four", "coarse"]
ORDERED = {  # name: (QIs, numeric SA)
    "age3": (["sex", "race", "marital-status"], "age"),
    "age2": (["sex", "race"], "age"),
}


# -- hand computations (NULL/NaN is a value of its own) ------------------------------------

def groups(df, qi, sa) -> dict[tuple, Counter]:
    out: dict[tuple, Counter] = {}
    for row in df[qi + [sa]].astype(object).itertuples(index=False):
        vals = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else v for v in row]
        out.setdefault(tuple(vals[:-1]), Counter())[vals[-1]] += 1
    return out


def entropy(cnt: Counter) -> float:
    n = sum(cnt.values())
    return -math.fsum(c / n * math.log(c / n) for c in cnt.values())


def emd_equal(p: Counter, q: Counter) -> Fraction:
    n, nq = sum(p.values()), sum(q.values())
    return sum((max(Fraction(c, n) - Fraction(q[s], nq), 0) for s, c in p.items()), Fraction(0))


def _sort_key(v):
    return (v is None, v)  # NULL ranks last, as in anonydb


def emd_ordered(p: Counter, q: Counter) -> Fraction:
    dom = sorted(q, key=_sort_key)
    if len(dom) == 1:
        return Fraction(0)
    n, nq = sum(p.values()), sum(q.values())
    cum, total = Fraction(0), Fraction(0)
    for v in dom:
        cum += Fraction(p[v], n) - Fraction(q[v], nq)
        total += abs(cum)
    return total / (len(dom) - 1)


def t_of(df, qi, sa, emd) -> Fraction:
    q = sum(groups(df, qi, sa).values(), Counter())
    return max(emd(p, q) for p in groups(df, qi, sa).values())


def recursive_holds(cnt: Counter, c, l: int) -> bool:
    """(c,l): counts sorted descending r1 >= ... >= rm; holds iff r1 < c * (r_l + ... + r_m)."""
    r = sorted(cnt.values(), reverse=True)
    return len(r) >= l and r[0] < c * sum(r[l - 1:])


def min_integer_c(gs: dict, l: int) -> int:
    """The smallest integer c for which every group is recursive (c,l)-diverse."""
    return max(r[0] // sum(r[l - 1:]) + 1 for r in (sorted(g.values(), reverse=True) for g in gs.values()))


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def adult():
    if not ADULT.is_file():
        pytest.skip(f"the Adult data set {ADULT} is absent (the shared datasets folder sits beside the repository)")
    e = anonydb.connect()
    e.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv({literal(str(ADULT))}, delim = ';', header = true)")
    df = pd.read_csv(ADULT, sep=";")
    yield e, df
    e.close()


def adb(e, source, qi, sa, **params):
    return anonydb.check(source, qi, sa, engine=e, **params)


def write_csv(tmp_path, text: str) -> Path:
    p = tmp_path / "t.csv"
    p.write_text(text)
    return p


# -- part 1: agreement on Adult ---------------------------------------------------------------

def test_adult_shape(adult):
    e, df = adult
    assert len(df) == 30162 and not df.isna().any().any()
    assert adb(e, str(ADULT), ["sex"], None, k=1).rows == 30162  # anonydb's own CSV reading


@pytest.mark.parametrize("cfg", CFG)
def test_k_and_distinct_l_agree(adult, cfg):
    e, df = adult
    qi, sa = CONFIGS[cfg]
    gs = groups(df, qi, sa)
    r = adb(e, "adult", qi, sa, k=2, l=2)
    k, l = r["k-anonymity"].achieved["k"], r["l-diversity"].achieved["l"]
    assert k == pa.k_anonymity(df, qi) == min(sum(g.values()) for g in gs.values())
    assert l == pa.l_diversity(df, qi, [sa]) == min(len(g) for g in gs.values())
    assert r.groups == len(gs)


@pytest.mark.parametrize("cfg", CFG)
def test_entropy_l_agrees(adult, cfg):
    e, df = adult
    qi, sa = CONFIGS[cfg]
    exact = math.exp(min(entropy(g) for g in groups(df, qi, sa).values()))
    got = adb(e, "adult", qi, sa, l=2, l_variant="entropy")["l-diversity"].achieved["l"]
    assert got == pytest.approx(exact, rel=1e-12)
    # pycanon reports the same quantity (natural log, exp) truncated to an int
    assert pa.entropy_l_diversity(df, qi, [sa]) == math.floor(round(got, 9))
    if cfg == "coarse":
        assert 7.5 < got < 7.6  # a non-trivial value: pycanon says 7


@pytest.mark.parametrize("cfg", CFG)
def test_t_closeness_equal_agrees(adult, cfg):
    e, df = adult
    qi, sa = CONFIGS[cfg]
    t = adb(e, "adult", qi, sa, t=1, distance="equal")["t-closeness"].achieved["t"]
    assert t == t_of(df, qi, sa, emd_equal)  # exact Fraction
    assert float(t) == pytest.approx(pa.t_closeness(df, qi, [sa]), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("cfg", ORDERED)
def test_t_closeness_ordered_agrees(adult, cfg):
    e, df = adult
    qi, sa = ORDERED[cfg]
    t = adb(e, "adult", qi, sa, t=1, distance="ordered")["t-closeness"].achieved["t"]
    assert t == t_of(df, qi, sa, emd_ordered)
    assert float(t) == pytest.approx(pa.t_closeness(df, qi, [sa]), rel=1e-12, abs=1e-15)


def test_t_closeness_distance_follows_dtype(adult):
    """pycanon picks the distance from the dtype: equal EMD on numeric age needs age as text."""
    e, df = adult
    qi, sa = ORDERED["age3"]
    equal = adb(e, "adult", qi, sa, t=1, distance="equal")["t-closeness"].achieved["t"]
    ordered = adb(e, "adult", qi, sa, t=1, distance="ordered")["t-closeness"].achieved["t"]
    as_text = df.assign(age=df["age"].astype(str))
    assert equal == t_of(df, qi, sa, emd_equal)
    assert float(equal) == pytest.approx(pa.t_closeness(as_text, qi, [sa]), rel=1e-12)
    assert float(ordered) == pytest.approx(pa.t_closeness(df, qi, [sa]), rel=1e-12)
    assert abs(equal - ordered) > Fraction(1, 10)  # the two definitions really differ here


# -- part 2: where pycanon is wrong -----------------------------------------------------------

def test_recursive_cl_sorts_ascending(tmp_path):
    """_l_diversity.recursive_c_l_diversity sorts counts ascending (np.sort) and uses r_ec[0],
    the smallest count, as r1. Group A = {x:3, y:1, z:1}: 3 < c*1 needs c >= 4."""
    p = write_csv(tmp_path, "zip,d\n" + "A,x\n" * 3 + "A,y\nA,z\n" + "B,x\nB,x\nB,y\nB,y\nB,z\n")
    gs = {"A": Counter(x=3, y=1, z=1), "B": Counter(x=2, y=2, z=1)}
    assert min_integer_c(gs, 3) == 4
    assert not recursive_holds(gs["A"], 1, 3) and recursive_holds(gs["A"], 4, 3) and not recursive_holds(gs["A"], 3, 3)
    e = anonydb.connect()
    try:
        for c, holds in [(1, False), (3, False), (4, True)]:
            assert adb(e, str(p), ["zip"], "d", l=3, l_variant="recursive", c=c)["l-diversity"].holds is holds
        assert adb(e, str(p), ["zip"], "d", l=3, l_variant="recursive", c=1)["l-diversity"].achieved["l"] == 1
    finally:
        e.close()
    c, l = pa.recursive_c_l_diversity(pd.read_csv(p), ["zip"], ["d"])
    assert (c, l) == (1, 3)  # pycanon: (1,3)-diverse; in truth c must be 4


def test_recursive_cl_wrong_on_adult(adult):
    e, df = adult
    qi, sa = CONFIGS["coarse"]
    c_true = min_integer_c(groups(df, qi, sa), 10)
    assert c_true == 11
    assert pa.recursive_c_l_diversity(df, qi, [sa]) == (1, 10)
    v = lambda c: adb(e, "adult", qi, sa, l=10, l_variant="recursive", c=c)["l-diversity"]  # noqa: E731
    assert not v(1).holds and v(1).achieved["l"] == 4
    assert not v(10).holds and v(11).holds


def test_null_qi_rows_dropped(tmp_path):
    """get_equiv_class uses data.groupby(quasi_ident) (dropna=True): rows with a NULL QI vanish,
    so pycanon reports a larger k and l and a smaller t (its Q still counts those rows)."""
    p = write_csv(tmp_path, "zip,d\nA,x\nA,y\nB,x\nB,y\nB,z\n,x\n")
    df = pd.read_csv(p)
    assert groups(df, ["zip"], "d")[(None,)] == Counter(x=1)
    e = anonydb.connect()
    try:
        r = adb(e, str(p), ["zip"], "d", k=2, l=2, t=Fraction(1, 6), distance="equal")
    finally:
        e.close()
    assert r["k-anonymity"].achieved["k"] == 1 and r.groups == 3
    assert r["l-diversity"].achieved["l"] == 1
    assert r["t-closeness"].achieved["t"] == t_of(df, ["zip"], "d", emd_equal) == Fraction(1, 2)
    assert not r.holds
    assert pa.k_anonymity(df, ["zip"]) == 2
    assert pa.l_diversity(df, ["zip"], ["d"]) == 2
    assert pa.t_closeness(df, ["zip"], ["d"]) == pytest.approx(1 / 6)


def test_null_categorical_sa_crashes(tmp_path):
    """A NaN among strings: np.unique raises TypeError (l variants); t_closeness finds the
    column neither numeric nor string (pd.api.types.is_string_dtype is False) and raises."""
    p = write_csv(tmp_path, "zip,d\nA,x\nA,\nB,x\nB,y\nB,z\n")
    df = pd.read_csv(p)
    e = anonydb.connect()
    try:
        r = adb(e, str(p), ["zip"], "d", l=2, t=1, distance="equal")
    finally:
        e.close()
    assert r["l-diversity"].achieved["l"] == 2  # A = {x, NULL}
    assert r["t-closeness"].achieved["t"] == t_of(df, ["zip"], "d", emd_equal) == Fraction(2, 5)
    for f in (pa.l_diversity, pa.entropy_l_diversity, pa.recursive_c_l_diversity):
        with pytest.raises(TypeError):
            f(df, ["zip"], ["d"])
    with pytest.raises(ValueError, match="invalid sens_att value type"):
        pa.t_closeness(df, ["zip"], ["d"])


def test_null_numeric_sa(tmp_path):
    """NaN in a numeric SA: np.unique keeps one NaN (distinct l agrees), but `data[sa] == nan` is
    never true, so NaN rows count in |E| and in m yet in no value: entropy is NaN (int() raises)
    and the ordered EMD is wrong."""
    p = write_csv(tmp_path, "zip,s\nA,1\nA,\nB,1\nB,2\nB,3\nA,3\n")
    df = pd.read_csv(p)
    e = anonydb.connect()
    try:
        l = adb(e, str(p), ["zip"], "s", l=3)["l-diversity"].achieved["l"]
        h = adb(e, str(p), ["zip"], "s", l=3, l_variant="entropy")["l-diversity"]
        t = adb(e, str(p), ["zip"], "s", t=1, distance="ordered")["t-closeness"].achieved["t"]
    finally:
        e.close()
    assert l == 3 == pa.l_diversity(df, ["zip"], ["s"])
    assert h.holds and h.achieved["l"] == pytest.approx(3.0, rel=1e-12)  # both groups uniform over 3 values
    assert t == t_of(df, ["zip"], "s", emd_ordered) == Fraction(1, 9)  # NULL ranks last
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="NaN"):
            pa.entropy_l_diversity(df, ["zip"], ["s"])
    assert pa.t_closeness(df, ["zip"], ["s"]) == pytest.approx(1 / 6)


def test_ordered_emd_of_single_valued_groups(tmp_path):
    """A group with one sensitive value takes its EMD from that value's rank alone (the ordered
    plan skips the per-group segments for it): each group's EMD against the brute force, exactly,
    with single-valued groups at the first, a middle and the last rank, NULL (ranked last) alone and
    repeated, beside groups of two and three values and a group repeating one value."""
    rows = ["A,1", "B,5", "C,", "D,3", "D,3", "E,1", "E,5", "E,", "F,3", "F,5", "G,", "G,", "H,9", "I,1", "I,9"]
    p = write_csv(tmp_path, "zip,s\n" + "\n".join(rows) + "\n")
    df = pd.read_csv(p)
    e = anonydb.connect()
    try:
        v = adb(e, str(p), ["zip"], "s", t=0, distance="ordered", max_groups=None)["t-closeness"]
    finally:
        e.close()
    g = groups(df, ["zip"], "s")
    q = sum(g.values(), Counter())
    want = {z: emd_ordered(c, q) for (z,), c in g.items()}
    assert all(w > 0 for w in want.values())  # t = 0: every group violates and is listed
    assert {x.key["zip"]: x.value for x in v.violations} == want
    # by hand: Q = (3, 3, 3, 2, 4)/15 over 1, 3, 5, 9, NULL; {1}: (12 + 9 + 6 + 4)/15/4, {9}: (3 + 6 + 9 + 4)/15/4
    assert want["A"] == Fraction(31, 60) and want["H"] == Fraction(11, 30)


@pytest.mark.parametrize("m", [2, 3, 4, 6])
def test_entropy_l_truncation(tmp_path, m):
    """entropy_l_diversity returns int(np.exp(1) ** H): for a group uniform over m values H = ln m
    exactly, but the float lands just below m (m = 2, 3, 4, 6, 7, 8, 10), so pycanon reports m - 1
    for a table that is entropy m-diverse."""
    vals = "abcdefgh"[:m]
    p = write_csv(tmp_path, "zip,d\n" + "".join(f"{z},{v}\n" for z in "AB" for v in vals))
    df = pd.read_csv(p)
    assert all(entropy(g) == pytest.approx(math.log(m), rel=1e-15) for g in groups(df, ["zip"], "d").values())
    e = anonydb.connect()
    try:
        v = adb(e, str(p), ["zip"], "d", l=m, l_variant="entropy")["l-diversity"]
    finally:
        e.close()
    assert v.holds and v.achieved["l"] == pytest.approx(m, rel=1e-12)
    assert pa.entropy_l_diversity(df, ["zip"], ["d"]) == m - 1


def test_index_labels_used_as_positions():
    """get_equiv_class returns index labels (groupby().groups) and the callers read them with
    data.iloc (positions): on a frame whose index is not 0..n-1 (here after sort_values)
    pycanon mixes rows of different groups, silently."""
    raw = pd.DataFrame({"zip": ["B", "B", "A", "A", "B"], "d": ["x", "y", "x", "x", "z"]})
    df = raw.sort_values("zip", kind="stable")  # index [2, 3, 0, 1, 4]
    assert min(len(g) for g in groups(df, ["zip"], "d").values()) == 1  # A = {x}
    e = anonydb.connect()
    try:
        e.execute("CREATE TABLE t (zip VARCHAR, d VARCHAR)")
        e.execute("INSERT INTO t VALUES " + ", ".join(f"('{z}', '{d}')" for z, d in df.itertuples(index=False)))
        assert adb(e, "t", ["zip"], "d", l=2)["l-diversity"].achieved["l"] == 1
    finally:
        e.close()
    assert pa.l_diversity(df.reset_index(drop=True), ["zip"], ["d"]) == 1
    assert pa.l_diversity(df, ["zip"], ["d"]) == 2


def test_ordered_t_single_value_domain():
    """aux_t_closeness_num divides by m - 1: a numeric SA with one value raises ZeroDivisionError."""
    df = pd.DataFrame({"zip": ["A", "A", "B"], "s": [5, 5, 5]})
    e = anonydb.connect()
    try:
        e.execute("CREATE TABLE t AS SELECT * FROM (VALUES ('A', 5), ('A', 5), ('B', 5)) AS v(zip, s)")
        assert adb(e, "t", ["zip"], "s", t=0, distance="ordered")["t-closeness"].achieved["t"] == 0
    finally:
        e.close()
    with pytest.raises(ZeroDivisionError):
        pa.t_closeness(df, ["zip"], ["s"])
