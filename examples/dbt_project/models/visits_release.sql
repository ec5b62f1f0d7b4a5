-- Several records per person: the visits (seed) with age in 10-year bands and zip left out. Each
-- class (age band, sex) holds 7 to 10 visits of 3 patients, so it is 3-anonymous by persons, the
-- test that counts patients (k_anonymous with person: patient_id), not only by rows. patient_id
-- stays so the tests can count persons; a table leaving the warehouse would publish a keyed
-- pseudonym in its place (anonydb's --pseudonymize) or drop it once the tests pass.
{{ config(materialized='table') }}
select patient_id,
       case when age < 30 then '<30' when age < 40 then '30-39' when age < 50 then '40-49' else '50+' end as age,
       sex,
       diagnosis
from {{ ref('visits') }}
