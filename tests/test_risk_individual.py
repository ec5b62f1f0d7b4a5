"""sdcMicro's individual, global and household risk in SQL (anonydb.risk.individual) against
sdcMicro's own test values (tests/testthat/test_indivRisk.R, test_calcRisks.R) and against the
oracle tests/individual_oracle.py, which writes out sdcMicro's R code record by record."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import individual_oracle as oracle
from conftest import examples, make_table

from anonydb.errors import InputError
from anonydb.risk.individual import individual_risk

# tests/testthat/test_indivRisk.R: sample_Data (A, B, C, weight)
A = [2, 3, 2, 2, 3, 3, 1, 2]
B = [3, 3, 3, 3, 3, 3, 4, 3]
C = [1, 3, 1, 2, 1, 1, 1, 1]
W = [18.0, 45.5, 39.0, 17.0, 92.0, 8.0, 123.5, 51.0]
#: indivRisk(fr, method = "approx", qual = 1, survey = TRUE)$rk, without missing values
RK_WEIGHTED = [0.01369863, 0.08579129, 0.01369863, 0.17707583, 0.01877883, 0.01877883, 0.03931625, 0.01369863]
#: the same without weights (survey = FALSE): 1/fk
RK_PLAIN = [1 / 3, 1.0, 1 / 3, 1.0, 0.5, 0.5, 1.0, 1 / 3]


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def assert_oracle(got: dict, want: dict) -> None:
    """Every figure of ``got`` (individual_risk) equals the oracle's ``want`` (floats to 1e-9)."""
    assert got["n"] == want["n"]
    ind = got["individual"]
    for k in ("max", "mean", "median", "main_part_threshold"):
        assert close(ind[k], want[k]), (k, ind[k], want[k])
    assert ind["higher_than_main_part"] == want["higher_than_main_part"]
    assert close(got["global"]["expected_reidentifications"], want["expected_reidentifications"])
    assert close(got["global"]["share"], want["share"])
    assert [d["records"] for d in got["distribution"]] == want["distribution"]
    assert [d["risk_at_least"] for d in got["distribution"]] == list(oracle.BINS)
    if want["household"] is None:
        assert got["household"] is None
    else:
        gh, wh = got["household"], want["household"]
        assert gh["households"] == wh["households"]
        for k in ("expected_reidentifications", "share", "max"):
            assert close(gh[k], wh[k]), (k, gh[k], wh[k])


# -- sdcMicro's own values ----------------------------------------------------------------------------
def test_indivrisk_weighted_values(engine):
    """test_indivRisk.R, "data frame with weight, method = approx, qual = default, survey = TRUE":
    the per-record risks (each record alone in a table with its class's f_k and F_k) and their sum."""
    make_table(engine, "s", ["A", "B", "C", "weight"], list(zip(A, B, C, W)))
    got = individual_risk(engine, "s", ["A", "B", "C"], weights="weight")
    assert oracle.indiv_risk(*oracle.freq_calc(list(zip(A, B, C)), W)) == pytest.approx(RK_WEIGHTED, abs=5e-9)
    assert got["global"]["expected_reidentifications"] == pytest.approx(sum(RK_WEIGHTED), abs=5e-8)
    assert got["individual"]["max"] == pytest.approx(0.17707583, abs=5e-9)
    assert got["individual"]["median"] == pytest.approx(0.01877883, abs=5e-9)  # the 4th and 5th sorted
    # each distinct value of rk is one class's risk: filter the table class by class
    for i, r in enumerate(RK_WEIGHTED):
        cls = [j for j in range(8) if (A[j], B[j], C[j]) == (A[i], B[i], C[i])]
        engine.execute(f"CREATE OR REPLACE TABLE s1 AS SELECT * FROM s WHERE A = {A[i]} AND B = {B[i]} AND C = {C[i]}")
        one = individual_risk(engine, "s1", ["A", "B", "C"], weights="weight")
        assert one["n"] == len(cls)
        assert one["individual"]["max"] == pytest.approx(r, abs=5e-9)


