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

from .engines.base import Engine
from .engines import connect
from .errors import InputError
from .hierarchy import validate_all
from .models import (DISCLOSURE_VARIANTS, AlphaKAnonymity, BetaLikeness, ConfidenceBounding, DeltaDisclosure,
                     DisclosureRecursiveDiversity, EpsilonMAnonymity, GroupContext, GroupViolation, KAnonymity,
                     KEAnonymity, LDiversity, Model, MultiQidK, NTCloseness, PersonalizedPrivacy, TCloseness, Verdict, XYPrivacy)
from .models.named import check_named
from .schema import is_numeric_type, split_list, validate_person, validate_roles
from .sources import accepts_frames, open_source
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
    public: str | None = None  # delta-presence: the public table the groups (its rows' classes) come from
    person: str | None = None  # record owners: the column naming each record's person
    persons: int | None = None  # their number (group sizes and violating counts are then persons)

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
            "source": self.source, **({"public": self.public} if self.public is not None else {}),
            "qi": self.qi, "sensitive": self.sensitive, "rows": self.rows,
            **({"person": self.person, "persons": self.persons} if self.person is not None else {}),
            "groups": self.groups, "smallest_group": self.smallest_group, "largest_group": self.largest_group,
            "holds": self.holds, "verdicts": [v.to_dict() for v in self.verdicts],
        }

    def to_pandas(self) -> Any:
        """One row per model (its verdict, achieved parameter, violating groups and rows) with the
        violating groups listed in ``violations`` (each: its QI values, size and sensitive values)."""
        import pandas as pd

        rows = []
        for v in self.to_dict()["verdicts"]:
            rows.append({"model": v["model"], "holds": v["holds"], "achieved": v.get("achieved"),
                         "violating_groups": v.get("violating_groups"), "violating_rows": v.get("violating_rows"),
                         "violations": v.get("violations", [])})
        return pd.DataFrame(rows)

    def _repr_html_(self) -> str:
        """The check in a notebook: the source, its groups, and the report page's verdicts table."""
        from .htmlparts import esc, verdicts_table

        unit = "persons" if self.person is not None else "rows"
        head = (f"<p><b>{esc(self.source)}</b>: {self.rows} rows, {self.groups} groups of {self.smallest_group} to "
                f"{self.largest_group} {unit} over {esc(', '.join(self.qi))}; "
                f"<span class=\"{'ok' if self.holds else 'bad'}\">{'every model holds' if self.holds else 'a model fails'}"
                f"</span></p>")
        return f"<div class=\"anonydb-check\">{head}{verdicts_table(self.to_dict()['verdicts'])}</div>"

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def format(self, max_groups: int = 5) -> str:
        unit = "persons" if self.person is not None else "rows"
        lines = [
            f"source: {self.source}  ({self.rows} rows)" if self.public is None and self.person is None else
            f"source: {self.source}  ({self.rows} rows of {self.persons} persons, by {self.person})"
            if self.public is None else
            f"source: {self.source} against the public table {self.public}  ({self.rows} public rows)",
            f"quasi-identifiers: {', '.join(self.qi)}" + (f"   sensitive: {self.sensitive}" if self.sensitive else ""),
            f"groups: {self.groups}  (smallest {self.smallest_group}, largest {self.largest_group}"
            + (" persons)" if self.person is not None else ")"),
            "",
        ]
        for v in self.verdicts:
            params = ", ".join(f"{k}={_fmt(x)}" for k, x in v.params.items() if x is not None and k != "variant")
            status = "holds" if v.holds else "FAILS"
            ach = ", ".join(f"{k} = {_fmt(x)}" for k, x in v.achieved.items())
            line = f"  {status:5}  {v.model} ({params}): achieved {ach}"
            if not v.holds:
                line += f"; {v.violating_groups} of {v.groups} groups ({v.violating_rows} {unit}) violate"
            lines.append(line)
            if v.note:
                lines.append(f"         note: {v.note}")
            for g in v.violations[:max_groups]:
                key = ", ".join(f"{k}={_fmt(x)}" for k, x in g.key.items())
                dist = ""
                if g.distribution is not None:
                    dist = "  {" + ", ".join(f"{_fmt(s)}: {c}" for s, c in g.distribution.items()) + "}"
                size = f"{g.size} person{'s' if g.size != 1 else ''}" if self.person is not None else g.size
                lines.append(f"         group [{key}] size {size} value {_fmt(g.value)}{dist}")
            if len(v.violations) > max_groups:
                lines.append(f"         ... {v.violating_groups - max_groups} more violating groups")
        lines.append("")
        lines.append("ALL MODELS HOLD" if self.holds else "SOME MODELS FAIL")
        return "\n".join(lines)

    __str__ = format


