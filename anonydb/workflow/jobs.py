"""The release lifecycle and the one obvious entry point.

:func:`anonymize` runs any method (mondrian, fulldomain, anatomy, slicing) and returns a
:class:`Release`: the names of what it wrote (``.table``, ``.tables``), the verification
(``.report``), the SQL it ran (``.sql``), pandas / Arrow accessors and the method's own result.
:func:`run_spec` runs a YAML release spec (:mod:`anonydb.workflow.spec`) end to end: load, anonymize,
verify, materialize atomically, write the report. :func:`plan_spec` prints the SQL a spec would
run without touching the warehouse.

Every method builds its output under staging names, verifies it with the independent checks and
swaps it into place in one transaction, so a failed run leaves the previous release and the
source untouched and no staging tables behind; file outputs are written beside their target and
renamed into place only after every file of the release is complete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import events
from ..engines import is_postgres_url, is_spark_url
from ..engines.duckdb import DuckDBEngine
from ..engines.base import Engine
from ..engines import connect
from ..errors import InputError, NotAvailable
from ..schema import split_list
from ..sources import accepts_frames
from .spec import Spec, SpecError, load_spec
from ..release.publish import export, guard_file, stage_name
from ..sqlgen import ident, literal

from .tracking import MODEL_PARAMS, continues, plan, result_line

METHODS = ("mondrian", "fulldomain", "anatomy", "slicing", "injector", "minvariant")
#: methods releasing a QIT/ST pair (<out>_qit, <out>_st)
QIT_ST = ("anatomy", "injector")


@dataclass
class Release:
    """What a run wrote and how it was verified."""

    method: str
    table: str  # the main output: generalized table, QIT, or the sliced view
    tables: dict[str, str]  # role -> name (release | qit, st | view, c1, c2, ...)
    qi: list[str]
    sensitive: str | None
    rows: int
    seconds: float
    report: Any  # the verification: anonydb.checker.Report, or the sliced verdict
    result: Any  # the method's own result object
    engine: Engine
    sql: list[str] = field(default_factory=list)  # every statement the run executed, in order
    files: list[str] = field(default_factory=list)
    spec: Spec | None = None
    hierarchies: dict[str, Any] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # source columns not published (no role, identifiers)
    kept: list[str] = field(default_factory=list)  # published unchanged at the user's request
    order: str = ""  # how the rows are ordered: a secret, or recomputable from the seed
    ledger: int | None = None  # the release's id in the database's ledger, when tracked (or marked untracked)
    ledger_line: str | None = None  # what the ledger says of it: composed with what, or why untracked

    @property
    def holds(self) -> bool:
        return bool(self.report.holds)

    def to_arrow(self, which: str | None = None) -> Any:
        """The release (or its part ``which``: qit, st, c1, ...) as a pyarrow Table."""
        return self.engine.con.sql(f"SELECT * FROM {self._relation(which)}").to_arrow_table()  # type: ignore[attr-defined]

    def to_pandas(self, which: str | None = None) -> Any:
        """The release (or its part ``which``) as a pandas DataFrame."""
        return self.engine.con.sql(f"SELECT * FROM {self._relation(which)}").df()  # type: ignore[attr-defined]

    def to_polars(self, which: str | None = None) -> Any:
        """The release (or its part ``which``) as a Polars DataFrame, from its Arrow table."""
        import polars as pl

        return pl.from_arrow(self.to_arrow(which))

    def _repr_html_(self) -> str:
        """The release in a notebook: its report page's body (verdicts, classes, risk, loss)."""
        from .reporting import release_report, render_html

        return render_html(release_report(self), fragment=True)

    def _relation(self, which: str | None) -> str:
        if not self.tables and self.files:  # a file release: read the file back (anatomy: <stem>_qit, _st)
            parts = {Path(f).stem.rsplit("_", 1)[-1]: f for f in self.files}
            if which is None:
                f = self.files[0]
            elif len(self.files) > 1 and which in parts:
                f = parts[which]
            else:
                raise InputError(f"this release has no part {which!r}; its files are {', '.join(self.files)}")
            reader = "read_parquet" if f.lower().endswith(".parquet") else "read_csv_auto"
            return f"{reader}({literal(f)})"
        if which is None:
            return ident(self.table)
        if which not in self.tables:
            raise InputError(f"this release has no part {which!r}; its parts are {', '.join(self.tables)}")
        return ident(self.tables[which])

    def format(self) -> str:
        return self.result.format()

    def __repr__(self) -> str:
        return (f"Release(method={self.method!r}, table={self.table!r}, rows={self.rows}, holds={self.holds}, "
                f"statements={len(self.sql)})")


