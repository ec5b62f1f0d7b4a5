"""Attack simulation and the privacy-utility trade-off [issue 10; spec-injector-tradeoff-foreground 5,
spec-closeness-slicing 6.3, 7.1, 7.3, 8.5]."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonydb.errors import InfeasibleError
from anonydb.workflow.evaluate import evaluate
from anonydb.hierarchy import Hierarchy
from anonydb.methods import anatomy, anonymize
from anonydb.workflow.tradeoff import TradeoffPoint, frontier, information, js, p_loss, sweep, u_loss, write_frontier_html

from conftest import examples, make_table, need_shared

# thesis §5.3: the overall Occupation distribution, in adult.names order
Q = [0.0314, 0.1331, 0.1063, 0.1196, 0.1323, 0.1329, 0.0452, 0.0657, 0.1225, 0.0327, 0.0512, 0.0052, 0.0216, 0.0003]
ONE_HOT = [0.6229, 0.4881, 0.5181, 0.5029, 0.4890, 0.4884, 0.6001, 0.5698, 0.4997, 0.6206, 0.5908, 0.6769, 0.6408,
           0.6918]


def test_js_of_revealing_one_value_tv_5_5():
    """JS(Q, e_i) with natural logs: Craft-repair 0.4881 and Armed-Forces 0.6918 (the thesis's 0.488
    and 0.692), every value as the spec derives it, and the closed form."""
    for i, want in enumerate(ONE_HOT):
        e = [1.0 if j == i else 0.0 for j in range(len(Q))]
        assert js(Q, e) == pytest.approx(want, abs=5e-5)
        q = Q[i]
        closed = 0.5 * (math.log(2 / (1 + q)) + q * math.log(2 * q / (1 + q)) + (1 - q) * math.log(2))
        assert js(Q, e) == pytest.approx(closed, rel=1e-12)
    assert js(Q, Q) == 0.0 and js([1, 0], [0, 1]) == pytest.approx(math.log(2))


TABLE_2_4 = [("476**", "2*", "Cancer", 300), ("476**", "2*", "Flu", 300), ("479**", "4*", "Cancer", 200),
             ("479**", "4*", "Flu", 1800), ("476**", "3*", "Cancer", 200), ("476**", "3*", "Flu", 200)]


def test_table_2_4_information_and_p_loss(engine):
    """H(T) 0.5432728, IL 0.4477710, U 0.0955017 nats [spec-closeness-slicing 8.5]; P_loss is the
    worst group's JS from (7/30, 23/30): E1 and E3 at (1/2, 1/2)."""
    rows = [(f"{z}|{a}", z, a, d) for z, a, d, n in TABLE_2_4 for _ in range(n)]
    make_table(engine, "t24", ["g", "zip", "age", "disease"], rows)
    info = information(engine, "t24", "g", "disease")
    assert info["H"] == pytest.approx(0.5432728, abs=5e-8)
    assert info["IL"] == pytest.approx(0.4477710, abs=5e-8)
    assert info["U"] == pytest.approx(0.0955017, abs=5e-8)
    assert p_loss(engine, "t24", "g", "disease") == pytest.approx(js([7 / 30, 23 / 30], [0.5, 0.5]), rel=1e-12)


# -- U_loss against a direct Python computation -------------------------------------------------------
XH = Hierarchy.intervals(widths=[5], origin=0)       # x: value -> [0, 5[ / [5, 10[ -> *
YH = Hierarchy.from_mapping({"a": ["ab", "*"], "b": ["ab", "*"], "c": ["cd", "*"], "d": ["cd", "*"]})


def _labels_x(v):
    return [str(v), f"[{v // 5 * 5}, {v // 5 * 5 + 5}["]


def _labels_y(v):
    return [v, {"a": "ab", "b": "ab", "c": "cd", "d": "cd"}[v]]


