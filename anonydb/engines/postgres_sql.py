"""PostgreSQL's SQL: what cannot run there (refused before anything reaches the server) and the
rewrites of one DuckDB-dialect statement into PostgreSQL's (sqlglot trees), cached by statement.
The connection, the session and the results live in :mod:`anonydb.engines.postgres`."""

from __future__ import annotations

import functools
import re
from typing import Callable

import sqlglot
from sqlglot import exp

from .. import errors
from ..sqlgen import expand_group_by_all as _rw_group_by_all


#: a construct this engine cannot run on PostgreSQL yet (the errors module's, whose dialect defaults to postgres)
NotAvailable = errors.NotAvailable


# ------------------------------------------------------------------------------------------------
# 1. What cannot run on PostgreSQL yet: refused before anything is sent to the server.
#    (expression class, or lower-case name of a function sqlglot keeps anonymous) -> reason
# ------------------------------------------------------------------------------------------------
UNAVAILABLE: list[tuple[type[exp.Expression] | str, str]] = [
    (exp.TryCast, "TRY_CAST (a cast that yields NULL instead of failing) has no PostgreSQL equivalent"),
    (exp.Struct, "struct_pack: DuckDB structs (outside to_json) are not rewritten yet"),
    (exp.ArraySort, "list_sort: DuckDB list functions are not rewritten yet"),
    (exp.ReadCSV, "read_csv: files are read by DuckDB; load the file into a PostgreSQL table first"),
    (exp.ReadParquet, "read_parquet: files are read by DuckDB; load the file into a PostgreSQL table first"),
    ("query_table", "query_table(): DuckDB table macros"),
    ("duckdb_tables", "duckdb_tables(): DuckDB's catalog"),
    ("duckdb_views", "duckdb_views(): DuckDB's catalog"),
    ("to_json", "to_json() of anything but a struct_pack"),
    ("bit_count", "bit_count() on integers"),
    ("array_to_string", "DuckDB list functions are not rewritten yet"),
]


def _unavailable(tree: exp.Expression) -> str | None:
    """The reason ``tree`` cannot run on PostgreSQL, or None."""
    for node in tree.walk():
        if isinstance(node, exp.Join) and node.args.get("method") and str(node.args["method"]).upper() == "ASOF":
            return "ASOF joins (the DuckDB ordered-EMD plan; Postgres renders the portable one)"
        if isinstance(node, exp.Create) and str(node.args.get("kind", "")).upper() in ("MACRO", "TABLE MACRO",
                                                                                       "FUNCTION"):
            return "DuckDB macros"
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            for what, reason in UNAVAILABLE:
                if isinstance(what, str) and what == name:
                    return reason
        for what, reason in UNAVAILABLE:
            if not isinstance(what, str) and isinstance(node, what):
                return reason
    return None


_USING_KEY = re.compile(r"\bUSING\s+KEY\b", re.I)


# ------------------------------------------------------------------------------------------------
# 2. Rewrites: DuckDB semantics that sqlglot's transpilation does not carry over by itself.
#    Each takes and returns one DuckDB-dialect statement tree (before transpilation).
# ------------------------------------------------------------------------------------------------
#: DuckDB integer types PostgreSQL lacks -> a PostgreSQL type holding every value. The exact
#: integer arithmetic of the checks runs in HUGEINT on DuckDB: NUMERIC(38, 0) has the same range.
EXACT = "DECIMAL(38, 0)"
WIDER_TYPES = {
    exp.DataType.Type.INT128: EXACT,           # HUGEINT
    exp.DataType.Type.UINT128: "DECIMAL(39, 0)",  # UHUGEINT
    exp.DataType.Type.UBIGINT: "DECIMAL(20, 0)",
    exp.DataType.Type.UINT: "BIGINT",          # UINTEGER
    exp.DataType.Type.USMALLINT: "INTEGER",
    exp.DataType.Type.UTINYINT: "SMALLINT",
}


def _is_duckdb_default_decimal(dt: exp.DataType) -> bool:
    """DECIMAL(18, 3): what sqlglot reads a bare NUMERIC or DECIMAL as (DuckDB's default width).
    The only bare NUMERIC in generated SQL is sql/_macros.sql.j2's exact() for postgres, meant as
    PostgreSQL's unbounded exact integer arithmetic; left as DECIMAL(18, 3) it would overflow at 10^15."""
    if dt.this != exp.DataType.Type.DECIMAL or len(dt.expressions) != 2:
        return False
    return [p.this.name if isinstance(p.this, exp.Literal) else p.name for p in dt.expressions] == ["18", "3"]


