"""Slicing phase 1: attribute partitioning [Li thesis §4.3.1; spec-closeness-slicing 5.3].

Attributes are points at distance d(A, B) = 1 - phi^2(A, B), phi^2 the mean-square contingency
coefficient (computed for all pairs by one SQL statement, ``sql/slicing_phi2.sql.j2``; numeric
and date attributes with more distinct values than ``bins`` are first discretized equal-width),
and are clustered into c columns by k-medoids (PAM: BUILD initialization, then the best improving
(medoid, non-medoid) swap while the total distance to the medoids decreases). The attributes are
few (m <= ~20), so the clustering runs in Python on the m x m matrix; the data stays in the
database. With ``alpha``, the special partitioning: the sensitive column is S with its alpha-1
most correlated attributes, and the others are clustered into c-1 columns.
"""

from __future__ import annotations

from typing import Sequence

from ..engines.base import Engine
from ..errors import InputError
from ..schema import is_numeric_type
from ..sqlgen import ident as _q

#: default number of equal-width intervals for numeric attributes (the thesis leaves it open)
BINS = 10


def phi2_matrix(eng: Engine, relation: str, attrs: Sequence[str], bins: int | None = BINS) -> list[list[float]]:
    """phi^2 for every pair of ``attrs`` (a symmetric matrix with 1 on the diagonal)."""
    attrs = list(attrs)
    m = len(attrs)
    out = [[1.0 if i == j else 0.0 for j in range(m)] for i in range(m)]
    if m < 2:
        return out
    types = dict(eng.columns(relation))
    coords = {a: coordinate(types[a], _q(a)) for a in attrs}
    # a numeric or date attribute is binned when it has more distinct values than bins
    numeric = [a for a in attrs if coords[a] is not None] if bins else []
    distinct = dict(zip(numeric, eng.fetch_rows("SELECT " + ", ".join(f"count(DISTINCT {_q(a)})" for a in numeric)
                                                + f" FROM {_q(relation)}")[1][0])) if numeric else {}
    spec = [{"name": a, "bins": int(bins) if bins and distinct.get(a, 0) > bins else 0, "coord": coords[a]}
            for a in attrs]
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    for i, j, v in eng.fetch_rows(eng.render("slicing_phi2.sql.j2", rel=relation, attrs=spec, pairs=pairs))[1]:
        out[i][j] = out[j][i] = float(v)
    return out


def coordinate(sql_type: str, expr: str) -> str | None:
    """A DOUBLE coordinate of a numeric (the number), date (days) or timestamp (epoch seconds)
    expression; None for other types (compared by value or rank)."""
    t = sql_type.upper()
    if is_numeric_type(t):
        return f"CAST({expr} AS DOUBLE)"
    if t == "DATE":
        return f"CAST(date_diff('day', DATE '1970-01-01', {expr}) AS DOUBLE)"
    if t.startswith("TIMESTAMP"):
        return f"CAST(epoch({expr}) AS DOUBLE)"
    return None


def pam(dist: Sequence[Sequence[float]], k: int, points: Sequence[int] | None = None) -> list[list[int]]:
    """k-medoids (PAM BUILD + SWAP) of ``points`` (indexes into ``dist``; all by default).

    Returns the clusters as sorted index lists, ordered by their smallest index. Deterministic:
    ties go to the lower index.
    """
    pts = list(range(len(dist))) if points is None else list(points)
    if not 1 <= k <= len(pts):
        raise InputError(f"cannot cluster {len(pts)} attributes into {k} columns")

    def cost(meds: list[int]) -> float:
        return sum(min(dist[p][q] for q in meds) for p in pts)

    meds = [min(pts, key=lambda p: (sum(dist[p][q] for q in pts), p))]
    while len(meds) < k:
        near = {p: min(dist[p][q] for q in meds) for p in pts}
        best = max((p for p in pts if p not in meds),
                   key=lambda o: (sum(max(0.0, near[p] - dist[p][o]) for p in pts), -o))
        meds.append(best)
    current = cost(meds)
    while True:
        best_swap, best_cost = None, current
        for i in range(len(meds)):
            for o in pts:
                if o in meds:
                    continue
                trial = meds[:i] + [o] + meds[i + 1:]
                c = cost(trial)
                if c < best_cost - 1e-12:
                    best_swap, best_cost = trial, c
        if best_swap is None:
            break
        meds, current = best_swap, best_cost
    clusters: dict[int, list[int]] = {q: [] for q in meds}
    for p in pts:
        clusters[min(meds, key=lambda q: (dist[p][q], q != p, q))].append(p)
    return sorted((sorted(c) for c in clusters.values() if c), key=lambda c: c[0])