@accepts_frames("source_name")
def anonymize(source: str, qi: str | Iterable[str], sensitive: str | None = None, *, method: str = "mondrian",
              out: str, engine: Engine | Any = None, hierarchies: dict[str, Any] | None = None,
              kinds: dict[str, str] | None = None, identifiers: str | Iterable[str] | None = None,
              keep: str | Iterable[str] | None = None, seed: int | None = None,
              replace: bool = False, as_view: bool = False, person: str | None = None,
              pseudonymize: str | Iterable[str] | None = None, secret_file: Any = None,
              progress: Callable[[dict[str, Any]], None] | None = None, risk: Any = None, public: str | None = None,
              series: str | None = None, key: str | None = None, composition: str | None = None,
              m: int | None = None, spec_text: str | None = None, source_name: str | None = None,
              ledger_schema: str | None = None, untracked: bool = False, name_as: str | None = None,
              **params: Any) -> Release:
    """Anonymize ``source`` with ``method`` into ``out``; return the verified :class:`Release`.

    ``params`` holds the privacy models (``k``, ``l`` with ``l_variant``/``c``, ``t`` with
    ``distance``/``reference``, ``n``, ``alpha``, ``delta``) and the method's own options
    (mondrian: ``relaxed``, ``categorical``, ``plan``; fulldomain: ``max_suppression``, ``metric``;
    injector: ``min_exp``, ``itemset_support``;
    anatomy: ``groups``; slicing: ``columns``, ``sensitive_column_size`` (alpha), ``column_k``,
    ``tries``, ``bins``, ``membership``).

    Fail closed (:mod:`anonydb.release.publish`): the release publishes the QIs, the sensitive attribute
    and the ``keep`` columns; ``identifiers`` and every other column are dropped (``.dropped``);
    the models are verified over every published column before anything is written. ``seed``
    None orders the rows by a fresh secret; an integer gives an order anyone with the seed can
    recompute (``.order`` says which). ``person``: the column naming each record's owner; every
    model then counts distinct persons (mondrian, fulldomain, anatomy), and the column is not
    published as it is. ``pseudonymize``: columns published as keyed pseudonyms (HMAC-SHA256 keyed
    by ``secret_file``, ``$ANONYDB_SECRET`` or a fresh key; mondrian, fulldomain, anatomy). ``risk``:
    limits the release must meet (a spec's ``risk:`` block: e.g. ``{"max_journalist_risk": 0.05}``,
    :class:`anonydb.risk.assess.Limits`), judged over every published column but the sensitive one
    before anything is written. ``public`` with ``k_map``: k-map against that public table (the
    population the source is drawn from; :func:`anonydb.methods.presence.presence_anonymize`,
    mondrian or fulldomain, the QIs generalized and the sensitive and ``keep`` columns published).

    Releases over time (:mod:`anonydb.release.ledger`): ``key`` (a unique record key) or ``person``
    tracks the records, fingerprinted under the publisher's secret (``secret_file`` or
    ``$ANONYDB_SECRET``), and the release is recorded in the database's ledger in the transaction
    that writes it, as the next release of ``series`` (default: ``out``). Before anything is
    written it is verified together with every earlier release of ``source`` in the ledger:
    ``composition`` "intersection" (default: every person keeps l values across all of them),
    "insert-only" (Byun et al. 2006: no record leaves) or "m-invariance" (with ``m``: Xiao & Tao
    2007). A source with tracked releases in the ledger is always tracked. ``ledger_schema``: the
    schema holding the ledger (default: the current one; created if missing). ``source_name``: the
    source as the ledger names it, when ``source`` is a reduced copy (a spec's)."""
    from ..release.publish import RiskGate, risk_gate
    from ..risk.assess import Limits

    gate = None
    if risk is not None:
        if method == "slicing":
            raise InputError("risk limits judge a generalized table or a QIT; slicing publishes neither")
        limits = risk if isinstance(risk, Limits) else Limits.parse(risk)
        gate = RiskGate(limits, split_list(qi, "quasi-identifiers"), sensitive, split_list(pseudonymize, "pseudonyms"),
                        dict(hierarchies or {}))
    from ..release.ledger import tracking

    eng = connect(engine)
    track = plan(eng, source_name or source, qi, sensitive, method, out, person, pseudonymize, secret_file, series,
                 key, composition, m, spec_text, params, keep, ledger_schema, untracked, name_as)
    with risk_gate(gate), tracking(track):
        if continues(track, method, sensitive):
            from ..methods.invariant import invariant

            opts = {k_: v for k_, v in params.items() if k_ in ("k", "l", "form") and v is not None}
            if method == "anatomy":
                opts["form"] = "anatomy"
            r = invariant(source, split_list(qi, "quasi-identifiers"), sensitive, out=out, engine=eng,
                          replace=replace, seed=seed, keep=keep, identifiers=identifiers, **opts)
            track.staged.setdefault("id", None)
            return Release(method=method, table=r.table, tables=r.tables, qi=split_list(qi, "quasi-identifiers"),
                           sensitive=sensitive, rows=r.rows, seconds=r.seconds, report=r.report, result=r, engine=eng,
                           ledger=track.staged.get("id"), ledger_line=result_line(track))
        rel = _anonymize(source, qi, sensitive, method=method, out=out, engine=eng, hierarchies=hierarchies,
                         kinds=kinds, identifiers=identifiers, keep=keep, seed=seed, replace=replace,
                         as_view=as_view, person=person, pseudonymize=pseudonymize, secret_file=secret_file,
                         progress=progress, public=public, **params)
        if track is not None:
            rel.ledger, rel.ledger_line = track.staged.get("id"), result_line(track)
        return rel


