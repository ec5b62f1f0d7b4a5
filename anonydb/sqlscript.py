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

Every check macro takes ``person := 'col'``: the models then judge record owners
(:mod:`anonydb.models.base`). The relations are each the union of a row-level part (read when
person is NULL) and a person-level part (read otherwise), one of them always over no rows; the
groups carry their facts m (= n by rows), which the distribution-type models read (``_adb_fgroups``),
reporting each group's persons (model_persons.sql.j2), as :meth:`anonydb.models.base.Model.judge`.
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


def _nine(p: str) -> SQL:
    """A parameter as the decimal of its first nine places, DECIMAL(37, 9) (sql/_macros.sql.j2 dec9)."""
    return SQL(f"CAST(CAST({p} AS DOUBLE) AS DECIMAL(37, 9))")


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
    guard: bool = False  # personalized privacy: the ``guard`` column's nodes per group (_adb_guards)


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


def _by_facts(plan: str) -> str:
    """A distribution-type model's plan, judged on the groups' facts, reporting their persons."""
    return _T.render("model_persons.sql.j2", inner=plan, keys=KEYS, groups="_adb_groups").sql


def _checks() -> list[Check]:
    r = _T.render
    groups = dict(keys=KEYS, groups="_adb_groups", cells="_adb_cells")
    fgroups = dict(keys=KEYS, groups="_adb_fgroups", cells="_adb_cells")
    out = [Check("anonydb_check_k", "k-anonymity", ["k"], [_count_guard("k")],
                 r("model_k_anonymity.sql.j2", k=SQL("k"), **groups).sql, sensitive=False)]
    l_guard = ("l IS NULL OR l < 1", "'l must be >= 1, got ' || " + _show("l"))
    for variant in ("distinct", "entropy", "probabilistic", "recursive"):
        params = ["l", "c"] if variant == "recursive" else ["l"]
        guards = [l_guard] + ([("c IS NULL OR c <= 0", "'c must be > 0, got ' || " + _show("c"))]
                              if variant == "recursive" else [])
        if variant in ("distinct", "recursive"):
            guards[0] = _count_guard("l")
        facts = variant in ("entropy", "recursive")
        plan = r("model_l_diversity.sql.j2", variant=variant, l=SQL("l"), l_num=_num("l"), l_den=SCALE,
                 c_num=_num("c"), c_den=SCALE, **(fgroups if facts else groups)).sql
        plan = _by_facts(plan) if facts else plan
        model = f"l-diversity ({variant})" if variant != "recursive" else "l-diversity (recursive (c,l))"
        out.append(Check(f"anonydb_check_l_{variant}", model, params, guards, plan,
                         exact=variant != "entropy"))
    emd = dict(keys=KEYS, qkeys=[], pcols=KEYS, p_rel="_adb_cells", q_rel="_adb_glob", sizes="_adb_fgroups",
               exact=None, sa_nulls=True)
    for distance in ("equal", "ordered", "hierarchical"):
        extra = dict(domain_rel="_adb_glob") if distance == "ordered" else {}
        if distance == "hierarchical":
            extra = dict(hier="_adb_hier", height=SQL("(SELECT max(_adb_h) + 1 FROM _adb_hier)"))
        inner = r(f"emd_{distance}.sql.j2", **emd, **extra).sql
        plan = _by_facts(r("model_threshold.sql.j2", keys=KEYS, inner=inner, t_num=_num("t"), t_den=SCALE).sql)
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
                       sa_nulls=True, sizes="_adb_groups",
                       total=SQL("(SELECT CASE WHEN person IS NULL THEN (SELECT sum(_adb_cnt) FROM _adb_glob) "
                                 "ELSE count(DISTINCT _adb_p) END FROM _adb_src)"),
                       domain=SQL("(SELECT count(*) FROM _adb_glob)"), delta=SQL("delta")).sql,
                     worst="max", exact=False))
    total = SQL("(SELECT CASE WHEN person IS NULL THEN (SELECT sum(_adb_cnt) FROM _adb_glob) "
                "ELSE count(DISTINCT _adb_p) END FROM _adb_src)")
    for variant in ("basic", "enhanced"):
        out.append(Check("anonydb_check_beta" + ("_enhanced" if variant == "enhanced" else ""),
                         "beta-likeness" if variant == "basic" else "enhanced beta-likeness", ["beta"],
                         [("beta IS NULL OR beta <= 0", "'beta must be > 0, got ' || " + _show("beta"))],
                         r("model_beta_likeness.sql.j2", keys=KEYS, cells="_adb_cells", glob="_adb_glob",
                           groups="_adb_groups", sa_nulls=True, total=total, b_num=_num("beta"), b_den=SCALE,
                           enhanced=variant == "enhanced").sql,
                         worst="max", exact=variant == "basic"))
    c_guard = ("c IS NULL OR c <= 0", "'c must be > 0, got ' || " + _show("c"))
    l2_guard = ("l IS NULL OR l < 2 OR l <> floor(l)", "'l must be an integer >= 2, got ' || " + _show("l"))
    out.append(Check("anonydb_check_l_pd_recursive", "l-diversity (pd-recursive (c,l))", ["l", "c", "allowed"],
                     [l2_guard, c_guard],
                     _by_facts(r("model_recursive_disclosure.sql.j2", keys=KEYS, cells="_adb_cells", l=SQL("l"),
                                 c_num=_num("c"), c_den=SCALE, allowed=SQL("allowed"), protected=[], c2_num=0,
                                 c2_den=1).sql), worst="max"))
    out.append(Check("anonydb_check_l_npd_recursive", "l-diversity (npd-recursive (c1,c2,l))",
                     ["l", "c", "allowed", "protected", "c2"], [l2_guard, c_guard, _unit_guard("c2", "a share")],
                     _by_facts(r("model_recursive_disclosure.sql.j2", keys=KEYS, cells="_adb_cells", l=SQL("l"),
                                 c_num=_num("c"), c_den=SCALE, allowed=SQL("allowed"), protected=SQL("protected"),
                                 c2_num=_num("c2"), c2_den=SCALE).sql), worst="max"))
    bounds = SQL(f"SELECT CAST(_adb_k AS VARCHAR) AS _adb_v, {_num('_adb_h')} AS _adb_hn, {SCALE} AS _adb_hd "
                 f"FROM (SELECT unnest(map_keys(bounds)) AS _adb_k, unnest(map_values(bounds)) AS _adb_h)")
    b_guard = ("bounds IS NULL OR cardinality(bounds) = 0 OR list_bool_or(list_transform(map_values(bounds), "
               "lambda h: h IS NULL OR h < 0 OR h > 1))",
               "'bounds must map sensitive values to thresholds h in [0, 1], e.g. MAP {''HIV'': 0.1}'")
    out.append(Check("anonydb_check_confidence_bound", "confidence bounding", ["bounds"], [b_guard],
                     r("model_confidence_bounding.sql.j2", bounds_sql=bounds, named=[], k=None, **groups).sql, worst="max"))
    out.append(Check("anonydb_check_xy", "(X,Y)-privacy", ["k", "bounds"], [_count_guard("k"), b_guard],
                     r("model_confidence_bounding.sql.j2", bounds_sql=bounds, named=[], k=SQL("k"), **groups).sql, worst="max"))
    sa_type = ("(SELECT typeof(struct_extract_at(struct_pack(*COLUMNS(lambda c: c = sa OR c = '_adb_pad')), 1)) "
               "FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM query_table(tbl)) LIMIT 1)")
    numeric = (f"list_contains(_adb_names, sa) AND NOT list_contains(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', "
               f"'HUGEINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'FLOAT', 'DOUBLE'], {sa_type}) "
               f"AND NOT starts_with({sa_type}, 'DECIMAL')",
               "'the sensitive attribute ' || sa || ' is not numeric'")
    out.append(Check("anonydb_check_ke", "(k,e)-anonymity", ["k", "e"],
                     [_count_guard("k"), ("e IS NULL OR e < 0", "'e must be >= 0, got ' || " + _show("e")), numeric],
                     r("model_ke.sql.j2", k=SQL("k"), e_min=_nine("e"), persons=True, lenient=True, **groups).sql,
                     exact=False))
    out.append(Check("anonydb_check_epsilon_m", "(epsilon,m)-anonymity", ["epsilon", "m"],
                     [("epsilon IS NULL OR epsilon < 0", "'epsilon must be >= 0, got ' || " + _show("epsilon")),
                      ("m IS NULL OR m < 1", "'m must be >= 1, got ' || " + _show("m")), numeric],
                     r("model_epsilon_m.sql.j2", eps_max=_nine("epsilon"), m_num=_num("m"), m_den=SCALE, lenient=True,
                       **groups).sql))
    # by rows the records under a guard sum the cells; by persons they are counted distinct in the facts
    personal = dict(keys=KEYS, groups="_adb_groups", guards="_adb_guards", closure="_adb_hier",
                    p_num=_num("breach"), p_den=SCALE)
    out.append(Check("anonydb_check_personalized", "personalized privacy", ["guard", "breach", "hierarchy"],
                     [("NOT list_contains(_adb_names, guard)", "'unknown guard column ' || guard || ' in ' || tbl"),
                      ("list_contains(qis, guard) OR guard = sa OR guard = person",
                       "'the guard column ' || guard || ' must be another column than the QIs, the sensitive "
                       "attribute and the person column'"),
                      _unit_guard("breach", "a probability")],
                     f"SELECT * FROM ({r('model_personalized.sql.j2', cells='_adb_cells', **personal).sql}) AS _adb_r "
                     f"WHERE person IS NULL\nUNION ALL\n"
                     f"SELECT * FROM ({r('model_personalized.sql.j2', facts='_adb_pfacts', **personal).sql}) AS _adb_p "
                     f"WHERE person IS NOT NULL",
                     worst="max", hierarchy=True, guard=True))
    out.append(Check("anonydb_check_multi_k", "multiple-QID k-anonymity", ["qid_sets", "k"],
                     [_count_guard("k"), ("qid_sets IS NULL OR len(qid_sets) = 0", "'give at least one QID set'"),
                      ("len(list_filter(flatten(qid_sets), lambda c: NOT list_contains(qis, c))) > 0",
                       "'a QID set names ' || list_filter(flatten(qid_sets), lambda c: NOT list_contains(qis, c))[1] "
                       "|| ', which is not a quasi-identifier'"),
                      ("person IS NOT NULL", "'multiple-QID k-anonymity counts records: drop person'")],
                     r("script_multi_qid.sql.j2", keys=KEYS, groups="_adb_groups", sets=SQL("qid_sets"), k=SQL("k")).sql,
                     sensitive=False))
    return out


