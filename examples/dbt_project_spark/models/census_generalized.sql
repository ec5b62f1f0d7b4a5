-- A generalized release built by Spark with the dbt_anonydb package: age in three bands, zip to its
-- first digit, verified 5-anonymous and distinct 2-diverse in the same statement (raise_error).
{{ dbt_anonydb.generalized_release(ref('census'), quasi_identifiers=['age', 'sex', 'zip'], sensitive='occupation',
       hierarchies={'age': ref('hier_age'), 'zip': ref('hier_zip')}, levels={'age': 2, 'zip': 2}, k=5, l=2) }}
