"""The privacy-utility trade-off measures [Li thesis Ch. 5; spec-injector-tradeoff-foreground 5].

P_loss [thesis §5.2.1]: the prior is Q, the table's sensitive distribution; the posterior of a tuple
is P(t), the distribution of its group (random-world view); P_loss(t) = JS(Q, P(t)) =
1/2 [KL(Q, M) + KL(P(t), M)] with M = (Q + P(t))/2 and natural logs, and P_loss = max_t P_loss(t)
(worst case). At most ln 2; 0 for the trivially anonymized table.

U_loss [thesis §5.2.2]: the large populations Y are the generalized QI predicates (one hierarchy
node per attribute at most, non-root, at least one) with support >= minSup in the original data;
P_y is y's true sensitive distribution, P̄_y its estimate from the release under the uniform
assumption (every value a generalized value stands for equally likely; every value of a group
equally likely for each of its tuples):

* bucketized (exact QIs): P̄_y = (1/|y|) sum_{t |= y} P_{g(t)};
* generalized: P̄_y ∝ sum_g |g| frac(g, y) P_g, frac(g, y) = prod_i |cover_i(g) ∩ leaves(y_i)| / |cover_i(g)|,

and U_loss = (1/|Y|) sum_y JS(P_y, P̄_y) (aggregate). The populations are grouping sets over the
QIs' level columns (the machinery of the rule miner), one batch of level vectors per statement.

The efficient frontier [thesis §5.1]: a release dominates another when it is no worse in both
losses and better in one; the frontier is the non-dominated set.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..engines.base import Engine
from ..engines import connect
from ..errors import InputError
from ..hierarchy import Hierarchy
from ..attacks.knowledge import widen as widen_quoted
from ..attacks.knowledge import level_maps
from ..schema import split_list
from ..sources import open_source
from ..sqlgen import ident

BATCH = 64  # level vectors per grouping-sets statement


def js(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen-Shannon divergence with natural logs: 1/2 [KL(p, m) + KL(q, m)], m = (p + q)/2."""
    if len(p) != len(q):
        raise InputError(f"js: distributions of different lengths ({len(p)} and {len(q)})")
    out = 0.0
    for a, b in zip(p, q):
        m = (a + b) / 2
        if a > 0:
            out += a * math.log(a / m) / 2
        if b > 0:
            out += b * math.log(b / m) / 2
    return out


def _js_sql(p: str, q: str) -> str:
    """SQL of the per-component JS terms (sum them): p, q are column expressions."""
    return (f"(CASE WHEN {p} > 0 THEN {p} * ln(2 * {p} / ({p} + {q})) ELSE 0 END + "
            f"CASE WHEN {q} > 0 THEN {q} * ln(2 * {q} / ({p} + {q})) ELSE 0 END) / 2")


def p_loss_of_counts(eng: Engine, counts: str, group: str = "_adb_g") -> float:
    """P_loss from per-group value counts ``counts`` (group, _adb_sa, _adb_cnt): max over groups of
    JS(Q, P_g), Q the distribution of all the counts together."""
    g = ident(group)
    return float(eng.scalar(
        f"WITH c AS (SELECT {g} AS g, _adb_sa AS v, _adb_cnt AS cnt FROM {ident(counts)}), "
        f"n AS (SELECT sum(cnt) AS n FROM c), "
        f"q AS (SELECT v, sum(cnt) / any_value(n.n) AS q FROM c, n GROUP BY v), "
        f"gsz AS (SELECT g, sum(cnt) AS sz FROM c GROUP BY g), "
        f"pg AS (SELECT gsz.g, q.v, q.q, coalesce(c.cnt, 0) / gsz.sz AS p FROM gsz CROSS JOIN q "
        f"LEFT JOIN c ON c.g IS NOT DISTINCT FROM gsz.g AND c.v IS NOT DISTINCT FROM q.v), "
        f"js AS (SELECT g, sum({_js_sql('q', 'p')}) AS js FROM pg GROUP BY g) "
        f"SELECT max(js) FROM js") or 0.0)


