"""Fail closed on names the data does not hold (issue 62), and two record-owner gaps.

1. An option that names a value or a column must name one the source holds: ``--conf-bound
   Slaes=0.1`` (Sales misspelled) bounded no group and the release was reported verified with
   conf(Slaes) = 0. The same for (X,Y)-privacy's bounds, ``--allowed``, ``--protected``, a
   ``--guard`` column (found up front, in one line, not by a BinderException after Mondrian ran)
   and its guarding nodes, ``--qid-sets``, and a sensitive hierarchy that does not cover its column
   (named by the user's table and column, not a scratch one). Each: exit 2, one line naming the
   option and the missing name, nothing written.
2. Anatomy with ``--person`` refuses a QI that varies within a person, as Mondrian does.
3. Mondrian's KL-divergence by persons: the same number as by rows when each person has one
   record, both equal to a plain-Python oracle over the (QI tuple, sensitive value) cells; with
   several records a person, the oracle over the persons' distinct (person, value) facts.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from anonydb.workflow.cli import main

OCC = ["Sales", "Tech", "Craft", "Admin"]


def _rows(n: int = 120, seed: int = 3) -> list[tuple]:
    """(pid unique, age 20..45, sex, occupation, g: a guarding node or NULL, num: a DOUBLE value)."""
    rng = random.Random(seed)
    return [(i, rng.randint(20, 45), rng.choice("MF"), rng.choice(OCC), rng.choice(["Sales", "Tech", None]),
             rng.choice([1.0, 2.5])) for i in range(n)]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """db.duckdb: census(pid, age, sex, occupation, g, num), visits (persons with several records, age
    varying within person 0), and hierarchies for occupation: one covering it (with a leaf the data
    does not hold) and one missing Admin."""
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE census(pid INTEGER, age INTEGER, sex VARCHAR, occupation VARCHAR, g VARCHAR, num DOUBLE)")
    con.executemany("INSERT INTO census VALUES (?, ?, ?, ?, ?, ?)", _rows())
    con.execute("CREATE TABLE visits AS SELECT pid % 40 AS pid, CASE WHEN pid % 40 = 0 THEN age ELSE 30 END AS age, "
                "sex, occupation FROM census")
    con.close()
    (tmp_path / "occ.csv").write_text("Sales;Business;*\nAdmin;Business;*\nTech;Trade;*\nCraft;Trade;*\n"
                                      "Farming;Trade;*\n")
    (tmp_path / "occ_part.csv").write_text("Sales;Business;*\nTech;Trade;*\nCraft;Trade;*\n")
    return tmp_path


def _tables(folder: Path) -> dict[str, str]:
    con = duckdb.connect(str(folder / "db.duckdb"), read_only=True)
    try:
        return {t: str(con.execute(f'SELECT count(*), sum(hash(x)) FROM "{t}" AS x').fetchone())
                for (t,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()}
    finally:
        con.close()


def _refused(work: Path, capsys, args: list[str]) -> str:
    """Run the CLI; assert exit 2, one error line, no traceback, nothing written; the line."""
    before = _tables(work)
    capsys.readouterr()
    code = main([*args, "--db", str(work / "db.duckdb")])
    out, err = capsys.readouterr()
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("anonydb: error: "), err
    assert "_adb_" not in lines[0] and "__" not in lines[0], lines[0]
    assert _tables(work) == before
    return lines[0]


A = ["anonymize", "census", "--qi", "age,sex", "--sensitive", "occupation", "--k", "5", "--out", "rel"]
FD = ["--method", "fulldomain", "--hierarchy", "sex={w}/sex.csv", "--hierarchy", "age={w}/age.csv"]
TYPO = "--conf-bound: the sensitive column occupation holds no value 'Slaes'"
#: | : the hierarchy's path lies between the two parts
UNCOVERED = ("the hierarchy for column 'occupation' of 'census' (|occ_part.csv) does not cover 1 value(s) (not among "
             "its leaves): 'Admin'")

CASES = [
    ("conf-bound-mondrian", A + ["--conf-bound", "Slaes=0.1"], TYPO),
    ("conf-bound-among-others", A + ["--conf-bound", "Sales=0.9,*=0.9,Slaes=0.1"], TYPO),
    ("conf-bound-fulldomain", A + ["--conf-bound", "Slaes=0.1"] + FD, TYPO),
    ("conf-bound-check", ["check", "census", "--qi", "age,sex", "--sensitive", "occupation", "--conf-bound",
                          "Slaes=0.1"], TYPO),
    ("xy-privacy", A + ["--xy-k", "3", "--conf-bound", "Slaes=0.1"], TYPO),
    ("conf-bound-person", A + ["--person", "pid", "--conf-bound", "Slaes=0.1"], TYPO),
    ("numeric-text-form", ["check", "census", "--qi", "age,sex", "--sensitive", "num", "--conf-bound", "2.50=0.5"],
     "--conf-bound: the sensitive column num holds no value '2.50'"),
    ("allowed", A + ["--l", "2", "--l-variant", "pd-recursive", "--c", "3", "--allowed", "Sales,Tehc"],
     "--allowed: the sensitive column occupation holds no value 'Tehc'"),
    ("protected", A + ["--l", "2", "--l-variant", "npd-recursive", "--c", "3", "--protected", "Tehc", "--c2", "0.1"],
     "--protected: the sensitive column occupation holds no value 'Tehc'"),
    ("guard-column-missing", A + ["--guard", "nope", "--breach", "0.5"],
     "--guard: guard column 'nope' not found in census"),
    ("guard-column-missing-fulldomain", A + ["--guard", "nope", "--breach", "0.5"] + FD,
     "--guard: guard column 'nope' not found in census"),
    ("guard-column-is-a-qi", A + ["--guard", "age", "--breach", "0.5"],
     "guard column 'age' is an input of personalized privacy and is never published"),
    ("guard-column-is-the-person", A + ["--guard", "pid", "--breach", "0.5", "--person", "pid"],
     "--guard: guard column 'pid' must be a column of census other than"),
    ("guard-value-not-a-value", A + ["--guard", "sex", "--breach", "0.5", "--qi", "age"],
     "--guard: guarding node 'F' (column 'sex') is not a value of 'occupation'"),
    ("guard-value-not-a-node", A + ["--guard", "sex", "--breach", "0.5", "--qi", "age", "--hierarchy",
                                    "occupation={w}/occ.csv"],
     "--guard: guarding node 'F' (column 'sex') is not a node below the root of 'occupation'"),
    ("qid-sets", A + ["--multi-k", "3", "--qid-sets", "age;sexx"], "--qid-sets: 'sexx' is not a quasi-identifier"),
    ("sensitive-hierarchy-not-covering", A + ["--t", "0.5", "--hierarchy", "occupation={w}/occ_part.csv"],
     UNCOVERED),
    ("sensitive-hierarchy-not-covering-guard", A + ["--guard", "g", "--breach", "0.9", "--hierarchy",
                                                    "occupation={w}/occ_part.csv"],
     UNCOVERED),
    ("sensitive-hierarchy-not-covering-fulldomain",
     A + ["--t", "0.5", "--hierarchy", "occupation={w}/occ_part.csv"] + FD, UNCOVERED),
    ("anatomy-person-qi-varies", ["anonymize", "visits", "--qi", "age,sex", "--sensitive", "occupation", "--l", "2",
                                  "--method", "anatomy", "--person", "pid", "--out", "ana"],
     "quasi-identifier 'age' varies within person 0 ('pid')"),
]


def _hierarchies(work: Path) -> None:
    (work / "age.csv").write_text("".join(f"{a};{a // 10 * 10}s;*\n" for a in range(20, 46)))
    (work / "sex.csv").write_text("M;*\nF;*\n")


@pytest.mark.parametrize("case, args, message", CASES, ids=[c[0] for c in CASES])
def test_a_name_the_data_does_not_hold_is_refused(work: Path, capsys, case, args, message):
    _hierarchies(work)  # a case that narrows the QIs gives --qi again: the last one counts
    line = _refused(work, capsys, [a.format(w=work) for a in args])
    assert all(part in line for part in message.split("|")), line


def test_names_the_data_holds_are_accepted(work: Path, capsys):
    """The same options, spelled right: the release is written and each template is reported."""
    _hierarchies(work)
    db = ["--db", str(work / "db.duckdb")]
    assert main(A + ["--conf-bound", "Sales=0.9,*=0.9"] + db) == 0
    assert "conf(Sales)" in capsys.readouterr().out
    # a DOUBLE's values as DuckDB writes them as text
    assert main(["check", "census", "--qi", "age,sex", "--sensitive", "num", "--conf-bound", "2.5=1,1.0=1"] + db) == 0
    assert main(A[:-1] + ["rel_g", "--guard", "g", "--breach", "1", "--hierarchy",
                          f"occupation={work}/occ.csv"] + db) == 0  # a leaf no record holds (Farming) is fine
    assert main(A[:-1] + ["rel_a", "--l", "2", "--l-variant", "pd-recursive", "--c", "3", "--allowed", "Sales"]
                + db) == 0
    assert set(_tables(work)) >= {"rel", "rel_g", "rel_a"}


def test_python_check_refuses_a_typo():
    import anonydb
    from anonydb.errors import InputError

    con = duckdb.connect()
    con.execute("CREATE TABLE p AS SELECT * FROM (VALUES (1, 'Sales'), (2, 'Tech')) AS t(a, occupation)")
    eng = anonydb.connect(con)
    with pytest.raises(InputError, match="conf_bound=: the sensitive column occupation holds no value 'Slaes'"):
        anonydb.check("p", ["a"], "occupation", engine=eng, conf_bound={"Slaes": 0.1})
    assert anonydb.check("p", ["a"], "occupation", engine=eng, conf_bound={"Sales": 1}).holds


def test_spec_refuses_a_typo(work: Path, capsys):
    (work / "spec.yaml").write_text(
        f"source: census\ndatabase: {work / 'db.duckdb'}\nattributes:\n  age: {{role: qi, kind: numeric}}\n"
        "  sex: qi\n  occupation: sensitive\nmethod: mondrian\n"
        "privacy: {k: 5, confidence_bound: {Slaes: 0.1}}\noutput: {table: rel_spec}\n")
    before = _tables(work)
    code = main(["release", str(work / "spec.yaml")])
    err = capsys.readouterr().err
    assert code == 2 and "holds no value 'Slaes'" in err and "confidence_bound" in err, err
    assert _tables(work) == before


def test_hierarchical_check_on_a_database_opened_read_only(work: Path, capsys):
    """``check`` opens the database read-only; hierarchical t-closeness materialized the hierarchy as
    a table there (a CREATE refused by DuckDB): now a temporary one."""
    code = main(["check", "census", "--qi", "age,sex", "--sensitive", "occupation", "--t", "0.9", "--hierarchy",
                 f"occupation={work}/occ.csv", "--db", str(work / "db.duckdb")])
    out, err = capsys.readouterr()
    assert code == 0 and "t-closeness (hierarchical EMD)" in out, err


# -- 3. KL-divergence by persons -------------------------------------------------------------------------
def kl_oracle(facts: list[tuple], boxes: list[tuple[range, set]]) -> float:
    """KL(p || p^) over the (age, sex, value) cells of ``facts`` (one per row, or per distinct
    (person, value)), p^ the release's reconstruction under the uniform assumption: a class's count
    of a value over all facts, spread evenly over the (age, sex) tuples of the table's domain its box
    (ages lo..hi, a set of sexes) stands for [Kifer & Gehrke 2006; spec-closeness-slicing 6.6]."""
    n = len(facts)
    ages, sexes = {f[0] for f in facts}, {f[1] for f in facts}
    cells = Counter(facts)

    def box(age, sex):
        (b,) = [b for b in boxes if age in b[0] and sex in b[1]]
        return b

    per_class = Counter((boxes.index(box(a, x)), v) for a, x, v in facts)
    kl = 0.0
    for (a, x, v), c in cells.items():
        b = box(a, x)
        volume = len([y for y in ages if y in b[0]]) * len([y for y in sexes if y in b[1]])
        p_hat = per_class[(boxes.index(b), v)] / n / volume
        kl += c / n * math.log((c / n) / p_hat)
    return kl


def _boxes(con, table: str) -> list[tuple[range, set]]:
    return [(range(lo, hi + 1), set(s.strip("{}").split(", ")))
            for lo, hi, s in con.execute(f"SELECT DISTINCT age_lo, age_hi, sex FROM {table}").fetchall()]


@pytest.mark.parametrize("extra", [[], ["--l", "2"]], ids=["k", "k-and-l"])
def test_kl_by_persons_equals_kl_by_rows_with_one_record_a_person(work: Path, capsys, extra):
    db = ["--db", str(work / "db.duckdb")]
    assert main(A[:-1] + ["by_rows", "--seed", "1"] + extra + db) == 0
    rows_out = capsys.readouterr().out
    assert main(A[:-1] + ["by_persons", "--seed", "1", "--person", "pid"] + extra + db) == 0
    persons_out = capsys.readouterr().out
    kl_rows = float(rows_out.split("KL ")[1].split()[0])
    kl_persons = float(persons_out.split("KL ")[1].split()[0])
    con = duckdb.connect(str(work / "db.duckdb"), read_only=True)
    try:
        facts = [(a, s, o) for _, a, s, o, _, _ in _rows()]
        want_rows, want_persons = kl_oracle(facts, _boxes(con, "by_rows")), kl_oracle(facts, _boxes(con, "by_persons"))
    finally:
        con.close()
    assert want_rows == pytest.approx(want_persons, abs=1e-12)  # the same classes either way
    assert kl_rows == pytest.approx(want_rows, abs=1e-4)  # printed to four places
    assert kl_persons == pytest.approx(want_persons, abs=1e-4)
    assert kl_persons == kl_rows


def test_kl_by_persons_counts_each_persons_distinct_values(work: Path):
    """Several records a person, some repeating a value: the KL over the persons' distinct
    (QI tuple, value) facts, computed by the oracle from the source rows."""
    import anonydb
    from anonydb.methods.mondrian import anonymize

    con = duckdb.connect()
    rng = random.Random(11)
    people = [(p, rng.randint(20, 45), rng.choice("MF")) for p in range(60)]
    rows = [(p, a, s, rng.choice(OCC[: 1 + p % 4])) for p, a, s in people for _ in range(1 + p % 3)]
    con.execute("CREATE TABLE v(pid INTEGER, age INTEGER, sex VARCHAR, occupation VARCHAR)")
    con.executemany("INSERT INTO v VALUES (?, ?, ?, ?)", rows)
    r = anonymize("v", ["age", "sex"], "occupation", out="rel", engine=anonydb.connect(con), k=4, person="pid", seed=2)
    facts = [(a, s, o) for _, a, s, o in sorted(set(rows))]
    assert len(facts) < len(rows)  # some persons repeat a value
    assert r.utility["kl"] == pytest.approx(kl_oracle(facts, _boxes(con, "rel")), abs=1e-12)
