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

The release holds only T's rows, generalized the way their P partners were (QI labels, Mondrian's
``_lo``/``_hi`` and ``eq_class``), with T's other columns beside. Before anything is written, the
top-node test says at once when |T|/|P| lies outside delta, and the release is re-checked from
scratch by :func:`anonydb.presence.check_presence` (P mapped onto the released classes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..engine import Engine, connect
from ..errors import AnonyDBError, InputError
from ..hierarchy import Hierarchy
from ..models.presence import DeltaPresence, parse_delta
from ..presence import FLAG, check_presence, flag_public, need_qis, require_feasible
from ..schema import split_list
from ..sources import open_source
from ..sqlgen import ident
from ..publish import publication_lines, drop_staged, guard_target, stage_name, swap, sweep
from .mondrian import _fmt


@dataclass
class PresenceResult:
    table: str
    method: str
    rows: int  # private rows released
    public_rows: int
    classes: int  # classes of P*
    achieved: tuple[Any, Any]  # (min, max) presence over the classes of P*
    seconds: float
    levels: dict[str, int] | None  # full-domain: the level vector
    report: Any  # the re-check of the release (anonydb.checker.Report)
    dropped: list[str] = field(default_factory=list)  # the private table's columns not published

    def format(self) -> str:
        lv = f"; levels [{', '.join(f'{q}={v}' for q, v in self.levels.items())}]" if self.levels else ""
        return (f"delta-presence ({self.method}): {self.rows} private rows released in {self.table} "
                f"({self.classes} classes of the {self.public_rows}-row public table{lv}) in {self.seconds:.2f} s\n"
                f"  verified: presence in [{_fmt(self.achieved[0])}, {_fmt(self.achieved[1])}] for every public row"
                + "".join("\n" + x for x in publication_lines(self.dropped, [], "")))


def presence_anonymize(private: str, public: str, qi: str | Iterable[str], *, delta: Any, out: str,
                       engine: Engine | Any = None, method: str = "fulldomain",
                       hierarchies: dict[str, Hierarchy] | None = None, key: str | None = None,
                       metric: str = "dm", relaxed: bool = False, categorical: str = "hierarchy",
                       seed: int | None = None, replace: bool = False) -> PresenceResult:
    """Release ``private`` (T) generalized so that it is delta-present with respect to ``public`` (P).

    ``key``: a column both tables share that identifies a person (else rows are matched on their
    QI values). ``hierarchies``: per QI (all of them for ``fulldomain``; categorical ones for
    Mondrian's hierarchy cuts). ``metric``: the full-domain optimum's metric (over P*). The release
    publishes the generalized QIs and the class id only: T's other columns are dropped (a kept
    column could not be judged against P). ``seed`` None orders the rows by a fresh secret.
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    model = DeltaPresence(delta)
    dmin, dmax = parse_delta(delta)
    if method not in ("fulldomain", "mondrian"):
        raise InputError(f"method must be 'fulldomain' (SPALM) or 'mondrian' (MPALM), got {method!r}")
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release table")
    guard_target(eng, [out], replace, sources=[private, public])
    sweep(eng)
    hierarchies = dict(hierarchies or {})
    stage = None
    with eng.scratch("presence_anon") as s:
        priv = open_source(eng, private, scratch=s)
        pub = open_source(eng, public, scratch=s)
        tcols, _ = need_qis(eng, priv, pub, qi_cols, f"the private table {private}", f"the public table {public}")
        flagged, n_t, n_p = flag_public(eng, s, priv, pub, qi_cols, key)
        require_feasible(n_t, n_p, (dmin, dmax))
        work = s.name()
        levels = None
        if method == "fulldomain":
            from .fulldomain import fulldomain

            # the release below is checked from P (check_presence) before it is written
            r = fulldomain(flagged, qi_cols, FLAG, hierarchies=hierarchies, out=work, engine=eng, metric=metric,
                           models=[model], seed=seed, _caller_keeps=FLAG)
            levels = dict(r.levels)
        else:
            from .mondrian import anonymize

            anonymize(flagged, qi_cols, FLAG, out=work, engine=eng, models=[model], hierarchies=hierarchies,
                      relaxed=relaxed, categorical=categorical, seed=seed, keep=["private_rid"],
                      _unjudged=("private_rid",))
        # the release: the private rows only, with their generalized QIs and class (in the work's
        # keyed order); T's other columns are dropped
        wcols = [c for c, _ in eng.columns(work) if c not in (FLAG, "private_rid")]
        dropped = [c for c in tcols if c not in qi_cols]
        stage = stage_name()
        try:
            eng.create_table_as(stage, f"SELECT {', '.join('w.' + ident(c) for c in wcols)} FROM {ident(work)} AS w "
                                       f"WHERE w.{ident(FLAG)} = 1")
            released = int(eng.scalar(f"SELECT count(*) FROM {ident(stage)}"))
            if released != n_t:
                raise AnonyDBError(f"internal error: the release holds {released} rows, the private table {n_t}")
            report = check_presence(stage, pub, qi_cols, delta=(dmin, dmax), engine=eng, hierarchies=hierarchies,
                                    levels=levels, max_groups=3)
            v = report.verdicts[0]
            if not v.holds:
                raise AnonyDBError(f"verification failed: delta-presence does not hold on the release "
                                   f"({v.violating_groups} of {v.groups} classes violate); nothing was written")
            swap(eng, [(stage, out)])
            stage = None
        finally:
            drop_staged(eng, [stage])
    return PresenceResult(table=out, method=method, rows=n_t, public_rows=n_p, classes=v.groups,
                          achieved=(v.achieved["delta_min"], v.achieved["delta_max"]),
                          seconds=time.perf_counter() - t0, levels=levels, report=report, dropped=dropped)
