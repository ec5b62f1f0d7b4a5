"""Injector and (B,t)-privacy through the release API, YAML specs and the command line, and the
audit command on every kind of release [issue 9: CLI and audit mode]."""

from __future__ import annotations

import json

import duckdb
import pytest

import anonydb
from anonydb.attacks.audit import audit_distribution, audit_rules
from anonydb.workflow.cli import main
from anonydb.datasets import synthetic_census
from anonydb.engines.duckdb import DuckDBEngine
from anonydb.engines import connect
from anonydb.attacks.knowledge import mine_rules

QI = ["age", "sex", "race"]


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


#: what a Mondrian release of the census over QI publishes: nothing else leaves
GEN_COLUMNS = ["eq_class", "age", "age_lo", "age_hi", "sex", "race", "occupation"]


def link_by_boxes(eng, release: str, source: str, out: str) -> None:
    """The publisher's link of every source row to its class, rebuilt from the published boxes alone
    (strict Mondrian: each row lies in exactly one box; a label is a value or a set '{a, b}')."""
    def covers(q):
        return (f"(b.{q} = c.{q} OR (starts_with(b.{q}, '{{') AND "
                f"list_contains(string_split(trim(b.{q}, '{{}}'), ', '), CAST(c.{q} AS VARCHAR))))")
    eng.execute(f"CREATE TABLE {out} AS SELECT b.eq_class, c.* FROM (SELECT DISTINCT eq_class, age_lo, age_hi, sex, "
                f"race FROM {release}) AS b JOIN {source} AS c ON c.age BETWEEN b.age_lo AND b.age_hi AND "
                f"{covers('sex')} AND {covers('race')}")
    n, rows = eng.fetch_rows(f"SELECT (SELECT count(*) FROM {source}), count(DISTINCT person_id) FROM {out}")[1][0]
    assert eng.scalar(f"SELECT count(*) FROM {out}") == n == rows  # every source row in exactly one class


@pytest.fixture
def census_db(tmp_path):
    db = tmp_path / "wh.duckdb"
    eng = DuckDBEngine(str(db))
    synthetic_census(eng, "census", rows=2000, seed=3)
    eng.close()
    return db


def test_release_api_injector(engine):
    synthetic_census(engine, "census", rows=2000, seed=3)
    rel = anonydb.anonymize("census", QI, "occupation", method="injector", out="inj", engine=engine, l=3, min_exp=0.8)
    assert rel.tables == {"qit": "inj_qit", "st": "inj_st"} and rel.rows == 2000 and rel.holds
    v = rel.report["matching"]
    # the verdict names the rules it was judged against: what an audit needs to attack it with the same
    assert v.params == {"l": 3, "min_exp": 0.8, "itemset_support": "min"} and v.achieved["l"] >= 3
    assert int(rel.to_pandas("st")["count"].sum()) == 2000
    # independently: the rules re-mined and the release audited from its published counts
    kb = mine_rules("census", QI, "occupation", min_exp=0.8, engine=engine)
    assert audit_rules(kb, 3, engine=engine, qit="inj_qit", st="inj_st").vulnerable == 0
    with pytest.raises(anonydb.InputError, match="injector releases matching l-diverse groups: give l"):
        anonydb.anonymize("census", QI, "occupation", method="injector", out="x", engine=engine, k=3)
    with pytest.raises(anonydb.InputError, match="injector takes no parameter 'relaxed'"):
        anonydb.anonymize("census", QI, "occupation", method="injector", out="x", engine=engine, l=3, relaxed=True)


