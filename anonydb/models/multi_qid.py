"""Multiple-QID k-anonymity [Fung, Wang & Yu, "Top-down specialization for information and privacy
preservation", ICDE 2005; TKDE 2007; survey §2.1, Obs 2.1; spec-presence-survey §3.2].

An attacker may link on any one of several QID sets QID_1 .. QID_p, each a subset of the QI
columns: the release is k-anonymous on each, i.e. every group of the release projected onto
QID_j has at least k records, for every j. k on the union implies it, not conversely (weaker, so
more useful). One GROUP BY GROUPING SETS pass over the release's groups counts every projection
(``sql/model_multi_qid.sql.j2``); a group's value is the smallest count of its projections.

A group's verdict depends on the other groups (its projections' counts are sums over groups), so
it is no candidate of the anonymizers (``Model.candidate``): Mondrian's halves and full-domain's
nodes are judged by the other models, and the release's verification judges this one. Record
owners: a projection's persons are not the sum of its groups' persons (a person may have records
in several groups), so it counts rows and refuses ``person=``.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .base import GroupContext, Model, check_count
from .named import Named


def parse_sets(sets: Any) -> list[list[str]]:
    """[[col, ...], ...] from a list of lists or "age,sex;zip,sex"."""
    if isinstance(sets, str):
        sets = [[c.strip() for c in part.split(",") if c.strip()] for part in sets.split(";")]
    if not isinstance(sets, (list, tuple)) or not sets:
        raise InputError("multiple-QID k-anonymity needs at least one QID set, e.g. 'age,sex;zip,sex'")
    out = []
    for s in sets:
        if isinstance(s, str) or not isinstance(s, (list, tuple)) or not s or not all(isinstance(c, str) for c in s):
            raise InputError(f"each QID set must be a non-empty list of column names, got {s!r}")
        out.append(list(dict.fromkeys(s)))
    return out


class MultiQidK(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--multi-k', '--qid-sets')
    name = "multiple-QID k-anonymity"
    needs_sensitive = False
    candidate = False
    reads = frozenset({"n"})
    materialize = True  # the verdicts are read twice (summary, violators): one aggregation of the cells

    def __init__(self, k: int, qid_sets: Any):
        self.k = check_count(k, "k of multiple-QID k-anonymity")
        self.sets = parse_sets(qid_sets)

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "qid_sets": [",".join(s) for s in self.sets]}

    def named(self):
        return [Named("qid_sets", qis=tuple(dict.fromkeys(c for s in self.sets for c in s)))]

    def verdicts(self, ctx: GroupContext):
        if ctx.persons:
            raise InputError("multiple-QID k-anonymity counts records: a projection's persons are not the sum of "
                             "its groups'; drop person, or use k-anonymity on the union")
        cols = ctx.qi_columns
        for s in self.sets:
            missing = [c for c in s if c not in cols]
            if missing:
                raise InputError(f"QID set {','.join(s)}: {', '.join(map(repr, missing))} is not a quasi-identifier "
                                 f"of the table judged ({', '.join(cols)})")
        if ctx.coding:
            exprs = {q.column: ("code", q.mult, q.card) for q in ctx.coding}
        else:
            if list(ctx.keys) != list(cols):
                raise InputError("multiple-QID k-anonymity judges a table's QI columns, not candidate groups")
            exprs = {c: ("col",) for c in cols}
        used = [c for c in cols if any(c in s for s in self.sets)]  # GROUPING() takes grouping columns only
        index = {c: i for i, c in enumerate(used)}
        return ctx.engine.render("model_multi_qid.sql.j2", keys=ctx.keys, groups=ctx.groups, k=self.k,
                                 qis=[(c, exprs[c]) for c in used], sets=[[index[c] for c in s] for s in self.sets])

    def achieved(self, worst_value, ctx):
        return {"k": int(worst_value) if worst_value is not None else 0}
