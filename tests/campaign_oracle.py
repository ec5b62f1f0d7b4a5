"""Brute-force oracles for the random campaign (tests/test_campaign.py), in plain Python.

Nothing here imports anonydb: a release is judged from the rows it publishes and the source rows,
straight from the definitions, with exact fractions wherever the definition allows (the
hierarchical EMD alone is a float linear program, :func:`oracle.emd_lp`).

* :class:`Models`: the privacy models of ``anonymize``'s keywords (k; l distinct, entropy,
  recursive (c,l), probabilistic; t with the equal, ordered or hierarchical ground distance; n with
  t; alpha with k; delta-disclosure) judging one group's sensitive values, and the EMDs;
* :func:`matching`: a one-to-one map of released rows onto source rows that they cover (Kuhn's
  augmenting paths), and :func:`assignment_exists`: whether source tuples can be dealt into
  groups so that every group shows exactly its published multisets (QIT/ST pairs, sliced columns;
  an integer program);
* (n,t)-closeness's natural supersets: :func:`region_failures` (Mondrian: the records inside a box
  of the QI space, every dimension a run of its values in the cut order, NULL last) and
  :func:`subset_failures` (full-domain: the released records agreeing with a group on a subset of
  its published QI columns, the empty subset being the whole release);
* :func:`lattice`: every node of a full-domain lattice judged (no pruning, no monotonicity), with
  the rows its failing groups would suppress;
* :func:`sliced_failures`: Li thesis Def 4.2.2 from the published column tables (p(t, s) of every
  source tuple t, Eq. 4.1), :func:`presence_failures`: delta-presence of a release against its
  public table (every public row mapped to the class that covers it).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from fractions import Fraction
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from oracle import dist_hier, emd_lp
from injector_oracle import mine, valid_sets  # noqa: F401  (re-exported for the campaign)


def exact(x: Any) -> Fraction:
    """A parameter as the decimal the user wrote (0.3 -> 3/10)."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def sort_key(v: Any) -> tuple:
    return (v is None, v)


# -- distances ----------------------------------------------------------------------------------
def emd_equal(p: Sequence, q: Sequence) -> Fraction:
    """Equal ground distance: the total variation distance 1/2 sum |p - q|, exact."""
    cp, cq = Counter(p), Counter(q)
    return sum((abs(Fraction(cp[v], len(p)) - Fraction(cq[v], len(q))) for v in set(cp) | set(cq)),
               Fraction(0)) / 2


def emd_ordered(p: Sequence, q: Sequence, domain: Sequence) -> Fraction:
    """Ordered ground distance |rank(a) - rank(b)| / (m - 1) over ``domain`` (sorted, m values):
    the EMD is the sum of the absolute cumulative differences / (m - 1), exact."""
    m = len(domain)
    if m <= 1:
        return Fraction(0)
    cp, cq = Counter(p), Counter(q)
    acc, total = Fraction(0), Fraction(0)
    for v in domain:
        acc += Fraction(cp[v], len(p)) - Fraction(cq[v], len(q))
        total += abs(acc)
    return total / (m - 1)


