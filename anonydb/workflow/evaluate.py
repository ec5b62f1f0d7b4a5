"""What a release really leaks: attack simulations and the privacy-utility trade-off on any release
the project produces (generalized, QIT/ST, sliced) [issue 10].

* Homogeneity attack [Li thesis §2.1, §2.4.1]: a group whose tuples all share one sensitive value
  discloses it; every tuple of such a group is exposed.
* Similarity attack [thesis §2.4.1]: a group whose values are all semantically close discloses the
  class: all under one node of the sensitive attribute's hierarchy at ``level`` (the thesis's
  three occupation groups), or, for a numeric attribute, within a range of ``width``.
* Re-identification risk [El Emam; ARX's risk models]: prosecutor (record risk 1/f_j, f_j the size of
  the record's class in the release), journalist (1/F_j, F_j the matching records of a population
  table in the release's coding), marketer (the expected share re-identified, (1/n) sum_j f_j / F_j;
  with no population F_j = f_j, i.e. classes / n); the distribution of record risk.
* The foreground-knowledge attack of Wong et al.: :mod:`anonydb.attacks.foreground`.
* P_loss / U_loss and the efficient frontier [thesis Ch. 5]: :mod:`anonydb.workflow.tradeoff`.

A release is read as its groups: ``tuples`` (group, QI columns: labels or exact values) and
``counts`` (group, value, count), from a QIT/ST pair (``NAME_qit``/``NAME_st``) or from a table with
one row per record and a group column (``eq_class``, ``bucket_id``, ``group_id``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..engines.base import Engine
from ..engines import connect
from ..errors import InputError
from ..hierarchy import Hierarchy, validate_all
from ..schema import is_numeric_type, split_list
from ..sources import open_source
from ..sqlgen import ident



@dataclass
class Parts:
    """A release as groups: tuples(_adb_g, QI columns), counts(_adb_g, _adb_sa, _adb_cnt)."""

    kind: str  # "qit_st" or "table"
    tuples: str
    counts: str
    keys: list[str]  # the columns a record's identity class is read from (for risk)
    table: str  # the relation holding the QI columns (risk; with kind "table", the release rows)
    rows: int
    group: str  # the release's group column
    st: str | None = None  # with kind "qit_st": the ST (table is the QIT)


def release_parts(eng: Engine, s: Any, release: Any, qi: list[str], sensitive: str, group: str | None = None) -> Parts:
    """Read ``release`` (a :class:`anonydb.workflow.jobs.Release`, a name with NAME_qit/NAME_st tables,
    or a table/file with one row per record) as its groups."""
    tables = getattr(release, "tables", None)
    if tables is not None:  # a Release object
        if "qit" in tables:
            qit, st, table = tables["qit"], tables["st"], None
        else:
            qit, st, table = None, None, release.table
        group = group or {"slicing": "bucket_id"}.get(getattr(release, "method", ""), None)
    elif isinstance(release, str) and eng.exists(f"{release}_qit") and eng.exists(f"{release}_st"):
        qit, st, table = f"{release}_qit", f"{release}_st", None
    else:
        qit, st, table = None, None, open_source(eng, release, scratch=s)
    if qit is not None:
        g = group or "group_id"
        for c in qi + [g]:
            if c not in dict(eng.columns(qit)):
                raise InputError(f"the QIT {qit!r} has no column {c!r}")
        if sensitive not in dict(eng.columns(st)):
            raise InputError(f"the ST {st!r} has no column {sensitive!r}")
        tuples = s.table(f"SELECT {ident(g)} AS _adb_g, {', '.join(ident(c) for c in qi)} FROM {ident(qit)}")
        counts = s.table(f"SELECT {ident(g)} AS _adb_g, {ident(sensitive)} AS _adb_sa, sum({ident('count')}) AS _adb_cnt "
                         f"FROM {ident(st)} GROUP BY ALL")
        rows = int(eng.scalar(f"SELECT count(*) FROM {ident(tuples)}"))
        return Parts("qit_st", tuples, counts, list(qi), qit, rows, g, st)
    cols = dict(eng.columns(table))
    g = group or next((c for c in ("eq_class", "bucket_id", "group_id") if c in cols), None)
    if g is None or g not in cols:
        raise InputError(f"{release!r} has no group column (eq_class, bucket_id, group_id; or give group=)")
    for c in qi + [sensitive]:
        if c not in cols:
            raise InputError(f"{release!r} has no column {c!r}")
    tuples = s.table(f"SELECT {ident(g)} AS _adb_g, {', '.join(ident(c) for c in qi)} FROM {ident(table)}")
    counts = s.table(f"SELECT {ident(g)} AS _adb_g, {ident(sensitive)} AS _adb_sa, count(*) AS _adb_cnt "
                     f"FROM {ident(table)} GROUP BY ALL")
    rows = int(eng.scalar(f"SELECT count(*) FROM {ident(tuples)}"))
    return Parts("table", tuples, counts, [g] if g == "eq_class" else list(qi), table, rows, g)


# -- attacks on the sensitive values --------------------------------------------------------------
def homogeneity(eng: Engine, parts: Parts) -> dict[str, Any]:
    """Groups with a single sensitive value: their tuples are exposed."""
    groups, bad, exposed = eng.fetch_rows(
        f"SELECT count(*), count(*) FILTER (WHERE d = 1), coalesce(sum(n) FILTER (WHERE d = 1), 0) FROM "
        f"(SELECT _adb_g, count(DISTINCT _adb_sa) AS d, sum(_adb_cnt) AS n FROM {ident(parts.counts)} "
        f"GROUP BY _adb_g) AS g")[1][0]
    return {"groups": int(groups), "exposed_groups": int(bad), "exposed_tuples": int(exposed),
            "share": int(exposed) / parts.rows if parts.rows else 0.0}


def similarity(eng: Engine, s: Any, parts: Parts, *, hierarchy: Hierarchy | None = None, level: int = 1,
               width: float | None = None, numeric: bool = False) -> dict[str, Any]:
    """Groups whose values all fall under one node of ``hierarchy`` at ``level`` (or, numeric, within
    ``width`` of each other): the class of their tuples' values is disclosed."""
    if hierarchy is not None:
        level = hierarchy.check_level(level)
        node = hierarchy.sql_expr("_adb_sa", level)
        how = f"one node at level {level} of the sensitive hierarchy"
        expr = f"count(DISTINCT {node}) = 1"
    elif width is not None:
        if not numeric:
            raise InputError("similarity by width needs a numeric sensitive attribute")
        if isinstance(width, bool) or not isinstance(width, (int, float)) or width < 0:
            raise InputError(f"width must be a number >= 0, got {width!r}")
        how = f"a range of at most {width:g}"
        expr = f"max(_adb_sa) - min(_adb_sa) <= {float(width)!r}"
    else:
        raise InputError("the similarity attack needs the sensitive attribute's hierarchy (or a width when numeric)")
    groups, bad, exposed = eng.fetch_rows(
        f"SELECT count(*), count(*) FILTER (WHERE close), coalesce(sum(n) FILTER (WHERE close), 0) FROM "
        f"(SELECT _adb_g, {expr} AS close, sum(_adb_cnt) AS n FROM {ident(parts.counts)} GROUP BY _adb_g) AS g")[1][0]
    return {"criterion": how, "groups": int(groups), "exposed_groups": int(bad), "exposed_tuples": int(exposed),
            "share": int(exposed) / parts.rows if parts.rows else 0.0}


