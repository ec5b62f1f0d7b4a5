"""Release reports: verdicts, class sizes, re-identification risk, information loss; JSON and a
self-contained HTML page (inline CSS and SVG, no scripts, no network).

Prosecutor re-identification risk [El Emam & Dankar 2008; as in ARX]: an adversary who knows a
person is in the release and knows their QIs picks one record of the person's equivalence class,
so a record's risk is 1/|class|. Reported: the highest risk (1/smallest class), the average risk
(classes/records) and the share of records whose risk exceeds a threshold (default 0.2, i.e.
classes below 5 records). The class is what the release shows: records sharing the released QI
values (mondrian, fulldomain: ``eq_class``; anatomy: the QIT's exact QI tuple, so identity is as
exposed as in the source while the sensitive link stays within 1/l; slicing: the bucket).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

from ..engines.base import Engine
from ..errors import InputError
from ..htmlparts import CSS, bar_chart, esc as _e, fmt as _fmt, risk_section, verdicts_table
from ..schema import split_list
from ..sqlgen import ident

THRESHOLD = 0.2


def _jsonable(v: Any) -> Any:
    from fractions import Fraction

    if isinstance(v, Fraction):
        return float(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def class_sizes(eng: Engine, table: str, keys: list[str], k: int | None = None) -> dict[str, Any]:
    """Class-size distribution of ``table`` grouped by ``keys``: count, min, max, mean, median and a
    histogram: exact sizes when at most 30 distinct, else doubling bins [s, 2s - 1], [2s, 4s - 1], ...
    that start at ``s`` = ``k`` (the k of k-anonymity, when given) or else at the smallest class size;
    with ``k``, classes below it fall in bins [1, 1], [2, 3], [4, 7], ... cut off at k - 1, so no bin
    holds sizes on both sides of k. One row per distinct size is read (at most sqrt(2 * rows) of them)."""
    cols = ", ".join(ident(c) for c in keys)
    sizes = f"SELECT count(*) AS n FROM {ident(table)} GROUP BY {cols}"
    by_size = [(int(n), int(c)) for n, c in
               eng.fetch_rows(f"SELECT n, count(*) FROM ({sizes}) AS s GROUP BY n ORDER BY n")[1]]
    if not by_size:
        return {"classes": 0, "rows": 0, "min": 0, "max": 0, "mean": 0.0, "median": 0.0, "histogram": []}
    classes = sum(c for _, c in by_size)
    rows = sum(n * c for n, c in by_size)

    def nth(i: int) -> int:  # the i-th smallest class size, from 0
        for n, c in by_size:
            if i < c:
                return n
            i -= c
        raise AssertionError(i)

    median = (nth((classes - 1) // 2) + nth(classes // 2)) / 2
    bins: dict[tuple[int, int], list[int]] = {}
    start = int(k) if k is not None and int(k) >= 1 else by_size[0][0]
    for n, c in by_size:
        if len(by_size) <= 30:
            edge = (n, n)
        elif n >= start:
            b = (n // start).bit_length() - 1  # start * 2^b <= n < start * 2^(b + 1)
            edge = (start << b, (start << (b + 1)) - 1)
        else:  # below k
            b = n.bit_length() - 1
            edge = (1 << b, min((1 << (b + 1)) - 1, start - 1))
        acc = bins.setdefault(edge, [0, 0])
        acc[0] += c
        acc[1] += n * c
    return {"classes": classes, "rows": rows, "min": by_size[0][0], "max": by_size[-1][0], "mean": rows / classes,
            "median": float(median),
            "histogram": [{"size_from": a, "size_to": b, "classes": c, "records": d}
                          for (a, b), (c, d) in sorted(bins.items())]}


def prosecutor_risk(eng: Engine, table: str, keys: list[str], threshold: float = THRESHOLD) -> dict[str, Any]:
    """Prosecutor risk: record risk 1/|class|; highest, average, records above ``threshold``
    (:mod:`anonydb.risk.sample`, the one definition)."""
    from ..risk.sample import histograms, summary

    return prosecutor_of(summary(histograms(eng, table, keys), threshold), threshold)


def prosecutor_of(s: dict[str, Any], threshold: float) -> dict[str, Any]:
    """The report's prosecutor figures from a sample summary (:func:`anonydb.risk.sample.summary`)."""
    n, p = int(s["n"]), s["prosecutor"]
    if not n:
        return {"threshold": threshold, "highest": 0.0, "average": 0.0, "records_at_risk": 0, "share_at_risk": 0.0}
    return {"threshold": threshold, "highest": float(p["highest"]), "average": float(p["average"]),
            "records_at_risk": int(p["records_at_risk"] * n), "share_at_risk": float(p["records_at_risk"])}


