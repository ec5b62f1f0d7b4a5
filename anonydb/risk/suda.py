"""SUDA2 special uniques [Elliot et al. 2002, "SUDA: a program for detecting special uniques";
Manning, Haglin & Keane 2008, "A recursive search algorithm for statistical disclosure
assessment"], as sdcMicro's ``suda2`` computes them (R/suda2.R, src/Suda2.h), set-based in SQL.

Definitions (a unit is a record, or a person with ``person``; K keys, max_size M <= K):

* a unit is a sample unique (SU) on a subset S of the keys when no other unit shares its values
  on S; a minimal sample unique (MSU) is an SU on S with no SU on a proper subset of S. Subsets of
  up to M keys are searched (sdcMicro always searches all K: ``g_MaxK = g_NbVarALEX``).
* score = sum over the unit's MSUs S of (K - |S|)! (sdcMicro's default ``original_scores = TRUE``:
  ``g_ab[i] = prod_{j > i} (K - j)`` for an MSU of i + 1 keys). sdcMicro pads one or two keys with
  constant columns, so K counts as at least 3 in the weights and in Q below; so does it here.
  With M < K the weights stay (K - |S|)!: the DIS score below does not depend on a common factor.
* contribution of key v: per unit, the weights of its MSUs containing v over its score
  (``ContributionPercent``); over the table, 100 * sum of those weights / sum of the scores
  (``attribute_contributions``). The percentages add up to more than 100 (an MSU of two keys
  counts for both). sdcMicro's search merges items that hold exactly the same records inside a
  branch ("correlated" items) and then credits the MSU's weight to the wrong one of the two keys
  (src/Suda2.h, ``Entry.m_pContribution[VarNum] += m * g_ab[...]``): its per-key split differs
  on such data (5 of 300 random small tables); the scores do not. Here the split is the definition.
* DIS-SUDA (sdcMicro's ``disScore``; Skinner & Elliot 2002): with U the units unique on all keys
  and P the units in pairs on all keys (a missing value as a value), f = ``dis_fraction``,
  Dis = U f / (U f + P (1 - f)), Q = 1 + (8 - K) / 20 (Dis, Q and U / Dis - U in single
  precision, as sdcMicro's ``float``s), a unit's DIS score is
  1 / (1 + (U / Dis - U) / (score^Q * sum over scored units of score^-Q)), 0 without an MSU.
  U / Dis - U is P (1 - f) / f but for the rounding, so U matters only to the last digits.
  sdcMicro's C++ counts U as the records alone in their bucket of a 16-bit hash of the key
  values (its test for a unique in a shared bucket, ``k == g_NbPerHash[i]``, never holds: 536 of
  Adult's 14,021 full-key uniques, coded as factors): its disScores then differ from these in the
  last digits (the single-precision rounding of another U). Here U is the count of full-key uniques.

Missing values (NULL), as sdcMicro's NA: a NULL is no item. A unit cannot be an SU on a subset
where it is NULL, and a NULL equals no value of another unit (src/Suda2.h skips the item of the
missing-value code). For U and P a NULL is a value, as sdcMicro's hash and duplicate test compare
the missing-value code like any other.

Person mode (``person``: the record owner's column): the unit is a person. On S, a person is an SU
when one of its records has S-values that no other person holds (distinct persons per S-value);
a person whose records all share the key values is one unit with those values. U / P count the
persons whose rarest full-key value is held by 1 / 2 persons.

Set-based plan (Python loops over the sizes only). The records are reduced to their distinct key
combinations with their counts (for persons: the distinct (person, key values)), each key coded
as an integer through a dictionary (0 for NULL). For each size s = 1..M one statement finds the
MSUs of all subsets of s keys: a UNION ALL of one aggregation per subset (its bitmask a BIGINT
literal, its codes packed into as few BIGINTs as their bit widths allow, rows NULL on the subset
left out), keeping the groups of one unit. Each record carries a bitmap of the subsets of size
s - 1 it is an SU on (BIGINT words of 62 flags; ``&`` with a literal, in all three dialects), and
the aggregation of subset S leaves out the records that are an SU on an (s-1)-subset of S: such a
record is unique on S, so leaving it out changes no other group, and every unique group left is
an MSU. After each size the bitmaps are rebuilt (an SU of size s is an MSU or lies over an SU of
size s - 1), and a record that is an SU on every subset of size s leaves the input: every larger
subset holds an SU of it. A person's other records still count for the groups, so with persons the
aggregations take every row and the SUs over a superset of one of the person's MSUs are removed
afterwards (an anti-join through a small (subset, proper subset) table).
"""

