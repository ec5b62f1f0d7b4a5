"""The adversary's posterior belief about a group's tuples [Li thesis §3.6; spec-injector-tradeoff-foreground 3.3-3.5].

A group E = {t_1..t_k} is published with its multiset of sensitive values (value s_i n_i times).
An adversary with prior P(s|t_j) (one row per tuple) updates it by the release:

* exact [thesis Eq. 3.4, read as an equality, spec 3.4]: P*(s_i|t_j) = P(s_i|t_j) L(S-s_i | E-t_j) / L(S|E),
  where L sums prod_j P(value|t_j) over the distinct assignments of the multiset to the tuples (the
  permanent of the occurrence matrix up to prod n_i!). Computed by a DP over the multiset of
  remaining counts, O(k * prod(n_i + 1) * m): for small groups and tests (#P-hard in general);
* the Omega-estimate [thesis Eq. 3.5]: Omega(s_i|t_j) is n_i P(s_i|t_j) / sum_j' P(s_i|t_j'),
  normalized over the group's values; O(k m). The SQL form runs inside (B,t)-privacy
  (:mod:`anonydb.models.bt_privacy`).

Priors and counts may be :class:`fractions.Fraction` (exact results) or floats.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from ..errors import InputError


def _validate(prior: Sequence[Sequence[Any]], counts: Sequence[int]) -> tuple[int, int]:
    k = len(prior)
    m = len(counts)
    if any(len(row) != m for row in prior):
        raise InputError(f"every prior row needs {m} entries, one per sensitive value")
    if any((not isinstance(c, int)) or c < 0 for c in counts):
        raise InputError(f"counts must be non-negative integers, got {list(counts)}")
    if sum(counts) != k:
        raise InputError(f"the group has {k} tuples but its value counts sum to {sum(counts)}")
    return k, m


def likelihood(prior: Sequence[Sequence[Any]], counts: Sequence[int]) -> Any:
    """L(S|E): sum over the distinct assignments of the value multiset ``counts`` to the tuples
    (rows of ``prior``) of the product of the tuples' priors for their values."""
    k, m = _validate(prior, counts)

    @lru_cache(maxsize=None)
    def f(j: int, rem: tuple[int, ...]) -> Any:
        if j == k:
            return 1
        total = 0
        for s in range(m):
            if rem[s] and prior[j][s]:
                total += prior[j][s] * f(j + 1, rem[:s] + (rem[s] - 1,) + rem[s + 1:])
        return total

    return f(0, tuple(counts))


def exact_posterior(prior: Sequence[Sequence[Any]], counts: Sequence[int]) -> list[list[Any]]:
    """P*(s|t_j) for every tuple j and value s [thesis Eq. 3.4]; raises when no assignment has
    positive probability (the prior contradicts the release)."""
    k, m = _validate(prior, counts)
    whole = likelihood(prior, counts)
    if not whole:
        raise InputError("no assignment of the group's values to its tuples has positive prior probability")
    out = []
    for j in range(k):
        rest = [row for i, row in enumerate(prior) if i != j]
        row = []
        for s in range(m):
            if counts[s] and prior[j][s]:
                c = list(counts)
                c[s] -= 1
                row.append(prior[j][s] * likelihood(rest, c) / whole)
            else:
                row.append(0 * whole)
        out.append(row)
    return out


def omega_estimate(prior: Sequence[Sequence[Any]], counts: Sequence[int]) -> list[list[Any]]:
    """Omega(s|t_j) [thesis Eq. 3.5]: w_js = n_s P(s|t_j) / sum_j' P(s|t_j') over the values present
    (n_s > 0), normalized per tuple. A value present whose prior column sums to 0 makes the group
    inconsistent with the prior (error)."""
    k, m = _validate(prior, counts)
    cols = [sum(prior[j][s] for j in range(k)) for s in range(m)]
    for s in range(m):
        if counts[s] and not cols[s]:
            raise InputError(f"value #{s} occurs in the group but no tuple has positive prior for it")
    out = []
    for j in range(k):
        w = [counts[s] * prior[j][s] / cols[s] if counts[s] else 0 * prior[j][s] for s in range(m)]
        z = sum(w)
        if not z:
            raise InputError(f"tuple #{j} has zero prior for every value of its group")
        out.append([x / z for x in w])
    return out


def variational(p: Sequence[Any], q: Sequence[Any]) -> Any:
    """Variational distance 1/2 sum |p_i - q_i| (= EMD with the equal ground distance)."""
    return sum(abs(a - b) for a, b in zip(p, q)) / 2


__all__ = ["exact_posterior", "likelihood", "omega_estimate", "variational"]
