"""What the browser workbench does, without the browser: one :class:`Workbench` per server holds the
engine and runs every step through the library's own paths (the checks and reports of
:mod:`anonydb.workflow.reporting`, the specs and releases of :mod:`anonydb.workflow.jobs`, the
ledger of :mod:`anonydb.release.ledger`), one job at a time, so a page and the command line give
the same verdicts and write the same releases.

A step that takes long runs as a :class:`Job`: the phases :mod:`anonydb.events` announces are kept
for the page to show, and :meth:`Job.cancel` stops the run at its next statement
(:func:`anonydb.engines.base.request_stop`; the release's staging is rolled back, nothing is
written)."""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from ...engines import base as _base
from ...errors import InputError
from ...sqlgen import ident

#: the roles a column can take in the page, as a spec names them (drop: not listed, never published)
ROLES = ("drop", "identifier", "qi", "sensitive", "person", "key", "keep")
#: the spec's name of each page role
SPEC_ROLE = {"keep": "insensitive"}
#: the model options of the command line a page does not offer: presence against a public table
#: (its own page-less workflow) and the key, which is a role here
NOT_IN_PAGE = {"public", "key", "k_map", "confidence", "marginals", "private"}
#: the prefix of the explore step's scratch releases (dropped when the next exploration starts)
EXPLORE_PREFIX = "__anonydb_ui_explore_"
#: the most nodes of full-domain's lattice the explore step measures
LATTICE_NODES = 400
#: the values a categorical histogram shows (the rest summed as "other")
TOP_VALUES = 20


def model_fields() -> list[dict[str, Any]]:
    """The privacy models' options, read from the command line's own argument group (so a model
    the CLI gains appears in the page with no page code): dest, flag, kind (int, float, choice,
    text), choices, default and help."""
    from ..cliargs import _add_model_args

    p = argparse.ArgumentParser(add_help=False)
    _add_model_args(p)
    group = next(g for g in p._action_groups if g.title == "privacy models")
    out = []
    for a in group._group_actions:
        if a.dest in NOT_IN_PAGE:
            continue
        kind = ("choice" if a.choices else "int" if a.type is int else "float" if a.type is float else "text")
        out.append({"dest": a.dest, "flag": a.option_strings[0], "kind": kind, "choices": list(a.choices or []),
                    "default": a.default, "help": (a.help or "").replace("%%", "%")})
    return out


def model_params(values: dict[str, Any]) -> dict[str, Any]:
    """The models' parameters for :func:`anonydb.check` from the page's fields (dest -> text),
    parsed by the command line's own parser and turned into parameters as ``anonydb check`` turns
    them (:func:`anonydb.workflow.cliargs.model_params`). Bad input is one InputError line."""
    from ..cliargs import _add_model_args, model_params as from_args

    p = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    _add_model_args(p)
    flags = {f["dest"]: f["flag"] for f in model_fields()}
    argv: list[str] = []
    for dest, v in values.items():
        if dest in flags and v not in (None, ""):
            argv += [flags[dest], str(v)]
    try:
        ns, extra = p.parse_known_args(argv)
    except argparse.ArgumentError as e:
        raise InputError(str(e)) from None
    if extra:
        raise InputError(f"not understood: {' '.join(extra)}")
    params = from_args(ns)
    if not any(v is not None for k, v in params.items() if k not in ("l_variant", "supersets", "reference",
                                                                     "beta_variant")):
        raise InputError("pick at least one privacy model (k, l, t, ...)")
    return params


