"""t-closeness [Li, Li & Venkatasubramanian, ICDE 2007; Li thesis Def 2.2.1; spec 2.3, 3.4-3.7].

Every group's sensitive distribution P is within EMD t of the whole table's Q: D[P, Q] <= t.
Ground distances: ``equal`` (categorical), ``ordered`` (numeric, by rank of the sorted domain),
``hierarchical`` (categorical with a hierarchy). EMDs are computed as exact fractions
(integer numerator and denominator), so D <= t is decided exactly; achieved t = max_E D[P_E, Q].

Record owners (see :mod:`anonydb.models.base`): P_E(s) = c_s(E) / m(E) and Q(s) = C_s / M, the
distributions of the distinct (person, value) facts of E and of the whole table: a person counts
once per value they hold, so twelve visits with one diagnosis weigh as one, and P stays a
distribution (it sums to one) when a person holds several values. All three ground distances
apply unchanged to these distributions.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..errors import InputError
from ..sqlgen import Rendered, ident
from .base import GroupContext, Model, as_fraction

DISTANCES = ("equal", "ordered", "hierarchical")
#: Q is the table's record-weighted distribution (the definition); "uniform" weights every
#: distinct value equally, which reproduces the seed's printed hierarchical EMDs 0.5 / 0.278
#: (paper-compatible only: spec-presence-survey E5).
REFERENCES = ("table", "uniform")


def default_distance(ctx: GroupContext) -> str:
    """Hierarchical when the sensitive attribute has a hierarchy, ordered when it is numeric,
    equal otherwise [spec-closeness-slicing 11]."""
    if ctx.sa_hierarchy is not None:
        return "hierarchical"
    return "ordered" if ctx.sensitive_numeric else "equal"


def check_t(t: Any, name: str = "t") -> Fraction:
    if isinstance(t, bool) or not isinstance(t, (int, float, Fraction)):
        raise InputError(f"{name} must be a number in [0, 1], got {t!r}")
    f = as_fraction(t, name)
    if not 0 <= f <= 1:
        raise InputError(f"{name} must lie in [0, 1] (EMD with normalized ground distance is in [0, 1]), got {t!r}")
    return f


def hierarchy_table(ctx: GroupContext) -> tuple[str, int]:
    """Materialize the sensitive attribute's hierarchy as (_adb_leaf, _adb_h, _adb_node) for the
    non-root levels h = 0 .. H-1, validated against the data; NULL is a leaf of its own under
    the root. Returns (table name, H)."""
    h = ctx.sa_hierarchy
    h.validate(ctx.engine, ctx.glob, "_adb_sa")
    raw = ctx.scratch.name()
    h.materialize(ctx.engine, raw, relation=ctx.glob, column="_adb_sa", temp=True)
    name = ctx.scratch.table(ctx.engine.render("hierarchy_nonroot.sql.j2", raw=raw, height=h.height))
    return name, h.height


def prepare_distance(ctx: GroupContext, distance: str | None) -> tuple[str, tuple[str, int] | None, str]:
    """Resolve the ground distance for ``ctx`` (the default when None), materialize the sensitive
    attribute's hierarchy when it is hierarchical; returns (distance, hierarchy table, note)."""
    distance = distance or default_distance(ctx)
    hier, note = None, ""
    if distance == "hierarchical":
        if ctx.sa_hierarchy is None:
            raise InputError(f"hierarchical distance needs a hierarchy for the sensitive attribute {ctx.sensitive!r}")
        hier = hierarchy_table(ctx)
    if distance == "ordered" and not ctx.sensitive_numeric:
        note = f"ordered distance over {ctx.sensitive!r} uses the values' sort order"
    return distance, hier, note


#: a table of at most this many rows keeps the EMD's exact arithmetic in BIGINT off DuckDB: every
#: product there is at most total^2 * reach, reach = 4 * max(domain, 2 * height) (see exact_type)
BIGINT_LIMIT = 2**63


