"""The prior belief of a distribution-based adversary: kernel regression over the data [Li thesis
§3.5.2-3.5.3, Eqs. 3.1-3.2; spec-injector-tradeoff-foreground 3.1-3.2].

Adv(B) estimates the sensitive distribution of a QI tuple q by Nadaraya-Watson with the
Epanechnikov kernel, one bandwidth B_i per QI:

    P_pri(B, q)[s] = sum_j [t_j[S] = s] prod_i K_i(d_i) / sum_j prod_i K_i(d_i),
    K_i(x) = 3/(4 B_i) (1 - (x/B_i)^2) for |x/B_i| < 1, else 0,

over the semantic distances d_i(q_i, t_j[A_i]) in [0, 1]: |a - b| / R_i for numeric and date QIs
(R_i the attribute's range), h(lca(a, b)) / H_i for categorical QIs with a hierarchy of height H_i,
0/1 for categorical QIs without one. A smaller B_i is an adversary who knows more about how A_i
relates to S. The whole estimate is one DuckDB statement (``sql/kernel_prior.sql.j2``): a band join
of the distinct QI tuples with the (QI tuple, value) cells, pruned to pairs within every bandwidth;
categorical attributes whose bandwidth is no wider than their smallest step join by equality.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..engines.base import Engine, Scratch
from ..engines import connect
from ..errors import InputError
from ..hierarchy import Hierarchy
from ..schema import is_numeric_type, split_list
from ..sources import open_source
from ..sqlgen import ident


@dataclass
class KernelPrior:
    """A materialized prior: ``table`` (_adb_qid, _adb_sa, _adb_p) over the distinct QI tuples
    ``qids`` (QI columns..., _adb_qid)."""

    table: str
    qids: str
    qi: list[str]
    sensitive: str
    bandwidth: dict[str, float]
    modes: dict[str, str]
    scratch: Any = None  # the Scratch holding table/qids when kernel_prior made its own

    def close(self) -> None:
        """Drop the intermediate tables now (only those this prior created itself)."""
        if self.scratch is not None:
            self.scratch.drop_all()

    def rows(self, engine: Engine | Any) -> list[tuple]:
        """(QI values..., sensitive value, prior) ordered by QI tuple and value, for inspection."""
        eng = connect(engine)
        cols = ", ".join(f"q.{ident(c)}" for c in self.qi)
        return eng.fetch_rows(f"SELECT {cols}, p._adb_sa, p._adb_p FROM {ident(self.table)} AS p "
                              f"JOIN {ident(self.qids)} AS q USING (_adb_qid) ORDER BY ALL")[1]


def bandwidths(b: Any, qi: list[str]) -> dict[str, float]:
    """B as one float per QI: a number (B = (b, ..., b)), a sequence in QI order, or a mapping."""
    if isinstance(b, Mapping):
        missing = [q for q in qi if q not in b]
        extra = [k for k in b if k not in qi]
        if missing or extra:
            raise InputError(f"bandwidth: give one value per quasi-identifier; missing {missing}, unknown {extra}")
        vals = {q: b[q] for q in qi}
    elif isinstance(b, (list, tuple)):
        if len(b) != len(qi):
            raise InputError(f"bandwidth: {len(b)} values given for {len(qi)} quasi-identifiers {qi}")
        vals = dict(zip(qi, b))
    else:
        vals = {q: b for q in qi}
    for q, v in vals.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise InputError(f"bandwidth for {q!r} must be a positive number, got {v!r}")
    return {q: float(v) for q, v in vals.items()}


def distinct_qids(eng: Engine, s: Any, relation: str, qi: list[str]) -> str:
    """(QI columns..., _adb_qid): the distinct QI tuples, numbered in a stable order."""
    cols = ", ".join(ident(c) for c in qi)
    return s.table(f"SELECT {cols}, CAST(row_number() OVER (ORDER BY {cols}) AS BIGINT) AS _adb_qid "
                   f"FROM (SELECT DISTINCT {cols} FROM {ident(relation)}) AS d")


def _pairs(eng: Engine, s: Any, relation: str, column: str, hierarchy: Hierarchy | None, b: float) -> tuple[str, str]:
    """How attribute ``column`` joins under bandwidth ``b``: ('eq', '') or ('pairs', table of
    (_adb_a, _adb_b, _adb_w) with w = 1 - (d/b)^2 for the value pairs at distance d < b)."""
    if hierarchy is None:
        if b <= 1:
            return "eq", ""
        w = 1 - (1 / b) ** 2
        return "pairs", s.table(
            f"WITH v AS (SELECT DISTINCT CAST({ident(column)} AS VARCHAR) AS x FROM {ident(relation)}) "
            f"SELECT a.x AS _adb_a, c.x AS _adb_b, CASE WHEN a.x = c.x THEN 1.0 ELSE {w!r} END AS _adb_w "
            f"FROM v AS a CROSS JOIN v AS c")
    height = hierarchy.height
    if height == 0 or b * height <= 1:
        return "eq", ""
    hierarchy.validate(eng, relation, column)
    raw = s.name()
    hierarchy.materialize(eng, raw, relation=relation, column=column)
    # the LCA of a and b is the lowest level h at which they share a node; d = h / H
    return "pairs", s.table(
        f"WITH v AS (SELECT DISTINCT CAST({ident(column)} AS VARCHAR) AS x FROM {ident(relation)}), "
        f"l AS (SELECT leaf, h, node FROM {ident(raw)} WHERE leaf IN (SELECT x FROM v) AND h < {b * height!r}) "
        f"SELECT a.leaf AS _adb_a, c.leaf AS _adb_b, "
        f"1 - (min(a.h) / {float(height)!r} / {b!r}) * (min(a.h) / {float(height)!r} / {b!r}) AS _adb_w "
        f"FROM l AS a JOIN l AS c ON a.h = c.h AND a.node = c.node GROUP BY a.leaf, c.leaf")


def kernel_prior(source: str, qi: str | Iterable[str], sensitive: str, bandwidth: Any = 0.3, *,
                 engine: Engine | Any = None, hierarchies: Mapping[str, Hierarchy] | None = None,
                 kinds: Mapping[str, str] | None = None, qids: str | None = None, scratch: Any = None,
                 out: str | None = None, replace: bool = False) -> KernelPrior:
    """Estimate Adv(B)'s prior for every distinct QI tuple of ``source`` (spec 3.2).

    ``bandwidth``: B, one number for every QI or one per QI (sequence or mapping).
    ``hierarchies`` give categorical QIs their semantic distance; ``kinds`` overrides a column's
    kind (numeric/date are measured by range, anything else is categorical). ``qids``: an existing
    numbering of the distinct QI tuples (QI columns, _adb_qid). Intermediate tables live in
    ``scratch`` (the caller's) or in a scratch of this call that is kept as long as the result is
    needed (temporary tables, gone with the connection; ``close()`` drops them now). Pass ``out``
    to store the prior as a table (QI columns..., sensitive, prior)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if not qi_cols:
        raise InputError("kernel prior: give at least one quasi-identifier")
    hierarchies = dict(hierarchies or {})
    kinds = dict(kinds or {})
    own = scratch is None
    s = scratch if scratch is not None else Scratch(eng, "prior")
    try:
        relation = open_source(eng, source, scratch=s)
        types = dict(eng.columns(relation))
        for c in qi_cols + [sensitive]:
            if c not in types:
                raise InputError(f"column {c!r} not found in {source}; its columns are: {', '.join(types)}")
        if sensitive in qi_cols:
            raise InputError(f"{sensitive!r} is both a quasi-identifier and the sensitive attribute")
        nulls = eng.fetch_rows("SELECT " + ", ".join(f"count(*) FILTER (WHERE {ident(c)} IS NULL)" for c in qi_cols)
                               + f" FROM {ident(relation)}")[1][0]
        for c, n in zip(qi_cols, nulls):
            if n:
                raise InputError(f"kernel prior: quasi-identifier {c!r} has {n} NULL value(s); the semantic "
                                 f"distance to a missing value is undefined (drop or impute them first)")
        if not eng.scalar(f"SELECT count(*) FROM {ident(relation)}"):
            raise InputError(f"{source} is empty: there is nothing to estimate")
        b = bandwidths(bandwidth, qi_cols)
        attrs, modes = [], {}
        for c in qi_cols:
            kind = kinds.get(c) or ("date" if types[c].upper().startswith(("DATE", "TIMESTAMP")) else
                                    "numeric" if is_numeric_type(types[c]) else "categorical")
            if kind in ("numeric", "date") and c not in hierarchies:
                x = f"epoch({ident(c)})" if kind == "date" else ident(c)
                lo, hi = eng.fetch_rows(f"SELECT min({x}), max({x}) FROM {ident(relation)}")[1][0]
                r = float(hi) - float(lo)
                if r == 0:
                    attrs.append({"column": c, "mode": "eq", "epoch": False})
                    modes[c] = "eq"
                    continue
                qv = f"epoch(q.{ident(c)})" if kind == "date" else f"q.{ident(c)}"
                attrs.append({"column": c, "mode": "range", "width": repr(b[c] * r), "epoch": kind == "date", "qv": qv})
                modes[c] = "range"
            else:
                mode, pairs = _pairs(eng, s, relation, c, hierarchies.get(c), b[c])
                attrs.append({"column": c, "mode": mode, "pairs": pairs, "epoch": False})
                modes[c] = mode
        if qids is None:
            qids = distinct_qids(eng, s, relation, qi_cols)
        table = s.table(eng.render("kernel_prior.sql.j2", attrs=attrs, source=relation, qids=qids,
                                   sensitive=sensitive))
        prior = KernelPrior(table=table, qids=qids, qi=qi_cols, sensitive=sensitive, bandwidth=b, modes=modes,
                             scratch=s if own else None)
        if out is not None:
            cols = ", ".join(f"q.{ident(c)}" for c in qi_cols)
            eng.create_table_as(out, f"SELECT {cols}, p._adb_sa AS {ident(sensitive)}, p._adb_p AS prior "
                                     f"FROM {ident(table)} AS p JOIN {ident(qids)} AS q USING (_adb_qid)",
                                replace=replace)
        return prior
    except BaseException:
        if own:
            s.drop_all()
        raise


__all__ = ["KernelPrior", "bandwidths", "distinct_qids", "kernel_prior"]
