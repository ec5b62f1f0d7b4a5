"""What a release publishes, in what order, and how it reaches its target: the fail-closed rules
every method shares.

* **Every column has a role, or it does not leave.** A release carries its quasi-identifiers, its
  sensitive attribute and the columns the user named to keep (``keep``, ``--keep``, role
  ``insensitive`` in a spec); identifiers and every unlisted column are dropped and listed
  (:func:`resolve_columns`). A declared identifier that repeats means several records per person,
  where k would count rows, not people: refused.
* **Verified over what is published.** The models are checked on the staged release grouped by
  every published non-sensitive column (the QIs' labels and ranges, the class id, the kept
  columns), so a kept column that splits a class fails the release and is named: an InputError
  (:func:`verify_published`).
* **Unpredictable row order.** By default the rows are ordered by a keyed MD5 of each row id with a
  fresh 128-bit secret from the OS (:func:`row_order`), registered with the engine so that the SQL
  log and errors show ``<secret>``; it is never stored. An explicit seed gives a reproducible
  order, which anyone who knows the seed can recompute (the report says so).
* **Nothing lost.** Staging tables are named ``__anonydb_stage_<pid>_<hex>`` (:func:`stage_name`),
  swapped into place in one transaction (:class:`Publication`); a run first drops the stale ones of runs
  that were killed (:func:`sweep`). A target is never a source, an existing table or file is
  replaced only when the user said so, and files are written beside their target and renamed
  (:func:`export`), the CLI's ``--export`` inside the commit of its table, just before it
  commits (:func:`exporting`): a kill leaves the file new beside the old table at worst.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import events
from ..engines.base import Engine
from ..errors import AnonyDBError, InputError, option
from ..pseudonyms import load_key, pseudonym_sql
from ..risk.assess import GROUP_COLUMNS, Limits, exceeded
from ..schema import PERSON_COLUMN, RESERVED_PREFIX, split_list, validate_person, validate_roles, varying_qi
from ..sqlgen import ident, literal

#: every staging table or view starts with this, then the writing process's id
STAGE_PREFIX = "__anonydb_stage_"
#: staging names of releases before this module (``<out>__anonydb_staging``), swept as well
_LEGACY_STAGE = "__anonydb_staging"
#: temporary files beside an export target: ``.<name>.anonydb-<pid>-<hex>.tmp``
_TMP_FILE = re.compile(r"^\..+\.anonydb-(\d+)-[0-9a-f]+\.tmp(\.old)?$")


# --- roles -----------------------------------------------------------------------------------------
@dataclass
class Columns:
    """The source's columns by what happens to them in the release."""

    published: list[str]  # QIs, the sensitive attribute and the kept columns, in source order
    keep: list[str]  # published unchanged at the user's request
    dropped: list[str] = field(default_factory=list)  # identifiers and columns without a role
    person: str | None = None  # the person column (record owners): never published as it is
    pseudonyms: list[str] = field(default_factory=list)  # published as keyed pseudonyms (HMAC-SHA256)
    #: dropped columns without a role that look like a person key: (column, values, rows)
    person_like: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass
class Roles:
    """The roles of a source's columns, resolved once where a release or check begins."""

    qi: list[str]
    sensitive: str | None
    types: dict[str, str]  # column -> engine type, of every column of the source
    columns: Columns

    @property
    def published(self) -> list[str]:
        return self.columns.published

    @property
    def keep(self) -> list[str]:
        return self.columns.keep

    @property
    def dropped(self) -> list[str]:
        return self.columns.dropped


def resolve_roles(eng: Engine, relation: str, qi: list[str], sensitive: str | None, identifiers: list[str] = (),
                  keep: Iterable[str] | None = None, kinds: dict[str, str] | None = None, label: str | None = None,
                  person: str | None = None, pseudonymize: Iterable[str] | None = None) -> Roles:
    """Check the QIs, sensitive attribute, person column and declared kinds against ``relation``
    (:func:`anonydb.schema.validate_roles`, :func:`anonydb.schema.validate_person`) and decide what
    is published (:func:`resolve_columns`)."""
    name = str(relation) if label is None else label
    types = validate_roles(eng, relation, qi, sensitive, kinds, label=name)
    if person is not None:
        validate_person(eng, relation, person, qi, sensitive, label=name)
    return Roles(list(qi), sensitive, dict(types), resolve_columns(eng, relation, qi, sensitive, identifiers or [],
                                                                   keep, name, person, pseudonymize))


