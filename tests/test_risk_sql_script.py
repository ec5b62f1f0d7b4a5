"""The SQL script's sample-based risk summary (anonydb_risk_summary, sql/script_risk.sql): in the
real DuckDB CLI on Adult against ARX's published average risk, and on random tables against the
plain-Python oracle (tests/risk_oracle.py), with and without a population table."""

from __future__ import annotations

import csv
import json
from fractions import Fraction

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, examples, need_shared
import risk_oracle
from test_sql_script import assert_one_line_error, rows, run_cli, script_file  # noqa: F401 (a fixture)

COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
           "salary-class"]
FIELDS = ["n", "classes", "prosecutor_records_at_risk", "prosecutor_highest", "prosecutor_lowest",
          "prosecutor_average", "journalist_records_at_risk", "journalist_highest", "journalist_lowest",
          "journalist_average", "marketer", "sample_uniqueness"]


def _flat(want: dict) -> dict:
    out = {"n": want["n"], "classes": want["classes"], "marketer": want["marketer"],
           "sample_uniqueness": want["sample_uniqueness"]}
    for who in ("prosecutor", "journalist"):
        for k, v in want[who].items():
            out[f"{who}_{k}"] = v
    return out


def test_adult_in_the_cli(script_file):
    """ARX's TestRiskMetrics: Adult over its nine columns has average risk 0.6465751607983555; the
    other figures are the oracle's."""
    path = need_shared() / "adult" / "adult.csv"
    qis = "[" + ", ".join(f"'{c}'" for c in COLUMNS) + "]"
    r = run_cli(None, f".read {script_file}\n.mode jsonlines\n"
                      f"CREATE TABLE adult AS FROM read_csv('{path}', delim=';', header=true, all_varchar=true);\n"
                      f"FROM anonydb_risk_summary('adult', {qis}, threshold := 0.1);\n")
    got = rows(r.stdout)[0]
    assert got["prosecutor_average"] == pytest.approx(0.6465751607983555, rel=1e-12)
    with open(path, newline="") as fh:
        data = [tuple(x) for x in csv.reader(fh, delimiter=";")][1:]
    want = _flat(risk_oracle.summary(data, list(range(9)), Fraction(1, 10)))
    assert set(got) == set(FIELDS)
    for k in FIELDS:
        assert got[k] == pytest.approx(float(want[k]), rel=1e-12), k


def test_bad_arguments_in_the_cli(script_file):
    head = f".read {script_file}\nCREATE TABLE t AS SELECT 1 AS a;\n"
    assert_one_line_error(head + "FROM anonydb_risk_summary('t', ['a'], threshold := 1.5);", "threshold must lie in")
    assert_one_line_error(head + "FROM anonydb_risk_summary('t', ['a', 'b']);", "key variables not found in t: b")
    assert_one_line_error(head + "CREATE TABLE p AS SELECT 2 AS a;\n"
                          "FROM anonydb_risk_summary('t', ['a'], population := 'p');", "fewer records than the table")


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute((ROOT / "sql" / "script_risk.sql").read_text())
    yield c
    c.close()


VALUES = st.sampled_from(["a", "b", None])
ROWS = st.lists(st.tuples(VALUES, st.sampled_from([1, 2, 3])), min_size=1, max_size=25)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows_=ROWS, extra=st.lists(st.tuples(VALUES, st.sampled_from([1, 2, 3])), max_size=25),
       t=st.sampled_from(["0.2", "0.5", "0.35", "1"]), with_population=st.booleans())
def test_matches_the_oracle(con, rows_, extra, t, with_population):
    con.execute("CREATE OR REPLACE TABLE s (q1 VARCHAR, q2 INTEGER)")
    con.executemany("INSERT INTO s VALUES (?, ?)", rows_)
    pop = None
    if with_population:
        pop = rows_ + extra
        con.execute("CREATE OR REPLACE TABLE p (q1 VARCHAR, q2 INTEGER)")
        con.executemany("INSERT INTO p VALUES (?, ?)", pop)
    call = f"FROM anonydb_risk_summary('s', ['q1', 'q2'], threshold := {t}" + (", population := 'p')" if pop else ")")
    got = dict(zip(FIELDS, con.execute(call).fetchone()))
    want = _flat(risk_oracle.summary(rows_, [0, 1], Fraction(t), population=pop))
    for k in FIELDS:
        assert got[k] == pytest.approx(float(want[k]), rel=1e-12), k
