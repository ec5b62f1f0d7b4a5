"""Population uniqueness (anonydb.risk.population): ARX's published figures on Adult and its small
example, the scipy oracle (tests/population_oracle.py) on random histograms, f = 1, bad inputs."""

from __future__ import annotations

import collections
import csv
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import population_oracle as oracle
from anonydb.errors import InputError
from anonydb.risk.population import REGIONS, population_size, uniqueness
from conftest import examples

ADULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "adult" / "adult.csv"


def arx_equal(value: float, expected: float) -> bool:
    """ARX's TestRiskMetrics.compareUniqueness: four digits, truncated."""
    return int(value * 10000) == int(expected * 10000)


@pytest.fixture(scope="module")
def adult_histogram() -> dict[int, int]:
    """Adult with all 9 columns as QIs (as ARX's getDataObject: every column has a hierarchy)."""
    if not ADULT.is_file():
        pytest.skip(f"ARX's adult.csv is absent ({ADULT})")
    with ADULT.open(newline="") as fh:
        rows = list(csv.reader(fh, delimiter=";"))[1:]
    return dict(collections.Counter(collections.Counter(map(tuple, rows)).values()))


def adult(hist: dict[int, int], fraction: float, **kw) -> dict:
    n = sum(j * c for j, c in hist.items())
    return uniqueness(hist, population_size(n, fraction=fraction), **kw)


# ARX's TestRiskMetrics.testDecisionRule2: Dankar's share at each sampling fraction
ARX_DANKAR = {0.1: (0.27684993883653597, "pitman"), 0.2: (0.3577099234829125, "zayatz"),
              0.01: (0.1446083531167384, "pitman"), 1.0: (0.5142895033485844, None)}


@pytest.mark.parametrize("fraction", sorted(ARX_DANKAR))
def test_arx_adult_decision_rule(adult_histogram, fraction):
    expected, model = ARX_DANKAR[fraction]
    r = adult(adult_histogram, fraction, arx=True)
    assert arx_equal(r["dankar"], expected) and r["dankar"] == pytest.approx(expected, rel=1e-9)
    if model:
        assert r["dankar_model"] == model
    assert int(r["dankar"] * 10000) <= int(r["sample_uniqueness"] * 10000)
    assert r["sample_size"] == 30162 and r["population_size"] == math.floor(30162 / fraction + 0.5)


def test_arx_adult_zayatz_and_pitman_need_no_switch(adult_histogram):
    """Zayatz and Pitman follow the papers in ARX: the same figures without arx=True; ARX's other
    Adult branch (Zayatz at f = 0.1) is 0.3207402393466189."""
    r = adult(adult_histogram, 0.1)
    assert r["pitman"] == pytest.approx(0.27684993883653597, rel=1e-9)
    assert r["zayatz"] == pytest.approx(0.3207402393466189, rel=1e-12)
    assert adult(adult_histogram, 0.01)["dankar"] == pytest.approx(0.1446083531167384, rel=1e-9)
    assert adult(adult_histogram, 1.0)["dankar"] == 0.5142895033485844


def test_adult_snb_as_the_papers_have_it(adult_histogram):
    """At f = 0.2 ARX's SNB has no solution (K's misplaced "- 1", the +(a+2) exponent): Dankar takes
    Zayatz, 0.3577. With Haas et al.'s K and the model's exponent SNB converges below Zayatz, and
    Dankar's rule takes it."""
    arx, paper = adult(adult_histogram, 0.2, arx=True), adult(adult_histogram, 0.2)
    assert arx["snb"] is None and arx["zayatz"] == pytest.approx(0.3577099234829125, rel=1e-12)
    assert paper["zayatz"] == arx["zayatz"]
    assert paper["dankar_model"] == "snb" and paper["dankar"] == paper["snb"] < paper["zayatz"]
    assert paper["snb"] == pytest.approx(oracle.snb(adult_histogram, paper["population_size"]) / paper["population_size"],
                                         rel=1e-6)


def test_arx_decision_rule_small_example():
    """ARX's testDecisionRule on DataProvider's 7 records (all unique): f = 0.2 gives 1.0; once
    2-anonymous (no uniques) 0."""
    r = uniqueness({1: 7}, population_size(7, fraction=0.2))
    assert r["population_size"] == 35 and arx_equal(r["dankar"], 1.0) and r["dankar_model"] == "zayatz"
    assert r["dankar"] <= r["sample_uniqueness"]
    r = uniqueness({2: 2, 3: 1}, population_size(7, fraction=0.1))
    assert r["dankar"] == 0 and r["dankar_model"] == "none"
    assert r["zayatz"] == r["pitman"] == r["snb"] == 0


