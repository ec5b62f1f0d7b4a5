"""A release spec's ``dp:`` block run by ``anonydb release``, its report page, and ``anonydb dp --html``:
the page states the promise, the budget left and each aggregate's sensitivity and scale, the values
the definitions give (discrete Laplace b = sensitivity / epsilon, OpenDP's map is d_in / b)."""

from __future__ import annotations

import json
import math
import re

import pytest

pytest.importorskip("opendp", reason="OpenDP is not installed (pip install 'anonydb[dp]')")

import duckdb  # noqa: E402

from anonydb.workflow.cli import main  # noqa: E402

SPEC = """\
source: visits
database: {db}
dp:
  person: pid
  by: [grp]
  count: true
  sum: ["n:0:3"]
  mean: [{{column: cost, lo: 0, hi: 50}}]
  epsilon: 0.6
  keys: grps
  max_groups: 2
  budget: 1.5
series: monthly
output: {{table: {out}, replace: true}}
report: {{html: {html}, json: {js}}}
"""


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "w.duckdb")
    con = duckdb.connect(path)
    con.execute("CREATE TABLE visits AS SELECT CAST(i % 300 AS INTEGER) AS pid, 'g' || CAST(i % 5 AS VARCHAR) AS grp, "
                "CAST(i % 70 AS DOUBLE) AS cost, CAST(i % 4 AS INTEGER) AS n FROM range(1500) t(i)")
    con.execute("CREATE TABLE grps AS SELECT 'g' || CAST(i AS VARCHAR) AS grp FROM range(6) t(i)")
    con.close()
    return path


def test_a_dp_spec_releases_under_its_budget_with_its_report(db, tmp_path, capsys):
    """Budget 1.5 in series 'monthly': two releases of 0.6 are written (0.9 then 0.3 left), a third is
    refused with nothing written. Three aggregates drawn (count, the sum, the mean's sum): each
    spends 0.2, so with G = 2, R = 1 the count's scale is 2 / 0.2 = 10, the sum's 2 x 3 / 0.2 = 30
    and the mean's 2 x 50 / 0.2 = 500; every public key appears (6, one with no rows)."""
    for i, left in ((1, 0.9), (2, 0.3)):
        spec = tmp_path / f"dp{i}.yaml"
        html, js = tmp_path / f"r{i}.html", tmp_path / f"r{i}.json"
        spec.write_text(SPEC.format(db=db, out=f"stats{i}", html=html, js=js))
        assert main(["release", str(spec)]) == 0
        out = capsys.readouterr().out
        assert "6 groups of differentially private aggregates" in out and f"epsilon {left:g} left" in out
        assert "promises: (0.6, 0)-differential privacy for every person of 'pid' (at most 2 groups and 1 rows" in out
        page = html.read_text()
        rows = dict(re.findall(r"<tr><td>(\w+)</td><td class=\"num\">([^<]+)</td>", page.split('id="dp-noise"')[1].split("</table>")[0]))
        assert rows == {"count": "2", "sum_n": "6", "mean_cost": "100"}  # the L1 sensitivities
        rep = json.loads(js.read_text())
        got = {a["aggregate"]: (a["epsilon"], a["scale"], a["interval_95"]) for a in rep["aggregates"]}
        for name, scale in (("count", 10), ("sum_n", 30), ("mean_cost", 500)):
            assert got[name][0] == pytest.approx(0.2) and got[name][1] == pytest.approx(scale, rel=1e-6)
            assert got[name][2] == pytest.approx(scale * math.log(20), rel=1e-6)
        assert rep["left"] == pytest.approx(left) and len(rep["top"]) == 6
        assert "budget of series &#x27;monthly&#x27;" in page and "groups released</th><td>6<" in page
    spec = tmp_path / "dp3.yaml"
    spec.write_text(SPEC.format(db=db, out="stats3", html=tmp_path / "r3.html", js=tmp_path / "r3.json"))
    assert main(["release", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "budget of series 'monthly' is epsilon 1.5" in err and "nothing was written" in err
    con = duckdb.connect(db)
    assert not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'stats3'").fetchone()[0]
    assert not (tmp_path / "r3.html").exists()


def test_a_dp_spec_in_the_query_form(db, tmp_path, capsys):
    spec = tmp_path / "q.yaml"
    spec.write_text(f"database: {db}\ndp:\n  person: pid\n  query: SELECT grp, count(*) FROM visits WHERE cost > 10 "
                    f"GROUP BY ALL\n  epsilon: 1\n  delta: 1.0e-6\noutput: q\n")
    assert main(["release", str(spec), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["promises"].startswith("(1, 1e-06)-differential privacy") and got["series"] == "q"


@pytest.mark.parametrize("block,message", [
    ("dp:\n  by: grp\n  epsilon: 1\n  keys: grps\n", "dp (line 3): dp.person is missing"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 0\n  keys: grps\n", "dp.epsilon (line 6): expected a positive number"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 1\n", "need dp.delta > 0"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 1\n  keys: grps\n  sum: [cost]\n", "give COLUMN:LO:HI"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 1\n  keys: grps\n  mean: [{column: cost, lo: 9, hi: 1}]\n",
     "LO 9 is above HI 1"),
    ("dp:\n  person: pid\n  epsilon: 1\n  keys: grps\n  query: SELECT grp, sum(cost) FROM visits GROUP BY ALL\n",
     "unbounded sum"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 1\n  keys: grps\n  budget: -1\n", "dp.budget"),
    ("dp:\n  person: pid\n  by: grp\n  epsilon: 1\n  keys: grps\n  k: 5\n", "unknown key 'k'"),
])
def test_a_bad_dp_block_is_named_with_its_line(db, tmp_path, capsys, block, message):
    spec = tmp_path / "bad.yaml"
    spec.write_text(f"source: visits\ndatabase: {db}\n{block}output: o\n")
    assert main(["release", str(spec)]) == 2
    assert message in capsys.readouterr().err


def test_dp_on_the_command_line_writes_its_report_page(db, tmp_path, capsys):
    html = tmp_path / "dp.html"
    assert main(["dp", "visits", "--db", db, "--person", "pid", "--by", "grp", "--count", "--epsilon", "1",
                 "--delta", "1e-6", "--out", "c", "--html", str(html)]) == 0
    assert f"report: {html}" in capsys.readouterr().out
    page = html.read_text()
    assert 'id="dp-facts"' in page and 'id="dp-counts"' in page and "a group is released where its noisy count" in page
    assert main(["dp", "visits", "--db", db, "--person", "pid", "--by", "grp", "--epsilon", "1", "--delta", "1e-6",
                 "--out", "c2", "--html", str(tmp_path / "no" / "dp.html")]) == 2
    assert "the folder" in capsys.readouterr().err
    con = duckdb.connect(db)
    assert not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'c2'").fetchone()[0]
