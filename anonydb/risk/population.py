"""Population uniqueness from a sample's class-size histogram: Zayatz, Pitman, SNB and Dankar's rule.

Input: ``c_j`` = number of equivalence classes of size ``j`` in the sample, so that ``n = sum j c_j``
records fall into ``u = sum c_j`` classes, ``c1`` of them unique; the population has ``N >= n``
records and the sampling fraction is ``f = n / N``. Every model estimates ``U``, the number of
population uniques; :func:`uniqueness` reports the share ``U / N`` as ARX's
``getFractionOfUniqueTuples*`` do (ARX 3.x, ``org.deidentifier.arx.risk``).

Zayatz (1991), as restated by Dankar et al. (2012) and coded in ARX's ``ModelZayatz``: with the sample's
class-size distribution standing in for the population's and ``P(1|j)`` the hypergeometric chance that
exactly one record of a population class of size ``j`` is drawn, ``P(1|j) = j C(N-j, n-1) / C(N, n)``,

    U = (c1 / f) * c1 P(1|1) / sum_j c_j P(1|j).

``P(1|j) / P(1|1) = j prod_{i=1}^{j-1} (1 - (n-1)/(N-i))`` is computed from differences of log-gamma
functions taken without cancellation (:func:`_lgamma_diff`), exactly for any N up to 1e10 and beyond;
ARX caps N at 2^31-1 (an overflow its code flags as an error), which this module does not copy.

Pitman (Hoshino 2001): the Pitman sampling formula's maximum-likelihood equations

    sum_{i=1}^{u-1} 1/(t + i a) = sum_{i=1}^{n-1} 1/(t + i)
    sum_{i=1}^{u-1} i/(t + i a) = sum_j c_j sum_{k=1}^{j-1} 1/(k - a)

in closed form through digamma (``sum_{i=1}^{m-1} 1/(x + i) = psi(x + m) - psi(x + 1)``), solved by
Newton-Raphson with the trigamma Jacobian from ARX's starts (its closed-form initial guess, then its
16 prepared starts in [0, 1)^2); ``U = Gamma(t + 1) / Gamma(t + a) N^a`` (Hoshino's large-N form of
the expected number of singletons). A root is accepted in Pitman's parameter space 0 < a < 1,
t > -a, with 0 <= U <= N (ARX: t >= 0 along the iteration, a != 0, 0 <= U <= N; so where the root
has -a < t < 0 ARX has no Pitman estimate and this module has one).

SNB (Chen & Keller-McNulty 1998): population class sizes are 1 + NegBin(a, b), each sampled
binomially with probability f; with ``d = (1 - f)(1 - b)`` the expected counts of sample classes of
sizes 1 and 2 among K population classes are

    E c1 = K f (b / (1 - d))^a (1 + a d / (1 - d))
    E c2 = K f^2 a b^a (1 - b) (2 - (1 - a) d) / (2 (1 - d)^(a + 2)),

solved for (a, b) with a > 0, 0 < b < 1 (Newton on the logarithms, in log a and logit b); ``U = K b^a``.
K, the number of non-empty population classes, is Haas et al.'s (1995) Shlosser-type estimate

    K = u + c1 * sum_j j f^2 (1-f^2)^(j-1) c_j / sum_j (1-f)^j ((1+f)^j - 1) c_j
              * (sum_j (1-f)^j c_j / sum_j j f (1-f)^(j-1) c_j)^2.

Dankar, El Emam, Neisa and Roffey (2012), as ARX's ``RiskModelPopulationUniqueness``: for f <= 0.1
Pitman, Zayatz where Pitman has no valid estimate; otherwise the smaller of Zayatz and SNB, Zayatz
where SNB has none. An estimate is invalid (``None``) where NaN or 0, as ARX's ``isValid``.

Where this module differs from ARX 3.x (and why):

* SNB's K: ARX writes ``var2 += (1-f)^j c_j (1+f)^j - 1``, subtracting 1 once per distinct class
  size instead of ``(1-f)^j c_j`` (Haas et al.'s ``sum (1-f)^j ((1+f)^j - 1) c_j``): a misplaced
  parenthesis. ``arx=True`` restores ARX's term.
* SNB's second equation: ARX raises ``(1 - d)`` to ``+(a + 2)``; the shifted negative binomial's
  probability of a sample class of size 2 (``f^2/2 E[F(F-1)(1-f)^(F-2)]``) has ``(1 - d)^-(a+2)``, as
  the first equation has ``(1 - d)^-a``. ``arx=True`` restores ARX's exponent. With either spot as
  ARX has it SNB finds no root on ARX's Adult at f = 0.2, and Dankar's rule takes Zayatz (0.3577,
  ARX's published figure); as the model has them SNB gives 0.3195, below Zayatz, and the rule takes it.
  The two SNB formulas are derived here from the model's definition; the 1998 paper's text, like
  Zayatz's 1991 report, was not at hand to compare, and ARX's Zayatz agrees with Dankar et al.'s
  restatement above.
* SNB with no sample class of size 2 (c2 = 0) has no interior root; it is reported invalid.
* At N = n (f = 1) the population is the sample: every model reports ``c1`` population uniques,
  exactly. ARX's Zayatz gives exactly c1 there and its SNB c1 to the solver's accuracy, so its Dankar
  share equals the sample uniqueness; its Pitman (only consulted for f <= 0.1) does not.
* The solvers do not stop on the wall clock (ARX: 100 ms a try, 1 s in all), run at most 100
  Newton steps a start (ARX: 1000), halve a step that would leave the parameter space (ARX drops
  the start), and stop at a tighter tolerance (|score| <= 1e-10 relative to its terms, ARX 1e-6
  absolute), so the result does not depend on the machine. SNB starts from 45 points (a in 0.01..100,
  b in 1e-6..0.99; its roots can sit at b ~ 1e-5) where ARX starts at (1, 1), then its 16 values.
  Digamma and trigamma are accurate to ~1e-14 (ARX's trigamma skips its asymptotic tail for
  8 <= x < 12, which only slowed its Newton steps, as the root is set by the digamma equations).
* ARX's Pitman also retries with iterative sums over 1..n where the closed form fails; the closed
  form here is accurate, so there is no loop over n or N anywhere: every function runs in time
  linear in the number of distinct class sizes.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from anonydb.errors import InputError

__all__ = ["REGIONS", "population_size", "uniqueness"]

#: population sizes of ARX's ``ARXPopulationModel.Region`` (its NONE, 0, left out)
REGIONS: dict[str, int] = {
    "africa": 1_100_000_000,
    "australia": 23_130_900,
    "europe": 740_000_000,
    "north_america": 565_265_000,
    "south_america": 385_742_554,
    "european_union": 507_420_000,
    "brasil": 202_656_788,
    "canada": 34_834_841,
    "china": 1_366_040_000,
    "france": 65_820_916,
    "germany": 80_767_000,
    "india": 1_210_569_573,
    "uk": 63_705_000,
    "usa": 317_238_626,
}

#: Dankar et al.'s threshold on the sampling fraction: Pitman at or below it
DANKAR_THRESHOLD = 0.1

_MAX_STEPS = 100  # Newton steps per start
_TOLERANCE = 1e-10  # on the score equations, relative to their terms' size


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{what} must be an integer, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise InputError(f"{what} must be an integer, not {value!r}") from None


def population_size(n: int, *, size: int | None = None, fraction: float | None = None,
                    region: str | None = None) -> int:
    """The population size N for a sample of ``n`` records: given (``size``), from the sampling
    fraction (``N = round(n / fraction)``, halves up, as ARX's ``ARXPopulationModel.create(n, f)``), or
    a region's population (:data:`REGIONS`). Exactly one of the three; N >= n, 0 < fraction <= 1."""
    n = _whole(n, "sample size n")
    if n < 1:
        raise InputError(f"sample size n must be at least 1, not {n}")
    given = [name for name, v in (("size", size), ("fraction", fraction), ("region", region)) if v is not None]
    if len(given) != 1:
        raise InputError(f"give exactly one of size=, fraction=, region= (got {', '.join(given) or 'none'})")
    if size is not None:
        N = _whole(size, "population size")
    elif fraction is not None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise InputError(f"sampling fraction must be a number in (0, 1], not {fraction!r}")
        N = math.floor(n / fraction + 0.5)
    else:
        key = str(region).strip().lower().replace(" ", "_").replace("-", "_")
        if key not in REGIONS:
            raise InputError(f"unknown region {region!r}; known: {', '.join(sorted(REGIONS))}")
        N = REGIONS[key]
    if N < n:
        raise InputError(f"population size {N} is smaller than the sample size {n}")
    return N


# ---------------------------------------------------------------------------------------------
# special functions: scalar (math) and vector (numpy) digamma / trigamma, log-gamma differences

_SHIFT = 10.0  # recurrence up to x >= 10, then the asymptotic series (error ~1e-14)


def _psi(x: float) -> float:
    """Digamma for x > 0."""
    r = 0.0
    while x < _SHIFT:
        r -= 1.0 / x
        x += 1.0
    i2 = 1.0 / (x * x)
    return r + math.log(x) - 0.5 / x - i2 * (1 / 12 - i2 * (1 / 120 - i2 * (1 / 252 - i2 * (1 / 240 - i2 / 132))))


def _psi1(x: float) -> float:
    """Trigamma for x > 0."""
    r = 0.0
    while x < _SHIFT:
        r += 1.0 / (x * x)
        x += 1.0
    i2 = 1.0 / (x * x)
    return r + 0.5 * i2 + (1 + i2 * (1 / 6 - i2 * (1 / 30 - i2 * (1 / 42 - i2 * (1 / 30 - i2 * 5 / 66))))) / x


def _vpsi_pair(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Digamma and trigamma of every x > 0: the asymptotic series where x >= _SHIFT, the scalar
    recurrences below (a handful of elements for distinct integer class sizes)."""
    x = np.asarray(x, dtype=float)
    psi, psi1 = np.empty_like(x), np.empty_like(x)
    high = x >= _SHIFT
    xh = x[high]
    i2 = 1.0 / (xh * xh)
    psi[high] = np.log(xh) - 0.5 / xh - i2 * (1 / 12 - i2 * (1 / 120 - i2 * (1 / 252 - i2 * (1 / 240 - i2 / 132))))
    psi1[high] = 0.5 * i2 + (1 + i2 * (1 / 6 - i2 * (1 / 30 - i2 * (1 / 42 - i2 * (1 / 30 - i2 * 5 / 66))))) / xh
    for i in np.flatnonzero(~high):
        psi[i], psi1[i] = _psi(float(x[i])), _psi1(float(x[i]))
    return psi, psi1


def _stirling_tail(z: np.ndarray) -> np.ndarray:
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2), z >= 10."""
    i2 = 1.0 / (z * z)
    return (1 / 12 - i2 * (1 / 360 - i2 * (1 / 1260 - i2 / 1680))) / z


def _lgamma_diff(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """lgamma(x + m) - lgamma(x) for x > 0, m >= 0, without the cancellation of two huge log-gammas
    (x up to 1e10 and beyond): (x - 1/2) log1p(m/x) + m log(x + m) - m + tail(x + m) - tail(x)."""
    x = np.asarray(x, dtype=float)
    m = np.asarray(m, dtype=float)
    out = np.empty_like(x)
    big = x >= _SHIFT
    xb, mb = x[big], m[big]
    out[big] = ((xb - 0.5) * np.log1p(mb / xb) + mb * np.log(xb + mb) - mb
                + _stirling_tail(xb + mb) - _stirling_tail(xb))
    for i in np.flatnonzero(~big):
        out[i] = math.lgamma(x[i] + m[i]) - math.lgamma(x[i])
    return out


# ---------------------------------------------------------------------------------------------
# the models; each returns the estimated number of population uniques, or NaN when invalid


class _Sample:
    """The histogram as arrays: sizes j, counts c_j (c_j > 0), with n, u, c1, c2."""

    def __init__(self, histogram: Mapping[int, int]):
        if not isinstance(histogram, Mapping):
            raise InputError(f"histogram must be a mapping class size -> number of classes, not {type(histogram).__name__}")
        pairs = []
        for size, count in histogram.items():
            size = _whole(size, "class size")
            count = _whole(count, f"number of classes of size {size}")
            if size < 1:
                raise InputError(f"class sizes must be at least 1, not {size}")
            if count < 0:
                raise InputError(f"number of classes of size {size} must not be negative, not {count}")
            if count:
                pairs.append((size, count))
        if not pairs:
            raise InputError("the class-size histogram is empty (no records)")
        pairs.sort()
        self.sizes = np.array([p[0] for p in pairs], dtype=float)
        self.counts = np.array([p[1] for p in pairs], dtype=float)
        self.n = sum(s * c for s, c in pairs)
        self.u = sum(c for _, c in pairs)
        counts = dict(pairs)
        self.c1, self.c2 = counts.get(1, 0), counts.get(2, 0)


def _zayatz(s: _Sample, N: int) -> float:
    n = s.n
    j = s.sizes
    possible = j <= N - n + 1  # else no draw of n holds exactly one record of the class
    jp = j[possible]
    # log of prod_{i=1}^{j-1} (N-n+1-i)/(N-i) = lgamma ratios of the two falling factorials
    log_ratio = _lgamma_diff(N - n + 2 - jp, jp - 1) - _lgamma_diff(N - jp + 1, jp - 1)
    weights = s.counts[possible] * jp * np.exp(log_ratio)  # c_j P(1|j) / P(1|1)
    return s.c1 * s.c1 / (float(weights.sum()) * (n / N))


def _newton(score, start: tuple[float, float], inside) -> tuple[float, float] | None:
    """Newton-Raphson on ``score(x, y) -> (f1, f2, j11, j12, j21, j22, scale)`` from ``start``, a step
    halved while it would leave ``inside``; None when the scores turn NaN or there is no root within
    _MAX_STEPS."""
    x, y = start
    if not inside(x, y):
        return None
    for _ in range(_MAX_STEPS):
        f1, f2, a, b, c, d, scale = score(x, y)
        if not (math.isfinite(f1) and math.isfinite(f2)):
            return None
        if abs(f1) <= _TOLERANCE * scale and abs(f2) <= _TOLERANCE * scale:
            return x, y
        det = a * d - b * c
        if det == 0 or not math.isfinite(det):
            return None
        dx = (d * f1 - b * f2) / det
        dy = (a * f2 - c * f1) / det
        for _ in range(60):  # damped: halve a step that leaves the parameter space
            if inside(x - dx, y - dy):
                break
            dx, dy = dx / 2, dy / 2
        else:
            return None
        x, y = x - dx, y - dy
        if abs(dx) <= 1e-15 * (1 + abs(x)) and abs(dy) <= 1e-15 * (1 + abs(y)):
            # no progress left at double precision: a root if the scores are near zero (1e-6, ARX's
            # accuracy), else a point where a boundary stopped the steps
            return (x, y) if max(abs(f1), abs(f2)) <= 1e-6 * scale else None
    return None


_START_GRID = [(i * 0.33, k * 0.33) for i in range(4) for k in range(4)]  # ARX's prepared start values


def _pitman_start(s: _Sample) -> tuple[float, float]:
    """ARX's closed-form initial guess for (theta, alpha) (c2 = 0 taken as 1)."""
    n, u, c1 = float(s.n), float(s.u), float(s.c1)
    c2 = float(s.c2) or 1.0
    c = c1 * (c1 - 1) / c2
    den = 2 * c1 * u + c1 * c - n * c
    t = (n * u * c - c1 * (n - 1) * (2 * u + c)) / den if den else math.nan
    a = (t * (c1 - n) + (n - 1) * c1) / (n * u)
    return t, a


def _pitman_parameters(s: _Sample) -> tuple[float, float] | None:
    n, u = float(s.n), float(s.u)
    big = s.sizes > 1
    sizes, counts = s.sizes[big], s.counts[big]
    n_big = float(counts.sum())

    def score(t: float, a: float):
        r = t / a
        s1 = (_psi(u + r) - _psi(r + 1)) / a  # sum_{i<u} 1/(t+ia)
        s2 = (_psi1(r + 1) - _psi1(u + r)) / (a * a)  # sum_{i<u} 1/(t+ia)^2
        g1 = _psi(n + t) - _psi(t + 1)  # sum_{i<n} 1/(t+i)
        g2 = _psi1(t + 1) - _psi1(n + t)
        psi, psi1 = _vpsi_pair(sizes - a)
        h1 = float(counts @ psi) - n_big * _psi(1 - a)  # sum_j c_j sum_{k<j} 1/(k-a)
        h2 = n_big * _psi1(1 - a) - float(counts @ psi1)
        i1 = ((u - 1) - t * s1) / a  # sum i/(t+ia)
        i2 = (s1 - t * s2) / a  # sum i/(t+ia)^2
        i3 = ((u - 1) - 2 * t * s1 + t * t * s2) / (a * a)  # sum i^2/(t+ia)^2
        scale = max(abs(s1), abs(g1), abs(i1), abs(h1), 1.0)
        return s1 - g1, i1 - h1, g2 - s2, -i2, -i2, -h2 - i3, scale

    def inside(t: float, a: float) -> bool:
        return 0 < a < 1 and t > -a and math.isfinite(t)

    for start in [_pitman_start(s), *_START_GRID]:
        if all(map(math.isfinite, start)):
            root = _newton(score, start, inside)
            if root is not None:
                return root
    return None


def _pitman(s: _Sample, N: int) -> float:
    root = _pitman_parameters(s)
    if root is None:
        return math.nan
    t, a = root
    try:
        estimate = math.exp(math.lgamma(t + 1) - math.lgamma(t + a) + a * math.log(N))
    except OverflowError:
        return math.nan
    return estimate if 0 <= estimate <= N else math.nan


def _snb_classes(s: _Sample, f: float, arx: bool) -> float:
    """Haas et al.'s Shlosser-type estimate of the number of non-empty population classes (f < 1)."""
    j, c = s.sizes, s.counts
    qj = np.exp(j * math.log1p(-f)) * c  # (1-f)^j c_j
    num = float((j * f * f * np.exp((j - 1) * math.log1p(-f * f)) * c).sum())
    if arx:  # ARX: sum ((1-f)^j c_j (1+f)^j - 1) = sum ((1-f^2)^j c_j - 1)
        den = float((np.exp(j * math.log1p(-f * f)) * c - 1).sum())
    else:  # sum (1-f)^j ((1+f)^j - 1) c_j = sum ((1-f^2)^j - (1-f)^j) c_j, without overflow
        den = float(((np.expm1(j * math.log1p(-f * f)) - np.expm1(j * math.log1p(-f))) * c).sum())
    ratio = float(qj.sum()) / float((j * f * qj).sum() / (1 - f))
    return s.u + s.c1 * (num / den) * ratio * ratio


_SNB_STARTS = [(math.log(a), math.log(b / (1 - b))) for a in (1.0, 0.1, 10.0, 0.01, 100.0)
               for b in (0.5, 0.1, 0.9, 0.01, 0.99, 1e-3, 1e-4, 1e-5, 1e-6)]


def _snb_parameters(K: float, f: float, c1: float, c2: float, arx: bool) -> tuple[float, float] | None:
    """(a, b) solving the SNB equations for c1 and c2, on their logarithms, in (log a, logit b)."""
    lk1, lk2 = math.log(K * f / c1), math.log(K * f * f / (2 * c2))
    sign = 1.0 if arx else -1.0  # exponent of (1 - d) in the second equation: ARX +(a+2), model -(a+2)

    def score(x: float, y: float):
        a = math.exp(x)
        b = 1.0 / (1.0 + math.exp(-y))
        nb = 1.0 - b  # 1 - b, without the cancellation of 1 - 1/(1+e^-y)
        d = (1 - f) * nb
        L = 1 - d
        r = d / L
        e = 2 - (1 - a) * d
        lb, lL = math.log(b), math.log(L)
        g1 = lk1 + a * (lb - lL) + math.log1p(a * r)
        g2 = lk2 + x + a * lb + math.log(nb) + sign * (a + 2) * lL + math.log(e)
        # partial derivatives in a and b, then by the chain rule in x = log a and y = logit b
        g1a = lb - lL + r / (1 + a * r)
        g1b = a / b - a * (1 - f) / L - a * (1 - f) / (L * L * (1 + a * r))
        g2a = 1 / a + lb + sign * lL + d / e
        g2b = a / b - 1 / nb + sign * (a + 2) * (1 - f) / L + (1 - a) * (1 - f) / e
        db = b * nb
        return g1, g2, g1a * a, g1b * db, g2a * a, g2b * db, 1.0

    def inside(x: float, y: float) -> bool:
        return -700 < x < 700 and -700 < y < 36  # a finite and positive, 0 < b < 1 in double precision

    for start in _SNB_STARTS:
        root = _newton(score, start, inside)
        if root is not None:
            return math.exp(root[0]), 1.0 / (1.0 + math.exp(-root[1]))
    return None


def _snb(s: _Sample, N: int, arx: bool = False) -> float:
    f = s.n / N
    if s.c2 == 0:
        return math.nan
    K = _snb_classes(s, f, arx)
    if not (math.isfinite(K) and K > 0):
        return math.nan
    root = _snb_parameters(K, f, float(s.c1), float(s.c2), arx)
    if root is None:
        return math.nan
    a, b = root
    return K * math.exp(a * math.log(b))


def _valid(x: float) -> bool:
    return not math.isnan(x) and x != 0


def uniqueness(histogram: Mapping[int, int], population: int, *, arx: bool = False) -> dict[str, Any]:
    """Population uniqueness of a sample whose class-size histogram is ``histogram`` (class size ->
    number of classes of that size), drawn from a population of ``population`` records.

    Returns the sizes, the sample uniqueness and each model's estimated share of the population's
    records that are unique (``None`` where the model has no valid estimate), with Dankar et al.'s
    choice among them (see the module docstring). ``arx=True`` reproduces two spots of ARX's SNB that
    differ from the model (K's denominator, the exponent in the second equation)."""
    s = _Sample(histogram)
    N = _whole(population, "population size")
    if N < s.n:
        raise InputError(f"population size {N} is smaller than the sample size {s.n}")
    f = s.n / N
    out: dict[str, Any] = {"population_size": N, "sample_size": s.n, "sampling_fraction": f, "classes": s.u,
                           "sample_uniques": s.c1, "sample_uniqueness": s.c1 / s.n}
    if s.c1 == 0:
        return out | {"zayatz": 0.0, "pitman": 0.0, "snb": 0.0, "dankar": 0.0, "dankar_model": "none"}
    if N == s.n:  # the population is the sample: its uniques are the sample's
        zayatz = pitman = snb = float(s.c1)
    else:
        zayatz = _zayatz(s, N)
        pitman = _pitman(s, N)
        snb = _snb(s, N, arx)
    if f <= DANKAR_THRESHOLD:
        model, dankar = ("pitman", pitman) if _valid(pitman) else ("zayatz", zayatz)
    elif _valid(snb) and not zayatz < snb:
        model, dankar = "snb", snb
    else:
        model, dankar = "zayatz", zayatz

    def share(x: float) -> float | None:
        return x / N if _valid(x) else None

    return out | {"zayatz": share(zayatz), "pitman": share(pitman), "snb": share(snb),
                  "dankar": dankar / N if _valid(dankar) else 0.0, "dankar_model": model}