def _anonymize(source: str, qi: str | Iterable[str], sensitive: str | None = None, *, method: str, out: str,
               engine: Any, hierarchies: Any, kinds: Any, identifiers: Any, keep: Any, seed: int | None,
               replace: bool, as_view: bool, person: str | None, pseudonymize: Any, secret_file: Any,
               progress: Any, public: str | None = None, **params: Any) -> Release:
    from .. import methods as m

    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    start = len(eng.log)
    t0 = time.perf_counter()
    models = {k: v for k, v in params.items() if k in MODEL_PARAMS and v is not None}
    opts = {k: v for k, v in params.items() if k not in MODEL_PARAMS}
    if "k_map" in models or public is not None:
        r = _k_map_release(eng, source, public, qi_cols, sensitive, method, out, models, opts, hierarchies, keep,
                           seed, replace, as_view, person, pseudonymize)
        return Release(method=method, table=out, tables={"release": out}, qi=qi_cols, sensitive=sensitive,
                       rows=r.rows, seconds=time.perf_counter() - t0, report=r.report, result=r, engine=eng,
                       sql=[x.sql for x in eng.log[start:]], hierarchies=dict(hierarchies or {}),
                       dropped=list(r.dropped), kept=list(r.kept))
    allowed = {"mondrian": ("relaxed", "categorical", "try_all_dims", "plan", "varying", "max_suppression"), "fulldomain": ("max_suppression", "metric"),
               "anatomy": ("groups",), "injector": ("min_exp", "itemset_support"), "slicing": ("columns", "sensitive_column_size", "column_k", "tries", "bins",
                                                   "membership", "split_on", "min_bucket")}[method]
    unknown = [k for k in opts if k not in allowed]
    if unknown:
        raise InputError(f"{method} takes no parameter {', '.join(map(repr, unknown))}; its options are "
                         f"{', '.join(allowed)} besides the privacy models")
    if as_view and method not in ("mondrian", "anatomy"):
        raise InputError(f"as_view is offered by mondrian and anatomy, not {method}")
    pseud = {"pseudonymize": pseudonymize, "secret_file": secret_file} if pseudonymize else {}
    if pseudonymize and method in ("slicing", "injector"):
        raise InputError(f"pseudonymize: {method} publishes only its quasi-identifiers and the sensitive attribute")
    if person is not None and method in ("slicing", "injector"):
        raise InputError(f"person: {method} judges rows, not persons; use mondrian, fulldomain or anatomy for "
                         f"several records per person")
    if method != "mondrian" and ("bt" in models or "bt_distance" in models):
        raise InputError(f"(B,t)-privacy (bt) is judged per tuple inside Mondrian; {method} does not offer it")
    if method == "injector":
        extra = [k for k in models if k != "l" and not (k == "l_variant" and models[k] == "distinct")]
        if extra or "l" not in models:
            raise InputError(f"injector releases matching l-diverse groups: give l (not {', '.join(extra) or 'nothing'})")
        _only_attributes(eng, source, method, qi_cols, sensitive, identifiers, keep)
    if method in ("anatomy", "slicing"):
        extra = [k for k in models if k not in ("l", "l_variant", "c")]
        if extra or "l" not in models:
            raise InputError(f"{method} releases l-diverse groups: give l (not {', '.join(extra) or 'nothing'})")
        if method == "slicing" and (models.get("l_variant", "distinct") != "distinct" or "c" in models):
            raise InputError("slicing's l-diversity is p(t,s) <= 1/l: no l_variant or c")
        if method == "slicing":
            _only_attributes(eng, source, method, qi_cols, sensitive, identifiers, keep)
    if method == "mondrian":
        r = m.anonymize(source, qi_cols, sensitive, out=out, engine=eng, hierarchies=hierarchies, kinds=kinds,
                        identifiers=identifiers, keep=keep, seed=seed, replace=replace, as_view=as_view,
                        progress=progress, person=person, **pseud, **opts, **models)
        tables, main, rows, report = {"release": out}, out, r.rows, r.report
    elif method == "fulldomain":
        r = m.fulldomain(source, qi_cols, sensitive, hierarchies=hierarchies or {}, out=out, engine=eng,
                         identifiers=identifiers, keep=keep, replace=replace, seed=seed, progress=progress, **opts,
                         **({"person": person} if person is not None else {}), **pseud, **models)
        tables, main, rows, report = {"release": out}, out, r.rows, r.report
    elif method == "anatomy":
        if hierarchies:
            raise InputError("anatomy releases the QIs unchanged: it takes no hierarchies")
        r = m.anatomy(source, qi_cols, sensitive, out=out, engine=eng, seed=seed, replace=replace, as_view=as_view,
                      l=models["l"], l_variant=models.get("l_variant", "distinct"), c=models.get("c"),
                      identifiers=identifiers, keep=keep, **({"person": person} if person is not None else {}), **pseud,
                      **opts)
        tables, main, rows, report = {"qit": r.qit, "st": r.st}, r.qit, r.rows, r.report
    elif method == "injector":
        r = m.injector(source, qi_cols, sensitive, l=models["l"], out=out, engine=eng, hierarchies=hierarchies,
                       seed=seed, replace=replace, **opts)
        tables, main, rows, report = {"qit": r.qit, "st": r.st}, r.qit, r.rows, r.report
    else:
        o = dict(opts)
        if "sensitive_column_size" in o:
            o["alpha"] = o.pop("sensitive_column_size")
        r = m.slicing(source, qi_cols, sensitive, l=models["l"], out=out, engine=eng, hierarchies=hierarchies,
                      seed=seed, replace=replace, progress=progress, **o)
        tables = {"view": r.view, **{f"c{i + 1}": t for i, t in enumerate(r.tables)}}
        main, rows, report = r.view, r.rows, r.verdict
    return Release(method=method, table=main, tables=tables, qi=qi_cols, sensitive=sensitive, rows=int(rows),
                   seconds=time.perf_counter() - t0, report=report, result=r, engine=eng,
                   sql=[x.sql for x in eng.log[start:]], hierarchies=dict(hierarchies or {}),
                   dropped=list(getattr(r, "dropped", [])), kept=list(getattr(r, "kept", [])),
                   order=getattr(r, "order", ""))


