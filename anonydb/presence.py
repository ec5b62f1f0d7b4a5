"""delta-presence checks against a public table [Nergiz & Clifton Def 7, Eq. 1; spec-presence-survey
1.2-1.4, 1.10].

:func:`check_presence` maps the public table P onto the classes of a release T* (the same
mapping, Def 4: a P row belongs to the class whose labels cover its values; Mondrian's regions
by their ``<qi>_lo``/``<qi>_hi`` bounds, a range join; hierarchy nodes through the hierarchy;
value sets ``{a, b}``; ``*``), then judges the classes of P* with the delta-presence model
(:class:`anonydb.models.DeltaPresence`, exact rational comparisons) through :func:`anonydb.check`:
per class n_T / n_P in [delta_min, delta_max]; with ``k_map``, k-map too (its denominator alone:
n_P >= k for every class with research records, :mod:`anonydb.models.k_map`). P rows no class
covers form the class ``class_id = 0`` with presence 0 (they are not in T, and an adversary learns
as much). Preconditions, checked with the offending rows named: T* within P (no class holds more
T* rows than P rows), and the classes do not overlap (no P row covered twice).

:func:`flag_public` marks the rows of P that are in T (by a shared key, or by matching QI tuples:
which of several identical public rows is the member does not change any presence), for the
anonymizers (:mod:`anonydb.methods.presence`), and :func:`fast_infeasible` is the top-node test:
if |T|/|P| lies outside [delta_min, delta_max], no generalization can be delta-present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from .checker import Report, check
from .engines import connect
from .engines.base import Engine
from .errors import InfeasibleError, InputError
from .hierarchy import Hierarchy, validate_all
from .models.base import Model, as_fraction
from .models.confidence import ExactKernel, Kernel
from .models.k_map import KMap
from .models.presence import DeltaPresence, parse_delta
from .schema import split_list, validate_person, varying_qi
from .sources import open_source
from .sqlgen import ident

#: the flag column of the flagged public table (1 = the row is in the private table)
FLAG = "in_private"
#: the columns the mapped public table holds beside the QIs (sql/presence_map.sql.j2)
MAPPED_COLUMNS = ("class_id", "covers", "public_row", "member", "_adb_nt", "_adb_np")


def check_presence(release: str, public: str, qi: str | Iterable[str], *, delta: Any = None,
                   k_map: int | None = None, engine: Engine | Any = None,
                   hierarchies: dict[str, Hierarchy] | None = None, levels: dict[str, int] | None = None,
                   max_groups: int = 20, classes_out: str | None = None, name: str | None = None,
                   public_name: str | None = None, person: str | None = None) -> Report:
    """Check that ``release`` (T*, or the private table itself) is delta-present with respect to
    ``public`` (P); ``delta`` = (delta_min, delta_max). Returns the check's report: the model's
    verdict with the achieved (min, max) presence and the violating classes, plus ``uncovered``
    (P rows in no class) in the verdict's note. ``k_map``: k-map (:mod:`anonydb.models.k_map`)
    as well or instead (``delta`` None): every class holding research records matches at least
    k_map public rows; its verdict follows delta-presence's. ``levels``: a full-domain release's
    level per QI (needed only when a column's labels name nodes of several hierarchy levels). ``classes_out``:
    also write the per-class table (class_id, labels, n_private, n_public, presence, inside).
    The report's ``public_outside`` counts the public individuals whose class fails (a presence
    outside the bounds, or a k-map class of fewer than k), and ``public_outside_rows`` lists up to
    ``max_groups`` of them (all P's columns).
    The report speaks the caller's names: ``name`` / ``public_name`` (default ``release`` /
    ``public``; a caller that stages the release under a scratch name passes the user's), the QIs,
    and "class" for a class's number (0: the public rows no class covers).

    ``person``: the release's column naming each record's owner (record owners, several records
    per person; :mod:`anonydb.models.presence`). A class's presence is then its distinct persons
    over its public rows (P holds one row per person): a person with twelve visits is present
    once. The column must exist in the release, hold no NULL and not be a QI. The report then
    counts persons (``person``, ``persons`` = the release's distinct persons; ``n_private`` of
    ``classes_out`` and the "within P" errors count persons too)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    models = public_models(delta, k_map)
    hierarchies = dict(hierarchies or {})
    rname = str(release) if name is None else str(name)
    pname = str(public) if public_name is None else str(public_name)
    with eng.scratch("presence") as s:
        rel = open_source(eng, release, scratch=s)
        pub = open_source(eng, public, scratch=s)
        rcols, _ = need_qis(eng, rel, pub, qi_cols, f"the release {rname}", f"the public table {pname}")
        for attr in hierarchies:
            if attr not in qi_cols:
                raise InputError(f"a hierarchy is given for {attr!r}, which is not a quasi-identifier "
                                 f"({', '.join(qi_cols)})")
        clash = [c for c in qi_cols if c in MAPPED_COLUMNS]
        if clash:  # the mapped public table (sql/presence_map.sql.j2) holds these beside the QIs
            raise InputError(f"quasi-identifier {clash[0]!r} has a name the delta-presence check uses for its own "
                             f"bookkeeping ({', '.join(MAPPED_COLUMNS)}); rename the column")
        if not eng.scalar(f"SELECT count(*) FROM {ident(pub)}"):
            raise InputError(f"the public table {pname} is empty: there is nothing to check")
        m = map_public(eng, s, rel, pub, qi_cols, rcols, hierarchies, levels, person, rname, pname)
        mapped, pbase, prid, n_records, n_persons = m.table, m.pbase, m.prid, m.n_records, m.n_persons
        uncovered = int(eng.scalar(f"SELECT count(*) FROM {ident(mapped)} WHERE class_id = 0"))
        report = check(mapped, ["class_id"] + qi_cols, "member", models=models, engine=eng, max_groups=max_groups,
                       name=rname)
        labels = ", ".join(f"any_value({ident(c)}) AS {ident(c)}" for c in qi_cols)
        inside = []  # per model, whether a class passes it (sql/model_presence.sql.j2, model_k_map.sql.j2)
        for model in models:
            if isinstance(model, DeltaPresence):
                a, b, c, d = model.dmin.numerator, model.dmin.denominator, model.dmax.numerator, model.dmax.denominator
                inside.append(f"CAST(sum(member) AS HUGEINT) * {b} >= CAST(count(*) AS HUGEINT) * {a} AND "
                              f"CAST(sum(member) AS HUGEINT) * {d} <= CAST(count(*) AS HUGEINT) * {c}")
            else:
                inside.append(f"sum(member) = 0 OR count(*) >= {int(model.k)}")
        per_class = (f"SELECT class_id, {labels}, CAST(sum(member) AS BIGINT) AS n_private, count(*) AS n_public, "
                     f"sum(member) / count(*) AS presence, "
                     + "".join(f"({x}) AS _adb_in{i}, " for i, x in enumerate(inside))
                     + " AND ".join(f"({x})" for x in inside) + f" AS inside FROM {ident(mapped)} GROUP BY class_id")
        classes = s.table(per_class)
        if classes_out:
            eng.create_table_as(classes_out, f"SELECT class_id, {', '.join(ident(c) for c in qi_cols)}, n_private, "
                                             f"n_public, presence, inside FROM {ident(classes)} ORDER BY class_id",
                                replace=True)
        # per model: the public rows in the classes that fail it
        fails = eng.fetch_rows("SELECT " + ", ".join(f"coalesce(sum(n_public) FILTER (WHERE NOT _adb_in{i}), 0)"
                                                     for i in range(len(models))) + f" FROM {ident(classes)}")[1][0]
        outside = (f"FROM {ident(mapped)} AS m JOIN {ident(classes)} AS k ON k.class_id = m.class_id "
                   f"JOIN {ident(pbase)} AS p ON CAST(p.{'rowid' if prid == 'rowid' else ident(prid)} AS BIGINT) = "
                   f"m.public_row WHERE NOT k.inside")
        n_out = int(eng.scalar(f"SELECT count(*) {outside}"))
        pcols = [x for x, _ in eng.columns(pbase) if x != "_adb_rid"]
        rows = eng.fetch_rows(f"SELECT {', '.join('p.' + ident(x) for x in pcols)}, k.presence {outside} "
                              f"ORDER BY m.public_row LIMIT {int(max_groups or 0)}")[1] if max_groups else []
    _user_names(report, rname, pname, qi_cols)
    if person is not None:  # the public rows are persons; the release's side counts its persons
        report.person, report.persons = person, n_persons
    for v, model, failed in zip(report.verdicts, models, fails):
        delta_model = isinstance(model, DeltaPresence)
        if person is not None:
            v.note = (v.note + "; " if v.note else "") + (
                f"the release's {n_records} records are {n_persons} persons by {person}: a class's "
                + ("presence counts its distinct persons" if delta_model else "public rows count persons"))
        if uncovered:
            v.note = (v.note + "; " if v.note else "") + (
                f"{uncovered} public rows are covered by no released class (presence 0, class 0)")
        if failed:
            v.note = (v.note + "; " if v.note else "") + (
                f"{failed} public individuals have a presence outside the bounds" if delta_model else
                f"{failed} public individuals are in classes with research records and fewer than {model.k} "
                f"public rows")
    report.public_outside = n_out  # type: ignore[attr-defined]
    report.public_outside_rows = [dict(zip(pcols + ["presence"], r)) for r in rows]  # type: ignore[attr-defined]
    return report


def public_models(delta: Any = None, k_map: Any = None) -> list[Model]:
    """The models judged against a public table: delta-presence (``delta`` = (min, max)) and k-map
    (``k_map`` = k), in that order; InputError when neither is given."""
    if delta is None and k_map is None:
        raise InputError("give delta (delta-presence, (delta_min, delta_max)) or k_map (k-map, an integer k): "
                         "the models judged against the public table")
    return ([DeltaPresence(delta)] if delta is not None else []) + ([KMap(k_map)] if k_map is not None else [])


@dataclass
class Mapped:
    """A public table mapped onto a release's classes (sql/presence_map.sql.j2): one row per public
    row with its ``class_id`` (0: no class covers it), ``member`` and the class's ``_adb_nt``
    (private rows, or persons) and ``_adb_np`` (public rows)."""

    table: str
    pbase: str
    prid: str
    n_records: int | None
    n_persons: int | None


def map_public(eng: Engine, s: Any, rel: str, pub: str, qi_cols: list[str], rcols: dict[str, str],
               hierarchies: dict[str, Hierarchy], levels: dict[str, int] | None, person: str | None, rname: str,
               pname: str) -> Mapped:
    """Map ``pub`` onto the classes of the release ``rel`` (Def 4: a public row belongs to the class
    whose labels cover its values), checking the preconditions with the offending rows named: the
    classes do not overlap, and the release lies within the public table."""
    validate_all(eng, pub, hierarchies, name=pname)  # the public values are mapped through them
    pbase, prid = eng.row_ids(s, pub)
    qis = []
    for c in qi_cols:
        lo, hi = f"{c}_lo", f"{c}_hi"
        if lo in rcols and hi in rcols:
            qis.append({"name": c, "mode": "range", "lo": lo, "hi": hi, "hier": None, "level": None})
        else:
            hq = None
            if c in hierarchies:
                hq = s.name()
                hierarchies[c].materialize(eng, hq, pbase, c, temp=True)
            qis.append({"name": c, "mode": "label", "lo": None, "hi": None, "hier": hq,
                        "level": label_level(eng, rel, c, hq, (levels or {}).get(c))})
    n_records = n_persons = None
    if person is not None:  # one row per (class, person): the map then counts persons per class
        validate_person(eng, rel, person, qi_cols, None, label=f"the release {rname}")
        n_records = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
        n_persons = int(eng.scalar(f"SELECT count(DISTINCT {ident(person)}) FROM {ident(rel)}"))
        rel = s.table(f"SELECT DISTINCT {', '.join(ident(c) for c in class_columns(qis))}, {ident(person)} "
                      f"FROM {ident(rel)}")
    unit = "rows" if person is None else "persons"
    mapped = s.table(eng.render("presence_map.sql.j2", release=rel, public=pbase,
                                prid="rowid" if prid == "rowid" else ident(prid), qis=qis))
    over = eng.fetch_rows(f"SELECT count(*) FROM {ident(mapped)} WHERE covers > 1")[1][0][0]
    if over:
        raise InputError(f"{over} public rows fall in more than one class of {rname}: the release's classes "
                         f"overlap (delta-presence needs a non-overlapping generalization, Def 3)")
    bad = eng.fetch_rows(f"SELECT DISTINCT {', '.join(ident(c) for c in qi_cols)}, _adb_nt, _adb_np FROM "
                         f"{ident(mapped)} WHERE _adb_nt > _adb_np LIMIT 5")[1]
    no_class = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}") or 0) - int(
        eng.scalar(f"SELECT coalesce(sum(member), 0) FROM {ident(mapped)}"))
    if bad or no_class > 0:
        shown = "; ".join(f"{dict(zip(qi_cols, r[:-2]))}: {r[-2]} private {unit} vs {r[-1]} public rows"
                          for r in bad)
        raise InputError(f"the release {rname} is not within the public table {pname}"
                         + (f": classes with more private {unit} than public rows: {shown}" if bad else
                            f": {no_class} private {unit} match no public row"))
    return Mapped(mapped, pbase, prid, n_records, n_persons)


