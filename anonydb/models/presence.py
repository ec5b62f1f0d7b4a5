"""delta-presence [Nergiz & Clifton, "delta-presence without complete world knowledge", Def 7 and
Eq. 1; spec-presence-survey 1.2-1.3].

Given a public table P and a private table T within it, a release T* is (delta_min, delta_max)-
present when every individual t of P has delta_min <= Pr(t in T | P, T*) <= delta_max, and
Pr(t in T | P, T*) = |t* in T*| / |t* in P*| for the class t* of t in P* (P generalized the same
way). The model judges the classes of P*: the checks and anonymizers hand it P with a membership
flag as the "sensitive" attribute, so n_T is the flagged count of a class and n_P its size
(``sql/model_presence.sql.j2``); comparisons are exact. Anti-monotone (Theorem 1): merging
classes gives the mediant of their ratios, within their [min, max], so a generalization of a
delta-present release stays delta-present, which makes the lattice search and Mondrian's
pruning sound.

Record owners (several records per person; :mod:`anonydb.models.base`, ``docs/persons.md``): the
public table P holds persons, one row each; the research table T may hold several records per
person (visits). For a public person t in class E,

    Pr(t in T | T') = (distinct persons of T in E) / (persons of P in E):

a person with twelve visits is present once, as membership is a fact about the person, not the
record. With one record per person this is the row-level definition. The check
(:func:`anonydb.presence.check_presence` with ``person=``) reduces the release to one row per
(class, person) before P is mapped onto its classes, so the model below is unchanged: P's rows
are persons, and the member flag marks n_T(E) = E's distinct research persons. A person whose
records lie in several classes (QIs that vary per record) counts in each, as for every model by
persons. c-confident delta-presence (:func:`anonydb.presence.check_confident`, ``person=``) is
the row-level definition on T's persons: T reduced to one row per person (its QIs must then be
constant per person, the population's marginals counting each person under one value), n1 a
class's persons, D the population's persons less T's.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..sqlgen import ident
from .base import GroupContext, Model, as_fraction

#: the value of the membership flag that marks a public row present in the private table
MEMBER = 1


def parse_delta(delta: Any) -> tuple[Fraction, Fraction]:
    """(delta_min, delta_max) from a pair or a "a,b" string, as exact fractions in [0, 1]."""
    if isinstance(delta, str):
        parts = [p.strip() for p in delta.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"delta must be two numbers 'delta_min,delta_max', got {delta!r}")
        delta = parts
    try:
        lo, hi = delta
    except (TypeError, ValueError):
        raise InputError(f"delta must be a pair (delta_min, delta_max), got {delta!r}") from None
    fl = as_fraction(lo if not isinstance(lo, str) else _num(lo), "delta_min")
    fh = as_fraction(hi if not isinstance(hi, str) else _num(hi), "delta_max")
    for name, v in (("delta_min", fl), ("delta_max", fh)):
        if not 0 <= v <= 1:
            raise InputError(f"{name} must lie in [0, 1] (a probability), got {float(v):g}")
    if fl > fh:
        raise InputError(f"delta_min ({float(fl):g}) is larger than delta_max ({float(fh):g})")
    return fl, fh


def _num(s: str) -> Any:
    try:
        return Fraction(s)
    except ValueError:
        raise InputError(f"delta bound {s!r} is not a number") from None


class DeltaPresence(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--delta', '--public')
    name = "delta-presence"
    worst = "min"
    monotonic = True  # anti-monotone: generalizing a delta-present table keeps it delta-present

    def __init__(self, delta: Any):
        self.dmin, self.dmax = parse_delta(delta)

    @property
    def params(self) -> dict[str, Any]:
        return {"delta_min": self.dmin, "delta_max": self.dmax}

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_presence.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
                                 member=MEMBER, a=self.dmin.numerator, b=self.dmin.denominator,
                                 c=self.dmax.numerator, d=self.dmax.denominator)

    def achieved(self, worst_value: Any, ctx: GroupContext) -> dict[str, Any]:
        lo, hi = presence_range(ctx)
        return {"delta_min": lo, "delta_max": hi}

    def feasibility_note(self, ctx: GroupContext) -> str:
        n_t = ctx.engine.scalar(f"SELECT coalesce(sum(_adb_cnt), 0) FROM {ident(ctx.cells)} WHERE _adb_sa = {MEMBER}")
        share = Fraction(int(n_t), ctx.total) if ctx.total else Fraction(0)
        if not self.dmin <= share <= self.dmax:
            return (f"|T|/|P| = {int(n_t)}/{ctx.total} = {float(share):.6g} lies outside [{float(self.dmin):g}, "
                    f"{float(self.dmax):g}]: the most general release has exactly this presence for everyone, "
                    f"and generalizing only narrows the range, so no generalization is delta-present")
        return ""


def presence_range(ctx: GroupContext) -> tuple[Fraction, Fraction]:
    """(min, max) over the classes of n_T / n_P, as exact fractions (the extreme classes are found
    by the DOUBLE ratio, exact enough to tell apart ratios of counts below 2^26)."""
    keys = ", ".join(ident(k) for k in ctx.keys)
    on = " AND ".join(f"t.{ident(k)} IS NOT DISTINCT FROM g.{ident(k)}" for k in ctx.keys) or "TRUE"
    row = ctx.engine.fetch_rows(
        f"SELECT arg_min([nt, n], CAST(nt AS DOUBLE) / n), arg_max([nt, n], CAST(nt AS DOUBLE) / n) FROM ("
        f"SELECT g._adb_n AS n, coalesce(t.nt, 0) AS nt FROM {ident(ctx.groups)} AS g LEFT JOIN (SELECT "
        f"{keys + ', ' if keys else ''}sum(_adb_cnt) AS nt FROM {ident(ctx.cells)} WHERE _adb_sa = {MEMBER}"
        f"{' GROUP BY ' + keys if keys else ''}) AS t ON {on}) AS r WHERE n > 0")[1][0]
    if row[0] is None:
        return Fraction(0), Fraction(0)
    return Fraction(int(row[0][0]), int(row[0][1])), Fraction(int(row[1][0]), int(row[1][1]))
