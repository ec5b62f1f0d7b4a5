"""Differentially private visit counts and mean age by diagnosis, by patient (docs/dp.md).

anonydb bounds each patient's contribution in SQL (at most 2 diagnoses, 2 visits each), OpenDP adds
the noise, and the release is an entry of the database's ledger: the build is refused, with nothing
written, once the series' releases would spend more than ``dp_budget`` (var, default 5) in all.
"""


def model(dbt, session):
    dbt.config(materialized="table")
    import anonydb

    budget = dbt.config.get("dp_budget")  # a statement of its own: dbt finds the config keys a model reads
    session.execute('DROP TABLE IF EXISTS "visits_dp__source"')
    dbt.ref("visits").create("visits_dp__source")
    keys = dbt.ref("diagnoses")
    session.execute('DROP TABLE IF EXISTS "visits_dp__keys"')
    keys.create("visits_dp__keys")
    try:
        r = anonydb.dp("visits_dp__source", person="patient_id", by=["diagnosis"], count=True, means=["age:0:100"],
                       epsilon=1.0, keys="visits_dp__keys", max_groups=2, max_rows=2, out="visits_dp__released",
                       engine=session, replace=True, series="visits_dp", budget=float(budget or 5))
    finally:
        session.execute('DROP TABLE IF EXISTS "visits_dp__source"')
        session.execute('DROP TABLE IF EXISTS "visits_dp__keys"')
    return session.table(r.table)
