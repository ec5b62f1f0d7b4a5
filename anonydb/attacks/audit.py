"""Audits of finished releases against background knowledge mined from the data [Li thesis
§3.7.1; spec-injector-tradeoff-foreground 2.6].

The adversary knows every individual's exact QIs (so, through the mined rules, the values each one
cannot take) and the group each one is in, and sees each group's multiset of sensitive values. A
tuple is *vulnerable* when it has fewer than l possible values:

* ``matching`` (default): fewer than l valid values (:mod:`anonydb.models.matching_diversity`);
* ``simple``: fewer than l values of its group outside its IVS.

A release gives the groups as: QIT/ST (Anatomy, Injector: exact QIs per tuple, value counts per
group); a sliced release whose QIs all sit in one column (that column's table and the sensitive
column's, by bucket); or any table with a group column, the exact QIs and the sensitive value per
row (a generalized release joined to its source by a key). When only value counts are known, a
perfect assignment respecting the rules (one always exists: the true one) is computed per group by
the ``matching_pairing`` UDF, and the valid values follow from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engines.base import Engine
from ..engines import connect
from ..errors import AnonyDBError, InputError
from .knowledge import Rules
from ..models.matching_diversity import check_l, valid_counts
from ..sqlgen import ident


@dataclass
class RuleAudit:
    l: float
    mode: str
    rows: int
    groups: int
    vulnerable: int  # tuples with fewer than l possible values
    vulnerable_groups: int
    min_possible: int
    by_count: dict[int, int] = field(default_factory=dict)  # possible values -> tuples

    def format(self) -> str:
        return (f"rule-based audit ({self.mode}, l = {self.l:g}): {self.vulnerable} of {self.rows} tuples in "
                f"{self.vulnerable_groups} of {self.groups} groups have fewer than l possible sensitive values "
                f"(fewest: {self.min_possible})")


def members_from_rows(eng: Engine, s: Any, rows: str, group: str, sensitive: str, rules: Rules) -> str:
    """(group, _adb_code, _adb_ivs, _adb_cnt): the true assignment, from rows holding each tuple's
    group, exact QIs and sensitive value."""
    on = " AND ".join(f"v.{ident(x)} IS NOT DISTINCT FROM t.{ident(x)}" for x in rules.qi)
    return s.table(
        f"SELECT t.{ident(group)}, k._adb_code, coalesce(v._adb_ivs, CAST(0 AS BIGINT)) AS _adb_ivs, "
        f"count(*) AS _adb_cnt FROM {ident(rows)} AS t JOIN {ident(rules.codes)} AS k "
        f"ON k._adb_sa IS NOT DISTINCT FROM t.{ident(sensitive)} LEFT JOIN {ident(rules.ivs)} AS v ON {on} GROUP BY ALL")


def members_from_counts(eng: Engine, s: Any, tuples: str, group: str, counts: str, value: str, count: str,
                        rules: Rules) -> str:
    """(group, _adb_code, _adb_ivs, _adb_cnt): a perfect assignment, per group, of its value
    occurrences (``counts``: group, value, count) to its tuples (``tuples``: group and the exact QIs)
    respecting the rules, at the level of classes (by the ``matching_pairing`` UDF)."""
    from ..sqlfuncs import register

    register(eng.con)  # type: ignore[attr-defined]
    on = " AND ".join(f"v.{ident(x)} IS NOT DISTINCT FROM t.{ident(x)}" for x in rules.qi)
    g = ident(group)
    cls = s.table(f"SELECT t.{g} AS _adb_g, coalesce(v._adb_ivs, CAST(0 AS BIGINT)) AS _adb_ivs, count(*) AS _adb_n "
                  f"FROM {ident(tuples)} AS t LEFT JOIN {ident(rules.ivs)} AS v ON {on} GROUP BY ALL")
    vals = s.table(f"SELECT c.{g} AS _adb_g, k._adb_code, sum(c.{ident(count)}) AS _adb_n FROM {ident(counts)} AS c "
                   f"LEFT JOIN {ident(rules.codes)} AS k ON k._adb_sa IS NOT DISTINCT FROM c.{ident(value)} GROUP BY ALL")
    unknown = eng.scalar(f"SELECT count(*) FROM {ident(vals)} WHERE _adb_code IS NULL")
    if unknown:
        raise InputError("the release holds sensitive values the rules were not mined from; mine the rules from the "
                         "release's source")
    flows = s.table(
        f"WITH a AS (SELECT _adb_g, list(_adb_ivs ORDER BY _adb_ivs) AS m, list(CAST(_adb_n AS BIGINT) ORDER BY _adb_ivs) AS mn "
        f"FROM {ident(cls)} GROUP BY _adb_g), b AS (SELECT _adb_g, list(_adb_code ORDER BY _adb_code) AS c, "
        f"list(CAST(_adb_n AS BIGINT) ORDER BY _adb_code) AS cn FROM {ident(vals)} GROUP BY _adb_g) "
        f"SELECT a._adb_g, a.m, b.c, matching_pairing(a.m, a.mn, b.c, b.cn) AS f FROM a JOIN b USING (_adb_g)")
    bad = eng.fetch_rows(f"SELECT _adb_g FROM {ident(flows)} WHERE f IS NULL LIMIT 1")[1]
    if bad:
        raise AnonyDBError(f"group {bad[0][0]!r}: no assignment of its values to its tuples respects the rules "
                           f"(the release and the rules do not come from the same data)")
    return s.table(
        f"SELECT _adb_g AS {g}, c[(i - 1) % len(c) + 1] AS _adb_code, m[(i - 1) // len(c) + 1] AS _adb_ivs, "
        f"f[i] AS _adb_cnt FROM {ident(flows)}, range(1, len(f) + 1) AS r(i) WHERE f[i] > 0")


def audit_rules(rules: Rules, l: Any, *, engine: Engine | Any = None, qit: str | None = None, st: str | None = None,
                group: str = "group_id", table: str | None = None, sensitive: str | None = None,
                mode: str = "matching") -> RuleAudit:
    """Count the tuples an adversary holding ``rules`` can narrow to fewer than ``l`` values.

    Give ``qit`` and ``st`` (a QIT/ST release; ``group`` names their group column) or ``table``
    (one row per tuple: ``group``, the exact QIs and the ``sensitive`` value, e.g. a generalized
    release joined to its source, or a sliced release's tuples by bucket)."""
    eng = connect(engine)
    lv = check_l(l)
    if mode not in ("matching", "simple"):
        raise InputError(f"mode must be 'matching' or 'simple', got {mode!r}")
    if (qit is None) == (table is None) or (qit is not None and st is None):
        raise InputError("give qit and st (a QIT/ST release), or table (rows with the group, QIs and sensitive value)")
    with eng.scratch("audit") as s:
        g = ident(group)
        if table is not None:
            members = members_from_rows(eng, s, table, group, sensitive or rules.sensitive, rules)
        else:
            members = members_from_counts(eng, s, qit, group, st, rules.sensitive, "count", rules)
        if mode == "matching":
            per = s.table(valid_counts(eng, members, [group]))
        else:
            per = s.table(
                f"WITH sen AS (SELECT {g}, bit_or(CAST(1 AS BIGINT) << _adb_code) AS _adb_sen FROM {ident(members)} "
                f"GROUP BY ALL) SELECT m.{g}, m._adb_code, m._adb_ivs, sum(m._adb_cnt) AS _adb_n, "
                f"bit_count(sen._adb_sen & ~m._adb_ivs) AS _adb_valid FROM {ident(members)} AS m "
                f"JOIN sen ON sen.{g} IS NOT DISTINCT FROM m.{g} GROUP BY m.{g}, m._adb_code, m._adb_ivs, sen._adb_sen")
        rows, groups, vul, vgroups, least = eng.fetch_rows(
            f"SELECT sum(_adb_n), count(DISTINCT {g}), coalesce(sum(_adb_n) FILTER (WHERE _adb_valid < {lv!r}), 0), "
            f"count(DISTINCT {g}) FILTER (WHERE _adb_valid < {lv!r}), min(_adb_valid) FROM {ident(per)}")[1][0]
        hist = eng.fetch_rows(f"SELECT _adb_valid, sum(_adb_n) FROM {ident(per)} GROUP BY 1 ORDER BY 1")[1]
    return RuleAudit(l=float(lv), mode=mode, rows=int(rows or 0), groups=int(groups or 0), vulnerable=int(vul),
                     vulnerable_groups=int(vgroups), min_possible=int(least or 0),
                     by_count={int(a): int(b) for a, b in hist})


@dataclass
class DistributionAudit:
    b: Any
    t: float
    distance: str
    rows: int
    groups: int
    vulnerable: int  # tuples whose posterior moved more than t from their prior
    vulnerable_groups: int
    worst: float  # worst-case disclosure risk max_q D[prior, posterior]

    def format(self) -> str:
        return (f"distribution audit (b = {self.b}, D = {self.distance}): {self.vulnerable} of {self.rows} tuples in "
                f"{self.vulnerable_groups} of {self.groups} groups have D[prior, posterior] > {self.t:g}; "
                f"worst-case disclosure risk {self.worst:.4f}")


def audit_distribution(b: Any, t: Any, *, engine: Engine | Any = None, qi: Any = None, sensitive: str | None = None,
                       group: str = "group_id", table: str | None = None, qit: str | None = None,
                       st: str | None = None, prior_source: str | None = None, distance: str | None = None,
                       hierarchies: dict[str, Any] | None = None, kinds: dict[str, str] | None = None) -> DistributionAudit:
    """Count the tuples whose Omega posterior under Adv(B') lies more than ``t`` from their prior
    [thesis §3.7.1; spec 3.7]: the attack on any release that publishes groups with their sensitive
    values. Give ``table`` (one row per tuple: ``group``, the exact QIs, the ``sensitive`` value) or
    ``qit``/``st`` (a bucketized release; ``st`` has ``group``, ``sensitive`` and ``count``). The
    prior is estimated from ``prior_source`` (default ``table``; required with QIT/ST: the
    adversary's knowledge comes from the data). ``distance`` as in (B,t)-privacy."""
    from ..checker import evaluate_model
    from ..models.base import GroupContext
    from ..models.bt_privacy import BTPrivacy, cell_relations, members_of
    from ..models.prior import distinct_qids
    from ..schema import is_numeric_type, split_list

    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if not qi_cols or not sensitive:
        raise InputError("audit_distribution needs qi (the exact QI columns) and sensitive")
    if (qit is None) == (table is None) or (qit is not None and st is None):
        raise InputError("give qit and st (a QIT/ST release), or table (rows with the group, QIs and sensitive value)")
    src = prior_source or table
    if src is None:
        raise InputError("with a QIT/ST release, give prior_source: the table the adversary's prior is estimated from")
    model = BTPrivacy(b, t, distance)
    g = ident(group)
    with eng.scratch("audit") as s:
        rel = table if table is not None else qit
        for c in qi_cols + [group]:
            if c not in dict(eng.columns(rel)):
                raise InputError(f"column {c!r} not found in {rel!r}")
        qids = distinct_qids(eng, s, src, qi_cols)
        unknown = eng.scalar(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(ident(c) for c in qi_cols)} FROM "
                             f"{ident(rel)}) AS r ANTI JOIN {ident(qids)} AS q ON "
                             + " AND ".join(f"r.{ident(c)} IS NOT DISTINCT FROM q.{ident(c)}" for c in qi_cols))
        if unknown:
            raise InputError(f"{unknown} QI tuple(s) of the release do not occur in the prior's source {src!r}")
        model.bind(eng, src, qi_cols, sensitive, qids=qids, scratch=s, hierarchies=hierarchies, kinds=kinds)
        members = members_of(eng, s, rel, group, qids, qi_cols)
        if table is not None:
            cells = s.table(f"SELECT {g}, {ident(sensitive)} AS _adb_sa, count(*) AS _adb_cnt FROM {ident(table)} "
                            f"GROUP BY ALL")
        else:
            cells = s.table(f"SELECT {g}, {ident(sensitive)} AS _adb_sa, sum(count) AS _adb_cnt FROM {ident(st)} "
                            f"GROUP BY ALL")
        glob, groups, domain = cell_relations(eng, s, cells, [group])
        sa_type = dict(eng.columns(src))[sensitive]
        ctx = GroupContext(engine=eng, keys=[group], cells=cells, groups=groups, glob=glob, total=0,
                           domain=int(domain), sensitive=sensitive, sensitive_numeric=is_numeric_type(sa_type),
                           sa_hierarchy=(hierarchies or {}).get(sensitive), scratch=s, qi_columns=[group],
                           members=members)
        verdict = evaluate_model(model, ctx, 0, None)
        tuples = eng.fetch_rows(model.tuple_summary(ctx))[1][0]  # the same plan, summarized per tuple
    return DistributionAudit(b=model.prior.bandwidth if len(set(model.prior.bandwidth.values())) > 1 else b,
                             t=float(model.t), distance=model.params["distance"], rows=int(tuples[0] or 0),
                             groups=verdict.groups, vulnerable=int(tuples[1] or 0),
                             vulnerable_groups=verdict.violating_groups, worst=float(tuples[2] or 0.0))


__all__ = ["DistributionAudit", "RuleAudit", "audit_distribution", "audit_rules", "members_from_counts",
           "members_from_rows"]
