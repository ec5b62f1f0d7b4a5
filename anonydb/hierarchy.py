"""Value generalization hierarchies: level 0 is the original value, level H (the height) the root.

Two flavours share one API (:class:`Hierarchy`):

* **Enumerated** (:class:`EnumeratedHierarchy`, ARX CSV format): one row per leaf,
  ``value;level1;...;root``. Leaves and labels are strings; a data column is matched against the
  leaves **as text** (``CAST(col AS VARCHAR)``), so an INTEGER column 39 matches the leaf ``'39'``
  (a DOUBLE 39.0 renders as ``'39.0'`` and would not).
* **Rule-based**: each level is a SQL expression over the column, so no table is needed:
  :meth:`Hierarchy.intervals` (numbers -> half-open intervals ``"[20, 30["``),
  :meth:`Hierarchy.masking` (codes -> ``4767*``, ``476**`` ...) and :meth:`Hierarchy.dates`
  (``2020-03-17`` -> ``2020-03`` -> ``2020`` -> ``*``).

NULL semantics: a NULL value is a value of its own and stays NULL at every level, the root
included; it is never a coverage error. Generalizing to level 0 leaves a column unchanged
(original type); every level >= 1 yields a VARCHAR label.

Long form of a hierarchy (:meth:`Hierarchy.materialize`): ``(leaf VARCHAR, h INTEGER, node VARCHAR)``,
one row per leaf and level h = 0 .. H (``node = leaf`` at h = 0); wide form
(:meth:`Hierarchy.materialize_wide`): ``level_0 .. level_H`` with ``level_0`` the leaf.
"""

from __future__ import annotations

import abc
import csv
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .errors import InputError
from .sqlgen import ident, literal

#: Values listed in a coverage error before "... and N more".
MAX_LISTED = 20


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _fmt_num(v: int | float) -> str:
    """A number as it appears in an interval label: 20, 2.5, inf, -inf."""
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v.is_integer():
            return str(int(v))
        return repr(v)
    return str(v)


def _num_sql(v: int | float) -> str:
    """A finite number as a parenthesized SQL literal (so ``x - (-5)`` never becomes a comment)."""
    return f"({literal(v)})"


