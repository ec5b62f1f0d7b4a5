"""mkdocs hook: the page of every privacy model, made at build time from the models' own registry
(``anonydb.models.__all__``): each model's definition and source (its module's docstring), its
command-line options (``Model.flags``) and whether it is monotone (``Model.monotonic``). A model
added to the package appears here with no page edited by hand."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def page() -> str:
    import anonydb.models as models
    from anonydb.models.base import Model

    out = ["# The models (registry)", "",
           "Each privacy model anonydb checks and every method enforces, from its module: the definition "
           "and source, the options that ask for it, and whether it is monotone (a merge of groups that "
           "meet it meets it: full-domain's lattice search and Mondrian's cuts rely on that). Made at "
           "build time from `anonydb.models`.", ""]
    for name in models.__all__:
        cls = getattr(models, name)
        if not (isinstance(cls, type) and issubclass(cls, Model) and cls is not Model):
            continue
        module = inspect.getmodule(cls)
        title = cls.name or name
        out += [f"## {title}", "", f"`{module.__name__}.{name}`; options: "
                + ", ".join(f"`{f}`" for f in cls.flags) + f"; monotone: {'yes' if cls.monotonic else 'no'}.", "",
                "```text", inspect.cleandoc(module.__doc__ or "(no docstring)"), "```", ""]
    return "\n".join(out)


def on_files(files, config):
    files.append(File.generated(config, "model-registry.md", content=page()))
    return files
