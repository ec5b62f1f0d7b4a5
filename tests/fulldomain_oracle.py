"""A brute-force Python oracle for full-domain generalization, straight from the definitions.

Every node (L_1..L_d), 0 <= L_i <= height_i, of the generalization lattice is judged, no
pruning and no monotonicity assumption:

* each row's QI i becomes its hierarchy label at level L_i (level 0 = the value itself);
* rows are grouped by the generalized QI tuple; a group *fails* when it violates a requested
  model: k-anonymity (|G| >= k), distinct l-diversity (>= l distinct sensitive values),
  t-closeness with the equal ground distance (EMD of the group's sensitive distribution
  against the whole original table's <= t; the closed form 1/2 sum |p - q|, in exact fractions);
* suppressed = rows in failing groups; the node satisfies iff suppressed <= floor(s * N).

Metrics of a node (over the kept rows; suppressed rows cost as stated): dm, aecs, height,
precision, loss (Iyengar), entropy (non-uniform). The optimum minimizes the metric (maximizes
precision), ties broken by the smallest height, then the lexicographically smallest node.
``minimal`` = satisfying nodes with no satisfying direct predecessor, sorted.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

METRICS = ("dm", "aecs", "height", "precision", "loss", "entropy")


def exact(x: Any) -> Fraction:
    """A parameter as the decimal the user wrote (0.3 -> 3/10)."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def emd_equal(group: Sequence[Any], table: Sequence[Any]) -> Fraction:
    """EMD under the equal ground distance: the total variation distance 1/2 sum |p - q|, exact."""
    p, q = Counter(group), Counter(table)
    ng, nt = len(group), len(table)
    return sum((abs(Fraction(p[v], ng) - Fraction(q[v], nt)) for v in set(p) | set(q)), Fraction(0)) / 2


@dataclass
class Node:
    levels: tuple[int, ...]
    suppressed: int
    satisfies: bool
    groups: dict[tuple, list[int]]           # generalized QI tuple -> row indexes
    kept: list[int]                          # row indexes kept in the release
    metrics: dict[str, float] = field(default_factory=dict)


