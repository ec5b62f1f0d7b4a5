-- The release anonydb loaded into PostgreSQL, published as a table; schema.yml's tests check it.
{{ config(materialized='table') }}
select * from {{ source('anonydb', 'census_release') }}
