"""Release specs: validation errors name the key and its line; every method runs end to end."""

from __future__ import annotations

import textwrap

import pytest

import anonydb
from anonydb.errors import InputError
from anonydb.workflow.jobs import run_spec
from anonydb.workflow.spec import SpecError, load_spec

from conftest import need_shared


def spec_file(tmp_path, text: str, name: str = "spec.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


GOOD = """\
source: people.csv
attributes:
  age: {role: qi, kind: numeric}
  zip: {role: qi, hierarchy: {mask: 5}}
  ssn: identifier
  disease: sensitive
method: mondrian
privacy: {k: 2, l: 2}
output: {table: rel, format: parquet, path: out/rel.parquet}
"""


def problems(tmp_path, text: str) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as e:
        load_spec(spec_file(tmp_path, text))
    return e.value.problems


def test_valid_spec_parses(tmp_path):
    sp = load_spec(spec_file(tmp_path, GOOD))
    assert sp.qi == ["age", "zip"] and sp.sensitive == "disease" and sp.of_role("identifier") == ["ssn"]
    assert sp.source == str(tmp_path / "people.csv")  # files are relative to the spec
    assert sp.output_path == str(tmp_path / "out" / "rel.parquet")
    assert sp.model_params() == {"k": 2, "l": 2, "l_variant": "distinct"}
    assert sp.hierarchies["zip"].height == 5


def test_unknown_key_named_with_its_line(tmp_path):
    text = GOOD.replace("method: mondrian", "method: mondrian\ncolour: blue")
    assert problems(tmp_path, text) == [
        ("colour (line 8)", "unknown key 'colour'; expected one of version, source, database, attributes, method, "
                            "privacy, output, report, seed, secret_file, linked, risk, public, series, dp")]


def test_nested_unknown_key_and_wrong_type(tmp_path):
    text = GOOD.replace("privacy: {k: 2, l: 2}", "privacy:\n  k: five\n  l: {value: 2, variant: fancy}\n  q: 3")
    got = dict(problems(tmp_path, text))
    assert got["privacy.q (line 11)"].startswith("unknown key 'q'")
    assert got["privacy.k (line 9)"] == "expected an integer, got a string 'five'"
    assert got["privacy.l.variant (line 10)"].startswith("expected one of distinct, entropy")


def test_bad_role_kind_and_method_parameter(tmp_path):
    text = GOOD.replace("ssn: identifier", "ssn: secret").replace("kind: numeric", "kind: weird") \
        .replace("method: mondrian", "method: {name: mondrian, relaxed: maybe, columns: 2}")
    got = dict(problems(tmp_path, text))
    assert got["attributes.ssn (line 5)"].startswith("role must be one of")
    assert got["attributes.age.kind (line 3)"].startswith("kind must be one of numeric")
    assert got["method.relaxed (line 7)"] == "expected a boolean, got a string 'maybe'"
    assert got["method.columns (line 7)"].startswith("unknown parameter 'columns' of mondrian")


def test_missing_hierarchy_file(tmp_path):
    text = GOOD.replace("{mask: 5}", "hierarchies/zip.csv")
    (where, what), = problems(tmp_path, text)
    assert where == "attributes.zip.hierarchy (line 4)"
    assert what == f"hierarchy file not found: {str(tmp_path / 'hierarchies' / 'zip.csv')!r}"


def test_missing_required_and_format_rules(tmp_path):
    text = "source: t\nattributes: {a: qi}\nmethod: mondrian\nprivacy: {k: 2}\noutput: {table: r, format: csv}\n"
    assert problems(tmp_path, text) == [("output (line 5)", "format csv needs output.path")]
    got = dict(problems(tmp_path, "source: t\nattributes: {a: qi}\n"))
    assert set(got) == {"method", "output", "privacy"}


def test_invalid_yaml_and_duplicate_keys(tmp_path):
    (where, what), = problems(tmp_path, "source: [unclosed\n")
    assert where.startswith("line ") and "not valid YAML" in what
    (where, what), = problems(tmp_path, GOOD + "source: other.csv\n")
    assert (where, what) == ("line 10", "key 'source' appears twice")


def test_method_specific_rules(tmp_path):
    text = GOOD.replace("method: mondrian", "method: anatomy").replace("{k: 2, l: 2}", "{k: 2, l: 2}")
    (where, what), = problems(tmp_path, text)
    assert where == "privacy (line 8)" and what == "anatomy takes privacy.l only, not k"
    text = GOOD.replace("method: mondrian", "method: fulldomain")
    (where, what), = problems(tmp_path, text)
    assert where == "attributes.age (line 3)" and "give this QI a hierarchy" in what


def _people(tmp_path):
    (tmp_path / "people.csv").write_text(
        "age,zip,ssn,disease\n" + "\n".join(f"{20 + i % 7},{47600 + i % 5},{1000 + i},{['flu', 'cold', 'hiv'][i % 3]}"
                                           for i in range(60)) + "\n")


def test_unknown_column_named_at_run_time(tmp_path):
    _people(tmp_path)
    text = GOOD.replace("  ssn: identifier", "  ssn: identifier\n  postcode: qi")
    with pytest.raises(SpecError) as e:
        run_spec(spec_file(tmp_path, text))
    (where, what), = e.value.problems
    assert where == "attributes.postcode (line 6)"
    assert what.startswith("column 'postcode' not found in") and "age, zip, ssn, disease" in what
    assert not (tmp_path / "out").exists()


def test_parquet_release_drops_identifiers_and_verifies(tmp_path):
    _people(tmp_path)
    rel = run_spec(spec_file(tmp_path, GOOD))
    try:
        assert rel.files == [str(tmp_path / "out" / "rel.parquet")]
        df = rel.to_pandas()
        assert len(df) == 60 and "ssn" not in df.columns  # identifiers never reach the release
        # an independent look at the file: every class of the released QI labels has >= 2 rows and 2 diseases
        con = rel.engine.con
        worst = con.execute(f"SELECT min(n), min(d) FROM (SELECT count(*) n, count(DISTINCT disease) d FROM "
                            f"read_parquet('{rel.files[0]}') GROUP BY age, zip)").fetchone()
        assert worst[0] >= 2 and worst[1] >= 2
        # the staging tables are gone
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE NOT temporary").fetchone()[0] == 0
    finally:
        rel.engine.close()


def test_duckdb_format_needs_a_database(tmp_path):
    _people(tmp_path)
    text = GOOD.replace("{table: rel, format: parquet, path: out/rel.parquet}", "{table: rel}")
    with pytest.raises(InputError, match=r"output.format: format duckdb writes tables into a database"):
        run_spec(spec_file(tmp_path, text))


ADULT = """\
source: {d}/adult.csv
attributes:
  age: {{role: qi{age}}}
  sex: {{role: qi{sex}}}
  education: {{role: qi{edu}}}
  marital-status: {{role: qi{ms}}}
  occupation: sensitive
method: {method}
privacy: {privacy}
output: {{table: adult_release}}
database: wh.duckdb
report: {{html: report.html, json: report.json}}
seed: 3
"""


def _adult_spec(tmp_path, d, method, privacy, hier=False):
    h = (lambda a: f", hierarchy: {d}/adult_hierarchy_{a}.csv") if hier else (lambda a: "")
    return spec_file(tmp_path, ADULT.format(d=d, method=method, privacy=privacy, age=h("age"), sex=h("sex"),
                                            edu=h("education"), ms=h("marital-status")), f"{method[:8]}.yaml")


@pytest.mark.parametrize("method,privacy,hier", [
    ("mondrian", "{k: 10, l: 3}", True),
    ("{name: fulldomain, max_suppression: 0.01}", "{k: 5, l: 2}", True),
    ("anatomy", "{l: 5}", False),
    ("{name: slicing, columns: 2}", "{l: 3}", False),
])
def test_adult_spec_end_to_end(tmp_path, method, privacy, hier):
    import json

    d = need_shared() / "adult"
    path = _adult_spec(tmp_path, d, method, privacy, hier)
    rel = run_spec(path)
    eng = rel.engine
    try:
        name = rel.method
        qi = ["age", "sex", "education", "marital-status"]
        cols = ", ".join(f'"{c}"' for c in qi)
        if name in ("mondrian", "fulldomain"):
            k, l = (10, 3) if name == "mondrian" else (5, 2)
            n, worst_k, worst_l = eng.con.execute(
                f"SELECT sum(n), min(n), min(d) FROM (SELECT count(*) n, count(DISTINCT occupation) d FROM "
                f"adult_release GROUP BY {cols})").fetchone()
            assert worst_k >= k and worst_l >= l
            suppressed = rel.result.suppressed if name == "fulldomain" else 0
            assert n + suppressed == 30162 and suppressed <= 0.01 * 30162
        elif name == "anatomy":
            n, groups = eng.con.execute("SELECT sum(count), count(DISTINCT group_id) FROM adult_release_st").fetchone()
            assert n == 30162 and rel.result.groups == groups
            assert eng.con.execute("SELECT min(d) FROM (SELECT count(*) d FROM adult_release_st GROUP BY group_id)"
                                   ).fetchone()[0] >= 5
        else:
            assert eng.con.execute("SELECT count(*) FROM adult_release").fetchone()[0] == 30162
            assert rel.report.holds and rel.report.worst <= 1 / 3 + 1e-9  # p(t,s) is a float sum
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["holds"] is True and report["rows"] == rel.rows and report["method"] == name
        html = (tmp_path / "report.html").read_text()
        assert html.startswith("<!DOCTYPE html>") and "every model holds" in html
    finally:
        eng.close()
    # the report command re-checks the release in the database without re-running it
    rep = anonydb.spec_report(path)
    assert rep["holds"] is True and rep["method"] == name
    assert [v["holds"] for v in rep["verdicts"]] == [v["holds"] for v in report["verdicts"]]


def test_a_grouping_hierarchy_for_categories(tmp_path):
    """hierarchy: {groups: {group: [values]}}: each value under its group, then *; anything else
    named with its line."""
    text = GOOD.replace("  ssn: identifier", "  sex: {role: qi, hierarchy: {groups: {Any: [F, M]}}}")
    sp = load_spec(spec_file(tmp_path, text))
    assert sp.hierarchies["sex"].ancestors("F") == ["F", "Any", "*"]
    bad = GOOD.replace("  ssn: identifier", "  sex: {role: qi, hierarchy: {groups: [F, M]}}")
    assert [m for _, m in problems(tmp_path, bad)] == ["expected a mapping of group -> [values]"]
