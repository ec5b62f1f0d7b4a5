"""The sample-based risk summary (anonydb.risk) against ARX's published values on Adult and a
plain-Python oracle (tests/risk_oracle.py) on random tables, by records and by persons, with and
without a population table; generalizing never raises prosecutor risk."""

from __future__ import annotations

import csv
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb.errors import InputError
from anonydb.risk.assess import assess
from anonydb.risk.sample import histograms, summary
from conftest import examples, make_table
import risk_oracle

SETTINGS = settings(max_examples=examples(40), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ADULT_COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
                 "salary-class"]


def test_adult_average_risk_is_arxs(engine, datasets):
    """ARX's TestRiskMetrics.testAverageRisk2: the raw Adult over all nine columns has average
    (prosecutor) risk 0.6465751607983555 and highest risk 1.0."""
    path = datasets / "adult" / "adult.csv"
    engine.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv('{path}', delim=';', header=true, all_varchar=true)")
    rep = assess("adult", ADULT_COLUMNS, engine=engine)
    assert float(rep.sample["prosecutor"]["average"]) == 0.6465751607983555
    assert rep.sample["prosecutor"]["highest"] == 1
    with open(path, newline="") as fh:
        rows = [tuple(r) for r in csv.reader(fh, delimiter=";")][1:]
    want = risk_oracle.summary(rows, list(range(9)), Fraction(1, 5))
    assert rep.sample["sample_uniqueness"] == want["sample_uniqueness"]
    assert rep.sample["prosecutor"] == want["prosecutor"]


def test_arx_convention_without_population(engine):
    """Without a population, journalist = prosecutor and marketer = classes / n (ARX), and the
    summary says so."""
    make_table(engine, "t", ["a", "b"], [("x", 1), ("x", 1), ("y", 2), ("y", 3), ("z", None)])
    rep = assess("t", ["a", "b"], engine=engine, threshold=0.5)
    s = rep.sample
    assert s["journalist"] == s["prosecutor"]
    assert s["marketer"] == Fraction(4, 5)
    assert s["prosecutor"] == {"records_at_risk": Fraction(3, 5), "highest": 1, "lowest": Fraction(1, 2),
                               "average": Fraction(4, 5)}
    assert s["sample_uniqueness"] == Fraction(3, 5)
    assert "ARX's convention" in s["convention"]


def test_journalist_against_a_population(engine):
    """Hand-computed: sample classes x:2, y:1 within population classes x:4, y:2, z:3."""
    make_table(engine, "s", ["a"], [("x",), ("x",), ("y",)])
    make_table(engine, "p", ["a"], [("x",)] * 4 + [("y",)] * 2 + [("z",)] * 3)
    s = assess("s", ["a"], engine=engine, population="p", threshold=0.3).sample
    assert s["journalist"] == {"records_at_risk": Fraction(1, 3), "highest": Fraction(1, 2), "lowest": Fraction(1, 4),
                               "average": max(Fraction(2, 6), (Fraction(2, 4) + Fraction(1, 2)) / 3)}
    assert s["marketer"] == Fraction(1, 3)
    assert s["convention"] is None


def test_population_must_contain_the_sample(engine):
    make_table(engine, "s", ["a"], [("x",), ("x",)])
    make_table(engine, "p", ["a"], [("x",)])
    with pytest.raises(InputError, match="fewer records than s in 1 of its classes"):
        assess("s", ["a"], engine=engine, population="p")


def test_bad_inputs(engine):
    make_table(engine, "t", ["a", "w"], [("x", 1)])
    with pytest.raises(InputError, match="key variable 'nope' not found"):
        assess("t", ["nope"], engine=engine)
    with pytest.raises(InputError, match="threshold must lie in"):
        assess("t", ["a"], engine=engine, threshold=0)
    with pytest.raises(InputError, match="both as a key variable and as the weights column"):
        assess("t", ["a", "w"], engine=engine, weights="w")
    with pytest.raises(InputError, match="at most one of"):
        assess("t", ["a"], engine=engine, population_size=10, fraction=0.5)


VALUES = st.sampled_from(["a", "b", "c", None])
ROWS = st.lists(st.tuples(VALUES, st.sampled_from([1, 2]), st.integers(0, 5)), min_size=1, max_size=30)


@SETTINGS
@given(rows=ROWS, extra=ROWS, t=st.sampled_from([Fraction(1, 2), Fraction(1, 5), Fraction(1, 3), Fraction(1)]),
       by_person=st.booleans(), with_population=st.booleans())
