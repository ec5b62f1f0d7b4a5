"""Aggregate COUNT query answering and the query-error workload [spec-closeness-slicing 6.4;
spec-presence-survey 3.6, Table III].

A query is ``SELECT COUNT(*) FROM T WHERE a_1 IN V_1 AND ... AND a_dim IN V_dim AND s IN V_s``;
:class:`Query` holds the V_j per QI column (a value set, or an inclusive numeric range ``(lo, hi)``)
and V_s. Three answers:

* :func:`true_count` - on the original table;
* :func:`anatomy_estimate` - on an Anatomy QIT/ST pair: sum over groups G of (#QIT rows of G
  matching the QI predicates) * (ST counts of G for V_s) / |G|;
* :func:`generalized_estimate` - on a generalized (Mondrian) release, under the uniform assumption:
  sum over released rows t with t[S] in V_s of prod_j |V_j ∩ R_j(t)| / |R_j(t)|;
* :func:`sliced_estimate` - on a sliced release (column tables): sum over buckets B of
  |B| * prod over the asked columns i of A_i / |B|, A_i = the rows of column i in B that satisfy
  the query's predicates on that column's attributes (the sensitive attribute is one of them).

:func:`workload` draws random queries as in 6.4 and :func:`query_error` gives the average relative
error rho = mean(|est - act| / act) * 100.

Everything is set-based: a batch of queries is loaded once into a scratch table of predicate
pieces (query id, column, value or range) by one statement with the lists bound as parameters,
and each of the three answers is one statement over the whole batch (``sql/query_*.sql.j2``), so
the number of statements does not grow with the number of queries.

Values compare as text on categorical (VARCHAR, ...) columns and by number on numeric and date
columns (dates as days, timestamps as epoch seconds); a range on a text column compares its
values parsed as numbers. NULL never matches. Numbers are compared as DOUBLE (exact up to 2^53).
A released label "{a, b}" is read as the values between the braces split at ", " (Mondrian's
format), so a categorical value that itself contains ", " or is written in braces is ambiguous.
"""

from __future__ import annotations

import datetime as _dt
import math
import random
import statistics
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Iterable, Sequence

from ..engines.base import Engine
from ..engines import connect
from ..errors import InfeasibleError, InputError
from ..hierarchy import EnumeratedHierarchy, Hierarchy
from ..schema import is_numeric_type, split_list, validate_roles
from ..sqlgen import ident

_INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
              "UBIGINT", "UHUGEINT")

#: the pieces table: (qid, col, v, lo, hi, rng)
_PIECE_COLS = [("qid", "INTEGER"), ("col", "VARCHAR"), ("v", "VARCHAR"), ("lo", "DOUBLE"), ("hi", "DOUBLE"),
               ("rng", "BOOLEAN")]


@dataclass
class Query:
    """One COUNT query.

    ``qi`` maps a QI column to a set (or list) of values - membership - or to a tuple ``(lo, hi)``,
    an inclusive range compared by number. An empty set matches nothing. ``sensitive`` is the set
    of sensitive values asked (a ``(lo, hi)`` tuple is a range too); empty or None means any.
    """

    qi: dict[str, Any] = field(default_factory=dict)
    sensitive: Any = None


# ------------------------------------------------------------------------------------------------
# public API

def true_count(engine: Engine | Any, table: str, query: Query, sensitive: str | None) -> int:
    """The true answer of ``query`` on ``table``."""
    return true_counts(engine, table, [query], sensitive)[0]


def anatomy_estimate(engine: Engine | Any, qit: str, st: str, query: Query, sensitive: str) -> float:
    """The Anatomy estimate of ``query`` on the QIT/ST pair ``qit``, ``st``."""
    return anatomy_estimates(engine, qit, st, [query], sensitive)[0]


def generalized_estimate(engine: Engine | Any, release: str, query: Query, sensitive: str | None,
                         hierarchies: dict[str, Hierarchy] | None = None) -> float:
    """The uniform-assumption estimate of ``query`` on the generalized release ``release``."""
    return generalized_estimates(engine, release, [query], sensitive, hierarchies)[0]


