"""The dbt example with the dbt_anonydb package installed from this repository (`dbt deps`):
`dbt build` passes on the releases and fails on a violating model; the package's generalized release
is verified independently and refused when too fine; the generic tests' SQL agrees with anonydb's
checks, and with `person:` (several rows per person) with a plain-Python count of persons."""

from __future__ import annotations

import csv
import json
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
#: the visits seed (several rows per patient), the same file in every example project
VISITS = [ROOT / "examples" / name / "seeds" / "visits.csv"
          for name in ("dbt_project", "dbt_project_postgres", "dbt_project_spark")]


def _dbt() -> str:
    exe = Path(sys.executable).with_name("dbt")
    if exe.is_file():
        return str(exe)
    found = shutil.which("dbt")
    if not found:
        pytest.skip("dbt is not installed (pip install dbt-duckdb 'dbt-core<1.12'; the test extra has it)")
    return found


def _env(tmp_path: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                ANONYDB_DBT_DATABASE=str(tmp_path / "example.duckdb"), DBT_SEND_ANONYMOUS_USAGE_STATS="false",
                DBT_ANONYDB_PATH=str(PACKAGE))


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """The example project with the package installed by ``dbt deps``, as a user's project installs
    it: once a session, each test building a copy of it."""
    work = tmp_path_factory.mktemp("dbt") / "project"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    deps = subprocess.run([_dbt(), "deps"], cwd=work, env=_env(work.parent), capture_output=True, text=True,
                          timeout=300)
    assert deps.returncode == 0, deps.stdout[-3000:] + deps.stderr[-3000:]
    return work


@pytest.fixture
def project(installed, tmp_path) -> Path:
    """A test's own copy of the installed example project: ``tmp_path / "project"``."""
    shutil.copytree(installed, tmp_path / "project", symlinks=True)
    return tmp_path / "project"


