{#- t-closeness [Li, Li & Venkatasubramanian, ICDE 2007; Li thesis 2.3]: in every equivalence class
    E the Earth Mover's Distance between E's sensitive-value distribution P and the table's Q is at
    most t. distance='equal': EMD = 1/2 sum_i |p_i - q_i|; distance='ordered' (numeric or ordinal
    values, ranked): EMD = 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|. Failing rows: the classes above t.
    Plain SQL (windows and joins), so the test runs on any warehouse dbt supports (tested on DuckDB,
    PostgreSQL and Spark). Each class and each sensitive value is numbered with dense_rank (NULL is
    a value of its own there, as in GROUP BY), so every join is an equality of integers: hashable
    everywhere, where a join on "a IS NOT DISTINCT FROM b" is a nested loop on PostgreSQL. A NULL
    sensitive value ranks after every value (as in anonydb's ordered distance): "nulls last" says
    so, since Spark sorts NULL first by default. -#}
{% test t_close(model, quasi_identifiers, sensitive, t, distance='equal') %}
{%- set keys = [] -%}
{%- for q in quasi_identifiers %}{% do keys.append(adapter.quote(q)) %}{% endfor -%}
{%- set s = adapter.quote(sensitive) -%}
{%- if distance not in ('equal', 'ordered') -%}
    {{ exceptions.raise_compiler_error("t_close: distance must be 'equal' or 'ordered', got '" ~ distance ~ "'") }}
{%- endif %}
with base as (
    select {% for k in keys %}{{ k }} as _q{{ loop.index }}, {% endfor %}
           dense_rank() over (order by {{ keys | join(", ") }}) as _c,
           dense_rank() over (order by {{ s }} nulls last) as _r
    from {{ model }}
), total as (
    select count(*) as n from base
), q as (
    select _r, count(*) * 1.0 / (select n from total) as q from base group by _r
), m as (
    select count(*) as m from q
), classes as (
    select _c, {% for k in keys %}_q{{ loop.index }}, {% endfor %}count(*) as size
    from base group by _c{% for k in keys %}, _q{{ loop.index }}{% endfor %}
), cells as (
    select _c, _r, count(*) as cnt from base group by _c, _r
), grid as (
    select c._c, q._r, coalesce(x.cnt, 0) * 1.0 / c.size - q.q as d
    from classes as c cross join q
    left join cells as x on x._c = c._c and x._r = q._r
), emd as (
{%- if distance == 'ordered' %}
    select _c, sum(abs(cum)) / greatest((select m from m) - 1, 1) as emd
    from (
        select _c, sum(d) over (partition by _c order by _r rows between unbounded preceding and current row) as cum
        from grid
    ) as w
    group by _c
{%- else %}
    select _c, sum(abs(d)) / 2 as emd from grid group by _c
{%- endif %}
)
select {% for k in keys %}c._q{{ loop.index }} as {{ k }}, {% endfor %}e.emd
from emd as e join classes as c on c._c = e._c
where e.emd > {{ t }} + 1e-12
{% endtest %}