def _risk_models(eng: Engine, table: str, keys: list[str], threshold: float, person: str | None = None,
                 suda: bool = False) -> Any:
    """The attacker models (:func:`anonydb.risk.assess.assess`) over ``keys``, with SUDA2's special
    uniques when ``suda``: a :class:`anonydb.risk.assess.RiskReport`."""
    from ..risk.assess import assess

    return assess(table, keys, engine=eng, threshold=threshold, person=person, suda=suda)


def user_columns(cols: Iterable[str], qi: Iterable[str]) -> tuple[list[str], list[str]]:
    """(the columns the user named, the helper columns a release adds beside them): a release's
    class number ``eq_class`` and the ``<qi>_lo``/``<qi>_hi`` bounds of a range (both repeat what the
    QI's released value says: the published tuple and eq_class are one-to-one), the group numbers of a
    QIT or sliced table (:data:`anonydb.risk.assess.GROUP_COLUMNS`, never a key of their own, and a
    sliced table's ``row_in_bucket``), and ``_adb_*`` names."""
    from ..risk.assess import GROUP_COLUMNS

    cols, qi = list(cols), set(qi)
    have = set(cols)
    helpers = {"eq_class", "row_in_bucket", *GROUP_COLUMNS} - qi
    helpers |= {f"{q}{e}" for q in qi if q in have and f"{q}_lo" in have and f"{q}_hi" in have for e in ("_lo", "_hi")}
    keep = [c for c in cols if c not in helpers and not c.startswith("_adb_")]
    return keep, [c for c in cols if c not in keep]


def _risk_text(risk: dict[str, Any], who: str, keys: list[str], left_out: list[str]) -> dict[str, Any]:
    """``risk`` with its unit and formula in the user's column names (a sliced table's: its buckets)."""
    risk["keys"] = list(keys)
    if list(keys) == ["bucket_id"]:  # a sliced table: a record links within its bucket
        risk.update(unit=f"{who} of its bucket", formula=f"a record's risk = 1 / the number of {who} in its bucket")
        return risk
    risk["unit"] = f"{who} sharing the released values of {', '.join(keys)}"
    risk["formula"] = f"a record's risk = 1 / the number of {who} sharing its released values of {', '.join(keys)}"
    if left_out:
        risk["note"] = ("the release's class or group numbers and range bounds are left out: they repeat these values "
                        "or are nothing an attacker can match")
    return risk


def verdict_line(rep: dict[str, Any]) -> str:
    """The report's verdict in one line, as the page and the console give it: whether every model
    holds, then each model with its parameters, holds/FAILS, what was achieved and, when it fails,
    how many groups violate."""
    parts = []
    for v in rep.get("verdicts") or []:
        params = ", ".join(f"{k} = {_fmt(x)}" for k, x in (v.get("params") or {}).items()
                           if isinstance(x, (int, float)) and not isinstance(x, bool))  # the model's name has the rest
        ach = ", ".join(f"{k} = {_fmt(x)}" for k, x in (v.get("achieved") or {}).items())
        how = [f"achieved {ach}"] if ach else []
        if not v["holds"] and v.get("violating_groups"):
            how.append(f"{v['violating_groups']} of {v['groups']} groups violate" if v.get("groups") else
                       f"{v['violating_groups']} groups violate")
        parts.append(f"{v['model']}{f' with {params}' if params else ''} {'holds' if v['holds'] else 'FAILS'}"
                     + (f" ({'; '.join(how)})" if how else ""))
    if not parts:
        return "no privacy model was checked (give one, e.g. --k 5)"
    return f"{'every model holds' if rep['holds'] else 'VIOLATED'}: {'; '.join(parts)}"


def release_verdicts(rel: Any) -> list[dict[str, Any]]:
    """The verdicts of a :class:`anonydb.workflow.jobs.Release`'s verification, as the report has them."""
    if hasattr(rel.report, "verdicts"):
        return [v.to_dict() for v in rel.report.verdicts]
    return [{"model": rel.report.model, "holds": rel.report.holds, "achieved": {"max p(t,s)": rel.report.worst},
             "violating_groups": rel.report.violators, "note": ""}]


def _k_of(verdicts: list[dict[str, Any]]) -> int | None:
    """The k of a k-anonymity verdict, if any."""
    for v in verdicts:
        k = (v.get("params") or {}).get("k")
        if v.get("model", "").startswith("k-anonymity") and isinstance(k, int) and not isinstance(k, bool):
            return k
    return None