def _oracle_u_loss(rows, units, min_sup):
    """rows: (x, y, s) of the source; units: (weight, cover_x (set of x values), cover_y (set), dist {s: p})."""
    n = len(rows)
    pops = defaultdict(Counter)
    for x, y, s in rows:
        lx, ly = _labels_x(x), _labels_y(y)
        for vx in [None, 0, 1]:
            for vy in [None, 0, 1]:
                if vx is None and vy is None:
                    continue
                pops[(vx, lx[vx] if vx is not None else None, vy, ly[vy] if vy is not None else None)][s] += 1
    pops = {k: c for k, c in pops.items() if sum(c.values()) >= math.ceil(min_sup * n - 1e-9)}
    vals = sorted({s for _, _, s in rows})
    total = 0.0
    for (vx, nx, vy, ny), c in pops.items():
        est = Counter()
        for w, cx, cy, dist in units:
            fx = 1.0 if vx is None else sum(1 for v in cx if _labels_x(v)[vx] == nx) / len(cx)
            fy = 1.0 if vy is None else sum(1 for v in cy if _labels_y(v)[vy] == ny) / len(cy)
            for sv, p in dist.items():
                est[sv] += w * fx * fy * p
        z = sum(est.values())
        m = sum(c.values())
        total += js([c[v] / m for v in vals], [est[v] / z if z else 0.0 for v in vals])
    return total / len(pops) if pops else 0.0, len(pops)


@st.composite
def small_tables(draw):
    n = draw(st.integers(6, 40))
    return [(draw(st.integers(0, 9)), draw(st.sampled_from("abcd")), draw(st.sampled_from(["s1", "s2", "s3"])))
            for _ in range(n)]


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), k=st.integers(2, 6), min_sup=st.sampled_from([0.1, 0.2, 0.3]))
def test_u_loss_of_a_generalized_release_equals_python(engine, rows, k, min_sup):
    for t in ("src", "rel"):
        engine.execute(f"DROP TABLE IF EXISTS {t}")
    make_table(engine, "src", ["id", "x", "y", "s"], [(i, *r) for i, r in enumerate(rows)])
    anonymize("src", ["x", "y"], "s", out="rel", engine=engine, k=k, hierarchies={"y": YH})
    got = engine.fetch("SELECT eq_class, x_lo, x_hi, y, s FROM rel")
    xs = sorted({r[0] for r in rows})
    classes = defaultdict(list)
    for g in got:
        classes[g["eq_class"]].append(g)
    units = []
    for members in classes.values():
        g = members[0]
        cx = {v for v in xs if g["x_lo"] <= v <= g["x_hi"]}
        lab = g["y"]
        cy = {v for v in "abcd" if lab in (v, _labels_y(v)[1])} if lab != "*" else set("abcd")
        cy = cy or {v.strip() for v in lab.strip("{}").split(",")}
        dist = Counter(m["s"] for m in members)
        units.append((len(members), cx, cy, {sv: c / len(members) for sv, c in dist.items()}))
    want, n_pops = _oracle_u_loss(rows, units, min_sup)
    r = u_loss("src", ["x", "y"], "s", engine=engine, hierarchies={"x": XH, "y": YH}, min_sup=min_sup, table="rel")
    assert r.populations == n_pops
    assert r.value == pytest.approx(want, abs=1e-9)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=small_tables(), min_sup=st.sampled_from([0.1, 0.25]))
def test_u_loss_of_a_bucketized_release_equals_python(engine, rows, min_sup):
    for t in ("src", "ana_qit", "ana_st"):
        engine.execute(f"DROP TABLE IF EXISTS {t}")
    make_table(engine, "src", ["x", "y", "s"], rows)
    if max(Counter(s for *_, s in rows).values()) * 2 > len(rows):  # a value in more than half the rows
        with pytest.raises(InfeasibleError, match="Anatomy with l = 2 is infeasible"):
            anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
        return
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    qit = engine.fetch("SELECT group_id, x, y FROM ana_qit")
    stt = engine.fetch('SELECT group_id, s, "count" FROM ana_st')
    dist = defaultdict(Counter)
    for r in stt:
        dist[r["group_id"]][r["s"]] += r["count"]
    units = [(1, {q["x"]}, {q["y"]}, {sv: c / sum(dist[q["group_id"]].values()) for sv, c in
                                      dist[q["group_id"]].items()}) for q in qit]
    want, n_pops = _oracle_u_loss(rows, units, min_sup)
    r = u_loss("src", ["x", "y"], "s", engine=engine, hierarchies={"x": XH, "y": YH}, min_sup=min_sup,
               qit="ana_qit", st="ana_st")
    assert r.populations == n_pops
    assert r.value == pytest.approx(want, abs=1e-9)


