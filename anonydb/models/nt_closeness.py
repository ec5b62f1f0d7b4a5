"""(n,t)-closeness [Li thesis Def 2.2.2 and Fig 2.1; spec-closeness-slicing 2.4, 5.2].

A group E1 holds if it has >= n records, or some natural superset E2 of it with |E2| >= n has
D[P_E1, P_E2] <= t. In a finished table the natural supersets of a group are the records that
agree with it on a subset of the QI columns (``supersets="subsets"``: every subset, the empty
one being the whole table) or on a prefix of them in the given order (``"rollup"``). An
anonymizer passes its own candidate pairs (Mondrian: the partition's ancestors, Parent(P)).
With n = |T| the model is t-closeness (Observation 2.2.1).

Two plans, one verdict: every small group paired with each of its supersets and the EMD computed
per pair (``nt_pairs*.sql.j2``, any distance), or, for equal EMD and at most ``LOOKUP_SUBSETS``
subsets, each small group's cells looking up their value in every superset
(``nt_closeness_lookup.sql.j2``): equal EMD sums over the group's own values only.

Record owners (see :mod:`anonydb.models.base`): the distributions are those of the distinct
(person, value) facts, as in t-closeness, and n counts the facts of a superset: n bounds the
sample the reference distribution is estimated from, and a superset's sample is its facts (one
per person and value, never one per repeated record).
"""

from __future__ import annotations

import itertools
from typing import Any

from ..errors import InputError
from ..sqlgen import ident
from .base import GroupContext, Model, check_count
from .t_closeness import DISTANCES, check_t, emd_sql, exact_type, prepare_distance

MAX_SUBSET_QIS = 12
#: with equal EMD and at most this many supersets per group (a rollup's d), each small group's
#: cells look up their value in every superset (nt_closeness_lookup.sql.j2) instead of pairing
#: the group with each superset: on a raw 10M table, 8.5M cell rows in place of 52M pair rows
LOOKUP_SUBSETS = 16
#: up to this many subsets, the supersets are counted in one scan (nt_supersets.sql.j2, GROUPING
#: SETS: 8 scans 5.0-5.6 s -> one 3.4 s at 10M); more, one scan per subset (memory for one at a time)
ONE_SCAN_SUBSETS = 16


class NTCloseness(Model):
    #: the command line's options of this model (the docs' model registry lists them)
    flags = ('--t', '--n', '--supersets')
    materialize = True
    measure = "facts"
    name = "(n,t)-closeness"
    worst = "max"
    #: not preserved by generalization: merging two groups of fewer than n records changes which
    #: records agree with the merged group on a subset of its QIs, so a group close to its own
    #: superset can become far from every superset of the merged one (a full-domain search judges
    #: every node rather than tag the nodes above a satisfying one, or below a failing one)
    monotonic = False

    def __init__(self, n: int, t: float, distance: str | None = None, supersets: str = "subsets"):
        check_count(n, "n")
        self.n, self.t, self.tf = n, t, check_t(t)
        if distance is not None and distance not in DISTANCES:
            raise InputError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
        if supersets not in ("subsets", "rollup"):
            raise InputError(f"supersets must be 'subsets' or 'rollup', got {supersets!r}")
        self.distance, self.supersets = distance, supersets
        self._hier = None

    @property
    def params(self) -> dict[str, Any]:
        return {"n": self.n, "t": self.t, "distance": self.distance, "supersets": self.supersets}

    def prepare(self, ctx: GroupContext) -> None:
        self.distance, self._hier, self.note = prepare_distance(ctx, self.distance)
        self.name = f"(n,t)-closeness ({self.distance} EMD)"

    def subsets(self, keys: list) -> list[list]:
        if self.supersets == "rollup":
            return [keys[:j] for j in range(len(keys))]
        if len(keys) > MAX_SUBSET_QIS:
            raise InputError(f"(n,t)-closeness over all QI subsets needs 2^{len(keys)} supersets; "
                             f"use supersets='rollup' for more than {MAX_SUBSET_QIS} QIs")
        return [list(c) for r in range(len(keys)) for c in itertools.combinations(keys, r)]

    def verdicts(self, ctx: GroupContext):
        e, s = ctx.engine, ctx.scratch
        small = s.table(f"SELECT {', '.join(ident(k) for k in ctx.keys)}, _adb_n, row_number() OVER () AS _adb_sg "
                        f"FROM {ident(ctx.groups)} WHERE _adb_n < {self.n}")
        if ctx.ancestors is not None:  # the caller names the supersets (Mondrian: Parent(P))
            sups = ctx.references
            pairs = e.render("nt_pairs_given.sql.j2", small=small, sups=sups, ancestors=ctx.ancestors,
                             cells=ctx.cells, keys=ctx.keys, n=self.n)
        else:
            coding = ctx.coding
            assert not (coding and ctx.scope), "coded keys are one table's"
            own = [k for k in ctx.keys if k not in ctx.scope]
            subsets = [list(ctx.scope) + sub for sub in self.subsets(coding if coding else own)]
            common = dict(subsets=subsets, cells=ctx.cells, n=self.n, coding=coding, keytype=ctx.keytype,
                          keys=ctx.keys)
            sups = s.table(e.render("nt_supersets.sql.j2", one_scan=len(subsets) <= ONE_SCAN_SUBSETS, **common))
            if self.distance == "equal" and len(subsets) <= LOOKUP_SUBSETS:
                return e.render("nt_closeness_lookup.sql.j2", small=small, sups=sups, groups=ctx.groups,
                                sa_nulls=ctx.sa_nulls, t_num=self.tf.numerator, t_den=self.tf.denominator,
                                exact=exact_type(ctx, "equal", None), **common)
            pairs = e.render("nt_pairs.sql.j2", small=small, sups=sups, **common)
        # the pairs are read once, inside the verdicts' statement (never written out: tens of
        # millions of rows on a raw 10M table); a pair's key is the small group and its superset
        # (its subset of QIs; given supersets are all set 0)
        key = ["_adb_sg", "_adb_sup" if ctx.ancestors is not None else "_adb_set"]
        emd = emd_sql(ctx, self.distance, "_adb_pairs", sups, key, ["_adb_set", "_adb_sup"], self._hier, sized=True)
        return e.render("nt_closeness_verdicts.sql.j2", pairs=pairs.sql, emd=emd.sql, keys=ctx.keys,
                        groups=ctx.groups, small=small, n=self.n, t_num=self.tf.numerator, t_den=self.tf.denominator)

    def achieved(self, worst_value, ctx):
        return {"t": worst_value, "n": self.n}

    def feasibility_note(self, ctx):
        if self.n > ctx.total:
            return (f"n = {self.n} exceeds the table's {ctx.total} rows: no superset has n records, "
                    f"so only groups of >= n records could hold")
        return ""
