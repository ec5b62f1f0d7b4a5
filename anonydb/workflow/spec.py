"""Declarative release specs: a YAML file that says what to release and how.

A spec names the source (a table, or a CSV/Parquet file relative to the spec), the attributes
with their roles, kinds and hierarchies, the method and its parameters, the privacy models, the
outputs and the report. :func:`load_spec` validates it against the schema below and raises
:class:`SpecError` naming the key and its line for every problem it finds (all of them, not the
first); :mod:`anonydb.workflow.jobs` runs it.

    source: adult.csv                       # or a table name in the database
    database: warehouse.duckdb              # optional (or postgresql://...); the CLI's --db overrides it
    attributes:
      age: {role: qi, kind: numeric, hierarchy: {intervals: [5, 10, 20]}}
      education: {role: qi, hierarchy: hierarchies/education.csv}   # ARX CSV
      zip: {role: qi, hierarchy: {mask: 5}}
      ssn: identifier                       # a bare role
      patient_id: {role: person, pseudonym: true}   # the record owner (models count persons), published keyed
      visit_id: pseudonym                   # published as HMAC-SHA256 (key: secret_file or $ANONYDB_SECRET)
      occupation: sensitive
    method: mondrian                        # or {name: slicing, columns: 3, ...}
    privacy: {k: 5, l: {value: 3, variant: entropy}, t: {value: 0.2, distance: ordered}}
    output: {table: adult_release, format: duckdb, replace: true}
    report: {html: report.html, json: report.json}
    seed: 0                               # a reproducible row order (default: a secret one)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

ROLES = {"qi": "qi", "quasi-identifier": "qi", "quasi_identifier": "qi", "identifier": "identifier",
         "sensitive": "sensitive", "insensitive": "insensitive", "person": "person", "pseudonym": "pseudonym", "key": "key"}
KINDS = ("numeric", "categorical", "ordinal", "date")
METHODS = {
    # method -> {parameter: (accepted python types, description)}
    "mondrian": {"relaxed": ((bool,), "a boolean"), "categorical": ((str,), "hierarchy or order"),
                 "plan": ((str,), "auto, recursive or levelwise"),
                 "varying": ((bool,), "a boolean: the QIs vary within a person (role person)"),
                 "max_suppression": ((int, float), "a fraction in [0, 1] of the persons")},
    "fulldomain": {"max_suppression": ((int, float), "a fraction in [0, 1]"),
                   "metric": ((str,), "dm, aecs, height, precision, loss or entropy")},
    "anatomy": {"groups": ((str,), "a column name")},
    "minvariant": {"form": ((str,), "generalized or anatomy")},
    "injector": {"min_exp": ((int, float), "a number in (0, 1)"),
                 "itemset_support": ((int, str), "min, max or a count of tuples")},
    "slicing": {"columns": ((int, list), "a number of columns or a list of attribute lists"),
                "sensitive_column_size": ((int,), "an integer"), "column_k": ((int,), "an integer"),
                "tries": ((int,), "an integer"), "bins": ((int,), "an integer"),
                "membership": ((bool,), "a boolean")},
}
PRIVACY = ("k", "l", "t", "n", "alpha", "delta", "bt", "beta", "confidence_bound", "xy_privacy", "ke", "epsilon_m",
           "multi_qid", "k_map", "personalized")
FORMATS = ("duckdb", "parquet", "csv")
TOP = ("version", "source", "database", "attributes", "method", "privacy", "output", "report", "seed", "secret_file",
       "linked", "risk", "public", "series", "dp")
#: series: the ledger's series of a tracked release (anonydb.release.ledger)
SERIES = ("name", "composition", "m", "schema")


class SpecError(InputError):
    """A release spec that does not validate; ``problems`` lists (place, message) pairs."""

    def __init__(self, path: str, problems: list[tuple[str, str]]):
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  {where}: {what}" for where, what in problems)
        super().__init__(f"release spec {path} is invalid:\n{lines}")


@dataclass
class Attribute:
    name: str
    role: str
    kind: str | None = None
    hierarchy: Any = None  # a Hierarchy, built at load time
    pseudonym: bool = False  # the person column published as its keyed pseudonym

@dataclass
class Spec:
    """A validated release spec (see the module docstring)."""

    path: str
    base_dir: Path
    source: str
    attributes: list[Attribute]
    method: str
    method_params: dict[str, Any]
    privacy: dict[str, Any]
    table: str
    format: str = "duckdb"
    output_path: str | None = None
    view: bool = False
    replace: bool = False
    report_html: str | None = None
    report_json: str | None = None
    database: str | None = None
    seed: int | None = None  # None: a secret row order
    secret_file: str | None = None  # the pseudonyms' key (else $ANONYDB_SECRET, else a fresh one)
    #: linked tables: event table -> {key: its foreign key, table: its release, keep: [...]}; the
    #: source is then the person table, its person column the key, output.table its own release
    linked: dict[str, dict[str, Any]] = field(default_factory=dict)
    max_suppression: float = 0.0  # linked tables: of each table's persons
    #: the risk limits the release must meet (``risk:``; anonydb.risk.assess.Limits), or None
    risk: Any = None
    #: the public table (the population; a table, or a file relative to the spec) k-map is judged against
    public: str | None = None
    #: the ledger's series (``series:``): name, composition, m; None when the spec sets none
    series: dict[str, Any] | None = None
    text: str = ""  # the spec as written (the ledger keeps it)
    #: a DP release's block (``dp:``; anonydb.workflow.dpspec), None for the other releases
    dp: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    lines: dict[tuple, int] = field(default_factory=dict)

    def where(self, *at: Any) -> str:
        """A place in the spec as errors name it: ``attributes.age (line 7)``."""
        return _Checker(self.path, self.lines).where(tuple(at))

    def of_role(self, role: str) -> list[str]:
        return [a.name for a in self.attributes if a.role == role]

    @property
    def qi(self) -> list[str]:
        return self.of_role("qi")

    @property
    def sensitive(self) -> str | None:
        s = self.of_role("sensitive")
        return s[0] if s else None

    @property
    def person(self) -> str | None:
        """The column naming each record's owner (role person): the models count persons."""
        p = self.of_role("person")
        return p[0] if p else None

    @property
    def key(self) -> str | None:
        """The record key a tracked release follows across releases (role key: never published)."""
        k = self.of_role("key")
        return k[0] if k else None

    @property
    def pseudonyms(self) -> list[str]:
        """The columns published as keyed pseudonyms (role pseudonym; the person with pseudonym: true)."""
        return [a.name for a in self.attributes if a.role == "pseudonym" or a.pseudonym]

    @property
    def hierarchies(self) -> dict[str, Any]:
        return {a.name: a.hierarchy for a in self.attributes if a.hierarchy is not None}

    @property
    def kinds(self) -> dict[str, str]:
        return {a.name: a.kind for a in self.attributes if a.kind}

    def model_params(self) -> dict[str, Any]:
        """The privacy section as the keyword arguments of :func:`anonydb.checker.build_models`."""
        out: dict[str, Any] = {}
        p = self.privacy
        for key in ("k", "n", "alpha", "delta"):
            if key in p:
                out[key] = p[key]
        if "beta" in p:
            out["beta"], out["beta_variant"] = p["beta"]["value"], p["beta"].get("variant", "basic")
        if "confidence_bound" in p:
            out["conf_bound"] = p["confidence_bound"]
        if "xy_privacy" in p:
            out["xy_k"], out["conf_bound"] = p["xy_privacy"]["k"], p["xy_privacy"]["bounds"]
        if "ke" in p:
            out["ke"] = (p["ke"]["k"], p["ke"]["e"])
        if "epsilon_m" in p:
            out["epsilon_m"] = (p["epsilon_m"]["epsilon"], p["epsilon_m"]["m"])
        if "k_map" in p:
            out["k_map"] = p["k_map"]
        if "multi_qid" in p:
            out["multi_k"], out["qid_sets"] = p["multi_qid"]["k"], p["multi_qid"]["sets"]
        if "personalized" in p:
            out["guard"], out["breach"] = p["personalized"]["guard"], p["personalized"]["breach"]
        if "l" in p:
            lv = p["l"]
            out["l"] = lv["value"]
            out["l_variant"] = lv.get("variant", "distinct")
            for opt in ("c", "allowed", "protected", "c2"):
                if opt in lv:
                    out[opt] = lv[opt]
        if "t" in p:
            tv = p["t"]
            out["t"] = tv["value"]
            if "distance" in tv:
                out["distance"] = tv["distance"]
            if "reference" in tv:
                out["reference"] = tv["reference"]
        if "bt" in p:
            out["bt"] = [(e["b"], e["t"]) for e in p["bt"]]
            if p["bt"][0].get("distance"):
                out["bt_distance"] = p["bt"][0]["distance"]
        return out

    def resolve(self, p: str) -> str:
        """A path of the spec, relative to the spec's directory."""
        q = Path(p)
        return str(q if q.is_absolute() else self.base_dir / q)


