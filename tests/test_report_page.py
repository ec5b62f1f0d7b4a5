"""Reports that say their verdict (issue 53): what `anonydb report` / `anonydb release` print and what
the HTML page shows.

1. `anonydb report T --html` prints the verdict (the page's one-line verdict) and the page's path,
   exit 1 when a model fails; `anonydb release spec.yaml` prints the same verdict the spec's page
   shows.
2. The page names the method: "a table checked as given" for a table or file the user gave, the
   spec's method for a release.
3. The risk formula, keys and units name the user's columns only (never eq_class, the <qi>_lo/_hi
   bounds or _adb_ scratch names), and the risk figures are those over the user's columns.
4. The loss section shows the overall NCP beside the per-QI figures with one sentence relating
   them: Mondrian's per-QI NCP (whose mean is the NCP the release prints), a table's share of
   changed values and its NCP (--original), and why neither is computable without the original.
5. The class-size histogram's bins start at k when k is checked (no bin holds sizes on both sides
   of k) and at the smallest class otherwise; few distinct sizes stay exact.
6. The page as headless Chromium renders it shows the verdict and the method text (skipped without
   a chromium binary on PATH).

Every expected value is computed here, in plain Python, from the rows the test made.
"""

from __future__ import annotations

import csv
import html
import json
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import anonydb
from anonydb.workflow.cli import main
from anonydb.workflow.reporting import release_report, render_html, table_report

from conftest import make_table

FORBIDDEN = re.compile(r"eq_class|_lo\b|_hi\b|_adb_")


def _csv(path: Path, header: list[str], rows: list[tuple]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def _page_text(page: str, element_id: str) -> str:
    """The text of the element with ``element_id`` (its tags dropped, entities decoded)."""
    m = re.search(rf'id="{element_id}"[^>]*>(.*?)</(span|p|table|td)>', page, re.S)
    assert m, f"no element {element_id!r} on the page"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", m.group(1))).split())


def _summary(page: str, key: str) -> str:
    m = re.search(rf"<th>{re.escape(key)}</th><td>(.*?)</td>", page, re.S)
    assert m, key
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))


# a table with one violation of k = 2: the class (40, F) has one record
SMALL = [(30, "M", "flu"), (30, "M", "cold"), (30, "M", "flu"), (40, "F", "hiv"), (50, "M", "flu"), (50, "M", "cold")]


def _people_rows(n: int = 60, seed: int = 3) -> list[tuple]:
    rnd = random.Random(seed)
    return [(rnd.randint(20, 60), rnd.choice(["47601", "47602", "47605", "47611"]), rnd.choice("MF"),
             rnd.choice(["flu", "cold", "hiv", "cancer"])) for _ in range(n)]


SPEC = """\
source: people.csv
attributes:
  age: {role: qi, kind: numeric}
  zip: qi
  sex: qi
  disease: sensitive
method: mondrian
privacy: {k: 4}
output: {table: people_release, format: csv, path: out.csv, replace: true}
report: {html: page.html, json: page.json}
seed: 1
"""


def _spec(tmp_path: Path) -> Path:
    _csv(tmp_path / "people.csv", ["age", "zip", "sex", "disease"], _people_rows())
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return spec


# --- 1. the console says the verdict ----------------------------------------------------------------

