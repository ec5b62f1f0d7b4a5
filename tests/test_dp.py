"""Differentially private aggregates by person (issue 64, first part): OpenDP's noise against the
exact distributions, the thresholds against OpenDP's own privacy map, contribution bounding against
an adversarial person, and bad input refused in one line with nothing written."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("opendp", reason="OpenDP is not installed (pip install 'anonydb[dp]')")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy import stats  # noqa: E402

from conftest import examples  # noqa: E402

from anonydb import noise  # noqa: E402
from anonydb.errors import InputError  # noqa: E402
from anonydb.methods.dp import bounded_sql, dp  # noqa: E402


def discrete_laplace_pmf(k: int, b: float) -> float:
    """P(X = k) for the two-sided geometric with scale b: (1 - a) / (1 + a) a^|k|, a = e^(-1/b)."""
    a = math.exp(-1 / b)
    return (1 - a) / (1 + a) * a ** abs(k)


def chi_square_p(draws: list[int], b: float) -> float:
    """The chi-square test's p-value of integer draws against the discrete Laplace of scale b (tails
    pooled beyond +-3b)."""
    edge = int(3 * b)
    cells = list(range(-edge, edge + 1))
    observed = [sum(1 for d in draws if d == k) for k in cells]
    observed = [sum(1 for d in draws if d < -edge)] + observed + [sum(1 for d in draws if d > edge)]
    probs = [discrete_laplace_pmf(k, b) for k in cells]
    tail = (1 - sum(probs)) / 2
    expected = [len(draws) * p for p in [tail] + probs + [tail]]
    return stats.chisquare(observed, expected).pvalue


def test_integer_noise_is_the_discrete_laplace():
    """5,000 draws at sensitivity 2 and epsilon 1 (scale 2) fit the exact pmf; the same draws read
    as scale 1 (the noise halved, a broken mechanism's claim) do not."""
    draws, scale = noise.laplace([0] * 5000, 2, 1.0, True)
    assert scale == 2.0
    assert chi_square_p(draws, 2.0) > 1e-4
    assert chi_square_p(draws, 1.0) < 1e-6


def test_real_noise_is_the_laplace():
    """Real sums get Laplace noise of scale sensitivity / epsilon (KS test against its cdf)."""
    draws, scale = noise.laplace([0.0] * 4000, 2.5, 0.5, False)
    assert scale == pytest.approx(5.0, rel=1e-9)
    assert stats.kstest(draws, stats.laplace(scale=5.0).cdf).pvalue > 1e-4
    assert stats.kstest(draws, stats.laplace(scale=2.5).cdf).pvalue < 1e-6


@pytest.mark.parametrize("groups,rows,epsilon,delta", [(1, 1, 1.0, 1e-6), (3, 2, 0.5, 1e-8), (10, 1, 2.0, 1e-5)])
def test_threshold_is_the_least_opendp_allows(groups, rows, epsilon, delta):
    """The threshold is the least whose delta, by OpenDP's own privacy map, fits; one below does not."""
    import opendp.prelude as odp

    odp.enable_features("contrib")
    _, scale, t = noise.threshold({"a": 5}, groups, rows, epsilon, delta)
    space = (odp.map_domain(odp.atom_domain(T=str), odp.atom_domain(T="i64")),
             odp.l01inf_distance(odp.absolute_distance(T="i64")))
    d_in = (groups, groups * rows, rows)
    eps, dl = odp.m.make_laplace_threshold(*space, scale=scale, threshold=t).map(d_in)
    assert eps <= epsilon and dl <= delta
    if t > rows:
        assert odp.m.make_laplace_threshold(*space, scale=scale, threshold=t - 1).map(d_in)[1] > delta


def visits(engine, adversary_groups: int = 0):
    """50 persons with 4 visits each in 4 groups, and one adversary with 5 visits in each of
    ``adversary_groups`` groups of their own."""
    rows = [(p, f"g{(p + i) % 4}", 10.0 * i) for p in range(50) for i in range(4)]
    rows += [(999, f"a{g}", 1000.0) for g in range(adversary_groups) for _ in range(5)]
    engine.execute("DROP TABLE IF EXISTS v")
    engine.execute("CREATE TABLE v (pid INTEGER, grp VARCHAR, cost DOUBLE)")
    engine.execute("INSERT INTO v VALUES " + ", ".join(f"({p}, '{g}', {c})" for p, g, c in rows))


@pytest.mark.parametrize("G,R", [(1, 1), (3, 2)])
def test_an_adversary_in_1000_groups_counts_in_at_most_G(engine, G, R):
    from anonydb.methods.dp import Bound

    visits(engine, adversary_groups=1000)
    _, rows = engine.fetch_rows(bounded_sql("v", "pid", ["grp"], [Bound("cost", 0, 100)], G, R))
    theirs = {g: (n, s) for g, n, s in rows if g.startswith("a")}
    assert len(theirs) <= G and all(n <= R for n, _ in theirs.values())
    assert all(s <= R * 100 for _, s in theirs.values())  # clamped to hi
    ours = {g: n for g, n, _ in rows if g.startswith("g")}
    assert sum(ours.values()) <= 50 * G * R and all(n <= 50 * R for n in ours.values())


def test_gaussian_noise_is_the_discrete_gaussian_at_the_zcdp_scale():
    """Counts with R sqrt(G) = 2 sqrt(2) L2 sensitivity at rho = 0.05: sigma = Delta / sqrt(2 rho)
    (Bun and Steinke 2016, Def. 1.1 and Prop. 1.6), and 5,000 draws fit the discrete Gaussian's
    exact pmf, proportional to exp(-k^2 / (2 sigma^2)) (Canonne, Kamath and Steinke 2020, Def. 1)."""
    delta2, rho = 2 * math.sqrt(2), 0.05
    sigma = noise.gaussian_scale_for(delta2, rho, True)
    assert sigma == pytest.approx(delta2 / math.sqrt(2 * rho), rel=1e-6)
    step = noise.noise_step({"keys": 1, "count": True, "count_scale": sigma, "threshold": None, "values": [],
                             "mechanism": "gaussian"})
    draws = [int(n) for _, n, *_ in step([(i, 0) for i in range(5000)])]
    edge = int(2.5 * sigma)
    weights = {k: math.exp(-k * k / (2 * sigma * sigma)) for k in range(-200, 201)}
    z = sum(weights.values())
    cells = list(range(-edge, edge + 1))
    observed = ([sum(d < -edge for d in draws)] + [sum(d == k for d in draws) for k in cells]
                + [sum(d > edge for d in draws)])
    probs = [weights[k] / z for k in cells]
    tail = (1 - sum(probs)) / 2
    assert stats.chisquare(observed, [5000 * q for q in [tail] + probs + [tail]]).pvalue > 1e-3


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.3, 1e-8), (4.0, 1e-5)])
def test_the_gaussian_budget_converts_within_the_classic_bound(epsilon, delta):
    """rho_for gives the most rho OpenDP converts into (epsilon, delta): no less than the classic
    conversion allows (epsilon = rho + 2 sqrt(rho ln(1/delta)), Bun and Steinke 2016, Prop. 1.3),
    and a rho 10% larger converts past epsilon."""
    rho = noise.rho_for(epsilon, delta)
    classic = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert rho >= classic * (1 - 1e-9)
    import opendp.prelude as dp

    unit = dp.c.make_zCDP_to_approxDP(dp.m.make_gaussian(dp.atom_domain(T=float, nan=False),
                                                        dp.absolute_distance(T=float), scale=1.0))
    assert unit.map(math.sqrt(2 * rho * 1.1)).epsilon(delta) > epsilon >= unit.map(math.sqrt(2 * rho)).epsilon(delta) - 1e-9


