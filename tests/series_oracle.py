"""Brute-force reference for composed verification of several releases [issue 51].

Sources: the survey (seeds/004) §6.1 (Example 6.1, Table VI: the join attack on two projection
views), §6.2 (Example 6.2: Wang & Fung's lossy join, join attributes matched "on the same
generalization path"), §6.3 (Examples 6.3/6.4, Table VIII; Byun et al. 2006 for insertions;
Xiao & Tao 2007 m-invariance for insertions and deletions, counterfeits allowed);
spec-presence-survey.md §3.2 "Extended-scenario models" and §3.6 (Table VI, Table VIII, erratum E12).

Plain Python, standard library only, shares no code with anonydb: every check is written as the
definition reads, person by person and pair by pair.

Data model
----------
A *release* is ``{"members": {person: group}, "values": {group: [sensitive values]},
"counterfeits": {group: int}}`` (``counterfeits`` optional). ``values[group]`` is the multiset the
group publishes, counterfeit values included: Xiao & Tao publish the counterfeits inside the groups
and only their number per group in a separate auxiliary table, so the attacker sees every value of
``values[group]`` and cannot tell which are counterfeit. A *series* is a list of releases, oldest
first; a person may be absent from some releases (deleted, or inserted later).

The attacker (survey §6.3: "the attacker knows the timestamp and QID of the victim, so the attacker
knows exactly which releases contain the victim's data record") finds the victim's group in every
release holding the victim and intersects the groups' sensitive-value sets.
"""

from __future__ import annotations

from collections import Counter


# --------------------------------------------------------------------------------------------
# helpers


def _order(items):
    """Deterministic order for persons / groups of mixed types (same-type values compare)."""
    return sorted(items, key=lambda x: (type(x).__name__, x))


def _values(release: dict, group) -> list:
    return list(release.get("values", {}).get(group, []))


def signature(release: dict, group) -> frozenset:
    """Xiao & Tao's signature of a group: the set of distinct sensitive values it publishes
    (counterfeits included, since they are published inside the group)."""
    return frozenset(_values(release, group))


def holding(series: list[dict], person) -> list[int]:
    """Indices of the releases that hold ``person`` (the victim's published lifespan)."""
    return [i for i, r in enumerate(series) if person in r.get("members", {})]


def well_formed(release: dict) -> list[tuple]:
    """Consistency of one release: every group of a member has values, and the published multiset
    has exactly one value per member plus one per counterfeit (Xiao & Tao's auxiliary table gives
    the counterfeit count per group). Returns ``(group, members, counterfeits, published)`` for
    each group where ``members + counterfeits != published``; [] when consistent."""
    members = Counter(release.get("members", {}).values())
    cf = release.get("counterfeits", {}) or {}
    bad = []
    for g in _order(set(members) | set(release.get("values", {})) | set(cf)):
        n, c, v = members.get(g, 0), cf.get(g, 0), len(_values(release, g))
        if n + c != v or c < 0:
            bad.append((g, n, c, v))
    return bad


# --------------------------------------------------------------------------------------------
# 1-3: the intersection attack, and Byun et al.'s insert-only composition


def intersection(series: list[dict], person) -> set:
    """The victim's remaining sensitive values: the intersection of ``set(values[group])`` over every
    release holding ``person`` (survey §6.3, Example 6.4: Beth is in T1's {Cancer, Diabetes} group
    and T2's {Cancer, Fever} group, so she "must have contracted Cancer"). Empty set when no release
    holds the person."""
    out = None
    for i in holding(series, person):
        r = series[i]
        s = set(_values(r, r["members"][person]))
        out = s if out is None else out & s
    return set() if out is None else out


def exposed(series: list[dict], l: int) -> dict:
    """Persons of the LAST release whose intersection across the series leaves fewer than ``l``
    distinct sensitive values: person -> number of values left."""
    if not series:
        return {}
    out = {}
    for p in _order(series[-1].get("members", {})):
        n = len(intersection(series, p))
        if n < l:
            out[p] = n
    return out