def test_indivrisk_unweighted_values(engine):
    """test_indivRisk.R, survey = FALSE (and no weights): rk = 1/fk."""
    make_table(engine, "s", ["A", "B", "C"], list(zip(A, B, C)))
    got = individual_risk(engine, "s", ["A", "B", "C"])
    assert got["global"]["expected_reidentifications"] == pytest.approx(sum(RK_PLAIN))
    assert got["individual"]["median"] == pytest.approx(0.5)  # sorted: 1/3 1/3 1/3 1/2 | 1/2 1 1 1
    assert [d["records"] for d in got["distribution"]] == [3, 2, 3, 0, 0, 0, 0]


def r_runif(seed: int):
    """R's set.seed(seed) (Mersenne-Twister, with R's initial scrambling) and runif(n, a, b)."""
    s = seed & 0xFFFFFFFF
    for _ in range(50):
        s = (69069 * s + 1) & 0xFFFFFFFF
    words = []
    for _ in range(625):  # .Random.seed[-1]: mti, then mt[0..623]
        s = (69069 * s + 1) & 0xFFFFFFFF
        words.append(s)
    g = random.Random()
    g.setstate((3, tuple(words[1:]) + (624,), None))  # mti = 624: the first draw regenerates

    def runif(n: int, a: float = 0.0, b: float = 1.0) -> list[float]:
        out = []
        for _ in range(n):
            u = g.getrandbits(32) * 2.3283064365386963e-10
            u = min(max(u, 0.5 * 2.328306437080797e-10), 1 - 0.5 * 2.328306437080797e-10)  # R's fixup
            out.append(a + (b - a) * u)
        return out

    return runif


def test_calcrisks_without_missing(engine):
    """test_calcRisks.R, "sdc without missing": set.seed(3), Var4..Var6 = round(runif(10, 1, m))
    as the keys, no weights: global risk 0.8, risk_ER 8, individual risks 1/fk."""
    runif = r_runif(3)
    assert runif(3, 1, 100)[0] == pytest.approx(17.63611, abs=1e-5)  # R: set.seed(3); runif(1, 1, 100)
    runif = r_runif(3)
    runif(30, 1, 100)
    cols = [[round(v) for v in runif(10, 1, m)] for m in (4, 6, 3)]
    make_table(engine, "cr", ["Var4", "Var5", "Var6"], list(zip(*cols)))
    got = individual_risk(engine, "cr", ["Var4", "Var5", "Var6"])
    assert got["global"] == {"expected_reidentifications": 8.0, "share": 0.8}
    fk = oracle.freq_calc(list(zip(*cols)), None)[0]
    assert fk == [2, 1, 2, 1, 1, 2, 1, 2, 1, 1]  # sample_Data@risk$individual[, 2]
    assert [d["records"] for d in got["distribution"]][:2] == [6, 4]  # risk 1 (fk 1) and 0.5 (fk 2)


def test_calcrisks_with_missing_differs(engine):
    """test_calcRisks.R, "sdc with missing": sdcMicro's NA matches any value, so fk = (2, 2, 4, 2)
    and risk_ER = 1.75; anonydb's NULL is a value of its own: four distinct keys, risk_ER = 4."""
    runif = r_runif(3)
    runif(20, 1, 100)
    cols = [[round(v) for v in runif(4, 1, m)] for m in (2, 4, 6, 3, 5, 2)]
    for c, rows in zip(cols, ([0, 2, 3], [1, 2], [2], [0, 2], [1, 2], [2])):
        for r in rows:
            c[r] = None
    names = [f"Var{i}" for i in range(6, 12)]
    make_table(engine, "crm", names, list(zip(*cols)))
    got = individual_risk(engine, "crm", names)
    assert got["global"] == {"expected_reidentifications": 4.0, "share": 1.0}