def test_special_cases_trivial_and_original(engine):
    """Trivially anonymized data: P_loss 0; the original data: U_loss 0 [thesis §5.2.3]."""
    rnd = random.Random(3)
    rows = [(i, rnd.randint(0, 9), rnd.choice("abcd"), rnd.choice(["s1", "s2", "s3"])) for i in range(60)]
    make_table(engine, "src", ["id", "x", "y", "s"], rows)
    engine.execute("CREATE TABLE triv AS SELECT 1 AS eq_class, '*' AS x, '*' AS y, s FROM src")
    engine.execute("CREATE TABLE orig AS SELECT id AS eq_class, x, y, s FROM src")
    h = {"x": XH, "y": YH}
    assert p_loss(engine, "triv", "eq_class", "s") == 0.0
    assert u_loss("src", ["x", "y"], "s", engine=engine, hierarchies=h, table="orig").value == pytest.approx(0, abs=1e-12)
    assert u_loss("src", ["x", "y"], "s", engine=engine, hierarchies=h, table="triv").value > 0
    worst = max(js(*[[c[v] / 60 for v in ("s1", "s2", "s3")], [float(v == s) for v in ("s1", "s2", "s3")]])
                for c in [Counter(r[3] for r in rows)] for s in {r[3] for r in rows})
    assert p_loss(engine, "orig", "eq_class", "s") == pytest.approx(worst, rel=1e-12)
    with pytest.raises(Exception, match="min_sup must lie in"):
        u_loss("src", ["x", "y"], "s", engine=engine, table="triv", min_sup=0)


# -- attacks and risk ------------------------------------------------------------------------------
OCC = Hierarchy.from_mapping({"flu": ["respiratory", "*"], "bronchitis": ["respiratory", "*"],
                              "gastritis": ["stomach", "*"], "ulcer": ["stomach", "*"]})


def test_homogeneity_similarity_and_risk(engine):
    rows = [(1, "a", "flu"), (1, "a", "flu"), (1, "a", "flu"),          # homogeneous (3 tuples)
            (2, "b", "flu"), (2, "b", "bronchitis"), (2, "c", "flu"),   # similar: all respiratory
            (3, "d", "gastritis"), (3, "d", "flu"), (3, "e", "ulcer"), (3, "e", "ulcer")]
    make_table(engine, "rel", ["eq_class", "q", "s"], rows)
    ev = evaluate("rel", ["q"], "s", engine=engine, hierarchies={"s": OCC})
    assert (ev.rows, ev.groups) == (10, 3)
    assert ev.homogeneity == {"groups": 3, "exposed_groups": 1, "exposed_tuples": 3, "share": 0.3}
    assert ev.similarity["exposed_groups"] == 2 and ev.similarity["exposed_tuples"] == 6
    risk = ev.risk  # classes by eq_class: sizes 3, 3, 4
    assert risk["prosecutor"]["highest"] == pytest.approx(1 / 3)
    assert risk["prosecutor"]["average"] == pytest.approx(3 / 10)
    assert risk["marketer"] == pytest.approx(3 / 10)
    # a population in the release's coding: classes 1, 2, 3 have 6, 3, 40 people
    make_table(engine, "pop", ["eq_class"], [(1,)] * 6 + [(2,)] * 3 + [(3,)] * 40)
    ev = evaluate("rel", ["q"], "s", engine=engine, population="pop", threshold=0.3)
    assert ev.risk["journalist"]["highest"] == pytest.approx(1 / 3)
    assert ev.risk["journalist"]["records_at_risk"] == 3
    assert ev.risk["marketer"] == pytest.approx((3 / 6 + 3 / 3 + 4 / 40) / 10)
    assert ev.similarity is None and "similarity attack skipped" in ev.notes[0]


