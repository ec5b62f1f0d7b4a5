-- A hierarchy for zip as a table (value, level1, level2, root): 3 digits kept, then 1.
{{ config(materialized='table') }}
select distinct cast(zip as text) as value,
       substr(cast(zip as text), 1, 3) || '**' as zip3,
       substr(cast(zip as text), 1, 1) || '****' as zip1,
       '*' as root
from {{ source('anonydb', 'census') }}
