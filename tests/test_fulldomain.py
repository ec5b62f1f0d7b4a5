"""Full-domain generalization: equality with the brute-force oracle (every lattice node judged in
Python), the release, a hand-worked example, and bad input."""

from __future__ import annotations

import importlib
import json
import math
import random
from collections import Counter
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb import Hierarchy
from anonydb.errors import InfeasibleError, InputError
from anonydb.methods import fulldomain
from anonydb.models import Model
from anonydb.sqlgen import ident

from conftest import examples, make_table
from fulldomain_oracle import METRICS, FullDomainOracle, emd_equal
from oracle import dist_equal, distribution, emd_lp
from release_checks import assert_classes_consistent

#: the module (``anonydb.methods.fulldomain`` the name is the function)
FD = importlib.import_module("anonydb.methods.fulldomain")


#: the hand-worked tests follow rows by ``id``: it rides along in the release, unjudged
TRACK = dict(keep=["id"], _unjudged=("id",))

APPROX = dict(rel=1e-9, abs=1e-9)


# -- the oracle's own EMD against the LP -----------------------------------------------------------
def test_oracle_emd_closed_form_equals_lp():
    rnd = random.Random(7)
    for _ in range(50):
        table = [rnd.choice("uvwx") for _ in range(rnd.randint(1, 20))]
        group = rnd.sample(table, rnd.randint(1, len(table)))
        assert float(emd_equal(group, table)) == pytest.approx(
            emd_lp(distribution(group), distribution(table), dist_equal), abs=1e-9)


# -- strategies ------------------------------------------------------------------------------------
@st.composite
def hierarchy_rows(draw, alphabet: str):
    """An enumerated hierarchy over 2..6 leaves of ``alphabet``, height 1..3: each intermediate
    level merges runs of consecutive blocks of the level below. Labels are either plain
    concatenations (a label may then repeat across levels, e.g. a singleton block "a" at level 1)
    or tagged with their level."""
    m = draw(st.integers(2, 6))
    height = draw(st.integers(1, 3))
    plain = draw(st.booleans())
    leaves = list(alphabet[:m])
    chains = {x: [x] for x in leaves}
    blocks = [[x] for x in leaves]
    for lev in range(1, height):
        merged, cur = [], list(blocks[0])
        for b in blocks[1:]:
            if draw(st.booleans()):
                cur += b
            else:
                merged.append(cur)
                cur = list(b)
        merged.append(cur)
        blocks = merged
        for b in blocks:
            label = "".join(b) if plain else f"{''.join(b)}^{lev}"
            for x in b:
                chains[x].append(label)
    for x in leaves:
        chains[x].append("*")
    return [tuple(chains[x]) for x in leaves]


CRITERIA = st.one_of(
    st.builds(lambda k: dict(k=k), st.integers(1, 5)),
    st.builds(lambda k, l: dict(k=k, l=l), st.integers(1, 4), st.integers(1, 3)),
    st.builds(lambda k, t: dict(k=k, t=t, distance="equal"), st.integers(1, 4),
              st.sampled_from([0.2, 0.25, 0.4, 0.5])),
)


@st.composite
def cases(draw):
    d = draw(st.integers(2, 3))
    names = ["x", "y", "z"][:d]
    hiers = [draw(hierarchy_rows(alpha)) for alpha in ("abcdef", "pqrstu", "ghijkl")[:d]]
    n = draw(st.integers(6, 40))
    cols = [draw(st.lists(st.sampled_from([h[0] for h in hr]), min_size=n, max_size=n)) for hr in hiers]
    s_dom = draw(st.sampled_from([["s1", "s2"], ["s1", "s2", "s3"], ["s1", "s2", "s3", "s4"]]))
    s = draw(st.lists(st.sampled_from(s_dom), min_size=n, max_size=n))
    rows = [(i, *(c[i] for c in cols), s[i]) for i in range(n)]
    return dict(names=names, hiers=hiers, rows=rows, criteria=draw(CRITERIA),
                max_suppression=draw(st.sampled_from([0.0, 0.1, 0.3])), metric=draw(st.sampled_from(METRICS)),
                pass_sensitive=draw(st.booleans()),
                # nodes per query: small batches end the top-down walk early and run the chain search
                batch=draw(st.sampled_from([FD.BATCH, 1, 2, 3])),
                # pre-aggregated bases at any size (BASE_ROWS 0); the models' verdicts as tables, the
                # cells and groups then tables too, instead of CTEs of the judging statement
                bases=draw(st.booleans()), materialize=draw(st.booleans()))


