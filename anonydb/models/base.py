"""What every privacy model shares: the group-statistics context and the verdict objects.

A model is given a :class:`GroupContext` (the relations of per-group sensitive-value counts,
group statistics and the whole table's distribution, already materialized by the caller) and
renders one SQL statement that yields, per group, ``(keys..., _adb_n, _adb_num, _adb_den,
_adb_ok)``: size, the group's achieved value as the exact fraction num/den (a float in num
with den = 1 where the value is transcendental), and the verdict. The same statement serves a
finished table (keys = the released QI columns) and an anonymizer judging candidate groups
(keys = partition id and side of a cut, bucket id, lattice node tuple).

Record owners [survey §2.1, Example 2.4; spec-presence-survey §3.2: MultiR k-anonymity,
(X,Y)-anonymity with Y the person key]: with a person column, a group's size counts distinct
persons, not rows. The attacker knows the victim's QI values and that the victim is in the
table; several records of one person must not make a group look larger, nor one person's
repeated value look like many people's. Every model is then judged on two exact counts:

* n(E) = persons with a record in E; c_s(E) = persons in E with a record whose value is s;
* m(E) = sum_s c_s(E), the distinct (person, value) facts of E (m = n with one record a person).

Confidence-type models (k, distinct and probabilistic l, (alpha,k), delta-disclosure) read the
belief about one person, c_s / n (:attr:`Model.measure` "persons"). Distribution-type models
(entropy and recursive l, t-closeness, (n,t)) need a distribution that sums to one: the facts',
c_s / m, each person counting once per value they hold, however many records repeat it
(``measure = "facts"``; :meth:`Model.judge` gives them a context whose group size is m and
reports the persons). With one record per person both are today's row-level definitions.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..engines.base import Engine
from ..errors import InputError
from ..sqlgen import Rendered, ident


@dataclass
class GroupContext:
    """The materialized relations a model reads.

    cells(keys..., _adb_sa, _adb_cnt), groups(keys..., _adb_n, _adb_d, _adb_mx, _adb_clnc),
    glob(_adb_sa, _adb_cnt). ``total`` = |T|, ``domain`` = number of distinct sensitive values in T.
    """

    engine: Engine
    keys: list[str]
    cells: str | None  # None: not built (only models that do not read them, Model.reads)
    groups: str
    glob: str | None
    total: int
    domain: int
    sensitive: str | None = None
    sensitive_numeric: bool = False
    sa_nulls: bool = True  # False: glob has no NULL sensitive value (joins with it need not be NULL-safe)
    sa_hierarchy: Any = None  # anonydb.hierarchy.Hierarchy for the sensitive attribute
    scratch: Any = None  # anonydb.engines.base.Scratch for intermediate tables
    qi_columns: list[str] = field(default_factory=list)  # the QI columns the keys stand for
    #: keys that tell apart tables judged side by side in one statement (a full-domain batch's node
    #: number, _adb_ln): every group of a superset shares them, so (n,t)-closeness's natural
    #: supersets are the subsets of the other keys, each within its own table
    scope: list[str] = field(default_factory=list)
    #: with keys = ["_adb_gid"]: per QI column (column, dict table, card, mult) of the mixed-radix key
    coding: list[Any] | None = None
    keytype: str = "BIGINT"
    #: (n,t)-closeness with caller-named supersets (Mondrian's Parent(P)): ancestors(_adb_pid,
    #: _adb_ref) maps a group's partition to its references, whose distributions are
    #: references(_adb_set = 0, _adb_sup = ref, _adb_sa, _adb_cnt)
    ancestors: str | None = None
    references: str | None = None
    #: (B,t)-privacy: members(keys..., _adb_qid, _adb_m), how many of a group's rows have each QI tuple
    members: str | None = None
    #: keys standing for count vectors (a check judging each distinct distribution once):
    #: weights(keys..., _adb_n, _adb_g) says how many groups (_adb_g) of size _adb_n have each, and
    #: expand(_adb_gid, keys...) which vector each group has
    weights: str | None = None
    expand: str | None = None
    #: record owners: groups' _adb_n counts distinct persons and _adb_m their distinct (person,
    #: value) facts; cells' _adb_cnt and glob's count persons holding the value; ``total`` is the
    #: persons judged, ``facts`` the whole table's facts (sum of glob), ``glob_persons`` the persons
    #: of the table glob was counted on (p(T,s) = glob count / glob_persons)
    persons: bool = False
    facts: int = 0
    glob_persons: int | None = None
    #: record owners: the facts (keys..., _adb_p, _adb_sa, _adb_c) the person counts were read
    #: from, one row a group, person and value (_adb_c their records)
    person_facts: str | None = None
    #: the groups sized by their facts (keys..., _adb_n = _adb_m, _adb_d, _adb_mx, _adb_clnc) when the
    #: caller names them (a CTE of one statement); else :meth:`by_facts` makes a scratch table
    fgroups: str | None = None
    #: the groups carry _adb_lo and _adb_hi, the smallest and largest sensitive value (a numeric
    #: attribute's range, for a model that reads "range")
    ranges: bool = False
    #: personalized privacy: guards(keys..., _adb_sa = a record's guarding node, _adb_cnt), the
    #: groups' records counted per guarding node, the rows without one left out (built when a
    #: model names a guard column; under record owners each person's guard is one node)
    guards: str | None = None

    def by_facts(self) -> "GroupContext":
        """The context a distribution-type model reads under record owners: groups sized by their
        facts m (a scratch table, made once), the total by the table's facts."""
        made = self.__dict__.get("_facts_ctx")
        if made is None and self.fgroups:
            made = dataclasses.replace(self, groups=self.fgroups, total=self.facts, persons=False, fgroups=None)
        if made is None:
            rel = self.scratch.table(f"SELECT {', '.join(ident(k) for k in self.keys)}, _adb_m AS _adb_n, _adb_d, "
                                     f"_adb_mx, _adb_clnc FROM {ident(self.groups)}")
            made = dataclasses.replace(self, groups=rel, total=self.facts, persons=False)
            self.__dict__["_facts_ctx"] = made
        return made


