"""Membership disclosure of sliced and bucketized releases [Li thesis §4.4, §4.5.3;
spec-closeness-slicing 4.4].

A release of buckets, each publishing per column the multiset of that column's values (slicing;
Anatomy is the two columns {QIs} | {S}), lets an adversary form *candidate tuples*: one value of
each column from the same bucket. A *fake tuple* is a candidate that is not an original tuple;
many fakes, matching about as many buckets as the originals do, hide whether a given person is
in the data. Reported:

* ``fakes``: distinct candidates that are not original tuples (definition (a) of the spec);
* ``identity_fakes``: distinct candidates whose projection on the non-sensitive attributes is no
  original tuple's (definition (b)); bucketization gives 0, the thesis's point;
* the number of matching buckets (buckets holding each of a tuple's column values) of the original
  rows and of the fake tuples, as full histograms and in the thesis's bins <= 10, 11-20, > 20.

Exact counting enumerates the per-bucket cross products in SQL, N = sum_B prod_i d_i(B) rows
(d_i(B): distinct values of column i in B). Above ``exact_limit`` the counts are estimated from
``samples`` candidates drawn uniformly from those N (bucket with probability prod_i d_i(B) / N,
then one value per column): a distinct candidate t is drawn with probability m(t)/N (m(t) its
matching buckets), so N * mean([cond(t)] / m(t)) estimates the number of distinct candidates
meeting cond, without bias; the standard errors are given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..engines.base import Engine
from ..engines import connect
from ..errors import InputError
from ..sqlgen import ident, seed_key

#: enumerate candidates exactly up to this many (bucket, candidate) rows
EXACT_LIMIT = 5_000_000
BINS = ((0, 10, "<=10"), (11, 20, "11-20"), (21, math.inf, ">20"))


@dataclass
class MembershipReport:
    rows: int  # original rows
    candidates: float  # distinct candidate tuples (exact, or estimated when sampled)
    fakes: float  # definition (a)
    identity_fakes: float | None  # definition (b); None without a sensitive attribute
    original_matching: dict[int, int]  # m -> original rows with m matching buckets
    fake_matching: dict[int, float]  # m -> distinct fake tuples with m matching buckets
    cross_products: int  # N = sum over buckets of prod_i d_i(B)
    exact: bool
    samples: int | None = None
    stderr: dict[str, float] = field(default_factory=dict)  # when sampled: of candidates, fakes, identity_fakes

    @staticmethod
    def binned(hist: dict[int, float]) -> dict[str, float]:
        """The thesis's bins of matching-bucket counts: <=10, 11-20, >20."""
        return {name: sum(v for m, v in hist.items() if lo <= m <= hi) for lo, hi, name in BINS}

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "candidates": self.candidates, "fakes": self.fakes,
                "identity_fakes": self.identity_fakes, "cross_products": self.cross_products, "exact": self.exact,
                "samples": self.samples, "stderr": self.stderr,
                "original_matching": self.binned(self.original_matching),
                "fake_matching": self.binned(self.fake_matching),
                "original_matching_histogram": self.original_matching, "fake_matching_histogram": self.fake_matching}

    def format(self) -> str:
        how = "exact" if self.exact else f"estimated from {self.samples} sampled candidates"
        err = (lambda k: f" (± {self.stderr[k]:.0f})" if k in self.stderr else "")
        ob, fb = self.binned(self.original_matching), self.binned(self.fake_matching)
        lines = [f"membership ({how}): {self.fakes:.0f} fake tuples{err('fakes')} vs {self.rows} original rows"
                 + (f"; {self.identity_fakes:.0f} identity fakes{err('identity_fakes')}"
                    if self.identity_fakes is not None else ""),
                 "  matching buckets   " + "  ".join(f"{k:>8}" for k in ob),
                 "  original rows      " + "  ".join(f"{v:>8.0f}" for v in ob.values()),
                 "  fake tuples        " + "  ".join(f"{v:>8.0f}" for v in fb.values())]
        return "\n".join(lines)