def test_evaluate_qit_st_release(engine):
    rnd = random.Random(5)
    rows = [(rnd.randint(0, 9), rnd.choice("abcd"), rnd.choice(["flu", "bronchitis", "gastritis", "ulcer"]))
            for _ in range(80)]
    make_table(engine, "src", ["x", "y", "s"], rows)
    anatomy("src", ["x", "y"], "s", l=2, out="ana", engine=engine)
    ev = evaluate("ana", ["x", "y"], "s", engine=engine, source="src", hierarchies={"x": XH, "y": YH, "s": OCC})
    assert ev.rows == 80 and ev.homogeneity["exposed_tuples"] == 0  # l-diverse groups
    stt = engine.fetch('SELECT group_id, s, "count" FROM ana_st')
    groups = defaultdict(set)
    for r in stt:
        groups[r["group_id"]].add(OCC.ancestors(r["s"])[1])
    sizes = Counter()
    for r in stt:
        sizes[r["group_id"]] += r["count"]
    assert ev.similarity["exposed_tuples"] == sum(sizes[g] for g, a in groups.items() if len(a) == 1)
    assert ev.u_loss == pytest.approx(u_loss("src", ["x", "y"], "s", engine=engine, hierarchies={"x": XH, "y": YH},
                                             qit="ana_qit", st="ana_st").value)
    assert "P_loss" in ev.format()


# -- the frontier -----------------------------------------------------------------------------------
def test_frontier_marks_the_non_dominated():
    pts = [TradeoffPoint("a", "m", {}, 0.1, 0.5), TradeoffPoint("b", "m", {}, 0.2, 0.2),
           TradeoffPoint("c", "m", {}, 0.3, 0.3), TradeoffPoint("d", "n", {}, 0.5, 0.1),
           TradeoffPoint("e", "n", {}, 0.2, 0.2)]
    front = frontier(pts)
    assert [p.label for p in front] == ["a", "b", "e", "d"]  # equal points do not dominate each other
    assert not pts[2].efficient


def test_sweep_on_a_small_table(engine, tmp_path):
    rnd = random.Random(11)
    rows = [(i, rnd.randint(0, 9), rnd.choice("abcd"), rnd.choice(["s1", "s2", "s3"])) for i in range(120)]
    make_table(engine, "src", ["id", "x", "y", "s"], rows)
    settings_ = [("mondrian", {"k": k}) for k in (2, 5, 20)] + [("anatomy", {"l": 2}), ("mondrian", {"l": 9})]
    sw = sweep("src", ["x", "y"], "s", settings_, engine=engine, hierarchies={"x": XH, "y": YH})
    assert len(sw.points) == 5
    bad = sw.points[-1]
    assert math.isnan(bad.p_loss) and bad.note.startswith("infeasible")
    ok = [p for p in sw.points if not math.isnan(p.p_loss)]
    assert any(p.efficient for p in ok)
    for p in ok:  # each figure equals a direct measurement of the same release
        assert 0 <= p.p_loss <= math.log(2) and p.u_loss >= 0
    k20 = next(p for p in ok if p.params == {"k": 20})
    anonymize("src", ["x", "y"], "s", out="k20", engine=engine, k=20, hierarchies={"x": XH, "y": YH})
    assert k20.p_loss == pytest.approx(p_loss(engine, "k20", "eq_class", "s"))
    assert k20.u_loss == pytest.approx(u_loss("src", ["x", "y"], "s", engine=engine, hierarchies={"x": XH, "y": YH},
                                              table="k20").value)
    page = write_frontier_html(sw, str(tmp_path / "f.html"))
    text = open(page).read()
    assert "<svg" in text and "polyline" in text and "anatomy l=2" in text
    assert not [t for t in engine.fetch_rows("SELECT table_name FROM information_schema.tables")[1]
                if t[0].startswith("anonydb_sweep")]