def test_print_rule_on_unweighted_data(engine):
    """R/printFunctions.R's rule: r > median + 2 * mad and r > 0.1. Risks 1/3 x3, 1/2 x2, 1 x3:
    median 0.5, mad = 1.4826 * median(|r - 0.5|) = 1.4826 / 6; 0.5 + 2 * 0.2471 = 0.9942 < 1."""
    make_table(engine, "s", ["A", "B", "C"], list(zip(A, B, C)))
    got = individual_risk(engine, "s", ["A", "B", "C"])["individual"]
    assert got["main_part_threshold"] == pytest.approx(0.5 + 2 * 1.4826 / 6)
    assert got["higher_than_main_part"] == 3
    assert oracle.higher_than_main_part(RK_PLAIN, factor=3) == 0  # print.measure_risk's 3 * mad: none


def test_household_by_hand(engine):
    """1 - prod(1 - r) per household, given to every member; a member with r = 1 (f = F = 1)."""
    rows = [(1, 1.0, "h1"), (2, 3.0, "h1"), (2, 3.0, "h2"), (3, 2.0, "h2"), (3, 2.0, "h2")]
    make_table(engine, "hh", ["k", "w", "h"], rows)
    got = individual_risk(engine, "hh", ["k"], weights="w", household="h")
    r1 = 1.0
    p = 2 / 6
    r2 = p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    p = 2 / 4
    r3 = p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    h2 = 1 - (1 - r2) * (1 - r3) ** 2
    assert got["household"]["max"] == 1.0
    assert got["household"]["expected_reidentifications"] == pytest.approx(2 * 1.0 + 3 * h2, rel=1e-12)
    assert got["household"]["share"] == pytest.approx((2 + 3 * h2) / 5, rel=1e-12)
    assert got["global"]["expected_reidentifications"] == pytest.approx(r1 + 2 * r2 + 2 * r3, rel=1e-12)


def survey_households(seed: int = 4580, households: int = 1000) -> list[tuple]:
    """A synthetic household survey with the columns measure_risk's example reads from sdcMicro's
    testdata (which is not in this repository): per record (urbrur, roof, walls, water, sex,
    sampling_weight, ori_hid); the dwelling's keys and the weight are the household's (urbrur 2
    values, roof 5, walls 3, water 8), sex the member's, the weight one of a few per urbrur stratum,
    as a two-stage sample gives."""
    rnd = random.Random(seed)
    strata = {1: [38.0, 53.5, 109.0], 2: [12.5, 26.0, 81.5, 440.0]}
    rows = []
    for h in range(1, households + 1):
        urbrur = rnd.choice((1, 1, 2))
        roof, walls, water = rnd.choice((1, 1, 2, 3, 4, 5)), rnd.randint(1, 3), rnd.choice((1, 1, 2, 3, 4, 5, 6, 7, 8))
        w = rnd.choice(strata[urbrur])
        for _ in range(rnd.choice((1, 2, 3, 4, 4, 5, 5, 6, 7, 9))):
            rows.append((urbrur, roof, walls, water, rnd.randint(1, 2), w, h))
    return rows


def test_survey_households_against_oracle(engine):
    """A survey-sized table with households (survey_households: 1000 households, 4000-5500
    records): global, individual and household risk under sampling weights, and without weights,
    equal the oracle's figures. (It replaces a cross-check on sdcMicro's testdata that needed
    pyreadr and a local copy of sdcMicro, and so never ran in CI.)"""
    rows = survey_households()
    keys = ["urbrur", "roof", "walls", "water", "sex"]
    make_table(engine, "td", keys + ["sampling_weight", "ori_hid"], rows)
    engine.execute("ALTER TABLE td ALTER sampling_weight TYPE DOUBLE")
    ks = [r[:5] for r in rows]
    sizes = Counter(ks).values()  # sample uniques and large classes both
    assert 4000 < len(rows) < 5500 and min(sizes) == 1 and max(sizes) > 40
    assert_oracle(individual_risk(engine, "td", keys, weights="sampling_weight", household="ori_hid"),
                  oracle.figures(ks, [r[5] for r in rows], [r[6] for r in rows]))
    assert_oracle(individual_risk(engine, "td", keys), oracle.figures(ks))