def _macro(c: Check) -> str:
    args = ["tbl", "qis"] + (["sa"] if c.sensitive else []) + c.params + ["person := NULL"]
    unknown = "list_filter(qis, lambda q: NOT list_contains(_adb_names, q))"
    guards = [("len(qis) = 0", "'give at least one quasi-identifier'"),
              (f"len({unknown}) > 0", f"'unknown column ' || {unknown}[1] || ' in ' || tbl")]
    if c.sensitive:
        guards += [("NOT list_contains(_adb_names, sa)", "'unknown sensitive column ' || sa || ' in ' || tbl"),
                   ("list_contains(qis, sa)", "'the sensitive attribute ' || sa || ' is also a quasi-identifier'")]
    guards += [("person IS NOT NULL AND NOT list_contains(_adb_names, person)",
                "'unknown person column ' || person || ' in ' || tbl"),
               ("list_contains(qis, person)", "'the person column ' || person || ' is also a quasi-identifier'")]
    if c.sensitive:
        guards.append(("person = sa", "'the person column ' || person || ' is also the sensitive attribute'"))
    guards += c.guards
    when = "\n".join(f"             WHEN {cond} THEN {_err(msg)}" for cond, msg in guards)
    sa = ("struct_extract_at(struct_pack(*COLUMNS(lambda c: c = sa OR c = '_adb_pad')), 1)"
          if c.sensitive else "NULL")
    gd = (",\n           CAST(struct_extract_at(struct_pack(*COLUMNS(lambda c: c = guard OR c = '_adb_pad')), 1) AS VARCHAR) "
          "AS _adb_gd" if c.guard else "")
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
    if c.guard:  # each group's records per guarding node, no guard outside the hierarchy, one guard a person
        hier += f"""
), _adb_guards AS (
    SELECT _adb_key, _adb_gd AS _adb_sa, count(*) AS _adb_cnt FROM _adb_src GROUP BY ALL
), _adb_pfacts AS (  -- record owners: a group's persons and their values
    SELECT DISTINCT _adb_key, _adb_p, _adb_sa FROM _adb_src WHERE person IS NOT NULL
), _adb_gguard AS (
    SELECT CASE WHEN count(*) > 0 THEN {_err("'guarding node ' || min(_adb_sa) || ' is not a node below the root of the hierarchy ' || hierarchy")}
                ELSE TRUE END AS _adb_ok
    FROM _adb_guards
    WHERE _adb_sa IS NOT NULL AND _adb_sa NOT IN (SELECT _adb_node FROM _adb_hier WHERE _adb_node IS NOT NULL)
), _adb_gpguard AS (
    SELECT CASE WHEN count(*) > 0 THEN {_err("'person ' || CAST(min(_adb_p) AS VARCHAR) || ' names more than one guarding node in column ' || guard || ': a guard belongs to a person'")}
                ELSE TRUE END AS _adb_ok
    FROM (SELECT _adb_p FROM _adb_src WHERE person IS NOT NULL GROUP BY _adb_p
          HAVING count(DISTINCT _adb_gd) > 1 OR count(_adb_gd) NOT IN (0, count(*))) AS _adb_x"""
    # the worst value wn / wd, reduced when it is an exact fraction
    exact = "CAST(wn AS VARCHAR) || CASE WHEN wd = 1 THEN '' ELSE '/' || CAST(wd AS VARCHAR) END" if c.exact else "NULL"
    reduce = ("SELECT *, CAST(worst_num // g AS HUGEINT) AS wn, CAST(worst_den // g AS HUGEINT) AS wd "
              "FROM (SELECT *, gcd(CAST(worst_num AS HUGEINT), CAST(worst_den AS HUGEINT)) AS g FROM _adb_summary0)"
              if c.exact else "SELECT *, worst_num AS wn, worst_den AS wd FROM _adb_summary0")
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
           {sa} AS _adb_sa,
           struct_extract_at(struct_pack(*COLUMNS(lambda c: c = coalesce(person, '_adb_pad') OR c = '_adb_pad')), 1) AS _adb_p{gd}
    FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM query_table(tbl))
), _adb_pguard AS (  -- a NULL is not a person
    SELECT CASE WHEN count(*) > 0 THEN {_err("'person column ' || person || ' is NULL on ' || count(*) || ' rows: a NULL is not a person'")}
                ELSE TRUE END AS _adb_ok
    FROM _adb_src, _adb_guard WHERE _adb_guard._adb_ok AND person IS NOT NULL AND _adb_p IS NULL
), _adb_cells AS (  -- rows; or persons holding each value (record owners)
    SELECT _adb_key, _adb_sa, count(*) AS _adb_cnt FROM _adb_src WHERE person IS NULL GROUP BY ALL
    UNION ALL
    SELECT _adb_key, _adb_sa, count(DISTINCT _adb_p) AS _adb_cnt FROM _adb_src WHERE person IS NOT NULL GROUP BY ALL
), _adb_g0 AS (
{_T.render("check_groups.sql.j2", keys=KEYS, cells="_adb_cells").sql}
), _adb_groups AS (  -- n: rows, or persons; m: the facts the distributions count (= n by rows)
    SELECT _adb_key, _adb_n, _adb_d, _adb_mx, _adb_clnc, _adb_n AS _adb_m FROM _adb_g0 WHERE person IS NULL
    UNION ALL
    SELECT g._adb_key, p._adb_n, g._adb_d, g._adb_mx, g._adb_clnc, g._adb_n AS _adb_m
    FROM _adb_g0 AS g
    JOIN (SELECT _adb_key, count(DISTINCT _adb_p) AS _adb_n FROM _adb_src WHERE person IS NOT NULL GROUP BY ALL) AS p
      ON p._adb_key IS NOT DISTINCT FROM g._adb_key
), _adb_fgroups AS (
    SELECT _adb_key, _adb_m AS _adb_n, _adb_d, _adb_mx, _adb_clnc FROM _adb_groups
), _adb_glob AS (  -- the whole table's rows, or persons, per value
    SELECT _adb_sa, count(*) AS _adb_cnt FROM _adb_src WHERE person IS NULL GROUP BY ALL
    UNION ALL
    SELECT _adb_sa, count(DISTINCT _adb_p) AS _adb_cnt FROM _adb_src WHERE person IS NOT NULL GROUP BY ALL{hier}
), _adb_summary0 AS (
{summary}
), _adb_summary AS (
    {reduce}
)
SELECT '{c.model}' AS model,
       violating_groups = 0 AS holds,
       CAST(wn AS DOUBLE) / wd AS achieved,
       {exact} AS achieved_exact,
       groups, violating_groups, CAST(violating_rows AS BIGINT) AS violating_rows
