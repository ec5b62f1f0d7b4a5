"""Datasets for demos, tests and benchmarks.

:func:`synthetic_census` builds a seeded, census-like table of any size inside the database with one
``CREATE TABLE AS`` over ``range(rows)`` (template ``synthetic_census.sql.j2``). Each random draw is
``hash(xor(hash(i), key)) >> 11`` scaled to [0, 1): DuckDB's ``hash`` of the row index ``i``, re-mixed
with a 64-bit key per (seed, draw) made by splitmix64 here. A given ``(rows, seed, null_rate)``
therefore yields the same table (same rows, same order) on every run with the same DuckDB version;
DuckDB does not promise ``hash`` stable across releases. Categorical values use the UCI Adult domains,
so the Adult hierarchies apply (:data:`CENSUS_ADULT_HIERARCHIES`).

:func:`load_adult` loads the Adult extract (ARX version, 30,162 records) from ``../shared/datasets``.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

from .engines.base import Engine
from .errors import InputError
from .sqlgen import literal

# -- domains (Adult value names) -------------------------------------------------------------------

SEX = ["Male", "Female"]
RACE = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
MARITAL_STATUS = ["Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
                  "Married-spouse-absent", "Married-AF-spouse"]
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
             "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
WORKCLASS = ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
             "Without-pay"]
OCCUPATION = ["Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "Other-service",
              "Machine-op-inspct", "Transport-moving", "Handlers-cleaners", "Farming-fishing", "Tech-support",
              "Protective-serv", "Priv-house-serv", "Armed-Forces"]

#: Column roles of the synthetic census table.
CENSUS_IDENTIFIERS = ["person_id", "name"]
CENSUS_QIS = ["age", "sex", "race", "marital_status", "education", "workclass", "zip", "hours_per_week"]
CENSUS_SENSITIVE = ["occupation", "income"]
CENSUS_INSENSITIVE = ["household_size"]
CENSUS_COLUMNS = CENSUS_IDENTIFIERS + CENSUS_QIS + CENSUS_SENSITIVE + CENSUS_INSENSITIVE
#: Census column -> the Adult attribute whose hierarchy (:func:`adult_hierarchy_paths`) covers it.
CENSUS_ADULT_HIERARCHIES = {"age": "age", "sex": "sex", "race": "race", "marital_status": "marital-status",
                            "education": "education", "workclass": "workclass", "occupation": "occupation"}

# -- the generative model (weights need not sum to 1; they are normalized) ------------------------

# age: piecewise-linear inverse CDF through the Adult quantiles (right-skewed, 17..90)
_AGE_KNOTS = [(0.0, 17.0), (0.10, 22.0), (0.25, 28.0), (0.50, 37.0), (0.75, 47.0), (0.90, 57.0),
              (0.97, 66.0), (0.995, 77.0), (1.0, 91.0)]
# age bands: 0 = 17-21, 1 = 22-29, 2 = 30-44, 3 = 45-64, 4 = 65+
_AGE_BAND_STARTS = [22, 30, 45, 65]

_SEX_W = [0.66, 0.34]

# zip: 3-digit prefix (Indiana-like 460..479) -> (weight, number of distinct 2-digit suffixes);
# suffixes are skewed towards the low (central) codes of each prefix.
_ZIP_PREFIXES = {
    460: (8, 25), 461: (5, 20), 462: (20, 50), 463: (6, 30), 464: (5, 25), 465: (6, 30), 466: (4, 20),
    467: (5, 25), 468: (6, 30), 469: (3, 15), 470: (3, 20), 471: (4, 25), 472: (2, 15), 473: (3, 20),
    474: (3, 20), 475: (2, 15), 476: (4, 25), 477: (4, 20), 478: (3, 20), 479: (5, 30),
}
_URBAN_PREFIXES = [462, 463, 464]
_RACE_W = {"urban": [0.70, 0.22, 0.05, 0.006, 0.024], "rural": [0.91, 0.05, 0.02, 0.01, 0.01]}

_MARITAL_W = {  # by age band, in MARITAL_STATUS order
    0: [0.05, 0.93, 0.005, 0.006, 0.001, 0.007, 0.001],
    1: [0.34, 0.55, 0.06, 0.025, 0.002, 0.015, 0.002],
    2: [0.55, 0.20, 0.17, 0.045, 0.01, 0.02, 0.001],
    3: [0.64, 0.07, 0.19, 0.03, 0.055, 0.014, 0.0005],
    4: [0.55, 0.04, 0.09, 0.01, 0.30, 0.01, 0.0],
}
_EDUCATION_W = {  # by age band, in EDUCATION order
    0: [0.001, 0.002, 0.004, 0.01, 0.03, 0.08, 0.14, 0.07, 0.33, 0.30, 0.015, 0.015, 0.003, 0, 0, 0],
    1: [0.001, 0.003, 0.007, 0.01, 0.012, 0.02, 0.03, 0.015, 0.30, 0.26, 0.045, 0.04, 0.21, 0.035, 0.008, 0.004],
    2: [0.0015, 0.004, 0.009, 0.013, 0.013, 0.022, 0.026, 0.011, 0.32, 0.21, 0.05, 0.037, 0.18, 0.062, 0.02, 0.015],
    3: [0.002, 0.007, 0.012, 0.025, 0.017, 0.025, 0.024, 0.01, 0.33, 0.19, 0.045, 0.03, 0.16, 0.07, 0.025, 0.02],
    4: [0.004, 0.015, 0.025, 0.07, 0.03, 0.035, 0.025, 0.01, 0.34, 0.15, 0.03, 0.02, 0.12, 0.06, 0.03, 0.02],
}
_WORKCLASS_W = {  # by age band, in WORKCLASS order
    0: [0.88, 0.02, 0.005, 0.01, 0.03, 0.05, 0.005],
    1: [0.80, 0.04, 0.015, 0.025, 0.05, 0.065, 0.0005],
    2: [0.73, 0.08, 0.035, 0.035, 0.075, 0.045, 0.0003],
    3: [0.66, 0.11, 0.055, 0.04, 0.09, 0.045, 0.0003],
    4: [0.55, 0.25, 0.08, 0.02, 0.05, 0.03, 0.02],
}
# hours per week by group: (probability of exactly 40, probability of long hours (uniform 60..99),
# mean and sd of the rest (about normal, clamped to 1..99))
_HOURS = {"young": (0.35, 0.003, 30.0, 12.0), "old": (0.30, 0.005, 28.0, 14.0), "self": (0.30, 0.04, 47.0, 15.0),
          "gov": (0.55, 0.008, 42.0, 9.0), "private": (0.50, 0.01, 41.0, 11.0)}
_HOURS_ROUND5 = 0.6  # share of the non-40 answers heaped on a multiple of 5

_EDU_GROUP = {e: "low" for e in EDUCATION[:8]}
_EDU_GROUP.update({"HS-grad": "hs", "Some-college": "some", "Assoc-voc": "some", "Assoc-acdm": "some",
                   "Bachelors": "ba", "Masters": "adv", "Prof-school": "adv", "Doctorate": "adv"})
_EDU_GROUPS = ["low", "hs", "some", "ba", "adv"]
# occupation = base weight x education-group factor x sex factor (OCCUPATION order)
_OCC_BASE = [0.134, 0.134, 0.132, 0.123, 0.119, 0.106, 0.065, 0.052, 0.045, 0.033, 0.030, 0.021, 0.005, 0.0003]
_OCC_EDU = {
    "low": [0.1, 1.6, 0.2, 0.4, 0.7, 2.5, 2.2, 1.8, 2.2, 2.5, 0.2, 0.5, 4.0, 0.5],
    "hs": [0.3, 1.6, 0.6, 1.2, 1.0, 1.3, 1.4, 1.4, 1.3, 1.1, 0.7, 1.1, 1.0, 1.2],
    "some": [0.8, 1.0, 1.0, 1.4, 1.1, 0.9, 0.6, 0.7, 0.6, 0.6, 1.6, 1.3, 0.4, 1.2],
    "ba": [2.5, 0.3, 1.9, 0.6, 1.2, 0.3, 0.15, 0.2, 0.15, 0.3, 1.0, 0.7, 0.1, 0.8],
    "adv": [4.5, 0.08, 1.8, 0.2, 0.5, 0.1, 0.05, 0.05, 0.05, 0.15, 0.4, 0.2, 0.05, 0.5],
}
_OCC_SEX = {
    "Male": [1.0, 1.4, 1.1, 0.4, 1.0, 0.7, 1.1, 1.35, 1.3, 1.3, 1.0, 1.3, 0.1, 1.4],
    "Female": [1.1, 0.15, 0.9, 2.4, 1.0, 1.7, 0.8, 0.12, 0.35, 0.2, 1.0, 0.3, 3.0, 0.1],
}
# income: log-normal; median at age 17, 40 h/week, by education; + age curve, hours, occupation,
# workclass and sex effects; noise sd; rounded to 1000 and clamped
_INCOME_BASE = [9000, 10000, 11000, 12000, 12500, 13000, 13000, 14000, 17000, 19000, 21000, 21500,
                27000, 31000, 40000, 38000]
_INCOME_AGE = (0.055, -0.0007)  # linear and quadratic coefficients on (age - 17)
_INCOME_HOURS = 0.85  # elasticity of income in hours/40
_INCOME_OCC = [0.2, 0.05, 0.25, -0.05, 0.05, -0.3, -0.05, 0.0, -0.2, -0.2, 0.1, 0.1, -0.45, 0.0]
_INCOME_WORKCLASS = [0.0, -0.05, 0.2, 0.08, 0.0, 0.0, -2.5]
_INCOME_FEMALE = -0.12
_INCOME_SD = 0.45
_INCOME_MIN, _INCOME_MAX = 1000, 300000

_HOUSEHOLD_W = {  # sizes 1..8 by marital status class
    "married": [0.0, 0.42, 0.22, 0.21, 0.10, 0.035, 0.01, 0.005],
    "never": [0.35, 0.22, 0.17, 0.13, 0.08, 0.03, 0.01, 0.01],
    "other": [0.50, 0.25, 0.13, 0.07, 0.03, 0.01, 0.005, 0.005],
}

_INT64 = 2**63
_MASK64 = 2**64 - 1
_N_SALTS = 19  # draws per row used by the template (u(1) .. u(19))


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _salt_keys(seed: int) -> list[int]:
    """64-bit keys, one per draw (index = salt; index 0 unused), derived from the seed."""
    s = _splitmix64(seed & _MASK64)
    return [_splitmix64(s ^ _splitmix64(salt)) for salt in range(_N_SALTS + 1)]


def _cum(weights: list[float]) -> list[tuple[int, float]]:
    """Inverse-CDF table [(code, cumulative upper bound)] over the codes (indexes) of positive weight,
    most probable first (a CASE then stops early for most rows); the last bound is 1."""
    total = float(sum(weights))
    order = sorted((i for i, w in enumerate(weights) if w > 0), key=lambda i: -weights[i])
    out, acc = [], 0.0
    for i in order:
        acc += weights[i]
        out.append((i, acc / total))
    out[-1] = (out[-1][0], 1.0)
    return out


_HOUR_GROUPS = ["young", "old", "self", "gov", "private"]
_MARITAL_CLASS = {"Married-civ-spouse": "married", "Married-AF-spouse": "married", "Never-married": "never"}
_HOUSEHOLD_CLASSES = ["married", "never", "other"]


def _census_context(rows: int, seed: int, null_rate: float) -> dict:
    """Template context: the model as integer codes (index into each domain list) and lookup lists."""
    prefixes = list(_ZIP_PREFIXES)
    occupation = {}
    for g, group in enumerate(_EDU_GROUPS):
        for x, sex in enumerate(SEX):
            w = [b * e * f for b, e, f in zip(_OCC_BASE, _OCC_EDU[group], _OCC_SEX[sex])]
            occupation[2 * g + x] = _cum(w)
    return {
        "rows": rows,
        "salt_keys": _salt_keys(seed),
        "null_rate": null_rate,
        "domains": {"sex": SEX, "race": RACE, "marital_status": MARITAL_STATUS, "education": EDUCATION,
                    "workclass": WORKCLASS, "occupation": OCCUPATION},
        "age_knots": _AGE_KNOTS,
        "age_band_starts": _AGE_BAND_STARTS,
        "sex": _cum(_SEX_W),
        "zip": _cum([_ZIP_PREFIXES[p][0] for p in prefixes]),
        "zip_base": [p * 100 for p in prefixes],
        "zip_nsuffix": [_ZIP_PREFIXES[p][1] for p in prefixes],
        "zip_urban": [int(p in _URBAN_PREFIXES) for p in prefixes],
        "race": {1: _cum(_RACE_W["urban"]), 0: _cum(_RACE_W["rural"])},
        "marital": {b: _cum(w) for b, w in _MARITAL_W.items()},
        "education": {b: _cum(w) for b, w in _EDUCATION_W.items()},
        "workclass": {b: _cum(w) for b, w in _WORKCLASS_W.items()},
        "wc_self": [WORKCLASS.index("Self-emp-not-inc"), WORKCLASS.index("Self-emp-inc")],
        "wc_gov": [WORKCLASS.index(w) for w in ("Federal-gov", "Local-gov", "State-gov")],
        "wc_without_pay": WORKCLASS.index("Without-pay"),
        "hours": [_HOURS[g] for g in _HOUR_GROUPS],
        "hours_round5": _HOURS_ROUND5,
        "edu_group": [_EDU_GROUPS.index(_EDU_GROUP[e]) for e in EDUCATION],
        "occupation": occupation,
        "income_base": [math.log(b) for b in _INCOME_BASE],
        "income_age": _INCOME_AGE,
        "income_hours": _INCOME_HOURS,
        "income_occ": _INCOME_OCC,
        "income_workclass": _INCOME_WORKCLASS,
        "income_female": _INCOME_FEMALE,
        "income_sd": _INCOME_SD,
        "income_min": _INCOME_MIN,
        "income_max": _INCOME_MAX,
        "marital_class": [_HOUSEHOLD_CLASSES.index(_MARITAL_CLASS.get(m, "other")) for m in MARITAL_STATUS],
        "household": {_HOUSEHOLD_CLASSES.index(k): _cum(w) for k, w in _HOUSEHOLD_W.items()},
    }


def _check_int(value, param: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{param} must be an integer, got {value!r}")
    return int(value)


def synthetic_census(engine: Engine, name: str = "census", rows: int = 10_000, seed: int = 42,
                     replace: bool = True, *, null_rate: float = 0.0) -> str:
    """Create table ``name`` of ``rows`` synthetic persons; return its name.

    Columns: identifiers ``person_id`` (1..rows), ``name``; quasi-identifiers ``age`` (17..90),
    ``sex``, ``race``, ``marital_status``, ``education``, ``workclass``, ``zip`` (5 digits,
    clustered by 3-digit prefix), ``hours_per_week`` (1..99); sensitive ``occupation``,
    ``income`` (multiples of 1000); insensitive ``household_size`` (1..8). Values are correlated
    (marital status and education with age, occupation with education and sex, income with
    education, age, hours, occupation, workclass and sex). With ``null_rate`` > 0 each ``zip`` and
    ``marital_status`` cell is NULL with that probability (independently); the other cells do not
    change. Deterministic for a given (rows, seed, null_rate) and DuckDB version; row i depends only
    on (i, seed). One statement, single-threaded: about 1 s per 10^6 rows.
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a non-empty table name, got {name!r}")
    rows = _check_int(rows, "rows")
    if rows < 1:
        raise InputError(f"rows must be >= 1, got {rows}")
    seed = _check_int(seed, "seed")
    if not -_INT64 <= seed < _INT64:
        raise InputError(f"seed must fit in a signed 64-bit integer, got {seed}")
    if isinstance(null_rate, bool) or not isinstance(null_rate, numbers.Real) or not 0.0 <= null_rate <= 1.0:
        raise InputError(f"null_rate must be a number in [0, 1], got {null_rate!r}")
    if not replace and engine.exists(name):
        raise InputError(f"table {name!r} already exists (pass replace=True to overwrite it)")
    select = engine.render("synthetic_census.sql.j2", **_census_context(rows, seed, float(null_rate)))
    engine.create_table_as(name, select, replace=bool(replace))
    return name