def generalized_share(eng: Engine, table: str, original: str, qi: list[str]) -> dict[str, float]:
    """Per QI, the share of released records whose value is not a value of the original column
    (generalized or suppressed): a measure that needs no link between release and source rows."""
    out = {}
    for q in qi:
        c = ident(q)
        out[q] = float(eng.scalar(
            f"SELECT coalesce(avg(CASE WHEN CAST(r.{c} AS VARCHAR) IN (SELECT DISTINCT CAST({c} AS VARCHAR) FROM "
            f"{ident(original)} WHERE {c} IS NOT NULL) THEN 0.0 ELSE 1.0 END), 0) FROM {ident(table)} AS r "
            f"WHERE r.{c} IS NOT NULL") or 0.0)
    return out


#: how the per-QI figures of each kind of report relate to NCP (one sentence each)
NCP_MONDRIAN = ("A record's NCP on a QI is (max - min) / (the QI's max - min in the source) for a range, and c / |A| "
                "for a categorical value standing for c of the QI's |A| values (a set, or a hierarchy node's leaves; "
                "0 when c = 1); each QI's figure is its average over the records, and the overall NCP (the NCP the "
                "release prints) is the mean of the per-QI figures.")
NCP_TABLE = ("The share counts every released value that is not a value of the original column as 1, while NCP "
             "weighs it by how much it widens: a range [lo, hi] of a numeric or date QI costs (hi - lo) / (the "
             "original's max - min), a value set {a, b}, a hierarchy node or '*' standing for c of the column's |A| "
             "distinct values costs c / |A| (0 when c = 1), each at most 1 and an original value 0, so per QI NCP "
             "is at most the share; both average over the non-NULL released values, and the overall NCP is the mean "
             "of the per-QI NCPs.")
NCP_NO_ORIGINAL = ("Neither NCP nor the share of changed values can be computed from the released table alone: both "
                   "compare its values with the original column's (give the original table with --original).")


def table_ncp(eng: Engine, table: str, original: str, qi: list[str],
              hierarchies: dict[str, Any] | None = None) -> tuple[dict[str, float | None], dict[str, str]]:
    """Per QI, the NCP of ``table``'s released values against the ``original`` column (:data:`NCP_TABLE`),
    over the non-NULL released values: a numeric or date QI with ``<qi>_lo``/``<qi>_hi`` columns by its
    range, any other value by the original values it stands for (itself, the members of a value set
    ``{a, b}``, every value for ``*``, a node's leaves under ``hierarchies[qi]``). Returns (NCP per
    QI, None where a released value stands for no original value this can read; the reason per such QI)."""
    from ..schema import kind_of_type

    rcols = {c for c, _ in eng.columns(table)}
    otypes = dict(eng.columns(original))
    out: dict[str, float | None] = {}
    why: dict[str, str] = {}
    with eng.scratch("report_ncp") as s:
        for q in qi:
            c, lo, hi = ident(q), ident(f"{q}_lo"), ident(f"{q}_hi")
            dom = f"(SELECT DISTINCT CAST({c} AS VARCHAR) AS v FROM {ident(original)} WHERE {c} IS NOT NULL)"
            kind = kind_of_type(otypes.get(q, "VARCHAR"))
            if f"{q}_lo" in rcols and f"{q}_hi" in rcols and kind in ("numeric", "date"):
                def num(x: str) -> str:  # a date as seconds, as Mondrian codes it
                    return f"CAST(epoch({x}) AS DOUBLE)" if kind == "date" else f"CAST({x} AS DOUBLE)"

                span = eng.scalar(f"SELECT max({num(c)}) - min({num(c)}) FROM {ident(original)}") or 0.0
                cost = ("0.0" if not span else f"least(1.0, ({num('r.' + hi)} - {num('r.' + lo)}) / {float(span)!r})")
                out[q] = float(eng.scalar(
                    f"SELECT coalesce(avg(CASE WHEN CAST(r.{c} AS VARCHAR) IN (SELECT v FROM {dom} AS d) THEN 0.0 "
                    f"WHEN r.{lo} IS NULL OR r.{hi} IS NULL THEN 1.0 ELSE {cost} END), 0) FROM {ident(table)} AS r "
                    f"WHERE r.{c} IS NOT NULL") or 0.0)
                continue
            labels = s.table(f"SELECT CAST({c} AS VARCHAR) AS lab, count(*) AS n FROM {ident(table)} "
                             f"WHERE {c} IS NOT NULL GROUP BY 1")
            cover = [f"SELECT l.lab, d.v FROM {ident(labels)} AS l CROSS JOIN {dom} AS d WHERE l.lab = '*'",
                     f"SELECT x.lab, d.v FROM (SELECT lab, unnest(string_split(trim(lab, '{{}}'), ', ')) AS v FROM "
                     f"{ident(labels)} WHERE left(lab, 1) = '{{' AND right(lab, 1) = '}}') AS x JOIN {dom} AS d "
                     f"ON d.v = x.v"]
            h = (hierarchies or {}).get(q)
            if h is not None:
                tree = h.materialize(eng, s.name(), relation=original, column=q, temp=True)
                cover.append(f"SELECT t.node AS lab, d.v FROM {ident(tree)} AS t JOIN {dom} AS d ON d.v = t.leaf "
                             f"WHERE t.node IN (SELECT lab FROM {ident(labels)})")
            size = eng.scalar(f"SELECT count(*) FROM {dom} AS d") or 0
            r = eng.fetch(
                f"WITH c AS (SELECT lab, count(DISTINCT v) AS c FROM ({' UNION ALL '.join(cover)}) AS u GROUP BY lab), "
                f"x AS (SELECT l.lab, l.n, l.lab IN (SELECT v FROM {dom} AS d) AS orig, c.c FROM {ident(labels)} AS l "
                f"LEFT JOIN c ON c.lab = l.lab) "
                f"SELECT sum(CASE WHEN orig OR c <= 1 THEN 0.0 ELSE CAST(n * c AS DOUBLE) / {max(size, 1)} END) "
                f"/ sum(n) AS ncp, "
                f"count(*) FILTER (WHERE NOT orig AND c IS NULL) AS unknown, "
                f"min(lab) FILTER (WHERE NOT orig AND c IS NULL) AS example FROM x")[0]
            if r["unknown"]:
                out[q] = None
                why[q] = (f"released values of {q} such as {r['example']!r} are neither original values, ranges "
                          f"with their bounds, value sets {{a, b}}, '*' nor nodes of a hierarchy of {q} given with "
                          f"--hierarchy")
            else:
                out[q] = float(r["ncp"] or 0.0)
    return out, why


