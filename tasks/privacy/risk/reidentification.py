"""Re-identification risk as ARX reports it: the prosecutor, journalist and marketer attacker models, and
sample uniques, over the equivalence classes of the quasi-identifiers.

The definitions of :func:`reidentification_risk` follow ARX (Prasser, Kohlmayer et al., class
``RiskModelSampleSummary``), which implements El Emam, *Guide to the De-Identification of Personal Health
Information* (2013), "Measuring the Probability of Re-Identification". With ``f_j`` the size of sample class
``j``, ``F_j`` its size in the population, ``J`` the number of sample classes and ``n`` the number of sample
records:

* prosecutor (the attacker knows the target is in the sample): record risk ``1/f_j``; highest
  ``1/min f_j``; average ``J/n`` (equal to the mean record risk); records at risk: share of records with
  ``1/f_j > threshold``.
* journalist (the attacker only knows the target is in the population): record risk ``1/F_j``; highest
  ``1/min F_j``; records at risk: share of sample records with ``1/F_j > threshold``; average as in ARX:
  ``max(J / sum_j F_j, sum_j (f_j/F_j) / n)``. Without a population, ``F_j = f_j`` and every journalist
  value equals the prosecutor one (``journalist_uses_population`` is False).
* marketer (the attacker links all records): ``J/n`` without population; ``sum_j (f_j/F_j) / n`` (the mean
  record journalist risk) with a population, as ARX computes it.
* sample uniques: share of records with ``f_j = 1``.

A sample class absent from the population (or rarer there than in the sample) means the population is not
a superset of the sample; ARX assumes it is. Rather than inventing a size, this raises ``ValueError``.
ARX skips suppressed records; here every row of ``frame`` counts, so drop suppressed rows first.

Plain functions over pandas tables; no Prefect, no Python loop over records or classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.privacy.risk._checks import check_columns, check_nonempty

__all__ = ["ReidentificationRisk", "reidentification_risk"]


@dataclass(frozen=True)
class ReidentificationRisk:
    """Re-identification risk of a table over its quasi-identifiers, as ARX reports it.

    Attributes
    ----------
    records, classes
        Number of records and of equivalence classes (rows sharing every quasi-identifier value) in the table.
    threshold
        Record-level risk above which a record counts as "at risk".
    prosecutor_highest, prosecutor_average, prosecutor_records_at_risk
        Highest record risk ``1/|EC|``, ARX's average (success rate, ``classes / records``) and the share of
        records whose risk exceeds ``threshold``.
    journalist_highest, journalist_average, journalist_records_at_risk
        The same with each record's class size counted in the population table (see
        :func:`reidentification_risk`). Without a population these equal the prosecutor values and
        ``journalist_uses_population`` is False.
    marketer
        Expected share of records re-identified when the attacker links every record.
    sample_uniques
        Share of records alone in their equivalence class of the table (not of the population).
    journalist_uses_population
        True when a population table was given; False means the journalist fields are the prosecutor ones.
    """

    records: int
    classes: int
    threshold: float
    prosecutor_highest: float
    prosecutor_average: float
    prosecutor_records_at_risk: float
    journalist_highest: float
    journalist_average: float
    journalist_records_at_risk: float
    marketer: float
    sample_uniques: float
    journalist_uses_population: bool


def reidentification_risk(
    frame: pd.DataFrame,
    qi: Sequence[str],
    *,
    population: pd.DataFrame | None = None,
    threshold: float = 0.2,
    class_ids: np.ndarray | None = None,
) -> ReidentificationRisk:
    """Prosecutor, journalist and marketer re-identification risk and sample uniques over ``qi``.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table to assess (the sample, e.g. a release). Must not be empty.
    qi : sequence of str
        Quasi-identifier columns. Equivalence classes are the rows sharing all of these values
        (:func:`tasks.core.groups.equivalence_class_ids`; a missing value is a value of its own). An empty list puts
        every record in one class.
    population : pandas.DataFrame, optional
        The population the sample was drawn from (ARX's "identification table" / superset), holding the same
        ``qi`` columns. Every sample record must be in it: each sample class must occur in the population at
        least as often as in the sample, else ``ValueError``.
    threshold : float, default 0.2
        Record risk above which (strictly) a record is "at risk"; in [0, 1].
    class_ids : numpy.ndarray, optional
        ``equivalence_class_ids(frame, qi)`` when the caller already has it (saves partitioning a large table
        twice); dense ids 0..J-1 aligned with the rows. Not checked beyond its length.

    Returns
    -------
    ReidentificationRisk

    Raises
    ------
    ValueError
        Unknown or repeated column, empty table, threshold outside [0, 1], or a population that does not
        contain the sample.

    Notes
    -----
    The definitions (ARX's, after El Emam 2013) are in the module docstring.
    """
    cols = check_columns(frame, qi, "qi", "frame")
    check_nonempty(frame, "frame")
    threshold = _checked_threshold(threshold)
    n = len(frame)
    counts = _class_sizes(frame, cols, class_ids)  # per class, not per record: the same sums, far less memory
    n_classes = len(counts)

    prosecutor_highest = float(1.0 / counts.min())
    prosecutor_average = n_classes / n
    prosecutor_at_risk = float(counts[1.0 / counts > threshold].sum() / n)
    sample_uniques = float(np.count_nonzero(counts == 1) / n)
    if population is None:  # F_j = f_j: every journalist value is the prosecutor one, the marketer J/n
        highest, average, at_risk = prosecutor_highest, prosecutor_average, prosecutor_at_risk
        marketer = prosecutor_average
    else:
        highest, average, at_risk, marketer = _journalist(frame, population, cols, n_classes, threshold)
    return ReidentificationRisk(
        records=n,
        classes=n_classes,
        threshold=threshold,
        prosecutor_highest=prosecutor_highest,
        prosecutor_average=prosecutor_average,
        prosecutor_records_at_risk=prosecutor_at_risk,
        journalist_highest=highest,
        journalist_average=average,
        journalist_records_at_risk=at_risk,
        marketer=marketer,
        sample_uniques=sample_uniques,
        journalist_uses_population=population is not None,
    )


def _checked_threshold(threshold: float) -> float:
    """The risk threshold as a float in [0, 1], else ValueError."""
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ValueError("threshold must be a number in [0, 1]") from None
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must lie in [0, 1]")
    return threshold


def _class_sizes(frame: pd.DataFrame, cols: list[str], class_ids: np.ndarray | None) -> np.ndarray:
    """The sample's class sizes f_j, from ``class_ids`` when given (checked for length only)."""
    if class_ids is None:
        ids = equivalence_class_ids(frame, cols)
    elif len(class_ids) != len(frame):
        raise ValueError("class_ids must hold one class id per row of frame")
    else:
        ids = np.asarray(class_ids, dtype=np.int64)
    return np.bincount(ids)


def _journalist(frame: pd.DataFrame, population: pd.DataFrame, cols: list[str], n_classes: int,
                threshold: float) -> tuple[float, float, float, float]:
    """Journalist highest, average and records at risk, and the marketer risk, with each sample record's class
    size F_j counted in the population (which must contain the sample)."""
    n = len(frame)
    check_columns(population, cols, "qi", "population")
    both = pd.concat(
        [frame[cols].reset_index(drop=True), population[cols].reset_index(drop=True)], ignore_index=True
    )
    joint = equivalence_class_ids(both, cols)
    s_ids, p_ids = joint[:n], joint[n:]
    n_joint = int(joint.max()) + 1
    pop_counts = np.bincount(p_ids, minlength=n_joint)
    sample_counts = np.bincount(s_ids, minlength=n_joint)
    present = sample_counts > 0
    if np.any(pop_counts[present] < sample_counts[present]):
        raise ValueError(
            "population does not contain the sample on qi: a sample equivalence class is missing from the "
            "population or rarer there"
        )
    big_f = pop_counts[s_ids].astype(float)  # each sample record's class size in the population
    record_risk = 1.0 / big_f
    marketer = float(np.mean(record_risk))  # = sum_j f_j / F_j / n
    journalist_average = max(n_classes / float(pop_counts[present].sum()), marketer)
    return (float(1.0 / big_f.min()), float(journalist_average), float(np.mean(record_risk > threshold)),
            marketer)
