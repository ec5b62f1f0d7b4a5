"""The SQL script (issue 27): the real DuckDB CLI (the duckdb-cli package) reads what `anonydb sql`
wrote and checks tables with no Python in its process. Every verdict, achieved value and count
equals anonydb.check's on the same tables (which Python reads afterwards from the CLI's database
file); bad arguments stop the query with one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import anonydb
from anonydb.datasets import _census_context
from anonydb.hierarchy import EnumeratedHierarchy
from anonydb.models import AlphaKAnonymity, DeltaDisclosure, KAnonymity, LDiversity, TCloseness
from anonydb.sqlgen import Templates, ident, literal
from anonydb.methods.mondrian import anonymize
from anonydb.sqlscript import script
from anonydb.workflow.cli import main as cli_main

from conftest import ROOT, examples, need_shared
from release_checks import class_failures

CLI = shutil.which("duckdb", path=os.path.dirname(sys.executable)) or shutil.which("duckdb")


def run_cli(db: Path | None, sql: str, check: bool = True) -> subprocess.CompletedProcess:
    """One DuckDB CLI session (no Python in it) running ``sql`` on ``db``."""
    assert CLI, "the DuckDB CLI is not installed: pip install duckdb-cli (the test extra has it)"
    args = [CLI, "-batch", "-bail"] + ([str(db)] if db else [":memory:"])
    r = subprocess.run(args, input=sql, capture_output=True, text=True, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def assert_one_line_error(sql: str, message: str) -> None:
    """The CLI session fails with one line holding ``message`` and prints no row."""
    r = run_cli(None, sql, check=False)
    err = r.stderr.strip()
    assert r.returncode != 0 and r.stdout.strip() == "" and err.count("\n") == 0 and message in err, err


def rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def script_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("sql") / "anonydb.sql"
    assert cli_main(["sql", "--out", str(p)]) == 0
    return p


def test_packaged_script_is_the_rendered_one():
    """The wheel's anonydb/sql/anonydb.sql is what `anonydb sql` writes (regenerate it with
    `anonydb sql --out sql/anonydb.sql --replace`)."""
    assert (ROOT / "sql" / "anonydb.sql").read_text(encoding="utf-8") == script()


def test_cli_refuses_to_overwrite(tmp_path, capsys):
    p = tmp_path / "a.sql"
    p.write_text("keep me")
    assert cli_main(["sql", "--out", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists" in err and p.read_text() == "keep me"
    assert cli_main(["sql", "--out", str(p), "--replace"]) == 0
    assert p.read_text() == script()


OCC = "adult_hierarchy_occupation.csv"

#: (id, macro call with {tbl}, {qis}, {sa}, {hier}; the Python model; its achieved key)
CASES = [
    ("k", "anonydb_check_k({tbl}, {qis}, 5)", lambda: KAnonymity(5), "k"),
    ("k1", "anonydb_check_k({tbl}, {qis}, 1)", lambda: KAnonymity(1), "k"),
    ("l_distinct", "anonydb_check_l_distinct({tbl}, {qis}, {sa}, 3)", lambda: LDiversity(3, "distinct"), "l"),
    ("l_entropy", "anonydb_check_l_entropy({tbl}, {qis}, {sa}, 2.5)", lambda: LDiversity(2.5, "entropy"), "l"),
    ("l_probabilistic", "anonydb_check_l_probabilistic({tbl}, {qis}, {sa}, 1.5)",
     lambda: LDiversity(1.5, "probabilistic"), "l"),
    ("l_recursive", "anonydb_check_l_recursive({tbl}, {qis}, {sa}, 2, 0.75)",
     lambda: LDiversity(2, "recursive", 0.75), "l"),
    ("t_equal", "anonydb_check_t_equal({tbl}, {qis}, {sa}, 0.15)", lambda: TCloseness(0.15, "equal"), "t"),
    ("t_ordered", "anonydb_check_t_ordered({tbl}, {qis}, {sa}, 0.1)", lambda: TCloseness(0.1, "ordered"), "t"),
    ("alpha_k", "anonydb_check_alpha_k({tbl}, {qis}, {sa}, 0.6, 2)", lambda: AlphaKAnonymity(0.6, 2), "alpha"),
    ("delta", "anonydb_check_delta({tbl}, {qis}, {sa}, 1.2)", lambda: DeltaDisclosure(1.2), "delta"),
]
HIER_CASE = ("t_hierarchical", "anonydb_check_t_hierarchical({tbl}, {qis}, {sa}, 0.12, {hier})",
             lambda: TCloseness(0.12, "hierarchical"), "t")

#: (table, QI subsets, sensitive attribute, hierarchy of it)
TABLES = [
    ("adult", [["sex", "race"], ["age", "sex"], ["education", "marital-status", "workclass"]], "occupation", True),
    ("census", [["sex", "marital_status"], ["zip", "race"], ["age"]], "occupation", False),
    ("census", [["sex", "race", "marital_status"]], "income", False),
]


def _expected(db: Path, table: str, qis: list[str], sa: str, case, hier_path: Path | None, person=None):
    _, _, model, key = case
    con = duckdb.connect(str(db))  # the check writes scratch tables (dropped after)
    try:
        hier = {sa: EnumeratedHierarchy.from_arx(hier_path)} if case[0] == "t_hierarchical" else None
        m = model()
        rep = anonydb.check(table, qis, None if isinstance(m, KAnonymity) else sa, models=[m], engine=con,
                            hierarchies=hier, max_groups=0, person=person)
    finally:
        con.close()
    return rep.verdicts[0], key


def _compare(got: dict, v, key: str) -> None:
    assert got["holds"] == v.holds
    assert got["groups"] == v.groups
    assert got["violating_groups"] == v.violating_groups
    assert got["violating_rows"] == v.violating_rows
    want = v.achieved[key]
    if isinstance(want, float) and want == float("inf"):
        assert got["achieved"] in ("inf", "Infinity", float("inf")) or got["achieved"] is None or got["achieved"] > 1e308
        return
    if isinstance(want, (Fraction, int)) and got["achieved_exact"] is not None:
        assert Fraction(got["achieved_exact"]) == Fraction(want)
    else:
        assert got["achieved_exact"] is None
        assert got["achieved"] == pytest.approx(float(want), rel=1e-12)


@pytest.fixture(scope="module")
def checked(script_file, tmp_path_factory):
    """One CLI session: load Adult and a synthetic census with NULLs, run every case; returns the
    database file, the CLI's rows by case id, and the cases."""
    shared = need_shared()
    adult = shared / "adult"
    db = tmp_path_factory.mktemp("clidb") / "t.duckdb"
    census = Templates("duckdb").render("synthetic_census.sql.j2", **_census_context(4000, 11, 0.05)).sql
    lines = [f".read {script_file}",
             f"CREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))});",
             f"CREATE TABLE census AS {census};",
             f"CREATE TABLE occ AS FROM anonydb_hierarchy({literal(str(adult / OCC))});",
             ".mode jsonlines"]
    cases = []
    for ti, (table, qi_sets, sa, has_hier) in enumerate(TABLES):
        for qi in qi_sets:
            for case in CASES + ([HIER_CASE] if has_hier else []):
                cid = f"{ti}:{','.join(qi)}:{case[0]}"
                call = case[1].format(tbl=literal(table), qis="[" + ", ".join(literal(q) for q in qi) + "]",
                                      sa=literal(sa), hier=literal("occ"))
                lines.append(f"SELECT {literal(cid)} AS id, * FROM {call};")
                cases.append((cid, table, qi, sa, case))
    out = run_cli(db, "\n".join(lines) + "\n")
    got = {r["id"]: r for r in rows(out.stdout)}
    return db, got, cases, adult / OCC


