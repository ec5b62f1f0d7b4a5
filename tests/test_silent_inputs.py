"""Fail closed: bad input gives a clear one-line error naming the problem, is never silently ignored,
and anonydb's internal names (scratch tables, ``_adb_*`` columns, ``class_id``) never reach users.

1. evaluate: a hierarchy that covers none / not all of its column's values; QI hierarchies too.
2. slicing: every given hierarchy is validated against its column; one for another column is an error.
3. check: the same for its hierarchies (t-closeness named the scratch column ``_adb_sa`` before).
4. write_report / ``anonydb report --html``: a directory or a missing folder is an InputError naming
   the path and --html; writes are atomic (a failure leaves the old report and no temporary file).
5. delta-presence, t-closeness, evaluate: outputs and errors speak the user's names.
"""

from __future__ import annotations

import json
import os

import pytest

import anonydb
from anonydb.workflow.cli import main
from anonydb.errors import InputError
from anonydb.workflow.evaluate import evaluate
from anonydb.hierarchy import Hierarchy
from anonydb.methods import anatomy, slicing
from anonydb.presence import check_presence
from anonydb.workflow.reporting import write_report

from conftest import make_table, need_shared

#: names that are anonydb's own and must not appear in what a user reads
INTERNAL = ("__presence", "__check", "__evaluate", "__u_loss", "__slicing", "__cli", "__report", "_adb_",
            "class_id")

DISEASES = ["flu", "bronchitis", "gastritis", "ulcer"]
OCC = Hierarchy.from_mapping({"flu": ["respiratory", "*"], "bronchitis": ["respiratory", "*"],
                              "gastritis": ["stomach", "*"], "ulcer": ["stomach", "*"]}, source="occ.csv")
NONE_OF_THEM = Hierarchy.from_rows([("foo", "x", "*"), ("bar", "x", "*")], source="bad_h.csv")
HALF = Hierarchy.from_rows([("flu", "r", "*"), ("bronchitis", "r", "*")], source="half.csv")
AB = Hierarchy.from_rows([("a", "*"), ("b", "*")], source="ab.csv")  # y holds a, b, c, d


def _people(engine, n: int = 80) -> None:
    """src(x INTEGER 0..9, y in a..d, s one of four diseases, each on a quarter of the rows)."""
    rows = [(i % 10, "abcd"[(i // 10) % 4], DISEASES[(i * 7 + i // 4) % 4]) for i in range(n)]
    make_table(engine, "src", ["x", "y", "s"], rows)


def _no_internal(text: str) -> None:
    for name in INTERNAL:
        assert name not in text, f"internal name {name!r} in: {text[:400]}"


# -- 1. evaluate ------------------------------------------------------------------------------------------
def test_evaluate_sensitive_hierarchy_covering_none(engine):
    _people(engine)
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    with pytest.raises(InputError) as e:  # reported "0 exposed" before
        evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"s": NONE_OF_THEM})
    msg = str(e.value)
    assert "column 's'" in msg and "bad_h.csv" in msg and "ana_st" in msg
    assert "any of the column's 4 value(s)" in msg and "'bronchitis', 'flu'" in msg
    _no_internal(msg)


def test_evaluate_sensitive_hierarchy_missing_some(engine):
    _people(engine)
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    with pytest.raises(InputError, match=r"column 's' of 'ana_st' \(half.csv\) does not cover 2 value\(s\).*"
                                         r"'gastritis', 'ulcer'"):
        evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"s": HALF})
    ev = evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"s": OCC})  # a covering one works
    assert ev.similarity is not None


def test_evaluate_qi_hierarchies(engine, tmp_path):
    _people(engine)
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    with pytest.raises(InputError) as e:  # U_loss named its scratch table ('__u_loss_2') before
        evaluate("ana", ["x", "y"], "s", engine=engine, source="src", hierarchies={"y": AB})
    msg = str(e.value)
    assert "column 'y' of 'src' (ab.csv) does not cover 2 value(s)" in msg and "'c', 'd'" in msg
    _no_internal(msg)
    with pytest.raises(InputError, match=r"quasi-identifiers \(y\) serve U_loss only.*source"):
        evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"y": AB})  # ignored before
    with pytest.raises(InputError, match="'z', which is neither a quasi-identifier"):
        evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"z": AB})


