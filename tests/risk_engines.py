"""Risk on every engine: the shared cases of test_risk_postgres.py and test_risk_spark.py. A table
made by DuckDB (key variables with NULLs, a weight, a household, a person with several records)
and handed to the engine; :func:`anonydb.risk.assess.assess` gives the same estimates there as on
DuckDB: the summary (exact fractions), population uniqueness, individual and household risk and
SUDA2."""

from __future__ import annotations

import random

from anonydb.risk.assess import assess

from conftest import make_table, same_values


def people(duck, name: str = "rk_people", persons: int = 80, seed: int = 49) -> tuple[str, str]:
    """(sample, population): persons with 1-3 records, age band, sex and region constant per person,
    a weight and a household per person; the population holds the sample and more."""
    rnd = random.Random(seed)
    rows, pop = [], []
    for p in range(persons):
        band, sex, region = rnd.choice(["20-29", "30-39", "40-49", None]), rnd.choice("MF"), rnd.choice("NSEW")
        w, hh = rnd.choice([5, 10, 20]), f"h{p // 2:03d}"
        for _ in range(rnd.randint(1, 3)):
            rows.append((f"p{p:03d}", band, sex, region, w, hh))
        pop.extend([(f"q{p:03d}{i}", band, sex, region, w, hh) for i in range(rnd.randint(0, 4))])
    cols = ["pid", "band", "sex", "region", "w", "hh"]
    make_table(duck, name, cols, rows)
    make_table(duck, f"{name}_pop", cols, rows + pop)
    return name, f"{name}_pop"


def _norm(d: dict) -> dict:
    d = dict(d)
    d.pop("seconds", None)
    return d


CASES = [dict(), dict(threshold=0.34, fraction=0.05), dict(population="{pop}"), dict(person="pid", fraction=0.3),
         dict(weights="w", household="hh"), dict(suda=True, suda_max_size=2)]


def same_risk(duck, other, tables: tuple[str, str], cases=CASES) -> None:
    table, pop = tables
    for case in cases:
        kw = {k: (v.format(pop=pop) if isinstance(v, str) else v) for k, v in case.items()}
        keys = ["band", "sex", "region"]
        d = assess(table, keys, engine=duck, **kw).to_dict()
        o = assess(table, keys, engine=other, **kw).to_dict()
        assert same_values(_norm(o), _norm(d)), case
