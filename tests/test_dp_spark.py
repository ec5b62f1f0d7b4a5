"""DP aggregates on a local Spark session: the bounded per-group aggregates are DuckDB's wherever the
bounds leave no choice, and a release runs end to end with the scales DuckDB gives."""

from __future__ import annotations

import pytest

pytest.importorskip("opendp", reason="OpenDP is not installed (pip install 'anonydb[dp]')")

from anonydb.methods.dp import Bound, bounded_sql, dp  # noqa: E402

from conftest import spark_view  # noqa: E402
from test_spark_methods import duck, sp  # noqa: E402,F401  (fixtures)

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


def test_bounded_aggregates_and_release_on_spark(duck, sp, spark):
    duck.execute("CREATE OR REPLACE TABLE dpsv AS SELECT CAST(i % 400 AS INTEGER) AS pid, "
                 "'g' || CAST((i // 400) % 3 AS VARCHAR) AS grp, CAST(i % 50 AS DOUBLE) AS cost FROM range(2400) t(i)")
    spark_view(duck, spark, "dpsv")
    sql = bounded_sql("dpsv", "pid", ["grp"], [Bound("cost", 0, 40)], 3, 2)
    d = sorted((g, int(n), float(s)) for g, n, s in duck.fetch_rows(sql)[1])
    s = sorted((g, int(n), float(x)) for g, n, x in sp.fetch_rows(sql)[1])
    assert s == d and sum(n for _, n, _ in d) == 2400
    kw = dict(person="pid", by="grp", out="dpso", epsilon=1.0, delta=1e-6, sums=["cost:0:40"], max_groups=3,
              max_rows=2, replace=True)
    rd, rs = dp("dpsv", engine=duck, **kw), dp("dpsv", engine=sp, **kw)
    assert rs.scales == rd.scales and rs.threshold == rd.threshold
    assert sorted(g for g, *_ in sp.fetch_rows("SELECT * FROM dpso")[1]) == ["g0", "g1", "g2"]
    _drop_ledgers(duck, sp)


@pytest.mark.parametrize("mechanism", ["laplace", pytest.param("gaussian", marks=pytest.mark.slow)])
def test_noise_is_drawn_on_the_executors(duck, sp, spark, mechanism):
    """2,000 public keys, each held by 5 persons: the noisy counts come back from the executors
    (at most a few rows of the 2,000 reach the driver) and follow the discrete Laplace DuckDB's
    release follows, compared by distribution (two-sample KS), not by value; for the Laplace and
    the Gaussian."""
    from scipy.stats import ks_2samp

    duck.execute("CREATE OR REPLACE TABLE dpmany AS SELECT i AS pid, i % 2000 AS grp FROM range(10000) t(i)")
    duck.execute("CREATE OR REPLACE TABLE dpkeys AS SELECT DISTINCT grp FROM dpmany")
    for t in ("dpmany", "dpkeys"):
        spark_view(duck, spark, t)
    spark.sql("SELECT * FROM dpmany").repartition(4).createOrReplaceTempView("dpmany")
    kw = dict(person="pid", by="grp", out="dpmo", epsilon=0.5, keys="dpkeys", replace=True, mechanism=mechanism,
              delta=1e-6 if mechanism == "gaussian" else 0.0)
    mark = len(sp.fetched)
    rs = dp("dpmany", engine=sp, **kw)
    assert rs.groups == 2000 and sum(sp.fetched[mark:]) < 20, sp.fetched[mark:]
    rd = dp("dpmany", engine=duck, **kw)
    assert rs.scales == rd.scales
    s = [float(n) - 5 for n, in sp.fetch_rows("SELECT count FROM dpmo")[1]]
    d = [float(n) - 5 for n, in duck.fetch_rows("SELECT count FROM dpmo")[1]]
    assert ks_2samp(s, d).pvalue > 1e-3 and abs(sum(s) / len(s)) < 0.5
    _drop_ledgers(duck, sp)


def _drop_ledgers(duck, sp):
    from anonydb.release import ledger

    for eng in (duck, sp):  # the session's catalog is shared: the other modules' ledgers start empty
        for t in ledger.TABLES:
            eng.drop(t)