from __future__ import annotations

import math
import struct
from itertools import combinations
from typing import Any

from ..engines import connect
from ..engines.base import Engine
from ..errors import InputError
from ..schema import RESERVED_PREFIX, split_list, validate_person
from ..sources import open_source
from ..sqlgen import ident, literal

#: the lower bounds of the DIS-score bins of the distribution (sdcMicro's print.suda2 table)
DIS_BINS = (0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0)
#: at most this many subsets of one size (UNION ALL branches of one statement)
MAX_SUBSETS = 4096
#: bits of packed codes per BIGINT group column
_PACK_BITS = 62


#: the lower bounds of the DIS-score bins of the distribution (sdcMicro's print.suda2 table)
DIS_BINS = (0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0)
#: at most this many subsets of one size (aggregations of one statement)
MAX_SUBSETS = 4096
#: flags per BIGINT word of a bitmap, and bits of packed codes per BIGINT group column
_WORD = 62


def _f32(x: float) -> float:
    """``x`` rounded to single precision: sdcMicro computes Dis and Q in C ``float``s."""
    return struct.unpack("f", struct.pack("f", x))[0]


def dis_constants(u: int, p: int, dis_fraction: float, k_eff: int) -> tuple[float, float, float]:
    """(Dis, Q, U / Dis - U) as sdcMicro's src/Suda2.h computes them, in single precision."""
    f = _f32(dis_fraction)
    q = _f32(1.0 + _f32(_f32(8.0 - k_eff) / 20.0))
    if not u:
        return 0.0, q, 0.0
    a = _f32(_f32(u) * f)
    dis = _f32(a / _f32(a + _f32(_f32(p) * _f32(1.0 - f))))
    return dis, q, _f32(_f32(u / dis) - u)


def _mask(subset: tuple[int, ...]) -> int:
    return sum(1 << j for j in subset)


def _values(rows: list[tuple], names: list[str]) -> str:
    """A SELECT of an inline VALUES table (integers, strings)."""
    body = ", ".join("(" + ", ".join(literal(x) for x in r) + ")" for r in rows)
    return f"SELECT * FROM (VALUES {body}) AS _adb_v({', '.join(names)})"


def _packed(subset: tuple[int, ...], bits: list[int]) -> list[str]:
    """The codes of ``subset`` packed into as few BIGINT expressions as their widths allow."""
    out, expr, used = [], "", 0
    for j in subset:
        if expr and used + bits[j] > _WORD:
            out.append(expr)
            expr, used = "", 0
        expr = f"c{j}" if not expr else f"({expr}) * {1 << bits[j]} + c{j}"
        used += bits[j]
    return out + [expr]


def _check_args(keys: list[str], cols: dict[str, str], label: str, max_size: Any, dis_fraction: Any,
                threshold: Any) -> int:
    if not keys:
        raise InputError("suda2 needs at least one key variable")
    for k in keys:
        if k not in cols:
            raise InputError(f"key variable {k!r} not found in {label}; its columns are: {', '.join(cols)}")
        if k.startswith(RESERVED_PREFIX):
            raise InputError(f"column {k!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")
    dup = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    if dup is not None:
        raise InputError(f"key variable {dup!r} is given twice")
    m = len(keys) if max_size is None else max_size
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= len(keys):
        raise InputError(f"max_size must be an integer from 1 to the number of keys ({len(keys)}), got {max_size!r}")
    if isinstance(dis_fraction, bool) or not isinstance(dis_fraction, (int, float)) or not 0 < dis_fraction < 1:
        raise InputError(f"dis_fraction (the sampling fraction) must lie in (0, 1), got {dis_fraction!r}")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                  or not 0 < threshold <= 1):
        raise InputError(f"the DIS-score threshold must lie in (0, 1], got {threshold!r}")
    widest = max(math.comb(len(keys), z) for z in range(1, m + 1))
    if widest > MAX_SUBSETS:
        raise InputError(f"{len(keys)} keys with max_size {m} make {widest} subsets of one size (at most "
                         f"{MAX_SUBSETS}); give a smaller max_size")
    return m


