"""Foreground-knowledge attack on group-based releases [Wong et al., "Anonymization-based attacks in
privacy-preserving data publishing"; spec-injector-tradeoff-foreground 6].

The adversary mines *global distributions* from the release T* itself and weights the possible
worlds of each A-group with them, instead of taking them as equally likely (§1-2, spec 6.1-6.2).

* Signature s of an attribute set A (a non-empty subset of the QIs): values of A that occur in T*;
  f_s = p(s:x) is the probability that a tuple matching s has the target x (a sensitive value, or a
  set of values read as one binary event x / not x).
* Posterior in an A-group L of N tuples holding n x's (§3, Eqs. 1-3; spec 6.3-6.4). The possible
  worlds are the size-n subsets of L, weighted prod f_j (x) * prod (1 - f_j) (not x); the sum over
  worlds is a conditional Poisson-binomial:
      p(t_j:x) = f_j PB_{-j}(n-1) / PB(n),   PB(k) = Pr[k of L are x], independent Bernoulli(f_j).
  n = 0 gives 0, n = N gives 1, n = 1 gives o_j / sum o (odds o = f/(1-f)); n > N/2 is solved
  for not-x. In general PB comes from a prefix/suffix DP over the group's classes (tuples sharing
  f, each a binomial factor), truncated at degree n, for groups batched by shape; the odds are
  tilted so that the expected count is n, which leaves the posterior unchanged and keeps the DP
  well conditioned. PB(n) = 0 (no world is possible under f, e.g. f at 0 or 1) falls back to the
  random world n/N.
* Mining (§4.1, Eqs. 4-6; spec 6.5): f_s = mean over the tuples matching s of p(t:x). The fixed
  point f = g(f) is the EM algorithm for the group counts: E-step the posterior above, M-step the
  mean; start at the random-world f_s = mean_t n_g(t)/|g(t)|, stop when max |f' - f| < tol.
* Reliability (§4.2, Theorem 1; spec 6.6): a signature is used only with J = ceil(ln(2/sigma) /
  (2 eps^2)) matching tuples (eps = 0.01, sigma = 0.9: J = 3993). Tuples matching no reliable
  signature of A get the overall frequency of x in T*, held fixed.
* Algorithm 1 (§4.3; spec 6.7): for every A with a reliable signature and every x, solve G_{A,x};
  risk(t) = max_{A,x} p(t:x | G_{A,x}); t is breached when risk(t) > 1/r. Without any reliable
  signature the risk is the random world n/N (every tuple on the fallback f).
* Measures (§5; spec 6.10): recall (breached sensitive tuples / sensitive tuples), the share of
  non-sensitive tuples breached, the average breach probability of the sensitive tuples (p of their
  own x, maximized over A) and the average Delta = max_t f(t) - min_t f(t) per A-group and A.

The database counts: signatures of all attribute sets in one GROUPING SETS statement, cells
(group, QI vector: exchangeable tuples) and their classes per A, group sizes and counts. The EM
runs in NumPy on the classes (group, signature) of all (A, x) problems at once, batched by group
shape; a problem stops iterating once it has converged.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from ..engines.base import Engine, Logged
from ..engines import connect
from ..errors import InputError, SQLError
from ..schema import RESERVED_PREFIX, split_list
from ..sources import open_source
from ..sqlgen import Rendered, ident, temp_name

MAX_ATTRIBUTE_SETS = 4096  # grouping sets in the signature statement
_CHUNK = 1 << 20  # padded cells (groups x classes x degrees) per DP chunk
_DIRECT_CONV = 48  # truncated convolutions up to this length are direct, longer ones by FFT


# -- public helpers ----------------------------------------------------------------------------------

def sample_size(epsilon: float, sigma: float) -> int:
    """J = ceil(ln(2/sigma) / (2 epsilon^2)): the support a signature needs so that its estimated
    probability is within epsilon of the true one with probability >= 1 - sigma (Toivonen; Wong et
    al. Theorem 1). ``sample_size(0.01, 0.9) == 3993``."""
    for name, v in (("epsilon", epsilon), ("sigma", sigma)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1:
            raise InputError(f"{name} must be a number strictly between 0 and 1, got {v!r}")
    return max(1, math.ceil(math.log(2.0 / sigma) / (2.0 * epsilon * epsilon) - 1e-9))


def posterior_x(f: Sequence[float], n: int) -> list[float]:
    """p(t_j:x) for each tuple of one A-group whose tuples have global probabilities ``f`` and which
    holds ``n`` x's: the exact conditional Poisson-binomial (Wong et al. Eqs. 1-3 without
    enumerating the worlds). With no possible world (PB(n) = 0) every tuple gets n/N."""
    fs = [float(v) for v in f]
    if not fs:
        raise InputError("posterior_x needs at least one tuple")
    if any(not 0.0 <= v <= 1.0 for v in fs):
        raise InputError(f"every f must lie in [0, 1], got {list(f)!r}")
    if isinstance(n, bool) or int(n) != n or not 0 <= n <= len(fs):
        raise InputError(f"n must be an integer between 0 and the group size {len(fs)}, got {n!r}")
    fu, inv, m = np.unique(np.asarray(fs), return_inverse=True, return_counts=True)  # equal f: one class
    st = _Structure(m=m, pg=np.zeros(len(fu), dtype=np.int64), pg_n=np.array([int(n)]), pg_N=np.array([len(fs)]))
    p = np.empty(len(fu))
    st.estep(st.plan(np.ones(1, dtype=bool)), fu, p)
    return [float(v) for v in p[inv.reshape(-1)]]


# -- result ------------------------------------------------------------------------------------------

@dataclass
class ForegroundResult:
    """What the attack found on a release (see the module docstring for the measures)."""

    rows: int  # tuples of the release
    groups: int  # A-groups
    J: int  # support a signature needs
    targets: list[tuple]  # the events x, each a tuple of sensitive values
    reliable: dict[tuple[str, ...], int]  # attribute set -> number of reliable signatures
    bound: float  # a tuple is breached when its risk exceeds this (1/r)
    breached: int  # tuples with risk > bound
    breached_share: float
    max_risk: float
    sensitive: int | None  # tuples truly having some target x (None without truth)
    recall: float | None  # breached sensitive / sensitive
    false_positive_share: float | None  # breached non-sensitive / non-sensitive
    avg_breach_probability: float | None  # mean over sensitive tuples of p(t: own x), max over A
    avg_delta: float | None  # mean over (A-group, A, x) of max_t f(t) - min_t f(t)
    iterations: int  # EM iterations of the slowest (A, x) problem
    converged: bool  # every problem reached max |df| < tol
    seconds: float
    patterns: list[tuple] = field(default_factory=list)  # (attrs, {attr: value}, x, f, support)
    out: str | None = None

    def format(self) -> str:
        sets = len(self.reliable)
        lines = [f"foreground attack: {self.rows} tuples in {self.groups} groups; J = {self.J}; "
                 f"{sum(self.reliable.values())} reliable signatures over {sets} attribute set(s); "
                 f"EM {self.iterations} iteration(s){'' if self.converged else ' (not converged)'}; "
                 f"{self.seconds:.2f} s",
                 f"  breached (risk > {self.bound:.4g}): {self.breached} tuples ({100 * self.breached_share:.2f}%); "
                 f"max risk {self.max_risk:.4f}"
                 + (f"; average Delta {self.avg_delta:.4f}" if self.avg_delta is not None else "")]
        if self.sensitive is not None:
            lines.append(f"  sensitive tuples: {self.sensitive}; recall {_pct(self.recall)}; non-sensitive breached "
                         f"{_pct(self.false_positive_share)}; average breach probability "
                         + (f"{self.avg_breach_probability:.4f}" if self.avg_breach_probability is not None else "-"))
        if self.out:
            lines.append(f"  per-tuple risks -> {self.out}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "groups": self.groups, "J": self.J,
                "targets": [list(t) for t in self.targets],
                "reliable": {",".join(k): v for k, v in self.reliable.items()},
                "bound": self.bound, "breached": self.breached, "breached_share": self.breached_share,
                "max_risk": self.max_risk, "sensitive": self.sensitive, "recall": self.recall,
                "false_positive_share": self.false_positive_share,
                "avg_breach_probability": self.avg_breach_probability, "avg_delta": self.avg_delta,
                "iterations": self.iterations, "converged": self.converged, "seconds": self.seconds,
                "patterns": [{"attrs": list(a), "signature": s, "x": x, "f": f, "support": n}
                             for a, s, x, f, n in self.patterns],
                "out": self.out}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f}%"


# -- the attack --------------------------------------------------------------------------------------

def foreground_attack(*, engine: Engine | Any = None, qi: str | Iterable[str], sensitive: str,
                      group: str = "group_id", table: str | None = None, qit: str | None = None,
                      st: str | None = None, targets: Any = None, r: float = 2, bound: float | None = None,
                      epsilon: float = 0.01, sigma: float = 0.9, max_attrs: int | None = None,
                      truth: str | None = None, tol: float = 1e-9, max_iter: int = 1000,
                      out: str | None = None, replace: bool = False, count: str = "count",
                      min_support: int | None = None) -> ForegroundResult:
    """Run the foreground-knowledge attack (Wong et al. Algorithm 1) on a group-based release.

    The release is ``qit`` + ``st`` (bucketization: QI columns and ``group``; ``group``, ``sensitive``
    and ``count``) or ``table`` (one row per tuple: ``group``, the QI columns as released and
    ``sensitive``). ``targets``: None (every sensitive value is its own x), a list of values (one
    event x), or a list of lists (several events). A tuple is breached when its risk exceeds
    ``bound`` (default 1/r). Signatures need ``min_support`` tuples (default
    :func:`sample_size` (epsilon, sigma)); attribute sets hold at most ``max_attrs`` QIs. ``truth``
    (group, QIs, the true sensitive value per tuple; default the table itself with ``table``)
    enables recall, the false-positive share and the average breach probability. ``out`` writes
    one row per tuple: group, QIs, risk, attrs (the maximizing attribute set) and x.
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    qis = split_list(qi, "quasi-identifiers")
    if not qis:
        raise InputError("at least one quasi-identifier is needed (qi)")
    if len(set(qis)) != len(qis):
        raise InputError(f"a quasi-identifier is listed twice in {qis}")
    if not isinstance(sensitive, str) or not sensitive:
        raise InputError("the foreground attack needs the sensitive attribute (sensitive)")
    if sensitive in qis:
        raise InputError(f"{sensitive!r} is given both as the sensitive attribute and as a quasi-identifier")
    if not isinstance(group, str) or not group:
        raise InputError("group must name the group column")
    if group in qis or group == sensitive:
        raise InputError(f"the group column {group!r} is also a quasi-identifier or the sensitive attribute")
    if table is not None and (qit is not None or st is not None):
        raise InputError("give either table (one row per tuple) or qit and st (a bucketized release), not both")
    if table is None and (qit is None or st is None):
        raise InputError("qit needs st (the sensitive table)" if qit is not None else
                         "st needs qit (the quasi-identifier table)" if st is not None else
                         "give the release: table, or qit and st")
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not r > 1 or not math.isfinite(r):
        raise InputError(f"r must be a number > 1 (a tuple is breached when p(t:x) > 1/r), got {r!r}")
    if bound is None:
        bound = 1.0 / r
    elif isinstance(bound, bool) or not isinstance(bound, (int, float)) or not 0 <= bound < 1:
        raise InputError(f"bound must be a number in [0, 1), got {bound!r}")
    if min_support is None:
        J = sample_size(epsilon, sigma)
    else:
        sample_size(epsilon, sigma)  # validates them
        if isinstance(min_support, bool) or not isinstance(min_support, int) or min_support < 1:
            raise InputError(f"min_support must be an integer >= 1, got {min_support!r}")
        J = min_support
    if max_attrs is not None and (isinstance(max_attrs, bool) or not isinstance(max_attrs, int) or max_attrs < 1):
        raise InputError(f"max_attrs must be an integer >= 1, got {max_attrs!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
        raise InputError(f"tol must be a number > 0, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 0:
        raise InputError(f"max_iter must be an integer >= 0, got {max_iter!r}")
    if out is not None:
        if not isinstance(out, str) or not out:
            raise InputError("out must name the per-tuple output table")
        clash = [c for c in ("risk", "attrs", "x") if c in qis or c == group]
        if clash:
            raise InputError(f"out: the output columns risk, attrs, x clash with the input column {clash[0]!r}")
        if eng.exists(out) and not replace:
            raise InputError(f"{out!r} already exists; choose another name or pass replace=True")
    sets = [c for k in range(1, min(len(qis), max_attrs or len(qis)) + 1) for c in itertools.combinations(range(len(qis)), k)]
    if len(sets) > MAX_ATTRIBUTE_SETS:
        raise InputError(f"{len(qis)} quasi-identifiers give {len(sets)} attribute sets (more than "
                         f"{MAX_ATTRIBUTE_SETS}); limit them with max_attrs")

    with eng.scratch("foreground") as s:
        # -- inputs: the tuple relation, the group index, the sensitive counts -----------------------
        rel = open_source(eng, table if table is not None else qit, scratch=s)
        label = str(table if table is not None else qit)
        _need_columns(eng, rel, qis + [group] + ([sensitive] if table is not None else []), label,
                      "table" if table is not None else "qit")
        rows = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
        if rows == 0:
            raise InputError(f"{label} is empty: there is nothing to attack")
        if eng.scalar(f"SELECT count(*) FROM {ident(rel)} WHERE {ident(group)} IS NULL"):
            raise InputError(f"the group column {group!r} of {label} holds NULL")
        gi = s.table(eng.render("foreground_groups.sql.j2", part="index", rel=rel, group=group))
        ngroups = int(eng.scalar(f"SELECT count(*) FROM {ident(gi)}"))
        if table is None:
            st_rel = open_source(eng, st, scratch=s)
            _need_columns(eng, st_rel, [group, sensitive, count], str(st), "st")
            _check_st(eng, st_rel, gi, group, count, str(st), label)
            counts = s.table(eng.render("foreground_groups.sql.j2", part="counts", rel=st_rel, gi=gi,
                                        group=group, sensitive=sensitive, count=count))
        else:
            counts = s.table(eng.render("foreground_groups.sql.j2", part="counts", rel=rel, gi=gi,
                                        group=group, sensitive=sensitive, count=None))
        codes = s.table(eng.render("foreground_groups.sql.j2", part="codes", counts=counts))
        values = [v for v, _ in sorted(eng.fetch_rows(f"SELECT _adb_value, _adb_v FROM {ident(codes)}")[1],
                                       key=lambda r_: r_[1])]
        events = _events(targets, values, sensitive)
        member = np.zeros((len(values), len(events)), dtype=bool)  # value code x event
        for e, ev in enumerate(events):
            member[ev, e] = True
        cnt = _numpy(eng, f"SELECT c._adb_g, v._adb_v, c._adb_n FROM {ident(counts)} AS c JOIN {ident(codes)} AS v "
                          f"ON v._adb_value IS NOT DISTINCT FROM c._adb_value")
        g_size = _numpy(eng, f"SELECT _adb_g, _adb_size FROM {ident(gi)} ORDER BY _adb_g")["_adb_size"].astype(np.int64)
        E = len(events)
        g_n = np.zeros((E, ngroups), dtype=np.int64)  # n_x per event and group
        for e in range(E):
            sel = member[cnt["_adb_v"].astype(np.int64), e]
            g_n[e] = np.bincount(cnt["_adb_g"][sel].astype(np.int64), weights=cnt["_adb_n"][sel].astype(np.float64),
                                 minlength=ngroups).round().astype(np.int64)
        overall = g_n.sum(axis=1) / rows  # fallback f per event

        # -- signatures and classes ---------------------------------------------------------------------
        sigs = s.table(eng.render("foreground_signatures.sql.j2", rel=rel, qis=qis,
                                  sets=[[qis[i] for i in c] for c in sets], min_support=J))
        _, sig_rows = eng.fetch_rows(f"SELECT _adb_aset, {', '.join(ident(q) for q in qis)}, _adb_support "
                                     f"FROM {ident(sigs)} ORDER BY _adb_sig")
        k = len(qis)
        full = (1 << k) - 1
        present = {row[0] for row in sig_rows}
        asets = [c for c in sets if full ^ sum(1 << (k - 1 - i) for i in c) in present]
        a_of_bits = {full ^ sum(1 << (k - 1 - i) for i in c): a for a, c in enumerate(asets)}
        NA, NS = len(asets), len(sig_rows)
        attrs = [tuple(qis[i] for i in c) for c in asets]
        sig_a = np.array([a_of_bits[row[0]] for row in sig_rows], dtype=np.int64)
        support = np.array([row[-1] for row in sig_rows], dtype=np.int64)

        cells = s.table(eng.render("foreground_cells.sql.j2", part="cells", rel=rel, gi=gi, group=group, qis=qis))
        cell = _numpy(eng, f"SELECT _adb_cell, _adb_g, _adb_m FROM {ident(cells)} ORDER BY _adb_cell")
        C = len(cell["_adb_cell"])
        cell_g = cell["_adb_g"].astype(np.int64)
        cell_m = cell["_adb_m"].astype(np.int64)

        iterations, converged, avg_delta = 0, True, None
        f_param = np.zeros(0)
        if NA:
            cs = s.table(eng.render("foreground_cells.sql.j2", part="classes", cells=cells, sigs=sigs, qis=qis,
                                    asets=[(a, full ^ sum(1 << (k - 1 - i) for i in c)) for a, c in enumerate(asets)]))
            cls_t = s.table(eng.render("foreground_cells.sql.j2", part="class_index", cs=cs))
            cls = _numpy(eng, f"SELECT _adb_a, _adb_g, _adb_sig, _adb_m FROM {ident(cls_t)} ORDER BY _adb_cls")
            link = _numpy(eng, eng.render("foreground_cells.sql.j2", part="links", cs=cs, classes=cls_t))
            cell_cls = np.empty((NA, C), dtype=np.int64)
            cell_cls[link["_adb_a"].astype(np.int64), link["_adb_cell"].astype(np.int64)] = link["_adb_cls"]
            em = _EM(cls_a=cls["_adb_a"].astype(np.int64), cls_g=cls["_adb_g"].astype(np.int64),
                     cls_sig=cls["_adb_sig"].astype(np.int64), cls_m=cls["_adb_m"].astype(np.int64),
                     sig_a=sig_a, g_size=g_size, g_n=g_n, overall=overall, NA=NA)
            iterations, converged = em.run(tol=float(tol), max_iter=max_iter)
            p = em.posteriors().reshape(E, -1)  # (event, class)
            riskEA = p[:, cell_cls]  # (event, attribute set, cell)
            argA = riskEA.argmax(axis=1)
            riskE = np.take_along_axis(riskEA, argA[:, None, :], axis=1)[:, 0, :]
            del riskEA
            avg_delta = em.avg_delta()
            f_param = em.f
        else:  # no foreground knowledge: the random world
            riskE = g_n[:, cell_g] / g_size[cell_g][None, :]
            argA = np.full((E, C), -1)
        argE = riskE.argmax(axis=0)
        risk = riskE[argE, np.arange(C)]
        risk_a = argA[argE, np.arange(C)]

        breached_c = risk > bound
        breached = int(cell_m[breached_c].sum())
        sens = rec = fps = abp = None
        truth_rel = None
        if truth is not None:
            truth_rel = open_source(eng, truth, scratch=s)
            _need_columns(eng, truth_rel, [group] + qis + [sensitive], str(truth), "truth")
        elif table is not None:
            truth_rel = rel
        if truth_rel is not None:
            tr = _numpy(eng, eng.render("foreground_cells.sql.j2", part="truth", truth=truth_rel, gi=gi, cells=cells,
                                        codes=codes, group=group, qis=qis, sensitive=sensitive))
            t_cell, t_v, t_n = (tr[c].astype(np.int64) for c in ("_adb_cell", "_adb_v", "_adb_n"))
            lost = int(t_n[t_cell < 0].sum())
            if lost:
                raise InputError(f"truth: {lost} row(s) of {truth} match no tuple of the release (same {group} and QI values)")
            per_cell = np.bincount(t_cell, weights=t_n, minlength=C)
            if not np.array_equal(per_cell.astype(np.int64), cell_m):
                bad = int(np.count_nonzero(per_cell.astype(np.int64) != cell_m))
                raise InputError(f"truth: {truth or label} does not have the release's tuples ({bad} (group, QI) "
                                 f"combination(s) are counted differently)")
            known = t_v >= 0
            mem = member[np.where(known, t_v, 0)] & known[:, None]  # (row, event)
            is_sens = mem.any(axis=1)
            own = np.where(mem, riskE[:, t_cell].T, -np.inf).max(axis=1)
            sens = int(t_n[is_sens].sum())
            nonsens = rows - sens
            hit = breached_c[t_cell]
            rec = float(t_n[is_sens & hit].sum() / sens) if sens else None
            fps = float(t_n[~is_sens & hit].sum() / nonsens) if nonsens else None
            abp = float((t_n[is_sens] * own[is_sens]).sum() / sens) if sens else None

        if out is not None:
            _write_out(eng, out, replace, rel, gi, cells, group, qis, risk,
                       [",".join(attrs[a]) if a >= 0 else "" for a in range(-1, NA)], risk_a,
                       [_label(values, ev) for ev in events], argE)

    patterns = []
    for e, ev in enumerate(events):
        x = values[ev[0]] if len(ev) == 1 else tuple(values[i] for i in ev)
        for j, row in enumerate(sig_rows):
            a = int(sig_a[j])
            patterns.append((attrs[a], {q: row[1 + qis.index(q)] for q in attrs[a]}, x,
                             float(f_param[e * NS + j]), int(support[j])))
    reliable = {attrs[a]: int(np.count_nonzero(sig_a == a)) for a in range(NA)}
    return ForegroundResult(
        rows=rows, groups=ngroups, J=J, targets=[tuple(values[i] for i in ev) for ev in events], reliable=reliable,
        bound=float(bound), breached=breached, breached_share=breached / rows, max_risk=float(risk.max()),
        sensitive=sens, recall=rec, false_positive_share=fps, avg_breach_probability=abp, avg_delta=avg_delta,
        iterations=iterations, converged=converged, seconds=time.perf_counter() - t0, patterns=patterns, out=out)


# -- SQL helpers -------------------------------------------------------------------------------------

def _need_columns(eng: Engine, rel: str, needed: list[str], label: str, role: str) -> None:
    cols = [c for c, _ in eng.columns(rel)]
    for c in needed:
        if c not in cols:
            raise InputError(f"column {c!r} not found in {role} {label}; its columns are: {', '.join(cols)}")
        if c.startswith(RESERVED_PREFIX):
            raise InputError(f"column {c!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")


def _check_st(eng: Engine, st: str, gi: str, group: str, count: str, st_label: str, qit_label: str) -> None:
    g, c = ident(group), ident(count)
    bad = eng.scalar(f"SELECT count(*) FROM {ident(st)} WHERE {c} IS NULL OR {c} <= 0 OR {c} <> round({c})")
    if bad:
        raise InputError(f"st {st_label}: the column {count!r} must hold positive whole counts ({bad} row(s) do not)")
    _, rows = eng.fetch_rows(
        f"SELECT coalesce(CAST(q.{g} AS VARCHAR), CAST(s.{g} AS VARCHAR)), q._adb_size, s.n "
        f"FROM {ident(gi)} AS q FULL JOIN (SELECT {g}, sum({c}) AS n FROM {ident(st)} GROUP BY {g}) AS s "
        f"ON s.{g} = q.{g} WHERE q._adb_size IS DISTINCT FROM s.n LIMIT 3")
    if rows:
        shown = "; ".join(f"group {gid}: {sz or 0} tuple(s) in qit, {n or 0} in st" for gid, sz, n in rows)
        raise InputError(f"qit {qit_label} and st {st_label} disagree on the group sizes ({shown})")


def _numpy(eng: Engine, stmt: str | Rendered) -> dict[str, np.ndarray]:
    """Run a query and fetch its columns as NumPy arrays (DuckDB's fetchnumpy; rows otherwise)."""
    r = stmt if isinstance(stmt, Rendered) else Rendered(stmt, None)  # type: ignore[arg-type]
    con = getattr(eng, "con", None)
    if con is None:
        cols, rows = eng.fetch_rows(r)
        return {c: np.array([row[i] for row in rows]) for i, c in enumerate(cols)}
    t0 = time.perf_counter()
    try:
        res = con.execute(r.sql).fetchnumpy()
    except Exception as e:
        raise SQLError(f"{type(e).__name__}: {e}", r.sql, r.template) from e
    finally:
        eng.log.append(Logged(r.sql, r.template, time.perf_counter() - t0))
    return {k: np.asarray(v) for k, v in res.items()}


def _events(targets: Any, values: list, sensitive: str) -> list[list[int]]:
    """The target events as lists of value codes."""
    if targets is None:
        return [[i] for i in range(len(values))]
    if isinstance(targets, (str, bytes, int, float)):
        targets = [targets]
    targets = list(targets)
    if not targets:
        raise InputError("targets: give at least one sensitive value (or None for every value)")
    nested = [isinstance(t, (list, tuple, set, frozenset)) for t in targets]
    if any(nested) and not all(nested):
        raise InputError("targets: give a list of values (one event) or a list of lists (several events), not a mix")
    groups = [list(t) for t in targets] if all(nested) else [targets]
    out = []
    for grp in groups:
        if not grp:
            raise InputError("targets: an event needs at least one sensitive value")
        codes = []
        for t in grp:
            hit = [i for i, v in enumerate(values) if v == t and type(v) is not bool] or \
                  [i for i, v in enumerate(values) if str(v) == str(t)]
            if not hit:
                shown = ", ".join(repr(v) for v in values[:20]) + (", ..." if len(values) > 20 else "")
                raise InputError(f"targets: {t!r} is not a value of {sensitive!r} in the release (its values: {shown})")
            codes.append(hit[0])
        out.append(sorted(set(codes)))
    return out


def _label(values: list, ev: list[int]) -> str:
    if len(ev) == 1:
        return str(values[ev[0]])
    return "{" + ", ".join(str(values[i]) for i in ev) + "}"


def _write_out(eng, out, replace, rel, gi, cells, group, qis, risk, attr_labels, risk_a, x_labels, arg_e) -> None:
    import pyarrow as pa

    tbl = pa.table({"_adb_cell": np.arange(len(risk), dtype=np.int64), "risk": risk,
                    "attrs": pa.array(attr_labels).take(pa.array(risk_a + 1)),
                    "x": pa.array(x_labels).take(pa.array(arg_e))})
    name = temp_name("foreground_risk")
    eng.con.register(name, tbl)
    try:
        eng.create_table_as(out, eng.render("foreground_cells.sql.j2", part="tuples", rel=rel, gi=gi, cells=cells,
                                            risk=name, group=group, qis=qis), replace=bool(replace))
    finally:
        eng.con.unregister(name)


# -- EM over all (attribute set, event) problems -----------------------------------------------------

class _EM:
    """The problems' classes (attribute set a, group g, signature or -1) replicated per event e;
    a "problem class" pc = e * NC + class, a "problem group" pg = (e, a, g) with its classes
    contiguous. Parameters: e * NS + signature (mined) and E * NS + e (the fixed fallback)."""

    def __init__(self, *, cls_a, cls_g, cls_sig, cls_m, sig_a, g_size, g_n, overall, NA):
        E, NC, NS = g_n.shape[0], len(cls_a), len(sig_a)
        self.E, self.NC, self.NS, self.NA = E, NC, NS, NA
        new = np.ones(NC, dtype=bool)
        new[1:] = (cls_a[1:] != cls_a[:-1]) | (cls_g[1:] != cls_g[:-1])
        ag = np.cumsum(new) - 1
        NAG = int(ag[-1]) + 1
        ag_g = cls_g[new]
        ev = np.repeat(np.arange(E), NC)
        self.m = np.tile(cls_m.astype(np.float64), E)
        pg = ev * NAG + np.tile(ag, E)
        pg_N = np.tile(g_size[ag_g], E)
        pg_n = g_n[:, ag_g].reshape(-1)
        self.st = _Structure(m=self.m, pg=pg, pg_n=pg_n, pg_N=pg_N)
        sig = np.tile(cls_sig, E)
        self.param = np.where(sig >= 0, ev * NS + sig, E * NS + ev)
        self.pc_prob = ev * NA + np.tile(cls_a, E)
        self.pg_prob = self.pc_prob[self.st.starts]
        self.param_prob = np.concatenate([np.repeat(np.arange(E) * NA, NS) + np.tile(sig_a, E), np.full(E, -1)])
        NP = E * NS + E
        self.den = np.bincount(self.param, weights=self.m, minlength=NP)
        # random-world start: f_s = mean over the tuples matching s of n_g / |g|
        rw = self.st.pg_n[pg] / self.st.pg_N[pg]
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.bincount(self.param, weights=self.m * rw, minlength=NP) / self.den
        f[E * NS:] = overall
        self.f = f
        self.p = np.empty(len(self.m))

    def run(self, *, tol: float, max_iter: int) -> tuple[int, bool]:
        E, NA, NS = self.E, self.NA, self.NS
        active = np.ones(E * NA, dtype=bool)
        mined = np.arange(E * NS)
        it, n_active, planned = 0, -1, 0
        while it < max_iter and active.any():
            it += 1
            if int(active.sum()) != n_active:
                n_active = int(active.sum())
                upd = mined[active[self.param_prob[mined]]]  # only unconverged problems move
                upd_prob = self.param_prob[upd]
                live = int(self.st.K[active[self.pg_prob]].sum())
                if live < 0.7 * planned or not planned:  # re-plan once enough problems have stopped
                    plan = self.st.plan(active[self.pg_prob])
                    pcs, planned = plan.pcs, live
                    par, w = self.param[pcs], self.m[pcs]
            self.st.estep(plan, self.f[self.param], self.p)
            num = np.bincount(par, weights=w * self.p[pcs], minlength=len(self.f))
            new = num[upd] / self.den[upd]
            d = np.zeros(E * NA)
            np.maximum.at(d, upd_prob, np.abs(new - self.f[upd]))
            self.f[upd] = new
            active &= ~(d < tol)
        return it, not active.any()

    def posteriors(self) -> np.ndarray:
        self.st.estep(self.st.plan(np.ones(len(self.st.pg_N), dtype=bool)), self.f[self.param], self.p)
        return self.p

    def avg_delta(self) -> float:
        fp = self.f[self.param]
        s = self.st.starts
        return float(np.mean(np.maximum.reduceat(fp, s) - np.minimum.reduceat(fp, s)))


@dataclass
class _Batch:
    idx: np.ndarray  # (B, Kp) problem-class index (0 on padding)
    m: np.ndarray  # (B, Kp) multiplicity (0 on padding)
    n: np.ndarray  # (B,) x's after the flip (n* <= N/2)
    N: np.ndarray  # (B,)
    flip: np.ndarray  # (B,) bool: solved for not-x
    L: int  # polynomial length (> max n)


@dataclass
class _Plan:
    pcs: np.ndarray  # every problem class covered
    const_idx: np.ndarray
    const_val: np.ndarray
    one_idx: np.ndarray  # classes of groups with n* = 1
    one_grp: np.ndarray  # their group, numbered 0.. within the plan
    one_flip: np.ndarray
    one_N: np.ndarray
    one_groups: int
    batches: list[_Batch]


class _Structure:
    """Groups of classes with multiplicities (a class: tuples of one group sharing f), and the
    exact E-step over them. ``pg`` must be sorted (each group's classes contiguous)."""

    def __init__(self, *, m, pg, pg_n, pg_N):
        self.m = np.asarray(m, dtype=np.float64)
        self.pg_n = np.asarray(pg_n, dtype=np.int64)
        self.pg_N = np.asarray(pg_N, dtype=np.int64)
        self.K = np.bincount(pg, minlength=len(self.pg_N))
        self.starts = np.concatenate([[0], np.cumsum(self.K)[:-1]]).astype(np.int64)
        top = max(int(self.m.max()) if len(self.m) else 0, int(self.pg_N.max()) if len(self.pg_N) else 0) + 3
        self.lfact = np.array([math.lgamma(i + 1.0) for i in range(top + 1)])  # ln k!

    def _pcs(self, pgs: np.ndarray) -> np.ndarray:
        K = self.K[pgs]
        off = np.repeat(self.starts[pgs] - np.concatenate([[0], np.cumsum(K)[:-1]]), K)
        return np.arange(int(K.sum())) + off

    def plan(self, sel: np.ndarray) -> _Plan:
        """Categorize the selected groups (a bool mask over groups) by shape, once per active set."""
        pgs = np.flatnonzero(sel)
        K, n, N = self.K[pgs], self.pg_n[pgs], self.pg_N[pgs]
        flip = n > N - n
        ns = np.minimum(n, N - n)
        const = (n == 0) | (n == N) | (K == 1)
        cg = pgs[const]
        cidx = self._pcs(cg)
        cval = np.repeat(self.pg_n[cg] / self.pg_N[cg], self.K[cg])
        one = ~const & (ns == 1)
        og = pgs[one]
        oidx = self._pcs(og)
        ogrp = np.repeat(np.arange(len(og)), self.K[og])
        batches = []
        gen = ~const & (ns >= 2)
        if gen.any():
            gp, gK, gn = pgs[gen], K[gen], ns[gen]
            Kp = 1 << np.ceil(np.log2(gK)).astype(np.int64)
            Lp = 1 << np.ceil(np.log2(gn + 1)).astype(np.int64)
            key = Kp * (1 << 32) + Lp
            for kv in np.unique(key):
                sel_b = np.flatnonzero(key == kv)
                kp, lp = int(kv >> 32), int(kv & ((1 << 32) - 1))
                step = max(1, _CHUNK // (kp * lp))
                for c0 in range(0, len(sel_b), step):
                    b = sel_b[c0:c0 + step]
                    g = gp[b]
                    col = np.arange(kp)[None, :]
                    valid = col < gK[b][:, None]
                    idx = np.where(valid, self.starts[g][:, None] + col, 0)
                    batches.append(_Batch(idx=idx, m=np.where(valid, self.m[idx], 0.0), n=gn[b],
                                          N=self.pg_N[g], flip=flip[gen][b], L=lp))
        pcs = self._pcs(pgs)
        return _Plan(pcs=pcs, const_idx=cidx, const_val=cval, one_idx=oidx, one_grp=ogrp,
                     one_flip=np.repeat(flip[one], self.K[og]), one_N=np.repeat(self.pg_N[og], self.K[og]).astype(float),
                     one_groups=len(og), batches=batches)

    def estep(self, plan: _Plan, f: np.ndarray, p: np.ndarray) -> None:
        """p[pc] = p(t:x) for every class of the plan's groups, given f per class."""
        p[plan.const_idx] = plan.const_val
        if len(plan.one_idx):  # n* = 1: p = o_j / sum o (a tuple at f = 1 takes the x)
            fo = f[plan.one_idx]
            fo = np.where(plan.one_flip, 1.0 - fo, fo)
            m = self.m[plan.one_idx]
            is1 = fo >= 1.0
            with np.errstate(divide="ignore", invalid="ignore"):
                o = np.where(is1, 0.0, fo / (1.0 - fo))
                ones = np.bincount(plan.one_grp, weights=m * is1, minlength=plan.one_groups)[plan.one_grp]
                S = np.bincount(plan.one_grp, weights=m * o, minlength=plan.one_groups)[plan.one_grp]
                rw = 1.0 / plan.one_N
                pt = np.where(ones == 0, np.where(S > 0, o / S, rw), np.where(ones == 1, is1 * 1.0, rw))
            p[plan.one_idx] = np.where(plan.one_flip, 1.0 - pt, pt)
        for b in plan.batches:
            pb = self._batch(b, f)
            valid = b.m > 0
            p[b.idx[valid]] = pb[valid]

    def _batch(self, b: _Batch, fpc: np.ndarray) -> np.ndarray:
        f = fpc[b.idx]
        f = np.where(b.flip[:, None], 1.0 - f, f)
        m = b.m
        one, zero = f >= 1.0, f <= 0.0
        inner = ~(one | zero) & (m > 0)
        ones = (m * one).sum(axis=1)
        nint = (m * inner).sum(axis=1)
        nn = b.n - ones  # x's left for the interior classes
        bad = (nn < 0) | (nn > nint)
        gen = ~bad & (nn > 0) & (nn < nint)
        pt = np.where(one, 1.0, 0.0)
        pt = np.where(inner & (nn == nint)[:, None] & ~bad[:, None], 1.0, pt)
        if gen.any():
            q, ok = self._dp(f[gen], np.where(inner[gen], m[gen], 0.0), nn[gen].astype(np.int64), nint[gen], b.L)
            sub = pt[gen]
            sub = np.where(inner[gen], q, sub)
            pt[gen] = sub
            bad_rows = np.flatnonzero(gen)[~ok]
            bad[bad_rows] = True
        pt = np.where(bad[:, None], (b.n / b.N)[:, None], pt)
        return np.where(b.flip[:, None], 1.0 - pt, pt)

    def _dp(self, f, m, n, nint, L):
        """Conditional Poisson-binomial for groups of classes (f in (0,1) where m > 0), 0 < n < nint."""
        G, Kp = f.shape
        inner = m > 0
        fz = np.where(inner, f, 0.5)
        z = np.log(fz) - np.log1p(-fz)
        # tilt the odds by exp(u) so that the expected number of x's is n (the posterior is unchanged)
        zi = np.where(inner, z, np.nan)
        ell = np.log(n) - np.log(nint - n)
        lo, hi = ell - np.nanmax(zi, axis=1), ell - np.nanmin(zi, axis=1)
        u = (lo + hi) / 2
        for _ in range(40):
            s = _expit(z + u[:, None])
            gval = (m * s).sum(axis=1) - n
            dg = (m * s * (1 - s)).sum(axis=1)
            lo = np.where(gval < 0, u, lo)
            hi = np.where(gval > 0, u, hi)
            with np.errstate(divide="ignore", invalid="ignore"):
                un = u - gval / dg
            u = np.where((un > lo) & (un < hi) & np.isfinite(un), un, (lo + hi) / 2)
            if np.all(np.abs(gval) < 1e-6 * np.maximum(1.0, n)):
                break
        w = z + u[:, None]
        lf1, lf0 = -np.logaddexp(0.0, -w), -np.logaddexp(0.0, w)  # log f', log (1 - f')
        mi = m.astype(np.int64)
        kk = np.arange(L)
        lfact = self.lfact

        def binom(mm):  # (G, Kp, L): the pmf of Binomial(mm, f') truncated to L
            mmc = np.maximum(mm, 0)[..., None]
            kin = kk <= mmc
            lg = (lfact[mmc] - lfact[kk] - lfact[np.where(kin, mmc - kk, 0)]
                  + kk * lf1[..., None] + (mmc - kk) * lf0[..., None])
            return np.where(kin, np.exp(np.where(kin, lg, 0.0)), 0.0)

        B1, B0 = binom(mi), binom(mi - 1)
        e0 = np.zeros((G, L))
        e0[:, 0] = 1.0
        pre, suf = [e0], [e0]
        for c in range(Kp):
            pre.append(_conv(pre[-1], B1[:, c]))
            suf.append(_conv(suf[-1], B1[:, Kp - 1 - c]))
        P = pre[Kp][np.arange(G), n]
        Pre = np.stack(pre[:Kp], axis=1)  # (G, Kp, L): classes before c
        Suf = np.stack(suf[Kp - 1::-1], axis=1)  # (G, Kp, L): classes after c
        R = _conv(Suf, B0)  # the others after c and the class's other tuples
        j = n[:, None, None] - 1 - kk[None, None, :]
        Rg = np.where(j >= 0, np.take_along_axis(R, np.broadcast_to(np.maximum(j, 0), R.shape), axis=2), 0.0)
        Q = (Pre * Rg).sum(axis=2)
        ok = (P > 0) & np.isfinite(P)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.exp(lf1) * Q / P[:, None]
        ok &= np.all(np.isfinite(q) | ~inner, axis=1)
        return np.clip(np.where(inner, q, 0.0), 0.0, 1.0), ok


def _expit(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncated convolution along the last axis: out[k] = sum_{i <= k} a[i] b[k - i]."""
    L = a.shape[-1]
    if L <= _DIRECT_CONV:
        out = a[..., :1] * b
        for i in range(1, L):
            out[..., i:] += a[..., i:i + 1] * b[..., :L - i]
        return out
    size = 1 << (2 * L - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[..., :L]
    return np.maximum(out, 0.0)
