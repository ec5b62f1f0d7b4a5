"""Keyed pseudonyms on a real local Spark session (issue 48): RFC 4231's test vectors and Python's
``hmac`` on integers, Unicode strings and dates, through the same :func:`pseudonym_sql` as on
DuckDB (Spark's sha2 and unhex, as sqlglot writes DuckDB's sha256 and unhex); no log or error
shows the key. Few statements: each costs Spark a job.
"""

from __future__ import annotations

import pytest

from anonydb.errors import SQLError
from anonydb.pseudonyms import pseudonym_sql
from anonydb.sqlgen import ident

from test_pseudonyms import assert_samples, assert_secret_hidden, python_hmac, rfc_hmacs, rfc_row

#: pytest -n: every test of one engine on one worker, which starts its Spark session once
pytestmark = pytest.mark.xdist_group("spark")


@pytest.fixture(scope="module")
def sp(spark):
    from anonydb.engines.spark import SparkEngine

    return SparkEngine(spark)


def test_rfc4231(sp):
    """Cases 1-7: the text ones as strings, 3 and 4 as binary."""
    select, items = rfc_row(lambda h: f"unhex('{h}')")
    sp.execute(f"CREATE OR REPLACE TEMP TABLE rfc_sp AS {select}")
    assert {c: t for c, t in sp.columns("rfc_sp")} == {c: t for c, t, _, _ in items}
    assert rfc_hmacs(sp, "rfc_sp", items) == [want for *_, want in items]


def test_samples(sp):
    assert_samples(sp, b"a sample key, 26 bytes...")


def test_the_key_is_never_in_the_log_nor_an_error(sp):
    key = b"0123456789abcdef-spark-key"
    sp.execute("CREATE OR REPLACE TEMP TABLE p_sp AS SELECT CAST('alice' AS VARCHAR) AS name")
    assert sp.fetch_rows(f"SELECT {pseudonym_sql(sp, ident('name'), 'VARCHAR', key)} FROM p_sp")[1] == \
        [tuple(python_hmac(key, ["alice"]))]
    with pytest.raises(SQLError) as e:
        sp.fetch_rows(f"SELECT {pseudonym_sql(sp, ident('nope'), 'VARCHAR', key)} FROM p_sp")
    assert_secret_hidden(str(e.value), key)
    for entry in sp.log:
        assert_secret_hidden(entry.sql, key)
