{#- k-anonymity [Samarati & Sweeney; Li thesis 1.2.1]: every equivalence class (records sharing
    the quasi-identifier values; NULL is a value of its own) has at least k records.
    Failing rows: the classes below k, with their size (class_size).

    person='patient_id' (record owners, docs/persons.md; MultiR k-anonymity, (X,Y)-anonymity with
    Y the person key): a table with several rows per person, each naming its owner in that column.
    A class's size is then its distinct persons, count(distinct person), and it needs k of them:
    twelve visits of one patient do not fill a class of k = 10. A NULL person is not a person, so a
    class with a row whose person is NULL fails too. Failing rows: (the quasi-identifiers,
    class_size = distinct persons, class_rows, null_persons = rows whose person is NULL, reason),
    one per class with fewer than k persons or with a NULL person; reason says which, the NULL
    person first. The person column may not also be a quasi-identifier. -#}
{% test k_anonymous(model, quasi_identifiers, k, person=none) %}
{%- if person is none %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(*) as class_size
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(*) < {{ k | int }}
{%- else %}
{%- if (person | lower) in (quasi_identifiers | map('lower') | list) -%}
    {{ exceptions.raise_compiler_error("k_anonymous: the person column " ~ person ~ " is also a quasi-identifier") }}
{%- endif %}
{%- set p = adapter.quote(person) %}
{%- set null_persons = "sum(case when " ~ p ~ " is null then 1 else 0 end)" %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(distinct {{ p }}) as class_size,
       count(*) as class_rows,
       {{ null_persons }} as null_persons,
       case when {{ null_persons }} > 0 then 'a row has no person ({{ person | replace("'", "''") }} is NULL)'
            else 'fewer than {{ k | int }} persons' end as reason
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(distinct {{ p }}) < {{ k | int }} or {{ null_persons }} > 0
{%- endif %}
{% endtest %}
