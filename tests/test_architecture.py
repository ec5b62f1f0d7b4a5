"""The layout's rules (docs/architecture.md): imports run downward only, no module reaches into
another folder's private helper, and only the release layer renames a table into a user's name."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "anonydb"

#: layer of each folder or top-level module; a module may import its own layer's folder and below
RANK = {"errors": 0, "events": 0, "sqlgen": 0, "engines": 1, "schema": 2, "sources": 2, "hierarchy": 2, "generalize": 2.5,
        "datasets": 2, "htmlparts": 0.5, "sqlfuncs": 2, "pseudonyms": 2, "noise": 2, "sqlscript": 2, "models": 3, "checker": 4, "linkage": 4, "composition": 4, "presence": 4.5, "risk": 4.75, "release": 5, "attacks": 6,
        "utility": 6, "methods": 7, "workflow": 8, "__init__": 9, "__main__": 9, "sql": 0, "udfs": 0}


def _modules():
    for p in sorted(PKG.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        rel = p.relative_to(PKG).with_suffix("").parts
        yield p, rel


def _unit(parts: tuple[str, ...]) -> str:
    return parts[0]


def _imports(path: Path, parts: tuple[str, ...]):
    """(target module parts, imported names) of every anonydb import in ``path``."""
    here = list(parts[:-1]) if parts[-1] != "__init__" else list(parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                target = base + (node.module.split(".") if node.module else [])
            elif (node.module or "").startswith("anonydb"):
                target = node.module.split(".")[1:]
            else:
                continue
            names = [a.name for a in node.names]
            if not target:  # from . import x  /  from anonydb import x
                for n in names:
                    yield [n], []
            else:
                yield target, names
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("anonydb."):
                    yield a.name.split(".")[1:], []


def test_every_unit_has_a_layer():
    units = {_unit(parts) for _, parts in _modules()}
    assert units <= set(RANK), f"place these in RANK and docs/architecture.md: {sorted(units - set(RANK))}"


def test_imports_run_downward():
    bad = []
    for path, parts in _modules():
        src = _unit(parts)
        for target, _ in _imports(path, parts):
            dst = target[0]
            if dst == src:
                continue
            if RANK.get(dst, -1) > RANK[src] or (RANK.get(dst) == RANK[src] and dst != src and src not in ("__init__",)):
                bad.append(f"{'/'.join(parts)} imports {'.'.join(target)}")
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_no_private_helper_crosses_a_folder():
    bad = []
    for path, parts in _modules():
        for target, names in _imports(path, parts):
            if target[0] != _unit(parts):
                bad += [f"{'/'.join(parts)} imports {'.'.join(target)}.{n}" for n in names if n.startswith("_")
                        and n != "__version__"]
    assert not bad, "\n".join(bad)


def test_only_the_release_layer_renames_into_a_users_name():
    """A method builds a staged table and hands it to a Publication; it never renames or swaps."""
    bad = []
    for path, parts in _modules():
        if parts[0] in ("engines", "release"):
            continue
        text = path.read_text()
        for needle in (".rename(", "import swap", " swap(", "_swap("):
            if needle in text:
                bad.append(f"{'/'.join(parts)}: {needle}")
    assert not bad, "\n".join(bad)


def test_benchmarks_stay_a_table_of_current_figures():
    """BENCHMARKS.md holds the current figures in at most 400 lines: a new figure replaces a row."""
    lines = (PKG.parent / "BENCHMARKS.md").read_text().splitlines()
    assert len(lines) <= 400, f"BENCHMARKS.md has {len(lines)} lines: replace rows, move history to docs/"


def test_every_model_names_its_command_line_options():
    """The model registry (the docs' page of models) lists each model's options: every one exists in
    the command line's "privacy models" group, and every model has some."""
    import argparse

    import anonydb.models as models
    from anonydb.models.base import Model
    from anonydb.workflow.cliargs import _add_model_args

    p = argparse.ArgumentParser()
    _add_model_args(p)
    options = {s for a in p._actions for s in a.option_strings}
    for name in models.__all__:
        cls = getattr(models, name)
        if isinstance(cls, type) and issubclass(cls, Model) and cls is not Model:
            assert cls.flags and set(cls.flags) <= options, (name, cls.flags)


#: the most lines a module holds (tests and benchmarks aside): past it, split it by what it holds
MAX_LINES = 800


def test_no_module_is_over_800_lines():
    big = [f"{'/'.join(parts)}.py: {n}" for path, parts in _modules()
           if (n := len(path.read_text().splitlines())) > MAX_LINES]
    assert not big, "split these modules by what they hold:\n" + "\n".join(big)


def _module_graph() -> dict[str, set[str]]:
    """anonydb's modules and the modules each imports (at the top or inside a function)."""
    names = {".".join(parts if parts[-1] != "__init__" else parts[:-1]) for _, parts in _modules()}
    graph: dict[str, set[str]] = {}
    for path, parts in _modules():
        me = ".".join(parts if parts[-1] != "__init__" else parts[:-1])
        out = graph.setdefault(me, set())
        for target, imported in _imports(path, parts):
            mod = ".".join(target)
            for n in imported or [None]:
                full = f"{mod}.{n}" if n and f"{mod}.{n}" in names else mod
                while full and full not in names:
                    full = full.rpartition(".")[0]
                if full and full != me:
                    out.add(full)
    return graph


def test_no_import_cycle():
    """No two modules import each other, directly or through others (a package's __init__ that
    re-exports its modules aside: it is the package's face, not a layer)."""
    graph = {m: {t for t in ts if not (m.startswith(t + ".") or t.startswith(m + "."))}
             for m, ts in _module_graph().items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