def _run(engine, case):
    names, hiers, rows, crit = case["names"], case["hiers"], case["rows"], case["criteria"]
    d = len(names)
    engine.execute("DROP TABLE IF EXISTS src")
    make_table(engine, "src", ["id", *names, "s"], rows)
    needs_sa = "l" in crit or "t" in crit
    sensitive = "s" if needs_sa or case["pass_sensitive"] else None
    oracle = FullDomainOracle(rows, list(range(1, d + 1)), d + 1, hiers, k=crit.get("k"), l=crit.get("l"),
                              t=crit.get("t"), max_suppression=case["max_suppression"])
    hierarchies = {c: Hierarchy.from_rows(h) for c, h in zip(names, hiers)}

    def call():
        with mock.patch.object(FD, "BATCH", case.get("batch", FD.BATCH)), \
                mock.patch.object(FD, "BASE_ROWS", 0 if case.get("bases") else FD.BASE_ROWS), \
                mock.patch.object(Model, "materialize", case.get("materialize", False)):
            return fulldomain("src", names, sensitive, hierarchies=hierarchies, out="rel", engine=engine,
                              max_suppression=case["max_suppression"], metric=case["metric"], replace=True, **crit)

    return oracle, call


def _sensitive(case) -> str | None:
    """The sensitive attribute _run names in the call (None: the release has no role for s)."""
    crit = case["criteria"]
    return "s" if "l" in crit or "t" in crit or case["pass_sensitive"] else None


def check_release(engine, oracle: FullDomainOracle, names: list[str], node: tuple[int, ...], r,
                  sensitive: str | None = "s") -> None:
    """The table ``rel``: eq_class, the QIs at the chosen levels and the sensitive attribute when
    the call named one, nothing else (columns without a role are dropped); as a multiset, the
    oracle's kept rows with their QIs generalized; eq_class one-to-one with the published tuple
    (release_checks.assert_classes_consistent); one class per kept group; the report holds."""
    cols = [c for c, _ in engine.columns("rel")]
    assert set(cols) == {"eq_class", *names, *([sensitive] if sensitive else [])}, cols
    shown = [*names, *([sensitive] if sensitive else [])]
    got = engine.fetch_rows(f'SELECT {", ".join(ident(c) for c in shown)} FROM rel')[1]
    assert len(got) == oracle.N - oracle.nodes[node].suppressed
    want = [tuple(w[q] for q in oracle.qi_idx) + ((w[oracle.sa_idx],) if sensitive else ())
            for w in oracle.release(node)]
    assert Counter(got) == Counter(want)
    assert_classes_consistent(engine, "rel", exclude=(sensitive,))
    assert engine.scalar("SELECT count(DISTINCT eq_class) FROM rel") == len(oracle.nodes[node].groups)
    assert r.report.holds


# -- 1. equality with the oracle -------------------------------------------------------------------
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_same_as_oracle(engine, case):
    oracle, call = _run(engine, case)
    names, metric = case["names"], case["metric"]
    if not oracle.feasible:
        with pytest.raises(InfeasibleError, match="closest"):
            call()
        return
    r = call()
    best = oracle.optimum(metric)
    tied = oracle.tied(metric)
    got = tuple(r.levels[c] for c in names)
    assert set(r.levels) == set(names)
    if len(tied) > 1:
        assert got in tied, (got, tied)
        assert r.metric == pytest.approx(oracle.nodes[best].metrics[metric], **APPROX)
    else:
        assert r.levels == dict(zip(names, best))
    assert [tuple(m) for m in r.minimal] == oracle.minimal
    node = oracle.nodes[got]
    assert node.satisfies
    assert r.suppressed == node.suppressed
    assert r.metric == pytest.approx(node.metrics[metric], **APPROX)
    assert set(r.metrics) == set(METRICS)
    for m in METRICS:
        assert r.metrics[m] == pytest.approx(node.metrics[m], **APPROX), m
    lattice = math.prod(len(h[0]) for h in case["hiers"])
    assert 1 <= r.checked <= lattice
    # 2. the release, on every generated case
    check_release(engine, oracle, names, got, r, sensitive=_sensitive(case))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_tie_break_height_then_lexicographic(engine, case):
    """With the integer-valued metrics (dm, height) ties are exact: the chosen node is the
    smallest height, then the lexicographically smallest, among the tied optima."""
    case = dict(case, metric="height" if case["metric"] in ("height", "precision", "entropy") else "dm")
    oracle, call = _run(engine, case)
    if not oracle.feasible:  # no lattice node satisfies by the oracle: the call refuses and writes nothing
        engine.execute("DROP TABLE IF EXISTS rel")
        with pytest.raises(InfeasibleError, match="closest"):
            call()
        assert not engine.exists("rel")
        return
    r = call()
    assert r.levels == dict(zip(case["names"], oracle.optimum(case["metric"])))


