"""``anonydb demo``: the main job on an embedded default.

An in-memory DuckDB, a seeded synthetic census table generated inside it, then: check the raw
table (it fails), generalize it with hierarchies along a ladder of ever coarser level vectors,
one SQL statement each, until k-anonymity, l-diversity and t-closeness all hold, and print the
report of the first release that passes, holding the QIs and the sensitive attribute only (every
other column has no role and is not published). (The anonymizers of later releases search this
space properly; the demo shows the building blocks.) Long labels print abbreviated.
"""

from __future__ import annotations

import time

from ..checker import check
from ..datasets import CENSUS_IDENTIFIERS, CENSUS_QIS, EDUCATION, MARITAL_STATUS, RACE, SEX, WORKCLASS, synthetic_census
from ..engines.duckdb import DuckDBEngine
from ..generalize import generalize
from ..hierarchy import Hierarchy

#: level vectors over (age, sex, race, marital_status, education, workclass, zip, hours_per_week)
LADDER = [
    (1, 0, 0, 0, 1, 0, 2, 1),
    (1, 0, 1, 0, 1, 1, 3, 1),
    (2, 0, 1, 1, 1, 1, 3, 2),
    (2, 0, 1, 1, 2, 1, 4, 2),
    (3, 0, 1, 1, 2, 1, 4, 2),
    (3, 1, 1, 1, 2, 1, 5, 3),
    (4, 1, 1, 1, 3, 1, 5, 3),
]


def census_hierarchies() -> dict[str, Hierarchy]:
    """Hierarchies for the synthetic census QIs (built in code: the demo needs no files)."""
    edu_group = {
        "Preschool": "Primary", "1st-4th": "Primary", "5th-6th": "Primary", "7th-8th": "Primary",
        "9th": "Secondary", "10th": "Secondary", "11th": "Secondary", "12th": "Secondary", "HS-grad": "Secondary",
        "Some-college": "Undergraduate", "Assoc-voc": "Undergraduate", "Assoc-acdm": "Undergraduate",
        "Bachelors": "Undergraduate", "Masters": "Graduate", "Prof-school": "Graduate", "Doctorate": "Graduate",
    }
    higher = {"Primary": "Lower", "Secondary": "Lower", "Undergraduate": "Higher", "Graduate": "Higher"}
    return {
        "age": Hierarchy.intervals(widths=[5, 10, 20, 40], origin=0),
        "sex": Hierarchy.from_mapping({v: ("*",) for v in SEX}),
        "race": Hierarchy.from_mapping({v: ("*",) for v in RACE}),
        "marital_status": Hierarchy.from_mapping({v: ("*",) for v in MARITAL_STATUS}),
        "education": Hierarchy.from_mapping({v: (edu_group[v], higher[edu_group[v]], "*") for v in EDUCATION}),
        "workclass": Hierarchy.from_mapping({v: ("*",) for v in WORKCLASS}),
        "zip": Hierarchy.masking(length=5),
        "hours_per_week": Hierarchy.intervals(widths=[10, 20, 100], origin=0),
    }


def run_demo(rows: int = 100_000, seed: int = 42, k: int = 5, l: float = 3, t: float = 0.3) -> int:
    engine = DuckDBEngine()
    try:
        t0 = time.perf_counter()
        synthetic_census(engine, "census", rows=rows, seed=seed)
        print(f"generated table census: {rows} synthetic persons (seed {seed}) in {time.perf_counter() - t0:.2f} s")
        params = dict(k=k, l=l, t=t)
        raw = check("census", CENSUS_QIS, "occupation", engine=engine, max_groups=3, **params)
        print("\n== the raw table ==")
        print(raw.format(max_groups=3))
        hier = census_hierarchies()
        for vector in LADDER:
            levels = dict(zip(CENSUS_QIS, vector))
            keep = CENSUS_QIS + ["occupation"]  # nothing without a role is published
            t1 = time.perf_counter()
            generalize(engine, "census", levels, hier, out="release", keep=keep, replace=True)
            report = check("release", CENSUS_QIS, "occupation", engine=engine, max_groups=3, **params)
            took = time.perf_counter() - t1
            summary = ", ".join(f"{v.model.split(' ')[0]} {'ok' if v.holds else 'fails'}" for v in report.verdicts)
            print(f"\nlevels {levels}: {report.groups} groups; {summary} ({took:.2f} s)")
            if report.holds:
                print("\n== the release (QIs and occupation; no other column is published) ==")
                print(report.format(max_groups=3))
                sample = engine.fetch("SELECT * FROM release ORDER BY age, zip, occupation LIMIT 5")
                print("\nfirst rows of table release:")
                for r in sample:
                    print("  ", _short_row(r))
                break
        else:
            print("\nno level vector on the ladder meets every model; try smaller k, l or a larger t")
            return 1
        from ..methods import anonymize

        print("\n== Mondrian: the same models, cut to fit the data (anonymize, verified before it is written) ==")
        result = anonymize("census", CENSUS_QIS, "occupation", out="mondrian_release", engine=engine,
                           identifiers=list(CENSUS_IDENTIFIERS), categorical="order", **params)
        print(result.format())
        sample = engine.fetch("SELECT eq_class, age, sex, zip, education, occupation FROM mondrian_release LIMIT 3")
        print("first rows of table mondrian_release:")
        for r in sample:
            print("  ", _short_row(r))
        return 0
    finally:
        engine.close()


def short(value: object, width: int = 40) -> str:
    """A value as printed: a long label (a value set of ~130 zip codes) cut to ``width`` characters
    with the number of values it lists."""
    text = str(value)
    if len(text) <= width:
        return text
    n = text.count(", ") + 1 if text.startswith("{") else None
    return text[:width - 5].rstrip(", ") + " ..." + (f"}} ({n} values)" if n else "")


def _short_row(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {short(v)}" for k, v in row.items()) + "}"
