"""sdcMicro's individual, global and household re-identification risk under sampling weights
[Benedetti & Franconi 1998, "Statistical and technological solutions for controlled data
dissemination"; Franconi & Polettini 2004, "Individual risk estimation in mu-Argus: a review";
sdcMicro's ``measure_risk`` / ``indivRisk`` / ``freqCalc`` (R/measure_risk.R, R/indivRisk.R,
R/freqCalc.r); Templ 2017, "Statistical Disclosure Control for Microdata", ch. 3].

A record's key class k is the set of records sharing its values on the keys; f_k is the number of
records in it, F_k the sum of their sampling weights (the estimated population frequency), and
p_k = f_k / F_k. A record's risk r is its class's, as ``indivRisk(method = "approx")``, which
``measure_risk`` reports:

* f_k = 1: r = p/(1 - p) * ln(1/p)
* f_k = 2: r = p/(1 - p) - (p/(1 - p))^2 * ln(1/p)
* f_k >= 3: r = p / (f_k - (1 - p))   (the approximation; sdcMicro has no closed form for f_k = 3)
* F_k = f_k (p = 1, where the forms above divide by zero): r = 1/f_k
* without weights: r = 1/f_k.

Global risk: the expected number of re-identifications sum_i r_i (``global_risk_ER``) and its share
sum_i r_i / n (``global_risk``). Household risk (``hid``, sdcMicro's default ``fast_hier``): each
member of household h gets 1 - prod_{i in h} (1 - r_i); ``hier_risk_ER`` is their sum over all
records, ``hier_risk`` that over n. Here the product is exp(sum ln(1 - r_i)) over the members with
r_i < 1, and the household's risk is exactly 1 when a member has r_i = 1 (f_k = F_k = 1).

"Records at higher risk than the main part" (sdcMicro's print of an sdcMicroObj's risk,
R/printFunctions.R, and its vignette): r > median(r) + 2 * mad(r) and r > 0.1, with R's median (the
mean of the two middle values for even n) and mad (1.4826 * median |r - median(r)|);
``main_part_threshold`` is max(0.1, median + 2 * mad). ``print.measure_risk`` and
``print.indivRisk`` use 3 * mad instead.

With ``person`` (record owners) a unit is a person: f_k counts the distinct persons with a record in
class k, F_k sums their weights (a person's weight is its records' weight, which must not vary), a
person's risk is that of its riskiest class, n is the number of persons, and a household groups
persons (a person belongs to one household).

Where anonydb differs from sdcMicro:

* NULL is a key value of its own (classes match NULL-safely, as everywhere in anonydb); sdcMicro's
  ``freqCalc`` counts an NA as matching every value of its variable (``alpha = 1``), so a record with
  an NA joins every class it could belong to.
* Weights must be numeric, non-NULL and > 0, and F_k >= f_k in every class (a weight is the number
  of population units a record stands for); sdcMicro computes whatever the formulas give (p_k > 1
  gives meaningless risks). A NULL household is refused; sdcMicro leaves those records' household
  risk NA and drops them from ``hier_risk_ER`` but not from n.
* sdcMicro's C++ ``compute_risk`` (src/Measure_Risk.h) subtracts 0.0001 from p_k; it serves only
  ``ldiversity``, and ``measure_risk`` reports ``indivRisk``'s values, reproduced here.
* Sums run in double precision in the database's order (R adds in long double): figures agree to
  about 1e-12 relative. ``distribution`` counts the units per risk bin (risk >= the bin's bound and
  < the previous one's), ``household.max`` the largest household risk: not in sdcMicro.

Cost: one GROUP BY over the table (by the keys, plus the household or the person); everything
else runs on that grouped table and the key classes: at most ~2 scans of a table no larger than the
input, and a few statements over the distinct risk values (median and MAD by a running sum).
"""

from __future__ import annotations

import math
from typing import Any

