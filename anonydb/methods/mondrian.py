"""Mondrian multidimensional partitioning as SQL plans.

LeFevre, DeWitt & Ramakrishnan (ICDE 2006), as adapted to every privacy model in Li's thesis
(spec-closeness-slicing 5.1, and Fig 2.1 / 5.2 for (n,t)-closeness). Top-down binary cuts: a
partition is cut on its widest dimension (normalized span) at the median, and the cut is
*allowable* when every half satisfies every configured model; otherwise the next-widest
dimension is tried (``try_all_dims``), and a partition with no allowable cut is final.

How the rounds run (level-wise, one recursive statement, or cut at the top and finished in
fragments in parallel) is :mod:`anonydb.methods.mondrian_rounds`; every plan gives the same release. What
changes when the rows belong to persons (``person``) is :mod:`anonydb.methods.mondrian_persons`. The
halves are judged by the same model code that checks a finished table (:mod:`anonydb.models`),
and the release is verified by :func:`anonydb.checker.check` before it is written (fail closed).
A model that is not monotone under merging groups, or whose verdict on a group depends on the
other groups ((epsilon,m)-anonymity, personalized privacy, multiple-QID k-anonymity;
``Model.candidate`` False), cannot judge a cut: an allowable cut needs halves that keep holding as
the partition tree's leaves are read as classes. The cuts are judged by the other models and that
one by the release's verification alone, which refuses a release it rejects.

Codes: a numeric QI is cut on its values, a date on epoch seconds, a categorical one on codes in
a stable value order (sorted values; NULL last) or, with a hierarchy, in the hierarchy's
depth-first leaf order, where a cut splits the partition's lowest common ancestor into its
children (a multiway cut). A hierarchy given for a numeric or date QI is used the same way (its
labels are the hierarchy's nodes), never ignored.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .. import events as run_events
from ..checker import build_models
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError, NotAvailable
from ..hierarchy import EnumeratedHierarchy, Hierarchy, RuleHierarchy
from ..models import Model, NTCloseness, candidate_models
from ..models.named import check_named
from ..models.personalized import guard_columns
from ..schema import is_numeric_type, kind_of_type, split_list
from ..release.publish import (PERSON_COLUMN, Publication, kept_columns_break, publication_lines,
                               pseudonymized, resolve_roles, tracked_column, tracked_key)
from ..sources import open_source
from ..sqlgen import ident, literal
from ..utility.measures import class_utility
from .mondrian_rounds import PLANS, Planner, _fmt  # noqa: F401 (_fmt: the other methods' formatting)
from .mondrian_persons import Owners


#: (n,t)-closeness takes a partition's ancestors as its natural supersets [Li thesis Def 2.2.2,
#: Fig 2.1]; a natural superset is a region of the QI space (the records inside a box). A relaxed
#: cut splits rows with equal QI values by row id, so an ancestor's rows are then not the records
#: inside its box, and no region is known to stand behind it: the pair is refused.
PERSON_RELAXED = ("record owners need strict cuts: relaxed cuts split rows with equal QI values, which would "
                  "split a person's records across classes; drop relaxed")
NT_RELAXED = ("(n,t)-closeness needs strict cuts: relaxed cuts split rows with equal QI values, so a "
              "partition's ancestors are no regions of the QI space to serve as natural supersets; "
              "drop relaxed (--relaxed)")


@dataclass
class _QI:
    column: str
    kind: str  # numeric | date | ordered | hierarchical
    dict: str | None = None  # (value, code) table of a hierarchical QI (an ordered one's is built in the work statement)
    hier: bool = False
    range: float = 0.0  # global max code - min code (hierarchical: leaves - 1)
    hierarchy: EnumeratedHierarchy | None = None
    card: int = 0  # categorical: number of values (hierarchical: leaves)
    values: str | None = None  # ordered, numeric, date: its value table (mondrian_values.sql.j2)


@dataclass
class MondrianResult:
    """A verified Mondrian release and what it cost."""

    table: str
    rows: int
    classes: int
    rounds: int
    seconds: float
    utility: dict[str, Any]
    report: Any  # anonydb.checker.Report of the verification
    params: dict[str, Any] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # source columns not published (no role, identifiers)
    kept: list[str] = field(default_factory=list)  # published unchanged at the user's request
    order: str = ""  # how the rows are ordered (secret, or recomputable from a seed)
    person: str | None = None  # record owners: the column the models counted persons by
    person_like: list[tuple[str, int, int]] = field(default_factory=list)  # dropped columns like a person key
    pseudonyms: tuple[list[str], str] = ([], "")  # columns published as keyed pseudonyms, where the key came from

    def format(self) -> str:
        u = self.utility
        if "per_record" in u:  # record owners: the classes hold persons, each with their records
            r = u["per_record"]
            lines = [f"release {self.table}: {self.rows} rows of {u['persons']} persons in {self.classes} "
                     f"equivalence classes ({self.rounds} rounds, {self.seconds:.2f} s)",
                     f"  utility per person: DM {u['dm']}, C_AVG {u['cavg']:.3f}, NCP {100 * u['ncp']:.2f}%"
                     + (f", KL {u['kl']:.4f}" if "kl" in u else ""),
                     f"  utility per record: DM {r['dm']}, NCP {100 * r['ncp']:.2f}%"]
            if u.get("suppressed_persons"):
                lines.append(f"  suppressed: {u['suppressed_persons']} persons with all their records (their linked "
                             f"records' classes were shared by fewer than k persons)")
        else:
            lines = [f"release {self.table}: {self.rows} rows in {self.classes} equivalence classes "
                     f"({self.rounds} rounds, {self.seconds:.2f} s)",
                     f"  utility: DM {u['dm']}, C_AVG {u['cavg']:.3f}, GCP {u['gcp']:.1f}, "
                     f"NCP {100 * u['ncp']:.2f}%, KL {u['kl']:.4f}"]
        lines.append("  verified: " + "; ".join(
            f"{v.model} holds (achieved {', '.join(f'{k} = {_fmt(x)}' for k, x in v.achieved.items())})"
            for v in self.report.verdicts))
        lines += publication_lines(self.dropped, self.kept, self.order, self.person, self.person_like, self.pseudonyms)
        return "\n".join(lines)


def anonymize(source: str, qi: str | Iterable[str], sensitive: str | None = None, *, out: str,
              engine: Engine | Any = None, models: list[Model] | None = None,
              hierarchies: dict[str, Hierarchy] | None = None, kinds: dict[str, str] | None = None,
              identifiers: str | Iterable[str] | None = None, keep: str | Iterable[str] | None = None,
              relaxed: bool = False, categorical: str = "hierarchy", try_all_dims: bool = True,
              replace: bool = False, seed: int | None = None, progress: Callable[[dict[str, Any]], None] | None = None, as_view: bool = False,
              plan: str = "auto", _unjudged: tuple[str, ...] = (), person: str | None = None,
              pseudonymize: str | Iterable[str] | None = None, secret_file: Any = None,
              varying: bool = False, max_suppression: float = 0.0, **params: Any) -> MondrianResult:
    """Anonymize ``source`` with Mondrian into the table ``out``; return the verified release.

    Models come from ``models`` or from the parameters of :func:`anonydb.checker.build_models`
    (``k``, ``l`` + ``l_variant``/``c``, ``t`` + ``distance``, ``n`` with ``t``, ``alpha``,
    ``delta``). ``hierarchies`` maps attributes to hierarchies: an enumerated hierarchy of a
    categorical QI makes it split along the hierarchy (unless ``categorical="order"``), the
    sensitive attribute's one selects hierarchical EMD. ``kinds`` overrides a QI's kind
    (numeric, categorical, ordinal, date). The release publishes the QIs, the sensitive attribute
    and the ``keep`` columns (unchanged); ``identifiers`` and every other column are dropped
    (:mod:`anonydb.release.publish`), and the models are verified over every published column. ``seed``
    None orders the rows by a fresh secret; an integer gives a reproducible order. ``relaxed`` splits ties so both halves are balanced
    (not with (n,t): its natural supersets must be regions of the QI space, :data:`NT_RELAXED`).
    ``progress`` is called after every round with {round, open, classes (final so far), rows_open,
    done (rows closed)} (once, at the end, when every round runs in one statement); the phases
    (reading, coding, rounds, output, verification, loss, writing) go to :mod:`anonydb.events`.
    ``plan``: "recursive" runs every round in one recursive statement (DuckDB; not with (n,t) or
    (B,t)), "levelwise" one round at a time (a few statements each, portable), "fragments" the
    first rounds without rewriting the rows, then every fragment finished on its own, in parallel
    where the engine can; "auto" the recursive plan where it applies and the table is small
    (rows x QIs <= ONE_ATTEMPT_ROWS), the fragment plan from the engine's ``fragments_from`` rows,
    else the level-wise one (:mod:`anonydb.methods.mondrian_rounds`). Every plan gives the same
    partitions.
    ``as_view``: ``out`` becomes a view over the verified rows, stored in ``<out>__data`` (a view
    over the live source would let later changes to the source bypass the verification).
    ``person``: the column naming each record's owner. Every model then judges distinct persons
    (:mod:`anonydb.models.base`), the cuts partition persons (every QI must be constant per person:
    all of a person's records land in one class, under one label), and the column is not published.
    ``pseudonymize``: columns published as their keyed pseudonym (HMAC-SHA256, the key from
    ``secret_file``, ``$ANONYDB_SECRET`` or fresh; :func:`anonydb.release.publish.pseudonymized`);
    the person column among them links a person's records, which all share one class of >= k
    persons, so the set of classes holding a person is shared by every person of that class.
    ``varying``: the QIs may vary within a person (a visit month): the cuts partition records, each
    class counting its distinct persons; when the person's pseudonym is published (the records are
    linkable), every person's set of classes must be shared by at least k persons
    (:mod:`anonydb.linkage`): the persons that break it are suppressed, with all their records, up to
    ``max_suppression`` of the persons (reported), or the release is refused.
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    ids = split_list(identifiers, "identifiers")
    if categorical not in ("hierarchy", "order"):
        raise InputError(f"categorical must be 'hierarchy' or 'order', got {categorical!r}")
    if plan not in PLANS:
        raise InputError(f"plan must be one of {', '.join(PLANS)}, got {plan!r}")
    if plan == "recursive" and eng.dialect != "duckdb":  # refused before anything is read or written
        raise NotAvailable("Mondrian's plan='recursive' (one recursive statement with DuckDB's USING KEY); "
                           "use plan='levelwise'", eng.dialect)
    if models is None:
        model_params = dict(params)
        models = build_models(**params)
    elif params:
        raise InputError(f"give models or parameters, not both (got {', '.join(params)})")
    else:
        model_params = None
    if not models:
        raise InputError("no privacy model requested: give at least one of k, l, t, n, alpha, delta")
    searched = candidate_models(models, "Mondrian")  # the others: the release's verification alone
    if relaxed and any(isinstance(m, NTCloseness) for m in models):
        raise InputError(NT_RELAXED)
    if varying and person is None:
        raise InputError("varying QIs are QIs that vary within a person: name the person column as well")
    if isinstance(max_suppression, bool) or not isinstance(max_suppression, (int, float)) \
            or not 0 <= max_suppression <= 1:
        raise InputError(f"max_suppression must be a fraction in [0, 1], got {max_suppression!r}")
    if person is not None:
        if relaxed:
            raise InputError(PERSON_RELAXED)
        if any(getattr(m, "needs_members", False) for m in models):
            raise InputError("(B,t)-privacy judges each row's QI tuple, not persons: drop person, or use another model")
    if sensitive is None and any(m.needs_sensitive for m in models):
        names = ", ".join(m.name for m in models if m.needs_sensitive)
        raise InputError(f"{names} needs a sensitive attribute (--sensitive)")
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release table")
    hierarchies = dict(hierarchies or {})
    verify_models = [copy.deepcopy(m) for m in models] if model_params is None else build_models(**model_params)
    with Publication(eng, [out], replace, sources=[source], seed=seed) as pub:
        order = pub.order
        with eng.scratch("mondrian") as s:
            run_events.phase("reading")
            relation = open_source(eng, source, scratch=s, numeric=[c for c, k in (kinds or {}).items() if k == "numeric"])
            roles = resolve_roles(eng, relation, qi_cols, sensitive, ids, keep, kinds, label=str(source), person=person,
                                  pseudonymize=pseudonymize)
            types, columns = roles.types, roles.columns
            # a guard column (personalized privacy) rides through the verification, then goes
            guards = guard_columns(verify_models, columns.published)
            check_named(eng, relation, verify_models, qi=qi_cols, sensitive=sensitive, person=person, label=str(source),
                        hierarchy=hierarchies.get(sensitive) if sensitive else None)
            tracked = tracked_column(person, columns.published)  # the ledger's key rides through, then goes
            staged = columns.published + guards + tracked
            relation, key_origin = pseudonymized(eng, s, relation, columns, secret_file)
            for attr in hierarchies:
                if attr not in qi_cols and attr != sensitive:
                    raise InputError(f"a hierarchy is given for {attr!r}, which is neither a quasi-identifier "
                                     f"nor the sensitive attribute")
                if attr in qi_cols and categorical == "order":
                    raise InputError(f"a hierarchy is given for {attr!r}, but categorical='order' cuts in value "
                                     f"order and would ignore it; drop it or cut along it (categorical='hierarchy')")
            sa = sensitive if any(m.needs_sensitive for m in models) else None
            owners = Owners(eng, s, person, varying, sa) if person is not None else None
            if owners is not None:  # the persons' facts, or the records themselves (varying QIs)
                relation = owners.facts(relation, qi_cols)
            base, rid = eng.row_ids(s, relation)
            total = owners.count(base) if owners else eng.scalar(f"SELECT count(*) FROM {ident(base)}")
            if total == 0:
                raise InputError(f"{source} is empty: there is nothing to anonymize")
            run_events.update(**{"persons" if person is not None and not varying else "rows": int(total)})
            run_events.phase("coding", qis=len(qi_cols))
            qis = _code_qis(eng, s, base, qi_cols, types, kinds or {}, hierarchies, categorical)
            hq = _hierarchy_codes(eng, s, qis)
            planner = Planner(eng, s, qis, hq, sa, relaxed, try_all_dims, searched,
                               base, rid, total, types, hierarchies.get(sensitive) if sensitive else None, qi_cols, person, varying)
            planner.bind_members(hierarchies, kinds)
            rows, rounds, tree = planner.run(progress, plan)
            run_events.phase("output")
            stage = pub.stage()
            records = total
            if owners is not None:  # the records, each in its person's class (or partitioned themselves)
                rows, how = owners.release(base, rid, rows)
                records = owners.records
                boxes, joined = _materialize(eng, s, base, rid, rows, qis, hq, staged, stage, order, relaxed, **how)
            else:
                boxes, joined = _materialize(eng, s, base, rid, rows, qis, hq, staged, stage, order,
                                             relaxed, joined=bool(planner.bt))
            released, n_classes = eng.fetch_rows(f"SELECT count(*), count(DISTINCT eq_class) FROM {ident(stage)}")[1][0]
            if released != records:  # every input row appears exactly once
                raise AnonyDBError(f"internal error: the release holds {released} rows, the source {records}")
            suppressed = 0
            ks = [m.k for m in models if isinstance(getattr(m, "k", None), int)]  # the k each model asks
            if varying and person in columns.pseudonyms:  # linkable records: the intersection attack
                stage, suppressed = owners.unlink(pub, stage, ks, max_suppression, total)
                released, n_classes = eng.fetch_rows(f"SELECT count(*), count(DISTINCT eq_class) "
                                                     f"FROM {ident(stage)}")[1][0]
            sa_h = {sensitive: hierarchies[sensitive]} if sensitive and sensitive in hierarchies else None
            run_events.phase("verification")
            plain = [m for m in verify_models
                     if not isinstance(m, NTCloseness) and not getattr(m, "needs_members", False)]
            if not plain and columns.keep:  # the class-wise models below judge eq_class: kept columns may not split it
                plain = build_models(k=1)
            if plain:  # over every published column but the sensitive one (fail closed)
                try:
                    pub.verify(stage, sensitive, plain, columns.keep, hierarchies=sa_h,
                               exclude=tuple(_unjudged) + ((person,) if person in columns.published else ()) + tuple(guards)
                               + tuple(tracked),
                               expected_groups=None if columns.keep else n_classes,
                               **({"person": PERSON_COLUMN} if person is not None else {}))
                except AnonyDBError as e:
                    if not suppressed or isinstance(e, InputError):
                        raise
                    raise InfeasibleError(f"suppressing the {suppressed} persons the intersection attack singles out "
                                          f"leaves classes that fail the models ({e}); raise k or generalize the "
                                          f"varying QIs further") from None
            nt = [m for m in verify_models if isinstance(m, NTCloseness)]
            if nt:  # over every published column too: a kept column splits a class into groups judged alone
                report = planner.verify_nt(nt, stage, tree, columns.keep)
                if not report.holds and columns.keep and planner.verify_nt(nt, stage, tree).holds:
                    raise kept_columns_break(columns.keep, next(v for v in report.verdicts if not v.holds),
                                             *((eng, stage) if person is None else ()))
                _attach(pub, stage, report)
            if planner.bt:  # judged per tuple from the final classes' rows, with the priors already estimated
                _attach(pub, stage, planner.verify_bt(joined))
            pub.track(stage, PERSON_COLUMN if person is not None else tracked_key(),
                      ["eq_class"] + [c for c in columns.keep if c not in tracked], sensitive)
            for c in tracked:
                eng.drop_column(stage, c)
            if person is not None:  # verified by persons: the staged key goes
                eng.drop_column(stage, PERSON_COLUMN)
            for g in guards:  # verified: the guarding nodes are never published
                eng.drop_column(stage, g)
            report = pub.staged[stage]
            kmin = min(ks) if ks else None
            run_events.phase("loss")
            if owners is not None:  # per person (the classes count persons) and per record
                utility = owners.utility(rows, boxes, qis, int(total), kmin, relaxed, suppressed, base, rid, sensitive)
            else:
                utility = class_utility(eng, rows, boxes, qis, sensitive, None if sa else (base, rid), total, kmin,
                                        relaxed)
        pub.commit([(stage, out)], as_view)
    return MondrianResult(table=out, rows=int(records), classes=n_classes, rounds=rounds,
                          seconds=time.perf_counter() - t0, utility=utility, report=report,
                          params={"relaxed": relaxed, "categorical": categorical, **(model_params or {})},
                          dropped=columns.dropped, kept=columns.keep, order=order.describe(), person=person,
                          person_like=columns.person_like, pseudonyms=(columns.pseudonyms, key_origin))