# -- 2. a hand-worked example ----------------------------------------------------------------------
X = Hierarchy.from_rows([("a", "ab", "*"), ("b", "ab", "*"), ("c", "cd", "*"), ("d", "cd", "*")])
Y = Hierarchy.from_rows([("m", "*"), ("f", "*")])
HAND = [(1, "a", "m", "flu"), (2, "b", "m", "cold"), (3, "c", "f", "flu"),
        (4, "d", "f", "cold"), (5, "a", "f", "flu"), (6, "b", "f", "cold")]


def _hand(engine, max_suppression=0.0):
    make_table(engine, "hand", ["id", "x", "y", "s"], HAND)
    return FullDomainOracle(HAND, [1, 2], 3, [X.rows, Y.rows], k=2, max_suppression=max_suppression)


def test_hand_worked_k2(engine):
    """k = 2. (x, y) levels: (0,0) all singletons; (1,0) {ab m: 1,2}, {cd f: 3,4}, {ab f: 5,6};
    (0,1) {a: 1,5}, {b: 2,6}, {c: 3}, {d: 4}; (2,0) {m: 2}, {f: 4}; (1,1) {ab: 4}, {cd: 2}; (2,1) {6}.
    Without suppression (1,0) is the only minimal node and the DM optimum: 3 * 2^2 = 12;
    loss = 6 x-cells * (2-1)/(4-1) / 12 cells = 1/6; entropy = 6 rows * -log2(2/4) = 6."""
    _hand(engine)
    r = fulldomain("hand", ["x", "y"], "s", hierarchies={"x": X, "y": Y}, out="rel", engine=engine, k=2, **TRACK)
    assert r.levels == {"x": 1, "y": 0}
    assert r.minimal == [(1, 0)]
    assert r.suppressed == 0
    assert r.metric == 12
    assert r.metrics == pytest.approx({"dm": 12, "aecs": 2, "height": 1, "precision": 0.75, "loss": 1 / 6,
                                       "entropy": 6})
    got = sorted(engine.fetch_rows("SELECT id, x, y, s FROM rel")[1])
    assert got == [(1, "ab", "m", "flu"), (2, "ab", "m", "cold"), (3, "cd", "f", "flu"), (4, "cd", "f", "cold"),
                   (5, "ab", "f", "flu"), (6, "ab", "f", "cold")]
    assert len({c for (c,) in engine.fetch_rows("SELECT eq_class FROM rel")[1]}) == 3
    assert r.report.holds


def test_hand_worked_suppression(engine):
    """k = 2, max_suppression 0.34 (floor(6 * 0.34) = 2 rows): (0,1) now satisfies by suppressing
    rows 3 and 4, so the Pareto set is {(0,1), (1,0)}. Height ties at 1 -> (0,1) (lexicographic);
    precision prefers (1,0) (0.75 against 0.5); DM: (1,0) 12 < (0,1) 2^2 + 2^2 + 2 * 6 = 20;
    loss of (0,1) = (4 y-cells * 1 + 2 suppressed rows * 2 cells) / 12 = 2/3."""
    oracle = _hand(engine, 0.34)
    kw = dict(hierarchies={"x": X, "y": Y}, out="rel", engine=engine, k=2, max_suppression=0.34, replace=True, **TRACK)
    assert oracle.minimal == [(0, 1), (1, 0)]
    r = fulldomain("hand", ["x", "y"], metric="height", **kw)
    assert r.minimal == [(0, 1), (1, 0)]
    assert r.levels == {"x": 0, "y": 1}
    assert r.suppressed == 2
    assert r.metrics["dm"] == 20 and r.metrics["loss"] == pytest.approx(2 / 3)
    assert sorted(engine.fetch_rows("SELECT id, x, y FROM rel")[1]) == [
        (1, "a", "*"), (2, "b", "*"), (5, "a", "*"), (6, "b", "*")]
    assert r.report.holds
    r = fulldomain("hand", ["x", "y"], metric="precision", **kw)
    assert r.levels == {"x": 1, "y": 0} and r.metric == pytest.approx(0.75)
    r = fulldomain("hand", ["x", "y"], metric="dm", **kw)
    assert r.levels == {"x": 1, "y": 0} and r.metric == 12


