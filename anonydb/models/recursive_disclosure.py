"""Recursive (c,l)-diversity with positive disclosure, and with negative/positive disclosure
[Machanavajjhala, Kifer, Gehrke & Venkitasubramaniam, "l-Diversity: privacy beyond
k-anonymity", ACM TKDD 1(1) 2007, §4.3, Defs 4.2-4.3; survey §2.2; ARX issue #49].

A group's value counts sorted descending are r_1 >= ... >= r_m. Y holds the values whose positive
disclosure is allowed (e.g. "healthy"); the most frequent value not in Y is the y-th.

* pd-recursive (c,l): the group holds if it has no value outside Y, or
  y <= l-1 and r_y < c * sum_{j=l..m} r_j, or
  y >  l-1 and r_y < c * (sum_{j=l-1..y-1} r_j + sum_{j=y+1..m} r_j).
  Ties in the order do not change the verdict (both right sides depend on the sorted counts only;
  at r_{l-1} = r_l the two cases' tails agree), so a value outside Y is ranked first among equals.
  With Y empty this is recursive (c,l)-diversity.
* npd-recursive (c1,c2,l): pd-recursive (c1,l), and every value of W (whose negative disclosure
  is not allowed) occurs in at least c2 of each group's records. The paper's "c2 percent" is
  taken as a share in [0, 1]: c2 = 0.1 is 10%.

Exact: integer counts against c's and c2's fractions. A group's value is r_y / tail (it holds iff
c exceeds it); the achieved c is the largest over groups (the table holds for every larger c),
0 when no group holds a value outside Y; a group with a value outside Y and an empty tail holds
for no c (no value, reported as inf). Monotone [paper §4.3: both keep the monotonicity of
recursive (c,l)]: Mondrian and full-domain prune with them. Record owners: like recursive l, over
the group's (person, value) facts; the c2 share over facts is at most the share over persons, so
fail closed. Values of Y and W are matched by their text form. With c2 = 0 the W condition holds
trivially, also in a group without a protected value.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..errors import InputError
from .base import GroupContext, Model, as_fraction
from .named import Named

VARIANTS = ("pd-recursive", "npd-recursive")


def _values(values: Any, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [v.strip() for v in values.split(",") if v.strip()]
    if not isinstance(values, Iterable):
        raise InputError(f"{what} must be a list of sensitive values, got {values!r}")
    return list(dict.fromkeys(str(v) for v in values))  # a value named twice counts once


class DisclosureRecursiveDiversity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--l', '--l-variant', '--c', '--allowed', '--protected', '--c2')
    by_distribution = True
    materialize = True
    measure = "facts"
    worst = "max"
    reads = frozenset({"n", "cells"})

    def __init__(self, l: Any, c: Any, allowed: Any = (), protected: Any = None, c2: Any = None):
        if isinstance(l, bool) or not isinstance(l, (int, float)) or int(l) != l or l < 2:
            raise InputError(f"pd-/npd-recursive (c,l)-diversity needs an integer l >= 2, got {l!r}")
        if c is None:
            raise InputError("pd-/npd-recursive (c,l)-diversity needs the constant c (e.g. --c 3)")
        cf = as_fraction(c, "c")
        if cf <= 0:
            raise InputError(f"c must be a number > 0, got {c!r}")
        self.l, self.c, self.cf = int(l), c, cf
        self.allowed = _values(allowed, "allowed")
        self.protected = _values(protected, "protected")
        self.npd = bool(self.protected) or c2 is not None
        if self.npd:
            if not self.protected or c2 is None:
                raise InputError("npd-recursive (c1,c2,l)-diversity needs both the protected values and c2")
            self.c2f = as_fraction(c2, "c2")
            if not 0 <= self.c2f <= 1:
                raise InputError(f"c2 must be a share in [0, 1] (0.1 = 10% of a group's records), got {c2!r}")
        self.c2 = c2
        self.variant = "npd-recursive" if self.npd else "pd-recursive"
        self.name = ("l-diversity (npd-recursive (c1,c2,l))" if self.npd else "l-diversity (pd-recursive (c,l))")

    @property
    def params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"l": self.l, "variant": self.variant, "c": self.c, "allowed": self.allowed}
        if self.npd:
            p.update(protected=self.protected, c2=self.c2)
        return p

    def named(self):
        return [Named("allowed", values=tuple(self.allowed)), Named("protected", values=tuple(self.protected))]

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_recursive_disclosure.sql.j2", keys=ctx.keys, cells=ctx.cells, l=self.l,
                                 c_num=self.cf.numerator, c_den=self.cf.denominator, allowed=self.allowed,
                                 protected=self.protected if self.npd else [],
                                 c2_num=self.c2f.numerator if self.npd else 0,
                                 c2_den=self.c2f.denominator if self.npd else 1)

    def achieved(self, worst_value, ctx):
        return {"c": math.inf if worst_value is None else worst_value}
