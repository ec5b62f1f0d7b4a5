"""Brute-force reference for slicing [Li thesis Ch. 4; spec-closeness-slicing 4.1, 4.3, 4.4, 5.3].

Pure Python with exact fractions, tuple by tuple and bucket by bucket, as the definitions read:
no shared code with anonydb. Rows are dicts attribute -> value; ``columns`` is the attribute
partition; ``buckets`` gives each row's bucket.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from itertools import product


def phi2(rows: list[dict], a: str, b: str) -> Fraction:
    """phi^2(A,B) = 1/(min(d_A,d_B)-1) * sum_ij (f_ij - f_i f_j)^2 / (f_i f_j) over observed values."""
    n = len(rows)
    fa = Counter(r[a] for r in rows)
    fb = Counter(r[b] for r in rows)
    fab = Counter((r[a], r[b]) for r in rows)
    d = min(len(fa), len(fb))
    if d <= 1:
        return Fraction(0)
    total = Fraction(0)
    for i in fa:
        for j in fb:
            fi, fj, fij = Fraction(fa[i], n), Fraction(fb[j], n), Fraction(fab.get((i, j), 0), n)
            total += (fij - fi * fj) ** 2 / (fi * fj)
    return total / (d - 1)


def _groups(rows, buckets):
    g = defaultdict(list)
    for r, b in zip(rows, buckets):
        g[b].append(r)
    return g


def _proj(r, attrs):
    return tuple(r[a] for a in attrs)


def matching_degree(rows, columns, sensitive, buckets, t, bucket) -> Fraction:
    """f(t,B) = prod_i f_i(t,B); the sensitive column matched on its attributes other than S."""
    members = _groups(rows, buckets)[bucket]
    f = Fraction(1)
    for col in columns:
        attrs = [a for a in col if a != sensitive]
        if not attrs:
            continue  # C_c = {S}: f_c = 1
        f *= Fraction(sum(1 for u in members if _proj(u, attrs) == _proj(t, attrs)), len(members))
    return f


def tuple_probabilities(rows, columns, sensitive, buckets, t) -> dict:
    """p(t,s) = sum_B p(t,B) D(t,B)[s] for one tuple t (any tuple, in the data or not)."""
    groups = _groups(rows, buckets)
    scol = next(c for c in columns if sensitive in c)
    q = [a for a in scol if a != sensitive]
    fs = {b: matching_degree(rows, columns, sensitive, buckets, t, b) for b in groups}
    total = sum(fs.values())
    p: dict = defaultdict(Fraction)
    if total == 0:
        return {}
    for b, f in fs.items():
        if f == 0:
            continue
        cand = [u[sensitive] for u in groups[b] if _proj(u, q) == _proj(t, q)]
        for s, c in Counter(cand).items():
            p[s] += f / total * Fraction(c, len(cand))
    return dict(p)


def sliced_probabilities(rows, columns, sensitive, buckets) -> list[dict]:
    """p(t,.) for every row t (Eq. 4.1)."""
    return [tuple_probabilities(rows, columns, sensitive, buckets, t) for t in rows]


def worst(rows, columns, sensitive, buckets) -> Fraction:
    return max(max(p.values()) for p in sliced_probabilities(rows, columns, sensitive, buckets))


def is_l_diverse(rows, columns, sensitive, buckets, l) -> bool:
    """Every p(t,s) <= 1/l (Def 4.2.2; not Fig 4.2's ">= 1/l", an erratum)."""
    bound = 1 / Fraction(l).limit_denominator(10**6) if not isinstance(l, int) else Fraction(1, l)
    return worst(rows, columns, sensitive, buckets) <= bound


def matching_buckets(rows, columns, buckets, t) -> int:
    """Buckets holding every column value of t (full values, the sensitive attribute included)."""
    return sum(1 for members in _groups(rows, buckets).values()
               if all(_proj(t, col) in {_proj(u, col) for u in members} for col in columns))


def fake_tuples(rows, columns, sensitive, buckets) -> dict:
    """Candidates = the union over buckets of the cross products of each column's distinct values;
    fakes (a) = candidates not in the data; identity fakes (b) = candidates whose projection on
    all attributes but S is no original's."""
    attrs = [a for col in columns for a in col]
    originals = {_proj(r, attrs) for r in rows}
    non_s = [a for a in attrs if a != sensitive]
    orig_id = {_proj(r, non_s) for r in rows}
    cands: Counter = Counter()
    for members in _groups(rows, buckets).values():
        per_col = [sorted({_proj(u, col) for u in members}, key=repr) for col in columns]
        for combo in product(*per_col):
            vals = dict(zip([a for col in columns for a in col], [v for part in combo for v in part]))
            cands[_proj(vals, attrs)] += 1  # one per bucket: the count is the number of matching buckets
    fake_matching: Counter = Counter()
    fakes = identity = 0
    for c, m in cands.items():
        d = dict(zip(attrs, c))
        if c not in originals:
            fakes += 1
            fake_matching[m] += 1
        if _proj(d, non_s) not in orig_id:
            identity += 1
    original_matching = Counter(matching_buckets(rows, columns, buckets, r) for r in rows)
    return {"candidates": len(cands), "fakes": fakes, "identity_fakes": identity,
            "fake_matching": fake_matching, "original_matching": original_matching}