def p_loss(engine: Engine | Any, table: str, group: str, sensitive: str) -> float:
    """P_loss of a release given as one row per tuple with its ``group`` and ``sensitive`` value (a
    bucketized release expanded from its ST, or a generalized table with its eq_class)."""
    eng = connect(engine)
    with eng.scratch("p_loss") as s:
        counts = s.table(f"SELECT {ident(group)} AS _adb_g, {ident(sensitive)} AS _adb_sa, count(*) AS _adb_cnt "
                         f"FROM {ident(table)} GROUP BY ALL")
        return p_loss_of_counts(eng, counts)


# -- U_loss -------------------------------------------------------------------------------------
@dataclass
class ULoss:
    value: float
    populations: int
    min_support: int  # records a population needs (ceil(minSup * n))
    worst: float = 0.0  # the largest JS(P_y, P̄_y)
    seconds: float = 0.0


def _widen(base: str, qi: list[str], maps: list[str], heights: list[int], extra: str) -> str:
    return widen_quoted(base, [ident(c) for c in qi], maps, heights, extra)


def _cells(eng: Engine, s: Any, wide: str, cols: list[str], vectors: list[tuple], min_count: float | None,
           owner: list[tuple[int, int]]) -> str:
    """(_adb_gid, level columns..., _adb_sa, _adb_w): the weighted value counts of every cell of
    every level vector, kept when the cell's total weight reaches ``min_count`` (None: all)."""
    out = None
    for b in range(0, len(vectors), BATCH):
        sets = [[f"a{i}_{lv}" for i, lv in enumerate(v) if lv is not None] for v in vectors[b:b + BATCH]]
        sql = eng.render("tradeoff_cells.sql.j2", cols=cols, used=sorted({c for gs in sets for c in gs}), wide=wide,
                         sets=sets, min_count=min_count)
        if out is None:
            out = s.table(sql)
        else:
            eng.execute(f"INSERT INTO {ident(out)} {sql.sql}")
    return out


@dataclass
class Populations:
    """The large populations of a source (tables in the caller's scratch): ``truth`` (_adb_gid,
    level columns..., _adb_sa, _adb_w) their value counts, ``cells`` the distinct populations."""

    source: str
    qi: list[str]
    sensitive: str
    rows: int
    min_count: int
    maps: list[str]
    heights: list[int]
    cols: list[str]
    owner: list[tuple[int, int]]
    truth: str
    cells: str
    count: int
    vectors: list[tuple]


def populations(source: str, qi: str | Iterable[str], sensitive: str, *, scratch: Any, engine: Engine | Any = None,
                hierarchies: Mapping[str, Hierarchy] | None = None, min_sup: float = 0.05) -> Populations:
    """Find the large populations of ``source`` once (reused by every :func:`u_loss` of a sweep)."""
    eng = connect(engine)
    s = scratch
    qi_cols = split_list(qi, "quasi-identifiers")
    hierarchies = {k: v for k, v in (hierarchies or {}).items() if k in qi_cols}
    if isinstance(min_sup, bool) or not isinstance(min_sup, (int, float)) or not 0 < min_sup <= 1:
        raise InputError(f"min_sup must lie in (0, 1], got {min_sup!r}")
    src = open_source(eng, source, scratch=s)
    have = dict(eng.columns(src))
    for c in qi_cols + [sensitive]:
        if c not in have:
            raise InputError(f"column {c!r} not found in {source}; its columns are: {', '.join(have)}")
    n = int(eng.scalar(f"SELECT count(*) FROM {ident(src)}"))
    if not n:
        raise InputError(f"{source} is empty")
    maps, heights = level_maps(eng, s, src, qi_cols, hierarchies)
    cols = [f"a{i}_{lv}" for i, hgt in enumerate(heights) for lv in range(hgt)]
    owner = [(i, lv) for i, hgt in enumerate(heights) for lv in range(hgt)]
    vectors = [v for v in itertools.product(*[[None] + list(range(h)) for h in heights])
               if any(x is not None for x in v)]
    min_count = math.ceil(min_sup * n - 1e-9)
    prof = s.table(f"SELECT {', '.join(ident(c) for c in qi_cols)}, {ident(sensitive)} AS _adb_sa, "
                   f"CAST(count(*) AS DOUBLE) AS _adb_w FROM {ident(src)} GROUP BY ALL")
    wide = s.table(_widen(prof, qi_cols, maps, heights, "p._adb_sa, p._adb_w"))
    truth = _cells(eng, s, wide, cols, vectors, min_count, owner)
    ys = s.table(f"SELECT DISTINCT _adb_gid, {', '.join(ident(c) for c in cols)} FROM {ident(truth)}")
    count = int(eng.scalar(f"SELECT count(*) FROM {ident(ys)}"))
    gids = [int(r[0]) for r in eng.fetch_rows(f"SELECT DISTINCT _adb_gid FROM {ident(ys)} ORDER BY 1")[1]]
    return Populations(src, qi_cols, sensitive, n, min_count, maps, heights, cols, owner, truth, ys, count,
                       [_vector_of(g, owner, heights) for g in gids])


