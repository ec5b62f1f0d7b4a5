"""Differentially private aggregates by person: counts, sums and means of a table's groups.

epsilon-differential privacy [Dwork 2006; the survey's §2.4 and Table IV] holds against any
background knowledge: a release's distribution changes by at most a factor e^epsilon (plus delta)
when one *person*, with all their records, is added or removed. The privacy unit is the person
column, never the row.

Contribution bounding, in SQL (the database does the work; only per-group aggregates leave it):

* each person keeps at most ``max_rows`` rows R in each group, chosen by a keyed hash of the row
  under a fresh secret salt (never the table's order, which an adversary may steer);
* each person keeps at most ``max_groups`` groups G, again by a keyed hash of (person, group);
* every value is clamped to its [lo, hi].

Sensitivities (L1, one person added or removed): a count vector moves by at most G x R (R in each
of G groups); a sum of values clamped to [lo, hi] by G x R x max(|lo|, |hi|). A mean is a noisy
sum over a noisy count (post-processing: it spends nothing more). The budget is split evenly
between the released aggregates (basic composition: the epsilons add up), the count taking the
partition selection's delta when the group keys are not public (:func:`anonydb.noise.threshold`).
With ``keys`` (a table of public group keys) every key appears, with no threshold.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable

from .. import noise
from ..engines import connect
from ..engines.base import text_keyed_hash
from ..errors import AnonyDBError, InputError
from ..release import ledger
from ..release.publish import Publication
from ..schema import is_numeric_type, split_list
from ..sources import accepts_frames, open_source
from ..sqlgen import ident


#: the noise mechanisms (OpenDP's): the Laplace composes by epsilon, the Gaussian in zCDP
MECHANISMS = ("laplace", "gaussian")


@dataclass
class Bound:
    """A value column clamped to [lo, hi] for a sum or a mean."""

    column: str
    lo: float
    hi: float

    @classmethod
    def parse(cls, spec: "str | tuple | Bound", what: str) -> "Bound":
        """``COL:LO:HI`` (the CLI's form), a (column, lo, hi) tuple, or a Bound."""
        if isinstance(spec, Bound):
            b = spec
        else:
            parts = spec.rsplit(":", 2) if isinstance(spec, str) else list(spec)
            if len(parts) != 3:
                raise InputError(f"--{what} {spec!r}: give COLUMN:LO:HI (a {what} needs bounds: an unbounded {what} "
                                 f"is not differentially private)")
            try:
                b = cls(str(parts[0]), float(parts[1]), float(parts[2]))
            except ValueError:
                raise InputError(f"--{what} {spec!r}: LO and HI must be numbers") from None
        if not (math.isfinite(b.lo) and math.isfinite(b.hi)):
            raise InputError(f"--{what} {b.column}: LO and HI must be finite numbers")
        if b.lo > b.hi:
            raise InputError(f"--{what} {b.column}: LO {b.lo:g} is above HI {b.hi:g}")
        return b

    @property
    def integer(self) -> bool:
        return float(self.lo).is_integer() and float(self.hi).is_integer()

    @property
    def reach(self) -> float:
        return max(abs(self.lo), abs(self.hi))


@dataclass
class DPResult:
    """A released table of noisy aggregates and what it spent."""

    table: str
    groups: int
    epsilon: float
    delta: float
    seconds: float
    columns: list[str] = field(default_factory=list)
    threshold: int | None = None
    scales: dict[str, float] = field(default_factory=dict)
    series: str = ""
    left: float | None = None  # the series' budget left, when it has one
    budget: float | None = None
    person: str = ""
    by: list[str] = field(default_factory=list)
    max_groups: int = 1
    max_rows: int = 1
    #: each drawn aggregate: its sensitivity (L1 for the Laplace, L2 for the Gaussian) and what it
    #: spent (epsilon, or the Gaussian's zCDP rho)
    sensitivities: dict[str, float] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)
    mechanism: str = "laplace"
    engine: Any = field(default=None, repr=False)
    spec: Any = field(default=None, repr=False)

    def promise(self) -> str:
        """What the release promises, in one line (``anonydb releases`` says the same)."""
        return (f"({self.epsilon:g}, {self.delta:g})-differential privacy for every person of {self.person!r} "
                f"(at most {self.max_groups} groups and {self.max_rows} rows each)")

    def format(self) -> str:
        sel = (f"; group keys not public: released where the noisy count reaches {self.threshold}"
               if self.threshold is not None else "; every public key released")
        lines = [f"release {self.table}: {self.groups} groups of differentially private aggregates "
                 f"({self.seconds:.2f} s)",
                 f"  promises: {self.promise()}",
                 f"  spent: epsilon {self.epsilon:g}, delta {self.delta:g}{sel}",
                 "  noise scales: " + ", ".join(f"{k} {v:g}" for k, v in self.scales.items())]
        if self.left is not None:
            lines.append(f"  budget of series {self.series!r}: epsilon {self.left:g} left")
        return "\n".join(lines)