def _attach(pub: Publication, stage: str, report: Any) -> None:
    """Hand a verification Mondrian ran from its own state ((n,t) over the tree, (B,t) per tuple) to
    the release."""
    bad = next((v for v in report.verdicts if not v.holds), None)
    g = bad.violations[0] if bad and bad.violations else None
    where = f"; e.g. group {g.key} of {g.size} rows has value {_fmt(g.value)}" if g else ""
    failure = "" if bad is None else (f"{bad.model} does not hold on the release ({bad.violating_groups} groups "
                                      f"violate){where}")
    pub.attach([stage], report.holds, failure, report)


# ------------------------------------------------------------------------------------------------
def _code_qis(eng, s, base, qi_cols, types, kinds, hierarchies, categorical) -> list[_QI]:
    """Each QI's kind and coding. The ranges and NULL counts of every numeric and date QI come from
    one query; an ordered QI's value table (value -> code in sorted order, NULL a value of its own,
    ``mondrian_values.sql.j2``) and a hierarchical one's dictionary are built here, an ordered one's
    size read from the codes (:meth:`Planner.setup`)."""
    qis: list[_QI] = []
    stats: list[str] = []  # the one query's expressions, three per numeric or date QI
    for c in qi_cols:
        kind = kinds.get(c) or kind_of_type(types[c])
        if kind in ("numeric", "date") and not (c in hierarchies and categorical == "hierarchy"):
            kind_sql = f"TRY_CAST({ident(c)} AS DOUBLE)" if kind == "numeric" and not is_numeric_type(types[c]) \
                else ident(c)
            v = f"CAST({kind_sql} AS DOUBLE)" if kind == "numeric" else f"epoch({ident(c)})"
            stats += [f"count(*) FILTER (WHERE {ident(c)} IS NULL)", f"min({v})", f"max({v})"]
            qis.append(_QI(c, kind))
            continue
        h = hierarchies.get(c)
        if h is not None and categorical == "hierarchy":
            if isinstance(h, RuleHierarchy):  # masking / intervals / dates: enumerate it over the column's values
                h.validate(eng, base, c)
                wide = h.materialize_wide(eng, s.name(), relation=base, column=c, temp=True)
                h = hierarchies[c] = EnumeratedHierarchy.from_rows(
                    eng.fetch_rows(f"SELECT * FROM {ident(wide)} ORDER BY 1")[1], source=h.source)
            if not isinstance(h, EnumeratedHierarchy):
                raise InputError(f"quasi-identifier {c!r}: Mondrian splits categorical values along an enumerated "
                                 f"hierarchy (ARX file or rows); {type(h).__name__} is not one")
            h.validate(eng, base, c)
            leaves = _dfs_leaves(h)
            d = s.name()
            eng.execute(f"CREATE TEMP TABLE {ident(d)} AS SELECT CAST(v AS VARCHAR) AS _adb_value, "
                        f"CAST(code AS INTEGER) AS _adb_code FROM (VALUES "
                        + ", ".join(f"({literal(v)}, {i})" for i, v in enumerate(leaves)) + ") AS t(v, code)")
            # the join key is the value as text: cast the source side the same way
            dv = s.table(f"SELECT DISTINCT {ident(c)} AS _adb_value, d._adb_code FROM {ident(base)} AS b "
                         f"JOIN {ident(d)} AS d ON CAST(b.{ident(c)} AS VARCHAR) = d._adb_value")
            qis.append(_QI(c, "hierarchical", dict=dv, hier=True, range=float(len(leaves) - 1), hierarchy=h,
                           card=len(leaves)))
            stats.append(f"count(*) FILTER (WHERE {ident(c)} IS NULL)")  # a hierarchy's leaves never hold NULL
        else:  # card and range are read from the codes when the work statement has built them
            q = _QI(c, "ordered")
            q.values = s.table(eng.render("mondrian_values.sql.j2", q=q, base=base))
            qis.append(q)
    if stats:
        got = iter(eng.fetch_rows(f"SELECT {', '.join(stats)} FROM {ident(base)}")[1][0])
        for q in qis:
            if q.kind in ("numeric", "date"):
                nulls, lo, hi = next(got), next(got), next(got)
                if nulls:
                    raise InputError(f"{q.kind} quasi-identifier {q.column!r} has {nulls} NULL values; Mondrian cuts "
                                     f"on values, so fill or drop them (or declare {q.column!r} categorical)")
                q.range = float(hi - lo)
            elif q.hier and (nulls := next(got)):
                raise InputError(f"quasi-identifier {q.column!r} has {nulls} NULL values, which its hierarchy does not "
                                 f"cover; fill or drop them (or give {q.column!r} no hierarchy: NULL is then a value)")
    return qis