class Hierarchy(abc.ABC):
    """A generalization hierarchy with levels 0 (the original value) .. ``height`` (the root)."""

    #: Where the hierarchy came from (a file path, "rows", "intervals" ...), for messages.
    source: str = "hierarchy"
    root: str = "*"

    # -- shape -------------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def height(self) -> int:
        """H: the number of levels above the leaves (the root is level H)."""

    @property
    def levels(self) -> int:
        """The number of levels, H + 1 (level 0 .. H)."""
        return self.height + 1

    def check_level(self, level: Any, attribute: str | None = None) -> int:
        """``level`` as an int in 0 .. H, else InputError naming the attribute and the range."""
        who = f"attribute {attribute!r}" if attribute is not None else f"hierarchy {self.source}"
        if isinstance(level, bool) or not isinstance(level, int):
            raise InputError(f"{who}: generalization level must be an integer in 0..{self.height}, got {level!r}")
        if not 0 <= level <= self.height:
            raise InputError(f"{who}: generalization level {level} is out of range; allowed levels are 0..{self.height}")
        return level

    # -- SQL -----------------------------------------------------------------------------------
    def sql_expr(self, column_sql: str, level: int, dialect: str = "duckdb") -> str:
        """The SQL expression generalizing ``column_sql`` (an already quoted column expression) to
        ``level``: the column itself at level 0, a VARCHAR label above, NULL for NULL."""
        level = self.check_level(level)
        if level == 0:
            return column_sql
        if level == self.height:
            return f"CASE WHEN {column_sql} IS NULL THEN NULL ELSE {literal(self.root, dialect)} END"
        return self._level_sql(column_sql, level, dialect)

    @abc.abstractmethod
    def _level_sql(self, x: str, level: int, dialect: str) -> str:
        """The expression for 0 < level < H."""

    def validate(self, engine: Any, relation: str, column: str, *, name: str | None = None,
                 label: str | None = None, where: str | None = None) -> None:
        """Check that every distinct non-NULL value of ``relation.column`` is covered; otherwise
        raise InputError listing the uncovered values (the first 20 and their count; the message says
        so when it covers none of them). Messages name what the user knows, never a scratch table:
        ``name`` is the relation as the user gave it (a file or table; default ``relation``),
        ``label`` the column (default ``column``), ``where`` a phrase for data the user gave in
        another form (e.g. "the population counts"), used instead of the quoted ``name``."""
        validate_all(engine, relation, {column: self}, name=name, labels={column: label} if label else None,
                     where=where)

    def nodes_sql(self, engine: Any, relation: str, column: str) -> str:
        """A SELECT of the hierarchy's nodes below the root (one VARCHAR column ``node``, the leaves
        included; a rule-based hierarchy's over the distinct values of ``relation.column``): what a
        value of the data may name as a node (personalized privacy's guarding nodes)."""
        long = self._table_sql(engine, relation, column, long=True)
        return f"SELECT node FROM ({long.sql}) AS _adb_h WHERE h < {self.height} AND node IS NOT NULL"

    @abc.abstractmethod
    def _uncovered_context(self, dialect: str) -> dict[str, Any]:
        """Template context for hierarchy_uncovered.sql.j2: ``values`` (leaves) or ``predicate``."""

    def _uncovered_what(self) -> str:
        return "(not among its leaves)"

    def materialize(self, engine: Any, name: str, relation: str | None = None, column: str | None = None, *,
                    temp: bool = False, replace: bool = False) -> str:
        """Create table ``name`` (leaf VARCHAR, h INTEGER, node VARCHAR): every leaf at every level
        h = 0 .. H. Rule-based hierarchies are materialized over the distinct non-NULL values of
        ``relation.column`` (both required then). Returns ``name``."""
        engine.create_table_as(name, self._table_sql(engine, relation, column, long=True), temp=temp, replace=replace)
        return name

    def materialize_wide(self, engine: Any, name: str, relation: str | None = None, column: str | None = None, *,
                         temp: bool = False, replace: bool = False) -> str:
        """Create table ``name`` (level_0, ..., level_H), all VARCHAR, one row per leaf."""
        engine.create_table_as(name, self._table_sql(engine, relation, column, long=False), temp=temp, replace=replace)
        return name

    @abc.abstractmethod
    def _table_sql(self, engine: Any, relation: str | None, column: str | None, long: bool) -> Any:
        """The SELECT (Rendered) behind materialize / materialize_wide."""

    @abc.abstractmethod
    def ancestors(self, value: Any) -> list[str]:
        """The labels of ``value`` at levels 0 .. H (level 0 is the value as text)."""

    # -- constructors --------------------------------------------------------------------------
    @staticmethod
    def from_arx(path: str | Path, delimiter: str = ";") -> "EnumeratedHierarchy":
        """Read an ARX hierarchy CSV: rows ``value;level1;...;root``, no header."""
        p = Path(path)
        if not p.is_file():
            raise InputError(f"hierarchy file not found: {str(path)!r}")
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            text = p.read_text(encoding="latin-1")
        lines = text.splitlines()
        numbered = [(i + 1, row) for i, row in enumerate(csv.reader(lines, delimiter=delimiter)) if row]
        return EnumeratedHierarchy(numbered, source=str(path))

    @staticmethod
    def from_rows(rows: Iterable[Sequence[Any]], source: str = "rows") -> "EnumeratedHierarchy":
        """An enumerated hierarchy from rows ``(leaf, level1, ..., root)``; values become ``str``."""
        return EnumeratedHierarchy([(i + 1, list(r)) for i, r in enumerate(rows)], source=source)

    @staticmethod
    def from_mapping(mapping: Mapping[Any, Sequence[Any]], source: str = "mapping") -> "EnumeratedHierarchy":
        """An enumerated hierarchy from ``{leaf: (level1, ..., root)}``."""
        return Hierarchy.from_rows(([leaf, *up] for leaf, up in mapping.items()), source=source)

    @staticmethod
    def intervals(widths: Sequence[int] | None = None, breakpoints: Sequence[Any] | None = None, *,
                  origin: int | None = None, lower: float | None = None, upper: float | None = None,
                  root: str = "*") -> "IntervalHierarchy":
        """Numbers -> half-open intervals ``"[lo, hi["`` (level i = the i-th width or breakpoint list),
        top level ``root``. See :class:`IntervalHierarchy`."""
        return IntervalHierarchy(widths=widths, breakpoints=breakpoints, origin=origin, lower=lower, upper=upper,
                                 root=root)

    @staticmethod
    def masking(length: int = 5, char: str = "*") -> "MaskingHierarchy":
        """Fixed-length codes; level i masks the last i characters (47677 -> 4767* -> ... -> *****)."""
        return MaskingHierarchy(length=length, char=char)

    @staticmethod
    def dates(levels: Sequence[str] = ("day", "month", "year"), root: str = "*") -> "DateHierarchy":
        """Dates: level i truncates to ``levels[i]`` (2020-03-17 -> 2020-03 -> 2020), then ``root``."""
        return DateHierarchy(levels=levels, root=root)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(source={self.source!r}, height={self.height})"