def test_integer_qi_matched_as_text(engine):
    """An INTEGER QI matches the hierarchy's text leaves; level 0 keeps the integers."""
    rows = [(i, i % 4, ["a", "b"][i % 2], ["s1", "s2", "s3"][i % 3]) for i in range(24)]
    make_table(engine, "ints", ["id", "age", "x", "s"], rows)
    age = [(str(v), "lo" if v < 2 else "hi", "*") for v in range(4)]
    xh = [("a", "*"), ("b", "*")]
    oracle = FullDomainOracle(rows, [1, 2], 3, [age, xh], k=3, l=2)
    for metric in METRICS:
        r = fulldomain("ints", ["age", "x"], "s", hierarchies={"age": Hierarchy.from_rows(age),
                                                               "x": Hierarchy.from_rows(xh)},
                       out="rel", engine=engine, metric=metric, k=3, l=2, replace=True)
        node = tuple(r.levels[c] for c in ("age", "x"))
        assert node in oracle.tied(metric)
        assert [tuple(m) for m in r.minimal] == oracle.minimal
        check_release(engine, oracle, ["age", "x"], node, r)


def test_t_closeness_with_suppression_uses_the_original_table(engine):
    """t is judged against the WHOLE original table's distribution Q = (26/38 s1, 12/38 s2), also
    when rows are suppressed. k = 1, t = 0.2, up to floor(0.1 * 38) = 3 suppressed rows.
    Node (0,0): (a,q) = {s2} has EMD 26/38 > 0.2 and is suppressed (1 row); (b,p) = {s1, s2} has
    EMD |1/2 - 26/38| = 7/38 = 0.184 <= 0.2 and is kept; (a,p) 25 s1 + 10 s2: 0.030. So (0,0)
    satisfies and is the DM optimum: 35^2 + 2^2 + 1 * 38 = 1267. (Against the kept rows'
    distribution, 26/37 s1, (b,p) would have EMD 0.2027 > 0.2: the verification of the release
    must use the same reference as the search.)"""
    rows = [("a", "p", "s1"), ("b", "p", "s1"), ("a", "p", "s2"), ("b", "p", "s2"), ("a", "q", "s2")]
    counts = [25, 1, 10, 1, 1]
    make_table(engine, "tc", ["x", "y", "s"], rows, counts)
    flat = [r for r, c in zip(rows, counts) for _ in range(c)]
    hx, hy = [("a", "*"), ("b", "*")], [("p", "*"), ("q", "*")]
    oracle = FullDomainOracle(flat, [0, 1], 2, [hx, hy], k=1, t=0.2, max_suppression=0.1)
    assert oracle.optimum("dm") == (0, 0) and oracle.nodes[(0, 0)].metrics["dm"] == 1267
    r = fulldomain("tc", ["x", "y"], "s", hierarchies={"x": Hierarchy.from_rows(hx), "y": Hierarchy.from_rows(hy)},
                   out="rel", engine=engine, k=1, t=0.2, distance="equal", max_suppression=0.1)
    assert r.levels == {"x": 0, "y": 0}
    assert r.suppressed == 1 and r.metric == 1267
    assert r.minimal == oracle.minimal
    assert r.report.holds


# -- 3. bad input ----------------------------------------------------------------------------------
def test_qi_without_hierarchy(engine):
    _hand(engine)
    with pytest.raises(InputError, match="'y'"):
        fulldomain("hand", ["x", "y"], hierarchies={"x": X}, out="rel", engine=engine, k=2)
    assert not engine.exists("rel")


def test_hierarchy_not_covering_a_value(engine):
    make_table(engine, "bad", ["id", "x", "y"], [(1, "a", "m"), (2, "zz", "f"), (3, "b", "m")])
    with pytest.raises(InputError, match="zz"):
        fulldomain("bad", ["x", "y"], hierarchies={"x": X, "y": Y}, out="rel", engine=engine, k=2)
    assert not engine.exists("rel")


@pytest.mark.parametrize("params", [dict(k=7), dict(k=2, l=3), dict(k=1, l=4, max_suppression=0.3)])
def test_infeasible_names_the_closest_node(engine, params):
    _hand(engine)
    oracle = FullDomainOracle(HAND, [1, 2], 3, [X.rows, Y.rows], k=params.get("k"), l=params.get("l"),
                              max_suppression=params.get("max_suppression", 0.0))
    assert not oracle.feasible
    with pytest.raises(InfeasibleError, match="closest") as e:
        fulldomain("hand", ["x", "y"], "s", hierarchies={"x": X, "y": Y}, out="rel", engine=engine, **params)
    assert "x" in str(e.value) and "y" in str(e.value)
    assert oracle.closest() == (0, 0)
    assert not engine.exists("rel")


def test_unknown_metric(engine):
    _hand(engine)
    with pytest.raises(InputError, match="metric"):
        fulldomain("hand", ["x", "y"], hierarchies={"x": X, "y": Y}, out="rel", engine=engine, k=2, metric="gcp")