def resolve_columns(eng: Engine, relation: str, qi: list[str], sensitive: str | None,
                    identifiers: str | Iterable[str] | None, keep: str | Iterable[str] | None,
                    label: str, person: str | None = None, pseudonymize: Iterable[str] | None = None) -> Columns:
    """Sort the columns of ``relation`` into published and dropped; refuse a kept or identifier
    column that is missing, reserved or given another role, and an identifier that repeats (unless
    a person column says whose records they are: the models then count persons). The person
    column is never published as it is: only as a pseudonym. A pseudonymized column is published
    as its keyed pseudonym (:func:`pseudonymized`); one that is not the person column is verified
    like a kept column."""
    cols = [c for c, _ in eng.columns(relation)]
    ids, kept = split_list(identifiers, "identifiers"), split_list(keep, "keep")
    pseud = split_list(pseudonymize, "pseudonymize")
    for c in pseud:
        if c not in cols:
            raise InputError(f"column {c!r} ({option('pseudonymize')}) not found in {label}; its columns are: "
                             f"{', '.join(cols)}")
        if c in qi:
            raise InputError(f"{c!r} is given both as a pseudonym and as a quasi-identifier: a pseudonym links "
                             f"records, it does not generalize them")
        if c == sensitive:
            raise InputError(f"{c!r} is given both as a pseudonym and as the sensitive attribute")
        if c in ids:
            raise InputError(f"{c!r} is given both as a pseudonym and as an identifier (identifiers are dropped)")
    roles = {c: "quasi-identifier" for c in qi}
    if sensitive:
        roles[sensitive] = "sensitive attribute"
    if person is not None:
        roles[person] = "person column"
    for what, names, flag in (("identifier", ids, "identifiers"), ("kept column", kept, "keep")):
        for c in names:
            if c not in cols:
                raise InputError(f"{what} {c!r} ({option(flag)}) not found in {label}; its columns are: "
                                 f"{', '.join(cols)}")
            if c in roles:
                raise InputError(f"{c!r} is given both as {'an' if what[0] == 'i' else 'a'} {what} and as the "
                                 f"{roles[c]}")
            if c.startswith(RESERVED_PREFIX):
                raise InputError(f"column {c!r}: names starting with {RESERVED_PREFIX!r} are reserved by anonydb")
            roles[c] = what
    if person is None:
        check_identifiers(eng, relation, ids)
    published = [c for c in cols if (c in roles and roles[c] not in ("identifier", "person column")) or c in pseud]
    kept += [c for c in pseud if c != person and c not in kept]  # verified like a kept column
    dropped = [c for c in cols if c not in published]
    like = [] if person is not None else person_keys(eng, relation, [c for c in dropped if c not in roles])
    return Columns(published=published, keep=[c for c in cols if c in kept], dropped=dropped, person=person,
                   person_like=like, pseudonyms=[c for c in cols if c in pseud])


def pseudonymized(eng: Engine, s: Any, relation: str, columns: Columns, secret_file: Any = None) -> tuple[str, str]:
    """``relation`` with every pseudonymized column replaced, under its own name, by its keyed
    pseudonym (:func:`anonydb.pseudonyms.pseudonym_sql`), as a scratch table every later step reads:
    the raw values never reach a release. The key comes from ``secret_file``, ``$ANONYDB_SECRET`` or
    is drawn fresh (:func:`anonydb.pseudonyms.load_key`); it is never stored nor logged. Returns
    (the relation, where the key came from)."""
    if not columns.pseudonyms:
        return relation, ""
    # an internal caller may hand the key itself (bytes: never a user's secret, which comes from a file)
    key, origin = (secret_file, "fresh") if isinstance(secret_file, bytes) else load_key(secret_file)
    types = dict(eng.columns(relation))
    sel = ", ".join(f"{pseudonym_sql(eng, ident(c), types[c], key)} AS {ident(c)}" if c in columns.pseudonyms
                    else ident(c) for c in types)
    return s.table(f"SELECT {sel} FROM {ident(relation)}"), origin


