"""Pure-numpy core of the anonydb UDFs: whole batches of histograms at once, no DuckDB needed.

A batch of ``n`` lists is given flattened, as ``values`` (float64, all lists one after another)
and ``offsets`` (int64, length ``n + 1``; row ``r`` is ``values[offsets[r]:offsets[r+1]]``),
which is exactly how Arrow lays out a list column.  :func:`flatten` builds that pair from a
Python list of sequences.  Every function computes with segment operations (``np.bincount``
by row id, cumulative sums minus the segment start, ``np.lexsort`` by row) and never loops over
rows in Python.

Conventions shared by all functions:

* histograms may be raw counts; they are normalized to sum 1 per row;
* a row whose histogram sums to 0 (including an empty list) has no distribution: the result
  is NaN (the DuckDB wrappers turn NaN into NULL);
* negative masses are an error (:class:`ValueError` naming the function).

Sources: N. Li, T. Li, S. Venkatasubramanian, "t-Closeness: Privacy Beyond k-Anonymity and
l-Diversity", ICDE 2007 (EMD with equal, ordered and hierarchical ground distances), and
N. Li's PhD thesis (Purdue, 2010) §2.3.3 (the same closed forms); A. Machanavajjhala et al.,
"l-Diversity: Privacy Beyond k-Anonymity", ICDE 2006 / TKDD 2007 (entropy and recursive
(c,l)-diversity).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "Hierarchy",
    "emd_equal",
    "emd_hierarchical",
    "emd_hierarchical_per_row",
    "emd_ordered",
    "entropy",
    "flatten",
    "matching_pairing",
    "l_entropy",
    "recursive_cl",
]

# Above this many incidence-matrix entries (leaves x internal nodes) the shared-hierarchy EMD
# aggregates level by level with np.add.reduceat instead of a dense matrix product.
_MAX_INCIDENCE = 1 << 20


# --------------------------------------------------------------------------- helpers


def flatten(rows: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, offsets)`` of a list of sequences: float64 values, int64 offsets of length n+1."""
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1]:
        values = np.concatenate([np.asarray(r, dtype=np.float64).ravel() for r in rows if len(r)])
    else:
        values = np.zeros(0, dtype=np.float64)
    return values, offsets


def _as_offsets(offsets: Any) -> np.ndarray:
    off = np.asarray(offsets, dtype=np.int64)
    if off.ndim != 1 or off.size == 0:
        raise ValueError("offsets must be a 1-d array of length n + 1")
    return off - off[0]


def _row_ids(offsets: np.ndarray) -> np.ndarray:
    """Row number of every flattened value."""
    return np.repeat(np.arange(offsets.size - 1), np.diff(offsets))


def _segsum(ids: np.ndarray, weights: np.ndarray, minlength: int = 0) -> np.ndarray:
    """Float64 sums of ``weights`` by ``ids`` (np.bincount, which returns int64 when empty)."""
    return np.bincount(ids, weights=weights, minlength=minlength).astype(np.float64, copy=False)


def _uniform_length(offsets: np.ndarray) -> int | None:
    """The common list length when every row has the same one (and n > 0), else None."""
    lengths = np.diff(offsets)
    if lengths.size and (lengths == lengths[0]).all():
        return int(lengths[0])
    return None


def _values(name: str, arg: str, values: Any, offsets: np.ndarray) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size != offsets[-1]:
        raise ValueError(f"{name}: {arg} has {v.size} values but the offsets describe {offsets[-1]}")
    if (v < 0).any():
        raise ValueError(f"{name}: {arg} holds a negative mass ({v[v < 0][0]!r}); histograms must be >= 0")
    return v


