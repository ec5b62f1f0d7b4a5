{#- t-closeness [Li, Li & Venkatasubramanian, ICDE 2007; Li thesis 2.3]: in every equivalence class
    E the Earth Mover's Distance between E's sensitive-value distribution P and the table's Q is at
    most t. distance='equal': EMD = 1/2 sum_i |p_i - q_i|; distance='ordered' (numeric or ordinal
    values, ranked): EMD = 1/(m-1) sum_i |sum_{j<=i} (p_j - q_j)|. Failing rows: the classes above t.
    Plain SQL (windows and joins), so the test runs on any warehouse dbt supports. -#}
{% test t_close(model, quasi_identifiers, sensitive, t, distance='equal') %}
{%- set keys = [] -%}
{%- for q in quasi_identifiers %}{% do keys.append(adapter.quote(q)) %}{% endfor -%}
{%- set s = adapter.quote(sensitive) -%}
with base as (
    select {% for k in keys %}{{ k }} as _q{{ loop.index }}, {% endfor %}{{ s }} as _s from {{ model }}
), total as (
    select count(*) as n from base
), q as (
    select _s, count(*) * 1.0 / (select n from total) as q,
           dense_rank() over (order by _s) as r
    from base group by _s
), m as (
    select count(*) as m from q
), classes as (
    select {% for k in keys %}_q{{ loop.index }}, {% endfor %}count(*) as size
    from base group by {% for k in keys %}_q{{ loop.index }}{{ ", " if not loop.last }}{% endfor %}
), cells as (
    select {% for k in keys %}_q{{ loop.index }}, {% endfor %}_s, count(*) as cnt
    from base group by {% for k in keys %}_q{{ loop.index }}, {% endfor %}_s
), grid as (
    select {% for k in keys %}c._q{{ loop.index }}, {% endfor %}q.r,
           coalesce(x.cnt, 0) * 1.0 / c.size - q.q as d
    from classes as c cross join q
    left join cells as x on {% for k in keys %}x._q{{ loop.index }} is not distinct from c._q{{ loop.index }} and {% endfor %}x._s is not distinct from q._s
), emd as (
{%- if distance == 'ordered' %}
    select {% for k in keys %}_q{{ loop.index }}, {% endfor %}sum(abs(cum)) / greatest((select m from m) - 1, 1) as emd
    from (
        select {% for k in keys %}_q{{ loop.index }}, {% endfor %}
               sum(d) over (partition by {% for k in keys %}_q{{ loop.index }}{{ ", " if not loop.last }}{% endfor %} order by r rows between unbounded preceding and current row) as cum
        from grid
    ) as w
    group by {% for k in keys %}_q{{ loop.index }}{{ ", " if not loop.last }}{% endfor %}
{%- elif distance == 'equal' %}
    select {% for k in keys %}_q{{ loop.index }}, {% endfor %}sum(abs(d)) / 2 as emd
    from grid group by {% for k in keys %}_q{{ loop.index }}{{ ", " if not loop.last }}{% endfor %}
{%- else %}
    {{ exceptions.raise_compiler_error("t_close: distance must be 'equal' or 'ordered', got '" ~ distance ~ "'") }}
{%- endif %}
)
select * from emd where emd > {{ t }} + 1e-12
{% endtest %}
