"""Brute-force oracles for the rule-based Injector (small tables only).

* rules: enumerate every generalized itemset (per QI: absent or one non-root level), count its
  tuples and values directly, and keep (X, s) with C_X >= ln(1 - minExp)/ln(1 - P(s)) and no s in X;
  minimal = no other rule with the same s whose tuple set contains X's by predicates.
* valid values: Fig 3.1 literally (with the "t_i can take s_j" check and the j = i case, spec A5),
  the perfect matching of the rest found by trying every permutation.
"""

from __future__ import annotations

import itertools
import math


def mine(rows, levels, min_exp, min_count=0):
    """rows: [(labels per QI per level (list of lists), s)]; levels: non-root levels per QI;
    min_count: the count an itemset needs before rules are formed from it.
    Returns ({(itemset, s)}, {(itemset, s) minimal}, ivs per row as a set)."""
    n = len(rows)
    counts = {}
    for _, s in rows:
        counts[s] = counts.get(s, 0) + 1
    thr = {s: (0.0 if c == n else math.log(1 - min_exp) / math.log(1 - c / n)) for s, c in counts.items()}
    rules = set()
    for vec in itertools.product(*[[None] + list(range(h)) for h in levels]):
        if all(v is None for v in vec):
            continue
        cells = {}
        for labels, s in rows:
            key = tuple((i, v, labels[i][v]) for i, v in enumerate(vec) if v is not None)
            if any(x[2] is None for x in key):
                continue
            cells.setdefault(key, []).append(s)
        for key, ss in cells.items():
            for s in counts:
                if len(ss) >= thr[s] and len(ss) >= min_count and s not in ss:
                    rules.add((key, s))

    def covers(general, specific, labels_of):
        # every tuple satisfying `specific` satisfies `general`
        return all(labels_of(t, i, v) == node for i, v, node in general for t in specific)

    def tuples_of(key):
        return [r for r in rows if all(r[0][i][v] == node for i, v, node in key)]

    minimal = set()
    for key, s in rules:
        tk = tuples_of(key)
        redundant = False
        for k2, s2 in rules:
            if s2 != s or k2 == key:
                continue
            # k2 more general by predicates: each of its predicates is implied by one of key's
            ok = True
            for i, v, node in k2:
                mine_pred = [p for p in key if p[0] == i and p[1] <= v]
                if not mine_pred or any(t[0][i][v] != node for t in tk):
                    ok = False
                    break
            if ok:
                redundant = True
                break
        if not redundant:
            minimal.add((key, s))
    ivs = []
    for labels, _ in rows:
        ivs.append({s for key, s in rules if all(labels[i][v] == node for i, v, node in key)})
    return rules, minimal, ivs


def valid_sets(group, ivs):
    """group: list of sensitive values; ivs: list of sets (values each tuple cannot take).
    Fig 3.1: value s_j is valid for t_i if t_i can take it and the rest has a perfect matching."""
    k = len(group)

    def perfect(tuples, values):
        """A perfect bipartite matching of tuples to value occurrences (Kuhn's augmenting paths;
        the thesis's matching step, independent of the library's flow-based plan)."""
        owner = [None] * len(values)  # occurrence -> tuple index in `tuples`

        def augment(ti, seen):
            for vi, v in enumerate(values):
                if v in ivs[tuples[ti]] or vi in seen:
                    continue
                seen.add(vi)
                if owner[vi] is None or augment(owner[vi], seen):
                    owner[vi] = ti
                    return True
            return False

        return all(augment(ti, set()) for ti in range(len(tuples)))

    out = []
    for i in range(k):
        valid = set()
        for j in range(k):
            s = group[j]
            if s in ivs[i]:
                continue
            rest_t = [t for t in range(k) if t != i]
            rest_v = group[:j] + group[j + 1:]
            if perfect(rest_t, rest_v):
                valid.add(s)
        out.append(valid)
    return out
