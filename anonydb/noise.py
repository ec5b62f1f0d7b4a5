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
from typing import Any, Callable

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


#: the Gaussian's two-sided 95% point (the discrete Gaussian's tail is no heavier)
GAUSS_95 = 1.959963984540054


def gaussian_scale_for(sensitivity: float, rho: float, integer: bool) -> float:
    """The least Gaussian scale sigma whose OpenDP measurement spends at most ``rho`` (zCDP) on
    inputs one person moves by ``sensitivity`` in L2 (rho = sensitivity^2 / (2 sigma^2); Bun and
    Steinke 2016, the discrete one's the same, Canonne, Kamath and Steinke 2020)."""
    dp = _dp()
    space = (dp.vector_domain(dp.atom_domain(T="i64" if integer else float, **({} if integer else {"nan": False}))),
             dp.l2_distance(T=float))
    return float(dp.binary_search_param(lambda s: dp.m.make_gaussian(*space, scale=s), d_in=float(sensitivity),
                                        d_out=float(rho)))


def rho_for(epsilon: float, delta: float) -> float:
    """The most zCDP rho that OpenDP's conversion (``make_zCDP_to_approxDP``) turns into at most
    (``epsilon``, ``delta``)-DP: the budget a release's Gaussian draws share."""
    dp = _dp()
    unit = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(dp.atom_domain(T=float, nan=False),
                                                        dp.absolute_distance(T=float), scale=1.0))
    # a unit-scale Gaussian at distance d spends rho = d^2 / 2, and rho <= epsilon at any delta
    d = dp.binary_search(lambda x: unit.map(x).epsilon(delta) <= epsilon, bounds=(0.0, math.sqrt(2 * epsilon)))
    return float(d) ** 2 / 2


def gaussian_threshold_for(groups: int, rows: int, rho: float, delta: float) -> tuple[float, int]:
    """Partition selection with Gaussian noise (OpenDP's ``make_gaussian_threshold``, Rogers 2023):
    the least scale whose rho fits, then the least threshold whose delta fits, when one person
    touches at most ``groups`` groups with at most ``rows`` rows each (L0, L2, Linf =
    groups, rows x sqrt(groups), rows)."""
    dp = _dp()
    space = (dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64")),
             dp.l02inf_distance(dp.absolute_distance(T=float)))
    d_in = (int(groups), float(rows) * math.sqrt(groups), float(rows))

    def spends(s: float) -> bool:
        return s > 0 and dp.m.make_gaussian_threshold(*space, scale=s, threshold=2**62).map(d_in)[0] <= rho

    scale = float(dp.binary_search(spends, bounds=(1e-9, 1e12)))

    def fits(t: int) -> bool:
        return dp.m.make_gaussian_threshold(*space, scale=scale, threshold=t).map(d_in)[1] <= delta

    return scale, int(dp.binary_search(fits, bounds=(int(rows), 2**31 - 1)))


def threshold_for(groups: int, rows: int, epsilon: float, delta: float) -> tuple[float, int]:
    """Partition selection's (scale, threshold) when one person touches at most ``groups`` groups
    with at most ``rows`` rows each (OpenDP's L0/L1/Linf sensitivity (groups, groups x rows, rows)):
    the least discrete Laplace scale whose epsilon fits, then the least threshold whose delta fits
    (``make_laplace_threshold``'s privacy map: a key is kept where its noisy count reaches it)."""
    dp = _dp()
    space = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64")), dp.l01inf_distance(dp.absolute_distance(T="i64"))
    d_in = (int(groups), int(groups * rows), int(rows))

    def spends(s: float) -> bool:  # the epsilon part of the loss; the threshold sets the delta part
        return s > 0 and dp.m.make_laplace_threshold(*space, scale=s, threshold=2**62).map(d_in)[0] <= epsilon

    scale = float(dp.binary_search(spends, bounds=(1e-9, 1e12)))

    def fits(t: int) -> bool:
        return dp.m.make_laplace_threshold(*space, scale=scale, threshold=t).map(d_in)[1] <= delta

    return scale, int(dp.binary_search(fits, bounds=(int(rows), 2**31 - 1)))