def class_columns(qis: list[dict[str, Any]]) -> list[str]:
    """The release columns that tell its classes apart (sql/presence_map.sql.j2's ``ec``): each
    QI's label, with its ``lo``/``hi`` bounds for a range QI."""
    return [c for q in qis for c in ((q["lo"], q["hi"], q["name"]) if q["mode"] == "range" else (q["name"],))]


#: how a class's membership counts read in a report (the "sensitive" flag of the mapped public rows)
MEMBER_LABELS = {1: "in the private table", 0: "not in the private table"}


def _user_names(report: Report, release: str, public: str, qi: list[str]) -> None:
    """Put the user's names on a report of the mapped public table: the release and the public table
    they gave, their QIs, "class" for the class number, and the membership flag's counts spelled out
    (no scratch table, ``class_id`` or ``member`` column)."""
    report.source, report.public, report.qi, report.sensitive = release, public, list(qi), None
    for v in report.verdicts:
        for g in v.violations:
            g.key = {("class" if k == "class_id" else k): x for k, x in g.key.items()}
            if g.distribution is not None:
                g.distribution = {MEMBER_LABELS.get(k, k): n for k, n in g.distribution.items()}


def label_level(eng: Engine, release: str, column: str, hier: str | None, given: int | None = None) -> int | None:
    """The hierarchy level ``column``'s labels are read at: ``given`` (a full-domain release's
    level), else the one level all its labels are nodes of; None when no level holds them all
    (no hierarchy, or Mondrian's cuts at several levels: a label is then matched at any level).
    InputError when several levels hold them all (labels shared between levels are ambiguous)."""
    if hier is None:
        return None
    if given is not None:
        return int(given)
    fits = [int(r[0]) for r in eng.fetch_rows(
        f"SELECT h.h FROM (SELECT DISTINCT CAST({ident(column)} AS VARCHAR) AS lab FROM {ident(release)} "
        f"WHERE {ident(column)} IS NOT NULL) AS l JOIN (SELECT DISTINCT h, node FROM {ident(hier)}) AS h "
        f"ON h.node = l.lab GROUP BY h.h HAVING count(*) = (SELECT count(DISTINCT {ident(column)}) FROM "
        f"{ident(release)}) ORDER BY 1")[1]]
    if len(fits) > 1:  # several levels hold every label: fine if they read them alike
        maps = {}
        for h in fits:
            maps[h] = frozenset(eng.fetch_rows(
                f"SELECT node, leaf FROM {ident(hier)} WHERE h = {h} AND node IN (SELECT DISTINCT "
                f"CAST({ident(column)} AS VARCHAR) FROM {ident(release)})")[1])
        if len(set(maps.values())) == 1:
            return fits[0]
        raise InputError(f"the labels of {column!r} are nodes of hierarchy levels {', '.join(map(str, fits))} alike: "
                         f"say which with levels={{{column!r}: ...}}")
    return fits[0] if fits else None


