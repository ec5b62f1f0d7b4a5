"""Shared checks of a release, judged from what it publishes (the released rows and columns), not
from the QIs the call declared.

* :func:`assert_classes_consistent`: the class column and the tuple of every other published
  column (labels, ``<qi>_lo``/``<qi>_hi``, kept columns) are one-to-one, in one SQL query;
* :func:`class_failures`: every class of a release judged against the privacy model of the
  ``anonymize`` parameters, straight from the definitions in plain Python (counts, entropy with
  the natural log, recursive (c,l), (alpha,k), delta-disclosure, t-closeness, (n,t)-closeness);
* :func:`mondrian_supersets`: the natural supersets of Mondrian classes for (n,t)-closeness
  (every partition a sequence of strict axis-parallel cuts can form from the published boxes);
* :func:`region_failures`: (n,t)-closeness judged by regions of the QI space (every box);
* :func:`assert_rows_covered`: the released rows are the source rows, each released value
  covering the original (a perfect matching, so no row id needs to be published).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

from anonydb.sqlgen import ident

from campaign_oracle import matching
from fulldomain_oracle import emd_equal
from oracle import delta_of, dist_ordered, distinct_l, distribution, emd_lp, entropy_l, recursive_holds


# -- published columns: one-to-one with the class ------------------------------------------------
def assert_classes_consistent(engine, table: str, class_column: str = "eq_class",
                              exclude: Iterable[str | None] = ()) -> None:
    """Every published column of ``table`` but ``class_column`` and ``exclude`` (the sensitive
    attribute; names not in the table are ignored) is constant within each class, and no two
    classes publish the same tuple: count(DISTINCT tuple) per class = 1 and count(DISTINCT class)
    per tuple = 1. NULL is a value (a NULL class id fails). One query over the table."""
    cols = [c for c, _ in engine.columns(table)]
    assert class_column in cols, f"{table} has no {class_column!r} column: {cols}"
    skip = {c for c in exclude if c is not None}
    published = [c for c in cols if c != class_column and c not in skip]
    tup = f"row({', '.join(ident(c) for c in published)})" if published else "0"
    cls = ident(class_column)
    _, bad = engine.fetch_rows(
        f"WITH r AS (SELECT {cls} AS c, {tup} AS t FROM {ident(table)}) "
        f"SELECT 'class', CAST(c AS VARCHAR), count(DISTINCT t), list(DISTINCT CAST(t AS VARCHAR)) "
        f"FROM r GROUP BY c HAVING count(DISTINCT t) <> 1 OR c IS NULL "
        f"UNION ALL "
        f"SELECT 'tuple', CAST(t AS VARCHAR), count(DISTINCT c), list(DISTINCT CAST(c AS VARCHAR)) "
        f"FROM r GROUP BY t HAVING count(DISTINCT c) <> 1")
    assert not bad, (f"{table}: {class_column} and the published tuple of ({', '.join(published)}) are not "
                     f"one-to-one; e.g. " + "; ".join(f"{side} {key} -> {n} distinct: {vals}"
                                                      for side, key, n, vals in bad[:5]))


# -- the privacy models, per class, from the definitions -----------------------------------------
def _exact(x: Any) -> Fraction:
    """A parameter as the decimal the user wrote (0.3 -> 3/10)."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def class_failures(params: Mapping[str, Any], classes: Mapping[Hashable, Sequence], table: Sequence,
                   supersets: Iterable[Iterable[Hashable]] | None = None) -> list[tuple[Hashable, str]]:
    """The classes (key -> sensitive values) that violate the models of ``params`` (the keywords
    of ``anonymize``: k, l + l_variant/c, t + distance, n with t, alpha with k, delta), with the
    reason. ``table``: the whole table's sensitive values (t, (n,t) and delta compare with it).
    ``supersets``: (n,t)-closeness's natural supersets, as sets of class keys (None: the whole
    table only). Ground distance: equal unless ``distance="ordered"``."""
    known = {"k", "l", "l_variant", "c", "t", "distance", "n", "alpha", "delta"}
    assert set(params) <= known, f"no oracle for {set(params) - known}"
    k, l, variant = params.get("k"), params.get("l"), params.get("l_variant") or "distinct"
    t, n, alpha, delta = params.get("t"), params.get("n"), params.get("alpha"), params.get("delta")
    ordered = params.get("distance") == "ordered"
    assert params.get("distance") in (None, "equal", "ordered")
    if ordered:  # rank distance over the whole table's sorted values, as the transportation LP
        dist = dist_ordered(sorted(set(table)))
        emd = lambda v, q: emd_lp(distribution(v), distribution(q), dist)  # noqa: E731
    else:  # equal distance: half the L1 distance, in exact fractions
        emd = emd_equal
    tol = 1e-9 if ordered else 0  # the LP is solved in floats; the equal distance exactly
    sup_members = [set(s) for s in supersets] if supersets is not None else [set(classes)]
    out = []
    for key, vals in classes.items():
        size, counts = len(vals), Counter(vals)
        why = []
        if k is not None and size < k:
            why.append(f"{size} rows < k = {k}")
        if l is not None:
            if variant == "distinct" and distinct_l(vals) < l:
                why.append(f"{distinct_l(vals)} distinct values < l = {l}")
            elif variant == "entropy" and math.log(entropy_l(vals)) < math.log(l) - 1e-9:
                why.append(f"entropy ln {entropy_l(vals):.6f} < ln {l}")
            elif variant == "recursive" and not recursive_holds(vals, _exact(params["c"]), l):
                why.append(f"counts {sorted(counts.values(), reverse=True)} fail recursive ({params['c']},{l})")
            elif variant == "probabilistic" and max(counts.values()) * _exact(l) > size:
                why.append(f"max frequency {max(counts.values())}/{size} > 1/{l}")
        if t is not None and n is None and emd(vals, table) > _exact(t) + tol:
            why.append(f"EMD {float(emd(vals, table)):.6f} > t = {t}")
        if n is not None and size < n:
            near = [sum(len(classes[c]) for c in s) for s in sup_members if key in s]
            ok = [s for s in sup_members if key in s and sum(len(classes[c]) for c in s) >= n
                  and emd(vals, [v for c in s for v in classes[c]]) <= _exact(t) + tol]
            if not ok:
                why.append(f"{size} rows < n = {n} and no natural superset of >= n rows within t = {t} "
                           f"(superset sizes {sorted(set(near))})")
        if alpha is not None and max(counts.values()) > _exact(alpha) * size:
            why.append(f"max frequency {max(counts.values())}/{size} > alpha = {alpha}")
        if delta is not None and not delta_of(vals, table) < delta:
            why.append(f"max |ln(p(E,s)/p(T,s))| = {delta_of(vals, table)} >= delta = {delta}")
        if why:
            out.append((key, "; ".join(why)))
    return out


