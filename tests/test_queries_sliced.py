"""COUNT-query estimates on a sliced release [spec-closeness-slicing 4.1, 6.4]."""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction as F

import pytest

from anonydb.errors import InputError
from anonydb.methods import anatomy, slicing
from anonydb.utility.queries import Query, anatomy_estimates, query_error, sliced_estimate, sliced_estimates, workload

from conftest import make_table


def _columns(engine, name, rows, buckets, columns, names):
    make_table(engine, name, names + ["bkt"], [tuple(r) + (b,) for r, b in zip(rows, buckets)])
    out = []
    for i, col in enumerate(columns):
        t = f"{name}_c{i}"
        engine.execute(f"CREATE TABLE {t} AS SELECT bkt AS bucket_id, {', '.join(col)} FROM {name}")
        out.append(t)
    return out


def test_hand_computed_estimates(engine):
    # bucket 1: (a, x | s) rows (1,p|u) (1,q|v) (2,p|u); bucket 2: (2,q|v) (3,q|v)
    names = ["a", "x", "s"]
    rows = [(1, "p", "u"), (1, "q", "v"), (2, "p", "u"), (2, "q", "v"), (3, "q", "v")]
    tabs = _columns(engine, "t", rows, [1, 1, 1, 2, 2], [["a", "x"], ["s"]], names)
    q1 = Query(qi={"a": {1}}, sensitive={"u"})  # B1: 3 * (2/3) * (2/3) = 4/3; B2: a=1 absent -> 0
    q2 = Query(qi={"a": (2, 3), "x": {"q"}})  # B1: 0 rows (2,q); B2: 2 rows -> 2
    q3 = Query(sensitive={"v"})  # B1: 1, B2: 2 -> 3
    q4 = Query()  # the table size
    q5 = Query(qi={"a": set()})  # an empty set matches nothing
    got = sliced_estimates(engine, tabs, [q1, q2, q3, q4, q5], "s")
    assert got == pytest.approx([float(F(4, 3)), 2.0, 3.0, 5.0, 0.0])
    assert sliced_estimate(engine, tabs, q1, "s") == pytest.approx(4 / 3)


def test_two_columns_equal_anatomy(engine):
    rng = random.Random(3)
    rows = [(rng.randint(20, 60), rng.choice("MF"), rng.choice(["a", "b", "c", "d"])) for _ in range(120)]
    make_table(engine, "src", ["age", "sex", "dis"], rows)
    anatomy("src", "age,sex", "dis", l=3, out="an", engine=engine)
    engine.execute("CREATE TABLE c1 AS SELECT group_id AS bucket_id, age, sex FROM an_qit")
    engine.execute("CREATE TABLE c2 AS SELECT group_id AS bucket_id, dis FROM an_st, range(count)")
    qs = workload(engine, "src", ["age", "sex"], "dis", n=60, dim=2, sel=0.3, seed=1)
    assert sliced_estimates(engine, ["c1", "c2"], qs, "dis") == pytest.approx(
        anatomy_estimates(engine, "an_qit", "an_st", qs, "dis"), abs=1e-9)


def _brute(rows, names, buckets, columns, q: Query, sensitive):
    preds = dict(q.qi)
    if q.sensitive:
        preds[sensitive] = q.sensitive

    def ok(attr, v):
        p = preds[attr]
        return p[0] <= v <= p[1] if isinstance(p, tuple) else v in p

    by = defaultdict(list)
    for r, b in zip(rows, buckets):
        by[b].append(dict(zip(names, r)))
    total = F(0)
    for members in by.values():
        e = F(len(members))
        for col in columns:
            asked = [a for a in col if a in preds]
            if asked:
                e *= F(sum(1 for u in members if all(ok(a, u[a]) for a in asked)), len(members))
        total += e
    return total


def test_brute_force_on_random_slicings(engine):
    rng = random.Random(8)
    names = ["a", "b", "c", "d", "s"]
    rows = [(rng.randint(0, 9), rng.choice("xyz"), rng.randint(0, 3), rng.choice("pq"), rng.choice("uvw"))
            for _ in range(150)]
    buckets = [rng.randint(1, 20) for _ in rows]
    perm = names[:]
    rng.shuffle(perm)
    columns = [perm[:2], perm[2:3], perm[3:]]
    tabs = _columns(engine, "r", rows, buckets, columns, names)
    qs = workload(engine, "r", ["a", "b", "c", "d"], "s", n=50, dim=2, sel=0.4, seed=2)
    got = sliced_estimates(engine, tabs, qs, "s")
    for q, g in zip(qs, got):
        assert g == pytest.approx(float(_brute(rows, names, buckets, columns, q, "s")), abs=1e-9)


def test_query_error_on_a_slicing_and_bad_input(engine):
    rng = random.Random(4)
    rows = [(rng.randint(20, 60), rng.choice("MF"), rng.choice(["z1", "z2"]), rng.choice("abcdef"))
            for _ in range(300)]
    make_table(engine, "src", ["age", "sex", "zip", "dis"], rows)
    r = slicing("src", "age,sex,zip", "dis", l=3, out="sl", engine=engine, columns=[["age", "sex"], ["zip", "dis"]])
    qs = workload(engine, "src", ["age", "sex", "zip"], "dis", n=100, dim=2, sel=0.3, seed=5)
    e = query_error(engine, "src", qs, columns=r.tables, sensitive="dis")
    assert e["used"] == 100 and e["rho"] >= 0
    # the estimates are the formula's on the released buckets: the view's rows (one value of each
    # column per row, permuted) carry the same per-bucket column multisets
    view = engine.fetch_rows("SELECT age, sex, zip, dis, bucket_id FROM sl")[1]
    for q, est in zip(qs, e["estimated"]):
        assert est == pytest.approx(float(_brute([v[:4] for v in view], ["age", "sex", "zip", "dis"],
                                                 [v[4] for v in view], r.columns, q, "dis")), abs=1e-9)
    with pytest.raises(InputError, match="attribute 'height' is in none of the column tables"):
        sliced_estimates(engine, r.tables, [Query(qi={"height": {1}})], "dis")
    engine.execute("CREATE TABLE dup AS SELECT bucket_id, age FROM sl_c1")
    with pytest.raises(InputError, match="attribute 'age' is in two column tables"):
        sliced_estimates(engine, r.tables + ["dup"], [Query(qi={"age": {30}})], "dis")
    with pytest.raises(InputError, match="give one release"):
        query_error(engine, "src", qs, columns=r.tables, release="sl", sensitive="dis")
    engine.execute("CREATE TABLE nob AS SELECT age FROM sl_c1")
    with pytest.raises(InputError, match="not found in column table 'nob'"):
        sliced_estimates(engine, ["nob"], [Query(qi={"age": {30}})], "dis")
