"""Background knowledge mined from the data: negative association rules [Li thesis §3.3;
spec-injector-tradeoff-foreground 2.1-2.2].

A generalized negative association rule X => not s has a conjunction X of predicates
``A_i = v`` (v a value or a non-root hierarchy node, at most one per QI) and holds with confidence 1
(no tuple satisfying X has s). It is *expected* when a tuple satisfying X would be expected to have s
with probability minExp: 1 - (1 - P(s))^C_X >= minExp, i.e. in counts
    C_X >= thr(s) = ln(1 - minExp) / ln(1 - P(s)).
Mining is one grouping-sets aggregation per batch of level vectors over the distinct (QI tuple,
sensitive value) rows: per cell X the count C_X and the bitmask of the sensitive values present;
a rule is a (cell, s) with C_X >= thr(s) and s not in the mask. A tuple's IVS (the values it
cannot take) is the union of the consequents of the rules whose X it satisfies, found by joining
its labels (every QI at every level) with the rules' predicates. |R| counts the minimal rules: a
rule is dropped when a rule with the same s has predicates that every tuple of its X satisfies
(a subset of its attributes, each at the same or a more general level and an ancestor node).
Sensitive values are coded 0..m-1 (most frequent first) and sets of them are BIGINT bitmasks, so
m <= 62.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..engines.base import Engine
from ..engines import connect
from ..errors import SURFACE, InputError, option
from ..hierarchy import Hierarchy
from ..schema import split_list, validate_roles
from ..sources import open_source
from ..sqlgen import ident, literal

MAX_VALUES = 62
BATCH = 256  # grouping sets per statement


@dataclass
class Rules:
    """Mined negative association rules and the IVS of every distinct QI tuple.

    Tables (alive as long as the scratch they were built in):
    ``rules(rule_id, _adb_code, support, npreds, minimal)``; ``preds(rule_id, attr, lvl, node)``
    with attr the QI's index; ``ivs(<QI columns>, _adb_ivs)`` per distinct QI tuple (the bitmask of
    the codes it cannot take); ``codes(_adb_sa, _adb_code, _adb_cnt)``."""

    qi: list[str]
    sensitive: str
    min_exp: float
    values: list[Any]  # sensitive values by code
    thresholds: dict[Any, float]  # value -> C_X threshold
    rules: str
    preds: str
    ivs: str
    codes: str
    minimal: int  # |R|: the minimal rules
    total: int  # every rule found
    rows: int
    profile: dict[int, float] = field(default_factory=dict)  # |IVS| = i -> share of tuples (N_i)
    examples: list[str] = field(default_factory=list)
    scratch: Any = None  # the Scratch holding the tables when mine_rules made its own
    itemset_support: str | int = "min"  # the setting the rules were mined at: "min", "max" or a count
    min_count: int = 1  # what it came to: the tuples an itemset needed before rules were formed from it
    hierarchies: list[str] = field(default_factory=list)  # the QIs mined over their hierarchies
    fuzzy: list[str] = field(default_factory=list)  # the QIs whose hierarchy nodes were fuzzy sets

    def settings(self) -> dict[str, Any]:
        """The adversary these rules stand for: what mine_rules was given (and the itemset count it
        came to), so that a release can name it and an audit can be run against the same rules."""
        return {"min_exp": self.min_exp, "itemset_support": self.itemset_support, "min_count": self.min_count,
                "hierarchies": list(self.hierarchies), "fuzzy": list(self.fuzzy)}

    def describe_settings(self) -> str:
        """The settings in words: ``minExp 0.9, itemset support 1000 (itemsets of >= 1000 tuples),
        hierarchies on age, sex``."""
        sup = (f"itemset support {self.itemset_support}" if isinstance(self.itemset_support, int) else
               f"itemset support {self.itemset_support} (itemsets of >= {_count(self.min_count)} tuples)")
        parts = [f"minExp {self.min_exp:g}", sup,
                 f"hierarchies on {', '.join(self.hierarchies)}" if self.hierarchies else "no hierarchies"]
        if self.fuzzy:
            parts.append(f"fuzzy {', '.join(self.fuzzy)}")
        return ", ".join(parts)

    def options(self) -> str:
        """How to ask for the same rules where the user is: ``--min-exp 0.9 --itemset-support 1000
        and the same --hierarchy files`` in the CLI, ``min_exp=0.9, itemset_support=1000 and the
        same hierarchies`` in Python (the hierarchies are the caller's)."""
        cli = SURFACE.get() == "cli"
        opts = (f"--min-exp {self.min_exp:g} --itemset-support {self.itemset_support}" if cli else
                f"min_exp={self.min_exp:g}, itemset_support={self.itemset_support!r}")
        if self.fuzzy:
            opts += f", fuzzy={self.fuzzy!r}" + (" (Python only)" if cli else "")
        if self.hierarchies:
            opts += " and the same --hierarchy files" if cli else " and the same hierarchies"
        return opts

    def close(self) -> None:
        """Drop the tables now (only those mine_rules created in a scratch of its own)."""
        if self.scratch is not None:
            self.scratch.drop_all()

    def format(self) -> str:
        prof = ", ".join(f"N_{i} {100 * p:.1f}%" for i, p in sorted(self.profile.items()))
        lines = [f"negative association rules ({self.describe_settings()}): {self.minimal} minimal of {self.total} "
                 f"found over {self.rows} tuples; {prof}"]
        lines += [f"  {r}" for r in self.examples]
        return "\n".join(lines)


def threshold(p: float, min_exp: float) -> float:
    """thr(s) = ln(1 - minExp) / ln(1 - P(s)): the count C_X from which a tuple of X is expected to
    have s with probability minExp [thesis §3.3.1, sign restored: spec A3]."""
    if p >= 1.0:
        return 0.0
    return math.log(1.0 - min_exp) / math.log(1.0 - p)


def mine_rules(source: str, qi: str | Iterable[str], sensitive: str, *, min_exp: float = 0.9,
               hierarchies: dict[str, Hierarchy] | None = None, engine: Engine | Any = None,
               scratch: Any = None, examples: int = 5, itemset_support: str | int = "min",
               fuzzy: str | Iterable[str] | None = None) -> Rules:
    """Mine the generalized negative association rules of ``source`` (see the module docstring).
    ``hierarchies``: per QI (a QI without one contributes its values only). The tables live in
    ``scratch`` (an :meth:`Engine.scratch`), which the caller drops; without one they are temporary
    tables of the connection. ``itemset_support``: the count an itemset X needs before rules are
    formed from it [thesis §3.3.3]: "min" (minSup = min over s of Sup_s, the spec's reading, which
    prunes nothing a rule needs), "max" (the largest Sup_s: only itemsets that could exclude every
    value), or a count. ``fuzzy``: quantitative QIs whose hierarchy nodes are fuzzy sets
    [thesis §3.3.2; see :func:`membership`]: an itemset's support is then
    C_X = sum_t prod_i Mem(X_i, t_i), and a tuple with any membership in X and value s counts
    against X => not s (confidence 1 needs C_X[s] = 0). Which tuples a rule applies to (their
    IVS) stays crisp: those inside every node of X."""
    if not (itemset_support in ("min", "max") or (isinstance(itemset_support, int) and not isinstance(itemset_support, bool)
                                                  and itemset_support >= 1)):
        raise InputError(f"{option('itemset_support').rstrip('=')} must be 'min', 'max' or a count >= 1, got "
                         f"{itemset_support!r}")
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if isinstance(min_exp, bool) or not isinstance(min_exp, (int, float)) or not 0 < min_exp < 1:
        raise InputError(f"{option('min_exp').rstrip('=')} (minExp) must lie strictly between 0 and 1, got {min_exp!r}")
    hierarchies = dict(hierarchies or {})
    for a in hierarchies:
        if a not in qi_cols:
            raise InputError(f"a hierarchy is given for {a!r}, which is not a quasi-identifier")
    from ..engines.base import Scratch

    own = scratch is None
    s = Scratch(eng, "knowledge") if own else scratch
    try:
        rel = open_source(eng, source, scratch=s)
        fz = split_list(fuzzy, "fuzzy attributes")
        for a in fz:
            if a not in qi_cols:
                raise InputError(f"fuzzy attribute {a!r} is not a quasi-identifier")
        validate_roles(eng, rel, qi_cols, sensitive, {a: "numeric" for a in fz}, label=str(source))
        rules = _mine(eng, s, rel, qi_cols, sensitive, float(min_exp), hierarchies, examples, itemset_support,
                      [qi_cols.index(a) for a in fz])
    except BaseException:
        if own:
            s.drop_all()
        raise
    if own:
        rules.scratch = s
    return rules


def _mine(eng, s, rel, qi_cols, sensitive, min_exp, hierarchies, n_examples, itemset_support="min",
          fuzzy: list[int] | None = None) -> Rules:
    sa = ident(sensitive)
    n = int(eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
    if n == 0:
        raise InputError("the table is empty: there is nothing to mine")
    codes = s.table(f"SELECT {sa} AS _adb_sa, CAST(row_number() OVER (ORDER BY count(*) DESC, {sa} NULLS LAST) - 1 "
                    f"AS INTEGER) AS _adb_code, count(*) AS _adb_cnt FROM {ident(rel)} GROUP BY {sa}")
    vals = eng.fetch_rows(f"SELECT _adb_sa, _adb_cnt FROM {ident(codes)} ORDER BY _adb_code")[1]
    if len(vals) > MAX_VALUES:
        raise InputError(f"{sensitive!r} has {len(vals)} distinct values; rule mining codes value sets as 64-bit "
                         f"masks, so at most {MAX_VALUES}")
    thr = {v: threshold(c / n, min_exp) for v, c in vals}
    thr_table = s.table("SELECT * FROM (VALUES " + ", ".join(
        f"({i}, {thr[v]!r})" for i, (v, _) in enumerate(vals)) + ") AS t(_adb_code, _adb_thr)")
    if itemset_support == "min":
        min_count = max(1, math.ceil(min(thr.values()) - 1e-9))
    elif itemset_support == "max":
        min_count = max(1, math.ceil(max(thr.values()) - 1e-9))
    else:
        min_count = int(itemset_support)
    maps, heights = level_maps(eng, s, rel, qi_cols, hierarchies)
    cols = [f"a{i}_{lv}" for i, hgt in enumerate(heights) for lv in range(hgt)]
    q = [ident(c) for c in qi_cols]
    prof = s.table(f"SELECT {', '.join(f'r.{x}' for x in q)}, k._adb_code, count(*) AS _c FROM {ident(rel)} AS r "
                   f"JOIN {ident(codes)} AS k ON k._adb_sa IS NOT DISTINCT FROM r.{sa} GROUP BY ALL")
    wide = s.table(widen(prof, q, maps, heights, extra="p._adb_code, p._c"))
    # every level vector: each QI absent or at one non-root level; batches of grouping sets
    choices = [[None] + list(range(hgt)) for hgt in heights]
    vectors = [v for v in itertools.product(*choices) if any(x is not None for x in v)]
    fuzzy = fuzzy or []
    fz = {i: s.table(eng.render("injector_fuzzy.sql.j2", map=maps[i], height=heights[i])) for i in fuzzy}
    # the level vectors by their fuzzy QIs' levels: each such signature counts over the rows expanded
    # by their memberships (weight _c * prod Mem), the others over the rows as they are (weight _c)
    by_sig: dict[tuple, list] = {}
    for v in vectors:
        by_sig.setdefault(tuple((i, v[i]) for i in fuzzy if v[i] is not None), []).append(v)
    cells = None
    for sig, vecs in by_sig.items():
        rel_w, weight = wide, "_c"
        if sig:
            rel_w, weight = s.table(_fuzzy_rows(wide, cols, sig, fz)), "_w"
        for b in range(0, len(vecs), BATCH):
            sets = [[f"a{i}_{lv}" for i, lv in enumerate(v) if lv is not None] for v in vecs[b:b + BATCH]]
            used = sorted({c for gs in sets for c in gs})
            sql = eng.render("injector_cells.sql.j2", cols=cols, used=used, wide=rel_w, sets=sets, min_count=min_count,
                             weight=weight)
            if cells is None:
                cells = s.table(sql)
            else:
                eng.execute(f"INSERT INTO {ident(cells)} {sql.sql}")
    ncol = len(cols)
    grouped = [f"((_adb_gid >> {ncol - 1 - j}) & 1) = 0" for j in range(ncol)]
    no_null = " AND ".join(f"(NOT {g} OR {ident(c)} IS NOT NULL)" for g, c in zip(grouped, cols))
    rules_wide = s.table(
        f"SELECT CAST(row_number() OVER (ORDER BY c._adb_gid, t._adb_code, {', '.join(ident(x) for x in cols)}) AS BIGINT)"
        f" AS rule_id, c.*, t._adb_code FROM {ident(cells)} AS c JOIN {ident(thr_table)} AS t "
        f"ON c._adb_n >= t._adb_thr AND ((c._adb_mask >> t._adb_code) & 1) = 0 WHERE {no_null}")
    owner = [(i, lv) for i, hgt in enumerate(heights) for lv in range(hgt)]
    preds = s.table(" UNION ALL ".join(
        f"SELECT rule_id, {i} AS attr, {lv} AS lvl, {ident(c)} AS node FROM {ident(rules_wide)} WHERE {g}"
        for (i, lv), c, g in zip(owner, cols, grouped)))
    # minimality: a rule is redundant when a more general itemset gives the same consequent; every
    # itemset between the two then does too (its tuples lie between theirs: C_X[s] = 0 and
    # C_X >= thr), so checking the immediate parents suffices: drop one predicate (if another is
    # left) or raise one to the next non-root level. Linear in rules x predicates.
    anc = s.table(" UNION ALL ".join(
        f"SELECT DISTINCT {i} AS attr, {f} AS lf, {ident(f'level_{f}')} AS nf, {ident(f'level_{f + 1}')} AS nt "
        f"FROM {ident(m)}" for i, (m, hgt) in enumerate(zip(maps, heights)) for f in range(hgt - 1)) or
        "SELECT 0 AS attr, 0 AS lf, '' AS nf, '' AS nt LIMIT 0")
    keyed = s.table(
        f"SELECT p.rule_id, any_value(w._adb_code) AS _adb_code, any_value(w._adb_n) AS support, count(*) AS npreds, "
        f"list(struct_pack(a := p.attr, l := p.lvl, n := p.node) ORDER BY p.attr) AS _adb_key "
        f"FROM {ident(preds)} AS p JOIN {ident(rules_wide)} AS w USING (rule_id) GROUP BY p.rule_id")
    parents = (
        f"SELECT k.rule_id, k._adb_code, list_filter(k._adb_key, lambda e: e.a <> x.a) AS rest, x.a, x.l, x.n "
        f"FROM {ident(keyed)} AS k, unnest(k._adb_key) AS u(x)")
    variants = (
        f"SELECT rule_id, _adb_code, rest AS _adb_key FROM ({parents}) AS p WHERE len(rest) > 0 "
        f"UNION ALL SELECT p.rule_id, p._adb_code, list_sort(list_append(p.rest, struct_pack(a := p.a, l := p.l + 1, "
        f"n := y.nt))) FROM ({parents}) AS p JOIN {ident(anc)} AS y ON y.attr = p.a AND y.lf = p.l AND y.nf = p.n")
    rules = s.table(
        f"SELECT k.rule_id, k._adb_code, k.support, k.npreds, k.rule_id NOT IN (SELECT v.rule_id FROM ({variants}) AS v "
        f"JOIN {ident(keyed)} AS g ON g._adb_code = v._adb_code AND g._adb_key = v._adb_key) AS minimal "
        f"FROM {ident(keyed)} AS k")
    # IVS of every distinct QI tuple: the consequents of the rules whose predicates all match
    tup = s.table(f"SELECT DISTINCT {', '.join(q)} FROM {ident(rel)}")
    tup_ids = s.table(f"SELECT *, CAST(row_number() OVER () AS BIGINT) AS _adb_tid FROM {ident(tup)}")
    twide = s.table(widen(tup_ids, q, maps, heights, extra="p._adb_tid"))
    # IVS: a tuple satisfies a rule when its labels equal the rule's on the rule's level vector. Per
    # distinct level vector of the minimal rules (they give the same IVS as all rules: each rule's
    # tuples lie within a minimal rule's), project every tuple onto it and hash-join the rules.
    minw = s.table(f"SELECT w.* FROM {ident(rules_wide)} AS w JOIN {ident(rules)} AS r USING (rule_id) WHERE r.minimal")
    proj = ", ".join(f"CASE WHEN {g} THEN t.{ident(c)} END AS {ident(c)}" for c, g in
                     zip(cols, [g.replace("_adb_gid", "v._adb_gid") for g in grouped]))
    match = " AND ".join(f"r.{ident(c)} IS NOT DISTINCT FROM x.{ident(c)}" for c in cols)
    ivs = s.table(
        f"WITH x AS (SELECT t._adb_tid, v._adb_gid, {proj} FROM {ident(twide)} AS t, "
        f"(SELECT DISTINCT _adb_gid FROM {ident(minw)}) AS v), "
        f"m AS (SELECT x._adb_tid, bit_or(CAST(1 AS BIGINT) << r._adb_code) AS _adb_ivs FROM x JOIN {ident(minw)} AS r "
        f"ON r._adb_gid = x._adb_gid AND {match} GROUP BY x._adb_tid) "
        f"SELECT {', '.join(f't.{x}' for x in q)}, coalesce(m._adb_ivs, CAST(0 AS BIGINT)) AS _adb_ivs "
        f"FROM {ident(tup_ids)} AS t LEFT JOIN m ON m._adb_tid = t._adb_tid")
    total, minimal = eng.fetch_rows(f"SELECT count(*), count(*) FILTER (WHERE minimal) FROM {ident(rules)}")[1][0]
    on = " AND ".join(f"v.{x} IS NOT DISTINCT FROM r.{x}" for x in q)
    prof_rows = eng.fetch_rows(f"SELECT bit_count(v._adb_ivs) AS i, count(*) FROM {ident(rel)} AS r "
                               f"JOIN {ident(ivs)} AS v ON {on} GROUP BY 1 ORDER BY 1")[1]
    out = Rules(qi=qi_cols, sensitive=sensitive, min_exp=min_exp, values=[v for v, _ in vals], thresholds=thr,
                rules=rules, preds=preds, ivs=ivs, codes=codes, minimal=int(minimal), total=int(total), rows=n,
                profile={int(i): c / n for i, c in prof_rows}, itemset_support=itemset_support, min_count=min_count,
                hierarchies=[q for q in qi_cols if q in hierarchies], fuzzy=[qi_cols[i] for i in fuzzy])
    if n_examples:
        out.examples = describe(eng, out, limit=n_examples)
    return out


def membership(x: float, lo: float, hi: float) -> float:
    """Mem(N, x) of a value x in a hierarchy node N of a quantitative attribute, lo and hi the
    smallest and largest of the attribute's values in the data that N covers [thesis §3.3.2, which
    leaves the function open; this one is anonydb's]: a trapezoid,
    1 inside [lo, hi], falling linearly to 0 at a distance of w + 1 outside, w = (hi - lo + 1) / 2
    the node's half-width: Mem = max(0, 1 - d / (w + 1)), d the distance from x to [lo, hi]. A
    leaf (lo = hi) gives its neighbours 1/3 (an age of 22 partly supports {Age = 21}); a decade
    [20, 29] gives 30 5/6 and 35 nothing. The SQL is sql/injector_fuzzy.sql.j2."""
    d = lo - x if x < lo else x - hi if x > hi else 0.0
    return max(0.0, 1.0 - d / ((hi - lo + 1) / 2 + 1))


def _fuzzy_rows(wide: str, cols: list[str], sig: tuple, fz: dict[int, str]) -> str:
    """``wide``'s rows with each fuzzy QI of ``sig`` (QI, level) relabelled by every node its value
    has a membership in, weight _w = _c * the product of the memberships."""
    sel = ", ".join(f"f{i}._adb_node AS {ident(f'a{i}_{lv}')}" if (i, lv) in dict(sig).items() else f"w.{ident(c)}"
                    for c in cols for i, lv in [tuple(int(x) for x in c[1:].split("_"))])
    joins = " ".join(f"JOIN {ident(fz[i])} AS f{i} ON f{i}._adb_value = w.{ident(f'a{i}_0')} AND f{i}._adb_lvl = {lv}"
                     for i, lv in sig)
    mem = " * ".join(f"f{i}._adb_mem" for i, _ in sig)
    return f"SELECT w._adb_code, {sel}, w._c * {mem} AS _w FROM {ident(wide)} AS w {joins}"


def level_maps(eng: Engine, s: Any, rel: str, qi: list[str], hierarchies: dict[str, Hierarchy]) -> tuple[list, list]:
    """Per QI the wide map of its non-root levels (level_0 = the value as text .. level_{H-1}) over
    ``rel``'s values, and H (1 for a QI without a hierarchy: its values only)."""
    maps, heights = [], []
    for c in qi:
        h = hierarchies.get(c)
        if h is None:
            maps.append(s.table(f"SELECT DISTINCT CAST({ident(c)} AS VARCHAR) AS level_0 FROM {ident(rel)} "
                                f"WHERE {ident(c)} IS NOT NULL"))
            heights.append(1)
        else:
            h.validate(eng, rel, c)
            maps.append(h.materialize_wide(eng, s.name(), relation=rel, column=c, temp=True))
            heights.append(h.height)  # levels 0 .. H-1 are non-root
    return maps, heights


def widen(base: str, q: list[str], maps: list[str], heights: list[int], extra: str) -> str:
    """One label column a{i}_{lv} per (QI i, non-root level lv), joined from the level maps."""
    sel = [extra] + [f"m{i}.{ident(f'level_{lv}')} AS {ident(f'a{i}_{lv}')}"
                     for i, hgt in enumerate(heights) for lv in range(hgt)]
    joins = " ".join(f"LEFT JOIN {ident(m)} AS m{i} ON m{i}.level_0 = CAST(p.{x} AS VARCHAR)"
                     for i, (m, x) in enumerate(zip(maps, q)))
    return f"SELECT {', '.join(sel)} FROM {ident(base)} AS p {joins}"


def describe(eng: Engine, rules: Rules, *, limit: int | None = None, minimal_only: bool = True) -> list[str]:
    """Readable rules ``{A = v, ...} => not s (C_X)``, strongest support first."""
    where = "WHERE r.minimal" if minimal_only else ""
    lim = f"LIMIT {int(limit)}" if limit else ""
    rows = eng.fetch_rows(
        f"SELECT r.rule_id, r._adb_code, r.support, list(p.attr ORDER BY p.attr), list(p.node ORDER BY p.attr) "
        f"FROM {ident(rules.rules)} AS r JOIN {ident(rules.preds)} AS p USING (rule_id) {where} "
        f"GROUP BY ALL ORDER BY r.support DESC, r.rule_id {lim}")[1]
    return [("{" + ", ".join(f"{rules.qi[a]} = {v}" for a, v in zip(attrs, nodes)) + "}"
             f" => not {rules.sensitive} = {rules.values[code]} ({_count(support)})")
            for _, code, support, attrs, nodes in rows]


def _count(x: Any) -> str:
    """A support: a count, or a fuzzy support's sum of memberships."""
    return str(int(x)) if float(x).is_integer() else f"{float(x):.3f}"


def ivs_of_rows(eng: Engine, rules: Rules, relation: str) -> str:
    """SQL: the rows of ``relation`` (with the rules' QI columns) plus their ``_adb_ivs`` mask."""
    on = " AND ".join(f"v.{ident(x)} IS NOT DISTINCT FROM r.{ident(x)}" for x in rules.qi)
    return (f"SELECT r.*, coalesce(v._adb_ivs, CAST(0 AS BIGINT)) AS _adb_ivs FROM {ident(relation)} AS r "
            f"LEFT JOIN {ident(rules.ivs)} AS v ON {on}")


def code_expr(rules: Rules, column_sql: str) -> str:
    """SQL: the code of a sensitive value (NULL when the value was not in the mined table)."""
    cases = " ".join(f"WHEN {column_sql} = {literal(v)} THEN {i}" for i, v in enumerate(rules.values) if v is not None)
    null = next((i for i, v in enumerate(rules.values) if v is None), None)
    nul = f"WHEN {column_sql} IS NULL THEN {null} " if null is not None else ""
    return f"(CASE {nul}{cases} END)"


__all__ = ["Rules", "code_expr", "describe", "ivs_of_rows", "mine_rules", "threshold"]
