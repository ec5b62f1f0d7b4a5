"""The attacks on releases over time that composed verification must refuse, on hand-made series
whose groups the test chooses (Anatomy's ``groups``) [issue 62; survey §6.3, Examples 6.3/6.4,
Table VIII; Byun et al. 2006]. Each verdict is the oracle's (tests/series_oracle.py) first, then
the product's. Each release is a series of its own over one source (a re-run of a series would
continue it instead: docs/releases.md), so the composition is the source's.
"""

from __future__ import annotations

import duckdb
import pytest

import anonydb
import series_oracle as so
from anonydb.errors import AnonyDBError, InputError
from test_series_oracle import AM, PF, VIII_A, VIII_B, VIII_C

SECRET = "0123456789abcdef-attack-tests"
QI = {"Beth": (30, 1), "Cara": (31, 1), "Alice": (32, 1), "Gina": (33, 1), "Hana": (34, 1), "Ed": (50, 2),
      "Finn": (51, 2)}
VALUE = {"Beth": "Cancer", "Cara": "Diabetes", "Alice": "HIV", "Gina": "Fever", "Hana": "Cancer", "Ed": "Fever",
         "Finn": "Cancer"}


@pytest.fixture(autouse=True)
def _secret(monkeypatch):
    monkeypatch.setenv("ANONYDB_SECRET", SECRET)


def release(con, table: dict, l: int = 2, **kw):
    """Write ``table`` (the oracle's release: person -> group) with Anatomy, its groups as given."""
    gid = {PF: 1, AM: 2}
    con.execute("CREATE OR REPLACE TABLE src (name VARCHAR, age BIGINT, zip BIGINT, dis VARCHAR, g BIGINT)")
    con.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?)",
                    [[p, *QI[p], VALUE[p], gid.get(g, g)] for p, g in sorted(table["members"].items())])
    return anonydb.anonymize("src", ["age", "zip"], "dis", method="anatomy", groups="g", key="name", out="rel",
                             engine=con, l=l, replace=True, **kw)


def rows(con) -> int:
    return con.execute("SELECT count(*) FROM anonydb_releases").fetchone()[0]


@pytest.mark.parametrize("composition", ["intersection", "insert-only"])
def test_table_viii_b_the_difference_attack_refused(composition):
    """Example 6.3: Alice joins T1's whole Professional/Female group; {C, D, HIV} - {C, D} leaves HIV."""
    assert so.byun_new_exposed([VIII_A, VIII_B], 2) == {"Alice": (0, 1)}
    con = duckdb.connect()
    release(con, VIII_A, series="viii", composition=composition)
    with pytest.raises(AnonyDBError) as e:
        release(con, VIII_B, series="viii-b", composition=composition)
    assert str(e.value).startswith("composed verification failed: read with ledger release 1 (series 'viii'")
    assert "1 records new since it are left with fewer than 2 possible sensitive values (as few as 1)" in str(e.value)
    assert rows(con) == 1


def test_table_viii_c_the_intersection_attack_refused():
    """Example 6.4: Beth is in {Cancer, Diabetes}, then in {Cancer, Fever}: Cancer."""
    assert so.exposed([VIII_A, VIII_C], 2) == {"Beth": 1}
    con = duckdb.connect()
    release(con, VIII_A, series="viii")
    with pytest.raises(AnonyDBError, match="1 records are left with fewer than 2 possible sensitive values"):
        release(con, VIII_C, series="viii-c")
    assert rows(con) == 1


def test_insert_only_refuses_a_record_that_left():
    """Byun et al.'s insert-only series: Cara leaves (Table VIII(c) without Gina) and is refused."""
    gone = {"members": {p: g for p, g in VIII_A["members"].items() if p != "Cara"}}
    con = duckdb.connect()
    release(con, VIII_A, series="ins", composition="insert-only", l=1)
    with pytest.raises(AnonyDBError, match=r"1 records of ledger release 1 are gone, but series 'ins-2' is "
                                           r"insert-only; nothing was written"):
        release(con, gone, series="ins-2", composition="insert-only", l=1)
    assert rows(con) == 1


def test_a_person_who_skips_a_release_is_checked_against_the_one_before():
    """Beth is in release 1 ({Cancer, Diabetes}), absent from release 2, back in release 3 in
    {Cancer, Fever}: her last release is 1, not the latest; reading only the latest would miss her."""
    r1 = {"members": {"Beth": 1, "Cara": 1, "Ed": 2, "Finn": 2}}
    r2 = {"members": {"Cara": 1, "Hana": 1, "Ed": 2, "Finn": 2}}
    r3 = {"members": {"Beth": 3, "Alice": 3, "Ed": 2, "Finn": 2}}
    val = lambda r: {**r, "values": {g: [VALUE[p] for p, x in r["members"].items() if x == g]  # noqa: E731
                                    for g in set(r["members"].values())}}
    series = [val(r1), val(r2), val(r3)]
    assert so.exposed(series[:2], 2) == {} and so.byun_new_exposed(series[:2], 2) == {}
    assert so.exposed(series, 2) == {"Beth": 1} and so.byun_new_exposed(series, 2) == {}
    assert so.exposed(series[1:], 2) == {} and so.byun_new_exposed(series[1:], 2) == {}  # the latest alone: nobody
    con = duckdb.connect()
    for i, r in enumerate((r1, r2)):
        release(con, r, series=f"skip{i}")
    with pytest.raises(AnonyDBError, match=r"read with ledger release 1 .* 1 records are left with fewer than 2"):
        release(con, r3, series="skip2")
    assert rows(con) == 2


def test_a_ledger_in_another_schema_is_found(tmp_path):
    """A release that names another ledger schema than the database keeps is refused (it would be
    composed with none of the earlier releases)."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    release(con, VIII_A, series="s", ledger_schema="audit")
    with pytest.raises(InputError, match="keeps its release ledger in schema 'audit', not 'main'"):
        release(con, VIII_B, series="s2")
    with pytest.raises(AnonyDBError, match="new since it"):  # with the right schema: composed, refused
        release(con, VIII_B, series="s2", ledger_schema="audit")