def u_loss(source: str, qi: str | Iterable[str], sensitive: str, *, engine: Engine | Any = None,
           hierarchies: Mapping[str, Hierarchy] | None = None, min_sup: float = 0.05,
           table: str | None = None, group: str | None = None, qit: str | None = None, st: str | None = None,
           count: str = "count", pops: Populations | None = None, bucketized: bool = False) -> ULoss:
    """U_loss of a release of ``source`` [thesis §5.2.2]. The release is a bucketized pair
    ``qit``/``st`` (``group`` default group_id; st holds ``group``, ``sensitive``, ``count``), or a
    ``table`` with one row per record: a generalized release (QI labels: values, hierarchy nodes,
    value sets '{a, b}', '*'; numeric QIs also as <qi>_lo / <qi>_hi) with its class column ``group``
    (default eq_class), or a bucketized table with exact QIs (``group`` e.g. bucket_id).
    ``pops``: populations already found (:func:`populations`) for the same source and settings.
    ``bucketized``: ``table``'s QI values are exact (a sliced or bucketized table): its groups'
    tuples and value counts are read as a QIT/ST pair."""
    t0 = time.perf_counter()
    eng = connect(engine)
    if (table is None) == (qit is None) or (qit is not None and st is None):
        raise InputError("give the release as table (one row per record) or as qit and st")
    with eng.scratch("u_loss") as s:
        if bucketized and table is not None:
            if group is None:
                raise InputError("a bucketized table needs its group column (group=)")
            qcols = split_list(qi, "quasi-identifiers")
            qit = s.table(f"SELECT {ident(group)}, {', '.join(ident(c) for c in qcols)} FROM {ident(table)}")
            st = s.table(f"SELECT {ident(group)}, {ident(sensitive)}, count(*) AS {ident(count)} FROM {ident(table)} "
                         f"GROUP BY ALL")
            table = None
        p = pops or populations(source, qi, sensitive, scratch=s, engine=eng, hierarchies=hierarchies, min_sup=min_sup)
        if not p.count:
            return ULoss(0.0, 0, p.min_count, 0.0, time.perf_counter() - t0)
        cols = p.cols
        est = _estimate(eng, s, p.source, p.qi, p.sensitive, p.maps, p.heights, cols, p.owner, p.vectors, table,
                        group, qit, st, count, p.cells)
        ck = ", ".join(ident(c) for c in cols)
        on_y = " AND ".join(f"y.{ident(c)} IS NOT DISTINCT FROM e.{ident(c)}" for c in cols)
        on = " AND ".join(f"e.{ident(c)} IS NOT DISTINCT FROM t.{ident(c)}" for c in cols)
        keys = ", ".join(f"coalesce(t.{ident(c)}, e.{ident(c)}) AS {ident(c)}" for c in cols)
        value, worst = eng.fetch_rows(
            f"WITH t AS (SELECT *, _adb_w / sum(_adb_w) OVER (PARTITION BY _adb_gid, {ck}) AS p FROM {ident(p.truth)}), "
            f"e0 AS (SELECT e.* FROM {ident(est)} AS e SEMI JOIN {ident(p.cells)} AS y ON y._adb_gid = e._adb_gid "
            f"AND {on_y}), "
            f"e AS (SELECT *, _adb_w / nullif(sum(_adb_w) OVER (PARTITION BY _adb_gid, {ck}), 0) AS q FROM e0), "
            f"j AS (SELECT coalesce(t._adb_gid, e._adb_gid) AS _adb_gid, {keys}, coalesce(t.p, 0) AS p, "
            f"coalesce(e.q, 0) AS q FROM t FULL JOIN e ON e._adb_gid = t._adb_gid AND {on} "
            f"AND e._adb_sa IS NOT DISTINCT FROM t._adb_sa), "
            f"y AS (SELECT _adb_gid, {ck}, sum({_js_sql('p', 'q')}) AS js FROM j GROUP BY ALL) "
            f"SELECT avg(js), max(js) FROM y")[1][0]
    return ULoss(float(value or 0.0), p.count, p.min_count, float(worst or 0.0), time.perf_counter() - t0)


