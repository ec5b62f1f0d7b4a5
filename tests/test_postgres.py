"""PostgreSQL as a real engine: every check runs on a real server (tests/pg_server.py) and gives
the same report as on DuckDB, verdict for verdict and value for value; what cannot run yet raises
one line, "not available on postgres: <reason>"; no statement brings more than a small result
back to Python.

The data is made (or read) by DuckDB and copied into PostgreSQL with COPY, so both engines check
the very same rows.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import anonydb
from anonydb.checker import COLUMN_KEY_ROWS
from anonydb.errors import InputError, SQLError
from anonydb.hierarchy import Hierarchy
from anonydb.sqlgen import ident

from conftest import ENGINE_MODELS, ROOT, make_table, need_shared


psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

from anonydb.engines import connect_postgres  # noqa: E402
from anonydb.engines.postgres import PostgresEngine, copy_from_duckdb, to_postgres  # noqa: E402

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

#: the most rows any statement of a check may return to Python: the violating groups listed
#: (max_groups = 20) times the sensitive values shown per group, plus the dictionary's per-column counts
MAX_GROUPS = 20


@pytest.fixture(scope="module")
def pg(pg_url):
    eng = connect_postgres(pg_url)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def duck():
    eng = anonydb.connect()
    yield eng
    eng.close()


def copy_to_pg(duck, pg, table: str) -> None:
    """The DuckDB table ``table`` into PostgreSQL under the same name (CSV through COPY), analyzed."""
    copy_from_duckdb(duck, pg, table)


def assert_same(duck, pg, table, qi, sensitive, **params):
    """The check gives the same report on PostgreSQL as on DuckDB (verdicts, exact achieved values of
    the same types, violating groups with their distributions), and no statement of it fetched more
    than the listed violators' rows."""
    d = anonydb.check(table, qi, sensitive, engine=duck, max_groups=MAX_GROUPS, **params)
    mark = len(pg.fetched)
    p = anonydb.check(table, qi, sensitive, engine=pg, max_groups=MAX_GROUPS, **params)
    most = max((f.rows for f in pg.fetched[mark:]), default=0)
    assert p.to_dict() == d.to_dict()
    for vp, vd in zip(p.verdicts, d.verdicts):  # exact values stay exact (Fractions, ints), floats floats
        assert vp.achieved == vd.achieved and all(type(vp.achieved[k]) is type(vd.achieved[k]) for k in vd.achieved)
    domain = duck.scalar(f"SELECT count(DISTINCT {ident(sensitive)}) + 1 FROM {ident(table)}") if sensitive else 1
    assert most <= max(MAX_GROUPS * domain, len(qi) + 1), f"a statement of the check fetched {most} rows"
    return p


# The models of every check the engines run: conftest.ENGINE_MODELS
MODELS = ENGINE_MODELS


@pytest.fixture(scope="module")
def people(duck, pg):
    """A small table with NULL QIs and NULL sensitive values, a mixed-case QI and a name that needs quoting."""
    rows = [(30, "M", "130*", "flu"), (30, "M", "130*", "flu"), (30, "M", "130*", "cold"),
            (30, "M", None, "flu"), (30, "M", None, None), (41, "F", "148*", "cancer"),
            (41, "F", "148*", "flu"), (41, "F", "148*", "cold"), (41, "F", "148*", "cold"),
            (None, "F", "148*", "flu"), (None, "F", "148*", "cancer"), (55, None, "130*", None),
            (55, None, "130*", "cold"), (55, None, "130*", "cold"), (55, None, "130*", "flu")]
    name = 'People "v2"; x'
    make_table(duck, name, ["Age", "sex", "zip", "disease"], rows, counts=[1, 2, 1, 3, 1, 2, 1, 1, 2, 2, 1, 1, 2, 1, 3])
    copy_to_pg(duck, pg, name)
    return name


@pytest.mark.parametrize("params", MODELS)
def test_small_table_same_report(duck, pg, people, params):
    assert_same(duck, pg, people, ["Age", "sex", "zip"], "disease", **params)