def suda2(eng: Engine | Any, table: str, keys: list[str] | str, *, max_size: int | None = None,
          dis_fraction: float = 0.01, person: str | None = None, threshold: float | None = None,
          scores_table: str | None = None, msus_table: str | None = None) -> dict[str, Any]:
    """SUDA2 of ``table`` (a table, view or data file) over the key variables ``keys`` (see the
    module's definitions). ``eng``: an engine, or anything :func:`anonydb.connect` takes.

    Returns ``keys``, ``max_size`` (M, default all keys as sdcMicro), ``unit`` ("records" or
    "persons"), ``records`` (the number of units), ``msus`` (size -> number of MSUs of that size,
    for every searched size), ``records_with_msu``, ``score`` and ``dis_score`` ({"max", "mean"}
    over all units), ``contribution`` (key -> percent of the total score; 0 without any MSU),
    ``distribution`` (units per DIS-score bin: at least ``dis_score_at_least`` and below
    ``dis_score_below``; the last bin holds the positive scores below 0.1, the units without an MSU
    are in no bin), ``sample_uniques`` (U), ``pairs`` (P), ``dis`` (Dis), ``dis_fraction``,
    ``threshold`` and ``records_at_risk`` (the units whose DIS score is at least ``threshold``;
    None without one).

    ``scores_table``: also write that table (replaced if it exists), one row per record (``row_id``,
    the engine's row id: DuckDB's rowid of a base table) or per person (the person column), with
    ``score``, ``dis_score`` and ``contribution_<key>`` (the unit's share of its score per key).
    ``msus_table``: also write that table, one row per MSU: the record's ``row_id`` (or the
    person), ``size`` and ``msu`` (its keys in the order given, joined by ", ")."""
    eng = connect(eng)
    key_list = split_list(keys, "key variables")
    with eng.scratch("suda") as s:
        rel = open_source(eng, table, scratch=s)
        cols = dict(eng.columns(rel))
        m = _check_args(key_list, cols, str(table), max_size, dis_fraction, threshold)
        if person is not None:
            validate_person(eng, rel, person, key_list, None, label=str(table))
            if person in ("score", "dis_score", "size", "msu") and (scores_table or msus_table):
                raise InputError(f"person column {person!r} clashes with a column of the scores or MSU table; rename it")
        units, ids, counts = _units(eng, s, rel, key_list, person)
        if not counts[0]:
            raise InputError(f"{table} has no rows: there is nothing to assess")
        found, msus = _search(eng, s, units, len(key_list), m, person is not None)
        result = _scores(eng, s, found, key_list, m, counts, float(dis_fraction), threshold)
        if scores_table is not None:
            _write_scores(eng, units, result["_scored"], key_list, person, ids, scores_table)
        if msus_table is not None:
            _write_msus(eng, s, units, found, key_list, m, person, msus_table)
        result.pop("_scored", None)
        result["unit"] = "records" if person is None else "persons"
        result["msus"] = {z: msus.get(z, 0) for z in range(1, m + 1)}
        return result


def _units(eng: Engine, s: Any, rel: str, keys: list[str], person: str | None) -> tuple[str, tuple, tuple]:
    """The table of units (uid, n, c0..c<K-1>[, person]), the records' ids (relation, id column),
    and (number of units, U, P)."""
    kc = ", ".join(ident(c) for c in keys)
    if person is None:
        base, rid = eng.row_ids(s, rel)
        rid_sql = "rowid" if rid == "rowid" else ident(rid)
        src = s.table(f"SELECT {kc}, CAST(min({rid_sql}) AS BIGINT) AS _adb_uid, CAST(count(*) AS BIGINT) AS _adb_n "
                      f"FROM {ident(base)} GROUP BY {kc}")
        units = _coded(s, src, keys, "x._adb_uid AS uid, x._adb_n AS n")
        row = eng.fetch_rows(f"SELECT sum(n), sum(CASE WHEN n = 1 THEN 1 ELSE 0 END), "
                             f"sum(CASE WHEN n = 2 THEN 2 ELSE 0 END) FROM {ident(units)}")[1][0]
        return units, (base, rid_sql), tuple(int(x or 0) for x in row)
    pc = ident(person)
    src = s.table(f"SELECT {pc}, CAST(dense_rank() OVER (ORDER BY {pc}) AS BIGINT) AS _adb_uid, {kc} FROM "
                  f"(SELECT DISTINCT {pc}, {kc} FROM {ident(rel)}) AS d")
    units = _coded(s, src, keys, f"x._adb_uid AS uid, CAST(1 AS BIGINT) AS n, x.{pc}")
    allc = ", ".join(f"c{j}" for j in range(len(keys)))
    on = " AND ".join(f"a.c{j} = b.c{j}" for j in range(len(keys)))
    row = eng.fetch_rows(
        f"SELECT count(*), sum(CASE WHEN r = 1 THEN 1 ELSE 0 END), sum(CASE WHEN r = 2 THEN 1 ELSE 0 END) FROM "
        f"(SELECT a.uid, min(b.np) AS r FROM {ident(units)} AS a JOIN (SELECT {allc}, count(DISTINCT uid) AS np "
        f"FROM {ident(units)} GROUP BY {allc}) AS b ON {on} GROUP BY a.uid) AS t")[1][0]
    return units, (rel, pc), tuple(int(x or 0) for x in row)


