"""Attacker-side risk measures, one module per attacker model (all re-exported here).

* :mod:`.reidentification`: ARX's prosecutor, journalist and marketer models and sample uniques, over the
  equivalence classes of the quasi-identifiers.
* :mod:`.distance`: distance to closest record (DCR) and the closest released record of each original one
  (distance-based linkage); the search is :mod:`ppdp.tasks.core.neighbours`.
* :mod:`.query_attack`: paper 002's random-query attacker (re-identification and sensitive association).
* :mod:`.perturbation`: paper 004's VD, RP, RK, CP and CK of a perturbed numeric matrix.

Plain functions over pandas tables or numpy arrays; no Prefect. Loops run over columns or over the attacker's
queries, never over records or equivalence classes. Errors are ``ValueError`` naming the column or parameter,
never a data value.
"""

from ppdp.tasks.privacy.risk.distance import (
    DEFAULT_DCR_QUANTILES,
    DistanceToClosestRecord,
    closest_record_distances,
    closest_records,
    dcr_summary,
    distance_to_closest_record,
)
from ppdp.tasks.privacy.risk.perturbation import MatrixDistortion, matrix_distortion
from ppdp.tasks.privacy.risk.query_attack import (
    QueryAnswers,
    QueryAttackResult,
    RandomQueries,
    evaluate_queries,
    generate_random_queries,
    random_query_attack,
)
from ppdp.tasks.privacy.risk.reidentification import ReidentificationRisk, reidentification_risk

__all__ = [
    "DEFAULT_DCR_QUANTILES",
    "DistanceToClosestRecord",
    "MatrixDistortion",
    "QueryAnswers",
    "QueryAttackResult",
    "RandomQueries",
    "ReidentificationRisk",
    "closest_record_distances",
    "closest_records",
    "dcr_summary",
    "distance_to_closest_record",
    "evaluate_queries",
    "generate_random_queries",
    "matrix_distortion",
    "random_query_attack",
    "reidentification_risk",
]
