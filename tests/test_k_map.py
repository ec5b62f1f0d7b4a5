"""k-map (anonydb.models.k_map) against a public table: the survey's Table II pair (exact counts),
the plain-Python oracle (tests/k_map_oracle.py) on random releases by rows and by persons, and the
releases of the anonymizers that enforce presence (full-domain, Mondrian) judged by the oracle."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb import generalize
from anonydb.errors import InfeasibleError, InputError
from anonydb.hierarchy import Hierarchy
from anonydb.methods.presence import presence_anonymize
from anonydb.presence import check_presence

import k_map_oracle as oracle
from conftest import examples, make_table

SETTINGS = settings(max_examples=examples(20), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

PEOPLE = [("Alice", "Writer", "Female", 30), ("Bob", "Engineer", "Male", 35), ("Cathy", "Writer", "Female", 30),
          ("Doug", "Lawyer", "Male", 38), ("Emily", "Dancer", "Female", 30), ("Fred", "Engineer", "Male", 38),
          ("Gladys", "Dancer", "Female", 30), ("Henry", "Lawyer", "Male", 39), ("Irene", "Dancer", "Female", 32)]
JOB = Hierarchy.from_rows([["Engineer", "Professional", "*"], ["Lawyer", "Professional", "*"],
                           ["Writer", "Artist", "*"], ["Dancer", "Artist", "*"]])


@pytest.fixture
def table_ii(engine):
    """T = Table II(c) (the 3-anonymous patients), P = Table II(b) (the public people) [survey §3.6]."""
    make_table(engine, "people", ["name", "job", "sex", "age"], PEOPLE)
    make_table(engine, "patients", ["job", "sex", "age", "age_lo", "age_hi", "disease"],
               [("Professional", "Male", "[35-40]", 35, 40, d) for d in ("Hepatitis", "Hepatitis", "HIV")]
               + [("Artist", "Female", "[30-35]", 30, 35, d) for d in ("Flu", "HIV", "HIV", "HIV")])
    return engine


def test_survey_table_ii(table_ii):
    """Generalized the same way, P* = Table II(d): Professional/Male/[35-40] holds Bob, Doug, Fred,
    Henry (n_P = 4, n_T = 3) and Artist/Female/[30-35] Alice, Cathy, Emily, Gladys, Irene (n_P = 5,
    n_T = 4): the release is 4-map (though only 3-anonymous), not 5-map."""
    qi = ["job", "sex", "age"]
    r = check_presence("patients", "people", qi, k_map=4, engine=table_ii, hierarchies={"job": JOB})
    v = r.verdicts[0]
    assert (v.model, v.holds, v.achieved, v.groups) == ("k-map", True, {"k": 4}, 2)
    r = check_presence("patients", "people", qi, k_map=5, delta=("3/4", "4/5"), engine=table_ii,
                       hierarchies={"job": JOB})
    dp, km = r.verdicts
    assert dp.holds and not km.holds and km.achieved == {"k": 4}
    assert (km.violating_groups, km.violating_rows) == (1, 4)
    assert km.violations[0].key == {"class": 1, "job": "Professional", "sex": "Male", "age": "[35-40]"}
    assert "4 public individuals are in classes with research records and fewer than 5" in km.note
    assert r.public_outside == 4 and {row["name"] for row in r.public_outside_rows} == {"Bob", "Doug", "Fred", "Henry"}


def test_a_class_without_research_records_passes(engine):
    """A public singleton class that holds no research row is not released: it does not lower k."""
    make_table(engine, "pub", ["x"], [(1,), (1,), (1,), (2,)])
    make_table(engine, "rel", ["x"], [(1,), (1,)])
    v = check_presence("rel", "pub", ["x"], k_map=3, engine=engine).verdicts[0]
    assert v.holds and v.achieved == {"k": 3} and v.groups == 2
    assert not check_presence("rel", "pub", ["x"], k_map=4, engine=engine).holds


# -- random releases against the oracle ------------------------------------------------------------

def x_label(x, level):
    return [str(x), f"{x // 2 * 2}-{x // 2 * 2 + 1}", f"{x // 4 * 4}-{x // 4 * 4 + 3}", "*"][level]


def c_label(c, level):
    return [c, {"a": "ab", "b": "ab", "c": "cd", "d": "cd"}[c], "*"][level]


X_H = Hierarchy.from_rows([[x_label(x, i) for i in range(4)] for x in range(8)])
C_H = Hierarchy.from_rows([[c_label(c, i) for i in range(3)] for c in "abcd"])
HS = {"x": X_H, "c": C_H}


def random_pair(rng, n):
    """P: (pid, x, c) persons; T: a sample of them, each with 1-3 visit records."""
    public = [(f"p{i}", rng.randint(0, 7), rng.choice("abcd")) for i in range(n)]
    members = sorted(rng.sample(range(n), rng.randint(1, n)))
    research = [public[i] + (v,) for i in members for v in range(rng.randint(1, 3))]
    return public, research


@SETTINGS
@given(seed=st.integers(0, 10_000), node=st.tuples(st.integers(0, 3), st.integers(0, 2)), k=st.integers(1, 6))
def test_random_releases_match_the_oracle(engine, seed, node, k):
    """A full-domain release of T checked by rows (one record a person) and by persons (1-3 visit
    records each): the same verdict, as P's rows are persons and a person's records share their QIs."""
    public, research = random_pair(random.Random(seed), random.Random(seed).randint(8, 30))
    for t in ("pub", "priv", "rel_visits", "rel_persons"):
        engine.execute(f"DROP TABLE IF EXISTS {t}")
    make_table(engine, "pub", ["pid", "x", "c"], public)
    make_table(engine, "priv", ["pid", "x", "c", "visit"], research)
    generalize(engine, "priv", {"x": node[0], "c": node[1]}, HS, out="rel_visits")
    engine.execute("CREATE TABLE rel_persons AS SELECT * FROM rel_visits WHERE visit = 0")

    def label(r):
        return x_label(r[1], node[0]), c_label(r[2], node[1])

    want, ok = oracle.achieved(public, research, label), oracle.holds(public, research, label, k)
    bad = oracle.violating(public, research, label, k)
    for person in (None, "pid"):
        rel = "rel_visits" if person else "rel_persons"
        r = check_presence(rel, "pub", ["x", "c"], k_map=k, engine=engine, hierarchies=HS, person=person)
        v = r.verdicts[0]
        assert (v.achieved["k"], v.holds, (v.violating_groups, v.violating_rows)) == (want, ok, bad)
        assert r.public_outside == bad[1]
        if person:
            assert r.persons == len({t[0] for t in research})


def brute_best(public, research, k):
    """Every full-domain node: k-map of P* by the oracle, DM = sum |E|^2 over P*'s classes."""
    best, dm_of = None, {}
    for lx, lc in itertools.product(range(4), range(3)):
        def label(r):
            return x_label(r[1], lx), c_label(r[2], lc)

        if oracle.holds(public, research, label, k):
            dm_of[(lx, lc)] = sum(n * n for n in oracle.class_counts(public, label).values())
    if dm_of:
        low = min(dm_of.values())
        best = {n for n, dm in dm_of.items() if dm == low}
    return best, set(dm_of)


