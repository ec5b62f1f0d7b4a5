"""Oracle for anonydb.risk.individual: sdcMicro's individual, global and household risk written
out as its R code computes them, record by record (imports nothing from anonydb).

* freqCalc: f_k = records sharing the key, F_k = the sum of their weights (here a key value None
  matches only None: anonydb's rule, not freqCalc's NA wildcard).
* indivRisk(method = "approx", survey = TRUE): the loop over k, then rk[fk == Fk] <- 1/fk;
  survey = FALSE (no weights): 1/fk.
* measure_risk: global_risk_ER = sum(rk), global_risk = that / n; with hid (fast_hier):
  by(risk, hid, function(x) 1 - prod(1 - x)) given to every member, hier_risk_ER = its sum over
  the records, hier_risk = that / n.
* the sdcMicroObj print (R/printFunctions.R): sum(r > median(r) + 2 * mad(r) & r > 0.1).

Persons: a unit is a person, f_k its distinct persons, F_k their weights' sum, a person's risk the
largest over its classes, households group persons.
"""

from __future__ import annotations

import math
from collections import defaultdict

BINS = (1.0, 0.5, 0.2, 0.1, 0.05, 0.01, 0.0)


def indiv_risk(fk: list[int], Fk: list[float] | None) -> list[float]:
    """indivRisk(x, method = "approx", qual = 1, survey = Fk is not None), as R/indivRisk.R."""
    if Fk is None:
        return [1 / f for f in fk]
    rk = [0.0] * len(fk)
    for k in range(len(fk)):
        pk = fk[k] / Fk[k]
        if fk[k] > 2:
            rk[k] = pk / (fk[k] - (1 - pk))
        if fk[k] == 2 and pk != 1:
            rk[k] = (pk / (1 - pk)) - (((pk / (1 - pk)) ** 2) * math.log(1 / pk))
        if fk[k] == 1 and pk != 1:
            rk[k] = (pk / (1 - pk)) * math.log(1 / pk)
    for k in range(len(fk)):  # TF <- fk == Fk; rk[TF] <- 1/fk[TF]
        if fk[k] == Fk[k]:
            rk[k] = 1 / fk[k]
    return rk


def r_median(x: list[float]) -> float:
    """R's median.default."""
    s = sorted(x)
    n = len(s)
    half = (n + 1) // 2
    if n % 2 == 1:
        return s[half - 1]
    return (s[half - 1] + s[half]) / 2


def r_mad(x: list[float]) -> float:
    """R's mad(x) = 1.4826 * median(abs(x - median(x)))."""
    c = r_median(x)
    return 1.4826 * r_median([abs(v - c) for v in x])


def higher_than_main_part(x: list[float], factor: float = 2) -> int:
    """R/printFunctions.R: sum((x > median(x) + 2*mad(x)) & (x > 0.1)) (print.measure_risk: 3*mad)."""
    line = r_median(x) + factor * r_mad(x)
    return sum(1 for v in x if v > line and v > 0.1)


def freq_calc(keys: list[tuple], w: list[float] | None) -> tuple[list[int], list[float] | None]:
    f: dict[tuple, int] = defaultdict(int)
    F: dict[tuple, float] = defaultdict(float)
    for i, key in enumerate(keys):
        f[key] += 1
        if w is not None:
            F[key] += w[i]
    return [f[key] for key in keys], (None if w is None else [F[key] for key in keys])


def hier_risk(risk: list[float], hid: list) -> list[float]:
    """measure_risk's fast_hier: 1 - prod(1 - x) per household, given to each member."""
    members: dict = defaultdict(list)
    for r, h in zip(risk, hid):
        members[h].append(r)
    hr = {h: 1 - math.prod(1 - x for x in xs) for h, xs in members.items()}
    return [hr[h] for h in hid]


def figures(keys: list[tuple], weights: list[float] | None = None, households: list | None = None,
            persons: list | None = None) -> dict:
    """Every figure of anonydb.risk.individual.individual_risk for rows given column-wise."""
    if persons is None:
        fk, Fk = freq_calc(keys, weights)
        risk = indiv_risk(fk, Fk)
        hid = households
    else:
        cls: dict[tuple, dict] = defaultdict(dict)  # class -> person -> weight
        for i, (key, p) in enumerate(zip(keys, persons)):
            cls[key][p] = None if weights is None else weights[i]
        ck = list(cls)
        fk = [len(cls[key]) for key in ck]
        Fk = None if weights is None else [sum(cls[key].values()) for key in ck]
        crisk = dict(zip(ck, indiv_risk(fk, Fk)))
        prisk: dict = {}
        phome: dict = {}
        for i, (key, p) in enumerate(zip(keys, persons)):
            prisk[p] = max(prisk.get(p, 0.0), crisk[key])
            if households is not None:
                phome[p] = households[i]
        order = list(prisk)
        risk = [prisk[p] for p in order]
        hid = None if households is None else [phome[p] for p in order]
    n = len(risk)
    er = math.fsum(risk)
    counts = [0] * len(BINS)
    for r in risk:
        counts[next(i for i, b in enumerate(BINS) if r >= b)] += 1
    out = {"n": n, "max": max(risk), "mean": er / n, "median": r_median(risk),
           "higher_than_main_part": higher_than_main_part(risk),
           "main_part_threshold": max(0.1, r_median(risk) + 2 * r_mad(risk)),
           "expected_reidentifications": er, "share": er / n, "distribution": counts, "household": None}
    if hid is not None:
        hr = hier_risk(risk, hid)
        her = math.fsum(hr)
        out["household"] = {"households": len(set(hid)), "expected_reidentifications": her, "share": her / n,
                            "max": max(hr)}
    return out
