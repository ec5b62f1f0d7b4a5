"""Full-domain generalization as one SQL statement."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import sqlglot
from sqlglot import exp

from anonydb.errors import InputError
from anonydb.generalize import generalize, generalize_sql
from anonydb.hierarchy import Hierarchy
from anonydb.sqlgen import ident, literal
from conftest import make_table


ZIP_LEVEL2 = {3: "476**", 4: "476**", 5: "476**", 6: "479**", 11: "479**", 8: "479**", 7: "476**", 9: "476**",
              10: "476**"}  # test2.csv, keyed by Salary (unique per row)


@pytest.fixture
def test2(engine, datasets):
    path = datasets / "toy" / "test2.csv"
    engine.execute(f"CREATE TABLE test2 AS SELECT * FROM read_csv({literal(str(path))}, delim=';', header=true)")
    return "test2"


def one_statement(sql: str) -> exp.Expression:
    stmts = sqlglot.parse(sql, read="duckdb")
    assert len(stmts) == 1, sql
    return stmts[0]


def by_salary(engine, select) -> dict:
    return {r["Salary"]: r for r in engine.fetch(select)}


# -- toy data --------------------------------------------------------------------------------------------
def test_toy_zip_level2(engine, datasets, test2):
    hz = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_ZIPCode.csv")
    r = generalize(engine, test2, {"ZIPCode": 2}, {"ZIPCode": hz})
    assert isinstance(one_statement(r.sql), exp.Select) and r.template == "generalize.sql.j2"
    rows = by_salary(engine, r)
    assert {s: row["ZIPCode"] for s, row in rows.items()} == ZIP_LEVEL2
    assert rows[3] == {"ZIPCode": "476**", "Age": 29, "Salary": 3, "Disease": "gastric ulcer"}  # others unchanged
    cols, _ = engine.fetch_rows(r)
    assert cols == ["ZIPCode", "Age", "Salary", "Disease"]  # same names, same order


def test_toy_masking_and_materialized_table_agree(engine, datasets, test2):
    hz = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_ZIPCode.csv")
    masked = by_salary(engine, generalize(engine, test2, {"ZIPCode": 2}, {"ZIPCode": Hierarchy.masking(5)}))
    assert {s: row["ZIPCode"] for s, row in masked.items()} == ZIP_LEVEL2
    hz.materialize(engine, "hz")
    joined = by_salary(engine, generalize_sql(engine, test2, {"ZIPCode": 2}, {"ZIPCode": hz}, tables={"ZIPCode": "hz"}))
    assert {s: row["ZIPCode"] for s, row in joined.items()} == ZIP_LEVEL2


def test_toy_all_attributes_and_bounds(engine, datasets, test2):
    hs = {a: Hierarchy.from_arx(datasets / "toy" / f"test2_hierarchy_{a}.csv") for a in ("ZIPCode", "Age", "Disease")}
    rows = by_salary(engine, generalize(engine, test2, {"ZIPCode": 5, "Age": 1, "Disease": 2}, hs))
    assert rows[3] == {"ZIPCode": "*****", "Age": "[20,30[", "Salary": 3, "Disease": "digestive system disease"}
    assert rows[11] == {"ZIPCode": "*****", "Age": ">=40", "Salary": 11, "Disease": "vascular lung disease"}
    # level 0 leaves the column unchanged, original type included
    sel = generalize(engine, test2, {"ZIPCode": 0, "Age": 2}, hs)
    engine.create_table_as("g0", sel)
    assert dict(engine.columns("g0"))["ZIPCode"] == "BIGINT" and dict(engine.columns("g0"))["Age"] == "VARCHAR"
    assert engine.fetch_rows("SELECT DISTINCT Age FROM g0")[1] == [("*",)]


def test_keep_and_out(engine, datasets, test2):
    hz = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_ZIPCode.csv")
    r = generalize(engine, test2, {"ZIPCode": 3}, {"ZIPCode": hz}, out="released", keep=["Disease"])
    assert [c for c, _ in engine.columns("released")] == ["ZIPCode", "Disease"]
    assert engine.fetch_rows("SELECT DISTINCT ZIPCode FROM released")[1] == [("47***",)]
    assert engine.scalar("SELECT count(*) FROM released") == 9
    generalize(engine, test2, {"ZIPCode": 4}, {"ZIPCode": hz}, out="released", replace=True)
    assert engine.fetch_rows("SELECT DISTINCT ZIPCode FROM released")[1] == [("4****",)]
    assert one_statement(r.sql)
    with pytest.raises(InputError, match=r"kept column 'Nope' is not a column"):
        generalize_sql(engine, test2, {"ZIPCode": 1}, {"ZIPCode": hz}, keep=["Nope"])


# -- Adult ---------------------------------------------------------------------------------------------------
def test_adult_generalization_matches_hierarchy(engine, datasets):
    path = datasets / "adult" / "adult.csv"
    engine.execute(f"CREATE TABLE adult AS SELECT * FROM read_csv({literal(str(path))}, delim=';', header=true)")
    attrs = ["age", "education", "marital-status", "native-country", "occupation", "race", "salary-class", "sex",
             "workclass"]
    hs = {a: Hierarchy.from_arx(datasets / "adult" / f"adult_hierarchy_{a}.csv") for a in attrs}
    levels = {"age": 2, "education": 1, "sex": 1, "native-country": 0}
    r = generalize(engine, "adult", levels, hs, out="adult_g")
    one_statement(r.sql)
    assert engine.scalar("SELECT count(*) FROM adult_g") == engine.scalar("SELECT count(*) FROM adult") == 30162
    # the generalized counts equal the original counts pushed up the hierarchy (in Python, small)
    orig = engine.fetch_rows("SELECT CAST(age AS VARCHAR), education, count(*) FROM adult GROUP BY ALL")[1]
    expected: Counter = Counter()
    for age, edu, n in orig:
        expected[(hs["age"].ancestors(age)[2], hs["education"].ancestors(edu)[1])] += n
    got = {(a, e): n for a, e, n in engine.fetch_rows("SELECT age, education, count(*) FROM adult_g GROUP BY ALL")[1]}
    assert got == dict(expected)
    assert got[("30-39", "Undergraduate")] == expected[("30-39", "Undergraduate")] > 0
    assert engine.fetch_rows("SELECT DISTINCT sex FROM adult_g")[1] == [("*",)]
    first = engine.fetch("SELECT * FROM adult_g LIMIT 0")
    assert first == [] and [c for c, _ in engine.columns("adult_g")] == [c for c, _ in engine.columns("adult")]


# -- rule-based hierarchies in generalize ------------------------------------------------------------------------
def test_intervals_and_dates(engine):
    engine.execute("CREATE TABLE p AS SELECT * FROM (VALUES (1, 23, DATE '2020-03-17'), (2, 37, DATE '2021-12-01'), "
                   "(3, NULL, NULL)) AS v(id, age, visit)")
    hs = {"age": Hierarchy.intervals(breakpoints=[[0, 30, 60, math.inf]]), "visit": Hierarchy.dates()}
    rows = engine.fetch_rows(generalize(engine, "p", {"age": 1, "visit": 2}, hs).sql + " ORDER BY id")[1]
    assert rows == [(1, "[0, 30[", "2020"), (2, "[30, 60[", "2021"), (3, None, None)]


def test_nulls_stay_null(engine):
    make_table(engine, "z", ["zip", "n"], [("47677", 1), (None, 2)])
    h = Hierarchy.from_rows([("47677", "4767*", "*")])
    for level, label in ((0, "47677"), (1, "4767*"), (2, "*")):
        rows = engine.fetch_rows(generalize(engine, "z", {"zip": level}, {"zip": h}).sql + " ORDER BY n")[1]
        assert rows == [(label, 1), (None, 2)]


# -- errors --------------------------------------------------------------------------------------------------
def test_bad_levels_and_attributes(engine):
    make_table(engine, "z", ["zip", "n"], [("47677", 1)])
    h = Hierarchy.masking(5)
    for bad in (-1, 6):
        with pytest.raises(InputError, match=r"attribute 'zip'.*allowed levels are 0\.\.5"):
            generalize_sql(engine, "z", {"zip": bad}, {"zip": h})
    with pytest.raises(InputError, match=r"attribute 'zip'.*integer in 0\.\.5"):
        generalize_sql(engine, "z", {"zip": True}, {"zip": h})
    with pytest.raises(InputError, match=r"attribute 'postcode' is not a column of 'z' \(columns: zip, n\)"):
        generalize_sql(engine, "z", {"postcode": 1}, {"postcode": h})
    with pytest.raises(InputError, match=r"attribute 'n': no hierarchy given"):
        generalize_sql(engine, "z", {"n": 1}, {"zip": h})
    with pytest.raises(InputError, match="non-empty mapping"):
        generalize_sql(engine, "z", {}, {"zip": h})
    with pytest.raises(InputError, match="not a Hierarchy"):
        generalize_sql(engine, "z", {"zip": 1}, {"zip": "h.csv"})
    assert engine.fetch_rows(generalize_sql(engine, "z", {"ZIP": 1}, {"zip": h}))[1] == [("4767*", 1)]  # case-folded


def test_uncovered_values(engine):
    make_table(engine, "z", ["zip"], [("47677",), ("99999",), (None,)])
    h = Hierarchy.from_rows([("47677", "4767*", "*")])
    with pytest.raises(InputError, match=r"column 'zip' of 'z'.*1 value\(s\).*'99999'"):
        generalize(engine, "z", {"zip": 1}, {"zip": h})
    # generalize_sql does not validate: the LEFT JOIN shows an uncovered value as NULL
    rows = engine.fetch_rows(generalize_sql(engine, "z", {"zip": 1}, {"zip": h}).sql + " ORDER BY 1 NULLS LAST")[1]
    assert rows == [("4767*",), (None,), (None,)]
    generalize(engine, "z", {"zip": 0}, {"zip": h})  # level 0 changes nothing, so needs no coverage


# -- identifier safety and one statement ------------------------------------------------------------------------
def test_hostile_identifiers(engine):
    zipcol, agecol, other = 'zip "code"; drop table x', "âge", "a b;c--"
    table = 'data; DROP TABLE x; --"'
    engine.execute("CREATE TABLE x AS SELECT 1 AS keep_me")
    make_table(engine, table, [zipcol, agecol, other], [("47677", 23, "p"), ("47602", 37, "q"), (None, None, "r")])
    hs = {zipcol: Hierarchy.from_rows([("47677", "4767*", "476**", "*"), ("47602", "4760*", "476**", "*")]),
          agecol: Hierarchy.intervals([10, 20])}
    out = 'out "table"; x'
    r = generalize(engine, table, {zipcol: 1, agecol: 2}, hs, out=out)
    one_statement(r.sql)
    assert ident(zipcol) in r.sql
    assert [c for c, _ in engine.columns(out)] == [zipcol, agecol, other]
    assert engine.fetch_rows(f"SELECT * FROM {ident(out)} ORDER BY {ident(other)}")[1] == [
        ("4767*", "[20, 40[", "p"), ("4760*", "[20, 40[", "q"), (None, None, "r")]
    assert engine.exists("x") and engine.scalar("SELECT keep_me FROM x") == 1
    # hostile labels and leaves are literals, never SQL
    h = Hierarchy.from_rows([("47677", "'); DROP TABLE x; --", "*"), ("47602", 'o"k', "*")])
    rows = engine.fetch_rows(generalize(engine, table, {zipcol: 1}, {zipcol: h}, keep=[other]).sql + " ORDER BY 2")[1]
    assert rows == [("'); DROP TABLE x; --", "p"), ('o"k', "q"), (None, "r")]
    h.materialize(engine, 'h "t"')
    rows = engine.fetch_rows(generalize_sql(engine, table, {zipcol: 1}, {zipcol: h}, keep=[other],
                                            tables={zipcol: 'h "t"'}).sql + " ORDER BY 2")[1]
    assert rows[0] == ("'); DROP TABLE x; --", "p")
    assert engine.exists("x")


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_single_statement(engine, level):
    make_table(engine, "t", ["a", "b", "c"], [("x1", 5, "2020-01-02")])
    hs = {"a": Hierarchy.from_rows([("x1", "X", "X*", "*")]), "b": Hierarchy.intervals([5, 10]),
          "c": Hierarchy.dates()}
    r = generalize_sql(engine, "t", {"a": level, "b": level, "c": level}, hs)
    assert isinstance(one_statement(r.sql), exp.Select)
    assert len(engine.fetch(r)) == 1