@accepts_frames(None)
def dp(source: str, *, person: str, by: str | Iterable[str], out: str, epsilon: float, delta: float = 0.0,
       count: bool = True, sums: Iterable[Any] = (), means: Iterable[Any] = (), keys: str | None = None,
       max_groups: int = 1, max_rows: int = 1, engine: Any = None, replace: bool = False,
       series: str | None = None, budget: float | None = None, select: str | None = None,
       mechanism: str = "laplace") -> DPResult:
    """Release the groups of ``source`` by ``by`` with (epsilon, delta)-DP aggregates, by person.

    ``count``: the number of rows per group (after bounding); ``sums`` / ``means``: columns with
    bounds, each ``"col:lo:hi"`` or (col, lo, hi). ``keys``: a table of the public group keys
    (columns ``by``); without it the keys come from the data and need ``delta`` > 0. Each output
    column comes with its noise scale and a 95% interval (``_lo95``, ``_hi95``).

    Every release is an entry of the database's ledger (mode ``dp``: the epsilon and delta spent,
    the bounds). ``budget``: the epsilon the releases of ``series`` (default: ``out``) and of
    ``source`` may spend in all (basic composition: their epsilons add up); a release that would
    pass it is refused in one line and nothing is written. ``select``: the rows of a query over
    ``source`` to release instead (:func:`from_query`'s: a filter, a join on the person).
    ``mechanism``: ``laplace`` (pure epsilon-DP with public keys) or ``gaussian`` (the discrete
    Gaussian, composed in zCDP within the release; needs delta > 0; :func:`noise_plan`)."""
    t0 = time.perf_counter()
    eng = connect(engine)
    groups_by = split_list(by, "group columns")
    sums = [Bound.parse(x, "sum") for x in sums]
    means = [Bound.parse(x, "mean") for x in means]
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise InputError(f"epsilon must be a positive number, got {epsilon!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta < 1:
        raise InputError(f"delta must be in [0, 1), got {delta!r}")
    for name, v in (("max_groups", max_groups), ("max_rows", max_rows)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}")
    if not (count or sums or means):
        raise InputError("nothing to release: ask for --count, --sum or --mean")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float))
                               or not math.isfinite(budget) or budget <= 0):
        raise InputError(f"budget must be a positive number, got {budget!r}")
    if mechanism not in MECHANISMS:
        raise InputError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if mechanism == "gaussian" and delta <= 0:
        raise InputError("the Gaussian mechanism is (epsilon, delta)-DP: give delta > 0 (--delta)")
    if keys is None and delta <= 0:
        raise InputError("group keys that are not public are released only above a noisy threshold, which needs "
                         "delta > 0 (--delta); or give the public keys (--keys TABLE)")
    spent_delta = delta if keys is None or mechanism == "gaussian" else 0.0
    name = series or out
    before, _ = ledger.dp_spent(eng, name, str(source))
    left = None
    if budget is not None:
        left = Fraction(str(float(budget))) - Fraction(str(before)) - Fraction(str(float(epsilon)))
        if left < 0:
            raise InputError(f"the budget of series {name!r} is epsilon {budget:g}, {before:g} of it spent: this "
                             f"release's {float(epsilon):g} would pass it; nothing was written")
    with Publication(eng, [out], replace, sources=[source] + ([keys] if keys else [])) as pub:
        with eng.scratch("dp") as s:
            if select is None:
                relation = open_source(eng, source, scratch=s)
            elif not eng.exists(str(source)):
                raise InputError(f"--query reads {source!r}: no table or view of that name in the database")
            else:
                relation = s.table(select)
            types = dict(eng.columns(relation))
            for c in [person] + groups_by + [b.column for b in sums + means]:
                if c not in types:
                    raise InputError(f"{source} has no column {c!r}")
            for b in sums + means:
                if not is_numeric_type(types[b.column]):
                    raise InputError(f"{b.column!r} is not numeric ({types[b.column]}): a sum or mean needs numbers")
            nulls = eng.scalar(f"SELECT count(*) FROM {ident(relation)} WHERE {ident(person)} IS NULL")
            if nulls:
                raise InputError(f"the person column {person!r} is NULL in {nulls} rows: every row needs its person")
            agg = s.table(bounded_sql(relation, person, groups_by, sums + means, max_groups, max_rows,
                                      eng.keyed_hash))
            if keys is not None:
                kt = dict(eng.columns(keys)) if eng.exists(keys) else None
                if kt is None or any(c not in kt for c in groups_by):
                    raise InputError(f"--keys {keys!r} must be a table with the group columns {', '.join(groups_by)}")
                on = " AND ".join(f"k.{ident(c)} IS NOT DISTINCT FROM a.{ident(c)}" for c in groups_by)
                vals = ", ".join(f"coalesce(a.{ident(c)}, 0) AS {ident(c)}"
                                 for c in ["_adb_n"] + [f"_adb_s{i}" for i in range(len(sums + means))])
                agg = s.table(f"SELECT {', '.join('k.' + ident(c) for c in groups_by)}, {vals} FROM "
                              f"(SELECT DISTINCT {', '.join(ident(c) for c in groups_by)} FROM {ident(keys)}) AS k "
                              f"LEFT JOIN {ident(agg)} AS a ON {on}")
            plan, names = noise_plan(len(groups_by), count, sums, means, epsilon, spent_delta, max_groups, max_rows,
                                     public=keys is not None, mechanism=mechanism)
            scales, thr = scales_of(plan, sums, means), plan["threshold"]
            columns = [(c, types[c]) for c in groups_by] + [(n, "DOUBLE") for n in names]
            try:  # only the per-group aggregates reach the noise: here, or on Spark's executors
                noisy = eng.map_rows(s, agg, noise.noise_step(plan), columns)
            except Exception as e:  # noqa: BLE001 - the step's one line, wherever it ran
                said = next((ln for ln in str(e).splitlines() if "OpenDP could not add the noise" in ln), None)
                if said is None:
                    raise
                raise AnonyDBError(said[said.index("OpenDP"):].strip()) from None
            stage = pub.stage()
            eng.create_table_as(stage, f"SELECT * FROM {ident(noisy)}")
            released = int(eng.scalar(f"SELECT count(*) FROM {ident(stage)}"))
            pub.attach([stage], True, "", None)
        models = {"epsilon": float(epsilon), "delta": spent_delta, "mechanism": f"{mechanism} (OpenDP)",
                  "count": bool(count), "sums": [vars(b) for b in sums], "means": [vars(b) for b in means],
                  "max_groups": max_groups, "max_rows": max_rows, "threshold": thr, "budget": budget,
                  "left": None if left is None else float(left)}
        entry = {"series": name, "source": str(source), "method": "dp", "tables": json.dumps([out]), "spec": "",
                 "columns": json.dumps({c: "group" for c in groups_by}, sort_keys=True),
                 "models": json.dumps(models, sort_keys=True),
                 "achieved": json.dumps({"dp": {"epsilon": float(epsilon), "delta": spent_delta}}),
                 "tracked": person, "tracked_kind": "person", "rows": released, "groups": released}
        have = ledger.present(eng)
        pub.commit([(stage, out)], entry=lambda: ledger.write_dp(eng, have, entry))
    # the sensitivities of the module docstring: L1 for the Laplace, L2 for the Gaussian
    gr = max_groups * max_rows if mechanism == "laplace" else max_rows * math.sqrt(max_groups)
    sens = dict(zip(scales, ([gr] if "count" in scales else []) + [gr * b.reach for b in sums + means]))
    each = plan["each"]  # epsilon (Laplace) or zCDP rho (Gaussian) of each draw
    return DPResult(table=out, groups=released, epsilon=float(epsilon), delta=float(spent_delta),
                    seconds=time.perf_counter() - t0, columns=names, threshold=thr, scales=scales, series=name,
                    left=None if left is None else float(left), budget=budget, person=person, by=groups_by,
                    max_groups=max_groups, max_rows=max_rows, sensitivities=sens, spent={k: each for k in scales},
                    engine=eng, mechanism=mechanism)


