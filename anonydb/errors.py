"""Errors raised by anonydb.

Every error names what is wrong (column, value, parameter) so a user can fix the input;
:class:`SQLError` also carries the failing statement and the template it came from.
"""

from __future__ import annotations


class AnonyDBError(Exception):
    """Base class of every anonydb error."""


class InputError(AnonyDBError, ValueError):
    """Bad input: a missing column, a wrong parameter, a hierarchy that does not cover the data."""


class InfeasibleError(AnonyDBError):
    """The request cannot be met by any release of this data (e.g. k larger than the table)."""


class SQLError(AnonyDBError):
    """A generated statement failed; ``sql`` and ``template`` say which."""

    def __init__(self, message: str, sql: str, template: str | None = None):
        self.sql = sql
        self.template = template
        where = f" (from template {template})" if template else ""
        super().__init__(f"{message}{where}\n--- failing SQL ---\n{sql}")
