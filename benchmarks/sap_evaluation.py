"""Paper 002's evaluation of SAP (Peters 2011, sections 4.2-4.4 and appendix A.2-A.3), reusable.

* **Utility**: 1-NN with the overlap distance (:func:`overlap_distances`), in 5 repeats x 5 stratified folds
  (:func:`cross_validate`): the sanitizer runs on the training rows only, the test rows stay original, and the
  training rows whose class was suppressed are left out of the model (``knn.clj``: ``(filter #(not= -10000
  (last %)) (sap data n1))``). Per fold and class: pd (recall), pf (false alarm), precision and accuracy
  (:func:`class_measures`, ``abcd-stats``).
* **Summaries**: quartiles (:func:`quartiles`) of a measure over the runs, and the Mann-Whitney U test of each
  rate against p = 0 at 95% (:func:`compare`). Three ways of turning per-class results into one distribution
  (:func:`values`): ``pooled`` (every fold x class value together, as ``knn.clj`` concatenates ``abcd-stats``
  over folds before the quartiles), ``mean`` (per fold, the mean over classes) and ``class:<label>`` (one class).
* **Privacy**: paper 002's random-query attacker, queries drawn from the original and asked of the original
  and of each release (:func:`attack_summary`, through :mod:`ppdp.tasks.privacy.risk.query_attack`).

Not part of the test suite (``tests/test_sap.py`` checks the distance and the 1-NN on hand examples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu
from sklearn.model_selection import StratifiedKFold

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.reports import Roles
from ppdp.tasks.privacy.risk.query_attack import evaluate_queries, generate_random_queries
from ppdp.tasks.sanitize.base import Sanitizer

MEASURES = ("acc", "pd", "prec", "pf")


# -- 1-NN with the overlap distance ----------------------------------------------------------------------------
def overlap_distances(train: pd.DataFrame, test: pd.DataFrame, columns: Sequence[str],
                      numeric: Sequence[str] = ()) -> np.ndarray:
    """Distance of every test row to every training row: the sum over ``columns`` of each column's distance.

    A nominal column adds 0 when both values are present and equal, else 1. A numeric column adds
    ``min(|a - b| / range, 1)``, the range taken over the training rows' present values (0 when the range is 0
    and the values are equal). A missing value (a suppressed cell, the paper's ``?``, or one missing in the
    source) matches nothing: it adds 1, also against another missing value.

    Returns
    -------
    ndarray of shape (len(test), len(train))
    """
    out = np.zeros((len(test), len(train)))
    numeric = set(numeric)
    for col in columns:
        a, b = test[col], train[col]
        missing = a.isna().to_numpy()[:, None] | b.isna().to_numpy()[None, :]
        if col in numeric:
            x = pd.to_numeric(a, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            y = pd.to_numeric(b, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            present = y[~np.isnan(y)]
            span = float(present.max() - present.min()) if present.size else 0.0
            diff = np.abs(x[:, None] - y[None, :])
            d = np.minimum(diff / span, 1.0) if span > 0 else (diff > 0).astype(float)
        else:
            codes, _ = pd.factorize(pd.concat([a, b], ignore_index=True), use_na_sentinel=True)
            d = (codes[: len(a), None] != codes[None, len(a):]).astype(float)
        out += np.where(missing, 1.0, d)
    return out


def nn1_predict(train: pd.DataFrame, labels: np.ndarray, test: pd.DataFrame, columns: Sequence[str],
                numeric: Sequence[str] = ()) -> np.ndarray:
    """The label of each test row's nearest training row (:func:`overlap_distances`); ties go to the first
    training row in order (``knn-classifier`` sorts by distance, stably, and takes the first)."""
    labels = np.asarray(labels, dtype=object)
    if len(train) == 0:
        raise ValueError("1-NN needs at least one training row")
    return labels[np.argmin(overlap_distances(train, test, columns, numeric), axis=1)]


def class_measures(actual: Sequence, predicted: Sequence, classes: Sequence) -> dict[object, dict[str, float]]:
    """Per class (as the positive class): acc, pd, prec and pf from the confusion counts.

    With A, B, C, D the true negatives, false negatives, false positives and true positives (section 4.2):
    ``acc = (A + D) / (A + B + C + D)``, ``pd = D / (B + D)``, ``prec = D / (C + D)``, ``pf = C / (A + C)``;
    a ratio with a zero denominator is 0 (no positive, or no prediction of the class).
    """
    actual = np.asarray(actual, dtype=object)
    predicted = np.asarray(predicted, dtype=object)
    out: dict[object, dict[str, float]] = {}
    for c in classes:
        pos, said = actual == c, predicted == c
        d = int(np.sum(pos & said))
        b = int(np.sum(pos & ~said))
        cc = int(np.sum(~pos & said))
        a = int(np.sum(~pos & ~said))

        def ratio(num: int, den: int) -> float:
            return num / den if den else 0.0

        out[c] = {"acc": ratio(a + d, a + b + cc + d), "pd": ratio(d, b + d), "prec": ratio(d, cc + d),
                  "pf": ratio(cc, a + cc)}
    return out


# -- cross-validation --------------------------------------------------------------------------------------------
def _derived_seed(*parts: int) -> int:
    return int(np.random.default_rng([int(p) for p in parts]).integers(0, 2**31 - 1))


def cross_validate(frame: pd.DataFrame, roles: Roles, make: Callable[[float, int], Sanitizer],
                   rates: Sequence[float], *, repeats: int = 5, folds: int = 5, seed: int = 0,
                   order: Literal["shuffled", "by_class"] = "shuffled") -> pd.DataFrame:
    """1-NN results of ``make(rate, seed)``'s releases of the training rows, ``repeats`` x ``folds`` runs.

    Each repeat shuffles the rows (seeded) and splits them into ``folds`` stratified folds; each fold is the
    test set once, the other rows are sanitized at every rate (the same derived seed for every rate of a fold)
    and put back in their order (by ``row_source``, so that the rates differ only by suppression); training rows
    whose class was suppressed are left out of the model.

    ``order`` is the order of the training rows, which decides 1-NN's ties (frequent with nominal attributes):
    ``"shuffled"``, the repeat's random order; ``"by_class"``, grouped by class (classes in sort order, the
    shuffled order within each), as the appendix's pipeline hands them to 1-NN: ``sap-S2`` rebuilds the table
    from ``(mygroup D)``, one class after the other, and ``knn-classifier`` takes the first of the nearest, so
    its ties go to the first class group (``mygroup`` is not printed; sort order is assumed).

    Returns
    -------
    DataFrame
        One row per (repeat, fold, rate, class): the columns of :data:`MEASURES`, ``train_rows`` (rows in the
        model) and ``suppressed`` (cells the sanitizer suppressed in the training rows).
    """
    cls = roles.class_column
    columns = [c for c in roles.quasi_identifiers if c != cls]
    kinds = roles.kinds()
    numeric = [c for c in columns if kinds.get(c) is ColumnKind.numeric]
    y_all = frame[cls].to_numpy(dtype=object)
    try:
        classes = sorted(pd.unique(y_all))
    except TypeError:
        classes = list(pd.unique(y_all))
    rows = []
    for r in range(repeats):
        perm = np.random.default_rng([seed, r]).permutation(len(frame))
        data = frame.iloc[perm].reset_index(drop=True)
        y = data[cls].to_numpy(dtype=object)
        for f, (train_at, test_at) in enumerate(StratifiedKFold(n_splits=folds).split(np.zeros(len(y)), y)):
            train, test = data.iloc[train_at].reset_index(drop=True), data.iloc[test_at].reset_index(drop=True)
            fold_seed = _derived_seed(seed, r, f)
            for rate in rates:
                release = make(rate, fold_seed).sanitize(train, roles)
                published = release.frame.iloc[np.argsort(release.row_source, kind="stable")]
                published = published.reset_index(drop=True)
                if order == "by_class":
                    published = published.iloc[np.argsort(_class_rank(published[cls], classes), kind="stable")]
                published = published[published[cls].notna().to_numpy()]
                predicted = nn1_predict(published, published[cls].to_numpy(dtype=object), test, columns, numeric)
                per_class = class_measures(test[cls].to_numpy(dtype=object), predicted, classes)
                for c, m in per_class.items():
                    rows.append(dict(repeat=r, fold=f, rate=float(rate), **{"class": c}, **m,
                                     train_rows=len(published), suppressed=sum(release.suppressed_cells.values())))
    return pd.DataFrame(rows)


def _class_rank(labels: pd.Series, classes: list) -> np.ndarray:
    rank = {c: i for i, c in enumerate(classes)}
    return np.array([rank.get(v, len(classes)) if pd.notna(v) else len(classes) for v in labels], dtype=np.int64)


# -- summaries ---------------------------------------------------------------------------------------------------
def values(table: pd.DataFrame, rate: float, measure: str, aggregation: str = "pooled") -> np.ndarray:
    """The distribution a quartile chart shows for one rate and measure.

    ``pooled``: every (fold, class) value; ``mean``: per fold, the mean over classes; ``class:<label>``: the
    values of that class only (the label as ``str``).
    """
    at = table[np.isclose(table["rate"], rate)]
    if aggregation == "pooled":
        return at[measure].to_numpy(dtype=float)
    if aggregation == "mean":
        return at.groupby(["repeat", "fold"])[measure].mean().to_numpy(dtype=float)
    if aggregation.startswith("class:"):
        label = aggregation.partition(":")[2]
        return at[at["class"].astype(str) == label][measure].to_numpy(dtype=float)
    raise ValueError(f"unknown aggregation {aggregation!r}")


def quartiles(x: np.ndarray, method: str = "linear") -> tuple[float, float, float]:
    """(lower quartile, median, upper quartile) by ``numpy.percentile``'s ``method``; NaNs without values.

    ``"linear"`` interpolates; ``"lower"`` takes the value at index floor(q (n - 1)) of the sorted values (the
    median of 50 values is then the 25th), which is what the paper's Figure 4.7 figures fit (see
    ``benchmarks/sap_figure_4_7.py``).
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return (float("nan"),) * 3
    q1, med, q3 = np.percentile(x, [25, 50, 75], method=method)
    return float(q1), float(med), float(q3)