def test_the_gaussian_threshold_is_the_least_that_fits_delta():
    """make_gaussian_threshold's own map at (L0, L2, Linf) = (G, R sqrt(G), R): the threshold found
    spends at most delta and one less spends more; the scale spends at most rho."""
    import opendp.prelude as dp

    G, R, rho, delta = 3, 2, 0.02, 1e-7
    scale, t = noise.gaussian_threshold_for(G, R, rho, delta)
    space = (dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T="i64")),
             dp.l02inf_distance(dp.absolute_distance(T=float)))
    d_in = (G, R * math.sqrt(G), R)
    spent = dp.m.make_gaussian_threshold(*space, scale=scale, threshold=t).map(d_in)
    assert spent[0] <= rho and spent[1] <= delta
    assert dp.m.make_gaussian_threshold(*space, scale=scale, threshold=t - 1).map(d_in)[1] > delta


def test_a_gaussian_release_spends_its_delta_and_states_l2(engine):
    """With public keys the Gaussian still spends delta (it is not pure DP); the report's
    sensitivities are L2 (R sqrt(G)); without delta it is refused in one line."""
    visits(engine)
    engine.execute("CREATE OR REPLACE TABLE keys AS SELECT DISTINCT grp FROM v")
    r = dp("v", person="pid", by="grp", out="og", epsilon=1.0, delta=1e-6, keys="keys", max_groups=2, max_rows=2,
           engine=engine, mechanism="gaussian")
    assert r.delta == 1e-6 and r.sensitivities == {"count": pytest.approx(2 * math.sqrt(2))}
    assert r.scales["count"] == pytest.approx(2 * math.sqrt(2) / math.sqrt(2 * noise.rho_for(1.0, 1e-6)), rel=1e-6)
    with pytest.raises(InputError, match="Gaussian mechanism is .epsilon, delta.-DP: give delta > 0"):
        dp("v", person="pid", by="grp", out="og2", epsilon=1.0, keys="keys", engine=engine, mechanism="gaussian")