FROM _adb_summary, _adb_guard, _adb_pguard{", _adb_hguard" if c.hierarchy else ""}{", _adb_gguard, _adb_gpguard" if c.guard else ""}
WHERE _adb_guard._adb_ok AND _adb_pguard._adb_ok{" AND _adb_hguard._adb_ok" if c.hierarchy else ""}{" AND _adb_gguard._adb_ok AND _adb_gpguard._adb_ok" if c.guard else ""};
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

    release = "\n".join(resources.files("anonydb.sql").joinpath(f).read_text(encoding="utf-8")
                        for f in ("script_generalize.sql", "script_anatomy.sql", "script_risk.sql"))
    return (head + HIERARCHY_MACRO + "\n" + "\n".join(_macro(c) for c in _checks()) + "\n" + release + "\n"
            + _mondrian_macro())


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


# -- Mondrian as one statement -------------------------------------------------------------------
#: the most quasi-identifiers anonydb_mondrian takes: the script holds the plan for each count up to
#: this (a plan padded with constant QIs would carry them through every round: 35% slower on Adult)
MONDRIAN_MAX_QIS = 10
#: the types Mondrian cuts on their values (anonydb.schema.kind_of_type: numeric; dates on epoch seconds)
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
            "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE")
_DATES = ("DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS")


