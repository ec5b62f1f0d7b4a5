"""Anonymization methods: drivers that propose groups of records and ask the privacy models."""

from .anatomy import AnatomyResult, anatomy
from .fulldomain import FullDomainResult, fulldomain
from .injector import InjectorResult, injector
from .linked import LinkedResult, linked
from .mondrian import MondrianResult, anonymize
from .slicing import SlicingResult, slicing

#: the column of a release that numbers its classes (groups, buckets), by method
CLASS_COLUMN = {"mondrian": "eq_class", "fulldomain": "eq_class", "anatomy": "group_id", "slicing": "bucket_id",
                "injector": "group_id"}

__all__ = ["CLASS_COLUMN", "AnatomyResult", "FullDomainResult", "InjectorResult", "LinkedResult", "MondrianResult", "SlicingResult",
           "anatomy", "anonymize", "fulldomain", "injector", "linked", "slicing"]