def membership(engine: Engine | Any, source: str, columns: Sequence[tuple[str, Sequence[str]]],
               sensitive: str | None = None, *, exact_limit: int = EXACT_LIMIT, samples: int = 200_000,
               seed: int = 0) -> MembershipReport:
    """Membership measures of a release given as column tables (``columns``: (table, attributes),
    each table with ``bucket_id``) against the original tuples in ``source``."""
    eng = connect(engine)
    cols = [(t, list(a)) for t, a in columns]
    if len(cols) < 2:
        raise InputError("a bucketized or sliced release has at least 2 columns")
    if sensitive is not None:
        holders = [i for i, (_, a) in enumerate(cols) if sensitive in a]
        if len(holders) != 1:
            raise InputError(f"the sensitive attribute {sensitive!r} must be in exactly one column; "
                             f"{len(holders)} hold it")
        cols = [x for i, x in enumerate(cols) if i != holders[0]] + [cols[holders[0]]]
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"samples must be a positive integer, got {samples!r}")
    have = dict(eng.columns(source))
    for table, attrs in cols:
        tcols = dict(eng.columns(table))
        if "bucket_id" not in tcols:
            raise InputError(f"column table {table!r} has no bucket_id column")
        for a in attrs:
            if a not in tcols:
                raise InputError(f"attribute {a!r} is not in column table {table!r}")
            if a not in have:
                raise InputError(f"attribute {a!r} is not in {source!r}, the original tuples")
    c = len(cols)
    qpart = [a for a in cols[-1][1] if a != sensitive] if sensitive is not None else list(cols[-1][1])
    with eng.scratch("membership") as s:
        dicts, dv = [], []
        for i, (table, attrs) in enumerate(cols):
            d = s.table(eng.render("slicing_keys.sql.j2", mode="dict", attrs=attrs, rels=[source, table]))
            dicts.append((d, attrs, f"k{i}"))
            keyed = s.table(eng.render("slicing_keys.sql.j2", mode="keyed", rel=table, bid="bucket_id",
                                       keys=[(d, attrs, "k")], extra=None))
            dv.append(s.table(f"SELECT DISTINCT bid, k FROM {ident(keyed)}"))
        dq = s.table(eng.render("slicing_keys.sql.j2", mode="dict", attrs=qpart, rels=[source, cols[-1][0]]))
        okeys = dicts + [(dq, qpart, "kq")]
        orig = s.table(f"SELECT {', '.join(n for _, _, n in okeys)}, count(*) AS n FROM ("
                       + eng.render("slicing_keys.sql.j2", mode="keyed", rel=source, bid=None, keys=okeys,
                                    extra=None).sql + ") AS o GROUP BY ALL")
        # (ks, kq): the sensitive column's full value key and its key without S
        ident_of = s.table(eng.render("slicing_keys.sql.j2", mode="keyed", rel=cols[-1][0], bid=None,
                                      keys=[(dicts[-1][0], cols[-1][1], "ks"), (dq, qpart, "kq")], extra=None))
        ident_of = s.table(f"SELECT DISTINCT ks, kq FROM {ident(ident_of)}")
        n_cross = int(eng.scalar(
            "SELECT coalesce(sum(" + " * ".join(f"CAST(d{i}.n AS HUGEINT)" for i in range(c)) + "), 0) FROM "
            + " JOIN ".join(f"(SELECT bid, count(*) AS n FROM {ident(dv[i])} GROUP BY bid) AS d{i}"
                            + (f" ON d{i}.bid = d0.bid" if i else "") for i in range(c))))
        common = dict(dv=[ident(x) for x in dv], keys=[f"k{i}" for i in range(c)], orig=ident(orig),
                      ident_of=ident(ident_of), samples=samples,
                      keys_u=[seed_key(seed, f"membership/{j}") for j in range(c + 1)])
        rows_hist = {int(m): int(r) for m, r in eng.fetch_rows(eng.render("slicing_membership.sql.j2",
                                                                          part="original", **common))[1]}
        total_rows = sum(rows_hist.values())
        if n_cross <= exact_limit:
            got = eng.fetch_rows(eng.render("slicing_membership.sql.j2", part="exact", **common))[1]
            cand = sum(r[3] for r in got)
            fakes = sum(r[3] for r in got if r[1])
            idf = sum(r[3] for r in got if r[2])
            fake_hist: dict[int, float] = {}
            for m, fake, _, nt in got:
                if fake:
                    fake_hist[int(m)] = fake_hist.get(int(m), 0) + int(nt)
            return MembershipReport(rows=total_rows, candidates=cand, fakes=fakes,
                                    identity_fakes=idf if sensitive is not None else None,
                                    original_matching=rows_hist, fake_matching=fake_hist, cross_products=n_cross,
                                    exact=True)
        got = eng.fetch_rows(eng.render("slicing_membership.sql.j2", part="sample", **common))[1]
    k = len(got)
    if k == 0:
        raise InputError("no candidate could be sampled (empty release?)")

    def est(pred) -> tuple[float, float]:
        xs = [float(w) if pred(m, f, i) else 0.0 for m, f, i, w in got]
        mean = sum(xs) / k
        var = sum((x - mean) ** 2 for x in xs) / max(1, k - 1)
        return n_cross * mean, n_cross * math.sqrt(var / k)

    cand, se_c = est(lambda m, f, i: True)
    fakes, se_f = est(lambda m, f, i: f)
    idf, se_i = est(lambda m, f, i: i)
    fake_hist = {}
    for m in sorted({int(r[0]) for r in got if r[1]}):
        fake_hist[m] = est(lambda mm, f, i, m=m: f and int(mm) == m)[0]
    return MembershipReport(rows=total_rows, candidates=cand, fakes=fakes,
                            identity_fakes=idf if sensitive is not None else None, original_matching=rows_hist,
                            fake_matching=fake_hist, cross_products=n_cross, exact=False, samples=k,
                            stderr={"candidates": se_c, "fakes": se_f, "identity_fakes": se_i})


def anatomy_membership(engine: Engine | Any, source: str, qit: str, st: str, qi: Sequence[str], sensitive: str,
                       **kw: Any) -> MembershipReport:
    """The same measures for an Anatomy QIT/ST pair: the two columns {QIs} (from the QIT) and
    {S} (the ST counts expanded), with the groups as buckets."""
    eng = connect(engine)
    with eng.scratch("membership_anatomy") as s:
        c1 = s.table(f"SELECT group_id AS bucket_id, {', '.join(ident(a) for a in qi)} FROM {ident(qit)}")
        c2 = s.table(f"SELECT group_id AS bucket_id, {ident(sensitive)} FROM {ident(st)}, range({ident('count')})")
        return membership(eng, source, [(c1, list(qi)), (c2, [sensitive])], sensitive, **kw)