PERSONS = st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4), st.sampled_from([0, 1, 2])), min_size=1,
                   max_size=12)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(persons=PERSONS, G=st.integers(1, 3), R=st.integers(1, 3), text=st.booleans(), start=st.integers(0, 5))
def test_bounded_aggregates_meet_the_bounds_exactly(engine, persons, G, R, text, start):
    """Persons with k groups (from a pool of 6 keys, one of them NULL) and c rows in each: whichever
    pairs and rows the keyed hashes choose, the total count is sum over persons of min(G, k) x
    min(c, R); each group's count is at most the sum of min(c, R) over its persons; each clamped
    sum is at most 5 per kept row; and no group appears that no person holds. The oracle is plain
    Python; both keyed hashes (DuckDB's, and the md5 texts PostgreSQL and Spark read) are run."""
    from anonydb.engines.base import text_keyed_hash
    from anonydb.methods.dp import Bound

    pool = ["a", "b", None, "c", "d", "e"]
    rows, per_group, total = [], {}, 0
    for pid, (k, c, shift) in enumerate(persons):
        groups = [pool[(start + shift + j) % len(pool)] for j in range(k)]
        for g in groups:
            per_group[g] = per_group.get(g, 0) + min(c, R)
            rows += [(pid, g, float(i * 3)) for i in range(c)]
        total += min(G, k) * min(c, R)
    engine.execute("CREATE OR REPLACE TABLE bv (pid INTEGER, grp VARCHAR, cost DOUBLE)")
    engine.execute("INSERT INTO bv VALUES " + ", ".join(
        f"({p}, {'NULL' if g is None else repr(g)}, {c})" for p, g, c in rows))
    keyed = text_keyed_hash if text else engine.keyed_hash
    _, got = engine.fetch_rows(bounded_sql("bv", "pid", ["grp"], [Bound("cost", 0, 5)], G, R, keyed))
    assert sum(n for _, n, _ in got) == total
    assert all(g in per_group and n <= per_group[g] and s <= 5 * n for g, n, s in got)