@dataclass
class GroupViolation:
    key: dict[str, Any]
    size: int
    value: Any
    distribution: dict[Any, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {"key": self.key, "size": self.size, "value": _jsonable(self.value)}
        if self.distribution is not None:
            d["distribution"] = {str(k): v for k, v in self.distribution.items()}
        return d


@dataclass
class Verdict:
    """The outcome of one model on one table: overall verdict, achieved parameters, violators."""

    model: str
    params: dict[str, Any]
    holds: bool
    achieved: dict[str, Any]
    groups: int
    violating_groups: int
    violating_rows: int
    violations: list[GroupViolation] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "params": {k: _jsonable(v) for k, v in self.params.items()},
            "holds": self.holds,
            "achieved": {k: _jsonable(v) for k, v in self.achieved.items()},
            "groups": self.groups,
            "violating_groups": self.violating_groups,
            "violating_rows": self.violating_rows,
            "violations": [v.to_dict() for v in self.violations],
            "note": self.note,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, Fraction):
        return float(v) if v.denominator != 1 else int(v)
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return v


def as_fraction(value: Any, name: str) -> Fraction:
    """A parameter as an exact fraction (0.15 -> 3/20: the decimal the user wrote)."""
    if isinstance(value, bool):
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        f = Fraction(str(value)) if isinstance(value, float) else Fraction(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}") from None
    return f


