"""Whether a release is tracked in the ledger, and how [issue 51, issue 62; survey §6.2-6.3].

A release that names its record owners (``person``, or a record ``key``) and writes into a
database that outlives the run (a DuckDB file, PostgreSQL, Spark) is tracked: its series is
``series``, by default the output name, and it is verified together with every earlier release of
the same persons (:func:`anonydb.release.ledger.scope`), whatever its source is called. Without
the publisher's secret it is still written, untracked, and the ledger keeps a mark of it (output,
series, person column; no fingerprints); a later release over that output or in that series is
then refused unless it says ``untracked`` (``--untracked``, spec ``series: false``), the only way
to write a release that is composed with no other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..engines.base import Engine
from ..errors import InputError, option
from ..schema import split_list

#: the methods that fingerprint their groups for the ledger
TRACKED_METHODS = ("mondrian", "fulldomain", "anatomy", "minvariant")
MODEL_PARAMS = ("k", "l", "l_variant", "c", "t", "distance", "n", "alpha", "delta", "reference", "supersets", "bt",
                "bt_distance", "beta", "beta_variant", "allowed", "protected", "c2", "conf_bound", "xy_k", "ke",
                "epsilon_m", "multi_k", "qid_sets", "k_map", "guard", "breach")


def persists(eng: Engine) -> bool:
    """Whether the engine's database outlives the run (an in-memory DuckDB does not: a ledger there
    would vanish with the release)."""
    if eng.dialect != "duckdb":
        return True
    path = eng.scalar("SELECT path FROM duckdb_databases() WHERE database_name = current_database()")
    return bool(path) and str(path) != ":memory:"


def source_id(eng: Engine, source: Any) -> str:
    """The source as the ledger names it: a table's name, or a file's resolved path (``./v.csv``
    and ``v.csv`` are one file)."""
    name = str(source)
    if isinstance(source, Path) or (not eng.exists(name) and Path(name).exists()):
        return str(Path(name).resolve())
    return name


def call_text(source: Any, qi: list[str], sensitive: str | None, method: str, out: str,
              models: dict[str, Any]) -> str:
    """What the ledger keeps of a release made from Python: the call's arguments."""
    return "anonydb.anonymize " + json.dumps({"source": str(source), "qi": qi, "sensitive": sensitive,
                                              "method": method, "out": out, **models}, default=str, sort_keys=True)


def outputs(method: str, out: str) -> tuple[str, ...]:
    """The tables a release of ``method`` into ``out`` writes."""
    if method in ("anatomy", "injector"):
        return (f"{out}_qit", f"{out}_st")
    if method == "minvariant":
        return (out, f"{out}_qit", f"{out}_st", f"{out}_counterfeits")
    return (out,)