@dataclass(frozen=True)
class Comparison:
    """One rate's quartiles of one measure, and the Mann-Whitney U test against the baseline rate."""

    rate: float
    measure: str
    q1: float
    median: float
    q3: float
    p_value: float
    verdict: str  # "same", "higher" or "lower" (significance at 1 - alpha)


def compare(table: pd.DataFrame, rates: Sequence[float], *, baseline: float = 0.0, aggregation: str = "pooled",
            alpha: float = 0.05, method: str = "linear") -> list[Comparison]:
    """Quartiles per rate and measure, and a two-sided Mann-Whitney U test (``scipy.stats.mannwhitneyu``) of each
    rate's values against the baseline's: ``same`` when p >= alpha, else ``higher`` / ``lower`` by the medians
    (by the means when the medians are equal)."""
    out = []
    for measure in MEASURES:
        base = values(table, baseline, measure, aggregation)
        for rate in rates:
            x = values(table, rate, measure, aggregation)
            q1, med, q3 = quartiles(x, method)
            if np.isclose(rate, baseline) or not x.size or not base.size:
                p, verdict = 1.0, "same"
            elif np.array_equal(np.sort(x), np.sort(base)):
                p, verdict = 1.0, "same"
            else:
                p = float(mannwhitneyu(x, base, alternative="two-sided").pvalue)
                gap = (np.median(x) - np.median(base)) or (x.mean() - base.mean())
                verdict = "same" if p >= alpha else ("higher" if gap > 0 else "lower")
            out.append(Comparison(float(rate), measure, q1, med, q3, p, verdict))
    return out


