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
#: the mode of a ledger row that is no tracked release: a person-level release written without the
#: publisher's secret (or with --untracked), and an entry dropped on request (its tombstone)
UNTRACKED, DROPPED = "untracked", "dropped"
#: the mode of a differentially private release's entry: no fingerprints (the guarantee holds for
#: any person, listed or not), the epsilon and delta it spent in ``achieved``; read only by the budget
#: (:func:`dp_spent`) and ``anonydb releases``, never composed with the syntactic releases' members
DP = "dp"

_ENTRY = [("id", "BIGINT"), ("series", "VARCHAR"), ("created", "VARCHAR"), ("source", "VARCHAR"),
          ("method", "VARCHAR"), ("tables", "VARCHAR"), ("spec_sha256", "VARCHAR"), ("spec", "VARCHAR"),
          ("columns", "VARCHAR"), ("models", "VARCHAR"), ("achieved", "VARCHAR"), ("tracked", "VARCHAR"),
          ("tracked_kind", "VARCHAR"), ("tracked_type", "VARCHAR"), ("sensitive", "VARCHAR"), ("mode", "VARCHAR"),
          ("m", "BIGINT"), ("rows", "BIGINT"), ("members", "BIGINT"), ("groups", "BIGINT"),
          ("counterfeits", "BIGINT"), ("secret_id", "VARCHAR"), ("composed", "VARCHAR"), ("prev", "VARCHAR"),
          ("checksum", "VARCHAR")]
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
    #: why the release is written untracked (a mark in the ledger, no fingerprints): "no secret"
    #: (a person-level release without the publisher's secret) or "asked" (--untracked)
    untracked: str | None = None
    outputs: tuple[str, ...] = ()  # the tables the release writes (an earlier release of one is composed)
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


def present(eng: Engine, schema: str | None = None) -> set[str]:
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


def entries(eng: Engine, where: str = "", schema: str | None = None, dropped: bool = False,
            dp: bool = False) -> list[dict[str, Any]]:
    """The ledger's rows (oldest first), as dicts; [] when the database has no ledger. ``dropped``:
    with the tombstones of entries dropped on request (they keep the chain of checksums); ``dp``:
    with the differentially private releases' entries (the syntactic releases' logic never reads
    them)."""
    if not exists(eng, schema):
        return []
    names, rows = eng.fetch_rows(f"SELECT {', '.join(ident(c) for c, _ in _ENTRY)} FROM {q(LEDGER, schema)} "
                                 f"{where} ORDER BY {ident('id')}")
    out = [dict(zip([c for c, _ in _ENTRY], r)) for r in rows]
    return [e for e in out if (dropped or e["mode"] != DROPPED) and (dp or e["mode"] != DP)]


def dp_spent(eng: Engine, series: str, source: str, schema: str | None = None) -> tuple[float, float]:
    """(epsilon, delta) spent by the differentially private releases of ``series`` or of ``source``
    (basic composition: they add up)."""
    eps = dl = 0.0
    for e in entries(eng, schema=schema, dp=True):
        if e["mode"] == DP and (e["series"] == series or e["source"] == source):
            a = json.loads(e["achieved"] or "{}").get("dp", {})
            eps, dl = eps + float(a.get("epsilon", 0)), dl + float(a.get("delta", 0))
    return eps, dl


def write_dp(eng: Engine, have: set[str], entry: dict[str, Any], schema: str | None = None) -> int:
    """Insert a differentially private release's entry (inside the swap's transaction); its id."""
    _create(eng, schema, have)
    rid = int(eng.scalar("SELECT 1 + greatest(" + ", ".join(
        f"(SELECT COALESCE(max({ident('id' if x == LEDGER else 'release_id')}), 0) FROM {q(x, schema)})"
        for x in TABLES) + ")"))
    _insert(eng, schema, {"id": rid, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          "mode": DP, "members": 0, "counterfeits": 0, **entry})
    return rid


def outputs_of(e: dict[str, Any]) -> list[str]:
    """The tables an entry's release wrote."""
    try:
        return [str(x) for x in json.loads(e.get("tables") or "[]")]
    except ValueError:
        return []