def bounded_sql(relation: str, person: str, by: list[str], bounds: list[Bound], max_groups: int,
                max_rows: int, keyed: Callable[[int, list[str]], str] = text_keyed_hash) -> str:
    """The per-group aggregates after contribution bounding: (by..., _adb_n rows, _adb_s<i> the
    clamped sum of each bound). ``keyed(salt, exprs)`` is the engine's keyed hash
    (:meth:`anonydb.engines.base.Engine.keyed_hash`); fresh secret salts, living in this
    statement only, choose a person's rows and groups.

    The plan aggregates once by (person, group) and goes back to the rows only where it must:

    * ``pg``: each (person, group) pair's rows and clamped sums;
    * the pairs with more than R rows take the R rows of least keyed hash (a window over those
      pairs' rows only), the others are kept whole;
    * a person in more than G groups keeps the G of least keyed hash of (person, group) (a window
      over those persons' pairs only), the others keep every pair;
    * the kept pairs summed by group.

    A table where every person holds few rows (the common case) costs two aggregations and a join,
    about 1.5x the floor of one aggregation by (person, group) (BENCHMARKS.md)."""
    s1, s2 = secrets.randbits(62), secrets.randbits(62)
    p = ident(person)
    keys = [ident(c) for c in by]
    kl = ", ".join(keys)
    def clamp(b: Bound, at: str = "") -> str:
        return f"least(greatest(CAST({at}{ident(b.column)} AS DOUBLE), {b.lo!r}), {b.hi!r})"

    sums = "".join(f", sum({clamp(b)}) AS _adb_s{i}" for i, b in enumerate(bounds))
    agg = "".join(f", sum(_adb_s{i}) AS _adb_s{i}" for i in range(len(bounds)))
    vals = "".join(f", _adb_s{i}" for i in range(len(bounds)))
    same = " AND ".join([f"t.{p} = o.{p}"] + [f"t.{k} IS NOT DISTINCT FROM o.{k}" for k in keys])
    rowkey = keyed(s2, [f"t.{ident(c)}" for c in dict.fromkeys([person] + by + [b.column for b in bounds])])
    picked = "".join(f", {clamp(b, 't.')} AS _adb_v{i}" for i, b in enumerate(bounds))
    return (f"WITH pg AS (SELECT {p}, {kl}, count(*) AS _adb_c{sums} FROM {ident(relation)} GROUP BY {p}, {kl}), "
            f"o AS (SELECT {p}, {kl} FROM pg WHERE _adb_c > {int(max_rows)}), "
            f"r AS (SELECT t.{p}, {', '.join('t.' + k for k in keys)}{picked}, row_number() OVER "
            f"(PARTITION BY t.{p}, {', '.join('t.' + k for k in keys)} ORDER BY {rowkey}) AS _adb_r "
            f"FROM {ident(relation)} AS t JOIN o ON {same}), "
            f"pairs AS (SELECT {p}, {kl}, _adb_c{vals} FROM pg WHERE _adb_c <= {int(max_rows)} UNION ALL "
            f"SELECT {p}, {kl}, count(*) AS _adb_c" + "".join(f", sum(_adb_v{i}) AS _adb_s{i}" for i in range(len(bounds)))
            + f" FROM r WHERE _adb_r <= {int(max_rows)} GROUP BY {p}, {kl}), "
            f"np AS (SELECT {p}, count(*) AS _adb_np FROM pairs GROUP BY {p}), "
            f"kept AS (SELECT pairs.* FROM pairs JOIN np ON pairs.{p} = np.{p} WHERE np._adb_np <= {int(max_groups)} "
            f"UNION ALL SELECT {p}, {kl}, _adb_c{vals} FROM (SELECT pairs.*, row_number() OVER (PARTITION BY "
            f"pairs.{p} ORDER BY {keyed(s1, ['pairs.' + p] + ['pairs.' + k for k in keys])}) AS _adb_k FROM pairs "
            f"JOIN np ON pairs.{p} = np.{p} WHERE np._adb_np > {int(max_groups)}) AS w WHERE _adb_k <= "
            f"{int(max_groups)}) "
            f"SELECT {kl}, sum(_adb_c) AS _adb_n{agg} FROM kept GROUP BY {kl}")


