"""The random campaign (issue 47): every method x every model it offers, strict and relaxed cuts,
on small random tables (5-60 rows, 1-3 QIs, NULLs and ties, 1-4 sensitive values, shuffled rows).

Each release is judged by the brute-force oracles of ``campaign_oracle`` (plain Python, nothing
imported from anonydb): every source row accounted for, every released value covering the
original, every group -- the rows sharing every published column but the sensitive one --
meeting the model, (n,t) by regions of the QI space (Mondrian) or by QI subsets (full-domain).
A refusal must be InfeasibleError or InputError, and the oracle must agree with it: an
InfeasibleError only when the table cannot be released (the whole table as one class fails, no
full-domain node satisfies, ...), an InputError only for a documented precondition (relaxed cuts
with (n,t); NULL in a numeric QI of Mondrian). Any other exception (an internal error, a failed
self-verification) is a finding.

Two tiers with fixed seeds: ``test_campaign`` (80 tables, the normal suite) and
``test_campaign_full`` (2,000 tables, ``-m slow``). A failure prints each bad case with its table
and call, so it can be replayed with :func:`replay`.
"""

from __future__ import annotations

import itertools
import math
import random
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

import anonydb
from anonydb import Hierarchy
from anonydb.errors import InfeasibleError, InputError
from anonydb.methods.presence import presence_anonymize
from anonydb.sqlgen import ident, literal

from campaign_oracle import (Models, assignment_exists, exact, lattice, matching, mine, presence_failures,
                             region_failures, sliced_failures, sort_key, subset_failures, valid_sets)

SA = "s"
LETTERS = "abcdefg"
SA_TEXT = ["flu", "hiv", "cold", "acne"]

# -- the combinations --------------------------------------------------------------------------------
MODELS = ["k", "l-distinct", "l-entropy", "l-recursive", "l-probabilistic", "t-equal", "t-ordered",
          "t-hierarchical", "nt-equal", "nt-ordered", "alpha-k", "delta", "several"]
L_MODELS = ["l-distinct", "l-entropy", "l-recursive", "l-probabilistic"]
COMBOS = ([("mondrian", m, relaxed) for m in MODELS for relaxed in (False, True)]
          + [("fulldomain", m, False) for m in MODELS]
          + [("anatomy", m, False) for m in L_MODELS]
          + [("slicing", "sliced-l", False), ("slicing", "sliced-l-columns", False)]
          + [("injector", "matching-l", False)]
          + [("presence", "fulldomain", False), ("presence", "mondrian", False), ("presence", "mondrian", True)])


@dataclass
class Table:
    rows: list[tuple]  # (q0, .., s)
    qis: list[str]
    kinds: list[str]  # "int" | "cat" per QI
    chains: list[dict]  # per QI: value -> [value, level 1, ..., root] (the hierarchy, NULL not a leaf)
    sa_chains: dict  # sensitive value -> [value, level 1, root]
    notes: list = field(default_factory=list)  # per row, the source's column 'note' (no role unless kept)

    @property
    def columns(self) -> list[str]:
        return self.qis + [SA]


@dataclass
class Case:
    index: int
    table: Table
    method: str
    model: str
    relaxed: bool
    params: dict  # the privacy model's keywords
    opts: dict = field(default_factory=dict)  # the method's own options
    private: list[int] = field(default_factory=list)  # presence: the rows of the table in the private table

    def describe(self) -> str:
        t = self.table
        return (f"case {self.index}: {self.method} / {self.model} relaxed={self.relaxed} params={self.params} "
                f"opts={ {k: v for k, v in self.opts.items() if k != 'hierarchies'} } "
                f"hierarchies={sorted(self.opts.get('hierarchies', {}))}\n"
                f"  columns {t.columns} kinds {t.kinds}\n  rows {t.rows}\n  notes {t.notes}"
                + (f"\n  private rows {self.private}" if self.method == "presence" else "")
                + f"\n  QI hierarchies {t.chains}\n  sensitive hierarchy {t.sa_chains}")


# -- the generator --------------------------------------------------------------------------------------
def _chains(values: list, rnd: random.Random, root: str = "*") -> dict:
    """A hierarchy over ``values`` (sorted): height 1-3, each level grouping runs of the level below,
    labels unique across levels (G.., H..), so every label names one node."""
    height = rnd.choice([1, 2, 2, 3])
    chains = {v: [v] for v in values}
    groups = [[v] for v in values]
    for lvl in range(1, height):
        size = rnd.choice([2, 3])
        merged = [sum(groups[i:i + size], []) for i in range(0, len(groups), size)]
        for j, g in enumerate(merged):
            for v in g:
                chains[v].append(f"{'GHJ'[lvl - 1]}{j}")
        groups = merged
    for v in values:
        chains[v].append(root)
    return chains


def gen_table(rnd: random.Random, diverse: bool = False) -> Table:
    """``diverse``: mostly 2-4 sensitive values in near-even shares (l-diversity's requests are then
    mostly feasible); otherwise 1-4 values with any shares."""
    n = rnd.randint(5, 60)
    d = rnd.randint(1, 3)
    qis, kinds, cols, chains = [], [], [], []
    int_nulls = rnd.random() < 0.05  # Mondrian refuses these (InputError); the others take them
    for i in range(d):
        kind = rnd.choice(["int", "cat"])
        size = rnd.randint(1, 7)
        if kind == "int":
            dom = sorted(rnd.sample(range(0, 25), size))
        else:
            dom = sorted(rnd.sample(LETTERS, min(size, len(LETTERS))))
        weights = [rnd.random() + 0.05 for _ in dom]
        col = rnd.choices(dom, weights, k=n)
        null_rate = (rnd.choice([0.1, 0.2, 0.35]) if (kind == "cat" and rnd.random() < 0.4)
                     or (kind == "int" and int_nulls) else 0)
        col = [None if rnd.random() < null_rate else v for v in col]
        if all(v is None for v in col):
            col[0] = dom[0]
        qis.append(f"q{i}")
        kinds.append(kind)
        cols.append(col)
        chains.append(_chains(dom, rnd))
    even = diverse and rnd.random() < 0.75
    m = rnd.randint(2, 4) if even else rnd.randint(1, 4)
    sa_dom = sorted(rnd.sample([10, 20, 30, 40], m)) if rnd.random() < 0.4 else sorted(rnd.sample(SA_TEXT, m))
    sw = [rnd.uniform(0.7, 1.3) if even else rnd.random() + 0.1 for _ in sa_dom]
    sa = rnd.choices(sa_dom, sw, k=n)
    rows = [tuple(c[j] for c in cols) + (sa[j],) for j in range(n)]
    if rnd.random() < 0.3:  # adversarial order first (sorted, or by sensitive value), then maybe shuffled
        flip = rnd.random() < 0.5
        rows.sort(key=lambda r: [sort_key(v) for v in (r[::-1] if flip else r)])
    if rnd.random() < 0.7:
        rnd.shuffle(rows)
    sa_chains = {v: [v, f"S{i // 2}", "*"] for i, v in enumerate(sa_dom)}
    notes = rnd.choices(["n0", "n1"], k=n) if rnd.random() < 0.5 else ["n0"] * n
    return Table(rows, qis, kinds, chains, sa_chains, notes)