def _fmt(x: Any) -> str:
    if isinstance(x, Fraction):
        # the exact fraction, then its decimal as every method's result prints it (mondrian._fmt)
        return str(x.numerator) if x.denominator == 1 else f"{x} ({float(x):.4f})"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.6g}"
    if x is None:
        return "NULL"
    return str(x)


def build_models(*, k=None, l=None, l_variant="distinct", c=None, t=None, distance=None, n=None,
                 delta=None, alpha=None, supersets="subsets", reference="table", bt=None,
                 bt_distance=None, beta=None, beta_variant="basic", allowed=None, protected=None, c2=None,
                 conf_bound=None, xy_k=None, ke=None, epsilon_m=None, multi_k=None, qid_sets=None,
                 guard=None, breach=None) -> list[Model]:
    """The models named by the usual parameters (as in the CLI). ``bt``: (B,t)-privacy as one
    (b, t) pair or a list of them (skyline (B,t)-privacy), ``bt_distance`` its D. ``l_variant``
    pd-recursive / npd-recursive take ``allowed`` (and ``protected``, ``c2``); ``conf_bound``
    ({value: h} or "HIV=0.1,*=0.5"): confidence bounding, or with ``xy_k`` (X,Y)-privacy; ``ke``
    and ``epsilon_m``: pairs (k, e) and (epsilon, m) or "a,b"; ``multi_k`` with ``qid_sets``; ``guard``
    (a column) with ``breach``: personalized privacy."""
    models: list[Model] = []
    if alpha is not None:
        if k is None:
            raise InputError("(alpha,k)-anonymity needs k as well as alpha")
        models.append(AlphaKAnonymity(alpha, k))
    if k is not None:
        models.insert(0, KAnonymity(k))
    if l is not None and l_variant in DISCLOSURE_VARIANTS:
        models.append(DisclosureRecursiveDiversity(l, c, allowed or (), protected if l_variant == "npd-recursive" else None,
                                                   c2 if l_variant == "npd-recursive" else None))
        if l_variant == "pd-recursive" and (protected or c2 is not None):
            raise InputError("protected values and c2 belong to npd-recursive l-diversity (l_variant npd-recursive)")
    elif allowed or protected or c2 is not None:
        raise InputError("allowed, protected and c2 apply to pd-/npd-recursive l-diversity: give l with that variant")
    elif l is not None:
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
    if beta is not None:
        models.append(BetaLikeness(beta, beta_variant or "basic"))
    elif beta_variant not in (None, "basic"):
        raise InputError("beta_variant applies to beta-likeness: give beta as well")
    if conf_bound is not None:
        models.append(XYPrivacy(xy_k, conf_bound) if xy_k is not None else ConfidenceBounding(conf_bound))
    elif xy_k is not None:
        raise InputError("(X,Y)-privacy needs its confidence bounds as well as k (conf_bound, --conf-bound)")
    if ke is not None:
        models.append(KEAnonymity(*_pair(ke, "ke", "k,e")))
    if epsilon_m is not None:
        models.append(EpsilonMAnonymity(*_pair(epsilon_m, "epsilon_m", "epsilon,m")))
    if multi_k is not None:
        if qid_sets is None:
            raise InputError("multiple-QID k-anonymity needs its QID sets (qid_sets, --qid-sets 'age,sex;zip')")
        models.append(MultiQidK(multi_k, qid_sets))
    elif qid_sets is not None:
        raise InputError("qid_sets apply to multiple-QID k-anonymity: give multi_k as well")
    if guard is not None or breach is not None:
        if guard is None or breach is None:
            raise InputError("personalized privacy needs both the guard column and the breach threshold")
        models.append(PersonalizedPrivacy(guard, breach))
    if bt is not None:
        from .models.bt_privacy import BTPrivacy

        pairs = [bt] if isinstance(bt, tuple) or (isinstance(bt, list) and len(bt) == 2
                                                   and not isinstance(bt[0], (list, tuple))) else list(bt)
        if not pairs:
            raise InputError("bt: give at least one (b, t) pair")
        for pair in pairs:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise InputError(f"bt: each entry must be a (b, t) pair, got {pair!r}")
            models.append(BTPrivacy(pair[0], pair[1], bt_distance))
    elif bt_distance is not None:
        raise InputError("bt_distance applies to (B,t)-privacy: give bt as well")
    return models