def test_every_check_equals_python(checked):
    db, got, cases, hier = checked
    assert len(got) == len(cases)
    holds = set()
    for cid, table, qi, sa, case in cases:
        v, key = _expected(db, table, qi, sa, case, hier)
        _compare(got[cid], v, key)
        holds.add(v.holds)
    assert holds == {True, False}  # both verdicts occur among the cases


def test_worked_values_on_adult(checked):
    """Values known independently of the macros: Adult's (sex, race) classes (10 of them), the
    largest count of any occupation in them, and l = 1 where one class holds one occupation only."""
    db, got, _, _ = checked
    con = duckdb.connect(str(db), read_only=True)
    n_classes, min_size = con.execute(
        "SELECT count(*), min(n) FROM (SELECT count(*) n FROM adult GROUP BY sex, race)").fetchone()
    min_distinct = con.execute(
        "SELECT min(d) FROM (SELECT count(DISTINCT occupation) d FROM adult GROUP BY sex, race)").fetchone()[0]
    con.close()
    assert got["0:sex,race:k"]["groups"] == n_classes == 10
    assert got["0:sex,race:k1"]["achieved"] == min_size
    assert got["0:sex,race:l_distinct"]["achieved"] == min_distinct


@pytest.mark.parametrize("call, message", [
    ("anonydb_check_k('t', ['a', 'zz'], 2)", "anonydb: unknown column zz in t"),
    ("anonydb_check_l_distinct('t', ['a'], 'nope', 2)", "anonydb: unknown sensitive column nope in t"),
    ("anonydb_check_k('t', ['a'], 0)", "anonydb: k must be an integer >= 1, got 0"),
    ("anonydb_check_k('t', ['a'], 2.5)", "anonydb: k must be an integer >= 1, got 2.5"),
    ("anonydb_check_t_equal('t', ['a'], 's', 1.5)", "anonydb: t must lie in [0, 1]"),
    ("anonydb_check_t_equal('t', ['a'], 's', -0.1)", "anonydb: t must lie in [0, 1]"),
    ("anonydb_check_l_distinct('t', ['a', 's'], 's', 2)", "anonydb: the sensitive attribute s is also a quasi-identifier"),
    ("anonydb_check_t_hierarchical('t', ['a'], 's', 0.2, 'h')", "anonydb: the hierarchy h does not cover the value z of s"),
    ("anonydb_check_k('t', [], 2)", "anonydb: give at least one quasi-identifier"),
])
def test_bad_arguments_one_line(script_file, call, message):
    sql = (f".read {script_file}\nCREATE TABLE t AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (2, 'z')) v(a, s);\n"
           "CREATE TABLE h AS SELECT * FROM (VALUES ('x', '*'), ('y', '*')) v(c0, c1);\n"
           f".mode jsonlines\nFROM {call};\n")
    r = run_cli(None, sql, check=False)
    assert r.returncode != 0 and r.stdout.strip() == ""
    err = r.stderr.strip()
    assert err.count("\n") == 0 and message in err, err


