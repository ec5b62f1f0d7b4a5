"""Releases over time as users make them, through the command line [issue 62]: a new extract each
month as a file, a table replaced in place, a spec run monthly. Each month's release is refused
exactly when the oracle (tests/series_oracle.py, through tests/ledger_flows.py) finds a person of
it left with fewer than l sensitive values by the releases before it, whatever the file, the
series or the columns are called; an accepted release publishes the partition the oracle judged.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ledger_flows as lf
from anonydb.workflow.cli import main
from conftest import examples

ARGS = ["--qi", "age,zip", "--sensitive", "dis", "--k", str(lf.K), "--l", str(lf.L)]


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ANONYDB_SECRET", lf.SECRET)


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def monthly(tmp_path, capsys, months, argv_of, prepare=None) -> dict:
    """Release every month with ``argv_of(m)`` (after ``prepare(m)``); check each outcome against
    the oracle; return what happened."""
    db = str(tmp_path / "w.duckdb")
    accepted: list[dict] = []
    seen = {"accepted": 0, "refused": 0, "later": 0, "outside": 0}
    for m, month in enumerate(months):
        if prepare:
            prepare(m)
        cand = lf.probe(month)
        why = lf.verdict(accepted, cand)
        before = lf.counts(db) if os.path.exists(db) else None
        code, out, err = run(argv_of(m) + ["--db", db], capsys)
        if why:
            assert code == 2 and err.count("\n") == 1 and "composed verification failed" in err, (m, why, err)
            assert ("new since it" in err) == (why == "difference"), (m, why, err)
            assert lf.counts(db) == before, m  # nothing written
            seen["refused"] += 1
            continue
        assert code == 0, (m, err)
        rid = len(accepted) + 1
        assert f"ledger: release {rid} of series" in out, out
        composed = out.split("verified together with ")[1].split(" earlier")[0]
        assert int(composed) == len(accepted), out  # every earlier release of these persons
        seen["outside"] += "outside its series and source" in out
        members = lf.ledger_members(db, rid)
        assert set(members) == {lf.fingerprint(p) for p in month}
        by_fp = {lf.fingerprint(p): g for p, g in cand["members"].items()}
        assert lf.partition({"members": members}) == lf.partition({"members": by_fp}), m
        accepted.append(cand)
        seen["accepted"] += 1
        seen["later"] += m > 0
    return seen


def test_a_file_per_month_same_output(tmp_path, capsys, monkeypatch):
    """jan.csv, feb.csv, ...: one output, --replace; no --series (the output names it)."""
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=4)
    names = ["jan", "feb", "mar", "apr"]
    for n, month in zip(names, months):
        lf.write_csv(tmp_path / f"{n}.csv", month)
    seen = monthly(tmp_path, capsys, months, lambda m: ["anonymize", f"{names[m]}.csv", *ARGS, "--person", "rid",
                                                        "--out", "rel", "--replace"])
    assert seen["refused"] >= 1 and seen["later"] >= 1, seen


@pytest.mark.parametrize("seed", [4, 5])
def test_a_file_per_month_outputs_per_month_one_series(tmp_path, capsys, monkeypatch, seed):
    """--series monthly, an output per month: composed by the series."""
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=seed, months=3)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"m{m}.csv", month)
    seen = monthly(tmp_path, capsys, months, lambda m: ["anonymize", f"./m{m}.csv" if m % 2 else f"m{m}.csv", *ARGS,
                                                        "--person", "rid", "--series", "monthly", "--out", f"rel{m}"])
    assert seen["accepted"] >= 1 and seen["accepted"] + seen["refused"] == 3, seen


def test_a_file_per_month_no_series_composes_by_persons(tmp_path, capsys, monkeypatch):
    """A new file and a new output each month, no series: the same persons all the same, and the
    result line says it shares persons outside its series and source."""
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=11, months=3, churn=0.05, new=10)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"x{m}.csv", month)
    seen = monthly(tmp_path, capsys, months, lambda m: ["anonymize", f"x{m}.csv", *ARGS, "--person", "rid",
                                                        "--out", f"out{m}"])
    assert seen["later"] >= 1 and seen["outside"] == seen["later"] and seen["refused"] >= 1, seen  # by Byun's attack
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        (composed,) = con.execute("SELECT composed FROM anonydb_releases WHERE id = 2").fetchone()
    assert '"why": ["persons"]' in composed  # the entry says so too


def test_a_table_replaced_in_place(tmp_path, capsys):
    """CREATE OR REPLACE TABLE src between the runs, --person rid and no --series."""
    months = lf.population(seed=5, months=4)
    db = str(tmp_path / "w.duckdb")

    def prepare(m):
        with duckdb.connect(db) as con:
            lf.put(con, "src", months[m])

    seen = monthly(tmp_path, capsys, months, lambda m: ["anonymize", "src", *ARGS, "--person", "rid", "--out", "rel",
                                                        "--replace"], prepare)
    assert seen["refused"] >= 1 and seen["later"] >= 1, seen


def test_columns_renamed_between_months(tmp_path, capsys):
    """The person column and the sensitive column change names (rid -> pid, dis -> diagnosis) and
    the source is renamed: the same persons, the same attribute, composed all the same."""
    months = lf.population(seed=6, months=3)
    db = str(tmp_path / "w.duckdb")
    cols = [("rid", "age", "zip", "dis"), ("pid", "age", "zip", "dis"), ("rid", "age", "zip", "diagnosis")]

    def prepare(m):
        with duckdb.connect(db) as con:
            lf.put(con, f"src_{m}", months[m], cols[m])

    def argv(m):
        sens = cols[m][3]
        return ["anonymize", f"src_{m}", "--qi", "age,zip", "--sensitive", sens, "--k", lf.K, "--l", lf.L,
                "--person", cols[m][0], "--out", "rel", "--replace"]

    db_ = db
    seen = {"refused": 0, "accepted": 0}
    accepted = []
    for m, month in enumerate(months):
        prepare(m)
        cand = lf.probe(month)
        why = lf.verdict(accepted, cand)
        code, out, err = run(argv(m) + ["--db", db_], capsys)
        assert (code == 2) == bool(why), (m, why, out, err)
        if why:
            seen["refused"] += 1
        else:
            assert f"verified together with {len(accepted)} earlier" in out, out
            accepted.append(cand)
            seen["accepted"] += 1
    assert seen["refused"] >= 1, seen


def test_untracked_without_a_secret(tmp_path, capsys, monkeypatch):
    """No publisher's secret: the first person-level release is written and says it is untracked;
    the next over the output or in the series is refused unless --untracked, which says it is
    composed with no other."""
    monkeypatch.delenv("ANONYDB_SECRET")
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=2)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"m{m}.csv", month)
    db = str(tmp_path / "w.duckdb")
    base = [*ARGS, "--person", "rid", "--db", db]
    code, out, _ = run(["anonymize", "m0.csv", *base, "--out", "rel"], capsys)
    assert code == 0 and "ledger: untracked (no publisher's secret): a later release of these persons cannot be " \
                         "verified with this one; give --secret-file to track it" in out
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT series, tables, tracked, mode, secret_id, members FROM anonydb_releases").fetchall() \
            == [("rel", '["rel"]', "rid", "untracked", None, 0)]
        assert con.execute("SELECT count(*) FROM anonydb_release_members").fetchone()[0] == 0
    before = lf.counts(db)
    for extra in (["--out", "rel", "--replace"], ["--out", "rel2", "--series", "rel"]):
        code, _, err = run(["anonymize", "m1.csv", *base, *extra], capsys)
        assert code == 2 and err.count("\n") == 1 and "--untracked" in err and "--secret-file" in err, err
        assert lf.counts(db) == before
    # a release of the output without a person column is refused too
    code, _, err = run(["anonymize", "m1.csv", *ARGS, "--db", db, "--out", "rel", "--replace"], capsys)
    assert code == 2 and "written untracked" in err
    code, out, _ = run(["anonymize", "m1.csv", *base, "--out", "rel", "--replace", "--untracked"], capsys)
    assert code == 0 and "not composed with earlier or later releases" in out
    # with the secret now: still refused (the earlier releases have no fingerprints)
    monkeypatch.setenv("ANONYDB_SECRET", lf.SECRET)
    code, _, err = run(["anonymize", "m1.csv", *base, "--out", "rel", "--replace"], capsys)
    assert code == 2 and "written untracked" in err


def test_untracked_refuses_a_series(tmp_path, capsys):
    db = str(tmp_path / "w.duckdb")
    with duckdb.connect(db) as con:
        lf.put(con, "src", lf.population(seed=1, months=1)[0])
    code, _, err = run(["anonymize", "src", *ARGS, "--person", "rid", "--db", db, "--out", "rel", "--untracked",
                        "--series", "s"], capsys)
    assert code == 2 and "--untracked" in err and err.count("\n") == 1


SPEC = """\
source: {source}
database: w.duckdb
attributes: {{rid: person, age: qi, zip: qi, dis: sensitive}}
method: mondrian
privacy: {{k: {k}, l: {l}}}
output: {{table: rel, replace: true}}
"""


def test_a_spec_run_monthly(tmp_path, capsys, monkeypatch):
    """The same spec each month, its source edited to the month's file (no series: the output
    names it)."""
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=4)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"visits_{m}.csv", month)

    def prepare(m):
        (tmp_path / "monthly.yaml").write_text(SPEC.format(source=f"visits_{m}.csv", k=lf.K, l=lf.L))

    def argv(m):
        return ["release", "monthly.yaml"]

    seen = monthly(tmp_path, capsys, months, argv, prepare)
    assert seen["refused"] >= 1 and seen["later"] >= 1, seen


@settings(max_examples=examples(3, slow=18), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), months=st.integers(2, 3), files=st.sampled_from(["same", "per-month", "dotted"]),
       series=st.sampled_from(["none", "fixed", "per-month"]), outputs=st.sampled_from(["same", "per-month"]))
def test_random_changing_tables_names_and_series(capsys, seed, months, files, series, outputs):
    """Random populations released month by month under random file names, series and outputs:
    refused exactly when the oracle finds a person exposed, whatever the names."""
    pop = lf.population(seed=seed, months=months, start=160, new=30)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(d)

        def prepare(m):
            lf.write_csv(tmp / ("src.csv" if files == "same" else f"m{m}.csv"), pop[m])

        def argv(m):
            name = "src.csv" if files == "same" else (f"./m{m}.csv" if files == "dotted" and m % 2 else f"m{m}.csv")
            out = ["--out", "rel", "--replace"] if outputs == "same" else ["--out", f"rel{m}"]
            ser = {"none": [], "fixed": ["--series", "monthly"], "per-month": ["--series", f"s{m}"]}[series]
            return ["anonymize", name, *ARGS, "--person", "rid", *out, *ser]

        try:
            seen = monthly(tmp, capsys, pop, argv, prepare)
        finally:
            os.chdir(here)
    assert seen["accepted"] >= 1


def test_a_spec_untracked_by_series_false(tmp_path, capsys, monkeypatch):
    """Without the secret the spec's first release leaves a mark; the next is refused until the spec
    says series: false, and then says it is composed with no other."""
    monkeypatch.delenv("ANONYDB_SECRET")
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=2)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"visits_{m}.csv", month)
    spec = tmp_path / "monthly.yaml"
    spec.write_text(SPEC.format(source="visits_0.csv", k=lf.K, l=lf.L))
    code, out, _ = run(["release", "monthly.yaml"], capsys)
    assert code == 0 and "ledger: untracked (no publisher's secret)" in out
    spec.write_text(SPEC.format(source="visits_1.csv", k=lf.K, l=lf.L))
    code, _, err = run(["release", "monthly.yaml"], capsys)
    assert code == 2 and "written untracked" in err and err.count("\n") == 1
    spec.write_text(SPEC.format(source="visits_1.csv", k=lf.K, l=lf.L) + "series: false\n")
    code, out, _ = run(["release", "monthly.yaml"], capsys)
    assert code == 0 and "not composed with earlier or later releases" in out


def test_a_spec_writing_files_is_named_by_its_output(tmp_path, capsys, monkeypatch):
    """A spec that writes a Parquet file (its release staged under a scratch name) is named in the
    ledger by its file: without the secret, the next month's run is refused like a table's."""
    monkeypatch.delenv("ANONYDB_SECRET")
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=2)
    for m, month in enumerate(months):
        lf.write_csv(tmp_path / f"visits_{m}.csv", month)
    text = SPEC.replace("output: {{table: rel, replace: true}}", "output: {{table: rel, format: parquet, "
                                                                   "path: rel.parquet, replace: true}}")
    (tmp_path / "monthly.yaml").write_text(text.format(source="visits_0.csv", k=lf.K, l=lf.L))
    code, out, err = run(["release", "monthly.yaml"], capsys)
    assert code == 0 and "ledger: untracked" in out, err
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as con:
        assert con.execute("SELECT series, tables FROM anonydb_releases").fetchall() == [("rel.parquet",
                                                                                          '["rel.parquet"]')]
    (tmp_path / "monthly.yaml").write_text(text.format(source="visits_1.csv", k=lf.K, l=lf.L))
    code, _, err = run(["release", "monthly.yaml"], capsys)
    assert code == 2 and "written untracked" in err, err
