"""Fail closed, as a scheduler sees it: bad input and unsafe requests through the real command.

Each case runs ``anonydb`` in a subprocess against a folder holding a CSV, a hierarchy and a
DuckDB database with a source table and an earlier release. It asserts the exit code (0 holds,
1 violated, 2 any error), a message substring, one line on stderr and no traceback, and that
every file and every table is unchanged afterwards (checksums before and after), unless the
case is one that writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

QI = "age,sex,zip"


def _rows(n: int = 240, seed: int = 7) -> list[tuple]:
    rng = random.Random(seed)
    diseases = ["flu", "cancer", "ulcer", "asthma", "gastritis"]
    return [(i, f"name{i}", rng.randint(20, 69), rng.choice("MF"), f"476{rng.randint(0, 9)}{rng.randint(0, 9)}",
             rng.choice(diseases), rng.choice(["a", "b", "c"]), rng.randint(1000, 9000), "US") for i in range(n)]


HEADER = "person_id,name,age,sex,zip,disease,hobby,salary,country"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """people.csv, zip_hierarchy.csv (masking), db.duckdb with table people and release rel."""
    rows = _rows()
    (tmp_path / "people.csv").write_text(HEADER + "\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    zips = sorted({r[4] for r in rows})
    (tmp_path / "zip_hierarchy.csv").write_text("\n".join(f"{z};{z[:4]}*;{z[:3]}**;*" for z in zips) + "\n")
    (tmp_path / "nomatch_hierarchy.csv").write_text("x1;x*;*\nx2;x*;*\n")
    db = tmp_path / "db.duckdb"
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE people AS SELECT * FROM read_csv({str(tmp_path / 'people.csv')!r}, header = true)")
    con.execute("CREATE TABLE rel AS SELECT 1 AS x")
    con.execute("CREATE TABLE other AS SELECT range AS i FROM range(50)")
    # several visits per person (QIs constant per person), one with a NULL person, one varying QI
    con.execute("CREATE TABLE visits AS SELECT p.*, v AS month FROM people AS p, range(1 + p.person_id % 3) AS r(v)")
    con.execute("CREATE TABLE visits_null AS SELECT * FROM visits UNION ALL "
                "SELECT NULL, 'x', 30, 'M', '47600', 'flu', 'a', 1000, 'US', 0")
    con.execute("CREATE TABLE dx AS SELECT person_id AS member, disease FROM people UNION ALL SELECT 999999, 'flu'")
    con.close()
    (tmp_path / "short.key").write_text("short\n")
    return tmp_path


def cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "anonydb", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file but the database, and an order-free checksum of every table in it."""
    out = {}
    for f in sorted(folder.rglob("*")):
        if f.is_file() and not f.name.startswith("db.duckdb"):
            out[str(f.relative_to(folder))] = hashlib.sha256(f.read_bytes()).hexdigest()
    db = folder / "db.duckdb"
    if db.exists():
        con = duckdb.connect(str(db), read_only=True)
        try:
            for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
                out[f"table:{t}"] = str(con.execute(f'SELECT count(*), sum(hash(x)) FROM "{t}" AS x').fetchone())
        finally:
            con.close()
    return out


def one_error_line(r: subprocess.CompletedProcess) -> str:
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert "Traceback" not in r.stderr, r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("anonydb: error: "), r.stderr
    return lines[0]


M = ["anonymize", "people.csv", "--qi", QI, "--sensitive", "disease", "--k", "5"]

# (case id, arguments, expected exit code, a substring of the one error line)
#: a person-level release of the visits table
V = ["anonymize", "visits", "--qi", "age,sex", "--sensitive", "disease", "--k", "2", "--out", "r2", "--db", "db.duckdb"]

