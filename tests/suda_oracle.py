"""Brute-force SUDA2 oracle (sdcMicro's suda2 definitions), in plain Python: no anonydb import.

Records are tuples over the key variables; None is a missing value (sdcMicro's NA). Every subset S
of at most ``max_size`` keys is tried for every record:

* a record is a sample unique (SU) on S when it has no missing value on S and no other record has
  its values on S (a missing value equals nothing); an MSU is an SU on S with no SU on a proper
  subset of S (it suffices that no (|S|-1)-subset is an SU, a superset of an SU being an SU);
* score = sum over the record's MSUs S of (K - |S|)!, K the number of keys, at least 3
  (sdcMicro pads fewer keys with constant columns: ``g_ab`` in src/Suda2.h, original_scores);
* contribution of key v in a record = sum over its MSUs S containing v of (K - |S|)!, over its
  score; the attribute contribution = 100 * sum of those numerators / sum of scores;
* DIS: U = records unique on all keys (a missing value as a value), P = records in pairs on all
  keys, Dis = U f / (U f + P (1 - f)) in single precision, Q = 1 + (8 - K) / 20 in single
  precision, dis = 1 / (1 + (U / Dis - U) / (score^Q * sum over scored records of score^-Q)).

With ``persons`` (one id per record) the unit is a person: on S, a person is an SU when some
S-value of one of its records is held by no other person's record; the person's MSUs, score and
contributions follow; U / P count persons whose rarest full-key value is held by 1 / 2 persons.
"""

from __future__ import annotations

import math
import struct
from collections import Counter, defaultdict
from itertools import combinations


def f32(x: float) -> float:
    """``x`` rounded to IEEE single precision (sdcMicro's ``float`` arithmetic)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def weight(k_eff: int, size: int) -> int:
    return math.factorial(k_eff - size)


def msus(rows: list[tuple], max_size: int | None = None, persons: list | None = None) -> dict:
    """unit -> set of MSUs (frozensets of key positions); units are row positions, or persons."""
    k = len(rows[0])
    m = k if max_size is None else max_size
    unit = list(range(len(rows))) if persons is None else list(persons)
    found: dict = {u: set() for u in unit}
    su_prev: dict = {}  # unit -> set of SUs one size smaller
    for size in range(1, m + 1):
        su_now: dict = defaultdict(set)
        for s in combinations(range(k), size):
            holders: dict = defaultdict(set)
            for i, r in enumerate(rows):
                vals = tuple(r[j] for j in s)
                if None not in vals:
                    holders[vals].add(unit[i])
            for hs in holders.values():
                if len(hs) == 1:
                    su_now[next(iter(hs))].add(frozenset(s))
        for u, subsets in su_now.items():
            prev = su_prev.get(u, set())
            for s in subsets:
                if not any(s - {j} in prev for j in s):
                    found[u].add(s)
        su_prev = su_now
    return found


def dis_parameters(rows: list[tuple], dis_fraction: float, persons: list | None = None) -> tuple[int, int]:
    """(U, P): units unique on all keys, units in pairs on all keys (a missing value as a value)."""
    if persons is None:
        c = Counter(rows)
        return sum(1 for n in c.values() if n == 1), sum(2 for n in c.values() if n == 2)
    holders: dict = defaultdict(set)
    for r, p in zip(rows, persons):
        holders[r].add(p)
    rarest: dict = {}
    for r, p in zip(rows, persons):
        rarest[p] = min(rarest.get(p, 10**9), len(holders[r]))
    return sum(1 for v in rarest.values() if v == 1), sum(1 for v in rarest.values() if v == 2)


def suda2(rows: list[tuple], max_size: int | None = None, dis_fraction: float = 0.01,
          persons: list | None = None) -> dict:
    """Per-unit MSUs, scores, DIS scores and contributions, and the attribute contributions."""
    k = len(rows[0])
    k_eff = max(k, 3)
    found = msus(rows, max_size, persons)
    score = {u: float(sum(weight(k_eff, len(s)) for s in ss)) for u, ss in found.items()}
    raw = {u: [float(sum(weight(k_eff, len(s)) for s in ss if j in s)) for j in range(k)] for u, ss in found.items()}
    total = sum(score.values())
    attribute = [100 * sum(raw[u][j] for u in raw) / total if total else 0.0 for j in range(k)]
    u_count, p_count = dis_parameters(rows, dis_fraction, persons)
    f = f32(dis_fraction)
    a = f32(f32(u_count) * f)
    dis = f32(a / f32(a + f32(f32(p_count) * f32(1.0 - f)))) if u_count else 0.0
    q = f32(1.0 + f32(f32(8.0 - k_eff) / 20.0))
    adj = sum(1.0 / sc ** q for sc in score.values() if sc)
    odds = f32(f32(u_count / dis) - u_count) if u_count else 0.0
    dis_score = {u: (1.0 / (1.0 + odds / (sc ** q * adj)) if sc else 0.0) for u, sc in score.items()}
    return {"msus": found, "score": score, "dis_score": dis_score, "attribute": attribute,
            "contribution": {u: [x / score[u] if score[u] else 0.0 for x in raw[u]] for u in raw},
            "U": u_count, "P": p_count}