def need_qis(eng: Engine, first: str, second: str, qi: list[str], first_name: str, second_name: str
             ) -> tuple[dict[str, str], dict[str, str]]:
    """The columns of both relations; InputError naming a QI missing from either."""
    a, b = dict(eng.columns(first)), dict(eng.columns(second))
    if not qi:
        raise InputError("at least one quasi-identifier is needed (--qi)")
    for c in qi:
        for cols, what in ((a, first_name), (b, second_name)):
            if c not in cols:
                raise InputError(f"column {c!r} not found in {what}; its columns are: {', '.join(cols)}")
    return a, b


def fast_infeasible(n_private: int, n_public: int, delta: Any) -> str:
    """'' when |T|/|P| lies in [delta_min, delta_max]; else why no generalization can work."""
    dmin, dmax = parse_delta(delta)
    share = Fraction(n_private, n_public) if n_public else Fraction(0)
    if dmin <= share <= dmax:
        return ""
    return (f"|T|/|P| = {n_private}/{n_public} = {float(share):.6g} lies outside [{float(dmin):g}, {float(dmax):g}]: "
            f"the most general release gives everyone exactly this presence, and generalizing only narrows the "
            f"range of presences (Theorem 1), so no generalization is delta-present")


def flag_public(eng: Engine, s: Any, private: str, public: str, qi: list[str], key: str | None = None,
                carry: Iterable[str] = ()) -> tuple[str, int, int]:
    """The public table's QI columns with ``in_private`` (1/0) and ``private_rid`` (the matched
    private row's id, NULL for others), and the private table's ``carry`` columns of the matched
    row (NULL for others). Returns (table, |T|, |P|). Raises InputError, with example rows, when a
    private row has no public partner."""
    tbase, trid = eng.row_ids(s, private)
    pbase, prid = eng.row_ids(s, public)
    tr = "rowid" if trid == "rowid" else ident(trid)
    pr = "rowid" if prid == "rowid" else ident(prid)
    q = ", ".join(ident(c) for c in qi)
    if key is not None:
        for rel, what in ((tbase, "private"), (pbase, "public")):
            if key not in dict(eng.columns(rel)):
                raise InputError(f"key column {key!r} not found in the {what} table")
        pairs = (f"SELECT CAST(t.{tr} AS BIGINT) AS trid, CAST(p.{pr} AS BIGINT) AS prid FROM {ident(tbase)} AS t "
                 f"JOIN {ident(pbase)} AS p ON p.{ident(key)} = t.{ident(key)}")
        clash = eng.fetch_rows(
            f"SELECT t.{ident(key)} FROM {ident(tbase)} AS t JOIN {ident(pbase)} AS p ON p.{ident(key)} = t.{ident(key)} "
            f"WHERE " + " OR ".join(f"t.{ident(c)} IS DISTINCT FROM p.{ident(c)}" for c in qi) + " LIMIT 5")[1]
        if clash:
            raise InputError(f"private and public rows with the same {key!r} differ in their QI values "
                             f"(e.g. {key} = {', '.join(repr(r[0]) for r in clash)})")
    else:
        # the k-th private row of a QI tuple is paired with the k-th public row of that tuple (in
        # row-id order); the tuples are numbered first (_tid) so that the windows partition by one
        # integer, not by the QI columns (Adult, 8 QIs: 45 ms for P's window alone)
        def numbered(rel: str, r: str, rid: str) -> str:
            on = " AND ".join(f"x.{ident(c)} IS NOT DISTINCT FROM u.{ident(c)}" for c in qi)
            return (f"SELECT CAST(x.{r} AS BIGINT) AS {rid}, u._tid, row_number() OVER (PARTITION BY u._tid "
                    f"ORDER BY x.{r}) AS k FROM {ident(rel)} AS x JOIN u ON {on}")
        pairs = (f"WITH u AS (SELECT {q}, row_number() OVER () AS _tid FROM (SELECT DISTINCT {q} FROM {ident(tbase)}) "
                 f"AS d) SELECT t.trid, p.prid FROM ({numbered(tbase, tr, 'trid')}) AS t "
                 f"JOIN ({numbered(pbase, pr, 'prid')}) AS p ON p._tid = t._tid AND p.k = t.k")
    pairs_t = s.table(pairs)
    n_t = int(eng.scalar(f"SELECT count(*) FROM {ident(tbase)}"))
    n_p = int(eng.scalar(f"SELECT count(*) FROM {ident(pbase)}"))
    matched = int(eng.scalar(f"SELECT count(DISTINCT trid) FROM {ident(pairs_t)}"))
    if matched < n_t:
        lost = eng.fetch_rows(f"SELECT {q} FROM {ident(tbase)} WHERE CAST({tr} AS BIGINT) NOT IN "
                              f"(SELECT trid FROM {ident(pairs_t)}) LIMIT 5")[1]
        shown = "; ".join(str(dict(zip(qi, r))) for r in lost)
        raise InputError(f"the private table is not within the public table: {n_t - matched} private rows have no "
                         f"public partner" + (f" by {key!r}" if key else " with the same QI values")
                         + f", e.g. {shown}")
    carried = "".join(f", t.{ident(c)}" for c in carry)
    flagged = s.table(f"SELECT {', '.join('p.' + ident(c) for c in qi)}, "
                      f"CASE WHEN m.trid IS NULL THEN 0 ELSE 1 END AS {FLAG}, m.trid AS private_rid{carried} "
                      f"FROM {ident(pbase)} AS p LEFT JOIN {ident(pairs_t)} AS m ON m.prid = CAST(p.{pr} AS BIGINT)"
                      + (f" LEFT JOIN {ident(tbase)} AS t ON CAST(t.{tr} AS BIGINT) = m.trid" if carried else ""))
    return flagged, n_t, n_p