# -- Mondrian's natural supersets from the published boxes ---------------------------------------
Box = Sequence[tuple[Any, Any]]  # per dimension (lo, hi) in a common order (codes, ranks, values)


def mondrian_supersets(boxes: Mapping[Hashable, Box], limit: int = 20_000) -> set[frozenset] | None:
    """Every set of classes a sequence of strict Mondrian cuts can form from the whole table: a
    superset of the partitions of the tree that made the release (the natural supersets of
    (n,t)-closeness, Li thesis Fig 2.1), reconstructed from the published boxes alone.

    A strict cut at m on dimension d sends the classes with hi_d <= m left and those with
    lo_d > m right (no class may straddle), so each set formed holds exactly the records inside
    a box: a region of the QI space. Every set formed is cut again. None when more than
    ``limit`` sets arise. (Relaxed cuts split equal tuples, so their halves are no regions;
    anonydb refuses (n,t) with them.)"""
    root = frozenset(boxes)
    dims = len(next(iter(boxes.values())))
    seen, todo = {root}, [root]
    while todo:
        part = todo.pop()
        if len(part) < 2:
            continue
        for d in range(dims):
            for m in sorted({boxes[c][d][1] for c in part}):
                left = frozenset(c for c in part if boxes[c][d][1] <= m)
                if not left or left == part or any(boxes[c][d][0] <= m for c in part - left):
                    continue
                for half in (left, part - left):
                    if half not in seen:
                        seen.add(half)
                        todo.append(half)
                        if len(seen) > limit:
                            return None
    return seen


def region_failures(params: Mapping[str, Any], points: Sequence[tuple], values: Sequence,
                    classes: Mapping[Hashable, Sequence[int]]) -> list[tuple[Hashable, str]]:
    """(n,t)-closeness judged by regions of the QI space [Li thesis Def 2.2.2]: a class of fewer
    than n records holds when some box over the QI values (every dimension a run of the sorted
    values present, NULL last, as Mondrian codes them) contains all its records and at least n
    records in all, with an equal-distance EMD <= t between the class and the box's records.
    ``points``: each record's QI tuple; ``values``: its sensitive value; ``classes``: the record
    indexes of each class. Brute force over every box, for small tables."""
    n, t = params["n"], _exact(params["t"])
    dims = len(points[0]) if points else 0
    rank = [{v: i for i, v in enumerate(sorted({p[d] for p in points}, key=lambda v: (v is None, v)))}
            for d in range(dims)]
    coded = [tuple(rank[d][p[d]] for d in range(dims)) for p in points]

    def inside(p, box):
        return all(lo <= v <= hi for v, (lo, hi) in zip(p, box))

    def intervals(d, need):  # runs [lo, hi] of the sorted values (NULL last) covering need
        return [(lo, hi) for lo in range(min(need) + 1) for hi in range(max(need), len(rank[d]))]

    out = []
    for key, rows in classes.items():
        if len(rows) >= n:
            continue
        own = [values[i] for i in rows]
        per_dim = [intervals(d, {coded[i][d] for i in rows}) for d in range(dims)]
        ok = False
        for box in (itertools.product(*per_dim) if dims else [()]):
            members = [values[i] for i, p in enumerate(coded) if inside(p, box)]
            if len(members) >= n and emd_equal(own, members) <= t:
                ok = True
                break
        if not ok:
            out.append((key, f"{len(rows)} rows < n = {n} and no region of >= n records within t = {t}"))
    return out


# -- the released rows are the source rows ---------------------------------------------------------
def assert_rows_covered(source: Sequence[Any], released: Sequence[Any], covers: Callable[[Any, Any], bool]) -> None:
    """A one-to-one map from the released rows onto the source rows with ``covers(source_row,
    released_row)`` for every pair (campaign_oracle.matching, Kuhn's augmenting paths): every
    source row is released once, generalized to values that cover its own."""
    assert len(released) == len(source), f"{len(released)} rows released for {len(source)} source rows"
    assert matching(source, released, covers) is not None, \
        "no one-to-one map of the released rows onto source rows they cover"
