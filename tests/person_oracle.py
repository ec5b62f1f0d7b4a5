"""A brute-force oracle for the privacy models judged over record owners (``check(person=...)``).

Plain Python from the definitions (anonydb.models.base and each model's docstring); it imports
nothing from anonydb, so it shares no code, and no mistake, with the SQL it checks.

A table is a list of row dicts with a person column p, quasi-identifiers and a sensitive
attribute S (NULL, None here, is a value of its own, as is a NULL QI value). A group E is the
set of rows sharing one QI tuple; one person's records may fall in several groups. For a group E:

* n(E)   = distinct persons with a record in E;
* c_s(E) = distinct persons of E with a record whose sensitive value is s;
* m(E)   = sum_s c_s(E), the distinct (person, value) facts of E;
* d(E)   = the number of values s with c_s(E) > 0; mx(E) = max_s c_s(E).

For the whole table T: N = distinct persons, C_s = distinct persons holding s, M = sum_s C_s.

Per group value, verdict, and the table's achieved value:

* k-anonymity (k):        value n;           holds n >= k;                 achieved k = min n.
* distinct l (l):         value d;           holds d >= l;                 achieved l = min d.
* probabilistic l (l):    value n / mx;      holds mx / n <= 1 / l;        achieved l = min n / mx (exact).
* entropy l (l):          H = -sum_s (c_s/m) ln(c_s/m); holds H >= ln l - 1e-9; value exp(H);
                          achieved l = exp(min H).
* recursive (c,l):        counts sorted descending r_1 >= ... >= r_d; holds when d >= l and
                          r_1 < c (r_l + ... + r_d) (strict); value the largest l' in 1..d that
                          holds with this c (0 if none); achieved l = min value.
* (alpha,k):              value mx / n;      holds n >= k and mx / n <= alpha; achieved
                          alpha = max mx / n (exact), k = min n.
* delta-disclosure:       value max over the table's values s of |ln((c_s/n) / (C_s/N))|, +inf
                          when E lacks a value of T; holds value < delta; achieved = max value.
* t-closeness, equal:     P(s) = c_s/m, Q(s) = C_s/M; EMD = 1/2 sum_s |P(s) - Q(s)| (exact).
* t-closeness, ordered:   the table's distinct values sorted (None last) v_1 < ... < v_D;
                          EMD = 1/(D-1) sum_i |sum_{j<=i} (P(v_j) - Q(v_j))|, 0 when D = 1 (exact).
                          Both: holds EMD <= t; achieved t = max EMD.

A verdict holds when every group holds; violating_groups counts the groups that do not;
violating_persons sums n(E) over them (a person in two violating groups counts in each, the
way the report's violating_rows sums group sizes), distinct_violating_persons counts each once.
With one record per person every value is the row-level definition.
"""

from __future__ import annotations

import math
from collections import defaultdict, namedtuple
from fractions import Fraction

ENTROPY_TOLERANCE = 1e-9

#: one model's outcome on a table
Outcome = namedtuple("Outcome", "holds achieved values ok violating_groups violating_persons "
                                "distinct_violating_persons")


