"""The source: anonydb's seeded synthetic census (identifiers, QIs, sensitive attributes)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from anonydb.datasets import synthetic_census
    from anonydb.engines.duckdb import DuckDBEngine

    name = synthetic_census(DuckDBEngine(session), "anonydb_census_source",
                            rows=int(dbt.config.get("rows", 3000)), seed=int(dbt.config.get("seed", 7)))
    return session.table(name)