class _Range(SQL):
    """A QI's global code range inside the plan: a scalar subquery, and positive at render time (a
    range of 0 gives a NULL span at run time, which no cut takes, as the span 0.0 of the Python
    plan)."""

    def __gt__(self, other):
        return True


def _kind_case(v: str, numeric: str, date: str, other: str) -> str:
    """An expression by the kind of ``v``'s SQL type (anonydb_kind: typeof() of a column is a
    constant, folded away)."""
    return f"CASE anonydb_kind({v}) WHEN 'numeric' THEN {numeric} WHEN 'date' THEN {date} ELSE {other} END"


def _mondrian_statement(with_sa: bool, d: int = MONDRIAN_MAX_QIS, person: bool = False) -> str:
    """The Python Mondrian's one-statement plan (mondrian_recursive.sql.j2 with the models' own
    verdicts: k, distinct l and equal-EMD t) for ``d`` QIs, then the release: a label per class
    (numeric and date QIs [lo, hi], others the sorted set of values), eq_class, the sensitive and
    kept columns, checked again over every published column but the sensitive one (error() unless
    every class meets the models), in random order.
    Tokens the macro replaces: __ADB_SRC__, __ADB_SRCTEXT__, __ADB_COLS__, __ADB_SA__, __ADB_KEEP__,
    __ADB_KEEPORDER__, __ADB_HASKEEP__, __ADB_KEEPNAMES__, __ADB_LABELS__, __ADB_SANAME__, __ADB_WANTED__, __ADB_K__, __ADB_L__, __ADB_T__. Every QI is
    coded as the Python plan codes it: a numeric one by its value, a date by epoch seconds, any other
    by its rank in value order (NULL last); strict cuts, no hierarchies (categorical="order").
    ``person`` (record owners, token __ADB_PERSON__): the cuts partition persons, whose QIs must be
    constant (the statement stops otherwise), as the Python plan does: one row a person, or a
    person's distinct values with one row flagged (_adb_own); every source row takes its person's
    class, the models and the release's own check count persons, and the person key is not
    published."""
    from types import SimpleNamespace

    # the QI records the Mondrian templates read (methods.mondrian keeps its own; every one coded numeric here)
    qis = [SimpleNamespace(column=f"_adb_q{i}", kind="numeric", dict=None, hier=False, hierarchy=None, card=0,
                           range=_Range(f"(SELECT _adb_r{i} FROM _adb_ranges)")) for i in range(d)]
    k, l, t = SQL("__ADB_K__"), SQL("__ADB_L__"), SQL("__ADB_T__")
    keys = ["_adb_pid", "_adb_dim", "_adb_side"]
    groups = "_adb_groups" if with_sa else "_adb_split"
    owned = person and with_sa  # the work rows are persons' values, flagged once a person
    parts = [_T.render("model_k_anonymity.sql.j2", keys=keys, groups=groups, k=k).sql]
    if with_sa:
        parts.append(_T.render("model_l_diversity.sql.j2", keys=keys, groups=groups, cells="_adb_split",
                               variant="distinct", l=l, l_num=1, l_den=1, c_num=1, c_den=1).sql)
        emd = _T.render("emd_equal.sql.j2", keys=keys, qkeys=[], pcols=keys, p_rel="_adb_split", q_rel="_adb_glob",
                        sizes="_adb_fgroups" if owned else groups, exact=None, sa_nulls=True).sql
        plan = _T.render("model_threshold.sql.j2", keys=keys, inner=emd, t_num=_num(t), t_den=SCALE).sql
        if owned:  # t reads the facts' distribution (Model.judge): the groups by their facts, their persons
            plan = _T.render("model_persons.sql.j2", inner=plan, keys=keys, groups=groups).sql
        parts.append(plan)
    kk = ", ".join(keys)
    union = " UNION ALL ".join(f"SELECT {kk}, _adb_ok FROM ({p}) AS v" for p in parts)
    ok = f"SELECT {kk}, bool_and(coalesce(_adb_ok, FALSE)) AS _adb_ok FROM ({union}) AS u GROUP BY ALL"
    groups_sql = _T.render("check_groups.sql.j2", keys=keys, cells="_adb_split", persons=owned).sql if with_sa else None
    min_cut = _Range(f"(2 * greatest({k}, {l if with_sa else 1}))")
    rounds = _T.render("mondrian_recursive.sql.j2", work="_adb_work", ok=ok, groups_sql=groups_sql, try_all_dims=True,
                       from_rows=False, with_qid=False, qis=qis, hq=None, sensitive="_adb_sa" if with_sa else None,
                       relaxed=False, min_cut=min_cut, persons=owned, owners=owned).sql
    q = range(d)
    code = [_kind_case(f"b._adb_q{i}", f"TRY_CAST(CAST(b._adb_q{i} AS VARCHAR) AS DOUBLE)",
                       f"CAST(epoch(TRY_CAST(CAST(b._adb_q{i} AS VARCHAR) AS TIMESTAMP)) AS DOUBLE)",
                       f"CAST(dense_rank() OVER (ORDER BY b._adb_q{i} NULLS LAST) - 1 AS DOUBLE)") for i in q]
    labels = []
    for i in q:
        rng = (f"CASE WHEN min(j._adb_q{i}) = max(j._adb_q{i}) THEN CAST(min(j._adb_q{i}) AS VARCHAR) "
               f"ELSE '[' || CAST(min(j._adb_q{i}) AS VARCHAR) || ', ' || CAST(max(j._adb_q{i}) AS VARCHAR) || ']' END")
        vals = f"list(DISTINCT coalesce(CAST(j._adb_q{i} AS VARCHAR), 'NULL'))"
        sets = (f"CASE WHEN len({vals}) = 1 THEN {vals}[1] "
                f"ELSE '{{' || array_to_string(list_sort({vals}), ', ') || '}}' END")
        labels.append(_kind_case(f"any_value(j._adb_q{i})", rng, rng, sets) + f" AS _adb_label{i}")
    sa = ", __ADB_SA__ AS _adb_sa" if with_sa else ""
    lsql = "count(DISTINCT _adb_sa) + max(CASE WHEN _adb_sa IS NULL THEN 1 ELSE 0 END)" if with_sa else "1"
    size = "count(DISTINCT _adb_p)" if person else "count(*)"
    verify = ""
    if with_sa:
        emd_rel = _T.render("emd_equal.sql.j2", keys=["_adb_cls"], qkeys=[], pcols=["_adb_cls"], p_rel="_adb_rc",
                            q_rel="_adb_glob", sizes=None, exact=None, sa_nulls=True).sql
        verify = (f", _adb_rc AS (SELECT _adb_vk AS _adb_cls, _adb_sa, {size} AS _adb_cnt FROM _adb_rel GROUP BY ALL), "
                  f"_adb_emd AS ({emd_rel}), _adb_rv AS (SELECT coalesce(bool_and(CAST(_adb_num AS HUGEINT) * {SCALE} "
                  f"<= CAST(_adb_den AS HUGEINT) * {_num(t)}), TRUE) AS t_ok FROM _adb_emd)")
    nulls = " + ".join(f"CASE anonydb_kind(any_value(b0._adb_q{i})) WHEN 'other' THEN 0 ELSE "
                       f"count(*) FILTER (WHERE b0._adb_q{i} IS NULL) END" for i in q)
    qcols = ", ".join(f"_adb_q{i}" for i in q)
    l_root = ("WHEN r.d < __ADB_L__ THEN error('anonydb: infeasible: the whole table has ' || r.d || ' distinct "
              "values of the sensitive attribute, fewer than l = __ADB_L__')") if with_sa else ""
    unit = "persons" if person else "rows"
    jsel = ("    SELECT a._adb_pid, e.* FROM _adb_e AS e JOIN (SELECT DISTINCT b._adb_p, a._adb_pid FROM _adb_b AS b\n"
            "        JOIN _adb_assign AS a ON a._adb_rid = b._adb_rid) AS a ON a._adb_p = e._adb_p" if person else
            "    SELECT a._adb_pid, b.* FROM _adb_b AS b JOIN _adb_assign AS a ON a._adb_rid = b._adb_rid")
    # the rows the cuts partition: the source's, or (record owners) its persons' distinct values
    if person:
        rows_cte = f"""_adb_e AS (
    SELECT row_number() OVER () AS _adb_rid, __ADB_COLS__{sa}__ADB_KEEP__, __ADB_PERSON__ AS _adb_p
    FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM __ADB_SRC__)
), _adb_pcheck AS (  -- a NULL is not a person; QIs constant per person
    SELECT CASE WHEN count(*) FILTER (WHERE _adb_p IS NULL) > 0
                THEN error('anonydb: the person column is NULL on ' || count(*) FILTER (WHERE _adb_p IS NULL) || ' rows: a NULL is not a person')
                WHEN (SELECT count(*) FROM (SELECT _adb_p FROM _adb_e GROUP BY _adb_p
                      HAVING {' OR '.join(f'count(DISTINCT _adb_q{i}) + max(CASE WHEN _adb_q{i} IS NULL THEN 1 ELSE 0 END) > 1' for i in range(d))})) > 0
                THEN error('anonydb: a quasi-identifier varies within a person: a person''s records must share their QI values')
                ELSE TRUE END AS ok
    FROM _adb_e
), _adb_b AS (
    SELECT row_number() OVER () AS _adb_rid, f.*{", CASE WHEN row_number() OVER (PARTITION BY f._adb_p ORDER BY f._adb_sa NULLS LAST) = 1 THEN 1 ELSE 0 END AS _adb_own" if with_sa else ''}
    FROM (SELECT DISTINCT {', '.join(f'_adb_q{i}' for i in range(d))}{', _adb_sa' if with_sa else ''}, _adb_p FROM _adb_e, _adb_pcheck WHERE _adb_pcheck.ok) AS f
)"""
    else:
        rows_cte = f"""_adb_b AS (
    SELECT row_number() OVER () AS _adb_rid, __ADB_COLS__{sa}__ADB_KEEP__
    FROM (SELECT *, CAST(NULL AS BOOLEAN) AS _adb_pad FROM __ADB_SRC__)
)"""
    return f"""WITH _adb_names AS (
    SELECT struct_keys(struct_pack(*COLUMNS(*))) AS n
    FROM (SELECT 1 AS _adb_one) AS o LEFT JOIN (FROM __ADB_SRC__ LIMIT 1) AS t ON TRUE
), {rows_cte}, _adb_work AS (
    SELECT CAST(b._adb_rid AS BIGINT) AS _adb_rid, CAST(0 AS BIGINT) AS _adb_pid,
           {', '.join(f'{code[i]} AS _adb_c{i}' for i in q)}{', b._adb_sa' if with_sa else ''}{', b._adb_own' if owned else ''}
    FROM _adb_b AS b
), _adb_ranges AS (
    SELECT {', '.join(f'max(_adb_c{i}) - min(_adb_c{i}) AS _adb_r{i}' for i in q)} FROM _adb_work
), _adb_glob AS (
    SELECT {'_adb_sa, ' if with_sa else ''}count(*) AS _adb_cnt FROM _adb_work{' GROUP BY _adb_sa' if with_sa else ''}
), _adb_root AS (
    SELECT {size.replace('_adb_p', 'b0._adb_p')} AS n, {lsql.replace('_adb_sa', 'b0._adb_sa') if with_sa else '1'} AS d, {nulls} AS nulls
    FROM _adb_b AS b0
), _adb_check AS (
    SELECT CASE
        WHEN len(list_filter(__ADB_WANTED__, lambda c: NOT list_contains(m.n, c))) > 0
            THEN error('anonydb: unknown column ' || list_filter(__ADB_WANTED__, lambda c: NOT list_contains(m.n, c))[1]
                       || ' in ' || __ADB_SRCTEXT__)
        WHEN r.nulls > 0 THEN error('anonydb: a numeric or date quasi-identifier has ' || r.nulls
                                    || ' NULL values; Mondrian cuts on values, so fill or drop them')
        WHEN r.n < __ADB_K__ THEN error('anonydb: infeasible: the whole table of ' || r.n || ' {unit} is smaller than k = __ADB_K__')
        {l_root}
        ELSE TRUE END AS ok
    FROM _adb_names AS m, _adb_root AS r
), _adb_assign AS (
{rounds}
), _adb_j AS (
{jsel}
), _adb_box AS (
    SELECT j._adb_pid, {', '.join(labels)} FROM _adb_j AS j GROUP BY j._adb_pid
), _adb_cls AS (
    SELECT *, min(_adb_pid) OVER (PARTITION BY {', '.join(f'_adb_label{i}' for i in q)}) AS eq_class FROM _adb_box
), _adb_rel AS (
    SELECT c.eq_class, __ADB_LABELS__, j.* EXCLUDE (_adb_pid, _adb_rid, {qcols}),
           dense_rank() OVER (ORDER BY c.eq_class__ADB_KEEPORDER__) AS _adb_vk  -- a class and its kept values
    FROM _adb_j AS j JOIN _adb_cls AS c ON c._adb_pid = j._adb_pid
), _adb_rk AS (
    SELECT min(n) AS k_worst, min(d) AS l_worst FROM (SELECT {size} AS n, {lsql} AS d FROM _adb_rel GROUP BY _adb_vk)
){verify}, _adb_gate AS (
    SELECT CASE WHEN NOT c.ok THEN FALSE  -- the check's own error() is raised first
                WHEN v.k_worst < __ADB_K__ {"OR v.l_worst < __ADB_L__ OR NOT e.t_ok " if with_sa else ''}
                THEN error(CASE WHEN __ADB_HASKEEP__ THEN 'anonydb: the kept column(s) ' || __ADB_KEEPNAMES__ || ' break the models over the published columns; publish them as quasi-identifiers or not at all; nothing is returned'
                                ELSE 'anonydb: internal error: the release does not meet its models; nothing is returned' END)
                ELSE TRUE END AS ok
    FROM _adb_check AS c, _adb_rk AS v{', _adb_rv AS e' if with_sa else ''}
)
SELECT x.* EXCLUDE (_adb_vk{', _adb_p' if person else ''}{', _adb_sa), x._adb_sa AS __ADB_SANAME__' if with_sa else ')'}
FROM _adb_rel AS x, _adb_gate AS g WHERE g.ok ORDER BY random()"""


