"""sdcMicro's individual, global and household re-identification risk under sampling weights
[Benedetti & Franconi 1998, "Statistical and technological solutions for controlled data
dissemination"; Franconi & Polettini 2004, "Individual risk estimation in mu-Argus: a review";
sdcMicro's ``measure_risk`` / ``indivRisk`` / ``freqCalc`` (R/measure_risk.R, R/indivRisk.R,
R/freqCalc.r); Templ 2017, "Statistical Disclosure Control for Microdata"].

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
  about 1e-12 relative. ``distribution`` counts the units (records, or persons) per risk bin (risk >=
  the bin's bound and < the previous one's) and ``household.max`` is the largest household risk:
  neither is in sdcMicro.

Cost: one pass over the table, a GROUP BY by the keys (plus the household, or the person) into a
scratch table of at most as many rows; the key classes, their risks, the households (or persons) and
the checks of the input come from that table (read twice), the median and MAD from the distinct
risk values by a running sum: six statements (seven with persons) besides the scratch tables'
drops.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..engines.base import Engine
from ..errors import InputError
from ..schema import RESERVED_PREFIX, is_numeric_type
from ..sqlgen import ident
from .sample import RISK_BINS

#: the bins of ``distribution``: units with risk >= each bound (and < the previous bound), the
#: sample summary's
BINS = tuple(float(b) for b in RISK_BINS)
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
    over a relation that also has p = f/F (_adb_p) and p/(1 - p) (_adb_q). Weights the checks refuse
    (p <= 0, NULL) give NULL rather than a failing ln(), so that the checks can run afterwards."""
    if not weighted:
        return "1.0 / CAST(_adb_sf AS DOUBLE)"
    return ("CASE WHEN _adb_p IS NULL OR _adb_p <= 0 THEN NULL "
            "WHEN CAST(_adb_sf AS DOUBLE) = _adb_pf THEN 1.0 / CAST(_adb_sf AS DOUBLE) "
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
        f"(SELECT v, sum(c) AS c FROM (SELECT {value} AS v, _adb_c AS c FROM {hist}) AS x GROUP BY v) AS y) "
        f"AS z")[1][0]
    return float(a) if n % 2 else (float(a) + float(b)) / 2


def _households_sql(members: str) -> str:
    """Per household of ``members`` (a relation of _adb_hh, _adb_m units, _adb_r): its units, those
    with r >= 1, and sum m ln(1 - r) over the others."""
    return (f"SELECT _adb_hh, sum(_adb_m) AS m, sum(CASE WHEN _adb_r >= 1 THEN _adb_m ELSE 0 END) AS ones, "
            f"sum(_adb_m * ln(CASE WHEN _adb_r < 1 THEN 1.0 - _adb_r ELSE 1.0 END)) AS lg FROM {members} "
            f"GROUP BY _adb_hh")


def _figures_sql(hist: str, households: str | None) -> str:
    """One row: n (_adb_units), sum r, max r and the units per bin (_adb_b0..) from the histogram
    ``hist`` of the units' risks (_adb_r, _adb_c units with that risk); with ``households`` (a
    relation of :func:`_households_sql`), the households' count, sum over the units of
    1 - prod(1 - r) and its maximum (_adb_hk, _adb_her, _adb_hmax)."""
    bins = ", ".join(f"sum(CASE WHEN _adb_r >= {_d(b)}{f' AND _adb_r < {_d(BINS[i - 1])}' if i else ''} "
                     f"THEN _adb_c ELSE 0 END) AS _adb_b{i}" for i, b in enumerate(BINS))
    sql = (f"(SELECT sum(_adb_c) AS _adb_units, sum(CAST(_adb_c AS DOUBLE) * _adb_r) AS _adb_er, "
           f"max(_adb_r) AS _adb_max, {bins} FROM {hist}) AS a")
    if households is not None:
        sql += (f" CROSS JOIN (SELECT count(*) AS _adb_hk, sum(CAST(m AS DOUBLE) * hr) AS _adb_her, "
                f"max(hr) AS _adb_hmax FROM (SELECT m, CASE WHEN ones > 0 THEN 1.0 ELSE 1.0 - exp(lg) END AS hr "
                f"FROM {households} WHERE _adb_hh IS NOT NULL) AS t) AS b")
    return sql


