"""Distance to closest record (DCR) and the closest released record of each original record (which serves
distance-based record linkage too), over tables already encoded to numbers.

The search itself is :func:`ppdp.tasks.core.neighbours.nearest_rows`; this module checks and names the inputs and
summarizes the distances.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ppdp.tasks.core.neighbours import nearest_rows
from ppdp.tasks.privacy.risk._checks import check_matrix

__all__ = [
    "DEFAULT_DCR_QUANTILES",
    "DistanceToClosestRecord",
    "closest_record_distances",
    "closest_records",
    "dcr_summary",
    "distance_to_closest_record",
]

DEFAULT_DCR_QUANTILES: tuple[float, ...] = (0.01, 0.05, 0.25, 0.5)


@dataclass(frozen=True)
class DistanceToClosestRecord:
    """Summary of the distances from each original record to its nearest released record.

    Attributes
    ----------
    records
        Number of original records measured.
    exact_match_share
        Share of original records with a released record at distance 0 (an exact copy in the encoded space).
    minimum, mean
        Smallest and mean distance.
    levels, values
        Quantile levels and the distance quantiles at those levels, aligned. Use :meth:`quantile` to look one
        up by level.
    """

    records: int
    exact_match_share: float
    minimum: float
    mean: float
    levels: tuple[float, ...]
    values: tuple[float, ...]

    def quantile(self, level: float) -> float:
        """Distance quantile at ``level`` (one of ``levels``)."""
        for lv, val in zip(self.levels, self.values):
            if lv == level:
                return val
        raise ValueError("level is not one of the computed quantile levels")

    def as_dict(self) -> dict[float, float]:
        """Quantile level -> distance."""
        return dict(zip(self.levels, self.values))


def closest_record_distances(original: np.ndarray, released: np.ndarray) -> np.ndarray:
    """Euclidean distance from each original row to its nearest released row (aligned with ``original``).

    Parameters
    ----------
    original, released : numpy.ndarray
        2-D numeric arrays in the same encoded space (same number of columns, e.g. standardized), no NaN.

    Returns
    -------
    numpy.ndarray
        Float array of length ``len(original)``.

    Notes
    -----
    The per-record distances behind DCR (Park et al., "Data Synthesis based on Generative Adversarial
    Networks", PVLDB 11(10), 2018); see :func:`distance_to_closest_record`.
    The search is :func:`ppdp.tasks.core.neighbours.nearest_rows` (k-d tree or brute force by width; the
    distance is recomputed from the two rows, so an exact copy is at distance exactly 0).
    """
    return closest_records(original, released)[0]


def closest_records(original: np.ndarray, released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distance, index) of the nearest released row for each original row (see
    :func:`closest_record_distances`); the index serves distance-based linkage too."""
    orig = check_matrix(original, "original")
    rel = check_matrix(released, "released")
    if orig.shape[1] != rel.shape[1]:
        raise ValueError(
            f"original and released differ in column count ({orig.shape[1]} vs {rel.shape[1]}): shape mismatch"
        )
    return nearest_rows(orig, rel)


def distance_to_closest_record(
    original: np.ndarray,
    released: np.ndarray,
    *,
    quantiles: Iterable[float] = DEFAULT_DCR_QUANTILES,
) -> DistanceToClosestRecord:
    """Distance to closest record (DCR) of a synthetic or perturbed release.

    Parameters
    ----------
    original : numpy.ndarray
        Original records, 2-D, already encoded to numbers (e.g. :class:`tasks.core.encoding.TableEncoder`).
    released : numpy.ndarray
        Released records in the same encoding and column order.
    quantiles : iterable of float, default (0.01, 0.05, 0.25, 0.5)
        Quantile levels in [0, 1] to report. Low quantiles matter: they show the records the release copies or
        nearly copies.

    Returns
    -------
    DistanceToClosestRecord

    Raises
    ------
    ValueError
        Non-2-D, empty or non-finite input, column-count mismatch, or a quantile level outside [0, 1].

    Notes
    -----
    DCR as used to audit synthetic tables by Park et al., "Data Synthesis based on Generative Adversarial
    Networks", PVLDB 11(10), 2018: for each original record, the Euclidean distance to the closest released
    record; small distances (and above all zero, an exact match) signal records the release reproduces.
    Quantiles use numpy's default linear interpolation.
    """
    return dcr_summary(closest_record_distances(original, released), quantiles=quantiles)


def dcr_summary(dist: np.ndarray, *, quantiles: Iterable[float] = DEFAULT_DCR_QUANTILES) -> DistanceToClosestRecord:
    """Summarize per-record closest distances (from :func:`closest_records`) as DCR."""
    levels = tuple(float(q) for q in quantiles)
    if not levels:
        raise ValueError("quantiles must name at least one level")
    if not all(0.0 <= q <= 1.0 for q in levels):
        raise ValueError("quantiles must lie in [0, 1]")
    values = np.quantile(dist, levels)
    return DistanceToClosestRecord(
        records=int(dist.size),
        exact_match_share=float(np.mean(dist == 0.0)),
        minimum=float(dist.min()),
        mean=float(dist.mean()),
        levels=levels,
        values=tuple(float(v) for v in values),
    )
