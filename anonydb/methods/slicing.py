"""Slicing: columns by correlation, l-diverse buckets, sliced release [Li thesis Ch. 4;
spec-closeness-slicing 4, 5.3-5.5, 5.7].

Three phases, all in the database:

1. attribute partitioning (:mod:`.slicing_columns`): phi^2 of every attribute pair in SQL, PAM
   on d = 1 - phi^2 into c columns (or the special partitioning with ``alpha``, or the user's
   columns);
2. optional column generalization (``column_k``): Mondrian k-anonymity on each column without
   the sensitive attribute, so every value of that column occurs at least k times (§4.3.2);
3. tuple partitioning (Fig 4.1): Mondrian-style median cuts of the buckets, a cut being kept
   only if the sliced table stays l-diverse by the check of Fig 4.2
   (:mod:`anonydb.models.sliced_diversity`, the same code that verifies the release).

Departure from Fig 4.1 (a FIFO queue checking one bucket's cut at a time): the plan is
level-wise. A round proposes the cuts of all open buckets at once (``sql/slicing_split.sql.j2``)
and judges each cut alone: a bucket's dimensions (up to ``tries``) are judged side by side in
the same round (while the buckets are large, ``ALT_ROWS``, the next one alone first and the
further ones only for the buckets whose cut failed), and it takes the widest that holds (a
bucket none of whose cuts holds is final; ``tries=1`` finalizes it at once, as Fig 4.1 does). The round
then checks the whole tentative slicing once, and when some tuples fail, takes back the cuts of
the buckets those tuples matched before their cut (a failure can only come from a bucket that
changed, as p(t,.) depends on t's matching buckets only; a tuple may match a bucket through
several rows and neither of its halves) and checks again, until the check passes; the
partition after each round is l-diverse, as after each step of Fig 4.1. A bucket whose cut was
taken back tries the dimensions after it in the next round. The check joins each tuple only
with the buckets that hold its values, starting from the most selective column, instead of the
O(n * buckets) scan of Fig 4.2.

The release: one table per column, ``<out>_c1`` .. ``<out>_c<c>`` (bucket_id, row_in_bucket, the
column's attributes; values permuted within each bucket by a seeded hash, independently per
column), and the view ``<out>`` joining them on (bucket_id, row_in_bucket): the sliced table of
Table 4.1(f). Only the sliced attributes (the QIs and the sensitive attribute) are released.
Before anything is written, the staged tables are verified: the same number of rows per bucket
in every column, and l-diverse slicing checked from the release against the tuples of T.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .. import events as run_events
from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError, NotAvailable
from ..hierarchy import Hierarchy, validate_all
from ..attacks.membership import MembershipReport
from ..attacks.membership import membership as measure_membership
from ..models.sliced_diversity import SlicedLDiversity, SlicedVerdict
from ..schema import split_list, validate_roles
from ..sources import open_source
from ..sqlgen import ident, seed_key
from ..release.publish import Publication, publication_lines, row_order
from .slicing_columns import BINS, check_columns, coordinate, describe, partition_attributes, phi2_matrix

#: a round judges all of its buckets' dimensions at once (or, in a further attempt, those of the
#: buckets whose cut failed) while their tuples times those dimensions are at most this many;
#: above, the next dimension first
ALT_ROWS = 250_000


@dataclass
class SlicingResult:
    view: str  # the sliced table (a view over the column tables)
    tables: list[str]  # the column tables, in the order of `columns`
    columns: list[list[str]]  # the attribute partition (the sensitive column last)
    rows: int
    buckets: int
    rounds: int
    seconds: float
    verdict: SlicedVerdict  # the verification of the release
    phi2: dict[tuple[str, str], float] = field(default_factory=dict)  # when the columns were computed
    sizes: dict[str, float] = field(default_factory=dict)  # bucket sizes: min, mean, max
    generalized: list[int] = field(default_factory=list)  # indexes of the generalized columns
    moved: list[str] = field(default_factory=list)  # attributes moved out of the computed sensitive column
    membership: MembershipReport | None = None  # with membership=True
    order: str = ""  # how bucket ids and the permutations within buckets were drawn (secret, or from a seed)
    dropped: list[str] = field(default_factory=list)  # source columns not published (all but the attributes)

    def format(self) -> str:
        lines = [f"slicing: {self.rows} rows in {self.buckets} buckets ({self.rounds} rounds, "
                 f"{self.seconds:.2f} s); bucket sizes {self.sizes.get('min', 0):g} .. {self.sizes.get('max', 0):g} "
                 f"(mean {self.sizes.get('mean', 0):.1f})",
                 f"  columns: {describe(self.columns, '')}" + (
                     f" (generalized: {', '.join(f'c{i + 1}' for i in self.generalized)})" if self.generalized else ""),
                 *([f"  moved out of the sensitive column (it made even one bucket fail l-diversity): "
                    f"{', '.join(self.moved)}"] if self.moved else []),
                 f"  release: view {self.view} over {', '.join(self.tables)}",
                 f"  verified: {self.verdict.format()}", *publication_lines(self.dropped, [], self.order)]
        return "\n".join(lines)


def slicing(source: str, qi: str | Iterable[str], sensitive: str, *, l: Any, out: str, engine: Engine | Any = None,
            columns: int | Sequence[Sequence[str]] = 2, alpha: int | None = None, bins: int | None = BINS,
            split_on: str | Iterable[str] | None = None, tries: int | None = None, min_bucket: int | None = None,
            column_k: int | None = None, hierarchies: dict[str, Hierarchy] | None = None, seed: int | None = None,
            replace: bool = False, progress: Callable[[dict[str, Any]], None] | None = None,
            membership: bool = False) -> SlicingResult:
    """Slice ``source`` (QIs and the sensitive attribute) into an l-diverse sliced release ``out``.

    ``columns``: c (an int >= 2, the attribute partition computed by PAM on 1 - phi^2, with
    ``alpha`` for the special partitioning and ``bins`` equal-width intervals for numeric
    attributes) or the columns themselves (lists of attribute names). ``split_on``: the
    attributes the tuple partitioning cuts on (default: the QIs). ``tries``: dimensions tried
    per bucket before it is final (default all; 1 is Fig 4.1 literally). ``min_bucket``: a
    bucket is cut only if both halves keep at least this many tuples (default ceil(l)).
    ``column_k``: generalize every column without the sensitive attribute to k-anonymity
    (Mondrian; ``hierarchies`` for its categorical attributes). ``progress`` is called after every
    round with {round, open, checks}. ``membership``: also measure membership disclosure
    (:func:`anonydb.attacks.membership.membership`, against the tuples as released). ``seed``: the
    permutations within buckets (and how ties are cut); None permutes by a fresh secret, cutting
    ties as seed 0 does. ``hierarchies``: each must cover its column, a QI or the sensitive attribute.
    """
    t0 = time.perf_counter()
    eng = connect(engine)
    if eng.dialect != "duckdb":  # refused before anything is read or written
        raise NotAvailable("slicing (its bucket search uses DuckDB's SELECT * REPLACE and column-association "
                           "plans not yet ported)", eng.dialect)
    qi_cols = split_list(qi, "quasi-identifiers")
    model = SlicedLDiversity(l)
    if not sensitive:
        raise InputError("slicing needs a sensitive attribute (--sensitive)")
    if not isinstance(out, str) or not out:
        raise InputError("out must name the release (it writes the view <out> and tables <out>_c1, ...)")
    for name, v in (("tries", tries), ("min_bucket", min_bucket), ("column_k", column_k)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"{name} must be a positive integer, got {v!r}")
    if bins is not None and (isinstance(bins, bool) or not isinstance(bins, int) or bins < 2):
        raise InputError(f"bins must be an integer >= 2 (or None: no discretization), got {bins!r}")
    min_bucket = min_bucket or max(1, math.ceil(l))
    # the partition (how ties are cut) follows the data and the seed (0 without one); the bucket numbers
    # and the permutations within buckets follow the release's order key (a fresh secret without a seed)
    order = row_order(eng, seed)
    seed = 0 if seed is None else int(seed)
    attrs = qi_cols + [sensitive]
    with eng.scratch("slicing") as s:
        relation = open_source(eng, source, scratch=s)
        dropped = [c for c, _ in eng.columns(relation) if c not in attrs]
        types = validate_roles(eng, relation, qi_cols, sensitive, None, label=str(source))
        for attr in hierarchies or {}:
            if attr not in attrs:
                raise InputError(f"a hierarchy is given for {attr!r}, which is neither a quasi-identifier "
                                 f"nor the sensitive attribute (quasi-identifiers: {', '.join(qi_cols)}; "
                                 f"sensitive: {sensitive})")
        validate_all(eng, relation, hierarchies or {}, name=str(source))
        phi2: dict[tuple[str, str], float] = {}
        moved: list[str] = []
        if isinstance(columns, int) and not isinstance(columns, bool):
            if columns > len(attrs):
                raise InputError(f"c = {columns} columns is more than the {len(attrs)} attributes to slice "
                                 f"({', '.join(attrs)})")
            matrix = phi2_matrix(eng, relation, attrs, bins)
            phi2 = {(a, b): matrix[i][j] for i, a in enumerate(attrs) for j, b in enumerate(attrs) if i < j}
            cols = partition_attributes(matrix, attrs, sensitive, columns, alpha)
            if alpha is None:
                cols, moved = _fit_sensitive_column(eng, relation, cols, sensitive, model, matrix, attrs)
        elif isinstance(columns, (list, tuple)):
            if alpha is not None:
                raise InputError("alpha shapes the computed attribute partition; it does not apply to given columns")
            cols = check_columns(columns, attrs, sensitive)
        else:
            raise InputError(f"columns must be a number of columns (int >= 2) or a list of columns, got {columns!r}")
        dims = split_list(split_on, "split attributes") if split_on is not None else list(qi_cols)
        for d in dims:
            if d not in attrs:
                raise InputError(f"split attribute {d!r} is not one of the attributes to slice ({', '.join(attrs)})")
        if not dims:
            raise InputError("no attribute to split buckets on (split_on is empty)")
        names = [f"{out}_c{i + 1}" for i in range(len(cols))]
        pub = Publication(eng, names + [out], replace, sources=[source], order=order)

        base, rid = eng.row_ids(s, relation)
        brid = "rowid" if rid == "rowid" else ident(rid)
        n = int(eng.scalar(f"SELECT count(*) FROM {ident(base)}"))
        if n == 0:
            raise InputError(f"{source} is empty: there is nothing to slice")
        plain = [c for c in cols if sensitive not in c]
        qpart = [a for a in cols[-1] if a != sensitive]

        # phase 2: column generalization (the released values of the plain columns)
        generalized: list[int] = []
        vals, vrid, gbase = base, brid, None
        if column_k is not None:
            vals, generalized = _generalize_columns(eng, s, base, brid, plain, attrs, column_k, hierarchies, seed)
            vrid, gbase = ident("_adb_rid"), base

        # phase 3: tuple partitioning
        alias = "b" if gbase else "v"
        dim_specs = [{"name": d, "coord": coordinate(types[d], f"{alias}.{ident(d)}")} for d in dims]
        tup = s.put("tup", eng.render("slicing_codes.sql.j2", vals=vals, rid=vrid, base=gbase, brid=brid,
                                      plain=plain, qpart=qpart, sensitive=sensitive, dims=dim_specs,
                                      key=seed_key(seed, "slicing/ties")))
        *ranges, n_tup = eng.fetch_rows("SELECT " + "".join(f"max(x{j}) - min(x{j}), " for j in range(len(dims)))
                                        + f"count(*) FROM {ident(tup)}")[1][0]
        ranges = [float(r) if r and r > 0 else 1.0 for r in ranges]
        part = _Partitioner(eng, s, model, tup, len(plain), ranges, min_bucket, tries or len(dims), n_tup)
        part.check_root(sensitive, cols)
        run_events.phase("rounds")
        rounds = part.run(progress)

        # the release: staged, verified, swapped in
        with pub:
            bmap = s.table(eng.render("slicing_release.sql.j2", part="bmap", tup=part.tup,
                                          key=order.key64(eng, "slicing/buckets")))
            for i, (col, name) in enumerate(zip(cols, names)):
                stage = pub.stage(f"c{i + 1}")
                eng.create_table_as(stage, eng.render("slicing_release.sql.j2", part="column", tup=part.tup, bmap=bmap,
                                                      vals=vals, rid=vrid, attrs=col,
                                                      key=order.key64(eng, f"slicing/column/{i}")))
            staged = list(pub.staged)
            run_events.phase("verification")
            verdict = verify(eng, vals, list(zip(staged, cols)), sensitive, model)
            pub.attach(staged, verdict.holds, verdict.format())
            stats = eng.fetch_rows(f"SELECT count(*), min(n), avg(n), max(n) FROM (SELECT count(*) AS n FROM "
                                   f"{ident(staged[0])} GROUP BY bucket_id) AS b")[1][0]
            view_sql = eng.render("slicing_release.sql.j2", part="view", tables=list(zip(names, cols)))
            mem = (measure_membership(eng, vals, list(zip(staged, cols)), sensitive, seed=seed)
                   if membership else None)
            pub.commit(list(zip(staged, names)), view=(out, view_sql.sql))
    return SlicingResult(view=out, tables=names, columns=cols, rows=n, buckets=int(stats[0]), rounds=rounds,
                         seconds=time.perf_counter() - t0, verdict=verdict, phi2=phi2,
                         sizes={"min": float(stats[1]), "mean": float(stats[2]), "max": float(stats[3])},
                         generalized=generalized, moved=moved, membership=mem, order=order.describe(),
                         dropped=dropped)


def _root_worst(eng: Engine, relation: str, qpart: list[str], sensitive: str) -> float:
    """max p(t,s) with the whole table as one bucket: the largest share of one sensitive value among
    the tuples sharing a value of the sensitive column's other attributes ``qpart``."""
    by = ", ".join(ident(a) for a in qpart)
    return float(eng.scalar(
        f"SELECT max(CAST(n AS DOUBLE) / m) FROM (SELECT n, sum(n) OVER ({'PARTITION BY ' + by if by else ''}) AS m "
        f"FROM (SELECT {by + ', ' if by else ''}{ident(sensitive)}, count(*) AS n FROM {ident(relation)} "
        f"GROUP BY ALL) AS c) AS w"))