def validate_all(engine: Any, relation: str, hierarchies: Mapping[str, "Hierarchy"], *, name: str | None = None,
                 labels: Mapping[str, str] | None = None, where: str | None = None) -> None:
    """:meth:`Hierarchy.validate` for several columns of one relation (column -> hierarchy), in one
    statement; the error names the first column, in the given order, that its hierarchy does not
    cover. ``labels``: the columns' names as the user knows them (default the column)."""
    if not hierarchies:
        return
    shown_rel = where if where is not None else repr(relation if name is None else str(name))
    cols = [c for c, _ in engine.columns(relation)]
    items = list(hierarchies.items())
    for column, _ in items:
        if column not in cols:
            shown_col = (labels or {}).get(column, column)
            raise InputError(f"column {shown_col!r} not found in {shown_rel} (columns: {', '.join(cols)})")
    rows = engine.fetch_rows(engine.render(
        "hierarchy_uncovered.sql.j2", relation=relation, limit=MAX_LISTED,
        items=[{"column": c, **h._uncovered_context("duckdb")} for c, h in items]))[1]
    if not rows:
        return
    i = rows[0][0]
    column, h = items[i]
    rows = [r[1:] for r in rows if r[0] == i]
    total = int(rows[0][1])
    shown = ", ".join(repr(r[0]) for r in rows)
    more = f" ... and {total - len(rows)} more" if total > len(rows) else ""
    distinct = int(engine.scalar(f"SELECT count(DISTINCT {ident(column)}) FROM {ident(relation)}") or 0)
    count = f"any of the column's {total} value(s)" if total >= distinct else f"{total} value(s)"
    raise InputError(f"the hierarchy for column {(labels or {}).get(column, column)!r} of {shown_rel} ({h.source}) "
                     f"does not cover {count} {h._uncovered_what()}: {shown}{more}")


