"""SUDA2 special uniques (anonydb.risk.suda) against sdcMicro's worked examples and the brute-force
oracle (tests/suda_oracle.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import suda_oracle as oracle
from conftest import examples
from anonydb.errors import InputError
from anonydb.risk.suda import suda2
from anonydb.sqlgen import ident, literal


def make(eng, name: str, cols: list[str], rows: list[tuple], types: list[str] | None = None) -> str:
    """Table ``name`` holding ``rows`` in this order (rowid = position)."""
    types = types or ["VARCHAR"] * len(cols)
    eng.execute(f"CREATE OR REPLACE TABLE {ident(name)} ({', '.join(f'{ident(c)} {t}' for c, t in zip(cols, types))})")
    if rows:
        body = ", ".join("(" + ", ".join(literal(v) for v in r) + ")" for r in rows)
        eng.execute(f"INSERT INTO {ident(name)} VALUES {body}")
    return name


def per_record(eng, table: str) -> dict:
    return {r[0]: r[1:] for r in eng.fetch_rows(f"SELECT * FROM {ident(table)}")[1]}


def msu_sets(eng, table: str, keys: list[str]) -> dict:
    out: dict = {}
    for uid, size, msu in eng.fetch_rows(f"SELECT * FROM {ident(table)}")[1]:
        names = msu.split(", ")
        assert len(names) == size
        out.setdefault(uid, set()).add(frozenset(keys.index(x) for x in names))
    return out


# -- sdcMicro's examples (tests/testthat/test_suda2.R) ----------------------------------------------

def test_simple_example_contributions(engine):
    """a = (2, 1, 1), b = (0, 3, 0), c = (0, 6, 0): contributions 50, 37.5, 37.5 whatever the order."""
    rows = [(2, 0, 0), (1, 3, 6), (1, 0, 0)]
    make(engine, "t", ["a", "b", "c"], rows, ["INTEGER"] * 3)
    for order in (["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"], ["c", "b", "a"]):
        r = suda2(engine, "t", order)
        assert r["contribution"] == {"a": 50.0, "b": 37.5, "c": 37.5}
        assert list(r["contribution"]) == order
    r = suda2(engine, "t", ["a", "b", "c"], scores_table="sc", msus_table="ms")
    assert per_record(engine, "sc") == {0: (2.0, 1.0, 1.0, 0.0, 0.0), 1: (4.0, 1.0, 0.0, 0.5, 0.5),
                                        2: (2.0, 1.0, 1.0, 0.5, 0.5)}
    assert msu_sets(engine, "ms", ["a", "b", "c"]) == {0: {frozenset({0})}, 1: {frozenset({1}), frozenset({2})},
                                                        2: {frozenset({0, 1}), frozenset({0, 2})}}
    assert r["msus"] == {1: 3, 2: 2, 3: 0} and r["records_with_msu"] == 3 and r["dis"] == 1.0


def test_book_example(engine):
    """Templ (2017)'s table: scores of records 5..8 are 4, 2, 6, 8."""
    rows = [("20s", "male", "50k+", "highschool")] * 2 + [("20s", "male", "50k-", "highschool")] * 2 + [
        ("20s", "female", "50k-", "university"), ("20s", "female", "50k-", "highschool"),
        ("20s", "female", "50k-", "middleschool"), ("60s", "male", "50k-", "university")]
    make(engine, "book", ["age", "gender", "income", "education"], rows)
    suda2(engine, "book", ["age", "gender", "income", "education"], scores_table="sc")
    assert [per_record(engine, "sc")[i][0] for i in range(8)] == [0, 0, 0, 0, 4, 2, 6, 8]


