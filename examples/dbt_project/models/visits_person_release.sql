-- A person-level release of the visits (the package's macro with person: patient_id): classes of
-- sex, 3 patients or more each. Built only with --vars '{include_person_release: true}': built
-- again over its own table it is refused (a second release of the same patients cannot be
-- verified with the first in SQL alone; `anonydb release` tracks persons over time).
{{ config(materialized='table', enabled=var('include_person_release', false)) }}
{{ dbt_anonydb.generalized_release(ref('visits'), quasi_identifiers=['sex'], sensitive='diagnosis',
                                   person='patient_id', k=3, l=2, untracked=var('person_release_untracked', false)) }}
