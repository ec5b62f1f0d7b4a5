"""Privacy models, one module each; a model both checks a finished table and judges candidate
groups for the anonymizers (see :mod:`anonydb.models.base`)."""

from .beta_likeness import VARIANTS as BETA_VARIANTS
from .beta_likeness import BetaLikeness
from .base import GroupContext, GroupViolation, Model, Verdict, candidate_models
from .extras import AlphaKAnonymity, DeltaDisclosure
from .k_anonymity import KAnonymity
from .l_diversity import VARIANTS as L_VARIANTS
from .l_diversity import LDiversity
from .nt_closeness import NTCloseness
from .presence import DeltaPresence
from .t_closeness import DISTANCES, TCloseness

__all__ = [
    "AlphaKAnonymity", "BETA_VARIANTS", "BetaLikeness", "DISTANCES", "DeltaDisclosure", "DeltaPresence", "GroupContext", "GroupViolation", "KAnonymity",
    "LDiversity", "L_VARIANTS", "Model", "NTCloseness", "candidate_models", "TCloseness", "Verdict",
]
