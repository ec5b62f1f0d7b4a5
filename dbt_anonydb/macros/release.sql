{#- A verified generalized (full-domain) release as a model's body [Li thesis 1.2.3; Samarati 2001]:
    each quasi-identifier is replaced by its ancestor at the given level of its hierarchy, and the
    release holds only the quasi-identifiers, the sensitive attribute and the `keep` columns (a
    column without a role never leaves), in random order. The models are checked inside the same
    statement, over every published column but the sensitive one (the kept columns too): a release that would violate k-anonymity or distinct l-diversity, or a value the
    hierarchy does not cover, stops the query with one line ("anonydb: ...") instead of returning
    rows, so dbt materializes nothing (fail closed).

      {{ config(materialized='table') }}
      {{ dbt_anonydb.generalized_release(ref('census'),
             quasi_identifiers=['age', 'sex', 'zip'], sensitive='occupation',
             hierarchies={'age': ref('hier_age'), 'zip': ref('hier_zip')},
             levels={'age': 2, 'zip': 1}, k=5, l=3) }}

    A hierarchy is any relation of (value, level1, ..., root) text columns, one row per leaf (the
    ARX layout, e.g. a seed): level n is its (n+1)-th column. A QI without a hierarchy (or at level
    0) is published as it is.

    `person`: the column naming each record's owner (not published): k counts a class's distinct
    persons, a row without a person and a person whose QIs differ between records stop the query.
    A person-level release cannot be composed with the one already out in SQL alone (issue 62: the
    next release of the same persons may narrow their values down), so a rebuild of the model over
    an existing table is refused at compile time unless `untracked=true`; release persons over time
    with `anonydb release` (tracked in the ledger) instead. -#}
{% macro generalized_release(relation, quasi_identifiers, hierarchies={}, levels={}, sensitive=none, keep=[],
                             k=none, l=none, person=none, untracked=false) %}
{%- if quasi_identifiers | length == 0 -%}
    {{ exceptions.raise_compiler_error("anonydb: generalized_release needs at least one quasi-identifier") }}
{%- endif -%}
{%- if k is none and l is none -%}
    {{ exceptions.raise_compiler_error("anonydb: generalized_release needs k or l (a release is verified before it is written)") }}
{%- endif -%}
{%- if k is not none and (k | int) < 1 -%}
    {{ exceptions.raise_compiler_error("anonydb: k must be an integer >= 1, got " ~ k) }}
{%- endif -%}
{%- if l is not none and sensitive is none -%}
    {{ exceptions.raise_compiler_error("anonydb: l-diversity needs the sensitive attribute (sensitive=...)") }}
{%- endif -%}
{%- if person is not none and person in quasi_identifiers + [sensitive] + keep -%}
    {{ exceptions.raise_compiler_error("anonydb: the person column " ~ person ~ " is not published: it cannot be a quasi-identifier, the sensitive attribute or kept") }}
{%- endif -%}
{%- if execute and person is not none and not untracked
       and adapter.get_relation(database=this.database, schema=this.schema, identifier=this.identifier) is not none -%}
    {{ exceptions.raise_compiler_error("anonydb: " ~ this ~ " is a person-level release that exists already: a rebuild cannot be verified with the release already out (the two together may narrow a person's values down); release persons over time with `anonydb release` (tracked in the ledger), or pass untracked=true to build it composed with no other") }}
{%- endif -%}
{%- set text = dbt.type_string() -%}
{%- set columns = [] -%}
{%- if execute -%}
    {%- for c in adapter.get_columns_in_relation(relation) %}{% do columns.append(c.name | lower) %}{% endfor -%}
    {%- for c in quasi_identifiers + ([sensitive] if sensitive else []) + keep + ([person] if person else []) -%}
        {%- if (c | lower) not in columns -%}
            {{ exceptions.raise_compiler_error("anonydb: unknown column " ~ c ~ " in " ~ relation) }}
        {%- endif -%}
    {%- endfor -%}
{%- endif -%}
{%- set joins = [] -%}
with _adb_src as (
    select * from {{ relation }}
), _adb_rel as (
    select
{%- for q in quasi_identifiers %}
{%- set lv = levels.get(q, 0) | int %}
{%- if lv > 0 %}
{%- if q not in hierarchies -%}
    {{ exceptions.raise_compiler_error("anonydb: level " ~ lv ~ " is given for " ~ q ~ ", which has no hierarchy") }}
{%- endif %}
{%- set h = hierarchies[q] %}
{%- set hcols = adapter.get_columns_in_relation(h) if execute else [] %}
{%- if execute and lv >= hcols | length -%}
    {{ exceptions.raise_compiler_error("anonydb: level " ~ lv ~ " of " ~ q ~ " is above its hierarchy's root (levels 0.." ~ (hcols | length - 1) ~ ")") }}
{%- endif %}
{%- set value_col = adapter.quote(hcols[0].name) if execute else 'value' %}
{%- set level_col = adapter.quote(hcols[lv].name) if execute else 'level' %}
{%- do joins.append((loop.index, h, value_col, q)) %}
        _adb_h{{ loop.index }}.{{ level_col }} as {{ adapter.quote(q) }},
        case when s.{{ adapter.quote(q) }} is not null and _adb_h{{ loop.index }}.{{ value_col }} is null
             then {{ dbt_anonydb.quote_text(q) }} end as _adb_uncovered{{ loop.index }},
        cast(s.{{ adapter.quote(q) }} as {{ text }}) as _adb_value{{ loop.index }},
{%- else %}
        s.{{ adapter.quote(q) }} as {{ adapter.quote(q) }},
{%- endif %}
{%- endfor %}
{%- for c in ([sensitive] if sensitive else []) + keep %}
        s.{{ adapter.quote(c) }} as {{ adapter.quote(c) }},
{%- endfor %}
{%- if person is not none %}
        s.{{ adapter.quote(person) }} as _adb_person,
{%- endif %}
        1 as _adb_one
    from _adb_src as s
{%- for i, h, value_col, q in joins %}
    left join {{ h }} as _adb_h{{ i }} on cast(s.{{ adapter.quote(q) }} as {{ text }}) = _adb_h{{ i }}.{{ value_col }}
{%- endfor %}
), _adb_classes as (
    select {% if person is not none %}count(distinct _adb_person){% else %}count(*){% endif %} as _adb_n
           {%- if l is not none %}, count(distinct {{ adapter.quote(sensitive) }}) + max(case when {{ adapter.quote(sensitive) }} is null then 1 else 0 end) as _adb_d{% endif %}
    from _adb_rel
    {#- every published column but the sensitive one: a kept column is published as it is #}
    group by {% for q in quasi_identifiers + keep %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
), _adb_people as (
    select {% if person is not none %}sum(case when _adb_person is null then 1 else 0 end){% else %}0{% endif %} as _adb_nulls,
           {% if person is not none %}(select count(*) from (select _adb_person from _adb_rel where _adb_person is not null
            group by _adb_person having {% for q in quasi_identifiers %}count(distinct {{ adapter.quote(q) }}) > 1{{ " or " if not loop.last }}{% endfor %}) as _adb_p){% else %}0{% endif %} as _adb_varying
    {%- if person is not none %}
    from _adb_rel
    {%- endif %}
), _adb_verdict as (
    select
        {%- if k is not none %} sum(case when _adb_n < {{ k | int }} then 1 else 0 end){% else %} 0{% endif %} as _adb_small,
        {%- if l is not none %} sum(case when _adb_d < {{ l }} then 1 else 0 end){% else %} 0{% endif %} as _adb_narrow,
        min(_adb_n) as _adb_k
    from _adb_classes
), _adb_cover as (
    select {% if joins %}{% for i, h, value_col, q in joins %}max(case when _adb_uncovered{{ i }} is not null then _adb_uncovered{{ i }} || ' = ' || _adb_value{{ i }} end){{ " || ',' || " if not loop.last }}{% endfor %}{% else %}cast(null as {{ text }}){% endif %} as _adb_missing
    {%- if joins %}
    from _adb_rel
    {%- endif %}
), _adb_gate as (
    select case
        when p._adb_nulls > 0
            then {{ dbt_anonydb.fail("'anonydb: ' || cast(p._adb_nulls as " ~ text ~ ") || ' rows have no person (" ~ person ~ " is NULL)'") }}
        when p._adb_varying > 0
            then {{ dbt_anonydb.fail("'anonydb: ' || cast(p._adb_varying as " ~ text ~ ") || ' persons have records whose quasi-identifiers differ: each person needs one class'") }}
        when c._adb_missing is not null
            then {{ dbt_anonydb.fail("'anonydb: a hierarchy does not cover the value ' || c._adb_missing") }}
        when v._adb_small > 0
            then {{ dbt_anonydb.fail("'anonydb: the release is not " ~ k ~ "-anonymous: ' || cast(v._adb_small as " ~ text ~ ") || ' classes are smaller (the smallest has ' || cast(v._adb_k as " ~ text ~ ") || ' rows" ~ (" over the quasi-identifiers and the kept columns " ~ keep | join(", ") ~ "); raise the levels or keep fewer columns" if keep else "); raise the levels") ~ "'") }}
        when v._adb_narrow > 0
            then {{ dbt_anonydb.fail("'anonydb: the release is not distinct " ~ l ~ "-diverse: ' || cast(v._adb_narrow as " ~ text ~ ") || ' classes have fewer values of " ~ sensitive ~ "; raise the levels'") }}
        else 1 end as _adb_ok
    from _adb_verdict as v cross join _adb_cover as c cross join _adb_people as p
)
{%- set out = [] %}
{%- for c in quasi_identifiers + ([sensitive] if sensitive else []) + keep %}{% do out.append("r." ~ adapter.quote(c)) %}{% endfor %}
select {{ out | join(", ") }}
from _adb_rel as r cross join _adb_gate as g
where g._adb_ok = 1
order by {{ dbt_anonydb.random_order() }}
{% endmacro %}


{#- A text literal. -#}
{% macro quote_text(s) %}'{{ s | replace("'", "''") }}'{% endmacro %}


{#- Stop the query with `message` (a text expression): the warehouse's own error function. -#}
{% macro fail(message) %}{{ return(adapter.dispatch('fail', 'dbt_anonydb')(message)) }}{% endmacro %}
{% macro default__fail(message) %}cast({{ message }} as integer){% endmacro %}
{% macro duckdb__fail(message) %}error({{ message }}){% endmacro %}
{% macro spark__fail(message) %}raise_error({{ message }}){% endmacro %}
{#- PostgreSQL has no error function in plain SQL: the message is cast to an integer, which fails
    with it ("invalid input syntax for type integer: "anonydb: ...""). -#}
{% macro postgres__fail(message) %}cast({{ message }} as integer){% endmacro %}


{#- A fresh random row order (nothing about it can be recomputed). -#}
{% macro random_order() %}{{ return(adapter.dispatch('random_order', 'dbt_anonydb')()) }}{% endmacro %}
{% macro default__random_order() %}random(){% endmacro %}
{% macro spark__random_order() %}rand(){% endmacro %}
