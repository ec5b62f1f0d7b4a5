"""anonydb: verified anonymized releases and privacy-model checks, built in SQL on DuckDB, PostgreSQL and Spark."""

from __future__ import annotations

import os as _os

# Running from a source checkout: sql/ and udfs/ sit beside the package and are mapped into it
# only at build time (pyproject.toml); let ``anonydb.sql`` / ``anonydb.udfs`` resolve to them.
_here = _os.path.dirname(__file__)
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "udfs")) and _os.path.isfile(_os.path.join(_root, "udfs", "__init__.py")):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821

from .engines.duckdb import DuckDBEngine  # noqa: E402
from .engines.base import Engine  # noqa: E402
from .engines import connect  # noqa: E402
from .errors import AnonyDBError, InfeasibleError, InputError, SQLError  # noqa: E402
from .checker import Report, check  # noqa: E402
from .hierarchy import Hierarchy  # noqa: E402
from .generalize import generalize  # noqa: E402
from .sqlfuncs import register, unregister  # noqa: E402
from .workflow.jobs import Release, anonymize, plan_spec, run_spec, spec_report  # noqa: E402
from .workflow.spec import Spec, SpecError, load_spec  # noqa: E402
from .methods.dp import DPResult, dp  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AnonyDBError",
    "DPResult",
    "DuckDBEngine",
    "Engine",
    "Hierarchy",
    "InfeasibleError",
    "InputError",
    "Release",
    "Report",
    "SQLError",
    "Spec",
    "SpecError",
    "anonymize",
    "check",
    "connect",
    "dp",
    "generalize",
    "load_spec",
    "plan_spec",
    "register",
    "run_spec",
    "spec_report",
    "unregister",
]