def _vector_of(gid: int, owner: list[tuple[int, int]], heights: list[int]) -> tuple:
    v: list[int | None] = [None] * len(heights)
    ncol = len(owner)
    for j, (i, lv) in enumerate(owner):
        if ((gid >> (ncol - 1 - j)) & 1) == 0:
            v[i] = lv
    return tuple(v)


def _estimate(eng, s, src, qi, sensitive, maps, heights, cols, owner, vectors, table, group, qit, st, count,
              populations) -> str:
    """The release's weighted value counts on the cells of ``vectors`` under the uniform assumption."""
    sa = ident(sensitive)
    if qit is not None:  # bucketized: each tuple carries its group's distribution
        g = ident(group or "group_id")
        rows = s.table(f"WITH sz AS (SELECT {g} AS g, sum({ident(count)}) AS n FROM {ident(st)} GROUP BY 1) "
                       f"SELECT {', '.join('q.' + ident(c) for c in qi)}, t.{sa} AS _adb_sa, "
                       f"sum(CAST(t.{ident(count)} AS DOUBLE) / sz.n) AS _adb_w FROM {ident(qit)} AS q "
                       f"JOIN {ident(st)} AS t ON t.{g} IS NOT DISTINCT FROM q.{g} "
                       f"JOIN sz ON sz.g IS NOT DISTINCT FROM q.{g} GROUP BY ALL")
        wide = s.table(_widen(rows, qi, maps, heights, "p._adb_sa, p._adb_w"))
        return _cells(eng, s, wide, cols, vectors, None, owner)
    have = dict(eng.columns(table))
    g = ident(group or "eq_class")
    for c in qi + [sensitive, group or "eq_class"]:
        if c not in have:
            raise InputError(f"the release {table!r} has no column {c!r}")
    # units: the release's classes, their sizes and distributions
    dist = s.table(f"SELECT {g} AS _adb_u, {sa} AS _adb_sa, CAST(count(*) AS DOUBLE) AS _adb_w FROM {ident(table)} "
                   f"GROUP BY ALL")
    labels = ", ".join(f"any_value({ident(c)}) AS {ident(c)}" for c in qi)
    ranges = ", ".join(f"min({ident(c + '_lo')}) AS {ident(c + '_lo')}, max({ident(c + '_hi')}) AS {ident(c + '_hi')}"
                       for c in qi if c + "_lo" in have and c + "_hi" in have)
    units = s.table(f"SELECT {g} AS _adb_u, {labels}{', ' + ranges if ranges else ''} FROM {ident(table)} GROUP BY {g}")
    shares = []
    for i, c in enumerate(qi):
        leaves = f"(SELECT level_0 AS leaf FROM {ident(maps[i])})"
        if c + "_lo" in have and c + "_hi" in have:
            cover = (f"SELECT u._adb_u, l.leaf FROM {ident(units)} AS u JOIN (SELECT DISTINCT {ident(c)} AS v, "
                     f"CAST({ident(c)} AS VARCHAR) AS leaf FROM {ident(src)}) AS l "
                     f"ON l.v BETWEEN u.{ident(c + '_lo')} AND u.{ident(c + '_hi')}")
        else:
            lab = f"CAST(u.{ident(c)} AS VARCHAR)"
            nodes = " UNION ALL ".join(
                f"SELECT level_0 AS leaf, level_{lv} AS node, {lv} AS h FROM {ident(maps[i])}" for lv in range(heights[i]))
            cover = (
                f"WITH n AS ({nodes}), u AS (SELECT _adb_u, {ident(c)} FROM {ident(units)}), "
                f"byn AS (SELECT _adb_u, leaf, h FROM (SELECT u._adb_u, n.leaf, n.h, min(n.h) OVER (PARTITION BY "
                f"u._adb_u) AS _adb_hmin FROM u JOIN n ON n.node = {lab}) AS w WHERE h = _adb_hmin) "
                f"SELECT _adb_u, leaf FROM byn "
                f"UNION ALL SELECT u._adb_u, x.leaf FROM u, unnest(string_split(trim({lab}, '{{}}'), ', ')) AS x(leaf) "
                f"WHERE left({lab}, 1) = '{{' AND right({lab}, 1) = '}}' "
                f"UNION ALL SELECT u._adb_u, l.leaf FROM u, {leaves} AS l WHERE {lab} = '*' OR {lab} IS NULL")
        cov = s.table(f"SELECT DISTINCT * FROM ({cover}) AS c")
        missing = eng.scalar(f"SELECT count(*) FROM {ident(units)} WHERE _adb_u NOT IN (SELECT _adb_u FROM {ident(cov)})")
        if missing:
            bad = eng.scalar(f"SELECT any_value(CAST({ident(c)} AS VARCHAR)) FROM {ident(units)} "
                             f"WHERE _adb_u NOT IN (SELECT _adb_u FROM {ident(cov)})")
            raise InputError(f"U_loss: the released value {bad!r} of {c!r} is neither a source value, a node of its "
                             f"hierarchy, a value set {{a, b}}, '*' nor a range with {c}_lo/{c}_hi")
        # share of each unit's cover under each node at each level: (u, lv, node, share)
        shares.append(s.table(" UNION ALL ".join(
            f"SELECT c._adb_u, {lv} AS lv, m.{ident(f'level_{lv}')} AS node, count(*) / any_value(z.k) AS share "
            f"FROM {ident(cov)} AS c JOIN {ident(maps[i])} AS m ON m.level_0 = c.leaf "
            f"JOIN (SELECT _adb_u, CAST(count(*) AS DOUBLE) AS k FROM {ident(cov)} GROUP BY 1) AS z ON z._adb_u = c._adb_u "
            f"GROUP BY c._adb_u, m.{ident(f'level_{lv}')}" for lv in range(heights[i]))))
    # every population y at once: per attribute the unit's share under y's node at y's level (an
    # absent attribute: share 1), multiplied over the attributes; frac(g, y) P_g |g| summed per y
    ncol = len(cols)
    ys = populations
    lv_of, node_of = [], []
    for i, hgt in enumerate(heights):
        bits = [(lv, ncol - 1 - owner.index((i, lv))) for lv in range(hgt)]
        lv_of.append("CASE " + " ".join(f"WHEN ((_adb_gid >> {b}) & 1) = 0 THEN {lv}" for lv, b in bits) + " ELSE -1 END")
        node_of.append("CASE " + " ".join(f"WHEN ((_adb_gid >> {b}) & 1) = 0 THEN {ident(f'a{i}_{lv}')}" for lv, b in bits)
                       + " END")
    yl = s.table(f"SELECT *, {', '.join(f'{lv} AS _adb_l{i}, {nd} AS _adb_n{i}' for i, (lv, nd) in enumerate(zip(lv_of, node_of)))} "
                 f"FROM {ident(ys)}")
    full = [s.table(f"SELECT _adb_u, lv, node, share FROM {ident(sh)} UNION ALL "
                    f"SELECT _adb_u, -1, NULL, 1.0 FROM {ident(units)}") for sh in shares]
    joins = " ".join(
        f"JOIN {ident(f)} AS x{i} ON x{i}.lv = y._adb_l{i} AND x{i}.node IS NOT DISTINCT FROM y._adb_n{i}"
        + (f" AND x{i}._adb_u = x0._adb_u" if i else "") for i, f in enumerate(full))
    prod = " * ".join(f"x{i}.share" for i in range(len(full)))
    return s.table(f"SELECT y._adb_gid, {', '.join(f'y.{ident(c)}' for c in cols)}, d._adb_sa, "
                   f"sum(d._adb_w * {prod}) AS _adb_w FROM {ident(yl)} AS y {joins} "
                   f"JOIN {ident(dist)} AS d ON d._adb_u = x0._adb_u GROUP BY ALL")


