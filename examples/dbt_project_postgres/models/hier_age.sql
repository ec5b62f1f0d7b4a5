-- A hierarchy for age as a table (value, level1, level2, root): 10-year bands, then three bands.
{{ config(materialized='table') }}
select cast(a as text) as value,
       cast(a - a % 10 as text) || '-' || cast(a - a % 10 + 9 as text) as decade,
       case when a < 40 then '<40' when a < 60 then '40-59' else '60+' end as band,
       '*' as root
from generate_series(0, 119) as r(a)
