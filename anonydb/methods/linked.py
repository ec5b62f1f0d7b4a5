"""Linked tables: a person table and event tables joined by foreign keys, released together
[MultiR k-anonymity, Nergiz et al. 2007; survey §2.1 and spec-presence-survey §3.2].

MultiR k-anonymity is k-anonymity over record owners on the join PT ⋈ T1 ⋈ ... ⋈ Tn: every owner
shares its QI values with at least k - 1 other owners. Here the QIs are person-level (constant per
person), taken from the person table or, if a QI lives in an event table, from that table (one
value a person, or refused). They are generalized once, by Mondrian over the persons
(:func:`anonydb.methods.mondrian.anonymize` with ``person``), and every published table carries
the same labels: each event table (and the person table, if asked) gets its person's class. Each
published table is verified on its own join by persons (:func:`anonydb.checker.check` with
``person``) before anything is written, the sensitive attribute's models on the table that holds
it, and all of them are swapped in at once.

Refused, each in one line: a person key that repeats or is NULL in the person table, a foreign key
that is NULL or dangles (with their count), a QI found in no table, a QI held by several tables
whose values disagree for some person, and a QI of an event table that varies within a person.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..checker import build_models
from ..engines import connect
from ..engines.base import Engine
from ..errors import AnonyDBError, InfeasibleError, InputError
from ..pseudonyms import pseudonym_sql
from ..release.publish import PERSON_COLUMN, Publication, constant_qis, stage_name
from ..schema import RESERVED_PREFIX, split_list
from ..sources import open_source
from ..sqlgen import ident, literal
from .mondrian import anonymize as mondrian

#: the person key's name in the person-level table the classes are cut on
OWNER = "anonydb_person"


@dataclass
class LinkedResult:
    """A verified release of linked tables."""

    tables: dict[str, str]  # source table -> its release
    persons: int
    classes: int
    rows: dict[str, int]  # release -> rows
    seconds: float
    reports: dict[str, Any]  # release -> its verification (anonydb.checker.Report, by persons)
    suppressed: dict[str, int] = field(default_factory=dict)  # release -> persons whose records it suppressed
    dropped: dict[str, list[str]] = field(default_factory=dict)  # source table -> columns not published

    @property
    def utility(self) -> dict[str, Any]:
        """For reports: the persons, classes and, per release, its rows and suppressed persons."""
        return {"persons": self.persons, "classes": self.classes,
                **{f"rows {out}": n for out, n in self.rows.items()},
                **{f"suppressed persons {out}": n for out, n in self.suppressed.items()}}

    def format(self) -> str:
        lines = [f"linked release: {self.persons} persons in {self.classes} equivalence classes, "
                 f"{len(self.tables)} tables ({self.seconds:.2f} s)"]
        for src, out in self.tables.items():
            rep = self.reports[out]
            if rep is None:
                lines.append(f"  {out} <- {src}: empty (every class of it suppressed)")
                continue
            ach = "; ".join(f"{v.model} holds (achieved {', '.join(f'{k} = {x}' for k, x in v.achieved.items())})"
                            for v in rep.verdicts)
            lines.append(f"  {out} <- {src}: {self.rows[out]} rows of {rep.persons} persons; verified on its join: {ach}")
            if self.suppressed.get(out):
                lines.append(f"    suppressed: the records of {self.suppressed[out]} persons, in classes where this "
                             f"table holds fewer than k persons")
            if self.dropped.get(src):
                lines.append(f"    not published (no role): {', '.join(self.dropped[src])}")
        return "\n".join(lines)


def linked(persons: str, key: str, events: dict[str, str], qi: str | Iterable[str], sensitive: str | None = None,
           *, outs: dict[str, str], engine: Engine | Any = None, keep: dict[str, Iterable[str]] | None = None,
           hierarchies: dict[str, Any] | None = None, replace: bool = False, seed: int | None = None,
           max_suppression: float = 0.0, **params: Any) -> LinkedResult:
    """Release the person table ``persons`` (key column ``key``) and the event tables ``events``
    (table -> its foreign key to ``key``) with one generalization of the person-level QIs ``qi``
    (see the module docstring). ``outs`` maps each table to publish (event tables, and ``persons``
    if it is to be published) to its release's name; every event table must be published. ``keep``:
    per table, columns published unchanged (verified too). ``sensitive``: a column of one table,
    whose models (l, t, ...) are judged on that table's join; k is judged on every table's.
    ``params``: the models (k, l, ...) as for :func:`anonydb.methods.mondrian.anonymize`.

    The classes are cut on the persons of the table the models are judged on (the sensitive
    attribute's, else the person table); a class can hold fewer than k of them in another table
    (persons without claims, say): that table's records of such classes are suppressed, at most
    ``max_suppression`` of its persons (reported), or the release is refused."""
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    keep = {t: split_list(c, "keep") for t, c in (keep or {}).items()}
    if not isinstance(events, dict) or not events:
        raise InputError("events: give at least one event table and its foreign key (table -> column)")
    tables = [persons, *events]
    for t in outs:
        if t not in tables:
            raise InputError(f"outs names {t!r}, which is neither the person table nor an event table")
    for t in events:
        if t not in outs:
            raise InputError(f"event table {t!r} has no release name in outs: every event table is published")
    for t in keep:
        if t not in outs:
            raise InputError(f"keep names {t!r}, which is not published (outs)")
    models = build_models(**params)
    if not models:
        raise InputError("no privacy model requested: give at least one of k, l, t, alpha, delta")
    k = max([m.k for m in models if isinstance(getattr(m, "k", None), int)], default=1)
    with Publication(eng, list(outs.values()), replace, sources=tables, seed=seed) as pub, \
            eng.scratch("linked") as s:
        cols = {t: [c for c, _ in eng.columns(open_source(eng, t, scratch=s))] for t in tables}
        _check_keys(eng, persons, key, events, cols)
        home = _qi_homes(eng, s, persons, key, events, qi_cols, cols)
        holder = [t for t in tables if sensitive and sensitive in cols[t]]
        if sensitive and not holder:
            raise InputError(f"sensitive attribute {sensitive!r} is in none of the tables {', '.join(tables)}")
        if len(holder) > 1:
            raise InputError(f"sensitive attribute {sensitive!r} is in several tables ({', '.join(holder)}): name "
                             f"one column of one table")
        for t, cs in keep.items():
            for c in cs:
                if c not in cols[t]:
                    raise InputError(f"kept column {c!r} not found in {t}; its columns are: {', '.join(cols[t])}")
                if c in qi_cols or c in (key, events.get(t)) or c.startswith(RESERVED_PREFIX):
                    raise InputError(f"{c!r} of {t} cannot be kept: it is a QI or a person key")
        # the person-level QIs, one row a person, and the table the models are judged on
        pq = s.table(f"SELECT p.{ident(key)} AS {ident(OWNER)}, "
                     + ", ".join(f"{home[q]}.{ident(q)}" for q in qi_cols)
                     + f" FROM {ident(persons)} AS p " + _joins(home, key, events, qi_cols))
        src = holder[0] if holder else persons
        fk = key if src == persons else events[src]
        judged = s.table(f"SELECT q.*{', e.' + ident(sensitive) if sensitive else ''} FROM {ident(pq)} AS q "
                         + ("" if src == persons and not sensitive else
                            f"JOIN {ident(src)} AS e ON e.{ident(fk)} = q.{ident(OWNER)}"))
        # Mondrian over the persons; its release names each person by an HMAC under a key drawn here
        # and never stored, which maps the classes back to the persons in SQL
        secret = secrets.token_bytes(32)
        labelled = stage_name("linked", eng)  # a staging name of this writer: a sweep keeps it while we run
        try:
            res = mondrian(judged, qi_cols, sensitive, out=labelled, engine=eng, person=OWNER,
                           pseudonymize=[OWNER], secret_file=secret, hierarchies=hierarchies,
                           seed=seed, **params)
            types = dict(eng.columns(pq))
            hashed = pseudonym_sql(eng, f"q.{ident(OWNER)}", types[OWNER], secret)
            label_cols = [c for c, _ in eng.columns(labelled) if c not in (OWNER, sensitive)]
            classes = s.table(f"SELECT DISTINCT q.{ident(OWNER)}, "
                              + ", ".join(f"r.{ident(c)}" for c in label_cols)
                              + f" FROM {ident(pq)} AS q JOIN {ident(labelled)} AS r ON r.{ident(OWNER)} = {hashed}")
        finally:
            eng.drop(labelled)
        got = eng.scalar(f"SELECT count(*) FROM {ident(classes)}")
        n_persons = eng.scalar(f"SELECT count(*) FROM {ident(pq)}")
        judged_persons = eng.scalar(f"SELECT count(DISTINCT {ident(OWNER)}) FROM {ident(judged)}")
        if got != judged_persons:
            raise AnonyDBError(f"internal error: {got} of {judged_persons} persons found their class")
        stages, reports, rows, dropped, suppressed = {}, {}, {}, {}, {}
        for t, out in outs.items():
            fk = key if t == persons else events[t]
            published = [c for c in cols[t] if c in keep.get(t, []) or c == sensitive and t == src]
            dropped[t] = [c for c in cols[t] if c not in published and c not in qi_cols]
            stage = pub.stage("linked")
            base, rid = eng.row_ids(s, t)
            r = rid if rid == "rowid" else ident(rid)
            # rows in the order of a keyed hash of each row's id (a secret unless a seed was given): a
            # person's records are not adjacent
            eng.create_table_as(stage, f"SELECT {', '.join('c.' + ident(c) for c in label_cols)}"
                                       + "".join(f", e.{ident(c)}" for c in published)
                                       + f", e.{ident(fk)} AS {ident(PERSON_COLUMN)} FROM {ident(base)} AS e "
                                       f"JOIN {ident(classes)} AS c ON c.{ident(OWNER)} = e.{ident(fk)} "
                                       f"ORDER BY md5_number(CAST(e.{r} AS VARCHAR) || {literal(pub.order.key)}), e.{r}")
            table_models = build_models(**params) if t == src else build_models(k=k)
            if t != src:  # the classes were cut on the judged table's persons: thin ones here go, and
                # a person without records in the judged table has no class
                thin = s.table(f"SELECT eq_class FROM {ident(stage)} GROUP BY eq_class "
                               f"HAVING count(DISTINCT {ident(PERSON_COLUMN)}) < {k}")
                everyone = eng.scalar(f"SELECT count(DISTINCT {ident(fk)}) FROM {ident(t)}")
                kept = eng.scalar(f"SELECT count(DISTINCT {ident(PERSON_COLUMN)}) FROM {ident(stage)} "
                                  f"WHERE eq_class NOT IN (SELECT eq_class FROM {ident(thin)})")
                gone = everyone - kept
                if gone > int(max_suppression * everyone + 1e-9):
                    raise InfeasibleError(
                        f"{t}: {gone} of its {everyone} persons have no records in {src} or lie in classes where {t} "
                        f"holds fewer than k = {k} persons; suppressing their records takes more than "
                        f"max_suppression allows; raise it, or coarsen the classes")
                pub.keep_rows(stage, f"eq_class NOT IN (SELECT eq_class FROM {ident(thin)})")
                suppressed[out] = int(gone)
            if eng.scalar(f"SELECT count(*) FROM {ident(stage)}"):
                reports[out] = pub.verify(stage, sensitive if t == src else None, table_models,
                                          keep.get(t, []), person=PERSON_COLUMN)
            else:  # nothing of this table is released: nothing to link
                pub.attach([stage], True, "")
                reports[out] = None
            eng.drop_column(stage, PERSON_COLUMN)
            rows[out] = eng.scalar(f"SELECT count(*) FROM {ident(stage)}")
            stages[out] = stage
        pub.commit([(st, out) for out, st in stages.items()])
    return LinkedResult(tables=dict(outs), persons=int(n_persons), classes=res.classes, rows=rows,
                        seconds=time.perf_counter() - t0, reports=reports, dropped=dropped, suppressed=suppressed)


def _check_keys(eng: Engine, persons: str, key: str, events: dict[str, str], cols: dict[str, list[str]]) -> None:
    """The person key: present, never NULL, one row a person; every foreign key present, never
    NULL, and naming a person of the person table."""
    if key not in cols[persons]:
        raise InputError(f"person key {key!r} not found in {persons}; its columns are: {', '.join(cols[persons])}")
    nulls, dup = eng.fetch_rows(f"SELECT count(*) FILTER (WHERE {ident(key)} IS NULL), count(*) - count(DISTINCT "
                                f"{ident(key)}) - count(*) FILTER (WHERE {ident(key)} IS NULL) FROM {ident(persons)}")[1][0]
    if nulls:
        raise InputError(f"person key {key!r} is NULL on {nulls} rows of {persons}: a NULL is not a person")
    if dup:
        raise InputError(f"person key {key!r} repeats in {persons} ({dup} extra rows): a person table holds one row "
                         f"a person")
    for t, fk in events.items():
        if fk not in cols[t]:
            raise InputError(f"foreign key {fk!r} not found in {t}; its columns are: {', '.join(cols[t])}")
        nulls, dangling = eng.fetch_rows(
            f"SELECT count(*) FILTER (WHERE e.{ident(fk)} IS NULL), count(*) FILTER (WHERE e.{ident(fk)} IS NOT NULL "
            f"AND p.{ident(key)} IS NULL) FROM {ident(t)} AS e LEFT JOIN {ident(persons)} AS p "
            f"ON p.{ident(key)} = e.{ident(fk)}")[1][0]
        if nulls:
            raise InputError(f"foreign key {t}.{fk} is NULL on {nulls} rows: a NULL is not a person")
        if dangling:
            raise InputError(f"foreign key {t}.{fk} dangles on {dangling} rows: their {fk} names no {key} of {persons}")


def _qi_homes(eng: Engine, s: Any, persons: str, key: str, events: dict[str, str], qi: list[str],
              cols: dict[str, list[str]]) -> dict[str, str]:
    """Per QI, the alias of the relation it is read from: ``p`` (the person table) or ``x<i>`` (one
    value a person of event table i); refuses a QI in no table, one that varies within a person in
    an event table, and one whose tables disagree for some person."""
    home: dict[str, str] = {}
    evs = list(events)
    for q in qi:
        where = [t for t in [persons, *evs] if q in cols[t]]
        if not where:
            raise InputError(f"quasi-identifier {q!r} is in none of the tables {', '.join([persons, *evs])}")
        for t in where:
            if t != persons:
                constant_qis(eng, t, events[t], [q])
        if len(where) > 1:  # every table that holds it must agree, person by person
            first, fk0 = where[0], key if where[0] == persons else events[where[0]]
            for t in where[1:]:
                fk = key if t == persons else events[t]
                bad = eng.fetch_rows(
                    f"SELECT a.{ident(fk0)} FROM (SELECT DISTINCT {ident(fk0)}, {ident(q)} FROM {ident(first)}) AS a "
                    f"JOIN (SELECT DISTINCT {ident(fk)}, {ident(q)} FROM {ident(t)}) AS b ON b.{ident(fk)} = a.{ident(fk0)} "
                    f"WHERE a.{ident(q)} IS DISTINCT FROM b.{ident(q)} ORDER BY 1 LIMIT 1")[1]
                if bad:
                    raise InputError(f"quasi-identifier {q!r} disagrees between {first} and {t} for person "
                                     f"{bad[0][0]!r}: a person-level QI has one value a person")
        home[q] = "p" if where[0] == persons else f"x{evs.index(where[0])}"
    return home


def _joins(home: dict[str, str], key: str, events: dict[str, str], qi: list[str]) -> str:
    """LEFT JOINs of the person table with one row a person of each event table a QI is read from."""
    evs = list(events)
    out = []
    for i, t in enumerate(evs):
        mine = [q for q in qi if home[q] == f"x{i}"]
        if mine:
            fk = events[t]
            out.append(f"LEFT JOIN (SELECT DISTINCT {ident(fk)}, {', '.join(ident(q) for q in mine)} FROM {ident(t)}) "
                       f"AS x{i} ON x{i}.{ident(fk)} = p.{ident(key)}")
    return " ".join(out)
