-- A deliberately violating model (enabled with --vars '{include_violation: true}'): the visits with
-- raw quasi-identifiers. Every class (age, sex, zip) has at least 3 visits, so k_anonymous by rows
-- passes at k = 3, but one or two patients, so k_anonymous with person: patient_id fails the build.
{{ config(enabled=var('include_violation', false), materialized='table') }}
select patient_id, age, sex, zip, diagnosis from {{ ref('visits') }}
