"""Privacy measures and gates. Measuring (``measure_*``) is kept apart from deciding (``check_gates``)."""

from tasks.privacy.measure import check_gates, interval_privacy, measure_privacy
from tasks.privacy.synthetic import confidence_interval_privacy, linkage_risk

__all__ = ["check_gates", "confidence_interval_privacy", "interval_privacy", "linkage_risk", "measure_privacy"]