def byun_exposed(series: list[dict], l: int) -> dict:
    """Byun et al. 2006 (survey §6.3, spec §3.2): "given any previous release T_i and the current
    release T_p together, there are at least l distinct sensitive values in the remaining records
    that could potentially be the victim's record". Pairwise, for each earlier release r and the
    last release, over the persons held by both: ``set(values in r) & set(values in last)``.
    Returns person -> (earliest earlier release index r that leaves fewer than l values, the number
    of values that pair leaves)."""
    if len(series) < 2:
        return {}
    last = series[-1]
    out = {}
    for p in _order(last.get("members", {})):
        s_last = set(_values(last, last["members"][p]))
        for r_i, r in enumerate(series[:-1]):
            if p not in r.get("members", {}):
                continue
            n = len(s_last & set(_values(r, r["members"][p])))
            if n < l:
                out[p] = (r_i, n)
                break
    return out


def new_record_values(series: list[dict], r_i: int, person) -> Counter:
    """Example 6.3's difference attack on a person inserted after release ``r_i`` (held by the last
    release, not by release ``r_i``). The victim's group g in the last release holds old records; every
    group H of release r_i whose members all sit in g (and that has no counterfeits) contributes its
    whole published multiset to g, so the attacker subtracts it ("the first two records in T2 must
    be old records from T1"). Returns the remaining multiset of values that may be the victim's."""
    last, r = series[-1], series[r_i]
    g = last["members"][person]
    left = Counter(_values(last, g))
    in_g = {p for p, grp in last["members"].items() if grp == g}
    by_h: dict = {}
    for p, h in r.get("members", {}).items():
        by_h.setdefault(h, set()).add(p)
    cf = r.get("counterfeits", {}) or {}
    for h in _order(by_h):
        if by_h[h] <= in_g and not cf.get(h, 0):
            left -= Counter(_values(r, h))
    return +left


def byun_new_exposed(series: list[dict], l: int) -> dict:
    """Persons of the last release absent from some earlier release r for whom
    :func:`new_record_values` leaves fewer than ``l`` distinct values: person -> (earliest such r,
    distinct values left). Byun et al.'s requirement covers this through "the difference and
    intersection of the sensitive values in any two comparable qid groups"."""
    if len(series) < 2:
        return {}
    last = series[-1]
    out = {}
    for p in _order(last.get("members", {})):
        for r_i, r in enumerate(series[:-1]):
            if p in r.get("members", {}):
                continue
            n = len(new_record_values(series, r_i, p))
            if n < l:
                out[p] = (r_i, n)
                break
    return out


# --------------------------------------------------------------------------------------------
# 4-5: m-uniqueness and m-invariance (Xiao & Tao 2007)


def m_unique(release: dict, m: int) -> list:
    """Groups failing m-uniqueness (survey §6.3 condition (1): "every qid group in any T_i contains at
    least m records and all records in qid have different sensitive values"). Counterfeits count as
    records: they are published inside the group. Groups are those of the members and of
    ``values``; returned in sorted order."""
    groups = set(release.get("members", {}).values()) | set(release.get("values", {}))
    bad = []
    for g in _order(groups):
        vals = _values(release, g)
        if len(vals) < m or len(set(vals)) != len(vals):
            bad.append(g)
    return bad


def m_invariant(series: list[dict], m: int) -> list[tuple]:
    """Violations of m-invariance (survey §6.3; spec §3.2: "every qid group has >= m records with
    all-distinct sensitive values, and a record's groups across its lifespan have identical
    sensitive-value sets (counterfeits allowed)").

    Release by release, oldest first, the list holds:
      * ``("m-unique", i, group)`` for each group of release i failing :func:`m_unique`, then
      * ``(person, i)`` for each person (sorted) whose group in release i has a signature different
        from the signature of their group in the first release holding them (their signature is
        fixed when they are first published).
    ``[]`` means the series is m-invariant."""
    out: list[tuple] = []
    first: dict = {}
    for i, r in enumerate(series):
        out.extend(("m-unique", i, g) for g in m_unique(r, m))
        for p in _order(r.get("members", {})):
            sig = signature(r, r["members"][p])
            if p not in first:
                first[p] = sig
            elif sig != first[p]:
                out.append((p, i))
    return out