def noise_plan(nkeys: int, count: bool, sums: list[Bound], means: list[Bound], epsilon: float, delta: float,
               max_groups: int, max_rows: int, public: bool, mechanism: str = "laplace"
               ) -> tuple[dict[str, Any], list[str]]:
    """What the noise step draws (:func:`anonydb.noise.noise_step`), fixed from the budget alone,
    and the output's value columns.

    Laplace: each of the m aggregates drawn spends epsilon / m (basic composition), the count
    with the partition selection's delta when the keys are not public.

    Gaussian: the draws compose in zCDP (rho adds up, Bun and Steinke 2016): the release's rho is
    the most that OpenDP's conversion turns into (epsilon, delta_c)-DP, shared evenly by the m
    draws, each scaled to its L2 sensitivity (a count R sqrt(G), a sum R sqrt(G) max(|lo|, |hi|));
    with keys that are not public, half of delta goes to the threshold (delta_c the other half)."""
    bounds = sums + means
    drawn_count = count or bool(means) or not public
    m = int(drawn_count) + len(bounds)
    G, R = max_groups, max_rows
    thr = cs = None
    eps = each = 0.0
    if mechanism == "gaussian":
        d_thr = 0.0 if public else delta / 2
        each = noise.rho_for(epsilon, delta - d_thr) / m
        l2 = R * math.sqrt(G)
        if not public:
            cs, thr = noise.gaussian_threshold_for(G, R, each, d_thr)
        elif drawn_count:
            cs = noise.gaussian_scale_for(l2, each, True)
        scale_of = lambda b: noise.gaussian_scale_for(l2 * b.reach, each, b.integer)  # noqa: E731
    else:
        eps = epsilon / m
        if not public:
            cs, thr = noise.threshold_for(G, R, eps, delta)
        elif drawn_count:
            cs = noise.scale_for(G * R, eps, True)
        scale_of = lambda b: noise.scale_for(G * R * b.reach, eps, b.integer)  # noqa: E731
    values = [{"kind": "sum" if j < len(sums) else "mean", "integer": b.integer, "lo": b.lo, "hi": b.hi,
               "scale": scale_of(b)} for j, b in enumerate(bounds)]
    names: list[str] = []
    if count:
        names += ["count", "count_scale", "count_lo95", "count_hi95"]
    for b in sums:
        names += [f"sum_{b.column}", f"sum_{b.column}_scale", f"sum_{b.column}_lo95", f"sum_{b.column}_hi95"]
    names += [f"mean_{b.column}" for b in means]
    plan = {"keys": nkeys, "count": bool(count), "count_scale": cs, "threshold": thr, "values": values,
            "mechanism": mechanism, "each": each if mechanism == "gaussian" else eps}
    return plan, names


