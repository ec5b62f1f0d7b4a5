{#- Distinct l-diversity [Machanavajjhala et al. 2006; Li thesis 1.2.2]: every equivalence class
    holds at least l distinct sensitive values (NULL counts as a value). Failing rows: the classes
    with fewer. The NULL value is counted on its own (count(distinct) skips it) rather than by a
    cast to text: one SQL text for DuckDB, PostgreSQL and Spark (whose parser rejects a bare
    varchar), and a text value '<null>' stays apart from NULL. -#}
{% test l_diverse(model, quasi_identifiers, sensitive, l) %}
{%- set s = adapter.quote(sensitive) %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(*) as class_size,
       count(distinct {{ s }}) + max(case when {{ s }} is null then 1 else 0 end) as distinct_values
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(distinct {{ s }}) + max(case when {{ s }} is null then 1 else 0 end) < {{ l }}
{% endtest %}