def pseudonym_line(columns: list[str], origin: str) -> str:
    """What a result's text says about its pseudonyms."""
    where = {"file": "the secret file", "environment": "$ANONYDB_SECRET",
             "fresh": "a fresh key, never stored: no other release can be linked to this one"}.get(origin, origin)
    return f"  pseudonymized (HMAC-SHA256, keyed by {where}): {', '.join(columns)}"


#: a likely person key has at least this many distinct values ...
PERSON_KEY_VALUES = 20
#: ... each on at most this many rows on average, and some value on more than one row
PERSON_KEY_ROWS = 50


#: the column types a person key can have: integers and text
PERSON_KEY_TYPES = ("VARCHAR", "TEXT", "STRING", "BIGINT", "INTEGER", "SMALLINT", "HUGEINT", "UBIGINT", "UINTEGER")


def looks_like_person_key(column_type: str, values: int, rows: int) -> bool:
    """Whether an integer or text column of ``values`` distinct values on ``rows`` rows looks like a
    person key: many values, each on a few rows, and not unique (a unique column names a row)."""
    return (str(column_type).upper().startswith(PERSON_KEY_TYPES) and PERSON_KEY_VALUES <= values < rows
            and values * PERSON_KEY_ROWS >= rows)


def person_keys(eng: Engine, relation: str, columns: list[str]) -> list[tuple[str, int, int]]:
    """The columns among ``columns`` that look like a person key (:func:`looks_like_person_key`; a
    visits table: 20,000 patient ids on 78,787 rows): (column, values, rows) each, in one scan."""
    types = dict(eng.columns(relation))
    cols = [c for c in columns if str(types[c]).upper().startswith(PERSON_KEY_TYPES)]
    if not cols:
        return []
    row = eng.fetch_rows("SELECT count(*), " + ", ".join(f"count(DISTINCT {ident(c)})" for c in cols)
                         + f" FROM {ident(relation)}")[1][0]
    rows = int(row[0])
    return [(c, int(v), rows) for c, v in zip(cols, row[1:]) if looks_like_person_key(types[c], int(v), rows)]


def constant_qis(eng: Engine, relation: str, person: str, qi: list[str], facts: bool = False) -> None:
    """Refuse a QI that varies within a person: a method that partitions persons puts all of a
    person's records in one class, under one label, which needs their QI values to agree.
    ``facts``: ``relation`` holds the distinct (person, QIs) (person_facts.sql.j2 without a
    sensitive attribute): the QIs are constant when it has one row a person, known in one scan of
    its persons rather than a distinct count per QI over the records (10M visits: 1.98 s -> 0.07 s);
    the QI is named only when one varies."""
    if facts and eng.scalar(f"SELECT count(*) = count(DISTINCT {ident(person)}) FROM {ident(relation)}"):
        return
    bad = varying_qi(eng, relation, person, qi)
    if bad:
        raise InputError(f"quasi-identifier {bad[0]!r} varies within person {bad[1]!r} ({person!r}): a person's "
                         f"records must share their QI values to be released in one class; give QIs that are "
                         f"constant per person (e.g. from the person table), or declare them varying "
                         f"({option('varying')}, Mondrian)")


def check_identifiers(eng: Engine, relation: str, ids: list[str]) -> None:
    """A declared identifier names a person: if one repeats, the table holds several records per
    person and every model would count rows, not people."""
    if not ids:
        return
    one = ("SELECT {c} AS c, CAST(v AS VARCHAR) AS v, n FROM (SELECT {col} AS v, count(*) AS n FROM {rel} "
           "WHERE {col} IS NOT NULL GROUP BY 1 HAVING count(*) > 1 ORDER BY n DESC, v LIMIT 1) AS t")
    rows = eng.fetch_rows(" UNION ALL ".join(one.format(c=literal(c), col=ident(c), rel=ident(relation))
                                             for c in ids))[1]
    if rows:
        c, v, n = rows[0]
        raise InputError(f"identifier {c!r} repeats (value {v!r} is on {n} rows): the table holds several records "
                         f"per person, and k would count rows, not people; if it names a person, declare "
                         f"{option('person')} {c}")


