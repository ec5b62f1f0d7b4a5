"""Independent reference for anonydb.risk.population: the same models, straight from the papers'
equations, with scipy (hypergeom, digamma, gammaln, fsolve / root). Imports nothing from anonydb.

Each function takes the histogram (class size -> number of classes) and the population size N and
returns the estimated number of population uniques, or None where the model has no valid solution."""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import fsolve, root
from scipy.special import digamma, gammaln
from scipy.stats import hypergeom


def _quiet(fn):
    """Run ``fn`` with numpy's and scipy's overflow warnings off (the solvers probe far points)."""
    def wrapped(*args):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            return fn(*args)
    wrapped.__doc__ = fn.__doc__
    return wrapped


def _arrays(hist):
    items = sorted((j, c) for j, c in hist.items() if c)
    j = np.array([i for i, _ in items], dtype=float)
    c = np.array([k for _, k in items], dtype=float)
    return j, c, int((j * c).sum()), c.sum(), hist.get(1, 0), hist.get(2, 0)


@_quiet
def zayatz(hist, N):
    """Zayatz (1991): U = c1/f * c1 P(1|1) / sum c_j P(1|j), P hypergeometric."""
    j, c, n, u, c1, _ = _arrays(hist)
    if c1 == 0:
        return 0.0
    if N <= 10**7:
        logp = hypergeom.logpmf(1, N, j.astype(np.int64), n)  # one of the class's j records among n drawn
        p = np.exp(logp - hypergeom.logpmf(1, N, 1, n))  # relative to P(1|1), to keep the tiny ones finite
    else:  # scipy's logpmf loses ~1e-6 at N ~ 1e9: the product P(1|j)/P(1|1) = j prod (1 - (n-1)/(N-i))
        p = np.array([k * math.exp(math.fsum(math.log1p(-(n - 1) / (N - i)) for i in range(1, int(k))))
                      if k <= N - n + 1 else 0.0 for k in j])
    return c1 * c1 / (float((c * p).sum()) * (n / N))


@_quiet
def pitman_parameters(hist):
    """Hoshino (2001): the Pitman sampling formula's likelihood equations in (theta, alpha)."""
    j, c, n, u, c1, c2 = _arrays(hist)
    big = j > 1

    def equations(v):
        t, a = v
        if not (0 < a < 1 and t > -a):
            return [1e6, 1e6]
        e1 = (digamma(u + t / a) - digamma(t / a + 1)) / a - (digamma(n + t) - digamma(t + 1))
        e2 = ((u - 1) - t * (digamma(u + t / a) - digamma(t / a + 1)) / a) / a \
            - float((c[big] * (digamma(j[big] - a) - digamma(1 - a))).sum())
        return [e1, e2]

    # Hoshino's moment-type start as ARX uses it, then a grid
    cc = c1 * (c1 - 1) / (c2 or 1)
    t0 = (n * u * cc - c1 * (n - 1) * (2 * u + cc)) / ((2 * c1 * u + c1 * cc) - n * cc)
    a0 = (t0 * (c1 - n) + (n - 1) * c1) / (n * u)
    starts = [(t0, a0)] + [(t, a) for t in (1.0, 10.0, 100.0, 1000.0, 1e4) for a in (0.1, 0.5, 0.9)]
    for start in starts:
        if not (np.isfinite(start).all() and 0 < start[1] < 1 and start[0] > -start[1]):
            continue
        sol = root(equations, start, method="hybr", options={"xtol": 1e-14})
        t, a = sol.x
        if sol.success and 0 < a < 1 and t > -a and max(abs(x) for x in equations([t, a])) < 1e-6:
            return float(t), float(a)
    return None


def pitman(hist, N):
    if hist.get(1, 0) == 0:
        return 0.0
    par = pitman_parameters(hist)
    if par is None:
        return None
    t, a = par
    u1 = math.exp(gammaln(t + 1) - gammaln(t + a) + a * math.log(N))
    return u1 if 0 < u1 <= N else None


def shlosser_k(hist, f):
    """Haas et al. (1995): the Shlosser-type estimate of the number of population classes."""
    j, c, n, u, c1, _ = _arrays(hist)
    q = f
    a = (j * q**2 * (1 - q**2) ** (j - 1) * c).sum()
    b = ((1 - q) ** j * ((1 + q) ** j - 1) * c).sum()
    e = ((1 - q) ** j * c).sum()
    g = (j * q * (1 - q) ** (j - 1) * c).sum()
    return u + c1 * (a / b) * (e / g) ** 2


@_quiet
def snb(hist, N):
    """Chen & Keller-McNulty (1998): sizes 1 + NegBin(a, b), binomial sampling; U = K b^a."""
    j, c, n, u, c1, c2 = _arrays(hist)
    if c1 == 0:
        return 0.0
    if c2 == 0:
        return None
    f = n / N
    K = shlosser_k(hist, f)

    def expected(a, b):
        d = (1 - f) * (1 - b)
        e1 = K * f * (b / (1 - d)) ** a * (1 + a * d / (1 - d))
        e2 = K * f**2 * a * b**a * (1 - b) * (2 - (1 - a) * d) / (2 * (1 - d) ** (a + 2))
        return e1, e2

    def equations(v):
        a, b = v
        if not (a > 0 and 0 < b < 1):
            return [1e6, 1e6]
        e1, e2 = expected(a, b)
        return [e1 / c1 - 1, e2 / c2 - 1]

    def in_logs(v):  # the same equations in (log a, log b): reaches the roots with tiny b
        return equations(np.exp(v)) if v[1] < 0 else [1e6, 1e6]

    for a0 in (1.0, 0.1, 10.0, 0.01, 100.0):
        for b0 in (0.5, 0.1, 0.9, 0.01, 0.99, 1e-3, 1e-4, 1e-5, 1e-6):
            for form, start, back in ((equations, [a0, b0], lambda v: v), (in_logs, np.log([a0, b0]), np.exp)):
                sol, info, ok, _ = fsolve(form, start, full_output=True, xtol=1e-14)
                a, b = back(sol)
                if ok == 1 and a > 0 and 0 < b < 1 and max(abs(x) for x in equations([a, b])) < 1e-9:
                    return float(K * b**a)
    return None