@pytest.fixture(scope="module")
def census(duck, pg):
    """Synthetic persons, few enough for the checks to key groups by the QI columns."""
    from anonydb.datasets import synthetic_census

    synthetic_census(duck, "census_small", rows=4000, seed=7, null_rate=0.05)
    copy_to_pg(duck, pg, "census_small")
    return "census_small"


@pytest.mark.parametrize("params", MODELS)
def test_census_same_report(duck, pg, census, params):
    sa = "income" if params.get("distance") == "ordered" else "occupation"
    assert_same(duck, pg, census, ["age", "sex", "marital_status"], sa, **params)


@pytest.fixture(scope="module")
def census_coded(duck, pg):
    """More rows than COLUMN_KEY_ROWS: the checks key groups by the mixed-radix integer of the QI codes."""
    from anonydb.datasets import synthetic_census

    synthetic_census(duck, "census_coded", rows=COLUMN_KEY_ROWS + 20_000, seed=11, null_rate=0.02)
    copy_to_pg(duck, pg, "census_coded")
    return "census_coded"


@pytest.mark.parametrize("params", MODELS)
def test_coded_keys_same_report(duck, pg, census_coded, params):
    sa = "income" if params.get("distance") == "ordered" else "occupation"
    assert_same(duck, pg, census_coded, ["age", "sex", "marital_status"], sa, **params)


@pytest.fixture(scope="module")
def quoted(duck, pg):
    """Few-valued text QIs whose values need escaping (quotes, a semicolon, a backslash), an integer
    QI with a NULL, and a sensitive attribute without NULLs (its joins take plain equality)."""
    rows = [("O'Brien", 1, "a;b", "x"), ("O'Brien", 1, "a;b", "y"), ("O'Brien", 2, 'c"d', "x"),
            ("x\\y", None, "a;b", "z"), ("x\\y", None, "a;b", "x"), (None, 2, 'c"d', "y"),
            (None, 2, 'c"d', "y"), ("O'Brien", 1, None, "z")]
    make_table(duck, "quoted codes", ["Name's", "n", "pair", "sa"], rows, counts=[3, 1, 2, 2, 1, 1, 2, 3])
    copy_to_pg(duck, pg, "quoted codes")
    return "quoted codes"


@pytest.mark.parametrize("params", MODELS)
@pytest.mark.parametrize("table", ["people", "quoted"])
def test_inlined_codes_same_report(duck, pg, people, quoted, params, table, monkeypatch):
    """The integer group key on small tables (COLUMN_KEY_ROWS = 0): on PostgreSQL every QI here has at
    most ``inline_codes`` values, so check_cells codes each by a CASE over its inlined values, with
    no dictionary join, and the reports stay the same as DuckDB's (which joins)."""
    import anonydb.checker as checker

    monkeypatch.setattr(checker, "COLUMN_KEY_ROWS", 0)
    name, qi, sa = (people, ["Age", "sex", "zip"], "disease") if table == "people" else \
        (quoted, ["Name's", "n", "pair"], "sa")
    mark = len(pg.log)
    assert_same(duck, pg, name, qi, sa, **params)
    cells = [e.sql for e in pg.log[mark:] if e.template == "check_cells.sql.j2"]
    assert cells and all("JOIN" not in c and "CASE" in c for c in cells)
    duck_cells = [e.sql for e in duck.log if e.template == "check_cells.sql.j2"]
    assert duck_cells and "JOIN" in duck_cells[-1]


# ---------------------------------------------------------------------------------------------
# Adult
# ---------------------------------------------------------------------------------------------
ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]


@pytest.fixture(scope="module")
def adult(duck, pg):
    folder = need_shared() / "adult"
    from anonydb.datasets import load_adult

    load_adult(duck, "adult", path=folder)
    copy_to_pg(duck, pg, "adult")
    return folder


@pytest.mark.parametrize("params", MODELS)
def test_adult_same_report(duck, pg, adult, params):
    # (n,t) judges every group against 2^|QI| natural supersets: 4 QIs keep it to seconds
    qi = ADULT_QI[:4] if "n" in params else ADULT_QI
    assert_same(duck, pg, "adult", qi, "occupation", **params)