def _k_map_release(eng: Engine, source: str, public: str | None, qi: list[str], sensitive: str | None, method: str,
                   out: str, models: dict[str, Any], opts: dict[str, Any], hierarchies: Any, keep: Any,
                   seed: int | None, replace: bool, as_view: bool, person: str | None, pseudonymize: Any) -> Any:
    """k-map against ``public`` (:func:`anonydb.methods.presence.presence_anonymize`): the QIs
    generalized, the sensitive attribute and ``keep`` published unchanged."""
    from ..methods.presence import presence_anonymize

    if "k_map" not in models or public is None:
        raise InputError("k_map is judged against a public table: give public= (the population the source is drawn "
                         "from) with k_map")
    others = [k for k in models if k != "k_map"]
    if others:
        raise InputError(f"k-map against a public table is judged on its own; drop {', '.join(others)}")
    if method not in ("mondrian", "fulldomain"):
        raise InputError(f"k-map releases are made by mondrian or fulldomain, not {method}")
    if person is not None or pseudonymize or as_view:
        raise InputError("a k-map release matches the public table row by row and is a table: no person, "
                         "pseudonymize or as_view")
    allowed = ("metric", "key") if method == "fulldomain" else ("relaxed", "categorical", "key")
    unknown = [k for k in opts if k not in allowed]
    if unknown:
        raise InputError(f"k-map with {method} takes no parameter {', '.join(map(repr, unknown))}; its options are "
                         f"{', '.join(allowed)}")
    kept = ([sensitive] if sensitive else []) + [c for c in split_list(keep, "keep") if c != sensitive]
    return presence_anonymize(source, public, qi, k_map=models["k_map"], out=out, engine=eng, method=method,
                              hierarchies=hierarchies, seed=seed, replace=replace, keep=kept or None, **opts)


def _only_attributes(eng: Engine, source: str, method: str, qi: list[str], sensitive: str | None,
                     identifiers: Any, keep: Any) -> None:
    """Slicing and Injector publish their attributes only: no kept column; identifiers are checked
    (present, not repeating) and dropped like every other column."""
    from ..release.publish import resolve_columns
    from ..sources import open_source

    if keep:
        raise InputError(f"{method} publishes only its quasi-identifiers and the sensitive attribute; a column to "
                         f"publish must be one of them, not kept unchanged")
    if identifiers:
        with eng.scratch("roles") as s:
            resolve_columns(eng, open_source(eng, source, scratch=s), qi, sensitive, identifiers, None, str(source))


# --- specs ---------------------------------------------------------------------------------------