# -- visits: several records per person ------------------------------------------------------------

#: the diagnoses of :func:`synthetic_visits`, most frequent first
DIAGNOSES = ("flu", "cold", "asthma", "back pain", "diabetes", "hypertension", "migraine", "fracture")


def synthetic_visits(engine: Engine, persons: int = 20_000, seed: int = 7, replace: bool = True) -> tuple[str, str]:
    """Create the tables ``patients`` (patient_id, age 18..90, sex, zip3 100..139: one row a person)
    and ``visits`` (visit_id, patient_id, the patient's age, sex and zip3, visit_month 1..12,
    diagnosis): every patient has 1 to 15 visits, 8 on average, with a diagnosis drawn per visit
    (a patient keeps returning with the same one more often than not). The warehouse shape where
    row-level k-anonymity fails persons: a class of 10 visits may hold one patient. Deterministic
    for a given (persons, seed); integer arithmetic only (the same rows on every DuckDB version)."""
    persons, seed = _check_int(persons, "persons"), _check_int(seed, "seed")
    if persons < 1:
        raise InputError(f"persons must be >= 1, got {persons}")
    for t in ("patients", "visits"):
        if not replace and engine.exists(t):
            raise InputError(f"table {t!r} already exists (pass replace=True to overwrite it)")
    m = 2_147_483_647  # a multiplicative hash modulo the prime 2^31 - 1: h(x) = x * 48271^k mod m
    h = lambda x, salt: f"((({x}) * 48271 + {seed % 1000 + salt}) * 48271 % {m} * 16807 % {m})"  # noqa: E731
    patients = (f"SELECT CAST(i AS BIGINT) AS patient_id, CAST(18 + {h('i', 1)} % 73 AS INTEGER) AS age, "
                f"CASE WHEN {h('i', 2)} % 2 = 0 THEN 'F' ELSE 'M' END AS sex, "
                f"CAST(100 + {h('i', 3)} % 40 AS INTEGER) AS zip3 FROM range(1, {persons + 1}) AS r(i)")
    engine.create_table_as("patients", patients, replace=True)
    dx = ", ".join(f"'{d}'" for d in DIAGNOSES)
    visits = (f"SELECT CAST(row_number() OVER (ORDER BY p.patient_id, v) AS BIGINT) AS visit_id, p.patient_id, "
              f"p.age, p.sex, p.zip3, CAST(1 + {h('p.patient_id * 16 + v', 4)} % 12 AS INTEGER) AS visit_month, "
              f"list_value({dx})[1 + CASE WHEN {h('p.patient_id * 16 + v', 5)} % 3 > 0 "
              f"THEN {h('p.patient_id', 6)} % {len(DIAGNOSES)} ELSE {h('p.patient_id * 16 + v', 7)} % "
              f"{len(DIAGNOSES)} END] AS diagnosis "
              f"FROM patients AS p, range(CAST(1 + {h('p.patient_id', 8)} % 15 AS BIGINT)) AS r(v)")
    engine.create_table_as("visits", visits, replace=True)
    return "patients", "visits"


