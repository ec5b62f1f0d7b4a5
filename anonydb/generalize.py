"""Full-domain generalization of a relation, as ONE SQL statement.

:func:`generalize_sql` renders a SELECT returning the relation with each quasi-identifier of
``levels`` replaced, under the same column name, by its label at that level of its hierarchy:
level 0 keeps the column unchanged (original type), level H gives the root, levels in between a
VARCHAR label. Rule-based hierarchies (intervals, masking, dates) are applied as SQL
expressions; enumerated ones (ARX) by a LEFT JOIN on ``CAST(col AS VARCHAR) = leaf`` against an
inline VALUES list (or a table made by :meth:`Hierarchy.materialize`), so a NULL or uncovered
value yields NULL. :func:`generalize` validates coverage first, then returns the SELECT and,
with ``out``, creates that table.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .errors import InputError
from .hierarchy import EnumeratedHierarchy, Hierarchy, validate_all
from .sqlgen import Rendered, ident


def _resolve(name: str, columns: list[str], relation: str, what: str) -> str:
    """The relation's column called ``name`` (exact, else a unique case-insensitive match)."""
    if name in columns:
        return name
    folded = [c for c in columns if c.lower() == str(name).lower()]
    if len(folded) == 1:
        return folded[0]
    raise InputError(f"{what} {name!r} is not a column of {relation!r} (columns: {', '.join(columns)})")


def _plan(engine: Any, relation: str, levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy],
          keep: Sequence[str] | None) -> tuple[list[str], dict[str, tuple[int, Hierarchy | None]], set[str]]:
    """Check the request; return (relation columns, {column: (level, hierarchy)}, kept columns)."""
    if not isinstance(levels, Mapping) or not levels:
        raise InputError(f"levels must be a non-empty mapping attribute -> level, got {levels!r}")
    columns = [c for c, _ in engine.columns(relation)]
    hier_by_col = {}
    for attr, h in (hierarchies or {}).items():
        if not isinstance(h, Hierarchy):
            raise InputError(f"the hierarchy given for {attr!r} is not a Hierarchy (got {type(h).__name__})")
        hier_by_col[attr] = h
    plan: dict[str, tuple[int, Hierarchy | None]] = {}
    for attr, level in levels.items():
        col = _resolve(attr, columns, relation, "attribute")
        if col in plan:
            raise InputError(f"attribute {col!r} is given two levels")
        h = hier_by_col.get(attr, hier_by_col.get(col))
        if h is None:
            if isinstance(level, int) and not isinstance(level, bool) and level == 0:
                plan[col] = (0, None)
                continue
            raise InputError(f"attribute {attr!r}: no hierarchy given, so it can only stay at level 0 (got {level!r})")
        plan[col] = (h.check_level(level, col), h)
    if keep is None:
        kept = set(columns)
    else:
        if isinstance(keep, str):
            raise InputError(f"keep must be a list of column names, got the string {keep!r}")
        kept = {_resolve(k, columns, relation, "kept column") for k in keep} | set(plan)
    return columns, plan, kept


def generalize_sql(engine: Any, relation: str, levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy],
                   keep: Sequence[str] | None = None, *, tables: Mapping[str, str] | None = None) -> Rendered:
    """ONE SELECT over ``relation``: each attribute of ``levels`` generalized to its level (same
    column name), the columns of ``keep`` (default: all others) unchanged, in the relation's
    column order. ``tables`` optionally maps an attribute with an enumerated hierarchy to a table
    made by ``Hierarchy.materialize`` (joined instead of an inline VALUES list). Coverage is not
    checked here (see :func:`generalize`). Raises InputError for an unknown attribute or column,
    a missing hierarchy, or a level outside 0..H."""
    columns, plan, kept = _plan(engine, relation, levels, hierarchies, keep)
    tables = dict(tables or {})
    exprs: list[tuple[str, str]] = []
    joins: list[dict[str, Any]] = []
    for col in columns:
        if col not in kept:
            continue
        src = f"_adb_src.{ident(col)}"
        if col not in plan:
            exprs.append((col, src))
            continue
        level, h = plan[col]
        if h is None or level == 0 or level == h.height or not isinstance(h, EnumeratedHierarchy):
            exprs.append((col, src if h is None else h.sql_expr(src, level)))
            continue
        alias = f"_adb_g{len(joins)}"
        table = tables.get(col)
        joins.append({"alias": alias, "column": col, "level": level, "table": table,
                      "rows": None if table is not None else h.values_sql(level)})
        exprs.append((col, f"{alias}._adb_node"))
    if not exprs:
        raise InputError("nothing to select: keep names no column and levels is empty")
    return engine.render("generalize.sql.j2", relation=relation, columns=exprs, joins=joins)


def generalize(engine: Any, relation: str, levels: Mapping[str, int], hierarchies: Mapping[str, Hierarchy],
               out: str | None = None, *, keep: Sequence[str] | None = None, replace: bool = False,
               temp: bool = False, tables: Mapping[str, str] | None = None) -> Rendered:
    """Validate that each hierarchy (at a level >= 1) covers its column, then build the
    :func:`generalize_sql` SELECT (``keep``, ``tables`` as there); with ``out``, create table
    ``out`` from it (``replace`` to overwrite, ``temp`` for a temporary table). Returns the SELECT."""
    columns, plan, _ = _plan(engine, relation, levels, hierarchies, keep)
    validate_all(engine, relation, {col: h for col, (level, h) in plan.items() if h is not None and level > 0})
    select = generalize_sql(engine, relation, levels, hierarchies, keep, tables=tables)
    if out is not None:
        engine.create_table_as(out, select, temp=temp, replace=replace)
    return select


__all__ = ["generalize", "generalize_sql"]
