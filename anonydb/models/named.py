"""What the models name in the data, checked against the source before any method runs.

Some parameters name a value or a column rather than a number: confidence bounding's and (X,Y)-
privacy's bounded values (``conf_bound``, "HIV=0.1"), pd-/npd-recursive l-diversity's ``allowed``
and ``protected`` values, personalized privacy's ``guard`` column (whose values are guarding
nodes), multiple-QID k-anonymity's ``qid_sets``. A name the data does not hold protects nothing
and says so nowhere: ``conf_bound="Slaes=0.1"`` (Sales misspelled) bounds no group, and the
release would be reported verified with conf(Slaes) = 0. So every such name must be one the source
holds, or the run stops in one line naming the option and the missing value (fail closed):

* a bounded, allowed or protected value: a value of the sensitive attribute, matched by its text
  form as the models match it (``CAST(value AS VARCHAR)``: 1, 2.5, HIV); "*" (every other value)
  names none;
* a guard column: a column of the source other than the QIs, the sensitive attribute and the
  person column; each of its non-NULL values a node below the root of the sensitive attribute's
  hierarchy (with one), else a value of the attribute (as :meth:`PersonalizedPrivacy.prepare`
  requires on the release);
* a QID set's column: one of the quasi-identifiers.

Each model says what it names (:meth:`anonydb.models.base.Model.named`); :func:`check_named` judges
all of them in one SQL query over the source (the columns from the catalog). The sensitive
attribute's hierarchy must cover its values too (every value a leaf, as ARX requires: the
hierarchy's own :meth:`~anonydb.hierarchy.Hierarchy.validate`), checked here so that a method
refuses it up front, naming the user's table and column. A hierarchy may hold leaves the data does
not (a domain's full taxonomy): those are no error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import InputError, option
from ..sqlgen import ident, literal

#: how many of the attribute's values an error lists, to spot the typo by
SHOWN = 5


@dataclass(frozen=True)
class Named:
    """What one parameter of a model names: ``values`` of the sensitive attribute, a ``guard``
    column (its values guarding nodes) or ``qis`` (columns that must be quasi-identifiers)."""

    option: str  # the parameter, as errors.option spells it (conf_bound, allowed, guard, qid_sets)
    values: tuple[str, ...] = ()
    guard: str | None = None
    qis: tuple[str, ...] = ()


def not_a_node(value: Any, guard: str, sensitive: str | None, hierarchical: bool) -> str:
    """What is wrong with a guarding node that names no node below the root (InputError's text)."""
    where = (f"a node below the root of {sensitive!r}'s hierarchy" if hierarchical else
             f"a value of {sensitive!r} (give its hierarchy to name inner nodes)")
    return f"guarding node {value!r} (column {guard!r}) is not {where}"


def check_named(eng: Any, relation: str, models: Iterable[Any], *, qi: list[str], sensitive: str | None,
                person: str | None = None, hierarchy: Any = None, label: str | None = None,
                values_of: str | None = None, covered: bool = False) -> None:
    """InputError, in one line, for the first name of ``models`` that ``relation`` does not hold
    (see the module docstring). ``hierarchy``: the sensitive attribute's, validated against its
    values unless the caller did (``covered``). ``label``: the source as the user named it.
    ``values_of``: the table whose sensitive values count (a release judged against its source)."""
    label = str(relation) if label is None else str(label)
    named = [n for m in models for n in m.named()]
    if hierarchy is not None and sensitive and not covered:
        hierarchy.validate(eng, relation, sensitive, name=label)
    if not named:
        return
    cols = [c for c, _ in eng.columns(relation)]
    for n in named:
        for c in n.qis:
            if c not in qi:
                raise InputError(f"{option(n.option)}: {c!r} is not a quasi-identifier ({', '.join(qi)})")
        g = n.guard
        if g is not None and g not in cols:
            raise InputError(f"{option(n.option)}: guard column {g!r} not found in {label}; its columns are: "
                             f"{', '.join(cols)}")
        if g is not None and (g in qi or g in (sensitive, person)):
            raise InputError(f"{option(n.option)}: guard column {g!r} must be a column of {label} other than the QIs, "
                             f"the sensitive attribute and the person column")
    asks = [n for n in named if n.values or n.guard]
    if not asks:
        return
    if not sensitive:
        raise InputError(f"{option(asks[0].option)} names values of the sensitive attribute: give it (--sensitive)")
    sa = f"CAST({ident(sensitive)} AS VARCHAR)"
    values_of = relation if values_of is None else values_of
    present = f"SELECT {sa} FROM {ident(values_of)} WHERE {ident(sensitive)} IS NOT NULL"
    nodes = present if hierarchy is None else hierarchy.nodes_sql(eng, values_of, sensitive)
    values, parts, what = [], [], []  # (position, text) of each value named; the guards' parts; whose each is
    for n in asks:
        for v in n.values:
            values.append(f"({len(what)}, {literal(v)})")
            what.append(n)
        if n.guard is not None:
            gv = f"CAST({ident(n.guard)} AS VARCHAR)"
            parts.append(f"SELECT {len(what)} AS _adb_i, min({gv}) AS _adb_v FROM {ident(relation)} "
                         f"WHERE {ident(n.guard)} IS NOT NULL AND {gv} NOT IN ({nodes}) HAVING count(*) > 0")
            what.append(n)
    if values:
        parts.insert(0, f"SELECT _adb_i, _adb_v FROM (VALUES {', '.join(values)}) AS _adb_q(_adb_i, _adb_v) "
                        f"WHERE _adb_v NOT IN ({present})")
    rows = eng.fetch_rows(f"SELECT _adb_i, _adb_v FROM ({' UNION ALL '.join(parts)}) AS _adb_n "
                          f"ORDER BY _adb_i LIMIT 1")[1]
    if not rows:
        return
    n, missing = what[int(rows[0][0])], rows[0][1]
    if n.guard is not None:
        raise InputError(f"{option(n.option)}: {not_a_node(missing, n.guard, sensitive, hierarchy is not None)}")
    some = [r[0] for r in eng.fetch_rows(f"SELECT DISTINCT {sa} FROM {ident(values_of)} WHERE {ident(sensitive)} "
                                         f"IS NOT NULL ORDER BY 1 LIMIT {SHOWN + 1}")[1]]
    listed = ", ".join(repr(v) for v in some[:SHOWN]) + (", ..." if len(some) > SHOWN else "")
    raise InputError(f"{option(n.option)}: the sensitive column {sensitive} holds no value {missing!r} "
                     f"(its values: {listed})")