# -- Adult ----------------------------------------------------------------------------------------

ADULT_FILE = "adult.csv"
ADULT_SUBSET_FILE = "adult_subset.csv"


def _default_adult_dirs() -> list[Path]:
    """Where the Adult folder is looked for: ``$ANONYDB_SHARED/datasets/adult`` when that variable is
    set; else ``shared/datasets/adult`` beside the source checkout, then beside the current directory
    or one of its parents (for an installed package run from the checkout)."""
    tail = Path("datasets") / "adult"
    if os.environ.get("ANONYDB_SHARED"):
        return [Path(os.environ["ANONYDB_SHARED"]) / tail]
    out = [Path(__file__).resolve().parents[2] / "shared" / tail]
    cwd = Path.cwd().resolve()
    out += [d / "shared" / tail for d in (cwd, *cwd.parents)]
    return list(dict.fromkeys(out))


def adult_dir(path: str | Path | None = None) -> Path:
    """The folder holding the Adult files: ``path`` if given, else the first of
    :func:`_default_adult_dirs` that exists."""
    tried = [Path(path)] if path is not None else _default_adult_dirs()
    for p in tried:
        if p.is_dir():
            return p
    raise InputError(f"the Adult dataset folder does not exist (tried {', '.join(repr(str(p)) for p in tried)}); "
                     "give path=, or set ANONYDB_SHARED to the shared folder that holds datasets/adult")


