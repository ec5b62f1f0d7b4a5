"""Bad input, identifier safety, NULL semantics and the column-key fallback of the checks."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction as F

import pytest

import anonydb.checker as check_mod
from anonydb import InputError
from anonydb.checker import check
from conftest import DATASETS, make_table, need_shared

NASTY = ['zip "code"; DROP TABLE victim; --', "âge ünïcode", "col with spaces", "select"]


@pytest.fixture
def small(engine):
    return make_table(engine, "small", ["zip", "age", "disease", "salary"],
                      [("476", 2, "flu", 3), ("476", 2, "hiv", 4), ("479", 4, "flu", 5), ("479", 4, "flu", 6)])


@pytest.mark.parametrize("params, message", [
    (dict(k=0), "k must be an integer >= 1"),
    (dict(k=2.5), "k must be an integer >= 1"),
    (dict(l=0.5), "l must be a number >= 1"),
    (dict(l=2.5), "distinct l-diversity needs an integer l"),
    (dict(l=2, l_variant="recursive"), "needs the constant c"),
    (dict(l=2, l_variant="fancy"), "variant must be one of"),
    (dict(t=1.5), "t must lie in [0, 1]"),
    (dict(t=-0.1), "t must lie in [0, 1]"),
    (dict(t=0.2, distance="manhattan"), "distance must be one of"),
    (dict(n=0, t=0.2), "n must be an integer >= 1"),
    (dict(n=10), "needs t as well as n"),
    (dict(alpha=0.5), "needs k as well as alpha"),
    (dict(alpha=1.5, k=2), "alpha must be a number in (0, 1]"),
    (dict(delta=0), "delta must be a finite number > 0"),
    (dict(), "no privacy model requested"),
])
def test_bad_parameters_name_the_parameter(engine, small, params, message):
    with pytest.raises(InputError) as e:
        check(small, "zip,age", "disease", engine=engine, **params)
    assert message in str(e.value)


def test_missing_column_lists_the_available_ones(engine, small):
    with pytest.raises(InputError, match=r"column 'zipcode' not found in small; its columns are: zip, age, disease, salary"):
        check(small, "zipcode,age", "disease", engine=engine, k=2)
    with pytest.raises(InputError, match="column 'illness' not found"):
        check(small, "zip,age", "illness", engine=engine, l=2)


def test_sensitive_listed_as_qi(engine, small):
    with pytest.raises(InputError, match="'disease' is given both as the sensitive attribute and as a quasi-identifier"):
        check(small, "zip,disease", "disease", engine=engine, l=2)


def test_duplicate_qi_and_missing_sensitive(engine, small):
    with pytest.raises(InputError, match="listed twice"):
        check(small, "zip,zip", engine=engine, k=2)
    with pytest.raises(InputError, match="needs a sensitive attribute"):
        check(small, "zip", engine=engine, l=2)


def test_empty_table(engine):
    engine.execute("CREATE TABLE empty (zip VARCHAR, disease VARCHAR)")
    with pytest.raises(InputError, match="empty: there is nothing to check"):
        check("empty", "zip", "disease", engine=engine, k=2)


def test_unknown_source(engine):
    with pytest.raises(InputError, match="no table or view named 'nope.csv'"):
        check("nope.csv", "zip", engine=engine, k=2)


def test_non_numeric_values_in_a_numeric_qi_are_listed(engine):
    need_shared()
    with pytest.raises(InputError, match=r"numeric attribute 'age' holds non-numeric values: '4e' \(row 2\), '7f' \(row 6\)"):
        check(str(DATASETS / "toy" / "test_dirty.csv"), "age,gender", engine=engine, k=2, kinds={"age": "numeric"})


def test_infeasible_k_and_l_say_why(engine, small):
    r = check(small, "zip", "disease", engine=engine, k=5, l=3)
    assert not r.holds
    assert "k = 5 exceeds the table's 4 rows" in r["k-anonymity"].note
    assert "l = 3 exceeds the 2 distinct values of 'disease'" in r["l-diversity"].note
    p = check(small, "zip", "disease", engine=engine, l=2, l_variant="probabilistic")
    assert "covers 3 of 4 rows, more than 1/2" in p["l-diversity"].note


@pytest.mark.parametrize("nasty", NASTY)
def test_hostile_identifiers_work_and_cannot_inject(engine, nasty):
    engine.execute("CREATE TABLE victim (x INTEGER)")
    table = f"t; DROP TABLE victim; {nasty}"
    make_table(engine, table, [nasty, "disease"], [("a", "flu"), ("a", "hiv"), ("b", "flu"), ("b", "flu")])
    r = check(table, [nasty], "disease", engine=engine, k=2, l=2, t=0.5)
    assert r["k-anonymity"].holds and r["k-anonymity"].achieved == {"k": 2}
    v = r["l-diversity"]
    assert not v.holds and v.violations[0].key == {nasty: "b"} and v.violations[0].distribution == {"flu": 2}
    assert engine.exists("victim") and engine.exists(table)


def test_null_qi_is_a_value_of_its_own(engine):
    t = make_table(engine, "nulls", ["zip", "disease"],
                   [(None, "flu"), (None, "hiv"), ("476", "flu"), ("476", "cancer"), ("476", "flu")])
    r = check(t, "zip", "disease", engine=engine, k=3, l=2, max_groups=None)
    assert r.groups == 2
    v = r["k-anonymity"]
    assert v.achieved == {"k": 2} and [g.key for g in v.violations] == [{"zip": None}]
    assert r["l-diversity"].holds


def test_null_sensitive_value_is_a_value_of_its_own(engine):
    t = make_table(engine, "nullsa", ["zip", "disease"], [("a", None), ("a", "flu"), ("b", None), ("b", None)])
    r = check(t, "zip", "disease", engine=engine, l=2, t=0, max_groups=None)
    assert r["l-diversity"].achieved == {"l": 1}
    assert r["l-diversity"].violations[0].distribution == {None: 2}
    # Q = (NULL 3/4, flu 1/4); group a = (1/2, 1/2): equal EMD 1/4; group b = (1, 0): 1/4
    assert r["t-closeness"].achieved == {"t": F(1, 4)}


def test_column_key_fallback_gives_the_same_report(engine, monkeypatch):
    rows = [("476**", "2*", "Heart Disease", 3), ("476**", "2*", "Heart Disease", 4), ("476**", "2*", "Cancer", 5),
            ("4790*", ">=40", "Flu", 6), ("4790*", ">=40", "Heart Disease", 11), ("4790*", ">=40", "Cancer", 8),
            (None, "3*", "Heart Disease", 7), (None, "3*", None, 9), (None, "3*", "Cancer", 10)]
    t = make_table(engine, "fb", ["zip", "age", "disease", "salary"], rows)
    params = dict(k=4, l=3, t=0.1)
    # a small table's k check is keyed by its columns; the dictionary-coded integer key agrees
    k_by_columns = check(t, "zip,age", engine=engine, k=4).to_dict()
    monkeypatch.setattr(check_mod, "COLUMN_KEY_ROWS", 0)
    assert check(t, "zip,age", engine=engine, k=4).to_dict() == k_by_columns
    assert k_by_columns["verdicts"][0]["violations"][0] == {"key": {"zip": "476**", "age": "2*"}, "size": 3,
                                                            "value": 3}
    coded = check(t, "zip,age", "disease", engine=engine, **params).to_dict()
    nt_coded = check(t, "zip,age", "salary", engine=engine, n=4, t=0.1).to_dict()
    monkeypatch.setattr(check_mod, "KEY_LIMIT", 1)  # too many tuples for an integer key
    assert check(t, "zip,age", "disease", engine=engine, **params).to_dict() == coded
    assert check(t, "zip,age", "salary", engine=engine, n=4, t=0.1).to_dict() == nt_coded
    assert coded["verdicts"][0]["violations"][0]["key"] == {"zip": "476**", "age": "2*"}


def test_hierarchy_missing_sensitive_values_is_named(engine, small):
    from anonydb import Hierarchy

    h = Hierarchy.from_rows([["flu", "infection", "*"], ["cold", "infection", "*"]])
    with pytest.raises(InputError, match="hiv"):
        check(small, "zip", "disease", engine=engine, t=0.3, hierarchies={"disease": h})


def test_hierarchy_for_an_unused_attribute_is_refused(engine, small):
    from anonydb import Hierarchy

    h = Hierarchy.from_rows([["1", "*"]])
    with pytest.raises(InputError, match="neither a quasi-identifier nor the sensitive attribute"):
        check(small, "zip", "disease", engine=engine, k=2, hierarchies={"salary": h})


def test_a_users_own_duckdb_connection_is_used_and_left_open():
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE mine AS SELECT * FROM (VALUES ('a', 1), ('a', 2), ('b', 1)) v(q, s)")
    r = check("mine", "q", "s", engine=con, k=2)
    assert r["k-anonymity"].achieved == {"k": 1}
    # scratch tables are gone, the source is untouched, the connection still works
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__check%'").fetchall() == [(0,)]
    assert con.execute("SELECT count(*) FROM mine").fetchall() == [(3,)]
    con.close()


def test_scratch_tables_are_dropped_after_a_failure(engine, small):
    with pytest.raises(InputError):
        check(small, "zip", "disease", engine=engine, t=0.3, distance="hierarchical")  # no hierarchy given
    left = engine.scalar("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '__check%'")
    assert left == 0


def test_groups_counted_with_their_values_as_bits_up_to_the_engines_limit(engine, monkeypatch):
    """k and distinct l read only each group's size and number of distinct values: on DuckDB the
    integer-keyed check counts both in one aggregation (the values as bits, no cells) while the
    sensitive attribute has at most Engine.group_bits = 64 values, NULL one of them; past that,
    and for a model that reads the cells, it builds the cells (here with the counts never packed:
    test_groups_judged_by_their_count_vectors). The report is the same either way."""
    monkeypatch.setattr(check_mod, "COLUMN_KEY_ROWS", 0)
    monkeypatch.setattr(engine, "packed_sums", 0)

    def templates(table, **params):
        engine.log.clear()
        report = check(table, "zip", "disease", engine=engine, max_groups=None, **params).to_dict()
        return report, {x.template for x in engine.log}

    for values, bits_used in ((63, True), (64, False)):  # and NULL: 64 values, then 65
        rows = [(f"z{i % 7}", None if i % 11 == 0 else f"d{i % values}") for i in range(400)]
        t = make_table(engine, f"wide{values}", ["zip", "disease"], rows)
        report, used = templates(t, k=3, l=60)
        assert ("check_groups.sql.j2" not in used) == bits_used
        monkeypatch.setattr(engine, "group_bits", 0)
        assert templates(t, k=3, l=60) == (report, used | {"check_groups.sql.j2", "check_global.sql.j2"})
        monkeypatch.setattr(engine, "group_bits", 64)
        # against the rows themselves: group z<j> holds rows i = j, j + 7, ... (NULL for i % 11 == 0)
        distinct = {f"z{j}": len({r[1] for r in rows if r[0] == f"z{j}"}) for j in range(7)}
        v = report["verdicts"][1]
        assert v["achieved"] == {"l": min(distinct.values())} and v["violating_groups"] == 7
        assert {g["key"]["zip"]: g["value"] for g in v["violations"]} == distinct
        z0 = next(g for g in v["violations"] if g["key"] == {"zip": "z0"})
        assert z0["size"] == 58 and z0["distribution"]["None"] == 6
        assert z0["distribution"] == {str(s): [r[1] for r in rows if r[0] == "z0"].count(s)
                                      for s in {r[1] for r in rows if r[0] == "z0"}}
    # entropy l reads the cells' counts: the cells are built
    _, used = templates(t, l=2, l_variant="entropy")
    assert "check_groups.sql.j2" in used


def test_expected_groups_keys_a_release_by_its_columns(engine, monkeypatch):
    """A caller that knows the table holds few groups (a release: one per class) has them keyed by
    the columns, not the dictionary-coded integer: the same report, without the dictionary's scan.
    At most one group per COLUMN_KEY_SHARE rows; more groups keep the coded key."""
    rows = [(f"z{i % 10}", f"a{i % 5}", f"d{i % 3}") for i in range(80)]
    t = make_table(engine, "rel10", ["zip", "age", "disease"], rows)
    monkeypatch.setattr(check_mod, "COLUMN_KEY_ROWS", 0)

    def run(**kw):
        engine.log.clear()
        report = check(t, "zip,age", "disease", engine=engine, k=8, l=3, max_groups=None, **kw).to_dict()
        return report, {x.template for x in engine.log}

    coded, used = run()
    assert "check_dict.sql.j2" in used and "check_cells_columns.sql.j2" not in used
    by_columns, used = run(expected_groups=10)  # 10 groups * 8 <= 80 rows
    assert "check_dict.sql.j2" not in used and "check_cells_columns.sql.j2" in used
    assert by_columns == coded and coded["groups"] == 10
    assert coded["verdicts"][0]["achieved"] == {"k": 8} and coded["verdicts"][1]["holds"]
    _, used = run(expected_groups=11)  # 11 * 8 > 80: the coded key
    assert "check_dict.sql.j2" in used


def test_groups_judged_by_their_count_vectors(engine, monkeypatch):
    """The models that judge a group by its sensitive-value counts alone (Model.by_distribution)
    have each group's counts packed into integer sums in the one aggregation of the source
    (Engine.packed_sums) and judge each distinct count vector once, weighted by its groups. The
    report is the one the cells give, in one sum and in several (PACKED_WIDTH = 12: one count a
    sum here), and the worst groups are listed as before, by value and then by QI values, though
    many groups share a vector. Checked against the rows for equal-distance t-closeness."""
    monkeypatch.setattr(check_mod, "COLUMN_KEY_ROWS", 0)
    rows = [(f"z{i % 40}", f"a{i % 3}", None if i % 13 == 0 else f"d{(i * i) % 9}") for i in range(600)]
    t = make_table(engine, "vec", ["zip", "age", "disease"], rows)

    def run(**params):
        engine.log.clear()
        report = check(t, "zip,age", "disease", engine=engine, max_groups=4, **params).to_dict()
        return report, {x.template for x in engine.log}

    cases = (dict(t=0.1), dict(t=0.1, distance="ordered"), dict(l=2, l_variant="entropy"), dict(alpha=0.3, k=2),
             dict(delta=0.5), dict(l=2, l_variant="recursive", c=1), dict(l=3, l_variant="probabilistic", k=6))
    sums, width = engine.packed_sums, check_mod.PACKED_WIDTH
    for params in cases:
        packed, used = run(**params)
        assert "check_unpack.sql.j2" in used, params
        monkeypatch.setattr(check_mod, "PACKED_WIDTH", 12)
        monkeypatch.setattr(engine, "packed_sums", 16)
        several, used = run(**params)
        assert "check_unpack.sql.j2" in used
        monkeypatch.setattr(engine, "packed_sums", 0)
        cells, used = run(**params)
        assert "check_unpack.sql.j2" not in used
        monkeypatch.setattr(engine, "packed_sums", sums)
        monkeypatch.setattr(check_mod, "PACKED_WIDTH", width)
        assert packed == several == cells, params
    # equal EMD against the rows: D = sum over values of max(p - q, 0), exact
    report, _ = run(t=0.1)
    q = Counter(r[2] for r in rows)
    groups: dict[tuple, list] = {}
    for z, a, d in rows:
        groups.setdefault((z, a), []).append(d)

    def emd(values):
        c = Counter(values)
        return sum(max(F(c[s], len(values)) - F(n, len(rows)), 0) for s, n in q.items())

    worst = sorted(groups, key=lambda g: (-emd(groups[g]), g))
    v = report["verdicts"][0]
    assert v["groups"] == len(groups) == 120
    assert v["violating_groups"] == sum(emd(x) > F(1, 10) for x in groups.values())
    assert v["violating_rows"] == sum(len(x) for x in groups.values() if emd(x) > F(1, 10))
    assert [(g["key"]["zip"], g["key"]["age"]) for g in v["violations"]] == worst[:4]
    assert [g["value"] for g in v["violations"]] == [float(emd(groups[g])) for g in worst[:4]]
    assert v["violations"][0]["distribution"] == {str(s): n for s, n in Counter(groups[worst[0]]).items()}