#: math functions that are DOUBLE-only in DuckDB but have NUMERIC overloads in PostgreSQL: sum() of
#: integers is NUMERIC there (HUGEINT in DuckDB), and ln(numeric) is computed in NUMERIC, so the
#: entropy exp(ln n - sum(c ln c)/n) would differ from DuckDB's in the last bits
DOUBLE_MATH = (exp.Ln, exp.Exp, exp.Sqrt, exp.Log, exp.Pow)


def _rw_types(tree: exp.Expression) -> exp.Expression:
    """HUGEINT, unsigned integer types and exact()'s bare NUMERIC -> PostgreSQL types of the same
    range (sqlglot would emit INT128, UBIGINT, DECIMAL(18, 3))."""
    for dt in list(tree.find_all(exp.DataType)):
        wider = EXACT if _is_duckdb_default_decimal(dt) else WIDER_TYPES.get(dt.this)
        if wider is not None:
            dt.replace(exp.DataType.build(wider, dialect="duckdb"))
    return tree


def _rw_double_math(tree: exp.Expression) -> exp.Expression:
    """ln/exp/sqrt/log/pow(x) -> the same of CAST(x AS DOUBLE): computed in DOUBLE as DuckDB does."""
    for fn in list(tree.find_all(exp.Log)):  # log(b, x): PostgreSQL has it for NUMERIC only
        if fn.args.get("expression") is not None:
            fn.replace(exp.Div(this=exp.Ln(this=fn.expression.copy()), expression=exp.Ln(this=fn.this.copy())))
    for fn in list(tree.find_all(*DOUBLE_MATH)):
        for key in ("this", "expression"):
            arg = fn.args.get(key)
            if isinstance(arg, exp.Expression) and not (isinstance(arg, exp.Cast) and arg.to.this == exp.DataType.Type.DOUBLE):
                fn.set(key, exp.cast(arg, exp.DataType.Type.DOUBLE))
    return tree


def _rw_division(tree: exp.Expression) -> exp.Expression:
    """a / b, a // b, a % b -> the same over NULLIF(b, 0): DuckDB yields NULL on division by zero,
    PostgreSQL raises (a literal non-zero divisor is left alone)."""
    for op in list(tree.find_all(exp.Div, exp.IntDiv, exp.Mod)):
        b = op.expression
        if isinstance(b, exp.Literal) and b.is_number and float(b.this) != 0:
            continue
        if isinstance(b, exp.Nullif):
            continue
        op.set("expression", exp.Nullif(this=b.copy(), expression=exp.Literal.number(0)))
    return tree


def _rw_json_keys(tree: exp.Expression) -> exp.Expression:
    """to_json(struct_pack(a := x, ...)) -> CAST(jsonb_build_object('a', x, ...) AS TEXT).

    The JSON text of some QI columns keys the natural supersets of (n,t)-closeness when the groups
    are keyed by their columns (sql/_macros.sql.j2 supkey); the key of no column is the text '{}'.
    Only equality and grouping on it matter: the text of one value is always the same, and NULL
    ({"a": null}) stays apart from the string 'null' ({"a": "null"})."""
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "to_json" and len(fn.expressions) == 1 and isinstance(fn.expressions[0], exp.Struct):
            args: list[exp.Expression] = []
            for field in fn.expressions[0].expressions:
                if not isinstance(field, exp.PropertyEQ):
                    raise NotAvailable("struct_pack without field names")
                args += [exp.Literal.string(field.this.name), field.expression.copy()]
            fn.replace(exp.cast(exp.Anonymous(this="jsonb_build_object", expressions=args), exp.DataType.Type.TEXT))
    return tree


def _rw_hash_joins(tree: exp.Expression) -> exp.Expression:
    """JOIN ... ON a IS NOT DISTINCT FROM b (a conjunct of ON) -> ON ARRAY[a] = ARRAY[b].

    anonydb joins NULL-safely (NULL is a value of its own), and PostgreSQL cannot hash or merge
    IS NOT DISTINCT FROM: it nested-loops, 200x slower on 10^6 rows (the check's dictionary join:
    12 s for 2*10^5 rows). Array equality compares elements with their type's own equality
    (1.0 = 1.00, -0.0 = 0.0) and treats NULL elements as equal, and it is hashable. Both sides must
    have the same type (int[] = bigint[] does not exist): when PostgreSQL says so, the engine runs
    the statement again without this rewrite (see PostgresEngine._run)."""
    for join in tree.find_all(exp.Join):
        on = join.args.get("on")
        if on is None:
            continue
        for cond in list(_conjuncts(on)):
            if isinstance(cond, exp.NullSafeEQ):
                cond.replace(exp.EQ(this=exp.Array(expressions=[cond.this.copy()]),
                                    expression=exp.Array(expressions=[cond.expression.copy()])))
    return tree