# -- the oracle on random tables --------------------------------------------------------------------
KEY = st.sampled_from([None, 1, 2, 3])
WEIGHT = st.sampled_from([1.0, 1.0, 1.5, 2.0, 2.5, 4.0, 10.0, 25.5, 100.0, 1000.0])


@st.composite
def record_tables(draw):
    n = draw(st.integers(1, 40))
    rows = [(draw(KEY), draw(KEY), draw(WEIGHT), draw(st.integers(0, 8))) for _ in range(n)]
    return rows


def same_as_oracle(rows: list[tuple], weighted: bool, hh: bool, persons: bool) -> None:
    """individual_risk on rows (k1, k2, w, h[, p]) in a fresh DuckDB gives the oracle's figures."""
    import anonydb

    eng = anonydb.connect()
    try:
        make_table(eng, "t", ["k1", "k2", "w", "h", "p"][:len(rows[0])], rows)
        if not persons:  # records: DOUBLE weights (DECIMAL ones, as the VALUES make them, for persons)
            eng.execute("ALTER TABLE t ALTER w TYPE DOUBLE")
        got = individual_risk(eng, "t", ["k1", "k2"], weights="w" if weighted else None,
                              household="h" if hh else None, person="p" if persons else None)
        assert got["unit"] == ("persons" if persons else "records") and got["weights"] == ("w" if weighted else None)
        want = oracle.figures([(r[0], r[1]) for r in rows], [r[2] for r in rows] if weighted else None,
                              [r[3] for r in rows] if hh else None, [r[4] for r in rows] if persons else None)
        assert_oracle(got, want)
    finally:
        eng.close()


@settings(max_examples=examples(30), deadline=None)
@given(rows=record_tables(), weighted=st.booleans(), hh=st.booleans())
def test_records_match_oracle(rows, weighted, hh):
    same_as_oracle(rows, weighted, hh, persons=False)


@st.composite
def person_tables(draw):
    people = draw(st.integers(1, 12))
    attrs = [(draw(WEIGHT), draw(st.integers(0, 4))) for _ in range(people)]
    n = draw(st.integers(1, 40))
    rows = []
    for _ in range(n):
        p = draw(st.integers(0, people - 1))
        rows.append((draw(KEY), draw(KEY), attrs[p][0], attrs[p][1], f"p{p}"))
    return rows


@settings(max_examples=examples(30), deadline=None)
@given(rows=person_tables(), weighted=st.booleans(), hh=st.booleans())
def test_persons_match_oracle(rows, weighted, hh):
    same_as_oracle(rows, weighted, hh, persons=True)


def test_empty_table(engine):
    engine.execute("CREATE TABLE e (k INTEGER, w DOUBLE, h INTEGER)")
    got = individual_risk(engine, "e", ["k"], weights="w", household="h")
    assert got["n"] == 0 and got["global"]["expected_reidentifications"] == 0.0
    assert got["household"]["expected_reidentifications"] == 0.0
    assert all(d["records"] == 0 for d in got["distribution"])