# --- YAML with line numbers ---------------------------------------------------------------------

def _compose(text: str, path: str) -> tuple[Any, dict[tuple, int]]:
    """Parse YAML; return (value, {key path: line}) so that errors can name their line."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "?"
        raise SpecError(path, [(where, f"not valid YAML: {getattr(e, 'problem', None) or e}")]) from None
    lines: dict[tuple, int] = {}
    loader = yaml.SafeLoader("")

    def build(n: Any, at: tuple) -> Any:
        lines[at] = n.start_mark.line + 1
        if isinstance(n, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for kn, vn in n.value:
                key = loader.construct_object(kn, deep=True)
                if key in out:
                    raise SpecError(path, [(f"line {kn.start_mark.line + 1}", f"key {key!r} appears twice")])
                lines[at + (key,)] = kn.start_mark.line + 1
                out[key] = build(vn, at + (key,))
                lines[at + (key,)] = kn.start_mark.line + 1
            return out
        if isinstance(n, yaml.SequenceNode):
            return [build(x, at + (i,)) for i, x in enumerate(n.value)]
        return loader.construct_object(n, deep=True)

    value = build(node, ()) if node is not None else None
    loader.dispose()
    return value, lines


class _Checker:
    def __init__(self, path: str, lines: dict[tuple, int]):
        self.path, self.lines, self.problems = path, lines, []

    def where(self, at: tuple) -> str:
        name = ".".join(str(x) for x in at) or "(top)"
        line = self.lines.get(at)
        return f"{name} (line {line})" if line else name

    def bad(self, at: tuple, msg: str) -> None:
        self.problems.append((self.where(at), msg))

    def keys(self, value: Any, at: tuple, allowed: tuple | list | dict) -> bool:
        if not isinstance(value, dict):
            self.bad(at, f"expected a mapping, got {_tname(value)}")
            return False
        for key in value:
            if key not in allowed:
                self.bad(at + (key,), f"unknown key {key!r}; expected one of {', '.join(map(str, allowed))}")
        return True

    def typed(self, value: Any, at: tuple, types: tuple, what: str) -> bool:
        ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
        if not ok:
            self.bad(at, f"expected {what}, got {_tname(value)} {value!r}")
        return ok


def _tname(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "nothing"}.get(type(v), type(v).__name__)


def load_spec(path: str | Path, *, text: str | None = None) -> Spec:
    """Read and validate a release spec; hierarchies are loaded (their files must exist)."""
    p = Path(path)
    if text is None:
        if not p.is_file():
            raise InputError(f"release spec not found: {str(p)!r}")
        text = p.read_text(encoding="utf-8")
    raw, lines = _compose(text, str(p))
    ck = _Checker(str(p), lines)
    base = p.parent if str(p.parent) else Path(".")
    if isinstance(raw, dict) and "dp" in raw:  # a differentially private release
        return _dp_spec(ck, raw, p, base, text, lines)
    if not ck.keys(raw, (), TOP):
        raise SpecError(str(p), ck.problems)
    for req in ("source", "attributes", "method", "output"):
        if req not in raw:
            ck.bad((req,), "required key is missing")
    if "version" in raw and raw["version"] != 1:
        ck.bad(("version",), f"only version 1 is known, got {raw['version']!r}")

    source = raw.get("source")
    if "source" in raw:
        ck.typed(source, ("source",), (str,), "a table name or a .csv/.parquet path")
    database = raw.get("database")
    if database is not None:
        ck.typed(database, ("database",), (str,), "a DuckDB database file or a postgresql:// URL")
    seed = raw.get("seed")
    if seed is not None:
        ck.typed(seed, ("seed",), (int,), "an integer")
    secret_file = raw.get("secret_file")
    if secret_file is not None:
        ck.typed(secret_file, ("secret_file",), (str,), "the path of the pseudonyms' key")

    attrs = _attributes(ck, raw.get("attributes"), base) if "attributes" in raw else []
    method, mparams = _method(ck, raw.get("method")) if "method" in raw else ("mondrian", {})
    privacy = _privacy(ck, raw.get("privacy", {}), method)
    out = _output(ck, raw.get("output")) if "output" in raw else {}
    report = _report(ck, raw.get("report"))
    risk = _risk(ck, raw.get("risk"), base) if "risk" in raw else None

    roles = {}
    for a in attrs:
        roles.setdefault(a.role, []).append(a.name)
    if attrs and not roles.get("qi"):
        ck.bad(("attributes",), "no attribute has role qi")
    if len(roles.get("person", [])) > 1:
        ck.bad(("attributes",), f"one person column is supported, got {', '.join(roles['person'])}")
    if roles.get("person") and method in ("slicing", "injector"):
        ck.bad(("method",), f"{method} judges rows, not persons: role person needs mondrian, fulldomain or anatomy")
    if len(roles.get("sensitive", [])) > 1:
        ck.bad(("attributes",), f"one sensitive attribute is supported, got {', '.join(roles['sensitive'])}")
    if method in ("anatomy", "slicing", "injector") and attrs and not roles.get("sensitive"):
        ck.bad(("method",), f"{method} needs an attribute with role sensitive")
    if method in ("anatomy", "slicing", "injector") and "l" not in privacy and "privacy" in raw:
        ck.bad(("privacy",), f"{method} releases l-diverse groups: give privacy.l")
    if method == "fulldomain":
        for a in attrs:
            if a.role == "qi" and a.hierarchy is None:
                ck.bad(("attributes", a.name), "fulldomain generalizes along hierarchies: give this QI a hierarchy")
    series = _series(ck, raw.get("series")) if "series" in raw else None
    if len(roles.get("key", [])) > 1:
        ck.bad(("attributes",), f"one key column is supported, got {', '.join(roles['key'])}")
    if roles.get("key") and roles.get("person"):
        ck.bad(("attributes",), "give the tracked column once: role key or role person")
    if series is not None and series.get("untracked") and method == "minvariant":
        ck.bad(("series",), "minvariant writes the next release of a series: it cannot be untracked")
    tracked_series = series is not None and not series.get("untracked")
    if (tracked_series or method == "minvariant") and attrs and not (roles.get("key") or roles.get("person")):
        ck.bad(("attributes",), "a release in a series is tracked by a record key: give a column role key "
                                "(or role person)")
    if (tracked_series or roles.get("key")) and out.get("format", "duckdb") != "duckdb":
        ck.bad(("output", "format"), "a tracked release lives beside its ledger, in the database: format duckdb")
    if method == "minvariant" and mparams.get("form", "generalized") not in ("generalized", "anatomy"):
        ck.bad(("method", "form"), f"expected generalized or anatomy, got {mparams['form']!r}")
    if method == "minvariant" and attrs and not roles.get("sensitive"):
        ck.bad(("method",), "minvariant needs an attribute with role sensitive")
    linked = _linked(ck, raw.get("linked")) if "linked" in raw else {}
    if linked:
        if method != "mondrian":
            ck.bad(("method",), "linked tables are released with mondrian (over the persons)")
        if not roles.get("person"):
            ck.bad(("attributes",), "linked tables need the person table's key: give it role person")
        if out.get("format", "duckdb") != "duckdb":
            ck.bad(("output", "format"), "linked tables are released as tables (format duckdb)")
    if risk is not None and (method == "slicing" or linked):
        ck.bad(("risk",), "risk limits judge a generalized table or a QIT: not a sliced release or linked tables")
    if not privacy and "privacy" not in raw:
        ck.bad(("privacy",), "required key is missing (at least one privacy model)")
    public = raw.get("public")
    if public is not None:
        ck.typed(public, ("public",), (str,), "a table name or a .csv/.parquet path")
    _k_map_fits(ck, privacy, method, public, roles, risk, linked)
    if ck.problems:
        raise SpecError(str(p), ck.problems)
    return Spec(path=str(p), base_dir=base, source=_source_path(source, base), attributes=attrs, method=method,
                method_params=mparams, privacy=privacy, table=out["table"], format=out.get("format", "duckdb"),
                output_path=(str(_rel(out["path"], base)) if out.get("path") else None), view=out.get("view", False),
                replace=out.get("replace", False), report_html=_opt_rel(report.get("html"), base),
                report_json=_opt_rel(report.get("json"), base), database=_opt_rel(database, base), seed=seed, raw=raw,
                lines=lines, secret_file=_opt_rel(secret_file, base), linked=linked,
                max_suppression=float(raw["linked"].get("max_suppression", 0.0)) if linked else 0.0, risk=risk,
                public=_source_path(public, base) if isinstance(public, str) else None, series=series, text=text)


def _dp_spec(ck: _Checker, raw: dict[str, Any], p: Path, base: Path, text: str, lines: dict) -> Spec:
    """A spec with a ``dp:`` block (:mod:`anonydb.workflow.dpspec`): the block's arguments, its
    output (a table), series and report."""
    from .dpspec import TOP as DP_TOP, dp_block

    ck.keys(raw, (), DP_TOP)
    out, raw = dp_block(ck, raw)
    if "output" not in raw:
        ck.bad(("output",), "required key is missing")
    output = _output(ck, raw.get("output")) if "output" in raw else {"table": ""}
    if output.get("format", "duckdb") != "duckdb" or output.get("view"):
        ck.bad(("output",), "a DP release is a table in the database, beside its ledger: no format, path or view")
    series = raw.get("series")
    if isinstance(series, dict) and ck.keys(series, ("series",), ("name",)):
        series = series.get("name")
    if series is not None and not ck.typed(series, ("series",), (str,), "the series' name"):
        series = None
    report = _report(ck, raw.get("report"))
    for key in ("source", "database"):
        if key in raw:
            ck.typed(raw[key], (key,), (str,), "a table name or a file path" if key == "source" else "a database")
    if ck.problems:
        raise SpecError(str(p), ck.problems)
    source = raw["source"]
    return Spec(path=str(p), base_dir=base, source=source if "query" in out else _source_path(source, base),
                attributes=[], method="dp", method_params={}, privacy={}, table=output["table"],
                replace=output.get("replace", False), report_html=_opt_rel(report.get("html"), base),
                report_json=_opt_rel(report.get("json"), base), database=_opt_rel(raw.get("database"), base),
                raw=raw, lines=lines, series={"name": series} if series else None, text=text, dp=out)


def _series(ck: _Checker, v: Any) -> dict[str, Any] | None:
    """``series:`` a name, or {name, composition: intersection | insert-only | m-invariance, m, schema}
    (schema: where the ledger lives, default the database's current schema)."""
    at = ("series",)
    if isinstance(v, str):
        return {"name": v}
    if v is False:  # written untracked: composed with no other release (a mark in the ledger)
        return {"untracked": True}
    if not ck.keys(v, at, SERIES):
        return None
    out: dict[str, Any] = {}
    for k_ in ("name", "schema"):
        if k_ in v and ck.typed(v[k_], at + (k_,), (str,), f"a {'series' if k_ == 'name' else 'schema'} name"):
            out[k_] = v[k_]
    if "composition" in v:
        if v["composition"] not in ("intersection", "insert-only", "m-invariance"):
            ck.bad(at + ("composition",), f"expected intersection, insert-only or m-invariance, got "
                                          f"{v['composition']!r}")
        else:
            out["composition"] = v["composition"]
    if "m" in v and ck.typed(v["m"], at + ("m",), (int,), "an integer"):
        if v["m"] < 2:
            ck.bad(at + ("m",), f"must be at least 2, got {v['m']}")
        out["m"] = v["m"]
    if out.get("composition", "m-invariance" if "m" in out else None) == "m-invariance" and "m" not in out:
        ck.bad(at, "m-invariance needs m (series.m)")
    return out


def _k_map_fits(ck: _Checker, privacy: dict[str, Any], method: str, public: Any, roles: dict[str, list[str]],
                risk: Any, linked: Any) -> None:
    """privacy.k_map and the top-level public table come together; k-map releases (against the
    public table: :func:`anonydb.methods.presence.presence_anonymize`) take mondrian or fulldomain
    and no other model, person, pseudonym, risk limit or linked table."""
    if "k_map" not in privacy:
        if public is not None:
            ck.bad(("public",), "public is the population privacy.k_map is judged against: give privacy.k_map")
        return
    if public is None:
        ck.bad(("privacy", "k_map"), "k-map is judged against the population: give the public table (public: a "
                                     "table or a .csv/.parquet path)")
    others = [x for x in privacy if x != "k_map"]
    if others:
        ck.bad(("privacy",), f"privacy.k_map is judged against the public table on its own; drop {', '.join(others)}")
    if method not in ("mondrian", "fulldomain"):
        ck.bad(("method",), f"k-map releases are made by mondrian or fulldomain, not {method}")
    for role in ("person", "pseudonym"):
        if roles.get(role):
            ck.bad(("attributes",), f"a k-map release matches the public table row by row: no role {role}")
    if risk is not None or linked:
        ck.bad(("risk",) if risk is not None else ("linked",), "k-map releases take no risk limits or linked tables")


def _rel(p: str, base: Path) -> Path:
    q = Path(p)
    return q if q.is_absolute() else base / q


def _opt_rel(p: str | None, base: Path) -> str | None:
    if p is not None and p.startswith(("postgresql://", "postgres://")):
        return p  # a server, not a file beside the spec
    return None if p is None else str(_rel(p, base))


def _source_path(source: str, base: Path) -> str:
    if Path(source).suffix.lower() in (".csv", ".parquet", ".tsv"):
        return str(_rel(source, base))
    return source


def _attributes(ck: _Checker, value: Any, base: Path) -> list[Attribute]:
    at = ("attributes",)
    if not isinstance(value, dict) or not value:
        ck.bad(at, f"expected a mapping of column -> role, got {_tname(value)}")
        return []
    out = []
    for name, v in value.items():
        here = at + (name,)
        if not isinstance(name, str):
            ck.bad(here, f"column names are strings, got {name!r}")
            continue
        bare = isinstance(v, str)
        if bare:
            v = {"role": v}
        elif not ck.keys(v, here, ("role", "kind", "hierarchy", "pseudonym")):
            continue
        role = v.get("role")
        if role not in ROLES:
            ck.bad(here + ("role",) if "role" in v and not bare else here,
                   f"role must be one of {', '.join(sorted(set(ROLES)))}, got {role!r}")
            continue
        kind = v.get("kind")
        if kind is not None and kind not in KINDS:
            ck.bad(here + ("kind",), f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        hier = _hierarchy(ck, v["hierarchy"], here + ("hierarchy",), base) if "hierarchy" in v else None
        pseud = v.get("pseudonym", False)
        if pseud not in (True, False) or (pseud and ROLES[role] != "person"):
            ck.bad(here + ("pseudonym",), "pseudonym: true publishes the person column as its keyed pseudonym "
                                          "(role person); another column takes role pseudonym")
            pseud = False
        out.append(Attribute(name, ROLES[role], kind, hier, pseud))
    return out


def _hierarchy(ck: _Checker, v: Any, at: tuple, base: Path) -> Any:
    from ..hierarchy import Hierarchy

    if isinstance(v, str):
        path = _rel(v, base)
        if not path.is_file():
            ck.bad(at, f"hierarchy file not found: {str(path)!r}")
            return None
        try:
            return Hierarchy.from_arx(path)
        except InputError as e:
            ck.bad(at, str(e))
            return None
    builders = ("intervals", "breakpoints", "mask", "dates", "groups")
    if not ck.keys(v, at, builders):
        return None
    if len(v) != 1:
        ck.bad(at, f"give exactly one of {', '.join(builders)}")
        return None
    (kind, arg), = v.items()
    try:
        if kind == "intervals":
            if ck.typed(arg, at + (kind,), (list,), "a list of interval widths"):
                return Hierarchy.intervals(widths=arg)
        elif kind == "breakpoints":
            if ck.typed(arg, at + (kind,), (list,), "a list of breakpoint lists, one per level"):
                return Hierarchy.intervals(breakpoints=arg)
        elif kind == "groups":  # categories: {group: [value, ...]}, each value under its group, then *
            if not (isinstance(arg, dict) and arg and all(isinstance(vs, list) and vs for vs in arg.values())):
                ck.bad(at + (kind,), "expected a mapping of group -> [values]")
                return None
            return Hierarchy.from_mapping({str(x): [str(g), "*"] for g, vs in arg.items() for x in vs},
                                          source="groups")
        elif kind == "mask":
            if ck.typed(arg, at + (kind,), (int,), "the code length"):
                return Hierarchy.masking(length=arg)
        elif ck.typed(arg, at + (kind,), (list,), "a list of grains (day, month, year, ...)"):
            return Hierarchy.dates(levels=arg)
    except (InputError, ValueError, TypeError) as e:
        ck.bad(at + (kind,), str(e))
    return None


def _method(ck: _Checker, v: Any) -> tuple[str, dict[str, Any]]:
    at = ("method",)
    if isinstance(v, str):
        v = {"name": v}
    elif not isinstance(v, dict):
        ck.bad(at, f"expected a method name or a mapping with name, got {_tname(v)}")
        return "mondrian", {}
    name = v.get("name")
    if name not in METHODS:
        ck.bad(at + ("name",) if isinstance(v, dict) and "name" in v else at,
               f"method must be one of {', '.join(METHODS)}, got {name!r}")
        return "mondrian", {}
    allowed = METHODS[name]
    params = {}
    for key, val in v.items():
        if key == "name":
            continue
        if key not in allowed:
            ck.bad(at + (key,), f"unknown parameter {key!r} of {name}; expected one of {', '.join(allowed) or 'none'}")
            continue
        types, what = allowed[key]
        if ck.typed(val, at + (key,), types, what):
            params[key] = val
    if name == "mondrian" and params.get("categorical", "hierarchy") not in ("hierarchy", "order"):
        ck.bad(at + ("categorical",), f"expected hierarchy or order, got {params['categorical']!r}")
    if name == "fulldomain" and "max_suppression" in params and not 0 <= params["max_suppression"] <= 1:
        ck.bad(at + ("max_suppression",), f"expected a fraction in [0, 1], got {params['max_suppression']!r}")
    return name, params


def _privacy(ck: _Checker, v: Any, method: str) -> dict[str, Any]:
    at = ("privacy",)
    if not ck.keys(v, at, PRIVACY):
        return {}
    out: dict[str, Any] = {}
    num = (int, float)
    for key in ("k", "n", "k_map"):
        if key in v and ck.typed(v[key], at + (key,), (int,), "an integer"):
            if v[key] < 1:
                ck.bad(at + (key,), f"must be at least 1, got {v[key]}")
            out[key] = v[key]
    for key in ("alpha", "delta"):
        if key in v and ck.typed(v[key], at + (key,), num, "a number"):
            out[key] = v[key]
    if "beta" in v:  # beta-likeness: a number, or {value, variant: basic | enhanced}
        b = v["beta"] if isinstance(v["beta"], dict) else {"value": v["beta"]}
        if ck.keys(b, at + ("beta",), ("value", "variant")) and ck.typed(b.get("value"), at + ("beta", "value"), num,
                                                                           "a number"):
            if b.get("variant", "basic") not in ("basic", "enhanced"):
                ck.bad(at + ("beta", "variant"), f"expected basic or enhanced, got {b.get('variant')!r}")
            else:
                out["beta"] = b
    if "bt" in v:  # (B,t)-privacy: {b, t, distance} or a list of them (skyline)
        entries = v["bt"] if isinstance(v["bt"], list) else [v["bt"]]
        got = []
        for i, e in enumerate(entries):
            where = at + ("bt",) if not isinstance(v["bt"], list) else at + ("bt", str(i))
            if not isinstance(e, dict) or not {"b", "t"} <= set(e) or set(e) - {"b", "t", "distance"}:
                ck.bad(where, f"expected a mapping with b, t (and optionally distance), got {e!r}")
                continue
            if not (isinstance(e["b"], (int, float, list, dict)) and not isinstance(e["b"], bool)):
                ck.bad(where + ("b",), f"expected a bandwidth (a number, a list or a mapping per QI), got {e['b']!r}")
                continue
            if ck.typed(e["t"], where + ("t",), num, "a number"):
                got.append(e)
        if method != "mondrian":
            ck.bad(at + ("bt",), f"(B,t)-privacy is offered by method mondrian, not {method}")
        dists = {e.get("distance") for e in got}
        if len(dists) > 1:
            ck.bad(at + ("bt",), "every (B,t) entry must use the same distance")
        if got:
            out["bt"] = got
    for key, fields, shape in (("ke", ("k", "e"), "{k, e}"), ("epsilon_m", ("epsilon", "m"), "{epsilon, m}"),
                               ("multi_qid", ("k", "sets"), "{k, sets: [[columns], ...]}"),
                               ("xy_privacy", ("k", "bounds"), "{k, bounds: {value: h}}"),
                               ("personalized", ("guard", "breach"), "{guard: column, breach: p}")):
        if key in v:
            if not isinstance(v[key], dict) or set(v[key]) != set(fields):
                ck.bad(at + (key,), f"expected a mapping {shape}, got {v[key]!r}")
            else:
                out[key] = v[key]
    if "confidence_bound" in v:
        if not isinstance(v["confidence_bound"], dict) or not v["confidence_bound"]:
            ck.bad(at + ("confidence_bound",), f"expected a mapping of sensitive value -> h, got {v['confidence_bound']!r}")
        else:
            out["confidence_bound"] = v["confidence_bound"]
    if "confidence_bound" in out and "xy_privacy" in out:
        ck.bad(at, "confidence_bound and xy_privacy both bound confidences: give the bounds in xy_privacy only")
    l_opts = _with_options(ck, v, "l", ("variant", "c", "allowed", "protected", "c2"))
    if l_opts is not None:
        variants = ("distinct", "entropy", "recursive", "probabilistic", "pd-recursive", "npd-recursive")
        if l_opts.get("variant", "distinct") not in variants:
            ck.bad(at + ("l", "variant"), f"expected one of {', '.join(variants)}, got {l_opts.get('variant')!r}")
        out["l"] = l_opts
    t_opts = _with_options(ck, v, "t", ("distance", "reference"))
    if t_opts is not None:
        out["t"] = t_opts
    if method in ("anatomy", "slicing", "injector"):
        extra = [x for x in out if x != "l"]
        if extra:
            ck.bad(at, f"{method} takes privacy.l only, not {', '.join(extra)}")
    return out


def _with_options(ck: _Checker, v: dict, key: str, options: tuple[str, ...]) -> dict[str, Any] | None:
    """``key: 3`` or ``key: {value: 3, option: ...}`` -> {value, options...} (None when absent or bad)."""
    if key not in v:
        return None
    at = ("privacy", key)
    nested = isinstance(v[key], dict)
    d = v[key] if nested else {"value": v[key]}
    if nested:
        ck.keys(d, at, ("value",) + options)
    if not ck.typed(d.get("value"), at + ("value",) if nested else at, (int, float), "a number"):
        return None
    return {x: d[x] for x in ("value",) + options if x in d}


def _linked(ck: _Checker, v: Any) -> dict[str, dict[str, Any]]:
    """linked: {max_suppression: f, <event table>: {key: fk, table: release, keep: [cols]}, ...}."""
    at = ("linked",)
    if not isinstance(v, dict) or not v:
        ck.bad(at, f"expected a mapping of event table -> {{key, table}}, got {_tname(v)}")
        return {}
    out = {}
    for name, spec in v.items():
        if name == "max_suppression":
            ck.typed(spec, at + (name,), (int, float), "a fraction in [0, 1] of each table's persons")
            continue
        here = at + (name,)
        if not ck.keys(spec, here, ("key", "table", "keep")):
            continue
        for req in ("key", "table"):
            if req not in spec:
                ck.bad(here, f"{req} is missing (the foreign key to the person table, and the table's release)")
            else:
                ck.typed(spec[req], here + (req,), (str,), "a column name" if req == "key" else "a table name")
        keep = spec.get("keep", [])
        if not isinstance(keep, list) or not all(isinstance(c, str) for c in keep):
            ck.bad(here + ("keep",), "a list of column names")
            keep = []
        out[name] = {"key": spec.get("key"), "table": spec.get("table"), "keep": keep}
    return out


def _output(ck: _Checker, v: Any) -> dict[str, Any]:
    at = ("output",)
    if isinstance(v, str):
        v = {"table": v}
    if not ck.keys(v, at, ("table", "format", "path", "view", "replace")):
        return {"table": ""}
    if "table" not in v:
        ck.bad(at, "output.table (the release's name) is missing")
    else:
        ck.typed(v["table"], at + ("table",), (str,), "a table name")
    fmt = v.get("format", "duckdb")
    if fmt not in FORMATS:
        ck.bad(at + ("format",), f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt in ("parquet", "csv") and "path" not in v:
        ck.bad(at, f"format {fmt} needs output.path")
    if "path" in v and ck.typed(v["path"], at + ("path",), (str,), "a file path"):
        if fmt in ("parquet", "csv") and Path(v["path"]).suffix.lower() != "." + fmt:
            ck.bad(at + ("path",), f"a {fmt} output's path ends in .{fmt}, got {v['path']!r}")
    for key in ("view", "replace"):
        if key in v:
            ck.typed(v[key], at + (key,), (bool,), "a boolean")
    return {"table": v.get("table", ""), **{x: v[x] for x in ("format", "path", "view", "replace") if x in v}}


def _risk(ck: _Checker, v: Any, base: Path) -> Any:
    """risk: {max_journalist_risk: 0.05, threshold: 0.2, population: file-or-table, ...}: the limits
    (anonydb.risk.assess.Limits) a release must meet, its population path relative to the spec."""
    from ..risk.assess import Limits

    try:
        limits = Limits.parse(v, "risk")
    except InputError as e:
        ck.bad(("risk",), str(e))
        return None
    pop = limits.options.get("population")
    if isinstance(pop, str):
        limits.options["population"] = _source_path(pop, base)
    return limits


def _report(ck: _Checker, v: Any) -> dict[str, str]:
    at = ("report",)
    if v is None:
        return {}
    if isinstance(v, str):
        v = {"html": v} if not v.endswith(".json") else {"json": v}
    if not ck.keys(v, at, ("html", "json")):
        return {}
    for key in v:
        ck.typed(v[key], at + (key,), (str,), "a file path")
    return {k: x for k, x in v.items() if isinstance(x, str)}


__all__ = ["Attribute", "Spec", "SpecError", "load_spec"]
