"""The privacy criteria, one line each: the privacy policy's fields (:class:`ppdp.schemas.privacy.PrivacyThresholds`),
the ``ppdp validate`` options, the gates :func:`ppdp.tasks.privacy.measure.check_gates` judges, in this order."""

from __future__ import annotations

from ppdp.schemas.criteria.alpha_k_anonymity import AlphaKAnonymity
from ppdp.schemas.criteria.base import Criterion, Threshold
from ppdp.schemas.criteria.beta_likeness import BetaLikeness
from ppdp.schemas.criteria.delta_disclosure import DeltaDisclosure
from ppdp.schemas.criteria.differential_privacy import MaxDelta, MaxEpsilon
from ppdp.schemas.criteria.disclosure_gain import MaxDisclosureGain
from ppdp.schemas.criteria.k_anonymity import KAnonymity
from ppdp.schemas.criteria.k_map import KMap
from ppdp.schemas.criteria.l_diversity import LDiversity
from ppdp.schemas.criteria.record_linkage import MaxLinkageRisk, MinDcr, MinVd
from ppdp.schemas.criteria.reidentification import (
    MaxAverageRisk,
    MaxJournalistRisk,
    MaxMarketerRisk,
    MaxProsecutorRisk,
    MaxRecordsAtRisk,
    MaxSampleUniques,
)
from ppdp.schemas.criteria.t_closeness import TCloseness

CRITERIA: tuple[Criterion, ...] = (
    KAnonymity(),
    AlphaKAnonymity(),
    LDiversity(),
    TCloseness(),
    DeltaDisclosure(),
    BetaLikeness(),
    MaxProsecutorRisk(),
    MaxAverageRisk(),
    MaxRecordsAtRisk(),
    MaxMarketerRisk(),
    MaxSampleUniques(),
    MaxJournalistRisk(),
    KMap(),
    MaxLinkageRisk(),
    MinDcr(),
    MinVd(),
    MaxDisclosureGain(),
    MaxEpsilon(),
    MaxDelta(),
)
"""Every privacy criterion, in the policy's order."""


def policy_thresholds(criteria: tuple[Criterion, ...] = CRITERIA) -> list[Threshold]:
    """Every criterion's threshold fields in the policy's order: each criterion's in turn, a field with ``after``
    placed right after the field it names."""
    placed = [t for c in criteria for t in c.thresholds if not t.after]
    for t in (t for c in criteria for t in c.thresholds if t.after):
        placed.insert([p.name for p in placed].index(t.after) + 1, t)
    return placed