def test_empty_table(script_file):
    sql = (f".read {script_file}\nCREATE TABLE t (a INTEGER, s VARCHAR);\n.mode jsonlines\n"
           "FROM anonydb_check_k('t', ['a'], 2);\nFROM anonydb_check_k('t', ['zz'], 2);\n")
    r = run_cli(None, sql, check=False)
    assert rows(r.stdout)[0]["groups"] == 0 and rows(r.stdout)[0]["holds"] is True
    assert "anonydb: unknown column zz in t" in r.stderr


values = st.one_of(st.none(), st.integers(0, 3))


@settings(max_examples=examples(4, slow=24), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(values, values, st.sampled_from([None, "p", "q", "r"])), min_size=1, max_size=25))
def test_random_tables_equal_python(script_file, tmp_path_factory, data):
    """Small random tables with NULLs in the QIs and the sensitive attribute: every check equals
    anonydb.check's."""
    db = tmp_path_factory.mktemp("rnd") / "r.duckdb"
    vals = ", ".join(f"({literal(a)}::INTEGER, {literal(b)}::INTEGER, {literal(s)}::VARCHAR)" for a, b, s in data)
    lines = [f".read {script_file}", f"CREATE TABLE r AS SELECT * FROM (VALUES {vals}) v(a, b, s);", ".mode jsonlines"]
    for case in CASES:
        call = case[1].format(tbl="'r'", qis="['a', 'b']", sa="'s'", hier="NULL")
        lines.append(f"SELECT {literal(case[0])} AS id, * FROM {call};")
    got = {r["id"]: r for r in rows(run_cli(db, "\n".join(lines) + "\n").stdout)}
    for case in CASES:
        v, key = _expected(db, "r", ["a", "b"], "s", case, None)
        _compare(got[case[0]], v, key)


@settings(max_examples=examples(4, slow=24), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(st.integers(0, 5), values, st.sampled_from([None, "p", "q", "r"])), min_size=1,
                     max_size=25))
def test_random_tables_by_persons_equal_python(script_file, tmp_path_factory, data):
    """Every check with person := 'pid' equals anonydb.check(person=) (itself judged against the
    brute-force record-owner oracle, test_person_check.py); the persons' QI a is constant per person
    (a function of pid), b varies per record; k's value is the oracle's smallest group in persons."""
    db = tmp_path_factory.mktemp("rndp") / "r.duckdb"
    vals = ", ".join(f"({p}::INTEGER, {p % 3}::INTEGER, {literal(b)}::INTEGER, {literal(s)}::VARCHAR)"
                     for p, b, s in data)
    lines = [f".read {script_file}", f"CREATE TABLE r AS SELECT * FROM (VALUES {vals}) v(pid, a, b, s);",
             ".mode jsonlines"]
    for case in CASES:
        call = case[1].format(tbl="'r'", qis="['a', 'b']", sa="'s'", hier="NULL")[:-1] + ", person := 'pid')"
        lines.append(f"SELECT {literal(case[0])} AS id, * FROM {call};")
    got = {r["id"]: r for r in rows(run_cli(db, "\n".join(lines) + "\n").stdout)}
    for case in CASES:
        v, key = _expected(db, "r", ["a", "b"], "s", case, None, person="pid")
        _compare(got[case[0]], v, key)
    groups: dict = {}
    for p, b, _ in data:
        groups.setdefault((p % 3, b), set()).add(p)
    assert Fraction(got["k"]["achieved_exact"]) == min(len(x) for x in groups.values())


