"""Attribute roles and kinds, and the validation of a role assignment against a relation.

Roles [Li thesis §1.1]: identifier (dropped from any release), quasi-identifier, sensitive,
insensitive. QI kinds: numeric, categorical (with a hierarchy or flat), ordinal, date.
NULL semantics: a NULL QI value is a value of its own (NULLs group together and form their own
equivalence class); a NULL sensitive value is likewise one more sensitive value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .engines.base import Engine
from .errors import InputError
from .sqlgen import ident

ROLES = ("identifier", "quasi", "sensitive", "insensitive")
KINDS = ("numeric", "categorical", "ordinal", "date")
RESERVED_PREFIX = "_adb_"

NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL")
DATE_TYPES = ("DATE", "TIMESTAMP")


@dataclass
class Attribute:
    name: str
    role: str
    kind: str | None = None
    hierarchy: Any = None  # anonydb.hierarchy.Hierarchy
    order: list[Any] | None = None  # for ordinal attributes

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InputError(f"attribute {self.name!r}: role must be one of {', '.join(ROLES)}, got {self.role!r}")
        if self.kind is not None and self.kind not in KINDS:
            raise InputError(f"attribute {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")


def is_numeric_type(t: str) -> bool:
    return t.upper().startswith(NUMERIC_TYPES)


def kind_of_type(t: str) -> str:
    if is_numeric_type(t):
        return "numeric"
    if t.upper().startswith(DATE_TYPES):
        return "date"
    return "categorical"


def split_list(value: str | Iterable[str] | None, what: str) -> list[str]:
    """A comma-separated list (CLI) or a sequence (Python) of column names."""
    if value is None:
        return []
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    if any(not v for v in items):
        raise InputError(f"{what}: empty column name in {value!r}")
    return items


def validate_roles(engine: Engine, relation: str, qi: list[str], sensitive: str | None,
                   kinds: dict[str, str] | None = None, label: str | None = None) -> dict[str, str]:
    """Check the columns exist and the roles do not clash; return each used column's type.

    Raises InputError naming the missing column (with the available ones), a sensitive attribute
    listed as QI, a duplicate, or a numeric QI holding non-numeric values (listed).
    """
    label = label or relation
    cols = dict(engine.columns(relation))
    if not qi:
        raise InputError("at least one quasi-identifier is needed (--qi)")
    seen: set[str] = set()
    for c in qi:
        if c in seen:
            raise InputError(f"quasi-identifier {c!r} is listed twice")
        seen.add(c)
    for c in qi + ([sensitive] if sensitive else []):
        if c not in cols:
            raise InputError(f"column {c!r} not found in {label}; its columns are: {', '.join(cols)}")
        if c.startswith(RESERVED_PREFIX):
            raise InputError(f"column {c!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")
    if sensitive and sensitive in qi:
        raise InputError(f"{sensitive!r} is given both as the sensitive attribute and as a quasi-identifier")
    for c, kind in (kinds or {}).items():
        if kind not in KINDS:
            raise InputError(f"attribute {c!r}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if c not in cols:
            raise InputError(f"column {c!r} (given a kind) not found in {label}")
        if kind == "numeric" and not is_numeric_type(cols[c]):
            fails, says = "TRY_CAST(_adb_v AS DOUBLE) IS NULL", "non-numeric values"
        elif kind == "date" and not cols[c].upper().startswith(DATE_TYPES):
            fails, says = "TRY_CAST(_adb_v AS TIMESTAMP) IS NULL", "values that are not dates"
        else:
            continue
        # the first offending rows with their 1-based positions in insertion order (a table's rowid,
        # which a column named rowid would shadow; row_number() OVER () for a view) and their count
        is_table = "rowid" not in {k.lower() for k in cols} and engine.scalar(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [relation])
        pos = "rowid + 1" if is_table else "row_number() OVER ()"
        bad = engine.fetch_rows(
            f"SELECT _adb_v, _adb_row, count(*) OVER () FROM (SELECT {ident(c)} AS _adb_v, {pos} AS _adb_row "
            f"FROM {ident(relation)}) AS t WHERE _adb_v IS NOT NULL AND {fails} ORDER BY _adb_row LIMIT 10"
        )[1]
        if bad:
            shown = ", ".join(f"{repr(v if len(v) <= 40 else v[:37] + '...') if isinstance(v, str) else v} (row {r})"
                              for v, r, _ in bad)
            n = bad[0][2]
            more = " ..." if n > len(bad) else ""
            raise InputError(f"{kind} attribute {c!r} holds {says}: {shown}{more} "
                             f"({n} row{'s' if n != 1 else ''} in all)")
    return {c: cols[c] for c in qi + ([sensitive] if sensitive else [])}


#: the column a method stages the person key in, to verify a release by record owners; dropped
#: before the release is written (anonydb.release.publish.Publication.verify)
PERSON_COLUMN = "_adb_person"


def validate_person(engine: Engine, relation: str, person: str, qi: list[str], sensitive: str | None,
                    label: str | None = None) -> None:
    """Check the person column (the record owner's key): it exists, has no other role and no NULL
    (a NULL is not a person: its records could belong to anyone, and would count as no one)."""
    label = label or relation
    cols = dict(engine.columns(relation))
    if person not in cols:
        raise InputError(f"person column {person!r} (--person) not found in {label}; its columns are: {', '.join(cols)}")
    if person.startswith(RESERVED_PREFIX) and person != PERSON_COLUMN:
        raise InputError(f"column {person!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")
    if person in qi:
        raise InputError(f"{person!r} is given both as the person column and as a quasi-identifier")
    if person == sensitive:
        raise InputError(f"{person!r} is given both as the person column and as the sensitive attribute")
    nulls = engine.scalar(f"SELECT count(*) FROM {ident(relation)} WHERE {ident(person)} IS NULL")
    if nulls:
        raise InputError(f"person column {person!r} is NULL on {nulls} rows of {label}: a NULL is not a person; "
                         f"give every record its owner or drop those rows")


def varying_qi(engine: Engine, relation: str, person: str, qi: list[str]) -> tuple[str, Any] | None:
    """The first QI (in the given order) that takes more than one value for some person, with one
    such person (the smallest key), or None: QIs constant per person are what lets a method put all
    of a person's records in one class."""
    if not qi:
        return None
    counts = ", ".join(f"count(DISTINCT {ident(q)}) + max(CASE WHEN {ident(q)} IS NULL THEN 1 ELSE 0 END) AS _adb_v{i}"
                       for i, q in enumerate(qi))
    worst = " OR ".join(f"_adb_v{i} > 1" for i in range(len(qi)))
    rows = engine.fetch_rows(f"SELECT * FROM (SELECT {ident(person)} AS _adb_p, {counts} FROM {ident(relation)} "
                             f"GROUP BY {ident(person)}) AS t WHERE {worst} ORDER BY _adb_p LIMIT 1")[1]
    if not rows:
        return None
    r = rows[0]
    return next(q for i, q in enumerate(qi) if r[1 + i] > 1), r[0]
