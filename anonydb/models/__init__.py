"""Privacy models, one module each; a model both checks a finished table and judges candidate
groups for the anonymizers (see :mod:`anonydb.models.base`)."""

from .beta_likeness import VARIANTS as BETA_VARIANTS
from .beta_likeness import BetaLikeness
from .base import GroupContext, GroupViolation, Model, Verdict, candidate_models
from .confidence_bounding import ConfidenceBounding
from .epsilon_m import EpsilonMAnonymity
from .extras import AlphaKAnonymity, DeltaDisclosure
from .k_anonymity import KAnonymity
from .k_map import KMap
from .ke_anonymity import KEAnonymity
from .l_diversity import VARIANTS as L_VARIANTS
from .l_diversity import LDiversity
from .multi_qid import MultiQidK
from .nt_closeness import NTCloseness
from .personalized import PersonalizedPrivacy
from .presence import DeltaPresence
from .recursive_disclosure import VARIANTS as DISCLOSURE_VARIANTS
from .recursive_disclosure import DisclosureRecursiveDiversity
from .t_closeness import DISTANCES, TCloseness
from .xy_privacy import XYPrivacy

__all__ = [
    "AlphaKAnonymity", "BETA_VARIANTS", "BetaLikeness", "ConfidenceBounding", "DISCLOSURE_VARIANTS", "DISTANCES",
    "DeltaDisclosure", "DeltaPresence", "DisclosureRecursiveDiversity", "EpsilonMAnonymity", "GroupContext",
    "GroupViolation", "KAnonymity", "KEAnonymity", "KMap", "LDiversity", "L_VARIANTS", "Model", "MultiQidK", "NTCloseness", "PersonalizedPrivacy",
    "TCloseness", "Verdict", "XYPrivacy", "candidate_models",
]