# --- row order ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Order:
    """The key of a release's row order: a secret (default) or derived from a seed."""

    key: str  # 32 hex digits, inlined in the ordering expression
    seed: int | None

    @property
    def recomputable(self) -> bool:
        return self.seed is not None

    def describe(self) -> str:
        if self.seed is None:
            return "random: keyed by a fresh 128-bit secret that was never stored; no one can recompute it"
        return (f"seeded ({self.seed}): anyone who knows the seed can recompute each row's source position; "
                f"omit the seed for a secret order")

    def key64(self, eng: Engine, salt: str) -> int:
        """A 64-bit key for the ``rand``/``unif`` macros (independent per salt), secret with the order."""
        k = int.from_bytes(hashlib.sha256(f"{self.key}/{salt}".encode()).digest()[:8], "big")
        if self.seed is None:
            eng.secret(str(k))
        return k


def row_order(eng: Engine, seed: int | None = None) -> Order:
    """A fresh secret order (``seed`` None), or the reproducible order of ``seed``."""
    if seed is None:
        return Order(eng.secret(secrets.token_hex(16)), None)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed must be an integer, got {seed!r}")
    return Order(hashlib.sha256(f"anonydb-seed/{seed}".encode()).hexdigest()[:32], seed)


# --- staging and the swap ----------------------------------------------------------------------------
def stage_name(role: str = "release", eng: Engine | None = None) -> str:
    """A staging table's name: the prefix, the writer's id (:meth:`Engine.writer_id`: a sweep keeps
    a live writer's) and a random part."""
    writer = eng.writer_id() if eng is not None else os.getpid()
    return f"{STAGE_PREFIX}{writer}_{uuid.uuid4().hex[:10]}_{role}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(eng: Engine) -> list[str]:
    """Drop the staging tables and views left by runs that were killed (their process is gone);
    return their names."""
    rows = list({**eng.relations(contains=_LEGACY_STAGE), **eng.relations(prefix=STAGE_PREFIX)}.items())
    gone = []
    for name, kind in sorted(rows, key=lambda r: r[1] != "VIEW"):
        m = re.match(re.escape(STAGE_PREFIX) + r"(\d+)_", name)
        if m and eng.writer_alive(int(m.group(1))):
            continue
        eng.drop(name, view=kind == "VIEW")
        gone.append(name)
    return gone


def guard_target(eng: Engine, outs: Iterable[str], replace: bool, sources: Iterable[str] = ()) -> None:
    """Refuse a target that is a source (even with replace) or exists without replace."""
    srcs = {str(s) for s in sources}
    for out in outs:
        if out in srcs:
            raise InputError(f"the release {out!r} would replace its own source; choose another name ({option('out')})")
        if eng.exists(out) and not replace:
            raise InputError(f"{out!r} already exists; choose another name, or replace it with {option('replace')}")


def _swap(eng: Engine, pairs: list[tuple[str, str]], as_view: bool = False,
          view: tuple[str, str] | None = None, then: Any = None) -> None:
    """Put verified staging tables in place of their targets (tables or views; a view's rows live
    in ``<out>__data``), all in one transaction: the old release stays until the new one is in (an
    old table is renamed aside and dropped last, so an engine without transactional DDL puts it
    back if a rename fails).
    ``view``: (name, select) of a view over the new tables, (re)created in the same transaction;
    ``then``: called last in the transaction (the ledger's entry: both or neither)."""
    names = [t for _, out in pairs for t in (out, out + "__data")] + ([view[0]] if view else [])
    kinds = eng.relations(names)
    aside: list[tuple[str, str]] = []  # (old table renamed aside, its name): dropped once every stage is in
    eng.execute("BEGIN TRANSACTION")
    try:
        if view and view[0] in kinds:
            eng.drop(view[0], view=kinds[view[0]] == "VIEW")
        for stage, out in pairs:
            data = out + "__data"
            if out in kinds and kinds[out] != "VIEW" and not as_view:
                # renamed aside, not dropped: an engine without transactional DDL (Spark) whose
                # rename of the stage fails gets the old table back below
                aside.append((stage + "_old", out))
                eng.rename(out, aside[-1][0])
            elif out in kinds:
                eng.drop(out, view=kinds[out] == "VIEW")
            if data in kinds and (as_view or kinds.get(out) == "VIEW"):
                eng.drop(data, view=kinds[data] == "VIEW")
            if as_view:
                eng.rename(stage, data)
                eng.execute(f"CREATE VIEW {ident(out)} AS SELECT * FROM {ident(data)}")
            else:
                eng.rename(stage, out)
        if view:
            eng.execute(f"CREATE VIEW {ident(view[0])} AS {view[1]}")
        for old, _ in aside:
            eng.drop(old)
        if then is not None:
            then()
        eng.execute("COMMIT")
    except BaseException:
        eng.execute("ROLLBACK")
        for old, out in aside:  # what a rollback did not undo
            if eng.exists(old) and not eng.exists(out):
                eng.rename(old, out)
        raise


