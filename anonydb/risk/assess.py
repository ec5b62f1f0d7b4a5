"""A table's re-identification risk, every estimator at once, and the limits a release may require.

:func:`assess` reads the table once for the class histograms (:mod:`.sample`), solves the
population models from the class-size histogram (:mod:`.population`), and, when asked, adds
sdcMicro's individual and household risk under sampling weights (:mod:`.individual`) and SUDA2's
special uniques (:mod:`.suda`). The keys default to every column but the sensitive one and the
columns with another role (person, weights, household, a release's group number).

:class:`Limits` are the ``risk:`` block of a release spec: each ``max_*`` bound is compared
exactly where the quantity is a ratio of counts (prosecutor, journalist, marketer, records at
risk, sample uniqueness) and as a number where it is an estimate (population uniqueness, global
risk). :func:`exceeded` lists the bounds a report breaks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable, Mapping

from ..engines import connect
from ..engines.base import Engine
from ..errors import InputError, option
from ..models.base import as_fraction
from ..schema import split_list
from ..sources import accepts_frames, open_source
from ..sqlgen import ident
from .individual import individual_risk
from .sample import Histograms, as_floats, distribution, histograms, need_columns, summary, threshold_fraction

#: columns that number a release's groups: never a key of their own (they repeat what the keys say,
#: or, in a QIT, refine it past what an attacker can match)
GROUP_COLUMNS = ("group_id", "bucket_id")


@dataclass
class RiskReport:
    table: str
    keys: list[str]
    unit: str
    sample: dict[str, Any]
    distribution: list[dict[str, Any]]
    population: dict[str, Any] | None = None
    individual: dict[str, Any] | None = None
    suda: dict[str, Any] | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return as_floats({"table": self.table, "keys": list(self.keys), "unit": self.unit, "sample": self.sample,
                          "distribution": self.distribution, "population_uniqueness": self.population,
                          "individual": self.individual, "suda": self.suda, "seconds": round(self.seconds, 3),
                          "notes": list(self.notes)})

    def _repr_html_(self) -> str:
        """The risk summary in a notebook: the report page's risk section."""
        from ..htmlparts import risk_section

        return f"<div class=\"anonydb-risk\">{risk_section(self.to_dict())}</div>"

    def format(self) -> str:
        s = self.sample
        u = "records" if self.unit == "records" else "persons"
        lines = [f"risk of {self.table} over {', '.join(self.keys)}: {s['n']} {u}, {s['classes']} classes, "
                 f"threshold {float(s['threshold']):g}"]
        for who in ("prosecutor", "journalist"):
            r = s[who]
            lines.append(f"  {who:<10}: {u} at risk {float(r['records_at_risk']):.4f}, highest {float(r['highest']):.4f}, "
                         f"lowest {float(r['lowest']):.4f}, average {float(r['average']):.4f}")
        lines.append(f"  {'marketer':<10}: {float(s['marketer']):.4f}")
        lines.append(f"  sample uniqueness: {float(s['sample_uniqueness']):.4f}")
        if s.get("convention"):
            lines.append(f"  ({s['convention']})")
        p = self.population
        if p:
            est = ", ".join(f"{m} {p[m]:.4f}" if p.get(m) is not None else f"{m} n/a" for m in ("zayatz", "pitman", "snb"))
            lines.append(f"  population uniqueness (N = {p['population_size']}, f = {p['sampling_fraction']:.4g}): "
                         f"{est}; Dankar's rule: {p['dankar']:.4f} ({p['dankar_model']})")
        i = self.individual
        if i:
            lines.append(f"  individual risk{' (weights ' + i['weights'] + ')' if i.get('weights') else ''}: max "
                         f"{i['individual']['max']:.4f}, mean {i['individual']['mean']:.4f}, expected "
                         f"re-identifications {i['global']['expected_reidentifications']:.2f} "
                         f"({i['global']['share']:.4%}), {i['individual']['higher_than_main_part']} {u} at higher "
                         f"risk than the main part")
            if i.get("household"):
                hh = i["household"]
                lines.append(f"  household risk: expected re-identifications {hh['expected_reidentifications']:.2f} "
                             f"({hh['share']:.4%}), max {hh['max']:.4f}")
        if self.suda:
            d = self.suda
            msus = ", ".join(f"size {k}: {v}" for k, v in sorted(d["msus"].items()))
            contrib = ", ".join(f"{k} {v:.1f}%" for k, v in sorted(d["contribution"].items(), key=lambda kv: -kv[1]))
            lines.append(f"  SUDA2 (M = {d['max_size']}): {d['records_with_msu']} {u} with an MSU; MSUs {msus or 'none'}; "
                         f"contribution {contrib or 'none'}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def default_keys(eng: Engine, table: str, qi: Iterable[str] | str | None, exclude: Iterable[str]) -> list[str]:
    """The given keys, or every column of ``table`` but ``exclude`` and a release's group numbers."""
    keys = split_list(qi, "quasi-identifiers")
    if keys:
        return keys
    skip = {c for c in exclude if c} | set(GROUP_COLUMNS)
    return [c for c, _ in eng.columns(table) if c not in skip]


@accepts_frames("name")
def assess(table: str, qi: Iterable[str] | str | None = None, *, engine: Engine | Any = None,
           sensitive: str | None = None, threshold: Any = 0.2, population: str | None = None,
           population_size: int | None = None, fraction: float | None = None, region: str | None = None,
           weights: str | None = None, household: str | None = None, person: str | None = None,
           suda: bool = False, suda_max_size: int | None = None, exclude: Iterable[str] = (),
           name: str | None = None, hierarchies: Mapping[str, Any] | None = None) -> RiskReport:
    """Every risk estimate of ``table`` (a table or a CSV/Parquet file) over ``qi`` (default: every
    column but ``sensitive``, ``person``, ``weights``, ``household``, ``exclude`` and a release's
    group numbers). ``population``: a table in the same coding (journalist and marketer risk, and
    N); ``population_size`` / ``fraction`` / ``region``: N for the population models (at most one).
    ``weights``, ``household``: sdcMicro's individual and household risk. ``suda``: SUDA2 (with
    ``suda_max_size`` = M). ``name``: what the report calls the table.

    A population that lacks some of the keys (a raw population beside a generalized release) is
    mapped onto the release's classes as delta-presence maps its public table
    (:func:`anonydb.presence.map_public`: Mondrian's ranges by their bounds, hierarchy labels
    through ``hierarchies``, value sets, ``*``), over the keys it holds; the summary then reads
    those classes."""
    eng = connect(engine)
    t0 = time.perf_counter()
    threshold_fraction(threshold)
    given = [x for x in (population_size, fraction, region) if x is not None]
    if len(given) > 1:
        raise InputError("give at most one of the population size, the sampling fraction and the region")
    label = name or str(table)
    with eng.scratch("risk") as s:
        rel = open_source(eng, table, scratch=s)
        pop = open_source(eng, population, scratch=s) if population is not None else None
        roles = {"sensitive": sensitive, "person": person, "weights": weights, "household": household}
        need_columns(eng, rel, [c for c in roles.values() if c], label)
        keys = default_keys(eng, rel, qi, [*roles.values(), *exclude])
        for role, col in roles.items():
            if col and col in keys:
                raise InputError(f"{col!r} is given both as a key variable and as the {role} column")
        individual = None
        if (weights or household) and pop is None and person is None:  # its GROUP BY gives the histogram
            individual = individual_risk(eng, rel, keys, weights=weights, household=household, class_sizes=True)
            sizes = individual.pop("class_sizes")
            h = Histograms({(f, f): c for f, c in sizes.items()}, {(f, f): f * c for f, c in sizes.items()}, "records")
        elif pop is not None and not set(keys) <= {c for c, _ in eng.columns(pop)}:
            h = mapped_histograms(eng, s, rel, pop, keys, person=person, hierarchies=hierarchies, label=label,
                                  population_label=str(population))
            keys = h.keys
        else:
            h = histograms(eng, rel, keys, population=pop, person=person, label=label, population_label=population)
        n = h.n
        if not n:  # every risk would read 0: refused, as check and anonymize refuse an empty source
            raise InputError(f"{label} is empty: there is no risk to assess")
        rep = RiskReport(label, keys, h.unit, summary(h, threshold), distribution(h), notes=list(h.notes))
        if given or pop is not None:
            from .population import population_size as resolve_n, uniqueness

            sizes = h.class_sizes()
            pairs = sum(j * c for j, c in sizes.items())  # > n when a person has records in several classes
            if given:
                big_n = resolve_n(n, size=population_size, fraction=fraction, region=region)
                if fraction is not None and pairs != n:  # the models' units are the (person, class) pairs
                    big_n = resolve_n(pairs, fraction=fraction)
            else:
                big_n = int(eng.scalar(f"SELECT count(DISTINCT {ident(person)}) FROM {ident(pop)}" if person and person in
                                       dict(eng.columns(pop)) else f"SELECT count(*) FROM {ident(pop)}"))
            if pairs != n:
                rep.notes.append(f"population uniqueness counts each person once in each class it has records in: "
                                 f"{pairs} (person, class) pairs of {n} persons")
            if big_n >= pairs:
                rep.population = uniqueness(sizes, big_n)
            else:
                rep.notes.append(f"population uniqueness not computed: the population of {big_n} persons is smaller "
                                 f"than the {pairs} (person, class) pairs the classes hold; give the sampling "
                                 f"fraction ({option('fraction')}) instead")
        else:
            rep.notes.append("population uniqueness needs the population's size: give --population-size, "
                             "--fraction, --region or --population")
        if individual is not None:
            rep.individual = individual
        elif weights or household:
            rep.individual = individual_risk(eng, rel, keys, weights=weights, household=household, person=person)
        if suda:
            from .suda import suda2

            rep.suda = suda2(eng, rel, keys, max_size=suda_max_size, person=person)
    rep.seconds = time.perf_counter() - t0
    return rep


def mapped_histograms(eng: Engine, s: Any, rel: str, pop: str, keys: list[str], *, person: str | None,
                      hierarchies: Mapping[str, Any] | None, label: str, population_label: str) -> Any:
    """The histograms of ``rel``'s classes with F_j the population rows each class covers, the
    population mapped onto the classes over the keys it holds (one pass of delta-presence's map)."""
    from ..presence import map_public

    pcols = {c for c, _ in eng.columns(pop)}
    qi = [k for k in keys if k in pcols]
    if not qi:
        raise InputError(f"the population table {population_label} holds none of the key variables "
                         f"{', '.join(keys)}")
    if person is not None:
        raise InputError("a population mapped onto a generalized release counts its rows; with --person give the "
                         "population in the release's coding (the same key columns)")
    m = map_public(eng, s, rel, pop, qi, dict(eng.columns(rel)), dict(hierarchies or {}), None, None, label,
                   f"the population table {population_label}")
    classes = {(int(f), int(pf)): int(n) for f, pf, n in eng.fetch_rows(
        f"SELECT _adb_nt, _adb_np, count(DISTINCT class_id) FROM {ident(m.table)} WHERE class_id <> 0 "
        f"GROUP BY _adb_nt, _adb_np")[1]}
    h = Histograms(classes, {(f, pf): f * n for (f, pf), n in classes.items()}, "records", population_label, keys=qi)
    h.notes.append(f"the population is mapped onto {label}'s classes over {', '.join(qi)} (as delta-presence maps "
                   f"its public table): a class is the records sharing those released values")
    return h


# -- limits a release may require ---------------------------------------------------------------------
#: bound -> (how it reads the report, whether the quantity is an exact ratio)
LIMITS = {
    "max_prosecutor_risk": ("the highest prosecutor risk", lambda r: r.sample["prosecutor"]["highest"]),
    "max_journalist_risk": ("the highest journalist risk", lambda r: r.sample["journalist"]["highest"]),
    "max_average_prosecutor_risk": ("the average prosecutor risk", lambda r: r.sample["prosecutor"]["average"]),
    "max_average_journalist_risk": ("the average journalist risk", lambda r: r.sample["journalist"]["average"]),
    "max_marketer_risk": ("the marketer risk", lambda r: r.sample["marketer"]),
    "max_records_at_risk": ("the share of records at prosecutor risk above the threshold",
                            lambda r: r.sample["prosecutor"]["records_at_risk"]),
    "max_sample_uniqueness": ("the sample uniqueness", lambda r: r.sample["sample_uniqueness"]),
    "max_population_uniqueness": ("the population uniqueness (Dankar's rule)",
                                  lambda r: r.population["dankar"] if r.population else None),
    "max_global_risk": ("the share of expected re-identifications (sdcMicro's global risk)",
                        lambda r: r.individual["global"]["share"] if r.individual else None),
}
#: the other keys of a ``risk:`` block: how the release's risk is assessed
OPTIONS = ("threshold", "population", "population_size", "fraction", "region", "weights", "household")


@dataclass
class Limits:
    """The bounds a release must meet (each a number in [0, 1]) and how its risk is assessed."""

    bounds: dict[str, Fraction]
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, block: Mapping[str, Any], where: str = "risk") -> "Limits":
        if not isinstance(block, Mapping):
            raise InputError(f"{where}: expected a mapping of limits such as max_journalist_risk: 0.05")
        bounds, options = {}, {}
        for key, value in block.items():
            if key in LIMITS:
                b = as_fraction(value, f"{where}.{key}")
                if not 0 <= b <= 1:
                    raise InputError(f"{where}.{key} must lie in [0, 1], got {value}")
                bounds[key] = b
            elif key in OPTIONS:
                options[key] = value
            else:
                raise InputError(f"{where}: unknown key {key!r}; the limits are {', '.join(LIMITS)} and the "
                                 f"options {', '.join(OPTIONS)}")
        if not bounds:
            raise InputError(f"{where}: no limit given (one of {', '.join(LIMITS)})")
        if "threshold" in options:
            threshold_fraction(options["threshold"])
        if "max_population_uniqueness" in bounds and not any(
                options.get(k) is not None for k in ("population", "population_size", "fraction", "region")):
            raise InputError(f"{where}.max_population_uniqueness needs the population: give population, "
                             f"population_size, fraction or region")
        if "max_global_risk" in bounds and not options.get("weights"):
            raise InputError(f"{where}.max_global_risk needs the sampling weights column: give weights")
        return cls(bounds, options)

    def assess(self, eng: Engine, table: str, keys: list[str], *, person: str | None = None,
               name: str | None = None, hierarchies: Mapping[str, Any] | None = None) -> RiskReport:
        o = self.options
        return assess(table, keys, engine=eng, threshold=o.get("threshold", 0.2), population=o.get("population"),
                      population_size=o.get("population_size"), fraction=o.get("fraction"), region=o.get("region"),
                      weights=o.get("weights") if "max_global_risk" in self.bounds else None, person=person, name=name,
                      hierarchies=hierarchies)


def exceeded(report: RiskReport, limits: Limits) -> list[str]:
    """The bounds ``report`` breaks, one phrase each."""
    out = []
    for key, bound in limits.bounds.items():
        what, read = LIMITS[key]
        value = read(report)
        if value is None:
            out.append(f"{what} could not be estimated ({key} {float(bound):g})")
            continue
        over = value > bound if isinstance(value, (Fraction, int)) else float(value) > float(bound)
        if over:
            out.append(f"{what} is {float(value):.4g}, above {key} {float(bound):g}")
    return out


__all__ = ["GROUP_COLUMNS", "LIMITS", "Limits", "RiskReport", "assess", "default_keys", "exceeded"]
