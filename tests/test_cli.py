"""The anonydb command: readable and JSON reports, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from anonydb.workflow.cli import main
from conftest import need_shared


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_toy_table_fails_l_and_holds_k(capsys):
    toy = need_shared() / "toy" / "test2.csv"
    code, out, _ = run(["check", str(toy), "--qi", "ZIPCode", "--sensitive", "Disease", "--k", "1", "--l", "2"], capsys)
    assert code == 1
    assert "holds  k-anonymity (k=1): achieved k = 1" in out
    assert "FAILS  l-diversity (distinct) (l=2): achieved l = 1; 9 of 9 groups (9 rows) violate" in out


def test_check_json_with_hierarchy_and_t(capsys):
    toy = need_shared() / "toy"
    code, out, _ = run(["check", str(toy / "test2.csv"), "--qi", "Age", "--sensitive", "Disease", "--t", "1",
                        "--hierarchy", f"Disease={toy / 'test2_hierarchy_Disease.csv'}", "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["holds"] is True and report["rows"] == 9 and report["groups"] == 9
    v = report["verdicts"][0]
    assert v["model"] == "t-closeness (hierarchical EMD)"
    # the worst group is a lone flu (or pneumonia) record: EMD 2/3 (checked against the LP oracle)
    assert v["achieved"]["t"] == pytest.approx(2 / 3)


def test_check_numeric_sensitive_defaults_to_ordered(capsys):
    toy = need_shared() / "toy" / "test2.csv"
    code, out, _ = run(["check", str(toy), "--qi", "ZIPCode", "--sensitive", "Salary", "--t", "0.2", "--max-groups", "1"], capsys)
    assert code == 1 and "t-closeness (ordered EMD)" in out and "achieved t = 1/2" in out


@pytest.mark.parametrize("args, message", [
    (["--qi", "zip", "--k", "2"], "column 'zip' not found"),
    (["--qi", "ZIPCode", "--sensitive", "Disease", "--t", "1.5"], "t must lie in [0, 1]"),
    (["--qi", "ZIPCode,Disease", "--sensitive", "Disease", "--l", "2"], "both as the sensitive attribute and as a quasi-identifier"),
    (["--qi", "ZIPCode", "--k", "0"], "k must be an integer >= 1"),
    (["--qi", "ZIPCode", "--sensitive", "Disease", "--l", "2", "--hierarchy", "Disease"], "ATTR=PATH"),
])
def test_bad_input_exits_2_with_a_message(capsys, args, message):
    toy = need_shared() / "toy" / "test2.csv"
    code, _, err = run(["check", str(toy)] + args, capsys)
    assert code == 2 and message in err


def test_missing_file_exits_2(capsys):
    code, _, err = run(["check", "no/such/file.csv", "--qi", "a", "--k", "2"], capsys)
    assert code == 2 and "no table or view named 'no/such/file.csv'" in err


def test_check_a_table_in_a_database_file(tmp_path, capsys):
    import duckdb

    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT * FROM (VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('b', 'x')) v(q, s)")
    con.close()
    code, out, _ = run(["check", "people", "--db", str(db), "--qi", "q", "--sensitive", "s", "--k", "2", "--l", "2"], capsys)
    assert code == 1 and "groups: 2" in out and "1 of 2 groups (2 rows) violate" in out


def test_semicolon_csv_is_detected(capsys):
    adult = need_shared() / "adult" / "adult_subset.csv"
    code, out, _ = run(["check", str(adult), "--qi", "sex,race", "--sensitive", "salary-class", "--k", "2", "--json"], capsys)
    assert code == 0 and json.loads(out)["rows"] == 3016


def test_module_entry_point_runs_demo():
    p = subprocess.run([sys.executable, "-m", "anonydb", "demo", "--rows", "3000", "--k", "2", "--l", "2", "--t", "0.5"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "generated table census: 3000 synthetic persons (seed 42)" in p.stdout
    assert "ALL MODELS HOLD" in p.stdout


def test_anonymize_csv_to_parquet(tmp_path, capsys):
    """The CLI anonymizes a CSV file, verifies the release, exports it, and a check of the export
    holds for the same models."""
    import duckdb

    src = tmp_path / "t.csv"
    rows = ["id,name,zip,age,disease"] + [f"{i},p{i},{47600 + (i * 37) % 300},{20 + (i * 13) % 40},"
                                          f"{['flu', 'cancer', 'hd'][i % 3]}" for i in range(60)]
    src.write_text("\n".join(rows) + "\n")
    out = tmp_path / "rel.parquet"
    code = main(["anonymize", str(src), "--qi", "zip,age", "--sensitive", "disease", "--k", "4", "--l", "2",
                 "--identifiers", "name", "--out", "rel", "--export", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert code == 0 and "verified: k-anonymity holds" in printed
    con = duckdb.connect()
    got = con.execute(f"SELECT count(*), min(n) FROM (SELECT *, count(*) OVER (PARTITION BY eq_class) "
                      f"AS n FROM '{out}')").fetchone()
    assert got[0] == 60 and got[1] >= 4
    cols = [d[0] for d in con.execute(f"DESCRIBE SELECT * FROM '{out}'").fetchall()]
    assert cols == ["eq_class", "zip", "zip_lo", "zip_hi", "age", "age_lo", "age_hi", "disease"]  # id had no role
    assert "not published (no role): id, name" in printed
    assert main(["check", str(out), "--qi", "zip,age", "--sensitive", "disease", "--k", "4", "--l", "2"]) == 0


def test_anonymize_plans_write_the_same_release(tmp_path, capsys):
    """--plan recursive (every round in one statement) and --plan levelwise (a round at a time)
    write the same rows, classes and order; an unknown plan exits 2."""
    import duckdb

    src = tmp_path / "t.csv"
    src.write_text("id,zip,age,disease\n" + "".join(f"{i},{47600 + (i * 37) % 300},{20 + (i * 13) % 40},"
                                                    f"{['flu', 'cancer', 'hd'][i % 3]}\n" for i in range(80)))
    got = []
    for plan in ("recursive", "levelwise"):
        out = tmp_path / f"{plan}.parquet"
        assert main(["anonymize", str(src), "--qi", "zip,age", "--sensitive", "disease", "--k", "3", "--l", "2",
                     "--plan", plan, "--out", "rel", "--export", str(out), "--quiet", "--seed", "3"]) == 0
        got.append(duckdb.connect().execute(f"SELECT * FROM '{out}'").fetchall())
    assert got[0] == got[1] and len(got[0]) == 80 and len({r[0] for r in got[0]}) > 4
    capsys.readouterr()
    assert main(["anonymize", str(src), "--qi", "zip", "--k", "2", "--plan", "fast", "--out", "r"]) == 2
    assert "--plan" in capsys.readouterr().err


def test_anonymize_infeasible_exits_2(tmp_path, capsys):
    src = tmp_path / "t.csv"
    src.write_text("zip,disease\n1,flu\n2,flu\n3,cancer\n")
    assert main(["anonymize", str(src), "--qi", "zip", "--sensitive", "disease", "--l", "3", "--out", "r",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "infeasible" in err and "l-diversity" in err and "achieves only l = 2" in err


def test_every_package_is_listed_for_the_wheel():
    """pyproject lists every sub-package of anonydb, so the installed wheel has them all."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    line = re.search(r"^packages = \[(.*)\]$", (root / "pyproject.toml").read_text(), re.M).group(1)
    listed = set(re.findall(r'"([^"]+)"', line))
    found = {".".join(p.relative_to(root).parent.parts) for p in (root / "anonydb").rglob("__init__.py")}
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"