def test_passes_over_the_table(engine):
    """The input table is read by one statement (the GROUP BY by the keys, or by the keys and the
    person), and by a second one for the households of records (each record's household beside
    its class's risk); the rest reads scratch tables."""
    make_table(engine, "big", ["k", "w", "h", "p"], [(i % 7, 2.0, i // 3, i) for i in range(60)])
    for kw, passes in ((dict(weights="w"), 1), (dict(weights="w", household="h"), 2),
                       (dict(weights="w", household="h", person="p"), 1)):
        mark = len(engine.log)
        individual_risk(engine, "big", ["k"], **kw)
        reads = [x.sql for x in engine.log[mark:] if '"big"' in x.sql]
        assert len(reads) == passes, reads


# -- refusals ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows, kw, message", [
    ([(1, None, 1, "a")], dict(weights="w"), "is NULL on 1 rows"),
    ([(1, 0.0, 1, "a")], dict(weights="w"), "<= 0 on 1 rows"),
    ([(1, 0.5, 1, "a")], dict(weights="w"), "sum to less than"),
    ([(1, 2.0, None, "a")], dict(weights="w", household="h"), "household column 'h' is NULL"),
    ([(1, 2.0, 1, None)], dict(person="p"), "person column 'p' is NULL"),
    ([(1, 2.0, 1, "a"), (2, 3.0, 1, "a")], dict(weights="w", person="p"), "varies over the records of person 'a'"),
    ([(1, 2.0, 1, "a"), (2, 2.0, 2, "a")], dict(household="h", person="p"), "a person belongs to one household"),
    ([(1, 2.0, 1, "a")], dict(weights="nope"), "weight column 'nope' not found"),
    ([(1, 2.0, 1, "a")], dict(weights="p"), "must be numeric"),
    ([(1, 2.0, 1, "a")], dict(household="k"), "both as the key variable and as the household column"),
    ([(1, 2.0, 1, "a")], dict(weights="w", person="w"), "both as the weight column and as the person column"),
])
def test_refusals(engine, rows, kw, message):
    engine.execute("CREATE TABLE r (k INTEGER, w DOUBLE, h INTEGER, p VARCHAR)")
    engine.execute("INSERT INTO r VALUES " + ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows))
    with pytest.raises(InputError, match=message) as e:
        individual_risk(engine, "r", ["k"], **kw)
    assert "\n" not in str(e.value)


def test_refused_keys(engine):
    make_table(engine, "r", ["k", "_adb_x"], [(1, 2)])
    for keys, message in (([], "at least one key"), (["k", "k"], "given twice"), (["x"], "key variable 'x' not found"),
                          (["_adb_x"], "reserved"), ("k", "must be a list")):
        with pytest.raises(InputError, match=message):
            individual_risk(engine, "r", keys)


def test_nan_weight_refused(engine):
    engine.execute("CREATE TABLE r AS SELECT 1 AS k, 'NaN'::DOUBLE AS w")
    with pytest.raises(InputError, match="NaN or infinite"):
        individual_risk(engine, "r", ["k"], weights="w")


# -- parity across engines (tests/test_risk_individual_postgres.py, _spark.py) ----------------------
#: the calls every engine must answer as DuckDB does
CASES = [dict(), dict(weights="w"), dict(weights="w", household="h"),
         dict(weights="w", household="h", person="p"), dict(household="h", person="p")]


def parity_table(engine, name: str) -> str:
    """200 records of 60 persons in 25 households; keys with NULLs, weights with classes of F = f."""
    g = random.Random(49)
    people = [(g.choice([1.0, 1.0, 2.5, 4.0, 12.0, 150.5]), i // 3) for i in range(60)]
    rows = []
    for _ in range(200):
        p = g.randrange(60)
        rows.append((g.choice([None, "a", "b", "c"]), g.choice([None, 1, 2, 3, 4]), people[p][0], people[p][1], p))
    make_table(engine, name, ["k1", "k2", "w", "h", "p"], rows)
    engine.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT k1, k2, CAST(w AS DOUBLE) AS w, h, p FROM {name}")
    return name


def same_figures(duck, other, table: str, kw: dict) -> None:
    want = individual_risk(duck, table, ["k1", "k2"], **kw)
    got = individual_risk(other, table, ["k1", "k2"], **kw)
    assert same_shape(got, want), (kw, got, want)


def same_shape(a, b) -> bool:
    """Equal, ints exactly and of the same type, floats to 1e-9 relative."""
    if isinstance(a, float) and isinstance(b, float):
        return close(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b