def test_person_bad_arguments_one_line(script_file, tmp_path):
    lines = [f".read {script_file}",
             "CREATE OR REPLACE TABLE t AS SELECT * FROM (VALUES (1, 2, 'x'), (NULL, 3, 'y')) v(pid, a, s);"]
    for call, message in [("anonydb_check_k('t', ['a'], 2, person := 'zz')", "unknown person column zz in t"),
                          ("anonydb_check_k('t', ['a', 'pid'], 2, person := 'pid')", "person column pid is also a quasi"),
                          ("anonydb_check_l_distinct('t', ['a'], 'pid', 2, person := 'pid')", "also the sensitive"),
                          ("anonydb_check_k('t', ['a'], 2, person := 'pid')", "is NULL on 1 rows")]:
        r = run_cli(tmp_path / "p.duckdb", "\n".join(lines + [f"FROM {call};"]) + "\n", check=False)
        err = [x for x in r.stderr.splitlines() if "anonydb:" in x]
        assert len(err) == 1 and message in err[0], (call, r.stderr)


GEN_QIS = ["age", "sex", "education", "marital-status"]


@pytest.mark.parametrize("levels", [[3, 0, 2, 0], [2, 0, 1, 1], [4, 0, 3, 0]])
def test_generalize_equals_python_and_refuses_at_k_plus_one(script_file, tmp_path, levels):
    """anonydb_generalize in the CLI: the same rows (as a multiset) as anonydb.generalize in Python
    with the same hierarchies and levels, only the listed columns; at the achieved k and l it
    releases, at k + 1 (or l + 1) it stops with one line and creates no table."""
    adult = need_shared() / "adult"
    names = {"age": "h_age", "education": "h_edu", "marital-status": "h_mar"}
    files = {"age": "adult_hierarchy_age.csv", "education": "adult_hierarchy_education.csv",
             "marital-status": "adult_hierarchy_marital-status.csv"}
    H = {q: EnumeratedHierarchy.from_arx(adult / f) for q, f in files.items()}
    con = duckdb.connect()
    con.execute(f"CREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))})")
    anonydb.generalize(anonydb.connect(con), "adult", dict(zip(GEN_QIS, levels)), H, out="py",
                       keep=GEN_QIS + ["occupation", "salary-class"])
    # the macro verifies over every published column but the sensitive one: the QIs and the kept salary-class
    rep = anonydb.check("py", GEN_QIS + ["salary-class"], "occupation", engine=con, k=1, l=1)
    k, l = rep["k-anonymity"].achieved["k"], rep["l-diversity"].achieved["l"]
    want = con.execute("SELECT " + ", ".join(f'"{c}"' for c in GEN_QIS + ["occupation", "salary-class"])
                       + " FROM py").fetchall()
    con.close()

    hier = "[" + ", ".join(literal(names[q]) if q in names else "NULL" for q in GEN_QIS) + "]"
    qis = "[" + ", ".join(literal(q) for q in GEN_QIS) + "]"

    def call(kk, ll):
        return (f"anonydb_generalize('adult', {qis}, {hier}, {levels}, sa := 'occupation', "
                f"keep := ['salary-class'], k := {kk}, l := {ll})")

    db = tmp_path / "g.duckdb"
    loads = "\n".join(f"CREATE TABLE {names[q]} AS FROM anonydb_hierarchy({literal(str(adult / files[q]))});"
                      for q in files)
    run_cli(db, f".read {script_file}\nCREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))});\n"
                f"{loads}\nCREATE TABLE rel AS FROM {call(k, l)};\n")
    for kk, ll, msg in ((k + 1, l, f"anonydb: the release is not {k + 1}-anonymous:"),
                        (k, l + 1, f"anonydb: the release is not distinct {l + 1}-diverse:")):
        r = run_cli(db, f".read {script_file}\nCREATE TABLE bad AS FROM {call(kk, ll)};\n", check=False)
        assert r.returncode != 0 and r.stderr.strip().count("\n") == 0 and msg in r.stderr, r.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert [c[0] for c in con.execute("DESCRIBE rel").fetchall()] == GEN_QIS + ["occupation", "salary-class"]
        got = con.execute("SELECT * FROM rel").fetchall()
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'bad'").fetchone()[0] == 0
    finally:
        con.close()
    key = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
    assert got != want or len(got) < 2  # the rows are shuffled, not in the source's order


