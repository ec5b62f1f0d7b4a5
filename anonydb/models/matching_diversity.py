"""Matching l-diversity against mined negative association rules [Li thesis Def 3.4.1, §3.4.2;
spec-injector-tradeoff-foreground 2.3-2.4].

A tuple *cannot take* a sensitive value that a rule it satisfies excludes (its IVS). A value is
*valid* for a tuple when some assignment of the group's remaining values to its remaining tuples
respects every cannot-take constraint; a group is matching l-diverse when every tuple has at least
l distinct valid values. The plan (``sql/model_matching.sql.j2``) replaces the thesis's
O(|g|^4 p) repeated bipartite matchings (Fig 3.1) by reachability in a per-group graph on the
sensitive values (flow decomposition of the true assignment, which is always a perfect matching);
the test suite checks it against the literal algorithm by brute force.

One definition serves the release check, the audit of any release (vulnerable tuples: fewer than l
valid values), and the Injector's judgement of a candidate group.
"""

from __future__ import annotations

from typing import Any

from ..engines.base import Engine
from ..errors import InputError
from ..sqlgen import ident


def valid_counts(eng: Engine, members: str, keys: list[str]) -> str:
    """SQL: per (keys..., _adb_code, _adb_ivs) class of ``members`` its size ``_adb_n`` and the number
    of distinct valid values ``_adb_valid``."""
    return eng.render("model_matching.sql.j2", members=members, keys=keys).sql


def group_verdicts(eng: Engine, members: str, keys: list[str], l: Any) -> str:
    """SQL: per group (keys..., _adb_n, _adb_min_valid, _adb_ok = every tuple has >= l valid values,
    _adb_vulnerable = the tuples with fewer)."""
    lv = check_l(l)
    k = ", ".join(ident(x) for x in keys)
    return (f"SELECT {k}, sum(_adb_n) AS _adb_n, min(_adb_valid) AS _adb_min_valid, "
            f"min(_adb_valid) >= {lv!r} AS _adb_ok, "
            f"coalesce(sum(_adb_n) FILTER (WHERE _adb_valid < {lv!r}), 0) AS _adb_vulnerable "
            f"FROM ({valid_counts(eng, members, keys)}) AS v GROUP BY ALL")


def check_l(l: Any) -> float:
    if isinstance(l, bool) or not isinstance(l, (int, float)) or not l >= 1:
        raise InputError(f"l must be a number >= 1, got {l!r}")
    return float(l) if not float(l).is_integer() else int(l)


__all__ = ["check_l", "group_verdicts", "valid_counts"]
