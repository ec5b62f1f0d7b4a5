"""Spark: the :class:`~anonydb.engines.base.Engine` interface over a ``pyspark.sql.SparkSession``
(a local session, a cluster's, or Spark Connect's).

The rest of anonydb generates DuckDB-dialect SQL (``sql/*.sql.j2`` rendered with ``dialect =
"spark"``). This engine parses each statement as DuckDB SQL, rewrites what Spark reads
differently (below), writes it out as Spark SQL with sqlglot and runs it with ``spark.sql``.
Nothing is collected to the driver but the results a caller fetches (verdicts, statistics, a
round's few cut points); every scratch table is a locally checkpointed view, so the lineage of a
level-wise plan is cut at every round.

Every way Spark differs from DuckDB for anonydb is in this file:

=====================================  ==========================================================
DuckDB                                 on Spark
=====================================  ==========================================================
CREATE TEMP TABLE t AS q               q, locally checkpointed (computed once, lineage cut), as
                                       the session's temporary view t
CREATE TABLE t AS q                    q saved as the catalog table t (``saveAsTable``)
DROP TABLE t (a scratch table)         the temporary view dropped (``dropTempView``)
ALTER TABLE t RENAME ... (scratch)     t's view re-registered under the new name or with the
                                       column renamed (views take no ALTER)
BEGIN / COMMIT / ROLLBACK              nothing: Spark's catalog has no transactions (see
                                       "atomic" below)
DELETE FROM t WHERE c (a catalog       a v2 table's own DELETE; a table of Spark's file formats
table: ``anonydb releases --drop``)    refuses it: the rows kept copied, then renamed into place
                                       (:meth:`SparkEngine.delete_where`)
OVER (w ROWS BETWEEN ...)              the named window w inlined (Spark cannot add a frame to
                                       a named window)
row_number() OVER ()                   row_number() OVER (ORDER BY 1) (Spark wants an order);
                                       a row id for a whole table is monotonically_increasing_id()
? parameters                           inlined as escaped literals (spark.sql takes none)
md5_number(s) (a keyed row order)      md5(s)'s last 8 bytes reversed, a DECIMAL(20, 0): DuckDB's order
hash(xor(hash(x), CAST(k AS UBIGINT))) the same of CAST(x AS STRING) || '/' || k (keyed draws);
                                       ``h >> n`` of it (``unif``) shifts by n - 4 (60 bits, not 64)
hash(g) of a whole row g               monotonically_increasing_id() (a row's position; the order
                                       stays keyed: it is hashed with the key)
read_csv / read_parquet of a file      spark.read (CSV header, schema inferred from every row;
                                       a Parquet file or folder)
COPY t TO 'f.parquet'                  t written by Spark as a Parquet folder (part files)
CREATE TABLE t AS q ORDER BY k         q's rows hash-distributed on k and sorted by k within each
                                       part (a global sort runs q twice); md5_number(s) there:
                                       60 bits of md5(s)
quantile_disc(x, q)                    percentile_disc(q) WITHIN GROUP (ORDER BY x) (sqlglot
                                       writes PERCENTILE_DISC(x, q), which Spark 4 rejects)
quantile_cont(x, q) / median(x)        percentile(x, q) / median(x), both interpolated
FROM t, range(n) (n a column of t)     FROM t LATERAL VIEW explode(sequence(0, n - 1)) AS range
HUGEINT, UBIGINT, ...                  DECIMAL(38, 0), DECIMAL(20, 0), ... (every value fits)
GROUP BY ALL                           GROUP BY the positions of the items that neither aggregate
                                       nor are windows (Spark would group by a window)
WITH x AS MATERIALIZED (q), or a CTE   q computed first as a checkpointed scratch view (Spark
read more than once                    inlines a CTE at every reference)
=====================================  ==========================================================

Lists go through ``_macros.sql.j2`` with Spark's names (``max_by``, ``string_agg ... ORDER BY``;
sqlglot writes ``list`` as ``collect_list`` and ``array_to_string`` as ``array_join``). A
checkpoint starts from rows, not from its query (:meth:`SparkEngine._fresh`), and is freed when
its view is dropped. On Spark Connect the engine sets :data:`CONNECT_CONF` in the session while
it runs (a session the caller owns gets its settings back at :meth:`~SparkEngine.close`).

**What "atomic" means on Spark.** A release is written under a staging name, verified, then
renamed into place. A catalog table: the staging table is renamed to the target (one ALTER TABLE
... RENAME, a directory rename in the warehouse); with ``replace`` the old table is dropped just
before, so a reader can find no table for that instant, never a partial or unverified one. A
Parquet export: Spark writes a folder beside the target, which is renamed into place (with
``replace``, the old folder is moved aside first and deleted after). A run that fails or is
interrupted leaves neither staged table nor folder.

A tracked release's ledger entry (:mod:`anonydb.release.ledger`) cannot share the swap's
transaction here: it is written *after* the swap, its members, values and histories first and the
entry's row in ``anonydb_releases`` last (four INSERTs, each its own Spark job and commit). A run
killed after the swap and before that last INSERT leaves the new release in place with no entry:
the ledger does not know it, and the rows already inserted under its id belong to no entry (every
reader goes through ``anonydb_releases``, so they are never read; the next entry must take an id
above them). Run the release again (``--replace``) to record it. A run killed before the swap
leaves the earlier release and ledger unchanged; the entry never names a release that is not in
place. ``anonydb releases --drop`` removes the members, values and histories first and the entry
last (:meth:`SparkEngine.delete_where` each), so a drop killed midway leaves the entry listed,
failing its checksum, and is finished by dropping it again.

What does not run here says so in one line (``not available on spark: <reason>``): slicing,
Injector, Mondrian's one-statement recursive plan, CSV export.
"""