def test_adult_trivial_and_k5000(engine):
    """All QIs removed: U_loss 0.048 (thesis 0.05); the original data: P_loss = JS(Q, e_Armed-Forces)
    0.6918 (thesis 0.692) and U_loss 0."""
    from anonydb.datasets import adult_hierarchy_paths, load_adult

    folder = need_shared() / "adult"
    load_adult(engine, "adult", folder)
    hs = {a: Hierarchy.from_arx(p) for a, p in adult_hierarchy_paths(folder).items()}
    qi = ["age", "workclass", "education", "marital-status", "race", "sex"]
    engine.execute("CREATE TABLE triv AS SELECT 1 AS eq_class, '*' AS age, '*' AS workclass, '*' AS education, "
                   "'*' AS \"marital-status\", '*' AS race, '*' AS sex, occupation FROM adult")
    engine.execute("CREATE TABLE orig AS SELECT row_number() OVER () AS eq_class, * FROM adult")
    h = {a: hs[a] for a in qi}
    triv = u_loss("adult", qi, "occupation", engine=engine, hierarchies=h, table="triv")
    assert triv.value == pytest.approx(0.05, abs=0.005) and triv.populations > 1000
    assert p_loss(engine, "orig", "eq_class", "occupation") == pytest.approx(0.6918, abs=5e-5)
    assert p_loss(engine, "triv", "eq_class", "occupation") == 0.0


def test_bad_input(engine):
    make_table(engine, "rel", ["eq_class", "q", "s"], [(1, "a", "x")])
    with pytest.raises(Exception, match="has no column 'nope'"):
        evaluate("rel", ["nope"], "s", engine=engine)
    with pytest.raises(Exception, match="risk threshold"):
        evaluate("rel", ["q"], "s", engine=engine, threshold=0)
    with pytest.raises(Exception, match="give the release as table"):
        u_loss("rel", ["q"], "s", engine=engine)