def _ncp_loss(by_qi: dict[str, float | None], why: dict[str, str]) -> dict[str, Any]:
    """The NCP part of a report's loss section from its per-QI values."""
    known = [x for x in by_qi.values() if x is not None]
    ncp = sum(known) / len(known) if by_qi and len(known) == len(by_qi) else None
    out: dict[str, Any] = {"ncp": ncp, "ncp_by_qi": dict(by_qi)}
    if why:
        out["ncp_note"] = "overall NCP not computed: " + "; ".join(why.values())
    return out


def release_report(rel: Any, *, threshold: float = THRESHOLD) -> dict[str, Any]:
    """The report of a :class:`anonydb.workflow.jobs.Release`."""
    from ..methods import CLASS_COLUMN

    eng = rel.engine
    method = rel.method
    r = rel.result
    verdicts = release_verdicts(rel)
    k = _k_of(verdicts)
    if method in ("anatomy", "injector"):
        classes = class_sizes(eng, rel.tables["qit"], ["group_id"], k)
        classes["unit"] = "QIT group"
    elif method == "slicing":
        classes = class_sizes(eng, rel.tables["c1"], ["bucket_id"], k)
        classes["unit"] = "bucket"
    else:
        classes = class_sizes(eng, rel.table, [CLASS_COLUMN[method]], k)
        classes["unit"] = f"equivalence class (records sharing the released values of {', '.join(rel.qi)})"
    risk_table = rel.tables["qit"] if method in ("anatomy", "injector") else (rel.tables["c1"] if method == "slicing" else rel.table)
    if method != "slicing":  # over every published column but the sensitive one (and the QIT's group id)
        keys, left_out = user_columns((c for c, _ in eng.columns(risk_table) if c not in (rel.sensitive, "group_id")),
                                      rel.qi)
    else:
        keys, left_out = ["bucket_id"], []
    models = _risk_models(eng, risk_table, keys, threshold)
    risk = prosecutor_of(models.sample, threshold)
    _risk_text(risk, "records", keys, left_out)
    if hasattr(r, "public_rows"):  # against a public table (k-map: anonydb.methods.presence.PresenceResult)
        loss = {"measure": "classes of the public table generalized the same way (k-map)",
                "by_qi": {}, **({"levels": dict(r.levels)} if r.levels else {}), "ncp": None,
                "relation": "NCP is not computed for a release judged against a public table (k-map): its loss is "
                            "read from the generalization levels and the utility figures."}
        utility = {"public_rows": r.public_rows, "classes": r.classes, "k_map": r.k_map}
    elif method == "mondrian":
        by = dict(r.utility.get("ncp_by_qi", {}))
        ncp = r.utility.get("ncp", sum(by.values()) / len(by) if by else None)
        loss = {"measure": "NCP (normalized certainty penalty) per QI, averaged over the records [Xu et al. 2006]",
                "by_qi": by, "ncp": ncp, "ncp_by_qi": by, "relation": NCP_MONDRIAN}
        utility = {k: v for k, v in r.utility.items() if k != "ncp_by_qi"}
    elif method == "fulldomain":
        hs = {q: rel.hierarchies[q].height if q in rel.hierarchies else 0 for q in rel.qi}
        loss = {"measure": "generalization height: level / hierarchy height (Sweeney's precision loss per QI)",
                "by_qi": {q: (r.levels[q] / hs[q] if hs[q] else 0.0) for q in rel.qi},
                "levels": dict(r.levels), "ncp": None,
                "relation": "Precision (in the utility figures) is 1 - the mean of these per-QI figures; full-domain "
                            "computes no NCP, its closest figure is loss (Iyengar's LM): a released value standing "
                            "for c of a QI's |A| leaves costs (c - 1) / (|A| - 1), a suppressed record's values 1, "
                            "averaged over the records and QIs."}
        utility = {"metric": r.metric_name, "value": r.metric, **r.metrics, "suppressed": r.suppressed}
    elif method in ("anatomy", "injector"):
        loss = {"measure": f"none: {method.capitalize()} releases the QIs unchanged (the QI-sensitive link is broken "
                           f"instead)", "by_qi": {q: 0.0 for q in rel.qi}, "ncp": 0.0,
                "relation": "NCP is 0 on every QI, as the per-QI loss: no QI value is generalized."}
        utility = {"groups": r.groups}
        if method == "injector":
            # the adversary the release was made against, named so that an audit can use the same rules
            utility.update({"rules": r.rules, "rules_total": r.rules_total, "rules_mined_at": r.knowledge_text,
                            "knowledge": r.knowledge, "leftovers": r.leftovers, "merges": r.merges,
                            "min_valid": r.min_valid})
    else:
        gen = set()
        for i in r.generalized:
            gen.update(r.columns[i])
        loss = {"measure": "none for values (slicing breaks associations across columns); 1 marks QIs of "
                           "columns generalized to column k-anonymity",
                "by_qi": {q: (1.0 if q in gen else 0.0) for q in rel.qi}, "columns": r.columns,
                "ncp": 0.0 if not gen else None,
                "relation": "Slicing publishes every value as it is (NCP 0) except in the columns generalized to "
                            "column k-anonymity, whose QIs are marked 1 here and whose NCP is not computed."}
        utility = {"buckets": r.buckets, **{f"bucket_{k}": v for k, v in r.sizes.items()}}
    return _jsonable({
        "title": f"anonydb release {rel.table}", "generated": _now(), "method": method, "tables": rel.tables,
        "files": rel.files, "rows": rel.rows, "seconds": rel.seconds, "qi": rel.qi, "sensitive": rel.sensitive,
        "holds": rel.holds, "verdicts": verdicts, "classes": classes, "risk": risk,
        "risk_models": models.to_dict(), "loss": loss,
        "utility": utility, "statements": len(rel.sql), "spec": rel.spec.raw if rel.spec else None,
        "spec_path": rel.spec.path if rel.spec else None,
        "publication": {"dropped": list(rel.dropped), "kept": list(rel.kept), "order": rel.order},
    })


