"""Anonymization methods: drivers that propose groups of records and ask the privacy models."""

from .anatomy import AnatomyResult, anatomy
from .fulldomain import FullDomainResult, fulldomain
from .injector import InjectorResult, injector
from .linked import LinkedResult, linked
from .mondrian import MondrianResult, anonymize
from .slicing import SlicingResult, slicing

__all__ = ["AnatomyResult", "FullDomainResult", "InjectorResult", "LinkedResult", "MondrianResult", "SlicingResult",
           "anatomy", "anonymize", "fulldomain", "injector", "linked", "slicing"]