def test_hierarchical_sensitive_attribute(engine):
    """A sensitive attribute with a hierarchy (hierarchical EMD) next to the lattice's own node
    column: regression for a column-name clash between the two."""
    from anonydb import Hierarchy as H
    from anonydb.methods import fulldomain as fd

    rows = [(i, "xy"[i % 2], ["flu", "cold", "hiv", "hep"][i % 4]) for i in range(24)]
    make_table(engine, "hs", ["age", "sex", "d"], rows)
    ages = H.from_rows([(str(a), "young" if a < 12 else "old", "*") for a in range(24)])
    sexes = H.from_rows([("x", "*"), ("y", "*")])
    dis = H.from_rows([("flu", "resp", "*"), ("cold", "resp", "*"), ("hiv", "blood", "*"), ("hep", "blood", "*")])
    r = fd("hs", ["age", "sex"], "d", hierarchies={"age": ages, "sex": sexes, "d": dis}, out="hsr", engine=engine,
           k=2, t=0.25)
    assert r.report.holds and "hierarchical" in r.report.verdicts[-1].model
    assert engine.scalar("SELECT count(*) FROM hsr") == 24 - r.suppressed


def test_cli_json_hand_worked(tmp_path, capsys):
    """The CLI on the hand-worked table (k = 2, max suppression 0.34, metric dm): --json gives the
    level vector in --qi order (y before x here) and the metric values of test_hand_worked_suppression:
    x at level 1, y at level 0, DM 12 (against 20 for the other minimal node)."""
    from anonydb.workflow.cli import main

    src = tmp_path / "hand.csv"
    src.write_text("id;x;y;s\n" + "".join(f"{i};{x};{y};{s}\n" for i, x, y, s in HAND))
    hx, hy = tmp_path / "x.csv", tmp_path / "y.csv"
    hx.write_text("".join(";".join(r) + "\n" for r in X.rows))
    hy.write_text("".join(";".join(r) + "\n" for r in Y.rows))
    db = tmp_path / "out.duckdb"
    args = ["anonymize", str(src), "--method", "fulldomain", "--qi", "y,x", "--hierarchy", f"x={hx}",
            "--hierarchy", f"y={hy}", "--k", "2", "--max-suppression", "0.34", "--metric", "dm", "--out", "rel",
            "--db", str(db), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["qi"] == ["y", "x"] and out["levels"] == [0, 1]
    assert out["metric"] == "dm" and out["value"] == 12 and out["suppressed"] == 0 and out["rows"] == 6
    assert out["metrics"]["loss"] == pytest.approx(1 / 6) and out["metrics"]["height"] == 1
    assert sorted(map(tuple, out["minimal"])) == [(0, 1), (1, 0)]
    assert out["verification"]["holds"] is True
    assert 0 < out["search_seconds"] <= out["seconds"]
    assert main(args) == 2  # the table exists now
    assert "already exists" in capsys.readouterr().err


def test_null_qi_is_a_value_of_its_own(engine):
    """A NULL QI value is its own value and stays NULL at every level: rows 3 and 4 (x NULL) form a
    class at x = 0 and x = 1. k = 2: (0,1) gives {a: 1,5}, {b: 2,6}, {NULL: 3,4} and (1,0) gives
    {ab m: 1,2}, {NULL f: 3,4}, {ab f: 5,6}: both minimal, DM 12 each, the tie goes to (0,1)
    (same height, lexicographic); its loss is 6 y-cells at the root / 12 cells = 1/2."""
    make_table(engine, "nul", ["id", "x", "y"],
               [(1, "a", "m"), (2, "b", "m"), (3, None, "f"), (4, None, "f"), (5, "a", "f"), (6, "b", "f")])
    r = fulldomain("nul", ["x", "y"], hierarchies={"x": X, "y": Y}, out="rel", engine=engine, k=2, **TRACK)
    assert r.levels == {"x": 0, "y": 1} and r.minimal == [(0, 1), (1, 0)]
    assert r.metrics["dm"] == 12 and r.metrics["loss"] == pytest.approx(0.5) and r.suppressed == 0
    got = engine.fetch_rows("SELECT id, x, y, eq_class FROM rel")[1]
    assert sorted((i, x, y) for i, x, y, _ in got) == [(1, "a", "*"), (2, "b", "*"), (3, None, "*"), (4, None, "*"),
                                                      (5, "a", "*"), (6, "b", "*")]
    classes = {i: c for i, _, _, c in got}
    assert classes[3] == classes[4] and len(set(classes.values())) == 3