@pytest.mark.parametrize("call, message", [
    ("anonydb_generalize('t', ['a', 'zz'], ['h', NULL], [1, 0])", "anonydb: unknown column zz in t"),
    ("anonydb_generalize('t', ['a'], ['h'], [1], sa := 'nope')", "anonydb: unknown column nope in t"),
    ("anonydb_generalize('t', ['a'], ['h'], [1], k := 0)", "anonydb: k must be an integer >= 1, got 0"),
    ("anonydb_generalize('t', ['a'], ['h'], [3])", "anonydb: level 3 of a is above the root of h"),
    ("anonydb_generalize('t', ['a'], [NULL], [1])", "anonydb: a level above 0 is given for a, which has no hierarchy"),
    ("anonydb_generalize('t', ['s'], ['h'], [1])", "anonydb: the hierarchy h does not cover s = z"),
    ("anonydb_generalize('t', ['a'], ['h', NULL], [1])", "anonydb: qis, hierarchies and levels must have the same length"),
    ("anonydb_generalize('t', ['a'], ['h'], [1], l := 2)", "anonydb: l-diversity needs the sensitive attribute"),
    ("anonydb_generalize('t', ['a'], ['h'], [1], k := 4)", "anonydb: the release is not 4-anonymous: 1 classes are smaller (the smallest has 3 rows)"),
    # a kept column is published as it is: the classes are verified with it, and s splits them
    ("anonydb_generalize('t', ['a'], ['h'], [1], k := 2, keep := ['s'])",
     "anonydb: the release is not 2-anonymous: 3 classes are smaller (the smallest has 1 rows) over the "
     "quasi-identifiers and the kept columns s; raise the levels or keep fewer columns"),
])
def test_generalize_bad_arguments_one_line(script_file, call, message):
    sql = (f".read {script_file}\nCREATE TABLE t AS SELECT * FROM (VALUES ('x', 'x'), ('y', 'y'), ('y', 'z')) v(a, s);\n"
           "CREATE TABLE h AS SELECT * FROM (VALUES ('x', 'xy', '*'), ('y', 'xy', '*')) v(c0, c1, c2);\n"
           f"CREATE TABLE out AS FROM {call};\n")
    assert_one_line_error(sql, message)


@pytest.mark.parametrize("page, least", [("docs/sql-only.md", 12), ("README.md", 5)])
def test_docs_only_sql_session_is_true(tmp_path, page, least):
    """The "Only SQL" session of docs/sql-only.md (and the README's shorter one), replayed statement
    by statement in the real DuckDB CLI on a database file (the macros persist in it): every output
    line is the one the page shows."""
    adult = need_shared() / "adult"
    text = (ROOT / page).read_text()
    block = text.split("## Only SQL", 1)[1].split("```sql\n", 1)[1].split("```", 1)[0]
    for f in adult.iterdir():
        (tmp_path / f.name).symlink_to(f)
    assert cli_main(["sql", "--out", str(tmp_path / "anonydb.sql")]) == 0
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("--> "):
            steps[-1][1].append(line[4:])
        elif line.strip() and not line.startswith("--"):
            steps.append((line, []))
    assert len(steps) >= least
    db = tmp_path / "adult.duckdb"
    for stmt, want in steps:
        if stmt.startswith(".mode"):
            continue
        r = subprocess.run([CLI, "-batch", "-csv", str(db), "-c", stmt], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300)
        got = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()]
        assert got == want, (stmt, got)
        assert (r.returncode != 0) == any("Error" in w for w in want), stmt


ADULT7 = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass"]
CENSUS_Q = ["age", "sex", "zip", "marital_status", "hours_per_week"]
MONDRIAN_CASES = [
    ("adult", ADULT7, "occupation", dict(k=10, l=3, t=0.2), []),
    ("adult", ["age", "education", "sex"], None, dict(k=25), []),
    ("census", CENSUS_Q, "occupation", dict(k=5, l=2), []),
    ("adult", ["age", "sex"], "occupation", dict(k=1, l=1), ["salary-class"]),
    ("census", ["age", "race", "workclass"], "income", dict(k=8, t=0.3, distance="equal"), []),
]


def _sql_list(xs):
    return "[" + ", ".join(literal(x) for x in xs) + "]"


def _mondrian_call(table, qis, sa, params, keep):
    args = [literal(table), _sql_list(qis)] + ([literal(sa)] if sa else [])
    args += [f"{k} := {v}" for k, v in params.items() if k != "distance"] + ([f"keep := {_sql_list(keep)}"] if keep else [])
    return f"anonydb_mondrian({', '.join(args)})"


