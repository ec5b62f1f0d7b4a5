"""Spark as an engine (issue 26, first step): every privacy-model check runs on a real local Spark
session (conftest's ``spark`` fixture, local[2]) and gives the same report as DuckDB, verdict for
verdict and exact value for value, on the column-keyed plan (small tables) and on the
integer-keyed one (COLUMN_KEY_ROWS = 0), NULLs included.

The rows are made by DuckDB and handed to Spark as a DataFrame, so both engines check the very
same rows.
"""

from __future__ import annotations

import pytest

import anonydb
from anonydb.engines.spark import SparkEngine, to_spark

from conftest import ENGINE_MODELS, make_table, same_values, spark_view

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")

#: the census report's models: five in the fast tier (one per kind of verdict template), all in the slow
FAST_MODELS = ("k", "l-distinct", "t-ordered", "nt", "several")
MODELS = [p if p.id in FAST_MODELS else pytest.param(*p.values, id=p.id, marks=pytest.mark.slow) for p in ENGINE_MODELS]


@pytest.fixture(scope="module")
def duck():
    eng = anonydb.connect()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def eng(spark):
    return SparkEngine(spark)


@pytest.fixture(scope="module")
def census(duck, spark):
    from anonydb.datasets import synthetic_census

    synthetic_census(duck, "census_spark", rows=3000, seed=7, null_rate=0.05)
    spark_view(duck, spark, "census_spark")
    return "census_spark"


@pytest.fixture(scope="module")
def people(duck, spark):
    """NULL QIs and NULL sensitive values."""
    rows = [(30, "M", "130*", "flu"), (30, "M", None, "cold"), (30, "M", None, None), (41, "F", "148*", "cancer"),
            (41, "F", "148*", "flu"), (None, "F", "148*", "flu"), (55, None, "130*", None), (55, None, "130*", "cold")]
    make_table(duck, "people_spark", ["Age", "sex", "zip", "disease"], rows, counts=[3, 1, 2, 2, 1, 2, 1, 3])
    spark_view(duck, spark, "people_spark")
    return "people_spark"


def assert_same(duck, eng, table, qi, sensitive, **params):
    d = anonydb.check(table, qi, sensitive, engine=duck, max_groups=20, **params)
    s = anonydb.check(table, qi, sensitive, engine=eng, max_groups=20, **params)
    assert same_values(s.to_dict(), d.to_dict()), (s.to_dict(), d.to_dict())
    for vs, vd in zip(s.verdicts, d.verdicts):  # exact values stay exact, of the same types
        assert vs.achieved == vd.achieved and all(type(vs.achieved[k]) is type(vd.achieved[k]) for k in vd.achieved)
    return s


@pytest.mark.parametrize("coded", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["column-keys", "integer-keys"])
@pytest.mark.parametrize("params", MODELS)
def test_census_same_report(duck, eng, census, params, coded, monkeypatch):
    import anonydb.checker as checker

    if coded:
        monkeypatch.setattr(checker, "COLUMN_KEY_ROWS", 0)
    sa = "income" if params.get("distance") == "ordered" else "occupation"
    assert_same(duck, eng, census, ["age", "sex", "marital_status"], sa, **params)


@pytest.mark.parametrize("params", MODELS[:7])
def test_nulls_same_report(duck, eng, people, params):
    assert_same(duck, eng, people, ["Age", "sex", "zip"], "disease", **params)


def test_k_values_by_hand(eng, spark):
    """k = the smallest group: groups of 2 and 1 give k = 1 and one violating group of one row."""
    spark.sql("SELECT * FROM VALUES (1, 'a', 'x'), (1, 'a', 'y'), (2, 'b', 'x') AS v(age, sex, d)") \
        .createOrReplaceTempView("tiny_spark")
    r = anonydb.check("tiny_spark", ["age", "sex"], "d", engine=eng, k=2, l=2)
    assert r["k"].achieved == {"k": 1} and r["k"].violating_groups == 1 and r["k"].violating_rows == 1
    assert r["l"].achieved == {"l": 1} and r.rows == 3 and r.groups == 2


def test_rewrites():
    import sqlglot

    tree = sqlglot.parse_one("SELECT sum(x) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), "
                             "row_number() OVER w, row_number() OVER () FROM t WINDOW w AS (PARTITION BY a ORDER BY b)",
                             read="duckdb")
    out = to_spark(tree)
    assert "WINDOW" not in out.upper()
    # DuckDB sorts NULLs last: the order keeps saying so on Spark (whose default is NULLS FIRST)
    assert out.count("PARTITION BY a ORDER BY b NULLS LAST") == 2 and "ROW_NUMBER() OVER (ORDER BY 1 NULLS LAST)" in out
    assert "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW" in out


def test_scratch_tables_are_session_views(eng):
    eng.execute("CREATE TEMP TABLE __spark_t AS SELECT 1 AS a")
    assert eng.exists("__spark_t") and eng.columns("__spark_t") == [("a", "INTEGER")]
    eng.execute("ALTER TABLE __spark_t RENAME COLUMN a TO b")
    assert eng.fetch_rows("SELECT b FROM __spark_t") == (["b"], [(1,)])
    eng.drop("__spark_t")
    assert not eng.exists("__spark_t")


def test_dialect_functions_run_on_spark(duck, eng, spark):
    """Medians and quantiles, and the keyed draws and orders of the ``rand``/``unif``/``shuffle``
    macros, on the real engine: the quantiles equal DuckDB's; a draw is uniform in [0, 1) and
    depends on its key."""
    q = "SELECT median(x), quantile_disc(x, 0.5), quantile_cont(x, 0.25) FROM (VALUES (1), (2), (3), (10)) AS t(x)"
    assert eng.fetch_rows(q)[1] == duck.fetch_rows(q)[1] == [(2.5, 2, 1.75)]
    spark.range(20000).toDF("i").createOrReplaceTempView("draws_spark")
    draws = ("SELECT min(u), max(u), avg(u), count(DISTINCT u) FROM (SELECT (CAST(hash(xor(hash(i), "
             "CAST({k} AS UBIGINT))) >> 11 AS DOUBLE) / 9007199254740992.0) AS u FROM draws_spark) AS d")
    lo, hi, mean, n = eng.fetch_rows(draws.format(k=12345678901234567890))[1][0]
    assert 0 <= lo < 0.001 and 0.999 < hi < 1 and abs(mean - 0.5) < 0.01 and n == 20000
    order = "SELECT i FROM draws_spark WHERE i < 50 ORDER BY md5_number(CAST(i AS VARCHAR) || '{k}')"
    one, two = (eng.fetch_rows(order.format(k=k))[1] for k in ("a1b2", "c3d4"))
    assert sorted(one) == sorted(two) == [(i,) for i in range(50)] and one != two


def test_worker_failure_is_one_line_naming_the_cause():
    """A Python worker's error (here: a worker without DuckDB) is reported by its own last line,
    with what to do, not by the JVM's wrapper."""
    from anonydb.engines.spark import _short

    text = ("org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the "
            "Python worker: Traceback (most recent call last):\n  File \"worker.py\", line 75, in read_command\n"
            "    command = serializer.loads(file)\nModuleNotFoundError: No module named 'duckdb'\n SQLSTATE: 38000")
    msg = _short(RuntimeError(text))
    assert msg.startswith("a Spark worker failed: ModuleNotFoundError: No module named 'duckdb'")
    assert "spark.pyspark.python" in msg and "\n" not in msg