def exact(x) -> Fraction:
    """A parameter as the exact fraction of the decimal the user wrote (0.1 -> 1/10)."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def sort_key(v):
    return (v is None, v)


class Group:
    """One QI group: its persons and, per sensitive value, the persons holding it."""

    def __init__(self, key):
        self.key = key
        self.persons: set = set()
        self.holders: dict = defaultdict(set)
        self.records = 0

    @property
    def n(self) -> int:
        return len(self.persons)

    @property
    def counts(self) -> dict:
        """c_s for every value s held in the group."""
        return {s: len(p) for s, p in self.holders.items()}

    @property
    def m(self) -> int:
        return sum(self.counts.values())

    @property
    def d(self) -> int:
        return len(self.holders)

    @property
    def mx(self) -> int:
        return max(self.counts.values())


class Table:
    """The groups of ``rows`` by ``qi`` and the whole table's person counts."""

    def __init__(self, rows: list[dict], qi: list[str], sensitive: str | None, person: str):
        self.rows = rows
        self.qi, self.sensitive, self.person = list(qi), sensitive, person
        self.groups: dict = {}
        holders: dict = defaultdict(set)
        for r in rows:
            key = tuple(r[q] for q in qi)
            g = self.groups.get(key)
            if g is None:
                g = self.groups[key] = Group(key)
            g.persons.add(r[person])
            g.records += 1
            if sensitive is not None:
                g.holders[r[sensitive]].add(r[person])
                holders[r[sensitive]].add(r[person])
        self.N = len({r[person] for r in rows})
        self.C = {s: len(p) for s, p in holders.items()}
        self.M = sum(self.C.values())
        self.domain = sorted(self.C, key=sort_key)

    # -- per-group values -------------------------------------------------------------------

    def entropy(self, g: Group) -> float:
        m = g.m
        return -sum((c / m) * math.log(c / m) for c in g.counts.values())

    def recursive_holds(self, g: Group, c, l: int) -> bool:
        r = sorted(g.counts.values(), reverse=True)
        return len(r) >= l and r[0] < exact(c) * sum(r[l - 1:])

    def recursive_value(self, g: Group, c) -> int:
        return max((lp for lp in range(1, g.d + 1) if self.recursive_holds(g, c, lp)), default=0)

    def delta_value(self, g: Group) -> float:
        counts = g.counts
        if any(s not in counts for s in self.C):
            return math.inf
        return max(abs(math.log(Fraction(counts[s], g.n) / Fraction(self.C[s], self.N))) for s in self.C)

    def p_q(self, g: Group) -> tuple[dict, dict]:
        counts, m = g.counts, g.m
        p = {s: Fraction(counts.get(s, 0), m) for s in self.domain}
        q = {s: Fraction(self.C[s], self.M) for s in self.domain}
        return p, q

    def emd_equal(self, g: Group) -> Fraction:
        p, q = self.p_q(g)
        return sum((abs(p[s] - q[s]) for s in self.domain), Fraction(0)) / 2

    def emd_ordered(self, g: Group) -> Fraction:
        p, q = self.p_q(g)
        D = len(self.domain)
        if D == 1:
            return Fraction(0)
        total, cum = Fraction(0), Fraction(0)
        for s in self.domain:
            cum += p[s] - q[s]
            total += abs(cum)
        return total / (D - 1)

    # -- models -----------------------------------------------------------------------------

    def judge(self, model: str, **params) -> Outcome:
        """``model``: k, l-distinct, l-probabilistic, l-entropy, l-recursive, alpha-k, delta,
        t-equal, t-ordered; params as check's (k, l, c, alpha, delta, t)."""
        gs = list(self.groups.values())
        if model == "k":
            values = {g.key: Fraction(g.n) for g in gs}
            ok = {g.key: g.n >= params["k"] for g in gs}
            achieved = {"k": min(g.n for g in gs)}
        elif model == "l-distinct":
            values = {g.key: Fraction(g.d) for g in gs}
            ok = {g.key: g.d >= params["l"] for g in gs}
            achieved = {"l": min(g.d for g in gs)}
        elif model == "l-probabilistic":
            values = {g.key: Fraction(g.n, g.mx) for g in gs}
            ok = {g.key: Fraction(g.mx, g.n) <= 1 / exact(params["l"]) for g in gs}
            achieved = {"l": min(values.values())}
        elif model == "l-entropy":
            h = {g.key: self.entropy(g) for g in gs}
            values = {k: math.exp(x) for k, x in h.items()}
            ok = {k: x >= math.log(params["l"]) - ENTROPY_TOLERANCE for k, x in h.items()}
            achieved = {"l": math.exp(min(h.values()))}
        elif model == "l-recursive":
            values = {g.key: Fraction(self.recursive_value(g, params["c"])) for g in gs}
            ok = {g.key: self.recursive_holds(g, params["c"], params["l"]) for g in gs}
            achieved = {"l": int(min(values.values()))}
        elif model == "alpha-k":
            values = {g.key: Fraction(g.mx, g.n) for g in gs}
            ok = {g.key: g.n >= params["k"] and values[g.key] <= exact(params["alpha"]) for g in gs}
            achieved = {"alpha": max(values.values()), "k": min(g.n for g in gs)}
        elif model == "delta":
            values = {g.key: self.delta_value(g) for g in gs}
            ok = {k: v < params["delta"] for k, v in values.items()}
            achieved = {"delta": max(values.values())}
        elif model in ("t-equal", "t-ordered"):
            emd = self.emd_equal if model == "t-equal" else self.emd_ordered
            values = {g.key: emd(g) for g in gs}
            ok = {k: v <= exact(params["t"]) for k, v in values.items()}
            achieved = {"t": max(values.values())}
        else:
            raise ValueError(f"unknown model {model!r}")
        bad = [g for g in gs if not ok[g.key]]
        return Outcome(holds=not bad, achieved=achieved, values=values, ok=ok, violating_groups=len(bad),
                       violating_persons=sum(g.n for g in bad),
                       distinct_violating_persons=len(set().union(*(g.persons for g in bad))))


