"""The anonymization methods on a real PostgreSQL server (tests/pg_server.py): generalization,
full-domain, Mondrian (level-wise), Anatomy and SPALM give the same releases as on DuckDB (as a
multiset of rows; the row order is a keyed hash and differs by design), no statement of a method
fetches more than a small summary, identifiers that need quoting work, a release that fails or is
refused leaves the previous one untouched, and what cannot run on PostgreSQL raises one line
"not available on postgres: <reason>" before anything is written.

The data is made by DuckDB and copied into PostgreSQL with COPY, so both engines see the same rows.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import anonydb
from anonydb.errors import AnonyDBError, InputError
from anonydb.hierarchy import Hierarchy
from anonydb.methods import anatomy, anonymize, fulldomain, injector, slicing
from anonydb.methods.presence import presence_anonymize
from anonydb.sqlgen import ident

from conftest import examples, make_table, need_shared, outcome
from test_postgres import copy_to_pg, duck, pg  # noqa: F401  (fixtures)

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

from anonydb.engines.postgres import NotAvailable  # noqa: E402

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")

#: the most rows any one statement of a method may return to Python: per-round or per-batch
#: summaries (a batch of lattice nodes, a round's counts), never the data
MAX_FETCHED = 200
STAGE = "__anonydb_stage_"


def report(result) -> dict:
    """The release's verification report, without the staging table's name."""
    d = dict(result.report.to_dict())
    d.pop("source", None)
    return d


def rows_of(eng, table: str, drop: tuple[str, ...] = ()) -> list[tuple]:
    cols = [c for c, _ in eng.columns(table) if c not in drop]
    sql = f"SELECT {', '.join(ident(c) for c in cols)} FROM {ident(table)}"
    return sorted(eng.fetch_rows(sql)[1], key=lambda r: tuple((x is None, str(x)) for x in r))


def same_rows(duck, pg, table: str, drop: tuple[str, ...] = ()) -> None:
    d, p = rows_of(duck, table, drop), rows_of(pg, table, drop)
    assert len(p) == len(d)
    assert p == d


def on_both(duck, pg, fn, **kw):
    """Run the method on DuckDB and on PostgreSQL; return both results and the most rows fetched on PostgreSQL."""
    d = fn(engine=duck, **kw)
    mark = len(pg.fetched)
    p = fn(engine=pg, **kw)
    most = max((f.rows for f in pg.fetched[mark:]), default=0)
    assert most <= MAX_FETCHED, f"a statement fetched {most} rows on PostgreSQL"
    return d, p


def anatomy_groups(eng, st_table: str) -> list[tuple]:
    """The multiset of groups, each as its sorted (sensitive value, count) pairs."""
    groups: dict = {}
    for g, v, c in eng.fetch_rows(f"SELECT * FROM {ident(st_table)}")[1]:
        groups.setdefault(g, []).append((str(v), c))
    return sorted(tuple(sorted(x)) for x in groups.values())


def user_tables(eng) -> set[str]:
    return {r[0] for r in eng.fetch_rows("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")[1]}


def no_stages(eng) -> None:
    left = eng.fetch_rows("SELECT relname FROM pg_class WHERE relname LIKE '\\_\\_anonydb\\_stage\\_%'")[1] \
        if eng.dialect == "postgres" else []
    assert not left, left


# ---------------------------------------------------------------------------------------------
# Small tables: NULL QIs, hierarchies, names that need quoting
# ---------------------------------------------------------------------------------------------
AGE = Hierarchy.from_rows([(str(a), f"{a // 10 * 10}-{a // 10 * 10 + 9}", "*") for a in range(20, 70)])
SEX = Hierarchy.from_rows([("M", "*"), ("F", "*")])
ZIP = Hierarchy.from_rows([("1301", "130*", "1***", "*"), ("1302", "130*", "1***", "*"),
                           ("1481", "148*", "1***", "*"), ("1482", "148*", "1***", "*")])


@pytest.fixture(scope="module")
def hand(duck, pg):
    rows = [(23, "M", "1301", "flu"), (27, "M", "1302", "cold"), (31, "F", "1481", "flu"), (35, "F", "1482", "cancer"),
            (None, "M", "1301", "flu"), (44, None, "1302", "cold"), (48, "F", None, "cancer"), (52, "M", "1481", None),
            (59, "F", "1482", "flu"), (61, "M", "1301", "cold"), (66, None, None, "flu"), (38, "F", "1302", "cold")]
    make_table(duck, "pm_hand", ["age", "sex", "zip", "disease"], rows, counts=[3, 2, 2, 1, 2, 1, 2, 3, 2, 1, 2, 3])
    duck.execute('CREATE OR REPLACE TABLE pm_hand_t AS SELECT CAST(age AS VARCHAR) AS age, sex, zip, disease FROM pm_hand')
    # Mondrian cuts numeric QIs on values and refuses NULLs there: its table has none in age
    duck.execute('CREATE OR REPLACE TABLE pm_hand_m AS SELECT coalesce(age, 40) AS age, sex, zip, disease FROM pm_hand')
    for t in ("pm_hand", "pm_hand_t", "pm_hand_m"):
        copy_to_pg(duck, pg, t)
    return "pm_hand"


def test_generalize_same(duck, pg, hand):
    for eng in (duck, pg):
        anonydb.generalize(eng, "pm_hand_t", {"age": 1, "zip": 2}, {"age": AGE, "zip": ZIP}, out="pm_gen", replace=True)
    same_rows(duck, pg, "pm_gen")


@pytest.mark.parametrize("params", [dict(k=3, max_suppression=0.4), dict(k=2, l=2, max_suppression=0.4), dict(k=4, max_suppression=0.5)])
def test_fulldomain_small_same(duck, pg, hand, params):
    d, p = on_both(duck, pg, fulldomain, source="pm_hand_t", qi=["age", "sex", "zip"], sensitive="disease",
                   hierarchies={"age": AGE, "sex": SEX, "zip": ZIP}, out="pm_fd", replace=True, seed=3, **params)
    assert p.levels == d.levels and p.suppressed == d.suppressed and p.metrics == pytest.approx(d.metrics)
    assert report(p) == report(d)
    same_rows(duck, pg, "pm_fd")


@pytest.mark.parametrize("params", [dict(k=3), dict(k=2, l=2), dict(k=3, relaxed=True)])
def test_mondrian_small_same(duck, pg, hand, params):
    d, p = on_both(duck, pg, anonymize, source="pm_hand_m", qi=["age", "sex", "zip"], sensitive="disease",
                   out="pm_mon", replace=True, seed=5, plan="levelwise", **params)
    assert (p.classes, p.rounds) == (d.classes, d.rounds)
    assert report(p) == report(d)
    same_rows(duck, pg, "pm_mon")


def test_anatomy_small_same(duck, pg, hand):
    d, p = on_both(duck, pg, anatomy, source="pm_hand", qi=["age", "sex", "zip"], sensitive="disease", l=2,
                   out="pm_ana", replace=True, seed=1)
    assert (p.groups, p.rows) == (d.groups, d.rows)
    assert anatomy_groups(pg, "pm_ana_st") == anatomy_groups(duck, "pm_ana_st")
    same_rows(duck, pg, "pm_ana_qit", drop=("group_id",))


def test_quoted_identifiers_mondrian(duck, pg):
    name, cols = 'Pe"o;ple; DROP', ['Age "x"', "Se;x", "ZIP code", 'Dis"ease']
    rows = [(20 + i % 37, "MF"[i % 2], f"{130 + i % 5}", ["flu", "cold", None][i % 3]) for i in range(60)]
    make_table(duck, name, cols, rows)
    copy_to_pg(duck, pg, name)
    out = 'Out "Rel"; x'
    d, p = on_both(duck, pg, anonymize, source=name, qi=cols[:3], sensitive=cols[3], out=out, replace=True,
                   seed=2, k=4, l=2, plan="levelwise")
    assert p.report.holds and p.classes == d.classes
    same_rows(duck, pg, out)
    assert pg.exists(name) and pg.exists(out)
    no_stages(pg)


# ---------------------------------------------------------------------------------------------
# Synthetic census
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def census(duck, pg):
    from anonydb.datasets import synthetic_census

    synthetic_census(duck, "pm_census", rows=3000, seed=5, null_rate=0.05)
    copy_to_pg(duck, pg, "pm_census")
    return "pm_census"


CENSUS_QI = ["age", "sex", "race", "marital_status", "education"]


def test_mondrian_census_same(duck, pg, census):
    d, p = on_both(duck, pg, anonymize, source=census, qi=CENSUS_QI, sensitive="occupation", out="pm_cmon",
                   replace=True, seed=9, k=10, l=2, plan="levelwise")
    assert p.classes == d.classes and report(p) == report(d)
    same_rows(duck, pg, "pm_cmon")


def test_anatomy_census_same(duck, pg, census):
    for l in (2, 3):
        d, p = on_both(duck, pg, anatomy, source=census, qi=CENSUS_QI, sensitive="occupation", l=l,
                       out="pm_cana", replace=True, seed=4)
        assert p.groups == d.groups
        assert anatomy_groups(pg, "pm_cana_st") == anatomy_groups(duck, "pm_cana_st")


def test_mpalm_census_same(duck, pg, census):
    """MPALM (Mondrian over the flagged public table, judged by delta-presence) on both engines."""
    for eng in (duck, pg):
        eng.execute("DROP TABLE IF EXISTS pm_cpriv")
        eng.execute("CREATE TABLE pm_cpriv AS SELECT * FROM pm_census WHERE age % 3 = 0")
    d, p = on_both(duck, pg, presence_anonymize, private="pm_cpriv", public=census, qi=["age", "sex", "race"],
                   delta=(0, 0.6), out="pm_cmpalm", method="mondrian", replace=True, seed=1)
    assert (p.rows, p.classes) == (d.rows, d.classes)
    same_rows(duck, pg, "pm_cmpalm")


# ---------------------------------------------------------------------------------------------
# Plans: auto is level-wise on PostgreSQL, recursive is refused in one line
# ---------------------------------------------------------------------------------------------
def test_mondrian_plans(duck, pg, hand):
    kw = dict(source="pm_hand_m", qi=["age", "sex", "zip"], sensitive="disease", replace=True, seed=5, k=3)
    anonymize(engine=pg, out="pm_auto", plan="auto", **kw)
    anonymize(engine=duck, out="pm_auto", plan="levelwise", **kw)
    same_rows(duck, pg, "pm_auto")
    with pytest.raises(InputError) as e:
        anonymize(engine=pg, out="pm_rec", plan="recursive", **kw)
    assert str(e.value).startswith("not available on postgres: ") and "\n" not in str(e.value)
    assert not pg.exists("pm_rec")
    no_stages(pg)


@pytest.mark.parametrize("parts", [512, 1], ids=["top-only", "top-then-rounds"])
def test_mondrian_fragment_plan(duck, pg, hand, parts, monkeypatch):
    """plan="fragments" on PostgreSQL: the top is cut through a view of the coded rows (no grouped
    step here: with a cap of one open partition, the level-wise rounds go on after the assign
    pass): the level-wise release, row for row."""
    from anonydb.methods import mondrian_rounds

    monkeypatch.setattr(mondrian_rounds, "TOP_PARTS", parts)
    kw = dict(source="pm_hand_m", qi=["age", "sex", "zip"], sensitive="disease", replace=True, seed=5, k=3, l=2)
    anonymize(engine=pg, out="pm_frag", plan="fragments", **kw)
    anonymize(engine=duck, out="pm_frag", plan="levelwise", **kw)
    same_rows(duck, pg, "pm_frag")
    no_stages(pg)


# ---------------------------------------------------------------------------------------------
# Atomicity: a failing or refused release leaves the previous one untouched
# ---------------------------------------------------------------------------------------------
def test_refused_release_keeps_the_previous(pg, hand):
    kw = dict(source="pm_hand_m", qi=["age", "sex", "zip"], sensitive="disease", engine=pg, seed=5, plan="levelwise")
    anonymize(out="pm_keep", replace=True, k=3, **kw)
    before = rows_of(pg, "pm_keep")
    with pytest.raises(InputError):  # replace=False: the target exists
        anonymize(out="pm_keep", k=2, **kw)
    assert rows_of(pg, "pm_keep") == before
    no_stages(pg)


def test_failed_verification_keeps_the_previous(pg, hand, monkeypatch):
    from anonydb.release import publish

    kw = dict(source="pm_hand_m", qi=["age", "sex", "zip"], sensitive="disease", engine=pg, seed=5, plan="levelwise")
    anonymize(out="pm_keep2", replace=True, k=3, **kw)
    before = rows_of(pg, "pm_keep2")
    real = publish.Publication.verify

    def failing(self, stage, *a, **k):
        t = ident(stage, "postgres")  # one class keeps a single row: k = 3 no longer holds
        pg.con.execute(f"DELETE FROM {t} WHERE ctid IN (SELECT ctid FROM {t} WHERE eq_class = "
                       f"(SELECT min(eq_class) FROM {t}) OFFSET 1)")
        return real(self, stage, *a, **k)

    monkeypatch.setattr(publish.Publication, "verify", failing)
    with pytest.raises(AnonyDBError, match="verification failed: k-anonymity"):
        anonymize(out="pm_keep2", replace=True, k=3, **kw)
    monkeypatch.undo()
    assert rows_of(pg, "pm_keep2") == before
    no_stages(pg)


# ---------------------------------------------------------------------------------------------
# Not available on PostgreSQL: one line, nothing written
# ---------------------------------------------------------------------------------------------
def test_injector_not_available(pg, hand):
    tables = user_tables(pg)
    with pytest.raises(NotAvailable) as e:
        injector("pm_hand", ["age", "sex"], "disease", l=2, out="pm_inj", engine=pg, seed=1)
    assert str(e.value).startswith("not available on postgres: ") and "\n" not in str(e.value)
    assert user_tables(pg) == tables and not pg.exists("pm_inj_qit")
    no_stages(pg)


def test_slicing_not_available(pg, hand):
    tables = user_tables(pg)
    with pytest.raises(NotAvailable) as e:
        slicing("pm_hand", ["age", "sex", "zip"], "disease", l=2, out="pm_sl", engine=pg, seed=1, replace=True)
    assert str(e.value).startswith("not available on postgres: slicing") and "\n" not in str(e.value)
    assert user_tables(pg) == tables
    no_stages(pg)


# ---------------------------------------------------------------------------------------------
# Hypothesis: small random tables with NULLs
# ---------------------------------------------------------------------------------------------
LEAVES = ["a", "b", "c", "d", "e"]
H_CAT = Hierarchy.from_rows([("a", "ab", "*"), ("b", "ab", "*"), ("c", "cde", "*"), ("d", "cde", "*"),
                             ("e", "cde", "*")])
H_NUM = Hierarchy.from_rows([(str(v), "lo" if v < 5 else "hi", "*") for v in range(10)])


@st.composite
def small_tables(draw):
    n = draw(st.integers(4, 30))
    row = st.tuples(st.one_of(st.none(), st.integers(0, 9)), st.one_of(st.none(), st.sampled_from(LEAVES)),
                    st.sampled_from(["s1", "s2", "s3"]))
    return draw(st.lists(row, min_size=n, max_size=n)), draw(st.integers(1, 4))


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=small_tables())
def test_random_tables_same(duck, pg, case):
    rows, k = case
    for eng in (duck, pg):
        eng.execute("DROP TABLE IF EXISTS pm_rand")
    make_table(duck, "pm_rand", ["x", "y", "s"], rows)  # an all-NULL column is typed: copy_to_pg needs a type
    duck.execute("CREATE OR REPLACE TABLE pm_rand AS SELECT CAST(x AS INTEGER) AS x, CAST(y AS VARCHAR) AS y, s "
                 "FROM pm_rand")
    duck.execute("CREATE OR REPLACE TABLE pm_rand_t AS SELECT CAST(x AS VARCHAR) AS x, y, s FROM pm_rand")
    # Mondrian refuses NULLs in a numeric QI (both engines alike): x keeps them on every other row only
    duck.execute("CREATE OR REPLACE TABLE pm_rand_m AS SELECT coalesce(x, 4) AS x, y, s FROM pm_rand")
    for t in ("pm_rand", "pm_rand_t", "pm_rand_m"):
        copy_to_pg(duck, pg, t)
    # k <= 4: one class of the whole table is a release whenever it has >= k rows, so both engines
    # release exactly then, and otherwise refuse as infeasible (never another error)
    feasible = len(rows) >= k
    results = [outcome(lambda: anonymize("pm_rand_m", ["x", "y"], "s", out="pm_rmon", engine=eng, k=k,
                                         replace=True, seed=1, plan="levelwise").classes) for eng in (duck, pg)]
    assert results[0] == results[1] and (results[0][0] == "ok") == feasible, results
    if feasible:
        same_rows(duck, pg, "pm_rmon")
    results = [outcome(lambda: (lambda r: (r.levels, r.suppressed))(
        fulldomain("pm_rand_t", ["x", "y"], "s", hierarchies={"x": H_NUM, "y": H_CAT}, out="pm_rfd", engine=eng,
                   k=k, max_suppression=0.2, replace=True, seed=1))) for eng in (duck, pg)]
    # at the top of both hierarchies a group is a pattern of NULLs (NULL is a value of its own):
    # feasible when the rows of patterns below k fit in the suppression limit of 20%
    top = Counter((x is None, y is None) for x, y, _ in rows)
    feasible = sum(c for c in top.values() if c < k) <= int(0.2 * len(rows) + 1e-9)
    assert results[0] == results[1] and (results[0][0] == "ok") == feasible, results
    if feasible:
        same_rows(duck, pg, "pm_rfd")


# ---------------------------------------------------------------------------------------------
# Adult
# ---------------------------------------------------------------------------------------------
ADULT_QI = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass"]


@pytest.fixture(scope="module")
def adult(duck, pg):
    folder = need_shared() / "adult"
    from anonydb.datasets import adult_hierarchy_paths, load_adult

    load_adult(duck, "pm_adult", path=folder)
    copy_to_pg(duck, pg, "pm_adult")
    hier = {a: Hierarchy.from_arx(p) for a, p in adult_hierarchy_paths(folder).items()}
    return hier


def timed(fn, **kw):
    t = time.perf_counter()
    r = fn(**kw)
    return r, time.perf_counter() - t


@pytest.mark.slow
def test_adult_fulldomain_same(duck, pg, adult, record_property):
    kw = dict(source="pm_adult", qi=ADULT_QI, hierarchies={q: adult[q] for q in ADULT_QI}, out="pm_afd",
              replace=True, seed=1, k=5, max_suppression=0.02)
    d, td = timed(fulldomain, engine=duck, **kw)
    mark = len(pg.fetched)
    p, tp = timed(fulldomain, engine=pg, **kw)
    assert max(f.rows for f in pg.fetched[mark:]) <= MAX_FETCHED
    record_property("seconds", {"duckdb": td, "postgres": tp})
    print(f"\nfull-domain Adult k=5: DuckDB {td:.2f} s, PostgreSQL {tp:.2f} s")
    assert p.levels == d.levels and p.suppressed == d.suppressed
    same_rows(duck, pg, "pm_afd")


@pytest.mark.slow
def test_adult_mondrian_same(duck, pg, adult, record_property):
    kw = dict(source="pm_adult", qi=ADULT_QI, sensitive="occupation", out="pm_amon", replace=True, seed=1, k=10,
              plan="levelwise")
    d, td = timed(anonymize, engine=duck, **kw)
    mark = len(pg.fetched)
    p, tp = timed(anonymize, engine=pg, **kw)
    assert max(f.rows for f in pg.fetched[mark:]) <= MAX_FETCHED
    print(f"\nMondrian Adult k=10: DuckDB {td:.2f} s, PostgreSQL {tp:.2f} s")
    assert (p.classes, p.rounds) == (d.classes, d.rounds)
    same_rows(duck, pg, "pm_amon")


@pytest.mark.slow
def test_adult_anatomy_same(duck, pg, adult):
    for l in (2, 3):
        d, p = on_both(duck, pg, anatomy, source="pm_adult", qi=ADULT_QI, sensitive="occupation", l=l,
                       out="pm_aana", replace=True, seed=1)
        assert p.groups == d.groups
        assert anatomy_groups(pg, "pm_aana_st") == anatomy_groups(duck, "pm_aana_st")


@pytest.mark.slow
def test_adult_spalm_same(duck, pg, adult):
    for eng in (duck, pg):
        eng.execute("DROP TABLE IF EXISTS pm_apriv")
        eng.execute("CREATE TABLE pm_apriv AS SELECT * FROM pm_adult WHERE age % 3 = 0")
    qi = ADULT_QI[:4]
    d, p = on_both(duck, pg, presence_anonymize, private="pm_apriv", public="pm_adult", qi=qi, delta=(0, 0.6),
                   out="pm_aspalm", hierarchies={q: adult[q] for q in qi}, replace=True, seed=1)
    assert p.levels == d.levels and p.rows == d.rows
    same_rows(duck, pg, "pm_aspalm")