def model_params(model: str, rnd: random.Random, n_rows: int) -> dict:
    t = rnd.choice([0.1, 0.2, 0.25, 0.3, 0.5])
    return {
        "k": lambda: {"k": rnd.randint(2, 6)},
        "l-distinct": lambda: {"l": rnd.choice([2, 2, 3])},
        "l-entropy": lambda: {"l": rnd.choice([1.5, 2, 2, 3]), "l_variant": "entropy"},
        "l-recursive": lambda: {"l": rnd.choice([2, 3]), "l_variant": "recursive", "c": rnd.choice([0.5, 1, 2, 3])},
        "l-probabilistic": lambda: {"l": rnd.choice([1.5, 2, 3]), "l_variant": "probabilistic"},
        "t-equal": lambda: {"t": t, "distance": "equal"},
        "t-ordered": lambda: {"t": t, "distance": "ordered"},
        "t-hierarchical": lambda: {"t": t, "distance": "hierarchical"},
        "nt-equal": lambda: {"n": rnd.randint(2, max(2, n_rows // 2 + 3)), "t": t, "distance": "equal"},
        "nt-ordered": lambda: {"n": rnd.randint(2, max(2, n_rows // 2 + 3)), "t": t, "distance": "ordered"},
        "alpha-k": lambda: {"alpha": rnd.choice([0.5, 0.6, 0.75]), "k": rnd.randint(2, 4)},
        "delta": lambda: {"delta": rnd.choice([0.5, 1.0, 2.0, 3.0])},
        "several": lambda: {"k": rnd.randint(2, 4), "l": 2, "t": rnd.choice([0.3, 0.5])},
    }[model]()


def hierarchy(chains: dict) -> Hierarchy:
    return Hierarchy.from_rows([[str(v) for v in c] for c in chains.values()])


def _cat_hierarchies(table: Table, rnd: random.Random) -> dict:
    """Hierarchies for some categorical QIs (Mondrian cuts along them); rarely for one with NULLs,
    which Mondrian refuses (InputError: NULL is no leaf)."""
    out = {}
    for i, (q, c, k) in enumerate(zip(table.qis, table.chains, table.kinds)):
        nulls = any(r[i] is None for r in table.rows)
        if k == "cat" and rnd.random() < (0.05 if nulls else 0.4):
            out[q] = hierarchy(c)
    return out


def gen_case(index: int, combo: tuple, rnd: random.Random) -> Case:
    method, model, relaxed = combo
    table = gen_table(rnd, diverse=model in L_MODELS + ["several"] or method in ("anatomy", "slicing", "injector"))
    n = len(table.rows)
    opts: dict[str, Any] = {}
    params: dict[str, Any] = {}
    private: list[int] = []
    if method in ("mondrian", "fulldomain"):
        params = model_params(model, rnd, n)
    if method == "mondrian":
        opts["relaxed"] = relaxed
        opts["plan"] = rnd.choice(["auto", "auto", "levelwise", "fragments"])
        if rnd.random() < 0.2:
            opts["try_all_dims"] = False
        hier = _cat_hierarchies(table, rnd)
        if not hier and rnd.random() < 0.2:
            opts["categorical"] = "order"
        opts["hierarchies"] = hier
        kinds = {q: "categorical" for q, k in zip(table.qis, table.kinds) if k == "int" and rnd.random() < 0.15}
        if kinds:  # an integer QI cut as a category (value sets, no ranges; NULL is then a value)
            opts["kinds"] = kinds
    elif method == "fulldomain":
        opts["hierarchies"] = {q: hierarchy(c) for q, c in zip(table.qis, table.chains)}
        opts["max_suppression"] = rnd.choice([0, 0, 0.1, 0.25])
        opts["metric"] = rnd.choice(["dm", "aecs", "height", "precision", "loss", "entropy"])
    elif method == "anatomy":
        params = model_params(model, rnd, n)
        params["l"] = int(params["l"]) if params["l"] >= 2 else 2  # group creation takes an integer l >= 2
    elif method == "slicing":
        params = {"l": rnd.choice([1.5, 2, 2, 3])}
        if model == "sliced-l-columns":
            attrs = table.columns
            c = rnd.randint(2, len(attrs))
            cols = [[] for _ in range(c)]
            order = attrs[:]
            rnd.shuffle(order)
            for i, a in enumerate(order):
                cols[i if i < c else rnd.randrange(c)].append(a)
            opts["columns"] = cols
    elif method == "injector":
        params = {"l": rnd.choice([2, 2, 3])}
        opts["min_exp"] = rnd.choice([0.3, 0.5, 0.7, 0.9])
        if rnd.random() < 0.4:
            opts["hierarchies"] = {q: hierarchy(c) for q, c in zip(table.qis, table.chains)}
    elif method == "presence":
        private = sorted(rnd.sample(range(n), rnd.randint(1, n)))
        dmin = rnd.choice([0, 0, Fraction(1, 10), Fraction(1, 5), Fraction(1, 4)])
        dmax = rnd.choice([Fraction(1, 2), Fraction(3, 5), Fraction(4, 5), 1])
        params = {"delta": (float(dmin), float(dmax))}
        opts["method"] = model
        if model == "fulldomain":
            opts["hierarchies"] = {q: hierarchy(c) for q, c in zip(table.qis, table.chains)}
        else:
            opts["hierarchies"] = _cat_hierarchies(table, rnd)
            opts["relaxed"] = relaxed
    if method in ("mondrian", "fulldomain", "anatomy") and rnd.random() < 0.15:
        opts["keep"] = ["note"]  # published unchanged: judged with the QIs, refused when it breaks the model
    if model in ("t-hierarchical",) and method in ("mondrian", "fulldomain"):
        opts.setdefault("hierarchies", {})[SA] = hierarchy(table.sa_chains)
    return Case(index, table, method, model, relaxed, params, opts, private)


def cases(seed: int, count: int):
    """``count`` cases: the combinations in a fresh shuffled order each cycle, so every one recurs."""
    rnd = random.Random(seed)
    i = 0
    while i < count:
        cycle = COMBOS[:]
        rnd.shuffle(cycle)
        for combo in cycle:
            if i >= count:
                return
            yield gen_case(i, combo, rnd)
            i += 1


# -- running ------------------------------------------------------------------------------------------------
def load(eng, name: str, columns: list[str], rows: list[tuple], types: list[str]) -> None:
    cols = ", ".join(f"{ident(c)} {t}" for c, t in zip(columns, types))
    eng.execute(f"CREATE TABLE {ident(name)} ({cols})")
    if rows:
        values = ", ".join("(" + ", ".join(literal(v) for v in r) + ")" for r in rows)
        eng.execute(f"INSERT INTO {ident(name)} VALUES {values}")


def clear(eng) -> None:
    for name, kind in eng.fetch_rows("SELECT table_name, table_type FROM information_schema.tables "
                                     "WHERE table_schema = 'main'")[1]:
        eng.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} IF EXISTS {ident(name)} CASCADE")


def fetch(eng, table: str) -> tuple[list[str], list[dict]]:
    cols, rows = eng.fetch_rows(f"SELECT * FROM {ident(table)}")
    return cols, [dict(zip(cols, r)) for r in rows]


def types_of(table: Table) -> list[str]:
    sa_int = isinstance(table.rows[0][-1], int)
    return ["INTEGER" if k == "int" else "VARCHAR" for k in table.kinds] + ["INTEGER" if sa_int else "VARCHAR"]


def run(eng, case: Case) -> tuple[str, Any]:
    """("ok", result) or ("refused", error) for InfeasibleError / InputError; anything else raises."""
    t = case.table
    clear(eng)
    if case.method == "presence":
        load(eng, "pub", t.qis, [r[:-1] for r in t.rows], types_of(t)[:-1])
        load(eng, "priv", t.qis, [t.rows[i][:-1] for i in case.private], types_of(t)[:-1])
    else:
        types = types_of(t)
        load(eng, "src", t.qis + ["note", SA], [r[:-1] + (x, r[-1]) for r, x in zip(t.rows, t.notes)],
             types[:-1] + ["VARCHAR", types[-1]])
    try:
        if case.method == "presence":
            return "ok", presence_anonymize("priv", "pub", t.qis, out="rel", engine=eng, seed=0, **case.params,
                                            **case.opts)
        return "ok", anonydb.anonymize("src", t.qis, SA, method=case.method, out="rel", engine=eng, seed=0,
                                       **case.params, **case.opts)
    except (InfeasibleError, InputError) as e:
        return "refused", e


# -- covering: a released value stands for the original ----------------------------------------------
def covers_value(v: Any, rel: dict, q: str, chains: dict) -> bool:
    lab = rel[q]
    if f"{q}_lo" in rel:  # a numeric range, labelled as it reads: the value alone, or [lo, hi]
        lo, hi = rel[f"{q}_lo"], rel[f"{q}_hi"]
        return v is not None and lo <= v <= hi and lab == (str(lo) if lo == hi else f"[{lo}, {hi}]")
    if v is None:
        return lab is None or lab == "NULL" or (isinstance(lab, str) and _in_set(lab, "NULL"))
    if lab is None:
        return False
    if lab == v or lab == str(v):
        return True
    if isinstance(lab, str) and _in_set(lab, str(v)):
        return True
    return lab in [str(x) for x in chains.get(v, [])[1:]]


def _in_set(lab: str, item: str) -> bool:
    return lab.startswith("{") and lab.endswith("}") and item in lab[1:-1].split(", ")


def covers_row(table: Table, j: int, rel: dict) -> bool:
    """Released row ``rel`` stands for source row ``j``: the sensitive value and a kept note as they
    are, every QI covered."""
    src = table.rows[j]
    return (rel[SA] == src[-1] and ("note" not in rel or rel["note"] == table.notes[j])
            and all(covers_value(src[i], rel, q, table.chains[i]) for i, q in enumerate(table.qis)))


def _kept(case: Case) -> list[str]:
    return list(case.opts.get("keep", []))


# -- judging ---------------------------------------------------------------------------------------------
class Finding(Exception):
    pass


def judge(eng, case: Case, outcome: tuple[str, Any]) -> None:
    """Raise Finding unless the outcome is right by the oracles."""
    {"mondrian": judge_mondrian, "fulldomain": judge_fulldomain, "anatomy": judge_anatomy,
     "slicing": judge_slicing, "injector": judge_injector, "presence": judge_presence}[case.method](eng, case, outcome)


def _models(case: Case) -> Models:
    return Models(case.params, [r[-1] for r in case.table.rows], case.table.sa_chains)


def _refusal(case: Case, outcome, infeasible: bool | None, allowed_input: list[str], may: tuple = ()) -> bool:
    """Whether the outcome is a refusal (then judged here): an InfeasibleError exactly when
    ``infeasible`` (None: not decidable cheaply, any), an InputError only with a message part of
    ``allowed_input`` (documented preconditions that fail for the case: it must be refused) or of
    ``may`` (refusals the oracle cannot foresee cheaply). A release for an infeasible request is a
    finding too."""
    kind, res = outcome
    if kind == "refused":
        if isinstance(res, InputError):
            if not any(a in str(res) for a in list(allowed_input) + list(may)):
                raise Finding(f"unexpected InputError: {res}")
            return True
        if infeasible is False:
            raise Finding(f"InfeasibleError, but the oracle finds the request feasible: {res}")
        return True
    if allowed_input:
        raise Finding(f"released, but a documented precondition fails ({allowed_input})")
    if infeasible:
        raise Finding("released, but the oracle finds the request infeasible")
    return False


def _classes(rows: list[dict], exclude: tuple = (SA,)) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = defaultdict(list)
    for j, r in enumerate(rows):
        out[tuple((c, r[c]) for c in r if c not in exclude)].append(j)
    return dict(out)


def _class_failures(models: Models, classes: dict, values: list) -> list[str]:
    out = []
    for key, members in classes.items():
        why = models.failure([values[j] for j in members])
        if why:
            out.append(f"group {dict(key)} ({len(members)} rows, values {Counter(values[j] for j in members)}): {why}")
    return out


def _ranged(case: Case, i: int) -> bool:
    """Whether Mondrian cuts QI i as a number (published with <qi>_lo / <qi>_hi)."""
    q = case.table.qis[i]
    return case.table.kinds[i] == "int" and q not in case.opts.get("kinds", {})


def _mondrian_preconditions(case: Case) -> list[str]:
    t, allowed = case.table, []
    if (case.relaxed or case.opts.get("relaxed")) and "n" in case.params:
        allowed.append("needs strict cuts")
    if any(_ranged(case, i) and any(r[i] is None for r in t.rows) for i in range(len(t.qis))):
        allowed.append("NULL")
    if any(q in case.opts.get("hierarchies", {}) and any(r[i] is None for r in t.rows) for i, q in enumerate(t.qis)):
        allowed.append("NULL values, which its hierarchy does not cover")
    return allowed


def _may(case: Case) -> list[str]:
    """Refusals a case may meet though its request is feasible: a kept column that splits a class
    so that a group fails the model is refused, naming it (anonydb.release.publish)."""
    return ["the kept column(s) note break"] if _kept(case) else []
    return allowed


def _orders(case: Case) -> list[list]:
    """Each QI's values in the order Mondrian cuts them: numeric and plain categorical sorted, NULL
    last; a categorical QI with a hierarchy in the hierarchy's leaf order, NULL last."""
    t, out = case.table, []
    hier = case.opts.get("hierarchies", {}) if case.opts.get("categorical", "hierarchy") == "hierarchy" else {}
    for i, q in enumerate(t.qis):
        present = {r[i] for r in t.rows}
        base = list(t.chains[i]) if q in hier else sorted(v for v in present if v is not None)
        out.append([v for v in base if v in present] + ([None] if None in present else []))
    return out


def judge_mondrian(eng, case: Case, outcome) -> None:
    t, models = case.table, _models(case)
    values = [r[-1] for r in t.rows]
    pre = _mondrian_preconditions(case)
    root_fails = _root_fails(models, values)
    if _refusal(case, outcome, None if pre else root_fails, pre, _may(case)):
        return
    cols, rel = fetch(eng, "rel")
    want = ["eq_class"] + [c for i, q in enumerate(t.qis) for c in ([q, f"{q}_lo", f"{q}_hi"] if _ranged(case, i)
                                                                      else [q])] + [SA] + _kept(case)
    if sorted(cols) != sorted(want):
        raise Finding(f"published columns {cols}, expected {want}")
    m = matching(range(len(t.rows)), rel, lambda j, r: covers_row(t, j, r))
    if m is None:
        raise Finding(f"the released rows are not the source rows, each covered: {rel}")
    classes = _classes(rel)
    bad = _class_failures(models, classes, [r[SA] for r in rel])
    if "n" in case.params:
        src_classes = {k: [m[j] for j in v] for k, v in classes.items()}
        bad += [f"group {dict(k)}: {why}" for k, why in
                region_failures(models, [r[:-1] for r in t.rows], values, _orders(case), src_classes)]
    if bad:
        raise Finding("groups fail: " + " | ".join(bad[:5]) + f"\n  release {rel}")


def _root_fails(models: Models, values: list) -> bool:
    if models.failure(values):
        return True
    return "n" in models.p and len(values) < models.p["n"]


def _fd_judge(models: Models, values: list, params: dict):
    """A full-domain node's failing groups, every group judged over all the node's rows ((n,t): the
    supersets are the rows agreeing on a subset of the QI labels)."""
    def failing(groups: dict[tuple, list[int]]) -> set:
        out = set()
        keys = list(groups)
        d = len(keys[0]) if keys else 0
        for g, members in groups.items():
            vals = [values[j] for j in members]
            if models.failure(vals):
                out.add(g)
            elif "n" in params:
                sups = ([values[j] for h, ms in groups.items() if all(h[i] == g[i] for i in sub) for j in ms]
                        for r in range(d) for sub in itertools.combinations(range(d), r))
                if not models.nt_ok(vals, sups):
                    out.add(g)
        return out
    return failing


def judge_fulldomain(eng, case: Case, outcome) -> None:
    t, models = case.table, _models(case)
    values = [r[-1] for r in t.rows]
    limit = math.floor(exact(case.opts["max_suppression"]) * len(t.rows))
    nodes = lattice([r[:-1] for r in t.rows], t.chains, _fd_judge(models, values, case.params))
    satisfying = [n for n, (sup, _) in nodes.items() if sup <= limit]
    pre = ["needs max_suppression = 0"] if "n" in case.params and case.opts["max_suppression"] > 0 else []
    if _refusal(case, outcome, None if pre else not satisfying, pre, _may(case)):
        return
    res = outcome[1].result
    levels = tuple(res.levels[q] for q in t.qis)
    cols, rel = fetch(eng, "rel")
    if sorted(cols) != sorted(["eq_class"] + t.columns + _kept(case)):
        raise Finding(f"published columns {cols}")

    def covers(j, r):  # the QIs at the release's level vector, NULL staying NULL; a kept note as it is
        s = t.rows[j]
        return r[SA] == s[-1] and ("note" not in r or r["note"] == t.notes[j]) and all(
            (r[q] is None) if s[i] is None else r[q] == t.chains[i][s[i]][levels[i]] for i, q in enumerate(t.qis))

    m = _injective(list(range(len(t.rows))), rel, covers)
    if m is None:
        raise Finding(f"released rows are not source rows generalized to {levels}: {rel}")
    suppressed = len(t.rows) - len(rel)
    if suppressed > limit:
        raise Finding(f"{suppressed} rows suppressed, more than {limit}")
    if levels not in nodes:
        raise Finding(f"levels {levels} are no lattice node")
    if suppressed != nodes[levels][0]:
        raise Finding(f"{suppressed} rows suppressed at {levels}; the node's failing groups hold {nodes[levels][0]}")
    classes = _classes(rel)
    bad = _class_failures(models, classes, [r[SA] for r in rel])
    if "n" in case.params:  # the release's QIs: every published column but the sensitive one (eq_class, kept ones)
        tuples = [tuple(v for c, v in r.items() if c != SA) for r in rel]
        bad += [f"group {dict(k)}: {why}" for k, why in subset_failures(models, tuples, [r[SA] for r in rel], classes)]
    if bad:
        raise Finding(f"at levels {levels}, groups fail: " + " | ".join(bad[:5]))


def _injective(source: list, released: list, covers) -> list[int] | None:
    """A one-to-one map of released rows into source rows (suppressed rows stay unmatched)."""
    pad = [None] * (len(source) - len(released))
    if len(pad) < 0:
        return None
    m = matching(source, released + pad, lambda s, r: True if r is None else covers(s, r))
    return None if m is None else m[:len(released)]


def _qit_st(eng, case: Case) -> tuple[dict, dict]:
    t = case.table
    qcols, qit = fetch(eng, "rel_qit")
    scols, st = fetch(eng, "rel_st")
    kept = _kept(case)
    if sorted(qcols) != sorted(t.qis + kept + ["group_id"]) or sorted(scols) != sorted(["group_id", SA, "count"]):
        raise Finding(f"published columns {qcols} / {scols}")
    groups: dict[Any, list] = defaultdict(lambda: [Counter(), Counter()])
    for r in qit:
        groups[r["group_id"]][0][tuple(r[q] for q in t.qis + kept)] += 1
    for r in st:
        groups[r["group_id"]][1][(r[SA],)] += r["count"]
    for g, (q, s) in groups.items():
        if sum(q.values()) != sum(s.values()):
            raise Finding(f"group {g}: {sum(q.values())} QIT rows, ST counts {sum(s.values())}")
    d = len(t.qis)
    source = [r[:-1] + ((x,) if kept else ()) + (r[-1],) for r, x in zip(t.rows, t.notes)]
    if not assignment_exists(source, [list(range(d + len(kept))), [d + len(kept)]], groups):
        raise Finding("no dealing of the source rows matches the QIT/ST pair")
    return groups, {g: [v[0] for v in s.elements()] for g, (_, s) in groups.items()}


def judge_anatomy(eng, case: Case, outcome) -> None:
    t, models = case.table, _models(case)
    values = [r[-1] for r in t.rows]
    # the documented eligibility: groups of pairwise different values, of at least l records (recursive
    # (c,l): l + floor(1/c), the fewest for which c * (records - l + 1) > 1), so no value above n/size
    size = case.params["l"] + (math.floor(1 / exact(case.params["c"])) if "c" in case.params else 0)
    infeasible = max(Counter(values).values()) * size > len(values)
    if _refusal(case, outcome, infeasible, []):
        return
    _, vals = _qit_st(eng, case)
    bad = [f"group {g} values {Counter(v)}: {why}" for g, v in vals.items() if (why := models.failure(v))]
    if bad:
        raise Finding("groups fail: " + " | ".join(bad[:5]))


def judge_slicing(eng, case: Case, outcome) -> None:
    t = case.table
    src = [dict(zip(t.columns, r)) for r in t.rows]
    l = case.params["l"]
    if "columns" in case.opts:
        cols = case.opts["columns"]
        one = {0: [[tuple(r[a] for a in c) for r in src] for c in cols]}
        infeasible = bool(sliced_failures(src, SA, cols, one, l))
    else:  # the computed columns may move attributes out of the sensitive column: only the share of
        # the most frequent value decides
        infeasible = max(Counter(r[-1] for r in t.rows).values()) * exact(l) > len(t.rows)
    if _refusal(case, outcome, infeasible, []):
        return
    res = outcome[1]
    columns, buckets = [], defaultdict(list)
    for name in [v for k, v in res.tables.items() if k != "view"]:
        cols, rows = fetch(eng, name)
        attrs = [c for c in cols if c not in ("bucket_id", "row_in_bucket")]
        columns.append(attrs)
        per = defaultdict(list)
        for r in rows:
            per[r["bucket_id"]].append(tuple(r[a] for a in attrs))
        for b in set(buckets) | set(per):
            buckets[b].append(per.get(b, []))
    if sorted(a for c in columns for a in c) != sorted(t.columns):
        raise Finding(f"published attributes {columns}")
    for b, cs in buckets.items():
        if len({len(c) for c in cs}) != 1:
            raise Finding(f"bucket {b} has columns of sizes {[len(c) for c in cs]}")
    pos = {a: i for i, a in enumerate(t.columns)}
    if not assignment_exists(t.rows, [[pos[a] for a in c] for c in columns],
                             {b: [Counter(c) for c in cs] for b, cs in buckets.items()}):
        raise Finding("no dealing of the source rows into the buckets matches the column tables")
    bad = sliced_failures(src, SA, columns, buckets, l)
    if bad:
        raise Finding(f"sliced {l}-diversity fails (columns {columns}): " + " | ".join(bad[:5]))


def _ivs(case: Case) -> dict[tuple, set]:
    """Each QI tuple's IVS under the rules mined at min_exp (injector_oracle.mine), over the
    hierarchies when given (NULL matches no predicate)."""
    t = case.table
    hier = "hierarchies" in case.opts
    levels = [len(next(iter(c.values()))) - 1 if hier else 1 for c in t.chains]

    def labels(r):
        return [[None] * levels[i] if v is None else [str(x) for x in t.chains[i][v][:levels[i]]]
                for i, v in enumerate(r[:-1])]

    _, _, ivs = mine([(labels(r), r[-1]) for r in t.rows], levels, case.opts["min_exp"], 0)
    return {r[:-1]: v for r, v in zip(t.rows, ivs)}


def min_valid(values: list, ivs: list[set]) -> int:
    """The fewest valid values of any tuple of a group (Fig 3.1): a value s is valid for t when t
    can take it and the rest has a perfect matching, by Hall's condition on the (few) values;
    tuples with the same (value, IVS) are interchangeable, so each kind is tried once."""
    if len(values) <= 10:
        return min(len(v) for v in valid_sets(values, ivs))
    kinds = Counter(frozenset(x) for x in ivs)
    vals = Counter(values)

    def perfect(kinds: Counter, vals: Counter) -> bool:
        dom = [v for v in vals if vals[v]]
        for r in range(1, len(dom) + 1):
            for sub in itertools.combinations(dom, r):
                need = sum(vals[v] for v in sub)
                can = sum(c for k, c in kinds.items() if any(v not in k for v in sub))
                if need > can:
                    return False
        return sum(kinds.values()) == sum(vals.values())

    best = math.inf
    for k in kinds:
        ok = 0
        for v in vals:
            if v in k:
                continue
            k2, v2 = kinds.copy(), vals.copy()
            k2[k] -= 1
            v2[v] -= 1
            ok += perfect(+k2, +v2)
        best = min(best, ok)
    return int(best)


def judge_injector(eng, case: Case, outcome) -> None:
    t = case.table
    l = case.params["l"]
    ivs = _ivs(case)
    infeasible = len(t.rows) < l or min_valid([r[-1] for r in t.rows], [ivs[r[:-1]] for r in t.rows]) < l
    if _refusal(case, outcome, infeasible, []):
        return
    groups, vals = _qit_st(eng, case)
    bad = []
    for g, (q, _) in groups.items():
        members = list(q.elements())
        mv = min_valid(vals[g], [ivs[m] for m in members])
        if mv < l:
            bad.append(f"group {g}: members {members}, values {Counter(vals[g])}: a tuple has {mv} valid values")
    if bad:
        raise Finding(f"matching {l}-diversity fails: " + " | ".join(bad[:5]))


def judge_presence(eng, case: Case, outcome) -> None:
    t = case.table
    public = [r[:-1] for r in t.rows]
    private = [public[i] for i in case.private]
    dmin, dmax = (exact(x) for x in case.params["delta"])
    if case.opts["method"] == "mondrian":
        infeasible = not dmin <= Fraction(len(private), len(public)) <= dmax
    else:
        flags = [1 if i in set(case.private) else 0 for i in range(len(public))]

        def failing(groups):
            return {g for g, ms in groups.items() if not dmin <= Fraction(sum(flags[j] for j in ms), len(ms)) <= dmax}

        infeasible = not any(sup == 0 for sup, _ in lattice(public, t.chains, failing).values())
    pre = []
    if case.opts["method"] == "mondrian":
        pre = [p for p in _mondrian_preconditions(case) if p != "needs strict cuts"]
        if case.relaxed:
            pre.append("needs a non-overlapping generalization")
    if _refusal(case, outcome, None if pre else infeasible, pre):
        return
    cols, rel = fetch(eng, "rel")
    ranged = [t.kinds[i] == "int" and case.opts["method"] == "mondrian" for i in range(len(t.qis))]
    want = ["eq_class"] + [c for i, q in enumerate(t.qis) for c in ([q, f"{q}_lo", f"{q}_hi"] if ranged[i] else [q])]
    if sorted(cols) != sorted(want):
        raise Finding(f"published columns {cols}, expected {want}")

    def covers(p: tuple, r: dict) -> bool:
        return all(covers_value(p[i], r, q, t.chains[i]) for i, q in enumerate(t.qis))

    if matching(private, rel, covers) is None:
        raise Finding(f"the released rows are not the private rows, each covered: {rel}")
    classes = _classes(rel, exclude=())
    rep = {k: rel[v[0]] for k, v in classes.items()}
    bad = presence_failures(public, {k: len(v) for k, v in classes.items()}, lambda p, k: covers(p, rep[k]),
                            dmin, dmax)
    if bad:
        raise Finding("delta-presence fails: " + " | ".join(bad[:5]) + f"\n  release {rel}")


# -- the campaign ----------------------------------------------------------------------------------------
#: Mondrian's fragment plan on the campaign's small tables: fragments of at most 4 rows, so that the
#: top is cut and the rest finished in the worker pool (the default is sized for millions of rows)
FRAGMENT_ROWS = 4


def campaign(seed: int, count: int) -> tuple[list[str], Counter, float]:
    eng = anonydb.connect()
    eng.finish_rows = FRAGMENT_ROWS
    findings, tally = [], Counter()
    t0 = time.perf_counter()
    try:
        for case in cases(seed, count):
            try:
                outcome = run(eng, case)
                judge(eng, case, outcome)
                tally[(case.method, case.model, case.relaxed, outcome[0])] += 1
            except Finding as f:
                findings.append(f"{case.describe()}\n  FINDING: {f}")
            except Exception:  # an internal error, a failed self-verification: a finding too
                findings.append(f"{case.describe()}\n  FINDING: {traceback.format_exc(limit=-2)}")
    finally:
        clear(eng)
        eng.close()
    return findings, tally, time.perf_counter() - t0


def replay(index: int, seed: int) -> tuple[Case, tuple]:
    """Re-run case ``index`` of the campaign with ``seed`` (for a finding's reproduction)."""
    case = next(c for c in cases(seed, index + 1) if c.index == index)
    eng = anonydb.connect()
    eng.finish_rows = FRAGMENT_ROWS
    out = run(eng, case)
    judge(eng, case, out)
    return case, out


def _check(seed: int, count: int) -> None:
    findings, tally, seconds = campaign(seed, count)
    covered = {(m, mo, r) for (m, mo, r, _) in tally}
    print(f"campaign seed {seed}: {count} tables in {seconds:.1f} s; {len(findings)} findings; "
          f"{len(covered)} of {len(COMBOS)} combinations ran; outcomes {Counter(o for *_, o in tally.elements())}")
    assert not findings, f"{len(findings)} findings (seed {seed}):\n\n" + "\n\n".join(findings[:10])


def test_campaign():
    """80 tables: every combination about once or twice (under ~30 s)."""
    _check(seed=47, count=80)


@pytest.mark.slow
def test_campaign_full():
    """2,000 tables: every combination about 40 times."""
    _check(seed=2047, count=2000)


# -- the campaign's findings, pinned ------------------------------------------------------------------
def pinned(method: str, model: str, rows: list[tuple], kinds: list[str], params: dict, *, opts: dict | None = None,
           chains: list[dict] | None = None, relaxed: bool = False, private: list[int] | None = None,
           hierarchies: tuple = (), notes: list | None = None) -> tuple[str, Any]:
    """Run one case as the campaign does and judge it by the oracles (Finding on a wrong outcome).
    ``chains``: the QIs' hierarchies (default: each value under '*'); ``hierarchies``: the QIs given
    them (method 'fulldomain' and presence over full-domain: all)."""
    qis = [f"q{i}" for i in range(len(kinds))]
    if chains is None:
        chains = [{v: [v, "*"] for v in sorted({r[i] for r in rows} - {None})} for i in range(len(kinds))]
    sa_dom = sorted({r[-1] for r in rows})
    table = Table(rows, qis, kinds, chains, {v: [v, f"S{i // 2}", "*"] for i, v in enumerate(sa_dom)},
                  list(notes) if notes else ["n0"] * len(rows))
    opts = dict(opts or {})
    everything = method == "fulldomain" or (method == "presence" and opts.get("method") == "fulldomain")
    given = qis if everything else [qis[i] for i in hierarchies]
    if given:
        opts["hierarchies"] = {q: hierarchy(chains[qis.index(q)]) for q in given}
    elif method == "presence":
        opts.setdefault("hierarchies", {})
    if method == "mondrian" or (method == "presence" and opts.get("method") == "mondrian"):
        opts["relaxed"] = relaxed
    case = Case(-1, table, method, model, relaxed, dict(params), opts, list(private or []))
    eng = anonydb.connect()
    try:
        out = run(eng, case)
        judge(eng, case, out)
    finally:
        eng.close()
    return out


def test_finding_anatomy_recursive_groups_large_enough():
    """Anatomy dealt groups of l pairwise different values for recursive (c,l) too, which such a
    group of l records meets only when c > 1: with c = 1 the release failed its own verification
    (an internal error). Groups now hold l + floor(1/c) records (here 3): 9 rows, 3 values."""
    rows = [(i % 4, v) for i, v in enumerate(["x", "y", "z"] * 3)]
    kind, res = pinned("anatomy", "l-recursive", rows, ["int"], {"l": 2, "l_variant": "recursive", "c": 1})
    assert kind == "ok" and res.result.groups == 3
    # the campaign's table: 'hiv' holds 10 of 23 rows, more than 23 / 3
    rows = [("f", "flu"), ("b", "hiv"), ("b", "hiv"), ("b", "flu"), ("b", "acne"), ("f", "cold"), ("g", "hiv"),
            ("g", "hiv"), ("g", "hiv"), ("e", "hiv"), ("f", "flu"), ("e", "cold"), ("g", "cold"), ("e", "cold"),
            ("b", "acne"), ("b", "cold"), ("f", "hiv"), ("g", "hiv"), ("g", "hiv"), ("g", "hiv"), ("b", "flu"),
            ("f", "cold"), ("b", "hiv")]
    kind, err = pinned("anatomy", "l-recursive", rows, ["cat"], {"l": 2, "l_variant": "recursive", "c": 1})
    assert kind == "refused" and isinstance(err, InfeasibleError) and "from 3 records on" in str(err)


#: a full-domain batch judged (n,t) over supersets that mixed the batch's nodes
#: (the node number was one more key to take subsets of), so a node passed in its batch and failed
#: alone: "internal error: the release holds 40 rows, expected 53"
FD_NT_BATCH = [(8, 13, 10), (6, 12, 30), (15, 12, 10), (8, 13, 30), (0, 10, 10), (8, 21, 10), (8, 13, 10),
               (8, 21, 10), (8, 18, 10), (8, 10, 10), (6, 4, 10), (15, 21, 40), (15, 10, 10), (0, 13, 10),
               (6, 12, 40), (8, 10, 10), (8, 10, 10), (8, 10, 40), (8, 18, 10), (15, 13, 30), (15, 12, 10),
               (0, 10, 40), (8, 10, 10), (0, 13, 10), (15, 10, 40), (0, 10, 30), (6, 10, 40), (15, 18, 10),
               (8, 12, 40), (0, 10, 40), (6, 10, 30), (15, 10, 10), (15, 13, 10), (8, 13, 30), (15, 12, 10),
               (6, 12, 30), (15, 21, 10), (0, 13, 10), (8, 4, 10), (15, 10, 10), (8, 13, 10), (0, 10, 40),
               (6, 13, 30), (15, 18, 10), (8, 13, 10), (8, 21, 10), (6, 21, 10), (8, 18, 40), (6, 10, 30),
               (15, 10, 30), (8, 13, 40), (0, 10, 10), (8, 13, 30)]
FD_NT_BATCH_CHAINS = [{0: [0, "G0", "H0", "*"], 6: [6, "G0", "H0", "*"], 8: [8, "G1", "H0", "*"],
                       15: [15, "G1", "H0", "*"]},
                      {4: [4, "G0", "*"], 10: [10, "G0", "*"], 12: [12, "G1", "*"], 13: [13, "G1", "*"],
                       18: [18, "G2", "*"], 21: [21, "G2", "*"]}]

#: (n,t) is not monotone under generalization, so tagging the
#: nodes below a failing node as failing (predictive tagging) missed every satisfying node: a
#: wrong InfeasibleError
FD_NT_MONOTONE = [(3, "d", "f", 20), (21, "e", "f", 40), (3, "e", "b", 20), (3, "b", "b", 20), (21, "b", "e", 20),
                  (21, "b", "b", 20), (21, "e", "b", 20), (3, "g", "e", 40), (8, "f", "b", 20), (3, None, "c", 20),
                  (21, "g", "c", 20), (21, "g", "b", 20), (3, "b", "c", 20), (3, "b", "g", 10), (3, "b", "c", 20),
                  (3, "e", "c", 20), (3, "e", "c", 20), (21, "e", "c", 20), (8, "b", "c", 20), (21, "g", "e", 20),
                  (8, None, "g", 20), (3, "e", "b", 20), (21, "g", "g", 20), (21, "b", "c", 40), (3, "b", "c", 10),
                  (3, "b", "b", 20), (21, "d", "c", 20), (8, None, "c", 10), (3, "d", "c", 20), (3, None, "g", 20),
                  (21, "g", "e", 20)]
FD_NT_MONOTONE_CHAINS = [{3: [3, "G0", "*"], 8: [8, "G0", "*"], 21: [21, "G1", "*"]},
                         {"b": ["b", "G0", "*"], "d": ["d", "G0", "*"], "e": ["e", "G0", "*"], "f": ["f", "G1", "*"],
                          "g": ["g", "G1", "*"]},
                         {"b": ["b", "G0", "*"], "c": ["c", "G0", "*"], "e": ["e", "G0", "*"], "f": ["f", "G1", "*"],
                          "g": ["g", "G1", "*"]}]


def test_finding_fulldomain_nt_batches_and_monotonicity():
    kind, _ = pinned("fulldomain", "nt-equal", FD_NT_BATCH, ["int", "int"], {"n": 22, "t": 0.2, "distance": "equal"},
                     opts={"max_suppression": 0, "metric": "height"}, chains=FD_NT_BATCH_CHAINS)
    assert kind == "ok"
    kind, _ = pinned("fulldomain", "nt-equal", FD_NT_MONOTONE, ["int", "cat", "cat"],
                     {"n": 6, "t": 0.1, "distance": "equal"}, opts={"max_suppression": 0, "metric": "loss"},
                     chains=FD_NT_MONOTONE_CHAINS)
    assert kind == "ok"


def test_finding_fulldomain_nt_refuses_suppression():
    """Suppressing the failing groups changed the natural supersets of the groups
    kept, and the release failed its own (n,t) verification; the pair is now refused up front."""
    rows = [(9, "e", 20), (7, "e", 20), (4, "e", 20), (16, "e", 10), (13, "e", 20), (4, "g", 10), (13, "e", 10),
            (10, "e", 20), (9, "e", 10), (19, "e", 20), (9, "e", 20), (7, "f", 20), (16, "e", 10), (16, "e", 10),
            (4, "f", 10), (7, "e", 10), (16, "g", 20), (13, "f", 20), (4, "f", 10), (19, "e", 20), (4, "e", 20),
            (9, "e", 20)]
    kind, err = pinned("fulldomain", "nt-ordered", rows, ["int", "cat"], {"n": 10, "t": 0.25, "distance": "ordered"},
                       opts={"max_suppression": 0.25, "metric": "dm"})
    assert kind == "refused" and isinstance(err, InputError) and "max_suppression = 0" in str(err)


def test_finding_presence_null_categories():
    """The delta-presence check mapped no public row with a NULL QI to a class: Mondrian spells
    NULL 'NULL' (alone or in a value set), and a full-domain release keeps it NULL, which the
    level-wise mapping never matched; both releases were refused ("private rows match no public
    row") or failed verification."""
    rows = [("a", 1, 0), ("b", 2, 0), (None, 1, 0), ("a", 2, 0), (None, 2, 0), ("b", 1, 0)]
    chains = [{"a": ["a", "G", "*"], "b": ["b", "G", "*"]}, {1: [1, "*"], 2: [2, "*"]}]
    for method in ("fulldomain", "mondrian"):
        kind, _ = pinned("presence", method, rows, ["cat", "int"], {"delta": (0.2, 0.8)}, opts={"method": method},
                         chains=chains, private=[0, 2, 5])
        assert kind == "ok", method


def test_finding_presence_refuses_relaxed_cuts():
    """Relaxed cuts split tied rows, so the classes' boxes overlap and the release's
    own delta-presence check refused it after the work ("public rows fall in more than one class")."""
    rows = [("d", 6, 0)] * 6 + [(None, 6, 0)] * 4
    kind, err = pinned("presence", "mondrian", rows, ["cat", "int"], {"delta": (0.25, 0.8)},
                       opts={"method": "mondrian"}, relaxed=True, private=[0, 1, 6, 7])
    assert kind == "refused" and "non-overlapping" in str(err)


def test_finding_delta_disclosure_against_the_source():
    """A full-domain release with suppressed rows is judged against its
    source's distribution, but delta-disclosure divided the source's counts by the release's size
    (11 rows, not 13): p(T, flu) = 5/11, and the NULL group (1 flu in 4) failed delta = 0.5 in the
    verification though the search had passed it (ln(0.25 / (5/13)) = -0.43)."""
    rows = [(None, 19, 15, "acne"), (None, 19, 12, "acne"), ("d", 4, 12, "acne"), ("f", 19, 12, "acne"),
            ("b", 19, 12, "flu"), ("b", 19, 12, "acne"), ("a", 23, 12, "flu"), ("a", 23, 12, "flu"),
            ("d", 19, 12, "flu"),
            (None, 19, 15, "flu"), ("f", 4, 12, "acne"), ("d", 4, 15, "acne"), (None, 19, 15, "acne")]
    chains = [{"a": ["a", "G0", "*"], "b": ["b", "G0", "*"], "d": ["d", "G1", "*"], "f": ["f", "G1", "*"]},
              {4: [4, "G0", "*"], 12: [12, "G0", "*"], 19: [19, "G0", "*"], 23: [23, "G1", "*"]},
              {12: [12, "G0", "H0", "*"], 15: [15, "G0", "H0", "*"]}]
    kind, res = pinned("fulldomain", "delta", rows, ["cat", "int", "int"], {"delta": 0.5},
                       opts={"max_suppression": 0.25, "metric": "height"}, chains=chains)
    assert kind == "ok" and res.result.suppressed == 2


def test_finding_kept_column_refusal_is_an_input_error():
    """A kept column that splits a class so that a group fails was refused with a bare AnonyDBError,
    as an internal failure is; it is the user's input (keep=), so it is now an InputError."""
    rows = [(1, "x"), (1, "y"), (2, "x"), (2, "y"), (3, "x"), (3, "y")]
    kind, err = pinned("mondrian", "k", rows, ["int"], {"k": 2}, opts={"keep": ["note"]},
                       notes=["n0", "n1", "n0", "n1", "n0", "n1"])
    assert kind == "refused" and isinstance(err, InputError) and "kept column(s) note break k-anonymity" in str(err)


def test_finding_mondrian_nt_judges_kept_columns():
    """Mondrian verified (n,t)-closeness per equivalence class only, so a kept column that split a
    class into groups far from every region went out unjudged (the campaign's groups over every
    published column failed by regions). The split groups are now judged against their class's
    partition and ancestors, and a kept column that breaks (n,t) is refused, named."""
    rows = [(1, "x"), (4, "z"), (3, "z"), (5, "z"), (4, "z")]
    params = {"n": 3, "t": 0.3, "distance": "equal"}
    kind, err = pinned("mondrian", "nt-equal", rows, ["int"], params, opts={"keep": ["note"]},
                       notes=["n1", "n0", "n0", "n0", "n1"])
    assert kind == "refused" and "kept column(s) note break (n,t)-closeness" in str(err)
    kind, _ = pinned("mondrian", "nt-equal", rows, ["int"], params)  # without the kept column: released
    assert kind == "ok"
