"""Anonymization methods: drivers that propose groups of records and ask the privacy models."""

from .mondrian import MondrianResult, anonymize

__all__ = ["MondrianResult", "anonymize"]