def individual_risk(eng: Engine, table: str, keys: list[str], *, weights: str | None = None,
                    household: str | None = None, person: str | None = None,
                    class_sizes: bool = False) -> dict[str, Any]:
    """sdcMicro's individual risk (Benedetti-Franconi approximation, ``measure_risk``), global risk
    and, with ``household``, household risk of ``table`` over the key variables ``keys``, with the
    sampling weights ``weights`` (none: r = 1/f_k) and, with ``person``, persons as the units.
    Returns ``{"unit", "n", "weights", "individual": {max, mean, median, higher_than_main_part,
    main_part_threshold}, "global": {expected_reidentifications, share}, "household": None or
    {households, expected_reidentifications, share, max}, "distribution": [{risk_at_least,
    records}]}`` (see the module's docstring for the definitions). ``class_sizes``: also
    ``"class_sizes"``, class size f -> number of classes (the sample summary's histogram, so that a
    caller needs no GROUP BY of its own)."""
    keys = _check_columns(eng, table, keys, weights, household, person)
    k = ", ".join(ident(c) for c in keys)
    on = " AND ".join(f"u.{ident(c)} IS NOT DISTINCT FROM r.{ident(c)}" for c in keys)
    w = ident(weights) if weights else None
    wagg = (f", sum({w}) AS _adb_w, min({w}) AS _adb_wmin, max({w}) AS _adb_wmax, "
            f"count(*) - count({w}) AS _adb_wnull, sum(CASE WHEN {w} <= 0 THEN 1 ELSE 0 END) AS _adb_wbad"
            if w else "")
    h = ident(household) if household else None
    with eng.scratch("irisk") as s:
        if person is None:
            # the one GROUP BY of the table: its key classes, f and F (the weights' sum, as a double)
            cells = s.table(f"SELECT {k}, count(*) AS _adb_n, count(*) AS _adb_sf, "
                            f"{f'CAST(sum({w}) AS DOUBLE)' if w else 'NULL'} AS _adb_pf{wagg} "
                            f"FROM {ident(table)} GROUP BY {k}")
            classes = f"SELECT * FROM {ident(cells)}"
        else:
            # the one pass over the table: its rows grouped by the keys and the person
            hagg = (f", min({h}) AS _adb_hmin, max({h}) AS _adb_hmax, count(*) - count({h}) AS _adb_hnull"
                    if h else "")
            cells = s.table(f"SELECT {k}, {ident(person)} AS _adb_pid, count(*) AS _adb_n{hagg}{wagg} "
                            f"FROM {ident(table)} GROUP BY {k}, {ident(person)}")
            # the key classes: f (distinct persons), F (the persons' weights' sum, as a double)
            classes = (f"SELECT {k}, count(*) AS _adb_sf, {'CAST(sum(_adb_wmin) AS DOUBLE)' if w else 'NULL'} "
                       f"AS _adb_pf FROM {ident(cells)} GROUP BY {k}")
        if w:
            classes = (f"SELECT c.*, _adb_p / nullif(1.0 - _adb_p, 0) AS _adb_q FROM (SELECT c.*, "
                       f"CAST(_adb_sf AS DOUBLE) / nullif(_adb_pf, 0) AS _adb_p FROM ({classes}) AS c) AS c")
        risks = s.table(f"SELECT {k}, _adb_sf, _adb_pf, {_risk_expr(bool(w))} AS _adb_r FROM ({classes}) AS c")
        persons = households = None
        if person is None:
            hist = f"(SELECT _adb_r, sum(_adb_sf) AS _adb_c FROM {ident(risks)} GROUP BY _adb_r) AS h"
            if h:  # the second read of the table: each record's household beside its class's risk
                households = s.table(_households_sql(
                    f"(SELECT t.{h} AS _adb_hh, 1 AS _adb_m, r._adb_r FROM {ident(table)} AS t "
                    f"JOIN {ident(risks)} AS r ON {on.replace('u.', 't.')}) AS x"))
        else:
            hagg = (", min(u._adb_hmin) AS _adb_hmin, max(u._adb_hmax) AS _adb_hmax" if h else "")
            wp = ", min(u._adb_wmin) AS _adb_wmin, max(u._adb_wmax) AS _adb_wmax" if w else ""
            persons = s.table(f"SELECT u._adb_pid, max(r._adb_r) AS _adb_r{wp}{hagg} FROM {ident(cells)} AS u "
                              f"JOIN {ident(risks)} AS r ON {on} GROUP BY u._adb_pid")
            hist = f"(SELECT _adb_r, count(*) AS _adb_c FROM {ident(persons)} GROUP BY _adb_r) AS h"
            if h:
                households = f"({_households_sql(f'(SELECT _adb_hmin AS _adb_hh, 1 AS _adb_m, _adb_r FROM {ident(persons)}) AS x')}) AS g"
        # the checks of the input and every figure but the median's, in one statement
        checks = _checks(cells, risks, persons, households if person is None else None, weights, household, person)
        hh_rel = (ident(households) if person is None else households) if households else None
        got = eng.fetch(f"SELECT * FROM {' CROSS JOIN '.join(sql for sql, _ in checks)}"
                        f"{' CROSS JOIN ' if checks else ''}{_figures_sql(hist, hh_rel)}")[0]
        for _, refuse in checks:
            refuse(got)
        out = _summary(eng, hist, got)
        if class_sizes:
            out["class_sizes"] = {int(f): int(c) for f, c in eng.fetch_rows(
                f"SELECT _adb_sf, count(*) FROM {ident(risks)} GROUP BY _adb_sf ORDER BY 1")[1]}
        if h:
            n, er = out["n"], float(got["_adb_her"] or 0.0)
            out["household"] = {"households": int(got["_adb_hk"]), "expected_reidentifications": er,
                                "share": er / n if n else 0.0, "max": float(got["_adb_hmax"] or 0.0)}
    return {"unit": "persons" if person else "records", "n": out["n"], "weights": weights,
            "individual": out["individual"], "global": out["global"], "household": out.get("household"),
            "distribution": out["distribution"], **({"class_sizes": out["class_sizes"]} if class_sizes else {})}