def _fit_sensitive_column(eng, relation, cols, sensitive, model, matrix, attrs):
    """When the computed sensitive column makes even the one-bucket slicing fail (its other
    attributes pin down S too well), move them out one at a time, least correlated with S first,
    each to the column it is most correlated with on average, until the root is l-diverse. Returns
    (columns, moved attributes)."""
    cols = [list(c) for c in cols]
    moved = []
    si = attrs.index(sensitive)
    while True:
        qpart = [a for a in cols[-1] if a != sensitive]
        if not qpart or _root_worst(eng, relation, qpart, sensitive) <= 1 / model.l + 1e-9:
            return cols, moved
        a = min(qpart, key=lambda x: (matrix[si][attrs.index(x)], attrs.index(x)))
        ai = attrs.index(a)
        target = max(range(len(cols) - 1),
                     key=lambda j: (sum(matrix[ai][attrs.index(b)] for b in cols[j]) / len(cols[j]), -j))
        cols[-1].remove(a)
        cols[target] = sorted(cols[target] + [a], key=attrs.index)
        moved.append(a)


def verify(eng: Engine, tuples: str, columns: Sequence[tuple[str, Sequence[str]]], sensitive: str,
           model: SlicedLDiversity) -> SlicedVerdict:
    """Verify a sliced release: every column table has the same number of rows in every bucket,
    and l-diverse slicing holds for the tuples of ``tuples`` against the column tables."""
    first = columns[0][0]
    for table, _ in columns[1:]:
        bad = eng.fetch_rows(
            f"SELECT a.bucket_id, a.n, b.n FROM (SELECT bucket_id, count(*) AS n FROM {ident(first)} GROUP BY 1) AS a "
            f"FULL JOIN (SELECT bucket_id, count(*) AS n FROM {ident(table)} GROUP BY 1) AS b USING (bucket_id) "
            f"WHERE a.n IS DISTINCT FROM b.n LIMIT 1")[1]
        if bad:
            raise AnonyDBError(f"internal error: bucket {bad[0][0]} holds {bad[0][1]} rows in {first} but "
                               f"{bad[0][2]} in {table}")
    return model.check(eng, tuples, columns, sensitive)