from __future__ import annotations

from pathlib import Path

import logging
import os
import re
import shutil
import sys
import tempfile
from typing import Any, Iterable, Sequence

import sqlglot
from sqlglot import exp

from .base import Engine, as_arrow
from .grouped import group_step, side_names
from ..errors import InputError, NotAvailable
from ..sqlgen import expand_group_by_all, literal, temp_name

#: Spark's simple type names -> DuckDB's (DESCRIBE), which the rest of anonydb reads
TYPE_NAMES = {"int": "INTEGER", "bigint": "BIGINT", "smallint": "SMALLINT", "tinyint": "TINYINT",
              "string": "VARCHAR", "double": "DOUBLE", "float": "FLOAT", "boolean": "BOOLEAN", "date": "DATE",
              "timestamp": "TIMESTAMP", "binary": "BLOB"}

#: where ``connect("spark")`` points: a local session on every core
LOCAL_MASTER = "local[*]"


def duckdb_type_name(spark_type: str) -> str:
    """DuckDB's name for a Spark type (``decimal(38,0)`` -> ``DECIMAL(38,0)``)."""
    return TYPE_NAMES.get(spark_type, spark_type.upper())


def _q(name: str) -> str:
    """A name quoted for Spark's catalog calls."""
    return "`" + name.replace("`", "``") + "`"


def _spark(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="spark")


# ------------------------------------------------------------------------------------------------
# Rewrites of one DuckDB statement tree
# ------------------------------------------------------------------------------------------------
def _inline_windows(tree: exp.Expression) -> exp.Expression:
    """Every ``OVER w`` / ``OVER (w ROWS ...)`` of a SELECT with ``WINDOW w AS (...)`` takes w's
    partition and order in place: Spark cannot extend a named window with a frame."""
    for sel in list(tree.find_all(exp.Select)):
        named = {w.this.name: w for w in (sel.args.get("windows") or [])}
        if not named:
            continue
        for w in list(sel.find_all(exp.Window)):
            ref = w.args.get("alias")
            if ref is not None and w.args.get("over") and ref.name in named:
                d = named[ref.name]
                w.set("alias", None)
                w.set("partition_by", [p.copy() for p in d.args.get("partition_by") or []])
                if d.args.get("order") is not None:
                    w.set("order", d.args["order"].copy())
        sel.set("windows", None)
    return tree


def _ordered_row_numbers(tree: exp.Expression) -> exp.Expression:
    """``row_number() OVER ()`` -> ``row_number() OVER (ORDER BY 1)``: Spark requires an order (the
    numbering is then Spark's scan order, as DuckDB's is its own)."""
    for w in tree.find_all(exp.Window):
        if isinstance(w.this, exp.RowNumber) and w.args.get("order") is None and not w.args.get("alias"):
            w.set("order", exp.Order(expressions=[exp.Ordered(this=exp.Literal.number(1))]))
    return tree


#: the first 60 bits of md5(text), a non-negative BIGINT: Spark's stand-in for DuckDB's keyed hash()
#: (a cryptographic hash: a release's order key is inlined into the hashed text)
_MD5_60 = "CAST(conv(substr(md5({}), 1, 15), 16, 10) AS BIGINT)"
#: DuckDB's md5_number(s) is the md5 digest read as a little-endian 128-bit unsigned integer: the
#: digest's last 8 bytes in reverse, as an unsigned 64-bit DECIMAL, sort as it does (ties, 2^-64
#: apart, aside). Every caller orders by it.
_MD5_ORDER = ("CAST(conv(regexp_replace(substr(md5({}), 17, 16), '(..)(..)(..)(..)(..)(..)(..)(..)', "
              "'$8$7$6$5$4$3$2$1'), 16, 10) AS DECIMAL(20, 0))")


def _anon(e: exp.Expression | None, name: str) -> bool:
    while isinstance(e, exp.Paren):
        e = e.this
    return isinstance(e, exp.Anonymous) and e.name.lower() == name


def _text(x: exp.Expression) -> str:
    return f"CAST({x.sql('spark')} AS STRING)"


def _row_aliases(node: exp.Expression) -> set[str]:
    """The table aliases in scope of ``node`` (FROM and JOIN sources of its SELECT)."""
    sel = node.find_ancestor(exp.Select)
    out: set[str] = set()
    if sel is None:
        return out
    for src in [sel.args.get("from_") or sel.args.get("from")] + list(sel.args.get("joins") or []):
        if src is not None and src.this is not None and src.this.alias_or_name:
            out.add(src.this.alias_or_name)
    return out


