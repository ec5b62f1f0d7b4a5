"""The entry point (anonydb.anonymize -> Release), atomic release runs, plan, reports, progress."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser

import duckdb
import pytest

import anonydb
from anonydb.engines.duckdb import DuckDBEngine
from anonydb.errors import AnonyDBError, InputError
from anonydb.workflow.reporting import class_sizes, prosecutor_risk, render_html, table_report

from conftest import ROOT, make_table


def people(engine, n=120, seed=1):
    rnd = random.Random(seed)
    rows = [(rnd.randint(20, 60), rnd.choice(["47601", "47602", "47605", "47611"]), rnd.choice("MF"),
             rnd.choice(["flu", "cold", "hiv", "cancer"]), 1000 + i) for i in range(n)]
    return make_table(engine, "people", ["age", "zip", "sex", "disease", "ssn"], rows)


# --- the entry point -----------------------------------------------------------------------------

@pytest.mark.parametrize("method,params", [
    ("mondrian", {"k": 4, "l": 2, "relaxed": True}),
    ("anatomy", {"l": 3}),
    ("slicing", {"l": 2, "columns": 2}),
])
def test_anonymize_returns_a_release(engine, method, params):
    people(engine)
    extra = {"identifiers": ["ssn"]} if method == "mondrian" else {}
    src = "people" if method == "mondrian" else "p2"
    if method != "mondrian":
        engine.execute("CREATE TABLE p2 AS SELECT age, zip, sex, disease FROM people")
    rel = anonydb.anonymize(src, ["age", "zip", "sex"], "disease", method=method, out="rel", engine=engine,
                            **extra, **params)
    assert isinstance(rel, anonydb.Release) and rel.holds and rel.rows == 120
    df, tbl = rel.to_pandas(), rel.to_arrow()
    assert len(df) == tbl.num_rows == 120
    assert any(s.lstrip().upper().startswith("CREATE") for s in rel.sql)  # the SQL it ran
    if method == "mondrian":
        assert "ssn" not in df.columns and rel.tables == {"release": "rel"}
        assert set(rel.result.utility["ncp_by_qi"]) == {"age", "zip", "sex"}
    if method == "anatomy":
        assert rel.to_pandas("st")["count"].sum() == 120
    if method == "slicing":
        assert set(rel.tables) == {"view", "c1", "c2"}
    with pytest.raises(InputError, match="no part 'nope'"):
        rel.to_pandas("nope")


def test_anonymize_rejects_foreign_parameters(engine):
    people(engine)
    with pytest.raises(InputError, match=r"anatomy takes no parameter 'relaxed'"):
        anonydb.anonymize("people", "age,zip", "disease", method="anatomy", out="r", engine=engine, l=2, relaxed=True)
    with pytest.raises(InputError, match=r"method must be one of mondrian, fulldomain, anatomy, slicing"):
        anonydb.anonymize("people", "age", method="incognito", out="r", engine=engine, k=2)
    with pytest.raises(InputError, match=r"slicing releases l-diverse groups: give l \(not k\)"):
        anonydb.anonymize("people", "age,zip", "disease", method="slicing", out="r", engine=engine, k=2, l=2)


def test_engine_accepts_connection_wrappers_and_rejects_other_objects():
    con = duckdb.connect()

    class Wrapper:  # as dbt-duckdb hands a Python model its session
        def __init__(self, c):
            self._cursor = c

    eng = DuckDBEngine(Wrapper(con))
    eng.execute("CREATE TABLE x AS SELECT 1 AS a")
    assert con.execute("SELECT a FROM x").fetchone() == (1,)
    with pytest.raises(InputError, match="expected a DuckDB connection, a database file path or None, got object"):
        DuckDBEngine(object())


# --- atomic runs ---------------------------------------------------------------------------------

SPEC = """\
source: people
attributes:
  age: {role: qi, kind: numeric}
  zip: {role: qi, hierarchy: {mask: 5}}
  sex: qi
  ssn: identifier
  disease: sensitive
