"""Mondrian's fragment plan (issue 63) gives the level-wise plan's classes: on random tables, for
every model Mondrian searches with, strict and relaxed cuts, along hierarchies, and for record
owners (QIs constant per person, or varying per record). The top is cut to random depths (the
fragment size and the top's partition cap are drawn), so that every way out of the top is taken:
all partitions final in the top, fragments finished in the worker pool, and the level-wise rounds
going on after the assign pass. The level-wise plan is itself held to the plain-Python reference
(tests/test_mondrian.py); here the two plans must agree class for class, row for row. The fast
tier draws 15 and 10 tables (each one of 13 model families, random sizes and fragment caps), the
slow tier 90 and 60."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb import Hierarchy
from anonydb.errors import InfeasibleError
from anonydb.methods import anonymize as _mondrian
from anonydb.methods import mondrian_rounds

from conftest import examples, make_table

EDU = Hierarchy.from_rows([
    ("a", "ab", "*"), ("b", "ab", "*"), ("c", "cde", "*"), ("d", "cde", "*"), ("e", "cde", "*")])
CATS = ["a", "b", "c", "d", "e"]
#: every model family Mondrian judges cuts with (non-candidate models are the verification's alone)
MODELS = [dict(k=2), dict(k=4), dict(l=2), dict(l=2, l_variant="entropy"), dict(l=2, l_variant="probabilistic"),
          dict(l=2, l_variant="recursive", c=2), dict(k=2, t=0.3), dict(k=2, t=0.3, distance="ordered"),
          dict(k=2, n=8, t=0.2), dict(alpha=0.7, k=2), dict(k=2, delta=2.0), dict(k=2, beta=1.0),
          dict(bt=(0.5, 0.4), k=2)]
#: the models a record owners' release takes ((B,t) judges each row's tuple, not persons)
PERSON_MODELS = [m for m in MODELS if "bt" not in m]


@contextmanager
def fragments(engine, size: int, parts: int):
    """The fragment plan with fragments of at most ``size`` rows and at most ``parts`` open
    partitions in the top (the defaults are sized for millions of rows)."""
    before, top = engine.finish_rows, mondrian_rounds.TOP_PARTS
    engine.finish_rows, mondrian_rounds.TOP_PARTS = size, parts
    try:
        yield
    finally:
        engine.finish_rows, mondrian_rounds.TOP_PARTS = before, top


def classes(engine, table: str) -> list[tuple]:
    """The release's classes, each the sorted tuple of its rows without eq_class (the plans number
    the classes differently); with the source's id kept, the classes as sets of rows."""
    cols, rows = engine.fetch_rows(f'SELECT * FROM "{table}"')
    at = cols.index("eq_class")
    by: dict = {}
    for r in rows:
        by.setdefault(r[at], []).append(tuple(str(v) for i, v in enumerate(r) if i != at))
    return sorted(tuple(sorted(v)) for v in by.values())


def release(engine, plan: str, **kw):
    """(classes, DM, number of classes) of the release, or the refusal's text. The source's id rides
    along unjudged, so that the classes are sets of rows, but for (n,t), whose verification judges
    every published column against the partition tree (a kept id would break it)."""
    follow = {} if "n" in kw else dict(keep=["id"], _unjudged=("id",))
    try:
        r = _mondrian("src", out=f"rel_{plan}", engine=engine, plan=plan, replace=True, seed=3, **follow, **kw)
    except InfeasibleError as e:
        return str(e)
    return classes(engine, f"rel_{plan}"), r.utility["dm"], r.classes


@st.composite
def tables(draw, persons: bool = False, varying: bool = False):
    n = draw(st.integers(8, 90))
    rows = []
    owner = 0
    for i in range(n):
        if persons and i and draw(st.integers(0, 2)) == 0:  # another record of the last person
            prev = rows[-1]
            qi = {q: prev[q] for q in "xyz"} if not varying else dict(x=draw(st.integers(0, 15)), y=prev["y"],
                                                                          z=prev["z"])
        else:
            owner += 1
            qi = dict(x=draw(st.integers(0, 15)), y=draw(st.sampled_from(CATS)), z=draw(st.integers(-4, 4)))
        rows.append(dict(id=i, pid=owner, s=draw(st.sampled_from(["s1", "s2", "s3", "s4"])), **qi))
    return rows