def test_cli_evaluate_uncovered_hierarchy(tmp_path, capsys):
    db = tmp_path / "e.duckdb"
    e = anonydb.connect(str(db))
    try:
        _people(e)
        anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=e)
    finally:
        e.close()
    bad = tmp_path / "bad_h.csv"
    bad.write_text("foo;x;*\nbar;x;*\n")
    code = main(["evaluate", "ana", "--qi", "x,y", "--sensitive", "s", "--hierarchy", f"s={bad}", "--db", str(db)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""  # printed "0 tuples in 0 groups exposed" before
    assert err.count("\n") == 1 and "column 's'" in err and str(bad) in err and "'bronchitis'" in err
    _no_internal(err)


# -- 2. slicing --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attr,h,want", [
    ("y", AB, r"column 'y' of 'src' \(ab.csv\) does not cover 2 value\(s\).*'c', 'd'"),
    ("s", NONE_OF_THEM, r"column 's' of 'src' \(bad_h.csv\) does not cover any of the column's 4 value\(s\)"),
    ("s", HALF, r"column 's' of 'src' \(half.csv\) does not cover 2 value\(s\).*'gastritis', 'ulcer'"),
    ("z", AB, r"hierarchy is given for 'z', which is neither a quasi-identifier nor the sensitive attribute "
              r"\(quasi-identifiers: x, y; sensitive: s\)"),
])
def test_slicing_validates_hierarchies(engine, attr, h, want):
    _people(engine)
    with pytest.raises(InputError, match=want):  # each was ignored before (without column_k)
        slicing("src", ["x", "y"], "s", l=2, out="sl", engine=engine, hierarchies={attr: h})
    assert not engine.exists("sl")


def test_slicing_column_k_error_names_the_source(engine):
    _people(engine)
    with pytest.raises(InputError) as e:  # named the scratch table '__slicing_1' before
        slicing("src", ["x", "y"], "s", l=2, out="sl", engine=engine, columns=[["x", "y"], ["s"]], column_k=2,
                hierarchies={"y": AB})
    assert "of 'src'" in str(e.value)
    _no_internal(str(e.value))


# -- 3. check ----------------------------------------------------------------------------------------------
def test_check_qi_hierarchy_must_cover(engine):
    _people(engine)
    with pytest.raises(InputError, match=r"column 'y' of 'src' \(ab.csv\) does not cover 2 value\(s\)"):
        anonydb.check("src", ["x", "y"], "s", engine=engine, k=2, hierarchies={"y": AB})  # accepted before


def test_check_sensitive_hierarchy_names_the_column(engine):
    _people(engine)
    with pytest.raises(InputError) as e:  # "column '_adb_sa' of '__check_3'" before
        anonydb.check("src", ["x", "y"], "s", engine=engine, t=0.5, hierarchies={"s": HALF})
    msg = str(e.value)
    assert "column 's' of 'src' (half.csv)" in msg and "'gastritis', 'ulcer'" in msg
    _no_internal(msg)
    with pytest.raises(InputError, match="any of the column's 4 value"):
        anonydb.check("src", ["x", "y"], "s", engine=engine, l=2, hierarchies={"s": NONE_OF_THEM})


def test_check_hierarchy_for_another_column(engine):
    _people(engine)
    with pytest.raises(InputError, match=r"hierarchy is given for 'z', which is neither a quasi-identifier nor the "
                                         r"sensitive attribute \(quasi-identifiers: x, y; sensitive: s\)"):
        anonydb.check("src", ["x", "y"], "s", engine=engine, k=2, hierarchies={"z": AB})


