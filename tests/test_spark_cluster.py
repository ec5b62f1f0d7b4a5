"""anonydb on a real Spark standalone cluster (tests/spark_cluster.py: a master and two workers of
one core and 1 GB each, separate JVMs started from pip's pyspark, on free localhost ports), whose
executors run a Python where anonydb cannot be imported:

* the engine parity suites (see ``SUITES``) run unchanged against ``spark://127.0.0.1:P`` (conftest's ``spark``
  fixture reads ``ANONYDB_SPARK_MASTER``; each suite runs in a child pytest, its driver a separate
  process as a cluster's driver is): the privacy-model checks, Mondrian strict and relaxed (whole-
  table rounds, then the grouped step on the executors), Anatomy, full-domain; Mondrian by persons,
  with varying QIs, and over linked tables (a person table and its event tables), each finished by
  the grouped step on the executors; and the SQL script's checks as the dbt package's generic tests
  run them on Spark (its profile reads the same variable);
* ``anonydb --engine spark://...`` from the command line, end to end: the check answers as DuckDB
  does, and the release, exported by the cluster, is k-anonymous under an independent reader and
  holds DuckDB's classes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import ROOT
from spark_cluster import ClusterUnavailable, python_without_anonydb, standalone_cluster

#: a worker of its own: the cluster's JVMs beside a local session would share two cores
pytestmark = [pytest.mark.xdist_group("spark_cluster"), pytest.mark.slow]

ADULT = ROOT.parent / "shared" / "datasets" / "adult" / "adult.csv"
QI = "sex,age,race,marital-status"

#: the parity tests run on the cluster, by file: the tests named here, of the tier named (``-m``).
#: Every step that runs Python on the executors (the grouped step that finishes Mondrian's
#: fragments, the person steps) runs here in each of its shapes, slow tier included. The checks
#: are SQL alone on Spark (no Python on the executors): the cluster runs the fast tier's models,
#: and the slow tier's further models and integer keys run the same SQL on local[2]; likewise
#: Anatomy's and MPALM's census releases.
SUITES = {
    "checks": ["tests/test_spark.py", "-m", "not slow", "-k", "census_same_report or nulls_same_report or "
                                                              "k_values_by_hand or dialect_functions"],
    "methods": ["tests/test_spark_methods.py", "-m", "", "-k", "generalize_same or fulldomain_small or "
                                                               "mondrian_small or anatomy_small or refused_and_failed "
                                                               "or mondrian_census_same or fragment_plan_same"],
    "persons (person, varying, linked)": ["tests/test_person_spark.py", "-m", "", "-k", "person_steps_on_workers"],
    "sql script (dbt generic tests)": ["tests/test_dbt_spark.py", "-m", ""],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(master URL, the environment every child runs in: executors on the Python without anonydb)."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'anonydb[spark]')")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark: install a JDK 17 (apt-get install openjdk-17-jre-headless)")
    work = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, PYSPARK_PYTHON=str(python_without_anonydb(work)), SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    try:
        with standalone_cluster(work / "spark") as url:
            yield url, dict(env, ANONYDB_SPARK_MASTER=url)
    except ClusterUnavailable as e:
        pytest.skip(str(e))


def test_executors_cannot_import_anonydb(cluster):
    """The premise of the suites below: code that needs anonydb on an executor fails there."""
    url, env = cluster
    probe = ("from pyspark.sql import SparkSession\n"
             f"s = SparkSession.builder.master({url!r}).config('spark.ui.enabled', 'false').getOrCreate()\n"
             "def f(_):\n"
             "    try:\n"
             "        import anonydb\n"
             "        yield 'imported'\n"
             "    except ModuleNotFoundError as e:\n"
             "        yield str(e)\n"
             "print(sorted(set(s.sparkContext.parallelize(range(4), 4).mapPartitions(f).collect())))\n"
             "s.stop()\n")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "[\"No module named 'anonydb' (not on this cluster's executors)\"]"


@pytest.mark.parametrize("suite", list(SUITES))
def test_parity_suite_on_the_cluster(cluster, suite):
    """The suite's tests all pass against the cluster, none skipped."""
    url, env = cluster
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                        "-rs", *SUITES[suite]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    summary = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-2000:]
    assert " passed" in summary and "skipped" not in summary, r.stdout[-3000:]


def run_cli(env: dict, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "anonydb", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=1200)


def classes_of(files: str) -> list[tuple]:
    """A release exported as Parquet, read by DuckDB: its classes, each the sorted tuple of its rows
    without eq_class (the cluster numbers the classes its executors finish otherwise), sorted."""
    con = duckdb.connect()
    cols = [c for c, in con.execute(f"SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('{files}'))")
            .fetchall() if c != "eq_class"]
    quoted = ", ".join('"' + c + '"' for c in cols)
    groups: dict = {}
    for r in con.execute(f"SELECT eq_class, {quoted} FROM read_parquet('{files}')").fetchall():
        groups.setdefault(r[0], []).append(tuple(str(x) for x in r[1:]))
    con.close()
    return sorted(tuple(sorted(g)) for g in groups.values())


def test_cli_engine_spark_url_end_to_end(cluster, tmp_path):
    """``--engine spark://host:port``: the check's verdicts are DuckDB's; Mondrian's release (its
    last rounds on the executors) is exported as a Parquet folder holding every row of Adult in
    classes of at least 10, the same classes as DuckDB's release of the same input and seed: each
    class's rows (labels, sensitive value) alike, not only their number."""
    if not ADULT.is_file():
        pytest.skip(f"the Adult data set is not at {ADULT} (../shared/datasets/adult)")
    url, env = cluster
    args = ["check", str(ADULT), "--qi", QI, "--sensitive", "occupation", "--k", "5", "--l", "2", "--json"]
    d, s = run_cli(env, *args, cwd=tmp_path), run_cli(env, *args, "--engine", url, cwd=tmp_path)
    assert s.returncode == d.returncode == 1, s.stderr[-2000:]
    assert json.loads(s.stdout)["verdicts"] == json.loads(d.stdout)["verdicts"]
    out = tmp_path / "rel.parquet"
    release = ["--qi", QI, "--sensitive", "occupation", "--k", "10", "--seed", "7", "--quiet", "--json"]
    r = run_cli(env, "anonymize", str(ADULT), "--engine", url, "--out", "cluster_rel", "--export", str(out), *release,
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    mine = tmp_path / "duckdb_rel.parquet"
    local = run_cli(env, "anonymize", str(ADULT), "--out", "x", "--export", str(mine), *release, cwd=tmp_path)
    assert local.returncode == 0, local.stderr[-2000:]
    assert json.loads(r.stdout)["classes"] == json.loads(local.stdout)["classes"]
    assert classes_of(f"{out}/*.parquet") == classes_of(str(mine))
    con = duckdb.connect()
    n, k = con.execute(f"SELECT sum(n), min(n) FROM (SELECT count(*) AS n FROM read_parquet('{out}/*.parquet') "
                       f"GROUP BY eq_class)").fetchone()
    assert n == 30162 and k >= 10
