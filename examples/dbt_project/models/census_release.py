"""A release built by anonydb: Mondrian inside DuckDB, verified (k, l, t) before it is written.

anonydb writes the verified release to ``census_release__verified`` (staged, checked, swapped in
one transaction); dbt materializes this model from it, and the generic tests in schema.yml check
the model again, independently of anonydb, in plain SQL.
"""


def model(dbt, session):
    dbt.config(materialized="table")
    import anonydb
    from anonydb.workflow.demo import census_hierarchies

    session.execute('DROP TABLE IF EXISTS "census_release__source"')
    dbt.ref("census").create("census_release__source")
    rel = anonydb.anonymize(
        "census_release__source", qi=["age", "sex", "zip", "education"], sensitive="occupation",
        method="mondrian", out="census_release__verified", engine=session, identifiers=["person_id", "name"],
        hierarchies={"education": census_hierarchies()["education"]}, k=5, l=3, t=0.35, replace=True, seed=1)
    session.execute('DROP TABLE "census_release__source"')
    return session.table(rel.table)