from ..engines.base import Engine
from ..errors import InputError
from ..schema import RESERVED_PREFIX, is_numeric_type
from ..sqlgen import ident

#: the bins of ``distribution``: units with risk >= each bound (and < the previous bound)
BINS = (1.0, 0.5, 0.2, 0.1, 0.05, 0.01, 0.0)
#: R's ``mad()`` constant, 1/qnorm(3/4) rounded as R writes it
MAD_CONSTANT = 1.4826
#: sdcMicro's "higher risk than the main part": r > median + MAD_FACTOR * mad and r > FLOOR
MAD_FACTOR = 2
FLOOR = 0.1


def _d(x: float) -> str:
    """A double literal every engine reads as the same double (DuckDB would read 0.1 as DECIMAL)."""
    return f"CAST({float(x)!r} AS DOUBLE)"


def _check_columns(eng: Engine, table: str, keys: list[str], weights: str | None, household: str | None,
                   person: str | None) -> list[str]:
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
        raise InputError(f"keys must be a list of column names, got {keys!r}")
    keys = list(keys)
    if not keys:
        raise InputError("individual risk needs at least one key variable")
    if len(set(keys)) < len(keys):
        raise InputError(f"a key variable is given twice: {', '.join(keys)}")
    cols = dict(eng.columns(table))
    roles = [("key variable", c) for c in keys] + [(what, c) for what, c in
                                                   (("weight column", weights), ("household column", household),
                                                    ("person column", person)) if c is not None]
    seen: dict[str, str] = {}
    for what, c in roles:
        if not isinstance(c, str) or not c:
            raise InputError(f"{what} must be a column name, got {c!r}")
        if c not in cols:
            raise InputError(f"{what} {c!r} not found in {table}; its columns are: {', '.join(cols)}")
        if c.startswith(RESERVED_PREFIX):
            raise InputError(f"column {c!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")
        if c in seen:
            raise InputError(f"{c!r} is given both as the {seen[c]} and as the {what}")
        seen[c] = what
    if weights is not None and not is_numeric_type(cols[weights]):
        raise InputError(f"weight column {weights!r} must be numeric, it is {cols[weights]}")
    return keys


def _risk_expr(weighted: bool) -> str:
    """sdcMicro's indivRisk(method = "approx") of a class with _adb_sf records and weight sum _adb_pf,
    over a relation that also has p = f/F (_adb_p) and p/(1 - p) (_adb_q)."""
    if not weighted:
        return "1.0 / CAST(_adb_sf AS DOUBLE)"
    return ("CASE WHEN CAST(_adb_sf AS DOUBLE) = _adb_pf THEN 1.0 / CAST(_adb_sf AS DOUBLE) "
            "WHEN _adb_sf = 1 THEN _adb_q * ln(1.0 / _adb_p) "
            "WHEN _adb_sf = 2 THEN _adb_q - (_adb_q * _adb_q) * ln(1.0 / _adb_p) "
            "ELSE _adb_p / (CAST(_adb_sf AS DOUBLE) - (1.0 - _adb_p)) END")


def _kth(eng: Engine, hist: str, value: str, n: int) -> float:
    """R's median of the values ``value`` (an expression over ``hist``'s _adb_r) of the units counted
    by ``hist`` (_adb_r, _adb_c): the middle value, or the mean of the two middle ones for even n,
    found by a running sum over the distinct values."""
    lo, hi = (n + 1) // 2, n // 2 + 1
    a, b = eng.fetch_rows(
        f"SELECT min(CASE WHEN cum >= {lo} THEN v END), min(CASE WHEN cum >= {hi} THEN v END) FROM "
        f"(SELECT v, sum(c) OVER (ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cum FROM "
        f"(SELECT v, sum(c) AS c FROM (SELECT {value} AS v, _adb_c AS c FROM {ident(hist)}) AS x GROUP BY v) AS y) "
        f"AS z")[1][0]
    return float(a) if n % 2 else (float(a) + float(b)) / 2


