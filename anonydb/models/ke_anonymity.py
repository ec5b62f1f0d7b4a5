"""(k,e)-anonymity [Zhang, Koudas, Srivastava & Yu, "Aggregate query answering on anonymized
tables", ICDE 2007; survey §2.2; spec-presence-survey §3.2].

For a numeric sensitive attribute: every group holds at least k different sensitive values and
their range max(s) - min(s) is at least e. Range and k are read from the cells (the group's
values) and its distinct count. The range is exact: the values are read as decimals of nine
places (integers below 10^28 and decimals of up to nine places as they are, a floating-point value
rounded to nine places: 0.1 is 1/10), and since a range is then a multiple of 10^-9 it holds
against e's fraction iff it holds against e rounded up to nine places, a decimal every engine
compares exactly. NULL is one more value for the count (anonydb's NULL semantics) and no value
for the range.

Weak against the proximity attack (survey §3.6: a group of 10 with 7 distinct values, 9 in
[30, 35] and one 80 is (7, 50)-anonymous, yet Pr([30, 35]) = 90%): (epsilon,m)-anonymity bounds
that. Monotone under merging: distinct values and range only grow, so Mondrian and full-domain
prune with it. Record owners: the values held by the group's persons (the count and range of
distinct values do not depend on how many records repeat them). The group's value is its range;
the achieved parameters are the smallest distinct count and the smallest range.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..sqlgen import SQL
from .base import GroupContext, Model, as_fraction, check_count

#: the values' decimal places (sql/_macros.sql.j2 dec9)
PLACES = 9


def nine_places(value: Fraction, up: bool) -> SQL:
    """A parameter as a DECIMAL(37, 9) literal, rounded up or down to nine places."""
    units = value * 10**PLACES
    units = math.ceil(units) if up else math.floor(units)
    sign, units = ("-" if units < 0 else ""), abs(units)
    return SQL(f"CAST('{sign}{units // 10**PLACES}.{units % 10**PLACES:0{PLACES}d}' AS DECIMAL(37, {PLACES}))")


class KEAnonymity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--ke',)
    by_distribution = False
    name = "(k,e)-anonymity"
    reads = frozenset({"n", "d", "cells", "range"})
    materialize = True  # the verdicts are read twice (summary, violators): one aggregation of the cells

    def __init__(self, k: int, e: Any):
        check_count(k, "k of (k,e)-anonymity")
        ef = as_fraction(e, "e")
        if ef < 0:
            raise InputError(f"e must be a number >= 0 (a range of the sensitive values), got {e!r}")
        self.k, self.e, self.ef = k, e, ef
        self.suppression_monotonic = True  # a union's values and range cover each part's

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "e": self.e}

    def prepare(self, ctx: GroupContext) -> None:
        if ctx.sensitive is not None and not ctx.sensitive_numeric:
            raise InputError(f"(k,e)-anonymity needs a numeric sensitive attribute; {ctx.sensitive!r} is not numeric")

    def verdicts(self, ctx: GroupContext):
        return self._render(ctx)

    def _render(self, ctx: GroupContext, achieved: bool = False):
        return ctx.engine.render("model_ke.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells, k=self.k,
                                 persons=ctx.persons, ranges=ctx.ranges, e_min=nine_places(self.ef, up=True),
                                 achieved=achieved)

    def achieved(self, worst_value, ctx):
        """The smallest distinct count and the smallest range, exact (the range's decimal text)."""
        row = ctx.engine.fetch(self._render(ctx, achieved=True))[0]
        e = Fraction(Decimal(row["_adb_e"])) if row["_adb_e"] is not None else Fraction(0)
        return {"k": int(row["_adb_d"]) if row["_adb_d"] is not None else 0,
                "e": int(e) if e.denominator == 1 else e}
