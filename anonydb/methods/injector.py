"""Rule-based Injector: Anatomy-style QIT/ST releases that stay matching l-diverse against the
negative association rules mined from the data [Li thesis §3.4.3, Fig 3.2;
spec-injector-tradeoff-foreground 2.5].

1. Mine the rules at ``min_exp`` (:mod:`anonydb.attacks.knowledge`): each tuple gets its IVS, the
   sensitive values it cannot take.
2. Bucketize (Fig 3.2), set-based: tuples with the same (sensitive value, IVS) are interchangeable,
   so the grouping works on those classes with counts; sets of values are bitmasks. t_j is
   incompatible with t_i when they share the value or one cannot take the other's (Def 3.4.2).
   Phase 2 runs in rounds of one SQL statement (``injector_round.sql.j2``): every class with
   tuples left starts a template of l pairwise compatible classes (its partners: the compatible
   classes with the most tuples left), and the templates are granted copies in the order of their
   start's NIT (the most constrained first), each a fair share of its members' tuples; a group of
   one tuple per class of a template is matching l-diverse by construction. Phase 3 places the
   tuples no round grouped in the groups with the fewest members incompatible with them
   (``injector_place.sql.j2``) and, in rounds, merges every group where such a tuple has fewer than
   l valid values (judged by the matching l-diversity SQL model) into the group adding the most new
   values. Python loops over rounds only; tuples and groups never leave the database. Departure
   from Fig 3.2, whose greedy forms one group at a time (the partner minimizing NIT[g + t]): the
   same guarantee, dealt as Anatomy deals its records; on Adult it forms more groups and leaves
   fewer tuples over (BENCHMARKS.md, "Injector in set-based rounds").
3. Release: classes are mapped back to tuples in SQL (seeded random order within a class), QIT
   (QIs, group_id; shuffled) and ST (group_id, value, count) are verified (every group matching
   l-diverse under the same rules, every tuple once) and swapped in together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import events as run_events
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError, NotAvailable, option
from ..hierarchy import Hierarchy
from ..attacks.knowledge import Rules, mine_rules
from ..models.matching_diversity import check_l, group_verdicts
from ..schema import split_list
from ..sources import open_source
from ..sqlgen import ident, literal
from ..release.publish import Publication, publication_lines, resolve_roles
from .anatomy import check_pair_counts


@dataclass
class InjectorResult:
    qit: str
    st: str
    rows: int
    groups: int
    rules: int  # minimal rules mined
    rules_total: int
    profile: dict[int, float]
    leftovers: int  # tuples placed in phase 3
    merges: int
    min_valid: int  # the smallest number of valid values of any tuple
    seconds: float
    mine_seconds: float
    examples: list[str]
    report: Any = None  # anonydb.checker.Report: the verification's matching l-diversity verdict
    dropped: list[str] = field(default_factory=list)  # source columns not published (all but the QIs and SA)
    order: str = ""  # how the QIT's rows are ordered and groups filled (secret, or from a seed)
    knowledge: dict[str, Any] = field(default_factory=dict)  # the rules' settings (Rules.settings())
    knowledge_text: str = ""  # the same in words, and how to ask an audit for the same rules

    def format(self) -> str:
        prof = ", ".join(f"N_{i} {100 * p:.1f}%" for i, p in sorted(self.profile.items()))
        return (f"injector: {self.rows} rows in {self.groups} groups -> {self.qit} (QI values, group_id), {self.st} "
                f"(group_id, sensitive value, count) in {self.seconds:.2f} s (mining {self.mine_seconds:.2f} s)\n"
                f"  knowledge: {self.rules} minimal negative association rules ({self.rules_total} in all); {prof}\n"
                + (f"  rules: {self.knowledge_text}\n" if self.knowledge_text else "") +
                f"  verified: matching l-diversity holds (every tuple has >= {self.min_valid} valid values); "
                f"{self.leftovers} tuples placed after grouping, {self.merges} merges"
                + "".join("\n" + x for x in publication_lines(self.dropped, [], self.order)))


def _spell(name: str, value: Any) -> str:
    """``--name value`` in the CLI, ``name=value`` in Python."""
    o = option(name)
    return f"{o}{value}" if o.endswith(("=", ":")) else f"{o} {value}"


def injector(source: str, qi: str | Iterable[str], sensitive: str, *, l: Any, out: str, min_exp: float = 0.9,
             hierarchies: dict[str, Hierarchy] | None = None, engine: Engine | Any = None,
             seed: int | None = None, replace: bool = False, rules: Rules | None = None,
             itemset_support: str | int = "min") -> InjectorResult:
    """Release ``source`` as ``<out>_qit`` / ``<out>_st``, matching ``l``-diverse against the rules
    mined at ``min_exp`` over ``hierarchies`` (or given ``rules``, mined from the same table). The
    QIT holds the QIs only; ``seed`` None orders rows and fills groups by a fresh secret.
    ``itemset_support``: the count an itemset needs before rules are formed
    (:func:`anonydb.attacks.knowledge.mine_rules`; from 1000 tuples the rules are the thesis's kind
    and Injector runs at its defaults on Adult, BENCHMARKS.md "Fidelity")."""
    t0 = time.perf_counter()
    eng = connect(engine)
    if eng.dialect == "spark":  # refused before anything is read or written
        raise NotAvailable("Injector (its rule miner and greedy grouping run hundreds of small statements; "
                           "on Spark each is a job)", eng.dialect)
    qi_cols = split_list(qi, "quasi-identifiers")
    lv = check_l(l)
    if not float(lv).is_integer() or lv < 2:
        raise InputError(f"Injector builds groups of l tuples: l must be an integer >= 2, got {l!r}")
    lv = int(lv)
    qit_name, st_name = f"{out}_qit", f"{out}_st"
    with Publication(eng, [qit_name, st_name], replace, sources=[source], seed=seed) as pub:
        order = pub.order
        with eng.scratch("injector") as s:
            rel = open_source(eng, source, scratch=s)
            dropped = resolve_roles(eng, rel, qi_cols, sensitive, label=str(source)).dropped
            n = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
            run_events.phase("mining and grouping", rows=n)
            if n < lv:
                raise InfeasibleError(f"the table has {n} rows, fewer than l = {lv}: no group of l tuples exists")
            tm = time.perf_counter()
            kb = rules or mine_rules(rel, qi_cols, sensitive, min_exp=min_exp, hierarchies=hierarchies, engine=eng,
                                     scratch=s, itemset_support=itemset_support)
            mine_s = time.perf_counter() - tm
            rows = _with_classes(eng, s, rel, kb)
            m = len(kb.values)
            short, example = eng.fetch_rows(
                f"SELECT count(*), any_value(_adb_rid) FROM {ident(rows)} WHERE {m} - bit_count(_adb_ivs) < {lv}")[1][0]
            if short:
                raise InfeasibleError(
                    f"matching {lv}-diversity is infeasible: {short} of {n} tuples can take fewer than {lv} of the "
                    f"{m} values of {sensitive!r} under the {kb.minimal} mined rules ({kb.describe_settings()}), so no "
                    f"group gives them {lv} valid values; lower l, raise min_exp, coarsen the hierarchies, or form "
                    f"rules from larger itemsets only ({_spell('itemset_support', 1000)}, say); the largest feasible l here is "
                    f"{_largest_l(eng, rows, m)}")
            assign, leftovers, merges = _group(eng, s, rows, lv)
            key = order.key64(eng, "injector")
            qcols = ", ".join(f"r.{ident(c)}" for c in qi_cols)
            placed = s.table(
                f"WITH r AS (SELECT *, row_number() OVER (PARTITION BY _adb_code, _adb_ivs ORDER BY "
                f"hash(xor(hash(_adb_rid), CAST({key} AS UBIGINT))), _adb_rid) AS _adb_k FROM {ident(rows)}), "
                f"a AS (SELECT *, sum(_adb_take) OVER (PARTITION BY _adb_code, _adb_ivs ORDER BY group_id) AS _adb_hi "
                f"FROM {ident(assign)}), "
                # one slot per tuple a group takes of a class, numbered on from the groups before it: an
                # equi-join (a range join per class is quadratic in the class's size)
                f"k AS (SELECT a.group_id, a._adb_code, a._adb_ivs, a._adb_hi - a._adb_take + x.i + 1 AS _adb_k "
                f"FROM a CROSS JOIN LATERAL range(a._adb_take) AS x(i)) "
                f"SELECT {qcols}, r.{ident(sensitive)}, k.group_id, r._adb_rid FROM r JOIN k ON k._adb_code = r._adb_code "
                f"AND k._adb_ivs = r._adb_ivs AND k._adb_k = r._adb_k")
            placed_n = int(eng.scalar(f"SELECT count(*) FROM {ident(placed)}"))
            if placed_n != n:
                raise AnonyDBError(f"internal error: {placed_n} of {n} tuples were placed in groups")
            qit_stage, st_stage = pub.stage("qit"), pub.stage("st")
            eng.create_table_as(qit_stage, f"SELECT {', '.join(ident(c) for c in qi_cols)}, group_id FROM "
                                           f"{ident(placed)} ORDER BY md5_number(CAST(_adb_rid AS VARCHAR) || "
                                           f"{literal(order.key)}), _adb_rid")
            eng.create_table_as(st_stage, f"SELECT group_id, {ident(sensitive)}, count(*) AS {ident('count')} FROM "
                                          f"{ident(placed)} GROUP BY ALL ORDER BY group_id, {ident(sensitive)}")
            run_events.phase("verification")
            min_valid, bad = verify(eng, s, qit_stage, st_stage, kb, lv, truth=placed)
            pub.attach([qit_stage, st_stage], not bad,
                       f"{bad} groups of the release are not matching {lv}-diverse")
            report = _report(eng, qit_stage, st_stage, qi_cols, sensitive, kb, lv, min_valid, bad)
            report.source = qit_name
            n_groups = report.groups
        pub.commit([(qit_stage, qit_name), (st_stage, st_name)])
    return InjectorResult(qit=qit_name, st=st_name, rows=n, groups=n_groups, rules=kb.minimal, rules_total=kb.total,
                          profile=kb.profile, leftovers=leftovers, merges=merges, min_valid=min_valid,
                          seconds=time.perf_counter() - t0, mine_seconds=mine_s, examples=kb.examples, report=report,
                          dropped=dropped, order=order.describe(), knowledge=kb.settings(),
                          knowledge_text=_rules_text(kb))


def _report(eng: Engine, qit: str, st: str, qi: list[str], sensitive: str, kb: Rules, l: int, min_valid: int,
            bad: int) -> Any:
    """The verification as a checker Report: one matching l-diversity verdict over the groups."""
    from ..checker import Report
    from ..models.base import Verdict

    groups, smallest, largest, rows = eng.fetch_rows(
        f"SELECT count(*), min(n), max(n), sum(n) FROM (SELECT group_id, sum({ident('count')}) AS n "
        f"FROM {ident(st)} GROUP BY group_id) AS g")[1][0]
    verdict = Verdict(model="matching l-diversity",
                      params={"l": l, "min_exp": kb.min_exp, "itemset_support": kb.itemset_support}, holds=bad == 0,
                      achieved={"l": min_valid}, groups=int(groups), violating_groups=bad,
                      violating_rows=0, note=f"against {kb.minimal} minimal negative association rules mined at "
                                             f"{_rules_text(kb)}")
    return Report(source=qit, qi=qi, sensitive=sensitive, rows=int(rows), groups=int(groups),
                  smallest_group=int(smallest), largest_group=int(largest), verdicts=[verdict])


def _rules_text(kb: Rules) -> str:
    """The rules a release was made against, and how to audit it against the same:
    ``minExp 0.9, itemset support 1000, hierarchies on age (audit with --min-exp 0.9 --itemset-support 1000 ...)``."""
    return f"{kb.describe_settings()} (audit with {kb.options()})"


def recheck(eng: Engine, source: str, qit: str, st: str, qi: list[str], sensitive: str, l: Any, min_exp: float,
            hierarchies: dict[str, Hierarchy] | None, itemset_support: str | int = "min") -> Any:
    """Re-check an existing Injector release: the rules re-mined from ``source`` (at ``min_exp`` and
    ``itemset_support``, as it was made), every group judged by matching l-diversity from the
    published counts (a perfect assignment computed per group)."""
    lv = check_l(l)
    with eng.scratch("injector_check") as s:
        kb = mine_rules(source, qi, sensitive, min_exp=min_exp, hierarchies=hierarchies, engine=eng, scratch=s,
                        itemset_support=itemset_support)
        min_valid, bad = verify(eng, s, qit, st, kb, lv)
        return _report(eng, qit, st, qi, sensitive, kb, lv, min_valid, bad)


def _with_classes(eng: Engine, s: Any, rel: str, kb: Rules) -> str:
    """The rows of ``rel`` with a row id, their sensitive code and their IVS mask."""
    on = " AND ".join(f"v.{ident(x)} IS NOT DISTINCT FROM r.{ident(x)}" for x in kb.qi)
    return s.table(f"SELECT r.*, CAST(row_number() OVER () AS BIGINT) AS _adb_rid, k._adb_code, "
                   f"coalesce(v._adb_ivs, CAST(0 AS BIGINT)) AS _adb_ivs FROM {ident(rel)} AS r "
                   f"JOIN {ident(kb.codes)} AS k ON k._adb_sa IS NOT DISTINCT FROM r.{ident(kb.sensitive)} "
                   f"LEFT JOIN {ident(kb.ivs)} AS v ON {on}")


def _largest_l(eng: Engine, rows: str, m: int) -> int:
    return int(eng.scalar(f"SELECT min({m} - bit_count(_adb_ivs)) FROM {ident(rows)}"))


def _group(eng: Engine, s: Any, rows: str, l: int) -> tuple[str, int, int]:
    """Phases 2 and 3 of Fig 3.2 as set-based SQL over the classes of interchangeable tuples (same
    value, same IVS); Python loops over rounds only. Returns (the allocation: group_id, _adb_code,
    _adb_ivs, _adb_take; the tuples placed after grouping; the merges).

    Phase 2 (``injector_round.sql.j2``): rounds in which every class starts a template of l
    pairwise compatible classes and the templates are granted copies in priority order.
    Phase 3: the tuples no round grouped join the groups with the fewest incompatible members
    (``injector_place.sql.j2``); then, in rounds, every group where such a tuple has fewer than l
    valid values (the matching model's SQL) merges into the group adding the most new values
    among those that hold (all failing groups at once; merging never removes a valid value, so
    only the merged groups are judged again)."""
    cls = s.table(f"SELECT CAST(row_number() OVER (ORDER BY _adb_code, _adb_ivs) - 1 AS INTEGER) AS c, "
                  f"CAST(_adb_code AS INTEGER) AS code, CAST(_adb_ivs AS BIGINT) AS ivs, "
                  f"CAST(1 AS BIGINT) << CAST(_adb_code AS BIGINT) AS bit, count(*) AS rem "
                  f"FROM {ident(rows)} GROUP BY _adb_code, _adb_ivs")
    n_cls = int(eng.scalar(f"SELECT count(*) FROM {ident(cls)}"))
    big = n_cls + 1  # orders (priority, class id) in one BIGINT
    made = s.table("SELECT CAST([] AS INTEGER[]) AS members, CAST(0 AS BIGINT) AS d LIMIT 0")
    leftovers = int(eng.scalar(f"SELECT sum(rem) FROM {ident(cls)}"))  # the tuples no round has grouped yet
    while leftovers >= l:
        granted = s.put("granted", eng.render("injector_round.sql.j2", cls=cls, l=l, big=big))
        if not eng.scalar(f"SELECT count(*) FROM {ident(granted)}"):
            break
        eng.execute(f"INSERT INTO {ident(made)} SELECT members, d FROM {ident(granted)}")
        eng.execute(f"UPDATE {ident(cls)} SET rem = rem - u.used FROM (SELECT c, sum(d) AS used FROM "
                    f"(SELECT unnest(members) AS c, d FROM {ident(granted)}) AS x GROUP BY c) AS u "
                    f"WHERE {ident(cls)}.c = u.c")
        leftovers = int(eng.scalar(f"SELECT sum(rem) FROM {ident(cls)}"))
    gtypes = s.table(f"SELECT gt, members, d, CAST(sum(d) OVER (ORDER BY gt) - d + 1 AS BIGINT) AS first FROM "
                     f"(SELECT row_number() OVER (ORDER BY members) AS gt, members, CAST(sum(d) AS BIGINT) AS d "
                     f"FROM {ident(made)} GROUP BY members) AS g")
    if eng.scalar(f"SELECT count(*) FROM {ident(gtypes)}"):
        mem = s.table(f"SELECT g.first + r.i AS gid, m.c, CAST(1 AS BIGINT) AS k FROM {ident(gtypes)} AS g "
                      f"CROSS JOIN LATERAL range(g.d) AS r(i) "
                      f"CROSS JOIN LATERAL (SELECT unnest(g.members) AS c) AS m")
        placed = s.table(eng.render("injector_place.sql.j2", cls=cls, gtypes=gtypes))
        eng.execute(f"INSERT INTO {ident(mem)} SELECT gid, c, k FROM {ident(placed)}")
    else:  # no template formed: every tuple in one group, which the model then judges
        mem = s.table(f"SELECT CAST(1 AS BIGINT) AS gid, c, rem AS k FROM {ident(cls)} WHERE rem > 0")
        placed = mem
    watch = s.table(f"SELECT DISTINCT gid, c FROM {ident(placed)}")
    merges = 0
    while True:
        failing = _failing(eng, s, cls, mem, watch, l)
        n_fail = int(eng.scalar(f"SELECT count(*) FROM {ident(failing)}"))
        if not n_fail:
            break
        vals = s.table(f"SELECT m.gid, bit_or(x.bit) AS vals FROM {ident(mem)} AS m JOIN {ident(cls)} AS x ON x.c = m.c "
                       f"GROUP BY m.gid")
        if eng.scalar(f"SELECT count(*) FROM {ident(vals)}") == 1:
            raise InfeasibleError(f"a tuple cannot reach {l} valid values even with every group merged: "
                                  f"matching {l}-diversity is infeasible under the mined rules")
        # each failing group merges into the group (one per set of values, the lowest id) that holds
        # and adds the most values; when every group fails, all of them merge into the first
        merge = s.put("merge", f"""
            WITH f AS (SELECT v.gid, v.vals FROM {ident(vals)} AS v SEMI JOIN {ident(failing)} AS x ON x.gid = v.gid),
                 h AS (SELECT vals, min(gid) AS gid FROM {ident(vals)} AS v ANTI JOIN {ident(failing)} AS x ON x.gid = v.gid
                       GROUP BY vals)
            SELECT f.gid AS g, coalesce((SELECT arg_max(h.gid, bit_count(h.vals & ~f.vals) * {2 ** 40} - h.gid) FROM h),
                                        (SELECT min(gid) FROM f)) AS h
            FROM f""")
        for t in (mem, watch):
            eng.execute(f"UPDATE {ident(t)} SET gid = m.h FROM {ident(merge)} AS m WHERE {ident(t)}.gid = m.g")
        merges += int(eng.scalar(f"SELECT count(*) FROM {ident(merge)} WHERE g <> h"))
        eng.execute(f"DELETE FROM {ident(watch)} WHERE gid NOT IN (SELECT h FROM {ident(merge)})")
        s.drop(vals)
    assign = s.table(f"SELECT CAST(dense_rank() OVER (ORDER BY gid) AS BIGINT) AS group_id, _adb_code, _adb_ivs, _adb_take "
                     f"FROM (SELECT m.gid, x.code AS _adb_code, x.ivs AS _adb_ivs, CAST(sum(m.k) AS BIGINT) AS _adb_take "
                     f"FROM {ident(mem)} AS m JOIN {ident(cls)} AS x ON x.c = m.c GROUP BY m.gid, x.code, x.ivs) AS a")
    return assign, leftovers, merges


def _failing(eng: Engine, s: Any, cls: str, mem: str, watch: str, l: int) -> str:
    """The groups (gid) where a watched class (``watch``: gid, c) has fewer than l valid values
    (the matching model's SQL over the groups' members)."""
    from ..models.matching_diversity import valid_counts

    members = s.put("members", f"SELECT m.gid AS g, x.code AS _adb_code, x.ivs AS _adb_ivs, sum(m.k) AS _adb_cnt "
                               f"FROM {ident(mem)} AS m JOIN {ident(cls)} AS x ON x.c = m.c "
                               f"WHERE m.gid IN (SELECT gid FROM {ident(watch)}) GROUP BY ALL")
    return s.put("failing", f"SELECT DISTINCT v.g AS gid FROM ({valid_counts(eng, members, ['g'])}) AS v "
                            f"JOIN {ident(cls)} AS x ON x.code = v._adb_code AND x.ivs = v._adb_ivs "
                            f"JOIN {ident(watch)} AS w ON w.gid = v.g AND w.c = x.c WHERE v._adb_valid < {l}")


def verify(eng: Engine, s: Any, qit: str, st: str, kb: Rules, l: int, truth: str | None = None) -> tuple[int, int]:
    """Check a QIT/ST release against ``kb``: QIT rows = ST counts per group, and every group
    matching l-diverse. With ``truth`` (the placed tuples: group_id, QIs, sensitive value) the true
    assignment is the perfect matching the model starts from; without it one is computed from the
    release (:func:`anonydb.attacks.audit.members_from_counts`). Returns (smallest valid count, violating
    groups)."""
    check_pair_counts(eng, qit, st)
    from ..attacks.audit import members_from_counts, members_from_rows

    if truth is not None:
        members = members_from_rows(eng, s, truth, "group_id", kb.sensitive, kb)
    else:
        members = members_from_counts(eng, s, qit, "group_id", st, kb.sensitive, "count", kb)
    v = eng.fetch_rows(f"SELECT min(_adb_min_valid), count(*) FILTER (WHERE NOT _adb_ok) FROM "
                       f"({group_verdicts(eng, members, ['group_id'], l)}) AS g")[1][0]
    return int(v[0]), int(v[1])


__all__ = ["InjectorResult", "injector", "recheck", "verify"]