def run_spec(spec: Spec | str | Path, *, db: str | None = None, engine: Engine | Any = None,
             progress: Callable[[dict[str, Any]], None] | None = None, write_files: bool = True) -> Release:
    """Run a release spec end to end; returns the :class:`Release` (its report written as the spec
    says). ``db`` (or the spec's ``database``) is the DuckDB file; in memory otherwise."""
    sp = spec if isinstance(spec, Spec) else load_spec(spec)
    eng = connect(engine if engine is not None else (db or sp.database))
    if sp.format == "duckdb" and engine is None and not (db or sp.database):
        raise InputError(f"{sp.where('output', 'format')}: format duckdb writes tables into a database; give "
                         f"--db FILE or database: in the spec (or format parquet/csv with a path)")
    from ..errors import SURFACE, cli_surface

    token = cli_surface("spec")
    try:
        return _run_spec(sp, eng, db, progress, write_files)
    except BaseException:
        if engine is None:  # the database this run opened is closed with the failure, not left locked
            eng.close()
        raise
    finally:
        SURFACE.reset(token)


def _run_spec(sp: Spec, eng: Engine, db: str | None, progress: Any, write_files: bool) -> Release:
    if sp.dp is not None:  # a DP release: anonydb.workflow.dpspec (returns its DPResult)
        from .dpspec import run_dp_spec

        return run_dp_spec(sp, eng)
    if sp.linked:
        return _run_linked(sp, eng)
    start = len(eng.log)
    t0 = time.perf_counter()
    files_out = sp.format in ("parquet", "csv")
    out = sp.table if not files_out else stage_name("export", eng)
    if files_out and write_files:
        inputs = [sp.source, sp.path, sp.database, db] + [getattr(h, "source", None) for h in sp.hierarchies.values()]
        for _, path in _parts_of(sp.method, sp):
            guard_file(path, sp.replace, [x for x in inputs if x], flag="output.path", need_folder=False)
    if not files_out and sp.source == sp.table:
        raise InputError(f"{sp.where('output', 'table')}: the release {sp.table!r} would replace its own source")
    try:
        with eng.scratch("spec") as s:
            src = _spec_source(eng, s, sp)
            keep = [a.name for a in sp.attributes if a.role == "insensitive"]
            rel = anonymize(src, sp.qi, sp.sensitive, method=sp.method, out=out, engine=eng,
                            hierarchies=sp.hierarchies or None, kinds=sp.kinds or None, seed=sp.seed,
                            replace=sp.replace or files_out, as_view=sp.view, progress=progress,
                            keep=keep or None, person=sp.person, pseudonymize=sp.pseudonyms or None,
                            secret_file=sp.secret_file, risk=sp.risk, public=sp.public, **_series_args(sp),
                            name_as=str(sp.output_path or sp.table) if files_out else None,
                            **sp.method_params, **sp.model_params())
            dropped = set(rel.dropped) | set(_spec_dropped(eng, sp))
            rel.dropped = [c for c in getattr(sp, "_source_columns", []) if c in dropped]
            if hasattr(rel.result, "dropped"):  # the result's text lists them too
                rel.result.dropped = rel.dropped
            if files_out:
                rel.files = _write_files(eng, rel, sp) if write_files else []
        rel.spec = sp
        rel.seconds = time.perf_counter() - t0
        rel.sql = [x.sql for x in eng.log[start:]]
        if write_files and (sp.report_html or sp.report_json):
            from .reporting import release_report, write_report

            events.phase("report")
            rep = release_report(rel)
            if files_out:
                rep["title"], rep["tables"] = f"anonydb release {sp.table}", {}
            write_report(rep, html=sp.report_html, json_path=sp.report_json)
        if files_out:  # the staging tables go; the release lives in its files
            rel.table, rel.tables = sp.table, {}
            for attr in ("table", "view"):  # the result's text names the release, not its staging table
                if isinstance(getattr(rel.result, attr, None), str):
                    setattr(rel.result, attr, sp.table)
    finally:
        if files_out:
            _drop_release(eng, out)
    return rel


def _series_args(sp: Spec) -> dict[str, Any]:
    """The ledger's arguments of a spec: its series, record key, the spec's text and its source's
    name (a spec reads its source through a reduced copy); ``series: false``: untracked."""
    se = sp.series or {}
    if se.get("untracked"):
        return {"untracked": True, "spec_text": sp.text, "source_name": sp.source}
    return {"series": (se.get("name") or sp.table) if sp.series is not None else None, "key": sp.key,
            "composition": se.get("composition"), "m": se.get("m"), "spec_text": sp.text, "source_name": sp.source,
            "ledger_schema": se.get("schema")}


