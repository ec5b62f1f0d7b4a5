"""The report page's HTML parts, one renderer for every surface: the report and risk pages
(:mod:`anonydb.workflow.reporting`), the DP page, and the notebook views of a check's
:class:`~anonydb.checker.Report`, a :class:`~anonydb.workflow.jobs.Release` and a risk summary
(``_repr_html_``). Plain strings in, escaped HTML out; inline SVG for the simplest bars."""

from __future__ import annotations

import html
from typing import Any

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:960px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f4f4f4}.ok{color:#0a6b2d;font-weight:600}.bad{color:#b00020;font-weight:600}
.num{text-align:right;font-variant-numeric:tabular-nums}pre{background:#f7f7f7;padding:.8em;overflow:auto}
.muted{color:#666}svg text{font:11px system-ui,sans-serif}
"""


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        return ", ".join(f"{k} = {fmt(x)}" for k, x in v.items())
    return str(v)


def bar_chart(labels: list[str], values: list[float], *, title: str, unit: str = "", width: int = 640) -> str:
    """A horizontal bar chart as inline SVG."""
    if not values:
        return ""
    row, left, right = 20, 150, 90
    h = row * len(values) + 30
    top = max(values) or 1.0
    bars = []
    for i, (lab, v) in enumerate(zip(labels, values)):
        y = 24 + i * row
        w = (width - left - right) * (v / top)
        bars.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{esc(lab)}</text>'
                    f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" fill="#4a7fb5"/>'
                    f'<text x="{left + w + 4:.1f}" y="{y + 12}">{esc(fmt(v))}{esc(unit)}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{h}" '
            f'viewBox="0 0 {width} {h}"><title>{esc(title)}</title>'
            f'<text x="0" y="14" font-weight="600">{esc(title)}</text>{"".join(bars)}</svg>')


def verdicts_table(verdicts: list[dict[str, Any]]) -> str:
    """Each model's verdict, achieved parameter and violating groups (the page's "Privacy models")."""
    out = ["<h2>Privacy models</h2><table id=\"verdicts\"><tr><th>model</th><th>holds</th><th>achieved</th>"
           "<th>violating groups</th><th>note</th></tr>"]
    for v in verdicts:
        ok = "<span class=\"ok\">yes</span>" if v["holds"] else "<span class=\"bad\">no</span>"
        out.append(f"<tr><td>{esc(v['model'])}</td><td>{ok}</td><td>{esc(fmt(v.get('achieved', {})))}</td>"
                   f"<td class=\"num\">{esc(v.get('violating_groups', 0))}</td><td>{esc(v.get('note') or '')}</td></tr>")
    out.append("</table>")
    return "".join(out)


def risk_section(d: dict[str, Any]) -> str:
    """The risk estimates of :meth:`anonydb.risk.assess.RiskReport.to_dict` as HTML: the three attacker
    models side by side with bars, the risk per record, population uniqueness, sdcMicro's individual
    and household risk, and SUDA2's contribution per variable."""
    s, unit = d["sample"], d["unit"]
    models = [("prosecutor", s["prosecutor"]), ("journalist", s["journalist"])]
    out = [f"<h2>Re-identification risk by attacker model</h2><p class=\"muted\">{esc(s['n'])} {esc(unit)} in "
           f"{esc(s['classes'])} classes over "
           f"{'their buckets' if d['keys'] == ['bucket_id'] else esc(', '.join(d['keys']))}; threshold {fmt(s['threshold'])}"
           f"{'; ' + esc(s['convention']) if s.get('convention') else ''}</p>",
           "<table id=\"risk-models\"><tr><th></th><th>prosecutor</th><th>journalist</th><th>marketer</th></tr>"]
    for key, label in (("records_at_risk", f"{unit} at risk"), ("highest", "highest risk"), ("lowest", "lowest risk"),
                       ("average", "average risk (success rate)")):
        m = fmt(s["marketer"]) if key == "average" else "-"
        out.append(f"<tr><th>{esc(label)}</th>" + "".join(f"<td class=\"num\">{fmt(r[key])}</td>" for _, r in models)
                   + f"<td class=\"num\">{m}</td></tr>")
    out.append(f"<tr><th>sample uniqueness</th><td class=\"num\" colspan=\"3\">{fmt(s['sample_uniqueness'])}</td></tr>"
               "</table>")
    names = ["prosecutor", "journalist", "marketer"]
    out.append("<figure id=\"risk-attackers\">" + bar_chart(
        names, [float(s["prosecutor"]["average"]), float(s["journalist"]["average"]), float(s["marketer"])],
        title="average risk by attacker model") + bar_chart(
        names[:2], [float(s["prosecutor"]["records_at_risk"]), float(s["journalist"]["records_at_risk"])],
        title=f"share of {unit} at risk above {fmt(s['threshold'])}") + "</figure>")
    dist = d["distribution"]
    labels = [f">= {b['risk_at_least']:g}" for b in dist]
    out.append("<figure id=\"risk-distribution\">" + bar_chart(
        labels, [float(b["records"]) for b in dist], title=f"{unit} by prosecutor risk") + "</figure>")
    p = d.get("population_uniqueness")
    if p:
        rows = [(m, p.get(m)) for m in ("zayatz", "pitman", "snb")] + [(f"Dankar's rule ({p['dankar_model']})", p["dankar"])]
        out.append(f"<h3>Population uniqueness</h3><p class=\"muted\">share of the population's records that are "
                   f"unique; N = {esc(p['population_size'])}, sampling fraction {fmt(p['sampling_fraction'])}, sample "
                   f"uniqueness {fmt(p['sample_uniqueness'])}</p><table id=\"population-uniqueness\">" + "".join(
                       f"<tr><th>{esc(m)}</th><td class=\"num\">{'n/a' if v is None else fmt(v)}</td></tr>"
                       for m, v in rows) + "</table>")
    i = d.get("individual")
    if i:
        ind, g = i["individual"], i["global"]
        rows = [("individual risk: highest", ind["max"]), ("individual risk: mean", ind["mean"]),
                ("expected re-identifications", g["expected_reidentifications"]), ("global risk (share)", g["share"]),
                (f"{unit} at higher risk than the main part", ind["higher_than_main_part"])]
        if i.get("household"):
            hh = i["household"]
            rows += [("household: expected re-identifications", hh["expected_reidentifications"]),
                     ("household: share", hh["share"]), ("household: highest", hh["max"])]
        out.append(f"<h3>Individual risk (sdcMicro{', weights ' + esc(i['weights']) if i.get('weights') else ''})</h3>"
                   f"<table id=\"individual-risk\">" + "".join(
                       f"<tr><th>{esc(k)}</th><td class=\"num\">{fmt(v)}</td></tr>" for k, v in rows) + "</table>")
    su = d.get("suda")
    if su:
        c = su.get("contribution", {})
        out.append(f"<h3>SUDA2 special uniques</h3><p class=\"muted\">subsets of at most {esc(su['max_size'])} key "
                   f"variables; {esc(su['records_with_msu'])} {esc(unit)} with a minimal sample unique</p>"
                   f"<figure id=\"suda-contribution\">" + bar_chart(list(c), [float(v) for v in c.values()],
                                                                    title="contribution to the SUDA scores", unit="%")
                   + "</figure>")
    return "\n".join(out)



__all__ = ["CSS", "bar_chart", "esc", "fmt", "risk_section", "verdicts_table"]
