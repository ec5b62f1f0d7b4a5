"""anonydb as one plain SQL script: table macros for DuckDB that check every privacy model with no
Python in the process (``anonydb sql --out anonydb.sql``, then ``.read anonydb.sql`` in the DuckDB
CLI, or the script executed from any client or a dbt macro).

The macros are rendered from the templates the Python checks run (check_groups, check_global,
model_*, emd_*, model_threshold, verdict_summary): a macro binds the table, the QI list and the
parameters at call time (:class:`anonydb.sqlgen.SQL` keeps a parameter's name in the SQL instead
of a value), so its verdicts are the checks' own, decided in the same exact arithmetic. The group
key is a struct of the QI columns (``COLUMNS`` with a lambda over the QI list); a parameter given
as a decimal is read as the fraction of its first nine decimals (0.35 -> 35/100), as
:func:`anonydb.models.base.as_fraction` reads the decimal the user wrote.

Every check macro returns one row (model, holds, achieved, achieved_exact, groups,
violating_groups, violating_rows); a bad argument (an unknown column, k < 1, t outside [0, 1], a
hierarchy that does not cover a sensitive value) stops the query with a one-line ``error()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InputError
from .sqlgen import SQL, Templates

#: a parameter p read as the exact fraction p_num / SCALE (its first nine decimals)
SCALE = 1_000_000_000

_T = Templates("duckdb")
KEYS = ["_adb_key"]  # a struct of the QI columns: joined NULL-safe (keyjoin), grouped as a value


def _num(p: str) -> SQL:
    return SQL(f"CAST(round(CAST({p} AS DOUBLE) * {SCALE}) AS HUGEINT)")


@dataclass
class Check:
    """One check macro: its SQL name, the model's name in reports, its parameters (after tbl and
    qis), the guards on them and the verdict plan over the shared relations."""

    name: str
    model: str
    params: list[str]
    guards: list[tuple[str, str]]
    verdicts: str
    worst: str = "min"
    exact: bool = True  # the achieved value is a fraction num/den (else a float in num)
    sensitive: bool = True
    hierarchy: bool = False


def _err(message: str) -> str:
    """error() with a message: SQL text that concatenates to a string."""
    return f"error('anonydb: ' || {message})"


def _show(p: str) -> str:
    return f"coalesce(CAST({p} AS VARCHAR), 'NULL')"


def _count_guard(p: str) -> tuple[str, str]:
    return (f"{p} IS NULL OR {p} < 1 OR {p} <> floor({p})",
            f"'{p} must be an integer >= 1, got ' || {_show(p)}")


def _unit_guard(p: str, what: str) -> tuple[str, str]:
    return (f"{p} IS NULL OR {p} < 0 OR {p} > 1", f"'{p} must lie in [0, 1] ({what}), got ' || {_show(p)}")


def _checks() -> list[Check]:
    r = _T.render
    groups = dict(keys=KEYS, groups="_adb_groups", cells="_adb_cells")
    out = [Check("anonydb_check_k", "k-anonymity", ["k"], [_count_guard("k")],
                 r("model_k_anonymity.sql.j2", k=SQL("k"), **groups).sql, sensitive=False)]
    l_guard = ("l IS NULL OR l < 1", "'l must be >= 1, got ' || " + _show("l"))
    for variant in ("distinct", "entropy", "probabilistic", "recursive"):
        params = ["l", "c"] if variant == "recursive" else ["l"]
        guards = [l_guard] + ([("c IS NULL OR c <= 0", "'c must be > 0, got ' || " + _show("c"))]
                              if variant == "recursive" else [])
        if variant in ("distinct", "recursive"):
            guards[0] = _count_guard("l")
        plan = r("model_l_diversity.sql.j2", variant=variant, l=SQL("l"), l_num=_num("l"), l_den=SCALE,
                 c_num=_num("c"), c_den=SCALE, **groups).sql
        model = f"l-diversity ({variant})" if variant != "recursive" else "l-diversity (recursive (c,l))"
        out.append(Check(f"anonydb_check_l_{variant}", model, params, guards, plan,
                         exact=variant != "entropy"))
    emd = dict(keys=KEYS, qkeys=[], pcols=KEYS, p_rel="_adb_cells", q_rel="_adb_glob", sizes="_adb_groups",
               exact=None, sa_nulls=True)
    for distance in ("equal", "ordered", "hierarchical"):
        extra = dict(domain_rel="_adb_glob") if distance == "ordered" else {}
        if distance == "hierarchical":
            extra = dict(hier="_adb_hier", height=SQL("(SELECT max(_adb_h) + 1 FROM _adb_hier)"))
        inner = r(f"emd_{distance}.sql.j2", **emd, **extra).sql
        plan = r("model_threshold.sql.j2", keys=KEYS, inner=inner, t_num=_num("t"), t_den=SCALE).sql
        out.append(Check(f"anonydb_check_t_{distance}", f"t-closeness ({distance} EMD)",
                         ["t", "hierarchy"] if distance == "hierarchical" else ["t"],
                         [_unit_guard("t", "EMD with a normalized ground distance")], plan, worst="max",
                         hierarchy=distance == "hierarchical"))
    out.append(Check("anonydb_check_alpha_k", "(alpha,k)-anonymity", ["alpha", "k"],
                     [_unit_guard("alpha", "a frequency"), _count_guard("k")],
                     r("model_alpha_k.sql.j2", k=SQL("k"), a_num=_num("alpha"), a_den=SCALE, **groups).sql,
                     worst="max"))
    out.append(Check("anonydb_check_delta", "delta-disclosure", ["delta"],
                     [("delta IS NULL OR delta <= 0", "'delta must be > 0, got ' || " + _show("delta"))],
                     r("model_delta_disclosure.sql.j2", keys=KEYS, cells="_adb_cells", glob="_adb_glob",
                       sa_nulls=True, total=SQL("(SELECT sum(_adb_cnt) FROM _adb_glob)"),
                       domain=SQL("(SELECT count(*) FROM _adb_glob)"), delta=SQL("delta")).sql,
                     worst="max", exact=False))
    return out


def _macro(c: Check) -> str:
    args = ["tbl", "qis"] + (["sa"] if c.sensitive else []) + c.params
    unknown = "list_filter(qis, lambda q: NOT list_contains(_adb_names, q))"
    guards = [("len(qis) = 0", "'give at least one quasi-identifier'"),
              (f"len({unknown}) > 0", f"'unknown column ' || {unknown}[1] || ' in ' || tbl")]
    if c.sensitive:
        guards += [("NOT list_contains(_adb_names, sa)", "'unknown sensitive column ' || sa || ' in ' || tbl"),
                   ("list_contains(qis, sa)", "'the sensitive attribute ' || sa || ' is also a quasi-identifier'")]
    guards += c.guards
    when = "\n".join(f"             WHEN {cond} THEN {_err(msg)}" for cond, msg in guards)
    sa = ("struct_extract_at(struct_pack(*COLUMNS(lambda c: c = sa OR c = '_adb_pad')), 1)"
          if c.sensitive else "NULL")
    hier = ""
    if c.hierarchy:  # (value, level1, ..., root) as text, one row per leaf: its non-root levels, long
        hier = f"""
), _adb_hwide AS (
    SELECT list_value(*COLUMNS(*)) AS _adb_l FROM (SELECT CAST(COLUMNS(*) AS VARCHAR) FROM query_table(hierarchy))
), _adb_hier AS (
    SELECT _adb_l[1] AS _adb_leaf, CAST(h AS INTEGER) AS _adb_h, _adb_l[h + 1] AS _adb_node
    FROM _adb_hwide, range(len(_adb_l) - 1) AS _adb_r(h)
    UNION ALL
    SELECT NULL, CAST(h AS INTEGER), NULL FROM range((SELECT max(len(_adb_l)) - 1 FROM _adb_hwide)) AS _adb_r(h)
), _adb_hguard AS (
    SELECT CASE WHEN count(*) > 0 THEN {_err("'the hierarchy ' || hierarchy || ' does not cover the value ' || min(v) || ' of ' || sa")}
                ELSE TRUE END AS _adb_ok
    FROM (SELECT DISTINCT CAST(_adb_sa AS VARCHAR) AS v FROM _adb_glob WHERE _adb_sa IS NOT NULL) AS d
    WHERE v NOT IN (SELECT _adb_leaf FROM _adb_hier WHERE _adb_h = 0 AND _adb_leaf IS NOT NULL)"""
    exact = ("CAST(worst_num AS VARCHAR) || CASE WHEN worst_den = 1 THEN '' ELSE '/' || CAST(worst_den AS VARCHAR) END"
             if c.exact else "NULL")
    reduce = ("SELECT *, CAST(worst_num // g AS HUGEINT) AS worst_num_r, CAST(worst_den // g AS HUGEINT) AS worst_den_r "
              "FROM (SELECT *, gcd(CAST(worst_num AS HUGEINT), CAST(worst_den AS HUGEINT)) AS g FROM _adb_summary0)"
              if c.exact else "SELECT *, worst_num AS worst_num_r, worst_den AS worst_den_r FROM _adb_summary0")
    summary = _T.render("verdict_summary.sql.j2", verdicts=c.verdicts, worst=c.worst).sql
    return f"""CREATE OR REPLACE MACRO {c.name}({', '.join(args)}) AS TABLE
WITH _adb_cols AS (
    SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _adb_names  -- the names, also of an empty table
    FROM (SELECT 1 AS _adb_one) AS _adb_o LEFT JOIN (FROM query_table(tbl) LIMIT 1) AS _adb_t ON TRUE
), _adb_guard AS (
    SELECT CASE
{when}
             ELSE TRUE END AS _adb_ok
    FROM _adb_cols
), _adb_src AS (
    SELECT struct_pack(*COLUMNS(lambda c: list_contains(qis, c) OR c = '_adb_pad')) AS _adb_key,
           {sa} AS _adb_sa
    FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM query_table(tbl))
), _adb_cells AS (
    SELECT _adb_key, _adb_sa, count(*) AS _adb_cnt FROM _adb_src GROUP BY ALL
), _adb_groups AS (
{_T.render("check_groups.sql.j2", keys=KEYS, cells="_adb_cells").sql}
), _adb_glob AS (
{_T.render("check_global.sql.j2", cells="_adb_cells").sql}{hier}
), _adb_summary0 AS (
{summary}
), _adb_summary AS (
    {reduce.replace("worst_num_r", "wn").replace("worst_den_r", "wd")}
)
SELECT '{c.model}' AS model,
       violating_groups = 0 AS holds,
       CAST(wn AS DOUBLE) / wd AS achieved,
       {exact.replace("worst_num", "wn").replace("worst_den", "wd")} AS achieved_exact,
       groups, violating_groups, CAST(violating_rows AS BIGINT) AS violating_rows
