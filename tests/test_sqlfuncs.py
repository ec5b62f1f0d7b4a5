"""Plain SQL after anonydb.register(con): the table macros and the UDFs, on the worked examples."""

from __future__ import annotations

import math

import duckdb
import pytest

import anonydb
from test_worked_examples import TABLE_1_3, TABLE_2_1, T22_GROUPS


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("CREATE TABLE t13 AS SELECT * FROM (VALUES " + ", ".join(
        f"('{z}', '{a}', '{d}')" for z, a, d in TABLE_1_3) + ") AS v(zip, age, disease)")
    c.execute("CREATE TABLE t22 AS SELECT * FROM (VALUES " + ", ".join(
        f"({g}, {r[2]})" for g, r in zip(T22_GROUPS, TABLE_2_1)) + ") AS v(ec, salary)")
    anonydb.register(c)
    yield c
    anonydb.unregister(c)
    c.close()


def test_privacy_macro_on_table_1_3(con):
    k, l_distinct, l_entropy, l_prob, groups, rows = con.execute(
        "FROM anonydb_privacy('t13', ['zip', 'age'], 'disease')").fetchall()[0]
    assert (k, l_distinct, groups, rows) == (3, 1, 3, 9)
    assert l_entropy == pytest.approx(1.0) and l_prob == pytest.approx(1.0)
    assert con.execute("FROM anonydb_k_anonymity('t13', ['zip', 'age'])").fetchall()[0] == (3, 3, 9)


def test_group_stats_macro(con):
    rows = con.execute("SELECT group_key, size, distinct_values, entropy_l, counts, distribution "
                       "FROM anonydb_group_stats('t13', ['zip', 'age'], 'disease') ORDER BY entropy_l").fetchall()
    assert [r[2] for r in rows] == [1, 2, 3]
    assert math.log(rows[1][3]) == pytest.approx(0.6365142, abs=1e-7)
    assert rows[1][0] == {"zip": "476**", "age": "3*"} and rows[1][4] == [2, 1]
    assert rows[1][5] == {"Cancer": 2, "Heart Disease": 1}


def test_recursive_cl_macro(con):
    # every group of Table 1.3 fails (c,2) because G1 holds one value only
    assert con.execute("FROM anonydb_recursive_cl('t13', ['zip', 'age'], 'disease', 3.0, 2)").fetchall()[0] == (False, 1)
    assert con.execute("FROM anonydb_recursive_cl('t13', ['zip', 'age'], 'disease', 3.0, 1)").fetchall()[0] == (True, 0)


def test_t_closeness_macro_matches_the_thesis(con):
    rows = dict(con.execute("SELECT group_key.ec, emd_ordered FROM anonydb_t_closeness('t22', ['ec'], 'salary')").fetchall())
    assert rows[1] == pytest.approx(3 / 8, abs=1e-12)
    assert rows[2] == pytest.approx(1 / 6, abs=1e-12)
    assert rows[3] == pytest.approx(17 / 72, abs=1e-12)
    eq = dict(con.execute("SELECT group_key.zip || group_key.age, emd_equal FROM anonydb_t_closeness('t13', ['zip', 'age'], 'disease')").fetchall())
    assert eq["476**2*"] == pytest.approx(4 / 9, abs=1e-12)


def test_udfs_in_plain_sql(con):
    assert con.execute("SELECT emd_equal([0.01, 0.99], [0.11, 0.89])").fetchall()[0][0] == pytest.approx(0.1, abs=1e-12)
    assert con.execute("SELECT emd_ordered([1, 1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 1, 1, 1])").fetchall()[0][0] == pytest.approx(3 / 8)
    assert con.execute("SELECT hist_entropy([1, 1, 1])").fetchall()[0][0] == pytest.approx(math.log(3))
    assert con.execute("SELECT l_entropy([2, 1])").fetchall()[0][0] == pytest.approx(math.exp(0.6365142), abs=1e-6)
    assert con.execute("SELECT recursive_cl([2, 1], 2.0001, 2), recursive_cl([2, 1], 2.0, 2)").fetchall()[0] == (True, False)
    paths = ("[['gastric ulcer','stomach disease','digestive system disease','*'],"
             "['gastritis','stomach disease','digestive system disease','*'],"
             "['stomach cancer','stomach disease','digestive system disease','*'],"
             "['flu','respiratory infection','vascular lung disease','*'],"
             "['bronchitis','respiratory infection','vascular lung disease','*'],"
             "['pneumonia','respiratory infection','vascular lung disease','*']]")
    v = con.execute(f"SELECT emd_hierarchical([1, 0, 1, 0, 0, 1], [1, 2, 2, 1, 2, 1], {paths})").fetchall()[0][0]
    assert v == pytest.approx(7 / 27, abs=1e-12)


def test_register_accepts_an_engine_and_unregister_removes(con):
    e = anonydb.connect()
    anonydb.register(e)
    assert e.scalar("SELECT emd_equal([1, 0], [0, 1])") == pytest.approx(1.0)
    anonydb.unregister(e)
    with pytest.raises(anonydb.SQLError, match="emd_equal"):
        e.scalar("SELECT emd_equal([1, 0], [0, 1])")
    e.close()


def test_docs_udf_examples_give_the_documented_values(con):
    """Every `SELECT ...; -- value` line of docs/sql-only.md's UDF block returns that value."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "sql-only.md").read_text()
    block = page.split("Vectorized UDFs")[1].split("```sql")[1].split("```")[0]
    checked = 0
    for stmt_with_comment in re.finditer(r"(SELECT .*?);\s*--\s*([^\n]+)", block, re.S):
        sql, expect = stmt_with_comment.group(1), stmt_with_comment.group(2)
        got = con.execute(sql).fetchall()[0][0]
        m = re.match(r"(true|false|[-0-9./]+)", expect.split("=")[-1].strip())
        want = m.group(1)
        if want in ("true", "false"):
            assert got is (want == "true")
        elif "/" in want:
            a, b = want.split("/")
            assert got == pytest.approx(float(a) / float(b), abs=1e-12)
        else:
            assert got == pytest.approx(float(want), abs=5e-5)
        checked += 1
    assert checked == 6