def _pg(sql: str) -> exp.Expression:
    """A PostgreSQL expression (the rewritten trees are written out as PostgreSQL directly)."""
    return sqlglot.parse_one(sql, read="postgres")


def _rw_arg_best(tree: exp.Expression) -> exp.Expression:
    """arg_max(x, y) / arg_min(x, y) -> (array_agg(x ORDER BY y DESC|ASC, x) FILTER (WHERE y IS NOT
    NULL))[1]: x at the largest (smallest) y, rows with NULL y ignored, as in DuckDB. A list x
    ([a, b]) -> ARRAY[one such pick per element], each ordered by y and then by every element, so
    all elements come from one row."""
    for fn in list(tree.find_all(exp.ArgMax, exp.ArgMin)):
        x, y = fn.this, fn.expression
        if y is None or fn.args.get("count") is not None:
            raise NotAvailable("arg_max/arg_min with a count (the n largest)")
        direction = "DESC" if isinstance(fn, exp.ArgMax) else "ASC"
        ysql = y.sql("postgres")
        parts = x.expressions if isinstance(x, exp.Array) else [x]
        ties = ", ".join(f"{p.sql('postgres')} NULLS LAST" for p in parts)
        picks = [f"(array_agg({p.sql('postgres')} ORDER BY {ysql} {direction} NULLS LAST, {ties}) "
                 f"FILTER (WHERE {ysql} IS NOT NULL))[1]" for p in parts]
        fn.replace(_pg(f"ARRAY[{', '.join(picks)}]" if isinstance(x, exp.Array) else f"({picks[0]})"))
    return tree


def _rw_any_value(tree: exp.Expression) -> exp.Expression:
    """any_value(x) -> min(x) (PostgreSQL 15 has no any_value). anonydb takes any_value of a value
    that is the same on every row of the group (a class's label, a per-group constant) or of which
    any row will do; min is one of them, and ignores NULLs as any_value does."""
    for fn in list(tree.find_all(exp.AnyValue)):
        target = fn.parent if isinstance(fn.parent, exp.IgnoreNulls) else fn
        target.replace(exp.Min(this=fn.this.copy()))
    return tree


#: the first 64 bits of md5(text) as a BIGINT: PostgreSQL's stand-in for DuckDB's hash()
_MD5_64 = "CAST(CAST('x' || substr(md5({}), 1, 16) AS BIT(64)) AS BIGINT)"
#: DuckDB's md5_number(s) is the md5 digest read as a little-endian 128-bit unsigned integer; its
#: order is that of the digest's last 8 bytes in reverse, as an unsigned 64-bit integer: those
#: bytes reversed as a BIGINT with its sign bit flipped (signed order = unsigned order) sort as
#: DuckDB's (ties, 2^-64 apart, aside). Every caller orders by it.
_MD5_ORDER = ("(CAST(CAST('x' || regexp_replace(substr(md5({}), 17, 16), '(..)(..)(..)(..)(..)(..)(..)(..)', "
              "'\\8\\7\\6\\5\\4\\3\\2\\1') AS BIT(64)) AS BIGINT) # (-9223372036854775807 - 1))")


def _anon(e: exp.Expression | None, name: str) -> bool:
    while isinstance(e, exp.Paren):
        e = e.this
    return isinstance(e, exp.Anonymous) and e.name.lower() == name


def _keyed(x: exp.Expression, key: exp.Expression | None = None) -> exp.Expression:
    text = f"CAST({x.sql('postgres')} AS TEXT)"
    if key is not None:
        while isinstance(key, exp.Cast):
            key = key.this
        text += f" || '/' || CAST({key.sql('postgres')} AS TEXT)"
    return _pg(_MD5_64.format(text))


