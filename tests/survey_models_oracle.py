"""Plain-Python oracles for the models of issue 50 beyond beta-likeness, written from the papers'
definitions (spec-presence-survey §3.2); they import nothing from anonydb. Rows are (qi..., s)
tuples, ``nq`` the number of QI columns; None is a value of its own (a group key, a sensitive
value). Each returns (holds, achieved)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from fractions import Fraction


def groups(rows, nq):
    g = defaultdict(Counter)
    for r in rows:
        g[tuple(r[:nq])][r[nq]] += 1
    return g


def _exact(s):
    """A numeric value as the decimal it is written as (0.1 is 1/10), as anonydb reads values."""
    return Fraction(str(s))


def ke(rows, nq, k, e):
    """(k,e)-anonymity [Zhang et al. 2007]: >= k distinct values, max - min >= e."""
    holds, kmin, emin = True, math.inf, math.inf
    for cnt in groups(rows, nq).values():
        nums = [_exact(s) for s in cnt if s is not None]
        rng = (max(nums) - min(nums)) if nums else 0
        kmin, emin = min(kmin, len(cnt)), min(emin, rng)
        holds &= len(cnt) >= k and rng >= Fraction(str(e))
    return holds, (kmin, emin)


def epsilon_m(rows, nq, eps, m):
    """(epsilon,m)-anonymity [Li, Tao & Xiao 2008]: every record's value has at most n/m records of
    its group within eps. Achieved: min over groups of n / (largest neighbourhood)."""
    eps, mf = Fraction(str(eps)), Fraction(str(m))
    holds, best = True, None
    for cnt in groups(rows, nq).values():
        n = sum(cnt.values())
        worst = 0
        for s in cnt:
            near = sum(c for t, c in cnt.items() if (t is None and s is None)
                       or (t is not None and s is not None and abs(_exact(t) - _exact(s)) <= eps))
            worst = max(worst, near)
        holds &= worst * mf <= n
        v = Fraction(n, worst)
        best = v if best is None else min(best, v)
    return holds, best


def conf_bound(rows, nq, bounds, k=None):
    """Confidence bounding [Wang et al. 2005/07] (with k: (X,Y)-privacy, rows as owners):
    conf(E -> s) = c_s / n <= h_s; '*' bounds every value not named. Achieved: the largest
    confidence of a bounded value."""
    bounds = {str(v): Fraction(str(h)) for v, h in bounds.items()}
    holds, top = True, Fraction(0)
    for cnt in groups(rows, nq).values():
        n = sum(cnt.values())
        if k is not None and n < k:
            holds = False
        for s, c in cnt.items():
            key = _text(s)
            h = bounds.get(key) if key is not None and key in bounds and key != "*" else bounds.get("*")
            if h is None:
                continue
            top = max(top, Fraction(c, n))
            holds &= Fraction(c, n) <= h
    return holds, top


def conf_per_bound(rows, nq, bounds):
    """Conf(QID -> s) per template: the largest c_s / n over the groups of the value it bounds
    ('*': of every value not named), 0 where no group holds one."""
    top = {str(b): Fraction(0) for b in bounds}
    for cnt in groups(rows, nq).values():
        n = sum(cnt.values())
        for s, c in cnt.items():
            key = _text(s)
            b = key if key is not None and key in top and key != "*" else "*"
            if b in top:
                top[b] = max(top[b], Fraction(c, n))
    return top


def _text(s):
    if s is None:
        return None
    return str(s)


def pd_recursive(rows, nq, l, c, allowed=(), protected=(), c2=None):
    """pd-recursive (c,l) [Machanavajjhala et al. 2007, Def 4.2], and with protected values and c2
    npd-recursive (Def 4.3), literally: r_1 >= ... >= r_m (ties: values in Y first, the opposite of
    anonydb's order, since the verdict must not depend on it), y the rank of the first value outside Y.
    Achieved: max over groups of r_y / tail (inf with an empty tail; 0 without a value outside Y)."""
    cf = Fraction(str(c))
    allowed = {str(v) for v in allowed}
    holds, top = True, Fraction(0)
    for cnt in groups(rows, nq).values():
        n = sum(cnt.values())
        order = sorted(cnt.items(), key=lambda kv: (-kv[1], _text(kv[0]) not in allowed))
        r = [None] + [cnt_ for _, cnt_ in order]  # 1-based
        m = len(order)
        ys = [i + 1 for i, (s, _) in enumerate(order) if _text(s) not in allowed]
        if ys:
            y = ys[0]
            if y <= l - 1:
                tail = sum(r[j] for j in range(l, m + 1))
            else:
                tail = sum(r[j] for j in range(l - 1, y)) + sum(r[j] for j in range(y + 1, m + 1))
            ok = r[y] < cf * tail
            top = max(top, Fraction(r[y], tail) if tail else math.inf)
        else:
            ok = True
        if protected:
            for w in protected:
                cw = sum(cc for s, cc in cnt.items() if _text(s) == str(w))
                ok &= Fraction(cw, n) >= Fraction(str(c2))
        holds &= ok
    return holds, top


def multi_k(rows, nq, sets, k):
    """Multiple-QID k-anonymity [Fung et al. 2005]: each projection of the rows on each QID set
    (indexes into the QI columns) has >= k rows. Achieved: the smallest projection count over the
    groups of the rows."""
    least = math.inf
    for idx in sets:
        counts = Counter(tuple(r[i] for i in idx) for r in rows)
        least = min(least, min(counts.values()))
    return least >= k, least