def test_public_keys_are_all_released(engine):
    visits(engine)
    engine.execute("CREATE TABLE keys AS SELECT * FROM (VALUES ('g0'), ('g1'), ('g2'), ('g3'), ('never')) AS t(grp)")
    r = dp("v", person="pid", by="grp", out="o", epsilon=1.0, keys="keys", sums=["cost:0:40"], engine=engine)
    got = engine.fetch_rows("SELECT grp, count_scale, sum_cost_scale FROM o ORDER BY grp")[1]
    assert [g for g, *_ in got] == ["g0", "g1", "g2", "g3", "never"] and r.delta == 0
    # two aggregates split epsilon 1: the count's L1 sensitivity 1 at 0.5, the sum's 40 at 0.5
    assert {(c, s) for _, c, s in got} == {(2.0, 80.0)}


@pytest.mark.parametrize("kw,message", [
    (dict(epsilon=0), "epsilon must be a positive number"),
    (dict(epsilon=-1), "epsilon must be a positive number"),
    (dict(person="nobody"), "no column 'nobody'"),
    (dict(sums=["cost:50:10"]), "LO 50 is above HI 10"),
    (dict(sums=["cost"]), "unbounded sum"),
    (dict(delta=0.0), "needs delta > 0"),
    (dict(max_groups=0), "max_groups must be a positive integer"),
])
def test_bad_input_is_one_line_and_writes_nothing(engine, kw, message):
    visits(engine)
    args = {**dict(person="pid", by="grp", out="o", epsilon=1.0, delta=1e-6, engine=engine), **kw}
    with pytest.raises(InputError, match=message) as e:
        dp("v", **args)
    assert "\n" not in str(e.value) and not engine.exists("o")


def epsilon_lower_bound(a: list[float], b: list[float], cut: float) -> float:
    """An empirical lower bound on epsilon from outputs on two neighbouring tables [Jagielski et al.
    2020, "Auditing differentially private machine learning"]: with the event S = {output >= cut},
    ln(P_b(S) / P_a(S)) with each probability at its 99.9% Clopper-Pearson bound against the claim."""
    from scipy.stats import beta

    def cp(k: int, n: int, lower: bool) -> float:
        return beta.ppf(0.0005, k, n - k + 1) if lower else beta.ppf(0.9995, k + 1, n - k)

    ka, kb = sum(1 for x in a if x >= cut), sum(1 for x in b if x >= cut)
    return math.log(cp(kb, len(b), True) / cp(ka, len(a), False))


@pytest.mark.parametrize("broken", [False, True], ids=["as-built", "noise-halved"])
def test_privacy_audit_of_the_count(monkeypatch, broken):
    """The count of one group on neighbouring tables (the second has one more person, G = R = 1),
    released 20,000 times each through the same noise step `dp` uses (public keys: every group
    gets its own draw). The audited lower bound stays below the claimed epsilon = 1; with the noise
    halved (a broken mechanism claiming the same epsilon) it exceeds it."""
    from anonydb.methods import dp as dpmod

    if broken:
        real = noise.scale_for
        monkeypatch.setattr(noise, "scale_for", lambda *a, **k: real(*a, **k) / 2)
    n, draws = 100, 20_000
    outs = []
    for count in (n, n + 1):
        rows = [(f"g{i}", count) for i in range(draws)]
        released, *_ = dpmod.add_noise(rows, 1, True, [], [], 1.0, 0.0, 1, 1, public=True)
        outs.append([r[1] for r in released])
    bound = epsilon_lower_bound(outs[0], outs[1], n + 1)
    assert (bound > 1.0) if broken else (bound < 1.0), bound