def require_feasible(n_t: int, n_p: int, delta: Any) -> None:
    why = fast_infeasible(n_t, n_p, delta)
    if why:
        raise InfeasibleError(f"delta-presence with delta = {delta!r} is infeasible: {why}")


def suggest_delta(prior: Any, a_high: Any, a_low: Any, share: Any) -> tuple[Fraction, Fraction]:
    """(delta_min, delta_max) from misuse costs [Nergiz & Clifton TR §6; spec-presence-survey 1.7].

    ``prior`` b_r = the population's rate of the property T is drawn from (T within the people who
    have it), ``share`` = |T|/|P|, ``a_high`` / ``a_low`` = the acceptable rise / fall of an
    adversary's belief (acceptable misuse cost over the cost of the property, e.g. 100/10000):
        delta_max = (a_high + (1 - a_high - b_r) share) / (1 - b_r),
        delta_min = (-a_low + (1 + a_low - b_r) share) / (1 - b_r), at least 0. Exact fractions."""
    from .models.base import as_fraction

    b = as_fraction(prior, "prior")
    s_ = as_fraction(share, "share")
    hi_a, lo_a = as_fraction(a_high, "a_high"), as_fraction(a_low, "a_low")
    for name, v in (("prior", b), ("share", s_), ("a_high", hi_a), ("a_low", lo_a)):
        if not 0 <= v < 1:
            raise InputError(f"{name} must lie in [0, 1), got {float(v):g}")
    if s_ > b:
        raise InputError(f"share |T|/|P| = {float(s_):g} exceeds the prior {float(b):g}: T is drawn from the "
                         f"people with the property, so it cannot be a larger share of P")
    hi = (hi_a + (1 - hi_a - b) * s_) / (1 - b)
    lo = (-lo_a + (1 + lo_a - b) * s_) / (1 - b)
    return max(Fraction(0), lo), min(Fraction(1), hi)


