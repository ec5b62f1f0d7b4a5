"""The release ledger: every tracked release of a database, kept in that database [issue 51;
Fung et al. survey §6.1-6.3].

Four tables, created on the first tracked release:

* ``anonydb_releases``: one row per release: id, series, time, source, method, the tables written,
  the spec or arguments (text and SHA-256), the published columns and their roles, the models'
  parameters and achieved values, the tracked column (its kind and type), how the series
  composes (``intersection``, ``insert-only`` or ``m-invariance``), counts, the secret's id and a
  checksum;
* ``anonydb_release_members`` (release_id, fp, grp, hist): which group each tracked record (or
  person) went to. ``fp`` is the HMAC-SHA256 of the tracked column's value under the publisher's
  secret (:mod:`anonydb.pseudonyms`): never a raw id, so the ledger alone re-identifies no one;
  ``hist`` names the person's history (:mod:`anonydb.composition`);
* ``anonydb_release_values`` (release_id, grp, value, n): the sensitive values each group
  publishes, counterfeits included (``counterfeits`` of them);
* ``anonydb_release_hists`` (release_id, hist, value): the values a history leaves.

The entry is written in the transaction that puts the release in place (:meth:`Publication.commit`):
both or neither. Its checksum is an HMAC under the secret of the entry's fields and a digest of
its members and values; a ledger edited by hand fails it and is refused, and so is a release
keyed by another secret (its fingerprints would not match) or whose tracked column changed type.
The secret's id is an HMAC of a fixed text: it tells secrets apart without revealing one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable

from ..engines.base import Engine
from ..errors import AnonyDBError, InputError, option
from ..pseudonyms import pseudonym_sql
from ..sqlgen import ident, literal

LEDGER = "anonydb_releases"
MEMBERS = "anonydb_release_members"
VALUES = "anonydb_release_values"
HISTS = "anonydb_release_hists"
TABLES = (LEDGER, MEMBERS, VALUES, HISTS)
MODES = ("intersection", "insert-only", "m-invariance")

_ENTRY = [("id", "BIGINT"), ("series", "VARCHAR"), ("created", "VARCHAR"), ("source", "VARCHAR"),
          ("method", "VARCHAR"), ("tables", "VARCHAR"), ("spec_sha256", "VARCHAR"), ("spec", "VARCHAR"),
          ("columns", "VARCHAR"), ("models", "VARCHAR"), ("achieved", "VARCHAR"), ("tracked", "VARCHAR"),
          ("tracked_kind", "VARCHAR"), ("tracked_type", "VARCHAR"), ("sensitive", "VARCHAR"), ("mode", "VARCHAR"),
          ("m", "BIGINT"), ("rows", "BIGINT"), ("members", "BIGINT"), ("groups", "BIGINT"),
          ("counterfeits", "BIGINT"), ("secret_id", "VARCHAR"), ("checksum", "VARCHAR")]
_DDL = {LEDGER: _ENTRY,
        MEMBERS: [("release_id", "BIGINT"), ("fp", "VARCHAR"), ("grp", "BIGINT"), ("hist", "BIGINT")],
        VALUES: [("release_id", "BIGINT"), ("grp", "BIGINT"), ("value", "VARCHAR"), ("n", "BIGINT"),
                 ("counterfeits", "BIGINT")],
        HISTS: [("release_id", "BIGINT"), ("hist", "BIGINT"), ("value", "VARCHAR")]}


@dataclass
class Tracking:
    """What a tracked release records: set by the caller (:func:`tracking`), read by the
    :class:`~anonydb.release.publish.Publication` that writes the release."""

    key: str  # the source column records are tracked by (the person column, or a declared key)
    kind: str  # "person" or "key"
    secret: bytes  # the publisher's secret: never stored, never logged
    series: str | None = None  # default: the output name
    mode: str = "intersection"
    m: int | None = None  # m-invariance
    l: int | None = None  # the values every person keeps (distinct l)
    spec: str = ""  # the spec's text, or the arguments
    source: str = ""
    method: str = ""
    models: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=dict)  # published column -> role
    sensitive: str | None = None
    schema: str | None = None  # the ledger's schema (default: the current one)
    #: filled by the Publication: the staged tables the entry is written from
    staged: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InputError(f"composition must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == "m-invariance" and (isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 2):
            raise InputError(f"m-invariance needs an integer m >= 2, got {self.m!r}")


_TRACKING: ContextVar[Tracking | None] = ContextVar("anonydb_tracking", default=None)


@contextmanager
def tracking(t: Tracking | None):
    """Record every release committed inside the block in the ledger, composed with the earlier ones."""
    token = _TRACKING.set(t)
    try:
        yield t
    finally:
        _TRACKING.reset(token)


def current() -> Tracking | None:
    return _TRACKING.get()


def secret_id(secret: bytes) -> str:
    return hmac.new(secret, b"anonydb ledger: the series' secret", "sha256").hexdigest()[:32]


# --- reading -------------------------------------------------------------------------------------------
def q(name: str, schema: str | None = None) -> str:
    """A ledger table's name as SQL: in the current schema, or in ``schema`` (the user's)."""
    return ident(name) if schema is None else f"{ident(schema)}.{ident(name)}"


def exists(eng: Engine, schema: str | None = None) -> bool:
    return LEDGER in eng.relations([LEDGER]) if schema is None else _has(eng, LEDGER, schema)


def _present(eng: Engine, schema: str | None = None) -> set[str]:
    """The ledger tables that exist (probed outside any transaction: a failed probe would abort one)."""
    if schema is None:
        return set(eng.relations(list(TABLES)))
    return {t for t in TABLES if _has(eng, t, schema)}


def _create(eng: Engine, schema: str | None, have: set[str]) -> None:
    if schema is not None and not have:
        eng.execute(f"CREATE SCHEMA IF NOT EXISTS {ident(schema)}")
    for t, cols in _DDL.items():
        if t not in have:
            eng.execute(f"CREATE TABLE {q(t, schema)} ({', '.join(f'{ident(c)} {ty}' for c, ty in cols)})")


def _has(eng: Engine, table: str, schema: str) -> bool:
    """Whether ``schema`` holds ``table`` (a schema the catalog helpers do not list: ask the table)."""
    try:
        eng.fetch_rows(f"SELECT 1 FROM {q(table, schema)} WHERE 1 = 0")
        return True
    except Exception:  # noqa: BLE001 - any engine's "no such table"
        return False


def entries(eng: Engine, where: str = "", schema: str | None = None) -> list[dict[str, Any]]:
    """The ledger's rows (oldest first), as dicts; [] when the database has no ledger."""
    if not exists(eng, schema):
        return []
    names, rows = eng.fetch_rows(f"SELECT {', '.join(ident(c) for c, _ in _ENTRY)} FROM {q(LEDGER, schema)} "
                                 f"{where} ORDER BY {ident('id')}")
    return [dict(zip([c for c, _ in _ENTRY], r)) for r in rows]


