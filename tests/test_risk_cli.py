"""Where users see risk: `anonydb risk` (text, JSON, HTML, one-line errors), the risk section of
the HTML report, and the risk limits of a release (Python's risk=, a spec's risk: block): a release
over a limit is refused and nothing is written; one within its limits is. The figures are judged
against the plain-Python oracle (tests/risk_oracle.py)."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

import anonydb
from anonydb.errors import AnonyDBError, InputError
from anonydb.workflow.cli import main as cli_main
from anonydb.workflow.spec import SpecError, load_spec

import risk_oracle
from conftest import make_table
from test_release import _Tags

ROWS = [(a, s, z) for a, s, z in [(25, "M", "1"), (25, "M", "1"), (31, "F", "2"), (31, "F", "2"), (31, "F", "2"),
                                  (47, "M", "3"), (52, "F", "3"), (None, "F", "3")]]


@pytest.fixture
def csv_file(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("age,sex,zip,w\n" + "".join(f"{'' if a is None else a},{s},{z},{i + 1}.5\n"
                                             for i, (a, s, z) in enumerate(ROWS)))
    return p


def test_risk_json_matches_the_oracle(csv_file, capsys):
    assert cli_main(["risk", str(csv_file), "--qi", "age,sex", "--threshold", "0.3", "--json",
                     "--population-size", "80"]) == 0
    d = json.loads(capsys.readouterr().out)
    want = risk_oracle.summary(ROWS, [0, 1], Fraction(3, 10))
    assert d["keys"] == ["age", "sex"] and d["sample"]["n"] == 8 and d["sample"]["classes"] == want["classes"]
    for who in ("prosecutor", "journalist"):
        assert d["sample"][who] == {k: float(v) for k, v in want[who].items()}
    assert d["sample"]["marketer"] == float(want["marketer"])
    p = d["population_uniqueness"]
    assert p["population_size"] == 80 and p["sample_uniques"] == 3 and p["dankar_model"] == "pitman"
    assert d["individual"] is None and d["suda"] is None


def test_default_keys_leave_out_the_roles(csv_file, capsys):
    assert cli_main(["risk", str(csv_file), "--sensitive", "zip", "--weights", "w", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["keys"] == ["age", "sex"] and d["individual"]["weights"] == "w"


def test_risk_html_page(csv_file, tmp_path, capsys):
    page = tmp_path / "risk.html"
    assert cli_main(["risk", str(csv_file), "--qi", "age,sex,zip", "--suda", "--weights", "w",
                     "--fraction", "0.1", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("risk of ") and "SUDA2 (M = 3)" in out and "individual risk (weights w)" in out
    p = _Tags()
    p.feed(page.read_text())
    p.close()
    assert p.stack == [] and p.bad == []
    assert {"risk-models", "risk-attackers", "risk-distribution", "population-uniqueness", "individual-risk",
            "suda-contribution"} <= p.ids
    assert p.tags["svg"] == 4  # average risk, share at risk, risk per record, SUDA2's contribution


@pytest.mark.parametrize("argv,message", [
    (["--qi", "age,nope"], "key variable 'nope' not found"),
    (["--qi", "age", "--threshold", "2"], "threshold must lie in (0, 1]"),
    (["--qi", "age", "--fraction", "0"], "fraction"),
    (["--qi", "age", "--region", "atlantis"], "atlantis"),
    (["--qi", "age", "--weights", "sex"], "weight"),
    (["--qi", "age,sex", "--household", "sex"], "both as a key variable and as the household column"),
])
def test_bad_input_is_one_line_and_exit_2(csv_file, capsys, argv, message):
    assert cli_main(["risk", str(csv_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def _people(engine, n=200, seed=3):
    rnd = random.Random(seed)
    rows = [(rnd.randint(20, 69), rnd.choice("MF"), rnd.choice(["a", "b", "c", "d"])) for _ in range(n)]
    return make_table(engine, "people", ["age", "sex", "dx"], rows)


def test_release_over_its_limit_is_refused(engine):
    _people(engine)
    with pytest.raises(AnonyDBError, match=r"breaks its risk limits: the highest journalist risk is 0\.2, above "
                                           r"max_journalist_risk 0\.1; nothing was written"):
        anonydb.anonymize("people", ["age", "sex"], "dx", out="rel", engine=engine, k=5,
                          risk={"max_journalist_risk": 0.1})
    assert not engine.exists("rel")
    assert not [n for n in engine.relations(prefix="") if "stage" in n or n.startswith("_adb")]


def test_release_within_its_limits_is_written_and_meets_them(engine):
    _people(engine)
    rel = anonydb.anonymize("people", ["age", "sex"], "dx", out="rel", engine=engine, k=5,
                            risk={"max_prosecutor_risk": 0.2, "max_records_at_risk": 0, "max_sample_uniqueness": 0,
                                  "fraction": 0.1, "max_population_uniqueness": 0.0})
    published = [c for c, _ in engine.columns(rel.table) if c != "dx"]
    rows = engine.fetch_rows(f"SELECT {', '.join(published)} FROM rel")[1]
    want = risk_oracle.summary(rows, list(range(len(published))), Fraction(1, 5))
    assert want["prosecutor"]["highest"] <= Fraction(1, 5) and want["prosecutor"]["records_at_risk"] == 0


def test_anatomy_qit_is_judged(engine):
    """Anatomy publishes the QIs exactly: its QIT carries the raw risk, and a limit refuses it."""
    _people(engine)
    with pytest.raises(AnonyDBError, match="breaks its risk limits: the highest prosecutor risk is 1"):
        anonydb.anonymize("people", ["age", "sex"], "dx", method="anatomy", out="rel", engine=engine, l=2,
                          risk={"max_prosecutor_risk": 0.5})
    assert not engine.exists("rel_qit") and not engine.exists("rel_st")


def test_limits_are_validated(engine):
    _people(engine)
    for risk, message in [({"max_journalist_risk": 1.5}, r"must lie in \[0, 1\]"), ({"colour": 1}, "unknown key 'colour'"),
                          ({"threshold": 0.2}, "no limit given"),
                          ({"max_population_uniqueness": 0.1}, "needs the population"),
                          ({"max_global_risk": 0.1}, "needs the sampling weights")]:
        with pytest.raises(InputError, match=message):
            anonydb.anonymize("people", ["age", "sex"], "dx", out="rel", engine=engine, k=5, risk=risk)
    with pytest.raises(InputError, match="slicing publishes neither"):
        anonydb.anonymize("people", ["age", "sex"], "dx", method="slicing", out="rel", engine=engine, l=2,
                          risk={"max_journalist_risk": 0.5})


SPEC = """source: people.csv
attributes:
  age: {role: qi, kind: numeric}
  sex: qi
  dx: sensitive