def true_counts(engine: Engine | Any, table: str, queries: Sequence[Query], sensitive: str | None) -> list[int]:
    """True answers of a batch of queries: two statements (plus the scratch table's drop)."""
    eng = connect(engine)
    queries = _check_queries(queries, sensitive)
    with eng.scratch("query") as s:
        pieces = _load_pieces(eng, s, queries, sensitive)
        return _true(eng, table, pieces, queries, sensitive)


def anatomy_estimates(engine: Engine | Any, qit: str, st: str, queries: Sequence[Query], sensitive: str) -> list[float]:
    """Anatomy estimates of a batch of queries on a QIT/ST pair (two statements)."""
    eng = connect(engine)
    queries = _check_queries(queries, sensitive)
    with eng.scratch("query") as s:
        pieces = _load_pieces(eng, s, queries, sensitive)
        return _anatomy(eng, qit, st, pieces, queries, sensitive)


def generalized_estimates(engine: Engine | Any, release: str, queries: Sequence[Query], sensitive: str | None,
                          hierarchies: dict[str, Hierarchy] | None = None) -> list[float]:
    """Uniform-assumption estimates of a batch of queries on a generalized release (two or three
    statements: the pieces, the hierarchies' nodes when given, the estimates)."""
    eng = connect(engine)
    queries = _check_queries(queries, sensitive)
    with eng.scratch("query") as s:
        pieces = _load_pieces(eng, s, queries, sensitive)
        return _generalized(eng, s, release, pieces, queries, sensitive, hierarchies)


def sliced_estimate(engine: Engine | Any, columns: Sequence[str], query: Query, sensitive: str | None) -> float:
    """The estimate of ``query`` on a sliced release given by its column tables."""
    return sliced_estimates(engine, columns, [query], sensitive)[0]


def sliced_estimates(engine: Engine | Any, columns: Sequence[str], queries: Sequence[Query],
                     sensitive: str | None) -> list[float]:
    """Estimates of a batch of queries on a sliced release: ``columns`` names its column tables
    (each with ``bucket_id`` and its attributes, e.g. ``SlicingResult.tables``); two statements."""
    eng = connect(engine)
    queries = _check_queries(queries, sensitive)
    with eng.scratch("query") as s:
        pieces = _load_pieces(eng, s, queries, sensitive)
        return _sliced(eng, columns, pieces, queries, sensitive)