def _digests(eng: Engine, ids: Iterable[int], schema: str | None = None) -> dict[int, str]:
    """A digest of each release's members and values (counts, sums and extremes), for every
    release of ``ids`` in one scan of each table."""
    ids = [int(i) for i in ids]
    if not ids:
        return {}
    w = f" WHERE release_id IN ({', '.join(map(str, ids))}) GROUP BY release_id"
    m = {r[0]: r[1:] for r in eng.fetch_rows(f"SELECT release_id, count(*), COALESCE(sum(grp), 0), "
                                             f"COALESCE(sum(hist), 0), min(fp), max(fp) FROM {q(MEMBERS, schema)}{w}")[1]}
    v = {r[0]: r[1:] for r in eng.fetch_rows(f"SELECT release_id, count(*), COALESCE(sum(n), 0), "
                                             f"COALESCE(sum(counterfeits), 0), COALESCE(sum(grp), 0), min(value), "
                                             f"max(value) FROM {q(VALUES, schema)}{w}")[1]}
    empty_m, empty_v = (0, 0, 0, None, None), (0, 0, 0, 0, None, None)
    return {i: json.dumps([[str(x) for x in m.get(i, empty_m)], [str(x) for x in v.get(i, empty_v)]]) for i in ids}


def _checksum(secret: bytes, entry: dict[str, Any], digest: str) -> str:
    body = json.dumps({c: (None if entry.get(c) is None else str(entry[c])) for c, _ in _ENTRY if c != "checksum"},
                      sort_keys=True) + digest
    return hmac.new(secret, body.encode(), "sha256").hexdigest()