#: what each ledger table's digest covers: every column the composed verification reads
_DIGESTED = {MEMBERS: ["fp", "grp", "hist"], VALUES: ["grp", "value", "n", "counterfeits"], HISTS: ["hist", "value"]}


def _digests(eng: Engine, ids: Iterable[int], schema: str | None = None) -> dict[int, str]:
    """A digest of each release's members, values and histories: per table the row count and an
    order-free sum of a hash of every row over every column the verification reads (so one row
    added, removed or changed by hand changes it), for every release of ``ids`` in one scan of
    each table."""
    ids = [int(i) for i in ids]
    if not ids:
        return {}
    parts: dict[int, list[list[str]]] = {i: [] for i in ids}
    for table, cols in _DIGESTED.items():
        got = {r[0]: r[1:] for r in eng.fetch_rows(
            f"SELECT release_id, count(*), {eng.digest_sum([f'CAST({ident(c)} AS VARCHAR)' for c in cols])} "
            f"FROM {q(table, schema)} WHERE release_id IN ({', '.join(map(str, ids))}) GROUP BY release_id")[1]}
        for i in ids:
            parts[i].append([str(x) for x in got.get(i, (0, 0))])
    return {i: json.dumps(p) for i, p in parts.items()}


def _checksum(secret: bytes, entry: dict[str, Any], digest: str) -> str:
    body = json.dumps({c: (None if entry.get(c) is None else str(entry[c])) for c, _ in _ENTRY if c != "checksum"},
                      sort_keys=True) + digest
    return hmac.new(secret, body.encode(), "sha256").hexdigest()


def problems(eng: Engine, rows: list[dict[str, Any]], secret: bytes | None = None,
             schema: str | None = None, only: Iterable[int] | None = None, links: bool = True) -> dict[int, str]:
    """What is wrong with the ledger ``rows`` (every row, tombstones included): release id -> one
    phrase. The entries of each secret form a chain, each checksum covering its predecessor's, so
    an entry deleted by hand breaks the next one's link; fingerprints with no entry are an entry
    deleted by hand (or, on an engine without transactions, the leftovers of a run killed before
    its entry: ignored there, above the last entry and below it alike, since the next entry takes
    an id above them and no reader goes past the entries; an entry deleted by hand is still found
    by the next one's link); with ``secret``, every entry keyed by it
    is checked against its checksum (its fields, its predecessor's checksum and a digest of its
    members, values and histories); ``only``: the ids whose checksums are checked (default: all);
    ``links``: check the chain and the orphans too."""
    out: dict[int, str] = {}
    if secret is not None:
        out.update(_failing_checksums(eng, rows, secret, schema, only))
    if not links:
        return out
    ids = {int(e["id"]) for e in rows}
    last: dict[str, str | None] = {}
    for e in rows:
        if e["mode"] in (UNTRACKED, DP):
            continue
        sid = e["secret_id"] or ""
        if e["prev"] != last.get(sid) and e["mode"] != DROPPED:  # a tombstone only carries the link on
            out[int(e["id"])] = ("follows a missing entry (the chain of checksums breaks): an entry was deleted "
                                 "by hand")
        last[sid] = e["checksum"]
    orphans: set[int] = set()
    have = present(eng, schema)
    for t in (MEMBERS, VALUES, HISTS):
        if t in have:
            orphans |= {int(r[0]) for r in eng.fetch_rows(f"SELECT DISTINCT release_id FROM {q(t, schema)}")[1]}
    for i in sorted(orphans - ids):
        if eng.dialect != "spark":
            out[i] = "has fingerprints but no entry: the entry was deleted by hand"
    return out


def _failing_checksums(eng: Engine, rows: list[dict[str, Any]], secret: bytes, schema: str | None,
                       only: Iterable[int] | None) -> dict[int, str]:
    sid = secret_id(secret)
    keep = None if only is None else {int(i) for i in only}
    mine = [e for e in rows if e["secret_id"] == sid and e["mode"] not in (UNTRACKED, DROPPED)
            and (keep is None or int(e["id"]) in keep)]
    digests = _digests(eng, [e["id"] for e in mine], schema)
    return {int(e["id"]): "fails its checksum: the ledger was edited by hand"
            for e in mine if _checksum(secret, e, digests[e["id"]]) != e["checksum"]}


