"""(k,e)-anonymity [Zhang, Koudas, Srivastava & Yu, "Aggregate query answering on anonymized
tables", ICDE 2007; survey §2.2; spec-presence-survey §3.2].

For a numeric sensitive attribute: every group holds at least k different sensitive values and
their range max(s) - min(s) is at least e. Range and k are read from the cells (the group's
values) and its distinct count; the range is compared with e's fraction by cross-multiplication
in doubles (exact for integer values below 2^53 / e's denominator). NULL is one more value for
the count (anonydb's NULL semantics) and no value for the range.

Weak against the proximity attack (survey §3.6: a group of 10 with 7 distinct values, 9 in
[30, 35] and one 80 is (7, 50)-anonymous, yet Pr([30, 35]) = 90%): (epsilon,m)-anonymity bounds
that. Monotone under merging: distinct values and range only grow, so Mondrian and full-domain
prune with it. Record owners: the values held by the group's persons (the count and range of
distinct values do not depend on how many records repeat them). The group's value is its range;
the achieved parameters are the smallest distinct count and the smallest range.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..sqlgen import ident
from .base import GroupContext, Model, as_fraction, check_count


class KEAnonymity(Model):
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
        return ctx.engine.render("model_ke.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells, k=self.k,
                                 persons=ctx.persons, ranges=ctx.ranges, e_num=self.ef.numerator, e_den=self.ef.denominator)

    def achieved(self, worst_value, ctx):
        dmin = ctx.engine.scalar(f"SELECT min(_adb_d) FROM {ident(ctx.groups)}")
        e = worst_value
        if isinstance(e, float) and e.is_integer():
            e = int(e)
        return {"k": int(dmin) if dmin is not None else 0, "e": e}
