"""The browser workbench's steps without a browser (anonydb.workflow.ui.workbench): the column profile, the
histograms and the riskiest records against plain-Python counts; the models' fields read from the
CLI's own option group; the spec the page builds read back by `anonydb release`; the explored
points against their releases; and the release's refusals."""

from __future__ import annotations

import collections

import pytest

from anonydb.errors import InputError
from anonydb.workflow.ui.workbench import Workbench, model_fields, model_params, spec_privacy

ROWS = [(i, f"p{i % 40}", 20 + (i * 7) % 15, "F" if i % 3 else "M", ["flu", "cold", "asthma", "gout"][i % 4],
         None if i % 10 == 0 else f"z{i % 5}") for i in range(400)]


@pytest.fixture
def wb(engine):
    engine.execute("CREATE OR REPLACE TABLE people (rid INTEGER, pid VARCHAR, age INTEGER, sex VARCHAR, "
                   "diagnosis VARCHAR, zip VARCHAR)")
    engine.execute("INSERT INTO people VALUES " + ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in r) + ")" for r in ROWS))
    yield Workbench(engine, "")
    for t in ("people", "wb_release"):
        engine.drop(t)


def test_the_profile_counts_and_hints(wb):
    got = {c["column"]: c for c in wb.profile("people")}
    cols = list(zip(*ROWS))
    for i, name in enumerate(("rid", "pid", "age", "sex", "diagnosis", "zip")):
        values = [v for v in cols[i] if v is not None]
        assert got[name]["distinct"] == len(set(values)) and got[name]["nulls"] == len(cols[i]) - len(values)
    assert got["rid"]["hint"] == "likely identifier"  # unique: names a row
    assert got["pid"]["hint"] == "likely person key"  # 40 values on 400 rows
    assert got["age"]["hint"] == got["sex"]["hint"] == ""


def test_histograms_cover_every_value(wb):
    labels, counts = wb.histogram("people", "diagnosis")
    assert dict(zip(labels, counts)) == dict(collections.Counter(r[4] for r in ROWS))
    labels, counts = wb.histogram("people", "age", bins=10)
    assert len(labels) == 10 and sum(counts) == len(ROWS)
    ages = [r[2] for r in ROWS]
    lo, width = min(ages), (max(ages) - min(ages)) / 10
    assert counts[0] == sum(1 for a in ages if a < lo + width)
    with pytest.raises(InputError, match="no column 'nope'"):
        wb.histogram("people", "nope")
    with pytest.raises(InputError, match="no table or view named 'gone'"):
        wb.profile("gone")


def test_model_fields_are_the_cli_options():
    """The page's models come from `anonydb check`'s option group: every option of it but the
    presence ones (they need a public table), with the CLI's types and choices."""
    import argparse

    from anonydb.workflow.cliargs import _add_model_args

    p = argparse.ArgumentParser()
    _add_model_args(p)
    group = next(g for g in p._action_groups if g.title == "privacy models")
    every = {a.dest for a in group._group_actions}
    fields = {f["dest"]: f for f in model_fields()}
    assert set(fields) == every - {"public", "key", "k_map", "confidence", "marginals", "private"}
    assert fields["k"]["kind"] == "int" and fields["t"]["kind"] == "float" and "entropy" in fields["l_variant"]["choices"]


def test_model_params_parse_as_the_cli_does():
    got = model_params({"k": "5", "l": "3", "l_variant": "entropy", "t": ""})
    assert got["k"] == 5 and got["l"] == 3 and got["l_variant"] == "entropy" and got["t"] is None
    assert spec_privacy(got) == {"k": 5, "l": {"value": 3, "variant": "entropy"}}
    for bad, message in (({"k": "abc"}, "invalid int value: 'abc'"), ({}, "pick at least one privacy model"),
                         ({"beta_variant": "enhanced", "k": "2"}, "--beta-variant applies to beta-likeness")):
        with pytest.raises(InputError, match=message) as e:
            model_params(bad)
        assert "\n" not in str(e.value)


