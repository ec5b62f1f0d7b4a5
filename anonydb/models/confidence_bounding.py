"""Confidence bounding [Wang, Fung & Yu, "Template-based privacy preservation in classification
problems", ICDM 2005; "Handicapping attacker's confidence", KAIS 2007; survey §2.2, Obs 5.3].

A privacy template <QID -> s, h> bounds the attacker's confidence of inferring the sensitive
value s from a group: Conf(QID -> s) = max over groups E of conf(E -> s) <= h, with
conf(E -> s) = c_s(E) / n(E). Each value has its own threshold h_s; the key "*" bounds every
value not named. Exact: c_s * h_den <= n * h_num. A group's value is its largest confidence of a
bounded value, c / n exact. Achieved: that largest over groups ("confidence"), and per template its
own Conf(QID -> s) ("conf(HIV)"; "conf(*)" the largest of the values not named), each to compare
with its h.

Monotone (Obs 5.3): a merged group's confidence is the size-weighted mean of its parts', so
Mondrian and full-domain prune with it. Record owners: a belief about one person, c_s = the
group's persons holding s over its persons (as (alpha,k)-anonymity). Values are matched by their
text form (the value as the engine writes it as text: 1, 2.5, HIV).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from ..errors import InputError
from .base import GroupContext, Model, as_fraction
from .named import Named

#: the key that bounds every sensitive value the template does not name
EVERY = "*"


def parse_bounds(bounds: Any, what: str = "confidence bounds") -> dict[str, Fraction]:
    """{value text: h} from a mapping or "HIV=0.1,Flu=0.5" ("*=h": every other value)."""
    if isinstance(bounds, str):
        pairs = {}
        for part in bounds.split(","):
            value, sep, h = part.rpartition("=")
            if not sep or not value.strip() or not h.strip():
                raise InputError(f"{what}: expected VALUE=H pairs separated by commas, got {part!r}")
            try:
                pairs[value.strip()] = Fraction(h.strip())
            except ValueError:
                raise InputError(f"{what}: the threshold of {value.strip()!r} is not a number: {h.strip()!r}") from None
        bounds = pairs
    if not isinstance(bounds, Mapping) or not bounds:
        raise InputError(f"{what}: give at least one sensitive value and its threshold h, e.g. HIV=0.1")
    out: dict[str, Fraction] = {}
    for value, h in bounds.items():
        hf = as_fraction(h, f"the threshold h of {value!r}")
        if not 0 <= hf <= 1:
            raise InputError(f"{what}: the threshold of {value!r} must lie in [0, 1] (a confidence), got {h!r}")
        out[str(value)] = hf
    return out


class ConfidenceBounding(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--conf-bound',)
    by_distribution = True
    name = "confidence bounding"
    reads = frozenset({"n", "cells"})
    worst = "max"

    def __init__(self, bounds: Any):
        self.bounds = parse_bounds(bounds)

    @property
    def params(self) -> dict[str, Any]:
        return {"bounds": {v: _num(h) for v, h in self.bounds.items()}}

    def named(self):
        return named_values(self.bounds)

    def verdicts(self, ctx: GroupContext):
        return render_bounds(ctx, self.bounds)

    def achieved(self, worst_value, ctx):
        return {"confidence": worst_value, **per_bound(ctx, self.bounds)}


def render_bounds(ctx: GroupContext, bounds: dict[str, Fraction], k: int | None = None, by_bound: bool = False):
    """The confidence-bound verdicts, with ``k`` also n >= k ((X,Y)-privacy); ``by_bound``: per
    bound its largest confidence over the groups instead."""
    return ctx.engine.render("model_confidence_bounding.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
                             named=[(v, h.numerator, h.denominator) for v, h in bounds.items()], bounds_sql=None, k=k,
                             by_bound=by_bound)


def per_bound(ctx: GroupContext, bounds: dict[str, Fraction]) -> dict[str, Fraction]:
    """Conf(QID -> s) per template, exact, keyed "conf(s)" in the bounds' order (0: no group holds s)."""
    got = {r["_adb_b"]: Fraction(int(r["_adb_num"]), int(r["_adb_den"]))
           for r in ctx.engine.fetch(render_bounds(ctx, bounds, by_bound=True))}
    return {f"conf({v})": got.get(v, Fraction(0)) for v in bounds}


def named_values(bounds: dict[str, Fraction]) -> list[Named]:
    """The bounded values, each a value the sensitive attribute must hold ("*" names none)."""
    return [Named("conf_bound", values=tuple(v for v in bounds if v != EVERY))]


def _num(h: Fraction) -> Any:
    return int(h) if h.denominator == 1 else float(h)
