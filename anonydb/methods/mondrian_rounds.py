"""Mondrian's plans: how the top-down cuts of :mod:`anonydb.methods.mondrian` are run.

Every plan makes the same cuts [LeFevre et al. 2006; spec-closeness-slicing 5.1]: a partition's
cut depends only on its own rows and on whole-table quantities (the QIs' ranges that normalize the
spans, the distribution t-closeness and beta-likeness compare against, (n,t)'s reference
histograms), so the plans differ in how the rows are carried from round to round, never in the
classes they give.

- ``levelwise``: every round handles all open partitions at once with a few set-based statements
  over a partition-id column (``sql/mondrian_*.sql.j2``): sizes and code ranges, ranked cut
  dimensions, a histogram per partition over its cut dimension, the median cut, the halves'
  counts, the models' verdicts keyed (partition, dimension, side), and the relabelling of the
  open rows. Python loops over rounds and the (at most two) attempts of a round, never over rows
  or partitions. Portable.
- ``recursive`` (DuckDB): the same round as the step of one recursive statement
  (``mondrian_recursive.sql.j2``): on small tables a round's cost is its statements' fixed cost.
- ``fragments``: the distributed Mondrian of Antonatos et al. (mosaicrown/mondrian, PerCom 2021):
  *top*, the first rounds cut the coded rows without rewriting them: each round reads a view that
  gives every row its open partition from the cuts made so far (:class:`Top`, a CASE tree over the
  codes built from the few top partitions' cuts), and the rounds' statements are the level-wise
  ones; *assign*, one pass tags each row with its fragment (or its final partition); *finish*,
  every fragment runs the recursive plan on its own rows, with no rows exchanged between
  fragments: DuckDB in a pool of embedded single-threaded DuckDBs, at most its ``threads`` at
  once (``engines.duckdb.per_group``), Spark in one grouped step on the executors
  (``applyInArrow``); PostgreSQL has no way to run statements of one session in parallel, so
  after the assign pass its rounds go on level-wise over the tagged rows (each statement as
  parallel as its planner makes it).

How a cut inside a fragment is judged: by the same model SQL with the same whole-table state,
computed once before the top and shipped to every fragment as small side tables: the sensitive
attribute's global distribution (t-closeness, beta-likeness, delta-disclosure, the l-diversity
variants that read it), the hierarchy codes (hierarchical cuts, hierarchical EMD), and whatever a
model's ``prepare`` built (k-map's and delta-presence's public-table counts). (n,t)-closeness
judges a cut against the partition's ancestors, (B,t)-privacy each QI tuple against the whole
table's prior, and ordered-EMD t-closeness joins with ASOF, none of which the recursive statement
can run: with them the fragment plan cuts the top without rewriting the rows and goes on
level-wise after the assign pass (same classes). Models that cannot judge a cut at all
(personalized privacy, (epsilon,m), multiple-QID k: ``Model.candidate`` False) are judged by the
release's verification alone, under every plan.
"""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any, Iterable

from .. import events as run_events
from ..checker import check
from ..errors import InfeasibleError, InputError
from ..models import GroupContext, NTCloseness
from ..release.publish import PERSON_COLUMN
from ..schema import is_numeric_type
from ..sqlgen import ident, temp_name

#: while (open rows x QIs) is at most this, a round judges every dimension of every partition in
#: one attempt; above it, the widest dimension first and the others only where it fails
ONE_ATTEMPT_ROWS = 4_000_000
#: the ways to run the rounds (``anonymize(plan=...)``)
PLANS = ("auto", "recursive", "levelwise", "fragments")
#: the top stops once this many partitions are open: a row's partition is a CASE tree over its
#: codes, which DuckDB evaluates in time growing with its branches (10M rows: depth 9, 0.47 s a scan;
#: depth 12, 2.3 s; a bare GROUP BY 0.05 s), so deeper trees cost more than the relabels they save
TOP_PARTS = 512
#: the rounds' view of the top tags a fragment's rows with this plus its id (out of the view)
FRAGMENT = 1 << 40


def _fmt(x: Any) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x} ({float(x):.4f})"
    if isinstance(x, float):
        return f"{x:.4f}"
    return str(x)


def _double(x: float) -> str:
    """A code as an exact SQL literal (the shortest text that reads back as the same double)."""
    return f"CAST('{float(x)!r}' AS DOUBLE)"


