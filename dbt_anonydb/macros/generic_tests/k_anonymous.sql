{#- k-anonymity [Samarati & Sweeney; Li thesis 1.2.1]: every equivalence class (records sharing
    the quasi-identifier values; NULL is a value of its own) has at least k records.
    Failing rows: the classes below k. -#}
{% test k_anonymous(model, quasi_identifiers, k) %}
select {% for q in quasi_identifiers %}{{ adapter.quote(q) }}, {% endfor %}count(*) as class_size
from {{ model }}
group by {% for q in quasi_identifiers %}{{ adapter.quote(q) }}{{ ", " if not loop.last }}{% endfor %}
having count(*) < {{ k | int }}
{% endtest %}