def exact_type(ctx: GroupContext, distance: str, hier: tuple[str, int] | None) -> str | None:
    """BIGINT when every exact product of the EMD plan fits it, off DuckDB; None otherwise (the
    templates' m.exact(): HUGEINT on DuckDB, NUMERIC on PostgreSQL). PostgreSQL's NUMERIC
    arithmetic is several times slower than BIGINT (hierarchical EMD on 10^6 rows: the per-group
    sums took 4.6 s of 9.8 s), and a sum() of BIGINTs is still exact there (NUMERIC result). The
    terms are products of two counts of at most ``total`` rows and a distance factor of at most
    ``domain`` (ordered) or 2 * height (hierarchical)."""
    if ctx.engine.dialect == "duckdb":
        return None
    total = int(getattr(ctx, "total", 0) or 0)
    reach = 4 * max(int(getattr(ctx, "domain", 0) or 0), 2 * (hier[1] if hier else 1), 2)
    if total <= 0 or total * total * reach >= BIGINT_LIMIT:
        return None
    return "BIGINT"


def emd_sql(ctx: GroupContext, distance: str, p_rel: str, q_rel: str, keys: list[str], qkeys: list[str],
            hier: tuple[str, int] | None = None, sizes: str | None = None, sized: bool = False) -> Rendered:
    """The EMD plan for ``distance``: per group of p_rel, (keys..., _adb_n, _adb_num, _adb_den).

    p_rel(keys, qkeys, _adb_sa, _adb_cnt) names each group's reference distribution by qkeys in
    q_rel(qkeys, _adb_sa, _adb_cnt); qkeys = [] compares every group with the one reference.
    ``sizes`` (keys, _adb_n, _adb_d: check_groups.sql.j2) gives the group sizes and numbers of
    distinct values when they are already known (the ordered plan judges a single-valued group by
    its value alone); ``sized``: p_rel carries the sizes in its own _adb_n column.
    """
    ctx_ = dict(keys=keys, qkeys=qkeys, pcols=keys + [q for q in qkeys if q not in keys], p_rel=p_rel,
                q_rel=q_rel, sizes=sizes, sized=sized, exact=exact_type(ctx, distance, hier), sa_nulls=ctx.sa_nulls)
    if distance == "equal":
        return ctx.engine.render("emd_equal.sql.j2", **ctx_)
    if distance == "ordered":
        return ctx.engine.render("emd_ordered.sql.j2", domain_rel=ctx.glob, **ctx_)
    if distance == "hierarchical":
        assert hier is not None
        return ctx.engine.render("emd_hierarchical.sql.j2", hier=hier[0], height=hier[1], **ctx_)
    raise InputError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")


class TCloseness(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--t', '--distance', '--reference')
    by_distribution = True
    measure = "facts"
    reads = frozenset({"n", "d", "cells"})
    materialize = True
    name = "t-closeness"
    worst = "max"

    def __init__(self, t: float, distance: str | None = None, reference: str = "table"):
        self.tf = check_t(t)
        self.t = t
        if reference not in REFERENCES:
            raise InputError(f"reference must be one of {', '.join(REFERENCES)}, got {reference!r}")
        self.reference = reference
        if distance is not None and distance not in DISTANCES:
            raise InputError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
        self.distance = distance
        self._hier: tuple[str, int] | None = None

    @property
    def params(self) -> dict[str, Any]:
        p = {"t": self.t, "distance": self.distance}
        if self.reference != "table":
            p["reference"] = self.reference
        return p

    def prepare(self, ctx: GroupContext) -> None:
        self.distance, self._hier, self.note = prepare_distance(ctx, self.distance)
        self.name = f"t-closeness ({self.distance} EMD)"
        if self.reference == "uniform":
            self.name += " [paper-compatible uniform Q]"

    def verdicts(self, ctx: GroupContext):
        q_rel = ctx.glob
        if self.reference == "uniform":
            q_rel = ctx.scratch.table(f"SELECT _adb_sa, 1 AS _adb_cnt FROM {ident(ctx.glob)}")
        emd = emd_sql(ctx, self.distance, ctx.cells, q_rel, ctx.keys, [], self._hier, sizes=ctx.groups)
        return ctx.engine.render("model_threshold.sql.j2", keys=ctx.keys, inner=emd.sql,
                                 t_num=self.tf.numerator, t_den=self.tf.denominator)

    def achieved(self, worst_value, ctx):
        return {"t": worst_value}