class Top:
    """The top of the fragment plan: the partitions cut so far, as a CASE tree over a row's codes.

    ``view`` holds the coded rows of the open partitions, each with the partition it is in now; the
    rows are never rewritten. A cut on an ordered, numeric or date code sends ``c <= m`` left
    (strict) or ``c < m``, and of the ties the first ``tl`` by row id (relaxed: the tl-th tied row
    id, read once per round); a hierarchical cut sends a code to the child of the lowest common
    ancestor whose leaf interval holds it. A partition found final maps its rows to ``-1 - id``
    (out of the view) until the assign pass writes them."""

    def __init__(self, planner: "Planner"):
        self.p = planner
        e = planner.eng
        self.base = planner.work  # the coded rows, every one in partition 0
        self.columns = [c for c, _ in e.columns(self.base)]
        self.cuts: dict[int, tuple[int, list[tuple[str, int]], int]] = {}  # pid -> (dim, [(cond, child)], else child)
        self.closed: set[int] = set()
        self.view = temp_name("top")
        self.open: dict[int, int] = {0: int(planner.total)}  # open partition -> its size
        self.small = 0  # open partitions of at most this size are fragments: the top cuts them no more
        self.made = False
        self._refresh()

    def expr(self, pid: int = 0, final: bool = False) -> str:
        """The partition of a row; ``final`` False (the rounds' view): a fragment's rows out of it."""
        cut = self.cuts.get(pid)
        if cut is None:
            if pid in self.closed:
                return str(-1 - pid)
            return str(pid) if final or self.open.get(pid, 0) > self.small else str(FRAGMENT + pid)
        _, branches, other = cut
        return ("CASE " + " ".join(f"WHEN {cond} THEN {self.expr(c, final)}" for cond, c in branches)
                + f" ELSE {self.expr(other, final)} END")

    def tagged(self, final: bool = True) -> str:
        """Every coded row with its partition (negative: final) as _adb_pid."""
        cols = ", ".join("_adb_e AS _adb_pid" if c == "_adb_pid" else ident(c) for c in self.columns)
        return (f"SELECT {cols} FROM (SELECT *, CAST({self.expr(0, final)} AS BIGINT) AS _adb_e "
                f"FROM {ident(self.base)}) AS b")

    def _refresh(self) -> None:
        self.p.eng.execute(f"CREATE OR REPLACE TEMP VIEW {ident(self.view)} AS SELECT * FROM ({self.tagged(False)}) "
                           f"AS t WHERE _adb_pid >= 0 AND _adb_pid < {FRAGMENT}")
        self.made = True

    def advance(self, chosen: str, children: str) -> int:
        """Add this round's cuts (``chosen``: pid, dim, lcad, m, tl) and their children (``children``:
        pid, side, new id, size); the open partitions judged and not cut are final (returns how
        many), the fragments stay open."""
        p, e = self.p, self.p.eng
        hi = "h._adb_hi" if p.hq else "CAST(NULL AS DOUBLE)"
        join = (f" LEFT JOIN {ident(p.hq)} AS h ON h._adb_dim = c._adb_dim AND h._adb_depth = c._adb_lcad + 1 "
                f"AND h._adb_code = ch._adb_side") if p.hq else ""
        rows = e.fetch_rows(f"SELECT ch._adb_pid, ch._adb_side, ch._adb_new, c._adb_dim, c._adb_lcad, c._adb_m, "
                            f"c._adb_tl, {hi}, ch._adb_n FROM {ident(children)} AS ch JOIN {ident(chosen)} AS c "
                            f"ON c._adb_pid = ch._adb_pid{join} ORDER BY 1, 2")[1]
        ties = self._ties(chosen) if p.relaxed else {}
        by: dict[int, list[tuple]] = {}
        for r in rows:
            by.setdefault(int(r[0]), []).append(r)
        judged = [pid for pid, n in self.open.items() if n > self.small]
        final = {pid for pid in judged if pid not in by}
        self.closed |= final
        self.open = {pid: n for pid, n in self.open.items() if n <= self.small}
        self.open.update({int(r[2]): int(r[8]) for r in rows})
        for pid, kids in by.items():
            dim, lcad, m = int(kids[0][3]), kids[0][4], kids[0][5]
            c = f"_adb_c{dim}"
            if lcad is not None:  # a hierarchical cut: the children in leaf order, each up to its last leaf
                branches = [(f"{c} <= {_double(k[7])}", int(k[2])) for k in kids[:-1]]
            elif p.relaxed:
                thr = ties.get(pid)
                cond = f"{c} < {_double(m)}" + (f" OR ({c} = {_double(m)} AND _adb_rid <= {int(thr)})"
                                               if thr is not None else "")
                branches = [(f"({cond})", int(kids[0][2]))]
            else:
                branches = [(f"{c} <= {_double(m)}", int(kids[0][2]))]
            self.cuts[pid] = (dim, branches, int(kids[-1][2]))
        self._refresh()
        return len(final)

    def _ties(self, chosen: str) -> dict[int, int]:
        """Relaxed cuts: per ordered cut, the row id of the last tied row (code = m) sent left."""
        v = "CASE c._adb_dim" + "".join(f" WHEN {i} THEN CAST(w._adb_c{i} AS DOUBLE)"
                                          for i in range(len(self.p.qis))) + " END"
        rows = self.p.eng.fetch_rows(
            f"SELECT _adb_pid, max(_adb_rid) FROM (SELECT w._adb_pid, w._adb_rid, c._adb_tl, row_number() OVER "
            f"(PARTITION BY w._adb_pid ORDER BY w._adb_rid) AS _adb_rn FROM {ident(self.view)} AS w "
            f"JOIN {ident(chosen)} AS c ON c._adb_pid = w._adb_pid WHERE c._adb_lcad IS NULL AND {v} = c._adb_m) "
            f"AS t WHERE _adb_rn <= _adb_tl GROUP BY _adb_pid")[1]
        return {int(a): int(b) for a, b in rows}

    def drop(self) -> None:
        if self.made:
            self.p.eng.drop(self.view, view=True)
            self.made = False