def test_report_html_prints_the_verdict_and_the_path(tmp_path, capsys):
    src = _csv(tmp_path / "t.csv", ["age", "sex", "disease"], SMALL)
    sizes = Counter((a, s) for a, s, _ in SMALL)
    smallest, bad = min(sizes.values()), sum(1 for n in sizes.values() if n < 2)
    assert (smallest, bad, len(sizes)) == (1, 1, 3)  # the known violation
    page = tmp_path / "report.html"
    code = main(["report", str(src), "--qi", "age,sex", "--k", "2", "--html", str(page)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert len(lines) == 2 and lines[0].startswith("verdict: VIOLATED: ") and lines[1] == f"report: {page}"
    assert f"k-anonymity with k = 2 FAILS (achieved k = {smallest}; {bad} of {len(sizes)} groups violate)" in lines[0]
    # the page states the same verdict
    assert _page_text(page.read_text(), "verdict") == lines[0].removeprefix("verdict: ")

    code = main(["report", str(src), "--qi", "age,sex", "--k", str(smallest), "--html", str(page)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines == [f"verdict: every model holds: k-anonymity with k = {smallest} holds "
                                   f"(achieved k = {smallest})", f"report: {page}"]


def test_release_prints_the_verdict_its_page_shows(tmp_path, capsys):
    spec = _spec(tmp_path)
    code = main(["release", str(spec)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    verdict = [x for x in out if x.startswith("verdict: ")]
    assert len(verdict) == 1 and out[-2:] == ["report: " + str(tmp_path / "page.html"),
                                              "report: " + str(tmp_path / "page.json")]
    # the release's classes, counted here from its file: k = 4 holds with the smallest class
    with (tmp_path / "out.csv").open() as f:
        rows = list(csv.DictReader(f))
    smallest = min(Counter((r["age"], r["zip"], r["sex"]) for r in rows).values())
    assert smallest >= 4
    assert verdict[0] == f"verdict: every model holds: k-anonymity with k = 4 holds (achieved k = {smallest})"
    page = (tmp_path / "page.html").read_text()
    assert _page_text(page, "verdict") == verdict[0].removeprefix("verdict: ")
    assert json.loads((tmp_path / "page.json").read_text())["holds"] is True


# --- 2. the method ------------------------------------------------------------------------------------

def test_page_names_the_method_or_a_table_checked_as_given(tmp_path, capsys):
    src = _csv(tmp_path / "t.csv", ["age", "sex", "disease"], SMALL)
    main(["report", str(src), "--qi", "age,sex", "--k", "1", "--html", str(tmp_path / "t.html")])
    assert _summary((tmp_path / "t.html").read_text(), "method") == "a table checked as given (no method known)"
    spec = _spec(tmp_path)
    assert main(["release", str(spec)]) == 0
    assert _summary((tmp_path / "page.html").read_text(), "method") == "mondrian"
    # the report of the spec's existing release (re-checked, not re-run) names it too
    assert main(["report", str(spec), "--html", str(tmp_path / "again.html")]) == 0
    assert _summary((tmp_path / "again.html").read_text(), "method") == "mondrian"
    capsys.readouterr()


# --- 3. formulas in the user's columns ----------------------------------------------------------------

def test_risk_formula_names_the_users_columns_only(engine):
    make_table(engine, "people", ["age", "zip", "sex", "disease"], _people_rows(120))
    rel = anonydb.anonymize("people", ["age", "zip", "sex"], "disease", out="rel", engine=engine, k=4)
    have = [c for c, _ in engine.columns("rel")]
    assert {"eq_class", "age_lo", "age_hi"} <= set(have)  # the release does carry helper columns
    released = engine.con.execute("SELECT age, zip, sex FROM rel").fetchall()
    sizes = Counter(released)
    for rep in (release_report(rel), table_report(engine, "rel", ["age", "zip", "sex"], "disease", k=4)):
        texts = [rep["risk"]["formula"], rep["risk"]["unit"], rep["classes"]["unit"], *rep["risk"]["keys"],
                 *rep["risk_models"]["keys"]]
        assert not [t for t in texts if FORBIDDEN.search(t)], texts
        assert rep["risk"]["keys"] == rep["risk_models"]["keys"] == ["age", "zip", "sex"]
        assert rep["risk"]["formula"] == ("a record's risk = 1 / the number of records sharing its released values "
                                          "of age, zip, sex")
        # the figures are those over the user's columns
        assert rep["risk"]["highest"] == pytest.approx(1 / min(sizes.values()))
        assert rep["risk"]["average"] == pytest.approx(len(sizes) / len(released))
        page = render_html(rep)
        for element in ("risk-formula", "classes"):
            assert not FORBIDDEN.search(_page_text(page, element))
        assert "over age, zip, sex;" in page


# --- 4. NCP beside the per-QI loss ------------------------------------------------------------------

def _label_cost(label: str, lo, hi, span: float, domain: set[str]) -> float:
    """A released value's NCP as the sentence states it, read independently from the label."""
    if label in domain:
        return 0.0
    if lo is not None:
        return (hi - lo) / span
    c = len(domain) if label == "*" else len(set(label.strip("{}").split(", ")) & domain)
    return 0.0 if c <= 1 else c / len(domain)


def test_mondrian_page_shows_ncp_per_qi_and_overall_with_the_relating_sentence(engine):
    rows = _people_rows(120)
    make_table(engine, "people", ["age", "zip", "sex", "disease"], rows)
    rel = anonydb.anonymize("people", ["age", "zip", "sex"], "disease", out="rel", engine=engine, k=6)
    ages = [r[0] for r in rows]
    span = max(ages) - min(ages)
    domains = {"zip": {r[1] for r in rows}, "sex": {r[2] for r in rows}}
    out = engine.con.execute("SELECT CAST(age AS VARCHAR), age_lo, age_hi, zip, sex FROM rel").fetchall()
    want = {"age": sum((hi - lo) / span for _, lo, hi, _, _ in out) / len(out),
            "zip": sum(_label_cost(z, None, None, 1, domains["zip"]) for *_, z, _ in out) / len(out),
            "sex": sum(_label_cost(s, None, None, 1, domains["sex"]) for *_, s in out) / len(out)}
    rep = release_report(rel)
    loss = rep["loss"]
    assert loss["by_qi"] == pytest.approx(want) and loss["ncp_by_qi"] == pytest.approx(want)
    overall = sum(want.values()) / 3
    assert loss["ncp"] == pytest.approx(overall)
    printed = re.search(r"NCP (\d+\.\d\d)%", rel.format()).group(1)  # what the release prints
    assert printed == f"{100 * overall:.2f}"
    page = render_html(rep)
    assert _page_text(page, "ncp") == f"NCP (overall) {overall:.6g} ({printed}%)"
    sentence = _page_text(page, "loss-relation")
    assert sentence == loss["relation"] and "mean of the per-QI figures" in sentence and "c / |A|" in sentence
    assert page.index('id="ncp"') < page.index('id="loss"') < page.index('id="loss-relation"')


def test_table_report_gives_the_share_and_ncp_with_original(engine, tmp_path):
    src = [(20 + i, z, "flu") for i, z in enumerate(["47601", "47602", "47611", "47612"] * 2 + ["47601", "47602"])]
    make_table(engine, "src", ["age", "zip", "disease"], src)
    released = [("[20, 24]", 20, 24, "{47601, 47602}", "flu")] * 5 + [("25", 25, 25, "47611", "flu")] + \
               [("[26, 29]", 26, 29, "*", "flu")] * 4
    make_table(engine, "rel", ["age", "age_lo", "age_hi", "zip", "disease"], released)
    ages, zips = {str(a) for a, _, _ in src}, {z for _, z, _ in src}
    span = max(a for a, _, _ in src) - min(a for a, _, _ in src)
    share = {"age": sum(a not in ages for a, *_ in released) / len(released),
             "zip": sum(z not in zips for *_, z, _ in released) / len(released)}
    ncp = {"age": sum(_label_cost(a, lo, hi, span, ages) for a, lo, hi, _, _ in released) / len(released),
           "zip": sum(_label_cost(z, None, None, 1, zips) for *_, z, _ in released) / len(released)}
    assert share == {"age": 0.9, "zip": 0.9} and ncp["age"] == pytest.approx((5 * 4 / 9 + 4 * 3 / 9) / 10)
    rep = table_report(engine, "rel", ["age", "zip"], "disease", original="src", k=1)
    loss = rep["loss"]
    assert loss["by_qi"] == pytest.approx(share) and loss["ncp_by_qi"] == pytest.approx(ncp)
    assert loss["ncp"] == pytest.approx((ncp["age"] + ncp["zip"]) / 2)
    assert all(loss["ncp_by_qi"][q] <= loss["by_qi"][q] for q in share)  # as the sentence says
    page = render_html(rep)
    assert "<th>attribute</th><th>loss</th><th>NCP</th>" in page
    sentence = _page_text(page, "loss-relation")
    assert sentence.startswith("The share counts every released value") and "NCP is at most the share" in sentence
    assert _page_text(page, "ncp").startswith(f"NCP (overall) {loss['ncp']:.6g}")
    # a label it cannot read: that QI's NCP and the overall one are not computed, and the page says why
    make_table(engine, "rel2", ["age", "zip", "disease"], [("young", "47601", "flu")] * 3)
    rep = table_report(engine, "rel2", ["age", "zip"], "disease", original="src", k=1)
    assert rep["loss"]["ncp"] is None and rep["loss"]["ncp_by_qi"] == {"age": None, "zip": 0.0}
    assert "'young'" in _page_text(render_html(rep), "ncp")
    # no original: neither figure, and one sentence saying why
    rep = table_report(engine, "rel", ["age", "zip"], "disease", k=1)
    assert rep["loss"]["ncp"] is None and "--original" in _page_text(render_html(rep), "loss-relation")


# --- 5. class sizes binned from k -------------------------------------------------------------------

def _bins(sizes: list[int], start: int, k: int | None) -> dict[tuple[int, int], int]:
    """Doubling bins from ``start`` (and, below k, [1, 1], [2, 3], ... cut at k - 1), counted by a scan."""
    out: dict[tuple[int, int], int] = {}
    lo = start
    while lo <= max(sizes):
        n = sum(1 for s in sizes if lo <= s <= 2 * lo - 1)
        if n:
            out[(lo, 2 * lo - 1)] = n
        lo *= 2
    lo = 1
    while k and lo < k:
        hi = min(2 * lo - 1, k - 1)
        n = sum(1 for s in sizes if lo <= s <= hi)
        if n:
            out[(lo, hi)] = n
        lo *= 2
    return out


@pytest.mark.parametrize("sizes, k", [
    (list(range(5, 46)), 5),              # 41 distinct sizes, every class >= k
    ([1, 2, 3, 3] + list(range(5, 40)), 5),   # some classes below k
    (list(range(3, 41)), None),           # no k: from the smallest class
    ([5, 6, 6, 9], 5),                    # few distinct sizes: exact
])
def test_class_size_bins_start_at_k(engine, sizes, k):
    make_table(engine, "t", ["g"], [(i,) for i in range(len(sizes))], counts=sizes)
    rep = table_report(engine, "t", ["g"], **({"k": k} if k else {}))
    hist = {(b["size_from"], b["size_to"]): b["classes"] for b in rep["classes"]["histogram"]}
    if len(set(sizes)) <= 30:
        assert hist == {(s, s): n for s, n in Counter(sizes).items()}
    else:
        assert hist == _bins(sizes, k or min(sizes), k)
    assert sum(b["records"] for b in rep["classes"]["histogram"]) == sum(sizes)
    if k:
        assert all(b["size_to"] < k or b["size_from"] >= k for b in rep["classes"]["histogram"])
        if min(sizes) >= k:
            assert min(hist)[0] == k
    page = render_html(rep)
    if sizes == list(range(5, 46)):
        assert "<td>5-9</td>" in page and "4-7" not in page


# --- 6. what Chromium shows ---------------------------------------------------------------------------

def _chromium() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary on PATH (CI installs it) to render the page")
def test_chromium_renders_the_verdict_and_the_method(tmp_path, capsys):
    src = _csv(tmp_path / "t.csv", ["age", "sex", "disease"], SMALL)
    assert main(["report", str(src), "--qi", "age,sex", "--k", "2", "--html", str(tmp_path / "t.html")]) == 1
    spec = _spec(tmp_path)
    assert main(["release", str(spec)]) == 0
    printed = [x.removeprefix("verdict: ") for x in capsys.readouterr().out.splitlines() if x.startswith("verdict: ")]
    for page, method, verdict in (("t.html", "a table checked as given", printed[0]),
                                  ("page.html", "mondrian", printed[1])):
        r = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                            f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", (tmp_path / page).as_uri()],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
        dom = r.stdout
        assert _page_text(dom, "verdict") == verdict
        assert method in _summary(dom, "method")
    assert printed[0].startswith("VIOLATED: k-anonymity with k = 2 FAILS")
