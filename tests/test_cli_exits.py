"""The exit code says what happened to the data, whatever happens to stdout (issue 62).

1. A reader that closes stdout early (``| head -1``, ``| true``) never turns a written release or a
   finished check into exit 2 or a traceback: real processes, real pipes.
2. A mistyped --db of a command that only reads (or drops ledger entries) is one line, exit 2, and
   no file is created.
3. ``check --max-groups N`` lists N groups per model in the text, and its help says the default.
4. A pseudonymized person key without --person: the refusal names --person COL.
5. The progress display never shows a count of persons closed below 0 or above the total.
6. ``risk`` of an empty table is refused; with --fraction the population line always shows.
7. ``--export --replace`` killed before or after each commit never leaves the new table beside
   the old file.

Every expected value comes from the data as the test builds it (counted here in Python), never
from anonydb's own output.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import anonydb
from anonydb import events
from anonydb.workflow.cli import main
from anonydb.workflow.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
QI = "age,zip,sex"


def _people(rows: int = 600, persons: int = 150, seed: int = 5) -> list[tuple]:
    """(pid, age, zip, sex, disease): each person's QIs are the same on all its records."""
    rnd = random.Random(seed)
    who = {p: (20 + rnd.randrange(40), 10000 + rnd.randrange(6), rnd.choice("MF")) for p in range(persons)}
    out = []
    for i in range(rows):
        p = i % persons
        out.append((p, *who[p], rnd.choice(["flu", "cold", "asthma", "ulcer", "gastritis"])))
    return out


def _write_csv(path: Path, rows: list[tuple]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["pid", "age", "zip", "sex", "disease"])
        w.writerows(rows)


@pytest.fixture
def folder(tmp_path) -> Path:
    rows = _people()
    _write_csv(tmp_path / "people.csv", rows)
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE people (pid INTEGER, age INTEGER, zip INTEGER, sex VARCHAR, disease VARCHAR)")
    con.executemany("INSERT INTO people VALUES (?, ?, ?, ?, ?)", rows)
    con.close()
    (tmp_path / "spec.yaml").write_text("source: people\nattributes:\n  age: {role: qi, kind: numeric}\n"
                                        "  zip: {role: qi, kind: numeric}\n  sex: qi\n  disease: sensitive\n"
                                        "method: mondrian\nprivacy: {k: 5}\n"
                                        "output: {table: spec_release, replace: true}\n")
    (tmp_path / "key.txt").write_text("0123456789abcdef0123456789abcdef")
    return tmp_path


def _count(db: Path, table: str) -> int | None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        have = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        return con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] if table in have else None
    finally:
        con.close()


# --- 1. a closed stdout ------------------------------------------------------------------------------

def _code_to_devnull(cwd: Path, argv: list[str]) -> int:
    """The command's own exit code, its output going nowhere (the reference a closed pipe must keep)."""
    return subprocess.run([sys.executable, "-m", "anonydb", *argv], cwd=cwd, env=ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=300).returncode