def _rw_hashes(tree: exp.Expression) -> exp.Expression:
    """DuckDB's hash() and md5_number() -> 64 bits of PostgreSQL's md5 (the orders differ from
    DuckDB's, and stay as unpredictable: a release's order key is inlined into the hashed text):

    * md5_number(s) (a release's keyed row order) -> a BIGINT of md5(s) in DuckDB's order
      (:data:`_MD5_ORDER`): a seeded release orders its rows, and numbers its groups, as on DuckDB;
    * hash(xor(hash(x), CAST(k AS UBIGINT))) (the ``rand`` macro, keyed draws) -> the same of
      CAST(x AS TEXT) || '/' || k; hash(x) -> the same of CAST(x AS TEXT) (x may be a whole row);
    * h >> n of such a hash (``unif``: a uniform in [0, 1)) -> (h >> n) & (2^(64-n) - 1), the
      shift of the unsigned 64-bit value DuckDB's UBIGINT holds (BIGINT shifts keep the sign)."""
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "md5_number" and len(fn.expressions) == 1:
            fn.replace(_pg(_MD5_ORDER.format(f"CAST({fn.expressions[0].sql('postgres')} AS TEXT)")))

    def rewrite(h: exp.Expression) -> exp.Expression:
        while isinstance(h, exp.Paren):
            h = h.this
        arg = h.expressions[0] if len(h.expressions) == 1 else None
        if arg is None:
            raise NotAvailable("hash() of several values")
        inner = arg.this if isinstance(arg, exp.Paren) else arg
        if isinstance(inner, exp.BitwiseXor) and _anon(inner.this, "hash"):
            return _keyed(inner.this.expressions[0] if not isinstance(inner.this, exp.Paren)
                          else inner.this.this.expressions[0], inner.expression)
        return _keyed(arg)

    for shift in list(tree.find_all(exp.BitwiseRightShift)):
        if _anon(shift.this, "hash") and isinstance(shift.expression, exp.Literal) and shift.expression.is_int:
            n = int(shift.expression.this)
            shifted = exp.BitwiseRightShift(this=rewrite(shift.this), expression=exp.Literal.number(n))
            shift.replace(exp.Paren(this=exp.BitwiseAnd(this=exp.Paren(this=shifted),
                                                        expression=exp.Literal.number((1 << (64 - n)) - 1))))
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "hash":
            fn.replace(rewrite(fn))
    return tree


def _rw_subquery_alias(tree: exp.Expression) -> exp.Expression:
    """A subquery in FROM or JOIN without an alias gets one (PostgreSQL 15 requires it)."""
    n = 0
    for sub in list(tree.find_all(exp.Subquery)):
        if isinstance(sub.parent, (exp.From, exp.Join)) and not sub.alias:
            sub.set("alias", exp.TableAlias(this=exp.to_identifier(f"_adb_sub{n}")))
            n += 1
    return tree


def _rw_lists(tree: exp.Expression) -> exp.Expression:
    """string_split(s, sep) -> string_to_array(s, sep) (list_contains(l, v) is v = ANY(l) by sqlglot)."""
    for fn in list(tree.find_all(exp.Split)):
        fn.replace(exp.Anonymous(this="string_to_array", expressions=[fn.this.copy(), fn.expression.copy()]))
    return tree


def _conjuncts(e: exp.Expression):
    while isinstance(e, exp.Paren):
        e = e.this
    if isinstance(e, exp.And):
        yield from _conjuncts(e.this)
        yield from _conjuncts(e.expression)
    else:
        yield e


def _rw_create_or_replace(tree: exp.Expression) -> list[exp.Expression]:
    """CREATE OR REPLACE [TEMP] TABLE t AS ... -> DROP TABLE IF EXISTS t; CREATE [TEMP] TABLE t AS ...
    (PostgreSQL has CREATE OR REPLACE for views and functions only)."""
    if isinstance(tree, exp.Create) and tree.args.get("replace") and str(tree.args.get("kind", "")).upper() == "TABLE":
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        drop = sqlglot.parse_one(f"DROP TABLE IF EXISTS {target.sql('duckdb')}", read="duckdb")
        tree = tree.copy()
        tree.set("replace", False)
        return [drop, tree]
    return [tree]


#: the rewrites of one statement tree, in the order they run (CREATE OR REPLACE, which makes two
#: statements of one, runs last: :func:`_rw_create_or_replace`)
REWRITES: list[Callable[[exp.Expression], exp.Expression]] = [_rw_group_by_all, _rw_types, _rw_double_math,
                                                              _rw_division, _rw_json_keys, _rw_hash_joins,
                                                              _rw_arg_best, _rw_any_value, _rw_hashes,
                                                              _rw_subquery_alias, _rw_lists]

#: a column name standing for a ``?`` parameter while the statement is transpiled (becomes ``%s``)
_PARAM = "adb_param_placeholder_0a5e"