def _rw_hashes(tree: exp.Expression) -> exp.Expression:
    """DuckDB's md5_number() and hash() (see the table above): the orders differ from DuckDB's and
    stay as unpredictable."""
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() == "md5_number" and len(fn.expressions) == 1:
            fn.replace(_spark(_MD5_ORDER.format(_text(fn.expressions[0]))))

    def keyed(h: exp.Expression) -> exp.Expression | None:
        """hash(xor(hash(x), k)) -> 60 bits of md5(x || '/' || k); None for another hash."""
        while isinstance(h, exp.Paren):
            h = h.this
        arg = h.expressions[0] if len(h.expressions) == 1 else None
        inner = arg.this if isinstance(arg, exp.Paren) else arg
        if isinstance(inner, exp.BitwiseXor) and _anon(inner.this, "hash"):
            x = inner.this.this if isinstance(inner.this, exp.Paren) else inner.this
            key = inner.expression
            while isinstance(key, exp.Cast):
                key = key.this
            return _spark(_MD5_60.format(f"{_text(x.expressions[0])} || '/' || {_text(key)}"))
        return None

    for shift in list(tree.find_all(exp.BitwiseRightShift)):
        if _anon(shift.this, "hash") and isinstance(shift.expression, exp.Literal) and shift.expression.is_int:
            k = keyed(shift.this)
            if k is not None:  # 60 bits shifted 4 places less: the same 64 - n bits of range
                n = int(shift.expression.this)
                shift.replace(exp.Paren(this=exp.BitwiseRightShift(this=k, expression=exp.Literal.number(n - 4))))
    for fn in list(tree.find_all(exp.Anonymous)):
        if fn.name.lower() != "hash":
            continue
        k = keyed(fn)
        if k is not None:
            fn.replace(k)
            continue
        args = fn.expressions
        if len(args) == 1 and isinstance(args[0], exp.Column) and not args[0].table \
                and args[0].name in _row_aliases(fn):  # hash(g) of a whole row: Spark takes no g.* in ORDER BY
            fn.replace(_spark("monotonically_increasing_id()"))
        else:
            fn.replace(exp.Anonymous(this="xxhash64", expressions=[a.copy() for a in args]))
    return tree


#: DuckDB integer types Spark lacks -> a Spark type holding every value (the checks' exact
#: arithmetic runs in HUGEINT on DuckDB: DECIMAL(38, 0) has the same range)
WIDER_TYPES = {
    exp.DataType.Type.INT128: "DECIMAL(38, 0)",
    exp.DataType.Type.UINT128: "DECIMAL(38, 0)",
    exp.DataType.Type.UBIGINT: "DECIMAL(20, 0)",
    exp.DataType.Type.UINT: "BIGINT",
    exp.DataType.Type.USMALLINT: "INT",
    exp.DataType.Type.UTINYINT: "SMALLINT",
}


def _rw_types(tree: exp.Expression) -> exp.Expression:
    for dt in list(tree.find_all(exp.DataType)):
        wide = WIDER_TYPES.get(dt.this)
        if wide is not None:
            dt.replace(exp.DataType.build(wide, dialect="spark"))
    return tree


def _rw_series_joins(tree: exp.Expression) -> exp.Expression:
    """``FROM t, range(n)`` with ``n`` a column of t (one row per 0..n-1, DuckDB's lateral table
    function) -> ``FROM t LATERAL VIEW explode(sequence(0, n - 1)) AS range`` (Spark joins no table
    function to a column of another table)."""
    for sel in list(tree.find_all(exp.Select)):
        for j in list(sel.args.get("joins") or []):
            gen = j.this.this if isinstance(j.this, exp.Table) else None
            if not isinstance(gen, exp.GenerateSeries) or not list(gen.find_all(exp.Column)):
                continue
            start, end = gen.args["start"].sql("spark"), gen.args["end"].sql("spark")
            if gen.args.get("is_end_exclusive"):
                end = f"({end}) - 1"
            lat = _spark(f"SELECT 1 FROM x LATERAL VIEW explode(IF({end} < {start}, array(), sequence({start}, {end}))) "
                         f"_adb_series AS range").args["laterals"]
            j.pop()
            sel.set("laterals", list(sel.args.get("laterals") or []) + [x.copy() for x in lat])
    return tree


def _rw_percentiles(tree: exp.Expression) -> exp.Expression:
    """DuckDB's quantiles: ``quantile_disc(x, q)`` -> ``percentile_disc(q) WITHIN GROUP (ORDER BY x)``
    (sqlglot writes ``PERCENTILE_DISC(x, q)``, which Spark 4 rejects, or an approximate percentile);
    ``quantile_cont(x, q)`` -> ``percentile(x, q)`` (exact, interpolated); ``median(x)`` is Spark's
    ``median`` (interpolated, as DuckDB's)."""
    for node in list(tree.find_all(exp.PercentileDisc, exp.PercentileCont)):
        if isinstance(node.parent, exp.WithinGroup) or node.expression is None:
            continue
        x, q = node.this.sql("spark"), node.expression.sql("spark")
        if isinstance(node, exp.PercentileDisc):
            node.replace(exp.Var(this=f"percentile_disc({q}) WITHIN GROUP (ORDER BY {x})"))
        else:
            node.replace(exp.Anonymous(this="percentile", expressions=[node.this.copy(), node.expression.copy()]))
    return tree