def workload(engine: Engine | Any, source: str, qi: str | Iterable[str], sensitive: str, n: int = 1000,
             dim: int = 2, sel: float = 0.1, seed: int = 0, numeric: Iterable[str] | None = None,
             max_rounds: int = 100) -> list[Query]:
    """``n`` random COUNT queries over ``source`` with nonzero true counts [spec-closeness-slicing 6.4].

    Per query: ``dim`` QIs chosen uniformly; for each, |V| uniform in {1, ..., max(1, round(sel*|D|))}
    (|D| = its number of distinct non-NULL values); a numeric QI (numeric or date type, or listed in
    ``numeric``) gets a range ``(lo, hi)`` spanning |V| consecutive distinct values of its sorted
    domain, a categorical one a random subset. V_s is drawn the same way from the sensitive
    domain (as the set of the values; consecutive ones when the sensitive attribute is numeric).
    Queries with a true count of 0 are redrawn, in rounds of one batched count each; after
    ``max_rounds`` rounds an :class:`InfeasibleError` says how many are left. Reproducible: the
    draws come from ``random.Random(seed)`` over the domains (sorted), fetched once.
    """
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if not sensitive:
        raise InputError("the workload needs the sensitive attribute (its predicate V_s)")
    numeric = split_list(numeric, "numeric attributes")
    for c in numeric:
        if c not in qi_cols and c != sensitive:
            raise InputError(f"numeric attribute {c!r} is neither a quasi-identifier nor the sensitive attribute")
    types = validate_roles(eng, source, qi_cols, sensitive, {c: "numeric" for c in numeric}, label=str(source))
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputError(f"n must be a non-negative integer, got {n!r}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim <= len(qi_cols):
        raise InputError(f"dim must be an integer in 0..{len(qi_cols)} (the number of quasi-identifiers), got {dim!r}")
    if isinstance(sel, bool) or not isinstance(sel, (int, float)) or not 0 <= sel <= 1:
        raise InputError(f"sel must be a number in [0, 1], got {sel!r}")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
        raise InputError(f"max_rounds must be a positive integer, got {max_rounds!r}")
    cols = qi_cols + [sensitive]
    ordered = {c for c in cols if c in numeric or _kind(types[c]) != "text"}
    row = eng.fetch_rows(eng.render("query_domains.sql.j2", table=source, cols=cols))[1][0]
    domains: dict[str, list[Any]] = {}
    for c, values in zip(cols, row):
        values = list(values or [])
        if c in ordered:  # by number (dates by day); values that are no number last
            values.sort(key=lambda v: (_coord(v) is None, _coord(v) or 0.0, _text(v)))
        else:
            values.sort(key=lambda v: (type(v).__name__, v))
        domains[c] = values
    empty = [c for c in cols if not domains[c]]
    if empty:
        raise InfeasibleError(f"{source} has no non-NULL value in {', '.join(map(repr, empty))}: no query over "
                              f"{'it' if len(empty) == 1 else 'them'} can have a nonzero count")
    rng = random.Random(seed)

    def size(d: int) -> int:
        return rng.randint(1, max(1, min(d, math.floor(sel * d + 0.5))))

    def draw() -> Query:
        q: dict[str, Any] = {}
        for c in rng.sample(qi_cols, dim):
            dom = domains[c]
            m = size(len(dom))
            if c in ordered:
                i = rng.randrange(len(dom) - m + 1)
                q[c] = (dom[i], dom[i + m - 1])
            else:
                q[c] = frozenset(rng.sample(dom, m))
        dom = domains[sensitive]
        m = size(len(dom))
        if sensitive in ordered:
            i = rng.randrange(len(dom) - m + 1)
            vs = frozenset(dom[i:i + m])
        else:
            vs = frozenset(rng.sample(dom, m))
        return Query(q, vs)

    queries = [draw() for _ in range(n)]
    todo, rounds = list(range(n)), 0
    while todo:
        counts = true_counts(eng, source, [queries[i] for i in todo], sensitive)
        todo = [i for i, c in zip(todo, counts) if c == 0]
        if not todo:
            break
        if rounds == max_rounds:
            raise InfeasibleError(
                f"after {max_rounds} rounds of redrawing, {len(todo)} of {n} queries still have a true count of 0 on "
                f"{source} (dim = {dim}, sel = {sel}); predicates this narrow rarely meet a row: raise sel, lower "
                f"dim, or allow more rounds (max_rounds)")
        rounds += 1
        for i in todo:
            queries[i] = draw()
    return queries


def query_error(engine: Engine | Any, source: str, queries: Sequence[Query], *, qit: str | None = None,
                st: str | None = None, release: str | None = None, sensitive: str | None,
                hierarchies: dict[str, Hierarchy] | None = None,
                columns: Sequence[str] | None = None) -> dict[str, Any]:
    """The relative error of the estimates from a release against the true counts on ``source``.

    Give one release: ``qit`` and ``st`` (Anatomy), ``release`` (a generalized table;
    ``hierarchies`` for its hierarchy-node labels) or ``columns`` (a sliced release's column
    tables). Returns ``rho`` = mean(|est - act| / act) * 100 (percent)
    over the queries with act > 0, ``median`` (percent), ``max`` (percent), ``queries`` (all),
    ``used`` (act > 0), ``dropped`` (act = 0), and per query ``actual``, ``estimated`` and
    ``errors`` (percent, None where act = 0). Three statements plus the scratch table's drop
    (four with hierarchies), whatever the number of queries.
    """
    eng = connect(engine)
    anat = qit is not None or st is not None
    if sum((anat, release is not None, columns is not None)) > 1:
        raise InputError("give one release: qit and st (Anatomy), release (a generalized table) or columns "
                         "(a sliced release's column tables), not several")
    if anat and (qit is None or st is None):
        raise InputError("an Anatomy release needs both qit and st")
    if not anat and release is None and columns is None:
        raise InputError("give qit and st (an Anatomy release), release (a generalized one) or columns (a sliced one)")
    if anat and not sensitive:
        raise InputError("an Anatomy release needs the sensitive attribute")
    queries = _check_queries(queries, sensitive)
    with eng.scratch("query") as s:
        pieces = _load_pieces(eng, s, queries, sensitive)
        act = _true(eng, source, pieces, queries, sensitive)
        if anat:
            est = _anatomy(eng, qit, st, pieces, queries, sensitive)  # type: ignore[arg-type]
        elif columns is not None:
            est = _sliced(eng, columns, pieces, queries, sensitive)
        else:
            est = _generalized(eng, s, release, pieces, queries, sensitive, hierarchies)  # type: ignore[arg-type]
    errors = [abs(e - a) / a * 100 if a > 0 else None for a, e in zip(act, est)]
    used = [x for x in errors if x is not None]
    if not used:
        raise InputError(f"none of the {len(queries)} queries has a nonzero true count on {source}: the relative "
                         f"error |est - act| / act is undefined (draw the queries with workload(), which redraws them)")
    return {"rho": statistics.fmean(used), "median": statistics.median(used), "max": max(used),
            "queries": len(queries), "used": len(used), "dropped": len(queries) - len(used),
            "actual": act, "estimated": est, "errors": errors}


# ------------------------------------------------------------------------------------------------
# the pieces

def _check_queries(queries: Sequence[Query], sensitive: str | None) -> list[Query]:
    if isinstance(queries, Query):
        raise InputError("give a sequence of queries (true_count / ..._estimate take a single one)")
    out = list(queries)
    for i, q in enumerate(out):
        if not isinstance(q, Query):
            raise InputError(f"query {i} is a {type(q).__name__}, not an anonydb.utility.queries.Query")
        if not isinstance(q.qi, dict):
            raise InputError(f"query {i}: qi must map columns to value sets or (lo, hi) ranges")
        for c in q.qi:
            if not isinstance(c, str) or not c:
                raise InputError(f"query {i}: column names must be non-empty strings, got {c!r}")
            if sensitive is not None and c == sensitive:
                raise InputError(f"query {i}: {c!r} is the sensitive attribute; put its values in Query.sensitive")
        if _has_values(q.sensitive) and not sensitive:
            raise InputError(f"query {i} asks for sensitive values but no sensitive attribute was named")
    return out


def _has_values(pred: Any) -> bool:
    if pred is None:
        return False
    if isinstance(pred, (set, frozenset, list)):
        return len(pred) > 0
    return True


def _coord(v: Any) -> float | None:
    """The number a value compares as (the SQL side: query_macros.coord)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float, Decimal, Fraction)):
        x = float(v)
        return x if math.isfinite(x) else None
    if isinstance(v, _dt.datetime):
        if v.tzinfo is not None:
            return v.timestamp()
        return (v - _dt.datetime(1970, 1, 1)).total_seconds()
    if isinstance(v, _dt.date):
        return float((v - _dt.date(1970, 1, 1)).days)
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


def _text(v: Any) -> str | None:
    """The text a value compares as on categorical columns (CAST(x AS VARCHAR))."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return v if isinstance(v, str) else str(v)


def _load_pieces(eng: Engine, s: Any, queries: list[Query], sensitive: str | None) -> str:
    """One scratch table of the predicate pieces of all queries; returns its name."""
    cols: list[list[Any]] = [[] for _ in _PIECE_COLS]

    def add(qid: int, col: str, pred: Any, where: str) -> None:
        if isinstance(pred, tuple):
            if len(pred) != 2:
                raise InputError(f"query {qid}: {where} {col!r}: a range is a (lo, hi) tuple, got {pred!r}")
            lo, hi = _coord(pred[0]), _coord(pred[1])
            if lo is None or hi is None:
                raise InputError(f"query {qid}: {where} {col!r}: range bounds must be numbers or dates, got {pred!r}")
            rows = [(None, lo, hi, True)]
        else:
            if isinstance(pred, dict):
                raise InputError(f"query {qid}: {where} {col!r}: give a set of values or a (lo, hi) tuple, "
                                 f"got a dict")
            if isinstance(pred, Iterable) and not isinstance(pred, (str, bytes)):
                values = list(pred)  # a set, list, range ...
            else:
                values = [pred]  # a single value
            seen: dict[tuple[Any, Any], None] = {}
            for v in values:
                if v is None:
                    continue  # NULL matches nothing
                x = _coord(v)
                seen.setdefault((_text(v), x), None)
            # an empty set still counts as a predicate (all-NULL piece: it matches nothing)
            rows = [(t, x, x, False) for t, x in seen] or [(None, None, None, False)]
        for t, lo, hi, r in rows:
            for lst, val in zip(cols, (qid, col, t, lo, hi, r)):
                lst.append(val)

    for i, q in enumerate(queries):
        for c, pred in q.qi.items():
            add(i, c, pred, "column")
        if _has_values(q.sensitive):
            add(i, sensitive, q.sensitive, "sensitive attribute")  # type: ignore[arg-type]
    name = s.name()
    eng.execute(eng.render("query_load.sql.j2", name=name, cols=_PIECE_COLS), cols)
    return name


# ------------------------------------------------------------------------------------------------
# the three answers

def _kind(t: str) -> str:
    """int | real | date | ts | text: how a column of type ``t`` compares."""
    u = t.upper()
    if u.startswith(_INT_TYPES) or (u.startswith("DECIMAL") and u.replace(" ", "").endswith(",0)")):
        return "int"
    if is_numeric_type(u):
        return "real"
    if u == "DATE":
        return "date"
    if u.startswith("TIMESTAMP"):
        return "ts"
    return "text"


def _used_columns(queries: list[Query]) -> list[str]:
    return list(dict.fromkeys(c for q in queries for c in q.qi))


def _need(eng: Engine, relation: str, names: Iterable[str], what: str) -> dict[str, str]:
    if not isinstance(relation, str) or not relation:
        raise InputError(f"{what} must name a table or view, got {relation!r}")
    if not eng.exists(relation):
        raise InputError(f"{what} {relation!r} does not exist")
    types = dict(eng.columns(relation))
    for c in names:
        if c not in types:
            raise InputError(f"column {c!r} not found in {what} {relation!r}; its columns are: {', '.join(types)}")
    return types


def _true(eng: Engine, table: str, pieces: str, queries: list[Query], sensitive: str | None) -> list[int]:
    names = _used_columns(queries)
    use_s = bool(sensitive) and any(_has_values(q.sensitive) for q in queries)
    types = _need(eng, table, names + ([sensitive] if use_s else []), "table")  # type: ignore[list-item]
    cols = [{"name": c, "kind": _kind(types[c])} for c in names]
    scol = {"name": sensitive, "kind": _kind(types[sensitive])} if use_s else None  # type: ignore[index]
    rows = eng.fetch_rows(eng.render("query_true.sql.j2", table=table, cols=cols, scol=scol, pieces=pieces,
                                     n=len(queries)))[1]
    return [int(r[1]) for r in rows]


def _anatomy(eng: Engine, qit: str, st: str, pieces: str, queries: list[Query], sensitive: str) -> list[float]:
    names = _used_columns(queries)
    qtypes = _need(eng, qit, names + ["group_id"], "QIT")
    stypes = _need(eng, st, ["group_id", sensitive, "count"], "ST")
    cols = [{"name": c, "kind": _kind(qtypes[c])} for c in names]
    scol = {"name": sensitive, "kind": _kind(stypes[sensitive])}
    rows = eng.fetch_rows(eng.render("query_anatomy.sql.j2", qit=qit, st=st, cols=cols, scol=scol, pieces=pieces,
                                     n=len(queries)))[1]
    return [float(r[1]) for r in rows]


def _sliced(eng: Engine, columns: Sequence[str], pieces: str, queries: list[Query], sensitive: str | None
            ) -> list[float]:
    if isinstance(columns, str) or not columns:
        raise InputError("columns must list the column tables of the sliced release")
    asked = _used_columns(queries) + ([sensitive] if sensitive and any(_has_values(q.sensitive) for q in queries)
                                      else [])
    owner: dict[str, tuple[int, str]] = {}
    tables = []
    for i, t in enumerate(columns):
        types = _need(eng, t, ["bucket_id"], "column table")
        for c in types:
            if c in ("bucket_id", "row_in_bucket"):
                continue
            if c in owner:
                raise InputError(f"attribute {c!r} is in two column tables, {owner[c][1]!r} and {t!r}")
            owner[c] = (i, t)
        cols = [{"name": c, "kind": _kind(types[c])} for c in asked if c in types]
        if cols:
            tables.append({"name": t, "i": i, "cols": cols})
    for c in asked:
        if c not in owner:
            raise InputError(f"attribute {c!r} is in none of the column tables {', '.join(map(repr, columns))}")
    if not tables:  # no predicates at all: every query counts the table
        n = eng.scalar(f"SELECT count(*) FROM {ident(columns[0])}")
        return [float(n)] * len(queries)
    rows = eng.fetch_rows(eng.render("query_sliced.sql.j2", tables=tables, first=columns[0], pieces=pieces,
                                     n=len(queries)))[1]
    return [float(r[1]) for r in rows]


def _generalized(eng: Engine, s: Any, release: str, pieces: str, queries: list[Query], sensitive: str | None,
                 hierarchies: dict[str, Hierarchy] | None) -> list[float]:
    names = _used_columns(queries)
    use_s = bool(sensitive) and any(_has_values(q.sensitive) for q in queries)
    types = _need(eng, release, names + ([sensitive] if use_s else []), "release")  # type: ignore[list-item]
    cols = []
    for c in names:
        lo, hi = f"{c}_lo", f"{c}_hi"
        if lo in types and hi in types:
            kind = _kind(types[lo])
            cols.append({"name": c, "mode": "box", "lo": lo, "hi": hi, "kind": kind, "disc": kind in ("int", "date")})
        elif _kind(types[c]) != "text":
            kind = _kind(types[c])
            cols.append({"name": c, "mode": "point", "kind": kind, "disc": kind in ("int", "date")})
        else:
            cols.append({"name": c, "mode": "label", "kind": "text"})
    scol = {"name": sensitive, "kind": _kind(types[sensitive])} if use_s else None  # type: ignore[index]
    keys = [k for c in cols for k in ((c["lo"], c["hi"]) if c["mode"] == "box" else (c["name"],))]
    hier = None
    hierarchies = dict(hierarchies or {})
    labelled = {c["name"] for c in cols if c["mode"] == "label"}
    lists: list[list[str]] = [[], [], []]
    for c, h in hierarchies.items():
        if c not in labelled:
            continue  # not asked about, or numeric bounds: the labels are not needed
        if not isinstance(h, EnumeratedHierarchy):
            raise InputError(f"column {c!r}: hierarchy labels are resolved through an enumerated hierarchy (rows of "
                             f"leaf, ..., root); {type(h).__name__} is not one")
        for r in h.rows:
            for node in dict.fromkeys(r):
                lists[0].append(c)
                lists[1].append(node)
                lists[2].append(r[0])
    if lists[0]:
        hier = s.name()
        eng.execute(eng.render("query_load.sql.j2", name=hier,
                               cols=[("col", "VARCHAR"), ("node", "VARCHAR"), ("leaf", "VARCHAR")]), lists)
    rows = eng.fetch_rows(eng.render("query_generalized.sql.j2", release=release, cols=cols, keys=keys, scol=scol,
                                     hier=hier, pieces=pieces, n=len(queries)))[1]
    return [float(r[1]) for r in rows]
