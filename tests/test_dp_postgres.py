"""DP aggregates on a real PostgreSQL server (tests/pg_server.py): the bounded per-group aggregates
are DuckDB's wherever the bounds leave no choice (every person within G groups and R rows), and the
released noise is the same distribution, compared by its spread, not by value."""

from __future__ import annotations

import statistics

import pytest

pytest.importorskip("opendp", reason="OpenDP is not installed (pip install 'anonydb[dp]')")
pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

from anonydb.methods.dp import Bound, bounded_sql, dp  # noqa: E402

from test_postgres import copy_to_pg, duck, pg  # noqa: E402,F401  (fixtures)

pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture(scope="module")
def visits(duck, pg):
    duck.execute("CREATE OR REPLACE TABLE dpv AS SELECT CAST(i % 400 AS INTEGER) AS pid, "
                 "'g' || CAST((i // 400) % 3 AS VARCHAR) AS grp, CAST(i % 50 AS DOUBLE) AS cost FROM range(2400) t(i)")
    duck.execute("CREATE OR REPLACE TABLE dpk AS SELECT DISTINCT grp FROM dpv")
    copy_to_pg(duck, pg, "dpv")
    copy_to_pg(duck, pg, "dpk")
    yield "dpv"
    from anonydb.release import ledger

    for eng in (duck, pg):  # the server is shared: the other modules' ledgers start empty
        for t in ledger.TABLES:
            eng.drop(t)


def test_bounded_aggregates_match_duckdb(duck, pg, visits):
    """Each person has 2 rows in each of 3 groups: with G = 3 and R = 2 nothing is dropped, so
    both engines must count and sum the same rows (values clamped to [0, 40] on both)."""
    sql = bounded_sql(visits, "pid", ["grp"], [Bound("cost", 0, 40)], 3, 2)
    d = sorted(duck.fetch_rows(sql)[1])
    p = sorted(pg.fetch_rows(sql)[1])
    assert [(g, int(n), float(s)) for g, n, s in p] == [(g, int(n), float(s)) for g, n, s in d]
    assert sum(int(n) for _, n, _ in d) == 2400


def test_noise_has_the_same_spread(duck, pg, visits):
    """Ten releases on each engine of the three public keys' counts (G = R = 1, epsilon 1: scale 1):
    the same scales, and the noisy counts spread around the same true counts."""
    got = {}
    for name, eng in (("duck", duck), ("pg", pg)):
        counts = []
        for _ in range(10):
            r = dp(visits, person="pid", by="grp", out="dpo", epsilon=1.0, keys="dpk", engine=eng, replace=True)
            assert r.scales == {"count": 1.0} and r.groups == 3
            counts += [c for _, c in eng.fetch_rows("SELECT grp, count FROM dpo")[1]]
        got[name] = counts
    # each person counts once (G = 1): 400 rows over three groups, about 133 each
    for counts in got.values():
        assert abs(statistics.mean(counts) - 400 / 3) < 2 and sum(counts) / 10 == pytest.approx(400, abs=15)


def test_the_budget_is_kept_by_the_server_across_runs(pg, pg_url, visits, capsys):
    """Budget 1 in series 'pgm': a release of 0.6 from the command line (its own connection), then
    a second of 0.6 from another run is refused in one line, its table never written; `anonydb
    releases` on the server shows the one spent."""
    from anonydb.workflow.cli import main

    pg.execute(f"CREATE TABLE dpvb AS SELECT * FROM {visits}")  # a source of its own: the budget counts by source too
    args = ["dp", "dpvb", "--db", pg_url, "--person", "pid", "--by", "grp", "--keys", "dpk", "--epsilon", "0.6",
            "--budget", "1", "--series", "pgm"]
    assert main(args + ["--out", "dpb1"]) == 0
    assert "epsilon 0.4 left" in capsys.readouterr().out
    assert main(args + ["--out", "dpb2"]) == 2
    err = capsys.readouterr().err
    assert "the budget of series 'pgm' is epsilon 1, 0.6 of it spent" in err and len(err.strip().splitlines()) == 1
    assert pg.exists("dpb1") and not pg.exists("dpb2")
    assert main(["releases", "--db", pg_url]) == 0
    assert "budget 1.0, 0.4 left after it" in capsys.readouterr().out
    for name in ("dpb1", "dpvb"):
        pg.drop(name)
