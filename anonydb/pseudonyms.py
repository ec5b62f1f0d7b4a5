"""Keyed pseudonyms computed inside the database: the HMAC-SHA256 of a value's text.

A published column's value ``v`` becomes 64 lowercase hex characters,

    HMAC(K, m) = SHA-256((K' xor opad) || SHA-256((K' xor ipad) || m))      (RFC 2104, section 2)

with ``m`` the UTF-8 bytes of ``v``'s text, ``K'`` the key padded with zero bytes to SHA-256's
64-byte block (a key longer than 64 bytes is first replaced by its SHA-256), ``ipad`` = 0x36 and
``opad`` = 0x5c repeated 64 times. The test vectors are RFC 4231's (``tests/test_pseudonyms.py``).
The pads are computed here and inlined as hex literals; everything else runs as plain SHA-256 in
the database, on every engine (the engine's :meth:`~anonydb.engines.base.Engine.hmac_sha256_hex`).

The same key gives the same pseudonym on DuckDB, PostgreSQL and Spark, and the one Python's
``hmac.new(key, str(v).encode(), "sha256").hexdigest()`` gives. Without the key a pseudonym cannot
be recomputed from a guessed value, so a release keyed with a fresh key (:func:`load_key` without
a secret) cannot be linked to any other.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from pathlib import Path
from typing import Mapping

from .engines.base import Engine
from .errors import InputError

#: the shortest key accepted (RFC 2104 section 3: less than the hash's 32 bytes is discouraged)
MIN_KEY_BYTES = 16
#: the environment variable holding the key when no secret file is given
SECRET_ENV = "ANONYDB_SECRET"
#: the bytes of a fresh key (SHA-256's output size)
FRESH_KEY_BYTES = 32
#: SHA-256's block size, to which the key is padded
BLOCK = 64

#: the column types pseudonymized, by the text they hash (the names engines report, DuckDB's)
INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                           "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"})
_DECIMAL_INTEGER = re.compile(r"^DECIMAL\(\s*\d+\s*,\s*0\s*\)$")  # scale 0: integer text on every engine
_TEXT = re.compile(r"^(VARCHAR|TEXT|STRING)(\(\s*\d+\s*\))?$")


def load_key(secret_file: str | os.PathLike | None = None,
             environ: Mapping[str, str] | None = None) -> tuple[bytes, str]:
    """The pseudonym key and where it came from: ``"file"``, ``"environment"`` or ``"fresh"``.

    * ``secret_file``: its bytes as they are, less one trailing newline (not otherwise trimmed,
      not hex-decoded);
    * else the UTF-8 bytes of ``$ANONYDB_SECRET`` (``environ``, default ``os.environ``), if set;
    * else :data:`FRESH_KEY_BYTES` random bytes: the release cannot be linked to any other.

    A missing or unreadable file, or a key shorter than :data:`MIN_KEY_BYTES`, raises
    :class:`~anonydb.errors.InputError` in one line, which never shows the key."""
    if secret_file is not None:
        try:
            key = Path(secret_file).read_bytes()
        except OSError as e:
            raise InputError(f"cannot read the secret file {str(secret_file)!r}: "
                             f"{e.strerror or type(e).__name__}") from None
        if key.endswith(b"\n"):
            key = key[:-1]
        return _long_enough(key, f"the secret in {str(secret_file)!r}"), "file"
    env = os.environ if environ is None else environ
    if SECRET_ENV in env:
        return _long_enough(env[SECRET_ENV].encode("utf-8"), f"the secret in ${SECRET_ENV}"), "environment"
    return secrets.token_bytes(FRESH_KEY_BYTES), "fresh"


def _long_enough(key: bytes, where: str) -> bytes:
    if len(key) < MIN_KEY_BYTES:
        raise InputError(f"{where} is {len(key)} bytes: a pseudonym key needs at least {MIN_KEY_BYTES}")
    return key


def pads(key: bytes) -> tuple[str, str]:
    """(K' xor ipad, K' xor opad) as 128 lowercase hex characters each (RFC 2104)."""
    if not isinstance(key, (bytes, bytearray)):
        raise InputError(f"a pseudonym key is bytes, got {type(key).__name__}")
    k = hashlib.sha256(key).digest() if len(key) > BLOCK else bytes(key)
    k = k.ljust(BLOCK, b"\0")
    return bytes(b ^ 0x36 for b in k).hex(), bytes(b ^ 0x5C for b in k).hex()


def value_text(expr: str, sql_type: str) -> tuple[str, bool]:
    """The DuckDB-dialect SQL of the text a value of type ``sql_type`` is hashed as, and whether it
    is already bytes (a BLOB):

    * integers (and DECIMAL(p, 0)): the decimal text, ``-42``;
    * text (VARCHAR): the string itself, its UTF-8 bytes as stored (no Unicode normalization);
    * DATE: ``YYYY-MM-DD`` (years 1 to 9999; outside them, an engine's text may differ);
    * BLOB: its bytes as they are.

    Anything else (floating-point, DECIMAL with a scale, timestamps, booleans, ...) is refused
    with an :class:`~anonydb.errors.InputError`: its text differs from engine to engine."""
    t = " ".join(str(sql_type).upper().split())
    if t in INTEGER_TYPES or _DECIMAL_INTEGER.match(t) or _TEXT.match(t):
        return f"CAST({expr} AS VARCHAR)", False
    if t == "DATE":
        return f"strftime(CAST({expr} AS DATE), '%Y-%m-%d')", False
    if t == "BLOB":
        return f"CAST({expr} AS BLOB)", True
    raise InputError(f"cannot pseudonymize {expr} of type {sql_type}: its text differs across engines "
                     f"(pseudonyms take integers, text, dates and BLOBs; cast it to one of them first)")


def pseudonym_sql(eng: Engine, expr: str, sql_type: str, key: bytes) -> str:
    """A SQL expression (DuckDB dialect, as ``eng`` runs it) giving the HMAC-SHA256 of the value of
    ``expr`` keyed by ``key``, as 64 lowercase hex characters; NULL stays NULL.

    ``expr`` is an already-quoted SQL expression, ``sql_type`` its type as ``eng.columns``
    reports it (see :func:`value_text` for what each type hashes). The key's length is not checked
    here (:func:`load_key` checks it). Its two pads, the only text derived from the key in the SQL,
    are registered with :meth:`~anonydb.engines.base.Engine.secret`: the statement log and error
    messages show ``<secret>`` instead."""
    text, is_bytes = value_text(expr, sql_type)
    ipad, opad = pads(key)
    for pad in (ipad, opad):
        eng.secret(pad)
        eng.secret(pad.upper())  # a binary literal as an engine may print it (X'36...')
    return eng.hmac_sha256_hex(text if is_bytes else eng.text_bytes(text), ipad, opad)