def test_sdc_guideline_example(engine):
    """The SDC guideline's ten records: scores 0,0,6,0,12,0,6,10,0,0; the DIS scores and per-key
    contributions are those of sdcMicro's C++ (src/Suda2.h built with a stand-in for Rcpp)."""
    cols = ["Residence", "Gender", "Education", "Labor"]
    rows = [("Urban", "Female", "Secondary incomplete", "Employed"), ("Urban", "Female", "Secondary incomplete",
            "Employed"), ("Urban", "Female", "Primary incomplete", "Non-LF"), ("Urban", "Male", "Secondary complete",
            "Employed"), ("Rural", "Female", "Secondary complete", "Unemployed"), ("Urban", "Male",
            "Secondary complete", "Employed"), ("Urban", "Female", "Primary complete", "Non-LF"), ("Urban", "Male",
            "Post-secondary", "Unemployed"), ("Urban", "Female", "Secondary incomplete", "Non-LF"),
            ("Urban", "Female", "Secondary incomplete", "Non-LF")]
    make(engine, "guide", cols, rows)
    r = suda2(engine, "guide", cols, scores_table="sc")
    got = per_record(engine, "sc")
    assert [got[i][0] for i in range(10)] == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]
    dis = {2: 0.00498679766114321, 4: 0.011383006514236068, 6: 0.00498679766114321, 7: 0.009166678869162469}
    for i in range(10):
        assert got[i][1] == pytest.approx(dis.get(i, 0.0), rel=1e-12)
    assert got[4][2:] == pytest.approx((0.5, 1 / 3, 1 / 3, 1 / 3)) and got[7][2:] == pytest.approx((0.2, 0.2, 0.6, 0.4))
    assert (r["sample_uniques"], r["pairs"]) == (4, 6)
    assert r["contribution"] == pytest.approx({"Residence": 400 / 17, "Gender": 300 / 17, "Education": 1100 / 17,
                                               "Labor": 400 / 17})
    assert r["distribution"][-1] == {"dis_score_at_least": 0.0, "dis_score_below": 0.1, "records": 4}
    assert r["score"] == {"max": 12.0, "mean": 3.4}


def test_seeded_example(engine):
    """sdcMicro's "sdc without missing" test: set.seed(3) then round(runif(10, 1, 4)), round(runif(10, 1,
    6)), round(runif(10, 1, 3)) after 30 draws (R's Mersenne-Twister stream, replayed in Python; its
    Var3 matches the test's), as factors: scores 0,1,0,2,2,0,4,0,3,2 and the first key's share."""
    rows = [(2, 2, 1), (2, 5, 1), (2, 2, 3), (2, 4, 3), (2, 3, 3), (2, 2, 3), (4, 1, 2), (2, 2, 1), (3, 3, 1), (2, 5, 2)]
    make(engine, "seeded", ["Var4", "Var5", "Var6"], rows, ["INTEGER"] * 3)
    suda2(engine, "seeded", ["Var4", "Var5", "Var6"], scores_table="sc")
    got = per_record(engine, "sc")
    assert [got[i][0] for i in range(10)] == [0, 1, 0, 2, 2, 0, 4, 0, 3, 2]
    assert [got[i][2] for i in range(10)] == pytest.approx([0, 0, 0, 0, 0.5, 0, 0.5, 0, 2 / 3, 0.5])


# -- against the oracle -------------------------------------------------------------------------------

def _compare(engine, rows: list[tuple], k: int, max_size: int | None, dis_fraction: float,
             persons: list | None = None) -> None:
    keys = [f"k{j}" for j in range(k)]
    cols, types = keys + (["pid"] if persons else []), ["INTEGER"] * (k + (1 if persons else 0))
    table = [r + ((p,) if persons else ()) for r, p in zip(rows, persons or rows)]
    make(engine, "rnd", cols, table, types)
    got = suda2(engine, "rnd", keys, max_size=max_size, dis_fraction=dis_fraction, person="pid" if persons else None,
                scores_table="sc", msus_table="ms", threshold=0.05)
    want = oracle.suda2(rows, max_size, dis_fraction, persons)
    units = sorted(want["score"])
    found = msu_sets(engine, "ms", keys)
    assert {u: found.get(u, set()) for u in units} == want["msus"]
    sc = per_record(engine, "sc")
    assert sorted(sc) == units
    for u in units:
        score, dis, *share = sc[u]
        assert score == want["score"][u]
        assert dis == pytest.approx(want["dis_score"][u], rel=1e-9, abs=1e-300)
        assert share == pytest.approx(want["contribution"][u], rel=1e-12)
    assert list(got["contribution"].values()) == pytest.approx(want["attribute"], rel=1e-12)
    assert (got["sample_uniques"], got["pairs"]) == (want["U"], want["P"])
    m = max_size or k
    sizes = [len(x) for ss in want["msus"].values() for x in ss]
    assert got["msus"] == {z: sizes.count(z) for z in range(1, m + 1)}
    assert got["records"] == len(units)
    assert got["records_with_msu"] == sum(1 for u in units if want["score"][u])
    assert got["score"]["mean"] == pytest.approx(sum(want["score"].values()) / len(units))
    assert got["dis_score"]["max"] == pytest.approx(max(want["dis_score"].values()), rel=1e-9)
    assert got["records_at_risk"] == sum(1 for u in units if want["dis_score"][u] >= 0.05)
    assert sum(b["records"] for b in got["distribution"]) == got["records_with_msu"]