def drop_staged(eng: Engine, names: Iterable[str]) -> None:
    for n in names:
        if n and eng.exists(n):
            eng.drop(n)


# --- the ledger's tracked column ----------------------------------------------------------------------------
def tracked_column(person: str | None, published: list[str]) -> list[str]:
    """The column a tracked release (:mod:`anonydb.release.ledger`) must carry through its stage
    to fingerprint it: the declared key, unless it is published anyway or the person column
    (staged as :data:`PERSON_COLUMN`). [] when the release is not tracked."""
    from .ledger import current

    t = current()
    if t is None or t.untracked or person is not None or t.key in published:
        return []
    return [t.key]


def tracked_key() -> str | None:
    from .ledger import current

    t = current()
    return None if t is None or t.untracked else t.key


# --- verification over every published column ------------------------------------------------------------
def kept_columns_break(keep: list[str], bad: Any, eng: Engine | None = None, stage: str | None = None) -> InputError:
    """The refusal when the kept columns alone make the failing verdict ``bad`` fail: the user's own
    columns are the cause (bad input), not the method. With ``eng`` and ``stage`` (a release that
    counted rows), a kept or pseudonymized column that looks like a person key (:func:`person_keys`)
    is named as the person column it likely is: with --person the models count its persons."""
    like = person_keys(eng, stage, keep) if eng is not None and stage is not None else []
    if like:
        c, values, rows = like[0]
        return InputError(f"the kept column(s) {', '.join(keep)} break {bad.model} ({bad.violating_groups} groups "
                          f"over the published columns violate it); {c} looks like a person key ({values} values "
                          f"on {rows} rows): declare it with {option('person')} {c} so the models count persons "
                          f"(with {option('pseudonymize')} {c} it is published as a pseudonym), or do not publish "
                          f"it; nothing was written")
    return InputError(f"the kept column(s) {', '.join(keep)} break {bad.model} ({bad.violating_groups} groups over "
                      f"the published columns violate it); publish them as quasi-identifiers or not at all "
                      f"({option('keep')}); nothing was written")


def verify_published(eng: Engine, stage: str, sensitive: str | None, models: list, keep: list[str],
                     what: str = "release", exclude: Iterable[str] = (), **check_args: Any) -> Any:
    """Check ``models`` on the staged release grouped by every published column but the sensitive
    one; raise (nothing is written) if one fails, naming the kept columns when they are the cause.
    ``exclude``: columns an internal caller drops before publishing (not judged)."""
    from ..checker import check

    events.phase("verification")
    person = check_args.get("person")
    cols = [c for c, _ in eng.columns(stage) if c != sensitive and c not in set(exclude) and c != person]
    report = check(stage, cols, sensitive, models=models, engine=eng, max_groups=3, **check_args)
    if report.holds:
        return report
    bad = next(v for v in report.verdicts if not v.holds)
    if keep:
        without = [c for c in cols if c not in keep]
        if check(stage, without, sensitive, models=models, engine=eng, max_groups=1, **check_args).holds:
            raise kept_columns_break(keep, bad, *((eng, stage) if person is None else ()))
    g = bad.violations[0] if bad.violations else None
    where = f"; e.g. a group of {g.size} {'persons' if person else 'rows'}, value {g.value}" if g else ""
    raise AnonyDBError(f"verification failed: {bad.model} does not hold on the {what} ({bad.violating_groups} groups "
                       f"violate){where}; nothing was written")


@dataclass
class RiskGate:
    """A release's risk limits (a spec's ``risk:`` block): judged on every stage that holds the
    QIs, over every column it publishes but the sensitive one, before the stage counts as verified."""

    limits: Limits
    qi: list[str]
    sensitive: str | None = None
    exclude: list[str] = field(default_factory=list)  # published pseudonyms: no attacker knows them
    hierarchies: dict[str, Any] = field(default_factory=dict)  # to map a raw population onto the labels


_RISK_GATE: ContextVar[RiskGate | None] = ContextVar("anonydb_risk_gate", default=None)