# ==================================================================================================
# c-confident delta-presence 
# c-confident delta-presence: membership protection when the publisher knows only the population's
# per-attribute distributions [Nergiz & Clifton TR §4, Def 8-10, Eqs. 2-4; spec-presence-survey 1.5].
#
# The publisher has the private table T and, for each QI, the population's marginal counts (value,
# count) - a census table, say - but not the population P itself. D = P - T has marginals
# f^D = f^P - f^T and U = |D| tuples. A release T* is c-confident (delta_min, delta_max)-present when
# every released class t* has Pr(delta_min <= n1/(n1 + X) <= delta_max) >= c, X the number of D
# tuples t* would cover, whose distribution follows from the marginals under the TR's model (D's
# columns independent; :mod:`anonydb.models.confidence`). The guarantee is per tuple of T, and an
# upper bound on privacy under that independence assumption: correlated real data can make the
# true confidence lower.
#
# :func:`check_confident` checks a finished release (SQL maps each class's labels to the D-counts
# they cover, ``sql/confidence_map.sql.j2``; the kernel, memoized on the signature, gives the
# confidences). :func:`population_marginals` derives the marginals from a public table, for tests
# and for comparing with the exact model.
# ==================================================================================================
@dataclass
class ConfidenceReport:
    delta: tuple[Fraction, Fraction]
    c: Fraction
    holds: bool
    confidence: float  # the smallest class confidence (a lower bound with the SD/DC speed-ups)
    classes: int
    violating: int  # classes below c
    rows: int  # private rows (persons, with person)
    U: int  # |D|
    worst: list[dict[str, Any]] = field(default_factory=list)  # the least confident classes
    conservative: bool = True  # computed with SD/DC (never overstates the confidence)
    person: str | None = None  # record owners: rows, n1 and U count persons
    records: int | None = None  # with person: the release's records

    def format(self) -> str:
        how = " (a lower bound: SD/DC cuts)" if self.conservative else ""
        head = (f"c-confident delta-presence (delta = [{float(self.delta[0]):g}, {float(self.delta[1]):g}], "
                f"c = {float(self.c):g}): {'holds' if self.holds else 'FAILS'}; smallest confidence "
                f"{self.confidence:.6g}{how} over {self.classes} classes ({self._size()}, U = {self.U}); "
                f"{self.violating} classes below c")
        lines = [head] + [f"  confidence {w['confidence']:.6g}: {w['class']} (n1 = {w['n1']}, f = {w['f']})"
                          for w in self.worst]
        return "\n".join(lines)

    def _size(self) -> str:
        if self.person is None:
            return f"{self.rows} private rows"
        return f"{self.rows} private persons by {self.person}, {self.records} records"

    def to_dict(self) -> dict[str, Any]:
        return {"delta_min": float(self.delta[0]), "delta_max": float(self.delta[1]), "c": float(self.c),
                "holds": self.holds, "confidence": self.confidence, "classes": self.classes,
                "violating": self.violating, "rows": self.rows, "U": self.U, "worst": self.worst,
                "conservative": self.conservative,
                **({"person": self.person, "persons": self.rows, "records": self.records}
                   if self.person is not None else {})}