def plan(eng: Engine, source: Any, qi: Any, sensitive: str | None, method: str, out: str, person: str | None,
         pseudonymize: Any, secret_file: Any, series: str | None, key: str | None, composition: str | None,
         m: int | None, spec_text: str | None, params: dict[str, Any], keep: Any, schema: str | None = None,
         untracked: bool = False, name_as: str | None = None) -> Any:
    """The ledger's :class:`~anonydb.release.ledger.Tracking` of this release (``untracked`` set
    when it is written as a mark only), or None when it is not tracked: it names no record owner
    and no earlier release of its output, series or source is in the ledger, or its database does
    not outlive the run. ``name_as``: the release's name when ``out`` is a staging table (a spec
    writing files): its default series and the output the ledger lists."""
    from ..pseudonyms import load_key
    from ..release import ledger

    asked = series is not None or key is not None or composition is not None or m is not None \
        or method == "minvariant"
    if key is not None and person is not None and key != person:
        raise InputError(f"give the tracked column once: key {key!r} or person {person!r}")
    col = key or person
    if col is not None or asked:
        _one_ledger(eng, schema)
    src = source_id(eng, source)
    name = series or name_as or out
    outs = (name_as,) if name_as else outputs(method, out)
    rows = ledger.entries(eng, schema=schema)
    related = [e for e in rows if e["series"] == name or set(ledger.outputs_of(e)) & set(outs)]
    marks = [e for e in related if e["mode"] == ledger.UNTRACKED]
    tracked = [e for e in rows if e["mode"] != ledger.UNTRACKED and (e in related or e["source"] == src)]
    if untracked:
        if col is None and not marks and not tracked:
            return None  # no record owner named, and no release of these persons to stay apart from
        if asked:
            raise InputError(f"{option('untracked')} writes a release composed with no other: give it without "
                             f"{option('series')}, {option('key')}, {option('composition')} or {option('m')}")
        return _mark(col, person, name, src, method, outs, "asked", spec_text, qi, sensitive, out, params, keep,
                     schema)
    if marks:
        e = marks[-1]
        why = json.loads(e["composed"] or "{}").get("untracked")
        where = f"output {out}" if set(ledger.outputs_of(e)) & set(outs) else f"series {name!r}"
        raise InputError(f"the last release of {where} (ledger mark {e['id']}) was written untracked "
                         f"({'no publisher' + chr(39) + 's secret' if why == 'no secret' else 'at request'}), so this "
                         f"release cannot be verified with it: give {option('untracked')} to write it composed with "
                         f"no other; to track releases of these persons, give {option('secret-file')} to every one")
    if col is None:
        if tracked or asked:
            was = sorted({e["tracked"] for e in tracked if e["tracked"]})
            raise InputError(f"{len(tracked)} tracked release(s) of this output, series or source are in the ledger "
                             f"(by {', '.join(was)}): this release is verified together with them, so name the "
                             f"tracked column ({option('person')} or {option('key')} {was[0] if was else 'COLUMN'}), "
                             f"or give {option('untracked')}" if tracked else
                             f"a release in a series is tracked by a record key: give {option('key')} COLUMN (unique "
                             f"per record) or {option('person')} COLUMN")
        return None
    if not asked and not tracked and not persists(eng):
        return None  # an in-memory database: no release of it outlives the run
    if method not in TRACKED_METHODS:
        raise InputError(f"a tracked release (person, key, series) is written by {', '.join(TRACKED_METHODS)}, not "
                         f"{method}; give {option('untracked')} to write it composed with no other")
    if pseudonymize and col in split_list(pseudonymize, "pseudonymize") and asked and key is not None:
        raise InputError(f"the tracked column {col!r} is published as a pseudonym: its releases would link records "
                         f"across releases (the intersection attack); do not publish it")
    if params.get("varying"):
        raise InputError(f"a tracked release gives each person one group, and varying QIs give a person several: "
                         f"give {option('untracked')} to write it composed with no other")
    k, origin = load_key(secret_file)
    if origin == "fresh":
        if asked or tracked:
            raise InputError(f"a tracked release needs the publisher's secret ({option('secret-file')} FILE or "
                             f"$ANONYDB_SECRET): a fresh key would match no later release")
        return _mark(col, person, name, src, method, outs, "no secret", spec_text, qi, sensitive, out, params, keep,
                     schema)
    mode = composition or ("m-invariance" if m is not None else None)
    earlier = [e for e in tracked if e["source"] == src or e in related]
    if mode is None:  # the series' own, else the source's latest, else m-invariance for minvariant
        modes = [e["mode"] for e in earlier if e["series"] == name] or [e["mode"] for e in earlier]
        mode = modes[-1] if modes else ("m-invariance" if method == "minvariant" else "intersection")
    if mode == "m-invariance" and m is None:
        m = next((int(e["m"]) for e in reversed(earlier) if e["m"] is not None), params.get("l"))
    t = _tracking(col, person, name, src, method, outs, spec_text, qi, sensitive, out, params, keep, schema,
                  secret=k, mode=mode, m=m)
    t.staged["series_sensitive"] = {e["sensitive"] for e in earlier if e["tracked"] == col and e["series"] == name}
    t.staged["source_earlier"] = bool(earlier)
    return t


