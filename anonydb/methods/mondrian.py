"""Mondrian multidimensional partitioning as level-wise SQL plans.

LeFevre, DeWitt & Ramakrishnan (ICDE 2006), as adapted to every privacy model in Li's thesis
(spec-closeness-slicing 5.1, and Fig 2.1 / 5.2 for (n,t)-closeness). Top-down binary cuts: a
partition is cut on its widest dimension (normalized span) at the median, and the cut is
*allowable* when every half satisfies every configured model; otherwise the next-widest
dimension is tried (``try_all_dims``), and a partition with no allowable cut is final.

The plan is level-wise: every round handles all open partitions at once with a few set-based
statements over a partition-id column (``sql/mondrian_*.sql.j2``): sizes and code ranges per
partition, ranked cut dimensions, a histogram per partition over its cut dimension, the median
cut, the halves' counts, the models' verdicts with keys (partition, side), and the relabelling of
the rows. Python loops over rounds and over the (at most d) dimension attempts of a round, never
over rows or partitions. On DuckDB, below ``ONE_ATTEMPT_ROWS`` rows x QIs and for models judged
from counts alone, the rounds run instead as the step of one recursive statement
(``mondrian_recursive.sql.j2``, the same templates): a round's cost on such tables is the fixed
cost of its statements, which one statement pays once. Both plans give the same release. The
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
from fractions import Fraction
from typing import Any, Callable, Iterable

from .. import events as run_events
from ..checker import build_models, check
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError, NotAvailable
from ..hierarchy import EnumeratedHierarchy, Hierarchy, RuleHierarchy
from ..models import GroupContext, Model, NTCloseness, candidate_models
from ..models.named import check_named
from ..models.personalized import guard_columns
from ..schema import is_numeric_type, kind_of_type, split_list
from ..release.publish import (PERSON_COLUMN, Publication, constant_qis, kept_columns_break, publication_lines,
                               pseudonymized, resolve_roles, tracked_column, tracked_key)
from ..sources import open_source
from ..sqlgen import ident, literal
from ..utility.measures import class_utility, person_kl
from .unlink import unlink


#: (n,t)-closeness takes a partition's ancestors as its natural supersets [Li thesis Def 2.2.2,
#: Fig 2.1]; a natural superset is a region of the QI space (the records inside a box). A relaxed
#: cut splits rows with equal QI values by row id, so an ancestor's rows are then not the records
#: inside its box, and no region is known to stand behind it: the pair is refused.
PERSON_RELAXED = ("record owners need strict cuts: relaxed cuts split rows with equal QI values, which would "
                  "split a person's records across classes; drop relaxed")
NT_RELAXED = ("(n,t)-closeness needs strict cuts: relaxed cuts split rows with equal QI values, so a "
              "partition's ancestors are no regions of the QI space to serve as natural supersets; "
              "drop relaxed (--relaxed)")
#: while (open rows x QIs) is at most this, a round judges every dimension of every partition in
#: one attempt; above it, the widest dimension first and the others only where it fails
ONE_ATTEMPT_ROWS = 4_000_000
#: the ways to run the rounds (``anonymize(plan=...)``)
PLANS = ("auto", "recursive", "levelwise")


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


def _fmt(x: Any) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x} ({float(x):.4f})"
    if isinstance(x, float):
        return f"{x:.4f}"
    return str(x)


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
    (B,t)), "levelwise" one round at a time (a few statements each, portable), "auto" the
    recursive plan where it applies and the table is small (rows x QIs <= ONE_ATTEMPT_ROWS).
    Both give the same partitions.
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
            events = None
            if person is not None and not varying:  # partition persons: a row per person, or per (person, value)
                events, relation = relation, s.table(eng.render("person_facts.sql.j2", person=person, qis=qi_cols,
                                                                 sensitive=sa, source=relation))
                constant_qis(eng, relation, person, qi_cols, facts=not sa)  # read from the persons' facts
            base, rid = eng.row_ids(s, relation)
            total = eng.scalar(f"SELECT count(*) FROM {ident(base)}" if person is None or (not sa and not varying) else
                               f"SELECT count(DISTINCT {ident(person)}) FROM {ident(base)}" if varying else
                               f"SELECT count(*) FROM {ident(base)} WHERE _adb_own = 1")
            if total == 0:
                raise InputError(f"{source} is empty: there is nothing to anonymize")
            run_events.update(**{"persons" if person is not None and not varying else "rows": int(total)})
            run_events.phase("coding", qis=len(qi_cols))
            qis = _code_qis(eng, s, base, qi_cols, types, kinds or {}, hierarchies, categorical)
            hq = _hierarchy_codes(eng, s, qis)
            planner = _Planner(eng, s, qis, hq, sa, relaxed, try_all_dims, searched,
                               base, rid, total, types, hierarchies.get(sensitive) if sensitive else None, qi_cols, person, varying)
            planner.bind_members(hierarchies, kinds)
            rows, rounds, tree = planner.run(progress, plan)
            run_events.phase("output")
            stage = pub.stage()
            records = total
            if varying:  # the rows partitioned are the records
                records = eng.scalar(f"SELECT count(*) FROM {ident(base)}")
                boxes, joined = _materialize(eng, s, base, rid, rows, qis, hq, staged, stage, order,
                                             relaxed, person=person)
            elif person is not None:  # every record takes its person's class
                ebase, erid = eng.row_ids(s, events)
                records = eng.scalar(f"SELECT count(*) FROM {ident(ebase)}")
                owners = s.table(eng.render("person_classes.sql.j2", rows=rows, base=base, rid=rid, person=person,
                                            events=ebase, erid=erid))
                if sa:  # one row a person: the boxes count persons
                    rows = s.table(f"SELECT * FROM {ident(rows)} WHERE _adb_own = 1")
                boxes, joined = _materialize(eng, s, base, rid, rows, qis, hq, staged, stage, order,
                                             relaxed, release=(ebase, erid, owners), person=person)
            else:
                boxes, joined = _materialize(eng, s, base, rid, rows, qis, hq, staged, stage, order,
                                             relaxed, joined=bool(planner.bt))
            released, n_classes = eng.fetch_rows(f"SELECT count(*), count(DISTINCT eq_class) FROM {ident(stage)}")[1][0]
            if released != records:  # every input row appears exactly once
                raise AnonyDBError(f"internal error: the release holds {released} rows, the source {records}")
            suppressed = 0
            if varying and person in columns.pseudonyms:  # linkable records: the intersection attack
                ks = [m.k for m in models if isinstance(getattr(m, "k", None), int)]
                stage, suppressed = unlink(eng, s, pub, stage, max(ks) if ks else 1, int(max_suppression * total + 1e-9),
                                            total)
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
            ks = [m.k for m in models if isinstance(getattr(m, "k", None), int)]
            kmin = min(ks) if ks else None
            run_events.phase("loss")
            if varying:  # the rows partitioned are records: per record, and per person of each class
                counts = s.table(f"SELECT _adb_pid, count(DISTINCT _adb_p) AS _adb_n FROM {ident(rows)} GROUP BY 1")
                utility = {"persons": int(total), "suppressed_persons": suppressed,
                           **class_utility(eng, rows, boxes, qis, None, None, total, kmin, relaxed, counts),
                           "per_record": class_utility(eng, rows, boxes, qis, None, None, records, kmin, relaxed)}
            elif person is None:
                utility = class_utility(eng, rows, boxes, qis, sensitive, None if sa else (base, rid), total, kmin,
                                        relaxed)
            else:  # per person (the rows partitioned) and per record (each class weighed by its records)
                utility = class_utility(eng, rows, boxes, qis, None, None, total, kmin, relaxed)
                if sensitive:  # KL over the persons' (QI tuple, value) facts, as the row-level one over rows
                    utility["kl"] = person_kl(eng, s, rows, base, rid, boxes, qis, person, events, sensitive)
                counts = s.table(f"SELECT _adb_pid, count(*) AS _adb_n FROM {ident(owners)} GROUP BY _adb_pid")
                utility = {"persons": int(total), **utility,
                           "per_record": class_utility(eng, rows, boxes, qis, None, None, records, kmin, relaxed,
                                                       counts)}
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
    size read from the codes (:meth:`_Planner.setup`)."""
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
class _Planner:
    """The rounds of the level-wise plan."""

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
            first = (f"CASE WHEN row_number() OVER (PARTITION BY _adb_pid, _adb_p ORDER BY _adb_sa NULLS LAST) = 1 "
                     f"THEN 1 ELSE 0 END AS _adb_own" if self.sa else "1 AS _adb_own")
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
        if plan == "recursive" or (plan == "auto" and self.recursive_ok()):
            return self._run_recursive(progress)
        return self._run_levelwise(progress)

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

    def _run_levelwise(self, progress=None) -> tuple[str, int, str]:
        """One round at a time: Python loops over rounds, each a few statements."""
        e, s = self.eng, self.s
        self.assign = s.table(f"SELECT {self.row_columns()} FROM {ident(self.work)} LIMIT 0")
        # the partition tree: every partition with its parent and size (the root has parent NULL)
        self.tree = s.table(f"SELECT CAST(0 AS BIGINT) AS _adb_pid, CAST(NULL AS BIGINT) AS _adb_parent, "
                            f"CAST({self.total} AS BIGINT) AS _adb_n")
        rnd, next_id, n_parts, n_rows, largest = 0, 1, 1, self.total, self.total
        closed = 0  # final partitions so far
        fragment_rows = getattr(e, "fragment_rows", 0) if self._fragments_supported() is None else 0
        while n_parts:
            if largest <= fragment_rows:  # every open partition fits one worker: finish each there
                rnd = self._finish_fragments(rnd, n_parts, progress, closed)
                break
            rnd += 1
            mark = len(s.names)
            cand_all = s.put("cand", self.render("mondrian_cand.sql.j2", work=self.work))
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
                split = s.put(f"split{i}", self.render("mondrian_split.sql.j2", work=self.work, cand=cand,
                                                       from_rows=(self.relaxed and bool(self.sa)) or self.varying))
                keys = ["_adb_pid", "_adb_dim", "_adb_side"]
                members = None
                if self.bt:
                    cuts = s.put(f"cuts{i}", f"SELECT DISTINCT _adb_pid, _adb_dim, _adb_lcad, _adb_m, _adb_tl "
                                             f"FROM {ident(split)}")
                    members = s.put(f"members{i}", self.render("mondrian_members.sql.j2", work=self.work,
                                                               cuts=cuts))
                ok = self.judge(split, keys, groups=None if self.sa else split, members=members)
                chosen_parts.append(s.put(f"chosen{i}", self.render("mondrian_choose.sql.j2", ok=ok, split=split)))
                side_parts.append(f"SELECT x._adb_pid, x._adb_side{', x._adb_sa' if self.sa else ''}, x._adb_cnt "
                                  f"FROM {ident(split)} AS x JOIN {ident(chosen_parts[-1])} AS c "
                                  f"ON c._adb_pid = x._adb_pid AND c._adb_dim = x._adb_dim")
            chosen = chosen_parts[0] if len(chosen_parts) == 1 else \
                s.put("chosen", " UNION ALL ".join(f"SELECT * FROM {ident(p)}" for p in chosen_parts))
            # final partitions: every open partition without an allowable cut
            e.execute(f"INSERT INTO {ident(self.assign)} SELECT {self.row_columns()} FROM {ident(self.work)} "
                      f"WHERE _adb_pid NOT IN (SELECT _adb_pid FROM {ident(chosen)})")
            sides = s.put("sides", " UNION ALL ".join(side_parts)) if self.nt else \
                "(" + " UNION ALL ".join(side_parts) + ")"
            sides_sql = ident(sides) if self.nt else sides
            children = s.put("children", f"SELECT _adb_pid, _adb_side, CAST({next_id} + row_number() OVER "
                                         f"(ORDER BY _adb_pid, _adb_side) - 1 AS BIGINT) AS _adb_new, _adb_n "
                                         f"FROM (SELECT _adb_pid, _adb_side, sum(_adb_cnt) AS _adb_n FROM {sides_sql} "
                                         f"AS x GROUP BY ALL) AS c")
            n_children, n_cut, rows_open, largest = e.fetch_rows(
                f"SELECT count(*), count(DISTINCT _adb_pid), coalesce(sum(_adb_n), 0), coalesce(max(_adb_n), 0) "
                f"FROM {ident(children)}")[1][0]
            old = self.work
            if n_children:
                if self.nt:  # the partition tree: (n,t)-closeness verifies against it
                    e.execute(f"INSERT INTO {ident(self.tree)} SELECT _adb_new, _adb_pid, _adb_n FROM {ident(children)}")
                if self.nt:
                    self._advance_nt(children, sides)
                self.work = s.put(f"work{rnd % 2}", self.render("mondrian_relabel.sql.j2", work=self.work,
                                                               cuts=chosen, children=children,
                                                               with_qid=bool(self.bt)))
            closed += n_parts - n_cut
            if progress:  # the children's counts are facts with persons: the open work in the bar's unit
                left = int(rows_open) if not n_children or not (self.persons or self.varying) else int(e.scalar(
                    f"SELECT {'count(*)' if self.varying else 'sum(_adb_own)'} FROM {ident(self.work)}"))
                progress({"round": rnd, "open": n_children, "classes": closed, "rows_open": int(rows_open),
                          "done": self.goal - left})
            next_id += n_children
            n_parts, n_rows = n_children, int(rows_open)
            if n_children and old not in s.slots.values():  # the set-up's rows
                s.drop(old)
            s.drop_since(mark, keep=[self.work] + ([self.anc] if self.nt else []))
        return self.assign, rnd, self.tree

    def _fragments_supported(self) -> str | None:
        """Why the open partitions cannot be finished one by one on the engine's workers, or None:
        (n,t) and (B,t) read the whole table round by round."""
        if self.nt or self.bt:
            return "(n,t)-closeness and (B,t)-privacy are judged round by round"
        if any(getattr(m, "distance", None) == "ordered" for m in self.models):
            return "t-closeness with ordered EMD joins with ASOF, which DuckDB does not run inside a recursive statement"
        return None

    def _finish_fragments(self, rnd: int, n_parts: int, progress=None, closed: int = 0) -> int:
        """Every open partition's subtree at once, on the engine's workers (Spark: one grouped step;
        each group, one open partition's rows, runs the one-statement recursive plan in an embedded
        DuckDB, with the whole table's distribution and hierarchy codes as small side tables).

        The cuts are those the rounds here would make: a partition's cut depends on its own rows
        and on whole-table quantities (spans normalized by the table's ranges, the distribution t
        compares against) only. Partition ids: a fragment f numbers its children from 1, made
        unique as f * 2^32 + id (a fragment never cut keeps f * 2^32 + f). Returns the rounds."""
        e, s = self.eng, self.s
        keys = ["_adb_pid", "_adb_dim", "_adb_side"]
        groups_sql = e.render("check_groups.sql.j2", keys=keys, cells="_adb_split",
                              persons=self.persons).sql if self.sa else None
        ok = self.judge("_adb_split", keys, groups="_adb_groups" if self.sa else "_adb_split", inline=True)
        rec = self.render("mondrian_recursive.sql.j2", work=self.work, ok=ok, groups_sql=groups_sql,
                          try_all_dims=self.try_all_dims, from_rows=(self.relaxed and bool(self.sa)) or self.varying, with_qid=False).sql
        sql = (f"SELECT r._adb_rid, CAST(f._adb_f * 4294967296 + r._adb_pid AS BIGINT) AS _adb_pid, CAST(r._adb_lvl AS INTEGER) AS _adb_lvl "
               f"FROM ({rec}) AS r CROSS JOIN (SELECT min(_adb_pid) AS _adb_f FROM {ident(self.work)}) AS f")
        done = e.per_group(s, self.work, "_adb_pid", sql, "_adb_rid BIGINT, _adb_pid BIGINT, _adb_lvl INTEGER")
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


# ------------------------------------------------------------------------------------------------
def _materialize(eng, s, base, rid, rows, qis, hq, published, stage, order, relaxed, joined=False,
                 release=None, person=None) -> tuple[str, str | None]:
    """The release: generalized QIs (each under its own name: a label; numeric and date QIs also as
    <name>_lo / <name>_hi), eq_class, the sensitive and kept columns unchanged, rows in the order of
    ``order`` (a keyed hash). Boxes and labels are built once per class from the final rows' codes
    (``rows``, :meth:`_Planner.run`); the source rows are read once, by the release itself. Returns
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