def _run_linked(sp: Spec, eng: Engine) -> Release:
    """A spec of linked tables: the person table (the source), its event tables, one release each."""
    from ..methods.linked import linked

    start, t0 = len(eng.log), time.perf_counter()
    outs = {sp.source: sp.table, **{t: v["table"] for t, v in sp.linked.items()}}
    keep = {t: v["keep"] for t, v in sp.linked.items() if v["keep"]}
    own = [a.name for a in sp.attributes if a.role == "insensitive"]
    if own:
        keep[sp.source] = own
    r = linked(sp.source, sp.person, {t: v["key"] for t, v in sp.linked.items()}, sp.qi, sp.sensitive, outs=outs,
               engine=eng, keep=keep, hierarchies=sp.hierarchies or None, replace=sp.replace, seed=sp.seed,
               max_suppression=sp.max_suppression, **sp.model_params())
    main = next(out for out, rep in r.reports.items() if rep is not None)
    rel = Release(method="mondrian", table=main, tables=dict(r.tables), qi=sp.qi, sensitive=sp.sensitive,
                  rows=sum(r.rows.values()), seconds=time.perf_counter() - t0, report=r.reports[main], result=r,
                  engine=eng, sql=[x.sql for x in eng.log[start:]], hierarchies=dict(sp.hierarchies or {}))
    rel.spec = sp
    if sp.report_html or sp.report_json:
        from .reporting import release_report, write_report

        events.phase("report")
        write_report(release_report(rel), html=sp.report_html, json_path=sp.report_json)
    return rel


def _spec_source(eng: Engine, s: Any, sp: Spec) -> str:
    """The source reduced to the spec's attributes (identifiers dropped, unlisted columns left out);
    a column the source lacks is named with its place in the spec."""
    from ..sources import open_source

    from ..release.publish import check_identifiers

    rel = open_source(eng, sp.source, scratch=s)
    have = [c for c, _ in eng.columns(rel)]
    missing = [(sp.where("attributes", a.name), f"column {a.name!r} not found in {sp.source}; its columns are: "
                f"{', '.join(have)}") for a in sp.attributes if a.name not in have]
    if missing:
        raise SpecError(sp.path, missing)
    check_identifiers(eng, rel, [a.name for a in sp.attributes if a.role == "identifier"])
    sp._source_columns = have  # type: ignore[attr-defined]
    keep = [a.name for a in sp.attributes if a.role != "identifier"]
    return s.table(f"SELECT {', '.join(ident(c) for c in keep)} FROM {ident(rel)}")


def _spec_dropped(eng: Engine, sp: Spec) -> list[str]:
    """The source's columns a spec does not publish: identifiers and columns it does not list."""
    published = {a.name for a in sp.attributes if a.role not in ("identifier", "person", "key") or a.pseudonym}
    return [c for c in getattr(sp, "_source_columns", []) if c not in published]


def _parts_of(method: str, sp: Spec, columns: int = 0) -> list[tuple[str, Path]]:
    """(part, file) of a file release: the table, the QIT/ST pair, or the sliced table and its
    ``columns`` column tables."""
    path = Path(sp.output_path or f"{sp.table}.{sp.format}")
    if method in QIT_ST:
        return [(p, path.with_name(f"{path.stem}_{p}{path.suffix}")) for p in ("qit", "st")]
    return [("release", path)] + [(f"c{i}", path.with_name(f"{path.stem}_c{i}{path.suffix}"))
                                  for i in range(1, columns + 1)]


def _parts(rel: Release, sp: Spec) -> list[tuple[str, Path]]:
    cols = sum(1 for k in rel.tables if k.startswith("c") and k[1:].isdigit()) if rel.method == "slicing" else 0
    return [(rel.table if part == "release" else rel.tables[part], path)
            for part, path in _parts_of(rel.method, sp, cols)]


def _write_files(eng: Engine, rel: Release, sp: Spec) -> list[str]:
    """COPY every part to a temporary file beside its target, then rename all into place."""
    events.phase("writing")
    parts = _parts(rel, sp)
    for _, path in parts:
        path.parent.mkdir(parents=True, exist_ok=True)
    return export(eng, parts)


def _drop_release(eng: Engine, out: str) -> None:
    """Drop a staging release built only to be exported (tables and views named out, out_*)."""
    rows = eng.relations([out], prefix=out + "_").items()
    for name, kind in sorted(rows, key=lambda r: r[1] != "VIEW"):
        eng.drop(name, view=(kind == "VIEW"))


