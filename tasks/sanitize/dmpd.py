"""DMPD, data mining privacy by decomposition (paper 001, section 4): publish disjoint subsets of the features, each
with the class, as separate tables, each k-anonymous over its own quasi-identifiers.

The paper's three procedures (:mod:`ppdp.tasks.core.dmpd` implements them): a genetic search over feature
partitions (Procedure 1), whose fitness is the inner cross-validated accuracy of one inducer per subset
(Procedure 2), combined as ``argmax_c prod_k P_k(c | x_Gk) / P(c)^(w-1)`` (Procedure 3). A partition is valid
when the projection of every subset on its quasi-identifiers is k-anonymous; invalid partitions get fitness 0.

How the input is recoded before the search (fitted on the rows the method publishes):

* numeric (and date) features are discretized by Fayyad and Irani's MDLP (supervised entropy splits), and
  adjacent intervals are merged until each holds at least k rows, so no published interval is rarer than k. They
  are published as interval labels (``[30, 45)``, ``< 30``, ``>= 45``): a one-level interval generalization;
* categorical features keep their values (they passed the release's rare-value rule, see
  :mod:`ppdp.tasks.rare`; a value seen fewer than k times is published missing, so the method is safe on its own);
* missing values are a category of their own (published missing).

Each published part is then a k-anonymous table over its quasi-identifiers (the rows' classes are measured by the
same functions as every ``equivalence_class`` release). The parts are sorted by their own values, so neither row
order nor any key links the rows of two parts: joining them back into records is what the decomposition
prevents. Generalization beyond this recoding is not searched: the paper anonymizes by decomposition alone and
names combining DMPD with generalization as future work (section 6); climbing hierarchies per subset inside the
fitness function would multiply the search's cost by the lattice's size.

Identifiers (pseudonymized or not) are never in a part: a pseudonym would be a key across parts.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import Domain, IntRange, MethodParams, Treatment
from ppdp.schemas.params.dmpd import DmpdParams
from ppdp.schemas.reports import FeaturePartition, ParetoPoint, Roles
from ppdp.tasks.core import dmpd as core
from ppdp.tasks.core.errors import InputError, ReleaseRejected, SpecError
from ppdp.tasks.sanitize.base import PartsRelease, ReleasePart, Sanitizer


def _interval_labels(cuts: np.ndarray, is_date: bool) -> list[str]:
    """Labels of the intervals ``cuts`` delimits (one more than cuts), in code order."""
    def fmt(c: float) -> str:
        return pd.Timestamp(int(c)).isoformat() if is_date else f"{c:.6g}"

    if len(cuts) == 0:
        return ["*"]
    edges = [fmt(c) for c in cuts]
    inner = ["[" + a + ", " + b + ")" for a, b in zip(edges, edges[1:])]
    return ["< " + edges[0], *inner, ">= " + edges[-1]]


class Dmpd(Sanitizer):
    """DMPD feature-set partitioning under k-anonymity (see the module docstring).

    Parameters
    ----------
    k : int
        Smallest equivalence class of every published part over its quasi-identifiers.
    inducer : {"tree", "naive_bayes"}
        The inducer of the search's fitness.
    population, generations, p_crossover, p_mutation, inner_folds
        The genetic search (paper 001, section 4.1-4.2; the rates are not in the paper: see
        :mod:`ppdp.tasks.core.dmpd`).
    seed : int
        Seeds the search and the inner folds.
    """

    name: ClassVar[str] = "dmpd"
    description: ClassVar[str] = ("DMPD feature-set partitioning: the features split into disjoint subsets, each "
                                  "published with the class as its own table, k-anonymous over its quasi-identifiers "
                                  "(Matatov, Rokach and Maimon)")
    Params: ClassVar[type[MethodParams]] = DmpdParams
    needs_class: ClassVar[bool] = True
    randomized: ClassVar[bool] = True
    shape: ClassVar[str] = "parts"  # one table per feature subset

    k: int | None
    inducer: Literal["naive_bayes", "tree"]
    population: int
    generations: int
    p_crossover: float
    p_mutation: float
    inner_folds: int

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        return {"k": IntRange(low=2, high=max(2, len(frame)))}

    def _features(self, frame: pd.DataFrame, roles: Roles) -> list[str]:
        ids = set(roles.identifiers)
        return [c for c in roles.attributes if c in frame.columns and c not in ids]

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> PartsRelease:
        if self.k is None:
            raise SpecError("dmpd: k is required (set method.k or a tuning strategy)")
        k = int(self.k)
        cls = roles.class_column  # checked by Sanitizer.sanitize (needs_class)
        assert cls is not None
        n = len(frame)
        if n < k:
            raise InputError(f"dmpd: {n} records cannot form an equivalence class of k={k}")
        features = self._features(frame, roles)
        if not features:
            raise InputError("dmpd: no feature column to partition")
        kinds = roles.kinds()
        numeric = [kinds.get(c) is ColumnKind.numeric for c in features]
        y_labels, y = np.unique(frame[cls].astype(str).to_numpy(), return_inverse=True)
        frame, suppressed = _suppress_rare(frame, [c for c, is_num in zip(features, numeric) if not is_num], k)
        every = features  # a feature left with no value has nothing to publish: never in a part
        keep = [i for i, c in enumerate(features) if frame[c].notna().any()]
        features, numeric = [features[i] for i in keep], [numeric[i] for i in keep]
        if not features:
            raise ReleaseRejected(f"dmpd: every feature holds only values seen fewer than k={k} times", ["k"])
        view = _numeric_view(frame, features, numeric)
        recoding = core.Recoding.fit(view, y, features, numeric, min_count=k)
        codes = recoding.codes(view)
        qi_names = set(roles.quasi_identifiers)
        qi_index = [i for i, c in enumerate(features) if c in qi_names]
        try:
            result = core.search_partition(
                codes, recoding.cards, y, len(y_labels), quasi_identifiers=qi_index, k=k, inducer=self.inducer,
                population=self.population, generations=self.generations, p_crossover=self.p_crossover,
                p_mutation=self.p_mutation, inner_folds=self.inner_folds, seed=int(rng.integers(2**32)),
                score_invalid=True)  # the accuracy of partitions below k too: the Pareto front spans every k
        except core.NoValidPartition:
            raise ReleaseRejected(f"dmpd: no partition of the features is k-anonymous for k={k}: no feature is "
                                  f"{k}-anonymous over its quasi-identifiers even on its own", ["k"]) from None
        subsets = [list(s) for s in result.partition if s]  # never empty: NoValidPartition otherwise
        labels = _Labels(recoding, features, numeric, frame)
        parts = []
        for i, subset in enumerate(subsets, start=1):
            cols = [features[j] for j in subset]
            part = labels.table(frame, codes, subset, cls)
            # sort by the part's own codes, then by class: no order shared with the input or another part
            order = np.lexsort((y, *(codes[:, j] for j in reversed(subset))))
            part = part.iloc[order].reset_index(drop=True)
            parts.append(ReleasePart(name=f"part-{i}", frame=part,
                                     quasi_identifiers=tuple(c for c in cols if c in qi_names)))
        chosen = {features[j] for s in subsets for j in s}
        treatments: dict[str, Treatment] = {c: "dropped" for c in every}
        for c, is_num in zip(features, numeric):
            treatments[c] = ("generalized" if is_num else "kept") if c in chosen else "dropped"
        for c in roles.identifiers:
            if c in frame.columns:
                treatments[c] = "dropped"
        treatments[cls] = "kept"
        names = [[features[j] for j in s] for s in subsets]
        gain = core.information_gain(codes, recoding.cards, y, len(y_labels))
        front = core.pareto_front((acc, level) for _, acc, level in result.evaluated if acc == acc)  # not NaN
        by_point: dict[tuple[float, int], tuple[tuple[int, ...], ...]] = {}  # (accuracy, k) -> first partition
        for partition, acc, level in result.evaluated:
            by_point.setdefault((acc, level), partition)
        pareto = [ParetoPoint(k=int(level), accuracy=float(acc),
                              subsets=[[features[j] for j in s] for s in by_point[(acc, level)] if s])
                  for acc, level in front]
        info = FeaturePartition(
            subsets=names, dropped=[c for c in every if c not in chosen],
            quasi_identifiers=[[c for c in s if c in qi_names] for s in names], inducer=self.inducer,
            fitness=float(result.fitness), evaluations=int(result.evaluations), generations=int(result.generations),
            search_seconds=float(result.seconds),
            information_gain={c: float(g) for c, g in zip(features, gain)}, pareto=pareto)
        empty = pd.DataFrame(index=pd.RangeIndex(0))
        return PartsRelease(frame=empty, unit="equivalence_class", treatments=treatments,
                            row_source=np.zeros(0, dtype=np.int64), parts=tuple(parts),
                            suppressed_cells={c: n for c, n in suppressed.items() if c in chosen},
                            recode=labels.recoder(parts, cls), partition=info)


def _suppress_rare(frame: pd.DataFrame, columns: list[str], k: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """Categorical values seen fewer than k times set missing (the release flow's rare-value rule has merged them
    already; this keeps the method safe on its own): (frame, column -> cells suppressed)."""
    out, counts = frame, {}
    for c in columns:
        freq = frame[c].map(frame[c].value_counts(dropna=True))
        rare = (freq < k).to_numpy() & frame[c].notna().to_numpy()
        if rare.any():
            if out is frame:
                out = frame.copy()
            col = out[c]
            if isinstance(col.dtype, pd.CategoricalDtype) or pd.api.types.is_numeric_dtype(col) \
                    or pd.api.types.is_bool_dtype(col):
                col = col.astype(object)
            out[c] = col.mask(rare)
            counts[c] = int(rare.sum())
    return out, counts


def _numeric_view(frame: pd.DataFrame, features: list[str], numeric: list[bool]) -> pd.DataFrame:
    """The features as the recoding reads them: dates as nanoseconds (float), numbers as floats."""
    out: dict[str, np.ndarray | pd.Series] = {}
    for c, is_num in zip(features, numeric):
        s = frame[c]
        if is_num and pd.api.types.is_datetime64_any_dtype(s):
            values = s.to_numpy(dtype="datetime64[ns]").astype(np.int64).astype(float)
            values[s.isna().to_numpy()] = np.nan
            out[c] = values
        elif is_num:
            out[c] = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
        else:
            out[c] = s
    return pd.DataFrame(out, index=frame.index)


class _Labels:
    """Published values of the recoded features: interval labels for numbers, the values themselves otherwise."""

    def __init__(self, recoding, features: list[str], numeric: list[bool], frame: pd.DataFrame) -> None:
        self.recoding = recoding
        self.features = features
        self.numeric = numeric
        self.interval = {c: np.array(_interval_labels(recoding.cuts[c],
                                                      pd.api.types.is_datetime64_any_dtype(frame[c])),
                                     dtype=object)
                         for c, is_num in zip(features, numeric) if is_num}

    def table(self, frame: pd.DataFrame, codes: np.ndarray, subset: list[int], cls: str) -> pd.DataFrame:
        out = {}
        for j in subset:
            c = self.features[j]
            if self.numeric[j]:
                labels = self.interval[c]
                col = codes[:, j]
                missing = col >= len(labels)
                values = labels[np.minimum(col, len(labels) - 1)].copy()
                values[missing] = None
                out[c] = pd.Series(values, dtype=object)
            else:
                out[c] = frame[c].reset_index(drop=True)
        out[cls] = frame[cls].reset_index(drop=True)
        return pd.DataFrame(out)

    def recoder(self, parts: list[ReleasePart], cls: str):
        """original rows -> {part name: the rows as that part publishes them} (rows in the given order)."""
        index = {c: j for j, c in enumerate(self.features)}
        layout = [(p.name, [index[c] for c in p.frame.columns if c != cls]) for p in parts]
        numeric = self.numeric

        def recode(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
            view = _numeric_view(rows, self.features, numeric)
            codes = self.recoding.codes(view)
            return {name: self.table(rows, codes, subset, cls) for name, subset in layout}

        return recode
