"""Personalized privacy [Xiao & Tao, "Personalized privacy preservation", SIGMOD 2006, §2-3;
survey §2.2; spec-presence-survey §3.2].

Each record owner names a guarding node g in the sensitive attribute's taxonomy (a column of the
table): they do not want anyone to infer, with probability above p_breach, that their value lies
under g. For a group E whose sensitive values are published as they are, the breach probability
of a record t is

    Pr_breach(t) = |{t' in E : t'.s lies under t.g}| / |E|

This is the survey's reading, count(s under g) / n. The paper defines the breach over the
individuals of an external database and the tables consistent with the release (and lets the
sensitive values themselves be generalized); anonydb holds no external table and publishes the
values as they are, where (each individual of E with one record in it, the paper's primary case)
the paper's probability is this share. The release holds iff every record's breach is at most
p_breach, exactly (c * p_den <= n * p_num). A NULL guard is "no preference" (the paper's empty
node); a leaf guard is the value itself; without a hierarchy for the sensitive attribute only
leaves exist. A guard that names no node below the root is refused (InputError naming it); the
root itself too, since every value lies under it (its breach is always 1). A group's value is its
largest breach; achieved: the largest over groups.

Not monotone under merging groups: E1 = {HIV with guard HIV, Flu, Flu, Flu} holds at
p_breach = 1/4, but with E2 = {HIV, HIV} (no guards) the union gives the first record 3/6. So it
is no candidate of the anonymizers (``Model.candidate``): Mondrian and full-domain search with the
other models, carry the guard column through the release's verification, and drop it before the
release is written (the column is an input, never published: :func:`guard_columns` refuses to keep
it). Record owners (``person=``): a guard belongs to a person, so it must be the same on all their
records (else InputError), and Pr_breach(t) = persons of E holding a value under t.g / persons of E.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..sqlgen import ident
from .base import GroupContext, Model, as_fraction
from .named import Named, not_a_node
from .t_closeness import hierarchy_table


class PersonalizedPrivacy(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--guard', '--breach')
    name = "personalized privacy"
    worst = "max"
    monotonic = False
    candidate = False
    materialize = True
    reads = frozenset({"n", "cells"})

    def __init__(self, guard: str, breach: Any):
        if not isinstance(guard, str) or not guard:
            raise InputError("personalized privacy needs the column of each record's guarding node (--guard COLUMN)")
        bf = as_fraction(breach, "breach")
        if not 0 <= bf <= 1:
            raise InputError(f"breach must lie in [0, 1] (a probability), got {breach!r}")
        self.guard, self.breach, self.bf = guard, breach, bf
        self._closure: str | None = None

    @property
    def params(self) -> dict[str, Any]:
        return {"guard": self.guard, "breach": self.breach}

    def named(self):
        return [Named("guard", guard=self.guard)]

    def prepare(self, ctx: GroupContext) -> None:
        if ctx.guards is None:
            raise InputError("personalized privacy reads each record's guarding node: check the table itself "
                             "(anonydb.check), not candidate groups")
        if ctx.sa_hierarchy is not None:
            table, _ = hierarchy_table(ctx)
            self._closure = ctx.scratch.table(f"SELECT DISTINCT _adb_leaf, _adb_node FROM {ident(table)} "
                                              f"WHERE _adb_leaf IS NOT NULL AND _adb_node IS NOT NULL")
        else:
            self._closure = ctx.scratch.table(f"SELECT DISTINCT CAST(_adb_sa AS VARCHAR) AS _adb_leaf, "
                                              f"CAST(_adb_sa AS VARCHAR) AS _adb_node FROM {ident(ctx.glob)} "
                                              f"WHERE _adb_sa IS NOT NULL")
        bad = ctx.engine.scalar(f"SELECT min(CAST(_adb_sa AS VARCHAR)) FROM {ident(ctx.guards)} WHERE _adb_sa IS NOT NULL "
                                f"AND CAST(_adb_sa AS VARCHAR) NOT IN (SELECT _adb_node FROM {ident(self._closure)})")
        if bad is not None:
            raise InputError(not_a_node(bad, self.guard, ctx.sensitive, ctx.sa_hierarchy is not None))

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_personalized.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
                                 guards=ctx.guards, closure=self._closure, p_num=self.bf.numerator,
                                 p_den=self.bf.denominator, facts=ctx.person_facts if ctx.persons else None)

    def achieved(self, worst_value, ctx):
        return {"breach": worst_value}


def guard_columns(models: list[Model], published: list[str]) -> list[str]:
    """The guard columns the models read (personalized privacy), which an anonymizer carries
    through the release's verification and then drops; InputError for one that would be published
    (a quasi-identifier, the sensitive attribute, a kept or pseudonymized column)."""
    out = []
    for m in models:
        g = getattr(m, "guard", None)
        if isinstance(m, PersonalizedPrivacy) and g not in out:
            if g in published:
                raise InputError(f"guard column {g!r} is an input of personalized privacy and is never published: "
                                 f"do not keep it or give it another role")
            out.append(g)
    return out