@st.composite
def tables(draw, persons: bool = False):
    k = draw(st.integers(3, 5))
    n = draw(st.integers(5, 40))
    values = st.integers(1, draw(st.integers(2, 4)))
    cell = st.one_of(st.none(), values) if draw(st.booleans()) else values
    rows = [tuple(draw(cell) for _ in range(k)) for _ in range(n)]
    m = draw(st.one_of(st.none(), st.integers(1, k)))
    owners = [draw(st.integers(1, max(2, n // 2))) for _ in range(n)] if persons else None
    return rows, k, m, draw(st.sampled_from([0.01, 0.1, 0.5])), owners


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables())
def test_records_match_oracle(engine, case):
    rows, k, m, f, _ = case
    _compare(engine, rows, k, m, f)


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables(persons=True))
def test_persons_match_oracle(engine, case):
    rows, k, m, f, owners = case
    _compare(engine, rows, k, m, f, owners)


def test_persons_with_constant_keys_are_records(engine):
    """A person whose records all share the key values counts once, as its record would."""
    rows = [(1, 1, 1), (1, 2, 1), (2, 2, 2), (2, 2, 1), (1, 1, 2)]
    make(engine, "one", ["a", "b", "c"], rows, ["INTEGER"] * 3)
    make(engine, "many", ["a", "b", "c", "p"], [r + (i,) for i, r in enumerate(rows) for _ in range(3)],
         ["INTEGER"] * 4)
    a = suda2(engine, "one", ["a", "b", "c"])
    b = suda2(engine, "many", ["a", "b", "c"], person="p")
    assert b["unit"] == "persons" and a["unit"] == "records"
    for key in ("msus", "score", "dis_score", "contribution", "records", "sample_uniques", "pairs"):
        assert a[key] == b[key], key


def test_missing_values_are_no_item(engine):
    """A NULL key cannot be in a record's MSU and matches no value of another record."""
    rows = [(1, None, 1), (1, 2, 1), (2, 2, None)]
    make(engine, "miss", ["a", "b", "c"], rows, ["INTEGER"] * 3)
    suda2(engine, "miss", ["a", "b", "c"], msus_table="ms")
    want = {1: {frozenset({0, 1}), frozenset({1, 2})}, 2: {frozenset({0})}}
    assert msu_sets(engine, "ms", ["a", "b", "c"]) == want
    assert oracle.msus(rows) == {0: set(), **want}


def test_adult_subset_matches_oracle(engine, datasets):
    """Adult's 3,016-row subset over its 8 QIs: every record's MSUs and scores."""
    from anonydb.datasets import load_adult

    load_adult(engine, "adult_s", subset=True)
    keys = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    r = suda2(engine, "adult_s", keys, scores_table="sc", msus_table="ms")
    rows = engine.fetch_rows(f"SELECT {', '.join(ident(c) for c in keys)} FROM adult_s ORDER BY rowid")[1]
    want = oracle.suda2([tuple(x) for x in rows])
    assert msu_sets(engine, "ms", keys) == {u: ss for u, ss in want["msus"].items() if ss}
    sc = per_record(engine, "sc")
    assert all(sc[u][0] == want["score"][u] for u in want["score"])
    assert list(r["contribution"].values()) == pytest.approx(want["attribute"])


# -- input errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(keys=["a", "x"]), "key variable 'x' not found"),
    (dict(keys=[]), "at least one key"),
    (dict(keys=["a", "a"]), "given twice"),
    (dict(keys=["a", "b"], max_size=0), "max_size must be an integer from 1 to the number of keys (2)"),
    (dict(keys=["a", "b"], max_size=3), "max_size must be"),
    (dict(keys=["a", "b"], max_size=1.5), "max_size must be"),
    (dict(keys=["a", "b"], dis_fraction=0), "dis_fraction"),
    (dict(keys=["a", "b"], dis_fraction=1), "dis_fraction"),
    (dict(keys=["a", "b"], dis_fraction="0.1"), "dis_fraction"),
    (dict(keys=["a", "b"], threshold=0), "threshold"),
    (dict(keys=["a", "b"], person="q"), "person column 'q'"),
    (dict(keys=["a", "b"], person="a"), "both as the person column"),
    (dict(keys=["a", "b"], person="p"), "NULL on 1 rows"),
    (dict(keys=["_adb_x"]), "reserved"),
])
def test_input_errors(engine, kwargs, message):
    make(engine, "bad", ["a", "b", "p", "_adb_x"], [(1, 2, None, 1)], ["INTEGER"] * 4)
    keys = kwargs.pop("keys")
    with pytest.raises(InputError) as e:
        suda2(engine, "bad", keys, **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_empty_table_and_missing_table(engine):
    make(engine, "empty", ["a", "b"], [], ["INTEGER"] * 2)
    with pytest.raises(InputError, match="no rows"):
        suda2(engine, "empty", ["a", "b"])
    with pytest.raises(InputError, match="no table or view"):
        suda2(engine, "nowhere", ["a"])


def test_too_many_subsets(engine):
    keys = [f"k{j}" for j in range(16)]
    make(engine, "wide", keys, [tuple(range(16))], ["INTEGER"] * 16)
    with pytest.raises(InputError, match="give a smaller max_size"):
        suda2(engine, "wide", keys)
    assert suda2(engine, "wide", keys, max_size=2)["msus"] == {1: 16, 2: 0}


def test_fewer_than_three_keys_weigh_as_three(engine):
    """sdcMicro pads one or two keys with constant columns: an MSU of one key weighs (3 - 1)!."""
    make(engine, "two", ["a", "b"], [(1, 1), (2, 1), (2, 2)], ["INTEGER"] * 2)
    suda2(engine, "two", ["a", "b"], scores_table="sc")
    assert [per_record(engine, "sc")[i][0] for i in range(3)] == [2.0, 1.0, 2.0]
    assert math.factorial(3 - 1) == 2


# -- the other engines' parity (tests/test_risk_suda_postgres.py, tests/test_risk_suda_spark.py) ----

ENGINE_ROWS = [(1, "a", None, 7), (1, "b", 3, 7), (2, "a", 3, 8), (2, "a", 3, 8), (3, "b", 4, 7), (1, "a", 4, None),
               (3, "a", 3, 8), (2, "b", 4, 7), (1, "b", 3, 7), (3, "b", 3, 9)]


def parity_table(duck, name: str) -> str:
    """A small table with NULLs, a duplicate and persons (p) of one to three records."""
    return make(duck, name, ["k0", "k1", "k2", "k3", "p"], [r + (i % 4,) for i, r in enumerate(ENGINE_ROWS)],
                ["INTEGER", "VARCHAR", "INTEGER", "INTEGER", "INTEGER"])


def same_as_duckdb(duck, other, table: str, persons: tuple = (None, "p"), max_size: int | None = None) -> None:
    """``other`` gives DuckDB's summary (floats to the last few bits), scores and MSUs."""
    keys = ["k0", "k1", "k2", "k3"]
    scores = "SELECT score, dis_score, contribution_k0 FROM suda_sc"
    ms = "SELECT size, msu FROM suda_ms ORDER BY size, msu"
    for person in persons:
        d, o = (suda2(e, table, keys, person=person, threshold=0.2, max_size=max_size, scores_table="suda_sc",
                      msus_table="suda_ms") for e in (duck, other))
        for key in d:
            want = pytest.approx(d[key], rel=1e-12) if key in ("score", "dis_score", "contribution") else d[key]
            assert o[key] == want, key
        flat = [[x for r in sorted(tuple(r) for r in e.fetch_rows(scores)[1]) for x in r] for e in (duck, other)]
        assert flat[1] == pytest.approx(flat[0], rel=1e-12)
        assert other.fetch_rows(ms)[1] == duck.fetch_rows(ms)[1]