def table_report(eng: Engine, table: str, qi: str | Iterable[str], sensitive: str | None = None, *,
                 original: str | None = None, class_column: str | None = None, threshold: float = THRESHOLD,
                 hierarchies: dict[str, Any] | None = None, person: str | None = None, suda: bool = False,
                 ncp_hierarchies: dict[str, Any] | None = None, **models: Any) -> dict[str, Any]:
    """The report of any table: the models' verdicts (``models`` as in :func:`anonydb.check`),
    class sizes and prosecutor risk over the QI columns (or ``class_column``), and, with
    ``original`` (the source), the per-QI share of generalized values. ``person``: the column naming
    each record's owner: the verdicts, class sizes and risk count persons (a person's records are
    one candidate), and the report gives the records and the persons. ``suda``: the risk section adds
    SUDA2's special uniques and each variable's contribution. The class sizes' histogram starts at
    the k of k-anonymity when it is checked; the loss section, with ``original``, gives NCP beside
    the share (:func:`table_ncp`; ``ncp_hierarchies``, default the QIs' ones among ``hierarchies``:
    the hierarchies that read generalized labels; with ``original`` the QIs' hierarchies serve only
    this, as the released values are their nodes). Risk keys and formulas name the user's columns only
    (:func:`user_columns`)."""
    from ..checker import check

    qi_cols = split_list(qi, "quasi-identifiers")
    verdicts: list[dict[str, Any]] = []
    holds = True
    qi_h = {a: h for a, h in (hierarchies or {}).items() if a in qi_cols}
    if original and qi_h:  # the released QIs are the hierarchies' nodes: they read the labels for NCP, not the check
        hierarchies = {a: h for a, h in (hierarchies or {}).items() if a not in qi_h} or None
    if models:
        rep = check(table, qi_cols, sensitive, engine=eng, hierarchies=hierarchies, max_groups=5,
                    distribution_of=original, person=person, **models)
        verdicts, holds = [v.to_dict() for v in rep.verdicts], rep.holds
    keys = [class_column] if class_column else qi_cols
    k = _k_of(verdicts)
    records = eng.scalar(f"SELECT count(*) FROM {ident(table)}")
    persons = None
    # risk over every column of the table but the sensitive one (and the person): what an adversary can link on;
    # a release's class number and range bounds repeat the QIs' values and are left out
    published, left_out = user_columns((c for c, _ in eng.columns(table) if c not in (sensitive, person)), qi_cols)
    group = {"eq_class": f"equivalence class (records sharing the released values of {', '.join(qi_cols)})",
             "bucket_id": "bucket", "group_id": "group"}
    if class_column == "bucket_id" and person is None:  # a sliced table: a record links within its bucket
        published, left_out = ["bucket_id"], []
    if person is None:
        classes = class_sizes(eng, table, keys, k)
        classes["unit"] = ((group.get(class_column) or f"records sharing the value of {class_column}") if class_column
                           else f"records sharing the values of {', '.join(qi_cols)}")
        models = _risk_models(eng, table, published, threshold, suda=suda)
        risk = _risk_text(prosecutor_of(models.sample, threshold), "records", published, left_out)
    else:  # one candidate per person: the distinct (values, person) pairs
        persons = eng.scalar(f"SELECT count(DISTINCT {ident(person)}) FROM {ident(table)}")
        with eng.scratch("report") as s:
            by_class = s.table(f"SELECT DISTINCT {', '.join(ident(c) for c in keys)}, {ident(person)} FROM {ident(table)}")
            classes = class_sizes(eng, by_class, keys, k)
            classes["unit"] = f"persons sharing the {'class' if class_column else 'QI values'}"
            by_values = s.table(f"SELECT DISTINCT {', '.join(ident(c) for c in published)}, {ident(person)} "
                                f"FROM {ident(table)}")
            risk = prosecutor_risk(eng, by_values, published, threshold)
        _risk_text(risk, "persons", published, left_out)
        models = _risk_models(eng, table, published, threshold, person=person, suda=suda)
    risk_models = models.to_dict()
    if original:
        loss = {"measure": "share of released values that are not original values (generalized or suppressed)",
                "by_qi": generalized_share(eng, table, original, qi_cols),
                **_ncp_loss(*table_ncp(eng, table, original, qi_cols,
                                       qi_h if ncp_hierarchies is None else ncp_hierarchies)),
                "relation": NCP_TABLE}
    else:
        loss = {"measure": "needs the original table (--original)", "by_qi": {}, "ncp": None,
                "relation": NCP_NO_ORIGINAL}
    return _jsonable({"title": f"anonydb report {table}", "generated": _now(), "method": None,
                      "tables": {"release": table}, "files": [], "rows": records, "seconds": None,
                      **({"person": person, "persons": persons} if person is not None else {}),
                      "qi": qi_cols, "sensitive": sensitive, "holds": holds, "verdicts": verdicts,
                      "classes": classes, "risk": risk, "risk_models": risk_models, "loss": loss, "utility": {},
                      "statements": None,
                      "spec": None, "spec_path": None})


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