def _normalize(v: np.ndarray, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row divided by its total; also returns the per-row totals (rows with total 0 give NaN)."""
    total = _segsum(rows, weights=v, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return v / total[rows], total


def _difference(name: str, p_values: Any, q_values: Any, offsets: Any):
    """(normalized p - normalized q, row ids, offsets, n, undefined-row mask)."""
    off = _as_offsets(offsets)
    n = off.size - 1
    p = _values(name, "p", p_values, off)
    q = _values(name, "q", q_values, off)
    rows = _row_ids(off)
    pn, pt = _normalize(p, rows, n)
    qn, qt = _normalize(q, rows, n)
    undefined = (pt <= 0) | (qt <= 0)
    return pn - qn, rows, off, n, undefined


def _segment_cumsum(d: np.ndarray, off: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cumulative sum restarting at every row (flattened like ``d``)."""
    m = _uniform_length(off)
    if m is not None:
        return np.cumsum(d.reshape(-1, m), axis=1).ravel() if m else d
    cs = np.cumsum(d)
    before = np.concatenate(([0.0], cs))[off[:-1]]  # running total just before each row starts
    return cs - before[rows]


def _group_ids(*keys: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """Dense ids of the distinct key tuples: (id per element, number of groups, first element of each group)."""
    size = keys[0].size
    if size == 0:
        return np.zeros(0, dtype=np.int64), 0, np.zeros(0, dtype=np.int64)
    order = np.lexsort(keys[::-1])  # first key is the primary one
    new = np.zeros(size, dtype=bool)
    new[0] = True
    for k in keys:
        ks = k[order]
        new[1:] |= ks[1:] != ks[:-1]
    sorted_ids = np.cumsum(new) - 1
    ids = np.empty(size, dtype=np.int64)
    ids[order] = sorted_ids
    return ids, int(sorted_ids[-1]) + 1, order[new]


# --------------------------------------------------------------------------- EMD


def emd_equal(p_values: Any, q_values: Any, offsets: Any) -> np.ndarray:
    """EMD under the equal ground distance (every pair of distinct values at distance 1).

    ``D[P,Q] = 1/2 * sum_i |p_i - q_i|`` after normalizing p and q to sum 1 (the total
    variation distance).  p and q share ``offsets`` (aligned histograms over one domain).
    Source: Li, Li, Venkatasubramanian, t-closeness, ICDE 2007 §4.2 / Li thesis 2010 §2.3.3.
    """
    d, rows, off, n, undefined = _difference("emd_equal", p_values, q_values, offsets)
    out = 0.5 * _segsum(rows, weights=np.abs(d), minlength=n)
    out[undefined] = np.nan
    return out


def emd_ordered(p_values: Any, q_values: Any, offsets: Any) -> np.ndarray:
    """EMD under the ordered distance ``|i - j| / (m - 1)`` over the list order (the sorted domain).

    ``D[P,Q] = 1/(m-1) * sum_{i=1..m} |sum_{j<=i} (p_j - q_j)|`` after normalizing p and q to
    sum 1; a one-value domain (m = 1) gives 0.
    Source: Li, Li, Venkatasubramanian, t-closeness, ICDE 2007 §4.2 / Li thesis 2010 §2.3.3.
    """
    d, rows, off, n, undefined = _difference("emd_ordered", p_values, q_values, offsets)
    cum = np.abs(_segment_cumsum(d, off, rows))
    lengths = np.diff(off)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = _segsum(rows, weights=cum, minlength=n) / np.maximum(lengths - 1, 1)
    out[undefined] = np.nan
    return out


class Hierarchy:
    """A balanced generalization hierarchy over an ordered leaf domain.

    ``paths[i]`` is leaf i's chain ``[leaf, level 1, ..., root]`` (one row of an ARX hierarchy
    file); every chain has the same length ``H + 1``.  A node is identified by
    ``(level, label)``, so one label may appear at several levels.  Each node must have a single
    parent and all chains must end in one root (else :class:`ValueError`).

    Attributes: ``m`` (number of leaves), ``height`` (H), ``nodes`` (int array m x (H+1): the
    dense node id of leaf i's ancestor at each level, ids unique across levels), ``incidence``
    (float64 m x K: 1 where leaf i lies below internal node k, over the K nodes of levels
    1..H-1, i.e. excluding leaves and root).
    """

    def __init__(self, paths: Sequence[Sequence[Any]], name: str = "emd_hierarchical"):
        chains = [tuple(p) for p in paths]
        self.m = len(chains)
        if self.m == 0:
            raise ValueError(f"{name}: the hierarchy has no leaves")
        lengths = sorted({len(c) for c in chains})
        if len(lengths) > 1:
            raise ValueError(f"{name}: all paths must have the same length (got {lengths[0]} and {lengths[-1]})")
        if lengths[0] == 0:
            raise ValueError(f"{name}: a path is empty; each path is [leaf, ..., root]")
        self.height = lengths[0] - 1
        flat = [str(x) if x is not None else None for c in chains for x in c]
        if any(x is None for x in flat):
            raise ValueError(f"{name}: a path holds a NULL label")
        uniq, codes = np.unique(np.array(flat, dtype=object).astype(str), return_inverse=True)
        names = [str(x) for x in uniq]
        path_offsets = np.arange(self.m + 1, dtype=np.int64) * (self.height + 1)
        leaf_rows = np.zeros(self.m, dtype=np.int64)
        node = _tree(name, leaf_rows, path_offsets, codes.astype(np.int64), names)[0]
        self.nodes = node.reshape(self.m, self.height + 1)  # dense ids, unique across levels
        # columns: the internal (non-leaf, non-root) nodes, levels 1..H-1
        internal = self.nodes[:, 1:self.height] if self.height > 1 else self.nodes[:, :0]
        ids, k, _ = _group_ids(internal.ravel())
        self.incidence = np.zeros((self.m, k), dtype=np.float64)
        self.incidence[np.repeat(np.arange(self.m), internal.shape[1]), ids] = 1.0

    def ground_distance(self) -> np.ndarray:
        """m x m matrix of height(lowest common ancestor) / H (0 when H = 0)."""
        same = self.nodes[:, None, :] == self.nodes[None, :, :]  # equal ancestors at each level
        lca = np.argmax(same, axis=2)  # first level where the chains meet (they meet at the root)
        return lca / self.height if self.height else np.zeros((self.m, self.m))


def _tree(name: str, leaf_rows: np.ndarray, path_offsets: np.ndarray, labels: np.ndarray,
          names: Sequence[str] | None = None):
    """Node ids of a batch of per-row hierarchies, validated.

    ``leaf_rows[k]`` is the row of leaf k, ``labels[path_offsets[k]:path_offsets[k+1]]`` its
    chain (integer label codes).  Returns (node id per label, level per label, row height H per
    of every row 0..max(leaf_rows), leaf of every label, first label of every node).
    """
    plen = np.diff(path_offsets)
    n_leaves = plen.size
    if (plen == 0).any():
        raise ValueError(f"{name}: a path is empty; each path is [leaf, ..., root]")
    n_rows = int(leaf_rows.max()) + 1 if n_leaves else 0
    # all chains of one row must have the same length: compare each with the row's first chain
    first = np.full(n_rows, -1, dtype=np.int64)
    first[leaf_rows[::-1]] = np.arange(n_leaves)[::-1]  # first leaf of each row
    row_len = np.where(first >= 0, plen[np.maximum(first, 0)], 1)
    bad = np.flatnonzero(plen != row_len[leaf_rows])
    if bad.size:
        k = bad[0]
        raise ValueError(f"{name}: all paths must have the same length "
                         f"(got {row_len[leaf_rows[k]]} and {plen[k]})")
    height = row_len - 1
    leaf_of = np.repeat(np.arange(n_leaves), plen)
    level = np.arange(labels.size) - path_offsets[leaf_of]
    row_of = leaf_rows[leaf_of]
    node, n_nodes, first_of_node = _group_ids(row_of, level, labels)
    # a node has exactly one parent: distinct (child, parent) pairs, at most one per child
    not_top = level < height[row_of]
    child = node[:-1][not_top[:-1]]  # a label below the top of its chain is followed by its parent
    parent = node[1:][not_top[:-1]]
    if child.size:
        _, _, pair_first = _group_ids(child, parent)
        parents = np.bincount(child[pair_first], minlength=n_nodes)
        if (parents > 1).any():
            bad_node = int(np.flatnonzero(parents > 1)[0])
            lab = labels[first_of_node[bad_node]]
            label = names[lab] if names is not None else lab
            raise ValueError(f"{name}: inconsistent hierarchy: {label!r} at level "
                             f"{level[first_of_node[bad_node]]} has more than one parent")
    # one root per row
    roots = first_of_node[level[first_of_node] == height[row_of[first_of_node]]]
    if roots.size:
        per_row = np.bincount(row_of[roots], minlength=n_rows)
        if (per_row > 1).any():
            r = roots[row_of[roots] == np.flatnonzero(per_row > 1)[0]]
            got = [names[labels[i]] if names is not None else labels[i] for i in r[:2]]
            raise ValueError(f"{name}: the paths must end in a single root (got {got[0]!r} and {got[1]!r})")
    return node, level, height, leaf_of, first_of_node


def emd_hierarchical(p_values: Any, q_values: Any, offsets: Any, hierarchy: Hierarchy | Sequence[Sequence[Any]],
                     *, method: str = "auto") -> np.ndarray:
    """EMD under the hierarchical distance, every row over the same hierarchy.

    Ground distance between leaves = height(lowest common ancestor) / H.  With
    ``extra(leaf) = p_i - q_i`` (normalized), ``extra(N)`` = sum of the extras of N's direct
    children, ``cost(N) = height(N)/H * min(pos_extra(N), neg_extra(N))`` (sums of the positive
    and of the absolute negative extras of N's children): ``D[P,Q] = sum over non-leaf N of
    cost(N)``.  For a balanced tree this equals ``1/(2H) * sum over non-root nodes x, leaves
    included, of |extra(x)|``, computed here as ``(sum|E| + sum|E @ A|) / (2H)`` with E the
    n x m matrix of extras and A the leaf -> internal-node incidence matrix (``method="matrix"``)
    or level by level with ``np.add.reduceat`` (``method="reduceat"``, used for big trees).
    H = 0 (single-node tree) gives 0.
    Source: Li, Li, Venkatasubramanian, t-closeness, ICDE 2007 §4.2 / Li thesis 2010 §2.3.3.
    """
    name = "emd_hierarchical"
    h = hierarchy if isinstance(hierarchy, Hierarchy) else Hierarchy(hierarchy, name)
    off = _as_offsets(offsets)
    lengths = np.diff(off)
    bad = np.flatnonzero(lengths != h.m)
    if bad.size:
        raise ValueError(f"{name}: p, q and paths must have the same length (got {lengths[bad[0]]} values "
                         f"in p and q, {h.m} paths)")
    d, rows, off, n, undefined = _difference(name, p_values, q_values, off)
    if h.height == 0:
        out = np.zeros(n)
    else:
        e = d.reshape(n, h.m)
        total = np.abs(e).sum(axis=1)
        if method == "auto":
            method = "matrix" if h.incidence.size <= _MAX_INCIDENCE else "reduceat"
        if method == "matrix":
            total += np.abs(e @ h.incidence).sum(axis=1)
        elif method == "reduceat":
            for level in range(1, h.height):
                order = np.argsort(h.nodes[:, level], kind="stable")
                ids = h.nodes[order, level]
                starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
                if n:
                    total += np.abs(np.add.reduceat(e[:, order], starts, axis=1)).sum(axis=1)
        else:
            raise ValueError(f"{name}: unknown method {method!r}")
        out = total / (2 * h.height)
    out[undefined] = np.nan
    return out


def emd_hierarchical_per_row(p_values: Any, q_values: Any, offsets: Any, path_offsets: Any, labels: Any,
                             names: Sequence[str] | None = None) -> np.ndarray:
    """Hierarchical EMD where every row brings its own hierarchy (same formula as :func:`emd_hierarchical`).

    Leaf k (flattened over all rows, aligned with p and q) has the chain
    ``labels[path_offsets[k]:path_offsets[k+1]]``; labels are integer codes (``names`` maps
    them back for error messages) or any sortable values.  Nodes are ``(row, level, label)``;
    ``extra`` is accumulated per node with ``np.bincount`` and
    ``D = 1/(2H) * sum over non-root nodes of |extra|`` per row, all rows at once.
    Source: Li, Li, Venkatasubramanian, t-closeness, ICDE 2007 §4.2 / Li thesis 2010 §2.3.3.
    """
    name = "emd_hierarchical"
    off = _as_offsets(offsets)
    poff = _as_offsets(path_offsets)
    if poff.size != off[-1] + 1:
        raise ValueError(f"{name}: p, q and paths must have the same length "
                         f"(got {off[-1]} leaves in p and q and {poff.size - 1} paths)")
    lab = np.asarray(labels)
    if lab.dtype.kind not in "iu":
        uniq, lab = np.unique(lab.astype(str), return_inverse=True)
        names = [str(x) for x in uniq]
    lab = lab.astype(np.int64).ravel()
    d, rows, off, n, undefined = _difference(name, p_values, q_values, off)
    node, level, height, leaf_of, first_of_node = _tree(name, rows, poff, lab, names)
    out = np.zeros(n)
    if lab.size:
        row_of = rows[leaf_of]
        extra = _segsum(node, weights=d[leaf_of])
        node_row = row_of[first_of_node]
        below_root = level[first_of_node] < height[node_row]
        sums = _segsum(node_row[below_root], weights=np.abs(extra[below_root]), minlength=n)
        h = height[: n] if height.size >= n else np.concatenate((height, np.zeros(n - height.size, int)))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(h > 0, sums / (2 * np.maximum(h, 1)), 0.0)
    out[undefined] = np.nan
    return out


# --------------------------------------------------------------------------- diversity


def entropy(values: Any, offsets: Any) -> np.ndarray:
    """Shannon entropy (natural log) of each normalized histogram: ``H = -sum p_s ln p_s``, 0 ln 0 = 0.

    Source: Machanavajjhala et al., l-diversity, ICDE 2006 (entropy l-diversity); used as in Li
    thesis 2010 §2.3 for the l-diversity baseline.
    """
    off = _as_offsets(offsets)
    n = off.size - 1
    v = _values("entropy", "counts", values, off)
    rows = _row_ids(off)
    p, total = _normalize(v, rows, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = _segsum(rows, weights=terms, minlength=n)
    out[total <= 0] = np.nan
    return out


def l_entropy(values: Any, offsets: Any) -> np.ndarray:
    """Effective number of values ``exp(H)`` (a group is entropy l-diverse iff exp(H) >= l).

    Source: Machanavajjhala et al., l-diversity, ICDE 2006 / Li thesis 2010 §2.3.
    """
    return np.exp(entropy(values, offsets))


def recursive_cl(values: Any, offsets: Any, c: Any, l: Any) -> np.ndarray:
    """Recursive (c,l)-diversity of each histogram (boolean).

    Sort the non-zero counts descending ``r_1 >= ... >= r_m``; the row holds iff ``m >= l`` and
    ``r_1 < c * (r_l + r_{l+1} + ... + r_m)`` (strict).  ``c`` and ``l`` are scalars or one per row.
    Source: Machanavajjhala et al., l-diversity, ICDE 2006 §4 / Li thesis 2010 §2.3.
    """
    name = "recursive_cl"
    off = _as_offsets(offsets)
    n = off.size - 1
    v = _values(name, "counts", values, off)
    c = np.broadcast_to(np.asarray(c, dtype=np.float64), (n,))
    l = np.broadcast_to(np.asarray(l), (n,))
    if l.size and (l < 1).any():
        raise ValueError(f"{name}: l must be >= 1 (got {l[l < 1][0]})")
    rows = _row_ids(off)
    keep = v > 0
    v, rows = v[keep], rows[keep]
    order = np.lexsort((-v, rows))  # by row, then descending count
    v, rows = v[order], rows[order]
    m = np.bincount(rows, minlength=n)
    start = np.cumsum(m) - m
    rank = np.arange(v.size) - start[rows]  # 0-based position in the descending order
    tail = _segsum(rows, weights=np.where(rank >= l[rows] - 1, v, 0.0), minlength=n)
    r1 = np.zeros(n)
    r1[m > 0] = v[start[m > 0]]
    return (m >= l) & (r1 < c * tail)


# --------------------------------------------------------------------------- matching


def matching_pairing(masks: Sequence[int], mask_counts: Sequence[int], codes: Sequence[int],
                     code_counts: Sequence[int]) -> list[int] | None:
    """A perfect assignment of a group's value occurrences to its tuples that respects cannot-take
    constraints [Li thesis §3.4.1; spec-injector-tradeoff-foreground 2.3], at the level of classes:
    tuples of class i (``mask_counts[i]`` of them) cannot take the value codes whose bits are set in
    ``masks[i]``; value ``codes[j]`` occurs ``code_counts[j]`` times. Returns the flows
    f[i * len(codes) + j] (tuples of class i given value j), or None when no perfect assignment
    exists. Max flow by shortest augmenting paths (Edmonds-Karp) on the classes x values graph."""
    nc, nv = len(masks), len(codes)
    cap_c = [int(x) for x in mask_counts]
    cap_v = [int(x) for x in code_counts]
    if sum(cap_c) != sum(cap_v):
        return None
    ok = [[((int(masks[i]) >> int(codes[j])) & 1) == 0 for j in range(nv)] for i in range(nc)]
    flow = [[0] * nv for _ in range(nc)]
    left_c, left_v = cap_c[:], cap_v[:]
    total = sum(cap_c)
    sent = 0
    while sent < total:
        # BFS from every class with spare supply over (class -> value if allowed; value -> class if flow > 0)
        prev_c: dict[int, tuple[str, int] | None] = {i: None for i in range(nc) if left_c[i] > 0}
        prev_v: dict[int, int] = {}
        frontier = list(prev_c)
        end = None
        while frontier and end is None:
            nxt = []
            for i in frontier:
                for j in range(nv):
                    if ok[i][j] and j not in prev_v:
                        prev_v[j] = i
                        if left_v[j] > 0:
                            end = j
                            break
                        for i2 in range(nc):
                            if flow[i2][j] > 0 and i2 not in prev_c:
                                prev_c[i2] = ("v", j)
                                nxt.append(i2)
                if end is not None:
                    break
            frontier = nxt
        if end is None:
            return None
        # the bottleneck along the path, then push it
        path, j = [], end
        while True:
            i = prev_v[j]
            path.append((i, j))
            back = prev_c[i]
            if back is None:
                break
            j = back[1]
            path.append((i, j, "back"))
        amount = min(left_v[end], left_c[path[-1][0]])
        for step in path:
            if len(step) == 3:
                amount = min(amount, flow[step[0]][step[1]])
        for step in path:
            if len(step) == 3:
                flow[step[0]][step[1]] -= amount
            else:
                flow[step[0]][step[1]] += amount
        left_v[end] -= amount
        left_c[path[-1][0]] -= amount
        sent += amount
    return [flow[i][j] for i in range(nc) for j in range(nv)]
