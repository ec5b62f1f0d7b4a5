"""Releases of record owners (``person="pid"``) by Mondrian, full-domain generalization and Anatomy,
judged independently in plain Python with the record-owner oracle (tests/person_oracle.py).

Random visit tables: 3-25 persons with 1-6 records each, two numeric QIs constant per person
(small ranges, so persons share QI tuples and classes merge), a sensitive attribute of 2-5 values
drawn per record (from a pool of the person's own, so values repeat on a person's visits), and
random models (k 2-4, sometimes an l-diversity variant, t-closeness, (alpha,k) or delta).

* Each run succeeds or is refused (InfeasibleError / InputError, conftest.outcome); the oracle
  says which when it can: the whole table judged as one class by persons fails -> refused (every
  model here holds on a union of classes of persons when it holds on each, so no partition can
  satisfy it); holds -> a release (one class is one).
* A release is rebuilt from what it publishes: Mondrian's boxes cover each source record once
  (strict cuts: disjoint), class by class the released rows are the covered records (counts and
  sensitive multisets); full-domain's rows are the source records generalized by the hierarchy
  labels this file wrote, with the persons of failing groups (and only those) gone; Anatomy's
  QIT rows are a group's records (persons have unique QI tuples, so each QIT row names its
  person) and its ST counts the persons holding each value. Then every requested model holds
  by persons on the classes (person_oracle), and a person's records never span two classes.
* With one record per person, person="pid" releases what the row-level call releases.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from anonydb import Hierarchy
from anonydb.errors import InputError
from anonydb.methods.anatomy import anatomy
from anonydb.methods.fulldomain import fulldomain
from anonydb.methods.mondrian import anonymize

from conftest import examples, outcome
from person_oracle import grouped, judge_all, models_of, primary_values, whole_table

#: no shrinking: a failure reports the example as drawn (shrinking these multi-call examples runs for
#: minutes); the hand-built tests below reproduce what the properties found
SETTINGS = settings(max_examples=examples(20), deadline=None,
                    phases=[Phase.explicit, Phase.reuse, Phase.generate],
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
VALUES = ["s1", "s2", "s3", "s4", "s5"]
COLUMNS = ["pid", "x", "y", "s"]


# -- tables ---------------------------------------------------------------------------------------
@st.composite
def visits(draw, one_record: bool = False, unique_qi: bool = False, span: int = 4):
    """Rows (dicts pid, x, y, s) in a drawn order: 3-25 persons (pid 100, 101, ...), 1-6 records
    each (1 with ``one_record``), x and y in 0..span-1 constant per person (a tuple of its own
    per person with ``unique_qi``), s drawn per record from the person's own pool of values."""
    values = VALUES[:draw(st.integers(2, 5), label="values")]
    most = span * span if unique_qi else 25
    n = draw(st.integers(3, min(25, most)), label="persons")
    if unique_qi:
        qis = draw(st.permutations([(x, y) for x in range(span) for y in range(span)]), label="qi")[:n]
    else:
        cell = st.tuples(st.integers(0, span - 1), st.integers(0, span - 1))
        qis = draw(st.lists(cell, min_size=n, max_size=n), label="qi")
    rows = []
    for p, (x, y) in enumerate(qis):
        pool = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3, unique=True))
        for _ in range(1 if one_record else draw(st.integers(1, 6))):
            rows.append(dict(pid=100 + p, x=x, y=y, s=draw(st.sampled_from(pool))))
    return draw(st.permutations(rows))


def load(con, rows, name: str = "v") -> str:
    con.execute(f"CREATE OR REPLACE TABLE {name} (pid INTEGER, x INTEGER, y INTEGER, s VARCHAR)")
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", [[r[c] for c in COLUMNS] for r in rows])
    return name