def test_cli_check_t_closeness_error_is_one_line(tmp_path, capsys):
    src = tmp_path / "people.csv"
    src.write_text("x,y,s\n" + "".join(f"{i % 10},{'abcd'[i % 4]},{DISEASES[i % 4]}\n" for i in range(40)))
    h = tmp_path / "half.csv"
    h.write_text("flu;r;*\nbronchitis;r;*\n")
    code = main(["check", str(src), "--qi", "x,y", "--sensitive", "s", "--t", "0.5", "--hierarchy", f"s={h}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "column 's'" in err and str(src) in err and str(h) in err
    _no_internal(err)


# -- 4. write_report -----------------------------------------------------------------------------------
REPORT = {"title": "t", "generated": "now", "method": None, "tables": {"release": "r"}, "files": [], "rows": 1,
          "seconds": None, "qi": ["q"], "sensitive": None, "holds": True, "verdicts": [],
          "classes": {"classes": 1, "rows": 1, "min": 1, "max": 1, "mean": 1.0, "median": 1.0, "histogram": []},
          "risk": {"threshold": 0.2, "highest": 1.0, "average": 1.0, "records_at_risk": 1, "share_at_risk": 1.0},
          "loss": {"measure": "m", "by_qi": {}}, "utility": {}, "statements": None, "spec": None, "spec_path": None}


def test_write_report_to_a_directory(tmp_path):
    with pytest.raises(InputError) as e:
        write_report(REPORT, html=str(tmp_path))
    assert "--html" in str(e.value) and str(tmp_path) in str(e.value) and "is a directory" in str(e.value)
    assert os.listdir(tmp_path) == []  # no temporary file left behind


def test_write_report_missing_folder(tmp_path):
    target = tmp_path / "nope" / "r.html"
    with pytest.raises(InputError, match=r"--html .*r\.html.*the folder .*nope.* does not exist"):
        write_report(REPORT, html=str(target))
    assert not (tmp_path / "nope").exists()  # not created behind the user's back
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match=r"json_path .*r\.json.*is not a folder"):
        write_report(REPORT, json_path=str(tmp_path / "f" / "r.json"))


def test_write_report_checks_every_target_first(tmp_path):
    good = tmp_path / "r.html"
    with pytest.raises(InputError, match="json_path"):
        write_report(REPORT, html=str(good), json_path=str(tmp_path / "missing" / "r.json"))
    assert not good.exists()  # nothing written when one target is bad


def test_write_report_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old report")
    os.chmod(target, 0o644)

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(InputError, match=r"json_path .*r\.json.*cannot write the report") as e:
        write_report(REPORT, json_path=str(target))
    assert "No space left on device" in str(e.value)
    assert target.read_text() == "old report" and os.listdir(tmp_path) == ["r.json"]
    monkeypatch.undo()
    assert write_report(REPORT, json_path=str(target)) == [str(target)]  # regenerated output: replaced
    assert json.loads(target.read_text()) == REPORT and os.listdir(tmp_path) == ["r.json"]
    assert target.stat().st_mode & 0o777 == 0o644  # the old file's permissions


def test_cli_report_html_directory(tmp_path, capsys):
    src = tmp_path / "t.csv"
    src.write_text("q,s\n1,a\n1,b\n2,a\n2,b\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code = main(["report", str(src), "--qi", "q", "--k", "2", "--html", str(out_dir)])  # a traceback before
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--html" in err and str(out_dir) in err
    assert os.listdir(out_dir) == [] and sorted(os.listdir(tmp_path)) == ["out", "t.csv"]


# -- 5. internal names --------------------------------------------------------------------------------------
PUBLIC = [(i, z, a) for i, (z, a) in enumerate([(47906, 35), (47903, 59), (47906, 42), (47630, 18), (47630, 22),
                                                 (47633, 63), (48973, 33), (48972, 47), (48970, 52)])]


def _presence_files(engine, tmp_path):
    make_table(engine, "p", ["name", "zip", "age"], PUBLIC)
    engine.execute("CREATE TABLE t AS SELECT * FROM p WHERE name IN (1, 2, 5, 7, 8)")
    pub, priv = tmp_path / "public.csv", tmp_path / "private.csv"
    engine.execute(f"COPY p TO '{pub}' (HEADER)")
    engine.execute(f"COPY t TO '{priv}' (HEADER)")
    return pub, priv


def test_presence_report_speaks_the_users_names(engine, tmp_path, capsys):
    pub, priv = _presence_files(engine, tmp_path)
    argv = ["check", str(priv), "--qi", "zip,age", "--public", str(pub), "--delta", "0.5,0.7"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    _no_internal(out)
    assert f"source: {priv} against the public table {pub}" in out and "quasi-identifiers: zip, age\n" in out
    assert "group [class=0, zip=NULL, age=NULL]" in out and "(presence 0, class 0)" in out
    assert "member" not in out and "in the private table" in out
    assert main(argv + ["--json"]) == 1
    text = capsys.readouterr().out
    _no_internal(text)
    rep = json.loads(text)
    assert rep["source"] == str(priv) and rep["public"] == str(pub) and rep["qi"] == ["zip", "age"]
    assert rep["sensitive"] is None and "class" in rep["verdicts"][0]["violations"][0]["key"]


def test_presence_errors_name_the_users_tables(engine, tmp_path, capsys):
    pub, priv = _presence_files(engine, tmp_path)
    empty = tmp_path / "empty.csv"
    empty.write_text("name,zip,age\n")
    bad = tmp_path / "bad_h.csv"
    bad.write_text("foo;*\nbar;*\n")
    for release, public, extra, want in (
            (priv, empty, [], f"the public table {empty} is empty"),  # named '__presence_2' before
            (priv, pub, ["--hierarchy", f"age={bad}"], f"column 'age' of '{pub}' ({bad}) does not cover"),
            (priv, pub, ["--hierarchy", f"nat={bad}"], "'nat', which is not a quasi-identifier (zip, age)"),
            (pub, priv, [], f"the release {pub} is not within the public table {priv}")):
        code = main(["check", str(release), "--qi", "zip,age", "--public", str(public), "--delta", "0,1"] + extra)
        err = capsys.readouterr().err
        assert code == 2 and want in err and err.count("\n") == 1, err
        _no_internal(err)


def test_check_presence_api_names(engine):
    make_table(engine, "p", ["name", "zip", "age"], PUBLIC)
    engine.execute("CREATE TABLE stage_x AS SELECT * FROM p WHERE name IN (1, 2, 5, 7, 8)")
    r = check_presence("stage_x", "p", ["zip", "age"], delta="0,1", engine=engine, name="release",
                       public_name="people.csv")
    assert (r.source, r.public, r.qi, r.sensitive) == ("release", "people.csv", ["zip", "age"], None)
    _no_internal(r.to_json() + r.format())


def test_confident_presence_hierarchies(engine, tmp_path, capsys):
    pub, priv = _presence_files(engine, tmp_path)
    bad = tmp_path / "bad_h.csv"
    bad.write_text("foo;*\nbar;*\n")
    base = ["check", str(priv), "--qi", "zip,age", "--public", str(pub), "--delta", "0,1", "--confidence", "0.5"]
    assert main(base + ["--hierarchy", f"age={bad}"]) == 2  # ignored before
    err = capsys.readouterr().err
    assert "column 'age' of the population counts (" in err and "'18'" in err
    _no_internal(err)
    assert main(base + ["--hierarchy", f"nat={bad}"]) == 2
    assert "'nat', which is not a quasi-identifier" in capsys.readouterr().err


def test_evaluate_output_has_no_internal_names(engine):
    _people(engine)
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    ev = evaluate("ana", ["x", "y"], "s", engine=engine, hierarchies={"s": OCC})
    _no_internal(ev.format() + json.dumps(ev.to_dict(), default=str))


def test_readme_presence_check_on_adult(capsys):
    a = need_shared() / "adult"
    argv = ["check", str(a / "adult_subset.csv"), "--qi", "age,sex,race", "--public", str(a / "adult.csv"),
            "--delta", "0.05,0.15"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    _no_internal(out)
    assert "achieved delta_min = 0" in out and "class=0" in out
    assert main(argv + ["--json"]) == 1
    _no_internal(capsys.readouterr().out)
    bad = Hierarchy.from_rows([("foo", "*")], source="bad_h.csv")
    with pytest.raises(InputError) as e:
        check_presence(str(a / "adult_subset.csv"), str(a / "adult.csv"), ["age", "sex", "race"],
                       delta="0.05,0.15", hierarchies={"race": bad})
    assert "column 'race'" in str(e.value) and "adult.csv" in str(e.value) and "'White'" in str(e.value)
    _no_internal(str(e.value))