def parse_c(c: Any) -> Fraction:
    f = as_fraction(c, "c")
    if not 0 < f <= 1:
        raise InputError(f"the confidence c must lie in (0, 1], got {float(f):g}")
    return f


def population_marginals(engine: Engine | Any, public: str, qi: str | Iterable[str], prefix: str = "marg", *,
                         temp: bool = True) -> dict[str, str]:
    """Tables ``<prefix>_<qi>`` (value VARCHAR, count BIGINT) of a public table's per-QI counts;
    temporary by default (a check never writes into the user's database, which may be read-only)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    out = {}
    for q in qi_cols:
        name = f"{prefix}_{q}"
        eng.create_table_as(name, f"SELECT CAST({ident(q)} AS VARCHAR) AS value, count(*) AS {ident('count')} "
                                  f"FROM {ident(public)} GROUP BY 1", replace=True, temp=temp)
        out[q] = name
    return out


def d_marginals(eng: Engine, s: Any, private: str, qi: list[str], marginals: dict[str, str]
                ) -> tuple[dict[str, str], int]:
    """Scratch tables (value, cnt) of D = population - T per QI, and U = |D|; InputError when a
    marginal is missing, malformed, inconsistent, or smaller than T's count of some value."""
    n_t = int(eng.scalar(f"SELECT count(*) FROM {ident(private)}"))
    out, totals = {}, {}
    for q in qi:
        if q not in marginals:
            raise InputError(f"no population distribution given for the quasi-identifier {q!r} "
                             f"(marginals maps each QI to a table of (value, count))")
        rel = marginals[q]
        cols = dict(eng.columns(rel))
        if "value" not in cols or "count" not in cols:
            raise InputError(f"the distribution of {q!r} ({rel}) needs columns value and count; it has "
                             f"{', '.join(cols)}")
        d = s.table(f"SELECT coalesce(p.value, t.value) AS value, coalesce(p.cnt, 0) - coalesce(t.cnt, 0) AS cnt "
                    f"FROM (SELECT CAST(value AS VARCHAR) AS value, sum({ident('count')}) AS cnt FROM {ident(rel)} "
                    f"GROUP BY 1) AS p FULL JOIN (SELECT CAST({ident(q)} AS VARCHAR) AS value, count(*) AS cnt "
                    f"FROM {ident(private)} GROUP BY 1) AS t ON t.value IS NOT DISTINCT FROM p.value")
        bad = eng.fetch_rows(f"SELECT value, cnt FROM {ident(d)} WHERE cnt < 0 ORDER BY cnt LIMIT 5")[1]
        if bad:
            shown = ", ".join(f"{v!r} ({-c} more in T)" for v, c in bad)
            raise InputError(f"the private table has more rows with these values of {q!r} than the population: "
                             f"{shown}")
        totals[q] = int(eng.scalar(f"SELECT coalesce(sum(cnt), 0) FROM {ident(d)}"))
        out[q] = d
    if len(set(totals.values())) > 1:
        raise InputError("the population distributions disagree on the population size: "
                         + ", ".join(f"{q}: {t + n_t}" for q, t in totals.items()))
    return out, next(iter(totals.values()))