def to_postgres(sql: str, with_params: bool = False, hash_joins: bool = True) -> list[str]:
    """The PostgreSQL statements that run DuckDB-dialect ``sql`` (one or more statements).

    Raises :class:`NotAvailable` for a construct of :data:`UNAVAILABLE`. With ``with_params``,
    ``?`` parameters become psycopg's ``%s`` and every other ``%`` is doubled.

    The translation is a pure function of its arguments and costs tens of milliseconds of Python
    per statement (sqlglot parses and writes the whole tree): a level-wise plan sends the same
    statements round after round (Mondrian's rounds alternate between two work tables), so the
    last :data:`TRANSLATED` translations are kept (Mondrian on Adult: 3 s of 8 s was translation)."""
    return list(_to_postgres_cached(sql, with_params, hash_joins))


#: translations kept by :func:`to_postgres`
TRANSLATED = 512


@functools.lru_cache(maxsize=TRANSLATED)
def _to_postgres_cached(sql: str, with_params: bool, hash_joins: bool) -> tuple[str, ...]:
    return tuple(_to_postgres(sql, with_params, hash_joins))


#: the tokens of a statement that means the same in both dialects, written the same (see :func:`_verbatim`)
_COMMON_TOKEN = re.compile(r'\s+|"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[(),*]')
#: its keywords (upper case) and functions (lower case); every other word must be an anonydb name
_COMMON_WORDS = frozenset({"CREATE", "OR", "REPLACE", "TEMP", "TABLE", "AS", "SELECT", "FROM", "UNION", "ALL",
                           "GROUP", "BY", "CAST", "BIGINT", "sum", "count"})
_COMMON_CTAS = re.compile(r'CREATE (OR REPLACE )?TEMP TABLE ("(?:[^"]|"")+") AS\s', re.A)


def _verbatim(sql: str) -> list[str] | None:
    """The PostgreSQL statements of ``sql`` without translating it, when it is a CREATE [OR
    REPLACE] TEMP TABLE ... AS SELECT made only of tokens that mean the same in both dialects: quoted
    names, anonydb's own unquoted names (``_adb_cnt``, ``_q0_1``: a leading underscore; or a
    one-letter alias), integers, sum and count, CAST to BIGINT, UNION ALL, GROUP BY a list (not
    ALL). The full-domain search's batches are such statements of a few thousand tokens, which
    sqlglot takes 40 ms to parse and write out (1.3 s of a search on Adult); anything else is None."""
    m = _COMMON_CTAS.match(sql)
    if not m:
        return None
    body = sql[m.end():]
    pos, prev = 0, ""
    for t in _COMMON_TOKEN.finditer(body):
        if t.start() != pos:
            return None
        pos, tok = t.end(), t.group()
        if tok[0].isspace() or tok[0] in '"(),*' or tok[0].isdigit():
            pass
        elif tok in _COMMON_WORDS:
            if (tok == "ALL") != (prev == "UNION") or (tok in ("sum", "count", "CAST") and body[pos:pos + 1] != "("):
                return None
        elif not (tok[0] == "_" or len(tok) == 1) or tok.upper() in _COMMON_WORDS or body[pos:pos + 1] == "(":
            return None
        if not tok[0].isspace():
            prev = tok
    if pos != len(body) or "SELECT" not in body.split(None, 1)[:1]:
        return None
    create = f"CREATE TEMPORARY TABLE {m[2]} AS {body}"
    return ([f"DROP TABLE IF EXISTS {m[2]}"] if m[1] else []) + [create]


def _to_postgres(sql: str, with_params: bool = False, hash_joins: bool = True) -> list[str]:
    if not with_params:
        same = _verbatim(sql)
        if same is not None:
            return same
    if _USING_KEY.search(sql):
        raise NotAvailable("recursive CTEs with USING KEY")
    out: list[str] = []
    for tree in sqlglot.parse(sql, read="duckdb"):
        if tree is None:
            continue
        for rw in REWRITES:
            if rw is not _rw_hash_joins or hash_joins:
                tree = rw(tree)
        reason = _unavailable(tree)
        if reason:
            raise NotAvailable(reason)
        if with_params:
            for ph in list(tree.find_all(exp.Placeholder)):
                ph.replace(exp.column(_PARAM))
        for stmt in _rw_create_or_replace(tree):
            pg = stmt.sql("postgres")
            if with_params:
                pg = pg.replace("%", "%%").replace(_PARAM, "%s")
            out.append(pg)
    return out
