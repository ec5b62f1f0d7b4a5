"""Models the anonymizers cannot judge on candidate groups (``Model.candidate`` False) are left
to the release's fail-closed verification: the search runs on the others, a release the model
rejects is refused and nothing is written, and a model alone is refused with one line."""

from __future__ import annotations

import duckdb
import pytest

from anonydb.errors import AnonyDBError, InputError
from anonydb.hierarchy import Hierarchy
from anonydb.methods.fulldomain import fulldomain
from anonydb.methods.mondrian import anonymize as mondrian
from anonydb.models import KAnonymity


class ReleaseOnlyK(KAnonymity):
    """k-anonymity judged on the finished release only (a stand-in for a non-monotone model)."""

    candidate = False


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT i % 20 AS age, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END AS s "
              "FROM range(40) AS r(i)")
    return c


def _exists(con, name):
    return con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]).fetchone()[0]


def test_mondrian_refuses_a_release_the_verification_rejects(con):
    # cut by k = 2: classes of 2 rows (ages repeat twice in 40 rows); the release-only k = 5 rejects them
    with pytest.raises(AnonyDBError, match="k-anonymity does not hold on the release"):
        mondrian("t", ["age"], "s", out="rel", engine=con, models=[KAnonymity(2), ReleaseOnlyK(5)])
    assert not _exists(con, "rel")
    # a release it accepts is written: every class of k = 10 has >= 5 rows
    r = mondrian("t", ["age"], "s", out="rel", engine=con, models=[KAnonymity(10), ReleaseOnlyK(5)])
    assert r.report.holds
    assert con.execute("SELECT min(n) FROM (SELECT count(*) AS n FROM rel GROUP BY eq_class)").fetchone()[0] >= 10


def test_alone_it_is_refused(con):
    with pytest.raises(InputError, match="finished release only"):
        mondrian("t", ["age"], "s", out="rel", engine=con, models=[ReleaseOnlyK(5)])
    with pytest.raises(InputError, match="finished release only"):
        fulldomain("t", ["age"], "s", out="rel", engine=con, models=[ReleaseOnlyK(5)],
                   hierarchies={"age": Hierarchy.from_rows([[a, "*"] for a in range(20)])})
    assert not _exists(con, "rel")


def test_fulldomain_searches_by_the_others(con):
    h = {"age": Hierarchy.from_rows([[a, a // 10, "*"] for a in range(20)])}
    with pytest.raises(AnonyDBError, match="k-anonymity does not hold on the release"):  # k = 2 keeps the ages; the release-only k = 5 rejects it
        fulldomain("t", ["age"], "s", out="rel", engine=con, models=[KAnonymity(2), ReleaseOnlyK(5)], hierarchies=h)
    assert not _exists(con, "rel")
    r = fulldomain("t", ["age"], "s", out="rel", engine=con, models=[KAnonymity(6), ReleaseOnlyK(5)], hierarchies=h)
    assert r.report.holds