def load_adult(engine: Engine, name: str = "adult", path: str | Path | None = None, subset: bool = False,
               *, replace: bool = True) -> str:
    """Create table ``name`` from the Adult CSV (``adult_subset.csv`` when ``subset``); return its name.

    ``path`` is the Adult folder or the CSV file itself (default: see :func:`adult_dir`). Columns as
    in the file: sex, age, race, marital-status, education, native-country, workclass, occupation,
    salary-class.
    """
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a non-empty table name, got {name!r}")
    if path is not None and (Path(path).is_file() or Path(path).suffix.lower() == ".csv"):
        file = Path(path)
        if not file.is_file():
            raise InputError(f"the Adult file {str(file)!r} does not exist")
    else:
        file = adult_dir(path) / (ADULT_SUBSET_FILE if subset else ADULT_FILE)
        if not file.is_file():
            raise InputError(f"the Adult file {str(file)!r} does not exist")
    if not replace and engine.exists(name):
        raise InputError(f"table {name!r} already exists (pass replace=True to overwrite it)")
    select = f"SELECT * FROM read_csv({literal(str(file))}, delim = ';', header = true)"
    engine.create_table_as(name, select, replace=bool(replace))
    return name


def adult_hierarchy_paths(path: str | Path | None = None) -> dict[str, Path]:
    """Attribute name (as in the Adult header, e.g. ``marital-status``) -> its ARX hierarchy CSV."""
    folder = adult_dir(path)
    prefix = "adult_hierarchy_"
    found = {f.name[len(prefix):-len(".csv")]: f for f in sorted(folder.glob(prefix + "*.csv"))}
    if not found:
        raise InputError(f"no {prefix}*.csv hierarchy files in {str(folder)!r}")
    return found
