"""delta-presence anonymization against a public table [Nergiz & Clifton; spec-presence-survey 1.3,
1.8; survey Table IV (SPALM, MPALM)].

The public table P is flagged with membership in the private table T (:func:`anonydb.presence.
flag_public`), and an existing anonymizer runs over P with the flag as the "sensitive" attribute
and the delta-presence model, which judges each class of P* by n_T / n_P (exact):

* ``method="fulldomain"`` (SPALM-like): the optimal full-domain search of
  :mod:`anonydb.methods.fulldomain`; delta-presence is anti-monotone (Theorem 1), so the search
  prunes with it, and the minimum-``metric`` satisfying level vector is returned;
* ``method="mondrian"`` (MPALM-like): :mod:`anonydb.methods.mondrian` cuts P's regions while every
  half stays delta-present (unions of delta-present regions are delta-present).

k-map (:mod:`anonydb.models.k_map`, ``k_map=``) runs the same way, alone or beside delta-presence:
its model judges the same classes of P* by n_P >= k where n_T > 0, and is monotone too.

The release holds only T's rows, generalized the way their P partners were (QI labels, Mondrian's
``_lo``/``_hi`` and ``eq_class``), with T's other columns beside. Before anything is written, the
top-node test says at once when |T|/|P| lies outside delta, and the release is re-checked from
scratch by :func:`anonydb.presence.check_presence` (P mapped onto the released classes).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..engines import connect
from ..engines.base import Engine
from ..errors import AnonyDBError, InfeasibleError, InputError
from ..generalize import generalize_sql
from ..hierarchy import EnumeratedHierarchy, Hierarchy
from ..models.confidence import ExactKernel, Kernel
from ..models.presence import parse_delta
from ..presence import (FLAG, ConfidenceReport, check_confident, check_presence, d_marginals, flag_public, need_qis,
                        parse_c, public_models, require_feasible)
from ..release.publish import Publication, publication_lines
from ..schema import split_list
from ..sources import open_source
from ..sqlgen import ident, literal
from .mondrian import _fmt


@dataclass
class PresenceResult:
    table: str
    method: str
    rows: int  # private rows released
    public_rows: int
    classes: int  # classes of P*
    achieved: tuple[Any, Any] | None  # (min, max) presence over the classes of P* (None: no delta asked)
    seconds: float
    levels: dict[str, int] | None  # full-domain: the level vector
    report: Any  # the re-check of the release (anonydb.checker.Report)
    dropped: list[str] = field(default_factory=list)  # the private table's columns not published
    k_map: int | None = None  # k-map: the smallest public count of a class with research records
    kept: list[str] = field(default_factory=list)  # k-map: the private table's columns published unchanged

    def format(self) -> str:
        lv = f"; levels [{', '.join(f'{q}={v}' for q, v in self.levels.items())}]" if self.levels else ""
        names = " and ".join(x for x, on in (("delta-presence", self.achieved is not None),
                                             ("k-map", self.k_map is not None)) if on)
        got = ([f"presence in [{_fmt(self.achieved[0])}, {_fmt(self.achieved[1])}] for every public row"]
               if self.achieved is not None else []) + (
              [f"every class with private rows matches >= {self.k_map} public rows"] if self.k_map is not None else [])
        return (f"{names} ({self.method}): {self.rows} private rows released in {self.table} "
                f"({self.classes} classes of the {self.public_rows}-row public table{lv}) in {self.seconds:.2f} s\n"
                f"  verified: {'; '.join(got)}"
                + "".join("\n" + x for x in publication_lines(self.dropped, self.kept, "")))


#: delta-presence maps every public row to the one class whose published values cover it [Nergiz &
#: Clifton Def 3, 4]; relaxed Mondrian cuts split rows with equal QI values between partitions, whose
#: boxes then overlap (a public row with those values falls in both), so the pair is refused up front
PRESENCE_RELAXED = ("delta-presence needs a non-overlapping generalization: relaxed cuts split rows with equal QI "
                    "values, so the classes' boxes overlap and a public row would fall in several; drop relaxed")


def presence_anonymize(private: str, public: str, qi: str | Iterable[str], *, delta: Any = None, out: str,
                       k_map: int | None = None, engine: Engine | Any = None, method: str = "fulldomain",
                       hierarchies: dict[str, Hierarchy] | None = None, key: str | None = None,
                       metric: str = "dm", relaxed: bool = False, categorical: str = "hierarchy",
                       seed: int | None = None, replace: bool = False,
                       keep: str | Iterable[str] | None = None) -> PresenceResult:
    """Release ``private`` (T) generalized so that it is delta-present with respect to ``public`` (P),
    and/or k-map (``k_map`` = k: every released class matches at least k rows of P generalized the
    same way, :mod:`anonydb.models.k_map`; ``delta`` None for k-map alone). Both are monotone, so
    both searches prune with them.

    ``key``: a column both tables share that identifies a person (else rows are matched on their
    QI values). ``hierarchies``: per QI (all of them for ``fulldomain``; categorical ones for
    Mondrian's hierarchy cuts). ``metric``: the full-domain optimum's metric (over P*). The release
    publishes the generalized QIs and the class id only: T's other columns are dropped (a kept
    column could not be judged against P). ``seed`` None orders the rows by a fresh secret.
    ``relaxed`` is refused with Mondrian (:data:`PRESENCE_RELAXED`). ``keep``: with k-map alone,
    columns of T published unchanged beside the generalized QIs (the research attributes, e.g. the
    sensitive one: k-map bounds re-identification through the QIs only, ARX's KMap publishes them).
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    models = public_models(delta, k_map)
    if method not in ("fulldomain", "mondrian"):
        raise InputError(f"method must be 'fulldomain' (SPALM) or 'mondrian' (MPALM), got {method!r}")
    if relaxed and method == "mondrian":
        raise InputError(PRESENCE_RELAXED)
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release table")
    hierarchies = dict(hierarchies or {})
    kept = split_list(keep, "keep")
    if kept and delta is not None:
        raise InputError("delta-presence releases only the generalized QIs (a kept column could not be judged "
                         "against the public table): keep columns with k-map alone")
    with Publication(eng, [out], replace, sources=[private, public], seed=seed) as release, \
            eng.scratch("presence_anon") as s:
        priv = open_source(eng, private, scratch=s)
        pub = open_source(eng, public, scratch=s)
        tcols, _ = need_qis(eng, priv, pub, qi_cols, f"the private table {private}", f"the public table {public}")
        for c in kept:
            if c not in tcols or c in qi_cols:
                raise InputError(f"keep: {c!r} is not a column of the private table {private} other than its "
                                 f"quasi-identifiers")
            if c in (FLAG, "private_rid", "eq_class") or any(c in (f"{q}_lo", f"{q}_hi") for q in qi_cols):
                raise InputError(f"keep: {c!r} has a name the release uses for its own columns; rename it")
        flagged, n_t, n_p = flag_public(eng, s, priv, pub, qi_cols, key, carry=kept)
        if delta is not None:
            require_feasible(n_t, n_p, delta)
        if k_map is not None and int(k_map) > n_p:
            raise InfeasibleError(f"k-map with k = {k_map} is infeasible: the public table has {n_p} rows, and "
                                  f"the most general release (one class of them all) matches no more")
        work = s.name()
        levels = None
        if method == "fulldomain":
            from .fulldomain import fulldomain

            # the release below is checked from P (check_presence) before it is written
            r = fulldomain(flagged, qi_cols, FLAG, hierarchies=hierarchies, out=work, engine=eng, metric=metric,
                           models=models, seed=seed, _caller_keeps=FLAG)
            levels = dict(r.levels)
        else:
            from .mondrian import anonymize

            anonymize(flagged, qi_cols, FLAG, out=work, engine=eng, models=models, hierarchies=hierarchies,
                      relaxed=relaxed, categorical=categorical, seed=seed, keep=["private_rid", *kept],
                      _unjudged=("private_rid", *kept))
        # the release: the private rows only, with their generalized QIs and class (in the work's
        # keyed order) and the kept columns; T's other columns are dropped
        wcols = [c for c, _ in eng.columns(work) if c not in (FLAG, "private_rid")]
        dropped = [c for c in tcols if c not in qi_cols and c not in kept]
        stage = release.stage()
        eng.create_table_as(stage, f"SELECT {', '.join('w.' + ident(c) for c in wcols)} FROM {ident(work)} AS w "
                                   f"WHERE w.{ident(FLAG)} = 1")
        released = int(eng.scalar(f"SELECT count(*) FROM {ident(stage)}"))
        if released != n_t:
            raise AnonyDBError(f"internal error: the release holds {released} rows, the private table {n_t}")
        report = check_presence(stage, pub, qi_cols, delta=delta, k_map=k_map, engine=eng, hierarchies=hierarchies,
                                levels=levels, max_groups=3)
        bad = next((v for v in report.verdicts if not v.holds), None)
        release.attach([stage], bad is None, f"{bad.model} does not hold on the release ({bad.violating_groups} of "
                                             f"{bad.groups} classes violate)" if bad else "", report)
        release.commit([(stage, out)])
    by = {v.model: v for v in report.verdicts}
    dp, km = by.get("delta-presence"), by.get("k-map")
    return PresenceResult(table=out, method=method, rows=n_t, public_rows=n_p, classes=report.verdicts[0].groups,
                          achieved=(dp.achieved["delta_min"], dp.achieved["delta_max"]) if dp else None,
                          seconds=time.perf_counter() - t0, levels=levels, report=report, dropped=dropped,
                          k_map=km.achieved["k"] if km else None, kept=kept)


# ==================================================================================================
# SFALM
# SFALM: the full-domain search for c-confident delta-presence [Nergiz & Clifton TR §7, Algorithm 1;
# spec-presence-survey 1.6, 1.8].
#
# The lattice of level vectors (one hierarchy level per QI) is searched top-down, a height at a
# time, most general first. Each batch of nodes is one SQL statement
# (``sql/confidence_nodes.sql.j2``): T generalized by every node of the batch, grouped into
# classes, each class reduced to its signature (n1, the D-counts of its labels) and each node to
# its costs (LM, DM); with one-sided delta only the minimum dominant subset of the signatures
# (``mds``; TR Thm 3 / Cor 1, exact) comes back. The confidences come from the memoized kernel
# (:mod:`anonydb.models.confidence`), in Python, on distinct signatures only. A node passes when every
# class reaches c.
#
# Pruning (``pa``, the TR's "practical anti-monotonicity", §5.1): a node below a failing node is
# not evaluated. c-confident delta-presence is not anti-monotone, so this can only lose
# optimality, never privacy: every node returned is fully checked, and the release is re-checked
# (:func:`anonydb.presence.check_confident`) before it is written. ``pa=False``
# evaluates every node (audits). The SD window (``sd``, default 4 sigma as in the TR's
# experiments) and b-discretization (``dc``) make the kernel faster and only lower confidences.
# The optimum is the passing node of least ``metric`` (LM, the TR's cost, or DM).
# ==================================================================================================
@dataclass
class SfalmResult:
    table: str
    levels: dict[str, int]
    lm: float
    dm: int
    confidence: float  # the smallest class confidence of the chosen node
    classes: int
    rows: int
    evaluated: int  # nodes whose classes were computed
    lattice: int
    seconds: float
    report: ConfidenceReport  # the re-check of the release

    def format(self) -> str:
        lv = ", ".join(f"{q}={v}" for q, v in self.levels.items())
        return (f"c-confident delta-presence (SFALM): {self.rows} rows in {self.classes} classes -> {self.table}; "
                f"levels [{lv}], LM {self.lm:.4f}, DM {self.dm}; {self.evaluated} of {self.lattice} nodes "
                f"evaluated ({self.seconds:.2f} s)\n  verified: {self.report.format()}")


def confident_presence(private: str, qi: str | Iterable[str], *, delta: Any, c: Any, marginals: dict[str, str],
                       hierarchies: dict[str, Hierarchy], out: str, engine: Engine | Any = None, metric: str = "lm",
                       pa: bool = True, mds: bool = True, sd: float | None = 4.0, dc: int | None = None,
                       exact: bool = False, batch: int = 32, replace: bool = False,
                       seed: int | None = None) -> SfalmResult:
    """Release ``private`` (T) at the least-cost full-domain node whose every class is
    c-confident delta-present given the population ``marginals`` (QI -> (value, count) table).
    The release holds the generalized QIs only (T's other columns are dropped), in the order of a
    fresh secret (``seed``: a reproducible one).
    ``exact``: every confidence in exact fractions (no SD/DC; small populations only)."""
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    dmin, dmax = parse_delta(delta)
    cc = parse_c(c)
    if metric not in ("lm", "dm"):
        raise InputError(f"metric must be 'lm' (the TR's loss metric) or 'dm', got {metric!r}")
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release table")
    hierarchies = dict(hierarchies or {})
    for q in qi_cols:
        if q not in hierarchies:
            raise InputError(f"quasi-identifier {q!r} has no hierarchy: full-domain generalization needs one per QI")
    skyline = ("min" if dmax == 1 and dmin > 0 else "max" if dmin == 0 and dmax < 1 else None) if mds else None
    with Publication(eng, [out], replace, sources=[private], seed=seed) as release, eng.scratch("sfalm") as s:
        order = release.order
        priv = open_source(eng, private, scratch=s)
        cols = dict(eng.columns(priv))
        for q in qi_cols:
            if q not in cols:
                raise InputError(f"column {q!r} not found in {private}; its columns are: {', '.join(cols)}")
        n_t = int(eng.scalar(f"SELECT count(*) FROM {ident(priv)}"))
        if n_t == 0:
            raise InputError(f"{private} is empty: there is nothing to release")
        dm, U = d_marginals(eng, s, priv, qi_cols, marginals)
        attrs = []
        for q in qi_cols:
            h = hierarchies[q]
            h.validate(eng, priv, q)
            hq = s.name()
            if isinstance(h, EnumeratedHierarchy):
                h.materialize(eng, hq)
            else:
                vals = s.table(f"SELECT {ident(q)} FROM {ident(priv)} UNION SELECT TRY_CAST(value AS "
                               f"{cols[q]}) FROM {ident(dm[q])} WHERE TRY_CAST(value AS {cols[q]}) IS NOT NULL")
                h.materialize(eng, hq, vals, q)
            levels = s.table(eng.render("confidence_levels.sql.j2", hier=hq, marg=dm[q]))
            card = int(eng.scalar(f"SELECT count(DISTINCT leaf) FROM {ident(hq)}"))
            attrs.append({"name": q, "hier": hq, "levels": levels, "card_1": max(1, card - 1), "height": h.height})
        heights = [a["height"] for a in attrs]
        kernel = ExactKernel(U) if exact else Kernel(U, sd=sd, dc=dc)
        search = _Search(eng, priv, attrs, kernel, dmin, dmax, cc if exact else float(cc), skyline, n_t, batch)
        top = tuple(heights)
        found = search.evaluate([top])[top]
        if not found["passes"]:
            raise InfeasibleError(
                f"c-confident delta-presence is infeasible here: even the most general release (one class of "
                f"{n_t} rows, U = {U}) has confidence {found['confidence']:.6g} < c = {float(cc):g}")
        passed = {top: found}
        failed: set[tuple[int, ...]] = set()
        lattice = list(itertools.product(*(range(h + 1) for h in heights)))
        for height in range(sum(heights) - 1, -1, -1):
            level = [n for n in lattice if sum(n) == height]
            if pa:
                level = [n for n in level if all(p in passed for p in _parents(n, heights))]
            for i in range(0, len(level), batch):
                for n, r in search.evaluate(level[i:i + batch]).items():
                    if r["passes"]:
                        passed[n] = r
                    else:
                        failed.add(n)
        key = (lambda n: (passed[n]["lm"], sum(n), n)) if metric == "lm" else (lambda n: (passed[n]["dm"], sum(n), n))
        best = min(passed, key=key)
        levels_map = dict(zip(qi_cols, best))
        stage = release.stage()
        gen = generalize_sql(eng, priv, levels_map, hierarchies, qi_cols)
        eng.create_table_as(stage, f"SELECT * FROM ({gen.sql}) AS g ORDER BY "
                                   f"md5_number(CAST(hash(g) AS VARCHAR) || {literal(order.key)})")
        report = check_confident(stage, n_t, qi=qi_cols, delta=(dmin, dmax), c=cc, marginals=marginals,
                                 engine=eng, hierarchies=hierarchies, private=priv, levels=levels_map, sd=sd,
                                 dc=None, exact=exact)
        release.attach([stage], report.holds, report.format(), report)
        release.commit([(stage, out)])
    b = passed[best]
    return SfalmResult(table=out, levels=levels_map, lm=b["lm"], dm=b["dm"], confidence=b["confidence"],
                       classes=report.classes, rows=n_t, evaluated=search.evaluated, lattice=len(lattice),
                       seconds=time.perf_counter() - t0, report=report)


def _parents(n: tuple[int, ...], heights: list[int]):
    """The nodes one step more general in one attribute."""
    for i, (v, h) in enumerate(zip(n, heights)):
        if v < h:
            yield n[:i] + (v + 1,) + n[i + 1:]


class _Search:
    def __init__(self, eng, priv, attrs, kernel, dmin, dmax, c, skyline, n_t, batch):
        self.eng, self.priv, self.attrs, self.kernel = eng, priv, attrs, kernel
        self.dmin, self.dmax, self.c, self.skyline, self.n_t = dmin, dmax, c, skyline, n_t
        self.evaluated = 0

    def evaluate(self, nodes: list[tuple[int, ...]]) -> dict[tuple[int, ...], dict[str, Any]]:
        """Per node: passes, its smallest confidence (over the classes checked), LM and DM."""
        d = len(self.attrs)
        rows = self.eng.fetch_rows(self.eng.render(
            "confidence_nodes.sql.j2", private=self.priv, attrs=self.attrs, nodes=nodes, skyline=self.skyline,
            total_cells=self.n_t * d))[1]
        self.evaluated += len(nodes)
        by: dict[int, list[tuple]] = {}
        for r in rows:
            by.setdefault(int(r[0]), []).append(r)
        out = {}
        for j, n in enumerate(nodes):
            sigs = by.get(j, [])
            lm, dm = (float(sigs[0][-1]), int(sigs[0][-2])) if sigs else (0.0, 0)
            worst, ok = 1.0, True
            # the least likely to pass first: small classes with large D-counts fail delta_max soonest
            for r in sorted(sigs, key=lambda r: (r[1], -sum(r[2:2 + d]))):
                conf = self.kernel.confidence(int(r[1]), [int(x) for x in r[2:2 + d]], self.dmin, self.dmax)
                worst = min(worst, conf)
                if conf < self.c:
                    ok = False
                    break
            out[n] = {"passes": ok, "confidence": float(worst), "lm": lm, "dm": dm}
        return out