def chain(eng: Engine, t: Tracking, key_type: str) -> list[dict[str, Any]]:
    """The earlier releases of ``t``'s source that track the same column (every series: views
    and sequential releases compose alike), each checked: its checksum under ``t``'s secret,
    the secret, the tracked column's type. Raises an InputError in one line otherwise."""
    rows = [e for e in entries(eng, schema=t.schema) if e["source"] == t.source]
    sid = secret_id(t.secret)
    digests = _digests(eng, [e["id"] for e in rows], t.schema)
    out = []
    for e in rows:
        if e["secret_id"] != sid:
            raise InputError(f"ledger release {e['id']} (series {e['series']!r}) of {t.source} was keyed by another "
                             f"secret: its fingerprints cannot be matched, so the releases cannot be verified "
                             f"together; give the series' secret ({option('secret-file')} or $ANONYDB_SECRET)")
        if _checksum(t.secret, e, digests[e["id"]]) != e["checksum"]:
            raise InputError(f"ledger release {e['id']} (series {e['series']!r}) fails its checksum: the ledger was "
                             f"edited by hand; restore it, or remove the entry with `anonydb releases --drop "
                             f"{e['id']}`")
        if e["tracked"] == t.key and e["tracked_type"] != key_type:
            raise InputError(f"the tracked column {t.key!r} of {t.source} is {key_type} now but was "
                             f"{e['tracked_type']} in ledger release {e['id']}: its fingerprints would not match")
        if e["tracked"] == t.key:
            out.append(e)
    return out