def test_mondrian_equals_python_and_is_verified_independently(script_file, tmp_path):
    """anonydb_mondrian in the real CLI: the same release as anonydb's Python Mondrian with the same
    models (every class's published labels, sensitive and kept values, with their counts; the same
    number of classes), only the listed columns, every group of the published columns meeting the
    models by the plain-Python oracle (release_checks.class_failures)."""
    adult = need_shared() / "adult"
    db = tmp_path / "m.duckdb"
    census = Templates("duckdb").render("synthetic_census.sql.j2", **_census_context(20000, 5, 0.05)).sql
    lines = [f".read {script_file}", f"CREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))});",
             f"CREATE TABLE census AS {census};"]
    for i, (table, qis, sa, params, keep) in enumerate(MONDRIAN_CASES):
        lines.append(f"CREATE TABLE rel{i} AS FROM {_mondrian_call(table, qis, sa, params, keep)};")
    run_cli(db, "\n".join(lines) + "\n")
    con = duckdb.connect(str(db))
    try:
        eng = anonydb.connect(con)
        for i, (table, qis, sa, params, keep) in enumerate(MONDRIAN_CASES):
            cols = [c[0] for c in con.execute(f"DESCRIBE rel{i}").fetchall()]
            assert cols == ["eq_class"] + qis + keep + ([sa] if sa else []), cols
            py = anonymize(table, qis, sa, out=f"py{i}", engine=eng, keep=keep, seed=1, **params)
            sel = ", ".join(f'"{c}"' for c in qis + keep + ([sa] if sa else []))
            got = con.execute(f"SELECT {sel}, count(*) FROM rel{i} GROUP BY ALL").fetchall()
            want = con.execute(f"SELECT {sel}, count(*) FROM py{i} GROUP BY ALL").fetchall()
            key = lambda r: tuple((v is None, str(v)) for v in r)  # noqa: E731
            assert sorted(got, key=key) == sorted(want, key=key), (i, len(got), len(want))
            n, classes = con.execute(f"SELECT count(*), count(DISTINCT eq_class) FROM rel{i}").fetchone()
            assert n == con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] and classes == py.classes
            # judged by the plain-Python oracle (release_checks.class_failures), not anonydb.check,
            # over the groups of every published column but the sensitive one
            classes = defaultdict(list)
            for *tup, v in con.execute(f"SELECT {', '.join(ident(c) for c in qis + keep)}, "
                                       f"{ident(sa) if sa else 'NULL'} FROM rel{i}").fetchall():
                classes[tuple(tup)].append(v)
            table_sa = [v for vals in classes.values() for v in vals]
            assert class_failures(params, classes, table_sa) == [], i
    finally:
        con.close()


def test_mondrian_kept_column_that_splits_classes_is_refused(script_file, tmp_path):
    """A kept column is published unchanged, so the models are verified over it too: one that
    splits classes below k is refused, as the Python Mondrian refuses it."""
    adult = need_shared() / "adult"
    db = tmp_path / "k.duckdb"
    call = _mondrian_call("adult", ["age", "education", "sex"], None, dict(k=25), ["salary-class"])
    r = run_cli(db, f".read {script_file}\nCREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))});\n"
                    f"CREATE TABLE rel AS FROM {call};\n", check=False)
    err = r.stderr.strip()
    assert r.returncode != 0 and err.count("\n") == 0 and "anonydb: the kept column(s) salary-class break" in err, err
    con = duckdb.connect(str(db))
    try:
        with pytest.raises(anonydb.errors.AnonyDBError, match="kept column"):
            anonymize("adult", ["age", "education", "sex"], None, out="py", engine=anonydb.connect(con), k=25,
                      keep=["salary-class"])
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'rel'").fetchone()[0] == 0
    finally:
        con.close()


@pytest.mark.parametrize("call, message", [
    ("anonydb_mondrian('t', ['a', 'zz'], 's', k := 2)", "anonydb: unknown column zz in t"),
    ("anonydb_mondrian('t', ['a'], 'nope', k := 2)", "anonydb: unknown column nope in t"),
    ("anonydb_mondrian('t', ['a'], 's', k := 0)", "anonydb: k must be an integer >= 1, got 0"),
    ("anonydb_mondrian('t', ['a'], 's', k := 2, t := 1.5)", "anonydb: t must lie in [0, 1]"),
    ("anonydb_mondrian('t', ['a'], 's', k := 2, l := 0)", "anonydb: l must be an integer >= 1, got 0"),
    ("anonydb_mondrian('t', ['a'], k := 2, l := 2)", "anonydb: l and t need the sensitive attribute"),
    ("anonydb_mondrian('t', ['a', 's'], 's', k := 2)", "anonydb: the sensitive attribute s is also a quasi-identifier"),
    ("anonydb_mondrian('t', ['a'], 's', k := 9)", "anonydb: infeasible: the whole table of 3 rows is smaller than k = 9"),
    ("anonydb_mondrian('t', ['a'], 's', l := 4)", "anonydb: infeasible: the whole table has 3 distinct values"),
    ("anonydb_mondrian('n', ['a'], k := 1)", "anonydb: a numeric or date quasi-identifier has 1 NULL values"),
    ("anonydb_mondrian('t', [], k := 1)", "anonydb: give at least one quasi-identifier"),
])
def test_mondrian_bad_arguments_one_line(script_file, call, message):
    sql = (f".read {script_file}\nCREATE TABLE t AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (2, 'z')) v(a, s);\n"
           "CREATE TABLE n AS SELECT * FROM (VALUES (1), (NULL)) v(a);\n"
           f"CREATE TABLE out AS FROM {call};\n")
    assert_one_line_error(sql, message)