def test_cli_evaluate_and_tradeoff(tmp_path, capsys):
    import json

    from anonydb.workflow.cli import main
    from anonydb.engines.duckdb import DuckDBEngine

    db = str(tmp_path / "w.duckdb")
    eng = DuckDBEngine(db)
    rnd = random.Random(2)
    make_table(eng, "src", ["id", "x", "y", "s"],
               [(i, rnd.randint(0, 9), rnd.choice("abcd"), rnd.choice(["flu", "bronchitis", "gastritis", "ulcer"]))
                for i in range(100)])
    anonymize("src", ["x", "y"], "s", out="gen", engine=eng, k=5)
    eng.close()
    hier = tmp_path / "occ.csv"
    hier.write_text("flu;respiratory;*\nbronchitis;respiratory;*\ngastritis;stomach;*\nulcer;stomach;*\n")
    code = main(["evaluate", "gen", "--qi", "x,y", "--sensitive", "s", "--source", "src", "--hierarchy",
                 f"s={hier}", "--db", db, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    ev = json.loads(out.out)
    assert ev["rows"] == 100 and ev["similarity"]["criterion"].startswith("one node at level 1")
    assert 0 <= ev["p_loss"] <= math.log(2) and ev["u_loss"] is not None
    html = tmp_path / "f.html"
    code = main(["tradeoff", "src", "--qi", "x,y", "--sensitive", "s", "--setting", "mondrian:k=2|10",
                 "--setting", "anatomy:l=2", "--html", str(html), "--db", db, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    pts = json.loads(out.out)["points"]
    assert [p["label"] for p in pts] == ["mondrian k=2", "mondrian k=10", "anatomy l=2"]
    assert "<svg" in html.read_text()
    code = main(["tradeoff", "src", "--qi", "x,y", "--sensitive", "s", "--setting", "mondrian", "--db", db])
    assert code == 2 and "--setting expects METHOD:PARAM=V" in capsys.readouterr().err
    code = main(["evaluate", "gen", "--qi", "x,y", "--sensitive", "s", "--targets", "flu", "--db", db])
    assert code == 2 and "belong to --foreground" in capsys.readouterr().err


def test_evaluate_runs_the_foreground_attack(engine):
    """evaluate(..., foreground=...) is the foreground module on the same groups: equal results
    whether the release is read by evaluate or given to foreground_attack directly."""
    from anonydb.attacks.foreground import foreground_attack

    rnd = random.Random(8)
    rows = [(i, rnd.choice("ab"), rnd.choice("xy"), rnd.choice(["s1", "s2", "s3"])) for i in range(200)]
    make_table(engine, "src", ["id", "a", "b", "s"], rows)
    anatomy("src", ["a", "b", "id"], "s", l=2, out="ana", engine=engine)
    engine.execute("CREATE TABLE truth AS SELECT q.group_id, q.a, q.b, s.s FROM ana_qit AS q JOIN src AS s USING (id)")
    kw = dict(targets=["s1"], r=2, min_support=20, truth="truth")
    ev = evaluate("ana", ["a", "b"], "s", engine=engine, foreground=kw)
    direct = foreground_attack(engine=engine, qi=["a", "b"], sensitive="s", qit="ana_qit", st="ana_st", **kw)
    assert ev.foreground.breached == direct.breached and ev.foreground.recall == direct.recall
    assert ev.foreground.rows == 200 and "foreground" in ev.format().lower()


def test_sweep_compares_every_method(engine):
    """Full-domain (hierarchy labels), slicing (a bucketized view) and Anatomy on one frontier; each
    point equals a direct measurement of a release built the same way."""
    rnd = random.Random(4)
    rows = [(rnd.randint(0, 9), rnd.choice("abcd"), rnd.choice(["s1", "s2", "s3", "s4"])) for _ in range(160)]
    make_table(engine, "src", ["x", "y", "s"], rows)
    h = {"x": XH, "y": YH}
    sw = sweep("src", ["x", "y"], "s", [("fulldomain", {"k": 5}), ("slicing", {"l": 2}), ("anatomy", {"l": 3})],
               engine=engine, hierarchies=h)
    fd, sl, an = sw.points
    assert not any(math.isnan(p.p_loss) for p in sw.points), [p.note for p in sw.points]
    from anonydb.workflow.jobs import anonymize as release
    r = release("src", ["x", "y"], "s", method="fulldomain", out="fd", engine=engine, hierarchies=h, k=5)
    assert fd.p_loss == pytest.approx(p_loss(engine, r.table, "eq_class", "s"))
    assert fd.u_loss == pytest.approx(u_loss("src", ["x", "y"], "s", engine=engine, hierarchies=h, table=r.table).value)
    r = release("src", ["x", "y"], "s", method="slicing", out="sl", engine=engine, hierarchies=h, l=2)
    assert sl.p_loss == pytest.approx(p_loss(engine, r.table, "bucket_id", "s"))
    assert sl.u_loss == pytest.approx(u_loss("src", ["x", "y"], "s", engine=engine, hierarchies=h, table=r.table,
                                             group="bucket_id", bucketized=True).value)
    assert 0 <= an.p_loss <= math.log(2)


def test_cli_evaluate_foreground_writes_the_risks(tmp_path, capsys):
    import json

    from anonydb.workflow.cli import main
    from anonydb.engines.duckdb import DuckDBEngine

    db = str(tmp_path / "w.duckdb")
    eng = DuckDBEngine(db)
    rnd = random.Random(6)
    make_table(eng, "src", ["id", "a", "b", "s"],
               [(i, rnd.choice("ab"), rnd.choice("xy"), rnd.choice(["s1", "s2", "s3"])) for i in range(120)])
    anatomy("src", ["a", "b"], "s", l=2, out="ana", engine=eng)
    eng.close()
    code = main(["evaluate", "ana", "--qi", "a,b", "--sensitive", "s", "--foreground", "--targets", "s1",
                 "--epsilon", "0.2", "--risk-out", "risk", "--db", db, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    fg = json.loads(out.out)["foreground"]
    assert fg["rows"] == 120 and fg["J"] == math.ceil(math.log(2 / 0.9) / (2 * 0.2 ** 2))
    eng = DuckDBEngine(db)
    assert eng.scalar("SELECT count(*) FROM risk") == 120
    assert eng.scalar("SELECT count(*) FROM risk WHERE risk > 0.5") == fg["breached"]
    eng.close()
