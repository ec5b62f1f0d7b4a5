"""m-invariant releases of a changing table [Xiao & Tao, "m-Invariance: Towards Privacy Preserving
Re-publication of Dynamic Datasets", SIGMOD 2007; Fung et al. survey §6.3].

A series is m-invariant when every group of every release holds at least m records with pairwise
different sensitive values (m-unique), and a record's groups across its lifespan have one
*signature* (set of sensitive values). An attacker who intersects a person's groups' values then
keeps the whole signature: m values. Counterfeit records keep a signature when its holders leave;
they are published inside the groups, and their number per group in ``<out>_counterfeits``.

The next release of a series (the ledger, :mod:`anonydb.release.ledger`, gives every tracked
record's last group and that group's signature), in a fixed number of statements:

1. **Persistent records** keep their last group's company: the records of one earlier group form
   one bucket, whose signature is that group's. A record whose sensitive value left its signature
   is refused (m-invariance assumes a record keeps its value; give it a new key).
2. **Holes**: a bucket's signature values no present record holds are filled by new records of
   that value (matched value by value in a keyed order), else by counterfeits.
3. **New records** left over are cut in Z-order into windows of a few times m records, each dealt
   into m-unique groups as Anatomy deals a table (:func:`_deal`); a group left with fewer than m
   values takes counterfeits of the most frequent values it lacks.

The groups are published either **generalized** (one table: each QI as its group's range
``[lo, hi]`` with ``<q>_lo``/``<q>_hi`` for numeric QIs, a categorical QI as its value when the
group has one and ``*`` otherwise; counterfeit rows carry the group's labels) or **Anatomy-style**
(``<out>_qit`` with the QIs exactly, ``<out>_st`` counting counterfeits in). A first release (no
ledger entry) is step 3 alone. The release is verified (the models over every published column,
counterfeits counted, as the attacker sees them) and composed with the ledger before it is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from .. import events as run_events
from ..checker import build_models
from ..engines import connect
from ..errors import AnonyDBError, InfeasibleError, InputError
from ..pseudonyms import pseudonym_sql
from ..release import ledger
from ..release.publish import Publication, resolve_roles
from ..schema import is_numeric_type, split_list
from ..sources import open_source
from ..sqlgen import ident, literal

FORMS = ("generalized", "anatomy")


@dataclass
class InvariantResult:
    table: str
    tables: dict[str, str]
    rows: int  # real records published
    groups: int
    counterfeits: int
    persistent: int  # records present in an earlier release of the source
    new: int
    m: int
    form: str
    seconds: float
    report: Any
    utility: dict[str, Any] = field(default_factory=dict)
    order: str = ""
    mode: str = "m-invariance"  # the series' composition

    def format(self) -> str:
        what = f"m-invariant release (m = {self.m}" if self.mode == "m-invariance" else \
            f"next release of the series (groups keep their values, new groups of {self.m}"
        lines = [f"{what}, {self.form}): {self.rows} records ({self.persistent} persistent, "
                 f"{self.new} new) in {self.groups} groups, {self.counterfeits} counterfeits -> "
                 f"{', '.join(self.tables.values())} in {self.seconds:.2f} s"]
        u = self.utility
        if u.get("independent"):
            i = u["independent"]
            lines.append(f"  utility: average class size {u['avg_class_size']:.2f} (an independent Mondrian release: "
                         f"{i['avg_class_size']:.2f}); mean normalized range width {u['width']:.4f} "
                         f"(independent: {i['width']:.4f})")
        return "\n".join(lines)


def invariant(source: str, qi: str | Iterable[str], sensitive: str, *, out: str, engine: Any = None,
              form: str = "generalized", replace: bool = False, seed: int | None = None,
              keep: Any = None, identifiers: Any = None, compare: bool = True, **params: Any) -> InvariantResult:
    """Write the next m-invariant release of ``source`` (see the module docstring). Needs an active
    :class:`~anonydb.release.ledger.Tracking` (series, tracked key, secret, ``m``); ``params``
    holds further models to verify (``k``, ``l``). In a series composed by intersection (not
    m-invariant) the same steps continue it: the earlier groups keep their values (padded with
    counterfeits of their own values up to k), new groups hold max(k, l) different values. ``compare``: also build an independent Mondrian
    release of the same models (never written) and report both utilities."""
    t0 = time.perf_counter()
    t = ledger.current()
    if t is None:
        raise InputError("minvariant writes the next release of a series: give the series, the tracked key and m "
                         "(composition m-invariance)")
    if form not in FORMS:
        raise InputError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    if keep:
        raise InputError("minvariant publishes the QIs and the sensitive attribute only: no kept columns")
    if not sensitive:
        raise InputError("m-invariance needs a sensitive attribute (--sensitive)")
    ks = [v for v in (params.get("k"), params.get("l"), t.l) if isinstance(v, int) and not isinstance(v, bool)]
    if t.mode == "m-invariance":
        m = int(t.m)
        if params.get("k") is not None and params["k"] > m:
            raise InputError(f"k = {params['k']} > m = {m}: an m-invariant group holds m records of m different "
                             f"values; raise m or lower k")
    else:  # a continuation: the groups keep their values; new groups of max(k, l) different values
        m = max(ks + [2])
    pad = int(params.get("k") or 0) if t.mode != "m-invariance" else 0
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    models = build_models(**{"l": m if t.mode == "m-invariance" else min(ks + [m]),
                             **{k: v for k, v in params.items() if v is not None}})
    targets = [out, f"{out}_counterfeits"] if form == "generalized" else [f"{out}_qit", f"{out}_st",
                                                                          f"{out}_counterfeits"]
    with Publication(eng, targets, replace, sources=[source], seed=seed) as pub:
        order = pub.order
        with eng.scratch("invariant") as s:
            relation = open_source(eng, source, scratch=s)
            roles = resolve_roles(eng, relation, qi_cols, sensitive, identifiers, None, label=str(source))
            types = dict(eng.columns(relation))
            run_events.phase("grouping")
            key = t.key
            if key not in types:
                raise InputError(f"tracked column {key!r} not found in {source}")
            if key in qi_cols or key == sensitive:
                raise InputError(f"the tracked column {key!r} is a quasi-identifier or the sensitive attribute")
            for c in ("eq_class", "group_id"):
                if c in types:
                    raise InputError(f"the release adds the column {c!r}, but {source} already has one")
            fp = pseudonym_sql(eng, ident(key), types[key], t.secret)
            sv = f"CAST({ident(sensitive)} AS VARCHAR)"
            qsel = ", ".join(ident(q) for q in qi_cols)
            cur = s.table(f"SELECT {fp} AS _adb_fp, {sv} AS _adb_v, {ident(key)} AS _adb_key, {qsel}, "
                          f"{ident(sensitive)}, {_z_order(eng, relation, qi_cols)} AS _adb_z FROM {ident(relation)}")
            n, nfp, nulls = eng.fetch_rows(f"SELECT count(*), count(DISTINCT _adb_fp), count(*) - count(_adb_fp) "
                                           f"FROM {ident(cur)}")[1][0]
            if n == 0:
                raise InputError(f"{source} is empty: there is nothing to release")
            if nulls or nfp != n:
                raise InputError(f"the tracked column {key!r} must name each record once: "
                                 f"{nulls} NULL and {n - nulls - nfp} repeated values")
            earlier = [e for e in ledger.chain(eng, t, types[key]) if (e["sensitive"] or None) == sensitive]
            ids = ", ".join(str(int(e["id"])) for e in earlier)
            if ids:
                seen = ledger.last_appearance(s, cur, "_adb_fp", [int(e["id"]) for e in earlier], t.schema)
                last = s.table(f"SELECT fp, release_id AS r, grp AS g FROM {ident(seen)}")
                sig = s.table(f"SELECT v.release_id AS r, v.grp AS g, v.value FROM {ledger.q(ledger.VALUES, t.schema)} AS v "
                              f"WHERE v.release_id IN ({ids}) AND EXISTS (SELECT 1 FROM {ident(last)} AS l "
                              f"WHERE l.r = v.release_id AND l.g = v.grp)")
            else:
                last = s.table("SELECT CAST(NULL AS VARCHAR) AS fp, CAST(NULL AS BIGINT) AS r, "
                               "CAST(NULL AS BIGINT) AS g WHERE 1 = 0")
                sig = s.table("SELECT CAST(NULL AS BIGINT) AS r, CAST(NULL AS BIGINT) AS g, "
                              "CAST(NULL AS VARCHAR) AS value WHERE 1 = 0")
            # 1. persistent records, bucketed by their last group
            old = s.table(f"SELECT c._adb_fp, c._adb_v, l.r, l.g, CAST(dense_rank() OVER (ORDER BY l.r, l.g) AS BIGINT) "
                          f"AS b FROM {ident(cur)} AS c JOIN {ident(last)} AS l ON l.fp = c._adb_fp")
            changed = eng.scalar(f"SELECT count(*) FROM {ident(old)} AS o WHERE NOT EXISTS (SELECT 1 FROM "
                                 f"{ident(sig)} AS x WHERE x.r = o.r AND x.g = o.g AND x.value = o._adb_v)")
            if changed:
                raise InputError(f"{changed} records of {source} changed their sensitive value since their last "
                                 f"release: m-invariance assumes a record keeps its value (give such a record a "
                                 f"new key, as a deletion and an insertion)")
            persistent = int(eng.scalar(f"SELECT count(*) FROM {ident(old)}"))
            nb = int(eng.scalar(f"SELECT COALESCE(max(b), 0) FROM {ident(old)}"))
            # 2. holes: the signature values no persistent record holds; new records fill them
            # a value's holes and its new records are matched in z-order (bucket: its records' mean z)
            holes = s.table(f"SELECT bk.b, x.value, row_number() OVER (PARTITION BY x.value ORDER BY bk.z, bk.b) AS hr "
                            f"FROM (SELECT o.r, o.g, o.b, avg(c._adb_z) AS z FROM {ident(old)} AS o JOIN {ident(cur)} AS c "
                            f"ON c._adb_fp = o._adb_fp GROUP BY 1, 2, 3) AS bk JOIN {ident(sig)} AS x "
                            f"ON x.r = bk.r AND x.g = bk.g WHERE NOT EXISTS (SELECT 1 FROM {ident(old)} AS o "
                            f"WHERE o.b = bk.b AND o._adb_v = x.value)")
            fresh = s.table(f"SELECT c._adb_fp, c._adb_v, row_number() OVER (PARTITION BY c._adb_v ORDER BY "
                            f"c._adb_z, c._adb_fp) AS nr FROM {ident(cur)} AS c "
                            f"WHERE NOT EXISTS (SELECT 1 FROM {ident(last)} AS l WHERE l.fp = c._adb_fp)")
            fill = s.table(f"SELECT f._adb_fp, h.b FROM {ident(fresh)} AS f JOIN {ident(holes)} AS h "
                           f"ON h.value = f._adb_v AND h.hr = f.nr")
            # 3. the new records left: dealt into m-unique groups, in QI order within a value
            rest = s.table(f"SELECT c.* FROM {ident(cur)} AS c JOIN {ident(fresh)} AS n ON n._adb_fp = c._adb_fp "
                           f"WHERE NOT EXISTS (SELECT 1 FROM {ident(fill)} AS f WHERE f._adb_fp = c._adb_fp)")
            dealt = _deal(eng, s, rest, m, nb)
            assign = s.table(f"SELECT _adb_fp, b FROM {ident(old)} UNION ALL SELECT _adb_fp, b FROM {ident(fill)} "
                             f"UNION ALL SELECT _adb_fp, b FROM {ident(dealt)}")
            # counterfeits: the holes left open (of buckets that still hold a record), and the
            # values a short new group lacks, most frequent first
            domain = s.table(f"SELECT value, sum(n) AS n FROM (SELECT _adb_v AS value, 1 AS n FROM {ident(cur)} "
                             f"UNION ALL SELECT value, 1 AS n FROM {ident(sig)}) AS x WHERE value IS NOT NULL "
                             f"GROUP BY value")
            if int(eng.scalar(f"SELECT count(*) FROM {ident(domain)}")) < m:
                raise InfeasibleError(f"{source} holds fewer than m = {m} distinct sensitive values: no group can be "
                                      f"{m}-unique")
            held = s.table(f"SELECT a.b, c._adb_v AS value FROM {ident(assign)} AS a JOIN {ident(cur)} AS c "
                           f"ON c._adb_fp = a._adb_fp")
            short = s.table(f"SELECT b, count(*) AS size FROM {ident(held)} WHERE b > {nb} GROUP BY b "
                            f"HAVING count(*) < {m}")
            cf = s.table(f"SELECT h.b, h.value FROM {ident(holes)} AS h WHERE NOT EXISTS (SELECT 1 FROM {ident(fresh)} "
                         f"AS f WHERE f._adb_v = h.value AND f.nr = h.hr) "
                         f"UNION ALL SELECT b, value FROM (SELECT sh.b, d.value, sh.size, row_number() OVER "
                         f"(PARTITION BY sh.b ORDER BY d.n DESC, d.value) AS rn FROM {ident(short)} AS sh "
                         f"CROSS JOIN {ident(domain)} AS d WHERE NOT EXISTS (SELECT 1 FROM {ident(held)} AS x "
                         f"WHERE x.b = sh.b AND x.value = d.value)) AS y WHERE rn <= {m} - size")
            if pad:  # a continuation: an earlier group that lost records is padded to k with its own values
                need = s.table(f"SELECT b, {pad} - count(*) AS need FROM (SELECT b FROM {ident(held)} WHERE b <= {nb} "
                               f"UNION ALL SELECT b FROM {ident(cf)} WHERE b <= {nb}) AS x GROUP BY b "
                               f"HAVING count(*) < {pad}")
                cf = s.table(f"SELECT b, value FROM {ident(cf)} UNION ALL SELECT b, value FROM (SELECT n.b, x.value, "
                             f"n.need, row_number() OVER (PARTITION BY n.b ORDER BY r.i, x.value) AS rn FROM {ident(need)} "
                             f"AS n JOIN (SELECT DISTINCT o.b, v.value FROM {ident(old)} AS o JOIN {ident(sig)} AS v "
                             f"ON v.r = o.r AND v.g = o.g) AS x ON x.b = n.b CROSS JOIN range({pad}) AS r(i)) AS y "
                             f"WHERE rn <= need")
            # group ids in a keyed order: an id says nothing of a group's age
            gid = s.table(f"SELECT b, CAST(row_number() OVER (ORDER BY md5_number(CAST(b AS VARCHAR) || "
                          f"{literal(order.key)}), b) AS BIGINT) AS gid FROM (SELECT DISTINCT b FROM {ident(assign)}) "
                          f"AS x")
            counterfeits = s.table(f"SELECT i.gid, c.value FROM {ident(cf)} AS c JOIN {ident(gid)} AS i ON i.b = c.b")
            recs = s.table(f"SELECT i.gid, c.* FROM {ident(cur)} AS c JOIN {ident(assign)} AS a ON a._adb_fp = "
                           f"c._adb_fp JOIN {ident(gid)} AS i ON i.b = a.b")
            vals = s.table(f"SELECT gid AS grp, value, count(*) AS n, sum(f) AS counterfeits FROM (SELECT gid, _adb_v "
                           f"AS value, 0 AS f FROM {ident(recs)} UNION ALL SELECT gid, value, 1 AS f FROM "
                           f"{ident(counterfeits)}) AS x GROUP BY 1, 2")
            ncf = int(eng.scalar(f"SELECT count(*) FROM {ident(counterfeits)}"))
            groups = int(eng.scalar(f"SELECT count(*) FROM {ident(gid)}"))
            stype = types[sensitive]
            okey = literal(order.key)
            if form == "generalized":
                labels, cols = [], []
                for q in qi_cols:
                    if is_numeric_type(types[q]):
                        labels.append(f"CASE WHEN min({ident(q)}) = max({ident(q)}) THEN CAST(min({ident(q)}) AS VARCHAR) "
                                      f"ELSE '[' || CAST(min({ident(q)}) AS VARCHAR) || ', ' || "
                                      f"CAST(max({ident(q)}) AS VARCHAR) || ']' END AS {ident(q)}, "
                                      f"min({ident(q)}) AS {ident(q + '_lo')}, max({ident(q)}) AS {ident(q + '_hi')}")
                        cols += [q, q + "_lo", q + "_hi"]
                    else:
                        labels.append(f"CASE WHEN count(DISTINCT {ident(q)}) = 1 AND count({ident(q)}) = count(*) "
                                      f"THEN CAST(min({ident(q)}) AS VARCHAR) ELSE '*' END AS {ident(q)}")
                        cols.append(q)
                box = s.table(f"SELECT gid, {', '.join(labels)} FROM {ident(recs)} GROUP BY gid")
                bcols = ", ".join(f"bx.{ident(c)}" for c in cols)
                stage = pub.stage()
                eng.create_table_as(stage, f"SELECT eq_class, {', '.join(ident(c) for c in cols)}, {ident(sensitive)}, "
                                           f"{ident(key)} FROM (SELECT bx.gid AS eq_class, {bcols}, r.{ident(sensitive)}, "
                                           f"r._adb_key AS {ident(key)}, md5_number(r._adb_fp || {okey}) AS _adb_o "
                                           f"FROM {ident(recs)} AS r JOIN {ident(box)} AS bx ON bx.gid = r.gid "
                                           f"UNION ALL SELECT bx.gid, {bcols}, CAST(c.value AS {stype}), "
                                           f"CAST(NULL AS {types[key]}), md5_number(CAST(bx.gid AS VARCHAR) || c.value "
                                           f"|| {okey}) FROM {ident(counterfeits)} AS c JOIN {ident(box)} AS bx "
                                           f"ON bx.gid = c.gid) AS x ORDER BY _adb_o")
                pub.verify(stage, sensitive, models, [], exclude=[key])
                real = s.table(f"SELECT _adb_key AS {ident(key)}, _adb_fp, gid AS eq_class FROM {ident(recs)}")
                pub.track(stage, key, ["eq_class"], sensitive, values=vals, rows=real)
                eng.drop_column(stage, key)
                aux = pub.stage("counterfeits")
                eng.create_table_as(aux, f"SELECT gid AS eq_class, CAST(count(*) AS BIGINT) AS counterfeits "
                                         f"FROM {ident(counterfeits)} GROUP BY gid ORDER BY gid")
                pub.attach([aux], True, "", pub.staged[stage])
                report = pub.staged[stage]
                utility = _utility(eng, stage, qi_cols, types, relation) if compare else {}
                if compare:
                    utility["independent"] = _independent(eng, source, qi_cols, sensitive, m, params, types, relation)
                pairs, tables = [(stage, out), (aux, f"{out}_counterfeits")], {"release": out,
                                                                               "counterfeits": f"{out}_counterfeits"}
            else:
                from .anatomy import verify as verify_pair

                qit, st, aux = pub.stage("qit"), pub.stage("st"), pub.stage("counterfeits")
                eng.create_table_as(qit, f"SELECT {qsel}, gid AS group_id, _adb_key AS {ident(key)} FROM {ident(recs)} "
                                         f"ORDER BY md5_number(_adb_fp || {okey})")
                eng.create_table_as(st, f"SELECT grp AS group_id, CAST(value AS {stype}) AS {ident(sensitive)}, "
                                        f"CAST(n AS BIGINT) AS count FROM {ident(vals)} ORDER BY 1, 2")
                eng.create_table_as(aux, f"SELECT gid AS group_id, CAST(count(*) AS BIGINT) AS counterfeits "
                                         f"FROM {ident(counterfeits)} GROUP BY gid ORDER BY gid")
                rep = _verify_anatomy(eng, s, qit, st, aux, qi_cols, sensitive, models, verify_pair)
                pub.attach([qit, st, aux], rep.holds, f"the m-invariant QIT/ST pair fails "
                                                      f"{next((v.model for v in rep.verdicts if not v.holds), '')}", rep)
                pub.track(qit, key, ["group_id"], sensitive, values=vals)
                eng.drop_column(qit, key)
                report, utility = rep, {}
                pairs = [(qit, f"{out}_qit"), (st, f"{out}_st"), (aux, f"{out}_counterfeits")]
                tables = {"qit": f"{out}_qit", "st": f"{out}_st", "counterfeits": f"{out}_counterfeits"}
        pub.commit(pairs)
    return InvariantResult(table=tables.get("release", tables.get("qit")), tables=tables, rows=int(n), groups=groups,
                           counterfeits=ncf, persistent=persistent, new=int(n) - persistent, m=m, form=form,
                           seconds=time.perf_counter() - t0, report=report, utility=utility, order=order.describe(),
                           mode=t.mode)


#: new records are dealt in windows of this many times m consecutive records in Z-order
WINDOW = 4
#: rounds of windows (each twice as large) before the records left are dealt over the whole table
PASSES = 6


def _deal(eng: Any, s: Any, rest: str, m: int, nb: int) -> str:
    """(_adb_fp, b): the new records of ``rest`` dealt into m-unique groups numbered above ``nb``.
    The records are cut, in Z-order, into windows of WINDOW * m (the last one folded into the one
    before), and each window is dealt as Anatomy deals a table (bucket by value, largest first,
    record pos to group pos mod g, g = floor(n/m)): a value's first g records of the window fall
    in distinct groups, near in every QI. The records a window cannot place (a value holding more
    than g of them: one person's repeated visits) go round again in windows twice as large, up to
    PASSES rounds; the last are dealt over the whole table: the i-th of a value's c records in
    Z-order to group floor((2i + 1) g' / 2c), g' = max(floor(n/m), the largest c)."""
    parts, left, base = [], rest, nb + 1
    for p in range(PASSES):
        n = int(eng.scalar(f"SELECT count(*) FROM {ident(left)}"))
        if n == 0:
            break
        w = WINDOW * m * 2 ** p
        last = max(n // w - 1, 0)
        win = s.table(f"SELECT _adb_fp, _adb_v, _adb_z, least((row_number() OVER (ORDER BY _adb_z, _adb_fp) - 1) "
                      f"// {w}, {last}) AS w FROM {ident(left)}")
        # g: the groups a window can fill: floor(n/m), lowered to what the values' first g records fill
        cnt = s.table(f"SELECT w, _adb_v, count(*) AS c FROM {ident(win)} GROUP BY 1, 2")
        gw = s.table(f"SELECT w, greatest(sum(least(c, g1)) // {m}, 1) AS g FROM (SELECT w, c, sum(c) OVER "
                     f"(PARTITION BY w) // {m} AS g1 FROM {ident(cnt)}) AS x GROUP BY w")
        lay = s.table(f"SELECT _adb_fp, w, g, row_number() OVER (PARTITION BY w ORDER BY least(c, g) DESC, _adb_v, rv) "
                      f"- 1 AS pos FROM (SELECT x.*, k.c, gw.g, row_number() OVER (PARTITION BY x.w, x._adb_v ORDER BY "
                      f"x._adb_z, x._adb_fp) - 1 AS rv FROM {ident(win)} AS x JOIN {ident(cnt)} AS k ON k.w = x.w AND "
                      f"k._adb_v = x._adb_v JOIN {ident(gw)} AS gw ON gw.w = x.w) AS y WHERE rv < g")
        parts.append(f"SELECT _adb_fp, CAST({base} + w * {w} + pos % g AS BIGINT) AS b FROM {ident(lay)}")
        base += (last + 1) * w
        left = s.table(f"SELECT r._adb_fp, r._adb_v, r._adb_z FROM {ident(win)} AS r WHERE NOT EXISTS (SELECT 1 FROM "
                       f"{ident(lay)} AS l WHERE l._adb_fp = r._adb_fp)")
    nl, top = eng.fetch_rows(f"SELECT count(*), COALESCE(max(c), 0) FROM (SELECT _adb_v, count(*) AS c "
                             f"FROM {ident(left)} GROUP BY 1) AS x")[1][0]
    g = max(int(nl) // m, int(top), 1)
    parts.append(f"SELECT _adb_fp, CAST({base} + ((2 * i + 1) * {g}) // (2 * c) AS BIGINT) AS b FROM "
                 f"(SELECT _adb_fp, row_number() OVER (PARTITION BY _adb_v ORDER BY _adb_z, _adb_fp) - 1 AS i, "
                 f"count(*) OVER (PARTITION BY _adb_v) AS c FROM {ident(left)}) AS x")
    return s.table(" UNION ALL ".join(parts))


def _z_order(eng: Any, relation: str, qi: list[str]) -> str:
    """A Z-order (Morton) key of the QIs: each QI's rank among its distinct values (SQL window,
    scaled to B bits), the bits interleaved, so records near in the key are near in every QI."""
    d = len(qi)
    bits = max(1, min(10, 62 // d))
    counts = eng.fetch_rows("SELECT " + ", ".join(f"count(DISTINCT {ident(q)})" for q in qi)
                            + f" FROM {ident(relation)}")[1][0]
    scaled = [f"CAST((dense_rank() OVER (ORDER BY {ident(q)}) - 1) * {2 ** bits} // {int(n) + 1} AS BIGINT)"
              for q, n in zip(qi, counts)]
    terms = [f"(({r}) // {2 ** b} % 2) * {2 ** (b * d + i)}" for b in range(bits) for i, r in enumerate(scaled)]
    return "CAST(" + " + ".join(terms) + " AS BIGINT)"


def _verify_anatomy(eng: Any, s: Any, qit: str, st: str, aux: str, qi: list[str], sensitive: str, models: list,
                    verify_pair: Any) -> Any:
    """The pair verified as Anatomy's, each group's QIT rows plus its counterfeits equal to its ST
    counts (the counterfeits live in the ST only)."""
    with eng.scratch("invariant_check") as s2:
        padded = s2.table(f"SELECT {', '.join(ident(q) for q in qi)}, group_id FROM {ident(qit)} UNION ALL "
                          f"SELECT {', '.join('NULL' for _ in qi)}, a.group_id FROM {ident(aux)} AS a, range(a.counterfeits)")
        return verify_pair(eng, padded, st, qi, sensitive, models)


def _utility(eng: Any, stage: str, qi: list[str], types: dict[str, str], source: str) -> dict[str, Any]:
    """Average class size and the mean over numeric QIs of the rows' range width over the domain's."""
    nums = [q for q in qi if is_numeric_type(types[q])]
    size = eng.fetch_rows(f"SELECT count(*), count(DISTINCT eq_class) FROM {ident(stage)}")[1][0]
    width = 0.0
    if nums:
        dom = eng.fetch_rows("SELECT " + ", ".join(f"max({ident(q)}) - min({ident(q)})" for q in nums)
                             + f" FROM {ident(source)}")[1][0]
        parts = [f"avg(CAST({ident(q + '_hi')} - {ident(q + '_lo')} AS DOUBLE) / {float(d)})" for q, d in zip(nums, dom)
                 if d]
        if parts:
            w = eng.fetch_rows(f"SELECT {', '.join(parts)} FROM {ident(stage)}")[1][0]
            width = sum(float(x or 0) for x in w) / len(nums)
    return {"avg_class_size": size[0] / max(size[1], 1), "width": width}


def _independent(eng: Any, source: str, qi: list[str], sensitive: str, m: int, params: dict[str, Any],
                 types: dict[str, str], relation: str) -> dict[str, Any]:
    """The utility of an independent Mondrian release of the same models (l = m), never written
    under the user's name (a staging table, dropped) nor recorded."""
    from ..release.publish import stage_name
    from .mondrian import anonymize

    name = stage_name("independent", eng)
    try:
        with ledger.tracking(None):
            anonymize(relation, qi, sensitive, out=name, engine=eng, replace=True, **{"l": m, **params})
        return _utility(eng, name, qi, types, relation)
    except AnonyDBError as e:
        return {"avg_class_size": float("nan"), "width": float("nan"), "error": str(e)}
    finally:
        eng.drop(name)


__all__ = ["FORMS", "InvariantResult", "invariant"]