class FullDomainOracle:
    """``rows``: sequences; ``qi_idx``: the QI positions; ``sa_idx``: the sensitive position
    (or None); ``hierarchies``: per QI, the rows (leaf, level1, ..., root) of its hierarchy."""

    def __init__(self, rows: Sequence[Sequence[Any]], qi_idx: Sequence[int], sa_idx: int | None,
                 hierarchies: Sequence[Sequence[Sequence[str]]], *, k: int | None = None,
                 l: int | None = None, t: float | None = None, max_suppression: float = 0.0):
        self.rows = [tuple(r) for r in rows]
        self.qi_idx, self.sa_idx = list(qi_idx), sa_idx
        self.d = len(self.qi_idx)
        self.N = len(self.rows)
        self.k, self.l, self.t = k, l, (None if t is None else exact(t))
        if (l is not None or t is not None) and sa_idx is None:
            raise ValueError("l and t need a sensitive attribute")
        self.hier = [[tuple(str(v) for v in hr) for hr in h] for h in hierarchies]
        self.heights = [len(h[0]) - 1 for h in self.hier]
        self.chain = [{hr[0]: hr for hr in h} for h in self.hier]          # leaf -> (leaf, ..., root)
        self.n_leaves = [len(h) for h in self.hier]                          # |A_i|
        # leaves under label g at level L of hierarchy i
        self.under = [Counter((lv, hr[lv]) for hr in h for lv in range(len(hr))) for h in self.hier]
        self.limit = math.floor(exact(max_suppression) * self.N)
        self.table_sa = [r[sa_idx] for r in self.rows] if sa_idx is not None else []
        self.nodes: dict[tuple[int, ...], Node] = {}
        for levels in itertools.product(*(range(h + 1) for h in self.heights)):
            self.nodes[levels] = self._judge(levels)

    # -- generalization ----------------------------------------------------------------------
    def label(self, i: int, value: Any, level: int) -> str:
        return self.chain[i][str(value)][level]

    def generalized(self, row_index: int, levels: Sequence[int]) -> tuple[str, ...]:
        r = self.rows[row_index]
        return tuple(self.label(i, r[q], levels[i]) for i, q in enumerate(self.qi_idx))

    def group_fails(self, members: list[int]) -> bool:
        if self.k is not None and len(members) < self.k:
            return True
        if self.l is not None and len({self.rows[j][self.sa_idx] for j in members}) < self.l:
            return True
        if self.t is not None:
            if emd_equal([self.rows[j][self.sa_idx] for j in members], self.table_sa) > self.t:
                return True
        return False

    def _judge(self, levels: tuple[int, ...]) -> Node:
        groups: dict[tuple, list[int]] = defaultdict(list)
        for j in range(self.N):
            groups[self.generalized(j, levels)].append(j)
        groups = dict(groups)
        failing = {g for g, m in groups.items() if self.group_fails(m)}
        suppressed = sum(len(groups[g]) for g in failing)
        kept_groups = {g: m for g, m in groups.items() if g not in failing}
        kept = sorted(j for m in kept_groups.values() for j in m)
        node = Node(levels, suppressed, suppressed <= self.limit, kept_groups, kept)
        node.metrics = self._metrics(node)
        return node

    # -- metrics -------------------------------------------------------------------------------
    def _metrics(self, node: Node) -> dict[str, float]:
        N, d, s, L = self.N, self.d, node.suppressed, node.levels
        kept = node.kept
        dm = sum(len(m) ** 2 for m in node.groups.values()) + s * N
        aecs = (N - s) / len(node.groups) if node.groups else math.inf
        height = sum(L)
        precision = 1 - sum(Fraction(L[i], self.heights[i]) for i in range(d)) / d
        loss = Fraction(0)
        for j in kept:
            for i in range(d):
                g = self.label(i, self.rows[j][self.qi_idx[i]], L[i])
                if self.n_leaves[i] > 1:
                    loss += Fraction(self.under[i][(L[i], g)] - 1, self.n_leaves[i] - 1)
        loss += s * d
        loss /= N * d
        entropy = 0.0
        kept_set = set(kept)
        for i in range(d):
            vals = [str(self.rows[j][self.qi_idx[i]]) for j in kept]
            c_orig = Counter(vals)
            c_gen = Counter(self.chain[i][v][L[i]] for v in vals)
            for v in vals:
                entropy += -math.log2(c_orig[v] / c_gen[self.chain[i][v][L[i]]])
            c_all = Counter(str(r[self.qi_idx[i]]) for r in self.rows)
            for j in range(N):
                if j not in kept_set:
                    entropy += -math.log2(c_all[str(self.rows[j][self.qi_idx[i]])] / N)
        return {"dm": float(dm), "aecs": float(aecs), "height": float(height), "precision": float(precision),
                "loss": float(loss), "entropy": float(entropy)}

    # -- answers -------------------------------------------------------------------------------
    @property
    def satisfying(self) -> list[tuple[int, ...]]:
        return sorted(n for n, v in self.nodes.items() if v.satisfies)

    @property
    def feasible(self) -> bool:
        return bool(self.satisfying)

    @property
    def minimal(self) -> list[tuple[int, ...]]:
        sat = set(self.satisfying)
        out = []
        for n in sat:
            preds = [n[:i] + (n[i] - 1,) + n[i + 1:] for i in range(self.d) if n[i] > 0]
            if not any(p in sat for p in preds):
                out.append(n)
        return sorted(out)

    def score(self, metric: str, n: tuple[int, ...]) -> float:
        v = self.nodes[n].metrics[metric]
        return -v if metric == "precision" else v

    def optimum(self, metric: str) -> tuple[int, ...]:
        sat = self.satisfying
        if not sat:
            raise ValueError("no satisfying node")
        return min(sat, key=lambda n: (self.score(metric, n), sum(n), n))

    def tied(self, metric: str, rel: float = 1e-9) -> list[tuple[int, ...]]:
        """The satisfying nodes whose metric equals the optimum's (up to float rounding)."""
        best = self.nodes[self.optimum(metric)].metrics[metric]
        return [n for n in self.satisfying
                if math.isclose(self.nodes[n].metrics[metric], best, rel_tol=rel, abs_tol=1e-12)]

    def closest(self) -> tuple[int, ...]:
        """The node with the fewest suppressed rows (ties: smallest height, then lexicographic)."""
        return min(self.nodes, key=lambda n: (self.nodes[n].suppressed, sum(n), n))

    def release(self, n: tuple[int, ...]) -> list[tuple]:
        """The kept rows of node ``n`` with their QIs generalized (other columns unchanged)."""
        out = []
        for j in self.nodes[n].kept:
            r = list(self.rows[j])
            for i, q in enumerate(self.qi_idx):
                if n[i] > 0:  # level 0 keeps the value (and its type) unchanged
                    r[q] = self.label(i, r[q], n[i])
            out.append(tuple(r))
        return out