# ------------------------------------------------------------------------------------------------
class EnumeratedHierarchy(Hierarchy):
    """An explicit hierarchy: each leaf with its ancestors at levels 1 .. H (ARX format).

    Validated on construction: every row has the same number of columns (>= 2), no empty label,
    a single root (all last columns equal), no duplicate leaf, and the tree property (a node at
    level h has exactly one parent at level h+1).
    """

    def __init__(self, numbered_rows: Sequence[tuple[int, Sequence[Any]]], source: str = "rows"):
        self.source = source
        rows: list[list[str]] = []
        lines: list[int] = []
        for line, raw in numbered_rows:
            rows.append([v if isinstance(v, str) else str(v) for v in raw])
            lines.append(line)
        if not rows:
            raise InputError(f"hierarchy {source} is empty")
        width = len(rows[0])
        if width < 2:
            raise InputError(f"hierarchy {source}: line {lines[0]} ({rows[0][0] if rows[0] else ''!r}) has "
                             f"{width} column(s); a hierarchy needs a leaf and at least a root (2 columns)")
        for line, r in zip(lines, rows):
            if len(r) != width:
                first = r[0] if r else ""
                raise InputError(f"hierarchy {source}: inconsistent depth: line {line} (value {first!r}) has "
                                 f"{len(r)} column(s), line {lines[0]} has {width}")
            for j, v in enumerate(r):
                if v == "":
                    raise InputError(f"hierarchy {source}: empty label at line {line}, column {j + 1} (level {j})")
        roots: dict[str, int] = {}
        for line, r in zip(lines, rows):
            roots.setdefault(r[-1], line)
        if len(roots) > 1:
            listed = ", ".join(f"{k!r} (line {v})" for k, v in list(roots.items())[:5])
            raise InputError(f"hierarchy {source}: more than one root (last column): {listed}; "
                             f"every row must end with the same root")
        seen: dict[str, int] = {}
        for line, r in zip(lines, rows):
            if r[0] in seen:
                raise InputError(f"hierarchy {source}: duplicate leaf {r[0]!r} (lines {seen[r[0]]} and {line})")
            seen[r[0]] = line
        for h in range(1, width - 1):
            parent: dict[str, tuple[str, int]] = {}
            for line, r in zip(lines, rows):
                got = parent.setdefault(r[h], (r[h + 1], line))
                if got[0] != r[h + 1]:
                    raise InputError(f"hierarchy {source}: node {r[h]!r} at level {h} has two parents at level "
                                     f"{h + 1}: {got[0]!r} (line {got[1]}) and {r[h + 1]!r} (line {line})")
        self.rows: list[tuple[str, ...]] = [tuple(r) for r in rows]
        self.root = rows[0][-1]
        self._index = {r[0]: i for i, r in enumerate(self.rows)}
        self._values_cache: dict[tuple[Any, str], str] = {}

    @property
    def height(self) -> int:
        return len(self.rows[0]) - 1

    @property
    def leaves(self) -> list[str]:
        return [r[0] for r in self.rows]

    def nodes(self, level: int) -> list[str]:
        """The distinct labels at ``level`` in file order."""
        level = self.check_level(level)
        return list(dict.fromkeys(r[level] for r in self.rows))

    def mapping(self, level: int) -> list[tuple[str, str]]:
        """(leaf, label at ``level``) for every leaf."""
        level = self.check_level(level)
        return [(r[0], r[level]) for r in self.rows]

    def ancestors(self, value: Any) -> list[str]:
        key = value if isinstance(value, str) else str(value)
        if key not in self._index:
            raise InputError(f"value {key!r} is not a leaf of hierarchy {self.source}")
        return list(self.rows[self._index[key]])

    def values_sql(self, what: str | int, dialect: str = "duckdb") -> str:
        """The body of a SQL VALUES list (cached): ``"rows"`` -> ``(leaf, level1, ..., root)``
        per leaf, ``"leaves"`` -> ``(leaf)``, an int level -> ``(leaf, label at level)``. Every
        value is rendered by :func:`~anonydb.sqlgen.literal`."""
        key = (what, dialect)
        if key not in self._values_cache:
            lits: dict[str, str] = {}

            def lit(v: str) -> str:
                if v not in lits:
                    lits[v] = literal(v, dialect)
                return lits[v]

            if what == "rows":
                tuples: Iterable[Sequence[str]] = self.rows
            elif what == "leaves":
                tuples = [(r[0],) for r in self.rows]
            else:
                tuples = self.mapping(what)  # type: ignore[arg-type]
            self._values_cache[key] = ", ".join("(" + ", ".join(lit(v) for v in t) + ")" for t in tuples)
        return self._values_cache[key]

    def _level_sql(self, x: str, level: int, dialect: str) -> str:
        # A CASE over the leaves: fine for small hierarchies; generalize_sql joins instead.
        whens = " ".join(f"WHEN {literal(a, dialect)} THEN {literal(b, dialect)}" for a, b in self.mapping(level))
        return f"CASE CAST({x} AS VARCHAR) {whens} END"

    def _uncovered_context(self, dialect: str) -> dict[str, Any]:
        return {"values": self.values_sql("leaves", dialect), "predicate": None}

    def _table_sql(self, engine: Any, relation: str | None, column: str | None, long: bool) -> Any:
        cols = [f"level_{h}" for h in range(self.levels)]
        return engine.render("hierarchy_table.sql.j2", values=self.values_sql("rows"), cols=cols,
                             long=long, relation=None, column=None, exprs=None)