class Models:
    """The models of ``params`` (anonymize's keywords) over a table whose sensitive values are
    ``table`` (t-closeness and delta-disclosure compare with it; ordered EMD ranks its values; without
    a distance, a numeric attribute takes the ordered one, as anonydb documents). ``chains``: the
    sensitive hierarchy as leaf -> [leaf, level 1, ..., root] (hierarchical EMD)."""

    KNOWN = {"k", "l", "l_variant", "c", "t", "distance", "n", "alpha", "delta"}

    def __init__(self, params: Mapping[str, Any], table: Sequence, chains: Mapping[Any, list] | None = None):
        assert set(params) <= self.KNOWN, f"no oracle for {set(params) - self.KNOWN}"
        self.p = dict(params)
        self.table = list(table)
        self.domain = sorted(set(self.table), key=sort_key)
        # the documented default ground distance (no sensitive hierarchy is given without a distance
        # here): ordered for a numeric sensitive attribute, equal otherwise
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.table)
        self.distance = params.get("distance") or ("ordered" if numeric else "equal")
        self.chains = chains
        self.tol = 1e-9 if self.distance == "hierarchical" else 0

    # EMD between two lists of sensitive values
    def emd(self, p: Sequence, q: Sequence) -> Fraction | float:
        if self.distance == "equal":
            return emd_equal(p, q)
        if self.distance == "ordered":
            return emd_ordered(p, q, self.domain)
        assert self.distance == "hierarchical" and self.chains is not None
        chains = {str(k): [str(x) for x in v] for k, v in self.chains.items()}
        dist = dist_hier(chains)
        cp, cq = Counter(str(v) for v in p), Counter(str(v) for v in q)
        return emd_lp({v: c / len(p) for v, c in cp.items()}, {v: c / len(q) for v, c in cq.items()}, dist)

    def within_t(self, p: Sequence, q: Sequence) -> bool:
        return self.emd(p, q) <= exact(self.p["t"]) + self.tol

    def failure(self, vals: Sequence) -> str | None:
        """Why a group of sensitive values ``vals`` fails a model other than (n,t), or None."""
        p, size, counts = self.p, len(vals), Counter(vals)
        why = []
        if size == 0:
            return "empty group"
        k, l, variant = p.get("k"), p.get("l"), p.get("l_variant") or "distinct"
        if k is not None and size < k:
            why.append(f"{size} rows < k = {k}")
        if l is not None:
            lf = exact(l)
            if variant == "distinct" and len(counts) < lf:
                why.append(f"{len(counts)} distinct values < l = {l}")
            elif variant == "entropy":
                # -sum p ln p >= ln l  <=>  n^n >= l^n prod c^c (exact, l = a/b: n^n b^n >= a^n prod c^c)
                lhs = size ** size * lf.denominator ** size
                rhs = lf.numerator ** size
                for c in counts.values():
                    rhs *= c ** c
                if lhs < rhs:
                    why.append(f"entropy of {dict(counts)} < ln {l}")
            elif variant == "recursive":
                r = sorted(counts.values(), reverse=True)
                if not r[0] < exact(p["c"]) * sum(r[int(l) - 1:]):
                    why.append(f"counts {r} fail recursive ({p['c']},{l})")
            elif variant == "probabilistic" and max(counts.values()) * lf > size:
                why.append(f"max frequency {max(counts.values())}/{size} > 1/{l}")
        t, n = p.get("t"), p.get("n")
        if t is not None and n is None and not self.within_t(vals, self.table):
            why.append(f"EMD {float(self.emd(vals, self.table)):.6f} > t = {t}")
        alpha = p.get("alpha")
        if alpha is not None and max(counts.values()) > exact(alpha) * size:
            why.append(f"max frequency {max(counts.values())}/{size} > alpha = {alpha}")
        delta = p.get("delta")
        if delta is not None:
            tc = Counter(self.table)
            for s in self.domain:
                if counts[s] == 0:
                    why.append(f"lacks {s!r}: delta-disclosure fails for every delta")
                    break
                r = Fraction(counts[s], size) / Fraction(tc[s], len(self.table))
                if not abs(math.log(r)) < delta:
                    why.append(f"|ln p(E,{s!r})/p(T,{s!r})| = {abs(math.log(r)):.6f} >= delta = {delta}")
                    break
        return "; ".join(why) or None

    def nt_ok(self, vals: Sequence, supersets: Iterable[Sequence]) -> bool:
        """(n,t) for one group: >= n records, or some superset (its sensitive values) of >= n
        records within t."""
        n = self.p["n"]
        if len(vals) >= n:
            return True
        return any(len(sup) >= n and self.within_t(vals, sup) for sup in supersets)


# -- accounting -----------------------------------------------------------------------------------
def matching(source: Sequence, released: Sequence, covers: Callable[[Any, Any], bool]) -> list[int] | None:
    """A one-to-one map (released row j -> source row index) with covers(source, released) for
    every pair, or None when there is none (Kuhn's augmenting paths)."""
    if len(source) != len(released):
        return None
    fits = [[i for i, s in enumerate(source) if covers(s, r)] for r in released]
    owner: dict[int, int] = {}

    def place(j: int, tried: set) -> bool:
        for i in fits[j]:
            if i not in tried:
                tried.add(i)
                if i not in owner or place(owner[i], tried):
                    owner[i] = j
                    return True
        return False

    for j in range(len(released)):
        if not place(j, set()):
            return None
    out = [0] * len(released)
    for i, j in owner.items():
        out[j] = i
    return out