# -- helpers for judging a release (tests/test_person_release.py) --------------------------------
def models_of(params: dict) -> list[tuple[str, dict]]:
    """The models of an anonymizer's keywords (k, l + l_variant/c, t + distance, alpha with k,
    delta) as (judge name, judge parameters) pairs for :meth:`Table.judge`; (alpha,k) also
    brings k-anonymity, as anonydb.checker.build_models does."""
    known = {"k", "l", "l_variant", "c", "t", "distance", "alpha", "delta"}
    if set(params) - known:
        raise ValueError(f"no oracle for {sorted(set(params) - known)}")
    out = []
    if "k" in params:
        out.append(("k", {"k": params["k"]}))
    if "alpha" in params:
        out.append(("alpha-k", {"alpha": params["alpha"], "k": params["k"]}))
    if "l" in params:
        variant = params.get("l_variant") or "distinct"
        out.append((f"l-{variant}", {"l": params["l"], "c": params.get("c")}))
    if "t" in params:
        out.append(("t-ordered" if params.get("distance") == "ordered" else "t-equal", {"t": params["t"]}))
    if "delta" in params:
        out.append(("delta", {"delta": params["delta"]}))
    return out


def judge_all(table: Table, params: dict) -> dict[str, Outcome]:
    """Every model of ``params`` (:func:`models_of`) judged on ``table``, by name."""
    return {name: table.judge(name, **p) for name, p in models_of(params)}


def grouped(rows: list[dict], classes: list, sensitive: str | None, person: str,
            reference: Table | None = None) -> Table:
    """``rows`` grouped by ``classes`` (each row's class key, in the same order) rather than by QI
    columns: a release's classes judged by persons. ``reference``: the table whose whole-table
    counts (N, C_s, M and the value domain) t-closeness and delta-disclosure compare with (a
    release with suppressed persons is judged against its source); by default ``rows`` itself."""
    assert len(rows) == len(classes)
    t = Table([{**r, "_class": c} for r, c in zip(rows, classes)], ["_class"], sensitive, person)
    if reference is not None:
        t.N, t.C, t.M, t.domain = reference.N, dict(reference.C), reference.M, list(reference.domain)
    return t


def whole_table(rows: list[dict], sensitive: str | None, person: str) -> Table:
    """``rows`` as one group (every record in one class)."""
    return grouped(rows, [()] * len(rows), sensitive, person)


def primary_values(rows: list[dict], person: str, sensitive: str) -> dict:
    """Each person's primary value: the sensitive value most of their records hold, ties broken
    by the smallest value (None last), the value Anatomy deals a person under."""
    counts: dict = defaultdict(lambda: defaultdict(int))
    for r in rows:
        counts[r[person]][r[sensitive]] += 1
    return {p: min(c, key=lambda s: (-c[s], sort_key(s))) for p, c in counts.items()}
