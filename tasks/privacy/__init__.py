"""Privacy measures and gates. Measuring (``measure_*``) is kept apart from deciding (``check_gates``)."""

from ppdp.tasks.privacy.measure import check_gates, interval_privacy, measure_release, measure_table, read_hierarchy
from ppdp.tasks.privacy.synthetic import confidence_interval_privacy, linkage_risk

__all__ = [
    "check_gates",
    "confidence_interval_privacy",
    "interval_privacy",
    "linkage_risk",
    "measure_release",
    "measure_table",
    "read_hierarchy",
]
