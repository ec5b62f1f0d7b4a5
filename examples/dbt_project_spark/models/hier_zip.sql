-- A hierarchy for zip as a table (value, level1, level2, root): 3 digits kept, then 1.
select distinct cast(zip as string) as value,
       concat(substr(cast(zip as string), 1, 3), '**') as zip3,
       concat(substr(cast(zip as string), 1, 1), '****') as zip1,
       '*' as root
from {{ ref('census') }}
