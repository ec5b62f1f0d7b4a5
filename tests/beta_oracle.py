"""A plain-Python oracle for beta-likeness [Cao & Karras 2012, Defs 2-3], written from the
definition: it imports nothing from anonydb. Rows are (qi..., s) tuples; None is a value."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from fractions import Fraction


def gains(rows, nq):
    """Per group: the gains D = (q - p) / p of its values with q > p (exact), and p of each."""
    n_total = len(rows)
    table = Counter(r[nq] for r in rows)
    groups = defaultdict(Counter)
    for r in rows:
        groups[r[:nq]][r[nq]] += 1
    out = {}
    for key, cnt in groups.items():
        n = sum(cnt.values())
        out[key] = [((Fraction(c, n) - Fraction(table[s], n_total)) / Fraction(table[s], n_total),
                     Fraction(table[s], n_total)) for s, c in cnt.items()]
    return out


def beta_basic(rows, nq):
    """The least beta for which basic beta-likeness holds: the largest gain."""
    return max(d for g in gains(rows, nq).values() for d, _ in g)


def beta_enhanced(rows, nq):
    """The least beta for which enhanced beta-likeness holds (inf when a gain exceeds -ln p)."""
    allg = [(d, p) for g in gains(rows, nq).values() for d, p in g]
    if any(d > 0 and float(d) > -math.log(float(p)) for d, p in allg):
        return math.inf
    return max(d for d, _ in allg)


def holds(rows, nq, beta, variant="basic"):
    b = Fraction(str(beta)) if isinstance(beta, float) else Fraction(beta)
    for g in gains(rows, nq).values():
        for d, p in g:
            if d > b or (variant == "enhanced" and d > 0 and float(d) > -math.log(float(p))):
                return False
    return True