def _summary(eng: Engine, hist: str) -> dict[str, Any]:
    """Individual and global figures and the distribution, from the histogram ``hist`` of the units'
    risks (_adb_r, _adb_c: the number of units with that risk)."""
    bins = " ".join(f"WHEN _adb_r >= {_d(b)} THEN {i}" for i, b in enumerate(BINS[:-1]))
    n, er, mx = eng.fetch_rows(f"SELECT sum(_adb_c), sum(CAST(_adb_c AS DOUBLE) * _adb_r), max(_adb_r) "
                               f"FROM {ident(hist)}")[1][0]
    n = int(n or 0)
    counts = [0] * len(BINS)
    for i, c in eng.fetch_rows(f"SELECT b, sum(_adb_c) FROM (SELECT CASE {bins} ELSE {len(BINS) - 1} END AS b, "
                               f"_adb_c FROM {ident(hist)}) AS t GROUP BY b")[1]:
        counts[int(i)] = int(c)
    dist = [{"risk_at_least": b, "records": c} for b, c in zip(BINS, counts)]
    if not n:
        return {"n": 0, "individual": {"max": 0.0, "mean": 0.0, "median": 0.0, "higher_than_main_part": 0,
                                       "main_part_threshold": FLOOR},
                "global": {"expected_reidentifications": 0.0, "share": 0.0}, "distribution": dist}
    er = float(er)
    med = _kth(eng, hist, "_adb_r", n)
    mad = MAD_CONSTANT * _kth(eng, hist, f"abs(_adb_r - {_d(med)})", n)
    line = med + MAD_FACTOR * mad
    higher = eng.scalar(f"SELECT coalesce(sum(_adb_c), 0) FROM {ident(hist)} WHERE _adb_r > {_d(line)} "
                        f"AND _adb_r > {_d(FLOOR)}")
    return {"n": n,
            "individual": {"max": float(mx), "mean": er / n, "median": med, "higher_than_main_part": int(higher),
                           "main_part_threshold": max(FLOOR, line)},
            "global": {"expected_reidentifications": er, "share": er / n}, "distribution": dist}


def _household(eng: Engine, units: str, h: str, m: str, n: int) -> dict[str, Any]:
    """1 - prod(1 - r) per household over ``units`` (household column ``h``, risk _adb_r, ``m``
    units per row), given to each member: its sum over the units, share and maximum."""
    hh = (f"SELECT {h} AS h, sum({m}) AS m, sum(CASE WHEN _adb_r >= 1 THEN {m} ELSE 0 END) AS ones, "
          f"sum({m} * ln(CASE WHEN _adb_r < 1 THEN 1.0 - _adb_r ELSE 1.0 END)) AS lg FROM {units} GROUP BY {h}")
    k, er, mx = eng.fetch_rows(
        f"SELECT count(*), sum(CAST(m AS DOUBLE) * hr), max(hr) FROM (SELECT m, CASE WHEN ones > 0 THEN 1.0 "
        f"ELSE 1.0 - exp(lg) END AS hr FROM ({hh}) AS g) AS t")[1][0]
    er = float(er or 0.0)
    return {"households": int(k), "expected_reidentifications": er, "share": er / n if n else 0.0,
            "max": float(mx or 0.0)}