def test_release_api_bt_mondrian(engine):
    synthetic_census(engine, "census", rows=1500, seed=5)
    rel = anonydb.anonymize("census", QI, "occupation", out="gen", engine=engine, k=3, bt=(0.3, 0.25))
    bt = rel.report["(B,t)"]
    assert bt.holds and bt.achieved["t"] <= 0.25 and bt.params["b"] == {q: 0.3 for q in QI}
    # the release publishes the QIs, their ranges, the class and the sensitive value only, and (B,t) holds
    # over them; the audit below joins the source to the published boxes
    assert [c for c, _ in engine.columns("gen")] == GEN_COLUMNS
    assert sorted(rel.dropped) == sorted(c for c, _ in engine.columns("census") if c not in QI + ["occupation"])
    link_by_boxes(engine, "gen", "census", "joined")
    a = audit_distribution(0.3, 0.25, engine=engine, qi=QI, sensitive="occupation", group="eq_class", table="joined",
                           prior_source="census")
    assert a.rows == 1500 and a.vulnerable == 0 and a.worst == pytest.approx(bt.achieved["t"], abs=1e-12)


def _census_src(rows, seed):
    """A fresh engine with a synthetic census and ``src``: its age, sex, race and occupation."""
    eng = connect(duckdb.connect())
    synthetic_census(eng, "census", rows=rows, seed=seed)
    eng.execute("CREATE TABLE src AS SELECT age, sex, race, occupation FROM census")
    return eng


def test_spec_injector_files_and_report(tmp_path):
    eng = _census_src(1500, 9)
    spec = tmp_path / "spec.yaml"
    spec.write_text("source: src\nattributes: {age: qi, sex: qi, race: qi, occupation: sensitive}\n"
                    "method: {name: injector, min_exp: 0.8}\nprivacy: {l: 3}\n"
                    "output: {table: r, format: parquet, path: out/r.parquet}\n")
    rel = anonydb.run_spec(spec, engine=eng)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r_qit.parquet", "r_st.parquet"]
    assert rel.holds and int(rel.to_pandas("st")["count"].sum()) == 1500
    # the spec names the rules' itemset support as anonymize and audit do; the release is made
    # against those rules and names them
    sup = tmp_path / "support.yaml"
    sup.write_text(spec.read_text().replace("min_exp: 0.8}", "min_exp: 0.8, itemset_support: 50}")
                   .replace("format: parquet, path: out/r.parquet", "replace: true"))
    rel = anonydb.run_spec(sup, engine=eng)
    assert rel.holds and rel.report["matching"].params["itemset_support"] == 50
    kb = mine_rules("src", QI, "occupation", min_exp=0.8, engine=eng, itemset_support=50)
    assert audit_rules(kb, 3, engine=eng, qit="r_qit", st="r_st").vulnerable == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(spec.read_text().replace("privacy: {l: 3}", "privacy: {l: 3, k: 2}"))
    with pytest.raises(anonydb.InputError, match="injector takes privacy.l only, not k"):
        anonydb.run_spec(bad, engine=eng)