FROM _adb_summary, _adb_guard{", _adb_hguard" if c.hierarchy else ""}
WHERE _adb_guard._adb_ok{" AND _adb_hguard._adb_ok" if c.hierarchy else ""};
"""


HIERARCHY_MACRO = """-- An ARX hierarchy file (value;level1;...;root, no header) as a table of text columns column0 ..
CREATE OR REPLACE MACRO anonydb_hierarchy(path, delim := ';') AS TABLE
SELECT * FROM read_csv(path, header := false, delim := delim, all_varchar := true);
"""


def script() -> str:
    """The whole script: every macro, each statement ending in ';' at a line end."""
    head = (f"-- anonydb {_version()}: privacy checks as DuckDB table macros, no Python needed.\n"
            f"-- Generated by `anonydb sql` from anonydb's SQL templates; install with `.read anonydb.sql`.\n"
            f"-- Each check returns one row: model, holds, achieved, achieved_exact, groups, violating_groups,\n"
            f"-- violating_rows. Example: FROM anonydb_check_k('adult', ['age', 'sex'], 5);\n\n")
    from importlib import resources

    release = resources.files("anonydb.sql").joinpath("script_generalize.sql").read_text(encoding="utf-8")
    return head + HIERARCHY_MACRO + "\n" + "\n".join(_macro(c) for c in _checks()) + "\n" + release


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("anonydb")
    except PackageNotFoundError:  # a source checkout that was never installed
        return "(source)"


def write(path: str | Path, replace: bool = False) -> Path:
    """Write the script to ``path``; an existing file is replaced only when ``replace``."""
    p = Path(path)
    if p.exists() and not replace:
        raise InputError(f"{str(p)!r} exists: give another path, or replace it explicitly (--replace)")
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(script(), encoding="utf-8")
    tmp.replace(p)
    return p