def _summary(eng: Engine, hist: str, got: dict[str, Any]) -> dict[str, Any]:
    """Individual and global figures and the distribution from :func:`_figures_sql`'s row ``got``;
    the median and MAD from the histogram ``hist`` (two statements), and the units above the line."""
    n = int(got["_adb_units"] or 0)
    dist = [{"risk_at_least": b, "records": int(got[f"_adb_b{i}"] or 0)} for i, b in enumerate(BINS)]
    if not n:
        return {"n": 0, "individual": {"max": 0.0, "mean": 0.0, "median": 0.0, "higher_than_main_part": 0,
                                       "main_part_threshold": FLOOR},
                "global": {"expected_reidentifications": 0.0, "share": 0.0}, "distribution": dist}
    er = float(got["_adb_er"])
    med = _kth(eng, hist, "_adb_r", n)
    mad = MAD_CONSTANT * _kth(eng, hist, f"abs(_adb_r - {_d(med)})", n)
    line = med + MAD_FACTOR * mad
    higher = eng.scalar(f"SELECT coalesce(sum(_adb_c), 0) FROM {hist} WHERE _adb_r > {_d(line)} "
                        f"AND _adb_r > {_d(FLOOR)}")
    return {"n": n,
            "individual": {"max": float(got["_adb_max"]), "mean": er / n, "median": med,
                           "higher_than_main_part": int(higher), "main_part_threshold": max(FLOOR, line)},
            "global": {"expected_reidentifications": er, "share": er / n}, "distribution": dist}


Check = tuple[str, Callable[[dict[str, Any]], None]]