def check_count(value: Any, name: str) -> int:
    """A record count parameter (k, n): an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{name} must be an integer >= 1, got {value!r}")
    return value


class Model(abc.ABC):
    """A privacy model: one module each, used by the checks and by every anonymizer."""

    name: str = ""
    #: the command line's options that ask for this model (the docs' model registry lists them)
    flags: tuple[str, ...] = ()
    needs_sensitive: bool = True
    #: the worst group is the one with the smallest value ("min": k, l) or the largest ("max": t)
    worst: str = "min"
    #: preserved by further generalization (sound to prune a lattice with)
    monotonic: bool = True
    #: with suppression of failing groups, the suppressed rows never grow under generalization
    #: (merging a passing and a failing group passes): true for k and distinct l only
    suppression_monotonic: bool = False
    #: a remark for the report (set by prepare), e.g. how a default was resolved
    note: str = ""
    #: the verdict plan is expensive (EMDs, windows): materialize it once rather than inline it twice
    materialize: bool = False
    #: the plan's _adb_num and _adb_den are whole numbers carried as doubles (so that one of them can
    #: be +inf): read back as an exact fraction while they fit a double's 53-bit mantissa
    integral_doubles: bool = False
    #: what the verdict plan reads of the context: the groups' statistics (n, d, mx, clnc) and the
    #: cells; a check whose models read only n and d may skip the cells (Engine.group_bits)
    reads: frozenset[str] = frozenset({"n", "d", "mx", "clnc", "cells"})
    #: a group's verdict depends only on its sensitive-value counts and the whole table's (not on
    #: its QI values nor on other groups): a check may judge each distinct count vector once
    by_distribution: bool = False
    #: under record owners (GroupContext.persons), what the model's group size and distribution
    #: count: "persons" (c_s / n, a belief about one person) or "facts" (c_s / m, a distribution)
    measure: str = "persons"
    #: judged on the anonymizers' candidate groups (Mondrian's cut halves, full-domain's lattice
    #: nodes). False for a model that is not monotone under merging groups, or whose verdict on a
    #: group depends on other groups: the anonymizers search with the other models and the
    #: release's fail-closed verification judges this one (see :func:`candidate_models`)
    candidate: bool = True

    @property
    @abc.abstractmethod
    def params(self) -> dict[str, Any]:
        """The requested parameters, for reports."""

    @abc.abstractmethod
    def verdicts(self, ctx: GroupContext) -> Rendered:
        """One statement: per group (keys..., _adb_n, _adb_num, _adb_den, _adb_ok)."""

    def judge(self, ctx: GroupContext) -> Rendered:
        """:meth:`verdicts` under the context's counting: rows, or record owners (a
        distribution-type model reads the facts, and its verdicts report each group's persons)."""
        if not ctx.persons or self.measure == "persons":
            return self.verdicts(ctx)
        inner = self.verdicts(ctx.by_facts())
        return ctx.engine.render("model_persons.sql.j2", inner=inner.sql, keys=ctx.keys, groups=ctx.groups)

    @abc.abstractmethod
    def achieved(self, worst_value: Any, ctx: GroupContext) -> dict[str, Any]:
        """The table-level achieved parameter(s) given the worst group's value."""

    def feasibility_note(self, ctx: GroupContext) -> str:
        """Why no release of this table can meet the model, or ''."""
        return ""

    def min_rows(self) -> int:
        """The fewest rows a group can have and still satisfy the model: a necessary condition (1
        where there is none). Mondrian judges no cut of a partition of fewer than twice this many
        rows, since one of its halves would fail."""
        return 1

    def prepare(self, ctx: GroupContext) -> None:
        """Materialize what the model needs beyond the context (hierarchy tables ...)."""

    def named(self) -> list[Any]:
        """The values and columns of the data the model's parameters name
        (:class:`anonydb.models.named.Named`), each checked against the source before a method runs
        (:func:`anonydb.models.named.check_named`); none by default."""
        return []


def candidate_models(models: list[Model], method: str) -> list[Model]:
    """The models an anonymizer judges its candidate groups by (:attr:`Model.candidate`); the
    others are left to the release's verification, which refuses a release they reject. At least
    one must remain: a search with nothing to judge by would cut to single records."""
    judged = [m for m in models if m.candidate]
    if not judged:
        names = ", ".join(m.name for m in models)
        raise InputError(f"{names} is judged on the finished release only, not on {method}'s candidate groups: "
                         f"give a model {method} can search by as well (e.g. k)")
    return judged
