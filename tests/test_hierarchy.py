"""Hierarchies: ARX files (Adult, toy), rule-based intervals / masking / dates, validation."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest

from anonydb.errors import InputError
from anonydb.hierarchy import (DateHierarchy, EnumeratedHierarchy, Hierarchy, IntervalHierarchy, MaskingHierarchy,
                               parse_hierarchy_arg, validate_all)
from anonydb.sqlgen import ident, literal
from conftest import make_table

ADULT_ATTRS = ["age", "education", "marital-status", "native-country", "occupation", "race", "salary-class", "sex",
               "workclass"]


def load_csv(engine, name: str, path: Path) -> str:
    engine.execute(f"CREATE TABLE {ident(name)} AS SELECT * FROM read_csv({literal(str(path))}, delim=';', header=true)")
    return name


def write(tmp_path: Path, text: str, name: str = "h.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# -- Adult (ARX) ------------------------------------------------------------------------------------
def test_adult_age_hierarchy(datasets):
    h = Hierarchy.from_arx(datasets / "adult" / "adult_hierarchy_age.csv")
    assert isinstance(h, EnumeratedHierarchy)
    assert h.height == 4 and h.levels == 5 and h.root == "*"
    assert h.ancestors("39") == ["39", "35-39", "30-39", "20-39", "*"]
    assert h.ancestors(39) == ["39", "35-39", "30-39", "20-39", "*"]  # numbers are matched as text
    assert h.ancestors(17) == ["17", "15-19", "10-19", "0-19", "*"]
    assert len(h.leaves) == 100 and h.leaves[0] == "1"
    assert h.nodes(3) == ["0-19", "20-39", "40-59", "60-79", "80-99"]
    with pytest.raises(InputError, match="'200' is not a leaf"):
        h.ancestors(200)


@pytest.mark.parametrize("attr,height", [("age", 4), ("education", 3), ("marital-status", 2),
                                         ("native-country", 2), ("occupation", 2), ("race", 1),
                                         ("salary-class", 1), ("sex", 1), ("workclass", 2)])
def test_adult_hierarchies_cover_adult(engine, datasets, attr, height):
    load_csv(engine, "adult", datasets / "adult" / "adult.csv")
    h = Hierarchy.from_arx(datasets / "adult" / f"adult_hierarchy_{attr}.csv")
    assert h.height == height
    h.validate(engine, "adult", attr)  # no error: every value is a leaf


def test_adult_missing_values_are_listed(engine, datasets):
    load_csv(engine, "adult", datasets / "adult" / "adult.csv")
    full = Hierarchy.from_arx(datasets / "adult" / "adult_hierarchy_age.csv")
    partial = Hierarchy.from_rows(r for r in full.rows if r[0] not in ("39", "50"))
    with pytest.raises(InputError) as e:
        partial.validate(engine, "adult", "age")
    msg = str(e.value)
    assert "'age'" in msg and "2 value(s)" in msg and "'39'" in msg and "'50'" in msg and "more" not in msg


def test_validate_lists_first_20_and_count(engine):
    make_table(engine, "t", ["v"], [(i,) for i in range(30)])
    h = Hierarchy.from_rows([("0", "*")])
    with pytest.raises(InputError) as e:
        h.validate(engine, "t", "v")
    msg = str(e.value)
    assert "29 value(s)" in msg and "... and 9 more" in msg
    assert "'1'" in msg and "'20'" in msg and "'21'" not in msg  # the first 20 in value order: 1 .. 20


def test_validate_nulls_and_missing_column(engine):
    make_table(engine, "t", ["v"], [("a",), (None,), ("b",)])
    Hierarchy.from_rows([("a", "*"), ("b", "*")]).validate(engine, "t", "v")  # NULL is never an error
    with pytest.raises(InputError, match="column 'w' not found"):
        Hierarchy.from_rows([("a", "*")]).validate(engine, "t", "w")


def test_validate_all_names_the_first_uncovered_column_in_order(engine):
    # one statement for the columns: each column's own uncovered values, count and order, and the
    # error names the first column (in the order given) that its hierarchy does not cover
    make_table(engine, "t", ["u", "v", "w"], [(i, f"x{i}", i % 3) for i in range(30)])
    covers_u = Hierarchy.from_rows([(str(i), "*") for i in range(30)])
    partial_v = Hierarchy.from_rows([(f"x{i}", "*") for i in range(5)])
    partial_w = Hierarchy.intervals([10], lower=1, upper=10)  # leaves 0 out
    validate_all(engine, "t", {"u": covers_u})
    with pytest.raises(InputError) as e:
        validate_all(engine, "t", {"u": covers_u, "w": partial_w, "v": partial_v}, labels={"w": "W"})
    msg = str(e.value)
    assert "column 'W'" in msg and "1 value(s)" in msg and "'0'" in msg
    with pytest.raises(InputError) as e:
        validate_all(engine, "t", {"v": partial_v, "w": partial_w}, name="people.csv")
    msg = str(e.value)
    assert "column 'v' of 'people.csv'" in msg and "25 value(s)" in msg and "... and 5 more" in msg
    # v's first 20 in text order (x10 .. x29; x5 .. x9 come after), none of w's
    assert "'x10'" in msg and "'x29'" in msg and "'x5'" not in msg and "'0'" not in msg
    with pytest.raises(InputError, match="column 'z' not found"):
        validate_all(engine, "t", {"u": covers_u, "z": covers_u})


def test_double_column_is_matched_as_text(engine):
    # documented: matching is CAST(col AS VARCHAR) = leaf, so a DOUBLE 39.0 is the text '39.0'
    engine.execute("CREATE TABLE t AS SELECT CAST(39 AS DOUBLE) AS age")
    with pytest.raises(InputError, match="'39.0'"):
        Hierarchy.from_rows([("39", "*")]).validate(engine, "t", "age")


# -- toy ZIP codes: ARX file and masking ---------------------------------------------------------------
def test_toy_zip_chain_and_masking(engine, datasets):
    arx = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_ZIPCode.csv")
    chain = ["47677", "4767*", "476**", "47***", "4****", "*****"]
    assert arx.height == 5 and arx.ancestors("47677") == chain
    m = Hierarchy.masking(5)
    assert isinstance(m, MaskingHierarchy) and m.height == 5 and m.root == "*****"
    assert m.ancestors(47677) == chain and m.ancestors("47677") == chain
    for leaf in arx.leaves:
        assert m.ancestors(leaf) == arx.ancestors(leaf)
    # materialized over the data, masking gives exactly the ARX long form
    load_csv(engine, "t2", datasets / "toy" / "test2.csv")
    arx.materialize(engine, "h_arx")
    m.materialize(engine, "h_mask", relation="t2", column="ZIPCode")
    diff = engine.scalar("SELECT count(*) FROM ((SELECT * FROM h_arx EXCEPT SELECT * FROM h_mask) "
                         "UNION ALL (SELECT * FROM h_mask EXCEPT SELECT * FROM h_arx)) AS d")
    assert diff == 0
    m.validate(engine, "t2", "ZIPCode")


def test_masking_validation_and_args(engine):
    make_table(engine, "z", ["zip"], [("47677",), ("1234",), ("123456",), (None,)])
    with pytest.raises(InputError) as e:
        Hierarchy.masking(5).validate(engine, "z", "zip")
    assert "not exactly 5 characters" in str(e.value) and "'1234'" in str(e.value) and "'123456'" in str(e.value)
    assert Hierarchy.masking(3, "#").ancestors("abc") == ["abc", "ab#", "a##", "###"]
    for bad in ({"length": 0}, {"length": "5"}, {"char": "**"}, {"char": ""}):
        with pytest.raises(InputError):
            Hierarchy.masking(**bad)


def test_toy_hierarchies_load(datasets):
    age = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_Age.csv")
    assert age.height == 2 and age.ancestors(29) == ["29", "[20,30[", "*"]
    dis = Hierarchy.from_arx(datasets / "toy" / "test2_hierarchy_Disease.csv")
    assert dis.ancestors("flu") == ["flu", "respiratory infection", "vascular lung disease",
                                    "respiratory&digestive disease"]
    big = Hierarchy.from_arx(datasets / "toy" / "test_hierarchy_zipcode.csv")
    assert big.height == 5 and big.root == "*" and big.ancestors("80001") == ["80001", "8000*", "800**", "80***", "8****", "*"]


# -- materialization --------------------------------------------------------------------------------------
def test_materialize_long_and_wide(engine):
    h = Hierarchy.from_rows([("a", "AB", "*"), ("b", "AB", "*"), ("c", "C", "*")])
    h.materialize(engine, "hl")
    assert engine.columns("hl") == [("leaf", "VARCHAR"), ("h", "INTEGER"), ("node", "VARCHAR")]
    rows = engine.fetch_rows("SELECT leaf, h, node FROM hl ORDER BY leaf, h")[1]
    assert rows == [("a", 0, "a"), ("a", 1, "AB"), ("a", 2, "*"), ("b", 0, "b"), ("b", 1, "AB"), ("b", 2, "*"),
                    ("c", 0, "c"), ("c", 1, "C"), ("c", 2, "*")]
    h.materialize_wide(engine, "hw")
    assert [c for c, _ in engine.columns("hw")] == ["level_0", "level_1", "level_2"]
    assert engine.fetch_rows("SELECT * FROM hw ORDER BY level_0")[1] == [("a", "AB", "*"), ("b", "AB", "*"), ("c", "C", "*")]
    with pytest.raises(InputError, match="give relation and column"):
        Hierarchy.intervals([10]).materialize(engine, "x")


def test_materialize_rule_based_over_data(engine):
    make_table(engine, "t", ["age"], [(23,), (37,), (23,), (None,)])
    Hierarchy.intervals([10, 20]).materialize(engine, "hi", relation="t", column="age")
    assert engine.fetch_rows("SELECT leaf, h, node FROM hi ORDER BY leaf, h")[1] == [
        ("23", 0, "23"), ("23", 1, "[20, 30["), ("23", 2, "[20, 40["), ("23", 3, "*"),
        ("37", 0, "37"), ("37", 1, "[30, 40["), ("37", 2, "[20, 40["), ("37", 3, "*")]


# -- intervals ---------------------------------------------------------------------------------------------
def test_intervals_widths():
    h = Hierarchy.intervals(widths=[5, 10, 20])
    assert isinstance(h, IntervalHierarchy) and h.height == 4 and h.levels == 5
    assert h.ancestors(39) == ["39", "[35, 40[", "[30, 40[", "[20, 40[", "*"]
    assert h.ancestors(40) == ["40", "[40, 45[", "[40, 50[", "[40, 60[", "*"]
    assert h.ancestors(0) == ["0", "[0, 5[", "[0, 10[", "[0, 20[", "*"]
    assert h.ancestors(-3) == ["-3", "[-5, 0[", "[-10, 0[", "[-20, 0[", "*"]
    assert h.ancestors(39.5)[1:] == ["[35, 40[", "[30, 40[", "[20, 40[", "*"]
    shifted = Hierarchy.intervals([10], lower=17, upper=100)  # origin defaults to lower
    assert shifted.ancestors(17) == ["17", "[17, 27[", "*"] and shifted.ancestors(99)[1] == "[97, 107["
    assert Hierarchy.intervals([10], origin=-5).ancestors(0)[1] == "[-5, 5["
    with pytest.raises(InputError, match="not covered"):
        shifted.ancestors(100)


def test_intervals_breakpoints():
    h = Hierarchy.intervals(breakpoints=[[0, 18, 30, 50, 65, math.inf], [0, 30, 65, math.inf]])
    assert h.height == 3
    assert h.ancestors(17) == ["17", "[0, 18[", "[0, 30[", "*"]
    assert h.ancestors(18) == ["18", "[18, 30[", "[0, 30[", "*"]
    assert h.ancestors(64.5)[1:] == ["[50, 65[", "[30, 65[", "*"]
    assert h.ancestors(70) == ["70", "[65, inf[", "[65, inf[", "*"]
    with pytest.raises(InputError, match="not covered"):
        h.ancestors(-1)
    flat = Hierarchy.intervals(breakpoints=[0, 2.5, 5])  # one level given as a flat list
    assert flat.height == 2 and flat.ancestors(3) == ["3", "[2.5, 5[", "*"]


def test_intervals_validate(engine):
    make_table(engine, "t", ["v"], [("10",), ("150",), ("abc",), ("-1",), (None,), ("99.5",)])
    with pytest.raises(InputError) as e:
        Hierarchy.intervals([10], lower=0, upper=100).validate(engine, "t", "v")
    msg = str(e.value)
    assert "3 value(s)" in msg and "outside [0, 100[ or not numeric" in msg
    assert "'150'" in msg and "'abc'" in msg and "'-1'" in msg and "'10'" not in msg and "'99.5'" not in msg
    make_table(engine, "n", ["v"], [(5,), (None,), (1000,)])
    Hierarchy.intervals([10, 100]).validate(engine, "n", "v")  # unbounded: every number is covered


@pytest.mark.parametrize("kwargs,match", [
    ({}, "exactly one of widths or breakpoints"),
    ({"widths": [5], "breakpoints": [[0, 1]]}, "exactly one"),
    ({"widths": [10, 15]}, "not a larger multiple"),
    ({"widths": [10, 5]}, "not a larger multiple"),
    ({"widths": [0]}, "not a positive integer"),
    ({"widths": [2.5]}, "not a positive integer"),
    ({"widths": []}, "non-empty list"),
    ({"widths": [10], "lower": 5, "upper": 5}, "below upper"),
    ({"breakpoints": [[0, 10, 20], [0, 15, 20]]}, "must be a subset"),
    ({"breakpoints": [[0, 10, 20], [0, 10]]}, "same first and last"),
    ({"breakpoints": [[0, 20, 10]]}, "strictly increasing"),
    ({"breakpoints": [[0]]}, "at least two numbers"),
    ({"breakpoints": [[0, math.inf, 30]]}, "only the last inf"),
    ({"breakpoints": [[0, 10]], "lower": 0}, "apply to widths"),
])
def test_intervals_bad_args(kwargs, match):
    with pytest.raises(InputError, match=match):
        Hierarchy.intervals(**kwargs)


def test_interval_sql_keeps_null(engine):
    make_table(engine, "t", ["x"], [(39,), (None,)])
    h = Hierarchy.intervals(breakpoints=[[-math.inf, 40, math.inf]])
    exprs = ", ".join(f"{h.sql_expr(ident('x'), lv)} AS l{lv}" for lv in range(h.levels))
    rows = engine.fetch_rows(f"SELECT {exprs} FROM t ORDER BY x NULLS LAST")[1]
    assert rows == [(39, "[-inf, 40[", "*"), (None, None, None)]  # NULL stays NULL at every level


# -- dates --------------------------------------------------------------------------------------------------
def test_dates_chain(engine):
    h = Hierarchy.dates()
    assert isinstance(h, DateHierarchy) and h.height == 3
    assert h.ancestors(dt.date(2020, 3, 17)) == ["2020-03-17", "2020-03", "2020", "*"]
    full = Hierarchy.dates(("datetime", "day", "month", "quarter", "year", "decade"))
    assert full.ancestors(dt.datetime(2020, 3, 17, 10, 11, 12)) == [
        "2020-03-17 10:11:12", "2020-03-17", "2020-03", "2020-Q1", "2020", "2020s", "*"]
    assert Hierarchy.dates(("day", "quarter")).ancestors("2019-11-02") == ["2019-11-02", "2019-Q4", "*"]
    engine.execute("CREATE TABLE d AS SELECT * FROM (VALUES (DATE '2020-03-17'), (DATE '1999-12-31'), (NULL)) AS v(d)")
    h.validate(engine, "d", "d")
    exprs = ", ".join(h.sql_expr(ident("d"), lv) for lv in range(1, h.levels))
    assert engine.fetch_rows(f"SELECT {exprs} FROM d ORDER BY d NULLS LAST")[1] == [
        ("1999-12", "1999", "*"), ("2020-03", "2020", "*"), (None, None, None)]
    make_table(engine, "s", ["d"], [("2020-03-17",), ("not a date",)])
    with pytest.raises(InputError, match=r"1 value\(s\) \(not dates\): 'not a date'"):
        h.validate(engine, "s", "d")
    for bad in (("month", "day"), ("week",), (), "day", ("day", "datetime")):
        with pytest.raises(InputError):
            Hierarchy.dates(bad)


# -- malformed ARX files -----------------------------------------------------------------------------------
def test_arx_inconsistent_depth(tmp_path):
    p = write(tmp_path, "a;A;*\nb;*\nc;C;*\n")
    with pytest.raises(InputError, match=r"inconsistent depth: line 2 \(value 'b'\) has 2 column\(s\), line 1 has 3"):
        Hierarchy.from_arx(p)


def test_arx_two_roots(tmp_path):
    p = write(tmp_path, "a;A;*\nb;B;ALL\n")
    with pytest.raises(InputError, match=r"more than one root.*'\*' \(line 1\), 'ALL' \(line 2\)"):
        Hierarchy.from_arx(p)


def test_arx_node_with_two_parents(tmp_path):
    p = write(tmp_path, "47677;4767*;476**;*\n47602;4760*;476**;*\n47905;4790*;477**;*\n47906;4790*;479**;*\n")
    with pytest.raises(InputError, match=r"node '4790\*' at level 1 has two parents at level 2: '477\*\*' \(line 3\) "
                                         r"and '479\*\*' \(line 4\)"):
        Hierarchy.from_arx(p)


def test_arx_duplicate_leaf_empty_label_and_files(tmp_path):
    with pytest.raises(InputError, match=r"duplicate leaf 'a' \(lines 1 and 3\)"):
        Hierarchy.from_arx(write(tmp_path, "a;*\nb;*\na;*\n"))
    with pytest.raises(InputError, match=r"empty label at line 2, column 2 \(level 1\)"):
        Hierarchy.from_arx(write(tmp_path, "a;A;*\nb;;*\n"))
    with pytest.raises(InputError, match="is empty"):
        Hierarchy.from_arx(write(tmp_path, "\n\n"))
    with pytest.raises(InputError, match="at least a root"):
        Hierarchy.from_arx(write(tmp_path, "a\nb\n"))
    with pytest.raises(InputError, match="hierarchy file not found"):
        Hierarchy.from_arx(tmp_path / "nope.csv")


def test_arx_crlf_bom_and_other_delimiter(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes("\ufeffx y;XY;*\r\nz;Z;*".encode("utf-8"))  # BOM, CRLF, no final newline
    h = Hierarchy.from_arx(p)
    assert h.leaves == ["x y", "z"] and h.ancestors("x y") == ["x y", "XY", "*"]
    assert Hierarchy.from_arx(write(tmp_path, "a,A,*\n", "c.csv"), delimiter=",").ancestors("a") == ["a", "A", "*"]


def test_from_rows_and_mapping():
    h = Hierarchy.from_mapping({1: ("low", "*"), 2: ("low", "*"), 10: ("high", "*")})
    assert h.leaves == ["1", "2", "10"] and h.ancestors(10) == ["10", "high", "*"] and h.height == 2
    assert h.mapping(1) == [("1", "low"), ("2", "low"), ("10", "high")]
    with pytest.raises(InputError, match=r"two parents"):
        Hierarchy.from_rows([("a", "X", "P", "*"), ("b", "X", "Q", "*")])


def test_enumerated_sql_expr(engine):
    h = Hierarchy.from_rows([("1", "low", "*"), ("2", "low", "*"), ("10", "it's high", "*")])
    make_table(engine, "t", ["v"], [(1,), (10,), (None,)])
    exprs = ", ".join(h.sql_expr(ident("v"), lv) for lv in range(h.levels))
    assert engine.fetch_rows(f"SELECT {exprs} FROM t ORDER BY v NULLS LAST")[1] == [
        (1, "low", "*"), (10, "it's high", "*"), (None, None, None)]


def test_check_level():
    h = Hierarchy.masking(5)
    assert h.check_level(5, "zip") == 5
    for bad in (-1, 6, True, 1.0, "2"):
        with pytest.raises(InputError, match=r"'zip'.*0\.\.5"):
            h.check_level(bad, "zip")


# -- CLI argument --------------------------------------------------------------------------------------------
def test_parse_hierarchy_arg(tmp_path):
    p = write(tmp_path, "a;*\nb;*\n", "h=1.csv")
    attr, h = parse_hierarchy_arg(f"my attr={p}")
    assert attr == "my attr" and h.leaves == ["a", "b"]
    attr, h = parse_hierarchy_arg(f"x={p}")  # the '=' inside the file name is kept
    assert attr == "x" and h.height == 1
    for bad in ("noequals", f"={p}", "attr=", ""):
        with pytest.raises(InputError, match="ATTR=PATH"):
            parse_hierarchy_arg(bad)
    with pytest.raises(InputError, match=r"--hierarchy age: hierarchy file not found"):
        parse_hierarchy_arg(f"age={tmp_path / 'missing.csv'}")
