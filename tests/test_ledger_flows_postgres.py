"""A new extract each month, released into PostgreSQL through the command line [issue 62]: the
same flow as tests/test_ledger_flows.py on DuckDB, each month's file loaded into a table of its
own name (PostgreSQL reads no files), the same outcomes (refused exactly when the oracle finds a
person exposed), the ledger in the server's own transaction."""

from __future__ import annotations

import pytest

import anonydb
import ledger_flows as lf
from anonydb.workflow.cli import main

pytestmark = pytest.mark.xdist_group("postgres")


@pytest.fixture
def url(pg_url):
    """A database of its own on the session's server."""
    admin = anonydb.connect(pg_url)
    try:
        admin.execute("DROP DATABASE IF EXISTS flows")
        admin.execute("CREATE DATABASE flows")
    finally:
        admin.close()
    return pg_url.rsplit("/", 1)[0] + "/flows"


def read_ledger(url: str, rid: int) -> tuple[int, dict]:
    eng = anonydb.connect(url)
    try:
        n = int(eng.scalar("SELECT count(*) FROM anonydb_releases"))
        return n, dict(eng.fetch_rows(f"SELECT fp, grp FROM anonydb_release_members WHERE release_id = {rid}")[1])
    finally:
        eng.close()


def load(url: str, table: str, month: dict) -> None:
    eng = anonydb.connect(url)
    try:
        eng.execute(f"CREATE TABLE {table} (rid BIGINT, age BIGINT, zip BIGINT, dis VARCHAR)")
        eng.execute(f"INSERT INTO {table} VALUES " + ", ".join(f"({p}, {a}, {z}, '{d}')"
                                                               for p, (a, z, d) in sorted(month.items())))
    finally:
        eng.close()


def test_a_file_per_month_on_postgres(url, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANONYDB_SECRET", lf.SECRET)
    monkeypatch.chdir(tmp_path)
    months = lf.population(seed=3, months=4)
    accepted: list[dict] = []
    outcomes = []
    for m, month in enumerate(months):
        load(url, f"m{m}", month)
        cand = lf.probe(month)
        why = lf.verdict(accepted, cand)
        code = main(["anonymize", f"m{m}", "--qi", "age,zip", "--sensitive", "dis", "--k", str(lf.K), "--l",
                     str(lf.L), "--person", "rid", "--out", "rel", "--replace", "--db", url])
        out, err = capsys.readouterr()
        if why:
            assert code == 2 and "composed verification failed" in err and err.count("\n") == 1, (m, err)
            assert read_ledger(url, 0)[0] == len(accepted)
            outcomes.append("refused")
            continue
        assert code == 0, (m, err)
        n, members = read_ledger(url, len(accepted) + 1)
        assert n == len(accepted) + 1 and f"verified together with {len(accepted)} earlier" in out
        by_fp = {lf.fingerprint(p): g for p, g in cand["members"].items()}
        assert lf.partition({"members": members}) == lf.partition({"members": by_fp}), m
        accepted.append(cand)
        outcomes.append("ok")
    assert outcomes == ["ok", "ok", "ok", "refused"], outcomes  # as the oracle decides on DuckDB's twin