def spec_privacy(params: dict[str, Any]) -> dict[str, Any]:
    """A spec's ``privacy:`` block from :func:`model_params`' parameters (the spec's forms:
    docs/releases.md), so the spec the page downloads asks for the models the page checked."""
    out: dict[str, Any] = {}
    for key in ("k", "n", "alpha"):
        if params.get(key) is not None:
            out[key] = params[key]
    if isinstance(params.get("delta"), (int, float)):
        out["delta"] = params["delta"]
    if params.get("l") is not None:
        opts = {k: params[k] for k in ("c", "allowed", "protected", "c2") if params.get(k) is not None}
        variant = params.get("l_variant", "distinct")
        out["l"] = ({"value": params["l"], **({"variant": variant} if variant != "distinct" else {}), **opts}
                    if variant != "distinct" or opts else params["l"])
    if params.get("t") is not None:
        opts = {"distance": params["distance"]} if params.get("distance") else {}
        if params.get("reference", "table") != "table":
            opts["reference"] = params["reference"]
        out["t"] = {"value": params["t"], **opts} if opts else params["t"]
    if params.get("beta") is not None:
        out["beta"] = {"value": params["beta"], "variant": params.get("beta_variant", "basic")}
    if params.get("ke"):
        k, e = (float(x) for x in str(params["ke"]).split(","))
        out["ke"] = {"k": int(k), "e": e}
    if params.get("epsilon_m"):
        eps, m = (float(x) for x in str(params["epsilon_m"]).split(","))
        out["epsilon_m"] = {"epsilon": eps, "m": int(m)}
    other = [k for k in ("conf_bound", "xy_k", "multi_k", "guard") if params.get(k) is not None]
    if other:
        raise InputError(f"write {', '.join(other)} into the spec by hand (docs/releases.md): the page releases k, "
                         f"l, t, n, alpha, delta, beta, (k,e) and (epsilon,m)")
    return out


@dataclass
class Job:
    """A long step: its phase, progress and outcome, read by the page while it runs."""

    name: str
    phase: str = "starting"
    done: float | None = None
    total: float | None = None
    warnings: list[str] = field(default_factory=list)
    result: Any = None
    error: str | None = None
    finished: bool = False
    cancelled: bool = False
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None

    @property
    def seconds(self) -> float:
        return (self.ended or time.perf_counter()) - self.started

    def hear(self, info: dict[str, Any]) -> None:
        if "warning" in info:
            self.warnings.append(str(info["warning"]))
        if info.get("phase"):
            self.phase, self.done, self.total = str(info["phase"]), None, info.get("total")
        if info.get("done") is not None:
            self.done = info["done"]

    def cancel(self) -> None:
        self.cancelled = True
        _base.request_stop("cancelled in the workbench")

    @property
    def share(self) -> float | None:
        return min(1.0, float(self.done) / float(self.total)) if self.done is not None and self.total else None