# --- writing (inside the Publication) ------------------------------------------------------------------
def stage_members(eng: Engine, pub: Any, stage: str, key: str, groups: list[str], sensitive: str | None,
                  values: str | None = None, counterfeits: str | None = None, rows: str | None = None) -> None:
    """Fingerprint the tracked records of ``stage`` (which still holds the column ``key``) and
    their groups, compose them with the ledger's earlier releases (raises, nothing written, when
    they break the composition) and keep what the ledger entry needs until the commit.

    ``groups``: the columns naming a row's group (``eq_class``, ``group_id``; with kept columns,
    every published non-sensitive column). ``values``: a relation (grp, value, n[, counterfeits])
    of the groups' sensitive values (Anatomy's ST) instead of the stage's; ``counterfeits`` one of
    (grp, value) rows added to the groups; ``rows``: the relation holding ``key`` and ``groups``
    when the stage does not (Anatomy's records and their groups)."""
    t = current()
    if t is None:
        return
    from .. import composition

    src = rows or stage
    types = dict(eng.columns(src))
    key_type = types[key]
    if t.kind == "key":  # a record key names each record once: a repeat or a NULL would go untracked
        nulls, dup = eng.fetch_rows(f"SELECT count(*) - count({ident(key)}), count({ident(key)}) - "
                                    f"count(DISTINCT {ident(key)}) FROM {ident(src)}")[1][0]
        if nulls or dup:
            raise InputError(f"the tracked column {t.key!r} must name each record once: {nulls} NULL and {dup} "
                             f"repeated values")
    earlier = chain(eng, t, key_type)
    fp = pseudonym_sql(eng, ident(key), key_type, t.secret)
    grp = (f"CAST({ident(groups[0])} AS BIGINT)" if len(groups) == 1 else
           "CAST(dense_rank() OVER (ORDER BY " + ", ".join(ident(g) for g in groups) + ") AS BIGINT)")
    if "_adb_fp" in types:  # the caller fingerprinted the records already (minvariant), with this secret
        fp = "_adb_fp"
    # one pass: each fingerprint's group, and whether it has several
    grouped = pub.side(stage, "lg", f"SELECT fp, min(grp) AS grp, count(DISTINCT grp) AS ng FROM (SELECT {fp} AS fp, "
                                    f"{grp} AS grp FROM {ident(src)} WHERE {ident(key)} IS NOT NULL) AS x GROUP BY fp")
    several = eng.scalar(f"SELECT count(*) FROM {ident(grouped)} WHERE ng > 1")
    members = grouped
    if several:
        raise InputError(f"{several} tracked {'persons' if t.kind == 'person' else 'keys'} ({t.key!r}) fall in several "
                         f"groups: a tracked release gives each one group (no varying QIs; a key must be unique)")
    cf = (f" UNION ALL SELECT CAST(grp AS BIGINT), CAST(value AS VARCHAR), 1, 1 FROM {ident(counterfeits)}"
          if counterfeits else "")
    if values is not None:
        c = "counterfeits" if "counterfeits" in dict(eng.columns(values)) else "0"
        base = (f"SELECT CAST(grp AS BIGINT) AS grp, CAST(value AS VARCHAR) AS value, n, {c} AS c "
                f"FROM {ident(values)}")
    elif sensitive is not None:
        base = (f"SELECT {grp} AS grp, CAST({ident(sensitive)} AS VARCHAR) AS value, 1 AS n, 0 AS c "
                f"FROM {ident(stage)}")
    else:
        base = f"SELECT {grp} AS grp, '' AS value, 1 AS n, 0 AS c FROM {ident(stage)}"
    vals = pub.side(stage, "lv", f"SELECT grp, value, sum(n) AS n, sum(c) AS counterfeits FROM ({base}{cf}) AS x "
                                 f"GROUP BY grp, value")
    ids = [e["id"] for e in earlier if (e["sensitive"] or None) == (t.sensitive or None)]
    with eng.scratch("ledger") as s:
        if ids:
            last = last_appearance(s, members, "fp", ids, t.schema)
            # only the histories the last appearances name
            hist_values = s.table(f"SELECT h.release_id, h.hist, h.value FROM {q(HISTS, t.schema)} AS h "
                                  f"WHERE h.release_id IN ({', '.join(str(int(i)) for i in ids)}) AND EXISTS "
                                  f"(SELECT 1 FROM (SELECT DISTINCT release_id, hist FROM {ident(last)}) AS l "
                                  f"WHERE l.release_id = h.release_id AND l.hist = h.hist)")
        else:
            last = s.table("SELECT CAST(NULL AS VARCHAR) AS fp, CAST(NULL AS BIGINT) AS release_id, "
                           "CAST(NULL AS BIGINT) AS hist WHERE 1 = 0")
            hist_values = s.table("SELECT CAST(NULL AS BIGINT) AS release_id, CAST(NULL AS BIGINT) AS hist, "
                                  "CAST(NULL AS VARCHAR) AS value WHERE 1 = 0")
        tagged, hv = composition.histories(eng, s, members, vals, last, hist_values,
                                           lambda role, sel: pub.side(stage, {"tagged": "lh", "values": "lhv"}[role], sel))
        l = t.m if t.mode == "m-invariance" else t.l
        exp = composition.exposure(eng, s, tagged, hv, vals, hist_values, l if t.sensitive else None,
                                   t.m if t.mode == "m-invariance" else None)
        if t.mode == "insert-only" and ids:
            prev = max(ids)
            gone = int(eng.scalar(f"SELECT count(*) FROM {q(MEMBERS, t.schema)} AS m WHERE m.release_id = {prev} AND "
                                  f"NOT EXISTS (SELECT 1 FROM {ident(members)} AS c WHERE c.fp = m.fp)"))
            if gone:
                raise AnonyDBError(f"composed verification failed: {gone} records of ledger release {prev} are gone, "
                                   f"but series {t.series!r} is insert-only; nothing was written")
        _refuse(t, exp, earlier)
    t.staged = {"have": _present(eng, t.schema), "stage": stage, "members": members, "values": vals, "tagged": pub.sides[stage]["lh"],
                "hists": pub.sides[stage]["lhv"], "key_type": key_type, "exposure": exp,
                "earlier": [e["id"] for e in earlier]}


