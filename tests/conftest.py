from __future__ import annotations

from pathlib import Path

import pytest

import anonydb

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"


@pytest.fixture
def engine():
    e = anonydb.connect()
    yield e
    e.close()


@pytest.fixture
def datasets() -> Path:
    """The shared datasets folder (the test skips, with the reason, when it is absent)."""
    return need_shared()


def need_shared() -> Path:
    if not DATASETS.is_dir():
        pytest.skip(f"the shared datasets folder {DATASETS} is absent (it sits beside the repository)")
    return DATASETS


def make_table(engine, name: str, columns: list[str], rows: list[tuple], counts: list[int] | None = None) -> str:
    """Create ``name`` from rows (each repeated counts[i] times when given), through the engine."""
    from anonydb.sqlgen import ident, literal

    cols = ", ".join(ident(c) for c in columns)
    values = ", ".join("(" + ", ".join(literal(v) for v in r) + (f", {counts[i]}" if counts else "") + ")"
                       for i, r in enumerate(rows))
    if counts:
        engine.execute(f"CREATE TABLE {ident(name)} AS SELECT {cols} FROM (VALUES {values}) AS v({cols}, _rep), range(_rep)")
    else:
        engine.execute(f"CREATE TABLE {ident(name)} AS SELECT * FROM (VALUES {values}) AS v({cols})")
    return name


@pytest.fixture(scope="session")
def pg_url():
    """One real PostgreSQL server for the whole session (tests/pg_server.py), stopped at its end."""
    from pg_server import PgUnavailable, find_bin_dir, pg_server

    if find_bin_dir() is None:
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin, $PG_BIN "
                    "or PATH: install Debian's postgresql package (.ci/run does)")
    try:
        with pg_server() as url:
            yield url
    except PgUnavailable as e:
        pytest.skip(str(e))