def fetch(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def columns(con, table: str) -> list[str]:
    cur = con.execute(f"SELECT * FROM {table} LIMIT 0")
    names = [d[0] for d in cur.description]
    cur.fetchall()
    return names


def columns_of_db(con) -> set[str]:
    """The tables and views of the connection (a refused run must leave no release behind)."""
    return {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


#: one privacy model beside k, drawn per example (None: k alone)
EXTRA = st.one_of(
    st.none(),
    st.fixed_dictionaries({"l": st.sampled_from([2, 3])}),
    st.fixed_dictionaries({"l": st.sampled_from([1.5, 2]), "l_variant": st.just("entropy")}),
    st.fixed_dictionaries({"l": st.sampled_from([1.5, 2]), "l_variant": st.just("probabilistic")}),
    st.fixed_dictionaries({"l": st.just(2), "l_variant": st.just("recursive"), "c": st.sampled_from([1, 2, 3])}),
    st.fixed_dictionaries({"t": st.sampled_from([0.2, 0.35, 0.5])}),
    st.fixed_dictionaries({"t": st.sampled_from([0.2, 0.35]), "distance": st.just("ordered")}),
    st.fixed_dictionaries({"alpha": st.sampled_from([0.6, 0.8])}),
    st.fixed_dictionaries({"delta": st.sampled_from([1.0, 2.0])}),
)


@st.composite
def models(draw):
    params = {"k": draw(st.integers(2, 4), label="k")}
    params.update(draw(EXTRA, label="model") or {})
    return params


def failing(table, params) -> list[str]:
    return [name for name, o in judge_all(table, params).items() if not o.holds]


def tally(params, got) -> None:
    """Record (hypothesis statistics) which models were drawn and how the runs ended."""
    event(f"{'+'.join(name for name, _ in models_of(params))}: {got[0] if got[0] == 'ok' else got[1]}")


def expect(whole_fails: bool, got) -> None:
    """The whole table failing by persons means no partition of persons holds: a refusal; holding
    means one class is a release: a success (Mondrian, and full-domain's top node)."""
    if whole_fails:
        assert got[0] == "refused", f"the whole table fails by persons, yet a release: {got[1]}"
    else:
        assert got[0] == "ok", f"the whole table holds by persons (one class), yet refused: {got[1]}"


# -- Mondrian -------------------------------------------------------------------------------------
def label(lo, hi) -> str:
    return str(lo) if lo == hi else f"[{lo}, {hi}]"


def mondrian_classes(con, rows, out: str = "rel") -> tuple[list, dict]:
    """Each source row's class, rebuilt from the release's boxes (one covering class per row, as
    strict cuts give disjoint boxes), with the release's rows per class checked against the
    covered records: their number and their sensitive multiset. Returns (classes in row order,
    class -> box)."""
    assert set(columns(con, out)) == {"eq_class", "x", "x_lo", "x_hi", "y", "y_lo", "y_hi", "s"}, \
        columns(con, out)  # the person column is never published
    got = fetch(con, f"SELECT * FROM {out}")
    boxes, released = {}, defaultdict(Counter)
    for g in got:
        box = (g["x_lo"], g["x_hi"], g["y_lo"], g["y_hi"])
        assert boxes.setdefault(g["eq_class"], box) == box, f"class {g['eq_class']} publishes two boxes"
        assert g["x"] == label(g["x_lo"], g["x_hi"]) and g["y"] == label(g["y_lo"], g["y_hi"]), g
        released[g["eq_class"]][g["s"]] += 1
    assert len(set(boxes.values())) == len(boxes), "two classes publish one box"
    classes = []
    for r in rows:
        inside = [c for c, (xl, xh, yl, yh) in boxes.items() if xl <= r["x"] <= xh and yl <= r["y"] <= yh]
        assert len(inside) == 1, (r, inside)
        classes.append(inside[0])
    covered = defaultdict(Counter)
    for r, c in zip(rows, classes):
        covered[c][r["s"]] += 1
    assert dict(covered) == dict(released), "released rows per class are not the covered source records"
    return classes, boxes


def one_class_per_person(rows, classes) -> dict:
    of = defaultdict(set)
    for r, c in zip(rows, classes):
        of[r["pid"]].add(c)
    split = {p: cs for p, cs in of.items() if len(cs) > 1}
    assert not split, f"persons split across classes: {split}"
    return {p: next(iter(cs)) for p, cs in of.items()}


@SETTINGS
@given(rows=visits(), params=models())
def test_mondrian_release_by_persons(rows, params):
    """Refused exactly when the whole table fails by persons; a release is the records, each in
    the one class whose box covers it, every person in one class, every model holding by persons,
    and the utility's DM counts persons (and records per_record)."""
    con = duckdb.connect()
    load(con, rows)
    whole = whole_table(rows, "s", "pid")
    got = outcome(lambda: anonymize("v", ["x", "y"], "s", out="rel", engine=con, person="pid", **params))
    tally(params, got)
    expect(bool(failing(whole, params)), got)
    if got[0] != "ok":
        assert "rel" not in columns_of_db(con)
        return
    r = got[1]
    classes, boxes = mondrian_classes(con, rows)
    owner = one_class_per_person(rows, classes)
    event("one class" if len(boxes) == 1 else "several classes")
    release = grouped(rows, classes, "s", "pid")
    verdicts = judge_all(release, params)
    assert all(o.holds for o in verdicts.values()), {m: o.achieved for m, o in verdicts.items()}
    persons = Counter(owner.values())
    records = Counter(classes)
    assert (r.rows, r.classes, r.report.persons) == (len(rows), len(boxes), whole.N)
    assert r.report.holds
    assert r.utility["persons"] == whole.N
    assert r.utility["dm"] == sum(n * n for n in persons.values())
    assert r.utility["per_record"]["dm"] == sum(n * n for n in records.values())


# -- full-domain ----------------------------------------------------------------------------------
SPAN = 6


def fd_label(v: int, level: int):
    """The label of value v at ``level`` of the hierarchy below (level 0: the value itself)."""
    return [v, f"{v // 2 * 2}-{v // 2 * 2 + 1}", "lo" if v < 4 else "hi", "*"][level]


def fd_hierarchy() -> Hierarchy:
    return Hierarchy.from_rows([tuple(str(fd_label(v, lv)) for lv in range(4)) for v in range(SPAN)])


@SETTINGS
@given(rows=visits(span=SPAN), params=models(), suppression=st.sampled_from([0.0, 0.0, 0.2]))
def test_fulldomain_release_by_persons(rows, params, suppression):
    """At the levels it reports, the release is every record of the persons outside failing
    groups generalized by this file's labels, those persons (within max_suppression) suppressed
    with all their records, eq_class the generalized tuple, every model holding by persons
    (t and delta against the whole source)."""
    con = duckdb.connect()
    load(con, rows)
    whole = whole_table(rows, "s", "pid")
    bad = failing(whole, params)

    def run():
        return fulldomain("v", ["x", "y"], "s", hierarchies={"x": fd_hierarchy(), "y": fd_hierarchy()}, out="rel",
                          engine=con, person="pid", max_suppression=suppression, **params)

    got = outcome(run)
    tally(params, got)
    if not bad or suppression == 0 or {"k", "l-distinct"} & set(bad):
        # with suppression a subset of persons may hold a model the whole table fails (entropy,
        # (alpha,k), ...), except k and distinct l, which fail on every part of such a table
        expect(bool(bad), got)
    if got[0] != "ok":
        assert "rel" not in columns_of_db(con)
        return
    r = got[1]
    lx, ly = r.levels["x"], r.levels["y"]
    assert set(columns(con, "rel")) == {"eq_class", "x", "y", "s"}
    # the groups at the chosen levels, judged by persons against the whole source
    keys = [(str(fd_label(w["x"], lx)), str(fd_label(w["y"], ly))) for w in rows]
    at_levels = grouped(rows, keys, "s", "pid", reference=whole)
    fails = set()
    for name, p in models_of(params):
        o = at_levels.judge(name, **p)
        fails |= {key[0] for key, ok in o.ok.items() if not ok}
    gone = {w["pid"] for w, key in zip(rows, keys) if key in fails}
    assert r.suppressed == len(gone) <= suppression * whole.N, (r.suppressed, gone)
    assert r.persons == whole.N - len(gone)
    event(f"levels {lx + ly} of 6; " + ("persons suppressed" if gone else "none suppressed"))
    kept = [(w, key) for w, key in zip(rows, keys) if w["pid"] not in gone]
    got_rows = fetch(con, "SELECT * FROM rel")
    assert Counter((str(g["x"]), str(g["y"]), g["s"]) for g in got_rows) == \
        Counter((*key, w["s"]) for w, key in kept), "the release is not the kept persons' records generalized"
    tuples = defaultdict(set)
    for g in got_rows:
        tuples[g["eq_class"]].add((str(g["x"]), str(g["y"])))
    assert all(len(t) == 1 for t in tuples.values()) and \
        len({next(iter(t)) for t in tuples.values()}) == len(tuples), "eq_class is not the generalized tuple"
    assert r.rows == len(kept) and r.classes == len(tuples)
    # every requested model holds by persons on the released classes
    release = grouped([w for w, _ in kept], [key for _, key in kept], "s", "pid", reference=whole)
    verdicts = judge_all(release, params)
    assert all(o.holds for o in verdicts.values()), {m: o.achieved for m, o in verdicts.items()}
    one_class_per_person([w for w, _ in kept], [key for _, key in kept])


# -- Anatomy --------------------------------------------------------------------------------------
L_MODELS = st.one_of(
    st.fixed_dictionaries({"l": st.sampled_from([2, 3])}),
    st.fixed_dictionaries({"l": st.sampled_from([2, 3]), "l_variant": st.just("entropy")}),
    st.fixed_dictionaries({"l": st.sampled_from([2, 3]), "l_variant": st.just("probabilistic")}),
    st.fixed_dictionaries({"l": st.just(2), "l_variant": st.just("recursive"), "c": st.sampled_from([1, 2, 3])}),
)


def check_anatomy(con, rows, params, r, out: str = "an") -> None:
    """The QIT/ST pair against the records: each person's QIT rows (named by the person's unique
    QI tuple) all in one group, every one of their records listed; ST's count of a value in a
    group the persons of the group holding it; the requested l-diversity holds by persons."""
    assert columns(con, f"{out}_qit") == ["x", "y", "group_id"]
    assert columns(con, f"{out}_st") == ["group_id", "s", "count"]
    person_of = {(w["x"], w["y"]): w["pid"] for w in rows}
    assert len(person_of) == len({w["pid"] for w in rows}), "the table must give persons unique QI tuples"
    groups_of = defaultdict(set)
    qit = Counter()
    for g in fetch(con, f"SELECT * FROM {out}_qit"):
        groups_of[person_of[(g["x"], g["y"])]].add(g["group_id"])
        qit[(g["x"], g["y"], g["group_id"])] += 1
    split = {p: gs for p, gs in groups_of.items() if len(gs) > 1}
    assert not split, f"persons split across groups: {split}"
    group = {p: next(iter(gs)) for p, gs in groups_of.items()}
    assert set(group) == {w["pid"] for w in rows}
    assert qit == Counter((w["x"], w["y"], group[w["pid"]]) for w in rows), "QIT rows are not the records"
    classes = [group[w["pid"]] for w in rows]
    holders = defaultdict(set)
    for w, g in zip(rows, classes):
        holders[(g, w["s"])].add(w["pid"])
    st_rows = {(g["group_id"], g["s"]): g["count"] for g in fetch(con, f"SELECT * FROM {out}_st")}
    assert st_rows == {key: len(p) for key, p in holders.items()}, "ST does not count persons per value"
    verdicts = judge_all(grouped(rows, classes, "s", "pid"), params)
    assert all(o.holds for o in verdicts.values()), {m: o.achieved for m, o in verdicts.items()}
    assert (r.rows, r.groups) == (len(rows), len(set(classes)))


@SETTINGS
@given(rows=visits(unique_qi=True, span=5), params=L_MODELS, seed=st.integers(0, 3))
def test_anatomy_release_by_persons(rows, params, seed):
    """Refused when the whole table fails by persons; distinct l released in N/l groups when the
    persons' primary values allow it; a release passes check_anatomy."""
    con = duckdb.connect()
    load(con, rows)
    whole = whole_table(rows, "s", "pid")
    got = outcome(lambda: anatomy("v", ["x", "y"], "s", out="an", engine=con, person="pid", seed=seed,
                                  **params))
    tally(params, got)
    if failing(whole, params):
        assert got[0] == "refused", f"the whole table fails by persons, yet a release: {got[1]}"
    primary = Counter(primary_values(rows, "pid", "s").values())
    if params.get("l_variant") is None and max(primary.values()) * params["l"] <= whole.N:
        # distinct l: persons dealt under distinct primary values, groups of >= l persons
        assert got[0] == "ok", f"the persons' primary values admit {whole.N // params['l']} groups, yet: {got[1]}"
        assert got[1].groups == whole.N // params["l"]
    if got[0] != "ok":
        assert not {"an_qit", "an_st"} & columns_of_db(con)
        return
    check_anatomy(con, rows, params, got[1])


@pytest.mark.parametrize("params", [dict(l_variant="entropy"), dict(l_variant="recursive", c=2),
                                    dict(l_variant="probabilistic")], ids=lambda p: p["l_variant"])
def test_anatomy_refuses_a_dealing_that_fails_by_persons(params):
    """l = 2, persons 1 and 2 holding a, person 3 visiting with b twice and a once (primary b),
    person 4 holding c. Primary values a, a, b, c: N/l = 2 groups of distinct primaries, so
    persons 1 and 2 each share a group with person 3 or 4; whichever group holds person 3 holds
    a twice and b once: exp(H) = 1.89 < 2; recursive 2 < 2 * 1 fails. By persons the whole table
    (a 3, b 1, c 1) holds entropy (exp(H) = 2.59) and recursive (2,2) (3 < 2 (1 + 1)), and fails
    probabilistic 2 (3/4 > 1/2). Either way the request is refused (InfeasibleError), not ended
    by a failed self-verification."""
    rows = [dict(pid=1, x=0, y=0, s="a"), dict(pid=2, x=1, y=0, s="a"), dict(pid=4, x=3, y=0, s="c")] + \
        [dict(pid=3, x=2, y=0, s=s) for s in ("b", "b", "a")]
    assert failing(whole_table(rows, "s", "pid"), {"l": 2, **params}) == \
        (["l-probabilistic"] if params["l_variant"] == "probabilistic" else [])
    con = duckdb.connect()
    load(con, rows)
    for seed in range(3):
        got = outcome(lambda: anatomy("v", ["x", "y"], "s", l=2, out="an", engine=con, person="pid", seed=seed,
                                      **params))
        assert got == ("refused", "InfeasibleError"), got


# -- one record per person: the row-level release -------------------------------------------------
#: two calls an example: fewer examples than the properties above, to keep the file quick
PAIRS = settings(SETTINGS, max_examples=examples(10))


def sizes(con, table: str) -> list[int]:
    return sorted(n for (n,) in con.execute(f"SELECT count(*) FROM {table} GROUP BY eq_class").fetchall())


def both(con, call) -> tuple:
    """outcome() of ``call(person="pid", out="a")`` and of ``call(out="b")``, which must agree."""
    by_person, by_row = outcome(lambda: call(person="pid", out="a")), outcome(lambda: call(out="b"))
    assert by_person[0] == by_row[0], (by_person, by_row)
    if by_person[0] == "refused":
        assert by_person[1] == by_row[1], (by_person, by_row)
    return by_person, by_row


@PAIRS
@given(rows=visits(one_record=True), params=models())
def test_one_record_per_person_mondrian_is_row_level(rows, params):
    """With one record per person, person="pid" changes nothing: the same outcome and, released,
    the same class sizes (a class's persons are its rows)."""
    con = duckdb.connect()
    load(con, rows)
    by_person, by_row = both(con, lambda **kw: anonymize("v", ["x", "y"], "s", engine=con, **params, **kw))
    if by_person[0] == "ok":
        assert sizes(con, "a") == sizes(con, "b")
        assert by_person[1].classes == by_row[1].classes
        assert by_person[1].utility["dm"] == by_row[1].utility["dm"]


@PAIRS
@given(rows=visits(one_record=True, span=SPAN), params=models(), suppression=st.sampled_from([0.0, 0.2]))
def test_one_record_per_person_fulldomain_is_row_level(rows, params, suppression):
    """The same outcome and, released, the same levels, suppressed count (persons = rows) and
    class sizes."""
    con = duckdb.connect()
    load(con, rows)
    hier = {"x": fd_hierarchy(), "y": fd_hierarchy()}
    by_person, by_row = both(con, lambda **kw: fulldomain("v", ["x", "y"], "s", hierarchies=hier, engine=con,
                                                          max_suppression=suppression, **params, **kw))
    if by_person[0] == "ok":
        a, b = by_person[1], by_row[1]
        assert (a.levels, a.suppressed, a.classes, a.rows) == (b.levels, b.suppressed, b.classes, b.rows)
        assert sizes(con, "a") == sizes(con, "b")


@PAIRS
@given(rows=visits(one_record=True), params=L_MODELS, seed=st.integers(0, 3))
def test_one_record_per_person_anatomy_is_row_level(rows, params, seed):
    """The same outcome and, released, the same number of groups and group sizes."""
    con = duckdb.connect()
    load(con, rows)
    by_person, by_row = both(con, lambda out, **kw: anatomy("v", ["x", "y"], "s", engine=con, seed=seed, out=out,
                                                            **params, **kw))
    if by_person[0] == "ok":
        assert by_person[1].groups == by_row[1].groups
        group_sizes = [sorted(n for (n,) in con.execute(f"SELECT count(*) FROM {t}_qit GROUP BY group_id").fetchall())
                       for t in ("a", "b")]
        assert group_sizes[0] == group_sizes[1]


# -- a hand-built case ----------------------------------------------------------------------------
#: person 0 has three visits at x = 0; persons 1..9 one visit each at x = 1..9
HAND = [dict(pid=0, x=0, y=0, s=s) for s in ("s1", "s2", "s3")] + \
       [dict(pid=p, x=p, y=0, s=VALUES[p % 3]) for p in range(1, 10)]


def test_row_level_k_is_not_person_level_k():
    """k = 3, QI x (y is constant). Row level, 12 rows: lower median 3 cuts {0,0,0,1,2,3} | {4..9};
    the left half cuts at its median 0 into {0,0,0} | {1,2,3} (3 rows each), the right at 6 into
    {4,5,6} | {7,8,9}: the class x = 0 is one person's three visits. By persons, 10 persons
    x = 0..9: lower median 4 cuts {0..4} | {5..9}; a further cut would leave 2 persons (median 2:
    {0,1,2} | {3,4}; median 7: {5,6,7} | {8,9}), so two classes of 5 persons (7 and 5 records)."""
    con = duckdb.connect()
    load(con, HAND)
    anonymize("v", ["x", "y"], "s", out="rows", engine=con, k=3)
    row_classes, _ = mondrian_classes(con, HAND, "rows")
    owners = defaultdict(set)
    for w, c in zip(HAND, row_classes):
        owners[c].add(w["pid"])
    assert sorted(map(sorted, owners.values())) == [[0], [1, 2, 3], [4, 5, 6], [7, 8, 9]]

    r = anonymize("v", ["x", "y"], "s", out="persons", engine=con, k=3, person="pid")
    classes, boxes = mondrian_classes(con, HAND, "persons")
    owners = defaultdict(set)
    for w, c in zip(HAND, classes):
        owners[c].add(w["pid"])
    assert sorted(map(sorted, owners.values())) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert sorted(boxes.values()) == [(0, 4, 0, 0), (5, 9, 0, 0)]
    assert sorted(Counter(classes).values()) == [5, 7]
    assert r.report["k-anonymity"].achieved == {"k": 5}
    assert r.utility["persons"] == 10 and r.utility["dm"] == 50 and r.utility["per_record"]["dm"] == 74


# -- bad inputs -----------------------------------------------------------------------------------
def _methods(con, qi, **kw):
    hier = {q: fd_hierarchy() for q in qi}
    return {
        "mondrian": lambda: anonymize("v", qi, "s", out="rel", engine=con, k=2, **kw),
        "fulldomain": lambda: fulldomain("v", qi, "s", hierarchies=hier, out="rel", engine=con, k=2, **kw),
        "anatomy": lambda: anatomy("v", qi, "s", l=2, out="an", engine=con, **kw),
    }


def refused(run, *fragments) -> str:
    with pytest.raises(InputError) as e:
        run()
    msg = str(e.value)
    assert "\n" not in msg, msg
    for f in fragments:
        assert f in msg, (f, msg)
    return msg


GOOD = [dict(pid=p, x=p % 3, y=p % 2, s=VALUES[p % 3]) for p in range(8)] * 2


@pytest.mark.parametrize("method", ["mondrian", "fulldomain", "anatomy"])
def test_person_as_qi_is_refused(method):
    con = duckdb.connect()
    load(con, GOOD)
    refused(_methods(con, ["x", "pid"], person="pid")[method], "'pid'")


@pytest.mark.parametrize("method", ["mondrian", "fulldomain", "anatomy"])
def test_null_person_is_refused(method):
    con = duckdb.connect()
    load(con, GOOD + [dict(pid=None, x=0, y=0, s="s1")])
    refused(_methods(con, ["x", "y"], person="pid")[method], "'pid'", "NULL")


@pytest.mark.parametrize("method", ["mondrian", "fulldomain"])
def test_qi_varying_within_a_person_is_refused(method):
    con = duckdb.connect()
    load(con, GOOD + [dict(pid=5, x=2, y=0, s="s2")])  # person 5 (x 2, y 1) also at y 0
    refused(_methods(con, ["x", "y"], person="pid")[method], "'y'", "5")


def test_relaxed_with_person_is_refused():
    con = duckdb.connect()
    load(con, GOOD)
    refused(lambda: anonymize("v", ["x", "y"], "s", out="rel", engine=con, k=2, person="pid", relaxed=True))