CASES = [
    ("out-exists", M + ["--out", "rel", "--db", "db.duckdb"], 2, "'rel' already exists; choose another name, or "
                                                                     "replace it with --replace"),
    ("out-is-source-even-with-replace", ["anonymize", "people", "--qi", QI, "--sensitive", "disease", "--k", "5",
                                         "--out", "people", "--db", "db.duckdb", "--replace"], 2,
     "would replace its own source"),
    ("export-exists", M + ["--out", "r2", "--export", "zip_hierarchy.csv"], 2, "already exists"),
    ("export-is-input-even-with-replace", M + ["--out", "r2", "--export", "people.csv", "--replace"], 2,
     "is an input of this run"),
    ("export-is-a-directory", M + ["--out", "r2", "--export", "folder.csv"], 2, "is a directory"),
    ("export-bad-suffix", M + ["--out", "r2", "--export", "r2.json"], 2, "must end in .csv or .parquet"),
    ("db-is-a-directory", M + ["--out", "r2", "--db", "."], 2, "is a directory, not a DuckDB database"),
    ("db-missing-folder", M + ["--out", "r2", "--db", "nowhere/x.duckdb"], 2, "does not exist"),
    ("db-is-a-csv", M + ["--out", "r2", "--db", "people.csv"], 2, "is not a DuckDB database"),
    ("check-db-missing", ["check", "people", "--qi", QI, "--k", "2", "--db", "absent.duckdb"], 2,
     "no database at that path"),
    ("missing-column", M[:3] + ["age,sex,postcode"] + M[4:] + ["--out", "r2", "--db", "db.duckdb"], 2,
     "column 'postcode' not found"),
    ("keep-missing-column", M + ["--out", "r2", "--db", "db.duckdb", "--keep", "hobbyx"], 2,
     "kept column 'hobbyx' (--keep) not found"),
    ("keep-breaks-k", M + ["--out", "r2", "--db", "db.duckdb", "--keep", "salary"], 2,
     "the kept column(s) salary break k-anonymity"),
    ("keep-is-a-qi", M + ["--out", "r2", "--db", "db.duckdb", "--keep", "age"], 2,
     "given both as a kept column and as the quasi-identifier"),
    ("identifier-repeats", M + ["--out", "r2", "--db", "db.duckdb", "--identifiers", "hobby"], 2,
     "identifier 'hobby' repeats"),
    ("k-above-rows", M[:-1] + ["1000", "--out", "r2", "--db", "db.duckdb"], 2, "1000"),
    ("bad-l-type", M + ["--out", "r2", "--db", "db.duckdb", "--l", "three"], 2, "invalid float value: 'three'"),
    ("missing-required-option", ["anonymize", "people.csv", "--qi", QI, "--k", "5"], 2,
     "the following arguments are required: --out"),
    ("numeric-kind-contradicted", ["check", "people.csv", "--qi", "zip,name", "--k", "1", "--numeric", "name"], 2,
     "numeric attribute 'name' holds non-numeric values: 'name0'"),
    ("hierarchy-covers-nothing-check", ["check", "people.csv", "--qi", "zip", "--k", "1", "--hierarchy",
                                        "zip=nomatch_hierarchy.csv"], 2, "zip"),
    ("hierarchy-for-unknown-column", M + ["--out", "r2", "--db", "db.duckdb", "--hierarchy",
                                          "hobby=zip_hierarchy.csv"], 2, "'hobby'"),
    ("hierarchy-not-covering-a-numeric-qi", M + ["--out", "r2", "--db", "db.duckdb", "--hierarchy", "age=zip_hierarchy.csv"],
     2, "'age'"),
    ("report-html-is-a-directory", ["report", "people", "--qi", QI, "--k", "2", "--db", "db.duckdb", "--html", "."],
     2, "--html"),
    ("ragged-csv", ["check", "ragged.csv", "--qi", "a", "--k", "1"], 2, "ragged.csv"),
    ("spec-output-exists", ["release", "spec.yaml"], 2, "already exists"),
    # record owners (issue 48): each one line, exit 2, nothing written
    ("person-missing", V + ["--person", "nope"], 2, "person column 'nope' (--person) not found in visits"),
    ("person-null", ["anonymize", "visits_null", "--qi", "age,sex", "--k", "2", "--out", "r2", "--db", "db.duckdb",
                     "--person", "person_id"], 2, "person column 'person_id' is NULL on 1 rows of visits_null"),
    ("person-is-a-qi", V + ["--person", "age"], 2, "'age' is given both as the person column and as a quasi-identifier"),
    ("person-is-the-sensitive", V + ["--person", "disease"], 2,
     "'disease' is given both as the person column and as the sensitive attribute"),
    ("person-qi-varies", ["anonymize", "visits", "--qi", "age,month", "--k", "2", "--out", "r2", "--db", "db.duckdb",
                          "--person", "person_id"], 2, "quasi-identifier 'month' varies within person 1"),
    ("person-relaxed", V + ["--person", "person_id", "--relaxed"], 2, "record owners need strict cuts"),
    ("person-slicing", V + ["--person", "person_id", "--method", "slicing", "--l", "2"], 2,
     "--method slicing judges rows, not persons"),
    ("secret-too-short", V + ["--person", "person_id", "--pseudonymize", "person_id", "--secret-file", "short.key"], 2,
     "is 5 bytes: a pseudonym key needs at least 16"),
    ("pseudonym-is-a-qi", V + ["--person", "person_id", "--pseudonymize", "age"], 2,
     "'age' is given both as a pseudonym and as a quasi-identifier"),
    ("linked-dangling-keys", ["release", "linked.yaml"], 2, "foreign key dx.member dangles on 1 rows"),
    ("check-person-null", ["check", "visits_null", "--qi", "age", "--k", "2", "--db", "db.duckdb", "--person",
                           "person_id"], 2, "is NULL on 1 rows"),
    ("check-holds", ["check", "people", "--qi", "sex", "--k", "2", "--db", "db.duckdb"], 0, None),
    ("check-violated", ["check", "people", "--qi", QI, "--k", "2", "--db", "db.duckdb"], 1, None),
]