@pytest.mark.parametrize("qi", [["age", "sex"], ["sex", "race", "marital-status"]])
def test_adult_hierarchical_t_closeness(duck, pg, adult, qi):
    h = {"occupation": Hierarchy.from_arx(adult / "adult_hierarchy_occupation.csv")}
    report = assert_same(duck, pg, "adult", qi, "occupation", t=0.1, distance="hierarchical", hierarchies=h)
    assert report.verdicts[0].model.startswith("t-closeness (hierarchical")


def test_adult_verdicts_hold_and_fail_alike(duck, pg, adult):
    """A passing and a failing check, with the full list of violating groups."""
    d = anonydb.check("adult", ["sex", "race"], "salary-class", engine=duck, k=5, l=2, max_groups=None)
    p = anonydb.check("adult", ["sex", "race"], "salary-class", engine=pg, k=5, l=2, max_groups=None)
    assert p.to_dict() == d.to_dict()
    assert p["k-anonymity"].holds
    d = anonydb.check("adult", ADULT_QI, "salary-class", engine=duck, k=2, max_groups=3)
    p = anonydb.check("adult", ADULT_QI, "salary-class", engine=pg, k=2, max_groups=3)
    assert not p.holds and p.to_dict() == d.to_dict()


# ---------------------------------------------------------------------------------------------
# What cannot run yet: one line, never a fallback into Python
# ---------------------------------------------------------------------------------------------
def test_unavailable_constructs_raise_one_line(pg, people):
    for sql in ["SELECT struct_pack(a := 1) AS s", "SELECT TRY_CAST('x' AS INTEGER)", "SELECT * FROM read_csv('x.csv')",
                "SELECT * FROM a ASOF LEFT JOIN b ON a.x >= b.x", "SELECT list_sort([2, 1])",
                "SELECT count(*) FROM duckdb_tables()"]:
        with pytest.raises(InputError) as e:
            pg.fetch_rows(sql)
        assert str(e.value).startswith("not available on postgres: ") and "\n" not in str(e.value), sql


