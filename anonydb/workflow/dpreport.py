"""The report of a differentially private release (:mod:`anonydb.methods.dp`): what it promises,
what it spent against its budget, each aggregate's sensitivity, noise scale and 95% interval, and
the released groups with the largest noisy counts. Everything on the page is the released table
or the parameters: post-processing, it spends nothing more."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..noise import GAUSS_95, INTERVAL_95
from ..sqlgen import ident
from .reporting import CSS, _check_report_target, _e, _fmt, _now, _write_atomic, bar_chart

#: what the noise is, by mechanism (False: the Laplace, True: the Gaussian)
NOISE = {False: "OpenDP's Laplace (discrete for counts and integer sums): scale b = L1 sensitivity / epsilon; a "
                "value's 95% interval is +- b ln 20.",
         True: "OpenDP's Gaussian (discrete for counts and integer sums), composed in zCDP: scale sigma = L2 "
               "sensitivity / sqrt(2 rho); the release's rho is what OpenDP converts into its (epsilon, delta); a "
               "value's 95% interval is +- 1.96 sigma."}
#: the released groups the page lists (largest noisy counts first)
TOP = 20


def dp_report(r: Any) -> dict[str, Any]:
    """The report of :class:`anonydb.methods.dp.DPResult` ``r`` as a JSON-able dict."""
    aggs = [{"aggregate": k, "sensitivity": r.sensitivities.get(k), "epsilon": r.spent.get(k), "scale": v,
             "interval_95": v * (GAUSS_95 if r.mechanism == "gaussian" else INTERVAL_95)} for k, v in r.scales.items()]
    top: list[dict[str, Any]] = []
    if "count" in r.columns and r.engine is not None:
        keys = ", ".join(ident(c) for c in r.by)
        _, rows = r.engine.fetch_rows(f"SELECT {keys}, count, count_lo95, count_hi95 FROM {ident(r.table)} "
                                      f"ORDER BY count DESC, {keys} LIMIT {TOP}")
        nk = len(r.by)
        top = [{"group": " / ".join("NULL" if x is None else str(x) for x in row[:nk]), "count": row[nk],
                "lo95": row[nk + 1], "hi95": row[nk + 2]} for row in rows]
    return {"title": f"anonydb DP release {r.table}", "generated": _now(), "table": r.table, "promise": r.promise(),
            "epsilon": r.epsilon, "delta": r.delta, "series": r.series, "budget": r.budget, "left": r.left,
            "person": r.person, "by": r.by, "max_groups": r.max_groups, "max_rows": r.max_rows,
            "threshold": r.threshold, "groups": r.groups, "columns": r.columns, "aggregates": aggs, "top": top,
            "seconds": r.seconds, "mechanism": r.mechanism}


def dp_section(d: dict[str, Any]) -> str:
    """The DP section: the promise, the budget, the mechanisms, the largest released groups."""
    sel = (f"group keys not public: a group is released where its noisy count reaches {d['threshold']} "
           f"(a group only one person holds appears with probability at most delta)"
           if d["threshold"] is not None else "public group keys: every key released, no threshold")
    budget = ("no budget set" if d["budget"] is None else
              f"epsilon {_fmt(float(d['budget']))}, {_fmt(float(d['left']))} left after this release")
    facts = [("promises", d["promise"]), ("spent", f"epsilon {_fmt(d['epsilon'])}, delta {_fmt(d['delta'])}"),
             ("budget of series " + repr(d["series"]), budget), ("privacy unit", f"the person ({d['person']})"),
             ("contribution bounds", f"at most {d['max_groups']} groups per person, {d['max_rows']} rows per group"),
             ("group keys", sel), ("groups released", d["groups"]), ("grouped by", ", ".join(d["by"]))]
    gauss = d.get("mechanism") == "gaussian"
    out = ["<h2>Differential privacy</h2><table id=\"dp-facts\">" + "".join(
        f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in facts) + "</table>",
        f"<h3>Noise by aggregate</h3><p class=\"muted\">{_e(NOISE[gauss])} A mean is a noisy sum over the noisy "
        f"count, clamped into its bounds.</p><table id=\"dp-noise\"><tr><th>aggregate</th><th>{'L2' if gauss else 'L1'}"
        f" sensitivity</th><th>{'rho (zCDP)' if gauss else 'epsilon'}</th><th>scale</th><th>95% half-width</th>"
        "</tr>" + "".join(
            f"<tr><td>{_e(a['aggregate'])}</td><td class=\"num\">{_fmt(a['sensitivity'])}</td>"
            f"<td class=\"num\">{_fmt(a['epsilon'])}</td><td class=\"num\">{_fmt(a['scale'])}</td>"
            f"<td class=\"num\">{_fmt(a['interval_95'])}</td></tr>" for a in d["aggregates"]) + "</table>"]
    if d["top"]:
        out.append("<h3>Largest released groups</h3><figure id=\"dp-counts\">" + bar_chart(
            [t["group"] for t in d["top"]], [max(float(t["count"]), 0.0) for t in d["top"]],
            title="noisy count") + "</figure><table id=\"dp-top\"><tr><th>group</th><th>noisy count</th>"
            "<th>95% interval</th></tr>" + "".join(
                f"<tr><td>{_e(t['group'])}</td><td class=\"num\">{_fmt(t['count'])}</td>"
                f"<td class=\"num\">{_fmt(t['lo95'])} .. {_fmt(t['hi95'])}</td></tr>" for t in d["top"]) + "</table>")
    out.append("<p class=\"muted\">What this does not promise: that a released value is near its true value "
               "(the noise is the price), nor anything about records that are not their person's.</p>")
    return "\n".join(out)


def write_dp_report(d: dict[str, Any], *, html: str | None = None, json_path: str | None = None,
                    html_option: str = "--html", json_option: str = "--json-report") -> list[str]:
    """The report as one HTML page and/or JSON, each written atomically after every target is
    checked (as :func:`anonydb.workflow.reporting.write_report`)."""
    targets = [(Path(p), opt, kind) for p, opt, kind in ((html, html_option, "html"), (json_path, json_option, "json"))
               if p is not None]
    for p, opt, kind in targets:
        _check_report_target(p, opt, kind)
    for p, opt, kind in targets:
        text = (json.dumps(d, indent=2, default=str) if kind == "json" else
                f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(d['title'])}</title>"
                f"<style>{CSS}</style></head><body><h1>{_e(d['title'])}</h1>\n<p id=\"verdict\" class=\"ok\">"
                f"{_e(d['promise'])}</p>\n{dp_section(d)}\n<p class=\"muted\">generated {_e(d['generated'])}</p>"
                f"</body></html>\n")
        _write_atomic(p, text, opt)
    return [str(p) for p, _, _ in targets]


__all__ = ["dp_report", "dp_section", "write_dp_report"]