def test_a_budget_refuses_the_release_that_would_pass_it(engine):
    """Series budget 1: releases of 0.4 and 0.4 are written, each an entry of the ledger with what it
    spent; a third 0.4 is refused in one line and nothing is written (table and ledger unchanged).
    Another series of the same source shares the budget (basic composition by source too)."""
    from anonydb.release import ledger

    visits(engine)
    kw = dict(person="pid", by="grp", epsilon=0.4, delta=1e-6, engine=engine, budget=1.0, series="monthly")
    first = dp("v", out="m1", **kw)
    second = dp("v", out="m2", **kw)
    assert (first.left, second.left) == (0.6, 0.2)
    before = engine.fetch_rows("SELECT * FROM m2")[1]
    for out, series in (("m3", "monthly"), ("m4", "other")):
        with pytest.raises(InputError, match="would pass it; nothing was written") as e:
            dp("v", **{**kw, "out": out, "series": series})
        assert "\n" not in str(e.value) and not engine.exists(out)
    assert engine.fetch_rows("SELECT * FROM m2")[1] == before
    spent = [(e["series"], e["mode"], e["achieved"]) for e in ledger.entries(engine, dp=True)]
    assert spent == [("monthly", "dp", '{"dp": {"epsilon": 0.4, "delta": 1e-06}}')] * 2
    assert ledger.dp_spent(engine, "monthly", "v") == (0.8, 2e-06)
    assert ledger.entries(engine) == []  # the syntactic releases' logic never reads them


