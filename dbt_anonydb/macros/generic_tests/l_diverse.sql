{#- Distinct l-diversity [Machanavajjhala et al. 2006; Li thesis 1.2.2]: every equivalence class
    holds at least l distinct sensitive values (NULL counts as a value). Failing rows: the classes
    with fewer. The NULL value is counted on its own (count(distinct) skips it) rather than by a
    cast to text: one SQL text for DuckDB, PostgreSQL and Spark (whose parser rejects a bare
    varchar), and a text value '<null>' stays apart from NULL.

    person='patient_id' (record owners, docs/persons.md): distinct l-diversity by persons, at least
    l values held by someone in the class, which is the row-level count over the rows that name a
    person (a value is held by someone iff such a row has it). class_size is then the class's
    distinct persons. A NULL person is not a person: a class with a row whose person is NULL fails,
    and that row's value is not counted. Failing rows: (the quasi-identifiers, class_size =
    distinct persons, distinct_values, null_persons = rows whose person is NULL, reason), one per
    class with fewer than l values or with a NULL person; reason says which, the NULL person first.
    The person column may not also be a quasi-identifier nor the sensitive attribute. Only distinct
    l-diversity is tested here (anonydb.check judges the probabilistic, entropy and recursive
    variants, by persons too). -#}
{% test l_diverse(model, quasi_identifiers, sensitive, l, person=none) %}
{%- set s = adapter.quote(sensitive) %}
{%- if person is none %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(*) as class_size,
       count(distinct {{ s }}) + max(case when {{ s }} is null then 1 else 0 end) as distinct_values
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(distinct {{ s }}) + max(case when {{ s }} is null then 1 else 0 end) < {{ l }}
{%- else %}
{%- if (person | lower) in (quasi_identifiers | map('lower') | list) or (person | lower) == (sensitive | lower) -%}
    {{ exceptions.raise_compiler_error("l_diverse: the person column " ~ person ~ " is also a quasi-identifier or the sensitive attribute") }}
{%- endif %}
{%- set p = adapter.quote(person) %}
{%- set null_persons = "sum(case when " ~ p ~ " is null then 1 else 0 end)" %}
{%- set held = "count(distinct case when " ~ p ~ " is not null then " ~ s ~ " end)"
             ~ " + max(case when " ~ p ~ " is not null and " ~ s ~ " is null then 1 else 0 end)" %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(distinct {{ p }}) as class_size,
       {{ held }} as distinct_values,
       {{ null_persons }} as null_persons,
       case when {{ null_persons }} > 0 then 'a row has no person ({{ person | replace("'", "''") }} is NULL)'
            else 'fewer than {{ l }} values held by persons' end as reason
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having {{ held }} < {{ l }} or {{ null_persons }} > 0
{%- endif %}
{% endtest %}