def _one_ledger(eng: Engine, schema: str | None) -> None:
    """One ledger per database: a release whose ledger schema differs from the one the database
    keeps its releases in would be composed with none of them."""
    from ..release import ledger

    current, where = eng.schemas_holding(ledger.LEDGER)
    mine = (schema or current).lower()
    other = [w for w in where if w.lower() != mine]
    if other:
        raise InputError(f"the database keeps its release ledger in schema {other[0]!r}, not {mine!r}: a release is "
                         f"composed with the releases of one ledger; give {option('ledger-schema')} {other[0]}")


def _mark(col: str | None, person: str | None, name: str, src: str, method: str, outs: tuple[str, ...], why: str,
          spec_text: str | None, qi: Any, sensitive: str | None, out: str, params: dict[str, Any], keep: Any,
          schema: str | None) -> Any:
    return _tracking(col, person, name, src, method, outs, spec_text, qi, sensitive, out, params, keep, schema,
                     secret=b"", untracked=why)


def _tracking(col: str | None, person: str | None, name: str, src: str, method: str, outs: tuple[str, ...],
              spec_text: str | None, qi: Any, sensitive: str | None, out: str, params: dict[str, Any], keep: Any,
              schema: str | None, **kw: Any) -> Any:
    from ..release import ledger

    ls = params.get("l")
    qi_cols = split_list(qi, "quasi-identifiers")
    roles = {**{q: "quasi-identifier" for q in qi_cols}, **({sensitive: "sensitive"} if sensitive else {}),
             **{c: "kept" for c in split_list(keep, "keep")}}
    models = {k_: v for k_, v in params.items() if k_ in MODEL_PARAMS and v is not None}
    t = ledger.Tracking(key=col or "", kind="person" if person is not None or col is None else "key", series=name,
                           l=ls if isinstance(ls, int) and not isinstance(ls, bool) else None,
                           spec=spec_text or call_text(src, qi_cols, sensitive, method, out, models), source=src,
                           method=method, models=models, columns=roles, sensitive=sensitive, schema=schema,
                           outputs=outs, **kw)
    t.staged["named"] = outs != outputs(method, out)  # the ledger lists the spec's files, not its staging table
    return t


def continues(track: Any, method: str, sensitive: str | None) -> bool:
    """Whether a tracked release is written as the next release of its series
    (:func:`anonydb.methods.invariant.invariant`): always with minvariant; with mondrian and anatomy
    when the series already has releases of the same sensitive attribute (a re-run: a release
    partitioned anew would be judged against them, and usually refused), or begins m-invariant
    (Mondrian's classes are not m-unique). A new series of the source (another projection) is
    written as asked and judged with the earlier releases: refused if it would enable the join
    attack (--method minvariant continues it). A series tracked by persons is judged, not
    continued."""
    if track is None or track.untracked:
        return False
    if method == "minvariant":
        return True
    if method not in ("mondrian", "anatomy") or sensitive is None or track.kind != "key":
        return False
    if track.sensitive in track.staged.get("series_sensitive", ()):
        return True  # a re-run of the series
    return track.mode == "m-invariance" and not track.staged.get("source_earlier")  # an m-invariant series begins


def result_line(track: Any) -> str | None:
    """The ledger's line under a release's result: its entry and what it was composed with, or why
    it is untracked."""
    if track is None:
        return None
    if track.untracked == "asked":
        return (f"  ledger: untracked at your request (mark {track.staged.get('id')}): not composed with earlier or "
                f"later releases")
    if track.untracked:
        return (f"  ledger: untracked (no publisher's secret): a later release of these persons cannot be verified "
                f"with this one; give {option('secret-file')} to track it")
    if track.staged.get("id") is None:
        return None
    composed = track.staged.get("composed", [])
    line = (f"  ledger: release {track.staged['id']} of series {track.series!r}, verified together with "
            f"{len(composed)} earlier release(s)" + (f" ({', '.join(str(c['id']) for c in composed)})" if composed
                                                      else "") + " of its series, source, output and persons")
    outside = track.staged.get("outside", [])
    if outside:
        line += "; shares " + ", ".join(f"{c['shared']} persons with release {c['id']} (series {c['series']!r}, "
                                        f"{Path(c['source']).name})" for c in outside) + " outside its series and source"
    return line
