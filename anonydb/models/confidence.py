"""The confidence kernel of c-confident delta-presence [Nergiz & Clifton TR §4.2, Eqs. 2-4, §5;
spec-presence-survey 1.5-1.6].

The publisher knows T and only the per-attribute distribution functions of D = P - T (counts per
value, U = |D| tuples). For a released class t* holding n1 private tuples, the number X of D tuples
that would share t* is random; under the TR's model (D's columns independent, uniformly random
alignments of the known marginals) its distribution is built attribute by attribute:

    l^1_x = [x = f_1],   l^n_x = sum_y l^{n-1}_y hyp(x; y, f_n, U),
    hyp(x; n, M, N) = C(M,x) C(N-M, n-x) / C(N,n),

and the class is delta-present with confidence Pr(c_low <= X <= c_high) (Eq. 4), where
c_low = ceil(n1/delta_max - n1) and c_high = floor(n1/delta_min - n1) (infinite when delta_min = 0),
computed from exact fractions (floats get e.g. n1 = 11, delta_max = 0.11 wrong by one).

Two implementations: :func:`card_dist_exact` (fractions, for tests and tiny U) and
:class:`Kernel` (log space with numpy; a log-factorial table up to U). The TR's speed-ups are
switches, each conservative (never overstates the confidence): ``sd`` = k keeps, per step and y,
only the x within mu +- k sigma of the hypergeometric (the mass dropped is not added back:
the result is a lower bound); ``dc`` = b evaluates the pmf at bucket ends of width b and gives
each x in a bucket the smaller end value (the pmf is unimodal, so this lower-bounds it; used only
where >= 4 buckets fall within +- 2 sigma). The distribution depends on (U, the multiset of f),
not on n1, so it is memoized on the sorted f: every class and every lattice node sharing it reuses it.
"""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb
from typing import Sequence

import numpy as np


def bounds(n1: int, dmin: Fraction, dmax: Fraction) -> tuple[int, int | None]:
    """(c_low, c_high): the numbers n0 of D tuples in the class with dmin <= n1/(n1+n0) <= dmax,
    exactly; c_high None = unbounded (dmin = 0). c_low > c_high means no n0 works."""
    if n1 <= 0:
        raise ValueError("a released class holds at least one private tuple")
    lo = 0 if dmax == 0 else math.ceil(Fraction(n1) / dmax - n1)
    hi = None if dmin == 0 else math.floor(Fraction(n1) / dmin - n1)
    if dmax == 0:  # n1 / (n1 + n0) <= 0 is impossible for n1 >= 1
        lo = 1 if hi is None else hi + 1
    return max(0, lo), hi


def hyp_exact(x: int, n: int, M: int, N: int) -> Fraction:
    if 0 <= x <= n and x <= M and n - x <= N - M:
        return Fraction(comb(M, x) * comb(N - M, n - x), comb(N, n))
    return Fraction(0)


def card_dist_exact(f: Sequence[int], U: int) -> dict[int, Fraction]:
    """Pr(X = x) exactly (Eq. 4's x-cardinality likelihood), for small U."""
    dist = {int(f[0]): Fraction(1)}
    for M in f[1:]:
        new: dict[int, Fraction] = {}
        for y, py in dist.items():
            for x in range(max(0, y + M - U), min(y, M) + 1):
                new[x] = new.get(x, Fraction(0)) + py * hyp_exact(x, y, M, U)
        dist = new
    return dist


def confidence_exact(n1: int, f: Sequence[int], U: int, dmin: Fraction, dmax: Fraction) -> Fraction:
    lo, hi = bounds(n1, dmin, dmax)
    return sum((p for x, p in card_dist_exact(f, U).items() if x >= lo and (hi is None or x <= hi)), Fraction(0))