# -- the frontier ---------------------------------------------------------------------------------
@dataclass
class TradeoffPoint:
    label: str
    method: str
    params: dict[str, Any]
    p_loss: float
    u_loss: float
    seconds: float = 0.0
    populations: int = 0
    note: str = ""
    efficient: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "method": self.method, "params": self.params, "p_loss": self.p_loss,
                "u_loss": self.u_loss, "seconds": self.seconds, "efficient": self.efficient, "note": self.note}


def frontier(points: Sequence[TradeoffPoint]) -> list[TradeoffPoint]:
    """The non-dominated points (no other point is <= in both losses and < in one), by P_loss;
    marks them ``efficient``."""
    out = []
    for p in points:
        p.efficient = not any(q is not p and q.p_loss <= p.p_loss and q.u_loss <= p.u_loss
                              and (q.p_loss < p.p_loss or q.u_loss < p.u_loss) for q in points)
        if p.efficient:
            out.append(p)
    return sorted(out, key=lambda p: (p.p_loss, p.u_loss))


@dataclass
class Sweep:
    points: list[TradeoffPoint] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def frontier(self) -> list[TradeoffPoint]:
        return frontier(self.points)

    def format(self) -> str:
        lines = [f"{len(self.points)} releases in {self.seconds:.1f} s (* = on the efficient frontier)",
                 f"{'':2}{'release':32} {'P_loss':>8} {'U_loss':>8} {'s':>6}"]
        frontier(self.points)
        for p in sorted(self.points, key=lambda p: (p.method, p.p_loss)):
            lines.append(f"{'*' if p.efficient else ' '} {p.label:32} {p.p_loss:8.4f} {p.u_loss:8.4f} {p.seconds:6.2f}"
                         + (f"  ({p.note})" if p.note else ""))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        frontier(self.points)
        return {"seconds": self.seconds, "points": [p.to_dict() for p in self.points]}


