"""l-diverse slicing [Li thesis §4.2.2, Def 4.2.2, Fig 4.2; spec-closeness-slicing 4.3, 5.5].

A sliced table releases, per bucket B, each column's values with the links between columns cut.
An adversary who knows all QI values of a tuple t (and that t is in the data) weighs each bucket
by its matching degree and reads the sensitive values there:

    f(t,B) = prod_i f_i(t,B),   f_i(t,B) = #(t[C_i] in B[C_i]) / |B|   (the sensitive column C_c
             matched on C_c - {S} only; f_c = 1 when C_c = {S}),
    p(t,B) = f(t,B) / sum_B' f(t,B'),
    D(t,B)[s] = share of s among the tuples u of B with u[C_c - S] = t[C_c - S],
    p(t,s) = sum_B p(t,B) D(t,B)[s]                                   (Eq. 4.1).

The slicing is l-diverse when p(t,s) <= 1/l for every tuple t of T and every s (Def 4.2.2; Fig
4.2's ">= 1/l" is an erratum, spec 9.4). The check is global: a bucket's contents change p(t,.)
for the tuples of every other bucket that share its column values.

One definition serves both uses: :meth:`SlicedLDiversity.plan` renders the SQL of the check
(``sql/slicing_diversity.sql.j2``) over integer-keyed relations, which the tuple partitioning
(:mod:`anonydb.methods.slicing`) judges its candidate partitions with, and :meth:`check` keys a
finished release (column tables plus the tuples) and runs the same plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..engines.base import Engine
from ..errors import InputError
from ..sqlgen import Rendered, ident

#: slack on p(t,s) <= 1/l for the floating-point sums (p is a ratio of sums of products)
EPS = 1e-9


@dataclass
class SlicedVerdict:
    """The result of checking l-diverse slicing on a release."""

    l: float
    holds: bool
    worst: float  # the largest p(t,s) over all tuples and values
    violators: int  # distinct tuples (QI projections) with some p(t,s) > 1/l
    tuples: int  # distinct tuples checked
    unmatched: int  # tuples that match no bucket (an inconsistent release)
    examples: list[dict[str, Any]] = field(default_factory=list)  # the worst violators, decoded

    @property
    def model(self) -> str:
        return f"l-diverse slicing (l = {self.l:g})"

    def format(self) -> str:
        head = (f"{self.model}: {'holds' if self.holds else 'VIOLATED'}; max p(t,s) = {self.worst:.6g} "
                f"(bound 1/l = {1 / self.l:.6g}) over {self.tuples} distinct tuples")
        if self.unmatched:
            head += f"; {self.unmatched} tuples match no bucket"
        lines = [head] + [f"  p = {e['p']:.6g} for {e['sensitive']!r} given {e['tuple']}" for e in self.examples]
        return "\n".join(lines)


class SlicedLDiversity:
    """The l-diverse slicing model for a given l (a number >= 1)."""

    name = "l-diverse slicing"

    def __init__(self, l: Any):
        if isinstance(l, bool) or not isinstance(l, (int, float)) or not math.isfinite(l) or l < 1:
            raise InputError(f"l must be a number >= 1 for l-diverse slicing (p(t,s) <= 1/l), got {l!r}")
        self.l = l

    @property
    def bound(self) -> str:
        """The SQL bound p(t,s) must not exceed: 1/l plus the float slack."""
        return repr(1.0 / self.l + EPS)

    def plan(self, eng: Engine, tuples: str, chain: Sequence[dict[str, str]], srel: str, mode: str = "worst",
             changed: str | None = None, limit: int | None = None, levels: str | None = None,
             focus: str | None = None) -> Rendered:
        """The check's SQL (see ``sql/slicing_diversity.sql.j2`` for the relations it reads; ``levels``
        as SQL, a quoted name or a parenthesized query, like ``focus``)."""
        return eng.render("slicing_diversity.sql.j2", tuples=tuples, chain=list(chain), srel=srel, mode=mode,
                          bound=self.bound, changed=ident(changed) if changed else None, limit=limit,
                          levels=levels, focus=focus)

    def check(self, eng: Engine, tuples: str, columns: Sequence[tuple[str, Sequence[str]]], sensitive: str,
              max_examples: int = 5) -> SlicedVerdict:
        """Check a finished sliced release.

        ``tuples``: a relation holding T (every attribute of every column, one row per tuple,
        generalized where the release generalized a column); ``columns``: (table, attributes) per
        column, each table with ``bucket_id`` and its attributes, one row per released value.
        """
        scol = [i for i, (_, attrs) in enumerate(columns) if sensitive in attrs]
        if len(scol) != 1:
            raise InputError(f"exactly one column must hold the sensitive attribute {sensitive!r}; "
                             f"{len(scol)} do")
        si = scol[0]
        with eng.scratch("slicecheck") as s:
            kt_keys, rels = [], {}
            for i, (table, attrs) in enumerate(columns):
                own = [a for a in attrs if a != sensitive]
                d = s.table(eng.render("slicing_keys.sql.j2", mode="dict", attrs=own, rels=[tuples, table]))
                name = "kq" if i == si else f"k{i}"
                kt_keys.append((d, own, name))
                keyed = s.table(eng.render("slicing_keys.sql.j2", mode="keyed", rel=table, bid="bucket_id",
                                           keys=[(d, own, name)], extra=sensitive if i == si else None))
                if i == si:
                    srel = keyed
                    rels["kq"] = (keyed, len(own))
                else:
                    rels[name] = (s.table(f"SELECT bid, {name} AS k FROM {ident(keyed)}"), len(own))
            kt = s.table(eng.render("slicing_keys.sql.j2", mode="keyed", rel=tuples, bid=None, keys=kt_keys,
                                    extra=None))
            chain = self.chain(eng, {k: ident(r) for k, (r, _) in rels.items()}, ident(kt))
            worst, violators, n, unmatched = eng.fetch_rows(self.plan(eng, ident(kt), chain, ident(srel)))[1][0]
            examples = []
            if violators and max_examples:
                rows = eng.fetch_rows(self.plan(eng, ident(kt), chain, ident(srel), mode="detail",
                                                limit=max_examples))[1]
                names = [x["key"] for x in chain]
                for r in rows:
                    desc = {}
                    for (d, attrs, name) in kt_keys:
                        if attrs:
                            vals = eng.fetch_rows(f"SELECT {', '.join(ident(a) for a in attrs)} FROM {ident(d)} "
                                                  f"WHERE k = ?", [r[names.index(name)]])[1][0]
                            desc.update(zip(attrs, vals))
                    examples.append({"tuple": desc, "sensitive": r[-2], "p": float(r[-1])})
        worst = float(worst or 0.0)
        return SlicedVerdict(l=self.l, holds=violators == 0 and unmatched == 0, worst=worst, violators=int(violators),
                             tuples=int(n), unmatched=int(unmatched), examples=examples)

    @staticmethod
    def chain(eng: Engine, rels: dict[str, str], tuples: str) -> list[dict[str, str]]:
        """The join chain of the check: the column with the most distinct values among ``tuples``
        first (its values sit in the fewest buckets), the sensitive column's QI part last unless
        it is more selective. ``rels`` maps key names (k0.., kq) to their relations (SQL), ``tuples``
        is SQL too."""
        names = list(rels)
        counts = eng.fetch_rows("SELECT " + ", ".join(f"count(DISTINCT {n})" for n in names)
                                + f" FROM {tuples}")[1][0]
        order = sorted(range(len(names)), key=lambda i: (-counts[i], names[i]))
        return [{"alias": f"x{j}", "rel": rels[names[i]], "key": names[i]} for j, i in enumerate(order)]