# -- the attacker ------------------------------------------------------------------------------------------------
def attack_summary(original: pd.DataFrame, releases: dict[str, pd.DataFrame], qis: Sequence[str], sa: str | None,
                   *, seed: int = 0, queries: int = 2000, stop_after: int = 100) -> dict[str, dict[str, float]]:
    """Paper 002's attacker: one query set drawn from ``original`` (section 4.2), asked of ``original`` (key
    ``"original"``) and of every release; per table the median and quartiles of the re-identification probability
    (S1) and of the sensitive association (S2), and the share of queries matching exactly one record."""
    drawn = generate_random_queries(original, list(qis), queries=queries, stop_after=stop_after, seed=seed)
    out: dict[str, dict[str, float]] = {}
    for label, table in {"original": original, **releases}.items():
        answers = evaluate_queries(table, drawn, sa)
        reid = answers.reidentification_summary()
        row = {"queries": float(answers.queries), "matched": float(answers.matched_queries),
               "identifying": answers.identifying_share,
               "reid_q1": reid["q1"], "reid_median": reid["median"], "reid_q3": reid["q3"], "reid_mean": reid["mean"]}
        assoc = answers.association_summary()
        if assoc is not None:
            row.update(assoc_q1=assoc["q1"], assoc_median=assoc["median"], assoc_q3=assoc["q3"],
                       assoc_mean=assoc["mean"])
        out[label] = row
    return out