def individual_risk(eng: Engine, table: str, keys: list[str], *, weights: str | None = None,
                    household: str | None = None, person: str | None = None) -> dict[str, Any]:
    """sdcMicro's individual risk (Benedetti-Franconi approximation, ``measure_risk``), global risk
    and, with ``household``, household risk of ``table`` over the key variables ``keys``, with the
    sampling weights ``weights`` (none: r = 1/f_k) and, with ``person``, persons as the units.
    Returns ``{"unit", "n", "weights", "individual": {max, mean, median, higher_than_main_part,
    main_part_threshold}, "global": {expected_reidentifications, share}, "household": None or
    {households, expected_reidentifications, share, max}, "distribution": [{risk_at_least,
    records}]}`` (see the module's docstring for the definitions)."""
    keys = _check_columns(eng, table, keys, weights, household, person)
    k = ", ".join(ident(c) for c in keys)
    on = " AND ".join(f"u.{ident(c)} IS NOT DISTINCT FROM r.{ident(c)}" for c in keys)
    w = ident(weights) if weights else None
    wagg = (f", sum({w}) AS _adb_w, min({w}) AS _adb_wmin, max({w}) AS _adb_wmax, "
            f"count(*) - count({w}) AS _adb_wnull, sum(CASE WHEN {w} <= 0 THEN 1 ELSE 0 END) AS _adb_wbad"
            if w else "")
    with eng.scratch("irisk") as s:
        # the one pass over the table: its rows grouped by the keys (and the household, or the person)
        if person is None:
            hcol = f", {ident(household)} AS _adb_h" if household else ""
            cells = s.table(f"SELECT {k}{hcol}, count(*) AS _adb_n{wagg} FROM {ident(table)} "
                            f"GROUP BY {k}{', ' + ident(household) if household else ''}")
        else:
            hagg = (f", min({ident(household)}) AS _adb_hmin, max({ident(household)}) AS _adb_hmax, "
                    f"count(*) - count({ident(household)}) AS _adb_hnull" if household else "")
            cells = s.table(f"SELECT {k}, {ident(person)} AS _adb_pid, count(*) AS _adb_n{hagg}{wagg} "
                            f"FROM {ident(table)} GROUP BY {k}, {ident(person)}")
        _check_cells(eng, cells, weights, household, person)
        # the key classes: f (records, or distinct persons) and F (the weights' sum, as a double)
        if person is None:
            pf = "CAST(sum(_adb_w) AS DOUBLE)" if w else "NULL"
            classes = (f"SELECT {k}, sum(_adb_n) AS _adb_sf, {pf} AS _adb_pf FROM {ident(cells)} GROUP BY {k}")
        else:
            pf = "CAST(sum(_adb_wmin) AS DOUBLE)" if w else "NULL"
            classes = (f"SELECT {k}, count(*) AS _adb_sf, {pf} AS _adb_pf FROM {ident(cells)} GROUP BY {k}")
        if w:
            classes = (f"SELECT c.*, _adb_p / nullif(1.0 - _adb_p, 0) AS _adb_q FROM (SELECT c.*, "
                       f"CAST(_adb_sf AS DOUBLE) / _adb_pf AS _adb_p FROM ({classes}) AS c) AS c")
        risks = s.table(f"SELECT {k}, _adb_sf, _adb_pf, {_risk_expr(bool(w))} AS _adb_r FROM ({classes}) AS c")
        if w:
            _check_classes(eng, risks, weights)
        if person is None:
            hist = s.table(f"SELECT _adb_r, sum(_adb_sf) AS _adb_c FROM {ident(risks)} GROUP BY _adb_r")
        else:
            hagg = (", min(u._adb_hmin) AS _adb_hmin, max(u._adb_hmax) AS _adb_hmax, "
                    "sum(u._adb_hnull) AS _adb_hnull" if household else "")
            wp = ", min(u._adb_wmin) AS _adb_wmin, max(u._adb_wmax) AS _adb_wmax" if w else ""
            persons = s.table(f"SELECT u._adb_pid, max(r._adb_r) AS _adb_r{wp}{hagg} FROM {ident(cells)} AS u "
                              f"JOIN {ident(risks)} AS r ON {on} GROUP BY u._adb_pid")
            _check_persons(eng, persons, weights, household, person)
            hist = s.table(f"SELECT _adb_r, count(*) AS _adb_c FROM {ident(persons)} GROUP BY _adb_r")
        out = _summary(eng, hist)
        hh = None
        if household is not None:
            if person is None:
                units = (f"(SELECT u._adb_h, u._adb_n, r._adb_r FROM {ident(cells)} AS u JOIN {ident(risks)} AS r "
                         f"ON {on}) AS x")
                hh = _household(eng, units, "_adb_h", "_adb_n", out["n"])
            else:
                hh = _household(eng, ident(persons), "_adb_hmin", "1", out["n"])
    return {"unit": "persons" if person else "records", "n": out["n"], "weights": weights,
            "individual": out["individual"], "global": out["global"], "household": hh,
            "distribution": out["distribution"]}


