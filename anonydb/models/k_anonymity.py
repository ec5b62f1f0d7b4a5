"""k-anonymity [Samarati & Sweeney 1998; Li thesis §1.2.1; spec-closeness-slicing 2.1].

Every group holds at least k records: min_E |E| >= k. Achieved: k = the smallest group size.

Record owners (MultiR k-anonymity [Nergiz et al. 2007]; (X,Y)-anonymity with Y the person key
[Wang & Fung 2006]; survey §2.1, spec-presence-survey §3.2): every group holds at least k distinct
persons, n(E) >= k, so that a victim's QI values link to no fewer than k people, however many
records each has.
"""

from __future__ import annotations

from typing import Any

from .base import GroupContext, Model, check_count


class KAnonymity(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--k',)
    by_distribution = True
    name = "k-anonymity"
    needs_sensitive = False
    suppression_monotonic = True
    reads = frozenset({"n"})

    def __init__(self, k: int):
        self.k = check_count(k, "k")

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def min_rows(self) -> int:
        return self.k

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_k_anonymity.sql.j2", keys=ctx.keys, groups=ctx.groups, k=self.k)

    def achieved(self, worst_value, ctx):
        return {"k": int(worst_value)}

    def feasibility_note(self, ctx):
        if self.k > ctx.total:
            unit = "persons" if ctx.persons else "rows"
            return f"k = {self.k} exceeds the table's {ctx.total} {unit}: no release of this table can be {self.k}-anonymous"
        return ""