def _coded(s: Any, src: str, keys: list[str], head: str) -> str:
    """``src`` with each key replaced by its code c<j>: its rank among the key's values, 0 for NULL."""
    joins, codes = [], []
    for j, c in enumerate(keys):
        d = s.table(f"SELECT v, CAST(row_number() OVER (ORDER BY v) AS BIGINT) AS code FROM (SELECT DISTINCT "
                    f"{ident(c)} AS v FROM {ident(src)} WHERE {ident(c)} IS NOT NULL) AS d")
        joins.append(f"LEFT JOIN {ident(d)} AS d{j} ON d{j}.v = x.{ident(c)}")
        codes.append(f"coalesce(d{j}.code, 0) AS c{j}")
    return s.table(f"SELECT {head}, {', '.join(codes)} FROM {ident(src)} AS x {' '.join(joins)}")


def _search(eng: Engine, s: Any, units: str, k: int, m: int, persons: bool) -> tuple[str, dict[int, int]]:
    """Every unit's MSUs (uid, mask) of up to ``m`` keys, and their number per size."""
    maxes = eng.fetch_rows(f"SELECT {', '.join(f'max(c{j})' for j in range(k))} FROM {ident(units)}")[1][0]
    bits = [max(1, int(x or 0).bit_length()) for x in maxes]
    subsets = {z: list(combinations(range(k), z)) for z in range(1, m + 1)}
    below = None
    if persons and m > 1:  # (subset, proper subset) pairs of up to m keys
        below = s.table(_values([(_mask(a), _mask(b)) for z in range(2, m + 1) for a in subsets[z]
                                 for y in range(1, z) for b in combinations(a, y)], ["sup", "sub"]))
    found, msus, live, layout = None, {}, units, None
    for size in range(1, m + 1):
        msu = s.table(_msu_statement(live, subsets[size], bits, layout, persons))
        if below is not None and found is not None:  # a person's SU over a superset of one of its MSUs
            msu = s.table(f"SELECT a.mask, a.uid FROM {ident(msu)} AS a WHERE NOT EXISTS (SELECT 1 FROM "
                          f"{ident(found)} AS f JOIN {ident(below)} AS x ON x.sub = f.mask "
                          f"WHERE f.uid = a.uid AND x.sup = a.mask)")
        msus[size] = int(eng.scalar(f"SELECT count(*) FROM {ident(msu)}"))
        if found is None:
            found = msu
        elif msus[size]:
            found = s.table(f"SELECT mask, uid FROM {ident(found)} UNION ALL SELECT mask, uid FROM {ident(msu)}")
        if not persons and size < m:
            live, layout = _next_live(s, live, msu, layout, subsets[size], k)
            if not eng.scalar(f"SELECT count(*) FROM {ident(live)} WHERE n = 1"):
                break
    return found, msus