def scales_of(plan: dict[str, Any], sums: list[Bound], means: list[Bound]) -> dict[str, float]:
    """Each drawn aggregate's noise scale, by name (the count's, then sum_COL, mean_COL)."""
    out = {"count": plan["count_scale"]} if plan["count_scale"] is not None else {}
    for b, v in zip(sums + means, plan["values"]):
        out[("sum_" if v["kind"] == "sum" else "mean_") + b.column] = v["scale"]
    return out


def add_noise(rows: list[tuple], nkeys: int, count: bool, sums: list[Bound], means: list[Bound], epsilon: float,
              delta: float, max_groups: int, max_rows: int, public: bool, mechanism: str = "laplace"
              ) -> tuple[list[tuple], list[str], dict[str, float], int | None]:
    """Noisy aggregates of ``rows`` (keys..., n, s_0, ...) where anonydb runs: (output rows, their
    value columns, the scales, the threshold when the keys were selected)."""
    plan, names = noise_plan(nkeys, count, sums, means, epsilon, delta, max_groups, max_rows, public, mechanism)
    return noise.noise_step(plan)(rows), names, scales_of(plan, sums, means), plan["threshold"]


def from_query(query: str, bounds: Iterable[Any] = (), person: str | None = None) -> dict[str, Any]:
    """The arguments of :func:`dp` read from an aggregate query (sqlglot, DuckDB's dialect):
    ``SELECT keys..., count(*), sum(x), avg(x) FROM t [JOIN u ON t.p = u.p] [WHERE ...] GROUP BY
    keys`` (or ``GROUP BY ALL``). A sum or mean is bounded by a clamp in the query
    (``least(greatest(x, LO), HI)``) or by ``bounds`` ("x:LO:HI"). ``select`` in the result is the
    query's rows (person, keys, the aggregated columns) for the bounded plan.

    A WHERE filters rows before the bounds (each person still adds at most G x R rows), and a join
    on the ``person`` column (ON equal person columns, or USING (person)) puts a person's rows of
    two tables together: adding or removing a person adds or removes their rows of both, so the
    bounds after the join still hold. Refused in one line: a join on anything else (it mixes
    persons), a subquery, a window, DISTINCT, HAVING, LIMIT, an aggregate other than count(*), sum
    and avg, and a sum without bounds."""
    import sqlglot
    from sqlglot import exp

    given = {b.column: b for b in (Bound.parse(x, "sum") for x in bounds)}
    try:
        tree = sqlglot.parse_one(query, read="duckdb")
    except sqlglot.errors.ParseError as e:
        raise InputError(f"--query does not parse: {str(e).splitlines()[0]}") from None
    if not isinstance(tree, exp.Select):
        raise InputError("--query must be one SELECT ... GROUP BY")
    why = ("a window" if tree.find(exp.Window) else
           "a subquery" if tree.find(exp.Subquery) or len(list(tree.find_all(exp.Select))) > 1 else
           "HAVING" if tree.args.get("having") else "DISTINCT" if tree.args.get("distinct") else
           "a WITH clause" if tree.args.get("with") else "LIMIT" if tree.args.get("limit") else None)
    if why:
        raise InputError(f"--query has {why}, which the rewrite cannot make differentially private; "
                         f"aggregate a table or view by person")
    joins = tree.args.get("joins") or []
    if joins and not person:
        raise InputError("--query joins tables: give --person, the column they are joined on")
    for j in joins:
        if not _on_person(j, person):
            raise InputError(f"--query has a join on anything but the person column {person!r} ({j.sql('duckdb')}), "
                             f"which mixes persons; join on {person} alone")
    tables = list(tree.find_all(exp.Table))
    if len(tables) != 1 + len(joins):
        raise InputError("--query must read tables by name")
    keys, count, sums, means, cols = [], False, [], [], {}
    for item in tree.expressions:
        e = item.this if isinstance(item, exp.Alias) else item
        if isinstance(e, exp.Column):
            keys.append(e.name)
            cols[e.name] = e
        elif isinstance(e, exp.Count) and isinstance(e.this, exp.Star):
            count = True
        elif isinstance(e, (exp.Sum, exp.Avg)):
            got = _bounded(e.this, given)
            if got is None:
                raise InputError(f"--query: {e.sql('duckdb')} is an unbounded {'sum' if isinstance(e, exp.Sum) else 'mean'}"
                                 f"; clamp it (least(greatest(x, LO), HI)) or give --sum x:LO:HI")
            (sums if isinstance(e, exp.Sum) else means).append(got[0])
            cols.setdefault(got[0].column, got[1])
        else:
            raise InputError(f"--query: {e.sql('duckdb')} is not a group key, count(*), sum or avg")
    group = tree.args.get("group")
    named = [g.name for g in group.expressions if isinstance(g, exp.Column)] if group else []
    if group is None or (named and sorted(named) != sorted(keys)) or (not named and not group.args.get("all")):
        raise InputError("--query must GROUP BY its key columns (or GROUP BY ALL)")
    if len(set(keys)) != len(keys):
        raise InputError("--query names a key column twice: alias one of them in a view first")
    select = None
    if person:
        first = tables[0].alias_or_name if joins else None
        rows = tree.copy()
        rows.set("group", None)
        rows.set("order", None)
        rows.set("expressions", [exp.alias_(exp.column(person, table=first), person, quoted=True)] +
                 [exp.alias_(c.copy(), n, quoted=True) for n, c in cols.items() if n != person])
        select = rows.sql("duckdb")
    return dict(source=tables[0].name, by=keys, count=count, sums=sums, means=means, select=select)