# --------------------------------------------------------------------------------------------
# 6: the join attack on multiple views (Example 6.1) and the lossy join (Example 6.2)


def _cols(c) -> list:
    return [c] if isinstance(c, str) else list(c)


def _path(v, tax: dict) -> set:
    """v and its ancestors in a taxonomy given as {value: parent}; '*' is the root."""
    seen = [v]
    while v in tax and tax[v] not in seen:
        v = tax[v]
        seen.append(v)
    return set(seen)


def join_match(va, vb, column: str, parents: dict | None = None) -> bool:
    """Wang & Fung's match (survey Example 6.2): equal values, or with a taxonomy for the column,
    values "on the same generalization path" (one is an ancestor of, or equal to, the other);
    the root '*' matches everything."""
    if va == vb:
        return True
    tax = (parents or {}).get(column)
    if tax is None:
        return False
    if va == "*" or vb == "*":
        return True
    return va in _path(vb, tax) or vb in _path(va, tax)


def candidate_pairs(view_a, view_b, x_a, x_b, join, parents=None) -> dict:
    """link -> sorted list of (row index in view a, row index in view b) of the candidate pairs.

    The attacker knows person P's X values: P's group in view a is the rows whose ``x_a`` columns equal
    those of P's row (the ``link`` column, hidden from the attacker, says which row is P's); the
    same in view b. The candidates are the pairs of the two groups whose ``join`` columns all match
    (:func:`join_match`). Only persons present in both views."""
    x_a, x_b, join = _cols(x_a), _cols(x_b), _cols(join)
    row_a = {r["link"]: r for r in view_a}
    row_b = {r["link"]: r for r in view_b}
    out = {}
    for link in _order(set(row_a) & set(row_b)):
        ka = tuple(row_a[link][c] for c in x_a)
        kb = tuple(row_b[link][c] for c in x_b)
        ga = [i for i, r in enumerate(view_a) if tuple(r[c] for c in x_a) == ka]
        gb = [j for j, r in enumerate(view_b) if tuple(r[c] for c in x_b) == kb]
        out[link] = [(i, j) for i in ga for j in gb
                     if all(join_match(view_a[i][c], view_b[j][c], c, parents) for c in join)]
    return out


def join_candidates(view_a, view_b, x_a, x_b, join, sensitive, parents=None) -> dict:
    """link -> (number of candidate pairs, set of the ``sensitive`` values of those pairs), the
    sensitive value taken from whichever view has the column (view b if both do). Survey Example
    6.1: with Table VI, the {40, France} person has 1 candidate and the {30, US} persons 4 pairs,
    all Cancer."""
    in_b = any(sensitive in r for r in view_b)
    in_a = any(sensitive in r for r in view_a)
    if not (in_a or in_b):
        raise ValueError(f"no view has the sensitive column {sensitive!r}")
    out = {}
    for link, pairs in candidate_pairs(view_a, view_b, x_a, x_b, join, parents).items():
        vals = {(view_b[j] if in_b else view_a[i])[sensitive] for i, j in pairs}
        out[link] = (len(pairs), vals)
    return out


def join_exposed(candidates: dict, k: int, l: int = 1) -> dict:
    """Persons whose join leaves fewer than ``k`` candidate pairs or fewer than ``l`` distinct
    sensitive values (issue 51: "the persons consistent with their published rows in all views ...
    number at least k, and the sensitive values they leave still meet the model"):
    link -> (pairs, distinct values)."""
    return {p: (n, len(s)) for p, (n, s) in candidates.items() if n < k or len(s) < l}