@settings(max_examples=examples(10, slow=60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(st.integers(0, 9), st.sampled_from([None, "a", "b", "c"]), st.sampled_from(["p", "q", "r", None])),
                     min_size=4, max_size=40),
       k=st.integers(1, 4), l=st.sampled_from([None, 2]))
def test_mondrian_random_tables_equal_python(script_file, tmp_path_factory, data, k, l):
    """Random small tables (a numeric QI, a categorical one with NULLs, a sensitive attribute with
    NULLs): the CLI's release equals the Python Mondrian's, or both refuse the request."""
    db = tmp_path_factory.mktemp("mr") / "r.duckdb"
    vals = ", ".join(f"({a}, {literal(b)}::VARCHAR, {literal(s)}::VARCHAR)" for a, b, s in data)
    params = {"k": k} | ({"l": l} if l else {})
    r = run_cli(db, f".read {script_file}\nCREATE TABLE r AS SELECT * FROM (VALUES {vals}) v(a, b, s);\n"
                    f"CREATE TABLE rel AS FROM {_mondrian_call('r', ['a', 'b'], 's', params, [])};\n", check=False)
    con = duckdb.connect(str(db))
    try:
        try:
            anonymize("r", ["a", "b"], "s", out="py", engine=anonydb.connect(con), seed=1, **params)
        except anonydb.errors.InfeasibleError:
            assert r.returncode != 0 and "anonydb: infeasible" in r.stderr
            return
        assert r.returncode == 0, r.stderr
        got = con.execute("SELECT a, b, s, count(*) FROM rel GROUP BY ALL").fetchall()
        want = con.execute("SELECT a, b, s, count(*) FROM py GROUP BY ALL").fetchall()
        key = lambda x: tuple((v is None, str(v)) for v in x)  # noqa: E731
        assert sorted(got, key=key) == sorted(want, key=key)
    finally:
        con.close()


def test_anatomy_pair_in_sql(script_file, tmp_path):
    """anonydb_anatomy_qit / _st in the real CLI: the ST equals anonydb's Anatomy ST exactly (the
    dealing depends on the bucket sizes only); every group holds >= l records with distinct values;
    the QIT publishes every record's QI values exactly with its group, the group sizes agree with
    the ST, the same key deals the same QIT and another key another one."""
    adult = need_shared() / "adult"
    db = tmp_path / "a.duckdb"
    qis, sa, l = ["age", "sex", "race"], "occupation", 4
    q = _sql_list(qis)

    def qit(key):
        return f"anonydb_anatomy_qit('adult', {q}, {literal(sa)}, {l}, {literal(key)}, keep := ['salary-class'])"

    k1, k2 = "a secret key of 32 characters..", "another secret key, 32 chars...."
    run_cli(db, f".read {script_file}\nCREATE TABLE adult AS FROM read_csv({literal(str(adult / 'adult.csv'))});\n"
                f"CREATE TABLE qit AS FROM {qit(k1)};\nCREATE TABLE qit_again AS FROM {qit(k1)};\n"
                f"CREATE TABLE qit_other AS FROM {qit(k2)};\n"
                f"CREATE TABLE st AS FROM anonydb_anatomy_st('adult', {q}, {literal(sa)}, {l}, {literal(k1)});\n")
    con = duckdb.connect(str(db))
    try:
        from anonydb.methods.anatomy import anatomy

        anatomy("adult", qis, sa, l=l, out="py", engine=anonydb.connect(con), seed=3)
        assert [c[0] for c in con.execute("DESCRIBE qit").fetchall()] == qis + ["salary-class", "group_id"]
        assert con.execute("SELECT * FROM st EXCEPT ALL SELECT * FROM py_st").fetchall() == []
        assert con.execute("SELECT * FROM py_st EXCEPT ALL SELECT * FROM st").fetchall() == []
        n, g = con.execute("SELECT count(*), count(DISTINCT group_id) FROM qit").fetchone()
        assert n == 30162 and g == 30162 // l
        assert con.execute("SELECT count(*) FROM st GROUP BY group_id HAVING count(*) < ? OR max(count) > 1", [l]).fetchall() == []
        assert con.execute("SELECT age, sex, race, \"salary-class\" FROM qit EXCEPT ALL "
                           "SELECT age, sex, race, \"salary-class\" FROM adult").fetchall() == []
        assert con.execute("SELECT count(*) FROM (SELECT group_id, count(*) n FROM qit GROUP BY 1) a FULL JOIN "
                           "(SELECT group_id, sum(count) n FROM st GROUP BY 1) b USING (group_id) "
                           "WHERE a.n IS DISTINCT FROM b.n").fetchone()[0] == 0
        same = "SELECT * FROM qit EXCEPT ALL SELECT * FROM {}"
        assert con.execute(same.format("qit_again")).fetchall() == []
        assert con.execute(same.format("qit_other")).fetchall() != []
    finally:
        con.close()


