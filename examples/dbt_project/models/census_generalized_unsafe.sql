-- Too fine to be 5-anonymous (enabled with --vars '{include_unsafe_release: true}'): the package's
-- verification stops the query, so dbt builds no table.
{{ config(enabled=var('include_unsafe_release', false), materialized='table') }}
{{ dbt_anonydb.generalized_release(ref('census'), quasi_identifiers=['age', 'sex', 'zip'], sensitive='occupation',
       hierarchies={'age': ref('hier_age'), 'zip': ref('hier_zip')}, levels={'age': 1, 'zip': 1}, k=5) }}
