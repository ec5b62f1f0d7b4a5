"""Cheap extra models from the same group statistics.

* (alpha,k)-anonymity [Wong et al., KDD 2006; survey §3.2]: |E| >= k and max_s p(E,s) <= alpha.
* delta-disclosure [Brickell & Shmatikov, KDD 2008]: |ln(p(E,s)/p(T,s))| < delta for every group E
  and every sensitive value s of the table (a group lacking a value fails for every delta).

Record owners (see :mod:`anonydb.models.base`): both are beliefs about one person. (alpha,k):
n(E) >= k persons and c_s(E) / n(E) <= alpha, c_s the persons of E holding s. delta-disclosure:
p(E,s) = c_s(E) / n(E) against p(T,s) = C_s / N, the persons of the whole table holding s over its
persons: what the release adds to the attacker's belief that the victim holds s.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..sqlgen import SQL, ident
from .base import GroupContext, Model, as_fraction, check_count


class AlphaKAnonymity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--alpha', '--k')
    by_distribution = True
    name = "(alpha,k)-anonymity"
    worst = "max"

    def __init__(self, alpha: float, k: int):
        check_count(k, "k")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha <= 1:
            raise InputError(f"alpha must be a number in (0, 1], got {alpha!r}")
        self.alpha, self.k, self.af = alpha, k, as_fraction(alpha, "alpha")

    @property
    def params(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "k": self.k}

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_alpha_k.sql.j2", keys=ctx.keys, groups=ctx.groups, k=self.k,
                                 a_num=self.af.numerator, a_den=self.af.denominator)

    def achieved(self, worst_value, ctx):
        kmin = ctx.engine.scalar(f"SELECT min(_adb_n) FROM {ident(ctx.groups)}")
        return {"alpha": worst_value, "k": int(kmin)}


class DeltaDisclosure(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--delta',)
    by_distribution = True
    reads = frozenset({"n", "d", "cells"})
    materialize = True
    name = "delta-disclosure"
    worst = "max"

    def __init__(self, delta: float):
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not delta > 0 or math.isinf(delta):
            raise InputError(f"delta must be a finite number > 0, got {delta!r}")
        self.delta = delta

    @property
    def params(self) -> dict[str, Any]:
        return {"delta": self.delta}

    def verdicts(self, ctx: GroupContext):
        # p(T,s) = the whole table's count of s over the whole table's size: glob's own total, which is
        # not ctx.total (the rows judged) when the table is another's (a release with suppressed rows is
        # judged against its source, checker.check(distribution_of=...))
        total = SQL(f"(SELECT sum(_adb_cnt) FROM {ident(ctx.glob)})") if not ctx.persons else ctx.glob_persons
        return ctx.engine.render("model_delta_disclosure.sql.j2", keys=ctx.keys, cells=ctx.cells, glob=ctx.glob,
                                 sa_nulls=ctx.sa_nulls, total=total, domain=ctx.domain, delta=float(self.delta),
                                 sizes=ctx.groups if ctx.persons else None)

    def achieved(self, worst_value, ctx):
        return {"delta": float(worst_value)}