def sweep(source: str, qi: str | Iterable[str], sensitive: str, settings: Sequence[tuple[str, dict[str, Any]]], *,
          engine: Engine | Any = None, hierarchies: Mapping[str, Hierarchy] | None = None, min_sup: float = 0.05,
          progress: Any = None) -> Sweep:
    """Anonymize ``source`` once per (method, parameters) setting, measure P_loss and U_loss of
    each release, and mark the efficient frontier. Infeasible settings are kept as notes.
    ``hierarchies`` define the populations (U_loss) and are passed to the anonymizers (Anatomy
    takes none); a setting's parameters may hold its own ``hierarchies``."""

    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    t0 = time.perf_counter()
    out = Sweep()
    hs = dict(hierarchies or {})
    with eng.scratch("sweep_pops") as ps:
        pops = populations(source, qi_cols, sensitive, scratch=ps, engine=eng, hierarchies=hs, min_sup=min_sup)
        _sweep(eng, source, qi_cols, sensitive, settings, hs, pops, out, progress)
    out.seconds = time.perf_counter() - t0
    frontier([p for p in out.points if not math.isnan(p.p_loss)])
    return out


def _sweep(eng, source, qi_cols, sensitive, settings, hs, pops, out, progress) -> None:
    from ..errors import InfeasibleError
    from .jobs import QIT_ST, _drop_release, anonymize

    for k, (method, params) in enumerate(settings):
        params = dict(params)
        own = params.pop("hierarchies", None)  # a setting's own hierarchies for the anonymizer
        label = f"{method} " + ", ".join(f"{a}={b}" for a, b in params.items())
        name = f"anonydb_sweep_{k}"
        if own is None:
            own = {} if method == "anatomy" else {a: h for a, h in hs.items() if a in qi_cols or a == sensitive}
        t1 = time.perf_counter()
        try:
            rel = anonymize(source, qi_cols, sensitive, method=method, out=name, engine=eng,
                            hierarchies=own or None, replace=True, **params)
        except InfeasibleError as e:
            out.points.append(TradeoffPoint(label, method, dict(params), math.nan, math.nan, note=f"infeasible: {e}"))
            continue
        secs = time.perf_counter() - t1
        try:
            if method in QIT_ST:
                counts = rel.tables["st"]
                with eng.scratch("sweep") as s:
                    c = s.table(f"SELECT group_id AS _adb_g, {ident(sensitive)} AS _adb_sa, {ident('count')} AS _adb_cnt "
                                f"FROM {ident(counts)}")
                    pl = p_loss_of_counts(eng, c)
                ul = u_loss(source, qi_cols, sensitive, engine=eng, hierarchies=hs, pops=pops,
                            qit=rel.tables["qit"], st=rel.tables["st"])
            elif method == "slicing":
                pl = p_loss(eng, rel.table, "bucket_id", sensitive)
                ul = u_loss(source, qi_cols, sensitive, engine=eng, hierarchies=hs, pops=pops, table=rel.table,
                            group="bucket_id", bucketized=True)
            else:
                pl = p_loss(eng, rel.table, "eq_class", sensitive)
                ul = u_loss(source, qi_cols, sensitive, engine=eng, hierarchies=hs, pops=pops, table=rel.table,
                            group="eq_class")
            out.points.append(TradeoffPoint(label, method, dict(params), pl, ul.value, secs, ul.populations))
        finally:
            _drop_release(eng, name)
        if progress:
            progress({"done": k + 1, "of": len(settings)})