def test_releases_lists_what_each_release_promises(tmp_path, capsys, monkeypatch):
    """A database with a k-anonymous release and a DP release of the same persons: `anonydb
    releases` lists both, the DP one with its (epsilon, delta) and the budget left."""
    import duckdb

    from anonydb.workflow.cli import main

    db = str(tmp_path / "w.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE v AS SELECT CAST(i % 300 AS INTEGER) AS pid, CAST(20 + i % 50 AS INTEGER) AS age, "
                "'g' || CAST(i % 3 AS VARCHAR) AS grp FROM range(900) t(i)")
    con.close()
    monkeypatch.setenv("ANONYDB_SECRET", "a publisher's secret for this test only")
    assert main(["anonymize", "v", "--db", db, "--qi", "age", "--k", "5", "--person", "pid", "--out", "rel",
                 "--quiet"]) == 0
    assert main(["dp", "v", "--db", db, "--person", "pid", "--by", "grp", "--epsilon", "0.5", "--delta", "1e-6",
                 "--budget", "2", "--out", "stats"]) == 0
    capsys.readouterr()
    assert main(["releases", "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "promises: (0.5, 1e-06)-differential privacy for every person of 'pid'" in shown
    assert "budget 2.0, 1.5 left after it" in shown
    lines = [x.split() for x in shown.splitlines() if x.strip()[:1].isdigit()]
    assert [(x[2], x[4], x[5]) for x in lines] == [("rel", "mondrian", "intersection"), ("stats", "dp", "dp")]


def test_the_query_form_reads_keys_and_bounded_aggregates():
    from anonydb.methods.dp import Bound, from_query

    got = from_query("SELECT grp, month, count(*), avg(least(greatest(cost, 0), 500)), sum(greatest(least(n, 9), 1)) "
                     "FROM visits GROUP BY ALL")
    assert got == dict(source="visits", by=["grp", "month"], count=True, sums=[Bound("n", 1.0, 9.0)],
                       means=[Bound("cost", 0.0, 500.0)], select=None)
    assert from_query("SELECT grp, sum(cost) FROM v GROUP BY grp", ["cost:0:10"])["sums"] == [Bound("cost", 0.0, 10.0)]


@pytest.mark.parametrize("query,message", [
    ("SELECT grp, sum(cost) FROM v GROUP BY grp", "unbounded sum"),
    ("SELECT grp, avg(cost) FROM v GROUP BY grp", "unbounded mean"),
    ("SELECT v.grp, count(*) FROM v JOIN w ON v.grp = w.grp GROUP BY v.grp", "join on anything but the person"),
    ("SELECT v.grp, count(*) FROM v JOIN w ON v.pid = w.pid AND v.grp = w.grp GROUP BY v.grp", "join on anything"),
    ("SELECT v.grp, count(*) FROM v CROSS JOIN w GROUP BY v.grp", "join on anything but the person"),
    ("SELECT v.grp, count(*) FROM v, w GROUP BY v.grp", "join on anything but the person"),
    ("SELECT v.grp, count(*) FROM v FULL JOIN w USING (pid) GROUP BY v.grp", "join on anything but the person"),
    ("SELECT grp, count(*) FROM v GROUP BY grp LIMIT 3", "has LIMIT"),
    ("SELECT grp, count(*) OVER () FROM v", "has a window"),
    ("SELECT grp, max(cost) FROM v GROUP BY grp", "not a group key, count"),
    ("SELECT grp, count(*) FROM v", "GROUP BY its key columns"),
    ("SELECT grp, count(*) FROM (SELECT * FROM v) AS s GROUP BY grp", "subquery"),
])
def test_the_query_form_refuses_what_it_cannot_bound(query, message):
    from anonydb.methods.dp import from_query

    with pytest.raises(InputError, match=message) as e:
        from_query(query, person="pid")
    assert "\n" not in str(e.value)


def test_the_query_form_filters_and_joins_on_the_person(engine):
    """WHERE and a join on the person, at an epsilon so large that the discrete noise is 0 and with
    bounds that leave no choice: the released counts and sums are the plain-Python oracle's."""
    engine.execute("CREATE OR REPLACE TABLE qv AS SELECT CAST(i % 50 AS INTEGER) AS pid, CAST(i // 50 AS INTEGER) AS "
                   "visit, CAST((i * 7) % 30 AS INTEGER) AS cost FROM range(150) t(i)")
    engine.execute("CREATE OR REPLACE TABLE qp AS SELECT CAST(i AS INTEGER) AS pid, 'r' || CAST(i % 4 AS VARCHAR) AS "
                   "region FROM range(50) t(i)")
    engine.execute("CREATE OR REPLACE TABLE qk AS SELECT 'r' || CAST(i AS VARCHAR) AS region FROM range(4) t(i)")
    rows = [(i % 50, i // 50, (i * 7) % 30) for i in range(150)]
    want: dict[str, list[int]] = {}
    for pid, _, cost in rows:
        if cost > 10:
            w = want.setdefault(f"r{pid % 4}", [0, 0])
            w[0] += 1
            w[1] += min(cost, 25)
    from anonydb.methods.dp import dp, from_query

    what = from_query("SELECT p.region, count(*), sum(least(greatest(v.cost, 0), 25)) FROM qv AS v JOIN qp AS p "
                      "ON v.pid = p.pid WHERE v.cost > 10 GROUP BY ALL", person="pid")
    r = dp(what.pop("source"), person="pid", out="qo", epsilon=1e7, keys="qk", max_groups=1, max_rows=3,
           engine=engine, replace=True, **what)
    got = {g: [round(n), round(s)] for g, n, s in engine.fetch_rows("SELECT region, count, sum_cost FROM qo")[1]}
    assert r.groups == 4 and got == want
    what = from_query("SELECT region, count(*) FROM qv JOIN qp USING (pid) GROUP BY region", person="pid")
    dp(what.pop("source"), person="pid", out="qo", epsilon=1e7, keys="qk", max_rows=3, engine=engine, replace=True,
       **what)
    assert sum(round(n) for n, in engine.fetch_rows("SELECT count FROM qo")[1]) == 150


def test_the_query_form_on_the_command_line(engine, tmp_path, capsys):
    import duckdb

    from anonydb.workflow.cli import main

    db = str(tmp_path / "w.duckdb")
    con = duckdb.connect(db)
    con.execute("CREATE TABLE v AS SELECT CAST(i % 300 AS INTEGER) AS pid, 'g' || CAST(i % 3 AS VARCHAR) AS grp, "
                "CAST(i % 70 AS DOUBLE) AS cost FROM range(900) t(i)")
    con.close()
    assert main(["dp", "--query", "SELECT grp, count(*), avg(least(greatest(cost, 0), 50)) FROM v GROUP BY ALL",
                 "--db", db, "--person", "pid", "--epsilon", "1", "--delta", "1e-6", "--out", "q"]) == 0
    assert "noise scales: count 2, mean_cost 100" in capsys.readouterr().out
    assert main(["dp", "v", "--query", "SELECT grp, count(*) FROM v GROUP BY ALL", "--db", db, "--person", "pid",
                 "--epsilon", "1", "--delta", "1e-6", "--out", "q2"]) == 2
