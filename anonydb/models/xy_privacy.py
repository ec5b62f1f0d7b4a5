"""(X,Y)-privacy [Wang & Fung, "Anonymizing sequential releases", KDD 2006, §2; survey §2.1-2.2;
spec-presence-survey §3.2].

(X,Y)-anonymity: every X group has at least k distinct Y values, a_Y(x) >= k; with Y the record
owner it says each group holds at least k persons (the ``person`` role; without one, each row is
its own owner and it is k-anonymity). (X,Y)-linkability: conf(x -> y) <= h for the selected
sensitive values y. (X,Y)-privacy is both, one verdict per group: n >= k and the confidence
bounds of :mod:`anonydb.models.confidence_bounding` (the same SQL). Monotone (both parts are), so
Mondrian and full-domain prune with it. Value: the group's largest confidence of a bounded value;
achieved: the smallest group (persons with record owners), that largest confidence over groups and
each template's own, as confidence bounding reports them.
"""

from __future__ import annotations

from typing import Any

from ..sqlgen import ident
from .base import GroupContext, Model, check_count
from .confidence_bounding import _num, named_values, parse_bounds, per_bound, render_bounds


class XYPrivacy(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--xy-k', '--conf-bound')
    by_distribution = True
    name = "(X,Y)-privacy"
    reads = frozenset({"n", "cells"})
    worst = "max"

    def __init__(self, k: int, bounds: Any):
        self.k = check_count(k, "k of (X,Y)-privacy")
        self.bounds = parse_bounds(bounds, "(X,Y)-privacy's confidence bounds")

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "bounds": {v: _num(h) for v, h in self.bounds.items()}}

    def min_rows(self) -> int:
        return self.k

    def named(self):
        return named_values(self.bounds)

    def verdicts(self, ctx: GroupContext):
        return render_bounds(ctx, self.bounds, k=self.k)

    def achieved(self, worst_value, ctx):
        kmin = ctx.engine.scalar(f"SELECT min(_adb_n) FROM {ident(ctx.groups)}")
        return {"k": int(kmin) if kmin is not None else 0, "confidence": worst_value, **per_bound(ctx, self.bounds)}
