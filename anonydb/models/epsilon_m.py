"""(epsilon,m)-anonymity [Li, Tao & Xiao, "Preservation of proximity privacy in publishing
numerical sensitive data", SIGMOD 2008, Def. 2; survey §2.2; spec-presence-survey §3.2].

For a numeric sensitive attribute: for every group E and every record t of E, the records of E
whose value lies in t's epsilon-neighbourhood [t.s - epsilon, t.s + epsilon] number at most
|E| / m, so no attacker infers a person's value within epsilon with probability above 1/m. SQL:
over the group's value counts, a RANGE window sums the counts within epsilon of each value
(``sql/model_epsilon_m.sql.j2``); the group holds iff its largest neighbourhood c_max has
c_max * m <= n, exactly. Value and achieved parameter: min over groups of n / c_max, an exact
fraction (the largest m that holds). Absolute epsilon, in the attribute's units, exact: the
window orders the values as decimals of nine places (integers and decimals of up to nine places
as they are, a floating-point value rounded to nine places) and reaches epsilon rounded down to
nine places, which finds the same neighbours (two values then differ by a multiple of 10^-9).
The paper's relative variant (neighbourhood [s(1 - epsilon), s(1 + epsilon)]) is not offered: its
width depends on the row, which a RANGE window's constant offsets cannot express (a self-join of
each group's values, quadratic in the group's distinct values, would).

Not monotone under merging groups, so it is no candidate of the anonymizers
(``Model.candidate``): E1 = {2} and E2 = {1, 3} with epsilon = 1, m = 2 -- E2 holds (each value
has 1 of 2 records within 1), but in E1 u E2 the value 2 has all 3 records within 1. Mondrian and
full-domain search with the other models, and the release's verification judges this one,
refusing a release it rejects.

Record owners: n(E) = persons; a neighbourhood counts, per value within epsilon, the persons
holding it, so a person holding two near values counts twice: never fewer than the persons, fail
closed.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .base import GroupContext, Model, as_fraction
from .ke_anonymity import nine_places


class EpsilonMAnonymity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--epsilon-m',)
    name = "(epsilon,m)-anonymity"
    reads = frozenset({"n", "cells"})
    materialize = True
    monotonic = False
    candidate = False

    def __init__(self, epsilon: Any, m: Any):
        ef, mf = as_fraction(epsilon, "epsilon"), as_fraction(m, "m")
        if ef < 0:
            raise InputError(f"epsilon must be a number >= 0, got {epsilon!r}")
        if mf < 1:
            raise InputError(f"m must be a number >= 1, got {m!r}")
        self.epsilon, self.m, self.ef, self.mf = epsilon, m, ef, mf

    @property
    def params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "m": self.m}

    def prepare(self, ctx: GroupContext) -> None:
        if ctx.sensitive is not None and not ctx.sensitive_numeric:
            raise InputError(f"(epsilon,m)-anonymity needs a numeric sensitive attribute; "
                             f"{ctx.sensitive!r} is not numeric")

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_epsilon_m.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
                                 eps_max=nine_places(self.ef, up=False), m_num=self.mf.numerator, m_den=self.mf.denominator)

    def achieved(self, worst_value, ctx):
        return {"m": worst_value}