# ------------------------------------------------------------------------------------------------
class RuleHierarchy(Hierarchy):
    """A hierarchy whose levels are SQL expressions over the column."""

    def _uncovered_context(self, dialect: str) -> dict[str, Any]:
        return {"values": None, "predicate": self._uncovered_sql("_adb_x", dialect)}

    @abc.abstractmethod
    def _uncovered_sql(self, x: str, dialect: str) -> str:
        """A predicate over a non-NULL value ``x``: true when the hierarchy does not cover it."""

    def _table_sql(self, engine: Any, relation: str | None, column: str | None, long: bool) -> Any:
        if relation is None or column is None:
            raise InputError(f"a rule-based hierarchy ({self.source}) is materialized over the values of a column: "
                             f"give relation and column")
        x = "_adb_x"
        exprs = [f"CAST({x} AS VARCHAR)"] + [self.sql_expr(x, h) for h in range(1, self.levels)]
        cols = [f"level_{h}" for h in range(self.levels)]
        return engine.render("hierarchy_table.sql.j2", values=None, cols=cols, long=long,
                             relation=relation, column=column, exprs=exprs)

    def ancestors(self, value: Any) -> list[str]:
        """Evaluated by the same SQL expressions, on a private in-memory DuckDB."""
        import duckdb

        if value is None:
            return [None] * self.levels  # type: ignore[list-item]
        x = "_adb_x"
        exprs = [f"CAST({x} AS VARCHAR)"] + [self.sql_expr(x, h) for h in range(1, self.levels)]
        con = duckdb.connect()
        try:
            bad = con.execute(f"SELECT {self._uncovered_sql(x, 'duckdb')} FROM (SELECT ? AS {x}) AS _adb_v",
                              [value]).fetchone()[0]
            if bad:
                raise InputError(f"value {value!r} is not covered by hierarchy {self.source} {self._uncovered_what()}")
            return list(con.execute(f"SELECT {', '.join(exprs)} FROM (SELECT ? AS {x}) AS _adb_v", [value]).fetchone())
        finally:
            con.close()


