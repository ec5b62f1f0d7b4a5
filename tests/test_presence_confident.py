"""c-confident delta-presence: the kernel's vectors (TR Tables 3-4, spec 1.5.2), exact bounds, the
speed-ups' conservativeness, the release check, and SFALM against a brute force over the lattice."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F

import pytest

from anonydb.models.confidence import Kernel, bounds, card_dist_exact, confidence_exact
from anonydb.errors import InfeasibleError, InputError
from anonydb.hierarchy import Hierarchy
from anonydb.methods.presence import confident_presence
from anonydb.presence import check_confident, population_marginals

from conftest import make_table


def test_table_3_4_vectors():
    # F_2d / F_3d with U = 4 (spec 1.5.2): the x-cardinality likelihoods, exactly
    assert card_dist_exact([3, 3], 4) == {2: F(3, 4), 3: F(1, 4)}
    assert card_dist_exact([3, 3, 3], 4) == {1: F(6, 16), 2: F(9, 16), 3: F(1, 16)}
    assert card_dist_exact([1, 1, 1], 4) == {0: F(15, 16), 1: F(1, 16)}
    assert bounds(1, F(33, 100), F(1)) == (0, 2)
    assert confidence_exact(1, [3, 3, 3], 4, F(33, 100), F(1)) == F(15, 16)
    assert confidence_exact(1, [1, 1, 1], 4, F(33, 100), F(1)) == 1
    two_sided = {(F(1, 3), F(1)): ((0, 2), F(15, 16), F(1)), (F(1, 4), F(1, 2)): ((1, 3), F(1), F(1, 16)),
                 (F(1, 3), F(1, 2)): ((1, 2), F(15, 16), F(1, 16)), (F(0), F(1, 2)): ((1, None), F(1), F(1, 16))}
    k = Kernel(4, sd=None)
    for (lo, hi), (b, t2, t1) in two_sided.items():
        assert bounds(1, lo, hi) == b
        assert confidence_exact(1, [3, 3, 3], 4, lo, hi) == t2 and confidence_exact(1, [1, 1, 1], 4, lo, hi) == t1
        assert k.confidence(1, [3, 3, 3], lo, hi) == pytest.approx(float(t2), abs=1e-12)
        assert k.confidence(1, [1, 1, 1], lo, hi) == pytest.approx(float(t1), abs=1e-12)


def test_bounds_are_exact_where_floats_are_not():
    # n1 = 11, delta_max = 0.11: ceil(11/0.11 - 11) in floats is 90; exactly it is 89
    assert bounds(11, F(0), F(11, 100)) == (89, None)
    misses = 0
    for n1 in range(1, 50):
        for cents in range(1, 100):
            d = F(cents, 100)
            exact = bounds(n1, F(0), d)[0]
            import math

            misses += math.ceil(n1 / (cents / 100) - n1) != exact
    assert misses > 0  # the float formula is wrong somewhere in this range (the spec counts 43 cases)


def test_float_kernel_equals_exact_and_speedups_are_conservative():
    rng = random.Random(3)
    for _ in range(40):
        U = rng.randint(30, 150)
        f = [rng.randint(1, U) for _ in range(rng.randint(1, 4))]
        n1 = rng.randint(1, 12)
        lo = F(rng.randint(0, 20), 100)
        hi = min(F(1), lo + F(rng.randint(5, 60), 100))
        exact = float(confidence_exact(n1, f, U, lo, hi))
        assert Kernel(U, sd=None).confidence(n1, f, lo, hi) == pytest.approx(exact, abs=1e-9)
        sd = Kernel(U, sd=2.0).confidence(n1, f, lo, hi)
        dc = Kernel(U, sd=2.0, dc=2).confidence(n1, f, lo, hi)
        assert sd <= exact + 1e-12 and dc <= sd + 1e-12  # never overstate the confidence


def _table_4(engine):
    make_table(engine, "t4", ["a", "b", "c"], [("a1", "b1", "c1"), ("a2", "b2", "c2")])
    for q in "abc":  # population = D (1, 3) + T (1, 1)
        make_table(engine, f"m_{q}", ["value", "count"], [(f"{q}1", 2), (f"{q}2", 4)])
    return {q: f"m_{q}" for q in "abc"}


def test_check_on_table_4(engine):
    m = _table_4(engine)
    r = check_confident("t4", qi="a,b,c", delta=("1/3", "1"), c="15/16", marginals=m, engine=engine, sd=None)
    assert r.holds and r.confidence == pytest.approx(15 / 16) and r.U == 4 and r.classes == 2
    assert r.worst[0]["class"] == {"a": "a2", "b": "b2", "c": "c2"} and r.worst[0]["f"] == [3, 3, 3]
    r = check_confident("t4", qi="a,b,c", delta=("1/3", "1"), c="0.95", marginals=m, engine=engine, sd=None)
    assert not r.holds and r.violating == 1
    r = check_confident("t4", qi="a,b,c", delta=("1/4", "1/2"), c="0.5", marginals=m, engine=engine, sd=None)
    assert r.confidence == pytest.approx(1 / 16) and r.worst[0]["class"]["a"] == "a1"
    # exact arithmetic: the boundary c = 15/16 passes exactly, c = 15/16 + 1e-12 fails
    r = check_confident("t4", qi="a,b,c", delta=("1/3", "1"), c="15/16", marginals=m, engine=engine, exact=True)
    assert r.holds and not r.conservative and r.confidence == 15 / 16
    assert not check_confident("t4", qi="a,b,c", delta=("1/3", "1"), c=F(15, 16) + F(1, 10**12), marginals=m,
                               engine=engine, exact=True).holds


def test_bad_input(engine):
    m = _table_4(engine)
    with pytest.raises(InputError, match="no population distribution given for the quasi-identifier 'c'"):
        check_confident("t4", qi="a,b,c", delta="0,1", c=0.5, marginals={"a": m["a"], "b": m["b"]}, engine=engine)
    make_table(engine, "m_small", ["value", "count"], [("a1", 0), ("a2", 6)])
    with pytest.raises(InputError, match="more rows with these values of 'a' than the population: 'a1'"):
        check_confident("t4", qi="a,b,c", delta="0,1", c=0.5, marginals={**m, "a": "m_small"}, engine=engine)
    make_table(engine, "m_big", ["value", "count"], [("a1", 2), ("a2", 9)])
    with pytest.raises(InputError, match="disagree on the population size"):
        check_confident("t4", qi="a,b,c", delta="0,1", c=0.5, marginals={**m, "a": "m_big"}, engine=engine)
    make_table(engine, "m_cols", ["v", "n"], [("a1", 2)])
    with pytest.raises(InputError, match="needs columns value and count"):
        check_confident("t4", qi="a,b,c", delta="0,1", c=0.5, marginals={**m, "a": "m_cols"}, engine=engine)
    with pytest.raises(InputError, match="c must lie in \\(0, 1\\]"):
        check_confident("t4", qi="a,b,c", delta="0,1", c=1.5, marginals=m, engine=engine)


# ------------------------------------------------------------------------------------------------
# SFALM against a brute force over every node (exact fractions, no speed-ups)

X_H = Hierarchy.from_rows([[str(x), f"{x // 2}", "*"] for x in range(4)])
C_H = Hierarchy.from_rows([["a", "ab", "*"], ["b", "ab", "*"], ["c", "cd", "*"], ["d", "cd", "*"]])


def _brute(pop, priv, dmin, dmax, c):
    """min-LM node whose classes all reach c, computed from the definitions."""
    U = len(pop) - len(priv)
    dcount = [dict(), dict()]
    for i in range(2):
        for r in pop:
            dcount[i][str(r[i])] = dcount[i].get(str(r[i]), 0) + 1
        for r in priv:
            dcount[i][str(r[i])] -= 1
    hs = [X_H, C_H]
    best = None
    for node in itertools.product(range(3), range(3)):
        classes: dict = {}
        for r in priv:
            key = tuple(hs[i].ancestors(str(r[i]))[node[i]] for i in range(2))
            classes[key] = classes.get(key, 0) + 1
        ok = True
        lm = F(0)
        for key, n1 in classes.items():
            f = []
            for i in range(2):
                leaves = [v for v in dcount[i] if hs[i].ancestors(v)[node[i]] == key[i]]
                f.append(sum(dcount[i][v] for v in leaves))
                lm += n1 * F(len([v for v in ["0", "1", "2", "3"] if X_H.ancestors(v)[node[0]] == key[0]]) - 1, 3) \
                    if i == 0 else n1 * F(len([v for v in "abcd" if C_H.ancestors(v)[node[1]] == key[1]]) - 1, 3)
            if confidence_exact(n1, f, U, dmin, dmax) < c:
                ok = False
        if ok:
            lm /= len(priv) * 2
            cand = (lm, sum(node), node)
            best = cand if best is None or cand < best else best
    return best


@pytest.mark.parametrize("seed", range(6))
def test_sfalm_equals_the_brute_force(engine, seed):
    rng = random.Random(seed)
    pop = [(rng.randint(0, 3), rng.choice("abcd")) for _ in range(rng.randint(25, 40))]
    priv = rng.sample(pop, rng.randint(4, 9))
    share = F(len(priv), len(pop))
    dmin, dmax = max(F(0), share - F(15, 100)), min(F(1), share + F(25, 100))
    c = F(rng.choice([50, 70, 90]), 100)
    make_table(engine, "pop", ["x", "c"], pop)
    make_table(engine, "priv", ["x", "c"], priv)
    m = population_marginals(engine, "pop", ["x", "c"])
    best = _brute(pop, priv, dmin, dmax, c)
    kw = dict(delta=(dmin, dmax), c=c, marginals=m, hierarchies={"x": X_H, "c": C_H}, engine=engine, sd=None,
              pa=False, replace=True)
    if best is None:
        with pytest.raises(InfeasibleError):
            confident_presence("priv", ["x", "c"], out="rel", **kw)
        return
    r = confident_presence("priv", ["x", "c"], out="rel", **kw)
    assert r.lm == pytest.approx(float(best[0]), abs=1e-12)
    e = confident_presence("priv", ["x", "c"], out="rel_exact", **{**kw, "exact": True})
    assert e.levels == r.levels
    assert (r.levels["x"], r.levels["c"]) == best[2]
    assert r.report.holds and r.evaluated == 9
    # with practical anti-monotonicity the result is checked as well; it can only cost more
    p = confident_presence("priv", ["x", "c"], out="rel_pa", **{**kw, "pa": True})
    assert p.report.holds and p.lm >= r.lm - 1e-12 and p.evaluated <= 9


def test_minimum_dominant_subset_is_exact(engine):
    """One-sided delta: judging only the skyline signatures gives the same nodes as judging all."""
    rng = random.Random(9)
    pop = [(rng.randint(0, 3), rng.choice("abcd")) for _ in range(60)]
    priv = rng.sample(pop, 12)
    make_table(engine, "pop", ["x", "c"], pop)
    make_table(engine, "priv", ["x", "c"], priv)
    m = population_marginals(engine, "pop", ["x", "c"])
    for delta in (("0", "0.4"), ("0.1", "1")):
        a = confident_presence("priv", ["x", "c"], delta=delta, c="0.6", marginals=m, hierarchies={"x": X_H, "c": C_H},
                               out="a", engine=engine, sd=None, pa=False, mds=True, replace=True)
        b = confident_presence("priv", ["x", "c"], delta=delta, c="0.6", marginals=m, hierarchies={"x": X_H, "c": C_H},
                               out="b", engine=engine, sd=None, pa=False, mds=False, replace=True)
        assert a.levels == b.levels and a.lm == pytest.approx(b.lm)


def test_adult_subset_four_attributes(datasets, engine):
    a = datasets / "adult"
    for name, f in (("t", "adult_subset.csv"), ("p", "adult.csv")):
        engine.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{a / f}', delim=';', header=true)")
    qi = ["age", "workclass", "education", "marital-status"]
    hs = {q: Hierarchy.from_arx(a / f"adult_hierarchy_{q}.csv") for q in qi}
    m = population_marginals(engine, "p", qi)
    r = confident_presence("t", qi, delta="0.05,0.15", c="0.8", marginals=m, hierarchies=hs, out="rel", engine=engine)
    assert r.rows == 3016 and r.report.holds and r.report.U == 30162 - 3016
    assert r.report.confidence >= 0.8 and 0 < r.lm < 1
    assert engine.scalar("SELECT count(*) FROM rel") == 3016


def test_cli_confident(engine, tmp_path, capsys):
    from anonydb.workflow.cli import main

    rng = random.Random(2)
    pop = [(rng.randint(0, 3), rng.choice("abcd")) for _ in range(80)]
    priv = rng.sample(pop, 12)
    p, t, m = tmp_path / "pop.csv", tmp_path / "priv.csv", tmp_path / "marg.csv"
    p.write_text("x,c\n" + "\n".join(f"{x},{c}" for x, c in pop) + "\n")
    t.write_text("x,c\n" + "\n".join(f"{x},{c}" for x, c in priv) + "\n")
    counts: dict = {}
    for x, c in pop:
        counts[("x", str(x))] = counts.get(("x", str(x)), 0) + 1
        counts[("c", c)] = counts.get(("c", c), 0) + 1
    m.write_text("attribute,value,count\n" + "\n".join(f"{a},{v},{n}" for (a, v), n in counts.items()) + "\n")
    hx, hc = tmp_path / "x.csv", tmp_path / "c.csv"
    hx.write_text("\n".join(";".join(r) for r in X_H.rows) + "\n")
    hc.write_text("\n".join(";".join(r) for r in C_H.rows) + "\n")
    db = tmp_path / "r.duckdb"
    common = ["--qi", "x,c", "--delta", "0.05,0.4", "--confidence", "0.6", "--hierarchy", f"x={hx}",
              "--hierarchy", f"c={hc}"]
    assert main(["anonymize", str(t), *common, "--marginals", str(m), "--method", "fulldomain", "--metric", "loss",
                 "--out", "rel", "--db", str(db)]) == 0
    assert "c-confident delta-presence (SFALM)" in capsys.readouterr().out
    assert main(["check", "rel", *common, "--public", str(p), "--private", str(t), "--db", str(db)]) == 0
    assert "holds" in capsys.readouterr().out
    assert main(["check", str(t), "--qi", "x,c", "--delta", "0.05,0.4", "--confidence", "0.6"]) == 2
    assert "--marginals CSV or --public TABLE" in capsys.readouterr().err
    assert main(["anonymize", str(t), *common, "--marginals", str(m), "--method", "mondrian", "--out", "r2",
                 "--db", str(db)]) == 2
    assert "--method fulldomain (SFALM)" in capsys.readouterr().err


def test_labels_shared_between_levels(engine):
    """X_H's level-1 nodes '0' and '1' are also leaves: such a release needs its levels spelled out."""
    from anonydb import generalize

    pop = [(x, c) for x in range(4) for c in "abcd" for _ in range(3)]
    priv = [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
    make_table(engine, "pop", ["x", "c"], pop)
    make_table(engine, "priv", ["x", "c"], priv)
    m = population_marginals(engine, "pop", ["x", "c"])
    hs = {"x": X_H, "c": C_H}
    generalize(engine, "priv", {"x": 1, "c": 2}, hs, out="g")
    with pytest.raises(InputError, match="labels of 'x' are nodes of hierarchy levels 0, 1 alike"):
        check_confident("g", qi="x,c", delta="0,0.5", c=0.5, marginals=m, engine=engine, hierarchies=hs, private="priv")
    r = check_confident("g", qi="x,c", delta="0,0.5", c=0.5, marginals=m, engine=engine, hierarchies=hs,
                        private="priv", levels={"x": 1, "c": 2}, sd=None)
    # x label '0' covers leaves 0 and 1: D-count 2 * 12 - 2 = 22; c '*' covers all 44
    assert sorted(w["f"] for w in r.worst) == [[22, 44], [22, 44]] and r.U == 44