def _dfs_leaves(h: EnumeratedHierarchy) -> list[str]:
    """The leaves in depth-first order (grouped by their ancestors, root first), so that every
    node of the hierarchy covers a contiguous run of leaf codes."""
    order: dict[tuple[int, str], int] = {}
    for r in h.rows:  # first appearance order of every node, level by level
        for lvl, v in enumerate(r):
            order.setdefault((lvl, v), len(order))
    H = h.height
    return [r[0] for r in sorted(h.rows, key=lambda r: tuple(order[(lvl, r[lvl])] for lvl in range(H, -1, -1)))]


def _hierarchy_codes(eng, s, qis: list[_QI]) -> str | None:
    """(_adb_dim, _adb_code, _adb_depth, _adb_node, _adb_lo, _adb_hi): for every leaf code of a
    hierarchical QI and every depth (0 = root .. H = the leaf), the ancestor's label and the code
    interval it covers."""
    rows = []
    for i, q in enumerate(qis):
        if not q.hier:
            continue
        h = q.hierarchy
        leaves = _dfs_leaves(h)
        code = {v: j for j, v in enumerate(leaves)}
        H = h.height
        span: dict[tuple[int, str], list[int]] = {}
        for r in h.rows:
            for lvl in range(H + 1):
                sp = span.setdefault((lvl, r[lvl]), [code[r[0]], code[r[0]]])
                sp[0], sp[1] = min(sp[0], code[r[0]]), max(sp[1], code[r[0]])
        for r in h.rows:
            for lvl in range(H + 1):
                lo, hi = span[(lvl, r[lvl])]
                rows.append(f"({i}, {code[r[0]]}, {H - lvl}, {literal(r[lvl])}, {lo}, {hi})")
    if not rows:
        return None
    name = s.name()
    eng.execute(f"CREATE TEMP TABLE {ident(name)} AS SELECT CAST(d AS INTEGER) AS _adb_dim, CAST(c AS DOUBLE) AS _adb_code, "
                f"CAST(h AS INTEGER) AS _adb_depth, CAST(n AS VARCHAR) AS _adb_node, CAST(lo AS DOUBLE) AS _adb_lo, "
                f"CAST(hi AS DOUBLE) AS _adb_hi FROM (VALUES {', '.join(rows)}) AS t(d, c, h, n, lo, hi)")
    return name