def _layout(subsets: list[tuple[int, ...]]) -> dict[tuple[int, ...], tuple[int, int]]:
    """Subset -> (word, bit value) of its flag in the records' bitmaps of SUs of its size."""
    return {sub: (i // _WORD, 1 << (i % _WORD)) for i, sub in enumerate(subsets)}


def _words(layout: dict[tuple[int, ...], tuple[int, int]], subs: Any) -> dict[int, int]:
    """word -> the OR of the flags of ``subs``."""
    out: dict[int, int] = {}
    for x in subs:
        w, b = layout[x]
        out[w] = out.get(w, 0) | b
    return out


def _over_su(layout: dict[tuple[int, ...], tuple[int, int]], sub: tuple[int, ...], alias: str = "") -> str:
    """SQL: the record is an SU on a subset of ``sub`` one key smaller (its flag set in v<word>)."""
    lits = _words(layout, combinations(sub, len(sub) - 1))
    return " OR ".join(f"({alias}v{w} & {b}) <> 0" for w, b in sorted(lits.items()))


def _next_live(s: Any, live: str, msu: str, layout: Any, subsets: list[tuple[int, ...]], k: int) -> tuple[str, Any]:
    """The records for the next size, each with its bitmap of SUs of this size (v0, v1, ...): an SU
    is an MSU of this size or lies over an SU one key smaller. A record that is an SU on every
    subset of this size is left out: every larger subset holds an SU of it, so it can have no more
    MSU, and leaving it out changes no other group."""
    new = _layout(subsets)
    nwords = max(w for w, _ in new.values()) + 1
    flags = s.table(_values([(_mask(sub), *[b if w == i else 0 for i in range(nwords)]) for sub, (w, b) in new.items()],
                            ["mask"] + [f"b{i}" for i in range(nwords)]))
    sums = ", ".join(f"sum(i.b{w}) AS m{w}" for w in range(nwords))
    mine = s.table(f"SELECT a.uid, {sums} FROM {ident(msu)} AS a JOIN {ident(flags)} AS i ON i.mask = a.mask "
                   f"GROUP BY a.uid")
    words = []
    for w in range(nwords):
        over = [] if layout is None else [f"CASE WHEN {_over_su(layout, sub, 'l.')} THEN {b} ELSE 0 END"
                                          for sub, (ww, b) in new.items() if ww == w]
        words.append(" + ".join(over + [f"coalesce(f.m{w}, 0)"]) + f" AS v{w}")
    every = " AND ".join(f"v{w} = {b}" for w, b in sorted(_words(new, subsets).items()))
    nxt = s.table(f"SELECT * FROM (SELECT l.uid, l.n, {', '.join(f'l.c{j}' for j in range(k))}, {', '.join(words)} "
                  f"FROM {ident(live)} AS l LEFT JOIN {ident(mine)} AS f ON f.uid = l.uid) AS x WHERE NOT ({every})")
    for t in (flags, mine) + ((live,) if layout is not None else ()):
        s.drop(t)
    return nxt, new


def _msu_statement(live: str, subsets: list[tuple[int, ...]], bits: list[int], layout: Any, persons: bool) -> str:
    """The MSUs (mask, uid) over the subsets of one size, one aggregation per subset. Records: the
    aggregation of S leaves out the records that are an SU on an (s-1)-subset of S (``layout``),
    so its unique groups are MSUs. Persons: the SUs (the caller removes the non-minimal ones)."""
    branches = []
    for sub in subsets:
        where = " AND ".join(f"c{j} > 0" for j in sub)
        if layout is not None:
            where += f" AND NOT ({_over_su(layout, sub)})"
        one = "min(uid) = max(uid)" if persons else "sum(n) = 1"
        branches.append(f"SELECT CAST({_mask(sub)} AS BIGINT) AS mask, min(uid) AS uid FROM {ident(live)} "
                        f"WHERE {where} GROUP BY {', '.join(_packed(sub, bits))} HAVING {one}")
    union = "\nUNION ALL ".join(branches)
    return f"SELECT DISTINCT mask, uid FROM ({union}) AS g" if persons else union


def _scores(eng: Engine, s: Any, found: str, keys: list[str], m: int, counts: tuple, dis_fraction: float,
            threshold: float | None) -> dict[str, Any]:
    """The per-unit scores (the scratch table ``_scored``: uid, score, r<j>, dis_score) and the summary."""
    k, k_eff = len(keys), max(len(keys), 3)
    n_units, u_count, p_count = counts
    dis, q, odds = dis_constants(u_count, p_count, dis_fraction, k_eff)
    info = s.table(_values([(_mask(sub), math.factorial(k_eff - z), *[int(j in sub) for j in range(k)])
                            for z in range(1, m + 1) for sub in combinations(range(k), z)],
                           ["mask", "w"] + [f"f{j}" for j in range(k)]))
    raw = ", ".join(f"CAST(sum(i.f{j} * i.w) AS DOUBLE) AS r{j}" for j in range(k))
    per = s.table(f"SELECT a.uid, CAST(sum(i.w) AS DOUBLE) AS score, {raw} FROM {ident(found)} AS a "
                  f"JOIN {ident(info)} AS i ON i.mask = a.mask GROUP BY a.uid")
    one = "CAST(1 AS DOUBLE)"  # not 1.0: Spark reads that as a DECIMAL
    adj = float(eng.scalar(f"SELECT coalesce(sum({one} / power(score, {literal(q)})), 0) FROM {ident(per)}") or 0.0)
    dis_sql = (f"{one} / ({one} + CAST({literal(odds)} AS DOUBLE) / (power(score, {literal(q)}) * "
               f"CAST({literal(adj)} AS DOUBLE)))" if adj
               else "CAST(0 AS DOUBLE)")
    scored = s.table(f"SELECT *, {dis_sql} AS dis_score FROM {ident(per)}")
    bins = ", ".join(f"sum(CASE WHEN dis_score >= {literal(b)} AND dis_score > 0"
                     + (f" AND dis_score < {literal(DIS_BINS[i - 1])}" if i else "") + " THEN 1 ELSE 0 END)"
                     for i, b in enumerate(DIS_BINS))
    risky = "0" if threshold is None else f"sum(CASE WHEN dis_score >= {literal(float(threshold))} THEN 1 ELSE 0 END)"
    row = eng.fetch_rows(f"SELECT count(*), sum(score), max(score), sum(dis_score), max(dis_score), "
                         f"{', '.join(f'sum(r{j})' for j in range(k))}, {bins}, {risky} FROM {ident(scored)}")[1][0]
    total, dis_total = float(row[1] or 0.0), float(row[3] or 0.0)
    raws = [float(x or 0.0) for x in row[5:5 + k]]
    binned = [int(x or 0) for x in row[5 + k:5 + k + len(DIS_BINS)]]
    return {
        "keys": list(keys), "max_size": m, "unit": "records",
        "records": n_units, "msus": {}, "records_with_msu": int(row[0]),
        "score": {"max": float(row[2] or 0.0), "mean": total / n_units},
        "dis_score": {"max": float(row[4] or 0.0), "mean": dis_total / n_units},
        "contribution": {c: (100.0 * r / total if total else 0.0) for c, r in zip(keys, raws)},
        "distribution": [{"dis_score_at_least": b, "dis_score_below": DIS_BINS[i - 1] if i else None, "records": c}
                         for i, (b, c) in enumerate(zip(DIS_BINS, binned))],
        "sample_uniques": u_count, "pairs": p_count, "dis": dis, "dis_fraction": dis_fraction,
        "threshold": threshold, "records_at_risk": None if threshold is None else int(row[-1] or 0),
        "_scored": scored,
    }


def _write_scores(eng: Engine, units: str, scored: str, keys: list[str], person: str | None,
                  ids: tuple[str, str], out: str) -> None:
    """One row per record (row_id) or person: score, dis_score, contribution_<key>. A record that
    scores is the only one of its key combination, whose uid is its row id."""
    share = ", ".join(f"CASE WHEN t.score > 0 THEN t.r{j} / t.score ELSE 0 END AS {ident('contribution_' + c)}"
                      for j, c in enumerate(keys))
    if person is None:
        rel, rid = ids
        src = f"(SELECT {rid} AS row_id FROM {ident(rel)}) AS p LEFT JOIN {ident(scored)} AS t ON t.uid = p.row_id"
        head = "p.row_id"
    else:
        pc = ident(person)
        src = f"(SELECT DISTINCT uid, {pc} FROM {ident(units)}) AS p LEFT JOIN {ident(scored)} AS t ON t.uid = p.uid"
        head = f"p.{pc}"
    eng.create_table_as(out, f"SELECT {head}, coalesce(t.score, 0) AS score, coalesce(t.dis_score, 0) AS dis_score, "
                             f"{share} FROM {src}", replace=True)


def _write_msus(eng: Engine, s: Any, units: str, found: str, keys: list[str], m: int, person: str | None,
                out: str) -> None:
    """One row per MSU: the record's row_id (a scoring record's uid) or the person, size, msu."""
    names = s.table(_values([(_mask(sub), z, ", ".join(keys[j] for j in sub)) for z in range(1, m + 1)
                             for sub in combinations(range(len(keys)), z)], ["mask", "size", "msu"]))
    if person is None:
        head, src = "f.uid AS row_id", ""
    else:
        pc = ident(person)
        head, src = f"p.{pc}", f" JOIN (SELECT DISTINCT uid, {pc} FROM {ident(units)}) AS p ON p.uid = f.uid"
    eng.create_table_as(out, f"SELECT {head}, n.size, n.msu FROM {ident(found)} AS f JOIN {ident(names)} AS n "
                             f"ON n.mask = f.mask{src}", replace=True)