def _mondrian_macro() -> str:
    """anonydb_kind and anonydb_mondrian: the guards on the arguments, then the plan for the number
    of QIs (with or without a sensitive attribute) with its tokens replaced by the arguments, every
    name quoted."""
    D = MONDRIAN_MAX_QIS
    nums = ", ".join(f"'{x}'" for x in _NUMERIC)
    dates = ", ".join(f"'{x}'" for x in _DATES)

    def plans(with_sa: bool, person: bool = False) -> str:
        return "CASE len(qis) " + " ".join(
            f"WHEN {d} THEN '" + _mondrian_statement(with_sa, d, person).replace("'", "''") + "'"
            for d in range(1, D + 1)) + " END"

    tokens = [
        ("__ADB_COLS__", "array_to_string(list_transform(range(len(qis)), lambda i: anonydb_col(qis[i + 1]) "
                         "|| ' AS _adb_q' || i), ', ')"),
        ("__ADB_LABELS__", "array_to_string(list_transform(range(len(qis)), lambda i: 'c._adb_label' || i || ' AS ' "
                           "|| anonydb_ident(qis[i + 1])), ', ')"),
        ("__ADB_KEEP__", "array_to_string(list_transform(CAST(keep AS VARCHAR[]), lambda c: ', ' || anonydb_col(c) "
                         "|| ' AS ' || anonydb_ident(c)), '')"),
        ("__ADB_WANTED__", "anonydb_texts(CAST(qis AS VARCHAR[]) || CAST(keep AS VARCHAR[]) || "
                           "CASE WHEN sa IS NULL THEN []::VARCHAR[] ELSE [CAST(sa AS VARCHAR)] END || "
                           "CASE WHEN person IS NULL THEN []::VARCHAR[] ELSE [CAST(person AS VARCHAR)] END)"),
        ("__ADB_KEEPORDER__", "array_to_string(list_transform(CAST(keep AS VARCHAR[]), lambda c: ', j.' "
                              "|| anonydb_ident(c)), '')"),
        ("__ADB_HASKEEP__", "CASE WHEN len(keep) > 0 THEN 'TRUE' ELSE 'FALSE' END"),
        ("__ADB_KEEPNAMES__", "anonydb_text(array_to_string(CAST(keep AS VARCHAR[]), ', '))"),
        ("__ADB_SRCTEXT__", "anonydb_text(tbl)"),
        ("__ADB_SRC__", "anonydb_ident(tbl)"),
        ("__ADB_SANAME__", "coalesce(anonydb_ident(sa), '')"),
        ("__ADB_SA__", "coalesce(anonydb_col(sa), '')"),
        ("__ADB_PERSON__", "coalesce(anonydb_col(person), '')"),
        ("__ADB_K__", "CAST(k AS VARCHAR)"),
        ("__ADB_L__", "CAST(coalesce(l, 1) AS VARCHAR)"),
        ("__ADB_T__", "CAST(coalesce(t, 1) AS VARCHAR)"),
    ]
    body = (f"CASE WHEN person IS NULL THEN (CASE WHEN sa IS NULL THEN {plans(False)} ELSE {plans(True)} END) "
            f"ELSE (CASE WHEN sa IS NULL THEN {plans(False, True)} ELSE {plans(True, True)} END) END")
    for token, value in tokens:
        body = f"replace({body}, '{token}', {value})"
    head = f"""-- the kind of a value's SQL type, as Mondrian codes it: 'numeric' (its value), 'date' (epoch
-- seconds) or 'other' (its rank in value order); typeof() of a column is a constant
CREATE OR REPLACE MACRO anonydb_kind(x) AS
    CASE WHEN typeof(x) IN ({nums}) OR typeof(x) LIKE 'DECIMAL%' THEN 'numeric'
         WHEN typeof(x) IN ({dates}) THEN 'date' ELSE 'other' END;

-- anonydb_mondrian(tbl, qis, sa := NULL, k := 1, l := NULL, t := NULL, keep := []) [LeFevre et al.
-- 2006; Li thesis 5.1]: Mondrian's strict median cuts, every round in one recursive statement (the
-- plan anonydb's Python Mondrian runs, with the same verdicts: k-anonymity, distinct l-diversity,
-- t-closeness with equal EMD); the QIs generalized to each class's range ([lo, hi]) or value set
-- ({{a, b}}), eq_class, the sensitive and `keep` columns unchanged, nothing else, in random order;
-- checked again on the release (error() otherwise). At most {D} QIs; categorical values are cut in
-- value order (no hierarchies). person := 'col': every model counts persons, all of a person's rows
-- take one class (the QIs must be constant per person), and the column is not published. Example:
--   CREATE TABLE rel AS FROM anonydb_mondrian('adult', ['age', 'sex', 'race'], 'occupation', k := 10, l := 3, t := 0.2);
"""
    guards = [
        ("len(qis) = 0", "'anonydb: give at least one quasi-identifier'"),
        (f"len(qis) > {D}", f"'anonydb: anonydb_mondrian takes at most {D} quasi-identifiers, got ' || len(qis)"),
        ("k IS NULL OR k < 1 OR k <> floor(k)", "'anonydb: k must be an integer >= 1, got ' || coalesce(CAST(k AS VARCHAR), 'NULL')"),
        ("sa IS NULL AND (l IS NOT NULL OR t IS NOT NULL)", "'anonydb: l and t need the sensitive attribute (sa := ...)'"),
        ("l IS NOT NULL AND (l < 1 OR l <> floor(l))", "'anonydb: l must be an integer >= 1, got ' || CAST(l AS VARCHAR)"),
        ("t IS NOT NULL AND (t < 0 OR t > 1)",
         "'anonydb: t must lie in [0, 1] (EMD with a normalized ground distance), got ' || CAST(t AS VARCHAR)"),
        ("list_contains(qis, sa)", "'anonydb: the sensitive attribute ' || sa || ' is also a quasi-identifier'"),
        ("len(list_distinct(qis)) < len(qis)", "'anonydb: a quasi-identifier is listed twice'"),
        ("list_contains(qis, person)", "'anonydb: the person column ' || person || ' is also a quasi-identifier'"),
        ("person = sa", "'anonydb: the person column ' || person || ' is also the sensitive attribute'"),
        ("list_contains(CAST(keep AS VARCHAR[]), person)",
         "'anonydb: the person column ' || person || ' is never published: drop it from keep'"),
    ]
    when = "\n".join(f"    WHEN {c} THEN 'SELECT error(' || anonydb_text({m}) || ') AS eq_class'" for c, m in guards)
    return (head + "CREATE OR REPLACE MACRO anonydb_mondrian(tbl, qis, sa := NULL, k := 1, l := NULL, t := NULL, "
            f"keep := [], person := NULL) AS TABLE\nFROM query(CASE\n{when}\n    ELSE {body}\n    END);\n")
