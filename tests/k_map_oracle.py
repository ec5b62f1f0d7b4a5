"""A plain-Python oracle for k-map [ARX KMap with a research subset; El Emam & Dankar 2008], written
from the definition: it imports nothing from anonydb. The public table P is a list of QI tuples
(one per person), the research table T the keys of its rows' public partners; ``label`` maps a QI
tuple to its class in the release (the same generalization for P and T), or None where no class
covers it. k-map holds when every class holding research rows has >= k public rows."""

from __future__ import annotations

from collections import Counter


def class_counts(public, label):
    """n_P per class: how many public rows each class covers (rows no class covers are left out)."""
    return Counter(c for c in map(label, public) if c is not None)


def achieved(public, research, label):
    """The least public count of a class holding research rows (None: no research row)."""
    n_p = class_counts(public, label)
    held = {label(r) for r in research}
    return min((n_p[c] for c in held), default=None)


def holds(public, research, label, k):
    a = achieved(public, research, label)
    return a is None or a >= k


def violating(public, research, label, k):
    """(classes with research rows and fewer than k public rows, their public rows)."""
    n_p = class_counts(public, label)
    bad = {c for c in map(label, research) if n_p[c] < k}
    return len(bad), sum(n_p[c] for c in bad)


def box_label(boxes):
    """A label function for Mondrian's regions: the box (x_lo, x_hi, y_lo, y_hi, ...) covering a point."""
    def label(point):
        hits = [b for b in boxes if all(b[2 * i] <= v <= b[2 * i + 1] for i, v in enumerate(point))]
        assert len(hits) <= 1, "overlapping boxes"
        return hits[0] if hits else None
    return label