def _refuse_problems(eng: Engine, t: Tracking, rows: list[dict[str, Any]], only: Iterable[int] | None = None) -> None:
    """Refuse, in one line, a ledger whose chain breaks or that holds orphans, or whose entries
    ``only`` (the ones this release is read with) fail their checksums."""
    bad = problems(eng, rows, t.secret, t.schema, only=[] if only is None else only, links=only is None)
    if bad:
        i = min(bad)
        e = next((x for x in rows if int(x["id"]) == i), None)
        what = f"ledger release {i}" + (f" (series {e['series']!r})" if e else "")
        raise InputError(f"{what} {bad[i]}; restore the ledger, or remove the entry with `anonydb releases --drop "
                         f"{i}` (`anonydb releases --verify` lists every problem)")


def chain(eng: Engine, t: Tracking, key_type: str, rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The earlier tracked releases composed with ``t``'s whatever the persons they share: those of
    its series, of its source and of its outputs (every series: views and sequels compose alike),
    after the ledger is checked: its chain and checksums under ``t``'s secret, the secret of
    each of these, the tracked column's type. Raises an InputError in one line otherwise."""
    rows = entries(eng, schema=t.schema, dropped=True) if rows is None else rows
    _refuse_problems(eng, t, rows)  # the chain and orphans: every entry
    sid = secret_id(t.secret)
    out = []
    for e in rows:
        if e["mode"] in (UNTRACKED, DROPPED) or not _related(e, t):
            continue
        if e["secret_id"] != sid:
            raise InputError(f"ledger release {e['id']} (series {e['series']!r}) of {e['source']} was keyed by another "
                             f"secret: its fingerprints cannot be matched, so the releases cannot be verified "
                             f"together; give the series' secret ({option('secret-file')} or $ANONYDB_SECRET)")
        if e["tracked"] == t.key and e["tracked_type"] != key_type:
            raise InputError(f"the tracked column {t.key!r} of {t.source} is {key_type} now but was "
                             f"{e['tracked_type']} in ledger release {e['id']}: its fingerprints would not match")
        out.append(e)
    _refuse_problems(eng, t, rows, [e["id"] for e in out])  # the checksums of the entries read
    return out


def _related(e: dict[str, Any], t: Tracking) -> list[str]:
    """Why an earlier entry is composed with ``t`` whoever it holds: same series, source or output."""
    return ([w for w, hit in (("series", e["series"] == t.series), ("source", e["source"] == t.source)) if hit]
            + (["output"] if set(outputs_of(e)) & set(t.outputs) else []))


def scope(eng: Engine, t: Tracking, key_type: str, fps: str) -> list[dict[str, Any]]:
    """Every earlier tracked release composed with ``t``'s: :func:`chain`'s, and any other release
    keyed by the same secret that holds one of the fingerprints of ``fps`` (a relation with a
    column ``fp``): the same persons under another file name or series. Each entry gets ``why``
    (series, source, output, persons) and ``shared`` (the persons it holds of ``fps``).

    The overlap is one join of ``fps`` with the members of every such release: a hash join of the
    release's fingerprints against the ledger's (docs/releases.md gives its cost at 10M rows)."""
    rows = entries(eng, schema=t.schema, dropped=True)
    live = [e for e in rows if e["mode"] != DROPPED]
    related = {int(e["id"]): e for e in chain(eng, t, key_type, rows)}
    sid = secret_id(t.secret)
    mine = [int(e["id"]) for e in live if e["secret_id"] == sid and e["mode"] != UNTRACKED]
    shared: dict[int, int] = {}
    if mine:
        shared = {int(r[0]): int(r[1]) for r in eng.fetch_rows(
            f"SELECT m.release_id, count(*) FROM {q(MEMBERS, t.schema)} AS m JOIN {ident(fps)} AS c ON c.fp = m.fp "
            f"WHERE m.release_id IN ({', '.join(map(str, mine))}) GROUP BY m.release_id")[1]}
    out = []
    for e in live:
        i = int(e["id"])
        why = _related(e, t) if i in related else []
        if shared.get(i):
            why.append("persons")
        if why:
            out.append({**e, "why": why, "shared": shared.get(i, 0)})
    extra = [e["id"] for e in out if int(e["id"]) not in related]
    if extra:
        _refuse_problems(eng, t, rows, extra)
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
    if t.untracked:  # a mark only: no fingerprints, nothing to compose
        t.staged.update({"have": present(eng, t.schema), "stage": stage})
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
    earlier = scope(eng, t, key_type, grouped)
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
    ids = same_attribute(eng, earlier, t, vals)
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
        if t.mode != "m-invariance" and t.sensitive and t.l:  # Xiao & Tao's groups keep their values
            for i in ids:
                n, fewest = composition.difference_exposed(eng, s, members, vals, q(MEMBERS, t.schema),
                                                           q(VALUES, t.schema), int(i), t.l)
                if n:
                    e = next(x for x in earlier if x["id"] == i)
                    who = "persons" if t.kind == "person" else "records"
                    raise AnonyDBError(
                        f"composed verification failed: read with ledger release {i} (series {e['series']!r}, "
                        f"{e['created']}), {n} {who} new since it are left with fewer than {t.l} possible sensitive "
                        f"values (as few as {fewest}) once its groups that moved whole are subtracted (Byun et al.'s "
                        f"difference attack); nothing was written ({HINT})")
    composed = [{"id": int(e["id"]), "series": e["series"], "source": e["source"], "why": e["why"],
                 "shared": int(e["shared"])} for e in earlier]
    t.staged.update({"have": present(eng, t.schema), "stage": stage, "members": members, "values": vals,
                     "tagged": pub.sides[stage]["lh"], "hists": pub.sides[stage]["lhv"], "key_type": key_type,
                     "exposure": exp, "earlier": [e["id"] for e in earlier], "composed": composed,
                     "outside": [c for c in composed if c["why"] == ["persons"]]})


def same_attribute(eng: Engine, earlier: list[dict[str, Any]], t: Tracking, vals: str) -> list[int]:
    """The earlier releases whose sensitive values are read with ``t``'s: those of the same
    sensitive column, and those of a column under another name that publishes a value this
    release publishes too (a renamed column: composing them is the safe reading)."""
    same = [int(e["id"]) for e in earlier if (e["sensitive"] or None) == (t.sensitive or None)]
    other = [int(e["id"]) for e in earlier if e["sensitive"] and t.sensitive and e["sensitive"] != t.sensitive]
    if other:
        hit = {int(r[0]) for r in eng.fetch_rows(
            f"SELECT DISTINCT v.release_id FROM {q(VALUES, t.schema)} AS v WHERE v.release_id IN "
            f"({', '.join(map(str, other))}) AND v.value IN (SELECT value FROM {ident(vals)})")[1]}
        same += [i for i in other if i in hit]
    return sorted(same)


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


#: what a refused composition can do instead
HINT = ("coarser classes keep more values in common: raise k; --method minvariant continues the earlier groups "
        "of records that keep their values")


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
                           f"written ({HINT})")