def test_check_reports_the_riskiest_records_by_their_qis(wb):
    roles = {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive"}
    rep = wb.check("people", roles, model_params({"k": "2"}))
    sizes = collections.Counter((r[2], r[3]) for r in ROWS)
    smallest = min(sizes.values())
    assert rep["verdicts"][0]["holds"] == (smallest >= 2)
    r = rep["riskiest"]
    assert r["columns"] == ["age", "sex", "risk"]
    assert r["rows"][0][2] == pytest.approx(1 / smallest)
    assert sorted(1 / x[2] for x in r["rows"]) == sorted(sizes.values())[:len(r["rows"])]


def test_the_spec_is_what_anonydb_release_reads(wb, tmp_path):
    from anonydb.workflow.spec import load_spec

    spec = wb.spec("people", {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive",
                              "zip": "keep", "pid": "drop"}, {"age": {"intervals": [5, 10]}}, "mondrian",
                   {"k": 5, "l": 2}, "wb_release")
    text = wb.spec_yaml(spec)
    sp = load_spec(tmp_path / "s.yaml", text=text)
    assert sp.qi == ["age", "sex"] and sp.sensitive == "diagnosis" and sp.privacy == {"k": 5, "l": {"value": 2}}
    assert "pid" not in text and [a.name for a in sp.attributes if a.role == "insensitive"] == ["zip"]
    back = wb.read_spec(text)
    assert back["roles"] == {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive", "zip": "keep"}


def test_explore_points_are_their_releases(wb, engine):
    """Each point's highest risk is 1 / its smallest class (counted here from the released rows),
    its k-anonymity holds, and a larger k never loses less."""
    base = wb.spec("people", {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive"}, {},
                   "mondrian", {}, "unused")
    points = wb.explore(base, [2, 5, 20])
    assert [p["k"] for p in points] == [2, 5, 20] and all(p["holds"] for p in points)
    for p in points:
        _, rows = engine.fetch_rows(f'SELECT age, sex FROM "{p["table"]}"')
        smallest = min(collections.Counter(rows).values())
        assert smallest >= p["k"] and p["risk"] == pytest.approx(1 / smallest)
    assert points[0]["loss"] <= points[1]["loss"] <= points[2]["loss"]
    wb.drop_explored()
    assert not any(engine.exists(p["table"]) for p in points)


def test_a_release_is_written_once_and_refused_over_itself(wb, engine):
    spec = wb.spec("people", {"rid": "identifier", "age": "qi", "sex": "qi", "diagnosis": "sensitive"}, {},
                   "mondrian", {"k": 5}, "wb_release")
    got = wb.release(spec)
    assert got["rows"] == len(ROWS) and "k-anonymity" in got["line"] and got["report"] in wb.reports
    assert engine.exists("wb_release")
    job = wb.run("release", lambda: wb.release(spec))
    assert job.error and "already exists" in job.error and "\n" not in job.error
    assert wb.run("release", lambda: wb.release({**spec, "output": {"table": "wb_release", "replace": True}})).error is None


def test_a_csv_file_is_a_source(engine, tmp_path):
    path = tmp_path / "small.csv"
    path.write_text("id,age,sex\n" + "".join(f"{i},{20 + i % 7},{'FM'[i % 2]}\n" for i in range(50)))
    wb = Workbench(engine, "")
    name = wb.open_file(str(path))
    assert any(s["name"] == name and s["rows"] == 50 and s["columns"] == 3 for s in wb.sources())
    got = {c["column"]: c["distinct"] for c in wb.profile(name)}
    assert got == {"id": 50, "age": 7, "sex": 2}
    with pytest.raises(InputError, match="is not a CSV or Parquet file"):
        wb.open_file(str(tmp_path / "missing.csv"))


def test_the_lattice_is_full_domains_solution_space(engine):
    """Two QIs with category groups (value, group, *): every one of the 9 level vectors, its classes
    and smallest class as a plain-Python generalization counts them, its loss the mean of level /
    height, and k-anonymity where the smallest class reaches k."""
    import itertools

    rows = [("FM"[i % 2], f"z{i % 5}", "flu" if i % 3 else "cold") for i in range(60)] + [("F", "z0", "flu")]
    engine.execute("CREATE OR REPLACE TABLE lat (sex VARCHAR, zip VARCHAR, diagnosis VARCHAR)")
    engine.execute("INSERT INTO lat VALUES " + ", ".join(f"('{a}', '{b}', '{c}')" for a, b, c in rows))
    groups = {"sex": {"All": ["F", "M"]}, "zip": {"North": ["z0", "z1"], "South": ["z2", "z3", "z4"]}}
    wb = Workbench(engine, "")
    spec = wb.spec("lat", {"sex": "qi", "zip": "qi", "diagnosis": "sensitive"},
                   {q: {"groups": g} for q, g in groups.items()}, "fulldomain", {"k": 12}, "unused")
    points = {tuple(p["levels"].values()): p for p in wb.lattice(spec, 12)}
    assert len(points) == 9
    up = {q: {v: g for g, vs in gs.items() for v in vs} for q, gs in groups.items()}

    def label(q, v, level):
        return v if level == 0 else up[q][v] if level == 1 else "*"

    for a, b in itertools.product(range(3), range(3)):
        sizes = collections.Counter((label("sex", s, a), label("zip", z, b)) for s, z, _ in rows)
        p = points[(a, b)]
        assert p["classes"] == len(sizes) and p["risk"] == pytest.approx(1 / min(sizes.values()))
        assert p["loss"] == pytest.approx((a / 2 + b / 2) / 2) and p["holds"] == (min(sizes.values()) >= 12)
    table = wb.node(spec, {"sex": 1, "zip": 1})
    assert sorted(set(r[0] for r in engine.fetch_rows(f'SELECT zip FROM "{table}"')[1])) == ["North", "South"]
    wb.drop_explored()
    assert not engine.exists(table)
    engine.drop("lat")
