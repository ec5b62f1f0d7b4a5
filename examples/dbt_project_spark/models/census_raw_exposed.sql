-- A deliberately violating model (enabled with --vars '{include_violation: true}'): raw
-- quasi-identifiers published as they are. Its k_anonymous test fails the build.
{{ config(enabled=var('include_violation', false), materialized='table') }}
select age, sex, zip, education, occupation from {{ ref('census') }}