def write(eng: Engine, t: Tracking, out_tables: list[str], rows: int, report: Any) -> int:
    """Insert the entry of the release being committed, and its members, values and histories
    (called inside the swap's transaction). Returns its id. An untracked release leaves a mark:
    its entry, with no fingerprints, no secret's id and no checksum."""
    st = t.staged
    sc = t.schema
    _create(eng, sc, st["have"])
    # the next id past every table's: an engine without transactions (Spark) may have kept the
    # members of a run killed before its entry row, which must not join the next entry
    rid = int(eng.scalar("SELECT 1 + greatest(" + ", ".join(
        f"(SELECT COALESCE(max({ident('id' if x == LEDGER else 'release_id')}), 0) FROM {q(x, sc)})"
        for x in TABLES) + ")"))
    spec = t.spec or ""
    entry: dict[str, Any] = {
        "id": rid, "series": t.series, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": t.source, "method": t.method,
        "tables": json.dumps(list(t.outputs) if t.staged.get("named") else out_tables),
        "spec_sha256": hashlib.sha256(spec.encode()).hexdigest(), "spec": spec,
        "columns": json.dumps(t.columns, sort_keys=True), "models": json.dumps(t.models, sort_keys=True, default=str),
        "tracked": t.key or None, "tracked_kind": t.kind, "sensitive": t.sensitive, "rows": int(rows)}
    if t.untracked:
        entry.update(mode=UNTRACKED, members=0, groups=0, counterfeits=0, composed=json.dumps({"untracked": t.untracked}),
                     achieved=json.dumps(_achieved(report), sort_keys=True))
        _insert(eng, sc, entry)
        return rid
    eng.execute(f"INSERT INTO {q(MEMBERS, sc)} SELECT {rid}, fp, grp, hist FROM {ident(st['tagged'])}")
    eng.execute(f"INSERT INTO {q(VALUES, sc)} SELECT {rid}, grp, value, n, counterfeits FROM {ident(st['values'])}")
    eng.execute(f"INSERT INTO {q(HISTS, sc)} SELECT {rid}, hist, value FROM {ident(st['hists'])}")
    counts = eng.fetch_rows(f"SELECT count(*), count(DISTINCT grp), COALESCE(sum(counterfeits), 0) "
                            f"FROM {ident(st['values'])}")[1][0]
    members = int(eng.scalar(f"SELECT count(*) FROM {ident(st['tagged'])}"))
    sid = secret_id(t.secret)
    prev = [e["checksum"] for e in entries(eng, schema=sc, dropped=True) if e["secret_id"] == sid]
    entry.update(achieved=json.dumps(_achieved(report), sort_keys=True), tracked_type=st["key_type"], mode=t.mode,
                 m=t.m, members=members, groups=int(counts[1]), counterfeits=int(counts[2]), secret_id=sid,
                 composed=json.dumps(st.get("composed", []), sort_keys=True), prev=prev[-1] if prev else None)
    entry["checksum"] = _checksum(t.secret, entry, _digests(eng, [rid], sc)[rid])
    _insert(eng, sc, entry)
    return rid


