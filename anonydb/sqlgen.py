"""SQL generation: Jinja2 templates in ``sql/`` rendered with sqlglot-backed quoting.

Identifiers pass through :func:`ident` (``exp.to_identifier(name).sql(dialect)``), values through
:func:`literal` (sqlglot literals). User strings therefore never reach SQL unescaped. A rendered
statement is parsed once by sqlglot so that a broken template fails here, with its name, and
not later inside the engine.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from typing import Any

import jinja2
import sqlglot
from sqlglot import exp

_counter = itertools.count()


def ident(name: str, dialect: str = "duckdb") -> str:
    """Quote one identifier (column or table name) for ``dialect``; always quoted."""
    if not isinstance(name, str) or name == "":
        raise ValueError(f"identifier must be a non-empty string, got {name!r}")
    return _quoted(name, dialect)


@functools.lru_cache(maxsize=4096)
def _quoted(name: str, dialect: str) -> str:
    """sqlglot's quoting, remembered: a plan renders the same few names hundreds of times, and
    each quoting builds an expression and a generator (~0.05 ms, ~8 ms of a Mondrian run on Adult)."""
    return exp.to_identifier(name, quoted=True).sql(dialect)


class SQL(str):
    """A SQL expression written by anonydb itself (never user text), which :func:`literal` passes
    through: a template parameter that a table macro binds at call time (``k``, ``t_num``), not a
    value inlined at render time."""


def literal(value: Any, dialect: str = "duckdb") -> str:
    """Render a Python value as a SQL literal (strings escaped, numbers exact); an :class:`SQL`
    expression as itself."""
    if isinstance(value, SQL):
        return str(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Fraction):
        return f"({value.numerator}::DOUBLE / {value.denominator})"
    if isinstance(value, (float, Decimal)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"cannot render non-finite number {value!r} as SQL")
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return exp.Literal.string(value).sql(dialect)
    raise TypeError(f"cannot render {type(value).__name__} as a SQL literal")


def temp_name(prefix: str = "anonydb_tmp") -> str:
    """A fresh name for an intermediate table (dropped by its owner on success and failure)."""
    return f"__{prefix}_{next(_counter)}"


@dataclass(frozen=True)
class Rendered:
    sql: str
    template: str


class Templates:
    """The template environment for one target dialect.

    Templates are written in DuckDB's SQL (the source dialect sqlglot reads them in); identifiers
    are quoted for DuckDB, and ``dialect`` (the target) selects the few constructs that differ
    (see sql/_macros.sql.j2). An engine for another dialect transpiles the rendered statement
    with :func:`transpile`.
    """

    def __init__(self, dialect: str = "duckdb"):
        self.dialect = dialect
        quoting = "duckdb"
        loader = jinja2.FunctionLoader(_load_template)
        self.env = jinja2.Environment(
            loader=loader,
            undefined=jinja2.StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
        )
        self.env.filters["ident"] = lambda n: ident(n, quoting)
        self.env.filters["literal"] = lambda v: literal(v, quoting)
        self.env.filters["idents"] = lambda ns, prefix="": ", ".join(
            (prefix + "." if prefix else "") + ident(n, quoting) for n in ns
        )
        self.env.globals["dialect"] = dialect

    def render(self, template: str, **context: Any) -> Rendered:
        sql = self.env.get_template(template).render(**context).strip()
        return Rendered(sql=sql, template=template)


def _load_template(name: str) -> str:
    return resources.files("anonydb.sql").joinpath(name).read_text(encoding="utf-8")


#: dialects whose CTEs take no MATERIALIZED hint; the hint only steers the planner, so it is dropped
NO_CTE_HINTS = frozenset({"spark", "spark2", "databricks", "hive"})


def transpile(sql: str, write: str, read: str = "duckdb") -> str:
    """Transpile a generated statement to another dialect (for the engines to come)."""
    out = []
    for tree in sqlglot.parse(sql, read=read):
        if tree is None:
            continue
        if write in NO_CTE_HINTS:
            for cte in tree.find_all(exp.CTE):
                cte.set("materialized", None)
        out.append(tree.sql(dialect=write))
    return ";\n".join(out)



def _has_aggregate(e: exp.Expression) -> bool:
    """Whether a select item aggregates (or is a window function): GROUP BY ALL leaves it out."""
    return any(isinstance(n, (exp.AggFunc, exp.Window)) for n in e.walk())


def expand_group_by_all(tree: exp.Expression) -> exp.Expression:
    """GROUP BY ALL -> GROUP BY the positions of the select items that neither aggregate nor are
    window functions (DuckDB's rule, which PostgreSQL lacks and Spark applies to windows too); no
    such item: no GROUP BY (one group, as DuckDB)."""
    for group in list(tree.find_all(exp.Group)):
        if not group.args.get("all") or group.expressions:
            continue
        select = group.parent
        if not isinstance(select, exp.Select):
            continue
        keys = [exp.Literal.number(i + 1) for i, item in enumerate(select.expressions) if not _has_aggregate(item)]
        if keys:
            group.set("all", None)
            group.set("expressions", keys)
        else:
            group.pop()
    return tree


def seed_key(seed: int, salt: int | str = 0) -> int:
    """A 64-bit key for the ``rand``/``unif`` macros of ``sql/_macros.sql.j2``: independent
    pseudo-random draws per (seed, salt)."""
    import random

    return random.Random(f"{int(seed)}/{salt}").getrandbits(64)
