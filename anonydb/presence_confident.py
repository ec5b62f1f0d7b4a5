"""c-confident delta-presence: membership protection when the publisher knows only the population's
per-attribute distributions [Nergiz & Clifton TR §4, Def 8-10, Eqs. 2-4; spec-presence-survey 1.5].

The publisher has the private table T and, for each QI, the population's marginal counts (value,
count) - a census table, say - but not the population P itself. D = P - T has marginals
f^D = f^P - f^T and U = |D| tuples. A release T* is c-confident (delta_min, delta_max)-present when
every released class t* has Pr(delta_min <= n1/(n1 + X) <= delta_max) >= c, X the number of D
tuples t* would cover, whose distribution follows from the marginals under the TR's model (D's
columns independent; :mod:`anonydb.confidence`). The guarantee is per tuple of T, and an
upper bound on privacy under that independence assumption: correlated real data can make the
true confidence lower.

:func:`check_confident` checks a finished release (SQL maps each class's labels to the D-counts
they cover, ``sql/confidence_map.sql.j2``; the kernel, memoized on the signature, gives the
confidences). :func:`population_marginals` derives the marginals from a public table, for tests
and for comparing with the exact model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from .confidence import ExactKernel, Kernel
from .engine import Engine, connect
from .errors import InputError
from .hierarchy import Hierarchy
from .models.base import as_fraction
from .models.presence import parse_delta
from .presence import label_level
from .schema import split_list
from .sources import open_source
from .sqlgen import ident


@dataclass
class ConfidenceReport:
    delta: tuple[Fraction, Fraction]
    c: Fraction
    holds: bool
    confidence: float  # the smallest class confidence (a lower bound with the SD/DC speed-ups)
    classes: int
    violating: int  # classes below c
    rows: int  # private rows
    U: int  # |D|
    worst: list[dict[str, Any]] = field(default_factory=list)  # the least confident classes
    conservative: bool = True  # computed with SD/DC (never overstates the confidence)

    def format(self) -> str:
        how = " (a lower bound: SD/DC cuts)" if self.conservative else ""
        head = (f"c-confident delta-presence (delta = [{float(self.delta[0]):g}, {float(self.delta[1]):g}], "
                f"c = {float(self.c):g}): {'holds' if self.holds else 'FAILS'}; smallest confidence "
                f"{self.confidence:.6g}{how} over {self.classes} classes ({self.rows} private rows, U = {self.U}); "
                f"{self.violating} classes below c")
        lines = [head] + [f"  confidence {w['confidence']:.6g}: {w['class']} (n1 = {w['n1']}, f = {w['f']})"
                          for w in self.worst]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"delta_min": float(self.delta[0]), "delta_max": float(self.delta[1]), "c": float(self.c),
                "holds": self.holds, "confidence": self.confidence, "classes": self.classes,
                "violating": self.violating, "rows": self.rows, "U": self.U, "worst": self.worst,
                "conservative": self.conservative}


def parse_c(c: Any) -> Fraction:
    f = as_fraction(c, "c")
    if not 0 < f <= 1:
        raise InputError(f"the confidence c must lie in (0, 1], got {float(f):g}")
    return f


def population_marginals(engine: Engine | Any, public: str, qi: str | Iterable[str], prefix: str = "marg", *,
                         temp: bool = True) -> dict[str, str]:
    """Tables ``<prefix>_<qi>`` (value VARCHAR, count BIGINT) of a public table's per-QI counts;
    temporary by default (a check never writes into the user's database, which may be read-only)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    out = {}
    for q in qi_cols:
        name = f"{prefix}_{q}"
        eng.create_table_as(name, f"SELECT CAST({ident(q)} AS VARCHAR) AS value, count(*) AS {ident('count')} "
                                  f"FROM {ident(public)} GROUP BY 1", replace=True, temp=temp)
        out[q] = name
    return out


def d_marginals(eng: Engine, s: Any, private: str, qi: list[str], marginals: dict[str, str]
                ) -> tuple[dict[str, str], int]:
    """Scratch tables (value, cnt) of D = population - T per QI, and U = |D|; InputError when a
    marginal is missing, malformed, inconsistent, or smaller than T's count of some value."""
    n_t = int(eng.scalar(f"SELECT count(*) FROM {ident(private)}"))
    out, totals = {}, {}
    for q in qi:
        if q not in marginals:
            raise InputError(f"no population distribution given for the quasi-identifier {q!r} "
                             f"(marginals maps each QI to a table of (value, count))")
        rel = marginals[q]
        cols = dict(eng.columns(rel))
        if "value" not in cols or "count" not in cols:
            raise InputError(f"the distribution of {q!r} ({rel}) needs columns value and count; it has "
                             f"{', '.join(cols)}")
        d = s.table(f"SELECT coalesce(p.value, t.value) AS value, coalesce(p.cnt, 0) - coalesce(t.cnt, 0) AS cnt "
                    f"FROM (SELECT CAST(value AS VARCHAR) AS value, sum({ident('count')}) AS cnt FROM {ident(rel)} "
                    f"GROUP BY 1) AS p FULL JOIN (SELECT CAST({ident(q)} AS VARCHAR) AS value, count(*) AS cnt "
                    f"FROM {ident(private)} GROUP BY 1) AS t ON t.value IS NOT DISTINCT FROM p.value")
        bad = eng.fetch_rows(f"SELECT value, cnt FROM {ident(d)} WHERE cnt < 0 ORDER BY cnt LIMIT 5")[1]
        if bad:
            shown = ", ".join(f"{v!r} ({-c} more in T)" for v, c in bad)
            raise InputError(f"the private table has more rows with these values of {q!r} than the population: "
                             f"{shown}")
        totals[q] = int(eng.scalar(f"SELECT coalesce(sum(cnt), 0) FROM {ident(d)}"))
        out[q] = d
    if len(set(totals.values())) > 1:
        raise InputError("the population distributions disagree on the population size: "
                         + ", ".join(f"{q}: {t + n_t}" for q, t in totals.items()))
    return out, next(iter(totals.values()))


def check_confident(release: str, private_rows: int | None = None, *, qi: str | Iterable[str], delta: Any, c: Any,
                    marginals: dict[str, str], engine: Engine | Any = None,
                    hierarchies: dict[str, Hierarchy] | None = None, private: str | None = None,
                    levels: dict[str, int] | None = None, sd: float | None = 4.0, dc: int | None = None,
                    exact: bool = False, max_classes: int = 5) -> ConfidenceReport:
    """Check c-confident delta-presence of ``release`` (T*). ``marginals`` maps each QI to a
    (value, count) table of the population; D's are derived by subtracting ``private`` (T; by
    default the release itself, whose QI values must then be the original ones) or, for a
    generalized release, pass ``private``. ``levels``: a full-domain release's level per QI (needed
    only when a column's labels name nodes of several hierarchy levels). ``sd``/``dc``: the
    kernel's speed-ups (None: off); ``exact``: compute every confidence in exact fractions instead
    (no speed-ups; for audits of small populations)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    dmin, dmax = parse_delta(delta)
    cc = parse_c(c)
    hierarchies = dict(hierarchies or {})
    with eng.scratch("confident") as s:
        rel = open_source(eng, release, scratch=s)
        priv = open_source(eng, private, scratch=s) if private is not None else rel
        rcols = dict(eng.columns(rel))
        for q in qi_cols:
            if q not in rcols:
                raise InputError(f"column {q!r} not found in the release {release}; its columns are: {', '.join(rcols)}")
        for attr in hierarchies:
            if attr not in qi_cols:
                raise InputError(f"a hierarchy is given for {attr!r}, which is not a quasi-identifier "
                                 f"({', '.join(qi_cols)})")
        dm, U = d_marginals(eng, s, priv, qi_cols, marginals)
        for q, h in hierarchies.items():  # the population's values (T's among them) are mapped through it
            if f"{q}_lo" in rcols and f"{q}_hi" in rcols:
                continue  # a range QI is matched by its bounds, not through the hierarchy
            h.validate(eng, dm[q], "value", label=q, where="the population counts")
        qis = []
        for q in qi_cols:
            lo, hi = f"{q}_lo", f"{q}_hi"
            if lo in rcols and hi in rcols:
                qis.append({"name": q, "mode": "range", "lo": lo, "hi": hi, "hier": None, "marg": dm[q],
                            "level": None})
            else:
                hq = None
                if q in hierarchies:
                    hq = s.name()
                    hierarchies[q].materialize(eng, hq, dm[q], "value", temp=True)
                qis.append({"name": q, "mode": "label", "lo": None, "hi": None, "hier": hq, "marg": dm[q],
                            "level": label_level(eng, rel, q, hq, (levels or {}).get(q))})
        rows = eng.fetch_rows(eng.render("confidence_map.sql.j2", release=rel, qis=qis))[1]
    kernel = ExactKernel(U) if exact else Kernel(U, sd=sd, dc=dc)
    bound = cc if exact else float(cc)
    d = len(qi_cols)
    scored = []
    for r in rows:
        labels, n1, f = r[:d], int(r[d]), [int(x) for x in r[d + 1:]]
        scored.append((kernel.confidence(n1, f, dmin, dmax), dict(zip(qi_cols, labels)), n1, f))
    scored.sort(key=lambda x: x[0])
    n_rows = sum(x[2] for x in scored)
    if private_rows is not None and private_rows != n_rows:
        raise InputError(f"the release holds {n_rows} rows, not the {private_rows} expected")
    low = [x for x in scored if x[0] < bound]
    return ConfidenceReport(delta=(dmin, dmax), c=cc, holds=not low,
                            confidence=float(scored[0][0]) if scored else 1.0,
                            classes=len(scored), violating=len(low), rows=n_rows, U=U,
                            worst=[{"confidence": float(x[0]), "class": x[1], "n1": x[2], "f": x[3]}
                                   for x in scored[:max_classes]],
                            conservative=not exact and (sd is not None or dc is not None))
