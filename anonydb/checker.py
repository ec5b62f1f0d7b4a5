"""Check which privacy models a table meets, group by group.

One scan of the source builds the per-(group, sensitive value) counts; every model then runs
as SQL over those counts (see :mod:`anonydb.models`). The result is a :class:`Report`: the
overall verdict, the achieved parameter of each model, and the violating groups with their
sizes and sensitive-value distributions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable

from .engine import Engine, connect
from .errors import InputError
from .models import (AlphaKAnonymity, DeltaDisclosure, GroupContext, GroupViolation, KAnonymity, LDiversity, Model,
                     NTCloseness, TCloseness, Verdict)
from .schema import is_numeric_type, split_list, validate_roles
from .sources import open_source
from .sqlgen import ident


@dataclass
class Report:
    source: str
    qi: list[str]
    sensitive: str | None
    rows: int
    groups: int
    smallest_group: int
    largest_group: int
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(v.holds for v in self.verdicts)

    def __getitem__(self, model_prefix: str) -> Verdict:
        for v in self.verdicts:
            if v.model.startswith(model_prefix):
                return v
        raise KeyError(model_prefix)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "qi": self.qi, "sensitive": self.sensitive, "rows": self.rows,
            "groups": self.groups, "smallest_group": self.smallest_group, "largest_group": self.largest_group,
            "holds": self.holds, "verdicts": [v.to_dict() for v in self.verdicts],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def format(self, max_groups: int = 5) -> str:
        lines = [
            f"source: {self.source}  ({self.rows} rows)",
            f"quasi-identifiers: {', '.join(self.qi)}" + (f"   sensitive: {self.sensitive}" if self.sensitive else ""),
            f"groups: {self.groups}  (smallest {self.smallest_group}, largest {self.largest_group})",
            "",
        ]
        for v in self.verdicts:
            params = ", ".join(f"{k}={_fmt(x)}" for k, x in v.params.items() if x is not None and k != "variant")
            status = "holds" if v.holds else "FAILS"
            ach = ", ".join(f"{k} = {_fmt(x)}" for k, x in v.achieved.items())
            line = f"  {status:5}  {v.model} ({params}): achieved {ach}"
            if not v.holds:
                line += f"; {v.violating_groups} of {v.groups} groups ({v.violating_rows} rows) violate"
            lines.append(line)
            if v.note:
                lines.append(f"         note: {v.note}")
            for g in v.violations[:max_groups]:
                key = ", ".join(f"{k}={_fmt(x)}" for k, x in g.key.items())
                dist = ""
                if g.distribution is not None:
                    dist = "  {" + ", ".join(f"{_fmt(s)}: {c}" for s, c in g.distribution.items()) + "}"
                lines.append(f"         group [{key}] size {g.size} value {_fmt(g.value)}{dist}")
            if len(v.violations) > max_groups:
                lines.append(f"         ... {v.violating_groups - max_groups} more violating groups")
        lines.append("")
        lines.append("ALL MODELS HOLD" if self.holds else "SOME MODELS FAIL")
        return "\n".join(lines)

    __str__ = format


def _fmt(x: Any) -> str:
    if isinstance(x, Fraction):
        return str(x.numerator) if x.denominator == 1 else f"{x} (~{float(x):.6g})"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.6g}"
    if x is None:
        return "NULL"
    return str(x)


def build_models(*, k=None, l=None, l_variant="distinct", c=None, t=None, distance=None, n=None,
                 delta=None, alpha=None, supersets="subsets", reference="table") -> list[Model]:
    """The models named by the usual parameters (as in the CLI)."""
    models: list[Model] = []
    if alpha is not None:
        if k is None:
            raise InputError("(alpha,k)-anonymity needs k as well as alpha")
        models.append(AlphaKAnonymity(alpha, k))
    if k is not None:
        models.insert(0, KAnonymity(k))
    if l is not None:
        models.append(LDiversity(l, l_variant, c))
    elif c is not None:
        raise InputError("c is the constant of recursive (c,l)-diversity: give l as well")
    if n is not None:
        if t is None:
            raise InputError("(n,t)-closeness needs t as well as n")
        models.append(NTCloseness(n, t, distance, supersets))
    elif t is not None:
        models.append(TCloseness(t, distance, reference))
    elif distance is not None:
        raise InputError("distance applies to t-closeness: give t as well")
    if delta is not None:
        models.append(DeltaDisclosure(delta))
    return models


def check(source: str | Path, qi: str | Iterable[str], sensitive: str | None = None, *,
          models: list[Model] | None = None, engine: Engine | Any = None,
          hierarchies: dict[str, Any] | None = None, kinds: dict[str, str] | None = None,
          max_groups: int = 20, **params: Any) -> Report:
    """Check ``source`` (a table/view name or a CSV/Parquet path) against privacy models.

    Models come from ``models`` or from the parameters ``k``, ``l`` (+ ``l_variant``, ``c``),
    ``t`` (+ ``distance``), ``n`` (with ``t``: (n,t)-closeness), ``alpha`` (with ``k``),
    ``delta``. ``hierarchies`` maps an attribute to its :class:`~anonydb.hierarchy.Hierarchy`
    (the sensitive attribute's one selects hierarchical EMD). ``max_groups`` bounds the
    violating groups listed per model (None: all).
    """
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if models is None:
        models = build_models(**params)
    elif params:
        raise InputError(f"give models or parameters, not both (got {', '.join(params)})")
    if not models:
        raise InputError("no privacy model requested: give at least one of k, l, t, n, alpha, delta")
    if sensitive is None and any(m.needs_sensitive for m in models):
        names = ", ".join(m.name for m in models if m.needs_sensitive)
        raise InputError(f"{names} needs a sensitive attribute (--sensitive)")
    if max_groups is not None and (not isinstance(max_groups, int) or max_groups < 0):
        raise InputError(f"max_groups must be an integer >= 0 or None, got {max_groups!r}")
    hierarchies = dict(hierarchies or {})

    relation = open_source(eng, source)
    types = validate_roles(eng, relation, qi_cols, sensitive, kinds, label=str(source))
    for attr in hierarchies:
        if attr not in qi_cols and attr != sensitive:
            raise InputError(f"a hierarchy is given for {attr!r}, which is neither a quasi-identifier nor the sensitive attribute")
    total = eng.scalar(f"SELECT count(*) FROM {ident(relation)}")
    if not total:
        raise InputError(f"{source} is empty: there is nothing to check")
    limit = max_groups if max_groups is not None else total

    with eng.scratch("check") as s:
        sa = sensitive if any(m.needs_sensitive for m in models) else None
        coding = _group_coding(eng, s, relation, qi_cols)
        if coding is not None:
            keys = ["_adb_gid"]
            cells = s.table(eng.render("check_cells.sql.j2", qis=coding, keytype=_keytype(coding, eng.dialect),
                                       sensitive=sa, source=relation))
        else:  # too many distinct QI tuples for an integer key: group by the columns themselves
            keys = qi_cols
            cells = s.table(eng.render("check_cells_columns.sql.j2", keys=qi_cols, sensitive=sa, source=relation))
        if sa:
            groups = s.table(eng.render("check_groups.sql.j2", keys=keys, cells=cells))
            glob = s.table(eng.render("check_global.sql.j2", cells=cells))
            domain = eng.scalar(f"SELECT count(*) FROM {ident(glob)}")
        else:
            groups, glob, domain = cells, None, 0
            eng.execute(f"ALTER TABLE {ident(cells)} RENAME COLUMN _adb_cnt TO _adb_n")
        ngroups, smallest, largest = eng.fetch_rows(f"SELECT count(*), min(_adb_n), max(_adb_n) FROM {ident(groups)}")[1][0]
        ctx = GroupContext(
            engine=eng, keys=keys, cells=cells, groups=groups, glob=glob, total=total, domain=domain,
            sensitive=sa, sensitive_numeric=bool(sa) and is_numeric_type(types[sa]),
            sa_hierarchy=hierarchies.get(sensitive) if sensitive else None, scratch=s, qi_columns=qi_cols,
            coding=coding,
        )
        verdicts = [_evaluate(m, ctx, limit, coding) for m in models]
    return Report(source=str(source), qi=qi_cols, sensitive=sensitive, rows=total, groups=ngroups,
                  smallest_group=smallest, largest_group=largest, verdicts=verdicts)


#: the largest mixed-radix group key (HUGEINT); beyond it the QI columns themselves are the key
KEY_LIMIT = 2**127


@dataclass
class _Coded:
    column: str
    dict: str
    card: int
    mult: int


def _group_coding(eng: Engine, s: Any, relation: str, qi: list[str]) -> list[_Coded] | None:
    """Dense codes per QI column and their mixed-radix multipliers; None when the product of
    the cardinalities does not fit a 127-bit integer (then the key is the columns themselves)."""
    coded, mult = [], 1
    for col in reversed(qi):  # the first QI is the most significant digit: gid order = value order
        d = s.table(eng.render("check_dict.sql.j2", column=col, source=relation))
        card = eng.scalar(f"SELECT count(*) FROM {ident(d)}")
        coded.insert(0, _Coded(col, d, card, mult))
        mult *= max(card, 1)
    if mult >= KEY_LIMIT or (mult >= 2**63 and eng.dialect != "duckdb"):
        return None
    return coded


def _keytype(coding: list[_Coded], dialect: str) -> str:
    total = 1
    for c in coding:
        total *= max(c.card, 1)
    return "BIGINT" if total < 2**63 else "HUGEINT"


def _value(num: Any, den: Any) -> Any:
    if num is None or den is None:
        return None
    if isinstance(num, int) and isinstance(den, int) and den != 0:
        return Fraction(num, den)
    return float(num) / float(den)


def _evaluate(model: Model, ctx: GroupContext, limit: int, coding: list[_Coded] | None) -> Verdict:
    eng, s = ctx.engine, ctx.scratch
    model.prepare(ctx)
    verdicts = s.table(model.verdicts(ctx))
    summary = eng.fetch(eng.render("verdict_summary.sql.j2", verdicts=verdicts))[0]
    value = "CAST(_adb_num AS DOUBLE) / _adb_den"
    order = f"{value} {'DESC' if model.worst == 'max' else 'ASC'} NULLS FIRST, " + ", ".join(f"{ident(k)} NULLS LAST" for k in ctx.keys)
    worst_rows = eng.fetch(eng.render("verdict_top.sql.j2", verdicts=verdicts, keys=ctx.keys, order=order,
                                      only_failing=False, limit=1))
    worst = _value(worst_rows[0]["_adb_num"], worst_rows[0]["_adb_den"]) if worst_rows else None
    violations: list[GroupViolation] = []
    if summary["violating_groups"] and limit:
        top = s.table(eng.render("verdict_top.sql.j2", verdicts=verdicts, keys=ctx.keys, order=order,
                                 only_failing=True, limit=limit))
        shown = eng.render("check_decode.sql.j2", rel=top, qis=coding) if coding else f"SELECT * FROM {ident(top)}"
        dists: dict[Any, dict[Any, int]] = {}
        if ctx.sensitive is not None:
            for r in eng.fetch(eng.render("verdict_distribution.sql.j2", top=top, cells=ctx.cells, keys=ctx.keys)):
                dists.setdefault(tuple(r[k] for k in ctx.keys), {})[r["_adb_sa"]] = int(r["_adb_cnt"])
        for r in sorted(eng.fetch(shown), key=lambda r: r["_adb_rank"]):
            gk = tuple(r[k] for k in ctx.keys)
            dist = dists.get(gk, {}) if ctx.sensitive is not None else None
            if dist:
                dist = dict(sorted(dist.items(), key=lambda kv: (-kv[1], str(kv[0]))))
            violations.append(GroupViolation(key={q: r[q] for q in ctx.qi_columns}, size=int(r["_adb_n"]),
                                             value=_value(r["_adb_num"], r["_adb_den"]), distribution=dist))
    note = model.feasibility_note(ctx) or getattr(model, "note", "")
    achieved = model.achieved(worst, ctx) if worst is not None or model.worst == "max" else {}
    return Verdict(model=model.name, params=model.params, holds=summary["violating_groups"] == 0,
                   achieved=achieved, groups=summary["groups"], violating_groups=summary["violating_groups"],
                   violating_rows=int(summary["violating_rows"]), violations=violations, note=note)
