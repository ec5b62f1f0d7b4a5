"""Rule-based Injector: Anatomy-style QIT/ST releases that stay matching l-diverse against the
negative association rules mined from the data [Li thesis §3.4.3, Fig 3.2;
spec-injector-tradeoff-foreground 2.5].

1. Mine the rules at ``min_exp`` (:mod:`anonydb.attacks.knowledge`): each tuple gets its IVS, the
   sensitive values it cannot take.
2. Bucketize (Fig 3.2). Tuples with the same (sensitive value, IVS) are interchangeable, so the
   greedy works on those classes with counts (one SQL aggregate); sets of values are bitmasks.
   t_j is incompatible with t_i when they share the value or one cannot take the other's; NIT[g]
   (the tuples still unassigned that are incompatible with g) is one vectorized expression over
   the classes. Phase 2 repeatedly starts a group with the most constrained tuple (max NIT) and adds
   the compatible tuple that leaves the fewest incompatible ones (min NIT[g + t]) until it holds l
   pairwise-compatible tuples (matching l-diverse by construction); a start that finds no
   compatible partner goes to the leftovers (its partners return to the pool: spec A6's default).
   Phase 3 adds each leftover to the group with the fewest tuples incompatible with it and, while
   that tuple has fewer than l valid values (judged by the matching l-diversity SQL model), merges
   in the group adding the most new values. Python loops over groups being formed (rounds); every
   step is a NumPy expression over the classes, and tuples never leave the database.
3. Release: classes are mapped back to tuples in SQL (seeded random order within a class), QIT
   (QIs, group_id; shuffled) and ST (group_id, value, count) are verified (every group matching
   l-diverse under the same rules, every tuple once) and swapped in together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

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

    def format(self) -> str:
        prof = ", ".join(f"N_{i} {100 * p:.1f}%" for i, p in sorted(self.profile.items()))
        return (f"injector: {self.rows} rows in {self.groups} groups -> {self.qit} (QI values, group_id), {self.st} "
                f"(group_id, sensitive value, count) in {self.seconds:.2f} s (mining {self.mine_seconds:.2f} s)\n"
                f"  knowledge: {self.rules} minimal negative association rules ({self.rules_total} in all); {prof}\n"
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
                    f"{m} values of {sensitive!r} under the {kb.minimal} mined rules (minExp {kb.min_exp:g}), so no "
                    f"group gives them {lv} valid values; lower l, raise min_exp, coarsen the hierarchies, or form "
                    f"rules from larger itemsets only ({_spell('itemset_support', 1000)}, say); the largest feasible l here is "
                    f"{_largest_l(eng, rows, m)}")
            cls = eng.fetch_rows(f"SELECT _adb_code, _adb_ivs, count(*) FROM {ident(rows)} GROUP BY ALL ORDER BY 1, 2")[1]
            codes = np.array([c for c, _, _ in cls], dtype=np.int64)
            ivs = np.array([v for _, v, _ in cls], dtype=np.int64)
            counts = np.array([k for _, _, k in cls], dtype=np.int64)
            groups, leftovers = _group(codes, ivs, counts.copy(), lv)
            if not groups:
                raise InfeasibleError(f"no group of {lv} pairwise compatible tuples exists (the values and the mined "
                                      f"rules leave too few combinations); lower l or min_exp")
            alloc = np.zeros((len(groups), len(codes)), dtype=np.int64)
            np.add.at(alloc, (np.repeat(np.arange(len(groups)), [len(m) for m in groups]),
                              np.concatenate([np.asarray(m, dtype=np.int64) for m in groups])), 1)
            merges = _place_leftovers(eng, s, codes, ivs, alloc, leftovers, lv)
            alloc = alloc[alloc.sum(axis=1) > 0]
            assign = s.table("SELECT * FROM (VALUES " + ", ".join(
                f"({gi + 1}, {int(codes[c])}, {int(ivs[c])}, {int(alloc[gi, c])})"
                for gi in range(alloc.shape[0]) for c in range(len(codes)) if alloc[gi, c]) +
                ") AS a(group_id, _adb_code, _adb_ivs, _adb_take)")
            key = order.key64(eng, "injector")
            qcols = ", ".join(f"r.{ident(c)}" for c in qi_cols)
            placed = s.table(
                f"WITH r AS (SELECT *, row_number() OVER (PARTITION BY _adb_code, _adb_ivs ORDER BY "
                f"hash(xor(hash(_adb_rid), CAST({key} AS UBIGINT))), _adb_rid) AS _adb_k FROM {ident(rows)}), "
                f"a AS (SELECT *, sum(_adb_take) OVER (PARTITION BY _adb_code, _adb_ivs ORDER BY group_id) AS _adb_hi "
                f"FROM {ident(assign)}) "
                f"SELECT {qcols}, r.{ident(sensitive)}, a.group_id, r._adb_rid FROM r JOIN a ON a._adb_code = r._adb_code "
                f"AND a._adb_ivs = r._adb_ivs AND r._adb_k > a._adb_hi - a._adb_take AND r._adb_k <= a._adb_hi")
            placed_n = int(eng.scalar(f"SELECT count(*) FROM {ident(placed)}"))
            if placed_n != n:
                raise AnonyDBError(f"internal error: {placed_n} of {n} tuples were placed in groups")
            qit_stage, st_stage = pub.stage("qit"), pub.stage("st")
            eng.create_table_as(qit_stage, f"SELECT {', '.join(ident(c) for c in qi_cols)}, group_id FROM "
                                           f"{ident(placed)} ORDER BY md5_number(CAST(_adb_rid AS VARCHAR) || "
                                           f"{literal(order.key)}), _adb_rid")
            eng.create_table_as(st_stage, f"SELECT group_id, {ident(sensitive)}, count(*) AS {ident('count')} FROM "
                                          f"{ident(placed)} GROUP BY ALL ORDER BY group_id, {ident(sensitive)}")
            min_valid, bad = verify(eng, s, qit_stage, st_stage, kb, lv, truth=placed)
            pub.attach([qit_stage, st_stage], not bad,
                       f"{bad} groups of the release are not matching {lv}-diverse")
            report = _report(eng, qit_stage, st_stage, qi_cols, sensitive, kb, lv, min_valid, bad)
            report.source = qit_name
            n_groups = report.groups
        pub.commit([(qit_stage, qit_name), (st_stage, st_name)])
    return InjectorResult(qit=qit_name, st=st_name, rows=n, groups=n_groups, rules=kb.minimal, rules_total=kb.total,
                          profile=kb.profile, leftovers=len(leftovers), merges=merges, min_valid=min_valid,
                          seconds=time.perf_counter() - t0, mine_seconds=mine_s, examples=kb.examples, report=report,
                          dropped=dropped, order=order.describe())


def _report(eng: Engine, qit: str, st: str, qi: list[str], sensitive: str, kb: Rules, l: int, min_valid: int,
            bad: int) -> Any:
    """The verification as a checker Report: one matching l-diversity verdict over the groups."""
    from ..checker import Report
    from ..models.base import Verdict

    groups, smallest, largest, rows = eng.fetch_rows(
        f"SELECT count(*), min(n), max(n), sum(n) FROM (SELECT group_id, sum({ident('count')}) AS n "
        f"FROM {ident(st)} GROUP BY group_id) AS g")[1][0]
    verdict = Verdict(model="matching l-diversity", params={"l": l, "min_exp": kb.min_exp}, holds=bad == 0,
                      achieved={"l": min_valid}, groups=int(groups), violating_groups=bad,
                      violating_rows=0, note=f"against {kb.minimal} minimal negative association rules mined at "
                                             f"minExp {kb.min_exp:g}")
    return Report(source=qit, qi=qi, sensitive=sensitive, rows=int(rows), groups=int(groups),
                  smallest_group=int(smallest), largest_group=int(largest), verdicts=[verdict])


def recheck(eng: Engine, source: str, qit: str, st: str, qi: list[str], sensitive: str, l: Any, min_exp: float,
            hierarchies: dict[str, Hierarchy] | None) -> Any:
    """Re-check an existing Injector release: the rules re-mined from ``source``, every group judged
    by matching l-diversity from the published counts (a perfect assignment computed per group)."""
    lv = check_l(l)
    with eng.scratch("injector_check") as s:
        kb = mine_rules(source, qi, sensitive, min_exp=min_exp, hierarchies=hierarchies, engine=eng, scratch=s)
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


def _incompatible(codes, ivs):
    """Inc[i, j]: tuples of classes i and j are incompatible (Def 3.4.2: same value, or one cannot take
    the other's); symmetric. A tuple is incompatible with a group when it is with one of its members."""
    bits = np.left_shift(np.int64(1), codes)
    return ((codes[:, None] == codes[None, :]) | ((ivs[:, None] & bits[None, :]) != 0)
            | ((ivs[None, :] & bits[:, None]) != 0))


def _group(codes, ivs, counts, l):
    """Phase 2 of Fig 3.2 over classes; returns (groups as lists of class indexes, leftover classes).
    NIT[g + c] = sum_j counts_j (I_g[j] or Inc[c, j]) with I_g the classes incompatible with g."""
    inc = _incompatible(codes, ivs)
    inc_i = inc.astype(np.float64)  # float: the products go through BLAS (counts stay far below 2^53)
    groups, leftovers = [], []
    while counts.sum() >= l:
        live = np.flatnonzero(counts > 0)
        i = int(live[int(np.argmax(inc_i[live] @ counts.astype(np.float64)))])  # most constrained first; ties: lowest class
        counts[i] -= 1
        members = [i]
        ig = inc[i].copy()
        while len(members) < l:
            cand = np.flatnonzero((counts > 0) & ~ig)
            if cand.size == 0:
                for j in members[1:]:
                    counts[j] += 1
                leftovers.append(i)
                members = None
                break
            free = (counts * ~ig).astype(np.float64)
            j = int(cand[int(np.argmin(inc_i[cand] @ free))])  # the base term sum(counts * ig) is common
            counts[j] -= 1
            members.append(j)
            ig |= inc[j]
        if members:
            groups.append(members)
    leftovers += [int(c) for c in np.repeat(np.arange(len(counts)), counts)]
    return groups, leftovers


def _place_leftovers(eng, s, codes, ivs, alloc, leftovers, l) -> int:
    """Phase 3: each leftover joins the group with the fewest tuples incompatible with it (in turn;
    the groups x classes incompatibility counts are kept up to date incrementally); then, in rounds,
    every group holding a placed tuple with fewer than l valid values (one SQL statement of the
    matching model per round, for all such groups) absorbs the group adding the most new values.
    Monotonicity (adding tuples never removes valid values) makes only the placed tuples need
    re-checking. Returns the number of merges."""
    bits = np.left_shift(np.int64(1), codes)
    inc_i = _incompatible(codes, ivs).astype(np.float64)
    score = alloc.astype(np.float64) @ inc_i  # score[g, c]: tuples of g incompatible with class c (BLAS)
    placed: dict[int, set[int]] = {}
    for c in leftovers:
        g = int(np.argmin(score[:, c]))
        alloc[g, c] += 1
        score[g] += inc_i[c]
        placed.setdefault(g, set()).add(c)
    merges = 0
    while placed:
        failing = _failing(eng, s, codes, ivs, alloc, placed, l)
        if not failing:
            break
        nxt: dict[int, set[int]] = {}
        for g in failing:
            if alloc[g].sum() == 0:  # absorbed by another failing group this round
                continue
            others = [h for h in np.flatnonzero(alloc.sum(axis=1) > 0) if h != g]
            if not others:
                raise InfeasibleError(f"a tuple cannot reach {l} valid values even with every group merged: "
                                      f"matching {l}-diversity is infeasible under the mined rules")
            sen_g = int(np.bitwise_or.reduce(bits[alloc[g] > 0]))
            gain = [bin(int(np.bitwise_or.reduce(bits[alloc[h] > 0])) & ~sen_g).count("1") for h in others]
            h = others[int(np.argmax(gain))]
            alloc[g] += alloc[h]
            alloc[h] = 0
            nxt.setdefault(g, set()).update(placed.get(g, set()) | placed.get(h, set()))
            nxt.pop(h, None)
            merges += 1
        placed = nxt
    return merges


def _failing(eng, s, codes, ivs, alloc, placed, l) -> list[int]:
    """The groups of ``placed`` where a placed class has fewer than l valid values (SQL model)."""
    rows = [f"({g}, {int(codes[j])}, {int(ivs[j])}, {int(alloc[g, j])})"
            for g in placed for j in np.flatnonzero(alloc[g] > 0)]
    members = s.table(f"SELECT * FROM (VALUES {', '.join(rows)}) AS m(g, _adb_code, _adb_ivs, _adb_cnt)")
    watch = s.table("SELECT * FROM (VALUES " + ", ".join(f"({g}, {int(codes[c])}, {int(ivs[c])})"
                                                         for g, cs in placed.items() for c in cs) +
                    ") AS w(g, _adb_code, _adb_ivs)")
    from ..models.matching_diversity import valid_counts

    bad = eng.fetch_rows(f"SELECT DISTINCT v.g FROM ({valid_counts(eng, members, ['g'])}) AS v JOIN {ident(watch)} AS w "
                         f"ON w.g = v.g AND w._adb_code = v._adb_code AND w._adb_ivs = v._adb_ivs "
                         f"WHERE v._adb_valid < {l} ORDER BY 1")[1]
    s.drop(members)
    s.drop(watch)
    return [int(r[0]) for r in bad]


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