def _build(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    """``dbt build`` of the copy in ``tmp_path`` (the ``project`` fixture), into its own database."""
    return subprocess.run([_dbt(), "build", "--profiles-dir", ".", *extra], cwd=tmp_path / "project",
                          env=_env(tmp_path), capture_output=True, text=True, timeout=600)


def _results(work: Path) -> dict[str, tuple[str, int]]:
    """The last run's tests: {test name: (status, failing rows)} from target/run_results.json."""
    results = json.loads((work / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].split(".")[2]: (r["status"], r["failures"])
            for r in results if r["unique_id"].startswith("test.")}


def _one(results: dict, prefix: str) -> tuple[str, int]:
    found = [v for k, v in results.items() if k.startswith(prefix)]
    assert len(found) == 1, (prefix, results)
    return found[0]


def person_classes(rows: list[dict], qis: list[str], person: str, sensitive: str | None = None) -> dict:
    """The plain-Python count of record owners: {QI tuple: (rows, distinct persons, rows whose
    person is None, distinct sensitive values on the rows that name a person, None counted as one)}."""
    out: dict = {}
    for r in rows:
        key = tuple(r[q] for q in qis)
        n, persons, nulls, values = out.get(key, (0, set(), 0, set()))
        if r[person] is None:
            nulls += 1
        else:
            persons.add(r[person])
            if sensitive is not None:
                values.add(r[sensitive])
        out[key] = (n + 1, persons, nulls, values)
    return {key: (n, len(p), nulls, len(v)) for key, (n, p, nulls, v) in out.items()}


def visits() -> list[dict]:
    """The visits seed, as its CSV reads (integers as int)."""
    with VISITS[0].open(newline="") as f:
        return [{k: int(v) if v.isdigit() else v for k, v in r.items()} for r in csv.DictReader(f)]


def test_visits_seed_is_as_its_description_says():
    """One seed file for every project; 37 visits of 12 patients, 2 to 4 each, age, sex and zip
    constant per patient; visits_release's classes (age band, sex) of 3 patients and 3 or more
    diagnoses; visits_exposed's classes (age, sex, zip) of 3 or more visits but 1 or 2 patients."""
    assert VISITS[1].read_bytes() == VISITS[0].read_bytes() == VISITS[2].read_bytes()
    rows = visits()
    per = {}
    for r in rows:
        per.setdefault(r["patient_id"], set()).add((r["age"], r["sex"], r["zip"]))
    assert len(rows) == 37 and len(per) == 12 and all(len(v) == 1 for v in per.values())
    assert sorted({sum(r["patient_id"] == p for r in rows) for p in per}) == [2, 3, 4]
    band = [dict(r, age="30-39" if r["age"] < 40 else "40-49") for r in rows]
    release = person_classes(band, ["age", "sex"], "patient_id", "diagnosis")
    assert len(release) == 4 and all(p == 3 and d >= 3 for _, p, _, d in release.values())
    exposed = person_classes(rows, ["age", "sex", "zip"], "patient_id")
    assert len(exposed) == 11 and all(n >= 3 and p < 3 for n, p, _, _ in exposed.values())


def test_dbt_build_passes_then_fails_on_a_violating_model(tmp_path, project):
    r = _build(tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "PASS=16 WARN=0 ERROR=0" in r.stdout  # a seed, 8 models, 7 tests
    got = _results(tmp_path / "project")
    assert sorted(got.values()) == [("pass", 0)] * 7, got
    assert _one(got, "dbt_anonydb_k_anonymous_visits_release_3__patient_id") == ("pass", 0)
    assert _one(got, "dbt_anonydb_l_diverse_visits_release_3__patient_id") == ("pass", 0)
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
    # the raw models' tests fail: the census's k_anonymous, and the visits' k_anonymous by persons
    # (every class has 3 or more visits but 1 or 2 patients: by rows it passes); the releases' pass
    assert "Failure in test dbt_anonydb_k_anonymous_visits_exposed_3__patient_id" in r.stdout
    assert "PASS=19 WARN=0 ERROR=2" in r.stdout
    got = _results(tmp_path / "project")
    exposed = person_classes(visits(), ["age", "sex", "zip"], "patient_id")
    assert _one(got, "dbt_anonydb_k_anonymous_visits_exposed_3__age") == ("pass", 0)
    assert _one(got, "dbt_anonydb_k_anonymous_visits_exposed_3__patient_id") == \
        ("fail", sum(p < 3 for _, p, _, _ in exposed.values())) == ("fail", 11)


def test_a_dp_model_spends_the_budget_the_database_keeps(tmp_path, project):
    """models/visits_dp.py (anonydb.dp inside dbt-duckdb): every public diagnosis code appears, with
    the count's scale the definition gives (G x R = 4 over epsilon 1 / 2: 8), and the release is a
    ledger entry; with a budget of 1.5 a second build of the model is refused and the table stays."""
    pytest.importorskip("opendp", reason="OpenDP is not installed (pip install 'anonydb[dp]')")
    r = _build(tmp_path, "--select", "visits", "diagnoses", "visits_dp")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    db = str(tmp_path / "example.duckdb")
    con = duckdb.connect(db, read_only=True)
    try:
        got = con.execute("SELECT diagnosis, count_scale FROM visits_dp ORDER BY 1").fetchall()
        assert [g for g, _ in got] == ["asthma", "back pain", "diabetes", "flu", "hypertension", "migraine"]
        assert all(abs(s - 8) < 1e-6 for _, s in got)
        assert con.execute("SELECT count(*) FROM anonydb_releases WHERE mode = 'dp' AND series = 'visits_dp'"
                           ).fetchone()[0] == 1
        before = con.execute("SELECT * FROM visits_dp ORDER BY 1").fetchall()
    finally:
        con.close()
    r = _build(tmp_path, "--select", "visits_dp", "--vars", "{dp_budget: 1.5}")
    assert r.returncode != 0 and "the budget of series 'visits_dp' is epsilon 1.5" in r.stdout, r.stdout[-2000:]
    con = duckdb.connect(db, read_only=True)
    try:
        assert con.execute("SELECT * FROM visits_dp ORDER BY 1").fetchall() == before
    finally:
        con.close()


def test_package_release_is_verified_and_refused_when_too_fine(tmp_path, project):
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


def _owners(rnd: random.Random) -> list[tuple]:
    """Random visits (p, q 1, q2, s): 1-4 rows a person, whose QIs may vary between rows; NULL
    persons, QI and sensitive values among them (at least one person that is not NULL)."""
    rows = []
    for p in range(rnd.randint(3, 14)):
        q1, q2 = rnd.choice(["a", "b", None]), rnd.randint(1, 3)
        for _ in range(rnd.randint(1, 4)):
            if rnd.random() < 0.2:  # a record of its own: other QI values
                q1, q2 = rnd.choice(["a", "b", None]), rnd.randint(1, 3)
            rows.append((p, q1, q2, rnd.choice([10, 20, 30, None])))
    if rnd.random() < 0.5:
        rows += [(None, rnd.choice(["a", "b"]), rnd.randint(1, 3), rnd.choice([10, 20, None]))
                 for _ in range(rnd.randint(1, 3))]
    rnd.shuffle(rows)
    return rows


def person_failing_rows(rows: list[tuple], k: int, l: int) -> tuple[set, set]:
    """What k_anonymous and l_diverse with person = "p" return on rows (p, q 1, q2, s), counted in
    plain Python: (the k test's rows, the l test's rows)."""
    classes = person_classes([dict(zip(["p", "q 1", "q2", "s"], r)) for r in rows], ["q 1", "q2"], "p", "s")
    why = "a row has no person (p is NULL)"
    bad_k = {key + (persons, n, nulls, why if nulls else f"fewer than {k} persons")
             for key, (n, persons, nulls, _) in classes.items() if persons < k or nulls}
    bad_l = {key + (persons, values, nulls, why if nulls else f"fewer than {l} values held by persons")
             for key, (n, persons, nulls, values) in classes.items() if values < l or nulls}
    return bad_k, bad_l


def run_person_tests(con, rows: list[tuple], k: int, l: int) -> tuple[set, set]:
    """The failing rows of k_anonymous and l_diverse with person = "p" on table t (ints as int)."""
    def norm(r):
        return tuple(int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == int(v) else v
                     for v in r)
    bad_k = con.execute(_generic("k_anonymous")(model="t", quasi_identifiers=["q 1", "q2"], k=k,
                                                person="p")).fetchall()
    bad_l = con.execute(_generic("l_diverse")(model="t", quasi_identifiers=["q 1", "q2"], sensitive="s", l=l,
                                              person="p")).fetchall()
    assert len(set(bad_k)) == len(bad_k) and len(set(bad_l)) == len(bad_l)
    return {norm(r) for r in bad_k}, {norm(r) for r in bad_l}


@pytest.mark.parametrize("seed", range(8))
def test_person_generic_tests_agree_with_a_plain_count(engine, seed):
    """k_anonymous and l_diverse with person: every failing row (QIs, distinct persons, rows or
    values, NULL persons, reason) as a plain-Python count of persons gives it; a class with a NULL
    person fails, whatever its count; without person the same table is judged by rows."""
    rnd = random.Random(seed)
    rows = _owners(rnd)
    make_table(engine, "t", ["p", "q 1", "q2", "s"], rows)
    k, l = rnd.randint(2, 4), rnd.randint(2, 3)
    want = person_failing_rows(rows, k, l)
    assert run_person_tests(engine.con, rows, k, l) == want
    by_rows = engine.con.execute(_generic("k_anonymous")(model="t", quasi_identifiers=["q 1", "q2"], k=k)).fetchall()
    classes = person_classes([dict(zip(["p", "q 1", "q2", "s"], r)) for r in rows], ["q 1", "q2"], "p")
    assert sorted(by_rows, key=repr) == sorted([key + (n,) for key, (n, _, _, _) in classes.items() if n < k], key=repr)


def test_person_generic_tests_by_hand(engine):
    """A hand-counted table: class a has 4 visits of 2 patients (by rows 3-anonymous, by persons
    not), class b 3 patients with one diagnosis each of two (2-diverse), class c a row whose person
    is NULL (it fails both tests, though 3 persons hold 3 values there); the person column may not
    be a quasi-identifier nor the sensitive attribute."""
    rows = [(1, "a", 1, "flu"), (1, "a", 1, "flu"), (1, "a", 1, "flu"), (2, "a", 1, "cold"),
            (3, "b", 1, "flu"), (4, "b", 1, "flu"), (5, "b", 1, "cold"), (5, "b", 1, "cold"),
            (6, "c", 1, "flu"), (7, "c", 1, "cold"), (8, "c", 1, "cough"), (None, "c", 1, "asthma")]
    make_table(engine, "t", ["p", "q 1", "q2", "s"], rows)
    bad_k, bad_l = run_person_tests(engine.con, rows, 3, 3)
    assert bad_k == {("a", 1, 2, 4, 0, "fewer than 3 persons"), ("c", 1, 3, 4, 1, "a row has no person (p is NULL)")}
    assert bad_l == {("a", 1, 2, 2, 0, "fewer than 3 values held by persons"),
                     ("b", 1, 3, 2, 0, "fewer than 3 values held by persons"),
                     ("c", 1, 3, 3, 1, "a row has no person (p is NULL)")}
    assert engine.con.execute(_generic("k_anonymous")(model="t", quasi_identifiers=["q 1", "q2"], k=3)).fetchall() == []
    with pytest.raises(ValueError, match="also a quasi-identifier"):
        _generic("k_anonymous")(model="t", quasi_identifiers=["P", "q2"], k=3, person="p")
    with pytest.raises(ValueError, match="sensitive attribute"):
        _generic("l_diverse")(model="t", quasi_identifiers=["q2"], sensitive="p", l=2, person="p")


def test_person_release_built_twice_is_refused(tmp_path, project):
    """The package's release by persons (issue 62's dbt flow): the first build writes it, its
    classes hold 3 patients (counted here from the seed); built again over its own table it is
    refused in one line, and the table already out is left as it was; untracked=true is the only
    way to build it again (a var of the example's model)."""
    var = ["--vars", "{include_person_release: true}", "--select", "visits visits_person_release"]
    r = _build(tmp_path, *var)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    by_sex: dict = {}
    for row in visits():
        by_sex.setdefault(row["sex"], set()).add(row["patient_id"])
    with duckdb.connect(str(tmp_path / "example.duckdb"), read_only=True) as con:
        got = dict(con.execute("SELECT sex, count(*) FROM visits_person_release GROUP BY sex").fetchall())
        before = sorted(con.execute("SELECT * FROM visits_person_release").fetchall())
    assert got == {s: sum(1 for v in visits() if v["sex"] == s) for s in by_sex} and min(map(len, by_sex.values())) >= 3
    r = _build(tmp_path, *var)
    assert r.returncode != 0
    assert "anonydb: " in r.stdout and "is a person-level release that exists already" in r.stdout, r.stdout[-3000:]
    with duckdb.connect(str(tmp_path / "example.duckdb"), read_only=True) as con:
        assert sorted(con.execute("SELECT * FROM visits_person_release").fetchall()) == before
    r = _build(tmp_path, "--vars", "{include_person_release: true, person_release_untracked: true}", "--select",
               "visits visits_person_release")
    assert r.returncode == 0, r.stdout[-3000:]
