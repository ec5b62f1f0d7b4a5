-- The source: a synthetic census generated in Spark SQL (var census_rows, 3000 by default), the
-- same rows on every run: each value is a Murmur3 hash (Spark's hash, seeded by the column) of the
-- person's id, so no randomness and no input file. Not for release: it carries identifiers.
{{ config(materialized='table') }}
with ids as (
    select id as person_id from range({{ var('census_rows', 3000) | int }})
)
select
    person_id,
    concat('person ', cast(person_id as string)) as name,
    17 + pmod(hash(person_id, 1), 74) as age,
    case when pmod(hash(person_id, 2), 2) = 0 then 'Female' else 'Male' end as sex,
    cast(47600 + pmod(hash(person_id, 3), 300) as string) as zip,
    element_at(array('Preschool', '1st-8th', 'HS-grad', 'Some-college', 'Assoc', 'Bachelors',
                     'Masters', 'Doctorate'), 1 + pmod(hash(person_id, 4), 8)) as education,
    -- 10 occupations, unevenly: two 3/18 each, four 2/18 each, four 1/18 each
    element_at(array('Prof-specialty', 'Prof-specialty', 'Prof-specialty', 'Craft-repair',
                     'Craft-repair', 'Craft-repair', 'Exec-managerial', 'Exec-managerial',
                     'Adm-clerical', 'Adm-clerical', 'Sales', 'Sales', 'Other-service',
                     'Other-service', 'Machine-op-inspct', 'Tech-support', 'Farming-fishing',
                     'Handlers-cleaners'),
               1 + pmod(hash(person_id, 5), 18)) as occupation
from ids