class _Partitioner:
    """Tuple partitioning (Fig 4.1), level-wise; see the module docstring."""

    def __init__(self, eng, s, model, tup, nplain, ranges, min_bucket, tries, rows):
        self.eng, self.s, self.model, self.tup, self.rows = eng, s, model, tup, rows
        self.nplain, self.ranges, self.min_bucket, self.tries = nplain, ranges, min_bucket, tries
        self.keys = [f"k{i}" for i in range(nplain)] + ["kq"]
        self.checks = 0

    def chain(self, rel: str) -> list[dict[str, str]]:
        if not hasattr(self, "_order"):
            counts = self.eng.fetch_rows("SELECT " + ", ".join(f"count(DISTINCT {k})" for k in self.keys)
                                         + f" FROM {ident(self.tup)}")[1][0]
            self._order = sorted(range(len(self.keys)), key=lambda i: (-counts[i], i))
        out = []
        for j, i in enumerate(self._order):
            k = self.keys[i]
            sub = f"(SELECT bid, {k} AS k FROM {ident(rel)})" if k != "kq" else ident(rel)
            out.append({"alias": f"x{j}", "rel": sub, "key": k})
        return out

    def check_root(self, sensitive: str, cols: list[list[str]]) -> None:
        """Fail early when even the whole table as one bucket is not l-diverse."""
        worst, violators, tuples, _ = self.eng.fetch_rows(
            self.model.plan(self.eng, ident(self.tup), self.chain(self.tup), ident(self.tup)))[1][0]
        self.checks += 1
        if violators:
            bound = math.floor(1 / worst + 1e-9) if worst > 0 else 0
            qpart = [a for a in cols[-1] if a != sensitive]
            why = (f"the most frequent value of {sensitive!r} has share {worst:.6g} of the table"
                   if not qpart else
                   f"some tuples' values of {', '.join(qpart)} (in the sensitive column) go with one value of "
                   f"{sensitive!r} in a share {worst:.6g} of the tuples that have them")
            raise InfeasibleError(
                f"l-diverse slicing with l = {self.model.l:g} is infeasible for these columns: even one bucket holding "
                f"all rows gives p(t,s) = {worst:.6g} > 1/l ({why}); the largest feasible l is {bound}"
                + ("" if not qpart else " (or move those attributes out of the sensitive column)"))

    def single(self, alt: str) -> set[int]:
        """The cuts of ``alt`` (slicing_split.sql.j2) that alone make some tuple fail, judged side
        by side: the current buckets' tuples and, for every row of ``alt``, its tuple in the
        child of its cut (``vbid``)."""
        keys = ", ".join("t." + k for k in self.keys)
        two = self.s.put("two", f"SELECT t.bid, {keys}, t.s FROM {ident(self.tup)} AS t UNION ALL "
                                f"SELECT p.vbid, {keys}, t.s FROM {ident(alt)} AS p JOIN {ident(self.tup)} AS t "
                                f"ON t.rid = p.rid")
        levels = (f"(SELECT DISTINCT bid, CAST(NULL AS BIGINT) AS parent, FALSE AS child, TRUE AS base "
                  f"FROM {ident(self.tup)} UNION ALL SELECT DISTINCT parent, cut, FALSE, FALSE FROM "
                  f"{ident(alt)} UNION ALL SELECT DISTINCT vbid, cut, TRUE, FALSE FROM {ident(alt)})")
        self.checks += 1
        return {r[0] for r in self.eng.fetch_rows(self.model.plan(
            self.eng, ident(self.tup), self.chain(two), ident(two), mode="single", levels=levels,
            focus=f"(SELECT DISTINCT parent AS bid FROM {ident(alt)})"))[1]}

    def attempt(self, state: str, lo: int, hi: int, k: int) -> tuple[str, set[int], set[int]] | None:
        """Attempt ``k`` of a round for the buckets of ``state``: their (attempt+1+lo)-th to
        (attempt+1+hi)-th widest dimensions, each a cut judged alone, side by side. Returns (the
        rows of each bucket's widest cut that holds: rid, parent, bid, r; the buckets tried; those
        with a cut that holds), or None when no bucket has such a dimension."""
        eng, s = self.eng, self.s
        alt = s.put(f"alt{k}", eng.render("slicing_split.sql.j2", tup=self.tup, state=state, ranges=self.ranges,
                                          min_bucket=self.min_bucket, lo=lo, hi=hi, tries=self.tries))
        tried = {r[0] for r in eng.fetch_rows(f"SELECT DISTINCT parent FROM {ident(alt)}")[1]}
        if not tried:
            return None
        failed = self.single(alt)
        fails = f" WHERE cut NOT IN ({', '.join(map(str, sorted(failed)))})" if failed else ""
        held = s.put(f"held{k}", f"SELECT a.rid, a.parent, a.bid, a.r FROM {ident(alt)} AS a "
                                 f"JOIN (SELECT parent, min(r) AS r FROM (SELECT DISTINCT parent, r, cut FROM "
                                 f"{ident(alt)}) AS c{fails} GROUP BY parent) AS w ON w.parent = a.parent AND w.r = a.r")
        return held, tried, {r[0] for r in eng.fetch_rows(f"SELECT DISTINCT parent FROM {ident(held)}")[1]}

    def _few(self, bids: str, dims: int) -> bool:
        """Whether the tuples of the buckets ``bids`` (SQL: a list or a query) times ``dims`` are at
        most ``ALT_ROWS`` (counted only when the whole table's are not)."""
        return self.rows * dims <= ALT_ROWS or self.eng.scalar(
            f"SELECT count(*) FROM {ident(self.tup)} WHERE bid IN ({bids})") * dims <= ALT_ROWS

    def cuts(self, state: str) -> tuple[str, str]:
        """A round's cuts, each judged alone: every open bucket's dimensions side by side, each
        bucket taking the widest that holds (a bucket with none is final). While the buckets'
        tuples times their dimensions left exceed ``ALT_ROWS``, the next dimension is judged
        alone first (most buckets that hold, hold on it; 100k rows: 50k tuple-cuts in round 2
        instead of 350k), then the further ones of the buckets whose cut failed. Judging all at
        once when they are few spares a split and a check a round (Adult: 23 -> 12 checks).
        Returns the cuts taken (a relation: rid, parent, bid, r; the attempt's own table when the
        round made one) and SQL for (parent, nxt): the attempt its bucket makes next should its
        cut be taken back."""
        eng, s = self.eng, self.s
        held: list[str] = []
        failing, lo, sub = None, 0, state
        # every dimension at once (one split, one check) when the buckets' tuple-cuts are few
        hi = self.tries if self._few(f"SELECT bid FROM {ident(state)}", self.tries) else 0
        while lo < self.tries:
            if failing is not None:  # the buckets whose every cut so far failed
                if not failing:
                    break
                listed = ", ".join(map(str, sorted(failing)))
                hi = self.tries if self._few(listed, self.tries - lo) else lo
                sub = s.put("retry", f"SELECT * FROM {ident(state)} WHERE bid IN ({listed})")
            got = self.attempt(sub, lo, hi, len(held))
            if got is None:
                break
            held.append(got[0])
            failing = (got[1] if failing is None else failing) - got[2]
            lo = hi + 1
        union = " UNION ALL ".join(f"SELECT * FROM {ident(h)}" for h in held) or (
            "SELECT CAST(NULL AS BIGINT) AS rid, CAST(NULL AS BIGINT) AS parent, CAST(NULL AS BIGINT) AS bid, "
            "0 AS r WHERE FALSE")
        prop = held[0] if len(held) == 1 else s.put("prop", union)
        return prop, f"SELECT DISTINCT parent, r AS nxt FROM ({union}) AS u"

    def run(self, progress) -> int:
        eng, s = self.eng, self.s
        state = s.put("state", "SELECT CAST(1 AS BIGINT) AS bid, 0 AS attempt")
        rounds = 0
        while eng.scalar(f"SELECT count(*) FROM {ident(state)}"):
            rounds += 1
            # every cut judged alone first (cuts), then the taken cuts together
            prop, nxt = self.cuts(state)
            # the buckets whose every cut failed alone are final; those whose cut is taken back
            # below (culprits) try their next dimension in the next round
            taken_back: set[int] = set()
            applied = None  # the tuples with the accepted cuts applied: the next round's tuples
            while True:
                acc = prop if not taken_back else s.put(
                    "acc", f"SELECT * FROM {ident(prop)} WHERE parent NOT IN ({', '.join(map(str, sorted(taken_back)))})")
                n_acc, n_cut = eng.fetch_rows(f"SELECT count(*), count(DISTINCT parent) FROM {ident(acc)}")[1][0]
                if not n_acc:
                    applied = None
                    break
                applied = s.put("tup_next", f"SELECT t.* REPLACE (coalesce(a.bid, t.bid) AS bid) "
                                            f"FROM {ident(self.tup)} AS t LEFT JOIN {ident(acc)} AS a ON a.rid = t.rid")
                if n_cut == 1:  # one cut, which held alone: that check judged this very slicing
                    break
                changed = s.put("changed", f"SELECT DISTINCT bid, parent FROM {ident(acc)}")
                culprits = [r[0] for r in eng.fetch_rows(
                    self.model.plan(eng, ident(applied), self.chain(applied), ident(applied), mode="culprits",
                                    changed=changed))[1]]
                self.checks += 1
                if not culprits:
                    break
                taken_back.update(culprits)
            # apply the accepted cuts (the last tuples checked); open: their children, and the
            # buckets whose cut was taken back, with dimensions left
            if applied is not None:
                self.tup, self.s.slots["tup"], self.s.slots["tup_next"] = applied, applied, self.tup
            retry = "" if not taken_back else (  # the buckets whose cut was taken back: their next attempt
                f" UNION ALL SELECT parent, nxt FROM ({nxt}) AS x "
                f"WHERE parent IN ({', '.join(map(str, sorted(taken_back)))}) AND nxt < {self.tries}")
            state = s.put("state", f"SELECT DISTINCT bid, 0 AS attempt FROM {ident(acc)}{retry}")
            if progress:
                progress({"round": rounds, "open": eng.scalar(f"SELECT count(*) FROM {ident(state)}"),
                          "checks": self.checks})
        return rounds