#: the rewrites of one statement tree, in the order they run (the hashes before the types: a
#: keyed hash's CAST(k AS UBIGINT) is read by _rw_hashes)
REWRITES = [expand_group_by_all, _inline_windows, _ordered_row_numbers, _rw_hashes, _rw_types, _rw_series_joins,
            _rw_percentiles]


class SparkError(Exception):
    """A Spark error in one line (Spark's own carry the plan and the JVM's stack)."""


def _short(e: BaseException) -> str:
    java = getattr(e, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(e)
    lines = [x.strip() for x in text.splitlines() if x.strip() and not x.startswith("An error occurred while calling")]
    if "Traceback (most recent call last)" in text:  # a worker's Python failed: its own last error line
        raised = [x for x in lines if re.match(r"^[A-Za-z_.]*(Error|Exception|Interrupt)\b.*:", x)
                  and not x.startswith(("org.apache", "PythonException", "pyspark.errors"))]
        if raised:
            hint = (" (the workers' Python must have DuckDB and pyarrow: install them there, or point "
                    "spark.pyspark.python at a Python that has them)") if "No module named" in raised[-1] else ""
            return f"a Spark worker failed: {raised[-1]}{hint}"[:400]
    return (lines[0] if lines else type(e).__name__)[:400]


def _bind(tree: exp.Expression, params: Sequence[Any]) -> exp.Expression:
    """``?`` parameters -> escaped literals, in order (``spark.sql`` binds none positionally)."""
    holders = [p for p in tree.find_all(exp.Placeholder)]
    if len(holders) != len(params):
        raise InputError(f"internal error: {len(holders)} parameters in the statement, {len(params)} given")
    for h, v in zip(holders, params):
        h.replace(sqlglot.parse_one(literal(v), read="duckdb"))
    return tree


def to_spark(tree: exp.Expression) -> str:
    """One DuckDB statement tree as Spark SQL."""
    for cte in tree.find_all(exp.CTE):
        cte.set("materialized", None)
    for rewrite in REWRITES:
        tree = rewrite(tree)
    return tree.sql(dialect="spark")


# ------------------------------------------------------------------------------------------------
# The engine
# ------------------------------------------------------------------------------------------------
#: Spark Connect: a checkpoint keeps the constraints its query had (``originConstraints``), and
#: a union of checkpoints (a scratch table INSERTed into, round by round) then fails when its
#: constraints are rewritten for a join ("key not found: _adb_rid#..."; Spark 4.0, Mondrian's
#: utility joining its final rows with the source). A local session's checkpoints start from
#: rows and carry none (:meth:`SparkEngine._fresh`); on Connect the engine turns propagation off.
CONNECT_CONF = {"spark.sql.constraintPropagation.enabled": "false"}


class SparkEngine(Engine):
    """A ``pyspark.sql.SparkSession`` (local or a cluster's). ``owned``: made by :func:`session_for`
    (stopped, and its scratch warehouse removed, by :meth:`close`)."""

    dialect = "spark"
    #: Mondrian's whole-table rounds stop once every open partition holds at most this many rows;
    #: each is then finished on a worker (:meth:`per_group`). 4M, not 1M: at 10M rows on local[2]
    #: 2 whole-table rounds + a grouped step of 4 fragments took 196 s, 7 rounds + 128 fragments
    #: 215.5 + 123.4 s (docs/benchmarks-history.md, Spark at 10M); a fragment of 4M rows of 8
    #: codes is about 260 MB of Arrow
    fragment_rows = 4_000_000
    finish_rows = fragment_rows  # the fragment plan's too: the top stops there
    #: plan="auto" cuts the top without rewriting the rows once there is a top to cut (10M census,
    #: local[2]: 274.7 s against 311.8 s level-wise, BENCHMARKS.md)
    fragments_from = fragment_rows

    def __init__(self, spark: Any, *, owned: bool = False, warehouse: str | None = None, read_only: bool = False):
        super().__init__()
        self.spark, self.owned, self.warehouse = spark, owned, warehouse
        self._connect = not hasattr(spark, "sparkContext") or type(spark).__module__.startswith("pyspark.sql.connect")
        self._blocks: dict[str, list[int]] = {}  # scratch view -> the ids of the RDDs its checkpoints persist
        self.fetched: list[int] = []  # rows each query brought to the driver (tests bound them)
        self.read_only = read_only
        self.database = None  # tables live in the session's catalog (a scratch one for a local session we made)
        self._restore: dict[str, str | None] = {}
        if self._connect:
            self._session_conf(CONNECT_CONF)

    def _session_conf(self, conf: dict[str, str]) -> None:
        """Set ``conf`` in the session for as long as this engine runs (restored by :meth:`close`)."""
        for key, value in conf.items():
            self._restore.setdefault(key, self.spark.conf.get(key, None))
            self.spark.conf.set(key, value)

    # -- scratch views and the blocks they hold ------------------------------------------------------
    def _checkpoint(self, df: Any, name: str) -> None:
        """``df`` computed once and kept in the workers' block stores (``localCheckpoint``: its
        lineage is cut) as the temporary view ``name``, replacing a view of that name."""
        before = self._persisted()
        df = self._fresh(df).localCheckpoint()
        self._release(name)
        self._blocks[name.lower()] = sorted(self._persisted() - before)
        df.createOrReplaceTempView(name)

    def _fresh(self, df: Any) -> Any:
        """``df`` over a plan that carries no size estimate. A checkpoint keeps its query's estimated
        size, a join's being the product of its inputs': round after round the estimates grow
        without bound (numbers of thousands of digits, whose arithmetic took half a minute per
        statement by the fifth Mondrian round), whereas a DataFrame made from rows starts at the
        default estimate. The rows are re-encoded once, as the checkpoint is written."""
        if self._connect:
            return df
        jdf = df._jdf
        return type(df)(self.spark._jsparkSession.createDataFrame(jdf.javaRDD(), jdf.schema()), self.spark)

    def _persisted(self) -> set[int]:
        jsc = getattr(self.spark.sparkContext, "_jsc", None) if not self._connect else None
        return set(jsc.getPersistentRDDs().keySet()) if jsc is not None else set()

    def _release(self, name: str) -> None:
        """Free the blocks of the view ``name``'s checkpoints: a dropped view's data stays cached
        until then, and a plan of many rounds would fill the executors' memory (GC pauses of tens
        of seconds were seen before this)."""
        ids = self._blocks.pop(name.lower(), [])
        if ids:
            rdds = self.spark.sparkContext._jsc.getPersistentRDDs()
            for i in ids:
                rdd = rdds.get(i)
                if rdd is not None:
                    rdd.unpersist(False)

    def _drop_view(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)
        self._release(name)

    # -- statements ----------------------------------------------------------------------------
    def _trees(self, sql: str, params: Sequence[Any] | None) -> list[exp.Expression]:
        trees = [t for t in sqlglot.parse(sql, read="duckdb") if t is not None]
        if params:
            if len(trees) != 1:
                raise InputError("internal error: parameters given to several statements")
            trees = [_bind(trees[0], params)]
        return trees

    def _execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        try:
            self._run(sql, params)
        except InputError:
            raise
        except Exception as e:
            raise SparkError(_short(e)) from e

    def _run(self, sql: str, params: Sequence[Any] | None) -> None:
        made: list[str] = []
        try:
            for tree in self._trees(sql, params):
                self._one(self._materialize_ctes(tree, made))
        finally:
            for name in made:
                self._drop_view(name)

    def _one(self, tree: exp.Expression) -> None:
        if isinstance(tree, (exp.Transaction, exp.Commit, exp.Rollback)):
            return  # no transactions in Spark's catalog: see "atomic" in the module's docstring
        if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "TABLE" \
                and tree.expression is not None:
            self._create_table(tree)
        elif isinstance(tree, exp.Alter) and tree.this is not None and self._is_view(tree.this.name) \
                and tree.args.get("actions"):
            self._alter_view(tree)
        elif isinstance(tree, exp.Drop) and tree.this is not None and self._is_view(tree.this.name):
            self._drop_view(tree.this.name)
        elif isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Table) and self._is_view(tree.this.name):
            self._insert_view(tree)
        elif isinstance(tree, exp.Delete) and isinstance(tree.this, exp.Table) and not self._is_view(tree.this.name):
            where = tree.args.get("where")
            self.delete_where(tree.this.name, where.this.sql("duckdb") if where is not None else "TRUE",
                              schema=tree.this.db or None)
        else:
            self.spark.sql(to_spark(tree))

    def _insert_view(self, tree: exp.Insert) -> None:
        """INSERT INTO a scratch table (a temporary view): the new rows, checkpointed, unioned with
        the view's by position. The view stays a union of checkpointed pieces (its lineage is one
        level deep however many rounds insert), and the old rows are not copied."""
        name = tree.this.name
        old = self.spark.table(_q(name))
        before = self._persisted()
        new = self._fresh(self.spark.sql(to_spark(tree.expression))).localCheckpoint()
        if len(new.columns) != len(old.columns):
            raise InputError(f"internal error: INSERT of {len(new.columns)} columns into {name} of {len(old.columns)}")
        old.union(new.toDF(*old.columns)).createOrReplaceTempView(name)
        self._blocks.setdefault(name.lower(), []).extend(sorted(self._persisted() - before))

    def _materialize_ctes(self, tree: exp.Expression, made: list[str]) -> exp.Expression:
        """Each CTE DuckDB is told to materialize, or that is read more than once, computed first as
        a checkpointed scratch view (names appended to ``made``, dropped by the caller) and read by
        name: Spark would inline it at every reference (Mondrian's candidate step reads its
        per-partition table once per QI, a plan that exhausted the driver's heap)."""
        for w in list(tree.find_all(exp.With)):
            ctes = list(w.expressions)
            for i, cte in enumerate(ctes):
                alias = cte.alias
                refs = [t for t in tree.find_all(exp.Table) if t.name == alias and not t.args.get("db")
                        and t.find_ancestor(exp.CTE) is not cte]
                if not (cte.args.get("materialized") or len(refs) > 1):
                    continue
                body = cte.this.copy()
                before = [c.copy() for c in w.expressions if c is not cte and ctes.index(c) < i]
                if before:
                    body.set("with_", exp.With(expressions=before))
                name = temp_name("cte")
                self._checkpoint(self.spark.sql(to_spark(body)), name)
                made.append(name)
                for t in refs:
                    t.set("this", exp.to_identifier(name, quoted=True))
                    if not t.alias:
                        t.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
                cte.pop()
            if not w.expressions:
                w.pop()
        return tree

    def _alter_view(self, tree: exp.Alter) -> None:
        """RENAME TO / RENAME COLUMN of a scratch table (a temporary view)."""
        name = tree.this.name
        df = self.spark.table(_q(name))
        for a in tree.args["actions"]:
            if isinstance(a, exp.RenameColumn):
                df = df.withColumnRenamed(a.this.name, a.args["to"].name)
            elif isinstance(a, exp.AlterRename):
                df.createOrReplaceTempView(a.this.name)
                self.spark.catalog.dropTempView(name)
                self._blocks[a.this.name.lower()] = self._blocks.pop(name.lower(), [])
                return
            else:
                raise InputError(f"internal error: ALTER of a temporary view: {tree.sql('duckdb')[:80]}")
        df.createOrReplaceTempView(name)

    def _create_table(self, tree: exp.Create) -> None:
        target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
        name = target.name
        props = tree.args.get("properties")
        temp = props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)
        replace = bool(tree.args.get("replace"))
        df = None if temp else self._written_in_order(tree.expression)
        if df is None:
            df = self.spark.sql(to_spark(tree.expression))
        if temp:
            if not replace and self._is_view(name):
                raise InputError(f"a temporary table named {name!r} exists")
            self._checkpoint(df, name)
        else:
            df.write.mode("overwrite" if replace else "error").saveAsTable(
                f"{_q(target.db)}.{_q(name)}" if target.db else _q(name))  # a schema kept (the ledger's)

    def _written_in_order(self, query: exp.Expression) -> Any:
        """A table written in the order of its query's ORDER BY (a release in its keyed order), as
        rows hash-distributed on the first key and sorted by every key within each partition; None
        for a query without one. A global sort first runs the whole query once more to sample its
        range boundaries (at 10M rows, Mondrian's release took 59 s against 22 s unordered); the
        order a reader finds is as unpredictable without the key. A keyed ``md5_number`` key is
        the first 60 bits of the md5 there (no byte reversal: DuckDB's exact order is not needed)."""
        if not isinstance(query, exp.Select) or query.args.get("order") is None or query.args.get("limit") \
                or query.args.get("distinct") or query.args.get("group") or query.args.get("with_"):
            return None
        sel = query.copy()
        keys = [o.this for o in sel.args["order"].expressions]
        if any(o.args.get("desc") for o in sel.args["order"].expressions) or any(k.find(exp.AggFunc) for k in keys):
            return None
        names = sel.named_selects
        if "*" in names or len(set(names)) != len(names):
            return None
        sel.args["order"].pop()
        ords = []
        for i, k in enumerate(keys):
            k = k.copy()
            if _anon(k, "md5_number") and len(k.expressions) == 1:
                k = _spark(_MD5_60.format(_text(k.expressions[0])))
            ords.append(f"_adb_ord{i}")
            sel = sel.select(exp.alias_(k, ords[-1]), copy=False)
        df = self.spark.sql(to_spark(sel))
        return df.repartition(ords[0]).sortWithinPartitions(*ords).select(*[_q(n) for n in names])

    def _fetch(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        made: list[str] = []
        try:
            trees = self._trees(sql, params)
            df = self.spark.sql(to_spark(self._materialize_ctes(trees[-1], made)))
            rows = [tuple(r) for r in df.collect()]
            self.fetched.append(len(rows))
            return list(df.columns), rows
        except InputError:
            raise
        except Exception as e:
            raise SparkError(_short(e)) from e
        finally:
            for name in made:
                self._drop_view(name)

    # -- catalog ---------------------------------------------------------------------------------
    def _tables(self) -> list[Any]:
        return list(self.spark.catalog.listTables())

    def _is_view(self, name: str) -> bool:
        """Whether ``name`` is a temporary view of this session (a scratch table)."""
        low = name.lower()
        return any(t.isTemporary and t.name.lower() == low for t in self._tables())

    def columns(self, relation: str) -> list[tuple[str, str]]:
        if not self.exists(relation):
            raise InputError(f"no table or view named {relation!r} in the Spark session")
        return [(n, duckdb_type_name(t)) for n, t in self.spark.table(_q(relation)).dtypes]

    def exists(self, name: str) -> bool:
        low = name.lower()  # Spark's catalog is case-insensitive, and keeps names in lower case
        return any(t.name.lower() == low for t in self._tables())

    def relations(self, names: Iterable[str] = (), prefix: str | None = None,
                  contains: str | None = None) -> dict[str, str]:
        wanted = {n.lower(): n for n in names}
        out = {}
        for t in self._tables():
            low = t.name.lower()
            if low in wanted or (prefix is not None and low.startswith(prefix.lower())) \
                    or (contains is not None and contains.lower() in low):
                out[wanted.get(low, t.name)] = "VIEW" if t.isTemporary or t.tableType == "VIEW" else "BASE TABLE"
        return out

    def drop_column(self, table: str, column: str) -> None:
        """A catalog table of Spark's own format cannot drop a column: the rows are copied without it."""
        cols = ", ".join(_duck_ident(c) for c, _ in self.columns(table) if c != column)
        tmp = f"{table}_adb_dc"
        self.execute(f"CREATE TABLE {_duck_ident(tmp)} AS SELECT {cols} FROM {_duck_ident(table)}")
        self.drop(table)
        self.rename(tmp, table)

    def delete_where(self, table: str, condition: str, schema: str | None = None) -> None:
        """``DELETE FROM [schema.]table WHERE condition`` (``condition`` in DuckDB's dialect) on a
        catalog table. A table whose format deletes (Delta, Iceberg: a v2 table) deletes natively,
        in one commit; Spark's own file tables refuse DELETE, so the rows kept (``condition`` not
        true) are copied into a new table, which then takes the table's name (drop, rename: the
        same copy as :meth:`drop_column`). Killed during the copy, the table is unchanged (a
        leftover ``<table>_adb_del`` is replaced by the next delete); between the drop and the
        rename, the rows are in ``<table>_adb_del`` alone."""
        cond = sqlglot.parse_one(condition, read="duckdb")

        def name(t: str) -> str:  # DuckDB-dialect SQL, the schema kept
            return f"{_duck_ident(schema)}.{_duck_ident(t)}" if schema else _duck_ident(t)

        target = exp.Table(this=exp.to_identifier(table, quoted=True),
                           db=exp.to_identifier(schema, quoted=True) if schema else None)
        try:
            self.spark.sql(to_spark(exp.Delete(this=target, where=exp.Where(this=cond.copy()))))
            return
        except Exception as e:
            if "DELETE" not in str(e) or "not support" not in str(e):
                raise
        tmp = f"{table}_adb_del"
        cols = ", ".join(_duck_ident(c) for c in self.spark.table(f"{_q(schema)}.{_q(table)}" if schema
                                                                  else _q(table)).columns)
        self.execute(f"CREATE OR REPLACE TABLE {name(tmp)} AS SELECT {cols} FROM {name(table)} "
                     f"WHERE NOT COALESCE(({cond.sql('duckdb')}), FALSE)")
        self.execute(f"DROP TABLE {name(table)}")
        self.execute(f"ALTER TABLE {name(tmp)} RENAME TO {name(table)}")

    def schemas_holding(self, table: str) -> tuple[str, list[str]]:
        """:meth:`Engine.schemas_holding` from Spark's catalog (its databases)."""
        cat = self.spark.catalog
        return cat.currentDatabase(), sorted(d.name for d in cat.listDatabases() if cat.tableExists(f"{d.name}.{table}"))

    def digest_sum(self, exprs: list[str]) -> str:
        """:meth:`Engine.digest_sum` with Spark's ``xxhash64`` of the row, summed as DECIMAL(38, 0)
        (a sum of LONGs would overflow)."""
        return f"COALESCE(sum(CAST(xxhash64({', '.join(exprs)}) AS DECIMAL(38, 0))), 0)"

    def row_ids(self, s, relation: str) -> tuple[str, str]:
        """A row id from ``monotonically_increasing_id()`` (unique, not consecutive), computed once
        in a checkpointed copy; row_number() would number every row in one task."""
        return s.table(f"SELECT monotonically_increasing_id() AS _adb_rid, * FROM {_duck_ident(relation)}"), "_adb_rid"

    # -- the per-group step ------------------------------------------------------------------------
    def per_group(self, s, relation: str, key: str, sql: str, schema: str) -> str:
        """One grouped step (``applyInArrow``): each group of ``relation`` by ``key``, as Arrow on a
        worker, is the table ``relation`` of an embedded single-threaded DuckDB that runs ``sql``;
        the other scratch views ``sql`` names (small: a distribution, hierarchy codes) are fetched
        once and shipped with the function. Nothing of the groups passes through the driver. The
        function is pickled by value (:func:`group_step`): an executor's Python needs DuckDB and
        pyarrow, not anonydb."""
        views = {t.name.lower(): t.name for t in self._tables() if t.isTemporary}
        side = {views[n.lower()]: self.spark.table(_q(views[n.lower()])).toArrow()
                for n in side_names(sql, relation) if n.lower() in views}
        self.fetched.extend(t.num_rows for t in side.values())  # they pass through the driver too
        grouped = self.spark.table(_q(relation)).groupBy(key)
        spark_schema = _spark(f"CREATE TABLE x ({schema})").this.sql("spark")[len("x "):].strip("()")
        arrow_step, pandas_step = group_step(relation, sql, side)
        if hasattr(grouped, "applyInArrow"):
            df = grouped.applyInArrow(arrow_step, spark_schema)
        else:  # pyspark 3.5
            df = grouped.applyInPandas(pandas_step, spark_schema)
        name = s.name()
        self._checkpoint(df, name)
        return name

    def map_rows(self, s, relation: str, step: Any, columns: list[tuple[str, str]]) -> str:
        """``step`` on the executors (``mapInArrow``), over row tuples of each Arrow batch; nothing passes
        through the driver (an executor's Python needs what ``step`` imports: OpenDP for DP's noise)."""
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        ddl = ", ".join(f"{_q(c)} {t}" for c, t in columns)
        struct = _spark(f"CREATE TABLE x ({ddl})").this.sql("spark")[len("x "):].strip("()")
        schema = to_arrow_schema(StructType.fromDDL(struct) if hasattr(StructType, "fromDDL")
                                 else self.spark.createDataFrame([], struct).schema)

        def run(batches: Any) -> Any:
            import pyarrow as pa

            for b in batches:
                rows = list(zip(*(c.to_pylist() for c in b.columns))) if b.num_rows else []
                out = step(rows)
                yield pa.RecordBatch.from_arrays([pa.array([r[i] for r in out], type=f.type)
                                                  for i, f in enumerate(schema)], schema=schema)

        df = self.spark.table(_q(relation)).mapInArrow(run, struct)
        name = s.name()
        self._checkpoint(df, name)
        return name

    def load_frame(self, name: str, frame: Any) -> None:
        """The frame as a temporary view of the session (its Arrow table, through pandas on 3.5)."""
        table = as_arrow(frame)
        try:
            df = self.spark.createDataFrame(table)
        except (TypeError, ValueError):  # pyspark 3.5 takes pandas, not Arrow
            df = self.spark.createDataFrame(table.to_pandas())
        df.createOrReplaceTempView(name)

    def drop_frame(self, name: str) -> None:
        self.spark.catalog.dropTempView(name)

    # -- files -----------------------------------------------------------------------------------
    def file_select(self, path: Any, fmt: str, delim: str | None = None) -> str:
        """The file read by Spark (the CSV's schema inferred from every row), as a temporary view;
        a relative path is the caller's (a Connect server resolves it against its own folder)."""
        reader = self.spark.read
        path = Path(path).resolve()
        if fmt == "parquet":
            df = reader.parquet(str(path))
        else:
            df = reader.csv(str(path), header=True, inferSchema=True, sep=delim or ",", samplingRatio=1.0)
        name = temp_name("file")
        df.createOrReplaceTempView(name)
        return f"SELECT * FROM {_duck_ident(name)}"

    def copy_out(self, table: str, path: Any, fmt: str) -> None:
        """``table`` written by Spark as a Parquet folder at ``path`` (a local path: the driver
        renames it into place)."""
        if fmt != "parquet":
            raise NotAvailable(f"{fmt} export (Spark writes Parquet folders; export to a .parquet path)", self.dialect)
        self.spark.table(_q(table)).write.parquet(str(path))

    def close(self) -> None:
        if self.owned:
            self.spark.stop()
            if self.warehouse:
                shutil.rmtree(self.warehouse, ignore_errors=True)
            return
        for key, value in self._restore.items():  # a session the caller owns gets its settings back
            try:
                self.spark.conf.unset(key) if value is None else self.spark.conf.set(key, value)
            except Exception:  # a session that is gone keeps nothing to restore
                pass


def _duck_ident(name: str) -> str:
    from ..sqlgen import ident

    return ident(name)


def session_for(url: str, *, read_only: bool = False) -> SparkEngine:
    """An engine on a new session: ``spark`` (``local[*]``), ``local[N]``, ``spark://host:port`` (a
    standalone cluster) or ``sc://host:port`` (Spark Connect). A local session's catalog lives in
    a scratch warehouse folder removed by :meth:`SparkEngine.close` (tables made there are gone
    with the run: export the release); a cluster keeps its own catalog."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:
        raise InputError("--engine spark needs pyspark: pip install 'anonydb[spark]' (and Java 17)") from e
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME") and not url.startswith("sc://"):
        raise InputError("--engine spark needs Java 17 (apt-get install openjdk-17-jre-headless, or set JAVA_HOME)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers' Python: this one, which has DuckDB
    builder = SparkSession.builder.appName("anonydb")
    warehouse = None
    if url.startswith("sc://"):
        builder = builder.remote(url)
    else:
        master = LOCAL_MASTER if url == "spark" else url
        builder = builder.master(master)
        if master.startswith("local"):
            warehouse = tempfile.mkdtemp(prefix="anonydb-spark-")
            builder = (builder.config("spark.sql.warehouse.dir", os.path.join(warehouse, "warehouse"))
                       .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
                       .config("spark.ui.showConsoleProgress", "false"))
    running = SparkSession.getActiveSession()  # a session already in this process is the caller's: not stopped
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # a Py4J / gRPC error: one line
        raise InputError(f"cannot start a Spark session for {url!r}: {str(e).strip().splitlines()[0][:200]}") from e
    if not url.startswith("sc://"):
        spark.sparkContext.setLogLevel("ERROR")
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)  # a failing query's plan, logged again
    if running is not None:
        return SparkEngine(spark, read_only=read_only)
    return SparkEngine(spark, owned=True, warehouse=warehouse, read_only=read_only)


__all__ = ["SparkEngine", "session_for", "to_spark"]