# ------------------------------------------------------------------------------------------------
# ------------------------------------------------------------------------------------------------
def _materialize(eng, s, base, rid, rows, qis, hq, published, stage, order, relaxed, joined=False,
                 release=None, person=None) -> tuple[str, str | None]:
    """The release: generalized QIs (each under its own name: a label; numeric and date QIs also as
    <name>_lo / <name>_hi), eq_class, the sensitive and kept columns unchanged, rows in the order of
    ``order`` (a keyed hash). Boxes and labels are built once per class from the final rows' codes
    (``rows``, :meth:`Planner.run`); the source rows are read once, by the release itself. Returns
    (boxes, the source rows joined with their partition, made only when ``joined`` is asked).
    ``release``: (records, their row id, record id -> partition) when the rows partitioned are
    persons: the release publishes the records, each with its person's class, and stages the
    person key as PERSON_COLUMN for the verification (dropped before the release is written)."""
    taken = set(published)
    for q in qis:
        if q.kind in ("numeric", "date"):
            for suffix in ("_lo", "_hi"):
                if q.column + suffix in taken:
                    raise InputError(f"the release adds {q.column + suffix!r} (the range of {q.column!r}), "
                                     f"but the source already has a column of that name")
    if "eq_class" in taken:
        raise InputError("the release adds the column 'eq_class', but the source already has one")
    for q in qis:
        if q.kind in ("numeric", "date") and q.values is None:
            q.values = s.table(eng.render("mondrian_values.sql.j2", q=q, base=base))
    boxes = s.table(eng.render("mondrian_boxes.sql.j2", rows=rows, qis=qis, hq=hq, relaxed=relaxed))
    qcol = {q.column: i for i, q in enumerate(qis)}
    rbase, rrid, rrows = release or (base, rid, rows)
    eng.execute(eng.render("mondrian_release.sql.j2", stage=stage, base=rbase, rid=rrid, rows=rrows, boxes=boxes,
                           qis=qis, qcol=qcol, keep=published, key=order.key, person=person,
                           person_column=PERSON_COLUMN))
    if not joined:
        return boxes, None
    rid_col = "" if rid == "_adb_rid" else f"b.{rid} AS _adb_rid, "
    return boxes, s.table(f"SELECT a._adb_pid, {rid_col}b.* FROM {ident(base)} AS b JOIN {ident(rows)} AS a "
                          f"ON a._adb_rid = b.{ident(rid) if rid == '_adb_rid' else rid}")