method: mondrian
privacy: {k: 5}
output: {table: rel}
risk: RISK
"""


def test_spec_risk_block(tmp_path):
    rnd = random.Random(5)
    (tmp_path / "people.csv").write_text("age,sex,dx\n" + "".join(
        f"{rnd.randint(20, 69)},{rnd.choice('MF')},{rnd.choice('abcd')}\n" for _ in range(200)))
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace("RISK", "{max_journalist_risk: 0.1, population: people.csv}"))
    sp = load_spec(spec)
    assert sp.risk.options["population"] == str(tmp_path / "people.csv")
    db = str(tmp_path / "w.duckdb")
    assert cli_main(["release", str(spec), "--db", db]) == 2
    eng = anonydb.connect(db)
    assert not eng.exists("rel")
    eng.close()
    spec.write_text(SPEC.replace("RISK", "{max_journalist_risk: 0.2, max_marketer_risk: 0.2}"))
    assert cli_main(["release", str(spec), "--db", db]) == 0
    spec.write_text(SPEC.replace("RISK", "{max_journalist_risk: 2}"))
    with pytest.raises(SpecError, match=r"risk \(line 9\).*must lie in \[0, 1\], got 2"):
        load_spec(spec)
    spec.write_text(SPEC.replace("mondrian", "{name: slicing, columns: 2}").replace("{k: 5}", "{l: 2}")
                    .replace("RISK", "{max_journalist_risk: 0.2}"))
    with pytest.raises(SpecError, match="not a sliced release"):
        load_spec(spec)
