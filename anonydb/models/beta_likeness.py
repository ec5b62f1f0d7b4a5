"""beta-likeness [Cao & Karras, "Publishing microdata with a robust privacy guarantee", PVLDB 5(11),
2012, Defs 2-3; checked by ARX and pycanon].

For every group E and every sensitive value s whose share grows in E, q = p(E,s) > p = p(T,s),
the relative gain D(p, q) = (q - p) / p stays within a bound:

* basic: D <= beta;
* enhanced: D <= min(beta, -ln p), which also bounds the gain of rare values (small p) by less
  than beta would.

D = (c N - n Q) / (n Q) with c, n the group's count of s and size, Q, N the table's: the basic
verdict and its achieved value (the largest D over groups and values) are exact fractions. The
enhanced bound -ln p is irrational: that comparison runs in doubles, and a group with some D above
-ln p meets no beta (achieved +inf). pycanon's ``enhanced_beta_likeness`` returns max_s min(max D,
-ln p_s) instead, a number below which the model may still fail; anonydb's is the least beta for
which it holds.

Monotone under generalization: a merged group's q is the size-weighted mean of its parts', so no
gain grows (Mondrian and full-domain prune with it). Record owners: a belief about one person,
q = c_s(E) / n(E) in persons and p = C_s / N over the table's persons (as delta-disclosure).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..sqlgen import SQL, ident
from .base import GroupContext, Model, as_fraction

VARIANTS = ("basic", "enhanced")


class BetaLikeness(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--beta', '--beta-variant')
    by_distribution = True
    reads = frozenset({"n", "cells"})
    materialize = True
    worst = "max"
    integral_doubles = True  # enhanced: the gain's integers as doubles beside +inf

    def __init__(self, beta: Any, variant: str = "basic"):
        if variant not in VARIANTS:
            raise InputError(f"beta-likeness variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        b = as_fraction(beta, "beta")
        if b <= 0:
            raise InputError(f"beta must be a number > 0, got {beta!r}")
        self.beta, self.variant, self.bf = beta, variant, b
        self.name = "beta-likeness" if variant == "basic" else "enhanced beta-likeness"

    @property
    def params(self) -> dict[str, Any]:
        return {"beta": self.beta, **({"variant": self.variant} if self.variant != "basic" else {})}

    def verdicts(self, ctx: GroupContext):
        total = SQL(f"(SELECT sum(_adb_cnt) FROM {ident(ctx.glob)})") if not ctx.persons else ctx.glob_persons
        return ctx.engine.render("model_beta_likeness.sql.j2", keys=ctx.keys, cells=ctx.cells, glob=ctx.glob,
                                 groups=ctx.groups, sa_nulls=ctx.sa_nulls, total=total,
                                 b_num=self.bf.numerator, b_den=self.bf.denominator,
                                 enhanced=self.variant == "enhanced")

    def achieved(self, worst_value, ctx):
        return {"beta": worst_value}