def _achieved(report: Any) -> dict[str, Any]:
    return {v.model: {k: str(x) for k, x in (getattr(v, "achieved", {}) or {}).items()}
            for v in getattr(report, "verdicts", []) or []}


def _insert(eng: Engine, schema: str | None, entry: dict[str, Any]) -> None:
    eng.execute(f"INSERT INTO {q(LEDGER, schema)} ({', '.join(ident(c) for c, _ in _ENTRY)}) VALUES ("
                + ", ".join("NULL" if entry.get(c) is None else
                            (str(int(entry[c])) if ty == "BIGINT" else literal(entry[c])) for c, ty in _ENTRY) + ")")


def drop(eng: Engine, ids: Iterable[int], schema: str | None = None) -> list[int]:
    """Remove ledger entries (on request only) with their members, values and histories. A tracked
    entry leaves a tombstone (mode ``dropped``: its id, series, checksum and link) so the chain of
    checksums still holds; an untracked mark goes whole; an id with fingerprints but no entry (an
    entry deleted by hand) loses its fingerprints."""
    gone = []
    rows = {int(e["id"]): e for e in entries(eng, schema=schema, dropped=True)}
    orphans = {i for i, why in problems(eng, list(rows.values()), None, schema).items() if i not in rows}
    for i in ids:
        if (int(i) not in rows or rows[int(i)]["mode"] == DROPPED) and int(i) not in orphans:
            raise InputError(f"no ledger release {i}; `anonydb releases` lists them")
    eng.execute("BEGIN TRANSACTION")
    try:
        for i in map(int, ids):
            for t in (MEMBERS, VALUES, HISTS):
                if t in present(eng, schema):
                    eng.execute(f"DELETE FROM {q(t, schema)} WHERE {ident('release_id')} = {i}")
            if i in rows:
                eng.execute(f"DELETE FROM {q(LEDGER, schema)} WHERE {ident('id')} = {i}")
                if rows[i]["mode"] != UNTRACKED:
                    _insert(eng, schema, {**rows[i], "mode": DROPPED})
            gone.append(i)
        eng.execute("COMMIT")
    except BaseException:
        eng.execute("ROLLBACK")
        raise
    return gone


__all__ = ["LEDGER", "MODES", "UNTRACKED", "DROPPED", "DP", "dp_spent", "write_dp", "q", "Tracking", "chain", "current", "drop", "entries", "outputs_of",
           "problems", "scope", "stage_members", "tracking", "write"]