def threshold(counts: dict[str, int], groups: int, rows: int, epsilon: float, delta: float
              ) -> tuple[dict[str, int], float, int]:
    """Partition selection (:func:`threshold_for`) applied to ``counts`` (keyed by group): (the kept
    noisy counts, the scale, the threshold)."""
    scale, t = threshold_for(groups, rows, epsilon, delta)
    step = noise_step({"keys": 1, "count": True, "count_scale": scale, "threshold": t, "values": []})
    return {k: n for k, n, *_ in step(list(counts.items()))}, scale, t


def noise_step(plan: dict[str, Any]) -> Callable[[list[tuple]], list[tuple]]:
    """The noise of one batch of per-group aggregates, as a function of plain data: rows
    (keys..., n, s_0, ...) in, released rows out (keys..., [count, scale, lo95, hi95], per sum
    [value, scale, lo95, hi95], per mean [value]). ``plan`` fixes everything a draw needs, decided
    once from the budget alone (never from the data): ``keys`` (how many), ``count`` (whether the
    count is released), ``count_scale`` (None: no count drawn), ``threshold`` (None: every key
    kept; else only keys whose noisy count reaches it), ``values`` ([{kind: sum | mean, integer,
    scale, lo, hi}]).

    Each value gets its own independent draw, so a table split into batches gets the noise it
    would get whole: Spark runs this on its executors, the other engines where anonydb runs. The
    function imports only OpenDP (Spark's cloudpickle sends it by value). A mean is the noisy sum
    over the noisy count (at least 1), clamped back into [lo, hi]: post-processing, free."""
    nk, out_count, cs, thr = plan["keys"], plan["count"], plan.get("count_scale"), plan.get("threshold")
    gauss = plan.get("mechanism") == "gaussian"
    values, w = list(plan["values"]), (GAUSS_95 if gauss else math.log(20))

    def run(rows: list[tuple]) -> list[tuple]:
        import opendp.prelude as dp

        dp.enable_features("contrib")

        def draw(xs: list, integer: bool, scale: float) -> list:
            if not xs:
                return []
            metric = dp.l2_distance(T=float) if gauss else dp.l1_distance(T="i64" if integer else float)
            if integer:
                space = dp.vector_domain(dp.atom_domain(T="i64")), metric
                xs = [int(x) for x in xs]
            else:
                space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), metric
                xs = [float(x) for x in xs]
            try:
                return list((dp.m.make_gaussian if gauss else dp.m.make_laplace)(*space, scale=scale)(xs))
            except Exception as e:  # noqa: BLE001 - OpenDP's errors (past 64-bit integers): one line
                raise RuntimeError(f"OpenDP could not add the noise: {str(e).strip().splitlines()[-1][:200]}") from None

        ns = [int(r[nk]) for r in rows]
        if thr is not None:
            space = (dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64")),
                     (dp.l02inf_distance(dp.absolute_distance(T=float)) if gauss else
                      dp.l01inf_distance(dp.absolute_distance(T="i64"))))
            m = (dp.m.make_gaussian_threshold if gauss else dp.m.make_laplace_threshold)(*space, scale=cs, threshold=thr)
            got = m({str(i): n for i, n in enumerate(ns)}) if rows else {}
            kept = sorted(int(i) for i in got)
            noisy_n = [got[str(i)] for i in kept]
        else:
            kept = list(range(len(rows)))
            noisy_n = draw(ns, True, cs) if cs is not None else ns
        drawn = []
        for j, v in enumerate(values):
            xs = [rows[i][nk + 1 + j] or 0 for i in kept]
            drawn.append(draw([round(x) for x in xs] if v["integer"] else xs, v["integer"], v["scale"]))
        out = []
        for at, i in enumerate(kept):
            row = list(rows[i][:nk])
            if out_count:
                n = noisy_n[at]
                row += [n, cs, n - cs * w, n + cs * w]
            for j, v in enumerate(values):
                x = drawn[j][at]
                if v["kind"] == "sum":
                    row += [x, v["scale"], x - v["scale"] * w, x + v["scale"] * w]
                else:
                    row += [min(max(x / max(noisy_n[at], 1), v["lo"]), v["hi"])]
            out.append(tuple(row))
        return out

    return run