def frontier_svg(points: Sequence[TradeoffPoint], *, width: int = 640, height: int = 420) -> str:
    """An inline SVG scatter of the releases (P_loss on x, U_loss on y; one colour per method) with
    the efficient frontier drawn as a line."""
    from html import escape

    pts = [p for p in points if not (math.isnan(p.p_loss) or math.isnan(p.u_loss))]
    if not pts:
        return "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'></svg>"
    front = frontier(pts)
    xmax = max(max(p.p_loss for p in pts), 1e-9) * 1.1
    ymax = max(max(p.u_loss for p in pts), 1e-9) * 1.1
    L, B, R, T = 60, 40, 20, 20

    def x(v):
        return L + (width - L - R) * v / xmax

    def y(v):
        return height - B - (height - B - T) * v / ymax

    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    methods = sorted({p.method for p in pts})
    color = {m: palette[i % len(palette)] for i, m in enumerate(methods)}
    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' font-family='sans-serif' "
             f"font-size='11'>",
             f"<line x1='{L}' y1='{height - B}' x2='{width - R}' y2='{height - B}' stroke='black'/>",
             f"<line x1='{L}' y1='{T}' x2='{L}' y2='{height - B}' stroke='black'/>",
             f"<text x='{(width + L) / 2}' y='{height - 8}' text-anchor='middle'>P_loss (worst-case JS)</text>",
             f"<text x='14' y='{(height - B + T) / 2}' text-anchor='middle' transform='rotate(-90 14 "
             f"{(height - B + T) / 2})'>U_loss (mean JS)</text>"]
    for k in range(5):
        vx, vy = xmax * k / 4, ymax * k / 4
        parts.append(f"<text x='{x(vx):.1f}' y='{height - B + 14}' text-anchor='middle'>{vx:.3f}</text>")
        parts.append(f"<text x='{L - 4}' y='{y(vy) + 4:.1f}' text-anchor='end'>{vy:.3f}</text>")
    if len(front) > 1:
        path = " ".join(f"{x(p.p_loss):.1f},{y(p.u_loss):.1f}" for p in front)
        parts.append(f"<polyline points='{path}' fill='none' stroke='#555' stroke-dasharray='4 3'/>")
    for p in pts:
        parts.append(f"<circle cx='{x(p.p_loss):.1f}' cy='{y(p.u_loss):.1f}' r='{5 if p.efficient else 3.5}' "
                     f"fill='{color[p.method]}' stroke='{'black' if p.efficient else 'none'}'>"
                     f"<title>{escape(p.label)}: P_loss {p.p_loss:.4f}, U_loss {p.u_loss:.4f}</title></circle>")
    for i, m in enumerate(methods):
        parts.append(f"<circle cx='{width - 130}' cy='{T + 10 + 16 * i}' r='4' fill='{color[m]}'/>"
                     f"<text x='{width - 120}' y='{T + 14 + 16 * i}'>{escape(m)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def write_frontier_html(sw: Sweep, path: str, *, title: str = "anonydb privacy-utility trade-off") -> str:
    """A self-contained HTML page: the frontier plot and the table of releases."""
    from html import escape
    from pathlib import Path

    frontier([p for p in sw.points if not math.isnan(p.p_loss)])
    rows = "".join(
        f"<tr><td>{'&#9733;' if p.efficient else ''}</td><td>{escape(p.label)}</td><td>{p.p_loss:.4f}</td>"
        f"<td>{p.u_loss:.4f}</td><td>{p.seconds:.2f}</td><td>{escape(p.note)}</td></tr>"
        for p in sorted(sw.points, key=lambda p: (p.method, p.p_loss if not math.isnan(p.p_loss) else 9)))
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>body{{font-family:sans-serif;margin:2em}}td,th{{padding:2px 8px;text-align:left}}</style></head>"
            f"<body><h1>{escape(title)}</h1><p>P_loss: worst-case Jensen-Shannon divergence of a group's sensitive "
            f"distribution from the table's; U_loss: mean JS over the large populations (Li thesis Ch. 5). "
            f"The efficient frontier (&#9733;) holds the releases no other beats in both.</p>"
            f"{frontier_svg(sw.points)}<table><tr><th></th><th>release</th><th>P_loss</th><th>U_loss</th><th>s</th>"
            f"<th>note</th></tr>{rows}</table></body></html>")
    Path(path).write_text(html)
    return path


