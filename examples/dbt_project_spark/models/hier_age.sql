-- A hierarchy for age as a table (value, level1, level2, root): 10-year bands, then three bands.
select cast(id as string) as value,
       concat(cast(id - id % 10 as string), '-', cast(id - id % 10 + 9 as string)) as decade,
       case when id < 40 then '<40' when id < 60 then '40-59' else '60+' end as band,
       '*' as root
from range(0, 120)