def spec_report(spec: Spec | str | Path, *, db: str | None = None, threshold: float = 0.2) -> dict[str, Any]:
    """The report of a spec's existing release (in the database, or its files), without re-running
    it: the spec's models re-checked on what was released (Anatomy: QIT/ST; slicing: the column
    tables against the source's tuples), class sizes, prosecutor risk, and per QI the share of
    released values that are not original values."""
    from ..checker import build_models
    from ..methods.anatomy import verify as verify_anatomy
    from ..methods.slicing import verify as verify_slicing
    from ..models.sliced_diversity import SlicedLDiversity
    from .reporting import class_sizes, table_report

    sp = spec if isinstance(spec, Spec) else load_spec(spec)
    files = sp.format in ("parquet", "csv")
    eng = connect(None if files else (db or sp.database))
    try:
        with eng.scratch("spec_report") as s:
            src = _spec_source(eng, s, sp)
            parts: dict[str, str] = {}
            if files:
                reader = "read_parquet" if sp.format == "parquet" else "read_csv_auto"
                base = Path(sp.output_path or f"{sp.table}.{sp.format}")
                roles = ["qit", "st"] if sp.method in QIT_ST else ["release"]
                if sp.method == "slicing":
                    i = 1
                    while base.with_name(f"{base.stem}_c{i}{base.suffix}").is_file():
                        roles.append(f"c{i}")
                        i += 1
                for role in roles:
                    path = base if role == "release" else base.with_name(f"{base.stem}_{role}{base.suffix}")
                    if not path.is_file():
                        raise InputError(f"{sp.where('output', 'path')}: {str(path)!r} does not exist; run "
                                         f"`anonydb release {sp.path}` first")
                    parts[role] = s.table(f"SELECT * FROM {reader}({literal(str(path))})")
            else:
                names = ({"qit": f"{sp.table}_qit", "st": f"{sp.table}_st"} if sp.method in QIT_ST else
                         {"release": sp.table})
                for role, name in names.items():
                    if not eng.exists(name):
                        raise InputError(f"{sp.where('output', 'table')}: no release {name!r} in the database; run "
                                         f"`anonydb release {sp.path}` first")
                    parts[role] = name
            mp = sp.model_params()
            if sp.method in QIT_ST:
                if sp.method == "anatomy":
                    models = build_models(l=mp["l"], l_variant=mp.get("l_variant", "distinct"), c=mp.get("c"))
                    rep = verify_anatomy(eng, parts["qit"], parts["st"], sp.qi, sp.sensitive, models)
                else:  # the rules re-mined from the source, the groups judged by matching l-diversity
                    from ..methods.injector import recheck

                    rep = recheck(eng, src, parts["qit"], parts["st"], sp.qi, sp.sensitive, mp["l"],
                                  sp.method_params.get("min_exp", 0.9), sp.hierarchies or None,
                                  sp.method_params.get("itemset_support", "min"))
                out = table_report(eng, parts["qit"], sp.qi, None, original=src, threshold=threshold)
                out["verdicts"], out["holds"] = [v.to_dict() for v in rep.verdicts], rep.holds
                out["classes"] = {**class_sizes(eng, parts["qit"], ["group_id"]), "unit": "QIT group"}
            elif sp.method == "slicing":
                view = parts["release"]
                names = ([parts[k] for k in sorted((k for k in parts if k.startswith("c")), key=lambda k: int(k[1:]))]
                         if files else [])
                i = 1
                while not files and eng.exists(f"{sp.table}_c{i}"):
                    names.append(f"{sp.table}_c{i}")
                    i += 1
                if not names:
                    raise InputError(f"{sp.where('output')}: the column tables of the sliced release "
                                     f"{sp.table!r} are missing")
                tables = [(t, [c for c, _ in eng.columns(t) if c not in ("bucket_id", "row_in_bucket")]) for t in names]
                verdict = verify_slicing(eng, src, tables, sp.sensitive, SlicedLDiversity(mp["l"]))
                out = table_report(eng, view, sp.qi, None, class_column="bucket_id", threshold=threshold,
                                   original=src, ncp_hierarchies=sp.hierarchies or None)  # loss: share and NCP
                out["verdicts"] = [{"model": verdict.model, "holds": verdict.holds,
                                    "achieved": {"max p(t,s)": verdict.worst}, "violating_groups": verdict.violators,
                                    "note": ""}]
                out["holds"] = verdict.holds
            elif "k_map" in mp:  # re-checked against the public table
                from ..presence import check_presence

                out = table_report(eng, parts["release"], sp.qi, sp.sensitive, original=src, class_column="eq_class",
                                   threshold=threshold, ncp_hierarchies=sp.hierarchies or None)
                rep = check_presence(parts["release"], sp.public, sp.qi, k_map=mp["k_map"], engine=eng,
                                     hierarchies={q: h for q, h in sp.hierarchies.items() if q in sp.qi} or None,
                                     max_groups=5)
                out["verdicts"], out["holds"] = [v.to_dict() for v in rep.verdicts], rep.holds
            else:
                h = {sp.sensitive: sp.hierarchies[sp.sensitive]} if sp.sensitive in sp.hierarchies else None
                out = table_report(eng, parts["release"], sp.qi, sp.sensitive, original=src, class_column="eq_class",
                                   threshold=threshold, hierarchies=h, ncp_hierarchies=sp.hierarchies or None, **mp)
            out.update(title=f"anonydb release {sp.table}", method=sp.method, spec=sp.raw, spec_path=sp.path,
                       tables={} if files else dict(parts),
                       files=[str(base if r == "release" else base.with_name(f"{base.stem}_{r}{base.suffix}"))
                              for r in parts] if files else [])

            return out
    finally:
        eng.close()