__all__ = ["Populations", "Sweep", "TradeoffPoint", "ULoss", "frontier", "frontier_svg", "information", "js", "p_loss",
           "p_loss_of_counts", "populations", "sweep",
           "u_loss", "write_frontier_html"]


def information(engine: Engine | Any, table: str, group: str, sensitive: str) -> dict[str, float]:
    """Entropy-based utility [Li thesis §2.2.3; spec-closeness-slicing 6.3], natural logs:
    H(T), IL = sum_E |E|/|T| H(E) and U = H(T) - IL, of ``table``'s groups ``group``."""
    eng = connect(engine)
    g, sa = ident(group), ident(sensitive)
    h, il = eng.fetch_rows(
        f"WITH c AS (SELECT {g} AS g, {sa} AS v, count(*) AS n FROM {ident(table)} GROUP BY ALL), "
        f"t AS (SELECT v, sum(n) AS n FROM c GROUP BY v), tot AS (SELECT sum(n) AS n FROM t), "
        f"gs AS (SELECT g, sum(n) AS n FROM c GROUP BY g), "
        f"he AS (SELECT c.g, -sum(c.n / gs.n * ln(c.n / gs.n)) AS h, any_value(gs.n) AS n FROM c JOIN gs USING (g) "
        f"GROUP BY c.g) "
        f"SELECT (SELECT -sum(t.n / tot.n * ln(t.n / tot.n)) FROM t, tot), "
        f"(SELECT sum(he.n / tot.n * he.h) FROM he, tot)")[1][0]
    return {"H": float(h or 0.0), "IL": float(il or 0.0), "U": float((h or 0.0) - (il or 0.0))}