def test_summary_matches_the_oracle(engine, rows, extra, t, by_person, with_population):
    engine.execute("DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS p")
    make_table(engine, "t", ["q1", "q2", "pid"], rows)
    population = None
    if with_population:
        make_table(engine, "p", ["q1", "q2", "pid"], rows + extra)
        population = "p"
    person = "pid" if by_person else None
    h = histograms(engine, "t", ["q1", "q2"], population=population, person=person)
    got = summary(h, t)
    pop_rows = None
    if with_population:
        # the population counts distinct persons when it has the person column
        pop_rows = list({(r[0], r[1], r[2]): r for r in rows + extra}.values()) if by_person else rows + extra
    want = risk_oracle.summary(rows, [0, 1], t, population=pop_rows, person_idx=2 if by_person else None)
    for k in ("n", "classes", "prosecutor", "journalist", "marketer", "sample_uniqueness"):
        assert got[k] == want[k], k
    assert h.class_sizes() == dict(sorted(risk_oracle.class_sizes(rows, [0, 1], 2 if by_person else None).items()))


@SETTINGS
@given(rows=ROWS, merge=st.sampled_from([("a", "b"), ("b", "c"), ("a", None)]))
def test_generalizing_never_raises_prosecutor_risk(engine, rows, merge):
    """Replacing two values of a key by one label (a generalization) never raises the highest or
    average prosecutor risk, nor the records at risk."""
    engine.execute("DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS g")
    make_table(engine, "t", ["q1", "q2", "pid"], rows)
    gen = [("ab" if r[0] in merge else r[0], r[1], r[2]) for r in rows]
    make_table(engine, "g", ["q1", "q2", "pid"], gen)
    before = assess("t", ["q1", "q2"], engine=engine).sample["prosecutor"]
    after = assess("g", ["q1", "q2"], engine=engine).sample["prosecutor"]
    for k in ("highest", "average", "records_at_risk"):
        assert after[k] <= before[k], k


def test_raw_population_mapped_onto_a_mondrian_release(engine):
    """Journalist risk of a Mondrian release against its raw population: each class's F_j is the
    population rows inside its ranges (a plain-Python count over the release's bounds)."""
    import random

    from anonydb.methods import anonymize

    rnd = random.Random(11)
    sample = [(rnd.randint(20, 60), rnd.randint(1, 9), rnd.choice("xy")) for _ in range(60)]
    extra = [(rnd.randint(20, 60), rnd.randint(1, 9), rnd.choice("xy")) for _ in range(140)]
    make_table(engine, "smp", ["age", "hours", "dx"], sample)
    make_table(engine, "pop", ["age", "hours", "dx"], sample + extra)
    anonymize("smp", ["age", "hours"], "dx", out="rel", engine=engine, k=4, seed=1)
    rep = assess("rel", engine=engine, sensitive="dx", population="pop", threshold=0.1)
    assert rep.keys == ["age", "hours"] and "mapped onto rel's classes" in rep.notes[0]
    bounds = engine.fetch_rows("SELECT age_lo, age_hi, hours_lo, hours_hi, count(*) FROM rel GROUP BY ALL")[1]
    units, total_pf = [], 0
    for alo, ahi, hlo, hhi, f in bounds:
        big_f = sum(1 for a, h, _ in sample + extra if alo <= a <= ahi and hlo <= h <= hhi)
        units += [(f, big_f)] * f
        total_pf += big_f
    n = len(units)
    j = rep.sample["journalist"]
    assert j["highest"] == Fraction(1, min(pf for _, pf in units))
    assert j["records_at_risk"] == Fraction(sum(1 for _, pf in units if Fraction(1, pf) > Fraction(1, 10)), n)
    marketer = sum(Fraction(1, pf) for _, pf in units) / n
    assert rep.sample["marketer"] == marketer
    assert j["average"] == max(Fraction(len(bounds), total_pf), marketer)
    assert rep.population["population_size"] == 200


@SETTINGS
@given(rows=ROWS)
def test_summary_from_individual_risks_pass_is_the_same(engine, rows):
    """With weights or households the summary's histogram comes from individual risk's GROUP BY:
    the same figures as from its own."""
    engine.execute("DROP TABLE IF EXISTS t")
    make_table(engine, "t", ["q1", "q2", "hh"], rows)
    engine.execute("ALTER TABLE t ADD COLUMN w DOUBLE DEFAULT 10")
    plain = assess("t", ["q1", "q2"], engine=engine)
    shared = assess("t", ["q1", "q2"], engine=engine, weights="w", household="hh")
    assert shared.sample == plain.sample and shared.distribution == plain.distribution
    assert shared.individual["n"] == len(rows)
