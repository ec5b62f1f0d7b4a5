"""A plain recursive Python reference of Mondrian partitioning (LeFevre et al. 2006), as a test oracle.

Strict and relaxed multidimensional Mondrian, following the definition the SQL version implements:

* Codes: a "numeric" QI is coded by its value; an "ordered" QI by the 0-based rank of its value among
  the sorted distinct values of that column over all rows. G_j = max - min of dim j's codes over all rows.
* A partition P tries its dims with span_j = (max_P - min_P) / G_j > 0 (0 when G_j == 0), by span
  descending, ties by position in ``qi``.
* Strict cut: m = lower median of P's codes (values[ceil(n/2) - 1]); if m is the max, m = the largest
  code below the max; L = code <= m, R = code > m.
  Relaxed cut: sort P by (code, row id); L = the first floor(n/2) rows, R = the rest.
* A cut is allowable iff L and R are non-empty and ok(L) and ok(R); then L and R are split further.
  Otherwise the next dim is tried (only when try_all_dims); with no allowable cut P is final.

No DuckDB here: this is the independent side of the comparison.
"""

from __future__ import annotations

from typing import Callable, Sequence


def codes_of(rows: Sequence[dict], qi: Sequence[str], kinds: dict) -> list[list]:
    """codes[j][i] = the code of row i on dim j."""
    codes = []
    for col in qi:
        values = [r[col] for r in rows]
        if kinds[col] == "numeric":
            codes.append(values)
        elif kinds[col] == "ordered":
            rank = {v: i for i, v in enumerate(sorted(set(values)))}
            codes.append([rank[v] for v in values])
        else:
            raise ValueError(f"unknown kind {kinds[col]!r} for {col!r}")
    return codes


def cut(part: list[int], code: list, relaxed: bool) -> tuple[list[int], list[int]]:
    """Split ``part`` (row ids) on one dim's ``code``, into (L, R)."""
    n = len(part)
    if relaxed:
        ordered = sorted(part, key=lambda i: (code[i], i))
        return sorted(ordered[: n // 2]), sorted(ordered[n // 2:])
    values = sorted(code[i] for i in part)
    m = values[(n + 1) // 2 - 1]  # lower median: values[ceil(n/2) - 1]
    if m == values[-1]:
        below = [v for v in values if v < values[-1]]
        if not below:  # all equal: no cut (never happens for a dim with span > 0)
            return list(part), []
        m = max(below)
    return [i for i in part if code[i] <= m], [i for i in part if code[i] > m]


def mondrian_reference(rows: Sequence[dict], qi: Sequence[str], kinds: dict,
                       ok: Callable[[list[int]], bool], relaxed: bool = False,
                       try_all_dims: bool = True) -> list[frozenset[int]]:
    """The final Mondrian partitions of ``rows`` (row id = index), sorted by their smallest row id."""
    codes = codes_of(rows, qi, kinds)
    everything = list(range(len(rows)))
    glob = [max(c) - min(c) if c else 0 for c in codes]
    if not ok(everything):
        raise ValueError("infeasible")

    final: list[frozenset[int]] = []
    todo = [everything]  # an explicit stack instead of recursion (deep strict splits on skewed data)
    while todo:
        part = todo.pop()
        spans = []
        for j, c in enumerate(codes):
            lo, hi = min(c[i] for i in part), max(c[i] for i in part)
            span = (hi - lo) / glob[j] if glob[j] != 0 else 0
            if span > 0:
                spans.append((-span, j))
        dims = [j for _, j in sorted(spans)]  # span descending, ties by position in qi
        if not try_all_dims:
            dims = dims[:1]
        for j in dims:
            left, right = cut(part, codes[j], relaxed)
            if left and right and ok(left) and ok(right):
                todo += [right, left]
                break
        else:
            final.append(frozenset(part))
    return sorted(final, key=min)


def k_ok(k: int) -> Callable[[list[int]], bool]:
    """The ok-test of k-anonymity: at least k rows."""
    return lambda ids: len(ids) >= k


def distinct_l_ok(rows: Sequence[dict], sa: str, l: int, k: int = 1) -> Callable[[list[int]], bool]:
    """The ok-test of distinct l-diversity (with k-anonymity): >= k rows and >= l distinct rows[i][sa]."""
    return lambda ids: len(ids) >= k and len({rows[i][sa] for i in ids}) >= l