@pytest.mark.parametrize("call, message", [
    ("anonydb_anatomy_st('t', ['a'], 's', 4, 'a key of sixteen chars')", "anonydb: Anatomy with l = 4 is infeasible"),
    ("anonydb_anatomy_qit('t', ['a'], 's', 1, 'a key of sixteen chars')", "anonydb: l must be an integer >= 2 for Anatomy"),
    ("anonydb_anatomy_qit('t', ['a'], 's', 2, 'short')", "anonydb: key must be a secret of at least 16 characters"),
    ("anonydb_anatomy_qit('t', ['zz'], 's', 2, 'a key of sixteen chars')", "anonydb: unknown column zz in t"),
    ("anonydb_anatomy_qit('e', ['a'], 's', 2, 'a key of sixteen chars')", "anonydb: e is empty"),
])
def test_anatomy_bad_arguments_one_line(script_file, call, message):
    sql = (f".read {script_file}\nCREATE TABLE t AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (2, 'z'), (3, 'x')) v(a, s);\n"
           "CREATE TABLE e (a INTEGER, s VARCHAR);\n"
           f"CREATE TABLE out AS FROM {call};\n")
    assert_one_line_error(sql, message)


def test_mondrian_by_persons_equals_python(script_file, tmp_path):
    """anonydb_mondrian(..., person := 'patient_id') in the real CLI gives the classes of the Python
    Mondrian with person= (categorical values cut in order), each holding >= k persons and all of a
    person's visits (recounted in Python from the source: the QI tuples name the persons' classes)."""
    from anonydb.datasets import synthetic_visits

    db, csv = tmp_path / "v.duckdb", tmp_path / "visits.csv"
    eng = anonydb.connect()
    synthetic_visits(eng, persons=1500, seed=3)
    src = eng.fetch_rows("SELECT patient_id, age, sex, zip3, diagnosis FROM visits")[1]
    eng.con.execute(f"COPY visits TO {literal(str(csv))} (HEADER)")
    eng.close()
    out = run_cli(None, f".read {script_file}\nCREATE TABLE visits AS FROM read_csv({literal(str(csv))});\n"
                        f"COPY (FROM anonydb_mondrian('visits', ['age', 'sex', 'zip3'], 'diagnosis', k := 8, l := 3, "
                        f"t := 0.3, person := 'patient_id')) TO {literal(str(tmp_path / 'm.csv'))} (HEADER);\n")
    assert out.returncode == 0
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE visits AS FROM read_csv({literal(str(csv))})")
    con.execute(f"CREATE TABLE m AS FROM read_csv({literal(str(tmp_path / 'm.csv'))}, all_varchar = true)")
    anonydb.methods.anonymize("visits", ["age", "sex", "zip3"], "diagnosis", out="p", engine=con, person="patient_id",
                              categorical="order", k=8, l=3, t=0.3)

    def classes(t):
        g: dict = {}
        for r in con.execute(f"SELECT eq_class, age, sex, zip3, diagnosis FROM {t}").fetchall():
            g.setdefault(r[0], []).append(tuple(map(str, r[1:])))
        return sorted(tuple(sorted(v)) for v in g.values())

    assert classes("m") == classes("p")
    assert "patient_id" not in {r[0] for r in con.execute("DESCRIBE m").fetchall()}
    boxes = con.execute("SELECT DISTINCT eq_class, age, sex, zip3 FROM m").fetchall()
    con.close()

    def covers(label, v):
        label = str(label)
        if label.startswith("["):
            lo, hi = (float(x) for x in label[1:-1].split(","))
            return lo <= float(v) <= hi
        if label.startswith("{"):
            return str(v) in [x.strip() for x in label[1:-1].split(",")]
        return label == str(v)

    persons: dict = {}
    for p, age, sex, zip3, _ in src:
        cls = {c for c, a, s_, z in boxes if covers(a, age) and covers(s_, sex) and covers(z, zip3)}
        assert len(cls) == 1
        persons.setdefault(next(iter(cls)), set()).add(p)
    assert min(len(v) for v in persons.values()) >= 8