@SETTINGS
@given(seed=st.integers(0, 10_000), k=st.integers(2, 12))
def test_fulldomain_release_is_the_brute_force_optimum(engine, seed, k):
    rng = random.Random(seed)
    public, research = random_pair(rng, rng.randint(10, 30))
    research = sorted({t[:3] for t in research})  # one record a person (rows matched by QI values)
    for t in ("pub", "priv", "rel"):
        engine.execute(f"DROP TABLE IF EXISTS {t}")
    make_table(engine, "pub", ["pid", "x", "c"], public)
    make_table(engine, "priv", ["pid", "x", "c"], research)
    best, ok_nodes = brute_best(public, research, k)
    if best is None:
        with pytest.raises(InfeasibleError):
            presence_anonymize("priv", "pub", ["x", "c"], k_map=k, out="rel", engine=engine, hierarchies=HS, key="pid")
        return
    r = presence_anonymize("priv", "pub", ["x", "c"], k_map=k, out="rel", engine=engine, hierarchies=HS, key="pid")
    node = (r.levels["x"], r.levels["c"])
    assert node in best and r.achieved is None and r.k_map >= k and r.rows == len(research)
    released = engine.fetch_rows("SELECT CAST(x AS VARCHAR), c FROM rel")[1]
    assert sorted(released) == sorted((x_label(t[1], node[0]), c_label(t[2], node[1])) for t in research)
    # monotone: every node above a passing node passes
    for lx, lc in ok_nodes:
        assert all(n in ok_nodes for n in itertools.product(range(lx, 4), range(lc, 3)))