class IntervalHierarchy(RuleHierarchy):
    """Numbers -> half-open intervals. Level 0: the number; level i (1 .. n): the interval
    ``"[lo, hi["`` (lo <= x < hi) of the i-th width or breakpoint list; level n+1: ``root``.

    * ``widths=[5, 10, 20]``: level i cuts the line into intervals of width ``widths[i-1]`` aligned
      at ``origin`` (default ``lower`` when it is an integer, else 0). Widths are positive integers,
      each a multiple of the previous one (so intervals nest). ``lower``/``upper`` optionally bound
      the covered range ``[lower, upper[``.
    * ``breakpoints=[[0, 20, 40, 60], [0, 40, 60]]``: level i has the intervals between consecutive
      cut points of the i-th list (finest first); each list is increasing, each coarser list is a
      subset of the finer one with the same ends. The covered range is ``[first, last[``; use
      ``-math.inf`` / ``math.inf`` as ends for open-ended intervals (labelled ``-inf`` / ``inf``).

    Matching is numeric (``CAST(col AS DOUBLE)``); values outside the covered range or not
    numeric are reported by :meth:`validate` (and map to NULL in the expressions).
    """

    def __init__(self, widths: Sequence[int] | None = None, breakpoints: Sequence[Any] | None = None, *,
                 origin: int | None = None, lower: float | None = None, upper: float | None = None,
                 root: str = "*"):
        if (widths is None) == (breakpoints is None):
            raise InputError("intervals: give exactly one of widths or breakpoints")
        if not isinstance(root, str) or root == "":
            raise InputError(f"intervals: root must be a non-empty string, got {root!r}")
        self.root = root
        for name, v in (("lower", lower), ("upper", upper)):
            if v is not None and (not _is_number(v) or math.isnan(v)):
                raise InputError(f"intervals: {name} must be a number, got {v!r}")
        self.widths: list[int] | None = None
        self.breakpoints: list[list[int | float]] | None = None
        if widths is not None:
            if not isinstance(widths, (list, tuple)) or not widths:
                raise InputError(f"intervals: widths must be a non-empty list of positive integers, got {widths!r}")
            for w in widths:
                if isinstance(w, bool) or not isinstance(w, int) or w <= 0:
                    raise InputError(f"intervals: width {w!r} is not a positive integer "
                                     f"(for fractional intervals give breakpoints)")
            for a, b in zip(widths, widths[1:]):
                if b <= a or b % a:
                    raise InputError(f"intervals: width {b} is not a larger multiple of the previous width {a}: "
                                     f"the intervals of a level must nest in those of the next")
            if origin is None:
                origin = lower if isinstance(lower, int) and not isinstance(lower, bool) else 0
            if isinstance(origin, bool) or not isinstance(origin, int):
                raise InputError(f"intervals: origin must be an integer, got {origin!r}")
            if lower is not None and upper is not None and lower >= upper:
                raise InputError(f"intervals: lower ({lower}) must be below upper ({upper})")
            if (lower is not None and math.isinf(lower)) or (upper is not None and math.isinf(upper)):
                raise InputError("intervals: lower/upper must be finite (omit them for an unbounded range)")
            self.widths, self.origin, self.lower, self.upper = list(widths), origin, lower, upper
            self.source = f"intervals(widths={self.widths})"
        else:
            if origin is not None or lower is not None or upper is not None:
                raise InputError("intervals: origin, lower and upper apply to widths; breakpoints set their own range")
            if not isinstance(breakpoints, (list, tuple)) or not breakpoints:
                raise InputError(f"intervals: breakpoints must be a non-empty list of lists, got {breakpoints!r}")
            levels = [breakpoints] if all(_is_number(b) for b in breakpoints) else breakpoints
            bps: list[list[int | float]] = []
            for i, lv in enumerate(levels):
                if not isinstance(lv, (list, tuple)) or len(lv) < 2 or not all(_is_number(b) for b in lv):
                    raise InputError(f"intervals: breakpoints level {i + 1} must be a list of at least two numbers, "
                                     f"got {lv!r}")
                if any(isinstance(b, float) and math.isnan(b) for b in lv):
                    raise InputError(f"intervals: breakpoints level {i + 1} contains NaN")
                if any(math.isinf(b) for b in lv[1:-1]) or lv[0] == math.inf or lv[-1] == -math.inf:
                    raise InputError(f"intervals: breakpoints level {i + 1}: only the first may be -inf and only "
                                     f"the last inf, got {list(lv)}")
                if any(b >= c for b, c in zip(lv, lv[1:])):
                    raise InputError(f"intervals: breakpoints level {i + 1} must be strictly increasing, got {list(lv)}")
                bps.append(list(lv))
            for i, (fine, coarse) in enumerate(zip(bps, bps[1:])):
                if fine[0] != coarse[0] or fine[-1] != coarse[-1] or not set(coarse) <= set(fine):
                    raise InputError(f"intervals: breakpoints level {i + 2} {coarse} must be a subset of level {i + 1} "
                                     f"{fine} with the same first and last cut points, so that intervals nest")
            self.breakpoints = bps
            self.lower, self.upper = bps[0][0], bps[0][-1]
            self.origin = 0
            self.source = f"intervals(breakpoints={self.breakpoints})"

    @property
    def height(self) -> int:
        return len(self.widths if self.widths is not None else self.breakpoints) + 1  # type: ignore[arg-type]

    def range_text(self) -> str:
        lo = "-inf" if self.lower is None else _fmt_num(self.lower)
        hi = "inf" if self.upper is None else _fmt_num(self.upper)
        return f"[{lo}, {hi}["

    def _uncovered_what(self) -> str:
        return f"(outside {self.range_text()} or not numeric)"

    def _uncovered_sql(self, x: str, dialect: str) -> str:
        v = f"TRY_CAST({x} AS DOUBLE)"
        parts = [f"{v} IS NULL", f"isnan({v})"]
        if self.lower is not None and not math.isinf(self.lower):
            parts.append(f"{v} < {_num_sql(self.lower)}")
        if self.upper is not None and not math.isinf(self.upper):
            parts.append(f"{v} >= {_num_sql(self.upper)}")
        return "(" + " OR ".join(parts) + ")"

    def _level_sql(self, x: str, level: int, dialect: str) -> str:
        v = f"CAST({x} AS DOUBLE)"
        if self.widths is not None:
            w, o = self.widths[level - 1], self.origin
            lo = f"(CAST(FLOOR(({v} - {_num_sql(o)}) / {w}) AS BIGINT) * {w} + {_num_sql(o)})"
            label = f"'[' || CAST({lo} AS VARCHAR) || ', ' || CAST({lo} + {w} AS VARCHAR) || '['"
            guards = []
            if self.lower is not None:
                guards.append(f"{v} < {_num_sql(self.lower)}")
            if self.upper is not None:
                guards.append(f"{v} >= {_num_sql(self.upper)}")
            if not guards:
                return f"({label})"
            return f"CASE WHEN {' OR '.join(guards)} THEN NULL ELSE {label} END"
        bps = self.breakpoints[level - 1]  # type: ignore[index]
        whens = [f"WHEN {x} IS NULL THEN NULL"]
        if not math.isinf(bps[0]):
            whens.append(f"WHEN {v} < {_num_sql(bps[0])} THEN NULL")
        for a, b in zip(bps, bps[1:]):
            label = literal(f"[{_fmt_num(a)}, {_fmt_num(b)}[", dialect)
            if math.isinf(b):
                whens.append(f"ELSE {label}")
            else:
                whens.append(f"WHEN {v} < {_num_sql(b)} THEN {label}")
        return "CASE " + " ".join(whens) + " END"