def _checks(cells: str, risks: str, persons: str | None, households: str | None, weights: str | None,
            household: str | None, person: str | None) -> list[Check]:
    """One-row relations that count what the input must not hold, each with the function that
    raises InputError (one line, naming the column) on its counts: weights numeric, non-NULL, > 0,
    finite, summing to at least each class's size; households and persons non-NULL; a person's
    weight and household the same on all its records."""
    out: list[Check] = []
    if weights:
        def refuse_weights(g: dict[str, Any]) -> None:
            if g["_adb_cwn"]:
                raise InputError(f"weight column {weights!r} is NULL on {int(g['_adb_cwn'])} rows: every record "
                                 f"needs its sampling weight")
            if g["_adb_cwb"]:
                raise InputError(f"weight column {weights!r} is <= 0 on {int(g['_adb_cwb'])} rows: a sampling "
                                 f"weight is the number of population units a record stands for (> 0)")
        out.append((f"(SELECT sum(_adb_wnull) AS _adb_cwn, sum(_adb_wbad) AS _adb_cwb FROM {ident(cells)}) AS cw",
                    refuse_weights))
    if household or person:
        hnull = ("sum(_adb_hnull)" if person is not None else
                 f"(SELECT coalesce(sum(m), 0) FROM {ident(households)} WHERE _adb_hh IS NULL)" if households else "0")
        pnull = "sum(CASE WHEN _adb_pid IS NULL THEN _adb_n ELSE 0 END)"
        cols = ", ".join(x for x in (f"{hnull} AS _adb_chn" if household else "",
                                     f"{pnull} AS _adb_cpn" if person else "") if x)

        def refuse_nulls(g: dict[str, Any]) -> None:
            if household and g["_adb_chn"]:
                raise InputError(f"household column {household!r} is NULL on {int(g['_adb_chn'])} rows: give every "
                                 f"record its household or drop those rows")
            if person and g["_adb_cpn"]:
                raise InputError(f"person column {person!r} is NULL on {int(g['_adb_cpn'])} rows: a NULL is not a "
                                 f"person; give every record its owner or drop those rows")
        out.append((f"(SELECT {cols}{f' FROM {ident(cells)}' if person else ''}) AS cn", refuse_nulls))
    if weights:
        def refuse_sums(g: dict[str, Any]) -> None:
            if g["_adb_cft"] is not None and not math.isfinite(float(g["_adb_cft"])):
                raise InputError(f"weight column {weights!r} holds NaN or infinite values")
            if g["_adb_cfs"]:
                raise InputError(f"the weights ({weights!r}) of {int(g['_adb_cfs'])} key classes sum to less than "
                                 f"the class's size: F_k >= f_k is needed (a weight counts the population units a "
                                 f"record stands for, >= 1)")
        out.append((f"(SELECT sum(_adb_pf) AS _adb_cft, sum(CASE WHEN _adb_pf < _adb_sf THEN 1 ELSE 0 END) "
                    f"AS _adb_cfs FROM {ident(risks)}) AS cf", refuse_sums))
    if persons is not None and (weights or household):
        cols = ", ".join(x for x in ("min(CASE WHEN _adb_wmin <> _adb_wmax THEN _adb_pid END) AS _adb_cpw"
                                     if weights else "",
                                     "min(CASE WHEN _adb_hmin <> _adb_hmax THEN _adb_pid END) AS _adb_cph"
                                     if household else "") if x)

        def refuse_varying(g: dict[str, Any]) -> None:
            if weights and g["_adb_cpw"] is not None:
                raise InputError(f"weight column {weights!r} varies over the records of person {g['_adb_cpw']!r} "
                                 f"({person!r}): a person's weight must be the same on all its records")
            if household and g["_adb_cph"] is not None:
                raise InputError(f"household column {household!r} varies over the records of person "
                                 f"{g['_adb_cph']!r} ({person!r}): a person belongs to one household")
        out.append((f"(SELECT {cols} FROM {ident(persons)}) AS cp", refuse_varying))
    return out


__all__ = ["BINS", "MAD_CONSTANT", "individual_risk"]