def last_appearance(s: Any, relation: str, fp: str, ids: list[int], schema: str | None = None) -> str:
    """A scratch table (fp, release_id, grp, hist): for every fingerprint of ``relation`` (column
    ``fp``) its last release among ``ids`` and its group and history there. Most records of a
    series were in its latest release: they are found by one join with that release's members;
    only the others are looked for in the earlier releases."""
    ids = sorted(int(i) for i in ids)
    mem = q(MEMBERS, schema)
    hit = s.table(f"SELECT m.fp, m.release_id, m.grp, m.hist FROM {mem} AS m JOIN {ident(relation)} AS c "
                  f"ON c.{ident(fp)} = m.fp WHERE m.release_id = {ids[-1]}")
    if len(ids) == 1:
        return hit
    older = ", ".join(map(str, ids[:-1]))
    miss = s.table(f"SELECT c.{ident(fp)} AS fp FROM {ident(relation)} AS c WHERE NOT EXISTS "
                   f"(SELECT 1 FROM {ident(hit)} AS h WHERE h.fp = c.{ident(fp)})")
    return s.table(f"SELECT fp, release_id, grp, hist FROM {ident(hit)} UNION ALL "
                   f"SELECT x.fp, x.release_id, x.grp, x.hist FROM {mem} AS x JOIN "
                   f"(SELECT m.fp, max(m.release_id) AS r FROM {mem} AS m JOIN {ident(miss)} AS c "
                   f"ON c.fp = m.fp WHERE m.release_id IN ({older}) GROUP BY m.fp) AS y "
                   f"ON y.fp = x.fp AND y.r = x.release_id")


def _refuse(t: Tracking, exp: Any, earlier: list[dict[str, Any]]) -> None:
    """One line naming the earlier release and the persons exposed, when the composition breaks."""
    who = "persons" if t.kind == "person" else "records"
    if exp.not_unique:
        raise AnonyDBError(f"composed verification failed: {exp.not_unique} groups are not {t.m}-unique (fewer than "
                           f"{t.m} values, or a value repeated), so the series {t.series!r} is not {t.m}-invariant; "
                           f"nothing was written (--method minvariant writes m-unique groups)")
    if exp.changed:
        raise AnonyDBError(f"composed verification failed: {exp.changed} {who} present in earlier releases of "
                           f"{t.source} are in a group whose sensitive values differ from their earlier groups', "
                           f"so the series {t.series!r} is not {t.m}-invariant; nothing was written (--method "
                           f"minvariant continues the earlier groups)")
    if exp.exposed:
        e = next((x for x in earlier if x["id"] == exp.worst_release), None)
        name = f"ledger release {exp.worst_release}" + (f" (series {e['series']!r}, {e['created']})" if e else "")
        l = t.m if t.mode == "m-invariance" else t.l
        raise AnonyDBError(f"composed verification failed: read with {name}, {exp.exposed} {who} are left with "
                           f"fewer than {l} possible sensitive values (as few as {exp.min_values}); nothing was "
                           f"written (--method minvariant continues the earlier groups)")


