"""The dbt example with the dbt_anonydb package installed from this repository (`dbt deps`):
`dbt build` passes on the releases and fails on a violating model; the package's generalized release
is verified independently and refused when too fine; the generic tests' SQL agrees with anonydb's
checks."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import jinja2
import pytest

import anonydb

from conftest import ROOT, make_table

PROJECT = ROOT / "examples" / "dbt_project"
PACKAGE = ROOT / "dbt_anonydb"
GENERIC = PACKAGE / "macros" / "generic_tests"


def _dbt() -> str:
    exe = Path(sys.executable).with_name("dbt")
    if exe.is_file():
        return str(exe)
    found = shutil.which("dbt")
    if not found:
        pytest.skip("dbt is not installed (pip install dbt-duckdb 'dbt-core<1.12'; the test extra has it)")
    return found


def _build(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    work = tmp_path / "project"
    if not work.exists():
        shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               ANONYDB_DBT_DATABASE=str(tmp_path / "example.duckdb"), DBT_SEND_ANONYMOUS_USAGE_STATS="false",
               DBT_ANONYDB_PATH=str(PACKAGE))
    if not (work / "dbt_packages").exists():  # the package, installed as a user's project installs it
        deps = subprocess.run([_dbt(), "deps"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
        assert deps.returncode == 0, deps.stdout[-3000:] + deps.stderr[-3000:]
    return subprocess.run([_dbt(), "build", "--profiles-dir", ".", *extra], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)


def test_dbt_build_passes_then_fails_on_a_violating_model(tmp_path):
    r = _build(tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PASS=10 WARN=0 ERROR=0" in r.stdout
    con = duckdb.connect(str(tmp_path / "example.duckdb"), read_only=True)
    try:
        n, k, l = con.execute("SELECT sum(n), min(n), min(d) FROM (SELECT count(*) n, count(DISTINCT occupation) d "
                              "FROM census_release GROUP BY age, sex, zip, education)").fetchone()
        assert n == 3000 and k >= 5 and l >= 3
        cols = [c[0] for c in con.execute("DESCRIBE census_release").fetchall()]
        assert "person_id" not in cols and "name" not in cols  # identifiers dropped
    finally:
        con.close()
    r = _build(tmp_path, "--vars", "{include_violation: true}")
    assert r.returncode != 0
    assert "Failure in test dbt_anonydb_k_anonymous_census_raw_exposed" in r.stdout
    assert "ERROR=1" in r.stdout  # only the raw model's test fails; the release's tests pass


def test_package_release_is_verified_and_refused_when_too_fine(tmp_path):
    """dbt_anonydb.generalized_release: the published columns are the listed ones, every row is
    there, anonydb.check finds k >= 5 and l >= 2 and the labels are the hierarchy's; a release too
    fine for k = 5 stops with one line and leaves no table."""
    r = _build(tmp_path, "--select", "census", "hier_age", "hier_zip", "census_generalized")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    con = duckdb.connect(str(tmp_path / "example.duckdb"))
    try:
        cols = [c[0] for c in con.execute("DESCRIBE census_generalized").fetchall()]
        assert cols == ["age", "sex", "zip", "occupation"]
        rep = anonydb.check("census_generalized", ["age", "sex", "zip"], "occupation", engine=con, k=5, l=2)
        assert rep.holds and rep.rows == 3000
        # each released label is the source row's ancestor: age band and zip's first digit
        assert con.execute("""
            SELECT count(*) FROM (SELECT age, zip, count(*) n FROM census_generalized GROUP BY ALL) g
            FULL JOIN (SELECT CASE WHEN age < 40 THEN '<40' WHEN age < 60 THEN '40-59' ELSE '60+' END AS age,
                              substr(CAST(zip AS VARCHAR), 1, 1) || '****' AS zip, count(*) n FROM census GROUP BY ALL) s
            USING (age, zip) WHERE g.n IS DISTINCT FROM s.n""").fetchone()[0] == 0
    finally:
        con.close()
    # a kept column is verified with the quasi-identifiers: zip kept unchanged splits every class
    (tmp_path / "project" / "models" / "census_generalized_keep.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "{{ dbt_anonydb.generalized_release(ref('census'), quasi_identifiers=['age', 'sex'], sensitive='occupation', "
        "hierarchies={'age': ref('hier_age')}, levels={'age': 2}, k=5, keep=['zip']) }}\n")
    r = _build(tmp_path, "--select", "census_generalized_keep")
    assert r.returncode != 0
    lines = [x for x in r.stdout.splitlines() if "anonydb: " in x]
    assert len(lines) == 1 and "over the quasi-identifiers and the kept columns zip" in lines[0], r.stdout[-2000:]
    r = _build(tmp_path, "--select", "census_generalized_unsafe", "--vars", "{include_unsafe_release: true}")
    assert r.returncode != 0
    lines = [x for x in r.stdout.splitlines() if "anonydb: " in x]
    assert len(lines) == 1 and "anonydb: the release is not 5-anonymous:" in lines[0], r.stdout[-2000:]
    con = duckdb.connect(str(tmp_path / "example.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM information_schema.tables "
                           "WHERE table_name LIKE 'census_generalized_unsafe%'").fetchone()[0] == 0
    finally:
        con.close()


def _generic(name: str):
    """A dbt generic test rendered as a plain Jinja macro (adapter.quote as DuckDB quoting)."""
    text = (GENERIC / f"{name}.sql").read_text().replace("{% test", "{% macro").replace("{% endtest %}",
                                                                                        "{% endmacro %}")
    env = jinja2.Environment(extensions=["jinja2.ext.do"])

    class Adapter:
        @staticmethod
        def quote(c):
            return '"' + str(c).replace('"', '""') + '"'

    class Exceptions:
        @staticmethod
        def raise_compiler_error(msg):
            raise ValueError(msg)

    env.globals.update(adapter=Adapter, exceptions=Exceptions)
    return getattr(env.from_string(text).module, name)


@pytest.mark.parametrize("seed", range(8))
def test_generic_tests_agree_with_the_checks(engine, seed):
    rnd = random.Random(seed)
    rows = [(rnd.choice(["a", "b", None]), rnd.randint(1, 3), rnd.choice([10, 20, 30, 40, 50]))
            for _ in range(rnd.randint(10, 60))]
    make_table(engine, "t", ["q 1", "q2", "s"], rows)
    qis = ["q 1", "q2"]
    con = engine.con
    k, l = rnd.randint(2, 5), rnd.randint(2, 3)
    rep = anonydb.check("t", qis, "s", engine=engine, k=k, l=l, max_groups=None)
    bad_k = con.execute(_generic("k_anonymous")(model="t", quasi_identifiers=qis, k=k)).fetchall()
    bad_l = con.execute(_generic("l_diverse")(model="t", quasi_identifiers=qis, sensitive="s", l=l)).fetchall()
    assert len(bad_k) == rep["k-anonymity"].violating_groups
    assert len(bad_l) == rep["l-diversity"].violating_groups
    for distance in ("equal", "ordered"):
        sql = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=-1, distance=distance)
        emds = [r[-1] for r in con.execute(sql).fetchall()]
        want = anonydb.check("t", qis, "s", engine=engine, t=0.5, distance=distance)["t-closeness"].achieved["t"]
        assert isinstance(want, Fraction)
        assert max(emds) == pytest.approx(float(want), abs=1e-12), distance
        # at t = the achieved value the test passes; just below it, it fails
        ok = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=float(want), distance=distance)
        assert con.execute(ok).fetchall() == []
        if want > 0:
            below = _generic("t_close")(model="t", quasi_identifiers=qis, sensitive="s", t=float(want) - 1e-6,
                                        distance=distance)
            assert con.execute(below).fetchall()