class MaskingHierarchy(RuleHierarchy):
    """Fixed-length codes (ZIP codes ...): level i (0 .. length) replaces the last i characters of
    the text by ``char``: 47677 -> 4767* -> 476** -> 47*** -> 4**** -> *****. Height = ``length``;
    the root is ``char * length``. Values whose text is not exactly ``length`` characters are not
    covered (e.g. an INTEGER ZIP column that lost its leading zeros)."""

    def __init__(self, length: int = 5, char: str = "*"):
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise InputError(f"masking: length must be a positive integer, got {length!r}")
        if not isinstance(char, str) or len(char) != 1:
            raise InputError(f"masking: char must be a single character, got {char!r}")
        self.length, self.char = length, char
        self.root = char * length
        self.source = f"masking(length={length})"

    @property
    def height(self) -> int:
        return self.length

    def _uncovered_what(self) -> str:
        return f"(not exactly {self.length} characters long)"

    def _uncovered_sql(self, x: str, dialect: str) -> str:
        return f"LENGTH(CAST({x} AS VARCHAR)) <> {self.length}"

    def _level_sql(self, x: str, level: int, dialect: str) -> str:
        return f"(SUBSTRING(CAST({x} AS VARCHAR), 1, {self.length - level}) || {literal(self.char * level, dialect)})"


#: Date granularities, finest first, and their labels.
DATE_GRAINS = ("datetime", "day", "month", "quarter", "year", "decade")


