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
from ..release.publish import row_order
from ..sqlgen import ident, literal

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
        order = row_order(engine)
        print("\n== generalize: a ladder of ever coarser level vectors (0 = as is), one SQL statement each ==")
        for vector in LADDER:
            levels = dict(zip(CENSUS_QIS, vector))
            keep = CENSUS_QIS + ["occupation"]  # nothing without a role is published
            t1 = time.perf_counter()
            # published in a secret order: a row's place says nothing of its source row (person_id)
            gen = generalize(engine, "census", levels, hier, keep=keep + ["person_id"])
            engine.execute(f"CREATE OR REPLACE TABLE release AS SELECT {', '.join(ident(c) for c in keep)} "
                           f"FROM ({gen.sql}) AS g ORDER BY md5(CAST(person_id AS VARCHAR) || {literal(order.key)})")
            report = check("release", CENSUS_QIS, "occupation", engine=engine, max_groups=3, **params)
            took = time.perf_counter() - t1
            summary = ", ".join(f"{v.model.split(' ')[0]} {'ok' if v.holds else 'fails'}" for v in report.verdicts)
            print(f"levels {format_levels(levels)}: {report.groups} groups ({took:.2f} s)\n    {summary}")
            if report.holds:
                print("\n== the release (QIs and occupation; no other column is published) ==")
                print(report.format(max_groups=3))
                sample = engine.fetch("SELECT * FROM release LIMIT 5")  # as published: no ORDER BY
                print("\nfirst rows of table release, as published (in a secret random order):")
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
        print("\nfirst rows of table mondrian_release, as stored (in its secret random order):")
        for r in sample:
            print("  ", _short_row(r))
        return 0
    finally:
        engine.close()


def format_levels(levels: dict[str, int]) -> str:
    """A level vector as printed: ``age=2 sex=0 ...``, every QI in the ladder's order (0 = as is)."""
    return " ".join(f"{name}={level}" for name, level in levels.items())


def short(value: object, width: int = 32) -> str:
    """A value as printed. A label longer than ``width`` characters is cut, never inside a value: a
    value set (``{a, b, c, ...}``, as Mondrian labels them) after the last whole value that fits,
    then the number of values left out (``{46225, 46227, 46228, +66 more}``; the first value is
    always shown whole); any other label after its last whole word that fits, then `` ...``."""
    text = str(value)
    if len(text) <= width:
        return text
    if text.startswith("{") and text.endswith("}"):
        values = text[1:-1].split(", ")

        def cut(shown: int) -> str:
            return "{" + ", ".join(values[:shown]) + f", +{len(values) - shown} more}}"

        shown = 1
        while shown + 1 < len(values) and len(cut(shown + 1)) <= width:
            shown += 1
        return cut(shown) if len(cut(shown)) < len(text) else text
    head = text[:width - 4]
    if text[width - 4] != " " and " " in head:  # the last word does not fit whole
        head = head[:head.rfind(" ")]
    return head.rstrip(" ,;") + " ..."


def _short_row(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {short(v)}" for k, v in row.items()) + "}"