def _check_cells(eng: Engine, cells: str, weights: str | None, household: str | None, person: str | None) -> None:
    """The rows' weights (numeric, non-NULL, > 0), households and persons (non-NULL), from the
    grouped table: one statement over it."""
    parts = []
    if weights:
        parts += ["sum(_adb_wnull)", "sum(_adb_wbad)"]
    if household and person is None:
        parts.append("sum(CASE WHEN _adb_h IS NULL THEN _adb_n ELSE 0 END)")
    if household and person is not None:
        parts.append("sum(_adb_hnull)")
    if person:
        parts.append("sum(CASE WHEN _adb_pid IS NULL THEN _adb_n ELSE 0 END)")
    if not parts:
        return
    got = [int(x or 0) for x in eng.fetch_rows(f"SELECT {', '.join(parts)} FROM {ident(cells)}")[1][0]]
    if weights:
        wnull, wbad = got[:2]
        got = got[2:]
        if wnull:
            raise InputError(f"weight column {weights!r} is NULL on {wnull} rows: every record needs its sampling "
                             f"weight")
        if wbad:
            raise InputError(f"weight column {weights!r} is <= 0 on {wbad} rows: a sampling weight is the number "
                             f"of population units a record stands for (> 0)")
    if household:
        hnull = got.pop(0)
        if hnull:
            raise InputError(f"household column {household!r} is NULL on {hnull} rows: give every record its "
                             f"household or drop those rows")
    if person:
        pnull = got.pop(0)
        if pnull:
            raise InputError(f"person column {person!r} is NULL on {pnull} rows: a NULL is not a person; give every "
                             f"record its owner or drop those rows")


def _check_classes(eng: Engine, risks: str, weights: str) -> None:
    """Every class's weight sum is finite and at least its size (F_k >= f_k)."""
    total, short = eng.fetch_rows(f"SELECT sum(_adb_pf), sum(CASE WHEN _adb_pf < _adb_sf THEN 1 ELSE 0 END) "
                                  f"FROM {ident(risks)}")[1][0]
    if total is not None and not math.isfinite(float(total)):
        raise InputError(f"weight column {weights!r} holds NaN or infinite values")
    if short:
        raise InputError(f"the weights ({weights!r}) of {int(short)} key classes sum to less than the class's size: "
                         f"F_k >= f_k is needed (a weight counts the population units a record stands for, >= 1)")


def _check_persons(eng: Engine, persons: str, weights: str | None, household: str | None, person: str) -> None:
    """A person's weight and household do not vary over its records."""
    parts = []
    if weights:
        parts.append("min(CASE WHEN _adb_wmin <> _adb_wmax THEN _adb_pid END)")
    if household:
        parts.append("min(CASE WHEN _adb_hmin <> _adb_hmax THEN _adb_pid END)")
    if not parts:
        return
    got = list(eng.fetch_rows(f"SELECT {', '.join(parts)} FROM {ident(persons)}")[1][0])
    if weights and got[0] is not None:
        raise InputError(f"weight column {weights!r} varies over the records of person {got[0]!r} ({person!r}): "
                         f"a person's weight must be the same on all its records")
    if household and got[-1] is not None:
        raise InputError(f"household column {household!r} varies over the records of person {got[-1]!r} "
                         f"({person!r}): a person belongs to one household")


__all__ = ["BINS", "MAD_CONSTANT", "individual_risk"]
