"""k-map [Sweeney; El Emam & Dankar, "Protecting privacy using k-anonymity", JAMIA 15(5), 2008;
ARX's ``KMap`` criterion with a research subset (``KMap(int k, DataSubset subset)``)].

k-anonymity against the population rather than the sample: the research table T is drawn from a
population table P, and every class of the release T* must match at least k records of P
generalized the same way (P*): n_P(E) >= k for every class E that holds research records. The
adversary who knows a victim is in the population, not whether they are in T, then finds at
least k candidates. Classes of P* without research records are not released and pass (ARX
judges only the classes its research subset populates). Achieved: k = the smallest n_P(E) over
the classes with n_T(E) > 0, an integer.

It is delta-presence's denominator (:mod:`anonydb.models.presence`), and reuses that flow: the
checks and anonymizers hand the model P with a membership flag as the "sensitive" attribute
(:func:`anonydb.presence.check_presence`, :func:`anonydb.methods.presence.presence_anonymize`),
so n_T is a class's flagged count and n_P its size (``sql/model_k_map.sql.j2``). Monotone:
merging classes adds their population counts, so a generalization of a k-map release stays
k-map (full-domain and Mondrian prune with it, as with delta-presence).

Record owners: P holds persons, one row each; with ``person=`` the check reduces the release to
one row per (class, person) before P is mapped onto its classes, so n_P counts public persons as
before and n_T > 0 asks only whether some research person lies in the class.

ARX's estimator form (no population table: D3 Poisson / D4 zero-truncated Poisson, a derived k'
checked on the sample's class sizes) is not implemented; :mod:`anonydb.risk.population` fits the
same Poisson-family models to a sample's class-size histogram and could derive k' from it.
"""

from __future__ import annotations

from typing import Any

from ..sqlgen import ident
from .base import GroupContext, Model, check_count
from .presence import MEMBER


class KMap(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--k-map', '--public')
    name = "k-map"
    worst = "min"
    reads = frozenset({"n", "cells"})

    def __init__(self, k: int):
        self.k = check_count(k, "k of k-map")

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def verdicts(self, ctx: GroupContext):
        return ctx.engine.render("model_k_map.sql.j2", keys=ctx.keys, groups=ctx.groups, cells=ctx.cells,
                                 member=MEMBER, k=self.k)

    def achieved(self, worst_value: Any, ctx: GroupContext) -> dict[str, Any]:
        """The smallest population count of a class holding research records (None: no such class)."""
        on = " AND ".join(f"t.{ident(k)} IS NOT DISTINCT FROM g.{ident(k)}" for k in ctx.keys) or "TRUE"
        keys = ", ".join(ident(k) for k in ctx.keys)
        got = ctx.engine.scalar(
            f"SELECT min(g._adb_n) FROM {ident(ctx.groups)} AS g JOIN (SELECT DISTINCT {keys or '1 AS _adb_one'} "
            f"FROM {ident(ctx.cells)} WHERE _adb_sa = {MEMBER} AND _adb_cnt > 0) AS t ON {on}")
        return {"k": int(got) if got is not None else None}

    def feasibility_note(self, ctx: GroupContext) -> str:
        if self.k > ctx.total:
            return (f"k = {self.k} exceeds the public table's {ctx.total} rows: no class of any generalization "
                    f"matches {self.k} public records")
        return ""