def _on_person(join: Any, person: str) -> bool:
    """Whether a join puts together the rows of one person: an inner or left join ON a.person =
    b.person, or USING (person)."""
    from sqlglot import exp

    if join.args.get("kind") in ("CROSS",) or join.args.get("side") in ("RIGHT", "FULL"):
        return False
    using = join.args.get("using")
    if using:
        return [u.name for u in using] == [person]
    on = join.args.get("on")
    return (isinstance(on, exp.EQ) and all(isinstance(x, exp.Column) and x.name == person for x in (on.this, on.expression))
            and on.this.table != on.expression.table)


def _bounded(e: Any, given: dict[str, Bound]) -> tuple[Bound, Any] | None:
    """A clamped column least(greatest(x, lo), hi) (either nesting) as (its Bound, the column), or a
    column with bounds given."""
    from sqlglot import exp

    if isinstance(e, exp.Column):
        return (given[e.name], e) if e.name in given else None
    lo = hi = None
    while isinstance(e, (exp.Least, exp.Greatest)) and len(e.expressions) == 1:
        other = e.expressions[0]
        if not isinstance(other, exp.Literal) or other.is_string:
            return None
        if isinstance(e, exp.Least):
            hi = float(other.this)
        else:
            lo = float(other.this)
        e = e.this
    if not isinstance(e, exp.Column) or lo is None or hi is None:
        return None
    return Bound.parse((e.name, lo, hi), "sum"), e