class DateHierarchy(RuleHierarchy):
    """Dates (DATE, TIMESTAMP, or ISO text): level 0 is the value, level i (1 .. n-1) truncates it
    to ``levels[i]``, level n is ``root``. Granularities and labels: ``day`` 2020-03-17,
    ``month`` 2020-03, ``quarter`` 2020-Q1, ``year`` 2020, ``decade`` 2020s (``datetime`` only as
    ``levels[0]``, for TIMESTAMP data). Values that do not cast to DATE are not covered."""

    def __init__(self, levels: Sequence[str] = ("day", "month", "year"), root: str = "*"):
        if isinstance(levels, str) or not isinstance(levels, (list, tuple)) or not levels:
            raise InputError(f"dates: levels must be a non-empty sequence of {', '.join(DATE_GRAINS)}, got {levels!r}")
        for g in levels:
            if g not in DATE_GRAINS:
                raise InputError(f"dates: unknown level {g!r}; use {', '.join(DATE_GRAINS)}")
        idx = [DATE_GRAINS.index(g) for g in levels]
        if any(a >= b for a, b in zip(idx, idx[1:])):
            raise InputError(f"dates: levels must go from finer to strictly coarser, got {list(levels)}")
        if not isinstance(root, str) or root == "":
            raise InputError(f"dates: root must be a non-empty string, got {root!r}")
        self.grains, self.root = list(levels), root
        self.source = f"dates(levels={self.grains})"

    @property
    def height(self) -> int:
        return len(self.grains)

    def _uncovered_what(self) -> str:
        return "(not dates)"

    def _uncovered_sql(self, x: str, dialect: str) -> str:
        return f"TRY_CAST({x} AS DATE) IS NULL"

    def _level_sql(self, x: str, level: int, dialect: str) -> str:
        d = f"CAST({x} AS DATE)"
        year = f"LPAD(CAST(EXTRACT(YEAR FROM {d}) AS VARCHAR), 4, '0')"
        two = lambda part: f"LPAD(CAST(EXTRACT({part} FROM {d}) AS VARCHAR), 2, '0')"  # noqa: E731
        grain = self.grains[level]
        if grain == "day":
            return f"({year} || '-' || {two('MONTH')} || '-' || {two('DAY')})"
        if grain == "month":
            return f"({year} || '-' || {two('MONTH')})"
        if grain == "quarter":
            return f"({year} || '-Q' || CAST(EXTRACT(QUARTER FROM {d}) AS VARCHAR))"
        if grain == "year":
            return year
        if grain == "decade":
            return f"(CAST(CAST(FLOOR(CAST(EXTRACT(YEAR FROM {d}) AS DOUBLE) / 10) AS BIGINT) * 10 AS VARCHAR) || 's')"
        raise InputError(f"dates: {grain!r} can only be level 0")  # pragma: no cover (rejected in __init__)


# ------------------------------------------------------------------------------------------------
def parse_hierarchy_arg(arg: str) -> tuple[str, EnumeratedHierarchy]:
    """Parse a CLI ``ATTR=PATH`` (an ARX hierarchy file) into ``(attr, Hierarchy)``.

    Splits at the first ``=`` whose right side is an existing file (else the first ``=``);
    raises InputError on a malformed argument or a missing file.
    """
    if not isinstance(arg, str) or "=" not in arg:
        raise InputError(f"--hierarchy expects ATTR=PATH, got {arg!r}")
    cuts = [i for i, ch in enumerate(arg) if ch == "="]
    cut = next((i for i in cuts if Path(arg[i + 1:]).is_file()), cuts[0])
    attr, path = arg[:cut].strip(), arg[cut + 1:].strip()
    if not attr or not path:
        raise InputError(f"--hierarchy expects ATTR=PATH with both parts non-empty, got {arg!r}")
    if not Path(path).is_file():
        raise InputError(f"--hierarchy {attr}: hierarchy file not found: {path!r}")
    return attr, Hierarchy.from_arx(path)


__all__ = [
    "DATE_GRAINS",
    "DateHierarchy",
    "EnumeratedHierarchy",
    "Hierarchy",
    "IntervalHierarchy",
    "MaskingHierarchy",
    "RuleHierarchy",
    "parse_hierarchy_arg",
]