def plan_spec(spec: Spec | str | Path, *, db: str | None = None, full: bool = False) -> str:
    """The SQL a spec's run executes, without touching the warehouse or writing a file: the run is
    replayed in a scratch in-memory DuckDB over a copy of the source (the warehouse, if any, is
    attached read-only), and its statements are printed in order. The loops of the methods
    (Mondrian rounds, lattice nodes) depend on the data, so their count is the replay's; by default
    each template is shown once with the number of times it ran (``full``: every statement)."""
    sp = spec if isinstance(spec, Spec) else load_spec(spec)
    database = db or sp.database
    if is_postgres_url(database):
        return _plan_on_server(sp, database, full)
    if is_spark_url(database):  # a file source replays on DuckDB as for any run; a catalog table cannot be copied
        if Path(sp.source).suffix.lower() not in (".csv", ".parquet", ".tsv"):
            raise NotAvailable("plan of a catalog table (plan replays the run on a scratch DuckDB copy of the "
                               "source; give the source as a CSV or Parquet file)", "spark")
        database = None
    eng = DuckDBEngine(None)
    try:
        if database and not Path(sp.source).suffix.lower() in (".csv", ".parquet", ".tsv"):
            if not Path(database).is_file():
                raise InputError(f"database file not found: {database!r}")
            eng.execute(f"ATTACH {literal(database)} AS anonydb_plan_src (READ_ONLY)")
            eng.execute(f"CREATE TABLE {ident(sp.source)} AS SELECT * FROM anonydb_plan_src.{ident(sp.source)}")
            from ..release.ledger import TABLES

            have = {r[0] for r in eng.fetch_rows("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                                 "'anonydb_plan_src'")[1]}
            for t in TABLES:  # a tracked release is planned as the next of its series
                if t in have:
                    eng.execute(f"CREATE TABLE {ident(t)} AS SELECT * FROM anonydb_plan_src.{ident(t)}")
            eng.execute("DETACH anonydb_plan_src")
        eng.log.clear()
        rel = run_spec(sp, engine=eng, write_files=False)
        log = list(eng.log)
    finally:
        eng.close()
    return _plan_text(sp, rel, log, full, "replayed in a scratch in-memory database over a copy of the source")


def _plan_on_server(sp: Spec, url: str, full: bool) -> str:
    """The plan on a PostgreSQL server: the run is replayed in place, every table it creates is
    session-temporary (gone when the plan's connection closes) and the release gets a scratch
    name, so nothing in the database changes; the statements are DuckDB-dialect SQL as the
    engine receives them (``anonydb.engines.postgres`` rewrites them for the server)."""
    import dataclasses
    import uuid

    from ..engines import connect

    eng = connect(url)
    try:
        eng.temp_only = True
        plan_sp = dataclasses.replace(sp, table=f"__anonydb_plan_{uuid.uuid4().hex[:10]}", replace=True,
                                      format="duckdb", report_html=None, report_json=None)
        eng.log.clear()
        rel = run_spec(plan_sp, engine=eng, write_files=False)
        log = list(eng.log)
    finally:
        eng.close()
    return _plan_text(sp, rel, log, full, "replayed on the server with session-temporary tables only")


def _plan_text(sp: Spec, rel: Any, log: list, full: bool, how: str) -> str:
    lines = [f"-- anonydb plan for {sp.path}: method {sp.method}, {rel.rows} rows, {len(log)} statements",
             f"-- {how}; names starting with __ are scratch tables"]
    import re

    def key(x: Any) -> str:  # a template, or an ad-hoc statement up to its scratch names and numbers
        return x.template or re.sub(r'"__[A-Za-z_]+?_\d+"|\b\d+\b', "#", x.sql)

    counts: dict[str, int] = {}
    for x in log:
        counts[key(x)] = counts.get(key(x), 0) + 1
    shown: set[str] = set()
    for i, x in enumerate(log, 1):
        k = key(x)
        if not full:
            if k in shown:
                continue
            shown.add(k)
        n = counts[k]
        lines.append(f"\n-- [{i}]" + (f" {x.template}" if x.template else "") +
                     (f" (runs {n} times)" if n > 1 and not full else ""))
        lines.append(x.sql.strip().rstrip(";") + ";")
    if sp.format in ("parquet", "csv"):
        fmt = "PARQUET" if sp.format == "parquet" else "CSV, HEADER"
        for table, path in _parts(rel, sp):
            lines.append(f"\n-- then, written beside the target and renamed into place:\n"
                         f"COPY (SELECT * FROM {ident(table)}) TO {literal(str(path))} (FORMAT {fmt});")
    return "\n".join(lines) + "\n"


__all__ = ["Release", "anonymize", "plan_spec", "run_spec", "spec_report"]
