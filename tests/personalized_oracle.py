"""Plain-Python oracle of personalized privacy [Xiao & Tao, SIGMOD 2006; spec-presence-survey
§3.2, the survey's reading count(s under g) / n]; it imports nothing from anonydb."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction


def personalized(rows, nq, breach, under, persons=False):
    """Rows are (qi..., s, guard) tuples, or (qi..., s, guard, person) with ``persons``; ``nq`` the
    number of QI columns; ``under(value, node)`` says whether a value lies under a guarding node.
    A record's breach is the share of its group whose value lies under its guard: records, or by
    record owners the persons of the group with a record under it over the group's persons. A None
    guard has no constraint, a None value lies under no guard. Returns (holds, achieved: the
    largest breach)."""
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[:nq])].append(r[nq:])
    top, holds, limit = Fraction(0), True, Fraction(str(breach))
    for recs in groups.values():
        if persons:  # person -> (their values in the group, their guard)
            owners = defaultdict(set)
            for s, _, p in recs:
                owners[p].add(s)
            guards = {g for _, g, _ in recs}
            n = len(owners)
            count = {g: sum(1 for vals in owners.values() if any(v is not None and under(v, g) for v in vals))
                     for g in guards if g is not None}
        else:
            n = len(recs)
            count = {g: sum(1 for s, _ in recs if s is not None and under(s, g)) for _, g in recs if g is not None}
        for c in count.values():
            top = max(top, Fraction(c, n))
            holds &= Fraction(c, n) <= limit
    return holds, top
