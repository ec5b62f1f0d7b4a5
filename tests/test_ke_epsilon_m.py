"""(k,e)- and (epsilon,m)-anonymity on fractional sensitive values: the range and the
neighbourhoods are exact for DECIMAL and floating-point columns alike (the values read as decimals
of nine places), against the plain-Python oracles of tests/survey_models_oracle.py; the worked
examples, the oracles on integer tables and the anonymizers are in tests/test_survey_models.py."""

from __future__ import annotations

import tempfile
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb.models import EpsilonMAnonymity, KEAnonymity

import survey_models_oracle as oracle
from conftest import examples

SETTINGS = settings(max_examples=examples(25), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _table(engine, name, rows, sql_type):
    values = ", ".join(f"('{q}', {'NULL' if s is None else s})" for q, s in rows)
    engine.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT q, CAST(s AS {sql_type}) AS s "
                   f"FROM (VALUES {values}) AS v(q, s)")


def _one(engine, table, model):
    return anonydb.check(table, ["q"], "s", engine=engine, models=[model]).verdicts[0]


def test_borderline_values(engine):
    """Ranges and distances of exactly e and epsilon, which DOUBLE arithmetic misjudges
    (2.8 - 2.4 = 0.3999999999999999, 2.6 - 2.3 = 0.30000000000000027): 2.4..2.8 is a range of
    0.4; with epsilon = 0.3, 2.3 and 2.6 are neighbours, so 2.6 has 3 of 5 within epsilon and the
    group fails m = 2 (5 / 3 < 2)."""
    for sql_type in ("DECIMAL(4, 1)", "DOUBLE"):
        _table(engine, "tb", [("g", "2.4"), ("g", "2.8"), ("g", "2.5")], sql_type)
        v = _one(engine, "tb", KEAnonymity(3, 0.4))
        assert v.holds and v.achieved == {"k": 3, "e": Fraction(2, 5)}, sql_type
        assert not _one(engine, "tb", KEAnonymity(3, "0.400000001")).holds
        _table(engine, "tb", [("g", x) for x in ("2.6", "1.1", "2.3", "3.5", "2.3")], sql_type)
        v = _one(engine, "tb", EpsilonMAnonymity(0.3, 2))
        assert not v.holds and v.achieved["m"] == Fraction(5, 3), sql_type
        assert _one(engine, "tb", EpsilonMAnonymity("0.299999999", 2)).holds


def test_parameters_beyond_nine_places(engine):
    """e = 1/3 holds for a range of 0.333333334 and fails 0.333333333 (the range is a multiple of
    10^-9: e is rounded up); epsilon = 1/3 reaches 0.333333333, not 0.333333334 (rounded down)."""
    _table(engine, "tn", [("a", "0"), ("a", "0.333333334"), ("b", "0"), ("b", "0.333333333")], "DECIMAL(10, 9)")
    v = _one(engine, "tn", KEAnonymity(2, Fraction(1, 3)))
    assert [g.key["q"] for g in v.violations] == ["b"] and v.achieved["e"] == Fraction(333333333, 10**9)
    v = _one(engine, "tn", EpsilonMAnonymity(Fraction(1, 3), 2))
    assert [g.key["q"] for g in v.violations] == ["b"] and v.achieved["m"] == 1


VALUES = st.lists(st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(0, 40))), min_size=1, max_size=30)


@SETTINGS
@given(rows=VALUES, sql_type=st.sampled_from(["DECIMAL(6, 1)", "DOUBLE"]),
       k=st.integers(1, 3), e=st.sampled_from(["0", "0.3", "1.1", "2"]),
       eps=st.sampled_from(["0", "0.2", "0.3", "1.5"]), m=st.sampled_from([1, 1.5, 2]))
def test_fractional_values_match_the_oracle(engine, rows, sql_type, k, e, eps, m):
    """Tenths as DECIMAL and DOUBLE (a DOUBLE's 0.1 is 0.1000000000000000055..., read as 0.1):
    the verdicts and exact achieved values of the oracles on the decimals as written."""
    rows = [(q, None if s is None else str(Decimal(s) / 10)) for q, s in rows]
    _table(engine, "tf", rows, sql_type)
    dec = [(q, None if s is None else Decimal(s)) for q, s in rows]
    v = _one(engine, "tf", KEAnonymity(k, e))
    holds, (kmin, emin) = oracle.ke(dec, 1, k, e)
    assert v.holds == holds and v.achieved == {"k": kmin, "e": emin}
    v = _one(engine, "tf", EpsilonMAnonymity(eps, m))
    holds, best = oracle.epsilon_m(dec, 1, eps, m)
    assert v.holds == holds and v.achieved["m"] == best


def test_script_macros_read_tenths_exactly(engine):
    """The SQL script's macros in the real DuckDB CLI agree with the Python checks on the
    borderline DOUBLE values."""
    from test_sql_script import rows as json_rows, run_cli

    from anonydb.sqlscript import script

    rows = [("g", x) for x in ("2.6", "1.1", "2.3", "3.5", "2.3")] + [("h", "2.4"), ("h", "2.8")]
    _table(engine, "tx", rows, "DOUBLE")
    cases = [("anonydb_check_ke('tx', ['q'], 's', 2, 0.4)", KEAnonymity(2, 0.4)),
             ("anonydb_check_ke('tx', ['q'], 's', 2, 0.5)", KEAnonymity(2, 0.5)),
             ("anonydb_check_epsilon_m('tx', ['q'], 's', 0.3, 1.5)", EpsilonMAnonymity(0.3, 1.5)),
             ("anonydb_check_epsilon_m('tx', ['q'], 's', 0.4, 1)", EpsilonMAnonymity(0.4, 1))]
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as fh:
        fh.write(script())
    values = ", ".join(f"('{q}', {s})" for q, s in rows)
    setup = f"CREATE TABLE tx AS SELECT q, CAST(s AS DOUBLE) AS s FROM (VALUES {values}) AS v(q, s);\n"
    got = json_rows(run_cli(None, f".read {fh.name}\n.mode jsonlines\n{setup}"
                                  + "".join(f"FROM {c};\n" for c, _ in cases)).stdout)
    assert len(got) == len(cases)
    for (_, model), g in zip(cases, got):
        v = _one(engine, "tx", model)
        assert (g["holds"], g["violating_groups"]) == (v.holds, v.violating_groups), model.params
        value = v.achieved["e"] if isinstance(model, KEAnonymity) else v.achieved["m"]
        assert g["achieved"] == pytest.approx(float(value))