def load(engine, rows):
    engine.execute("DROP TABLE IF EXISTS src")
    make_table(engine, "src", ["id", "pid", "x", "y", "z", "s"],
               [(r["id"], r["pid"], r["x"], r["y"], r["z"], r["s"]) for r in rows])


SIZES = st.sampled_from([2, 5, 12, 30, 10_000])
PARTS = st.sampled_from([1, 3, 512])


@settings(max_examples=examples(15, slow=90), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=tables(), mi=st.integers(0, len(MODELS) - 1), relaxed=st.booleans(), hier=st.booleans(),
       all_dims=st.booleans(), size=SIZES, parts=PARTS)
def test_fragments_give_the_levelwise_classes(engine, rows, mi, relaxed, hier, all_dims, size, parts):
    params = MODELS[mi]
    if "n" in params:
        relaxed = False  # refused with (n,t): test_mondrian.py
    load(engine, rows)
    kw = dict(qi="y,x,z", sensitive="s", relaxed=relaxed, try_all_dims=all_dims,
              hierarchies={"y": EDU} if hier else None, **params)
    want = release(engine, "levelwise", **kw)
    with fragments(engine, size, parts):
        got = release(engine, "fragments", **kw)
    assert got == want


@settings(max_examples=examples(10, slow=60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), mi=st.integers(0, len(PERSON_MODELS) - 1), varying=st.booleans(), size=SIZES,
       parts=PARTS)
def test_fragments_give_the_levelwise_classes_of_persons(engine, data, mi, varying, size, parts):
    rows = data.draw(tables(persons=True, varying=varying))
    load(engine, rows)
    kw = dict(qi="y,x,z", sensitive="s", person="pid", varying=varying, **PERSON_MODELS[mi])
    want = release(engine, "levelwise", **kw)
    with fragments(engine, size, parts):
        got = release(engine, "fragments", **kw)
    assert got == want


def test_fragments_on_a_table_by_hand(engine):
    """120 rows on a grid, k = 5: the top cuts the first levels (fragments of at most 20 rows), the
    pool finishes them, and the classes are the level-wise plan's: 24 boxes of 5 rows each."""
    rows = [dict(id=i, pid=i, x=i % 12, y=CATS[i % 5], z=(i // 12) % 2, s=f"s{i % 3}") for i in range(120)]
    load(engine, rows)
    want = release(engine, "levelwise", qi="x,z", k=5)
    with fragments(engine, 20, 512):
        got = release(engine, "fragments", qi="x,z", k=5)
    assert got == want and got[2] == 24 and {len(c) for c in got[0]} == {5}


def test_auto_takes_fragments_from_the_measured_size(engine, monkeypatch):
    """plan="auto" is the fragment plan from the engine's ``fragments_from`` rows (where it was
    measured faster: BENCHMARKS.md), never where that is 0."""
    rows = [dict(id=i, pid=i, x=i % 12, y=CATS[i % 5], z=(i // 12) % 2, s=f"s{i % 3}") for i in range(120)]
    load(engine, rows)
    seen = []
    real = mondrian_rounds.Planner._run_levelwise
    monkeypatch.setattr(mondrian_rounds.Planner, "_run_levelwise",
                        lambda self, progress=None, top=False: seen.append(top) or real(self, progress, top))
    monkeypatch.setattr(mondrian_rounds, "ONE_ATTEMPT_ROWS", 0)  # not the one-statement plan
    for frm in (121, 120, 0):
        monkeypatch.setattr(engine, "fragments_from", frm)
        release(engine, "auto", qi="x,z", k=5)
    assert seen == [False, True, False]


def test_plan_fragments_is_named_in_the_error(engine):
    load(engine, [dict(id=i, pid=i, x=i, y="a", z=0, s="s1") for i in range(10)])
    with pytest.raises(Exception, match="fragments"):
        _mondrian("src", "x", out="r", engine=engine, k=2, plan="fast")