class Workbench:
    """The server's state: the engine, the sources opened, and the job that runs (one at a time)."""

    def __init__(self, engine: Any, label: str = ""):
        self.eng = engine
        self.label = label
        self.lock = threading.Lock()
        self.files: dict[str, str] = {}  # a file opened in the page -> its path (a source anonydb reads)
        self.job: Job | None = None
        self.explored: list[dict[str, Any]] = []
        self.reports: dict[str, str] = {}  # report id -> HTML, served at /report/{id}

    # -- running -----------------------------------------------------------------------------------
    def run(self, name: str, work: Callable[[], Any]) -> Job:
        """Run ``work`` as the job ``name`` in this thread, hearing its events; the outcome (or the
        one-line error) lands on the job. Refused while another job runs."""
        from ...errors import Interrupted
        from ..exits import one_line
        from ...events import listening

        if not self.lock.acquire(blocking=False):
            raise InputError(f"{self.job.name if self.job else 'a step'} is running: wait for it or cancel it")
        job = self.job = Job(name)
        try:
            with listening(job.hear):
                job.result = work()
        except Interrupted:
            job.error = "cancelled: the run was rolled back and nothing was written"
        except Exception as e:  # noqa: BLE001 - the page shows every error as one line
            job.error = one_line(e)
        finally:
            _base._STOP.clear()
            job.ended, job.finished = time.perf_counter(), True
            self.lock.release()
        return job

    # -- data --------------------------------------------------------------------------------------
    def sources(self) -> list[dict[str, Any]]:
        """Every table and view of the database and every file opened: name, rows, columns."""
        out = []
        names = sorted(n for n in self._tables() if not n.startswith("__") and not n.startswith("anonydb_"))
        for n in names + list(self.files):
            rel = self.files.get(n, n)
            try:
                cols = self.eng.columns(rel)
                rows = self.eng.scalar(f"SELECT count(*) FROM {ident(rel)}")
            except Exception:  # noqa: BLE001 - a table that disappeared is left out
                continue
            out.append({"name": n, "rows": int(rows), "columns": len(cols)})
        return out

    def _tables(self) -> list[str]:
        if hasattr(self.eng, "spark"):  # Spark's catalog: its tables and the session's views
            return [t.name for t in self.eng.spark.catalog.listTables()]
        return [r[0] for r in self.eng.fetch_rows("SELECT table_name FROM information_schema.tables WHERE "
                                                  "table_schema = current_schema()")[1]]

    def open_file(self, path: str) -> str:
        """Add a CSV or Parquet file as a source: read once into a temporary table of this session
        for the page's views (a release names the file and reads it again)."""
        from ...sources import open_source

        p = Path(path).expanduser()
        if not p.is_file() or p.suffix.lower() not in (".csv", ".parquet", ".tsv", ".txt"):
            raise InputError(f"{path!r} is not a CSV or Parquet file")
        name = str(p.resolve())
        if name not in self.files:
            self.files[name] = open_source(self.eng, name)
        return name

    def profile(self, source: str) -> list[dict[str, Any]]:
        """Per column: type, distinct values, NULLs and the hints (likely person key, likely
        identifier), in one scan."""
        from ...release.publish import looks_like_person_key

        with self.eng.scratch("ui") as s:
            rel = self._relation(s, source)
            cols = self.eng.columns(rel)
            row = self.eng.fetch_rows("SELECT count(*), " + ", ".join(
                f"count(DISTINCT {ident(c)}), count(*) - count({ident(c)})" for c, _ in cols)
                + f" FROM {ident(rel)}")[1][0]
        n = int(row[0])
        out = []
        for i, (c, t) in enumerate(cols):
            distinct, nulls = int(row[1 + 2 * i]), int(row[2 + 2 * i])
            hint = ("likely person key" if looks_like_person_key(t, distinct, n) else
                    "likely identifier" if n > 1 and distinct == n else "")
            out.append({"column": c, "type": t, "distinct": distinct, "nulls": nulls, "hint": hint})
        return out

    def _relation(self, s: Any, source: str) -> str:
        rel = self.files.get(source, source)
        if not self.eng.exists(rel):
            raise InputError(f"no table or view named {source!r} (it may have been dropped)")
        return rel

    def histogram(self, source: str, column: str, bins: int = 20) -> tuple[list[str], list[int]]:
        """A numeric column in ``bins`` equal-width bins, any other by its most frequent values."""
        from ...schema import is_numeric_type

        with self.eng.scratch("ui") as s:
            rel = self._relation(s, source)
            types = dict(self.eng.columns(rel))
            if column not in types:
                raise InputError(f"{source} has no column {column!r}")
            c = ident(column)
            if is_numeric_type(types[column]):
                lo, hi = self.eng.fetch_rows(f"SELECT min({c}), max({c}) FROM {ident(rel)}")[1][0]
                if lo is None:
                    return [], []
                lo, hi = float(lo), float(hi)
                w = (hi - lo) / bins or 1.0
                _, rows = self.eng.fetch_rows(
                    f"SELECT least(CAST(floor((CAST({c} AS DOUBLE) - {lo!r}) / {w!r}) AS INTEGER), {bins - 1}) AS b, "
                    f"count(*) FROM {ident(rel)} WHERE {c} IS NOT NULL GROUP BY 1 ORDER BY 1")
                got = {int(b): int(n) for b, n in rows}
                span = bins if hi > lo else 1
                return [f"{lo + i * w:g}-{lo + (i + 1) * w:g}" for i in range(span)], [got.get(i, 0) for i in range(span)]
            _, rows = self.eng.fetch_rows(f"SELECT CAST({c} AS VARCHAR) AS v, count(*) AS n FROM {ident(rel)} "
                                          f"GROUP BY 1 ORDER BY n DESC, v LIMIT {TOP_VALUES + 1}")
            labels = ["NULL" if v is None else str(v) for v, _ in rows[:TOP_VALUES]]
            counts = [int(n) for _, n in rows[:TOP_VALUES]]
            if len(rows) > TOP_VALUES:
                total = int(self.eng.scalar(f"SELECT count(*) FROM {ident(rel)}"))
                labels.append("other")
                counts.append(total - sum(counts))
            return labels, counts

    # -- the spec ----------------------------------------------------------------------------------
    def spec(self, source: str, roles: dict[str, str], hierarchies: dict[str, Any], method: str,
             privacy: dict[str, Any], table: str, replace: bool = False) -> dict[str, Any]:
        """The release spec of the page's choices, as ``anonydb release`` reads it."""
        attrs: dict[str, Any] = {}
        for col, role in roles.items():
            if role == "drop":
                continue
            r = SPEC_ROLE.get(role, role)
            attrs[col] = {"role": r, "hierarchy": hierarchies[col]} if role == "qi" and hierarchies.get(col) else r
        spec: dict[str, Any] = {"source": source, "attributes": attrs, "method": method, "privacy": privacy,
                                "output": {"table": table, **({"replace": True} if replace else {})}}
        if self.label and not self.label.startswith(("postgresql://", "postgres://", "spark", "sc://")):
            spec["database"] = self.label
        return spec

    @staticmethod
    def spec_yaml(spec: dict[str, Any]) -> str:
        return yaml.safe_dump(spec, sort_keys=False, default_flow_style=None)

    @staticmethod
    def read_spec(text: str) -> dict[str, Any]:
        """A spec's YAML, validated as ``anonydb release`` validates it (one line per problem)."""
        from ..spec import load_spec

        sp = load_spec("spec.yaml", text=text)
        return {"source": sp.source, "roles": _page_roles(sp), "method": sp.method,
                "privacy": sp.raw.get("privacy", {}), "table": sp.table, "raw": sp.raw}

    def _load(self, spec: dict[str, Any]) -> Any:
        from ..spec import load_spec

        return load_spec("spec.yaml", text=self.spec_yaml(spec))

    # -- check and risk ----------------------------------------------------------------------------
    def check(self, source: str, roles: dict[str, str], params: dict[str, Any], suda: bool = True) -> dict[str, Any]:
        """The report of the source under the chosen models (:func:`table_report`: verdicts, class
        sizes, risk by attacker model, SUDA), and the records at highest risk by their QI values."""
        from ..reporting import table_report

        qi, sensitive, person = _qi(roles), _one(roles, "sensitive"), _one(roles, "person")
        with self.eng.scratch("ui") as s:
            rel = self._relation(s, source)
            rep = table_report(self.eng, rel, qi, sensitive, person=person, suda=suda, **params)
            keys = ", ".join(ident(c) for c in qi)
            count = f"count(DISTINCT {ident(person)})" if person else "count(*)"
            names, rows = self.eng.fetch_rows(f"SELECT {keys}, {count} AS n FROM {ident(rel)} GROUP BY {keys} "
                                              f"ORDER BY n, {keys} LIMIT 20")
        rep["riskiest"] = {"columns": names[:-1] + ["risk"],
                           "rows": [[*(str(x) for x in r[:-1]), 1 / int(r[-1])] for r in rows]}
        return rep

    # -- explore -----------------------------------------------------------------------------------
    def explore(self, base: dict[str, Any], ks: list[int]) -> list[dict[str, Any]]:
        """Release the spec ``base`` at each k into a scratch table and measure it: its loss (NCP
        or height), its risk (prosecutor), its verdicts; the points of the risk-utility plot. The
        releases stay until the next exploration (for their before-and-after views)."""
        from ..jobs import run_spec
        from ..reporting import release_report

        from ...errors import Interrupted

        self.drop_explored()
        try:
            return self._explore(base, ks, run_spec, release_report)
        except Interrupted:  # cancelled: the releases of the finished ks go too
            self.drop_explored()
            raise

    def _explore(self, base: dict[str, Any], ks: list[int], run_spec: Any, release_report: Any) -> list[dict[str, Any]]:
        points = []
        for k in ks:
            spec = {**base, "privacy": {**base.get("privacy", {}), "k": int(k)},
                    "output": {"table": f"{EXPLORE_PREFIX}{int(k)}", "replace": True}}
            if any(v == "person" or (isinstance(v, dict) and v.get("role") == "person")
                   for v in spec["attributes"].values()):
                spec["series"] = False  # a look, not a release: composed with nothing
            spec.pop("report", None)
            rel = run_spec(self._load(spec), engine=self.eng)
            rep = release_report(rel)
            loss = rep["loss"]
            ncp = loss.get("ncp")
            if ncp is None and loss.get("by_qi"):
                ncp = sum(loss["by_qi"].values()) / len(loss["by_qi"])
            points.append({"k": int(k), "table": rel.table, "loss": float(ncp or 0.0), "by_qi": loss.get("by_qi", {}),
                           "risk": float(rep["risk"]["highest"]), "average_risk": float(rep["risk"]["average"]),
                           "classes": rep["classes"].get("classes"), "holds": rep["holds"], "spec": spec})
            self.explored.append(points[-1])
        return points

    def lattice(self, spec: dict[str, Any], k: int | None) -> list[dict[str, Any]]:
        """Full-domain's solution space, as ARX's explore shows it: every level vector of the QIs'
        hierarchies (at most :data:`LATTICE_NODES`), each node's classes, highest prosecutor risk
        (1 / its smallest class) and loss (the mean over the QIs of level / height, full-domain's
        precision loss), and whether it is k-anonymous. One GROUP BY of the generalized QIs a node;
        full-domain's own search judges every model and suppression besides."""
        import itertools

        from ...events import phase, update
        from ...generalize import generalize_sql

        sp = self._load({**spec, "method": "fulldomain"})
        qi, hs = sp.qi, sp.hierarchies
        heights = [hs[q].height for q in qi]
        nodes = 1
        for h in heights:
            nodes *= h + 1
        if nodes > LATTICE_NODES:
            raise InputError(f"the lattice has {nodes} nodes, more than the {LATTICE_NODES} the page measures: give "
                             f"fewer QIs or shorter hierarchies")
        keys = ", ".join(ident(q) for q in qi)
        points = []
        phase("lattice", total=nodes, unit="nodes")
        with self.eng.scratch("ui") as s:
            rel = self._relation(s, sp.source)
            for i, vec in enumerate(itertools.product(*(range(h + 1) for h in heights))):
                levels = dict(zip(qi, vec))
                gen = generalize_sql(self.eng, rel, levels, hs, keep=[]).sql
                smallest, classes = self.eng.fetch_rows(f"SELECT min(n), count(*) FROM (SELECT count(*) AS n FROM "
                                                        f"({gen}) AS g GROUP BY {keys}) AS c")[1][0]
                loss = sum(v / h for v, h in zip(vec, heights) if h) / len(qi)
                points.append({"key": " ".join(f"{q}:{v}" for q, v in levels.items()), "levels": levels,
                               "loss": loss, "risk": 1 / int(smallest), "classes": int(classes),
                               "holds": k is None or int(smallest) >= int(k), "by_qi": {
                                   q: (v / h if h else 0.0) for (q, v), h in zip(levels.items(), heights)}})
                update(done=i + 1)
        return points

    def node(self, spec: dict[str, Any], levels: dict[str, int]) -> str:
        """A lattice node's generalized QIs (and the other published columns) as a scratch table,
        for its sample and before-and-after views (dropped with the explored releases)."""
        from ...generalize import generalize

        sp = self._load({**spec, "method": "fulldomain"})
        name = f"{EXPLORE_PREFIX}node"
        with self.eng.scratch("ui") as s:
            rel = self._relation(s, sp.source)
            published = sp.qi + [c for c in ([sp.sensitive] if sp.sensitive else [])]
            generalize(self.eng, rel, levels, sp.hierarchies, out=name, keep=published[len(sp.qi):], replace=True)
        self.explored.append({"table": name, "k": None})
        return name

    def drop_explored(self) -> None:
        for p in self.explored:
            self.eng.drop(p["table"])
        self.explored = []

    def before_after(self, source: str, table: str, column: str) -> dict[str, Any]:
        """The column's values before (the source) and after (a release), most frequent first."""
        before = self.histogram(source, column)
        after = self.histogram(table, column)
        return {"before": before, "after": after}

    def sample(self, table: str, n: int = 10) -> tuple[list[str], list[list[str]]]:
        names, rows = self.eng.fetch_rows(f"SELECT * FROM {ident(table)} LIMIT {int(n)}")
        return names, [["" if x is None else str(x) for x in r] for r in rows]

    # -- release -----------------------------------------------------------------------------------
    def exists(self, table: str) -> bool:
        return self.eng.exists(table)

    def release(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Write the release through ``anonydb release``'s path (staging, verification over every
        published column, the ledger, nothing overwritten unless the spec says replace); its report
        as the HTML page the CLI writes, kept for the page's frame."""
        import secrets

        from ..jobs import run_spec
        from ..reporting import release_report, render_html, verdict_line

        rel = run_spec(self._load(spec), engine=self.eng)
        rep = release_report(rel)
        rid = secrets.token_hex(8)
        self.reports[rid] = render_html(rep)
        return {"report": rid, "line": verdict_line(rep), "table": rel.table, "rows": rel.rows,
                "text": rel.format(), "ledger": (rel.ledger_line or "").strip()}

    def ledger(self) -> list[dict[str, Any]]:
        """The ledger's entries as ``anonydb releases`` lists them: syntactic and DP, what each
        achieved, and what a DP entry promises with its series' budget left."""
        import json

        from ...release import ledger
        from ..ledgercmd import _composed, _dp_promise, _short

        out = []
        for e in ledger.entries(self.eng, dp=True):
            ach = json.loads(e["achieved"] or "{}")
            said = "; ".join(f"{m}: {', '.join(f'{k}={v}' for k, v in a.items())}" for m, a in ach.items())
            out.append({"id": e["id"], "created": e["created"], "series": e["series"], "source": _short(e["source"]),
                        "method": e["method"], "mode": e["mode"], "rows": e["rows"], "achieved": said,
                        "promises or composed with": _dp_promise(e) if e["mode"] == ledger.DP else _composed(e)})
        return out


def _qi(roles: dict[str, str]) -> list[str]:
    qi = [c for c, r in roles.items() if r == "qi"]
    if not qi:
        raise InputError("give at least one column the role qi")
    return qi


def _one(roles: dict[str, str], role: str) -> str | None:
    got = [c for c, r in roles.items() if r == role]
    if len(got) > 1:
        raise InputError(f"one column can have the role {role}, got {', '.join(got)}")
    return got[0] if got else None


def _page_roles(sp: Any) -> dict[str, str]:
    back = {v: k for k, v in SPEC_ROLE.items()}
    return {a.name: back.get(a.role, a.role) for a in sp.attributes}


__all__ = ["EXPLORE_PREFIX", "Job", "ROLES", "Workbench", "model_fields", "model_params"]