def check_confident(release: str, private_rows: int | None = None, *, qi: str | Iterable[str], delta: Any, c: Any,
                    marginals: dict[str, str], engine: Engine | Any = None,
                    hierarchies: dict[str, Hierarchy] | None = None, private: str | None = None,
                    levels: dict[str, int] | None = None, sd: float | None = 4.0, dc: int | None = None,
                    exact: bool = False, max_classes: int = 5, person: str | None = None) -> ConfidenceReport:
    """Check c-confident delta-presence of ``release`` (T*). ``marginals`` maps each QI to a
    (value, count) table of the population; D's are derived by subtracting ``private`` (T; by
    default the release itself, whose QI values must then be the original ones) or, for a
    generalized release, pass ``private``. ``levels``: a full-domain release's level per QI (needed
    only when a column's labels name nodes of several hierarchy levels). ``sd``/``dc``: the
    kernel's speed-ups (None: off); ``exact``: compute every confidence in exact fractions instead
    (no speed-ups; for audits of small populations).

    ``person``: the column naming each record's owner, in the release (and in ``private`` when
    given). Every count is then of persons: T is reduced to one row per person (its QIs must be
    constant per person, as the population's marginals count each person once under one value),
    n1 is a class's distinct persons, D = the population's persons less T's, and
    ``private_rows`` and the report's ``rows`` count persons. A person whose records lie in
    several classes of the release is refused (the classes would overlap on that person's one
    public tuple)."""
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    dmin, dmax = parse_delta(delta)
    cc = parse_c(c)
    hierarchies = dict(hierarchies or {})
    with eng.scratch("confident") as s:
        rel = open_source(eng, release, scratch=s)
        priv = open_source(eng, private, scratch=s) if private is not None else rel
        rcols = dict(eng.columns(rel))
        for q in qi_cols:
            if q not in rcols:
                raise InputError(f"column {q!r} not found in the release {release}; its columns are: {', '.join(rcols)}")
        for attr in hierarchies:
            if attr not in qi_cols:
                raise InputError(f"a hierarchy is given for {attr!r}, which is not a quasi-identifier "
                                 f"({', '.join(qi_cols)})")
        records = None
        if person is not None:
            priv, rel, records = _confident_persons(eng, s, priv, rel, rcols, qi_cols, person, release, private)
        dm, U = d_marginals(eng, s, priv, qi_cols, marginals)
        for q, h in hierarchies.items():  # the population's values (T's among them) are mapped through it
            if f"{q}_lo" in rcols and f"{q}_hi" in rcols:
                continue  # a range QI is matched by its bounds, not through the hierarchy
            h.validate(eng, dm[q], "value", label=q, where="the population counts")
        qis = []
        for q in qi_cols:
            lo, hi = f"{q}_lo", f"{q}_hi"
            if lo in rcols and hi in rcols:
                qis.append({"name": q, "mode": "range", "lo": lo, "hi": hi, "hier": None, "marg": dm[q],
                            "level": None})
            else:
                hq = None
                if q in hierarchies:
                    hq = s.name()
                    hierarchies[q].materialize(eng, hq, dm[q], "value", temp=True)
                qis.append({"name": q, "mode": "label", "lo": None, "hi": None, "hier": hq, "marg": dm[q],
                            "level": label_level(eng, rel, q, hq, (levels or {}).get(q))})
        rows = eng.fetch_rows(eng.render("confidence_map.sql.j2", release=rel, qis=qis))[1]
    kernel = ExactKernel(U) if exact else Kernel(U, sd=sd, dc=dc)
    bound = cc if exact else float(cc)
    d = len(qi_cols)
    scored = []
    for r in rows:
        labels, n1, f = r[:d], int(r[d]), [int(x) for x in r[d + 1:]]
        scored.append((kernel.confidence(n1, f, dmin, dmax), dict(zip(qi_cols, labels)), n1, f))
    scored.sort(key=lambda x: x[0])
    n_rows = sum(x[2] for x in scored)
    if private_rows is not None and private_rows != n_rows:
        raise InputError(f"the release holds {n_rows} {'rows' if person is None else 'persons'}, not the "
                         f"{private_rows} expected")
    low = [x for x in scored if x[0] < bound]
    return ConfidenceReport(delta=(dmin, dmax), c=cc, holds=not low,
                            confidence=float(scored[0][0]) if scored else 1.0,
                            classes=len(scored), violating=len(low), rows=n_rows, U=U,
                            worst=[{"confidence": float(x[0]), "class": x[1], "n1": x[2], "f": x[3]}
                                   for x in scored[:max_classes]],
                            conservative=not exact and (sd is not None or dc is not None), person=person,
                            records=records)


