"""The privacy-utility trade-off measures [Li thesis Ch. 5; spec-injector-tradeoff-foreground 5].

P_loss [thesis §5.2.1]: the prior is Q, the table's sensitive distribution; the posterior of a tuple
is P(t), the distribution of its group (random-world view); P_loss(t) = JS(Q, P(t)) =
1/2 [KL(Q, M) + KL(P(t), M)] with M = (Q + P(t))/2 and natural logs, and P_loss = max_t P_loss(t)
(worst case). At most ln 2; 0 for the trivially anonymized table.
"""

from __future__ import annotations

from typing import Any

from .engine import Engine, connect
from .sqlgen import ident


def p_loss(engine: Engine | Any, table: str, group: str, sensitive: str) -> float:
    """P_loss of a release given as one row per tuple with its ``group`` and ``sensitive`` value (a
    bucketized release expanded from its ST, or a generalized table with its eq_class)."""
    eng = connect(engine)
    g, s = ident(group), ident(sensitive)
    return float(eng.scalar(
        f"WITH n AS (SELECT count(*) AS n FROM {ident(table)}), "
        f"q AS (SELECT {s} AS v, count(*) / any_value(n.n) AS q FROM {ident(table)}, n GROUP BY {s}), "
        f"gsz AS (SELECT {g} AS g, count(*) AS sz FROM {ident(table)} GROUP BY {g}), "
        f"c AS (SELECT {g} AS g, {s} AS v, count(*) AS cnt FROM {ident(table)} GROUP BY ALL), "
        f"pg AS (SELECT gsz.g, q.v, q.q, coalesce(c.cnt, 0) / gsz.sz AS p FROM gsz CROSS JOIN q "
        f"LEFT JOIN c ON c.g IS NOT DISTINCT FROM gsz.g AND c.v IS NOT DISTINCT FROM q.v), "
        f"js AS (SELECT g, 0.5 * sum(CASE WHEN q > 0 THEN q * ln(q / ((q + p) / 2)) ELSE 0 END) "
        f"+ 0.5 * sum(CASE WHEN p > 0 THEN p * ln(p / ((q + p) / 2)) ELSE 0 END) AS js FROM pg GROUP BY g) "
        f"SELECT max(js) FROM js") or 0.0)


__all__ = ["p_loss"]