@contextmanager
def risk_gate(gate: RiskGate | None):
    """Judge the stages of every Publication made inside the block against ``gate``."""
    token = _RISK_GATE.set(gate)
    try:
        yield
    finally:
        _RISK_GATE.reset(token)


def judge_risk(eng: Engine, stages: Iterable[str], person: str | None = None) -> None:
    """Raise (nothing is written) when a stage breaks the active :class:`RiskGate`'s limits."""
    gate = _RISK_GATE.get()
    if gate is None:
        return
    for st in stages:
        cols = [c for c, _ in eng.columns(st)]
        if not set(gate.qi) <= set(cols):
            continue  # an ST: the sensitive values, judged through its QIT
        skip = {gate.sensitive, PERSON_COLUMN, "count", *GROUP_COLUMNS, *gate.exclude}
        keys = [c for c in cols if c not in skip]
        who = person if person in cols else (PERSON_COLUMN if PERSON_COLUMN in cols else None)
        bad = exceeded(gate.limits.assess(eng, st, keys, person=who, name="release", hierarchies=gate.hierarchies),
                       gate.limits)
        if bad:
            raise AnonyDBError(f"verification failed: the release breaks its risk limits: {'; '.join(bad)}; "
                               f"nothing was written")


class Publication:
    """One release in the making, and the only way a staged table gets the user's name.

    Made where a method begins: refuses a target that is a source or exists without ``replace``,
    draws the row order (:func:`row_order`) and sweeps dead runs' staging tables. The method builds
    its rows in :meth:`stage` names, then every staged table is verified, over every published
    column (:meth:`verify`) or by the method's own check of a QIT/ST pair or sliced columns
    (:meth:`attach`); :meth:`commit` refuses a stage that was not verified and swaps the rest in
    one transaction. Leaving the ``with`` block without a commit drops every stage.
    """

    def __init__(self, eng: Engine, targets: Iterable[str], replace: bool, sources: Iterable[str] = (),
                 seed: int | None = None, order: Order | None = None):
        self.eng = eng
        guard_target(eng, list(targets), replace, sources)
        self.order = order or row_order(eng, seed)
        sweep(eng)
        self.staged: dict[str, Any] = {}  # stage -> its verification (None until verified)
        self.sides: dict[str, dict[str, str]] = {}  # stage -> its side tables (the ledger's), dropped with it

    def __enter__(self) -> "Publication":
        return self

    def __exit__(self, *exc: Any) -> None:
        drop_staged(self.eng, list(self.staged) + [n for d in self.sides.values() for n in d.values()])
        self.staged.clear()
        self.sides.clear()

    def side(self, stage: str, suffix: str, select: str) -> str:
        """A table beside ``stage`` (a staging name: swept with it if the run dies, dropped when
        the release is written or fails)."""
        name = f"{stage}_{suffix}"
        self.eng.create_table_as(name, select, replace=True, temp=True)  # the session's only: nothing to sweep
        self.sides.setdefault(stage, {})[suffix] = name
        return name

    def track(self, stage: str, key: str, groups: list[str], sensitive: str | None = None,
              values: str | None = None, counterfeits: str | None = None, rows: str | None = None) -> None:
        """When the release is tracked (:func:`anonydb.release.ledger.tracking`): fingerprint the
        records of ``stage`` by the column ``key`` (still in the stage) with their groups, and
        verify the release together with the ledger's earlier releases of its source (raises,
        nothing written, when the composition breaks); the entry is written by :meth:`commit`."""
        from . import ledger

        ledger.stage_members(self.eng, self, stage, key, groups, sensitive, values, counterfeits, rows)

    def stage(self, role: str = "release") -> str:
        events.phase("output")
        name = stage_name(role, self.eng)
        self.staged[name] = None
        return name

    def verify(self, stage: str, sensitive: str | None, models: list, keep: list[str], what: str = "release",
               exclude: Iterable[str] = (), **check_args: Any) -> Any:
        """:func:`verify_published` on ``stage``; raises (nothing is written) when a model fails. With
        ``person`` (a column the method staged to judge record owners by: the
        column is not grouped by; the method drops it once every verification is done)."""
        report = verify_published(self.eng, stage, sensitive, models, keep, what, exclude, **check_args)
        judge_risk(self.eng, [stage], check_args.get("person"))
        self._record([stage], report)
        return report

    def keep_rows(self, stage: str, condition: str) -> None:
        """Keep only the rows of the unverified ``stage`` where ``condition`` holds (SQL over its
        columns): a copy under a staging name, put in its place (a suppression before verification)."""
        if self.staged.get(stage) is not None:
            raise AnonyDBError(f"internal error: {stage} was verified; its rows can no longer change")
        kept = stage + "_k"  # a staging name: swept with the stage if the run dies
        self.eng.create_table_as(kept, f"SELECT * FROM {ident(stage)} WHERE {condition}")
        self.eng.drop(stage)
        self.eng.rename(kept, stage)

    def attach(self, stages: Iterable[str], holds: bool, failure: str, report: Any = None) -> None:
        """Record a method's own verification of ``stages`` (a QIT/ST pair, sliced columns, a
        model judged from the method's state); raises with ``failure`` when it does not hold."""
        if not holds:
            raise AnonyDBError(f"verification failed: {failure}; nothing was written")
        judge_risk(self.eng, list(stages))
        self._record(list(stages), report if report is not None else True)

    def _record(self, stages: list[str], report: Any) -> None:
        for st in stages:
            if st not in self.staged:
                raise AnonyDBError(f"internal error: {st} is not a stage of this release")
            prev = self.staged[st]
            if prev is not None and prev is not True and report is not True and prev is not report:
                prev.verdicts.extend(report.verdicts)
            elif prev is None or prev is True:
                self.staged[st] = report

    def commit(self, pairs: list[tuple[str, str]], as_view: bool = False, view: tuple[str, str] | None = None,
               entry: Any = None) -> None:
        """Swap the verified stages into their targets in one transaction; ``entry``: called inside
        it, last (a differentially private release's ledger entry: both or neither)."""
        events.phase("writing", table=", ".join(out for _, out in pairs))
        unverified = [st for st, _ in pairs if self.staged.get(st) is None]
        if unverified:
            raise AnonyDBError(f"internal error: {', '.join(unverified)} was not verified; nothing was written")
        keyed = [st for st, _ in pairs if PERSON_COLUMN in {c for c, _ in self.eng.columns(st)}]
        if keyed:  # the person key a method staged for its verification never leaves
            raise AnonyDBError(f"internal error: {', '.join(keyed)} still holds the person key; nothing was written")
        from . import ledger

        t = ledger.current()
        then = None
        if t is not None:
            if not t.untracked and (not t.staged or t.staged.get("stage") not in {st for st, _ in pairs}):
                raise AnonyDBError("internal error: a tracked release was not fingerprinted; nothing was written")
            t.staged.setdefault("have", ledger.present(self.eng, t.schema))
            st0 = t.staged.get("stage") or pairs[0][0]
            rows = int(self.eng.scalar(f"SELECT count(*) FROM {ident(st0)}"))
            report = self.staged.get(st0)
            outs = [out for _, out in pairs]

            def then() -> None:
                t.staged["id"] = ledger.write(self.eng, t, outs, rows, report)
        if entry is not None:
            then = entry
        plan = _EXPORTS.get()
        files = [(name, plan[0][name]) for name in [out for _, out in pairs] + ([view[0]] if view else [])
                 if plan is not None and name in plan[0]]
        if files:  # written and renamed into place last before COMMIT: a kill between leaves the file new
            ledger_entry = then

            def then() -> None:
                if ledger_entry is not None:
                    ledger_entry()
                plan[1].extend(export(self.eng, files))
        _swap(self.eng, pairs, as_view, view, then)
        for st, _ in pairs:
            self.staged.pop(st, None)