def _confident_persons(eng: Engine, s: Any, priv: str, rel: str, rcols: dict[str, str], qi: list[str],
                       person: str, release: str, private: str | None) -> tuple[str, str, int]:
    """c-confident delta-presence by persons: (T as one row per person, the release as one row per
    (class, person), the release's records). InputError for a bad person column, a QI varying
    within a person of T, or a person in several classes of the release."""
    validate_person(eng, rel, person, qi, None, label=f"the release {release}")
    tname = f"the release {release}" if private is None else f"the private table {private}"
    if private is not None:
        validate_person(eng, priv, person, qi, None, label=tname)
    vary = varying_qi(eng, priv, person, qi)
    if vary:
        raise InputError(f"quasi-identifier {vary[0]!r} takes several values for person {vary[1]!r} of {tname}: "
                         f"c-confident delta-presence counts each person once, under the one QI tuple the "
                         f"population's marginals count them with")
    records = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
    cols = [c for q in qi for c in ((f"{q}_lo", f"{q}_hi", q) if f"{q}_lo" in rcols and f"{q}_hi" in rcols else (q,))]
    persons = s.table(f"SELECT DISTINCT {', '.join(ident(c) for c in [person] + qi)} FROM {ident(priv)}")
    classes = s.table(f"SELECT DISTINCT {', '.join(ident(c) for c in cols)}, {ident(person)} FROM {ident(rel)}")
    split = eng.fetch_rows(f"SELECT {ident(person)} FROM {ident(classes)} GROUP BY {ident(person)} "
                           f"HAVING count(*) > 1 ORDER BY 1 LIMIT 1")[1]
    if split:
        raise InputError(f"person {split[0][0]!r} has records in several classes of the release {release}: "
                         f"a person's one public tuple would fall in each (overlapping classes)")
    return persons, classes, records
