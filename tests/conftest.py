from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

import anonydb
from anonydb.errors import InfeasibleError, InputError
from jvm_flags import TEST_JVM

#: the slow tier (``pytest -m "slow or hypothesis" --hypothesis-profile slow``, .ci/run) draws this
#: many times the examples each property test draws in the README's command. .ci/run runs both
#: tiers, so each CI run draws 1 + SLOW_FACTOR times a test's fast-tier count, each draw new.
SLOW_FACTOR = 3
settings.register_profile("slow", deadline=None)


def examples(n: int, slow: int | None = None) -> int:
    """A property test's example count: ``n`` in the fast tier; under the slow tier's hypothesis
    profile ``slow``, by default ``SLOW_FACTOR * n``. The heaviest property tests draw fewer in the
    fast tier and name their slow count, which keeps what the slow tier drew before."""
    if settings.get_current_profile_name() == "slow":
        return SLOW_FACTOR * n if slow is None else slow
    return n


ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"


@pytest.fixture
def engine():
    e = anonydb.connect()
    yield e
    e.close()


@pytest.fixture
def datasets() -> Path:
    """The shared datasets folder (the test skips, with the reason, when it is absent)."""
    return need_shared()


def need_shared() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"the shared datasets folder {DATASETS} is absent (it sits beside the repository)")
    return DATASETS


def make_table(engine, name: str, columns: list[str], rows: list[tuple], counts: list[int] | None = None) -> str:
    """Create ``name`` from rows (each repeated counts[i] times when given), through the engine."""
    from anonydb.sqlgen import ident, literal

    cols = ", ".join(ident(c) for c in columns)
    values = ", ".join("(" + ", ".join(literal(v) for v in r) + (f", {counts[i]}" if counts else "") + ")"
                       for i, r in enumerate(rows))
    if counts:
        engine.execute(f"CREATE TABLE {ident(name)} AS SELECT {cols} FROM (VALUES {values}) AS v({cols}, _rep), range(_rep)")
    else:
        engine.execute(f"CREATE TABLE {ident(name)} AS SELECT * FROM (VALUES {values}) AS v({cols})")
    return name


def spark_view(duck, spark, table: str) -> None:
    """DuckDB's table ``table`` as Spark's temporary view of the same name, through Arrow: the
    very same rows and types (an integer column with NULLs stays an integer)."""
    from anonydb.sqlgen import ident

    rel = duck.con.sql(f"SELECT * FROM {ident(table)}")
    spark.createDataFrame(rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()) \
        .createOrReplaceTempView(table)


def same_values(a, b) -> bool:
    """Equal, of the same types; floats to the last few bits (a DOUBLE sum, such as entropy's sum of
    c ln c, depends on the order an engine adds in). Fractions and integers compare exactly."""
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


#: the privacy-model checks every engine's parity tests run (tests/test_postgres.py, test_spark.py)
ENGINE_MODELS = [
    pytest.param(dict(k=5), id="k"),
    pytest.param(dict(k=2), id="k2"),
    pytest.param(dict(l=2), id="l-distinct"),
    pytest.param(dict(l=2, l_variant="entropy"), id="l-entropy"),
    pytest.param(dict(l=3, l_variant="recursive", c=2), id="l-recursive"),
    pytest.param(dict(l=1.5, l_variant="probabilistic"), id="l-probabilistic"),
    pytest.param(dict(t=0.2, distance="equal"), id="t-equal"),
    pytest.param(dict(t=0.2, distance="ordered"), id="t-ordered"),
    pytest.param(dict(n=10, t=0.3), id="nt"),
    pytest.param(dict(alpha=0.6, k=2), id="alpha-k"),
    pytest.param(dict(delta=1.5), id="delta-disclosure"),
    pytest.param(dict(k=3, l=2, t=0.4, delta=3.0), id="several"),
]


@pytest.fixture(scope="session")
def pg_url():
    """One real PostgreSQL server for the whole session (tests/pg_server.py), stopped at its end."""
    from pg_server import PgUnavailable, find_bin_dir, pg_server

    if find_bin_dir() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin, $PG_BIN "
                    "or PATH: install Debian's postgresql package (.ci/run does)")
    try:
        with pg_server() as url:
            yield url
    except PgUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (local[2], 4 shuffle partitions, no UI, ``TEST_JVM``) for the whole test session,
    stopped at its end; skips, saying why, without pyspark or Java. ``ANONYDB_SPARK_MASTER`` names
    another master: tests/test_spark_cluster.py runs the parity suites against a standalone
    cluster (``spark://127.0.0.1:P``) that way."""
    import shutil
    import tempfile

    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install pyspark, with Java 17)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark: install a JDK 17 (apt-get install openjdk-17-jre-headless)")
    from pyspark.sql import SparkSession

    work = tempfile.mkdtemp(prefix="anonydb-spark-")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers run this Python (DuckDB, pyarrow)
    master = os.environ.get("ANONYDB_SPARK_MASTER", "local[2]")
    builder = SparkSession.builder.master(master)
    if master.startswith("spark://127.0.0.1"):  # executors on this machine reach the driver here
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    session = (builder.appName("anonydb-tests")
               .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
               .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
               .config("spark.sql.warehouse.dir", os.path.join(work, "warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work} {TEST_JVM}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # failing queries' plans, logged again
    assert pyspark.__version__
    yield session
    session.stop()
    shutil.rmtree(work, ignore_errors=True)


def outcome(run):
    """("ok", what the run returns), or ("refused", the error's type) for the two documented
    refusals; any other error (a failed self-verification, an internal error) fails the test."""
    try:
        return "ok", run()
    except (InfeasibleError, InputError) as e:
        return "refused", type(e).__name__
