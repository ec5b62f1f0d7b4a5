"""anonydb.datasets: the seeded synthetic census and the Adult loader."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from anonydb.datasets import (
    CENSUS_ADULT_HIERARCHIES,
    CENSUS_COLUMNS,
    CENSUS_QIS,
    EDUCATION,
    MARITAL_STATUS,
    OCCUPATION,
    RACE,
    SEX,
    WORKCLASS,
    adult_hierarchy_paths,
    load_adult,
    synthetic_census,
)
from anonydb.errors import InputError

from conftest import need_shared

# order-independent fingerprint of a whole table: every column of every row
FINGERPRINT = 'SELECT count(*) AS n, sum(hash(t)::HUGEINT) AS s, bit_xor(hash(t)) AS x FROM "{}" AS t'

EXPECTED_TYPES = [
    ("person_id", "BIGINT"), ("name", "VARCHAR"), ("age", "INTEGER"), ("sex", "VARCHAR"),
    ("race", "VARCHAR"), ("marital_status", "VARCHAR"), ("education", "VARCHAR"),
    ("workclass", "VARCHAR"), ("zip", "VARCHAR"), ("hours_per_week", "INTEGER"),
    ("occupation", "VARCHAR"), ("income", "INTEGER"), ("household_size", "INTEGER"),
]

CATEGORICAL = {"sex": SEX, "race": RACE, "marital_status": MARITAL_STATUS, "education": EDUCATION,
               "workclass": WORKCLASS, "occupation": OCCUPATION}


def fingerprint(engine, table):
    return engine.fetch(FINGERPRINT.format(table))[0]


@pytest.fixture(scope="module")
def census():
    """One 50,000-row census shared by the read-only tests of this module."""
    import anonydb

    e = anonydb.connect()
    synthetic_census(e, "census", rows=50_000, seed=7)
    yield e
    e.close()


# -- synthetic census: determinism ------------------------------------------------------------------

def test_same_seed_same_table(engine):
    synthetic_census(engine, "a", rows=5_000, seed=1)
    synthetic_census(engine, "b", rows=5_000, seed=1)
    assert fingerprint(engine, "a") == fingerprint(engine, "b")
    # row by row and in the same order, not only as a multiset
    assert engine.scalar('SELECT count(*) FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM b)') == 0
    ids_a = [r[0] for r in engine.fetch_rows("SELECT person_id FROM a")[1]]
    assert ids_a == list(range(1, 5_001))


def test_different_seed_different_table(engine):
    synthetic_census(engine, "a", rows=5_000, seed=1)
    synthetic_census(engine, "b", rows=5_000, seed=2)
    assert fingerprint(engine, "a") != fingerprint(engine, "b")
    # not merely a permutation: most persons differ in their QIs
    same = engine.scalar(
        "SELECT count(*) FROM a JOIN b USING (person_id) "
        "WHERE a.age = b.age AND a.zip = b.zip AND a.education = b.education")
    assert same < 100


def test_prefix_stable_in_rows(engine):
    """Row i depends only on (i, seed): a longer table starts with the shorter one."""
    synthetic_census(engine, "small", rows=1_000, seed=3)
    synthetic_census(engine, "big", rows=3_000, seed=3)
    assert engine.scalar(
        "SELECT count(*) FROM (SELECT * FROM small EXCEPT ALL SELECT * FROM big WHERE person_id <= 1000)") == 0


def test_returns_name_and_replaces(engine):
    assert synthetic_census(engine, "p", rows=10) == "p"
    assert synthetic_census(engine, "p", rows=20) == "p"  # replace=True by default
    assert engine.scalar('SELECT count(*) FROM p') == 20
    with pytest.raises(InputError, match="already exists"):
        synthetic_census(engine, "p", rows=5, replace=False)
    assert synthetic_census(engine, "q", rows=3, replace=False) == "q"


def test_quoted_table_name(engine):
    synthetic_census(engine, 'odd "name"; drop', rows=7)
    assert engine.scalar('SELECT count(*) FROM "odd ""name""; drop"') == 7


# -- synthetic census: shape and domains ------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 2, 999, 12_345])
def test_row_count_exact(engine, rows):
    synthetic_census(engine, "c", rows=rows)
    assert engine.scalar("SELECT count(*) FROM c") == rows
    assert engine.fetch("SELECT min(person_id) AS lo, max(person_id) AS hi, count(DISTINCT person_id) AS d FROM c")[0] \
        == {"lo": 1, "hi": rows, "d": rows}


def test_columns_and_types(census):
    assert census.columns("census") == EXPECTED_TYPES
    assert [c for c, _ in EXPECTED_TYPES] == CENSUS_COLUMNS


def test_no_nulls_by_default(census):
    nulls = census.fetch("SELECT " + ", ".join(f'count(*) - count("{c}") AS "{c}"' for c in CENSUS_COLUMNS)
                         + " FROM census")[0]
    assert set(nulls.values()) == {0}


def test_identifiers(census):
    r = census.fetch("SELECT count(DISTINCT name) AS d, bool_and(name = 'Person ' || person_id) AS ok FROM census")[0]
    assert r == {"d": 50_000, "ok": True}


def test_numeric_domains(census):
    r = census.fetch("""
        SELECT min(age) AS age_lo, max(age) AS age_hi,
               min(hours_per_week) AS h_lo, max(hours_per_week) AS h_hi,
               min(household_size) AS hh_lo, max(household_size) AS hh_hi,
               min(income) AS inc_lo, bool_and(income % 1000 = 0) AS inc_steps,
               count(DISTINCT income) AS inc_distinct, count(DISTINCT age) AS ages
        FROM census""")[0]
    assert 17 <= r["age_lo"] and r["age_hi"] <= 90 and r["ages"] >= 70
    assert 1 <= r["h_lo"] and r["h_hi"] <= 99
    assert 1 <= r["hh_lo"] and r["hh_hi"] <= 8
    assert r["inc_lo"] >= 1000 and r["inc_steps"]
    assert 50 <= r["inc_distinct"] <= 400


@pytest.mark.parametrize("column", sorted(CATEGORICAL))
def test_categorical_domains(census, column):
    seen = {r[0] for r in census.fetch_rows(f'SELECT DISTINCT "{column}" FROM census')[1]}
    assert seen <= set(CATEGORICAL[column])
    # every value of the domain occurs in 50,000 rows, except the very rare ones
    rare = {"Armed-Forces", "Married-AF-spouse", "Without-pay", "Preschool"}
    assert set(CATEGORICAL[column]) - seen <= rare


def test_domains_are_the_adult_domains():
    """The value names match the Adult data, so the Adult hierarchies cover the census."""
    datasets = need_shared()
    with open(datasets / "adult" / "adult.csv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter=";"))
    for census_col, adult_col in [("sex", "sex"), ("race", "race"), ("marital_status", "marital-status"),
                                  ("education", "education"), ("workclass", "workclass"),
                                  ("occupation", "occupation")]:
        assert set(CATEGORICAL[census_col]) == {r[adult_col] for r in rows}, census_col


def test_adult_hierarchies_cover_census(census):
    need_shared()
    paths = adult_hierarchy_paths()
    for col, attr in CENSUS_ADULT_HIERARCHIES.items():
        with open(paths[attr], newline="") as f:
            leaves = {row[0] for row in csv.reader(f, delimiter=";")}
        seen = {str(r[0]) for r in census.fetch_rows(f'SELECT DISTINCT "{col}" FROM census')[1]}
        assert seen <= leaves, col


def test_zip_codes(census):
    r = census.fetch("""
        SELECT bool_and(regexp_full_match(zip, '[0-9]{5}')) AS five_digits,
               count(DISTINCT zip) AS zips, count(DISTINCT left(zip, 3)) AS prefixes,
               max(n) AS top_zip
        FROM (SELECT zip, count(*) OVER (PARTITION BY zip) AS n FROM census)""")[0]
    assert r["five_digits"]
    assert 200 <= r["zips"] <= 600
    assert 10 <= r["prefixes"] <= 30  # clustered: far fewer prefixes than codes
    assert r["top_zip"] > 5 * 50_000 / r["zips"]  # skewed, not uniform


# -- synthetic census: realistic marginals and correlations -----------------------------------------

def share(engine, cond, where="TRUE"):
    return engine.scalar(f"SELECT avg(CASE WHEN {cond} THEN 1.0 ELSE 0.0 END) FROM census WHERE {where}")


def test_marginals_are_skewed(census):
    assert 0.60 < share(census, "sex = 'Male'") < 0.72
    assert share(census, "race = 'White'") > 0.75
    assert share(census, "workclass = 'Private'") > 0.6
    top_edu = census.fetch_rows("SELECT education FROM census GROUP BY 1 ORDER BY count(*) DESC LIMIT 2")[1]
    assert [r[0] for r in top_edu] == ["HS-grad", "Some-college"]
    # hours peak at 40; age right-skewed (median below the midpoint of 17..90, mean above the median)
    assert share(census, "hours_per_week = 40") > 0.4
    r = census.fetch("SELECT median(age) AS med, avg(age) AS mean FROM census")[0]
    assert 30 <= r["med"] <= 42 and r["mean"] > r["med"]


def test_marital_status_follows_age(census):
    young = share(census, "marital_status = 'Never-married'", "age < 25")
    old = share(census, "marital_status = 'Never-married'", "age >= 50")
    assert young > 0.6 and old < 0.15 and young > old
    assert share(census, "marital_status = 'Widowed'", "age >= 65") > 5 * share(census, "marital_status = 'Widowed'", "age < 50")


def test_income_follows_education_age_hours(census):
    mean = lambda where: census.scalar(f"SELECT avg(income) FROM census WHERE {where}")  # noqa: E731
    assert mean("education IN ('Bachelors', 'Masters', 'Prof-school', 'Doctorate')") > 1.5 * mean("education = 'HS-grad'")
    assert mean("age BETWEEN 40 AND 55") > 1.5 * mean("age < 25")
    assert mean("hours_per_week >= 50") > mean("hours_per_week < 35")
    assert census.scalar("SELECT corr(income, hours_per_week) FROM census") > 0.15


def test_occupation_follows_education_and_sex(census):
    assert share(census, "occupation = 'Prof-specialty'", "education IN ('Masters', 'Doctorate', 'Prof-school')") \
        > 3 * share(census, "occupation = 'Prof-specialty'", "education = 'HS-grad'")
    assert share(census, "occupation = 'Adm-clerical'", "sex = 'Female'") \
        > 2 * share(census, "occupation = 'Adm-clerical'", "sex = 'Male'")
    assert share(census, "occupation = 'Craft-repair'", "sex = 'Male'") \
        > 3 * share(census, "occupation = 'Craft-repair'", "sex = 'Female'")


def test_hours_follow_workclass(census):
    h = dict(census.fetch_rows("SELECT workclass, avg(hours_per_week) FROM census GROUP BY 1")[1])
    assert h["Self-emp-inc"] > h["Private"] + 2


def test_group_structure_is_not_all_unique(census):
    """Grouping by all 8 QIs leaves some groups of several persons (not a table of uniques)."""
    qis = ", ".join(f'"{c}"' for c in CENSUS_QIS)
    r = census.fetch(f"SELECT count(*) AS groups, max(n) AS biggest FROM (SELECT count(*) AS n FROM census GROUP BY {qis})")[0]
    assert r["groups"] < 50_000 and r["biggest"] >= 2
    # coarser QI sets give the big classes anonymization works with
    r = census.fetch("SELECT count(*) AS groups, median(n) AS typical FROM "
                     "(SELECT count(*) AS n FROM census GROUP BY left(zip, 3), sex, age // 10)")[0]
    assert r["groups"] <= 20 * 2 * 9 and r["typical"] >= 50


def test_uniform_draws_look_independent(engine):
    """No visible dependence between columns drawn from different salts of the same row."""
    synthetic_census(engine, "c", rows=40_000, seed=11)
    # sex is drawn independently of zip and of age: shares within subgroups match the overall share
    overall = engine.scalar("SELECT avg((sex = 'Male')::INT) FROM c")
    by_prefix = [r[0] for r in engine.fetch_rows(
        "SELECT avg((sex = 'Male')::INT) FROM c GROUP BY left(zip, 3) HAVING count(*) > 1000")[1]]
    assert by_prefix and max(abs(x - overall) for x in by_prefix) < 0.05
    by_age = [r[0] for r in engine.fetch_rows(
        "SELECT avg((sex = 'Male')::INT) FROM c GROUP BY age // 10 HAVING count(*) > 1000")[1]]
    assert max(abs(x - overall) for x in by_age) < 0.05
    # consecutive rows are unrelated
    lag = engine.scalar("SELECT corr(a.age, b.age) FROM c a JOIN c b ON b.person_id = a.person_id + 1")
    assert abs(lag) < 0.03


# -- synthetic census: NULLs and bad input ----------------------------------------------------------

def test_null_rate(engine):
    synthetic_census(engine, "n", rows=20_000, seed=5, null_rate=0.1)
    r = engine.fetch("SELECT " + ", ".join(f'avg(("{c}" IS NULL)::INT) AS "{c}"' for c in CENSUS_COLUMNS)
                     + " FROM n")[0]
    assert 0.08 < r["zip"] < 0.12 and 0.08 < r["marital_status"] < 0.12
    assert all(v == 0 for c, v in r.items() if c not in ("zip", "marital_status"))
    # NULLs fall independently in the two columns
    both = engine.scalar("SELECT avg((zip IS NULL AND marital_status IS NULL)::INT) FROM n")
    assert 0.005 < both < 0.02
    # the non-NULL cells are those of the table without NULLs
    synthetic_census(engine, "f", rows=20_000, seed=5)
    assert engine.scalar("SELECT count(*) FROM n JOIN f USING (person_id) "
                         "WHERE n.zip <> f.zip OR n.marital_status <> f.marital_status "
                         "OR n.income <> f.income") == 0


def test_null_rate_one(engine):
    synthetic_census(engine, "n", rows=100, null_rate=1.0)
    assert engine.scalar("SELECT count(zip) + count(marital_status) FROM n") == 0


@pytest.mark.parametrize("rows", [0, -5, 1.5, "10", None, True])
def test_bad_rows(engine, rows):
    with pytest.raises(InputError, match="rows"):
        synthetic_census(engine, rows=rows)


@pytest.mark.parametrize("seed", [1.0, "42", None, 2**64])
def test_bad_seed(engine, seed):
    with pytest.raises(InputError, match="seed"):
        synthetic_census(engine, rows=10, seed=seed)


@pytest.mark.parametrize("null_rate", [-0.1, 1.5, float("nan"), "0.1"])
def test_bad_null_rate(engine, null_rate):
    with pytest.raises(InputError, match="null_rate"):
        synthetic_census(engine, rows=10, null_rate=null_rate)


def test_numpy_ints_and_extreme_seeds(engine):
    synthetic_census(engine, "a", rows=np.int64(50), seed=np.int32(9))
    synthetic_census(engine, "b", rows=50, seed=9)
    assert fingerprint(engine, "a") == fingerprint(engine, "b")
    for seed in (0, -1, 2**63 - 1, -(2**63)):
        synthetic_census(engine, "x", rows=10, seed=seed)
        assert engine.scalar("SELECT count(*) FROM x") == 10


def test_generated_by_one_statement(engine):
    engine.log.clear()
    synthetic_census(engine, "c", rows=100)
    creates = [r for r in engine.log if r.sql.lstrip().upper().startswith("CREATE")]
    assert len(creates) == 1 and creates[0].template == "synthetic_census.sql.j2"
    assert "range(100)" in creates[0].sql


# -- Adult ------------------------------------------------------------------------------------------

def test_load_adult(engine):
    need_shared()
    assert load_adult(engine) == "adult"
    assert engine.scalar("SELECT count(*) FROM adult") == 30_162
    cols = [c for c, _ in engine.columns("adult")]
    assert cols == ["sex", "age", "race", "marital-status", "education", "native-country", "workclass",
                    "occupation", "salary-class"]
    r = engine.fetch('SELECT count(DISTINCT "native-country") AS nc, count(DISTINCT age) AS ages, '
                     'min(age) AS lo, max(age) AS hi FROM adult')[0]
    assert r == {"nc": 41, "ages": 72, "lo": 17, "hi": 90}


def test_load_adult_subset_and_paths(engine):
    datasets = need_shared()
    assert load_adult(engine, "sub", subset=True) == "sub"
    assert engine.scalar("SELECT count(*) FROM sub") == 3_016
    assert len(engine.columns("sub")) == 9
    # the folder or the file itself may be given
    load_adult(engine, "a2", path=datasets / "adult")
    load_adult(engine, "a3", path=str(datasets / "adult" / "adult_subset.csv"))
    assert engine.scalar("SELECT count(*) FROM a2") == 30_162
    assert engine.scalar("SELECT count(*) FROM a3") == 3_016
    # the subset is a subset of the full table
    assert engine.scalar("SELECT count(*) FROM (SELECT * FROM sub EXCEPT SELECT * FROM a2)") == 0


def test_load_adult_env_var(engine, monkeypatch):
    datasets = need_shared()
    monkeypatch.setenv("ANONYDB_SHARED", str(datasets.parent))
    load_adult(engine, "e", subset=True)
    assert engine.scalar("SELECT count(*) FROM e") == 3_016


def test_load_adult_missing(engine, tmp_path, monkeypatch):
    missing = tmp_path / "nowhere"
    with pytest.raises(InputError, match="nowhere"):
        load_adult(engine, path=missing)
    with pytest.raises(InputError, match="adult.csv"):
        load_adult(engine, path=tmp_path)  # the folder exists, the file does not
    with pytest.raises(InputError, match="gone.csv"):
        load_adult(engine, path=tmp_path / "gone.csv")
    monkeypatch.setenv("ANONYDB_SHARED", str(missing))
    with pytest.raises(InputError, match="nowhere"):
        load_adult(engine)
    with pytest.raises(InputError, match="nowhere"):
        adult_hierarchy_paths()
    assert not engine.exists("adult")


def test_adult_hierarchy_paths():
    datasets = need_shared()
    paths = adult_hierarchy_paths()
    assert set(paths) == {"age", "education", "marital-status", "native-country", "occupation", "race",
                          "salary-class", "sex", "workclass"}
    assert all(p.is_file() and p.parent == datasets / "adult" for p in paths.values())
    assert paths["marital-status"].name == "adult_hierarchy_marital-status.csv"
    assert adult_hierarchy_paths(datasets / "adult") == paths
