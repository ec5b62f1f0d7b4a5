"""Differential privacy's noise, drawn by OpenDP (never by hand).

Floating-point Laplace noise drawn naively (``-b * log(U)``) leaks the true value through the
doubles it can and cannot produce [Mironov 2012, "On significance of the least significant bits
for differential privacy"]. OpenDP's samplers are exact: integers get the discrete Laplace (the
two-sided geometric) from a cryptographic RNG, reals the Laplace rounded to a power-of-two
granularity, and each measurement states its privacy loss (``map``), which :func:`scale_for`
checks against the budget the caller gives it.

The mechanisms [Dwork et al. 2006; the survey's Table IV, "epsilon-differential privacy additive
noise"]: a vector of per-group aggregates with L1 sensitivity D gets Laplace noise of scale
b = D / epsilon, and is epsilon-DP. A 95% interval for one value is +- b ln 20 (P(|X| > t) =
exp(-t / b) for the Laplace; the discrete one's tail is no heavier). Group keys that are not public
are released only where the noisy count passes a threshold set by delta (OpenDP's
``make_laplace_threshold``, the method of Rogers 2023 / Google's partition selection), so that a
key only one person holds appears with probability at most delta.
"""

from __future__ import annotations

import math
from typing import Any

from .errors import AnonyDBError, InputError

#: Laplace: P(|X| > b ln 20) = 1/20
INTERVAL_95 = math.log(20)


def _dp() -> Any:
    try:
        import opendp.prelude as dp
    except ImportError as e:
        raise InputError("differential privacy needs OpenDP: pip install 'anonydb[dp]'") from e
    dp.enable_features("contrib")
    return dp


def _measurement(integer: bool, scale: float) -> Any:
    dp = _dp()
    if integer:
        space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
    else:
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    return dp.m.make_laplace(*space, scale=scale)


def scale_for(sensitivity: float, epsilon: float, integer: bool) -> float:
    """The least Laplace scale whose OpenDP measurement spends at most ``epsilon`` on inputs one
    person moves by ``sensitivity`` in L1 (about sensitivity / epsilon)."""
    dp = _dp()
    d_in = int(sensitivity) if integer else float(sensitivity)
    return float(dp.binary_search_param(lambda s: _measurement(integer, s), d_in=d_in, d_out=float(epsilon)))


def laplace(values: list, sensitivity: float, epsilon: float, integer: bool) -> tuple[list, float]:
    """``values`` with Laplace noise (discrete for integers) spending ``epsilon``; and its scale."""
    scale = scale_for(sensitivity, epsilon, integer)
    if not values:
        return [], scale
    try:
        return list(_measurement(integer, scale)([int(v) for v in values] if integer else
                                                 [float(v) for v in values])), scale
    except Exception as e:  # noqa: BLE001 - OpenDP's errors (an aggregate past 64-bit integers): one line
        raise AnonyDBError(f"OpenDP could not add the noise: {str(e).strip().splitlines()[-1][:200]}") from None


def threshold(counts: dict[str, int], groups: int, rows: int, epsilon: float, delta: float
              ) -> tuple[dict[str, int], float, int]:
    """Partition selection: the counts (keyed by group) with discrete Laplace noise, kept where the
    noisy count reaches a threshold, spending (epsilon, delta) when one person touches at most
    ``groups`` groups with at most ``rows`` rows each (OpenDP's L0/L1/Linf sensitivity
    (groups, groups x rows, rows)). Returns (the kept noisy counts, the scale, the threshold: the
    least whose delta fits)."""
    dp = _dp()
    space = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64")), dp.l01inf_distance(dp.absolute_distance(T="i64"))
    d_in = (int(groups), int(groups * rows), int(rows))
    def spends(s: float) -> bool:  # the epsilon part of the loss; the threshold sets the delta part
        return s > 0 and dp.m.make_laplace_threshold(*space, scale=s, threshold=2**62).map(d_in)[0] <= epsilon

    scale = float(dp.binary_search(spends, bounds=(1e-9, 1e12)))

    def fits(t: int) -> bool:
        return dp.m.make_laplace_threshold(*space, scale=scale, threshold=t).map(d_in)[1] <= delta

    t = int(dp.binary_search(fits, bounds=(int(rows), 2**31 - 1)))
    m = dp.m.make_laplace_threshold(*space, scale=scale, threshold=t)
    return dict(m({k: int(v) for k, v in counts.items()})) if counts else {}, scale, t
