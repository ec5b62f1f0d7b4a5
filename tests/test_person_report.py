"""`anonydb check --person` and `anonydb report --person` (issue 48): the report counts persons and
records; the HTML shows both. Values from a hand-built table: class (30, M) holds 10 visits of 2
patients, class (40, F) 3 visits of 3 patients."""

from __future__ import annotations

import json
import subprocess
import sys

import duckdb

ROWS = [(1, 30, "M", "flu")] * 6 + [(2, 30, "M", "cold")] * 4 + [(3, 40, "F", "flu"), (4, 40, "F", "flu"),
                                                                 (5, 40, "F", "hiv")]


def make(tmp_path):
    db = tmp_path / "v.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE v (pid INTEGER, age INTEGER, sex VARCHAR, dx VARCHAR)")
    con.executemany("INSERT INTO v VALUES (?, ?, ?, ?)", ROWS)
    con.close()
    return db


def run(*args):
    return subprocess.run([sys.executable, "-m", "anonydb", *args], capture_output=True, text=True, timeout=300)


def test_check_counts_persons(tmp_path):
    db = make(tmp_path)
    rows = run("check", "v", "--db", str(db), "--qi", "age,sex", "--k", "3")
    assert rows.returncode == 0 and "achieved k = 3" in rows.stdout  # by rows: 10 and 3
    r = run("check", "v", "--db", str(db), "--qi", "age,sex", "--k", "3", "--person", "pid")
    assert r.returncode == 1
    assert "(13 rows of 5 persons, by pid)" in r.stdout
    assert "achieved k = 2; 1 of 2 groups (2 persons) violate" in r.stdout
    assert "group [age=30, sex=M] size 2 persons value 2" in r.stdout


def test_report_counts_persons_and_shows_them(tmp_path):
    db = make(tmp_path)
    r = run("report", "v", "--db", str(db), "--qi", "age,sex", "--sensitive", "dx", "--k", "3", "--person", "pid",
            "--json")
    assert r.returncode in (0, 1), r.stderr
    d = json.loads(r.stdout)
    assert (d["rows"], d["persons"], d["person"]) == (13, 5, "pid")
    assert (d["classes"]["classes"], d["classes"]["min"], d["classes"]["max"]) == (2, 2, 3)
    assert d["verdicts"][0]["achieved"] == {"k": 2} and not d["holds"]
    html = tmp_path / "r.html"
    r = run("report", "v", "--db", str(db), "--qi", "age,sex", "--k", "3", "--person", "pid", "--html", str(html))
    text = html.read_text()
    assert "<th>records</th><td>13</td>" in text.replace("\n", "")
    assert "persons</th><td>5 (by pid" in text