@SETTINGS
@given(seed=st.integers(0, 10_000), k=st.integers(2, 8))
def test_mondrian_release_meets_it_by_the_oracle(engine, seed, k):
    rng = random.Random(seed)
    n = rng.randint(20, 50)
    public = [(rng.randint(0, 30), rng.randint(0, 30)) for _ in range(n)]
    research = [p for p in public if rng.random() < 0.4] or public[:1]
    for t in ("pub", "priv", "rel"):
        engine.execute(f"DROP TABLE IF EXISTS {t}")
    make_table(engine, "pub", ["x", "y"], public)
    make_table(engine, "priv", ["x", "y"], research)
    r = presence_anonymize("priv", "pub", ["x", "y"], k_map=k, out="rel", engine=engine, method="mondrian")
    rel = engine.fetch_rows("SELECT x_lo, x_hi, y_lo, y_hi FROM rel")[1]
    assert len(rel) == r.rows == len(research)
    label = oracle.box_label(sorted(set(rel)))
    assert all(label(t) is not None for t in research)  # every research row lies in its released box
    assert oracle.holds(public, [label(t) and t for t in research], label, k)
    assert r.k_map == oracle.achieved(public, research, label) >= k


def test_infeasible_and_bad_input(table_ii):
    e = table_ii
    e.execute("CREATE TABLE sample AS SELECT job, sex, age FROM people WHERE name IN ('Bob', 'Doug', 'Emily')")
    with pytest.raises(InfeasibleError, match="public table has 9 rows"):
        presence_anonymize("sample", "people", ["job", "sex", "age"], k_map=10, out="x", engine=e, method="mondrian",
                           hierarchies={"job": JOB})
    with pytest.raises(InputError, match="k of k-map must be an integer >= 1"):
        check_presence("sample", "people", ["job"], k_map=0, engine=e)
    with pytest.raises(InputError, match="give delta .* or k_map"):
        check_presence("sample", "people", ["job"], engine=e)
    v = check_presence("sample", "people", ["job"], k_map=10, engine=e).verdicts[0]
    assert not v.holds and "exceeds the public table's 9 rows" in v.note
    assert not e.exists("x")
    r = presence_anonymize("sample", "people", ["job", "sex", "age"], k_map=4, delta=(0, "1/2"), out="x", engine=e,
                           method="mondrian", hierarchies={"job": JOB})
    assert r.k_map >= 4 and r.achieved[1] <= 0.5
    assert "delta-presence and k-map (mondrian)" in r.format()


@pytest.mark.parametrize("method", ["fulldomain", "mondrian"])
def test_kept_research_columns(engine, method):
    """k-map publishes the research attributes beside the generalized QIs (keep=); each released row
    carries its own private row's value. delta-presence refuses kept columns."""
    rng = random.Random(7)
    public = [(f"p{i}", rng.randint(0, 7), rng.choice("abcd")) for i in range(40)]
    research = [p + (f"dx{i % 3}", i) for i, p in enumerate(public) if i % 3 == 0]
    make_table(engine, "pub", ["pid", "x", "c"], public)
    make_table(engine, "priv", ["pid", "x", "c", "dx", "n"], research)
    r = presence_anonymize("priv", "pub", ["x", "c"], k_map=4, out="rel", engine=engine, method=method,
                           hierarchies=HS, key="pid", keep=["dx", "n"], seed=3)
    assert r.kept == ["dx", "n"] and r.dropped == ["pid"] and "kept unchanged at your request: dx, n" in r.format()
    got = engine.fetch_rows("SELECT n, dx FROM rel ORDER BY n")[1]
    assert got == [(t[4], t[3]) for t in research]
    with pytest.raises(InputError, match="delta-presence releases only the generalized QIs"):
        presence_anonymize("priv", "pub", ["x", "c"], delta=(0, 1), k_map=2, out="rel2", engine=engine, keep="dx")
    with pytest.raises(InputError, match="'x' is not a column of the private table priv other than"):
        presence_anonymize("priv", "pub", ["x", "c"], k_map=2, out="rel2", engine=engine, keep="x", hierarchies=HS)


