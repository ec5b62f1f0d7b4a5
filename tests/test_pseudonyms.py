"""Keyed pseudonyms (issue 48): the HMAC-SHA256 that :func:`anonydb.pseudonyms.pseudonym_sql`
computes inside DuckDB equals RFC 4231's test vectors and Python's ``hmac`` on random integers,
Unicode strings, dates and keys; the key's loading; and no statement log or error shows the key
(or any part of the pads derived from it). PostgreSQL and Spark: test_pseudonyms_postgres.py,
test_pseudonyms_spark.py, against the same vectors.

Every expected value comes from RFC 4231 or from Python's ``hmac``, never from anonydb.
"""

from __future__ import annotations

import datetime as dt
import hmac

import pytest
from hypothesis import given, settings, strategies as st

import anonydb
from anonydb.errors import InputError, SQLError
from anonydb.pseudonyms import FRESH_KEY_BYTES, MIN_KEY_BYTES, load_key, pads, pseudonym_sql
from anonydb.sqlgen import ident, literal

from conftest import examples

#: RFC 4231 section 4, test cases 1-7: (key, data, HMAC-SHA-256); case 5's is truncated to 128 bits
RFC4231 = [
    (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    (b"Jefe", b"what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    (b"\xaa" * 20, b"\xdd" * 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
    (bytes(range(1, 26)), b"\xcd" * 50, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
    (b"\x0c" * 20, b"Test With Truncation", "a3b6167473100ee06e0c796c2955552b"),
    (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    (b"\xaa" * 131, b"This is a test using a larger than block-size key and a larger than block-size data. The key "
     b"needs to be hashed before being used by the HMAC algorithm.",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
]
#: the cases whose data is text (3 and 4 are binary)
TEXT_CASES = [c for c in RFC4231 if c[1].isascii() and c[1].decode().isprintable()]


def rfc_row(blob_sql) -> tuple[str, list[tuple[str, str, bytes, str]]]:
    """One row holding each case's data as a column ``d1``..``d7`` (text, or a BLOB made by
    ``blob_sql(hex)``): (the SELECT, [(column, type, key, expected)])."""
    items, cols = [], []
    for i, (key, data, want) in enumerate(RFC4231, 1):
        if (key, data, want) in TEXT_CASES:
            cols.append(f"CAST({literal(data.decode())} AS VARCHAR) AS d{i}")
            items.append((f"d{i}", "VARCHAR", key, want))
        else:
            cols.append(f"{blob_sql(data.hex())} AS d{i}")
            items.append((f"d{i}", "BLOB", key, want))
    return "SELECT " + ", ".join(cols), items


def rfc_hmacs(eng, table: str, items) -> list[str]:
    """Each case's HMAC computed by ``eng`` over ``table``'s one row, truncated as RFC 4231 does."""
    sel = ", ".join(pseudonym_sql(eng, ident(c), t, k) for c, t, k, _ in items)
    row = eng.fetch_rows(f"SELECT {sel} FROM {ident(table)}")[1][0]
    return [h[:len(want)] for h, (_, _, _, want) in zip(row, items)]


#: values every engine pseudonymizes as Python's hmac does: (the column's type, values)
SAMPLES = [
    ("BIGINT", [0, -1, 2**63 - 1, -(2**63), None]),
    ("INTEGER", [42, -7]),
    ("DECIMAL(20,0)", [10**19 + 7, -3]),
    ("VARCHAR", ["", "alice", "O'Brien", "back\\slash", "tab\tnew\nline", "ü日本語😀", "e\u0301", None]),
    ("DATE", ["0001-01-01", "1999-12-31", "2026-11-28", "9999-12-31", None]),
]


def assert_samples(eng, key: bytes) -> None:
    """:data:`SAMPLES` in one table (a column each, NULL-padded), pseudonymized in one statement."""
    n = max(len(v) for _, v in SAMPLES)
    rows = ", ".join("(" + ", ".join([str(i)] + [f"CAST({literal(v[i] if i < len(v) else None)} AS {cast})"
                                                 for cast, v in SAMPLES]) + ")" for i in range(n))
    names = [f"x{j}" for j in range(len(SAMPLES))]
    eng.execute(f"CREATE OR REPLACE TEMP TABLE samples AS SELECT * FROM (VALUES {rows}) AS v(i, {', '.join(names)})")
    types = dict(eng.columns("samples"))
    sel = ", ".join(pseudonym_sql(eng, ident(c), types[c], key) for c in names)
    got = list(zip(*eng.fetch_rows(f"SELECT {sel} FROM samples ORDER BY i")[1]))
    for (cast, values), col in zip(SAMPLES, got):
        assert list(col) == python_hmac(key, values + [None] * (n - len(values))), cast


def assert_secret_hidden(text: str, key: bytes) -> None:
    """No part of the key, nor a 12-character window of either pad (as hex, any case), in ``text``."""
    low = text.lower()
    assert key.hex() not in low
    if len(key) >= 8:
        assert key.decode("latin-1") not in text
    for pad in pads(key):
        for i in range(len(pad) - 11):
            assert pad[i:i + 12] not in low, f"part of a pad at {i}: {text[:400]}"


@pytest.fixture(scope="module")
def duck():
    e = anonydb.connect()
    yield e
    e.close()


def hashed(eng, cast: str, values: list, key: bytes) -> list:
    """``values`` as a column ``x`` (CAST to ``cast``) of a table, pseudonymized by ``eng`` under the
    type ``eng.columns`` reports for it, in their order."""
    rows = ", ".join(f"({i}, CAST({literal(v)} AS {cast}))" for i, v in enumerate(values))
    eng.execute(f"CREATE OR REPLACE TEMP TABLE vals AS SELECT * FROM (VALUES {rows}) AS v(i, x)")
    sql_type = dict(eng.columns("vals"))["x"]
    sql = f'SELECT {pseudonym_sql(eng, ident("x"), sql_type, key)} AS h FROM vals ORDER BY i'
    return [r[0] for r in eng.fetch_rows(sql)[1]]


def python_hmac(key: bytes, values: list) -> list:
    return [None if v is None else hmac.new(key, str(v).encode("utf-8"), "sha256").hexdigest() for v in values]


def test_python_hmac_agrees_with_rfc4231():
    """The vectors as transcribed here are RFC 4231's: Python's hmac gives them."""
    for key, data, want in RFC4231:
        assert hmac.new(key, data, "sha256").hexdigest()[:len(want)] == want


def test_rfc4231_on_duckdb(duck):
    """Cases 1-7 (3 and 4 binary: a BLOB column; 6 and 7: a 131-byte key, hashed first)."""
    select, items = rfc_row(lambda h: f"unhex('{h}')")
    duck.execute(f"CREATE TABLE rfc AS {select}")
    assert rfc_hmacs(duck, "rfc", items) == [want for *_, want in items]


@settings(max_examples=examples(25), deadline=None)
@given(key=st.binary(max_size=100),
       values=st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), min_size=1, max_size=12))
def test_integers_against_python(duck, key, values):
    """BIGINT values hash their decimal text, under keys of 0 to 100 bytes (over 64: hashed
    first); NULL stays NULL."""
    assert hashed(duck, "BIGINT", values, key) == python_hmac(key, values)


#: text: any Unicode but surrogates (not encodable) and NUL (which no PostgreSQL text holds)
UNICODE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@settings(max_examples=examples(25), deadline=None)
@given(key=st.binary(min_size=MIN_KEY_BYTES, max_size=80),
       values=st.lists(st.one_of(st.none(), UNICODE), min_size=1, max_size=12))
def test_unicode_strings_against_python(duck, key, values):
    """VARCHAR values hash their UTF-8 bytes."""
    assert hashed(duck, "VARCHAR", values, key) == python_hmac(key, values)


@settings(max_examples=examples(10), deadline=None)
@given(key=st.binary(min_size=MIN_KEY_BYTES, max_size=40), values=st.lists(st.dates(), min_size=1, max_size=8))
def test_dates_against_python(duck, key, values):
    """DATE values hash their ISO text, YYYY-MM-DD (years 1 to 9999, zero-padded)."""
    text = [v.isoformat() for v in values]
    assert hashed(duck, "DATE", text, key) == python_hmac(key, text)


def test_samples(duck):
    """The values the PostgreSQL and Spark tests hash too."""
    assert_samples(duck, b"a sample key, 26 bytes...")


def test_other_integer_types(duck):
    key = b"k" * MIN_KEY_BYTES
    wide = [-(2**127), 2**127 - 1, 0, None]
    assert hashed(duck, "HUGEINT", wide, key) == python_hmac(key, wide)
    big = [2**64 - 1, 7]
    assert hashed(duck, "UBIGINT", big, key) == python_hmac(key, big)
    assert hashed(duck, "DECIMAL(20,0)", [-(10**19) + 1, 42], key) == python_hmac(key, [-(10**19) + 1, 42])
    small = [-128, 127]
    assert hashed(duck, "TINYINT", small, key) == python_hmac(key, small)


def test_blob_hashes_its_bytes(duck):
    key = bytes(range(40))
    duck.execute("CREATE OR REPLACE TABLE b AS SELECT unhex('00ff10') AS x UNION ALL SELECT NULL")
    got = duck.fetch_rows(f'SELECT {pseudonym_sql(duck, ident("x"), "BLOB", key)} FROM b ORDER BY x NULLS LAST')[1]
    assert [r[0] for r in got] == [hmac.new(key, b"\x00\xff\x10", "sha256").hexdigest(), None]


@pytest.mark.parametrize("sql_type", ["DOUBLE", "FLOAT", "DECIMAL(10,2)", "TIMESTAMP", "BOOLEAN", "UUID",
                                      "VARCHAR[]", "TIMESTAMP WITH TIME ZONE"])
def test_types_whose_text_differs_are_refused(duck, sql_type):
    with pytest.raises(InputError) as e:
        pseudonym_sql(duck, ident("score"), sql_type, b"k" * 32)
    msg = str(e.value)
    assert "\n" not in msg and sql_type in msg and '"score"' in msg


def test_the_key_is_never_logged(duck):
    key = b"0123456789abcdef-not-in-any-log"
    duck.execute("CREATE OR REPLACE TABLE p AS SELECT 'alice' AS name, 7 AS id")
    exprs = [pseudonym_sql(duck, ident("name"), "VARCHAR", key), pseudonym_sql(duck, ident("id"), "INTEGER", key)]
    duck.execute(f"CREATE OR REPLACE TABLE p2 AS SELECT {exprs[0]} AS a, {exprs[1]} AS b FROM p")
    assert duck.fetch_rows("SELECT a, b FROM p2")[1] == [tuple(python_hmac(key, ["alice", 7]))]
    assert all("<secret>" in duck.redact(x) for x in exprs)
    for entry in duck.log:
        assert_secret_hidden(entry.sql, key)


@pytest.mark.parametrize("expr, sql_type", [(ident("nope"), "VARCHAR"),   # a binder error, with LINE context
                                            (f'CAST({ident("name")} AS INTEGER)', "INTEGER"),  # fails at run time
                                            (f'{ident("id")} / 0 = 1', "BOOLEAN")])  # never reaches SQL
def test_the_key_is_never_in_an_error(duck, expr, sql_type):
    """A statement that fails shows neither the key nor a fragment of a pad: the pads sit on lines
    of their own, so DuckDB's excerpt of the failing line holds none of them."""
    key = b"fedcba9876543210-not-in-errors"
    duck.execute("CREATE OR REPLACE TABLE p AS SELECT 'alice' AS name, 7 AS id")
    with pytest.raises((SQLError, InputError)) as e:
        duck.execute(f"CREATE OR REPLACE TABLE p3 AS SELECT {pseudonym_sql(duck, expr, sql_type, key)} AS a FROM p")
    assert_secret_hidden(str(e.value), key)
    for entry in duck.log:
        assert_secret_hidden(entry.sql, key)


# -- load_key ------------------------------------------------------------------------------------
def test_key_from_a_file(tmp_path):
    f = tmp_path / "secret"
    f.write_bytes(b" a key of 24 bytes\tx  ")
    assert load_key(f, environ={}) == (b" a key of 24 bytes\tx  ", "file")
    f.write_bytes(b"a-key-with-a-newline\n")
    assert load_key(f, environ={}) == (b"a-key-with-a-newline", "file")
    f.write_bytes(b"two-newlines-keep-one\n\n")
    assert load_key(str(f), environ={}) == (b"two-newlines-keep-one\n", "file")
    f.write_bytes(b"a-file-wins-over-the-environment")
    assert load_key(f, environ={"ANONYDB_SECRET": "x" * 20})[1] == "file"
    f.write_bytes(bytes(range(256)))  # bytes as they are: not decoded, not trimmed
    assert load_key(f, environ={}) == (bytes(range(256)), "file")


def test_key_from_the_environment():
    assert load_key(environ={"ANONYDB_SECRET": "ключ-из-окружения"}) == ("ключ-из-окружения".encode(), "environment")


def test_fresh_key():
    k1, where = load_key(environ={})
    k2, _ = load_key(environ={})
    assert where == "fresh" and len(k1) == FRESH_KEY_BYTES and k1 != k2


@pytest.mark.parametrize("content", [b"short-key", b"fifteen-bytes!!\n", b"\n"])
def test_short_key_refused_in_one_line(tmp_path, content):
    f = tmp_path / "secret"
    f.write_bytes(content)
    key = content[:-1] if content.endswith(b"\n") else content
    with pytest.raises(InputError) as e:
        load_key(f, environ={})
    msg = str(e.value)
    assert msg == f"the secret in {str(f)!r} is {len(key)} bytes: a pseudonym key needs at least 16"
    if key:
        assert key.decode() not in msg.replace(str(f), "")


def test_short_environment_key_refused():
    with pytest.raises(InputError) as e:
        load_key(environ={"ANONYDB_SECRET": "hunter2"})
    assert str(e.value) == "the secret in $ANONYDB_SECRET is 7 bytes: a pseudonym key needs at least 16"
    assert "hunter2" not in str(e.value)


def test_missing_or_unreadable_file(tmp_path):
    for path in (tmp_path / "absent", tmp_path):
        with pytest.raises(InputError) as e:
            load_key(path, environ={})
        assert "\n" not in str(e.value) and str(path) in str(e.value)