class Kernel:
    """Memoized float kernel for one U (see the module docstring)."""

    def __init__(self, U: int, sd: float | None = 4.0, dc: int | None = None):
        if U < 0:
            raise ValueError("U = |D| must be >= 0")
        if sd is not None and not sd > 0:
            raise ValueError(f"the SD window must be a positive number of standard deviations, got {sd!r}")
        if dc is not None and (not isinstance(dc, int) or dc < 2):
            raise ValueError(f"the DC bucket width must be an integer >= 2, got {dc!r}")
        self.U, self.sd, self.dc = U, sd, dc
        self.lf = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, U + 1, dtype=np.float64)))])
        self._cdf: dict[tuple[int, ...], tuple[int, np.ndarray]] = {}
        self.evaluations = 0  # pmf values computed (for the benchmarks)

    def _lc(self, n, k):
        return self.lf[n] - self.lf[k] - self.lf[n - k]

    def _step(self, ys: np.ndarray, py: np.ndarray, M: int) -> tuple[int, np.ndarray]:
        """One attribute: the distribution of x given y ~ (ys, py) and M matching values."""
        U = self.U
        lo_all = max(0, int(ys.min()) + M - U)
        hi_all = min(int(ys.max()), M)
        out = np.zeros(hi_all - lo_all + 1)
        for y, p in zip(ys.tolist(), py.tolist()):
            if p <= 0:
                continue
            xlo, xhi = max(0, y + M - U), min(y, M)
            if self.sd is not None and U > 1:
                mu = y * M / U
                var = y * (M / U) * (1 - M / U) * (U - y) / (U - 1)
                sig = math.sqrt(max(var, 0.0))
                if 0.01 < M / U < 0.99 and 0.01 < y / U < 0.99:  # the standard case: cut the tails
                    xlo = max(xlo, math.ceil(mu - self.sd * sig))
                    xhi = min(xhi, math.floor(mu + self.sd * sig))
            if xlo > xhi:
                continue
            xs = np.arange(xlo, xhi + 1)
            if self.dc and U > 1:
                sig2 = math.sqrt(max(y * (M / U) * (1 - M / U) * (U - y) / (U - 1), 0.0))
                if 4 * sig2 >= 4 * self.dc:  # at least 4 buckets within +- 2 sigma
                    b = self.dc
                    base = (xs // b) * b
                    left, right = np.clip(base, xlo, xhi), np.clip(base + b, xlo, xhi)
                    ends = np.unique(np.concatenate([left, right]))
                    pe = self._pmf(ends, y, M)
                    pick = np.minimum(pe[np.searchsorted(ends, left)], pe[np.searchsorted(ends, right)])
                    out[xs - lo_all] += p * pick
                    continue
            out[xs - lo_all] += p * self._pmf(xs, y, M)
        return lo_all, out

    def _pmf(self, xs: np.ndarray, y: int, M: int) -> np.ndarray:
        U = self.U
        self.evaluations += len(xs)
        lp = self._lc(M, xs) + self._lc(U - M, y - xs) - self._lc(U, y)
        return np.exp(lp)

    def cdf(self, f: Sequence[int]) -> tuple[int, np.ndarray]:
        """(x0, cumulative Pr(X <= x0 + i)) for the class's f vector (memoized on sorted f)."""
        key = tuple(sorted(int(v) for v in f))
        got = self._cdf.get(key)
        if got is not None:
            return got
        for v in key:
            if not 0 <= v <= self.U:
                raise ValueError(f"a distribution count {v} lies outside [0, U = {self.U}]")
        ys, py = np.array([key[0]]), np.array([1.0])
        lo = key[0]
        for M in key[1:]:
            lo, dist = self._step(ys, py, M)
            nz = np.nonzero(dist > 0)[0]
            if len(nz) == 0:
                ys, py = np.array([lo]), np.array([0.0])
                continue
            ys, py = lo + nz, dist[nz]
            lo = int(ys[0])
        x0 = int(ys[0])
        full = np.zeros(int(ys[-1]) - x0 + 1)
        full[ys - x0] = py
        got = (x0, np.cumsum(full))
        self._cdf[key] = got
        return got

    def confidence(self, n1: int, f: Sequence[int], dmin: Fraction, dmax: Fraction) -> float:
        """Pr(c_low <= X <= c_high) for a class of n1 private tuples with D-counts f (Eq. 4)."""
        lo, hi = bounds(n1, dmin, dmax)
        x0, cdf = self.cdf(f)
        last = x0 + len(cdf) - 1

        def at(x):  # Pr(X <= x)
            if x < x0:
                return 0.0
            return float(cdf[min(x, last) - x0])

        top = at(last) if hi is None else at(hi)
        return max(0.0, min(1.0, top - at(lo - 1)))


class ExactKernel:
    """The same interface in exact fractions (no speed-ups): for audits and small populations; the
    recursion costs O(d U^2) big-integer operations per distinct signature."""

    def __init__(self, U: int):
        self.U = U
        self._dist: dict[tuple[int, ...], dict[int, Fraction]] = {}

    def confidence(self, n1: int, f: Sequence[int], dmin: Fraction, dmax: Fraction) -> Fraction:
        key = tuple(sorted(int(v) for v in f))
        dist = self._dist.get(key)
        if dist is None:
            dist = self._dist[key] = card_dist_exact(key, self.U)
        lo, hi = bounds(n1, dmin, dmax)
        return sum((p for x, p in dist.items() if x >= lo and (hi is None or x <= hi)), Fraction(0))