def test_cli_spec_and_report(tmp_path, capsys):
    """`anonydb check/anonymize --public --k-map`, a spec's `k_map` with its `public` table, and the
    spec's report re-checking the release against the public table."""
    import json

    from anonydb.workflow.cli import main
    from anonydb.workflow.jobs import run_spec
    from anonydb.workflow.spec import load_spec

    rng = random.Random(5)
    public = [(f"p{i}", rng.randint(20, 60), rng.choice("MF")) for i in range(80)]
    (tmp_path / "pub.csv").write_text("pid,age,sex\n" + "".join(f"{p},{a},{s}\n" for p, a, s in public))
    (tmp_path / "priv.csv").write_text("pid,age,sex,dx\n" + "".join(
        f"{p},{a},{s},{'flu' if i % 2 else 'hiv'}\n" for i, (p, a, s) in enumerate(public) if i % 4 == 0))
    pub, priv = str(tmp_path / "pub.csv"), str(tmp_path / "priv.csv")
    assert main(["check", priv, "--qi", "age,sex", "--public", pub, "--k-map", "2"]) == 1  # raw: unique ages
    assert "FAILS  k-map (k=2): achieved k = 1" in capsys.readouterr().out
    db = str(tmp_path / "r.duckdb")
    assert main(["anonymize", priv, "--qi", "age,sex", "--sensitive", "dx", "--public", pub, "--k-map", "5",
                 "--method", "mondrian", "--out", "rel", "--db", db, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["k_map"] >= 5 and out["verification"]["holds"]
    assert main(["check", "rel", "--qi", "age,sex", "--public", pub, "--k-map", "5", "--db", db]) == 0
    for argv, msg in ((["--k-map", "5"], "give the public table with --public"),
                      (["--public", pub, "--k-map", "5", "--k", "2"], "k-map (--public) is checked on its own; drop --k"),
                      (["--public", pub], "give --delta MIN,MAX (e.g. --delta 0.05,0.15) or --k-map K")):
        assert main(["check", priv, "--qi", "age,sex"] + argv) == 2
        assert msg in capsys.readouterr().err
    spec = tmp_path / "s.yaml"
    spec.write_text("source: priv.csv\npublic: pub.csv\nattributes: {pid: identifier, age: qi, sex: qi, dx: sensitive}\n"
                    "method: mondrian\nprivacy: {k_map: 6}\noutput: {table: km, replace: true}\n"
                    f"database: {tmp_path / 's.duckdb'}\nreport: {{json: rep.json}}\n")
    rel = run_spec(str(spec))
    assert rel.holds and rel.result.k_map >= 6 and rel.kept == ["dx"] and "pid" in rel.dropped
    assert [c for c, _ in rel.engine.columns("km")] == ["age", "sex", "dx", "age_lo", "age_hi", "eq_class"] or \
        {"age", "sex", "dx", "eq_class"} <= {c for c, _ in rel.engine.columns("km")}
    rep = json.loads((tmp_path / "rep.json").read_text())
    assert rep["holds"] and rep["verdicts"][0]["model"] == "k-map"
    rel.engine.close()
    assert main(["report", str(spec), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"][0]["achieved"]["k"] >= 6
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: priv.csv\nattributes: {age: qi, sex: qi}\nmethod: anatomy\nprivacy: {k_map: 6, k: 2}\n"
                   "output: {table: km}\n")
    with pytest.raises(InputError) as e:
        load_spec(str(bad))
    for msg in ("give the public table (public:", "on its own; drop k", "made by mondrian or fulldomain"):
        assert msg in str(e.value)
