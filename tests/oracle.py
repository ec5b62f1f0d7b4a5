"""Direct Python computations of every check, straight from the definitions, for the oracles.

EMDs are solved as linear programs (scipy linprog, the transportation problem of Li thesis
§2.3.3) with the corresponding ground distance, independent of the closed forms in the SQL.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

import numpy as np
from scipy.optimize import linprog


def sort_key(v):
    return (v is None, v)


def groups_of(rows, qi_idx, sa_idx=None):
    g = defaultdict(list)
    for r in rows:
        g[tuple(r[i] for i in qi_idx)].append(r[sa_idx] if sa_idx is not None else None)
    return dict(g)


def emd_lp(p: dict, q: dict, dist) -> float:
    dom = sorted(set(p) | set(q), key=sort_key)
    m = len(dom)
    if m == 1:
        return 0.0
    P = np.array([p.get(v, 0.0) for v in dom])
    Q = np.array([q.get(v, 0.0) for v in dom])
    c = np.array([dist(a, b) for a in dom for b in dom])
    A, b = [], []
    for i in range(m):
        row = np.zeros(m * m); row[i * m:(i + 1) * m] = 1; A.append(row); b.append(P[i])
    for j in range(m):
        row = np.zeros(m * m); row[j::m] = 1; A.append(row); b.append(Q[j])
    res = linprog(c, A_eq=np.array(A), b_eq=np.array(b), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


def dist_equal(a, b):
    return 0.0 if a == b else 1.0


def dist_ordered(domain):
    rank = {v: i for i, v in enumerate(sorted(domain, key=sort_key))}
    m = len(rank)
    return lambda a, b: abs(rank[a] - rank[b]) / (m - 1) if m > 1 else 0.0


def dist_hier(chains: dict):
    """chains[leaf] = [leaf, level1, ..., root]; distance = height of the lowest common ancestor / H."""
    H = len(next(iter(chains.values()))) - 1

    def d(a, b):
        if a == b:
            return 0.0
        ca, cb = chains[a], chains[b]
        for h in range(1, H + 1):
            if ca[h] == cb[h]:
                return h / H
        return 1.0

    return d


def distribution(values):
    c = Counter(values)
    n = len(values)
    return {v: k / n for v, k in c.items()}


def k_of(groups):
    return min(len(v) for v in groups.values())


def distinct_l(values):
    return len(set(values))


def entropy_l(values):
    n = len(values)
    return math.exp(-sum((c / n) * math.log(c / n) for c in Counter(values).values()))


def recursive_holds(values, c, l):
    r = sorted(Counter(values).values(), reverse=True)
    if len(r) < l:
        return False
    return r[0] < c * sum(r[l - 1:])


def probabilistic_l(values):
    return len(values) / max(Counter(values).values())


def delta_of(values, table_values):
    p, q = distribution(values), distribution(table_values)
    if set(q) - set(p):
        return math.inf
    return max(abs(math.log(p[s] / q[s])) for s in p)


def nt_value(rows, qi_idx, sa_idx, n, dist, rollup=False):
    """Per group: 0 if |E| >= n, else min over QI-subset supersets with >= n rows of the EMD (None if none);
    ``rollup``: the supersets are the prefixes of the QIs only."""
    groups = groups_of(rows, qi_idx, sa_idx)
    out = {}
    for key, vals in groups.items():
        if len(vals) >= n:
            out[key] = 0.0
            continue
        best = None
        for r in range(len(qi_idx)):
            for sub in [tuple(range(r))] if rollup else itertools.combinations(range(len(qi_idx)), r):
                sup = [row[sa_idx] for row in rows if all(row[qi_idx[j]] == key[j] for j in sub)]
                if len(sup) >= n:
                    d = emd_lp(distribution(vals), distribution(sup), dist)
                    best = d if best is None else min(best, d)
        out[key] = best
    return out