def write(eng: Engine, t: Tracking, out_tables: list[str], rows: int, report: Any) -> int:
    """Insert the entry of the release being committed, and its members, values and histories
    (called inside the swap's transaction). Returns its id."""
    st = t.staged
    sc = t.schema
    _create(eng, sc, st["have"])
    # the next id past every table's: an engine without transactions (Spark) may have kept the
    # members of a run killed before its entry row, which must not join the next entry
    rid = int(eng.scalar("SELECT 1 + greatest(" + ", ".join(
        f"(SELECT COALESCE(max({ident('id' if x == LEDGER else 'release_id')}), 0) FROM {q(x, sc)})"
        for x in TABLES) + ")"))
    eng.execute(f"INSERT INTO {q(MEMBERS, sc)} SELECT {rid}, fp, grp, hist FROM {ident(st['tagged'])}")
    eng.execute(f"INSERT INTO {q(VALUES, sc)} SELECT {rid}, grp, value, n, counterfeits FROM {ident(st['values'])}")
    eng.execute(f"INSERT INTO {q(HISTS, sc)} SELECT {rid}, hist, value FROM {ident(st['hists'])}")
    counts = eng.fetch_rows(f"SELECT count(*), count(DISTINCT grp), COALESCE(sum(counterfeits), 0) "
                            f"FROM {ident(st['values'])}")[1][0]
    members = int(eng.scalar(f"SELECT count(*) FROM {ident(st['tagged'])}"))
    achieved = {}
    for v in getattr(report, "verdicts", []) or []:
        achieved[v.model] = {k: str(x) for k, x in (getattr(v, "achieved", {}) or {}).items()}
    spec = t.spec or ""
    entry = {"id": rid, "series": t.series, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
             "source": t.source, "method": t.method, "tables": json.dumps(out_tables),
             "spec_sha256": hashlib.sha256(spec.encode()).hexdigest(), "spec": spec,
             "columns": json.dumps(t.columns, sort_keys=True), "models": json.dumps(t.models, sort_keys=True, default=str),
             "achieved": json.dumps(achieved, sort_keys=True), "tracked": t.key, "tracked_kind": t.kind,
             "tracked_type": st["key_type"], "sensitive": t.sensitive, "mode": t.mode, "m": t.m, "rows": int(rows),
             "members": members, "groups": int(counts[1]), "counterfeits": int(counts[2]),
             "secret_id": secret_id(t.secret)}
    entry["checksum"] = _checksum(t.secret, entry, _digests(eng, [rid], sc)[rid])
    eng.execute(f"INSERT INTO {q(LEDGER, sc)} ({', '.join(ident(c) for c, _ in _ENTRY)}) VALUES ("
                + ", ".join("NULL" if entry[c] is None else (str(int(entry[c])) if ty == "BIGINT" else literal(entry[c]))
                            for c, ty in _ENTRY) + ")")
    return rid


def drop(eng: Engine, ids: Iterable[int], schema: str | None = None) -> list[int]:
    """Remove ledger entries (on request only) with their members, values and histories."""
    gone = []
    have = {e["id"] for e in entries(eng, schema=schema)}
    for i in ids:
        if int(i) not in have:
            raise InputError(f"no ledger release {i}; `anonydb releases` lists them")
    eng.execute("BEGIN TRANSACTION")
    try:
        for i in ids:
            for t in (MEMBERS, VALUES, HISTS, LEDGER):
                col = "id" if t == LEDGER else "release_id"
                eng.execute(f"DELETE FROM {q(t, schema)} WHERE {ident(col)} = {int(i)}")
            gone.append(int(i))
        eng.execute("COMMIT")
    except BaseException:
        eng.execute("ROLLBACK")
        raise
    return gone


__all__ = ["LEDGER", "MODES", "q", "Tracking", "chain", "current", "drop", "entries", "stage_members", "tracking", "write"]
