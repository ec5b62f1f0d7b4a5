"""Errors raised by anonydb.

Every error names what is wrong (column, value, parameter) so a user can fix the input;
:class:`SQLError` also carries the failing statement and the template it came from.
"""

from __future__ import annotations


class AnonyDBError(Exception):
    """Base class of every anonydb error."""


class InputError(AnonyDBError, ValueError):
    """Bad input: a missing column, a wrong parameter, a hierarchy that does not cover the data."""


class NotAvailable(InputError):
    """What an engine other than DuckDB cannot run (yet): one line, raised before anything is written."""

    def __init__(self, reason: str, dialect: str = "postgres"):
        super().__init__(f"not available on {dialect}: {reason}")


class InfeasibleError(AnonyDBError):
    """The request cannot be met by any release of this data (e.g. k larger than the table)."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM) asked the run to stop: raised at the next statement, so that every
    clean-up (staging tables dropped, transactions rolled back) runs; a BaseException, so that no
    ``except Exception`` swallows it."""


class SQLError(AnonyDBError):
    """A generated statement failed; ``sql`` and ``template`` say which."""

    def __init__(self, message: str, sql: str, template: str | None = None):
        self.sql = sql
        self.template = template
        where = f" (from template {template})" if template else ""
        super().__init__(f"{message}{where}\n--- failing SQL ---\n{sql}")


# The caller's spelling of an option: the CLI sets "cli" while it runs, so that a message says
# --replace there and replace=True in Python.
import contextvars as _cv

SURFACE: _cv.ContextVar[str] = _cv.ContextVar("anonydb_surface", default="python")
_CLI_SPELLING = {"out": "--out", "replace": "--replace", "keep": "--keep", "identifiers": "--identifiers",
                 "export": "--export", "seed": "--seed", "db": "--db", "html": "--html",
                 "varying": "--varying-qis"}


_SPEC_SPELLING = {"keep": "role insensitive", "replace": "output: {replace: true}",
                  "out": "output: {table: ...}", "identifiers": "role identifier (attributes:)", "seed": "seed:",
                  "person": "role person", "pseudonymize": "role pseudonym",
                  "varying": "method: {name: mondrian, varying: true}",
                  "conf_bound": "privacy: {confidence_bound} (or {xy_privacy: {bounds}})",
                  "allowed": "privacy: {l: {allowed}}", "protected": "privacy: {l: {protected}}",
                  "guard": "privacy: {personalized: {guard}}", "qid_sets": "privacy: {multi_qid: {sets}}"}


def option(name: str) -> str:
    """How the user spells option ``name`` where they are: ``--name`` in the CLI, ``name=...`` in Python,
    the key in a release spec."""
    if SURFACE.get() == "spec" and name in _SPEC_SPELLING:
        return _SPEC_SPELLING[name]
    if SURFACE.get() == "cli" and "." not in name:
        return _CLI_SPELLING.get(name, "--" + name.replace("_", "-"))
    if "." in name:  # a spec key
        return f"{name}:"
    return {"replace": "replace=True"}.get(name, f"{name}=")


def cli_surface(surface: str = "cli") -> "_cv.Token[str]":
    """Mark the current context as the command line, or a release spec (see :func:`option`)."""
    return SURFACE.set(surface)