def partition_attributes(phi2: Sequence[Sequence[float]], attrs: Sequence[str], sensitive: str, c: int,
                         alpha: int | None = None) -> list[list[str]]:
    """The c columns: PAM on d = 1 - phi^2 over all attributes, or with ``alpha`` the special
    partitioning (sensitive column = S plus its alpha-1 most correlated attributes; the rest in
    c-1 clusters). The sensitive column comes last; attributes keep their input order."""
    attrs = list(attrs)
    m = len(attrs)
    if isinstance(c, bool) or not isinstance(c, int) or c < 2:
        raise InputError(f"the number of columns c must be an integer >= 2 (the sensitive column and at least one "
                         f"other), got {c!r}")
    if c > m:
        raise InputError(f"c = {c} columns is more than the {m} attributes to slice ({', '.join(attrs)})")
    si = attrs.index(sensitive)
    dist = [[1.0 - phi2[i][j] for j in range(m)] for i in range(m)]
    if alpha is None:
        clusters = pam(dist, c)
    else:
        if isinstance(alpha, bool) or not isinstance(alpha, int) or alpha < 1:
            raise InputError(f"alpha (the size of the sensitive column) must be an integer >= 1, got {alpha!r}")
        if m - alpha < c - 1:
            raise InputError(f"alpha = {alpha} leaves {m - alpha} attributes for the other {c - 1} columns; "
                             f"lower alpha or c")
        others = sorted((i for i in range(m) if i != si), key=lambda i: (-phi2[si][i], i))
        scol = sorted([si] + others[:alpha - 1])
        rest = [i for i in range(m) if i not in scol]
        clusters = pam(dist, c - 1, rest) + [scol]
    cols = [[attrs[i] for i in x] for x in clusters if si not in x]
    cols += [[attrs[i] for i in x] for x in clusters if si in x]
    return cols


def check_columns(columns: Sequence[Sequence[str]], attrs: Sequence[str], sensitive: str) -> list[list[str]]:
    """Validate a hand-made attribute partition: every attribute in exactly one column, c >= 2;
    returns it with the sensitive column last."""
    cols = [list(x) for x in columns]
    if len(cols) < 2:
        raise InputError(f"a slicing needs at least 2 columns (the sensitive column and another), got {len(cols)}")
    seen: dict[str, int] = {}
    for i, col in enumerate(cols):
        if not col:
            raise InputError(f"column {i + 1} of the attribute partition is empty")
        for a in col:
            if a in seen:
                raise InputError(f"attribute {a!r} is in column {seen[a] + 1} and column {i + 1}")
            if a not in attrs:
                raise InputError(f"attribute {a!r} of column {i + 1} is not one of the attributes to slice "
                                 f"({', '.join(attrs)})")
            seen[a] = i
    missing = [a for a in attrs if a not in seen]
    if missing:
        raise InputError(f"attributes in no column: {', '.join(missing)} (every QI and the sensitive attribute "
                         f"must be placed)")
    return [c for c in cols if sensitive not in c] + [c for c in cols if sensitive in c]


def describe(columns: Sequence[Sequence[str]], sensitive: str) -> str:
    return " | ".join("{" + ", ".join(c) + "}" + (" (sensitive)" if sensitive in c else "") for c in columns)