def test_cli_injector_then_audit(census_db, capsys):
    db = str(census_db)
    code, out, err = run(["anonymize", "census", "--method", "injector", "--qi", ",".join(QI), "--sensitive",
                          "occupation", "--l", "3", "--min-exp", "0.8", "--out", "inj", "--db", db, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert res["rows"] == 2000 and res["min_valid"] >= 3 and res["verification"]["holds"] is True
    assert res["rules"] > 0 and res["rules_total"] >= res["rules"]
    # the audit of the Injector release and of an Anatomy release of the same table, same rules
    code, out, err = run(["audit", "inj", "--source", "census", "--qi", ",".join(QI), "--sensitive", "occupation",
                          "--l", "3", "--min-exp", "0.8", "--db", db, "--json"], capsys)
    assert code == 0, err
    inj = json.loads(out)
    assert inj["vulnerable"] == 0 and inj["rows"] == 2000 and inj["min_possible"] >= 3
    code, _, err = run(["anonymize", "census", "--method", "anatomy", "--qi", ",".join(QI), "--sensitive",
                        "occupation", "--l", "3", "--out", "ana", "--db", db], capsys)
    assert code == 0, err
    code, out, err = run(["audit", "ana", "--source", "census", "--qi", ",".join(QI), "--sensitive", "occupation",
                          "--l", "3", "--min-exp", "0.8", "--db", db], capsys)
    assert code == 0, err
    assert "rule-based audit (matching, l = 3)" in out and "minimal rules mined at minExp 0.8" in out


def test_cli_bt_mondrian_then_audit(census_db, capsys):
    db = str(census_db)
    code, out, err = run(["anonymize", "census", "--qi", ",".join(QI), "--sensitive", "occupation", "--k", "3",
                          "--bt", "0.3:0.25", "--bt", "0.2,0.5,0.5:0.3", "--bt-distance", "equal", "--out", "gen",
                          "--db", db, "--json"], capsys)
    assert code == 0, err
    ver = json.loads(out)["verification"]
    bts = [v for v in ver["verdicts"] if v["model"] == "(B,t)-privacy"]
    assert len(bts) == 2 and all(v["holds"] for v in bts)
    assert bts[1]["params"]["b"] == {"age": 0.2, "sex": 0.5, "race": 0.5}
    # the audit attacks the release through the publisher's link of source rows to classes
    eng = DuckDBEngine(db)
    assert [c for c, _ in eng.columns("gen")] == GEN_COLUMNS
    link_by_boxes(eng, "gen", "census", "link")
    eng.execute("CREATE TABLE gen_linked AS SELECT eq_class, person_id FROM link")
    eng.close()
    code, out, err = run(["audit", "gen_linked", "--source", "census", "--qi", ",".join(QI), "--sensitive",
                          "occupation", "--key", "person_id", "--b", "0.3", "--t", "0.25", "--distance", "equal",
                          "--db", db, "--json"], capsys)
    assert code == 0, err
    a = json.loads(out)
    assert a["vulnerable"] == 0 and a["rows"] == 2000 and a["worst"] <= 0.25
    # the rule-based audit of the generalized release, joined back by the key
    code, out, err = run(["audit", "gen_linked", "--source", "census", "--qi", ",".join(QI), "--sensitive",
                          "occupation", "--key", "person_id", "--l", "2", "--min-exp", "0.8", "--db", db, "--json"],
                         capsys)
    assert code == 0, err
    assert json.loads(out)["rows"] == 2000


@pytest.mark.parametrize("args, message", [
    (["anonymize", "census", "--qi", "age", "--sensitive", "occupation", "--k", "2", "--min-exp", "0.9", "--out", "x"],
     "--min-exp belongs to --method injector"),
    (["anonymize", "census", "--qi", "age", "--sensitive", "occupation", "--method", "anatomy", "--l", "2",
      "--bt", "0.3:0.2", "--out", "x"], "--bt and --bt-distance belong to --method mondrian"),
    (["anonymize", "census", "--qi", "age,sex", "--sensitive", "occupation", "--bt", "0.3", "--out", "x"],
     "--bt expects B:T"),
    (["anonymize", "census", "--qi", "age,sex", "--sensitive", "occupation", "--bt", "0.3,0.2,0.1:0.2", "--out", "x"],
     "3 bandwidths for 2 quasi-identifiers"),
    (["anonymize", "census", "--qi", "age", "--sensitive", "occupation", "--method", "injector", "--out", "x"],
     "--method injector needs --l"),
    (["anonymize", "census", "--qi", "age", "--sensitive", "occupation", "--method", "injector", "--l", "2",
      "--k", "3", "--out", "x"], "--method injector takes --l, --min-exp and --hierarchy; not --k"),
    (["audit", "census", "--source", "census", "--qi", "age", "--sensitive", "occupation"], "give --l"),
    (["audit", "census", "--source", "census", "--qi", "age", "--sensitive", "occupation", "--b", "0.3"],
     "needs both --b"),
    (["audit", "census", "--source", "census", "--qi", "age", "--sensitive", "occupation", "--l", "2"],
     "has no column 'eq_class'"),
])
def test_cli_errors(census_db, capsys, args, message):
    code, _, err = run(args + ["--db", str(census_db)], capsys)
    assert code == 2 and message in err


def test_spec_bt(tmp_path):
    eng = _census_src(1200, 4)
    spec = tmp_path / "spec.yaml"
    spec.write_text("source: src\nattributes: {age: qi, sex: qi, race: qi, occupation: sensitive}\n"
                    "method: mondrian\nprivacy:\n  k: 3\n  bt: [{b: 0.3, t: 0.25, distance: js}, {b: [0.2, 1, 1], t: 0.3, "
                    "distance: js}]\noutput: {table: r}\n")
    rel = anonydb.run_spec(spec, engine=eng)
    bts = [v for v in rel.report.verdicts if v.model == "(B,t)-privacy"]
    assert [v.params["distance"] for v in bts] == ["js", "js"] and all(v.holds for v in bts)
    assert bts[1].params["b"] == {"age": 0.2, "sex": 1.0, "race": 1.0}
    bad = tmp_path / "bad.yaml"
    bad.write_text(spec.read_text().replace("method: mondrian", "method: anatomy").replace("k: 3", "l: 2"))
    with pytest.raises(anonydb.InputError, match="privacy.bt.*offered by method mondrian, not anatomy"):
        anonydb.run_spec(bad, engine=eng)
    bad.write_text(spec.read_text().replace("{b: 0.3, t: 0.25, distance: js}", "{b: 0.3}"))
    with pytest.raises(anonydb.InputError, match="expected a mapping with b, t"):
        anonydb.run_spec(bad, engine=eng)


def test_cli_audit_of_a_sliced_release(census_db, capsys):
    """A sliced release whose QIs share one column: the adversary sees each bucket's exact QI tuples
    and its sensitive values; the audit pairs them by a rule-respecting assignment (QIT/ST)."""
    from anonydb.methods import slicing

    eng = DuckDBEngine(str(census_db))
    slicing("census", QI, "occupation", l=3, out="sl", engine=eng, columns=[QI, ["occupation"]], seed=2)
    kb = mine_rules("census", QI, "occupation", min_exp=0.8, engine=eng)
    eng.execute("CREATE TABLE sl_qit AS SELECT bucket_id, age, sex, race FROM sl")
    eng.execute('CREATE TABLE sl_st AS SELECT bucket_id, occupation, count(*) AS "count" FROM sl GROUP BY ALL')
    want = audit_rules(kb, 3, engine=eng, qit="sl_qit", st="sl_st", group="bucket_id")
    eng.execute("DROP TABLE sl_qit")
    eng.execute("DROP TABLE sl_st")
    eng.close()
    code, out, err = run(["audit", "sl", "--source", "census", "--qi", ",".join(QI), "--sensitive", "occupation",
                          "--l", "3", "--min-exp", "0.8", "--db", str(census_db), "--json"], capsys)
    assert code == 0, err
    got = json.loads(out)
    assert (got["rows"], got["groups"], got["vulnerable"]) == (2000, want.groups, want.vulnerable)
    code, out, err = run(["audit", "sl", "--source", "census", "--qi", ",".join(QI), "--sensitive", "occupation",
                          "--b", "0.3", "--t", "0.2", "--db", str(census_db), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["rows"] == 2000


def test_cli_injector_export(census_db, tmp_path, capsys):
    out = tmp_path / "inj.parquet"
    code, _, err = run(["anonymize", "census", "--method", "injector", "--qi", ",".join(QI), "--sensitive",
                        "occupation", "--l", "2", "--out", "inj", "--export", str(out), "--db", str(census_db)], capsys)
    assert code == 0, err
    con = duckdb.connect()
    assert con.execute(f"SELECT count(*) FROM read_parquet('{tmp_path / 'inj_qit.parquet'}')").fetchone()[0] == 2000
    assert con.execute(f"SELECT sum(count) FROM read_parquet('{tmp_path / 'inj_st.parquet'}')").fetchone()[0] == 2000