# --- files --------------------------------------------------------------------------------------------------
def guard_file(path: str | Path, replace: bool, inputs: Iterable[str | Path] = (), flag: str = "export",
               need_folder: bool = True) -> Path:
    """Refuse an export target that is an input (even with replace), a directory, or an existing
    file without replace."""
    p = Path(path)
    for x in inputs:
        if x is not None and Path(x).exists() and p.exists() and p.resolve() == Path(x).resolve():
            raise InputError(f"{option(flag)} {str(path)!r} is an input of this run; choose another path")
    if p.is_dir() and not is_dataset(p):
        raise InputError(f"{option(flag)} {str(path)!r} is a directory; give a file path")
    if need_folder and not p.parent.is_dir():
        raise InputError(f"{option(flag)} {str(path)!r}: the folder {str(p.parent)!r} does not exist")
    if p.exists() and not replace:
        raise InputError(f"{option(flag)} {str(path)!r} already exists; choose another path, or replace it with "
                         f"{option('replace')}")
    return p


def is_dataset(path: Path) -> bool:
    """A Parquet folder written by Spark (its ``_SUCCESS`` marker): an export target replaced whole."""
    return path.suffix.lower() == ".parquet" and (path / "_SUCCESS").is_file()


def _remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def _put(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` to ``path``: one atomic rename for a file; a folder (Spark's Parquet) replacing
    one is moved aside first, then removed."""
    if tmp.is_dir() and path.exists():
        aside = tmp.with_name(tmp.name + ".old")
        os.replace(path, aside)
        os.replace(tmp, path)
        _remove(aside)
    else:
        os.replace(tmp, path)


def tmp_beside(path: Path) -> Path:
    """A temporary file beside ``path`` (swept by :func:`sweep_files` if its writer dies)."""
    sweep_files(path.parent)
    return path.with_name(f".{path.name}.anonydb-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def sweep_files(folder: Path) -> None:
    """Remove the temporary export files of dead writers in ``folder``."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for f in entries:
        m = _TMP_FILE.match(f.name)
        if m and not _alive(int(m.group(1))):
            try:
                _remove(f)
            except OSError:
                pass


#: the files the commits of a run write with their tables (:func:`exporting`): (table -> path, written)
_EXPORTS: ContextVar[tuple[dict[str, Path], list[str]] | None] = ContextVar("anonydb_exports", default=None)


@contextmanager
def exporting(files: dict[str, Path]):
    """Export each table (a target's name -> its file) in the commit that puts it in place: the file
    is written beside its path and renamed into place inside the swap's transaction, just before it
    commits. A run killed in between leaves the old file and table, or the new file beside the old
    table, never a new table beside an old file; the table is authoritative, a file can be exported
    again. Yields the list of the paths written (a table no commit puts in place is the caller's)."""
    written: list[str] = []
    token = _EXPORTS.set(({str(k): Path(v) for k, v in files.items()}, written))
    try:
        yield written
    finally:
        _EXPORTS.reset(token)


def exported() -> list[str]:
    """The files the commits inside :func:`exporting` wrote so far."""
    plan = _EXPORTS.get()
    return list(plan[1]) if plan is not None else []


def export(eng: Engine, parts: list[tuple[str, Path]]) -> list[str]:
    """COPY every (table, path) to a temporary file (or Spark's folder) beside its path, then rename
    all into place; on failure no target is touched."""
    done: list[tuple[Path, Path]] = []
    try:
        for table, path in parts:
            tmp = tmp_beside(path)
            done.append((tmp, path))
            eng.copy_out(table, tmp, "parquet" if path.suffix.lower() == ".parquet" else "csv")
        for tmp, path in done:
            _put(tmp, path)
    finally:
        for tmp, _ in done:
            if tmp.exists():
                _remove(tmp)
    return [str(p) for _, p in done]


def publication_lines(dropped: list[str], kept: list[str], order: str, person: str | None = None,
                      person_like: Iterable[tuple[str, int, int]] = (), pseudonyms: tuple[list[str], str] = ([], "")
                      ) -> list[str]:
    """What a result's text says about what was (not) published and how the rows are ordered."""
    lines = []
    if person is not None:
        lines.append(f"  person key {person}: every model counted persons; "
                     + ("published as a pseudonym" if person in pseudonyms[0] else "not published"))
    if pseudonyms[0]:
        lines.append(pseudonym_line(*pseudonyms))
    kept = [c for c in kept if c not in pseudonyms[0]]
    dropped = [c for c in dropped if c != person]
    if dropped:
        lines.append(f"  not published (no role): {', '.join(dropped)}; publish one unchanged with {option('keep')}")
    for c, values, rows in person_like:
        lines.append(f"  {c} looks like a person key ({values} values on {rows} rows): the models counted rows; "
                     f"if it names a person, declare {option('person')} {c}")
    if kept:
        lines.append(f"  kept unchanged at your request: {', '.join(kept)}")
    if order:
        lines.append(f"  row order: {order}")
    return lines