histograms = st.dictionaries(
    st.one_of(st.integers(1, 12), st.integers(1, 400)), st.integers(0, 400), min_size=1, max_size=40,
).filter(lambda h: any(h.values()))
fractions = st.one_of(st.sampled_from([1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.5, 0.9]), st.floats(1e-5, 1.0))


def oracle_shares(hist, N):
    """The oracle's shares, None where it finds no valid solution."""
    def share(x):
        return None if x is None or x == 0 and hist.get(1) else x / N
    return {"zayatz": share(oracle.zayatz(hist, N)), "pitman": share(oracle.pitman(hist, N)),
            "snb": share(oracle.snb(hist, N))}


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(hist=histograms, fraction=fractions, big=st.integers(0, 10**10))
def test_models_match_the_scipy_oracle(hist, fraction, big):
    n = sum(j * c for j, c in hist.items())
    N = population_size(n, fraction=fraction) if big % 2 else max(n + 1, big)
    r = uniqueness(hist, N)
    if N == n:
        return
    expected = oracle_shares(hist, N)
    for model in ("zayatz", "pitman", "snb"):
        ours, ref = r[model], expected[model]
        if ours is not None and ref is not None:
            assert ours == pytest.approx(ref, rel=1e-6, abs=1e-300), model
    assert r["zayatz"] is not None and expected["zayatz"] is not None
    assert (r["dankar"], r["dankar_model"]) == dankar_rule(r)


def dankar_rule(r):
    """Dankar et al.'s rule on the reported shares."""
    if not r["sample_uniques"]:
        return 0.0, "none"
    if r["sampling_fraction"] <= 0.1:
        return (r["pitman"], "pitman") if r["pitman"] else (r["zayatz"], "zayatz")
    if r["snb"] and not r["zayatz"] < r["snb"]:
        return r["snb"], "snb"
    return r["zayatz"], "zayatz"


@settings(max_examples=examples(30), deadline=None)
@given(hist=histograms)
def test_census_is_the_sample(hist):
    """N = n: every model's population uniqueness is the sample uniqueness c1/n, exactly."""
    n = sum(j * c for j, c in hist.items())
    for r in (uniqueness(hist, n), uniqueness(hist, population_size(n, fraction=1.0), arx=True)):
        share = hist.get(1, 0) / n
        assert r["sampling_fraction"] == 1.0 and r["sample_uniqueness"] == share
        assert r["zayatz"] == r["pitman"] == r["snb"] == r["dankar"] == share


def test_oracle_agrees_on_adult(adult_histogram):
    n = sum(j * c for j, c in adult_histogram.items())
    for fraction in (0.01, 0.1, 0.2, 0.5):
        N = population_size(n, fraction=fraction)
        r, ref = uniqueness(adult_histogram, N), oracle_shares(adult_histogram, N)
        for model in ("zayatz", "pitman", "snb"):
            assert r[model] == pytest.approx(ref[model], rel=1e-6), (fraction, model)


def test_population_size():
    assert population_size(30162, fraction=0.1) == 301620
    assert population_size(7, fraction=0.2) == 35
    assert population_size(5, fraction=0.4) == 13  # 12.5 rounds half up, as Java's Math.round
    assert population_size(10, size=10) == 10
    assert population_size(10, region="usa") == REGIONS["usa"] == 317238626
    assert population_size(10, region="North America") == 565265000
    assert set(REGIONS) >= {"usa", "uk", "france", "germany", "china", "india", "european_union"}


@pytest.mark.parametrize("call, message", [
    (lambda: population_size(10, fraction=0), "sampling fraction"),
    (lambda: population_size(10, fraction=1.5), "sampling fraction"),
    (lambda: population_size(10, fraction=float("nan")), "sampling fraction"),
    (lambda: population_size(10, size=9), "smaller than the sample size"),
    (lambda: population_size(10, region="atlantis"), "unknown region"),
    (lambda: population_size(10), "exactly one"),
    (lambda: population_size(10, size=100, fraction=0.1), "exactly one"),
    (lambda: population_size(0, size=100), "sample size"),
    (lambda: uniqueness({}, 100), "empty"),
    (lambda: uniqueness({1: 0}, 100), "empty"),
    (lambda: uniqueness({1: 5, 2: 3}, 10), "smaller than the sample size"),
    (lambda: uniqueness({0: 5}, 100), "class sizes"),
    (lambda: uniqueness({1: -1}, 100), "negative"),
    (lambda: uniqueness({1: 2.5}, 100), "integer"),
])
def test_input_errors(call, message):
    with pytest.raises(InputError, match=message) as info:
        call()
    assert "\n" not in str(info.value)
