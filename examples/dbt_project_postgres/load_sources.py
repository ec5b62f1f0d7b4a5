"""Load this project's sources into PostgreSQL: anonydb's synthetic census and the release anonydb
builds from it, into schema ``anonydb`` (``ANONYDB_PG_SOURCE_SCHEMA``).

The release is made exactly as ../dbt_project's Python models make it (census of 3000 rows, seed 7;
Mondrian with k=5, l=3, t=0.35, verified before it is written; identifiers dropped), inside an
in-memory DuckDB, because anonydb's Mondrian does not run on PostgreSQL yet. Both tables are then
copied into PostgreSQL with COPY (row by row through psycopg, so NULLs stay NULLs) and analyzed, in
one transaction; the dbt tests of this project check them there again, in PostgreSQL's own SQL.

    python load_sources.py postgresql://user@localhost:5432/db
"""

from __future__ import annotations

import os
import sys

#: DuckDB column types of the two tables -> PostgreSQL types
PG_TYPES = {"BOOLEAN": "boolean", "SMALLINT": "smallint", "INTEGER": "integer", "BIGINT": "bigint",
            "DOUBLE": "double precision", "FLOAT": "real", "VARCHAR": "text", "DATE": "date"}


def build(duck, rows: int = 3000, seed: int = 7) -> tuple[str, str]:
    """The raw census and its verified release in the DuckDB engine ``duck``; their table names."""
    import anonydb
    from anonydb.datasets import synthetic_census
    from anonydb.workflow.demo import census_hierarchies

    synthetic_census(duck, "census", rows=rows, seed=seed)
    rel = anonydb.anonymize(
        "census", qi=["age", "sex", "zip", "education"], sensitive="occupation", method="mondrian",
        out="census_release", engine=duck, identifiers=["person_id", "name"],
        hierarchies={"education": census_hierarchies()["education"]}, k=5, l=3, t=0.35, replace=True, seed=1)
    return "census", rel.table


def copy_tables(duck, url: str, tables: list[str], schema: str) -> None:
    """Copy DuckDB ``tables`` into ``schema`` of the PostgreSQL database at ``url`` (replacing them)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url) as pg, pg.transaction():
        pg.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
        for table in tables:
            cols = duck.columns(table)
            target = sql.Identifier(schema, table)
            pg.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(target))
            pg.execute(sql.SQL("CREATE TABLE {} ({})").format(target, sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(PG_TYPES[t])) for c, t in cols)))
            rows = duck.con.execute('SELECT * FROM "' + table.replace('"', '""') + '"').fetchall()
            with pg.cursor() as cur, cur.copy(sql.SQL("COPY {} FROM STDIN").format(target)) as cp:
                for row in rows:
                    cp.write_row(row)
            pg.execute(sql.SQL("ANALYZE {}").format(target))


def load(url: str, schema: str | None = None) -> list[str]:
    """Build the sources in DuckDB and copy them into PostgreSQL; the tables' names."""
    import anonydb

    schema = schema or os.environ.get("ANONYDB_PG_SOURCE_SCHEMA", "anonydb")
    duck = anonydb.connect()
    try:
        tables = list(build(duck))
        copy_tables(duck, url, tables, schema)
    finally:
        duck.close()
    return tables


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python load_sources.py postgresql://user@host:port/dbname")
    print("loaded", ", ".join(load(sys.argv[1])))