# --- output ------------------------------------------------------------------------------------

def write_report(report: dict[str, Any], *, html: str | None = None, json_path: str | None = None,
                 html_option: str = "--html", json_option: str = "json_path") -> list[str]:
    """Write the report as HTML and/or JSON, each atomically: to a temporary file beside the target,
    then renamed over it (an existing report is replaced; a failure leaves it as it was). Every
    target is checked before anything is written: InputError naming the path and the option it came
    from (``html_option`` / ``json_option``, e.g. ``--html`` or a spec's ``report.html``) when it is a
    directory, its folder does not exist, or it cannot be written."""
    targets = [(Path(path), opt, kind) for path, opt, kind in ((html, html_option, "html"),
                                                                (json_path, json_option, "json"))
               if path is not None]
    for p, opt, kind in targets:
        _check_report_target(p, opt, kind)
    written = []
    for p, opt, kind in targets:
        text = render_html(report) if kind == "html" else json.dumps(report, indent=2)
        _write_atomic(p, text, opt)
        written.append(str(p))
    return written


def _check_report_target(p: Path, option: str, kind: str) -> None:
    """InputError, naming ``option`` and the path, unless ``p`` can be a report file."""
    if p.name in ("", ".", ".."):
        raise InputError(f"{option} {str(p)!r}: give a file name for the report")
    if p.is_dir():
        raise InputError(f"{option} {str(p)!r} is a directory: give the report's file name "
                         f"(e.g. {str(p / f'report.{kind}')!r})")
    parent = p.parent
    if not parent.exists():
        raise InputError(f"{option} {str(p)!r}: the folder {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise InputError(f"{option} {str(p)!r}: {str(parent)!r} is not a folder")
    if p.exists() and not p.is_file():
        raise InputError(f"{option} {str(p)!r} exists and is not a regular file")


def _write_atomic(p: Path, text: str, option: str) -> None:
    """Write ``text`` to a new temporary file in ``p``'s folder, then rename it over ``p``: readers see
    the old report or the new one, never a part; on failure the old one stays and the temporary file
    goes. The file keeps an existing report's permissions (a new one gets the umask's)."""
    import uuid

    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise InputError(f"{option} {str(p)!r}: cannot write in {str(p.parent)!r}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if p.exists():
            os.chmod(tmp, p.stat().st_mode & 0o7777)
        os.replace(tmp, p)
    except OSError as e:
        raise InputError(f"{option} {str(p)!r}: cannot write the report: {e.strerror or e}") from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def method_text(rep: dict[str, Any]) -> str:
    """The method that made the release, or, for a report of a table or file the user gave (no method
    known), that it was checked as given."""
    return rep.get("method") or "a table checked as given (no method known)"


def render_html(rep: dict[str, Any], fragment: bool = False) -> str:
    """The report as one self-contained HTML page; ``fragment``: its body alone in a ``<div>``, with
    no page style (a notebook's view of a release)."""
    out = ([f"<div class=\"anonydb-report\"><h3>{_e(rep['title'])}</h3>"] if fragment else
           [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(rep['title'])}</title>"
            f"<style>{CSS}</style></head><body>", f"<h1>{_e(rep['title'])}</h1>"])
    status = f"<span class=\"{'ok' if rep['holds'] else 'bad'}\" id=\"verdict\">{_e(verdict_line(rep))}</span>"
    facts = [("verdict", status), ("method", _e(method_text(rep))), ("records", _e(rep["rows"])),
             *([("persons", _e(f"{rep['persons']} (by {rep['person']}: every model and size counts persons)"))]
               if rep.get("person") else []),
             ("quasi-identifiers", _e(", ".join(rep["qi"]))), ("sensitive", _e(rep.get("sensitive") or "-")),
             ("outputs", _e(", ".join(f"{k}: {v}" for k, v in rep["tables"].items()) +
                            ("; files: " + ", ".join(rep["files"]) if rep.get("files") else ""))),
             ("generated", _e(rep["generated"]))]
    if rep.get("seconds") is not None:
        facts.append(("run time", _e(f"{rep['seconds']:.3f} s, {rep['statements']} SQL statements")))
    pub = rep.get("publication")
    if pub:
        facts.append(("not published (no role)", _e(", ".join(pub["dropped"]) or "-")))
        facts.append(("kept unchanged", _e(", ".join(pub["kept"]) or "-")))
        facts.append(("row order", _e(pub["order"] or "-")))
    out.append("<table id=\"summary\">" + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts) + "</table>")

    out.append(verdicts_table(rep["verdicts"]))

    c = rep["classes"]
    out.append(f"<h2>Class sizes</h2><p class=\"muted\">unit: {_e(c.get('unit', ''))}</p>"
               f"<table id=\"classes\"><tr><th>classes</th><th>smallest</th><th>median</th><th>mean</th>"
               f"<th>largest</th></tr><tr><td class=\"num\">{c['classes']}</td><td class=\"num\">{c['min']}</td>"
               f"<td class=\"num\">{_fmt(c['median'])}</td><td class=\"num\">{_fmt(c['mean'])}</td>"
               f"<td class=\"num\">{c['max']}</td></tr></table>")
    hist = c["histogram"]
    labels = [str(b["size_from"]) if b["size_from"] == b["size_to"] else f"{b['size_from']}-{b['size_to']}"
              for b in hist]
    out.append(f"<figure id=\"class-histogram\">"
               f"{bar_chart(labels, [float(b['classes']) for b in hist], title='classes by size')}</figure>")
    out.append("<table id=\"histogram\"><tr><th>size</th><th>classes</th><th>records</th></tr>" + "".join(
        f"<tr><td>{_e(lab)}</td><td class=\"num\">{b['classes']}</td><td class=\"num\">{b['records']}</td></tr>"
        for lab, b in zip(labels, hist)) + "</table>")

    r = rep["risk"]
    formula = r.get("formula") or f"a record's risk = 1 / the number of {r.get('unit', 'records in its class')}"
    out.append(f"<h2>Re-identification risk (prosecutor)</h2><p class=\"muted\" id=\"risk-formula\">{_e(formula)}"
               f"{'; ' + _e(r['note']) if r.get('note') else ''}</p><table id=\"risk\">"
               f"<tr><th>highest risk</th><td class=\"num\">{_fmt(r['highest'])}</td></tr>"
               f"<tr><th>average risk</th><td class=\"num\">{_fmt(r['average'])}</td></tr>"
               f"<tr><th>records above {_fmt(r['threshold'])}</th><td class=\"num\">{r['records_at_risk']} "
               f"({100 * r['share_at_risk']:.2f}%)</td></tr></table>")

    if rep.get("risk_models"):
        out.append(risk_section(rep["risk_models"]))

    out.append(loss_section(rep["loss"]))
    if rep.get("utility"):
        out.append("<h2>Utility</h2><table id=\"utility\">" + "".join(
            f"<tr><th>{_e(k)}</th><td class=\"num\">{_e(_fmt(v))}</td></tr>" for k, v in rep["utility"].items())
            + "</table>")
    if rep.get("spec") is not None:
        out.append(f"<h2>Release spec</h2><p class=\"muted\">{_e(rep.get('spec_path') or '')}</p>"
                   f"<pre id=\"spec\">{_e(json.dumps(rep['spec'], indent=2, default=str))}</pre>")
    out.append("</div>" if fragment else "</body></html>\n")
    return "\n".join(out)


