"""(B,t)-privacy [Li thesis Def. 3.6.1-3.6.2, §3.6.4; spec-injector-tradeoff-foreground 3.6].

T* has (B,t)-privacy iff max_q D[P_pri(B, q), P_pos(B, q, T*)] <= t over every tuple: the
adversary Adv(B), whose prior is the kernel estimate of :mod:`anonydb.models.prior`, learns at most t
about any individual from the release. The posterior is the Omega-estimate (Eq. 3.5), evaluated per
tuple (tuples with equal QIs in different groups differ). D is pluggable (the thesis leaves it open,
ambiguity A1): the library's t-closeness distance by default (hierarchical EMD when the sensitive
attribute has a hierarchy, ordered EMD when numeric, otherwise equal EMD = variational distance),
or ``js`` (Jensen-Shannon, natural logs). Skyline (B,t)-privacy is several instances, one per
(B_i, t_i).

The model reads, besides the group context, the rows' QI tuples: ``ctx.members`` (keys...,
_adb_qid, _adb_m), with the qids numbered by :func:`anonydb.models.prior.distinct_qids`; it is bound to
the source rows with :meth:`BTPrivacy.bind`, which estimates its prior once. Not monotone under
merging (the thesis checks it at each split only).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InputError
from .prior import KernelPrior, bandwidths, kernel_prior
from ..sqlgen import Rendered, ident
from .base import GroupContext, Model
from .t_closeness import check_t, hierarchy_table

BT_DISTANCES = ("equal", "ordered", "hierarchical", "js")


class BTPrivacy(Model):
    name = "(B,t)-privacy"
    worst = "max"
    monotonic = False
    materialize = True
    #: the model reads per-row QI tuples (ctx.members) and must be bound to the source first
    needs_members = True

    def __init__(self, b: Any = 0.3, t: Any = 0.2, distance: str | None = None):
        self.t = check_t(t)
        if isinstance(b, bool) or not (isinstance(b, (int, float, list, tuple)) or isinstance(b, Mapping)):
            raise InputError(f"bandwidth b must be a positive number (or one per QI), got {b!r}")
        if isinstance(b, (int, float)) and not b > 0:
            raise InputError(f"bandwidth b must be a positive number, got {b!r}")
        if distance is not None and distance not in BT_DISTANCES:
            raise InputError(f"(B,t)-privacy distance must be one of {', '.join(BT_DISTANCES)}, got {distance!r}")
        self.b, self.distance = b, distance
        self.prior: KernelPrior | None = None
        self._resolved: str | None = None
        self._extra: dict[str, Any] = {}

    @property
    def params(self) -> dict[str, Any]:
        b = self.prior.bandwidth if self.prior is not None else self.b
        return {"b": b, "t": self.t, "distance": self._resolved or self.distance or "default"}

    def bind(self, engine: Any, relation: str, qi: list[str], sensitive: str, *, qids: str, scratch: Any,
             hierarchies: Mapping[str, Any] | None = None, kinds: Mapping[str, str] | None = None) -> None:
        """Estimate the prior of Adv(B) over ``relation`` (the rows being released), keyed by
        ``qids`` (the caller's numbering of the distinct QI tuples)."""
        bandwidths(self.b, qi)  # validated against the QIs before any work
        h = {c: x for c, x in (hierarchies or {}).items() if c in qi}
        self.prior = kernel_prior(relation, qi, sensitive, self.b, engine=engine, hierarchies=h, kinds=kinds,
                                  qids=qids, scratch=scratch)

    def prepare(self, ctx: GroupContext) -> None:
        if self._resolved is not None:
            return
        d = self.distance
        if d is None:
            d = "hierarchical" if ctx.sa_hierarchy is not None else ("ordered" if ctx.sensitive_numeric else "equal")
        if d == "hierarchical":
            if ctx.sa_hierarchy is None:
                raise InputError(f"hierarchical distance needs a hierarchy for the sensitive attribute {ctx.sensitive!r}")
            hier, height = hierarchy_table(ctx)
            self._extra = {"hier": hier, "height": height}
        elif d == "ordered":
            ranks = ctx.scratch.table(f"SELECT _adb_sa, CAST(row_number() OVER (ORDER BY _adb_sa) - 1 AS BIGINT) "
                                      f"AS _adb_r FROM (SELECT DISTINCT _adb_sa FROM {ident(ctx.glob)}) AS v")
            n = ctx.engine.scalar(f"SELECT count(*) FROM {ident(ranks)}")
            self._extra = {"ranks": ranks, "domain": max(int(n), 2)}
        self._resolved = d

    def verdicts(self, ctx: GroupContext) -> Rendered:
        if self.prior is None:
            raise InputError("(B,t)-privacy must be bound to the source rows (its prior) before it can judge groups")
        if getattr(ctx, "members", None) is None:
            raise InputError("(B,t)-privacy needs the groups' QI tuples (members); check it with "
                             "anonydb.attacks.audit.audit_distribution or use it inside Mondrian")
        self.prepare(ctx)
        return ctx.engine.render("model_bt.sql.j2", keys=ctx.keys, members=ctx.members, cells=ctx.cells,
                                 groups=ctx.groups, prior=self.prior.table, distance=self._resolved,
                                 t=repr(float(self.t)), **self._extra)

    def tuple_summary(self, ctx: GroupContext) -> Rendered:
        """One row (rows, vulnerable = tuples with D > t, worst D): the verdict plan kept per tuple."""
        self.prepare(ctx)
        return ctx.engine.render("model_bt.sql.j2", keys=ctx.keys, members=ctx.members, cells=ctx.cells,
                                 groups=ctx.groups, prior=self.prior.table, distance=self._resolved,
                                 t=repr(float(self.t)), per_tuple=True, **self._extra)

    def achieved(self, worst_value, ctx):
        return {"t": float(worst_value) if worst_value is not None else 0.0}

    def feasibility_note(self, ctx: GroupContext) -> str:
        return ""


def members_of(eng: Any, s: Any, rows: str, group: str, qids: str, qi: list[str]) -> str:
    """(group, _adb_qid, _adb_m): how many rows of each group have each numbered QI tuple."""
    on = " AND ".join(f"r.{ident(c)} IS NOT DISTINCT FROM q.{ident(c)}" for c in qi)
    return s.table(f"SELECT r.{ident(group)}, q._adb_qid, count(*) AS _adb_m FROM {ident(rows)} AS r "
                   f"JOIN {ident(qids)} AS q ON {on} GROUP BY ALL")


def cell_relations(eng: Any, s: Any, cells: str, keys: list[str]) -> tuple[str, str, int]:
    """From per-group value counts ``cells``: the table's distribution, the group statistics and
    the number of distinct values (what a GroupContext needs besides the members)."""
    glob = s.table(f"SELECT _adb_sa, sum(_adb_cnt) AS _adb_cnt FROM {ident(cells)} GROUP BY _adb_sa")
    groups = s.table(eng.render("check_groups.sql.j2", keys=keys, cells=cells))
    return glob, groups, int(eng.scalar(f"SELECT count(*) FROM {ident(glob)}"))


__all__ = ["BTPrivacy", "BT_DISTANCES", "cell_relations", "members_of"]
