"""A plain-Python oracle for the sample-based risk summary (El Emam's definitions as ARX's
RiskModelSampleSummary computes them), written from those definitions: it imports nothing from
anonydb. Rows are tuples; a class is the rows sharing their key values (None is a value)."""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction


def summary(rows, keys_idx, threshold, population=None, person_idx=None):
    """{'n', 'classes', 'prosecutor': {...}, 'journalist': {...}, 'marketer', 'sample_uniqueness'}."""
    t = Fraction(threshold)
    key = lambda r: tuple(r[i] for i in keys_idx)  # noqa: E731
    if person_idx is None:
        f = Counter(key(r) for r in rows)
        units = [key(r) for r in rows]  # one unit per record, by its class
    else:
        members = defaultdict(set)
        for r in rows:
            members[key(r)].add(r[person_idx])
        f = Counter({k: len(v) for k, v in members.items()})
        classes_of = defaultdict(set)
        for r in rows:
            classes_of[r[person_idx]].add(key(r))
        units = list(classes_of.values())  # one unit per person, by its set of classes
    if population is None:
        big_f = dict(f)
    else:
        big_f = Counter(key(r) for r in population)
    n = len(units)

    def sizes(u, table):
        return min(table[c] for c in u) if person_idx is not None else table[u]

    fs = [sizes(u, f) for u in units]
    pfs = [sizes(u, big_f) for u in units]

    def block(vals):
        return {"records_at_risk": Fraction(sum(1 for v in vals if Fraction(1, v) > t), n),
                "highest": Fraction(1, min(vals)), "lowest": Fraction(1, max(vals)),
                "average": sum(Fraction(1, v) for v in vals) / n}

    pros = block(fs)
    jour = block(pfs)
    marketer = sum(Fraction(1, v) for v in pfs) / n
    jour["average"] = max(Fraction(len(f), sum(big_f[c] for c in f)), marketer)
    return {"n": n, "classes": len(f), "prosecutor": pros, "journalist": jour, "marketer": marketer,
            "sample_uniqueness": Fraction(sum(1 for v in fs if v == 1), n)}


def class_sizes(rows, keys_idx, person_idx=None):
    """Class size -> number of classes (persons per class with person_idx)."""
    members = defaultdict(set)
    for i, r in enumerate(rows):
        members[tuple(r[j] for j in keys_idx)].add(i if person_idx is None else r[person_idx])
    return dict(Counter(len(v) for v in members.values()))