def _generalize_columns(eng, s, base, brid, plain, attrs, k, hierarchies, seed):
    """Mondrian k-anonymity on each plain column's sub-table; returns (values table, generalized
    column indexes). The values table holds _adb_rid and every attribute (labels where generalized)."""
    from .mondrian import anonymize
    exprs = {a: f"b.{ident(a)}" for a in attrs}
    joins = []
    done = []
    for i, col in enumerate(plain):
        sub = s.table(f"SELECT CAST(b.{brid} AS BIGINT) AS {ident('slice_rid')}, {', '.join('b.' + ident(a) for a in col)} "
                      f"FROM {ident(base)} AS b")
        rel = s.name()
        hs = {a: h for a, h in (hierarchies or {}).items() if a in col}
        try:
            # slice_rid rides along unjudged: the join key back to the tuples, never published
            anonymize(sub, col, out=rel, engine=eng, k=k, hierarchies=hs, seed=seed, relaxed=True,
                      keep=["slice_rid"], _unjudged=("slice_rid",))
        except InfeasibleError as e:
            raise InfeasibleError(f"column {i + 1} ({', '.join(col)}) cannot be generalized to {k}-anonymity: {e}") from e
        for a in col:
            exprs[a] = f"g{i}.{ident(a)}"
        joins.append(f"JOIN {ident(rel)} AS g{i} ON g{i}.{ident('slice_rid')} = CAST(b.{brid} AS BIGINT)")
        done.append(i)
    vals = s.table(f"SELECT CAST(b.{brid} AS BIGINT) AS _adb_rid, "
                   + ", ".join(f"{exprs[a]} AS {ident(a)}" for a in attrs)
                   + f" FROM {ident(base)} AS b " + " ".join(joins))
    return vals, done