def loss_section(loss: dict[str, Any]) -> str:
    """The loss section: the overall NCP, the per-QI figures (and per-QI NCP where it is another
    figure) with a chart, and the sentence relating them."""
    by = loss.get("by_qi", {})
    nby = loss.get("ncp_by_qi")
    same = nby is not None and nby == by
    out = [f"<h2>Information loss by attribute</h2><p class=\"muted\">{_e(loss['measure'])}</p>"]
    if "ncp" in loss:
        ncp = loss["ncp"]
        shown = (f"{_fmt(ncp)} ({100 * ncp:.2f}%)" if isinstance(ncp, (int, float)) else
                 "not computed" + (f" ({loss['ncp_note']})" if loss.get("ncp_note") else ""))
        out.append(f"<table id=\"ncp\"><tr><th>NCP (overall)</th><td class=\"num\">{_e(shown)}</td></tr></table>")
    if by:
        head = "NCP" if same else "loss"
        extra = nby is not None and not same
        rows = []
        for q, x in by.items():
            n = (nby or {}).get(q)
            rows.append(f"<tr><td>{_e(q)}</td><td class=\"num\">{_fmt(x)}</td>"
                        + (f"<td class=\"num\">{'n/a' if n is None else _fmt(n)}</td>" if extra else "") + "</tr>")
        out.append(f"<figure id=\"loss-chart\">{bar_chart(list(by), [float(x) for x in by.values()], title=f'{head} by QI')}"
                   f"</figure><table id=\"loss\"><tr><th>attribute</th><th>{head}</th>"
                   f"{'<th>NCP</th>' if extra else ''}</tr>" + "".join(rows) + "</table>")
    if loss.get("relation"):
        out.append(f"<p id=\"loss-relation\">{_e(loss['relation'])}</p>")
    return "".join(out)


def write_risk_page(d: dict[str, Any], path: str, option: str = "--html") -> None:
    """The risk estimates alone as one HTML page, written atomically."""
    p = Path(path)
    _check_report_target(p, option, "html")
    page = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>anonydb risk {_e(d['table'])}"
            f"</title><style>{CSS}</style></head><body><h1>anonydb risk {_e(d['table'])}</h1>\n{risk_section(d)}"
            f"\n</body></html>\n")
    _write_atomic(p, page, option)


__all__ = ["class_sizes", "generalized_share", "loss_section", "method_text", "prosecutor_risk", "release_report",
           "release_verdicts", "render_html", "risk_section", "table_ncp", "table_report", "user_columns",
           "verdict_line", "write_report", "write_risk_page"]
