"""Anatomy: QIT/ST releases, worked examples, properties, bad input."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb.workflow.cli import main
from anonydb.errors import AnonyDBError, InfeasibleError, InputError
from anonydb.methods import anatomy

from conftest import examples, make_table

TABLE_1_4 = [  # spec-closeness-slicing 8.2, with the buckets {1-3}, {4-6}, {7-9}
    (47677, 29, "F", "Ovarian Cancer", 1), (47602, 22, "F", "Ovarian Cancer", 1), (47678, 27, "M", "Prostate Cancer", 1),
    (47905, 43, "M", "Flu", 2), (47909, 52, "F", "Heart Disease", 2), (47906, 47, "M", "Heart Disease", 2),
    (47605, 30, "M", "Heart Disease", 3), (47673, 36, "M", "Flu", 3), (47607, 32, "M", "Flu", 3),
]


def test_table_1_5_round_trip(engine):
    make_table(engine, "t14", ["zip", "age", "sex", "disease", "bucket"], TABLE_1_4)
    r = anatomy("t14", "zip,age,sex", "disease", l=2, out="rel", engine=engine, groups="bucket")
    st_rows = set(engine.fetch_rows("SELECT group_id, disease, count FROM rel_st")[1])
    assert st_rows == {(1, "Ovarian Cancer", 2), (1, "Prostate Cancer", 1), (2, "Flu", 1), (2, "Heart Disease", 2),
                       (3, "Heart Disease", 1), (3, "Flu", 2)}
    qit = sorted(engine.fetch_rows("SELECT zip, age, sex, group_id FROM rel_qit")[1])
    assert qit == sorted((z, a, s, b) for z, a, s, _, b in TABLE_1_4)
    assert [c for c, _ in engine.columns("rel_qit")] == ["zip", "age", "sex", "group_id"]
    assert [c for c, _ in engine.columns("rel_st")] == ["group_id", "disease", "count"]
    assert r.groups == 3 and r.rows == 9 and r.report.holds
    # distinct 2-diverse and not 3-diverse (spec 8.2)
    with pytest.raises(AnonyDBError, match="verification failed: l-diversity"):
        anatomy("t14", "zip,age,sex", "disease", l=3, out="rel3", engine=engine, groups="bucket")
    assert not engine.exists("rel3_qit") and not engine.exists("rel3_st")


def test_survey_table_iii_st(engine):
    """spec-presence-survey, Table III: groups [30-35) Male (6 rows, the erratum's missing
    '32 Male' restored) and [35-40) Female (4 rows)."""
    rows = [(30, "M", "Hep", 1), (30, "M", "Hep", 1), (30, "M", "HIV", 1), (32, "M", "Hep", 1), (32, "M", "HIV", 1),
            (32, "M", "HIV", 1), (36, "F", "Flu", 2), (38, "F", "Flu", 2), (38, "F", "Heart", 2), (38, "F", "Heart", 2)]
    make_table(engine, "t3", ["age", "sex", "disease", "g"], rows)
    anatomy("t3", "age,sex", "disease", l=2, out="a", engine=engine, groups="g")
    assert set(engine.fetch_rows("SELECT * FROM a_st")[1]) == {(1, "Hep", 3), (1, "HIV", 3), (2, "Flu", 2),
                                                                (2, "Heart", 2)}


@st.composite
def eligible_tables(draw):
    l = draw(st.integers(2, 4))
    n = draw(st.integers(l, 40))
    values = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", None]), min_size=n, max_size=n))
    counts = Counter(values)
    # keep the table eligible: no value above n/l (drop the excess of the most frequent values)
    cap = n // l
    kept, seen = [], Counter()
    for v in values:
        if seen[v] < cap:
            kept.append(v)
            seen[v] += 1
    ages = draw(st.lists(st.integers(18, 80), min_size=len(kept), max_size=len(kept)))
    return l, [(i, ages[i], "MF"[i % 2], v) for i, v in enumerate(kept)], counts


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=eligible_tables(), seed=st.integers(0, 5))
def test_anatomy_properties(engine, data, seed):
    l, rows, _ = data
    engine.execute("DROP TABLE IF EXISTS src")
    make_table(engine, "src", ["id", "age", "sex", "disease"], rows)
    n = len(rows)
    top = max(Counter(r[3] for r in rows).values())
    if top * l > n:
        with pytest.raises(InfeasibleError, match=f"holds {top} of {n} rows"):
            anatomy("src", "id,age,sex", "disease", l=l, out="a", engine=engine, replace=True, seed=seed)
        return
    r = anatomy("src", "id,age,sex", "disease", l=l, out="a", engine=engine, replace=True, seed=seed)
    qit = engine.fetch_rows("SELECT id, age, sex, group_id FROM a_qit")[1]
    st_rows = engine.fetch_rows("SELECT group_id, disease, count FROM a_st")[1]
    # every record appears once; the projection of QIT is the original QI multiset
    assert sorted(q[:3] for q in qit) == sorted(x[:3] for x in rows)
    # ST counts per group sum to the group's QIT rows, and ST holds the original sensitive multiset
    sizes = Counter(q[3] for q in qit)
    st_sizes, per_group = Counter(), defaultdict(Counter)
    for g, v, c in st_rows:
        st_sizes[g] += c
        per_group[g][v] += c
    assert st_sizes == sizes
    total = Counter()
    for g in per_group.values():
        total.update(g)
    assert total == Counter(x[3] for x in rows)
    # every group is l-diverse (an independent count): >= l distinct values, none above 1/l
    for g, counts in per_group.items():
        assert len(counts) >= l and max(counts.values()) * l <= sum(counts.values())
    assert r.groups == n // l
    # each QIT row's group holds the record's own sensitive value
    by_id = {x[0]: x[3] for x in rows}
    assert all(per_group[q[3]][by_id[q[0]]] >= 1 for q in qit)


def test_seeded_and_shuffled(engine):
    rows = [(i, 20 + i % 50, "MF"[i % 2], "abcdefgh"[i % 8]) for i in range(400)]
    make_table(engine, "src", ["id", "age", "sex", "disease"], rows)
    anatomy("src", "id,age,sex", "disease", l=4, out="a", engine=engine, seed=1)
    anatomy("src", "id,age,sex", "disease", l=4, out="b", engine=engine, seed=1)
    anatomy("src", "id,age,sex", "disease", l=4, out="c", engine=engine, seed=2)
    a = engine.fetch_rows("SELECT id, group_id FROM a_qit")[1]
    assert a == engine.fetch_rows("SELECT id, group_id FROM b_qit")[1]
    assert set(a) != set(engine.fetch_rows("SELECT id, group_id FROM c_qit")[1])
    ids = [x[0] for x in a]
    assert ids != sorted(ids)  # QIT rows are not in source order


def test_null_sensitive_is_a_value(engine):
    rows = [(i, "MF"[i % 2], [None, "flu", "hiv"][i % 3]) for i in range(12)]
    make_table(engine, "src", ["age", "sex", "disease"], rows)
    anatomy("src", "age,sex", "disease", l=3, out="a", engine=engine)
    st_rows = engine.fetch_rows("SELECT group_id, disease, count FROM a_st")[1]
    assert sum(c for _, v, c in st_rows if v is None) == 4
    assert all(len({v for g2, v, _ in st_rows if g2 == g}) == 3 for g, _, _ in st_rows)


@pytest.mark.parametrize("l, message", [(1, "integer >= 2"), (1.5, "integer >= 2"), (True, "integer >= 2"),
                                        (7, "the most frequent value of 'disease', 'flu', holds 6 of 12 rows")])
def test_bad_input(engine, l, message):
    rows = [(i, "MF"[i % 2], "flu" if i % 2 else ["hiv", "hep"][i % 4 // 2]) for i in range(12)]
    make_table(engine, "src", ["age", "sex", "disease"], rows)
    with pytest.raises((InputError, InfeasibleError), match=message):
        anatomy("src", "age,sex", "disease", l=l, out="a", engine=engine)
    assert not engine.exists("a_qit")


def test_bad_columns(engine):
    make_table(engine, "src", ["age", "disease"], [(1, "a"), (2, "b")])
    with pytest.raises(InputError, match="'agee' not found"):
        anatomy("src", "agee", "disease", l=2, out="a", engine=engine)
    with pytest.raises(InputError, match="group column 'g' not found"):
        anatomy("src", "age", "disease", l=2, out="a", engine=engine, groups="g")


def test_view_release_and_cli(engine, tmp_path, capsys):
    rows = [(i, "MF"[i % 2], "abcde"[i % 5]) for i in range(50)]
    make_table(engine, "src", ["age", "sex", "disease"], rows)
    anatomy("src", "age,sex", "disease", l=5, out="v", engine=engine, as_view=True)
    kinds = dict(engine.fetch_rows("SELECT table_name, table_type FROM information_schema.tables")[1])
    assert kinds["v_qit"] == "VIEW" and kinds["v_st"] == "VIEW" and kinds["v_qit__data"] == "BASE TABLE"
    csv = tmp_path / "s.csv"
    csv.write_text("age,sex,disease\n" + "\n".join(f"{a},{s},{d}" for a, s, d in rows) + "\n")
    out = tmp_path / "rel.csv"
    code = main(["anonymize", str(csv), "--method", "anatomy", "--qi", "age,sex", "--sensitive", "disease",
                 "--l", "5", "--out", "r", "--export", str(out), "--quiet"])
    assert code == 0 and "verified: l-diversity (distinct) holds (achieved l = 5)" in capsys.readouterr().out
    assert (tmp_path / "rel_qit.csv").read_text().splitlines()[0] == "age,sex,group_id"
    assert main(["anonymize", str(csv), "--method", "anatomy", "--qi", "age", "--sensitive", "disease", "--l", "6",
                 "--out", "r", "--quiet"]) == 2
    assert "largest feasible l is 5" in capsys.readouterr().err


def test_docs_anatomy_example_runs():
    """docs/methods.md's Anatomy example runs after its Mondrian one (same session), on fewer rows."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "methods.md").read_text()
    mondrian = page.split("## Mondrian: multidimensional generalization", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    block = page.split("## Anatomy: QIT/ST releases", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(mondrian.replace("rows=100_000", "rows=2_000"), scope)
    exec(block, scope)
    r = scope["r"]
    assert r.report.holds and r.groups == 200
    rows = scope["eng"].fetch("SELECT * FROM census_anatomy_st WHERE group_id = 1")
    assert sum(x["count"] for x in rows) >= 10 and len(rows) == sum(x["count"] for x in rows)


def test_docs_query_example_runs():
    """docs/methods.md's query example runs after its Mondrian and Anatomy ones, on fewer rows."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "methods.md").read_text()

    def block(title):
        return page.split(title, 1)[1].split("```python", 1)[1].split("```", 1)[0]

    scope: dict = {}
    exec(block("## Mondrian: multidimensional generalization").replace("rows=100_000", "rows=3_000"), scope)
    exec(block("## Anatomy: QIT/ST releases"), scope)
    code = block("## Aggregate queries over a release").strip().splitlines()
    exec("\n".join(code), scope)
    actual, estimate = eval(code[2], scope)  # true_count(...), anatomy_estimate(...)
    assert actual == scope["eng"].scalar("SELECT count(*) FROM census WHERE age BETWEEN 30 AND 39 "
                                         "AND sex = 'Female' AND income IN (2000, 3000)")
    assert estimate >= 0
    assert len(scope["qs"]) == 1000 and eval(code[-1], scope) >= 0
