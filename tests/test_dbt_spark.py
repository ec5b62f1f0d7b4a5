"""The dbt example on Spark, with dbt-spark in session mode (a local Spark, local[2], inside dbt's
own process): `dbt build` passes on the generalized release and fails on a violating model, naming
the failing test; the generic tests (k_anonymous, l_diverse, t_close: the same SQL text as on
DuckDB and PostgreSQL) decide as anonydb.check does on the same rows, read back from the
warehouse's Parquet files with DuckDB: each test passes at anonydb's achieved value and fails just
past it, on exactly as many groups as anonydb names, NULL quasi-identifier and sensitive values
included (a model added to the copy: Spark sorts NULL first, anonydb's ordered distance ranks
it last, and t_close says "nulls last"); with `person:` (several rows per person), as a plain-Python
count of persons says, on the visits seed and on random rows with NULL persons.

The project is examples/dbt_project_spark (Spark SQL models; its generic tests are
../dbt_project/tests); ANONYDB_SPARK_DIR puts its warehouse and metastore under tmp_path.
Two `dbt build` runs, each starting its own Spark (about 20-30 s each on two idle cores).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

import anonydb

from conftest import ROOT
from test_dbt import _dbt, _owners, person_classes, person_failing_rows, visits

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = [pytest.mark.xdist_group("spark"), pytest.mark.slow]  # the dbt package runs on DuckDB and
# PostgreSQL in the fast tier; its Spark build (a JVM of its own) in the slow one

EXAMPLES = ROOT / "examples"
QIS = ["age", "sex", "zip", "education"]
SCHEMA = "anonydb_example"  # the profile's schema: the Hive database the models are written to


def _dbt_spark() -> str:
    """The dbt executable, when it has the spark adapter, pyspark and a Java to run it (else the
    test skips, saying which is missing)."""
    exe = _dbt()
    if Path(exe).parent == Path(sys.executable).parent:
        has = importlib.util.find_spec("dbt.adapters.spark") is not None
    else:
        has = "spark:" in subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=120).stdout
    if not has:
        pytest.skip("dbt-spark is not installed (pip install 'dbt-spark[session]' 'dbt-core<1.12')")
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install 'dbt-spark[session]' installs it; it needs Java 17)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for Spark: install a JDK 17 (apt-get install openjdk-17-jre-headless)")
    return exe


def _results(work: Path) -> dict[str, tuple[str, int]]:
    """The last run's tests: {test name: (status, failing rows)} from target/run_results.json."""
    results = json.loads((work / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[2]: (r["status"], r["failures"])
            for r in results if r["unique_id"].startswith("test.")}


def _one(results: dict, prefix: str) -> tuple[str, int]:
    found = [v for k, v in results.items() if k.startswith(prefix)]
    assert len(found) == 1, (prefix, results)
    return found[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Copies of both example projects (the Spark one reads ../dbt_project/tests), the first
    `dbt build` (its result), and a function that runs dbt there."""
    exe = _dbt_spark()
    root = tmp_path_factory.mktemp("dbt_spark")
    for name in ("dbt_project", "dbt_project_spark"):
        shutil.copytree(EXAMPLES / name, root / "examples" / name,
                        ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    work = root / "examples" / "dbt_project_spark"
    env = dict(os.environ, ANONYDB_SPARK_DIR=str(root / "spark"), DBT_SEND_ANONYMOUS_USAGE_STATS="false",
               DBT_ANONYDB_PATH=str(ROOT / "dbt_anonydb"))
    deps = subprocess.run([exe, "deps"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert deps.returncode == 0, deps.stdout[-3000:] + deps.stderr[-3000:]

    def dbt(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([exe, *args, "--profiles-dir", "."], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)

    first = dbt("build")
    return work, root / "spark" / "warehouse" / f"{SCHEMA}.db", dbt, first


@pytest.fixture
def duck():
    e = anonydb.connect()
    yield e
    e.close()


def _load(duck, warehouse: Path, table: str) -> str:
    """A table as dbt-spark wrote it (Parquet files under the warehouse), copied into DuckDB."""
    assert sorted(warehouse.joinpath(table).glob("*.parquet")), f"no Parquet files for {table} under {warehouse}"
    duck.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM read_parquet('{warehouse / table}/*.parquet')")
    return table


def test_dbt_spark_build_passes_and_agrees_with_the_checks(project, duck):
    work, warehouse, dbt, r = project
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Registered adapter: spark=" in r.stdout
    assert "PASS=14 WARN=0 ERROR=0" in r.stdout  # a seed, 6 models, 7 tests
    got = _results(work)
    assert sorted(got.values()) == [("pass", 0)] * 7, got
    assert not (work / "metastore_db").exists() and not (work / "derby.log").exists()  # all under ANONYDB_SPARK_DIR

    release = _load(duck, warehouse, "census_release")
    cols = [c[0] for c in duck.con.execute(f"DESCRIBE {release}").fetchall()]
    assert cols == QIS + ["occupation"]  # identifiers (person_id, name) not published
    rep = anonydb.check(release, QIS, "occupation", engine=duck, k=5, l=3, t=0.35, max_groups=1)
    assert rep.holds and all(v.violating_groups == 0 for v in rep.verdicts), rep.format()
    n, k, l = duck.con.execute(f"SELECT sum(n), min(n), min(d) FROM (SELECT count(*) n, count(DISTINCT occupation) d "
                               f"FROM {release} GROUP BY age, sex, zip, education)").fetchone()
    assert n == 3000
    assert rep["k-anonymity"].achieved["k"] == k >= 5
    assert rep["l-diversity"].achieved["l"] == l >= 3
    assert rep["t-closeness"].achieved["t"] <= 0.35
    # the figures the project's schema.yml quotes (Spark's hash, and so the data, is the same everywhere)
    assert (k, l, rep["t-closeness"].achieved["t"]) == (14, 7, Fraction(319, 1000))


def test_dbt_spark_build_fails_on_a_violating_model_and_the_failing_rows_agree(project, duck):
    """The violating build, with tests added to the copy's schema.yml (those that may fail at
    severity warn): on the release, k_anonymous, l_diverse and t_close at anonydb's achieved k, l
    and t (they pass) and just past them (they fail); on the raw model, l_diverse; on a table of
    random rows with NULL quasi-identifier and sensitive values (a SQL model: dbt-spark's
    session-mode seeds load an empty text field as the text 'None'), k, l and t with both
    distances; with person, k_anonymous and l_diverse on random visits with NULL persons. The build
    fails on the raw models' k_anonymous only (ERROR=2: the census's, and the visits' by persons),
    and every test's failing-row count is anonydb.check's number of violating groups on the same
    rows (by persons: a plain-Python count of persons)."""
    import yaml

    work, warehouse, dbt, first = project
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    release = _load(duck, warehouse, "census_release")
    rep = anonydb.check(release, QIS, "occupation", engine=duck, k=1, l=1, t=1)
    k0, l0, t0 = rep["k-anonymity"].achieved["k"], rep["l-diversity"].achieved["l"], rep["t-closeness"].achieved["t"]
    assert k0 >= 5 and l0 >= 3 and 0 < t0 <= 0.35

    # 40 random rows with NULLs (seed 2: the ordered t_close counts 2 groups above 0.2 with NULL
    # ranked last, as anonydb does, and 6 with Spark's default NULLS FIRST)
    rnd = random.Random(2)
    rows = [(rnd.choice(["a", "b", None]), rnd.randint(1, 3), rnd.choice([10, 20, 30, 40, 50, None]))
            for _ in range(40)]

    def lit(v):
        return "null" if v is None else f"'{v}'" if isinstance(v, str) else str(v)

    values = ",\n       ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in rows)
    sample = work / "models" / "nulls_sample.sql"
    sample.write_text("{{ config(materialized='table') }}\n"
                      f"select * from values {values}\n       as v(q1, q2, s)\n")
    # random visits of 1-4 rows a person, 3 of them without a person (NULL)
    owners = _owners(random.Random(6))
    assert sum(r[0] is None for r in owners) == 3
    owner_values = ",\n       ".join("(" + ", ".join(lit(v) for v in r) + ")" for r in owners)
    owners_sample = work / "models" / "owners_sample.sql"
    owners_sample.write_text("{{ config(materialized='table') }}\n"
                             f"select * from values {owner_values}\n       as v(p, q1, q2, s)\n")

    def test(generic, name, warn=False, qis=QIS, **arguments):
        spec = {"name": name, "arguments": dict({"quasi_identifiers": qis}, **arguments)}
        if warn:
            spec["config"] = {"severity": "warn"}
        return {"dbt_anonydb." + generic: spec}

    below = 1e-6
    added = {
        "census_release": [
            test("k_anonymous", "release_k_at", k=k0),
            test("k_anonymous", "release_k_above", warn=True, k=k0 + 1),
            test("l_diverse", "release_l_at", sensitive="occupation", l=l0),
            test("l_diverse", "release_l_above", warn=True, sensitive="occupation", l=l0 + 1),
            test("t_close", "release_t_at", sensitive="occupation", t=float(t0)),
            test("t_close", "release_t_below", warn=True, sensitive="occupation", t=float(t0) - below),
        ],
        "census_raw_exposed": [
            test("l_diverse", "raw_l", warn=True, sensitive="occupation", l=3),
        ],
    }
    nq = ["q1", "q2"]
    sample_tests = {"name": "nulls_sample", "data_tests": [
        test("k_anonymous", "nulls_k", warn=True, qis=nq, k=4),
        test("l_diverse", "nulls_l", warn=True, qis=nq, sensitive="s", l=3),
        test("t_close", "nulls_t_equal", warn=True, qis=nq, sensitive="s", t=0.2),
        test("t_close", "nulls_t_ordered", warn=True, qis=nq, sensitive="s", t=0.2, distance="ordered"),
    ]}
    schema = work / "models" / "schema.yml"
    original = schema.read_text()
    doc = yaml.safe_load(original)
    for model in doc["models"]:
        model.setdefault("data_tests", []).extend(added.get(model["name"], []))
    doc["models"].append(sample_tests)
    doc["models"].append({"name": "owners_sample", "data_tests": [
        test("k_anonymous", "owners_k", warn=True, qis=nq, k=4, person="p"),
        test("l_diverse", "owners_l", warn=True, qis=nq, sensitive="s", l=3, person="p"),
    ]})
    schema.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        r = dbt("build", "--vars", "{include_violation: true}")
    finally:
        schema.write_text(original)
        sample.unlink()
        owners_sample.unlink()
    assert r.returncode != 0
    assert "Failure in test dbt_anonydb_k_anonymous_census_raw_exposed" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]

    raw = _load(duck, warehouse, "census_raw_exposed")
    nulls = _load(duck, warehouse, "nulls_sample")
    key = lambda row: tuple((v is None, v) for v in row)  # noqa: E731
    assert sorted(duck.con.execute("SELECT q1, q2, s FROM nulls_sample").fetchall(), key=key) == sorted(rows, key=key)

    def groups(table, qis=QIS, sensitive="occupation", **params):
        verdicts = anonydb.check(table, qis, sensitive, engine=duck, max_groups=1, **params).verdicts
        assert len(verdicts) == 1
        return verdicts[0].violating_groups

    want = {
        "dbt_anonydb_k_anonymous_census_raw_exposed": ("fail", groups(raw, k=5)),
        "raw_l": ("warn", groups(raw, l=3)),
        "release_k_at": ("pass", 0),
        "release_k_above": ("warn", groups(release, k=k0 + 1)),
        "release_l_at": ("pass", 0),
        "release_l_above": ("warn", groups(release, l=l0 + 1)),
        "release_t_at": ("pass", 0),
        "release_t_below": ("warn", groups(release, t=float(t0) - below, distance="equal")),
        "dbt_anonydb_k_anonymous_census_release": ("pass", 0),
        "dbt_anonydb_l_diverse_census_release": ("pass", 0),
        "dbt_anonydb_t_close_census_release": ("pass", 0),
        "dbt_anonydb_k_anonymous_census_generalized": ("pass", 0),
        "dbt_anonydb_l_diverse_census_generalized": ("pass", 0),
        "nulls_k": ("warn", groups(nulls, nq, "s", k=4)),
        "nulls_l": ("warn", groups(nulls, nq, "s", l=3)),
        "nulls_t_equal": ("warn", groups(nulls, nq, "s", t=0.2, distance="equal")),
        "nulls_t_ordered": ("warn", groups(nulls, nq, "s", t=0.2, distance="ordered")),
        # by persons, counted in plain Python (the visits seed's CSV; the random rows as written)
        "dbt_anonydb_k_anonymous_visits_release_3__patient_id": ("pass", 0),
        "dbt_anonydb_l_diverse_visits_release_3__patient_id": ("pass", 0),
        "dbt_anonydb_k_anonymous_visits_exposed_3__age": ("pass", 0),
        "dbt_anonydb_k_anonymous_visits_exposed_3__patient_id":
            ("fail", sum(p < 3 for _, p, _, _ in person_classes(visits(), ["age", "sex", "zip"], "patient_id").values())),
        "owners_k": ("warn", len(person_failing_rows(owners, 4, 3)[0])),
        "owners_l": ("warn", len(person_failing_rows(owners, 4, 3)[1])),
    }
    assert want["nulls_t_ordered"][1] == 2
    assert want["dbt_anonydb_k_anonymous_visits_exposed_3__patient_id"][1] == 11
    assert (want["owners_k"][1], want["owners_l"][1]) == (8, 4)
    got = _results(work)
    assert len(got) == len(want), got
    for prefix, (status, count) in want.items():
        if status != "pass":
            assert count > 0, prefix
        assert _one(got, prefix) == (status, count), (prefix, got)
    statuses = [s for s, _ in want.values()]
    # 10 models and the seed pass; the raw models' k_anonymous (the visits' by persons) are the errors
    assert statuses.count("fail") == 2
    assert f"PASS={11 + statuses.count('pass')} WARN={statuses.count('warn')} ERROR=2 " in r.stdout, r.stdout[-3000:]


def test_dbt_spark_package_release_is_verified(project, duck):
    """dbt_anonydb.generalized_release built by Spark: only the listed columns, every row, and
    anonydb.check finds k >= 5 and l >= 2 on what Spark wrote."""
    work, warehouse, dbt, r = project
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rel = _load(duck, warehouse, "census_generalized")
    cols = [c[0] for c in duck.con.execute(f"DESCRIBE {rel}").fetchall()]
    assert cols == ["age", "sex", "zip", "occupation"]
    rep = anonydb.check(rel, ["age", "sex", "zip"], "occupation", engine=duck, k=5, l=2)
    assert rep.holds and rep.rows == 3000
    assert {a for (a,) in duck.con.execute(f"SELECT DISTINCT age FROM {rel}").fetchall()} <= {"<40", "40-59", "60+"}