def assignment_exists(source: Sequence[tuple], views: Sequence[Sequence[int]],
                      groups: Mapping[Hashable, Sequence[Counter]]) -> bool:
    """Whether the source tuples can be dealt into the groups so that, for every group g and view
    v (a list of positions), the projections of g's tuples on v are exactly ``groups[g][v]`` (a
    Counter): the release publishes, per group, only these multisets (a QIT and an ST; sliced
    columns), so some such dealing must exist. An integer program over (group, distinct tuple)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    tuples = Counter(tuple(t) for t in source)
    kinds = list(tuples)
    gs = list(groups)
    for g in gs:  # every published projection must come from some tuple
        for v, want in zip(views, groups[g]):
            have = {tuple(t[i] for i in v) for t in kinds}
            if set(want) - have:
                return False
    nv = len(gs) * len(kinds)
    rows, rhs = [], []
    for a, t in enumerate(kinds):  # each tuple dealt as often as it occurs
        r = np.zeros(nv)
        r[[g * len(kinds) + a for g in range(len(gs))]] = 1
        rows.append(r)
        rhs.append(tuples[t])
    for gi, g in enumerate(gs):
        for v, want in zip(views, groups[g]):
            projs = {tuple(t[i] for i in v) for t in kinds} | set(want)
            for pr in projs:
                r = np.zeros(nv)
                for a, t in enumerate(kinds):
                    if tuple(t[i] for i in v) == pr:
                        r[gi * len(kinds) + a] = 1
                rows.append(r)
                rhs.append(want.get(pr, 0))
    A, b = np.array(rows), np.array(rhs, dtype=float)
    res = milp(c=np.zeros(nv), constraints=LinearConstraint(A, b, b), integrality=np.ones(nv),
               bounds=Bounds(0, np.inf))
    return res.status == 0


# -- (n,t)-closeness's natural supersets ----------------------------------------------------------
def region_failures(models: Models, points: Sequence[tuple], values: Sequence, orders: Sequence[Sequence],
                    classes: Mapping[Hashable, Sequence[int]]) -> list[tuple[Hashable, str]]:
    """(n,t) by regions [Li thesis Def 2.2.2]: a class of fewer than n records holds when some box
    (every dimension a run of ``orders[d]``, the QI's values in the order Mondrian cuts them)
    holds all its records, >= n records in all, within t of the class. ``points``: each record's
    QI tuple, ``values``: its sensitive value, ``classes``: record indexes per class."""
    n = models.p["n"]
    dims = len(orders)
    rank = [{v: i for i, v in enumerate(o)} for o in orders]
    coded = [tuple(rank[d][p[d]] for d in range(dims)) for p in points]
    seen: dict[tuple, bool] = {}
    out = []
    for key, rows in classes.items():
        if len(rows) >= n:
            continue
        own = [values[i] for i in rows]
        spans = []
        for d in range(dims):
            lo, hi = min(coded[i][d] for i in rows), max(coded[i][d] for i in rows)
            spans.append([(a, b) for a in range(lo + 1) for b in range(hi, len(orders[d]))])
        ok = False
        for box in itertools.product(*spans):
            members = [values[i] for i, p in enumerate(coded) if all(a <= x <= b for x, (a, b) in zip(p, box))]
            if len(members) < n:
                continue
            sig = (tuple(sorted(Counter(own).items(), key=lambda kv: sort_key(kv[0]))),
                   tuple(sorted(Counter(members).items(), key=lambda kv: sort_key(kv[0]))))
            if sig not in seen:
                seen[sig] = models.within_t(own, members)
            if seen[sig]:
                ok = True
                break
        if not ok:
            out.append((key, f"{len(rows)} rows < n = {n} and no region of >= n records within t = "
                             f"{models.p['t']}"))
    return out


def subset_failures(models: Models, tuples: Sequence[tuple], values: Sequence,
                    classes: Mapping[Hashable, Sequence[int]]) -> list[tuple[Hashable, str]]:
    """(n,t) for a full-domain release: the natural supersets of a group are the released records
    agreeing with it on a subset of the published QI columns (``tuples``: each released record's
    QI labels; the empty subset is the whole release)."""
    d = len(tuples[0]) if tuples else 0
    out = []
    for key, rows in classes.items():
        if len(rows) >= models.p["n"]:
            continue
        own = [values[i] for i in rows]
        g = tuples[rows[0]]
        sups = ([values[i] for i, u in enumerate(tuples) if all(u[j] == g[j] for j in sub)]
                for r in range(d) for sub in itertools.combinations(range(d), r))
        if not models.nt_ok(own, sups):
            out.append((key, f"{len(rows)} rows < n = {models.p['n']} and no QI-subset superset within "
                             f"t = {models.p['t']}"))
    return out


# -- full-domain lattice --------------------------------------------------------------------------
def lattice(points: Sequence[tuple], chains: Sequence[Mapping[Any, list]],
            judge: Callable[[dict[tuple, list[int]]], set]) -> dict[tuple[int, ...], tuple[int, dict]]:
    """Every node (L_1..L_d): its groups (generalized tuple -> record indexes; NULL stays NULL at
    every level) and the rows of the groups ``judge`` (groups -> failing keys) rejects.
    ``chains[i]``: QI i's hierarchy as value -> [value, level 1, ..., root]."""
    heights = [len(next(iter(c.values()))) - 1 for c in chains]
    out = {}
    for node in itertools.product(*(range(h + 1) for h in heights)):
        groups: dict[tuple, list[int]] = defaultdict(list)
        for j, p in enumerate(points):
            groups[tuple(None if v is None else chains[i][v][node[i]] for i, v in enumerate(p))].append(j)
        failing = judge(dict(groups))
        out[node] = (sum(len(groups[g]) for g in failing), dict(groups))
    return out


# -- slicing ----------------------------------------------------------------------------------------
def sliced_failures(source: Sequence[Mapping], sensitive: str, columns: Sequence[Sequence[str]],
                    buckets: Mapping[Hashable, Sequence[Sequence[tuple]]], l: Any) -> list[str]:
    """Li thesis Def 4.2.2 from a sliced release: ``buckets[b][c]`` is the list of column c's
    published tuples (its attributes in ``columns[c]`` order) in bucket b. For every source tuple t
    and value s, p(t, s) = sum_B f(t, B) / sum f * D(t, B)[s] <= 1/l (Eq. 4.1), with f(t, B) the
    product over columns of the share of B's entries matching t (the sensitive column on its other
    attributes), D(t, B) the sensitive values of B's entries matching t there. A tuple matching no
    bucket fails (the release does not account for it)."""
    bound = 1 / exact(l)
    si = next(i for i, c in enumerate(columns) if sensitive in c)
    qpos = [j for j, a in enumerate(columns[si]) if a != sensitive]
    spos = columns[si].index(sensitive)
    out = []
    for t in {tuple(sorted(r.items(), key=lambda kv: kv[0])) for r in source}:
        row = dict(t)
        f: dict[Hashable, Fraction] = {}
        for b, cols in buckets.items():
            size = len(cols[0])
            deg = Fraction(1)
            for ci, col in enumerate(cols):
                if ci == si:
                    if not qpos:
                        continue
                    want = tuple(row[columns[si][j]] for j in qpos)
                    m = sum(1 for e in col if tuple(e[j] for j in qpos) == want)
                else:
                    want = tuple(row[a] for a in columns[ci])
                    m = sum(1 for e in col if tuple(e) == want)
                deg *= Fraction(m, size)
                if not deg:
                    break
            if deg:
                f[b] = deg
        total = sum(f.values(), Fraction(0))
        if not total:
            out.append(f"tuple {row} matches no bucket")
            continue
        p: dict[Any, Fraction] = defaultdict(Fraction)
        for b, deg in f.items():
            sc = buckets[b][si]
            want = tuple(row[columns[si][j]] for j in qpos)
            cand = [e[spos] for e in sc if tuple(e[j] for j in qpos) == want]
            for s, c in Counter(cand).items():
                p[s] += deg / total * Fraction(c, len(cand))
        worst = max(p.items(), key=lambda kv: kv[1])
        if worst[1] > bound:
            out.append(f"tuple {row}: p(t, {worst[0]!r}) = {worst[1]} > 1/{l}")
    return out


# -- delta-presence ---------------------------------------------------------------------------------
def presence_failures(public: Sequence[tuple], classes: Mapping[Hashable, int],
                      covers: Callable[[tuple, Hashable], bool], dmin: Any, dmax: Any) -> list[str]:
    """delta-presence of a release against its public table P [Nergiz & Clifton Def 7]: every P
    row maps to the class whose published values cover it (no row to two classes); a class's
    presence is its released rows over its P rows, within [dmin, dmax]; P rows no class covers
    have presence 0. ``classes``: class key -> released rows."""
    lo, hi = exact(dmin), exact(dmax)
    per: Counter = Counter()
    uncovered = 0
    out = []
    for p in public:
        owners = [c for c in classes if covers(p, c)]
        if len(owners) > 1:
            out.append(f"public row {p} is covered by {len(owners)} classes")
        elif not owners:
            uncovered += 1
        else:
            per[owners[0]] += 1
    if uncovered and lo > 0:
        out.append(f"{uncovered} public rows in no class: presence 0 < {dmin}")
    for c, n_t in classes.items():
        if per[c] == 0:
            out.append(f"class {c} covers no public row")
            continue
        pr = Fraction(n_t, per[c])
        if not lo <= pr <= hi:
            out.append(f"class {c}: presence {n_t}/{per[c]} outside [{dmin}, {dmax}]")
    return out