# -- re-identification ------------------------------------------------------------------------------
def reidentification_risk(eng: Engine, table: str, keys: list[str], *, population: str | None = None,
                          threshold: float = 0.2) -> dict[str, Any]:
    """Prosecutor, journalist (with ``population`` in the release's coding: the same key columns)
    and marketer risk of the records of ``table`` whose identity class is read from ``keys``, with
    the distribution of record risk (:mod:`anonydb.risk.sample`, the one definition)."""
    from ..risk.sample import distribution, histograms, summary

    h = histograms(eng, table, keys, population=population)
    s = summary(h, threshold)
    rows = int(s["n"])
    if not rows:
        return {"rows": 0}
    p, j = s["prosecutor"], s["journalist"]
    out: dict[str, Any] = {
        "rows": rows, "classes": int(s["classes"]), "threshold": threshold,
        "prosecutor": {"highest": float(p["highest"]), "average": float(p["average"]),
                       "records_at_risk": int(p["records_at_risk"] * rows), "share_at_risk": float(p["records_at_risk"])},
        "marketer": float(s["marketer"]),
        "distribution": [d for d in distribution(h) if d["records"]],
    }
    if population is not None:
        out["journalist"] = {"highest": float(j["highest"]), "records_at_risk": int(j["records_at_risk"] * rows),
                             "share_at_risk": float(j["records_at_risk"])}
    return out