def test_check_of_a_file_is_not_available(pg, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("a,b\n1,x\n2,y\n")
    with pytest.raises(InputError, match=r"^not available on postgres: read_csv"):
        anonydb.check(f, ["a"], "b", engine=pg, k=2)


def test_numeric_kind_validation_is_not_available(pg, people):
    """Validating a text column declared numeric uses TRY_CAST and DuckDB's catalog."""
    with pytest.raises(InputError, match=r"^not available on postgres: "):
        anonydb.check(people, ["zip"], "disease", engine=pg, k=2, kinds={"zip": "numeric"})


# ---------------------------------------------------------------------------------------------
# The engine's operations
# ---------------------------------------------------------------------------------------------
def test_tables_temp_ctas_rename_drop(pg):
    name, new = 'Mixed "Case"; t', "renamed;\"x"
    pg.create_table_as(name, "SELECT 1 AS a, 'x' AS b", temp=True)
    assert pg.exists(name) and pg.columns(name) == [("a", "INTEGER"), ("b", "VARCHAR")]
    pg.create_table_as(name, "SELECT CAST(2 AS BIGINT) AS a", temp=True, replace=True)
    assert pg.columns(name) == [("a", "BIGINT")] and pg.scalar(f"SELECT a FROM {ident(name)}") == 2
    pg.rename(name, new)
    assert not pg.exists(name) and pg.exists(new)
    pg.execute(f"ALTER TABLE {ident(new)} RENAME COLUMN a TO c")
    assert pg.columns(new) == [("c", "BIGINT")]
    pg.drop(new)
    assert not pg.exists(new)
    with pg.scratch() as s:
        t = s.table("SELECT 5 AS x")
        assert pg.exists(t)
    assert not pg.exists(t)


def test_duckdb_semantics_kept(pg):
    """Division, integer division, HUGEINT and exact sums mean what they mean on DuckDB."""
    row = pg.fetch("SELECT 7 / 2 AS d, 7 // 2 AS i, 7 / 0 AS z, CAST(2 AS HUGEINT) * 9223372036854775807 AS h, "
                   "sum(x) AS s, ln(sum(x)) AS l FROM (VALUES (1), (2)) AS v(x)")[0]
    assert row == {"d": 3.5, "i": 3, "z": None, "h": 2 * 9223372036854775807, "s": 3, "l": pytest.approx(1.0986122886681098)}
    assert type(row["s"]) is int and type(row["l"]) is float
    assert pg.fetch_rows("SELECT ? AS a, 7 % 4 AS m, 'a%b' AS t", [5])[1] == [(5, 3, "a%b")]


def test_transactions_commit_and_roll_back(pg):
    pg.execute("DROP TABLE IF EXISTS tx_target")
    pg.execute("CREATE TABLE tx_target AS SELECT 1 AS v")
    pg.execute("CREATE TABLE tx_stage AS SELECT 2 AS v")
    pg.execute("BEGIN TRANSACTION")
    pg.drop("tx_target")
    pg.rename("tx_stage", "tx_target")
    pg.execute("ROLLBACK")
    assert pg.scalar("SELECT v FROM tx_target") == 1 and pg.exists("tx_stage")
    from anonydb.release.publish import _swap as swap

    swap(pg, [("tx_stage", "tx_target")])
    assert pg.scalar("SELECT v FROM tx_target") == 2 and not pg.exists("tx_stage")
    pg.drop("tx_target")


def test_failed_swap_leaves_the_previous_release(pg):
    pg.execute("DROP TABLE IF EXISTS tx_old")
    pg.execute("CREATE TABLE tx_old AS SELECT 1 AS v")
    from anonydb.release.publish import _swap as swap

    with pytest.raises(SQLError):
        swap(pg, [("tx_missing_stage", "tx_old")])
    assert pg.scalar("SELECT v FROM tx_old") == 1
    pg.drop("tx_old")


def test_borrowed_connection(pg_url):
    con = psycopg.connect(pg_url)  # autocommit off, as psycopg opens it by default
    try:
        eng = connect_postgres(con)
        assert isinstance(eng, PostgresEngine) and con.autocommit
        eng.create_table_as("borrowed_t", "SELECT 1 AS a", temp=True)
        assert eng.scalar('SELECT count(*) FROM "borrowed_t"') == 1
        eng.close()
        assert not con.closed and con.autocommit is False
    finally:
        con.close()


def test_connect_dispatches_on_what_it_is_given(pg_url):
    """anonydb.connect takes a postgresql:// URL or a psycopg 3 connection as it takes a DuckDB file."""
    eng = anonydb.connect(pg_url)
    assert isinstance(eng, PostgresEngine) and eng.dialect == "postgres"
    assert eng.scalar("SELECT 40 + 2") == 42
    eng.close()
    con = psycopg.connect(pg_url)
    try:
        eng = anonydb.connect(con)
        assert isinstance(eng, PostgresEngine) and eng.con is con
        eng.close()
    finally:
        con.close()
    assert anonydb.connect(None).dialect == "duckdb"


def test_read_only_engine_refuses_writes_but_keeps_its_scratch(pg_url):
    eng = anonydb.connect(pg_url, read_only=True)
    try:
        with eng.scratch("ro") as s:
            t = s.table("SELECT 1 AS a")
            assert eng.scalar(f"SELECT count(*) FROM {ident(t)}") == 1
        for sql in ('CREATE TABLE "ro_t" AS SELECT 1 AS a', 'DROP TABLE IF EXISTS "people"',
                    'INSERT INTO "people" VALUES (1)', 'ALTER TABLE "people" RENAME TO "x"'):
            with pytest.raises(InputError, match="only reads the database"):
                eng.execute(sql)
    finally:
        eng.close()


def test_bad_url_is_one_line():
    with pytest.raises(InputError, match=r"^cannot connect to PostgreSQL at postgresql://u:\*\*\*@127\.0\.0\.1:1/x"):
        connect_postgres("postgresql://u:secret@127.0.0.1:1/x?connect_timeout=2")


def test_failing_statement_shows_what_postgres_ran(pg):
    with pytest.raises(SQLError) as e:
        pg.execute("SELECT * FROM no_such_table_here")
    assert "UndefinedTable" in str(e.value) and "--- as sent to PostgreSQL ---" in str(e.value)


def test_rewrites():
    [create] = to_postgres("SELECT * FROM a JOIN b ON a.x IS NOT DISTINCT FROM b.x AND a.k = 0")
    assert "ARRAY[a.x] = ARRAY[b.x]" in create
    assert to_postgres('CREATE OR REPLACE TEMP TABLE "t" AS SELECT 1') == [
        'DROP TABLE IF EXISTS "t"', 'CREATE TEMPORARY TABLE "t" AS SELECT 1']
    assert "DECIMAL(38, 0)" in to_postgres("SELECT CAST(x AS HUGEINT)")[0]


def test_null_safe_join_is_hashed_and_returns_its_rows(pg):
    sql = ("SELECT a.x AS x, b.y AS y FROM (VALUES (1, 'a'), (NULL, 'b')) AS a(x, z) "
           "JOIN (VALUES (1, 'c'), (NULL, 'd'), (2, 'e')) AS b(x, y) ON a.x IS NOT DISTINCT FROM b.x")
    assert "ARRAY[a.x] = ARRAY[b.x]" in to_postgres(sql)[0]
    cols, rows = pg.fetch_rows(sql)
    assert cols == ["x", "y"] and sorted(rows, key=str) == sorted([(1, "c"), (None, "d")], key=str)
    assert pg.scalar("SELECT current_setting('enable_nestloop')") == "on"  # turned off for that statement only


def test_int_and_bigint_null_safe_join(pg):
    """ARRAY[int] = ARRAY[bigint] does not exist: the engine runs the join as written instead."""
    pg.execute("CREATE TEMP TABLE ji AS SELECT CAST(x AS INTEGER) AS x FROM (VALUES (1), (NULL)) AS v(x)")
    pg.execute("CREATE TEMP TABLE jb AS SELECT CAST(x AS BIGINT) AS x FROM (VALUES (1), (NULL)) AS v(x)")
    assert pg.scalar("SELECT count(*) FROM ji JOIN jb ON ji.x IS NOT DISTINCT FROM jb.x") == 2
    pg.drop("ji")
    pg.drop("jb")


def test_connect_does_not_need_psycopg():
    code = ("import sys, anonydb; e = anonydb.connect(); e.close(); "
            "assert 'psycopg' not in sys.modules and 'anonydb.engines.postgres' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_distinct_estimates_and_a_key_too_wide_skips_the_dictionary(duck, pg, monkeypatch):
    """PostgreSQL's pg_stats estimates (exact for a table ANALYZE reads whole) put a 9-column key at
    9 * log2(1000) ~ 90 bits, past 63 + 7: the check groups by the columns without building the
    dictionary it could not use, and the report is DuckDB's."""
    import anonydb.checker as checker

    cols = [f"q{i}" for i in range(9)]
    sel = ", ".join(f"CAST((i * {7 + 2 * j}) % 1000 AS INTEGER) AS {c}" for j, c in enumerate(cols))
    for eng in (duck, pg):
        eng.execute(f"CREATE TABLE wide_key AS SELECT {sel}, CAST(i % 3 AS INTEGER) AS s FROM range(2000) AS r(i)"
                    if eng is duck else
                    f"CREATE TABLE wide_key AS SELECT {sel}, CAST(i % 3 AS INTEGER) AS s FROM generate_series(0, 1999) AS r(i)")
    pg.con.execute("ANALYZE wide_key")
    assert pg.distinct_estimates("wide_key", ["q0", "s"]) == [1000.0, 3.0]
    assert pg.distinct_estimates("wide_key", ["q0", "nope"]) is None
    assert pg.distinct_estimates("no_such_table", ["q0"]) is None and duck.distinct_estimates("wide_key", ["q0"]) is None
    monkeypatch.setattr(checker, "COLUMN_KEY_ROWS", 0)
    mark = len(pg.log)
    assert_same(duck, pg, "wide_key", cols, "s", k=2, l=2)
    templates = {e.template for e in pg.log[mark:]}
    assert "check_dict.sql.j2" not in templates and "check_cells_columns.sql.j2" in templates