@pytest.mark.parametrize("case, args, code, message", CASES, ids=[c[0] for c in CASES])
def test_bad_input(work: Path, case, args, code, message):
    (work / "folder.csv").mkdir()
    (work / "ragged.csv").write_text("a,b\n1,2\n3,4,5,6\n7,8\n")
    (work / "spec.yaml").write_text(
        "source: people.csv\nattributes:\n  age: {role: qi, kind: numeric}\n  sex: qi\n  disease: sensitive\n"
        "method: mondrian\nprivacy: {k: 5}\noutput: {table: x, format: csv, path: zip_hierarchy.csv}\n")
    (work / "linked.yaml").write_text(
        "source: people\ndatabase: db.duckdb\nattributes:\n  person_id: person\n  age: {role: qi, kind: numeric}\n"
        "  sex: qi\nlinked:\n  dx: {key: member, table: dx_rel}\nmethod: mondrian\nprivacy: {k: 5}\n"
        "output: {table: people_rel}\n")
    before = snapshot(work)
    r = cli(work, *args)
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    if code == 2:
        line = one_error_line(r)
        assert message in line, line
    else:
        assert "Traceback" not in r.stderr
    assert snapshot(work) == before


def test_default_release_drops_unlisted_columns_and_lists_them(work: Path):
    r = cli(work, *M, "--out", "r2", "--db", "db.duckdb", "--identifiers", "person_id")
    assert r.returncode == 0, r.stderr
    assert "not published (no role): person_id, name, hobby, salary, country" in r.stdout
    con = duckdb.connect(str(work / "db.duckdb"), read_only=True)
    cols = [c for c, *_ in con.execute("DESCRIBE r2").fetchall()]
    con.close()
    assert cols == ["eq_class", "age", "age_lo", "age_hi", "sex", "zip", "zip_lo", "zip_hi", "disease"]


def test_keep_publishes_a_column_that_holds_the_model(work: Path):
    r = cli(work, *M, "--out", "r2", "--db", "db.duckdb", "--keep", "country", "--json")
    # country is one value: kept unchanged, the groups over every published column still hold k = 5
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(work / "db.duckdb"), read_only=True)
    smallest = con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM r2 GROUP BY eq_class, age, age_lo, age_hi, "
                           "sex, zip, country)").fetchone()[0]
    con.close()
    assert smallest >= 5


def test_export_replace_replaces_only_the_named_file(work: Path):
    (work / "out.csv").write_text("old\n")
    r = cli(work, *M, "--out", "r2", "--export", "out.csv", "--replace")
    assert r.returncode == 0, r.stderr
    head = (work / "out.csv").read_text().splitlines()[0]
    assert head.split(",")[0] == "eq_class" and "name" not in head
    assert not [f for f in os.listdir(work) if f.endswith(".tmp")]


@contextlib.contextmanager
def held(db: Path, read_only: bool):
    """Another process holding ``db`` open (a writer, or a reader) while the block runs."""
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], "
                               "read_only=sys.argv[2] == '1'); print('ready', flush=True); time.sleep(60)", str(db),
                               "1" if read_only else "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield
    finally:
        holder.kill()
        holder.wait()


def test_database_locked_by_another_writer(work: Path):
    with held(work / "db.duckdb", read_only=False):
        r = cli(work, *M, "--out", "r2", "--db", "db.duckdb")
    assert r.returncode == 2
    assert "database 'db.duckdb' is in use by another process" in one_error_line(r)


def test_check_opens_the_database_read_only(work: Path):
    """A reader elsewhere does not stop check or report: they open the database read-only too."""
    with held(work / "db.duckdb", read_only=True):
        r = cli(work, "check", "people", "--qi", "sex", "--k", "2", "--db", "db.duckdb")
        assert r.returncode == 0, r.stderr
        r = cli(work, "report", "people", "--qi", "sex", "--k", "2", "--db", "db.duckdb", "--json")
        assert r.returncode == 0, r.stderr


def test_sigterm_cleans_up_and_exits_2(work: Path):
    """SIGTERM during a run: the handler unwinds, staging tables go, exit 2 with one line."""
    n = 400_000
    con = duckdb.connect(str(work / "db.duckdb"))
    con.execute(f"CREATE TABLE big AS SELECT (range % 70) + 18 AS age, CASE WHEN range % 2 = 0 THEN 'M' ELSE 'F' END "
                f"AS sex, (hash(range) % 90000)::VARCHAR AS zip, (hash(range * 7) % 20)::VARCHAR AS disease "
                f"FROM range({n})")
    con.close()
    before = snapshot(work)
    p = subprocess.Popen([sys.executable, "-m", "anonydb", "anonymize", "big", "--qi", QI, "--sensitive", "disease",
                          "--k", "5", "--l", "2", "--out", "bigrel", "--db", "db.duckdb", "--plan", "levelwise"],
                         cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    time.sleep(3.0)
    p.terminate()
    out, err = p.communicate(timeout=120)
    if p.returncode == 0:  # finished before the signal: nothing to interrupt on this machine
        pytest.skip("the run finished within 3 s, before SIGTERM")
    assert p.returncode == 2, err
    assert "interrupted by SIGTERM" in err and "Traceback" not in err
    assert snapshot(work) == before