method: mondrian
privacy: {k: 4, l: 2}
output: {table: people_release, replace: true}
report: {html: report.html, json: report.json}
"""


def _state(con):
    tables = con.execute("SELECT table_name, table_type FROM information_schema.tables ORDER BY 1").fetchall()
    rel = con.execute("SELECT count(*), sum(hash(columns(*))) FROM people_release").fetchall() \
        if ("people_release", "BASE TABLE") in tables else None
    return tables, rel


def _fail_verification(monkeypatch):
    """Make the release's verification report a violation (an injected failure after the release is
    built; anonydb.release.publish.verify_published calls anonydb.checker.check)."""
    import anonydb.checker as checker

    real = checker.check

    def failing(*a, **kw):
        rep = real(*a, **kw)
        rep.verdicts[0].holds = False
        rep.verdicts[0].violating_groups = 1
        return rep

    monkeypatch.setattr(checker, "check", failing)


def _warehouse(tmp_path):
    """A database file holding ``people`` and SPEC beside it."""
    db = tmp_path / "wh.duckdb"
    eng = DuckDBEngine(str(db))
    people(eng)
    eng.close()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return db, spec


def test_failed_run_leaves_previous_release_and_no_stray_tables(tmp_path, monkeypatch):
    db, spec = _warehouse(tmp_path)
    anonydb.run_spec(spec, db=str(db)).engine.close()
    report_before = (tmp_path / "report.json").read_text()
    con = duckdb.connect(str(db))
    before = _state(con)
    con.close()
    assert before[1][0][0] == 120

    # change the spec (k = 8) and inject a verification failure: nothing may change
    spec.write_text(SPEC.replace("k: 4", "k: 8"))
    _fail_verification(monkeypatch)
    with pytest.raises(AnonyDBError, match="verification failed: k-anonymity does not hold on the release"):
        anonydb.run_spec(spec, db=str(db))
    con = duckdb.connect(str(db))
    assert _state(con) == before  # same tables, same release rows
    con.close()
    assert (tmp_path / "report.json").read_text() == report_before


def test_failed_file_export_leaves_previous_files(tmp_path, monkeypatch):
    from anonydb.workflow import jobs as release

    eng = DuckDBEngine(None)
    people(eng)
    eng.execute("CREATE TABLE p2 AS SELECT age, zip, sex, disease FROM people")
    spec = tmp_path / "spec.yaml"
    spec.write_text("source: p2\nattributes: {age: qi, zip: qi, sex: qi, disease: sensitive}\nmethod: anatomy\n"
                    "privacy: {l: 2}\noutput: {table: r, format: csv, path: out/r.csv, replace: true}\n")
    rel = anonydb.run_spec(spec, engine=eng)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r_qit.csv", "r_st.csv"]
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    assert rel.to_pandas("st")["count"].sum() == 120

    real = release._parts

    def broken(rel, sp):  # the second file of the pair cannot be written
        parts = real(rel, sp)
        return parts[:1] + [("no_such_table", parts[1][1])]

    monkeypatch.setattr(release, "_parts", broken)
    with pytest.raises(anonydb.SQLError):
        anonydb.run_spec(spec, engine=eng)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before  # no temp files either
    assert eng.fetch_rows("SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'anonydb_stage%'"
                          )[1] == []
    eng.close()


# --- plan ----------------------------------------------------------------------------------------

def test_plan_prints_the_sql_and_touches_nothing(tmp_path):
    db, spec = _warehouse(tmp_path)
    stamp = db.read_bytes()
    text = anonydb.plan_spec(spec, db=str(db))
    assert db.read_bytes() == stamp  # the warehouse is not written
    assert not (tmp_path / "report.html").exists()
    assert text.startswith(f"-- anonydb plan for {spec}: method mondrian, 120 rows")
    for template in ("mondrian_recursive.sql.j2", "mondrian_release.sql.j2", "check_groups.sql.j2"):
        assert f"{template}" in text
    assert "WITH RECURSIVE" in text and "mondrian_cand.sql.j2" not in text  # every round in one statement
    spec.write_text(SPEC.replace("method: mondrian", "method: {name: mondrian, plan: levelwise}"))
    text = anonydb.plan_spec(spec, db=str(db))
    assert "mondrian_cand.sql.j2 (runs " in text and "mondrian_recursive.sql.j2" not in text  # a round at a time
    full = anonydb.plan_spec(spec, db=str(db), full=True)
    assert full.count("\n-- [") > text.count("\n-- [")
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'people_release'"
                       ).fetchone()[0] == 0
    con.close()


# --- reports -------------------------------------------------------------------------------------

def _oracle(rows: list[tuple], threshold: float):
    sizes = Counter(rows)
    n = len(rows)
    at_risk = sum(s for s in sizes.values() if 1 / s > threshold)
    return {"highest": 1 / min(sizes.values()), "average": len(sizes) / n, "records_at_risk": at_risk,
            "share_at_risk": at_risk / n}, Counter(sizes.values())


@pytest.mark.parametrize("seed", range(6))
def test_risk_and_class_sizes_match_a_brute_force_oracle(engine, seed):
    rnd = random.Random(seed)
    rows = [(rnd.choice("abc"), rnd.randint(1, 4), rnd.choice([None, "x"])) for _ in range(rnd.randint(5, 80))]
    make_table(engine, "t", ["a", "b", "c"], rows)
    threshold = rnd.choice([0.1, 0.2, 0.34, 0.5, 1.0])
    want, hist = _oracle(rows, threshold)
    got = prosecutor_risk(engine, "t", ["a", "b", "c"], threshold)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    cs = class_sizes(engine, "t", ["a", "b", "c"])
    assert cs["classes"] == sum(hist.values()) and cs["rows"] == len(rows)
    assert {b["size_from"]: b["classes"] for b in cs["histogram"]} == dict(hist)
    # the SQL macro computes the same figures
    anonydb.register(engine.con)
    try:
        h, avg, n_risk, share = engine.con.execute(
            f"FROM anonydb_risk('t', ['a', 'b', 'c'], threshold := {threshold})").fetchone()
        assert (h, avg, n_risk, share) == pytest.approx(
            (want["highest"], want["average"], want["records_at_risk"], want["share_at_risk"]))
        assert dict((s, c) for s, c, _ in engine.con.execute("FROM anonydb_class_sizes('t', ['a', 'b', 'c'])"
                                                             ).fetchall()) == dict(hist)
    finally:
        anonydb.unregister(engine.con)


class _Tags(HTMLParser):
    VOID = {"meta", "rect", "br", "img", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.bad, self.tags = [], set(), [], Counter()

    def handle_starttag(self, tag, attrs):
        self.tags[tag] += 1
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        for key in ("src", "href"):
            if key in a:
                self.bad.append((tag, key, a[key]))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] += 1

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()


def test_html_report_structure_and_values(engine, tmp_path):
    people(engine)
    rel = anonydb.anonymize("people", ["age", "zip", "sex"], "disease", out="rel", engine=engine, k=5, l=2,
                            identifiers="ssn")
    from anonydb.workflow.reporting import release_report, write_report

    rep = release_report(rel)
    sizes = [r[0] for r in engine.con.execute("SELECT count(*) FROM rel GROUP BY eq_class").fetchall()]
    assert rep["classes"]["classes"] == len(sizes) and rep["classes"]["min"] == min(sizes) >= 5
    assert rep["risk"]["highest"] == pytest.approx(1 / min(sizes))
    assert rep["risk"]["records_at_risk"] == 0  # every class has >= 5 records: risk <= 0.2
    assert sum(rep["loss"]["by_qi"].values()) / 3 == pytest.approx(rel.result.utility["ncp"])
    html_path, json_path = tmp_path / "r.html", tmp_path / "r.json"
    write_report(rep, html=str(html_path), json_path=str(json_path))
    assert json.loads(json_path.read_text()) == rep
    page = html_path.read_text()
    p = _Tags()
    p.feed(page)
    p.close()
    assert p.stack == [] and p.bad == []  # balanced, and nothing fetched from anywhere
    assert "<script" not in page and "@import" not in page and "url(" not in page
    assert {"summary", "verdicts", "classes", "class-histogram", "histogram", "risk", "loss", "loss-chart",
            "utility"} <= p.ids
    # class sizes and loss; the risk section's attacker models (average, at risk) and risk per record
    rm = rep["risk_models"]
    assert {"risk-models", "risk-attackers", "risk-distribution"} <= p.ids
    assert p.tags["svg"] == 5 and p.tags["rect"] == len(rep["classes"]["histogram"]) + 3 + 3 + 2 + len(rm["distribution"])
    assert rm["sample"]["prosecutor"]["highest"] == pytest.approx(1 / min(sizes))
    assert rm["sample"]["prosecutor"]["average"] == pytest.approx(len(sizes) / sum(sizes))
    assert sum(b["records"] for b in rm["distribution"]) == sum(sizes)
    assert "k-anonymity" in page and "every model holds" in page
    # what was not published and how the rows are ordered, in the JSON and on the page
    dropped = [c for c, _ in engine.columns("people") if c not in ("age", "zip", "sex", "disease")]
    assert rep["publication"] == {"dropped": dropped, "kept": [], "order": rel.order} and "ssn" in dropped
    assert "secret" in rel.order and f"<th>not published (no role)</th><td>{', '.join(dropped)}</td>" in page


def test_html_escapes_names(engine):
    make_table(engine, "t", ["<b>q</b>", "s"], [("<script>", "x")] * 3)
    rep = table_report(engine, "t", ["<b>q</b>"], "s", k=2)
    page = render_html(rep)
    assert "&lt;b&gt;q&lt;/b&gt;" in page and "<b>q</b>" not in page


def test_table_report_generalized_share(engine):
    make_table(engine, "src", ["zip", "s"], [("47601", "a"), ("47602", "b"), ("47611", "a"), ("47612", "b")])
    make_table(engine, "rel", ["zip", "s"], [("4760*", "a"), ("4760*", "b"), ("47611", "a"), ("47612", "b")])
    rep = table_report(engine, "rel", ["zip"], "s", original="src", k=1)
    assert rep["loss"]["by_qi"] == {"zip": 0.5}
    assert rep["risk"]["highest"] == 1.0 and rep["risk"]["records_at_risk"] == 4  # risks 1/2, 1/2, 1, 1 > 0.2
    rep = table_report(engine, "rel", ["zip"], "s", threshold=0.5)
    assert rep["risk"]["records_at_risk"] == 2 and rep["risk"]["average"] == 3 / 4  # 3 classes, 4 records


def test_cli_release_and_report(tmp_path):
    _warehouse(tmp_path)
    run = lambda *a: subprocess.run([sys.executable, "-m", "anonydb", *a], cwd=tmp_path, capture_output=True,  # noqa
                                    text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    r = run("release", "spec.yaml", "--db", "wh.duckdb")
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "released 120 rows to release: people_release" in r.stdout
    r = run("report", "spec.yaml", "--db", "wh.duckdb", "--html", "again.html")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again.html").read_text().count("<svg") == 5  # class sizes, loss, three of risk
    r = run("report", "people_release", "--db", "wh.duckdb", "--qi", "age,zip,sex", "--k", "50", "--json")
    assert r.returncode == 1  # k = 50 does not hold
    rep = json.loads(r.stdout)
    assert rep["verdicts"][0]["model"] == "k-anonymity" and rep["verdicts"][0]["holds"] is False
    r = run("plan", "spec.yaml", "--db", "wh.duckdb")
    assert r.returncode == 0 and "mondrian_release.sql.j2" in r.stdout
    (tmp_path / "bad.yaml").write_text(SPEC.replace("k: 4", "k: four"))
    r = run("release", "bad.yaml", "--db", "wh.duckdb")
    assert r.returncode == 2 and "privacy.k (line 9): expected an integer, got a string 'four'" in r.stderr


def test_docs_document_every_sql_macro():
    from anonydb.sqlfuncs import MACROS

    page = (ROOT / "docs" / "sql-only.md").read_text()
    for name in MACROS:
        assert f"FROM {name}(" in page, name


def test_docs_sql_block_runs_and_gives_the_stated_values():
    page = (ROOT / "docs" / "sql-only.md").read_text()
    block = page.split("`anonydb.register(con)` (the test suite runs it):\n\n```sql\n", 1)[1].split("```", 1)[0]
    statements = [s.strip() for s in block.split(";") if s.strip()]
    con = duckdb.connect()
    anonydb.register(con)
    try:
        results = {}
        for stmt in statements:
            body = "\n".join(line.split("--")[0] for line in stmt.splitlines()).strip()
            if body:
                rows = con.execute(body).fetchall()
                results[body.split("(")[0].split()[-1]] = rows
        k, l_d, l_e, l_p, groups, rows = results["anonydb_privacy"][0]
        assert (k, l_d, round(l_e, 4), l_p, groups, rows) == (3, 2, 1.8899, 1.5, 2, 6)
        assert results["anonydb_k_anonymity"] == [(3, 2, 6)]
        assert results["anonydb_recursive_cl"] == [(True, 0)]
        assert results["anonydb_class_sizes"] == [(3, 2, 6)]
        assert results["anonydb_risk"] == [(pytest.approx(1 / 3), pytest.approx(1 / 3), 6, 1.0)]
        assert len(results["anonydb_t_closeness"]) == 2 and len(results["anonydb_group_stats"]) == 2
    finally:
        anonydb.unregister(con)
        con.close()
