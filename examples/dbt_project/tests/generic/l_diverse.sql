{#- Distinct l-diversity [Machanavajjhala et al. 2006; Li thesis 1.2.2]: every equivalence class
    holds at least l distinct sensitive values (NULL counts as a value). Failing rows: the classes
    with fewer. -#}
{% test l_diverse(model, quasi_identifiers, sensitive, l) %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(*) as class_size,
       count(distinct coalesce(cast({{ adapter.quote(sensitive) }} as varchar), '<null>')) as distinct_values
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(distinct coalesce(cast({{ adapter.quote(sensitive) }} as varchar), '<null>')) < {{ l }}
{% endtest %}