# -- everything at once -----------------------------------------------------------------------------
def _validate_hierarchies(eng: Engine, s: Any, parts: Parts, hs: Mapping[str, Hierarchy], qi_hs: list[str],
                          sensitive: str, source: Any, name: str) -> None:
    """Every given hierarchy must cover its column: the sensitive attribute's the release's values
    (the similarity attack reads them), a QI's the source's (U_loss generalizes the source);
    InputError naming the column, the hierarchy and the first uncovered values otherwise."""
    if sensitive in hs:
        hs[sensitive].validate(eng, parts.counts, "_adb_sa", name=parts.st if parts.kind == "qit_st" else name,
                               label=sensitive)
    if qi_hs:
        src = open_source(eng, source, scratch=s)
        validate_all(eng, src, {c: hs[c] for c in qi_hs}, name=str(source))


@dataclass
class Evaluation:
    release: str
    rows: int
    groups: int
    seconds: float
    homogeneity: dict[str, Any]
    similarity: dict[str, Any] | None
    risk: dict[str, Any]
    p_loss: float
    u_loss: float | None = None
    populations: int | None = None
    foreground: Any = None  # anonydb.attacks.foreground.ForegroundResult
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, "rows": self.rows, "groups": self.groups, "seconds": self.seconds,
                "homogeneity": self.homogeneity, "similarity": self.similarity, "risk": self.risk,
                "p_loss": self.p_loss, "u_loss": self.u_loss, "populations": self.populations,
                "foreground": self.foreground.to_dict() if self.foreground is not None else None,
                "notes": self.notes}

    def format(self) -> str:
        h = self.homogeneity
        lines = [f"evaluation of {self.release}: {self.rows} records in {self.groups} groups ({self.seconds:.2f} s)",
                 f"  homogeneity attack: {h['exposed_tuples']} tuples in {h['exposed_groups']} groups exposed "
                 f"({100 * h['share']:.2f}%)"]
        if self.similarity:
            m = self.similarity
            lines.append(f"  similarity attack ({m['criterion']}): {m['exposed_tuples']} tuples in "
                         f"{m['exposed_groups']} groups exposed ({100 * m['share']:.2f}%)")
        r = self.risk
        if r.get("rows"):
            p = r["prosecutor"]
            lines.append(f"  re-identification: prosecutor highest {p['highest']:.4f}, average {p['average']:.4f}, "
                         f"{p['records_at_risk']} records above {r['threshold']:g}; marketer {r['marketer']:.4f}"
                         + (f"; journalist highest {r['journalist']['highest']:.4f}, "
                            f"{r['journalist']['records_at_risk']} records above" if "journalist" in r else ""))
        lines.append(f"  P_loss (worst-case JS from the table's distribution): {self.p_loss:.4f}"
                     + (f"; U_loss (mean JS over {self.populations} large populations): {self.u_loss:.4f}"
                        if self.u_loss is not None else ""))
        if self.foreground is not None:
            lines += ["  " + x for x in self.foreground.format().splitlines()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def evaluate(release: Any, qi: str | Iterable[str], sensitive: str, *, engine: Engine | Any = None,
             source: str | None = None, group: str | None = None,
             hierarchies: Mapping[str, Hierarchy] | None = None, similarity_level: int = 1,
             similarity_width: float | None = None, population: str | None = None, threshold: float = 0.2,
             min_sup: float = 0.05, foreground: dict[str, Any] | None = None) -> Evaluation:
    """Run the attacks and measures on ``release``. ``source`` (the original table) enables U_loss;
    ``hierarchies`` (QIs for U_loss, the sensitive attribute for the similarity attack);
    ``population`` enables journalist risk; ``foreground``: keyword arguments of
    :func:`anonydb.attacks.foreground.foreground_attack` (targets, r, epsilon, sigma, truth ...) to run it."""
    from .tradeoff import p_loss_of_counts, u_loss

    t0 = time.perf_counter()
    eng = connect(engine)
    qi_cols = split_list(qi, "quasi-identifiers")
    if not sensitive:
        raise InputError("evaluate needs the sensitive attribute")
    hs = dict(hierarchies or {})
    for attr in hs:
        if attr not in qi_cols and attr != sensitive:
            raise InputError(f"a hierarchy is given for {attr!r}, which is neither a quasi-identifier "
                             f"nor the sensitive attribute (quasi-identifiers: {', '.join(qi_cols)}; "
                             f"sensitive: {sensitive})")
    qi_hs = [c for c in qi_cols if c in hs]
    if qi_hs and source is None:
        raise InputError(f"the hierarchies of the quasi-identifiers ({', '.join(qi_hs)}) serve U_loss only, which "
                         f"needs the original table: give source (--source), or drop them")
    name = getattr(release, "table", None) or str(release)
    notes: list[str] = []
    with eng.scratch("evaluate") as s:
        parts = release_parts(eng, s, release, qi_cols, sensitive, group)
        _validate_hierarchies(eng, s, parts, hs, qi_hs, sensitive, source, name)
        groups = int(eng.scalar(f"SELECT count(DISTINCT _adb_g) FROM {ident(parts.counts)}"))
        homo = homogeneity(eng, parts)
        sim = None
        sa_type = dict(eng.columns(parts.counts)).get("_adb_sa", "VARCHAR")
        if sensitive in hs or similarity_width is not None:
            sim = similarity(eng, s, parts, hierarchy=hs.get(sensitive), level=similarity_level,
                             width=similarity_width, numeric=is_numeric_type(sa_type))
        else:
            notes.append("no hierarchy for the sensitive attribute: similarity attack skipped")
        risk = reidentification_risk(eng, parts.table, parts.keys, population=population, threshold=threshold)
        pl = p_loss_of_counts(eng, parts.counts)
        # the release itself feeds U_loss and the foreground attack: its QIT/ST, or its rows
        where: dict[str, Any] = ({"qit": parts.table, "st": parts.st} if parts.kind == "qit_st" else
                                 {"table": parts.table})
        ul = pops = None
        if source is not None:
            r = u_loss(source, qi_cols, sensitive, engine=eng, hierarchies=hs, min_sup=min_sup, group=parts.group,
                       bucketized=parts.group == "bucket_id", **where)
            ul, pops = r.value, r.populations
        else:
            notes.append("no source given: U_loss skipped")
        fg = None
        if foreground is not None:
            from ..attacks.foreground import foreground_attack

            fg = foreground_attack(engine=eng, qi=qi_cols, sensitive=sensitive, group=parts.group, **where,
                                   **dict(foreground))
    return Evaluation(release=name, rows=parts.rows, groups=groups, seconds=time.perf_counter() - t0,
                      homogeneity=homo, similarity=sim, risk=risk, p_loss=pl, u_loss=ul, populations=pops,
                      foreground=fg, notes=notes)


__all__ = ["Evaluation", "Parts", "evaluate", "homogeneity", "reidentification_risk", "release_parts", "similarity"]