def _closed_pipe(cwd: Path, argv: list[str], buffered: bool) -> tuple[int, str]:
    """Run with stdout a pipe whose reader is gone before the command writes a byte (deterministic:
    every write meets EPIPE). Returns (exit code, stderr)."""
    env = {**ENV, "PYTHONUNBUFFERED": "" if buffered else "1"}
    p = subprocess.Popen([sys.executable, "-m", "anonydb", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    p.stdout.close()
    err = p.stderr.read()
    return p.wait(timeout=300), err


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
def test_a_closed_stdout_keeps_the_exit_code_and_the_release(folder, buffered):
    n = len(_people())
    anon = ["anonymize", "people.csv", "--qi", QI, "--sensitive", "disease", "--k", "5", "--db", "db.duckdb",
            "--out", "rel", "--quiet"]
    code, err = _closed_pipe(folder, anon, buffered)
    assert (code, err) == (0, "")
    assert _count(folder / "db.duckdb", "rel") == n  # written, every row

    code, err = _closed_pipe(folder, ["release", "spec.yaml", "--db", "db.duckdb", "--quiet"], buffered)
    assert (code, err) == (0, "")
    assert _count(folder / "db.duckdb", "spec_release") == n

    code, err = _closed_pipe(folder, ["releases", "--db", "db.duckdb"], buffered)
    assert (code, err) == (0, "")

    # a check that holds (the release is 5-anonymous) and one that fails: 0 and 1 stand
    for k, want in (("5", 0), (str(n + 1), 1)):
        argv = ["check", "rel", "--db", "db.duckdb", "--qi", QI, "--sensitive", "disease", "--k", k, "--json"]
        assert _code_to_devnull(folder, argv) == want
        assert _closed_pipe(folder, argv, buffered) == (want, "")


def test_demo_and_help_into_a_closed_pipe(folder):
    argv = ["demo", "--rows", "3000"]
    want = _code_to_devnull(folder, argv)
    assert _closed_pipe(folder, argv, buffered=False) == (want, "")
    assert _closed_pipe(folder, ["--help"], buffered=False) == (0, "")


def test_head_in_a_shell_pipeline(folder):
    """As a user types it: PIPESTATUS holds anonydb's code, stderr says nothing of the pipe."""
    script = ("anonydb anonymize people.csv --qi age,zip,sex --sensitive disease --k 5 --db db.duckdb --out rel "
              "--quiet | true; a=${PIPESTATUS[0]}; anonydb release spec.yaml --db db.duckdb --quiet | head -1 "
              ">/dev/null; b=${PIPESTATUS[0]}; anonydb check rel --db db.duckdb --qi age,zip,sex --k 5 --json "
              "| head -c 10 >/dev/null; c=${PIPESTATUS[0]}; echo $a $b $c")
    bindir = str(Path(sys.executable).parent)
    r = subprocess.run(["bash", "-c", script], cwd=folder, capture_output=True, text=True, timeout=300,
                       env={**ENV, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "PYTHONUNBUFFERED": "1"})
    assert r.stdout.split() == ["0", "0", "0"] and r.stderr == ""
    assert _count(folder / "db.duckdb", "rel") == len(_people())


# --- 2. a mistyped --db ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["check", "people", "--qi", QI, "--k", "2"],
    ["risk", "people", "--qi", QI],
    ["report", "people", "--qi", QI, "--k", "2"],
    ["report", "spec.yaml"],
    ["releases"],
    ["releases", "--drop", "1"],
    ["releases", "--json"],
    ["evaluate", "people", "--qi", QI, "--sensitive", "disease"],
    ["tradeoff", "people.csv", "--qi", QI, "--sensitive", "disease", "--setting", "mondrian:k=5"],
    ["audit", "people", "--source", "people.csv", "--qi", QI, "--sensitive", "disease", "--l", "2"],
], ids=lambda a: "-".join(a[:2]) if a[0] == "releases" or a[1] == "spec.yaml" else a[0])
def test_a_missing_database_is_refused_and_not_created(folder, monkeypatch, capsys, argv):
    monkeypatch.chdir(folder)
    assert main([*argv, "--db", "nothere.duckdb"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no database at that path" in err and "nothere.duckdb" in err, err
    assert not [p.name for p in folder.iterdir() if p.name.startswith("nothere")]


def test_releases_of_an_existing_database_still_run(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    assert main(["releases", "--db", "db.duckdb"]) == 0
    assert "no releases in the ledger" in capsys.readouterr().out


# --- 3. --max-groups ---------------------------------------------------------------------------------

def test_max_groups_governs_the_text(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rows = [(i, 30 + i, 10000 + i % 7, "MF"[i % 2], "flu") for i in range(30)]  # 30 singleton groups
    _write_csv(tmp_path / "t.csv", rows)
    base = ["check", "t.csv", "--qi", QI, "--k", "2"]

    assert main([*base, "--max-groups", "12"]) == 1
    out = capsys.readouterr().out
    assert out.count("group [") == 12 and "... 18 more violating groups" in out

    assert main(base) == 1  # the text's default
    out = capsys.readouterr().out
    assert out.count("group [") == 5 and "... 25 more violating groups" in out

    assert main([*base, "--max-groups", "30"]) == 1  # all of them: nothing more to say
    out = capsys.readouterr().out
    assert out.count("group [") == 30 and "more violating groups" not in out

    import json

    assert main([*base, "--json"]) == 1  # the JSON's default
    assert len(json.loads(capsys.readouterr().out)["verdicts"][0]["violations"]) == 20

    assert main(["check", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "violating groups listed per model (default 5 in the text, 20 with --json)" in help_text


# --- 4. a pseudonymized person key -------------------------------------------------------------------

def test_pseudonymized_person_key_names_person(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    argv = ["anonymize", "people.csv", "--qi", QI, "--sensitive", "disease", "--k", "5", "--out", "r",
            "--db", "db.duckdb", "--pseudonymize", "pid", "--secret-file", "key.txt"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--person pid" in err and "looks like a person key (150 values on 600 rows)" \
        in err, err
    assert _count(folder / "db.duckdb", "r") is None
    assert main([*argv, "--person", "pid", "--untracked", "--quiet"]) == 0  # as the hint says
    capsys.readouterr()
    assert _count(folder / "db.duckdb", "r") == 600


# --- 5. persons closed -------------------------------------------------------------------------------

def test_the_display_keeps_done_within_its_total():
    p = Progress(enabled=True, live=False, tick=None)
    p.facts = {"total": 2000, "done": -3611, "unit": "persons closed"}
    assert p.text().startswith("0 of 2,000 persons closed")
    p.facts["done"] = 2501
    assert p.text().startswith("2,000 of 2,000 persons closed")
    p.facts["done"] = 130
    assert p.text().startswith("130 of 2,000 persons closed")


@pytest.mark.parametrize("plan", ["levelwise", "recursive"])
@pytest.mark.parametrize("how", ["persons", "persons-no-sensitive", "varying"])
def test_a_person_level_run_counts_within_its_total(plan, how):
    from anonydb.datasets import synthetic_visits
    from anonydb.methods import anonymize

    eng = anonydb.connect()
    synthetic_visits(eng, persons=400, seed=7)
    rows = eng.fetch_rows("SELECT patient_id FROM visits")[1]
    records, persons = len(rows), len({r[0] for r in rows})
    got: list[dict] = []
    kw = {"sensitive": None} if how == "persons-no-sensitive" else {"sensitive": "diagnosis", "l": 2}
    with events.listening(got.append):
        anonymize("visits", "age,sex,zip3", out="o", engine=eng, k=5, person="patient_id",
                                  progress=got.append, plan=plan, varying=how == "varying", **kw)
    (rounds,) = [g for g in got if g.get("phase") == "rounds"]
    total = records if how == "varying" else persons  # records when a person's records may split
    assert rounds["total"] == total
    done = [g["done"] for g in got if "done" in g]
    assert done and all(0 <= d <= total for d in done) and done == sorted(done) and done[-1] == total


# --- 6. risk -----------------------------------------------------------------------------------------

def test_risk_of_an_empty_table_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write_csv(tmp_path / "empty.csv", [])
    con = duckdb.connect("db.duckdb")
    con.execute("CREATE TABLE empty (pid INTEGER, age INTEGER, zip INTEGER, sex VARCHAR, disease VARCHAR)")
    con.close()
    for argv in (["risk", "empty.csv", "--qi", QI], ["risk", "empty", "--db", "db.duckdb", "--qi", QI,
                                                     "--fraction", "0.1"]):
        assert main(argv) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1 and "is empty" in out.err, out


def _spanning(persons: int = 60) -> list[tuple]:
    """Each person has two records in two different classes (ages a year apart)."""
    rnd = random.Random(11)
    out = []
    for p in range(persons):
        age, z, s = 20 + rnd.randrange(15), 10000 + rnd.randrange(3), rnd.choice("MF")
        out += [(p, age, z, s, "flu"), (p, age + 1, z, s, "cold")]
    return out


@pytest.mark.parametrize("data,person", [("records", None), ("persons", "pid"), ("spanning", "pid")])
@pytest.mark.parametrize("fraction", [1, 0.5, 0.1])
def test_fraction_always_gives_the_population_line(tmp_path, monkeypatch, capsys, data, person, fraction):
    monkeypatch.chdir(tmp_path)
    rows = _spanning() if data == "spanning" else _people()
    _write_csv(tmp_path / "t.csv", rows)
    argv = ["risk", "t.csv", "--qi", QI, "--fraction", str(fraction)] + (["--person", person] if person else [])
    assert main(argv) == 0
    out = capsys.readouterr().out
    # the units the population models count: records, or (person, class) pairs
    units = len(rows) if person is None else len({(r[0], *r[1:4]) for r in rows})
    big_n = int(units / fraction + 0.5)
    assert f"population uniqueness (N = {big_n}, f = {fraction:g}):" in out, out


def test_a_population_smaller_than_the_pairs_says_why(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write_csv(tmp_path / "t.csv", _spanning(60))  # 60 persons, 120 (person, class) pairs
    assert main(["risk", "t.csv", "--qi", QI, "--person", "pid", "--population-size", "100"]) == 0
    out = capsys.readouterr().out
    assert "population uniqueness (N" not in out
    assert "population uniqueness not computed: the population of 100 persons is smaller than the 120 (person, " \
           "class) pairs" in out


# --- 7. an export killed around its commit -----------------------------------------------------------

DRIVER = """
import os, signal, sys
from anonydb.engines.duckdb import DuckDBEngine
when, at = os.environ["KILL_AT"].split(":")
real, seen = DuckDBEngine._execute, [0]
def execute(self, sql, params=None):
    commit = sql.strip().upper() == "COMMIT"
    seen[0] += commit
    if commit and when == "before" and seen[0] == int(at):
        os.kill(os.getpid(), signal.SIGKILL)
    out = real(self, sql, params)
    if commit and when == "after" and seen[0] == int(at):
        os.kill(os.getpid(), signal.SIGKILL)
    return out
DuckDBEngine._execute = execute
from anonydb.workflow.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _table(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT * FROM rel ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_export_killed_around_its_commit_never_lags_the_table(tmp_path):
    _write_csv(tmp_path / "people.csv", _people())
    (tmp_path / "drive.py").write_text(DRIVER)

    def run(folder: Path, k: str, kill: str = "never:0") -> int:
        argv = ["people.csv", "--qi", QI, "--sensitive", "disease", "--k", k, "--seed", "3", "--db", "db.duckdb",
                "--out", "rel", "--export", "rel.csv", "--replace", "--quiet"]
        return subprocess.run([sys.executable, str(tmp_path / "drive.py"), "anonymize", *argv], cwd=folder,
                              env={**ENV, "KILL_AT": kill}, capture_output=True, timeout=300).returncode

    # the two releases, each run to its end in a folder of its own
    ref = {}
    for k in ("5", "12"):
        d = tmp_path / f"ref{k}"
        d.mkdir()
        (d / "people.csv").write_bytes((tmp_path / "people.csv").read_bytes())
        assert run(d, k) == 0
        ref[k] = (_table(d / "db.duckdb"), (d / "rel.csv").read_bytes())
    assert ref["5"][0] != ref["12"][0] and ref["5"][1] != ref["12"][1]

    seen = set()
    for when in ("before", "after"):
        for at in range(1, 6):
            d = tmp_path / f"{when}{at}"
            d.mkdir()
            (d / "people.csv").write_bytes((tmp_path / "people.csv").read_bytes())
            assert run(d, "5") == 0  # the old release, table and file
            code = run(d, "12", f"{when}:{at}")
            rows, data = _table(d / "db.duckdb"), (d / "rel.csv").read_bytes()
            table = "old" if rows == ref["5"][0] else "new" if rows == ref["12"][0] else "other"
            file = "old" if data == ref["5"][1] else "new" if data == ref["12"][1] else "other"
            assert (table, file) in {("old", "old"), ("new", "new"), ("old", "new")}, (when, at, code)
            assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]
            seen.add((table, file, code == -signal.SIGKILL))
            if code == 0:  # fewer commits than `at`: the run ended on its own
                break
    # the kills fell on both sides of the swap's commit: the file went first
    assert ("old", "new", True) in seen and ("new", "new", True) in seen
