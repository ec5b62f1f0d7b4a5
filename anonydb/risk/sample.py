"""The sample-based risk summary [El Emam 2013, "Guide to the De-Identification of Personal Health
Information" ch. 8; ARX's ``RiskModelSampleSummary`` and ``RiskModelSampleUniqueness``], from the
class-size histogram: one GROUP BY in the database, everything else from a few hundred numbers.

A record's class is the set of records sharing its values on the keys (NULL is a value); f_j is
the size of class j in the sample (the table), F_j its size in the population table (the same key
columns, in the table's coding). With threshold t:

* prosecutor (the attacker knows the record is in the sample): a record's risk 1/f_j; records at
  risk = share of records with 1/f_j > t; highest 1/min f_j; lowest 1/max f_j; average
  (the success rate) = classes / n.
* journalist (the attacker holds the population): a record's risk 1/F_j; at risk, highest,
  lowest as above with F_j; average = max(classes / sum_j F_j, (1/n) sum_j f_j / F_j).
* marketer (re-identify as many as possible): (1/n) sum_j f_j / F_j.
* sample uniqueness: the share of records in classes of size 1.

Without a population table, ARX takes F_j = f_j: journalist equals prosecutor and marketer is
classes / n; the summary then says so (``population: None``, ``convention``).

Every comparison with t is exact (t as the fraction the user wrote: 1/f > t iff t_num * f < t_den),
and the averages are exact fractions of integers before they become floats.

With ``person`` (record owners), a unit is a person: f_j counts the distinct persons with a record
in class j, and a person's risk is that of its riskiest class (1/min f_j over its classes); the
averages are over persons (with one class per person, classes / persons as above). F_j counts the
population's distinct persons when the population has the person column, its records otherwise.
The class-size histogram of the population models counts persons per class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from ..engines.base import Engine
from ..errors import InputError
from ..models.base import as_fraction
from ..schema import validate_person
from ..sqlgen import ident

#: the bins of the per-record risk distribution: records with risk >= each bound (and < the previous)
RISK_BINS = (Fraction(1), Fraction(1, 2), Fraction(1, 5), Fraction(1, 10), Fraction(1, 20), Fraction(1, 100), Fraction(0))


@dataclass
class Histograms:
    """The counts everything sample-based is computed from.

    ``classes``: (f, F) -> number of classes with sample size f and population size F (F = f
    without a population); ``units``: (f, F) -> number of units (records, or persons with their
    riskiest class's sizes) whose risk comes from such a class."""

    classes: dict[tuple[int, int], int]
    units: dict[tuple[int, int], int]
    unit: str  # "records" or "persons"
    population: str | None = None
    notes: list[str] = field(default_factory=list)
    keys: list[str] | None = None  # the keys the classes are over, when they differ from those asked

    @property
    def n(self) -> int:
        return sum(self.units.values())

    def class_sizes(self) -> dict[int, int]:
        """Sample class size -> number of classes: the population models' input."""
        out: dict[int, int] = {}
        for (f, _), c in self.classes.items():
            out[f] = out.get(f, 0) + c
        return dict(sorted(out.items()))


def threshold_fraction(threshold: Any) -> Fraction:
    t = as_fraction(threshold, "the risk threshold")
    if not 0 < t <= 1:
        raise InputError(f"the risk threshold must lie in (0, 1], got {threshold}")
    return t


def need_columns(eng: Engine, table: str, columns: Iterable[str], label: str, what: str = "column") -> None:
    have = [c for c, _ in eng.columns(table)]
    for c in columns:
        if c not in have:
            raise InputError(f"{what} {c!r} not found in {label}; its columns are: {', '.join(have)}")


def histograms(eng: Engine, table: str, keys: list[str], *, population: str | None = None,
               person: str | None = None, label: str | None = None, population_label: str | None = None) -> Histograms:
    """The class and unit histograms of ``table`` over ``keys`` (one aggregate statement; with a
    population, its GROUP BY joined NULL-safely to the sample's classes)."""
    label = label or table
    if not keys:
        raise InputError("risk needs at least one quasi-identifier (key variable)")
    need_columns(eng, table, keys, label, "key variable")
    if person is not None:
        validate_person(eng, table, person, keys, None, label)
    k = ", ".join(ident(c) for c in keys)
    unit = "persons" if person else "records"
    if person:
        p = ident(person)
        base = (f"r AS (SELECT DISTINCT {k}, {p} AS _adb_p FROM {ident(table)}), "
                f"s AS (SELECT {k}, count(*) AS f FROM r GROUP BY {k})")
    else:
        base = f"s AS (SELECT {k}, count(*) AS f FROM {ident(table)} GROUP BY {k})"
    if population is not None:
        plabel = population_label or population
        need_columns(eng, population, keys, f"the population table {plabel}", "key variable")
        pcols = [c for c, _ in eng.columns(population)]
        pcount = f"count(DISTINCT {ident(person)})" if person and person in pcols else "count(*)"
        on = " AND ".join(f"c.{ident(c)} IS NOT DISTINCT FROM q.{ident(c)}" for c in keys)
        base += (f", q AS (SELECT {k}, {pcount} AS pf FROM {ident(population)} GROUP BY {k}), "
                 f"c AS (SELECT c.*, coalesce(q.pf, 0) AS pf FROM s AS c LEFT JOIN q ON {on})")
    else:
        base += ", c AS (SELECT s.*, f AS pf FROM s)"
    classes = {(int(f), int(pf)): int(n) for f, pf, n in
               eng.fetch_rows(f"WITH {base} SELECT f, pf, count(*) FROM c GROUP BY f, pf")[1]}
    h = Histograms(classes, {}, unit, population)
    if population is not None:
        short = sum(n for (f, pf), n in classes.items() if pf < f)
        if short:
            raise InputError(f"the population table {population_label or population} holds fewer records than "
                             f"{label} in {short} of its classes: the population must contain the sample, in the "
                             f"same coding of {', '.join(keys)}")
    if person:
        on = " AND ".join(f"r.{ident(c)} IS NOT DISTINCT FROM c.{ident(c)}" for c in keys)
        h.units = {(int(f), int(pf)): int(n) for f, pf, n in eng.fetch_rows(
            f"WITH {base}, u AS (SELECT r._adb_p, min(c.f) AS f, min(c.pf) AS pf FROM r JOIN c ON {on} "
            f"GROUP BY r._adb_p) SELECT f, pf, count(*) FROM u GROUP BY f, pf")[1]}
    else:
        h.units = {(f, pf): f * n for (f, pf), n in classes.items()}
    return h


def _summary(units: dict[tuple[int, int], int], t: Fraction, which: int) -> dict[str, Any]:
    """Records at risk, highest, lowest over the units' sizes (``which``: 0 sample, 1 population)."""
    n = sum(units.values())
    sizes = [key[which] for key in units]
    at_risk = sum(c for key, c in units.items() if t.numerator * key[which] < t.denominator)
    return {"records_at_risk": Fraction(at_risk, n), "highest": Fraction(1, min(sizes)),
            "lowest": Fraction(1, max(sizes))}


def summary(h: Histograms, threshold: Any = 0.2) -> dict[str, Any]:
    """The sample-based summary of :class:`Histograms` ``h`` (exact fractions; :func:`as_floats`
    turns them into numbers for JSON)."""
    t = threshold_fraction(threshold)
    n = h.n
    if n == 0:
        zero = {"records_at_risk": Fraction(0), "highest": Fraction(0), "lowest": Fraction(0), "average": Fraction(0)}
        return {"unit": h.unit, "n": 0, "classes": 0, "threshold": t, "prosecutor": dict(zero),
                "journalist": dict(zero), "marketer": Fraction(0), "sample_uniqueness": Fraction(0),
                "population": h.population, "convention": None}
    classes = sum(h.classes.values())
    prosecutor = _summary(h.units, t, 0)
    prosecutor["average"] = sum((Fraction(c, f) for (f, _), c in h.units.items()), Fraction(0)) / n
    marketer = sum((Fraction(c, pf) for (_, pf), c in h.units.items()), Fraction(0)) / n
    journalist = _summary(h.units, t, 1)
    total_pf = sum(pf * c for (_, pf), c in h.classes.items())
    journalist["average"] = max(Fraction(classes, total_pf), marketer)
    uniques = sum(c for (f, _), c in h.units.items() if f == 1)
    convention = None if h.population else ("no population table: journalist and marketer risk take the sample "
                                            "as the population (ARX's convention), so journalist = prosecutor "
                                            "and marketer = classes / n")
    return {"unit": h.unit, "n": n, "classes": classes, "threshold": t, "prosecutor": prosecutor,
            "journalist": journalist, "marketer": marketer, "sample_uniqueness": Fraction(uniques, n),
            "population": h.population, "convention": convention}


def distribution(h: Histograms, which: int = 0) -> list[dict[str, Any]]:
    """Units per risk bin (risk 1/f, or 1/F with ``which`` = 1): [{risk_at_least, records}]."""
    out = []
    for i, b in enumerate(RISK_BINS):
        hi = RISK_BINS[i - 1] if i else None
        c = sum(n for key, n in h.units.items()
                if Fraction(1, key[which]) >= b and (hi is None or Fraction(1, key[which]) < hi))
        out.append({"risk_at_least": float(b), "records": c})
    return out


def as_floats(x: Any) -> Any:
    """Fractions (nested in dicts and lists) as floats, for JSON."""
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, dict):
        return {k: as_floats(v) for k, v in x.items()}
    if isinstance(x, list):
        return [as_floats(v) for v in x]
    return x


__all__ = ["Histograms", "RISK_BINS", "as_floats", "distribution", "histograms", "need_columns", "summary",
           "threshold_fraction"]