def _pair(value: Any, name: str, shape: str) -> tuple[Any, Any]:
    """Two numbers from a pair or an "a,b" string (integers stay integers)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(f"{name} must be two numbers {shape!r}, got {value!r}")
        try:
            value = [int(p) if p.lstrip("-").isdigit() else Fraction(p) for p in parts]
        except ValueError:
            raise InputError(f"{name} must be two numbers {shape!r}, got {value!r}") from None
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise InputError(f"{name} must be a pair {shape!r}, got {value!r}")
    return value[0], value[1]


@accepts_frames("name")
def check(source: str | Path, qi: str | Iterable[str], sensitive: str | None = None, *,
          models: list[Model] | None = None, engine: Engine | Any = None,
          hierarchies: dict[str, Any] | None = None, kinds: dict[str, str] | None = None,
          max_groups: int = 20, distribution_of: str | None = None, name: str | None = None,
          expected_groups: int | None = None, person: str | None = None, **params: Any) -> Report:
    """Check ``source`` (a table/view name or a CSV/Parquet path) against privacy models.

    Models come from ``models`` or from the parameters ``k``, ``l`` (+ ``l_variant``, ``c``),
    ``t`` (+ ``distance``), ``n`` (with ``t``: (n,t)-closeness), ``alpha`` (with ``k``),
    ``delta``. ``hierarchies`` maps an attribute to its :class:`~anonydb.hierarchy.Hierarchy`
    (the sensitive attribute's one selects hierarchical EMD). ``max_groups`` bounds the
    violating groups listed per model (None: all). ``distribution_of`` names the table whose
    sensitive-value distribution is "the whole table's" (t-closeness, delta-disclosure): by
    default the checked table itself; a release with suppressed rows is judged against its source.
    Every hierarchy must cover its column's values (and the sensitive one those of
    ``distribution_of``). ``name``: ``source`` as the user knows it, for messages and the report
    (a caller that opened the user's file as a scratch view passes the file). ``expected_groups``:
    how many QI groups the caller knows the table to have (a release's classes); at most one per
    COLUMN_KEY_SHARE rows, the groups are keyed by the columns themselves (the plan only: the
    report is the same). ``person``: the column naming each record's owner; every model then
    judges distinct persons (their definitions: :mod:`anonydb.models.base` and each model's module),
    and the report counts persons (``distribution_of`` must hold the column too). Models given by
    their parameters have what they name checked first (:func:`anonydb.models.named.check_named`:
    a bounded, allowed or protected value the sensitive attribute does not hold, in ``distribution_of``
    when given, is an InputError); ``models`` given as objects (a release's own verification, whose
    method checked them against its source) are not.
    """
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    named = models is None  # the models' parameters were given here: what they name is checked against the data
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
    if any(getattr(m, "needs_members", False) for m in models):
        raise InputError("(B,t)-privacy judges each tuple's exact QIs against its group: check a release with "
                         "anonydb.attacks.audit.audit_distribution (rows with their group and exact QIs)")
    hierarchies = dict(hierarchies or {})

    with eng.scratch("check") as s:
        relation = open_source(eng, source, scratch=s,
                               numeric=[c for c, k in (kinds or {}).items() if k == "numeric"])
        label = str(source) if name is None else str(name)
        types = validate_roles(eng, relation, qi_cols, sensitive, kinds, label=label)
        for attr in hierarchies:
            if attr not in qi_cols and attr != sensitive:
                raise InputError(f"a hierarchy is given for {attr!r}, which is neither a quasi-identifier "
                                 f"nor the sensitive attribute (quasi-identifiers: {', '.join(qi_cols)}"
                                 + (f"; sensitive: {sensitive})" if sensitive else ")"))
        # every given hierarchy covers its column, or the check stops
        validate_all(eng, relation, hierarchies, name=label)
        if sensitive in hierarchies and distribution_of is not None:
            hierarchies[sensitive].validate(eng, distribution_of, sensitive, name=str(distribution_of))
        if named:  # a value or column no row holds protects nothing: refused (a release's own check skips it)
            check_named(eng, relation, models, qi=qi_cols, sensitive=sensitive, person=person, label=label,
                        hierarchy=hierarchies.get(sensitive) if sensitive else None, covered=True,
                        values_of=distribution_of)
        sa = sensitive if any(m.needs_sensitive for m in models) else None
        rows = eng.scalar(f"SELECT count(*) FROM {ident(relation)}")
        if not rows:
            raise InputError(f"{label} is empty: there is nothing to check")
        ranges = False  # the groups carry the sensitive values' range (_adb_lo, _adb_hi)
        if person is not None:
            validate_person(eng, relation, person, qi_cols, sensitive, label=label)
            ctx = _person_context(eng, s, relation, qi_cols, sa, person, distribution_of, types, hierarchies,
                                  sensitive, models)
            ctx.guards = _guards(eng, s, relation, models, qi_cols, sa, label, person=person)
            ngroups, smallest, largest = eng.fetch_rows(f"SELECT count(*), min(_adb_n), max(_adb_n) "
                                                        f"FROM {ident(ctx.groups)}")[1][0]
            limit = max_groups if max_groups is not None else int(ngroups)
            verdicts = [evaluate_model(m, ctx, limit, None, source=relation) for m in models]
            return Report(source=label, qi=qi_cols, sensitive=sensitive, rows=int(rows), groups=ngroups,
                          smallest_group=smallest, largest_group=largest, verdicts=verdicts, person=person,
                          persons=ctx.total)
        few = expected_groups is not None and expected_groups * COLUMN_KEY_SHARE <= rows
        if rows <= COLUMN_KEY_ROWS or few or _key_too_wide(eng, relation, qi_cols):
            coding, dict_table = None, None
        else:
            coding, dict_table = _group_coding(eng, s, relation, qi_cols, types)
        glob, codes, packing, weights, expand = None, None, None, None, None
        if coding is not None and distribution_of is None:
            glob, codes = _sa_codes(eng, s, relation, sa, models)
            if codes is None:
                glob, packing = _packing(eng, s, relation, sa, models, rows, glob)
        if coding is not None:
            keys = ["_adb_gid"]
            cells = s.table(eng.render("check_cells.sql.j2", qis=coding, dict=dict_table, keytype=_keytype(coding),
                                       sensitive=sa, source=relation, bits=codes,
                                       packed=packing and packing.codes, sums=packing and packing.sums))
        else:  # a small table, or too many distinct QI tuples for an integer key: group by the columns
            keys = qi_cols
            cells = s.table(eng.render("check_cells_columns.sql.j2", keys=qi_cols, sensitive=sa, source=relation))
        guards = _guards(eng, s, relation, models, qi_cols, sa, label, coding=coding, dict_table=dict_table)
        if codes is not None:  # the groups came in one aggregation, without cells (k, distinct l)
            groups, cells = cells, None
        elif packing is not None:  # each group's counts came packed: judge each distinct vector once
            expand, keys = cells, [f"_adb_x{j}" for j in range(packing.sums)]
            xs = ", ".join(ident(k) for k in keys)
            weights = s.table(f"SELECT {xs}, min(_adb_n) AS _adb_n, count(*) AS _adb_g FROM {ident(expand)} GROUP BY {xs}")
            cells = s.table(eng.render("check_unpack.sql.j2", vectors=weights, codes=packing.codes, sums=packing.sums,
                                       mask=(1 << packing.bits) - 1))
            groups = s.table(eng.render("check_groups.sql.j2", keys=keys, cells=cells))
        elif sa:
            lean = not any(m.reads & {"mx", "clnc"} for m in models)
            ranges = is_numeric_type(types[sa]) and any("range" in m.reads for m in models)
            groups = s.table(eng.render("check_groups.sql.j2", keys=keys, cells=cells, lean=lean, ranges=ranges))
            if glob is None:
                glob = s.table(eng.render("check_global.sql.j2", cells=cells)) if distribution_of is None else \
                    _distribution(s, distribution_of, sa)
        else:
            groups, glob = cells, None
            eng.execute(f"ALTER TABLE {ident(cells)} RENAME COLUMN _adb_cnt TO _adb_n")
        glob_sql = (f"(SELECT count(*) FROM {ident(glob)}), "
                    f"(SELECT count(*) FROM {ident(glob)} WHERE _adb_sa IS NULL)") if glob else "0, 1"
        counted = (f"sum(_adb_g), min(_adb_n), max(_adb_n), sum(_adb_n * _adb_g), {glob_sql} FROM {ident(weights)}"
                   if weights else f"count(*), min(_adb_n), max(_adb_n), sum(_adb_n), {glob_sql} FROM {ident(groups)}")
        ngroups, smallest, largest, total, domain, sa_nulls = eng.fetch_rows(f"SELECT {counted}")[1][0]
        limit = max_groups if max_groups is not None else int(total)
        ctx = GroupContext(
            engine=eng, keys=keys, cells=cells, groups=groups, glob=glob, total=int(total), domain=domain,
            sensitive=sa, sensitive_numeric=bool(sa) and is_numeric_type(types[sa]), sa_nulls=bool(sa_nulls),
            sa_hierarchy=hierarchies.get(sensitive) if sensitive else None, scratch=s, qi_columns=qi_cols,
            coding=coding, keytype=_keytype(coding) if coding else "BIGINT", weights=weights, expand=expand,
            ranges=bool(sa) and ranges, guards=guards,
        )
        verdicts = [evaluate_model(m, ctx, limit, dict_table, source=relation) for m in models]
    return Report(source=label, qi=qi_cols, sensitive=sensitive, rows=int(total), groups=ngroups,
                  smallest_group=smallest, largest_group=largest, verdicts=verdicts)


#: the largest mixed-radix group key (HUGEINT); beyond it the QI columns themselves are the key
KEY_LIMIT = 2**127
#: up to this many rows a check keys the groups by the QI columns themselves: on a small table
#: the scan that builds the dictionary costs more than hashing the columns saves (Adult, 7 QIs:
#: k 1.9x faster, distinct and entropy l 1.3x, recursive (c,l) 1.06x, t-closeness the same).
COLUMN_KEY_ROWS = 100_000
#: a table known to hold at most one group per this many rows (a release: rows / classes) keys its
#: groups by the columns too: the dictionary's scan costs more than few cells save (Mondrian's 1M
#: release, 73,010 classes, 13 columns: 0.43 -> 0.17 s)
COLUMN_KEY_SHARE = 8


@dataclass
class _Coded:
    column: str
    card: int
    mult: int
    values: list[Any] | None = None  # the non-NULL values in code order, when inlined (Engine.inline_codes)


#: column types whose values a check may inline as literals (exact equality after a round trip)
_INLINE_TYPES = ("VARCHAR", "TEXT", "STRING", "BIGINT", "INTEGER", "SMALLINT", "TINYINT")


def _group_coding(eng: Engine, s: Any, relation: str, qi: list[str],
                  types: dict[str, str]) -> tuple[list[_Coded] | None, str | None]:
    """Dense codes of every QI column (one scan) and the mixed-radix multipliers; (None, table)
    when the product of the cardinalities does not fit the engine's key (:func:`_key_bits`; the key
    is then the columns themselves), (None, None) when the source is empty. A text or integer column with at
    most ``eng.inline_codes`` values carries them (one fetch, that many rows a column at most), so that
    check_cells.sql.j2 codes it without a join."""
    d = s.table(eng.render("check_dict.sql.j2", qis=qi, source=relation))
    cards = dict(eng.fetch_rows(f"SELECT _adb_col, count(*) FROM {ident(d)} GROUP BY _adb_col")[1])
    if not cards:
        return None, None
    inline = [i for i, q in enumerate(qi)
              if cards[i] <= eng.inline_codes and types[q].upper().startswith(_INLINE_TYPES)]
    values: dict[int, list[Any]] = {i: [] for i in inline}
    if inline:  # their non-NULL values in code order, one fetch; a row of column i holds its value in field i
        for r in eng.fetch_rows(f"SELECT _adb_col, {', '.join(ident(q) for q in qi)} FROM {ident(d)} "
                                f"WHERE _adb_col IN ({', '.join(map(str, inline))}) ORDER BY _adb_col, _adb_code")[1]:
            if r[1 + r[0]] is not None:
                values[r[0]].append(r[1 + r[0]])
    coded, mult = [], 1
    for i in reversed(range(len(qi))):  # the first QI is the most significant digit
        coded.insert(0, _Coded(qi[i], cards[i], mult, values.get(i)))
        mult *= cards[i]
    if mult.bit_length() > _key_bits(eng):
        return None, d
    return coded, d


def _guards(eng: Engine, s: Any, relation: str, models: list[Model], qi: list[str], sa: str | None, label: str, *,
            coding: list[Any] | None = None, dict_table: str | None = None, person: str | None = None) -> str | None:
    """Personalized privacy's guards(keys..., _adb_sa = a guarding node, _adb_cnt = records): each
    group's records per guarding node, when a model names a guard column (else None); the rows
    without a guard are not read (10M census rows, half of them guarded: 5.8 -> 2.9 s). Under record
    owners a guard belongs to a person: InputError when one person's records name different guards
    (or some none)."""
    guard = next((m.guard for m in models if getattr(m, "guard", None)), None)
    if guard is None:
        return None
    if guard not in dict(eng.columns(relation)) or guard in qi or guard in (sa, person):
        raise InputError(f"guard column {guard!r} must be a column of {label} other than the QIs, the "
                         f"sensitive attribute and the person column")
    if person is not None:
        bad = eng.fetch_rows(f"SELECT {ident(person)} FROM {ident(relation)} GROUP BY {ident(person)} "
                             f"HAVING count(DISTINCT {ident(guard)}) > 1 OR count({ident(guard)}) NOT IN (0, count(*)) "
                             f"ORDER BY 1 LIMIT 1")[1]
        if bad:
            raise InputError(f"person {bad[0][0]!r} (column {person!r}) names more than one guarding node in column "
                             f"{guard!r}: a guard belongs to a person, the same on all their records")
    if coding is not None:
        return s.table(eng.render("check_cells.sql.j2", qis=coding, dict=dict_table, keytype=_keytype(coding),
                                  sensitive=guard, source=relation, nonnull=True))
    return s.table(eng.render("check_cells_columns.sql.j2", keys=qi, sensitive=guard, source=relation, nonnull=True))


def _person_context(eng: Engine, s: Any, relation: str, qi: list[str], sa: str | None, person: str,
                    distribution_of: str | None, types: dict[str, str], hierarchies: dict[str, Any],
                    sensitive: str | None, models: list[Model]) -> GroupContext:
    """The groups of ``relation`` counted in record owners (:mod:`anonydb.models.base`), keyed by
    the QI columns: cells c_s(E), groups (n persons, r records, m facts, d, mx, sum c ln c) and the
    whole table's persons per value (of ``distribution_of`` when given)."""
    if any(getattr(m, "needs_members", False) for m in models):
        raise InputError("(B,t)-privacy judges each row's QI tuple, not persons: drop person, or check "
                         "another model")
    # one pass over the source: every count below is read from its facts
    fact = s.table(eng.render("check_person_facts.sql.j2", keys=qi, person=person, sensitive=sa, source=relation))
    cells = s.table(eng.render("check_person_cells.sql.j2", keys=qi, facts=fact)) if sa else None
    groups = s.table(eng.render("check_person_groups.sql.j2", keys=qi, cells=cells, facts=fact))
    total = eng.scalar(f"SELECT count(DISTINCT _adb_p) FROM {ident(fact)}")
    glob, domain, facts, glob_persons, sa_nulls = None, 0, 0, total, True
    if sa:
        glob = s.table(f"SELECT _adb_sa, count(DISTINCT _adb_p) AS _adb_cnt FROM {ident(fact)} GROUP BY 1"
                       if distribution_of is None else
                       f"SELECT {ident(sa)} AS _adb_sa, count(DISTINCT {ident(person)}) AS _adb_cnt "
                       f"FROM {ident(distribution_of)} GROUP BY 1")
        domain, facts, sa_nulls = eng.fetch_rows(f"SELECT count(*), sum(_adb_cnt), count(*) FILTER (WHERE _adb_sa IS NULL) "
                                                 f"FROM {ident(glob)}")[1][0]
        if distribution_of is not None:
            glob_persons = eng.scalar(f"SELECT count(DISTINCT {ident(person)}) FROM {ident(distribution_of)}")
    return GroupContext(
        engine=eng, keys=qi, cells=cells, groups=groups, glob=glob, total=int(total), domain=int(domain),
        sensitive=sa, sensitive_numeric=bool(sa) and is_numeric_type(types[sa]), sa_nulls=bool(sa_nulls),
        sa_hierarchy=hierarchies.get(sensitive) if sensitive else None, scratch=s, qi_columns=qi,
        persons=True, facts=int(facts or 0), glob_persons=int(glob_persons), person_facts=fact)


def _distribution(s: Any, relation: str, sa: str) -> str:
    """A table of ``relation``'s sensitive-value distribution (_adb_sa, _adb_cnt): Q, the whole table's."""
    return s.table(f"SELECT {ident(sa)} AS _adb_sa, count(*) AS _adb_cnt FROM {ident(relation)} GROUP BY 1")


def _sa_codes(eng: Engine, s: Any, relation: str, sa: str | None,
              models: list[Model]) -> tuple[str | None, str | None]:
    """(the whole table's distribution, the sensitive values' codes 0 ..) when the groups can be
    counted with their distinct values as bits (:attr:`Engine.group_bits`: every model reads only n
    and d, and the attribute has few enough values); the distribution alone when it was counted
    to find the attribute has too many values; else (None, None)."""
    if not sa or not eng.group_bits or any(m.reads - {"n", "d"} for m in models):
        return None, None
    glob = _distribution(s, relation, sa)
    if eng.scalar(f"SELECT count(*) FROM {ident(glob)}") > eng.group_bits:
        return glob, None
    codes = s.table(f"SELECT _adb_sa, CAST(row_number() OVER (ORDER BY _adb_sa NULLS LAST) - 1 AS INTEGER) AS _adb_code "
                    f"FROM {ident(glob)}")
    return glob, codes


#: the bits of a packed sum (a HUGEINT's, less its sign)
PACKED_WIDTH = 127


@dataclass
class _Packing:
    codes: str  # check_packed_codes.sql.j2
    sums: int
    bits: int


def _packing(eng: Engine, s: Any, relation: str, sa: str | None, models: list[Model], rows: int,
             glob: str | None) -> tuple[str | None, _Packing | None]:
    """(the whole table's distribution, how to pack each group's counts) when every model judges a
    group by its distribution alone and the counts fit :attr:`Engine.packed_sums` sums: each count
    is at most ``rows``, so takes its bit length, PACKED_WIDTH // bits counts a sum. The raw 10M census
    (6.7M groups, 14 values in 3 sums) holds 113k distinct vectors; the verdicts are computed on
    those, through the same model code, and weighted by how many groups have each."""
    if not sa or not eng.packed_sums or not all(m.by_distribution for m in models):
        return glob, None
    if glob is None:
        glob = _distribution(s, relation, sa)
    bits = int(rows).bit_length()
    per = PACKED_WIDTH // bits
    sums = -(-eng.scalar(f"SELECT count(*) FROM {ident(glob)}") // per)
    if sums > eng.packed_sums:
        return glob, None
    codes = s.table(eng.render("check_packed_codes.sql.j2", glob=glob, bits=bits, per=per, sums=sums))
    return glob, _Packing(codes, sums, bits)


def _key_bits(eng: Engine) -> int:
    """The bits a mixed-radix group key may use: a HUGEINT on DuckDB (KEY_LIMIT), a BIGINT elsewhere."""
    return KEY_LIMIT.bit_length() - 1 if eng.dialect == "duckdb" else 63


def _key_too_wide(eng: Engine, relation: str, qi: list[str]) -> bool:
    """Whether the engine's distinct-value estimates put the mixed-radix key 2^7 past what its
    integers hold (2^63 off DuckDB, 2^127 there): the dictionary scan would only find the key too
    wide (a Mondrian release verified with its _lo/_hi columns on PostgreSQL, 10^6 rows: an 82-bit
    estimate, 2.6 s of dictionary). An estimate that is off only costs time, never the result."""
    est = eng.distinct_estimates(relation, qi)
    return est is not None and sum(math.log2(max(e, 1.0)) for e in est) >= _key_bits(eng) + 7


def _keytype(coding: list[_Coded]) -> str:
    total = 1
    for c in coding:
        total *= c.card
    return "BIGINT" if total < 2**63 else "HUGEINT"


def _value(num: Any, den: Any, integral: bool = False) -> Any:
    """num / den: exact for integers (and, ``integral``, for whole doubles below 2^53, which a
    double holds exactly), else a float."""
    if num is None or den is None:
        return None
    if integral and all(isinstance(x, float) and x.is_integer() and abs(x) < 2**53 for x in (num, den)) and den:
        num, den = int(num), int(den)
    if isinstance(num, int) and isinstance(den, int) and den != 0:
        return Fraction(num, den)
    return float(num) / float(den)


def evaluate_model(model: Model, ctx: GroupContext, limit: int, dict_table: str | None,
                   source: str | None = None) -> Verdict:
    """One model's verdict on the context's groups, with its worst ``limit`` violating groups and
    their distributions (read from the cells, or, where the check built none, from ``source``:
    its rows of those groups' QI values)."""
    eng, s = ctx.engine, ctx.scratch
    model.prepare(ctx)
    rendered = model.judge(ctx)
    verdicts = rendered.sql
    if model.materialize:  # expensive plans (EMDs, windows) run once, then are read twice
        verdicts = f"SELECT * FROM {ident(s.table(rendered))}"  # logged under the model's template
    summary = eng.fetch(eng.render("verdict_summary.sql.j2", verdicts=verdicts, worst=model.worst,
                                   weights=ctx.weights, keys=ctx.keys))[0]
    worst = None if summary["valueless"] else _value(summary["worst_num"], summary["worst_den"],
                                                     model.integral_doubles)
    violations: list[GroupViolation] = []
    if summary["violating_groups"] and limit:
        value = "CAST(_adb_num AS DOUBLE) / _adb_den"
        gkeys = ["_adb_gid"] if ctx.expand else ctx.keys  # a vector's groups, each listed by its own key
        order = (f"{value} {'DESC' if model.worst == 'max' else 'ASC'} NULLS FIRST, "
                 + ", ".join(f"{ident(k)} NULLS LAST" for k in gkeys))
        decode = eng.render("check_decode.sql.j2", rel="top", qis=ctx.coding, dict=dict_table).sql if ctx.coding else ""
        rows = eng.fetch(eng.render("verdict_violators.sql.j2", verdicts=verdicts, keys=ctx.keys, order=order,
                                    limit=limit, coding=bool(ctx.coding), decode=decode, cells=ctx.cells,
                                    with_sa=ctx.sensitive is not None, source=source, qis=ctx.qi_columns,
                                    sensitive=ctx.sensitive, expand=ctx.expand))
        by_key: dict[Any, GroupViolation] = {}
        for r in rows:
            gk = tuple(r[k] for k in gkeys)
            g = by_key.get(gk)
            if g is None:
                g = by_key[gk] = GroupViolation(
                    key={q: r[q] for q in ctx.qi_columns}, size=int(r["_adb_n"]),
                    value=_value(r["_adb_num"], r["_adb_den"], model.integral_doubles), distribution={} if ctx.sensitive else None)
            if ctx.sensitive is not None and r.get("_adb_cnt") is not None:
                g.distribution[r["_adb_sa"]] = int(r["_adb_cnt"])
        violations = sorted(by_key.values(), key=_worst_first(model.worst))
        for g in violations:
            if g.distribution:
                g.distribution = dict(sorted(g.distribution.items(), key=lambda kv: (-kv[1], str(kv[0]))))
    note = model.feasibility_note(ctx) or model.note
    achieved = model.achieved(worst, ctx) if worst is not None or model.worst == "max" else {}
    return Verdict(model=model.name, params=model.params, holds=summary["violating_groups"] == 0,
                   achieved=achieved, groups=summary["groups"], violating_groups=summary["violating_groups"],
                   violating_rows=int(summary["violating_rows"]), violations=violations, note=note)


def _worst_first(worst: str):
    """Sort key: valueless groups first, then by value (descending for 'max'), then by QI values
    (NULL last), so the order never depends on the order the rows arrived in."""
    def key(g: GroupViolation):
        qis = [(k is None, k) for k in g.key.values()]
        if g.value is None:
            return (0, 0.0, qis)
        x = float(g.value)
        return (1, -x if worst == "max" else x, qis)
    return key
