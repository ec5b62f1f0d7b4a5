"""Full-domain generalization: one hierarchy level per QI, the best level vector by a utility
metric, with a suppression limit [Samarati 2001; LeFevre et al. 2005 (Incognito); Li et al. 2007
(t-closeness Incognito); spec-presence-survey catalogue; ARX].

The lattice holds every level vector (L_1..L_d), 0 <= L_i <= height_i. A node is judged by the
same model code as :func:`anonydb.checker.check`, over a pre-aggregated table of the distinct QI
tuples with every hierarchy level as its own column (one scan of the source); a batch of nodes
is one statement, the nodes' projections stacked under one GROUP BY and judged in the same
statement (``sql/fulldomain_*.sql.j2``).
A node *satisfies* when the rows of the groups failing a model (suppressed) are at most
``max_suppression`` of the table.

Search: where every model is monotonic under generalization -- and, with suppression allowed,
also under suppression (k-anonymity and distinct l-diversity only: merging a failing group with
a passing one passes) -- each judged node tags every more general node (if it satisfies) or
every more specific one (if it fails) without checking them (one slice of a d-dimensional tag
array). The search first walks the lattice top-down, a height per query, while a height's
untagged nodes fit one query (few satisfying nodes: it judges only those and the maximal failing
ones); then a Flash-style search [Kohlmayer et al. 2012] binary-searches chains of successors
from the untagged nodes, bottom-up, many chains per query. Otherwise every node is checked, a
height at a time. Every judged node has its DM (a sum beside the verdict's); the loss, which
takes a join per QI, only when it is the metric. The minimal satisfying nodes (no
satisfying direct predecessor) form the Pareto set. The optimum is taken among them when the
metric can only worsen with generalization (height and precision always; DM, AECS, loss and
entropy without suppression), else among all satisfying nodes; for DM and loss with suppression
by branch and bound, a height at a time (a node's metric with no row suppressed bounds every
more general node's from below).

A model with ``Model.candidate`` False (not monotone, or judged across groups) judges no node:
the search runs on the other models, and the release's verification judges it, refusing a
release it rejects.

Metrics: DM (a suppressed record costs |T|), AECS, height (sum of levels), precision (Sweeney:
1 - mean L_i/height_i, larger is better), loss (Iyengar's LM), non-uniform entropy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from .. import events
from ..checker import build_models
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError
from ..generalize import generalize_sql
from ..hierarchy import Hierarchy, validate_all
from ..models import GroupContext, Model, NTCloseness, candidate_models
from ..models.named import check_named
from ..models.personalized import guard_columns
from ..schema import is_numeric_type, split_list
from ..sources import open_source
from ..sqlgen import ident
from ..release.publish import (Publication, constant_qis, pseudonymized, publication_lines, resolve_roles,
                               tracked_column, tracked_key)
from .mondrian import _fmt

METRICS = ("dm", "aecs", "height", "precision", "loss", "entropy")
#: (n,t)-closeness judges a group against the records agreeing with it on a subset of the QIs; the
#: release holds only the kept rows, so suppressing a failing group changes the supersets of the
#: groups kept, and a node's verdict (over all rows) would not be its release's: the pair is refused
NT_SUPPRESSION = ("(n,t)-closeness needs max_suppression = 0 with full-domain generalization: suppressed rows "
                  "would leave the natural supersets of the groups kept (the released records agreeing with them "
                  "on a subset of the QIs), so a level vector judged over all rows would not hold on its release")
#: nodes judged per query
BATCH = 64
#: the fewest nodes of a batch that make a pre-aggregated base worth its statement (:meth:`_Lattice.add_bases`)
BASE_NODES = 3
#: the fewest distinct tuples for which bases pay at all: below, a base's own statement costs more than
#: its nodes save (Adult, 18,109 tuples: the search's batches 90-106 ms without bases, 100-118 ms with;
#: 56,179 tuples: 213 ms without, 176 ms with; BENCHMARKS.md)
BASE_ROWS = 30_000


@dataclass
class _QI:
    column: str
    hierarchy: Hierarchy
    height: int
    map: str = ""


@dataclass
class FullDomainResult:
    table: str
    levels: dict[str, int]
    metric_name: str
    metric: float
    metrics: dict[str, float]
    suppressed: int
    rows: int
    classes: int
    minimal: list[tuple[int, ...]]
    checked: int
    lattice: int
    seconds: float
    report: Any
    #: of ``seconds``, the search: the distinct tuples' level table and the lattice search (not the
    #: hierarchies' checks, the release or its verification)
    search_seconds: float = 0.0
    dropped: list[str] = field(default_factory=list)  # source columns not published (no role, identifiers)
    kept: list[str] = field(default_factory=list)  # published unchanged at the user's request
    order: str = ""  # how the rows are ordered (secret, or recomputable from a seed)
    person: str | None = None  # record owners: classes, suppression and metrics count persons
    persons: int | None = None  # the persons released
    person_like: list[tuple[str, int, int]] = field(default_factory=list)  # dropped columns like a person key
    pseudonyms: tuple[list[str], str] = ([], "")  # columns published as keyed pseudonyms, where the key came from

    def format(self) -> str:
        lv = ", ".join(f"{q}={l}" for q, l in self.levels.items())
        m = ", ".join(f"{k} {_fmt(v)}" for k, v in self.metrics.items())
        rows = f"{self.rows} rows" if self.person is None else f"{self.rows} rows of {self.persons} persons"
        unit = "" if self.person is None else " persons"
        return (f"full-domain release {self.table}: levels [{lv}], {rows} in {self.classes} classes, "
                f"{self.suppressed}{unit} suppressed ({self.seconds:.2f} s, search {self.search_seconds:.2f} s; "
                f"{self.checked} of {self.lattice} nodes checked)\n"
                f"  {self.metric_name} = {_fmt(self.metric)}; {m}\n"
                f"  minimal satisfying nodes: {len(self.minimal)}\n"
                "  verified: " + ("; ".join(f"{v.model} holds" for v in self.report.verdicts) if self.report
                                  else "by the caller")
                + "".join("\n" + x for x in publication_lines(self.dropped, self.kept, self.order, self.person,
                                                              self.person_like, self.pseudonyms)))


def fulldomain(source: str, qi: str | Iterable[str], sensitive: str | None = None, *, hierarchies: dict[str, Hierarchy],
               out: str, engine: Engine | Any = None, max_suppression: float = 0.0, metric: str = "dm",
               identifiers: str | Iterable[str] | None = None, keep: str | Iterable[str] | None = None,
               replace: bool = False, seed: int | None = None,
               models: list[Model] | None = None, progress: Callable[[dict[str, Any]], None] | None = None,
               _caller_keeps: str | None = None, _unjudged: tuple[str, ...] = (), person: str | None = None,
               pseudonymize: str | Iterable[str] | None = None, secret_file: Any = None,
               **params: Any) -> FullDomainResult:
    """Release ``source`` generalized to the best satisfying level vector (see module docstring).
    (n,t)-closeness is judged without suppression only (:data:`NT_SUPPRESSION`).

    ``_caller_keeps`` (internal; a column of the source): the caller keeps the rows where that column
    is 1 and verifies and counts them itself (SPALM keeps the private rows of P and checks
    delta-presence from P): only those rows are written, unverified (``report`` None), and without
    the loss and entropy metrics unless one of them is ``metric``.

    ``person``: the column naming each record's owner. The lattice judges persons (every QI must be
    constant per person, so a person's records share their labels), a failing group suppresses its
    persons with all their records (``max_suppression`` is then a fraction of the persons), the
    metrics count persons, and the column is not published. ``pseudonymize``, ``secret_file``: as in
    :func:`anonydb.methods.mondrian.anonymize`."""
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    ids = split_list(identifiers, "identifiers")
    if metric not in METRICS:
        raise InputError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if isinstance(max_suppression, bool) or not isinstance(max_suppression, (int, float)) \
            or not 0 <= max_suppression <= 1:
        raise InputError(f"max_suppression must be a fraction in [0, 1], got {max_suppression!r}")
    if models is None:
        model_params = dict(params)
        models = build_models(**params)
    else:
        model_params = None
    if not models:
        raise InputError("no privacy model requested: give at least one of k, l, t, alpha, delta")
    judged = candidate_models(models, "full-domain")  # the others: the release's verification alone
    if max_suppression > 0 and any(isinstance(m, NTCloseness) for m in models):
        raise InputError(NT_SUPPRESSION)
    if sensitive is None and any(m.needs_sensitive for m in models):
        raise InputError(f"{', '.join(m.name for m in models if m.needs_sensitive)} needs a sensitive attribute")
    hierarchies = dict(hierarchies or {})
    for c in qi_cols:
        if c not in hierarchies:
            raise InputError(f"quasi-identifier {c!r} has no hierarchy: full-domain generalization needs one per QI "
                             f"(--hierarchy {c}=PATH)")
    with Publication(eng, [out], replace, sources=[source], seed=seed) as pub:
        order = pub.order
        with eng.scratch("fulldomain") as s:
            events.phase("reading")
            relation = open_source(eng, source, scratch=s)
            roles = resolve_roles(eng, relation, qi_cols, sensitive, ids, keep, label=str(source), person=person,
                                  pseudonymize=pseudonymize)
            types, columns = roles.types, roles.columns
            guards = guard_columns(models, columns.published)  # personalized privacy's: verified, then dropped
            check_named(eng, relation, models, qi=qi_cols, sensitive=sensitive, person=person, label=str(source),
                        hierarchy=hierarchies.get(sensitive) if sensitive else None)
            relation, key_origin = pseudonymized(eng, s, relation, columns, secret_file)
            if _caller_keeps is not None:  # the caller's own table: every column rides along, the caller drops them
                columns.published = [c for c, _ in eng.columns(relation)]
            sa = sensitive if any(m.needs_sensitive for m in models) else None
            searched = relation
            if person is not None:  # the lattice judges persons: a row per person, or per (person, value)
                if _caller_keeps is not None:
                    raise InputError("delta-presence judges the rows of a public table, not persons")
                searched = s.table(eng.render("person_facts.sql.j2", person=person, qis=qi_cols, sensitive=sa,
                                              source=relation))
                constant_qis(eng, searched, person, qi_cols, facts=not sa)  # read from the persons' facts
                total = eng.scalar(f"SELECT count(DISTINCT {ident(person)}) FROM {ident(relation)}")
            else:
                total = eng.scalar(f"SELECT count(*) FROM {ident(relation)}")
            if total == 0:
                raise InputError(f"{source} is empty: there is nothing to anonymize")
            events.update(**{"persons" if person is not None else "rows": int(total)})
            events.phase("coding", qis=len(qi_cols))
            qis = []
            validate_all(eng, relation, {c: hierarchies[c] for c in qi_cols})
            for c in qi_cols:
                h = hierarchies[c]
                q = _QI(c, h, h.height)
                q.map = s.name()
                h.materialize_wide(eng, q.map, relation=relation, column=c, temp=True)
                qis.append(q)
            t_search = time.perf_counter()
            lat = _Lattice(eng, s, qis, sa, searched, total, judged, types,
                           hierarchies.get(sensitive) if sensitive else None, max_suppression,
                           persons=person is not None and bool(sa))
            best, minimal, cand_metrics = lat.search(metric, progress, report=_caller_keeps is None)
            t_search = time.perf_counter() - t_search
            levels = dict(zip(qi_cols, best))
            # the release: generalized QIs, rows of failing groups suppressed, eq_class, shuffled
            # a caller that verifies the rows it derives (delta-presence) names its own scratch table
            stage = pub.stage() if _caller_keeps is None else out
            events.phase("output")
            kept_groups = lat.kept_labels(best)
            tracked = tracked_column(person, columns.published) if _caller_keeps is None else []
            gen = generalize_sql(eng, relation, levels, {c: hierarchies[c] for c in qi_cols},
                                 columns.published + ([person] if person not in (None, *columns.published) else [])
                                 + guards + tracked)
            eng.execute(eng.render("fulldomain_release.sql.j2", stage=stage, gen=gen.sql, kept=kept_groups,
                                   qis=qi_cols, key=order.key, only=_caller_keeps))
            report = None
            if _caller_keeps is None:
                verify_models = build_models(**model_params) if model_params is not None else models
                report = pub.verify(stage, sensitive, verify_models, columns.keep,
                                    hierarchies={sensitive: hierarchies[sensitive]} if sensitive in hierarchies
                                    else None, distribution_of=relation,
                                    exclude=tuple(_unjudged) + tuple(guards) + tuple(tracked),
                                    **({"person": person} if person is not None else {}))
                pub.track(stage, person if person is not None else tracked_key(), ["eq_class"] + columns.keep,
                          sensitive)
                for c in tracked:
                    eng.drop_column(stage, c)
                if person is not None and person not in columns.published:  # verified: the key goes
                    eng.drop_column(stage, person)
                for g in guards:  # verified: the guarding nodes are never published
                    eng.drop_column(stage, g)
            m = cand_metrics[best]
            if person is not None:  # verified: the person key is gone; the persons released are the report's
                rows, released = eng.scalar(f"SELECT count(*) FROM {ident(stage)}"), report.persons
            else:
                rows = released = eng.scalar(f"SELECT count(*) FROM {ident(stage)}")
            per_record = None
            if person is not None:  # DM counted by records too: kept classes' records squared, and each
                # suppressed record costs the table's records (the metric's suppression penalty)
                records = eng.scalar(f"SELECT count(*) FROM {ident(relation)}")
                per_record = {"dm": int(eng.scalar(f"SELECT coalesce(sum(n * n), 0) FROM (SELECT count(*) AS n FROM "
                                                   f"{ident(stage)} GROUP BY eq_class) AS c")
                                        + (records - rows) * records), "records": int(records),
                              "suppressed_records": int(records - rows)}
            if _caller_keeps is None and released != total - m["suppressed"]:
                raise AnonyDBError(f"internal error: the release holds {released} {'persons' if person else 'rows'}, "
                                   f"expected {total - m['suppressed']}")
        if _caller_keeps is None:
            pub.commit([(stage, out)])
    metrics = {k: m[k] for k in METRICS if k in m}
    if person is not None:  # the search's metrics count persons; DM by records beside them
        metrics["dm_records"] = per_record["dm"]
    return FullDomainResult(table=out, levels=levels, metric_name=metric, metric=metrics[metric], metrics=metrics,
                            suppressed=int(m["suppressed"]), rows=int(rows), classes=int(m["classes"]),
                            minimal=sorted(minimal), checked=lat.checked, lattice=lat.size,
                            seconds=time.perf_counter() - t0, report=report, search_seconds=t_search,
                            dropped=[c for c in columns.dropped if c != _caller_keeps], kept=columns.keep,
                            order=order.describe(), person=person,
                            persons=int(total - m["suppressed"]) if person is not None else None,
                            person_like=columns.person_like, pseudonyms=(columns.pseudonyms, key_origin))


class _Lattice:
    def __init__(self, eng, s, qis, sa, relation, total, models, types, sa_hier, max_suppression, persons=False):
        self.eng, self.s, self.qis, self.sa, self.total, self.models = eng, s, qis, sa, total, models
        #: record owners with a sensitive attribute: ``relation`` holds (person, value) facts, flagged
        #: _adb_own once a person (person_facts.sql.j2); groups count persons (no sensitive
        #: attribute: it holds a row per person, and the plain counts are persons)
        self.persons = persons
        self.d = len(qis)
        self.heights = [q.height for q in qis]
        self.limit = int(max_suppression * total + 1e-9)
        self.max_suppression = max_suppression
        self.size = 1
        for h in self.heights:
            self.size *= h + 1
        # every label of every level: its integer code and its leaves (|A| = a hierarchy's leaves)
        self.codes = s.table(eng.render("fulldomain_labels.sql.j2", qis=qis))
        leaves = dict(eng.fetch_rows(f"SELECT qi, sum(leaves) FROM {ident(self.codes)} WHERE level = 0 GROUP BY qi")[1])
        self.leaves = [int(leaves[i]) for i in range(self.d)]
        self.lev = s.table(eng.render("fulldomain_codes.sql.j2", qis=qis, sensitive=sa, source=relation,
                                      persons=persons))
        #: pre-aggregated copies of lev by the QIs whose level-0 column they leave out (see add_bases)
        self.bases: dict[tuple[int, ...], str] = {tuple(0 for _ in qis): self.lev}
        self.use_bases = eng.scalar(f"SELECT count(*) FROM {ident(self.lev)}") >= BASE_ROWS
        facts = 0
        if sa:
            self.glob = s.table(f"SELECT _adb_sa, sum(_adb_cnt) AS _adb_cnt FROM {ident(self.lev)} GROUP BY 1")
            self.domain, facts = eng.fetch_rows(f"SELECT count(*), sum(_adb_cnt) FROM {ident(self.glob)}")[1][0]
        else:
            self.glob, self.domain = None, 0
        #: the metrics' tuples, counted in persons
        self.counted = self.lev if not persons else s.table(
            "SELECT " + ", ".join(f"_q{i}_{l}" for i, h in enumerate(self.heights) for l in range(h + 1))
            + f", sum(_adb_own) AS _adb_cnt FROM {ident(self.lev)} GROUP BY ALL")
        self.ctx_base = dict(engine=eng, glob=self.glob, total=total, domain=self.domain, sensitive=sa,
                             persons=persons, facts=int(facts or 0), glob_persons=total,
                             sensitive_numeric=bool(sa) and is_numeric_type(types[sa]), sa_hierarchy=sa_hier,
                             scratch=s, qi_columns=[q.column for q in qis])
        self.prepared = False
        self.need_loss = True  # the search judges the loss metric only when it optimizes it
        self.judged: set[tuple[int, ...]] = set()  # nodes whose groups were judged (checked)
        self.kept: dict[tuple[int, ...], str] = {}  # node -> its kept groups' table
        self.keys = ["_adb_ln"] + [f"_adb_g{i}" for i in range(self.d)]

    @property
    def checked(self) -> int:
        return len(self.judged)

    def spec(self, nodes: list[tuple[int, ...]]) -> dict[str, Any]:
        """Template context for a batch: per node its position in the batch, its levels and the
        table it is grouped from (:meth:`base`)."""
        self.add_bases(nodes)
        return dict(nodes=[{"id": j, "levels": n, "lev": self.base(n)} for j, n in enumerate(nodes)], d=self.d,
                    sensitive=self.sa, lev=self.lev, persons=self.persons)

    def _pattern(self, n: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(min(l, 1) for l in n)

    def base(self, n: tuple[int, ...]) -> str:
        """The smallest pre-aggregated copy of ``lev`` that ``n`` can be grouped from: of the bases
        whose levels are all at or below ``n``'s, the one that leaves out the most level-0 columns
        (each left out merges the distinct tuples that differ only in that QI's value)."""
        fits = [b for b in self.bases if all(x <= l for x, l in zip(b, n))]
        return self.bases[max(fits, key=lambda b: (sum(b), b))]

    def add_bases(self, nodes: list[tuple[int, ...]]) -> None:
        """Pre-aggregate ``lev`` without the level-0 columns of the QIs that at least
        ``BASE_NODES`` nodes of the batch generalize (one statement per new base, from the
        smallest base it can be made of): a node is then grouped from far fewer rows than the
        distinct tuples. Only where there are ``BASE_ROWS`` distinct tuples or more."""
        if not self.use_bases:
            return
        count: dict[tuple[int, ...], int] = {}
        for n in nodes:
            p = self._pattern(n)
            if p not in self.bases:
                count[p] = count.get(p, 0) + 1
        for p, c in sorted(count.items(), key=lambda pc: (sum(pc[0]), pc[0])):
            if c < BASE_NODES or p in self.bases:
                continue
            cols = [f"_q{i}_{l}" for i, h in enumerate(self.heights) for l in range(p[i], h + 1)]
            keys = ", ".join(cols + (["_adb_sa"] if self.sa else []))
            own = ", CAST(sum(_adb_own) AS BIGINT) AS _adb_own" if self.persons else ""
            self.bases[p] = self.s.table(f"SELECT {keys}, CAST(sum(_adb_cnt) AS BIGINT) AS _adb_cnt{own} "
                                         f"FROM {ident(self.base(p))} GROUP BY {keys}")

    def evaluate(self, nodes: list[tuple[int, ...]], loss: bool | None = None) -> dict[tuple[int, ...], dict[str, Any]]:
        """Judge a batch of nodes, one statement per ``BATCH``: suppressed rows, classes and DM
        (``dm_lb``: with no row suppressed) per node and, with ``loss`` (default: when the search
        optimizes it, :attr:`need_loss`), the loss metric, whose generalization costs take a join
        per QI (otherwise the result's loss comes from :meth:`release_metrics`)."""
        e = self.eng
        loss = self.need_loss if loss is None else loss
        out = {}
        for start in range(0, len(nodes), BATCH):
            batch = nodes[start:start + BATCH]
            ok, ctes = self._ok(e.render("fulldomain_nodes.sql.j2", **self.spec(batch)).sql, "cells")
            rows = e.fetch(e.render("fulldomain_judge.sql.j2", ok=ok, ctes=ctes, nodes=list(enumerate(batch)),
                                    card=self.codes, d=self.d, leaves=self.leaves, total=self.total, loss=loss))
            for r in rows:
                res = out[batch[r["_adb_ln"]]] = {k: int(r[k]) for k in ("suppressed", "classes", "dm", "dm_lb")}
                if loss:
                    res.update(loss=float(r["loss"]), loss_lb=float(r["loss_lb"]))
            self.judged.update(batch)
        return out

    def _ok(self, cells_sql: str, role: str) -> tuple[str, list[tuple[str, str, bool]]]:
        """Per group of a batch's cells (``cells_sql``, fulldomain_nodes.sql.j2), the statement
        part (keys, _adb_n, _adb_ok) that says its size and whether every model accepts it, and
        the CTEs it reads: the cells and groups are computed in the judging statement itself,
        unless a model materializes its verdicts (they then live in tables, replaced per ``role``)."""
        e, s = self.eng, self.s
        # record owners: a distribution-type model reads the groups by their facts (a table made from them)
        inline = not any(m.materialize for m in self.models) and not self.persons
        ctes: list[tuple[str, str, bool]] = []

        def put(name: str, sql: str, shared: bool) -> str:
            if not inline:
                return s.put(f"{role}:{name}", sql)
            ctes.append((f"_adb_{name}", sql, shared))
            return f"_adb_{name}"

        # with a sensitive attribute the models read the cells and the groups, each more than once
        cells = put("cells", cells_sql, bool(self.sa))
        if self.sa:
            groups = put("groups", e.render("check_groups.sql.j2", keys=self.keys, cells=cells,
                                            persons=self.persons).sql, True)
        else:  # the cells are the groups (fulldomain_nodes.sql.j2 counts them as _adb_n too)
            groups = cells
        ctx = GroupContext(keys=self.keys, cells=cells, groups=groups, scope=["_adb_ln"], **self.ctx_base)
        if not self.prepared:
            for m in self.models:
                m.prepare(ctx)
            self.prepared = True
        parts = [ident(s.table(m.judge(ctx).sql)) if m.materialize else f"({m.judge(ctx).sql})"
                 for m in self.models]
        k = ", ".join(self.keys)
        if len(parts) == 1:  # one row per group already
            return f"SELECT {k}, _adb_n, coalesce(_adb_ok, FALSE) AS _adb_ok FROM {parts[0]} AS v", ctes
        union = " UNION ALL ".join(f"SELECT {k}, _adb_n, _adb_ok FROM {p} AS v" for p in parts)
        return (f"SELECT {k}, max(_adb_n) AS _adb_n, bool_and(coalesce(_adb_ok, FALSE)) AS _adb_ok "
                f"FROM ({union}) AS u GROUP BY ALL"), ctes

    def kept_groups(self, node: tuple[int, ...]) -> str:
        """(_adb_ln, _adb_g...) of the groups of ``node`` that every model accepts (once per node)."""
        if node not in self.kept:
            ok, ctes = self._ok(self.eng.render("fulldomain_nodes.sql.j2", **self.spec([node])).sql, "kept")
            with_ = "".join(f"{ident(n)} AS{' MATERIALIZED' if m else ''} ({q}), " for n, q, m in ctes)
            self.kept[node] = self.s.table(f"WITH {with_}o AS ({ok}) SELECT * FROM o WHERE _adb_ok")
        return self.kept[node]

    def kept_labels(self, node: tuple[int, ...]) -> str:
        """The kept groups of ``node`` by their labels (_adb_g<i> as text)."""
        kept = self.kept_groups(node)
        cols = ", ".join(f"k{i}.label AS _adb_g{i}" for i in range(self.d))
        joins = " ".join(f"JOIN {ident(self.codes)} AS k{i} ON k{i}.qi = {i} AND k{i}.level = {l} "
                         f"AND k{i}.code = g._adb_g{i}" for i, l in enumerate(node))
        return self.s.table(f"SELECT {cols} FROM {ident(kept)} AS g {joins}")

    def release_metrics(self, node: tuple[int, ...]) -> dict[str, float]:
        """The loss and the non-uniform entropy of ``node``'s release, in one statement."""
        r = self.eng.fetch(self.eng.render("fulldomain_metrics.sql.j2", lev=self.counted, kept=self.kept_groups(node),
                                           card=self.codes, d=self.d, levels=node, total=self.total,
                                           leaves=self.leaves))[0]
        return {"loss": float(r["loss"] or 0.0), "entropy": float(r["entropy"] or 0.0)}

    def search(self, metric: str, progress=None, report: bool = True):
        """The best node by ``metric``, the minimal satisfying nodes, and the candidates' metrics; with
        ``report``, the best node's loss and entropy too (one statement, :meth:`release_metrics`)."""
        by_height = _by_height(self.heights)
        prune = all(m.monotonic for m in self.models) and (
            self.limit == 0 or all(m.suppression_monotonic for m in self.models))
        # without suppression (or with a metric that only worsens upwards) the optimum is among the
        # minimal satisfying nodes
        monotone_metric = metric in ("height", "precision") or self.limit == 0
        self.need_loss = metric == "loss"
        sat: dict[tuple, dict | None] = {}  # satisfying nodes -> their judged values (None: implied)
        judged: dict[tuple, dict] = {}
        status = _Tags(self.heights)
        events.phase("lattice", total=int(status.a.size), unit="nodes settled")

        def judge(pending):
            res = self.evaluate(pending) if pending else {}
            judged.update(res)
            for n, r in res.items():
                ok = r["suppressed"] <= self.limit
                status.set(n, ok)
                if ok:
                    sat[n] = r
                if prune:  # a satisfying node makes every more general node satisfy, a failing one
                    # every more specific node fail (monotonicity; predictive tagging)
                    status.tag_closure(n, ok)

        if prune:
            # Top-down first, a height at a time, while a height's untagged nodes fit one batch:
            # a failing node tags everything below it, so where few nodes satisfy (k-anonymity
            # without suppression) this judges just the satisfying nodes and the maximal failing
            # ones (Adult, k = 5: 107 nodes in 6 queries, against 197 in 20 by chains alone).
            # Every untagged node there has only satisfying successors (one failing successor
            # would have tagged it). The first query also judges the bottom node: when it
            # satisfies, so does every node, and the search ends there.
            bottom = [by_height[0][0]]
            for h in sorted(by_height, reverse=True):
                pending = status.untagged(height=h)
                if len(pending) > BATCH:
                    break
                judge(list(dict.fromkeys(pending + bottom)))  # one node: top and bottom are one
                bottom = []
                if progress and pending:
                    progress({"height": h, "checked": self.checked, "satisfying": len(sat), "done": status.settled()})
            # Then Flash-style [Kohlmayer et al. 2012]: from every untagged node (bottom-up), a chain of
            # successors to the top, binary-searched for its lowest satisfying node; each check
            # tags the more general (satisfying) or more specific (failing) part of the lattice
            # chains from up to BATCH untagged nodes at a time, their midpoints judged in one query
            while True:
                starts = status.untagged(limit=BATCH)
                if not starts:
                    break
                chains = [[_chain(n, self.heights, status), 0, None] for n in starts]
                for c in chains:
                    c[2] = len(c[0]) - 1
                while True:
                    mids = {}
                    for c in chains:
                        path, lo, hi = c
                        live = [j for j in range(lo, hi + 1) if path[j] not in status] if lo <= hi else []
                        if live:
                            mids[id(c)] = live[len(live) // 2]
                    if not mids:
                        break
                    judge(list(dict.fromkeys(c[0][mids[id(c)]] for c in chains if id(c) in mids)))
                    for c in chains:
                        if id(c) in mids:
                            j = mids[id(c)]
                            if status[c[0][j]]:
                                c[2] = j - 1
                            else:
                                c[1] = j + 1
                if progress:
                    progress({"checked": self.checked, "satisfying": len(sat), "done": status.settled()})
        else:
            for h in sorted(by_height):
                judge([n for n in by_height[h] if n not in status])
                if progress:
                    progress({"height": h, "checked": self.checked, "satisfying": len(sat), "done": status.settled()})
        for n in status.satisfying():  # the satisfying nodes implied by tagging
            sat.setdefault(n, None)
        if not sat:
            closest = min(judged, key=lambda n: (judged[n]["suppressed"], sum(n), n))
            raise InfeasibleError(
                f"no level vector satisfies the request within {self.limit} suppressed rows "
                f"({self.max_suppression:g} of {self.total}); the closest node is "
                f"{dict(zip([q.column for q in self.qis], closest))} with {judged[closest]['suppressed']} rows in "
                f"failing groups")
        minimal = [n for n in sat if not any(p in sat for p in _preds(n))]
        if monotone_metric:
            cands = minimal
            missing = [n for n in cands if sat[n] is None or "dm" not in sat[n]]
            if missing:
                sat.update(self.evaluate(missing))
        elif metric in ("dm", "loss"):
            # Branch and bound, a height at a time. A satisfying node without suppressed rows beats
            # every more general node (merged classes cost more, a suppressed row costs the most).
            # And every node N bounds all nodes M above it from below: each row of M is suppressed
            # (DM cost |T|, loss 1 per cell) or kept in a class that contains its class of N (DM
            # cost >= that class's size, loss >= its generalization cost at N's levels), so
            # metric(M) >= metric_lb(N), N's metric with no row suppressed. Once that bound reaches
            # the best value found (at a lower height, which also wins ties), nothing above N can
            # be better.
            cands = []
            dominated = _Tags(self.heights)
            bounds: list[tuple[float, tuple[int, ...]]] = []
            best = float("inf")
            tol = 0 if metric == "dm" else 1e-9  # loss is a float sum: prune only clearly above

            def add_bounds(res):
                bounds.extend((r[f"{metric}_lb"], n) for n, r in res.items() if f"{metric}_lb" in r)

            add_bounds(judged)
            for h in sorted(by_height):
                level = [n for n in by_height[h] if n in sat and n not in dominated]
                missing = [n for n in level if sat[n] is None]
                if missing:
                    res = self.evaluate(missing)
                    sat.update(res)
                    add_bounds(res)
                for n in level:
                    cands.append(n)
                    best = min(best, sat[n][metric])
                    if sat[n]["suppressed"] == 0:
                        dominated.tag_closure(n, True)
                keep = []
                for b, n in bounds:
                    if b >= best + tol:
                        dominated.tag_closure(n, True)
                    else:
                        keep.append((b, n))
                bounds = keep
        else:
            cands = list(sat)
            missing = [n for n in cands if sat[n] is None]
            if missing:
                sat.update(self.evaluate(missing))
        values = {}
        for n in cands:
            r = dict(sat[n])
            kept_rows = self.total - r["suppressed"]
            r["aecs"] = kept_rows / r["classes"] if r["classes"] else float("inf")
            r["height"] = sum(n)
            r["precision"] = 1 - sum(l / h if h else 0 for l, h in zip(n, self.heights)) / self.d
            values[n] = r
        key = {"precision": lambda n: (-values[n]["precision"], sum(n), n)}.get(metric)
        if metric == "entropy":
            for n in cands:
                values[n].update(self.release_metrics(n))
        if key is None:
            key = lambda n: (values[n][metric], sum(n), n)  # noqa: E731
        best = min(cands, key=key)
        if report and not {"loss", "entropy"} <= set(values[best]):  # the result's, once
            values[best] = {**self.release_metrics(best), **values[best]}
        self.need_loss = True
        return best, minimal, values


def _chain(n: tuple[int, ...], heights: list[int], status: dict) -> list[tuple[int, ...]]:
    """A chain from ``n`` up to the top of the lattice, one level at a time, preferring untagged
    successors and, among them, the QI with the most levels left."""
    path, cur = [n], n
    while True:
        succ = [cur[:i] + (l + 1,) + cur[i + 1:] for i, l in enumerate(cur) if l < heights[i]]
        if not succ:
            return path
        untagged = [x for x in succ if x not in status]
        pool = untagged or succ
        cur = max(pool, key=lambda x: (max(h - l for h, l in zip(heights, x)), [-v for v in x]))
        path.append(cur)


class _Tags:
    """Every lattice node's tag (untagged, failing, satisfying) as a d-dimensional array, so that
    predictive tagging of the box above or below a node is one slice assignment."""

    def __init__(self, heights: list[int]):
        self.a = np.full([h + 1 for h in heights], -1, dtype=np.int8)

    def __contains__(self, n) -> bool:
        return self.a[n] >= 0

    def settled(self) -> int:
        """Nodes tagged so far (judged, or implied by a judged node)."""
        return int((self.a >= 0).sum())

    def __getitem__(self, n) -> bool:
        v = self.a[n]
        if v < 0:
            raise KeyError(n)
        return bool(v)

    def set(self, n, ok: bool) -> None:
        self.a[n] = int(ok)

    def tag_closure(self, n, ok: bool) -> None:
        """Tag the untagged nodes above a satisfying ``n`` as satisfying, below a failing one as failing."""
        box = self.a[tuple(slice(l, None) if ok else slice(0, l + 1) for l in n)]
        box[box < 0] = int(ok)

    def satisfying(self) -> list[tuple[int, ...]]:
        return [tuple(i) for i in np.argwhere(self.a == 1).tolist()]

    def untagged(self, height: int | None = None, limit: int | None = None) -> list[tuple[int, ...]]:
        """The untagged nodes (of ``height``), lowest first, then in lexicographic order."""
        idx = np.argwhere(self.a < 0)  # lexicographic
        h = idx.sum(axis=1)
        idx = idx[h == height] if height is not None else idx[np.argsort(h, kind="stable")]
        return [tuple(i) for i in idx[:limit].tolist()]


def _by_height(heights: list[int]) -> dict[int, list[tuple[int, ...]]]:
    """Every node of the lattice by its height (sum of levels), each height's in lexicographic order."""
    idx = np.argwhere(np.ones([h + 1 for h in heights], dtype=bool))
    out: dict[int, list[tuple[int, ...]]] = {h: [] for h in range(sum(heights) + 1)}
    for n, h in zip(idx.tolist(), idx.sum(axis=1).tolist()):
        out[h].append(tuple(n))
    return out


def _preds(n: tuple[int, ...]):
    for i, l in enumerate(n):
        if l > 0:
            yield n[:i] + (l - 1,) + n[i + 1:]
