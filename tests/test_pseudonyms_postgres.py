"""Keyed pseudonyms on a real PostgreSQL server (issue 48): RFC 4231's test vectors and Python's
``hmac`` on integers, Unicode strings and dates, through the same :func:`pseudonym_sql` as on
DuckDB (PostgreSQL's built-in sha256(bytea), no pgcrypto); no log or error shows the key.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from anonydb.errors import SQLError
from anonydb.pseudonyms import MIN_KEY_BYTES, pseudonym_sql
from anonydb.sqlgen import ident

from conftest import examples
from test_pseudonyms import UNICODE, assert_samples, assert_secret_hidden, hashed, python_hmac, rfc_hmacs, rfc_row

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'anonydb[postgres]')")

from anonydb.engines import connect_postgres  # noqa: E402

#: pytest -n: every test of one engine on one worker, which starts its server once
pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture(scope="module")
def pg(pg_url):
    eng = connect_postgres(pg_url)
    yield eng
    eng.close()


def test_rfc4231(pg):
    """Cases 1-7: the text ones as text, 3 and 4 as bytea."""
    select, items = rfc_row(lambda h: f"pg_catalog.decode('{h}', 'hex')")
    pg.execute(f"CREATE OR REPLACE TEMP TABLE rfc AS {select}")
    assert {c: t for c, t in pg.columns("rfc")} == {c: t for c, t, _, _ in items}
    assert rfc_hmacs(pg, "rfc", items) == [want for *_, want in items]


def test_samples(pg):
    assert_samples(pg, b"a sample key, 26 bytes...")


@settings(max_examples=examples(5), deadline=None)
@given(key=st.binary(min_size=MIN_KEY_BYTES, max_size=80),
       ints=st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=8),
       texts=st.lists(UNICODE, min_size=1, max_size=8))
def test_random_values_against_python(pg, key, ints, texts):
    assert hashed(pg, "BIGINT", ints, key) == python_hmac(key, ints)
    assert hashed(pg, "VARCHAR", texts, key) == python_hmac(key, texts)


def test_the_key_is_never_in_the_log_nor_an_error(pg):
    """Nor in the statements as sent to PostgreSQL, nor in its ``LINE n:`` excerpt of a failing one."""
    key = b"0123456789abcdef-postgres-key"
    pg.execute("CREATE OR REPLACE TEMP TABLE p AS SELECT CAST('alice' AS VARCHAR) AS name")
    assert pg.fetch_rows(f"SELECT {pseudonym_sql(pg, ident('name'), 'VARCHAR', key)} FROM p")[1] == \
        [tuple(python_hmac(key, ["alice"]))]
    with pytest.raises(SQLError) as e:
        pg.fetch_rows(f"SELECT {pseudonym_sql(pg, ident('nope'), 'VARCHAR', key)} FROM p")
    assert "LINE" in str(e.value)  # PostgreSQL's excerpt of the failing line is there, without the pads
    assert_secret_hidden(str(e.value), key)
    for text in [x.sql for x in pg.log] + [f.sql for f in pg.fetched]:
        assert_secret_hidden(text, key)
