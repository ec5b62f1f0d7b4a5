-- A coarse generalization in Spark SQL, published without identifiers: age in 20-year bands,
-- zip masked to its first three digits, education in three levels, sex and the sensitive
-- occupation unchanged. schema.yml's generic tests check it (k = 5, l = 3, t = 0.35).
{{ config(materialized='table') }}
select
    case when age < 30 then '[17, 30['
         when age < 50 then '[30, 50['
         when age < 70 then '[50, 70['
         else '[70, 91[' end as age,
    sex,
    concat(substr(zip, 1, 3), '**') as zip,
    case when education in ('Preschool', '1st-8th', 'HS-grad') then 'Secondary or less'
         when education in ('Some-college', 'Assoc', 'Bachelors') then 'Undergraduate'
         else 'Graduate' end as education,
    occupation
from {{ ref('census') }}