class Planner:
    """The rounds of every plan (the module's docstring)."""

    def __init__(self, eng, s, qis, hq, sa, relaxed, try_all_dims, models, base, rid, total, types, sa_hier, qi_cols,
                 person: str | None = None, varying: bool = False):
        self.rid = rid
        #: record owners: ``base`` holds one row per person (no sensitive attribute: the plain plan
        #: counts persons) or per (person, value) fact with the owner flag _adb_own; ``varying``: it
        #: holds the records, their QIs varying within a person, each carrying its person (_adb_p)
        self.person = person
        self.varying = varying
        self.persons = person is not None and bool(sa)
        self.eng, self.s, self.qis, self.hq, self.sa = eng, s, qis, hq, sa
        self.relaxed, self.try_all_dims, self.models = relaxed, try_all_dims, models
        self.base, self.total, self.types, self.sa_hier, self.qi_cols = base, total, types, sa_hier, qi_cols
        self.nt = [m for m in models if isinstance(m, NTCloseness)]
        self.nt_n = min((m.n for m in self.nt), default=None)
        self.nt_extra = dict
        #: models judging tuples against their group ((B,t)-privacy) read the rows' QI tuples
        self.bt = [m for m in models if getattr(m, "needs_members", False)]
        self.qids = None
        #: a cut leaves two halves that must each satisfy every model: smaller partitions are final at once
        self.min_cut = 2 * max((m.min_rows() for m in models), default=1)
        self.facts = 0

    def render(self, template: str, **kw):
        return self.eng.render(template, qis=self.qis, hq=self.hq, sensitive=self.sa, relaxed=self.relaxed,
                               min_cut=self.min_cut, persons=self.persons, owners=self.persons and not self.varying,
                               varying=self.varying, person=self.person, **kw)

    def row_columns(self) -> str:
        """The columns a final row keeps for the release (row id, partition, codes, sensitive value)."""
        return ", ".join(["_adb_rid", "_adb_pid"] + self.tuple_columns())

    def tuple_columns(self) -> list[str]:
        """A row's codes and carried sensitive value: what the partitions are cut on."""
        return ([f"_adb_c{i}" for i in range(len(self.qis))] + (["_adb_sa"] if self.sa else [])
                + (["_adb_own"] if self.persons and not self.varying else []) + (["_adb_p"] if self.varying else []))

    def bind_members(self, hierarchies, kinds) -> None:
        """Number the distinct QI tuples and estimate each tuple-judging model's prior over them."""
        if not self.bt:
            return
        from ..models.prior import distinct_qids

        self.qids = distinct_qids(self.eng, self.s, self.base, self.qi_cols)
        for m in self.bt:
            m.bind(self.eng, self.base, self.qi_cols, self.sa, qids=self.qids, scratch=self.s,
                   hierarchies=hierarchies, kinds=kinds)

    def ctx(self, cells: str, groups: str, keys: list[str], glob: str | None, domain: int, **extra) -> GroupContext:
        return GroupContext(engine=self.eng, keys=keys, cells=cells, groups=groups, glob=glob, total=self.total,
                            domain=domain, sensitive=self.sa,
                            sensitive_numeric=bool(self.sa) and is_numeric_type(self.types[self.sa]),
                            sa_hierarchy=self.sa_hier, scratch=self.s, qi_columns=self.qi_cols,
                            persons=self.persons, facts=self.facts, glob_persons=self.total, **extra)

    def groups_of(self, cells: str, keys: list[str]) -> str:
        if self.sa:
            return self.s.table(self.eng.render("check_groups.sql.j2", keys=keys, cells=cells, persons=self.persons))
        return self.s.table(f"SELECT {', '.join(ident(k) for k in keys)}, sum(_adb_cnt) AS _adb_n FROM {ident(cells)} "
                            f"GROUP BY ALL")

    def judge(self, cells: str, keys: list[str], first: bool = False, groups: str | None = None,
              members: str | None = None, inline: bool = False) -> str:
        """SQL of (keys..., _adb_ok): every model holds on the group (the models' own verdict
        plans; the expensive ones materialized, unless ``inline``: inside one statement)."""
        groups = groups or self.groups_of(cells, keys)
        fg = {"fgroups": "_adb_fgroups"} if inline and self.persons else {}
        ctx = self.ctx(cells, groups, keys, self.glob, self.domain, members=members, **fg, **self.nt_extra())
        if first:
            for m in self.models:
                m.prepare(ctx)
        parts = [ident(self.s.table(m.judge(ctx).sql)) if m.materialize and not inline
                 else f"({m.judge(ctx).sql})" for m in self.models]
        k = ", ".join(ident(x) for x in keys)
        union = " UNION ALL ".join(f"SELECT {k}, _adb_ok FROM {p} AS v" for p in parts)
        return f"SELECT {k}, bool_and(coalesce(_adb_ok, FALSE)) AS _adb_ok FROM ({union}) AS u GROUP BY ALL"

    # the whole table's distribution and the (n,t) references -------------------------------------
    def setup(self) -> None:
        e, s = self.eng, self.s
        self.work = s.table(self.render("mondrian_work.sql.j2", base=self.base, rid=self.rid, qids=self.qids,
                                        qid_cols=self.qi_cols))
        ordered = [(i, q) for i, q in enumerate(self.qis) if q.kind == "ordered"]
        if ordered:  # codes 0 .. card - 1, every one taken by some row
            top = e.fetch_rows("SELECT " + ", ".join(f"max(_adb_c{i})" for i, _ in ordered) + f" FROM {ident(self.work)}")[1][0]
            for (_, q), t in zip(ordered, top):
                q.card, q.range = int(t) + 1, float(t)
        if self.sa:
            count = "count(DISTINCT _adb_p)" if self.varying else "count(*)"
            self.glob = s.table(f"SELECT _adb_sa, {count} AS _adb_cnt FROM {ident(self.work)} GROUP BY _adb_sa")
            self.domain, self.facts = e.fetch_rows(f"SELECT count(*), sum(_adb_cnt) FROM {ident(self.glob)}")[1][0]
        else:
            self.glob, self.domain = None, 0
        if self.nt:
            # (n,t): reference histograms of every partition with >= n rows, and each open
            # partition's Parent(P) (itself and its ancestors with >= n rows) [spec 5.2]
            self.refs = s.table(f"SELECT CAST(0 AS BIGINT) AS _adb_set, CAST(0 AS BIGINT) AS _adb_sup, _adb_sa, _adb_cnt "
                                f"FROM {ident(self.glob)}")
            self.anc = s.table("SELECT CAST(0 AS BIGINT) AS _adb_pid, CAST(0 AS BIGINT) AS _adb_ref")
        # the root must satisfy every model, or no release can
        own = ", sum(_adb_own) AS _adb_own" if self.persons else ""
        if self.varying:  # the persons of the root, per value, and once each (their first row by value)
            first = ("CASE WHEN row_number() OVER (PARTITION BY _adb_pid, _adb_p ORDER BY _adb_sa NULLS LAST) = 1 "
                     "THEN 1 ELSE 0 END AS _adb_own" if self.sa else "1 AS _adb_own")
            cells = s.table(f"SELECT _adb_pid{', _adb_sa' if self.sa else ''}, count(DISTINCT _adb_p) AS _adb_cnt{own} "
                            f"FROM (SELECT *, {first} FROM {ident(self.work)}) AS w GROUP BY ALL")
        else:
            cells = s.table(f"SELECT _adb_pid{', _adb_sa' if self.sa else ''}, count(*) AS _adb_cnt{own} "
                            f"FROM {ident(self.work)} GROUP BY ALL")
        self.nt_extra = self._nt_extra_root
        members = s.table(f"SELECT _adb_pid, _adb_qid, count(*) AS _adb_m FROM {ident(self.work)} GROUP BY ALL") \
            if self.bt else None
        ok = self.judge(cells, ["_adb_pid"], first=True, members=members)
        if not e.scalar(f"SELECT bool_and(_adb_ok) FROM ({ok}) AS o"):
            raise InfeasibleError(self._why_infeasible(cells, members))
        self.nt_extra = self._nt_extra_cut

    def _nt_extra_root(self):
        if not self.nt:
            return {}
        return {"ancestors": self.anc, "references": self.refs}

    def _nt_extra_cut(self):
        if not self.nt:
            return {}
        a = self.s.table(f"SELECT _adb_pid, _adb_ref FROM {ident(self.anc)}")
        return {"ancestors": a, "references": self.refs}

    def _why_infeasible(self, cells: str, members: str | None) -> str:
        """Judge the whole table as one group with the checker, to say which model fails and why."""
        person = f", {ident(self.person)}" if self.person else ""
        whole = self.s.table(f"SELECT 'all' AS whole_table{', ' + ident(self.sa) if self.sa else ''}{person} "
                             f"FROM {ident(self.base)}")
        models = [copy.deepcopy(m) for m in self.models
                  if not isinstance(m, NTCloseness) and not getattr(m, "needs_members", False)]
        reasons = []
        for m in self.bt:
            groups = self.groups_of(cells, ["_adb_pid"])
            ctx = self.ctx(cells, groups, ["_adb_pid"], self.glob, self.domain, members=members)
            worst = self.eng.scalar(f"SELECT max(_adb_num) FROM ({m.judge(ctx).sql}) AS v")
            if worst is not None and worst > float(m.t):
                reasons.append(f"{m.name} (b = {m.b}, t = {float(m.t):g}): in the whole table as one group some "
                               f"tuple's posterior is already {worst:.4f} from its prior; raise t or the bandwidth")
        if models:
            r = check(whole, ["whole_table"], self.sa, models=models, engine=self.eng,
                      hierarchies={self.sa: self.sa_hier} if self.sa_hier else None, max_groups=0, person=self.person)
            for v in r.verdicts:
                if not v.holds:
                    ach = ", ".join(f"{k} = {_fmt(x)}" for k, x in v.achieved.items())
                    reasons.append(f"{v.model} {v.params}: the whole table of {self.total} "
                                   f"{'persons' if self.person else 'rows'} achieves only {ach}"
                                   + (f" ({v.note})" if v.note else ""))
        return ("infeasible: no partition of this table can satisfy the request, because the whole table "
                "does not: " + ("; ".join(reasons) or "a model fails on the whole table"))

    # the rounds -----------------------------------------------------------------------------------
    def run(self, progress=None, plan: str = "auto") -> tuple[str, int, str | None]:
        """Partition the rows: (the final rows: row id, partition id, codes and carried sensitive
        value (:meth:`row_columns`); rounds; partition tree, None from the recursive plan, which
        (n,t)-closeness, the tree's only reader, never takes)."""
        self.setup()
        # the bar's unit: persons when a row is a person or a (person, value) fact (their _adb_own
        # counts persons), the records when QIs vary within a person (a person's records may split)
        self.goal = int(self.eng.scalar(f"SELECT count(*) FROM {ident(self.work)}")) if self.varying \
            else int(self.total)
        run_events.phase("rounds", total=self.goal,
                         unit="persons closed" if self.person and not self.varying else "rows closed")
        if plan == "auto":
            frm = int(getattr(self.eng, "fragments_from", 0))  # measured per engine: BENCHMARKS.md, Mondrian
            plan = "recursive" if self.recursive_ok() else "fragments" if frm and self.total >= frm else "levelwise"
        self.plan = plan
        if plan == "recursive":
            return self._run_recursive(progress)
        return self._run_levelwise(progress, top=plan == "fragments")

    def finish_rows(self, top: bool) -> int:
        """The size below which every open partition is finished on its own (0: never): the fragment
        plan's, where the engine has a grouped step and the models can be judged in it; Spark's
        level-wise plan hands off too (the grouped step is its cheapest way to finish)."""
        if self._fragments_supported() is not None:
            return 0
        return int(getattr(self.eng, "finish_rows", 0) if top else getattr(self.eng, "fragment_rows", 0))

    def recursive_ok(self) -> bool:
        """Whether ``plan="auto"`` takes the one-statement plan: it can run here (DuckDB 1.3+; models
        judged from the halves' counts alone: (n,t) grows a partition tree and (B,t) reads QI tuples
        round by round) and the table is small enough that one attempt per round is the level-wise
        plan's choice too (above that the level-wise plan's two attempts are faster, and the
        recursion's working set grows with the table)."""
        return self._recursive_supported() is None and self.total * len(self.qis) <= ONE_ATTEMPT_ROWS

    def _recursive_supported(self) -> str | None:
        """Why the one-statement plan cannot run here, or None."""
        if self.eng.dialect != "duckdb":
            return f"it is DuckDB SQL (this engine is {self.eng.dialect})"
        if self.nt or self.bt:
            return "(n,t)-closeness and (B,t)-privacy are judged round by round"
        if any(getattr(m, "distance", None) == "ordered" for m in self.models):
            return "t-closeness with ordered EMD joins with ASOF, which DuckDB does not run inside a recursive statement"
        import duckdb

        if tuple(int(x) for x in duckdb.__version__.split(".")[:2] if x.isdigit()) < (1, 3):
            return f"WITH RECURSIVE ... USING KEY needs DuckDB 1.3 or later (this is {duckdb.__version__})"
        return None

    def _run_recursive(self, progress=None) -> tuple[str, int, None]:
        """Every round in one recursive statement (``mondrian_recursive.sql.j2``); the partitions
        and their ids equal the level-wise plan's."""
        why = self._recursive_supported()
        if why:
            raise InputError(f"plan='recursive' cannot run here: {why}; use plan='levelwise'")
        keys = ["_adb_pid", "_adb_dim", "_adb_side"]
        groups_sql = self.eng.render("check_groups.sql.j2", keys=keys, cells="_adb_split",
                                     persons=self.persons).sql if self.sa else None
        ok = self.judge("_adb_split", keys, groups="_adb_groups" if self.sa else "_adb_split", inline=True)
        work, tuples = self.work, self._tuples()
        assign = self.s.table(self.render("mondrian_recursive.sql.j2", work=tuples or work, ok=ok,
                                          groups_sql=groups_sql, try_all_dims=self.try_all_dims,
                                          from_rows=(self.relaxed and bool(self.sa)) or self.varying, with_qid=False,
                                          rows_out=True, weighted=bool(tuples)))
        rounds, classes = self.eng.fetch_rows(f"SELECT max(_adb_lvl), count(DISTINCT _adb_pid) "
                                              f"FROM {ident(assign)}")[1][0]
        if tuples:  # every row takes its tuple's partition
            cols = self.tuple_columns()
            on = " AND ".join(f"w.{c} IS NOT DISTINCT FROM a.{c}" for c in cols)
            assign = self.s.table(f"SELECT w._adb_rid, a._adb_pid, a._adb_lvl, {', '.join('w.' + c for c in cols)} "
                                  f"FROM {ident(work)} AS w JOIN {ident(assign)} AS a ON {on}")
        self.assign = assign
        if progress:
            progress({"round": int(rounds), "open": 0, "classes": int(classes), "rows_open": 0, "done": self.goal})
        return self.assign, int(rounds), None

    def _tuples(self) -> str | None:
        """The work table's distinct (codes, sensitive value) tuples with their row counts _adb_wt,
        for the one-statement plan to cut instead of the rows, or None. Strict and hierarchical
        cuts never separate equal tuples (a row's side depends on its codes alone), so the
        partitions are the same; relaxed cuts split tied rows by row id. Kept when the tuples are
        at most 90% of the rows (Adult's 8 QIs: 18,109 tuples of 30,162 rows: the rounds' statement
        0.26 -> 0.20 s, for 13 ms of grouping and of giving the rows their tuple's partition)."""
        if self.relaxed or self.persons or self.varying:  # record owners count persons, not weighted rows
            return None
        cols = ", ".join(self.tuple_columns())
        tuples = self.s.table(f"SELECT min(_adb_rid) AS _adb_rid, _adb_pid, {cols}, CAST(count(*) AS BIGINT) AS _adb_wt "
                              f"FROM {ident(self.work)} GROUP BY _adb_pid, {cols}")
        if self.eng.scalar(f"SELECT count(*) FROM {ident(tuples)}") * 10 > self.total * 9:
            self.s.drop(tuples)
            return None
        return tuples

    def _run_levelwise(self, progress=None, top: bool = False) -> tuple[str, int, str]:
        """One round at a time: Python loops over rounds, each a few statements. ``top`` (the
        fragment plan): the first rounds read the coded rows through :class:`Top` instead of
        rewriting them, until the open partitions are small enough to finish on their own (or too
        many for the CASE tree); one pass then tags the rows, and the fragments are finished."""
        e, s = self.eng, self.s
        self.assign = s.table(f"SELECT {self.row_columns()} FROM {ident(self.work)} LIMIT 0")
        # the partition tree: every partition with its parent and size (the root has parent NULL)
        self.tree = s.table(f"SELECT CAST(0 AS BIGINT) AS _adb_pid, CAST(NULL AS BIGINT) AS _adb_parent, "
                            f"CAST({self.total} AS BIGINT) AS _adb_n")
        rnd, next_id, n_parts, n_rows, largest = 0, 1, 1, self.total, self.total
        closed = 0  # final partitions so far
        fragment_rows = self.finish_rows(top)
        cut_top = Top(self) if top else None
        if cut_top is not None:
            cut_top.small = fragment_rows
        try:
            while n_parts:
                if cut_top is not None and (largest <= fragment_rows or n_parts > TOP_PARTS):
                    self._assign(cut_top, fragment_rows if largest <= fragment_rows else 0)
                    cut_top = None
                if largest <= fragment_rows:  # every open partition fits one worker: finish each there
                    rnd = self._finish_fragments(rnd, progress, closed, fragment_rows)
                    break
                rnd += 1
                mark = len(s.names)
                work = cut_top.view if cut_top is not None else self.work
                chosen, children, sides = self._round(work, n_rows, next_id)
                if cut_top is None:  # final partitions: every open partition without an allowable cut
                    e.execute(f"INSERT INTO {ident(self.assign)} SELECT {self.row_columns()} FROM {ident(self.work)} "
                              f"WHERE _adb_pid NOT IN (SELECT _adb_pid FROM {ident(chosen)})")
                n_children, n_cut, rows_open, largest = e.fetch_rows(
                    f"SELECT count(*), count(DISTINCT _adb_pid), coalesce(sum(_adb_n), 0), coalesce(max(_adb_n), 0) "
                    f"FROM {ident(children)}")[1][0]
                old = self.work
                if self.nt and n_children:  # the partition tree: (n,t)-closeness verifies against it
                    e.execute(f"INSERT INTO {ident(self.tree)} SELECT _adb_new, _adb_pid, _adb_n FROM {ident(children)}")
                    self._advance_nt(children, sides)
                next_id += n_children
                if cut_top is not None:  # the fragments stay open, uncut
                    closed += cut_top.advance(chosen, children)
                    sizes = cut_top.open.values()
                    n_children, rows_open, largest = len(sizes), sum(sizes), max(sizes, default=0)
                else:
                    closed += n_parts - n_cut
                    if n_children:
                        self.work = s.put(f"work{rnd % 2}", self.render("mondrian_relabel.sql.j2", work=self.work,
                                                                       cuts=chosen, children=children,
                                                                       with_qid=bool(self.bt)))
                if progress:  # the children's counts are facts with persons: the open work in the bar's unit
                    now = ident(self.work) if cut_top is None else f"({cut_top.tagged()}) AS t WHERE _adb_pid >= 0"
                    left = int(rows_open) if not n_children or not (self.persons or self.varying) else int(e.scalar(
                        f"SELECT {'count(*)' if self.varying else 'sum(_adb_own)'} FROM {now}"))
                    progress({"round": rnd, "open": n_children, "classes": closed, "rows_open": int(rows_open),
                              "done": self.goal - left})
                n_parts, n_rows = n_children, int(rows_open)
                if n_children and old != self.work and old not in s.slots.values():  # the set-up's rows
                    s.drop(old)
                s.drop_since(mark, keep=[self.work] + ([self.anc] if self.nt else []))
            if cut_top is not None:  # every partition was final in the top: write them
                self._assign(cut_top)
        finally:
            if cut_top is not None:
                cut_top.drop()
        return self.assign, rnd, self.tree

    def _round(self, work: str, n_rows: int, next_id: int) -> tuple[str, str, str | None]:
        """One round over the open rows ``work``: (the chosen cuts, the children numbered from
        ``next_id`` with their sizes, the chosen halves' counts when (n,t) reads them)."""
        e, s = self.eng, self.s
        cand_all = s.put("cand", self.render("mondrian_cand.sql.j2", work=work))
        # Attempt 1: every partition's widest dimension; attempt 2 (try_all_dims): all remaining
        # dimensions of the partitions that failed, judged at once, the widest allowable wins.
        # While the open rows times the dimensions are few, all dimensions go in one attempt.
        if not self.try_all_dims:
            wheres = ["_adb_rank = 0"]
        elif n_rows * len(self.qis) <= ONE_ATTEMPT_ROWS:
            wheres = [None]
        else:
            wheres = ["_adb_rank = 0", "_adb_rank > 0 AND _adb_pid NOT IN (SELECT _adb_pid FROM {chosen0})"]
        chosen_parts, side_parts = [], []
        for i, where in enumerate(wheres):
            if where is None:
                cand = cand_all
            else:
                where = where.format(chosen0=ident(chosen_parts[0]) if chosen_parts else "")
                cand = s.put(f"cand{i}", f"SELECT * FROM {ident(cand_all)} WHERE {where}")
                if i and not e.scalar(f"SELECT count(*) FROM {ident(cand)}"):
                    break
            split = s.put(f"split{i}", self.render("mondrian_split.sql.j2", work=work, cand=cand,
                                                   from_rows=(self.relaxed and bool(self.sa)) or self.varying))
            keys = ["_adb_pid", "_adb_dim", "_adb_side"]
            members = None
            if self.bt:
                cuts = s.put(f"cuts{i}", f"SELECT DISTINCT _adb_pid, _adb_dim, _adb_lcad, _adb_m, _adb_tl "
                                         f"FROM {ident(split)}")
                members = s.put(f"members{i}", self.render("mondrian_members.sql.j2", work=work, cuts=cuts))
            ok = self.judge(split, keys, groups=None if self.sa else split, members=members)
            chosen_parts.append(s.put(f"chosen{i}", self.render("mondrian_choose.sql.j2", ok=ok, split=split)))
            side_parts.append(f"SELECT x._adb_pid, x._adb_side{', x._adb_sa' if self.sa else ''}, x._adb_cnt "
                              f"FROM {ident(split)} AS x JOIN {ident(chosen_parts[-1])} AS c "
                              f"ON c._adb_pid = x._adb_pid AND c._adb_dim = x._adb_dim")
        chosen = chosen_parts[0] if len(chosen_parts) == 1 else \
            s.put("chosen", " UNION ALL ".join(f"SELECT * FROM {ident(p)}" for p in chosen_parts))
        sides = s.put("sides", " UNION ALL ".join(side_parts)) if self.nt else None
        sides_sql = ident(sides) if sides else "(" + " UNION ALL ".join(side_parts) + ")"
        children = s.put("children", f"SELECT _adb_pid, _adb_side, CAST({next_id} + row_number() OVER "
                                     f"(ORDER BY _adb_pid, _adb_side) - 1 AS BIGINT) AS _adb_new, _adb_n "
                                     f"FROM (SELECT _adb_pid, _adb_side, sum(_adb_cnt) AS _adb_n FROM {sides_sql} "
                                     f"AS x GROUP BY ALL) AS c")
        return chosen, children, sides

    def _assign(self, top: Top, batched: int = 0) -> None:
        """The assign pass: the rows of the partitions the top found final go to the final rows, the
        others become the open rows, tagged with their partition, and (``batched``: the fragments
        are finished next) with their batch (:meth:`_batched`)."""
        e, s = self.eng, self.s
        tagged = f"({top.tagged()}) AS t"
        cols = self.row_columns().replace("_adb_pid", "-1 - _adb_pid AS _adb_pid", 1)
        e.execute(f"INSERT INTO {ident(self.assign)} SELECT {cols} FROM {tagged} WHERE _adb_pid < 0")
        opened = f"SELECT * FROM {tagged} WHERE _adb_pid >= 0"
        old, self.work = self.work, s.table(self._batched(opened, batched) if batched else opened)
        top.drop()
        if old not in s.slots.values():
            s.drop(old)

    def _batched(self, rows: str, size: int) -> str:
        """``rows`` (a query) with the batch _adb_b of their partition: the partitions in id order,
        cut into runs of about ``size`` rows, so that a worker's statement finishes many small
        fragments at once (a statement costs ~50 ms to start on DuckDB). Sorted by batch on DuckDB,
        whose zone maps then read a batch without the others' row groups."""
        order = " ORDER BY b._adb_b" if self.eng.dialect == "duckdb" else ""
        return (f"WITH w AS ({rows}), f AS (SELECT _adb_pid, count(*) AS _adb_n FROM w GROUP BY _adb_pid), "
                f"b AS (SELECT _adb_pid, CAST(floor((sum(_adb_n) OVER (ORDER BY _adb_pid ROWS BETWEEN UNBOUNDED "
                f"PRECEDING AND CURRENT ROW) - 1) / {int(size)}) AS BIGINT) AS _adb_b FROM f) "
                f"SELECT w.*, b._adb_b FROM w JOIN b ON b._adb_pid = w._adb_pid{order}")

    def _fragments_supported(self) -> str | None:
        """Why the open partitions cannot be finished one by one on the engine's workers, or None:
        (n,t) and (B,t) read the whole table round by round."""
        if self.nt or self.bt:
            return "(n,t)-closeness and (B,t)-privacy are judged round by round"
        if any(getattr(m, "distance", None) == "ordered" for m in self.models):
            return "t-closeness with ordered EMD joins with ASOF, which DuckDB does not run inside a recursive statement"
        return None

    def _finish_fragments(self, rnd: int, progress=None, closed: int = 0, size: int = 0) -> int:
        """Every open partition's subtree at once, on the engine's workers (DuckDB: a pool of
        threads; Spark: one grouped step): each batch of fragments (:meth:`_batched`) runs the
        one-statement recursive plan in an embedded DuckDB, with the whole table's distribution,
        hierarchy codes and the models' prepared tables as small side tables.

        The cuts are those the rounds here would make: a partition's cut depends on its own rows
        and on whole-table quantities (spans normalized by the table's ranges, the distribution t
        compares against) only. Partition ids: a batch numbers its children above its partitions'
        ids, made unique as f * 2^32 + id, f the batch's least partition id. Returns the rounds."""
        e, s = self.eng, self.s
        if "_adb_b" not in {c for c, _ in e.columns(self.work)}:
            old, self.work = self.work, s.table(self._batched(f"SELECT * FROM {ident(self.work)}", size))
            if old not in s.slots.values():
                s.drop(old)
        keys = ["_adb_pid", "_adb_dim", "_adb_side"]
        groups_sql = e.render("check_groups.sql.j2", keys=keys, cells="_adb_split",
                              persons=self.persons).sql if self.sa else None
        ok = self.judge("_adb_split", keys, groups="_adb_groups" if self.sa else "_adb_split", inline=True)
        rec = self.render("mondrian_recursive.sql.j2", work="_adb_frag", ok=ok, groups_sql=groups_sql,
                          try_all_dims=self.try_all_dims, from_rows=(self.relaxed and bool(self.sa)) or self.varying,
                          with_qid=False, fresh_ids=True, by_round=True).sql
        sql = (f"WITH _adb_frag AS (SELECT {self.row_columns()} FROM {ident(self.work)}) "
               f"SELECT r._adb_rid, CAST(f._adb_f * 4294967296 + r._adb_pid AS BIGINT) AS _adb_pid, "
               f"CAST(r._adb_lvl AS INTEGER) AS _adb_lvl "
               f"FROM ({rec}) AS r CROSS JOIN (SELECT min(_adb_pid) AS _adb_f FROM _adb_frag) AS f")
        done = e.per_group(s, self.work, "_adb_b", sql, "_adb_rid BIGINT, _adb_pid BIGINT, _adb_lvl INTEGER")
        cols = ", ".join(f"w.{c}" if c != "_adb_pid" else "d._adb_pid" for c in self.row_columns().split(", "))
        e.execute(f"INSERT INTO {ident(self.assign)} SELECT {cols} FROM {ident(done)} AS d "
                  f"JOIN {ident(self.work)} AS w ON w._adb_rid = d._adb_rid")
        levels, classes = e.fetch_rows(f"SELECT max(_adb_lvl), count(DISTINCT _adb_pid) FROM {ident(done)}")[1][0]
        if progress:
            progress({"round": rnd + int(levels or 0), "open": 0, "classes": closed + int(classes), "rows_open": 0,
                      "done": self.goal})
        return rnd + int(levels or 0)

    def _advance_nt(self, children: str, sides: str) -> None:
        e, s = self.eng, self.s
        n = self.nt_n
        e.execute(f"INSERT INTO {ident(self.refs)} SELECT 0, ch._adb_new, x._adb_sa, sum(x._adb_cnt) "
                  f"FROM {ident(children)} AS ch JOIN {ident(sides)} AS x ON x._adb_pid = ch._adb_pid "
                  f"AND x._adb_side = ch._adb_side WHERE ch._adb_n >= {n} GROUP BY ALL")
        self.anc = s.table(f"SELECT ch._adb_new AS _adb_pid, a._adb_ref FROM {ident(children)} AS ch "
                           f"JOIN {ident(self.anc)} AS a ON a._adb_pid = ch._adb_pid "
                           f"UNION ALL SELECT _adb_new, _adb_new FROM {ident(children)} WHERE _adb_n >= {n}")

    def verify_bt(self, joined: str):
        """(B,t)-privacy of the release: every row's Omega posterior in its final class against its
        prior, the classes' value counts and QI tuples recounted from the released rows."""
        from ..checker import Report, evaluate_model
        from ..models.bt_privacy import cell_relations, members_of
        e, s = self.eng, self.s
        members = members_of(e, s, joined, "_adb_pid", self.qids, self.qi_cols)
        cells = s.table(f"SELECT _adb_pid, {ident(self.sa)} AS _adb_sa, count(*) AS _adb_cnt FROM {ident(joined)} "
                        f"GROUP BY ALL")
        glob, groups, domain = cell_relations(e, s, cells, ["_adb_pid"])
        out = []
        for m in self.bt:
            ctx = self.ctx(cells, groups, ["_adb_pid"], glob, domain, members=members)
            ctx.qi_columns = ["_adb_pid"]
            out.append(evaluate_model(m, ctx, 3, None))
        rows = e.scalar(f"SELECT count(*) FROM {ident(joined)}")
        return Report(source=joined, qi=["eq_class"], sensitive=self.sa, rows=rows, groups=0, smallest_group=0,
                      largest_group=0, verdicts=out)

    def verify_nt(self, models: list[NTCloseness], release: str, tree: str, keep: Iterable[str] = ()):
        """(n,t)-closeness of the release against its partition tree: each equivalence class with
        fewer than n rows must be within t of some ancestor partition with >= n rows, all
        distributions recomputed from the released rows [Li thesis Fig 2.1]. With ``keep`` (kept
        columns, published unchanged) the groups are the rows sharing the class and the kept values
        (the release's groups over every published column), each judged against its class's
        partition and ancestors."""
        from ..checker import Report, evaluate_model
        e, s = self.eng, self.s
        keep = list(keep)
        keys = ["_adb_pid", "_adb_kg"] if keep else ["_adb_pid"]
        kg = (f", CAST(dense_rank() OVER (ORDER BY {', '.join(f'{ident(c)} NULLS LAST' for c in keep)}) AS BIGINT) "
              f"AS _adb_kg" if keep else "")
        out = []
        for m in models:
            n = m.n
            cls = s.table(f"SELECT DISTINCT eq_class AS _adb_pid FROM {ident(release)}")
            if self.persons:  # record owners: the persons holding each value, the facts' sizes
                rel = s.table(f"SELECT eq_class AS _adb_pid{kg}, {ident(self.sa)} AS _adb_sa, {ident(PERSON_COLUMN)} "
                              f"FROM {ident(release)}")
                fact = s.table(e.render("check_person_facts.sql.j2", keys=keys, person=PERSON_COLUMN,
                                        sensitive="_adb_sa", source=rel))
                cells = s.table(e.render("check_person_cells.sql.j2", keys=keys, facts=fact))
            else:
                cells = s.table(f"SELECT {', '.join(keys)}, _adb_sa, count(*) AS _adb_cnt FROM (SELECT eq_class AS "
                                f"_adb_pid{kg}, {ident(self.sa)} AS _adb_sa FROM {ident(release)}) AS r GROUP BY ALL")
            # ancestors (inclusive) of each class through the tree; the class id is the leaf pid
            paths = s.table(f"WITH RECURSIVE up(_adb_pid, _adb_ref) AS (SELECT _adb_pid, _adb_pid FROM {ident(cls)} "
                            f"UNION ALL SELECT u._adb_pid, t._adb_parent FROM up AS u JOIN {ident(tree)} AS t "
                            f"ON t._adb_pid = u._adb_ref WHERE t._adb_parent IS NOT NULL) SELECT * FROM up")
            under = s.table(f"SELECT p._adb_ref, c._adb_sa, sum(c._adb_cnt) AS _adb_cnt FROM {ident(paths)} AS p "
                            f"JOIN {ident(cells)} AS c ON c._adb_pid = p._adb_pid GROUP BY ALL")
            refs = s.table(f"SELECT CAST(0 AS BIGINT) AS _adb_set, _adb_ref AS _adb_sup, _adb_sa, _adb_cnt FROM {ident(under)} "
                           f"WHERE _adb_ref IN (SELECT _adb_ref FROM {ident(under)} GROUP BY _adb_ref "
                           f"HAVING sum(_adb_cnt) >= {n})")
            anc = s.table(f"SELECT _adb_pid, _adb_ref FROM {ident(paths)} WHERE _adb_ref IN "
                          f"(SELECT _adb_sup FROM {ident(refs)})")
            glob = s.table(f"SELECT _adb_sa, sum(_adb_cnt) AS _adb_cnt FROM {ident(cells)} GROUP BY _adb_sa")
            groups = s.table(self.eng.render("check_groups.sql.j2", keys=keys, cells=cells)) if not self.persons else \
                s.table(e.render("check_person_groups.sql.j2", keys=keys, cells=cells, facts=fact))
            domain = e.scalar(f"SELECT count(*) FROM {ident(glob)}")
            ctx = self.ctx(cells, groups, keys, glob, domain, ancestors=anc, references=refs)
            ctx.qi_columns = list(keys)
            out.append(evaluate_model(m, ctx, 3, None))
        rows = e.scalar(f"SELECT count(*) FROM {ident(release)}")
        return Report(source=release, qi=["eq_class"], sensitive=self.sa, rows=rows, groups=0, smallest_group=0,
                      largest_group=0, verdicts=out)


