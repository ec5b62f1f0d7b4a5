"""A release spec's ``dp:`` block: a differentially private release of a table's groups
(:func:`anonydb.methods.dp.dp`), run by ``anonydb release SPEC`` like any other spec::

    source: visits                      # a table in the database, or a .csv/.parquet file
    database: w.duckdb
    dp:
      person: person_id                 # the privacy unit
      by: [diagnosis, month]
      count: true
      mean: ["cost:0:5000"]             # or {column: cost, lo: 0, hi: 5000}
      epsilon: 0.5
      delta: 1.0e-6                     # or keys: a table of the public group keys
      max_groups: 4
      max_rows: 2
      budget: 2                         # the series' epsilon in all (basic composition)
      mechanism: laplace                # or gaussian (zCDP within the release; needs delta)
    series: monthly                     # the releases that share the budget (default: the output)
    output: visit_stats
    report: visit_stats.html

``query:`` (an aggregate SELECT, :func:`anonydb.methods.dp.from_query`) takes the place of
``source``, ``by``, ``count`` and ``mean``; ``sum`` then only bounds its sums and means."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InputError

TOP = ("version", "source", "database", "dp", "output", "report", "series")
KEYS = ("person", "by", "count", "sum", "mean", "epsilon", "delta", "keys", "max_groups", "max_rows", "budget",
        "query", "mechanism")
NUMBER = (int, float)


def dp_block(ck: Any, raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``dp:`` block checked (each problem named with its place and line on ``ck``): the
    arguments of :func:`anonydb.methods.dp.dp` it gives, and the spec with the query's table as
    its source. :func:`anonydb.workflow.spec.load_spec` checks the rest of the spec."""
    from ..methods.dp import Bound, from_query

    d, at = raw.get("dp"), ("dp",)
    out: dict[str, Any] = {}
    if ck.keys(d, at, KEYS):
        for key in ("person", "epsilon"):
            if key not in d:
                ck.bad(at, f"dp.{key} is missing")
        if "person" in d and ck.typed(d["person"], at + ("person",), (str,), "the person column"):
            out["person"] = d["person"]
        for key, low, what in (("epsilon", 0, "a positive number"), ("budget", 0, "a positive number"),
                               ("delta", None, "a number in [0, 1)")):
            if key in d and ck.typed(d[key], at + (key,), NUMBER, what):
                if (low is not None and d[key] <= low) or (low is None and not 0 <= d[key] < 1):
                    ck.bad(at + (key,), f"expected {what}, got {d[key]!r}")
                else:
                    out[key] = float(d[key])
        for key in ("max_groups", "max_rows"):
            if key in d and ck.typed(d[key], at + (key,), (int,), "a positive integer"):
                if d[key] < 1:
                    ck.bad(at + (key,), f"expected a positive integer, got {d[key]!r}")
                out[key] = d[key]
        if "mechanism" in d and d["mechanism"] not in ("laplace", "gaussian"):
            ck.bad(at + ("mechanism",), f"expected laplace or gaussian, got {d['mechanism']!r}")
        elif "mechanism" in d:
            out["mechanism"] = d["mechanism"]
        for key in ("keys", "query"):
            if key in d and ck.typed(d[key], at + (key,), (str,), "a table name" if key == "keys" else "a SELECT"):
                out[key] = d[key]
        if "count" in d and ck.typed(d["count"], at + ("count",), (bool,), "a boolean"):
            out["count"] = d["count"]
        if "by" in d:
            by = [d["by"]] if isinstance(d["by"], str) else d["by"]
            if not isinstance(by, list) or not by or not all(isinstance(x, str) for x in by):
                ck.bad(at + ("by",), "expected a column or a list of columns")
            else:
                out["by"] = by
        for key in ("sum", "mean"):
            items = d.get(key, [])
            for i, item in enumerate(items if isinstance(items, list) else [items]):
                if isinstance(item, dict):
                    if not ck.keys(item, at + (key, i), ("column", "lo", "hi")):
                        continue
                    item = (item.get("column"), item.get("lo"), item.get("hi"))
                try:
                    out.setdefault(key, []).append(Bound.parse(item, key))
                except (InputError, TypeError) as e:
                    ck.bad(at + (key, i), str(e) if isinstance(e, InputError) else "expected COLUMN:LO:HI")
        if "query" in out:
            for key in ("by", "count", "mean"):
                if key in d:
                    ck.bad(at + (key,), "dp.query names the keys and aggregates: drop this key")
            if "source" in raw:
                ck.bad(("source",), "dp.query names its table: drop source")
            try:
                q = from_query(out["query"], out.get("sum", []), out.get("person"))
                raw = {**raw, "source": q["source"]}
            except InputError as e:
                ck.bad(at + ("query",), str(e).replace("--query", "the query").replace("--sum", "dp.sum"))
        else:
            for key in ("by",):
                if key not in d:
                    ck.bad(at, f"dp.{key} is missing (or give dp.query)")
            if "source" not in raw:
                ck.bad((), "source is missing (or give dp.query)")
        if "keys" not in out and not out.get("delta"):
            ck.bad(at, "group keys that are not public need dp.delta > 0 (or dp.keys, a table of the public keys)")
    return out, raw


def run_dp_spec(sp: Any, eng: Any) -> Any:
    """Release the spec's DP aggregates (nothing is written when a report target is bad, the budget
    would be passed, or anything fails); its report as the spec says. Returns the DPResult."""
    from ..methods.dp import dp, from_query
    from .dpreport import dp_report, write_dp_report
    from .reporting import _check_report_target

    d = dict(sp.dp)
    for path, option, kind in ((sp.report_html, "report.html", "html"), (sp.report_json, "report.json", "json")):
        if path:
            _check_report_target(Path(path), option, kind)
    if "query" in d:
        what = from_query(d.pop("query"), d.pop("sum", []), d["person"])
    else:
        what = dict(source=sp.source, by=d.pop("by"), count=d.pop("count", not (d.get("sum") or d.get("mean"))),
                    sums=d.pop("sum", []), means=d.pop("mean", []))
    r = dp(what.pop("source"), out=sp.table, engine=eng, replace=sp.replace, series=(sp.series or {}).get("name"),
           **d, **what)
    r.spec = sp
    if sp.report_html or sp.report_json:
        write_dp_report(dp_report(r), html=sp.report_html, json_path=sp.report_json, html_option="report.html",
                        json_option="report.json")
    return r


__all__ = ["TOP", "dp_block", "run_dp_spec"]
