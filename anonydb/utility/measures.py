"""Utility measures of a released table (more arrive with the anonymizers).

* Discernibility metric [Bayardo & Agrawal 2005; Li thesis §1.2.3; spec-closeness-slicing 6.1]:
  DM = sum over groups E of |E|^2 (suppressed records, when any, cost |T| each).
* Average equivalence-class size [LeFevre et al. 2006]: C_AVG = (|T| / #groups) / k.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..engines import connect
from ..schema import split_list, validate_roles
from ..sources import open_source
from ..sqlgen import ident


def discernibility(source: str, qi: str | Iterable[str], *, engine: Any = None, suppressed: int = 0) -> int:
    """DM = sum_E |E|^2 + suppressed * |T|."""
    eng = connect(engine)
    rel = open_source(eng, source)
    cols = split_list(qi, "quasi-identifiers")
    validate_roles(eng, rel, cols, None)
    keys = ", ".join(ident(c) for c in cols)
    dm = eng.scalar(f"SELECT coalesce(sum(n * n), 0) FROM (SELECT count(*) AS n FROM {ident(rel)} GROUP BY {keys}) AS g")
    total = eng.scalar(f"SELECT count(*) FROM {ident(rel)}") + suppressed
    return int(dm) + suppressed * int(total)


def average_class_size(source: str, qi: str | Iterable[str], k: int, *, engine: Any = None) -> float:
    """C_AVG = (|T| / number of groups) / k."""
    eng = connect(engine)
    rel = open_source(eng, source)
    cols = split_list(qi, "quasi-identifiers")
    validate_roles(eng, rel, cols, None)
    keys = ", ".join(ident(c) for c in cols)
    n, g = eng.fetch_rows(f"SELECT sum(n), count(*) FROM (SELECT count(*) AS n FROM {ident(rel)} GROUP BY {keys}) AS x")[1][0]
    return (n / g) / k
