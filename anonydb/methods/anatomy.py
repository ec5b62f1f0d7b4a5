"""Anatomy: l-diverse bucketization released as a QIT/ST pair [Xiao & Tao, VLDB 2006; Li thesis
§1.2.2 and Tables 1.4/1.5; spec-closeness-slicing 1.3, 8.2; spec-presence-survey 3.3, 3.6].

The QI values are published exactly, in the quasi-identifier table QIT (QI columns, group_id);
their link to the sensitive attribute is cut: the sensitive table ST holds per group only the
counts of its sensitive values (group_id, value, count).

Two modes:

* group creation (``groups=None``): one SQL statement (``sql/anatomy_groups.sql.j2``) lays the
  records out bucket by bucket (one bucket per sensitive value, largest first) and deals them to
  g = floor(n/l) groups in turn. Eligibility: no value may hold more than n/l records (else no
  l-diverse grouping exists; the error gives the numbers). Every group then holds >= l records
  with pairwise different sensitive values, so it is distinct, entropy and probabilistic
  l-diverse. Recursive (c,l) holds on such a group of m records only when 1 < c (m - l + 1):
  with it the groups are g = floor(n/m) for m = l + floor(1/c) (:func:`group_size`), and no
  value may hold more than n/m records. Departure from the paper's round-by-round loop ("take
  one record from each of the l largest buckets"): dealing in turn gives the same guarantees and
  group count in one statement, so no Python loop runs n/l rounds.
* given partitions (``groups="column"``): the groups are the values of a column (Mondrian's
  ``eq_class``, any group id); the requested l-diversity variant is checked, and QIT/ST released.

Either way the pair is verified by :func:`anonydb.checker.check` before anything is written.

Record owners (``person``): all of a person's records share one group, so their QIs must be
constant per person (as Mondrian and full-domain require; a QI that varies is refused, naming the
column and one person). Group creation deals persons, each under the value most of their records
hold (ties: the smallest), so a group of >= l persons holds l different values (distinct
l-diversity by persons); the other variants are judged by persons (:mod:`anonydb.models.base`) and
refused when a group fails. The ST counts persons (c_s: a value repeated on one person's visits
counts once), the QIT lists every record.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import events as run_events
from ..checker import check
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError
from ..models import LDiversity
from ..models.base import as_fraction
from ..schema import PERSON_COLUMN, split_list
from ..sources import open_source
from ..sqlgen import ident
from ..release.publish import (Publication, constant_qis, pseudonymized, publication_lines, resolve_roles,
                               tracked_key)
from .mondrian import _fmt


@dataclass
class AnatomyResult:
    qit: str
    st: str
    rows: int
    groups: int
    seconds: float
    report: Any  # anonydb.checker.Report of the verification
    dropped: list[str] = field(default_factory=list)  # source columns not published (no role, identifiers)
    kept: list[str] = field(default_factory=list)  # published unchanged in the QIT at the user's request
    order: str = ""  # how the QIT's rows are ordered and the groups dealt
    person: str | None = None  # record owners: groups of persons, ST counts persons
    person_like: list[tuple[str, int, int]] = field(default_factory=list)  # dropped columns like a person key
    pseudonyms: tuple[list[str], str] = ([], "")  # columns published as keyed pseudonyms, where the key came from

    def format(self) -> str:
        v = self.report.verdicts[0]
        ach = ", ".join(f"{k} = {_fmt(x)}" for k, x in v.achieved.items())
        rows = f"{self.rows} rows" if self.person is None else f"{self.rows} rows of {self.report.persons} persons"
        count = "count" if self.person is None else "persons holding it"
        return "\n".join([f"anatomy: {rows} in {self.groups} groups -> {self.qit} (QI values, group_id), "
                          f"{self.st} (group_id, sensitive value, {count}) in {self.seconds:.2f} s",
                          f"  verified: {v.model} holds (achieved {ach})",
                          *publication_lines(self.dropped, self.kept, self.order, self.person, self.person_like,
                                             self.pseudonyms)])


def anatomy(source: str, qi: str | Iterable[str], sensitive: str, *, l: Any, out: str,
            engine: Engine | Any = None, groups: str | None = None, l_variant: str = "distinct",
            c: Any = None, seed: int | None = None, replace: bool = False, as_view: bool = False,
            keep: str | Iterable[str] | None = None, identifiers: str | Iterable[str] | None = None,
            person: str | None = None, pseudonymize: str | Iterable[str] | None = None,
            secret_file: Any = None) -> AnatomyResult:
    """Release ``source`` as ``<out>_qit`` and ``<out>_st`` (see the module docstring).

    ``l``: an integer >= 2 for group creation; with ``groups`` any l-diversity parameter of
    ``l_variant`` (distinct, entropy, recursive with ``c``, probabilistic). ``as_view``: the two
    names become views over the verified tables ``<out>_qit__data`` / ``<out>_st__data``. The QIT
    publishes the QIs and the ``keep`` columns exactly; every other column is dropped. ``seed`` None
    orders the QIT and deals the groups by a fresh secret; an integer makes both reproducible.
    ``person``: the column naming each record's owner: groups of persons (see the module docstring).
    ``pseudonymize``, ``secret_file``: as in :func:`anonydb.methods.mondrian.anonymize` (the QIT
    carries the pseudonyms).
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if not sensitive:
        raise InputError("Anatomy needs a sensitive attribute (--sensitive)")
    if groups is None and (isinstance(l, bool) or not isinstance(l, int) or l < 2):
        raise InputError(f"l must be an integer >= 2 for Anatomy (a group needs l different sensitive values), "
                         f"got {l!r}")
    model = LDiversity(l, variant=l_variant, c=c)  # validates l, the variant and c
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release (it writes <out>_qit and <out>_st)")
    qit_name, st_name = f"{out}_qit", f"{out}_st"
    with Publication(eng, [qit_name, st_name], replace, sources=[source], seed=seed) as pub:
        order = pub.order
        with eng.scratch("anatomy") as s:
            relation = open_source(eng, source, scratch=s)
            columns = resolve_roles(eng, relation, qi_cols, sensitive, identifiers, keep, label=str(source),
                                    person=person, pseudonymize=pseudonymize).columns
            if person is not None:  # a person's records share one group and its QIT rows: one set of QI values
                constant_qis(eng, relation, person, qi_cols)
            relation, key_origin = pseudonymized(eng, s, relation, columns, secret_file)
            run_events.phase("grouping")
            cols = dict(eng.columns(relation))
            if groups is not None:
                if groups not in cols:
                    raise InputError(f"group column {groups!r} not found in {source}; its columns are: {', '.join(cols)}")
                if groups == sensitive:
                    raise InputError(f"the group column {groups!r} is the sensitive attribute")
            base, rid = eng.row_ids(s, relation)
            records = n = eng.scalar(f"SELECT count(*) FROM {ident(base)}")
            if n == 0:
                raise InputError(f"{source} is empty: there is nothing to release")
            dealt, drid = base, rid  # what group creation deals: the records, or the persons
            if person is not None and groups is not None:
                split = eng.fetch_rows(f"SELECT {ident(person)} FROM {ident(base)} GROUP BY 1 "
                                       f"HAVING count(DISTINCT {ident(groups)}) > 1 ORDER BY 1 LIMIT 1")[1]
                if split:
                    raise InputError(f"the group column {groups!r} splits person {split[0][0]!r} ({person!r}) across "
                                     f"groups: a person's records must share one group")
            elif person is not None:  # each person dealt once, under the value most of their records hold
                # numbered in person order, so that a seed deals the same groups on every engine
                dealt, drid = s.table(eng.render("person_primary.sql.j2", person=person, sensitive=sensitive,
                                                 source=base)), "_adb_rid"
                n = eng.scalar(f"SELECT count(*) FROM {ident(dealt)}")
            if groups is None:
                top, top_cnt, m = eng.fetch_rows(
                    f"SELECT arg_max({ident(sensitive)}, c), max(c), count(*) FROM "
                    f"(SELECT {ident(sensitive)}, count(*) AS c FROM {ident(dealt)} GROUP BY 1) AS h")[1][0]
                if top_cnt * l > n:
                    raise InfeasibleError(
                        f"Anatomy with l = {l} is infeasible: the most frequent value of {sensitive!r}, {top!r}, "
                        f"holds {top_cnt} of {n} {'persons' if person else 'rows'}, more than n/l = {n / l:g} "
                        f"(a group can hold a value at "
                        f"most once in l records); the largest feasible l is {n // top_cnt}"
                        + (f" ({m} distinct values)" if m < l else ""))
                size = group_size(l, l_variant, c)
                if top_cnt * size > n:
                    raise InfeasibleError(
                        f"Anatomy with recursive (c,l) = ({c}, {l}) is infeasible: its groups hold different values, "
                        f"and such a group is recursive (c,l)-diverse only from {size} records on (c * (records - l + "
                        f"1) > 1), but the most frequent value of {sensitive!r}, {top!r}, holds {top_cnt} of {n} rows, "
                        f"more than n/{size} = {n / size:g}; raise c or lower l")
                assign = s.table(eng.render("anatomy_groups.sql.j2", base=dealt, rid=drid, sensitive=sensitive,
                                            g=n // size, key=order.key))
                if person is not None:  # every record takes its person's group
                    assign = s.table(eng.render("person_classes.sql.j2", rows=assign, base=dealt, rid=drid,
                                                person=person, events=base, erid=rid, column="group_id"))
            else:
                assign = s.table(f"SELECT CAST(b.{rid if rid == 'rowid' else ident(rid)} AS BIGINT) AS _adb_rid, "
                                 f"CAST(dense_rank() OVER (ORDER BY b.{ident(groups)} NULLS LAST) AS BIGINT) AS group_id "
                                 f"FROM {ident(base)} AS b")
            # stage QIT and ST, verify the pair, then swap both in
            common = dict(base=base, assign=assign, rid=rid if rid == "rowid" else ident(rid), qis=qi_cols,
                          sensitive=sensitive, key=order.key, person=person,
                          keep=columns.keep + ([person] if person in columns.pseudonyms else []))
            qit_stage, st_stage = pub.stage("qit"), pub.stage("st")
            eng.create_table_as(qit_stage, eng.render("anatomy_release.sql.j2", part="qit", **common))
            eng.create_table_as(st_stage, eng.render("anatomy_release.sql.j2", part="st", **common))
            if person is None:
                report = verify(eng, qit_stage, st_stage, qi_cols, sensitive, [LDiversity(l, variant=l_variant, c=c)])
            else:
                report = verify_persons(eng, qit_stage, st_stage, base, rid, assign, person, sensitive,
                                        [LDiversity(l, variant=l_variant, c=c)])
            v = report.verdicts[0]
            g = v.violations[0] if v.violations else None
            unit = "persons" if person else "rows"
            where = f"; e.g. group {g.key.get('group_id')} of {g.size} {unit} has value {_fmt(g.value)}" if g else ""
            if person is not None and not report.holds:  # the dealing guarantees distinct l only
                raise InfeasibleError(
                    f"Anatomy dealt each person under one value, but persons hold several: {v.violating_groups} of "
                    f"{v.groups} groups fail {v.model} by persons{where}; use distinct l-diversity, or Mondrian "
                    f"with person, for this model")
            pub.attach([qit_stage, st_stage], report.holds, f"{v.model} does not hold on the QIT/ST release "
                       f"({v.violating_groups} of {v.groups} groups violate){where}", report)
            key = person if person is not None else tracked_key()
            if key is not None:  # a tracked release: the records' groups, fingerprinted for the ledger
                r = rid if rid == "rowid" else ident(rid)
                members = s.table(f"SELECT b.{ident(key)}, a.group_id FROM {ident(base)} AS b JOIN {ident(assign)} "
                                  f"AS a ON a._adb_rid = CAST(b.{r} AS BIGINT)")
                vals = s.table(f"SELECT group_id AS grp, {ident(sensitive)} AS value, {ident('count')} AS n "
                               f"FROM {ident(st_stage)}")
                pub.track(qit_stage, key, ["group_id"], sensitive, values=vals, rows=members)
            n_groups = eng.scalar(f"SELECT count(DISTINCT group_id) FROM {ident(st_stage)}")
        pub.commit([(qit_stage, qit_name), (st_stage, st_name)], as_view)
    del model
    return AnatomyResult(qit=qit_name, st=st_name, rows=int(records), groups=int(n_groups),
                         seconds=time.perf_counter() - t0, report=report, dropped=columns.dropped,
                         kept=columns.keep, order=order.describe(), person=person,
                         person_like=columns.person_like, pseudonyms=(columns.pseudonyms, key_origin))


def group_size(l: int, l_variant: str, c: Any) -> int:
    """The fewest records a group of pairwise different sensitive values needs to meet l-diversity
    of ``l_variant``: l, except recursive (c,l), which such a group of m records (every count 1)
    meets only when 1 < c * (m - l + 1), i.e. m >= l + floor(1/c)."""
    if l_variant != "recursive":
        return l
    return l + math.floor(1 / as_fraction(c, "c"))


def check_pair_counts(eng: Engine, qit: str, st: str) -> None:
    """Raise unless every group of a QIT/ST pair has as many QIT rows as its ST counts add up to."""
    bad = eng.fetch_rows(
        f"SELECT q.group_id, q.n, s.n FROM (SELECT group_id, count(*) AS n FROM {ident(qit)} GROUP BY 1) AS q "
        f"FULL JOIN (SELECT group_id, sum({ident('count')}) AS n FROM {ident(st)} GROUP BY 1) AS s USING (group_id) "
        f"WHERE q.n IS DISTINCT FROM s.n LIMIT 1")[1]
    if bad:
        raise AnonyDBError(f"internal error: group {bad[0][0]} has {bad[0][1]} QIT rows but ST counts {bad[0][2]}")


def verify(eng: Engine, qit: str, st: str, qi: list[str], sensitive: str, models: list) -> Any:
    """Check a QIT/ST pair: every group's sensitive counts (from ST) against ``models``, and the
    pair's consistency (each group's QIT rows = the sum of its ST counts)."""
    run_events.phase("verification")
    check_pair_counts(eng, qit, st)
    with eng.scratch("anatomy_check") as s:
        # expand ST to one row per record for the checker (group_id is the only QI of the check)
        rows = s.table(f"SELECT group_id, {ident(sensitive)} FROM {ident(st)}, range(count)")
        return check(rows, ["group_id"], sensitive, models=models, engine=eng, max_groups=3)


def verify_persons(eng: Engine, qit: str, st: str, base: str, rid: str, assign: str, person: str, sensitive: str,
                   models: list) -> Any:
    """Check a QIT/ST pair of record owners: the groups of the records (``base`` by ``assign``) judged
    by persons, each group's QIT rows its records, and ST's counts the persons holding each value."""
    run_events.phase("verification")
    r = rid if rid == "rowid" else ident(rid)
    with eng.scratch("anatomy_check") as s:
        rows = s.table(f"SELECT a.group_id, b.{ident(person)} AS {ident(PERSON_COLUMN)}, b.{ident(sensitive)} "
                       f"FROM {ident(base)} AS b JOIN {ident(assign)} AS a ON a._adb_rid = CAST(b.{r} AS BIGINT)")
        sa = ident(sensitive)
        bad = eng.fetch_rows(
            f"SELECT coalesce(x.group_id, y.group_id) FROM (SELECT group_id, {sa}, "
            f"count(DISTINCT {ident(PERSON_COLUMN)}) AS n FROM {ident(rows)} GROUP BY 1, 2) AS x "
            f"FULL JOIN {ident(st)} AS y ON y.group_id = x.group_id AND y.{sa} IS NOT DISTINCT FROM x.{sa} "
            f"WHERE x.n IS DISTINCT FROM y.{ident('count')} "
            f"UNION ALL SELECT coalesce(x.group_id, y.group_id) FROM (SELECT group_id, count(*) AS n FROM {ident(rows)} "
            f"GROUP BY 1) AS x FULL JOIN (SELECT group_id, count(*) AS n FROM {ident(qit)} GROUP BY 1) AS y "
            f"ON y.group_id = x.group_id WHERE x.n IS DISTINCT FROM y.n LIMIT 1")[1]
        if bad:
            raise AnonyDBError(f"internal error: group {bad[0][0]} of the QIT/ST pair does not match its records")
        return check(rows, ["group_id"], sensitive, models=models, engine=eng, max_groups=3, person=PERSON_COLUMN)
