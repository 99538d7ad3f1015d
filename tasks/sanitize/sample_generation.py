"""Sample generation labelled by classifier consensus (privacy unit ``record``, every row generated).

Li & Xi, "A New Algorithm-independent Method for Privacy-Preserving Classification Based on Sample Generation"
(paper 004), section 2 and Fig. 1: train classifiers C_1..C_k on the original records A and their classes c;
draw samples Y = (y^1, ..., y^d) with each y^j uniform on the attribute's interval [min_j, max_j] in A; keep a
sample only when every classifier predicts the same class, labelled with that class; stop when as many samples
as original records have been kept. The published table is the kept samples: no published row stands for an
input row (``row_source`` is all -1).

Readings of the paper (it names WEKA's J48 and "the nearest neighbour classifier", k = 2, on numeric data sets
without missing values):

* Classifiers. J48 becomes scikit-learn's ``DecisionTreeClassifier(criterion="entropy",
  min_samples_leaf=tree_min_samples_leaf)`` with J48's ``-M 2`` as the default leaf size. Differences from
  J48: binary splits on the encoded features (J48 splits a nominal attribute many ways; here its one-hot
  indicators), information gain rather than gain ratio, and no C4.5 pessimistic pruning (the tree is grown
  until a leaf is pure or would fall below the leaf size, about J48 ``-U -M 2``). The nearest-neighbour
  classifier is 1-NN (WEKA's IB1) by Euclidean distance on the encoded features, found exactly with SciPy's
  k-d tree (:class:`scipy.spatial.cKDTree`, all cores; with one-hot columns in two steps, see
  :class:`_NearestRow`). One batch of 40,000 uniform candidates on Adult, 2 cores, load below 1
  (``benchmarks/sample_generation_speed.py``): 14 numeric columns 0.51 s, against 1.57 s for scikit-learn's
  ``KNeighborsClassifier(n_neighbors=1)`` by brute force and 2.91 s with its k-d tree; text attributes one-hot
  (104 columns) 1.19 s, against 1.69 s for one k-d tree over all columns and 3.8 s for scikit-learn. Ties
  between equally near training rows (exact duplicates with different classes) go to whichever row the search
  returns (deterministic for the same input); a tie in a tree leaf goes to the class that sorts first.
* Features: every generated attribute (all published columns but identifiers and the class), encoded by
  :class:`~ppdp.tasks.core.encoding.TableEncoder`: numbers and ordinal ranks standardized (IB1 instead scales
  numbers to [0, 1] by their range), nominal columns one-hot with two categories at distance 1 (as IB1's
  0/1 nominal distance).
* Intervals. A real-valued column is drawn uniformly on [min, max]. A column holding only whole numbers is
  drawn uniformly over the integers of [min, max] (discrete uniform: each integer equally likely; a continuous
  draw rounded afterwards would give the two end points half the weight of the others). Dates are drawn
  uniformly over the whole days of their range when every date is a whole day (else whole seconds, else the
  column's own time unit). A range of 2**53 steps or more (integers spanning more than float64 counts exactly,
  e.g. 0 to 2**63 - 1, or whole floats up to 1e19) is drawn continuously on [min, max] and rounded to the step
  instead: float64 cannot tell neighbouring integers apart beyond 2**53, and beyond 2**63 a discrete draw would
  need integers outside int64. An integer column is published in its own dtype, clipped to its exact input
  range (no float-to-int wrap-around near 2**63). A generated numeric column holding an infinite value or one
  beyond ±1e100 (the bound the ingest step applies) is refused with
  :class:`~ppdp.tasks.core.errors.InputError` before any work.
  Nominal and ordinal columns, which have no interval, are drawn uniformly over the categories present in the
  input (never a declared category the data do not hold).
* Missing values (the paper's data have none): each column's share of missing cells is reproduced, each cell
  of a generated row missing independently with that probability; the classifiers see a missing cell as the
  encoder does (the column median, or a one-hot category of its own). A column without missing values gets
  none.
* Stopping. Candidates are drawn in batches (the first about as large as the number of samples needed, later
  ones sized from the agreement rate seen so far; at least 1,024 and at most 2^25 encoded cells a batch), both
  classifiers predict the whole batch, and the
  agreeing candidates are kept in draw order until ``samples`` are kept. At most ``max_draws_factor *
  samples`` candidates are drawn; when the classifiers agree too rarely for that, the method refuses in one
  line (no data value) and nothing is published. The paper's loop has no bound.

Columns: generated attributes and the class are "synthesized". Identifier columns still in the input
(pseudonymized identifiers) and columns whose tag says "dropped" are not published ("dropped"): a generated row
belongs to no record, so a pseudonym on it would name someone whose data it does not hold.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.methods import MethodParams, Treatment
from ppdp.schemas.params.sample_generation import SampleGenerationParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import TableEncoder, as_numbers, integers_within, refuse_huge
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.sanitize.base import Release, Sanitizer

_DAY_NS, _SECOND_NS = 86_400 * 10**9, 10**9
MIN_BATCH = 1024  # fewest candidates drawn at a time
MAX_BATCH_CELLS = 2**25  # candidates x encoded width per batch (float64: 256 MiB)
MAX_DISCRETE_STEPS = 2**53  # a range of this many steps or more is drawn continuously, then rounded


@dataclass
class _Plan:
    """How one published column is generated."""

    name: Hashable  # the column's label
    numeric: bool  # drawn on [lo, hi] (else over the categories present)
    missing_share: float
    lo: float = 0.0
    hi: float = 0.0
    step: float = 0.0  # > 0: drawn over lo + step * {0, 1, ...} (integers, dates); 0: continuous
    has_values: bool = True
    datetime: bool = False
    positions: np.ndarray | None = None  # categorical: for each category, the first input row holding it
    missing_position: int = -1  # categorical: an input row whose cell is missing (-1: none)


def _factorize(series: pd.Series) -> tuple[np.ndarray, int]:
    """Category codes of ``series`` (-1 missing) in sorted category order where the values can be sorted."""
    try:
        codes, uniques = pd.factorize(series, sort=True)
    except TypeError:  # values of mixed types
        codes, uniques = pd.factorize(series, sort=False)
    return np.asarray(codes, dtype=np.int64), len(uniques)


def _first_rows(codes: np.ndarray, count: int) -> np.ndarray:
    """For each code 0..count-1, the first row holding it."""
    present = codes >= 0
    _, first = np.unique(codes[present], return_index=True)
    return np.flatnonzero(present)[first][:count]


def _time_step(ns: np.ndarray, dtype) -> float:
    """Dates: whole days if every date is one, else whole seconds, else the column's own unit."""
    for step in (_DAY_NS, _SECOND_NS):
        if ns.size and bool(np.all(np.mod(ns, step) == 0)):
            return float(step)
    unit = getattr(dtype, "unit", None) or np.datetime_data(dtype)[0]
    return float({"s": _SECOND_NS, "ms": 10**6, "us": 10**3}.get(unit, 1))


class _NearestRow:
    """Exact nearest training row (Euclidean, encoded features) of each candidate.

    Numeric-only features: one k-d tree. With one-hot blocks, a k-d tree over all the encoded columns is slow (a
    uniform candidate is far from the data and the indicator columns bound distances poorly), so the search is
    done in two steps, exactly: the ``K`` nearest rows in the single-column (numeric and ordinal) subspace give
    an upper bound (their full distances: subspace distance plus one ``2 * scale^2`` per nominal column that
    differs) and, from the K-th subspace distance, a lower bound for every other row; where the best full
    distance is below that lower bound the nearest row is among the K, otherwise the candidate is searched in
    the full k-d tree.
    """

    K = 16

    def __init__(self, x: np.ndarray, blocks: list[slice]) -> None:
        from scipy.spatial import cKDTree  # imported where used: reading a spec or a manifest does not need it

        self.full = cKDTree(x)
        single = [b.start for b in blocks if b.stop - b.start == 1]
        self.hot = [b for b in blocks if b.stop - b.start > 1]
        self.split = bool(single) and bool(self.hot) and len(x) > self.K
        if self.split:
            self.single = np.asarray(single)
            self.low = cKDTree(x[:, self.single])
            self.codes, ok = self._codes(x)
            self.weight = np.array([2.0 * float(x[:, b].max()) ** 2 for b in self.hot])
            self.split = bool(ok.all())

    def _codes(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Category index per one-hot block, and whether each row holds exactly one indicator per block."""
        codes = np.stack([np.argmax(x[:, b], axis=1) for b in self.hot], axis=1)
        ok = np.all([np.count_nonzero(x[:, b], axis=1) == 1 for b in self.hot], axis=0)
        return codes, ok

    def query(self, q: np.ndarray) -> np.ndarray:
        if not self.split:
            return self.full.query(q, k=1, workers=-1)[1]
        dist, rows = self.low.query(q[:, self.single], k=self.K, workers=-1)
        codes, ok = self._codes(q)
        total = dist**2 + (self.codes[rows] != codes[:, None, :]) @ self.weight
        pick = np.argmin(total, axis=1)
        every = np.arange(len(q))
        found = rows[every, pick]
        unsure = np.flatnonzero(~(dist[:, -1] ** 2 > total[every, pick]) | ~ok)
        if unsure.size:
            found[unsure] = self.full.query(q[unsure], k=1, workers=-1)[1]
        return found


class SampleGeneration(Sanitizer):
    """Paper 004's sample generation labelled by a decision tree and 1-NN in agreement; see the module docstring.

    Parameters
    ----------
    samples : int or None
        Rows to generate; None (default): as many as the input rows (the paper's stopping rule).
    max_draws_factor : int
        At most ``max_draws_factor * samples`` candidates are drawn; fewer agreements than ``samples`` among
        them raise :class:`~ppdp.tasks.core.errors.InputError`.
    tree_min_samples_leaf : int
        Fewest training rows in a leaf of the entropy decision tree (J48's ``-M``; default 2).
    seed : int
        Seed of the draws, of the tree's tie-breaking and of the row order.
    """

    name: ClassVar[str] = "sample_generation"
    description: ClassVar[str] = "sample generation: new records drawn from models learned per class"
    Params: ClassVar[type[MethodParams]] = SampleGenerationParams
    needs_class: ClassVar[bool] = True
    randomized: ClassVar[bool] = True

    def __init__(
        self,
        *,
        samples: int | None = None,
        max_draws_factor: int = 100,
        tree_min_samples_leaf: int = 2,
        seed: int = 0,
    ) -> None:
        self.samples = samples
        self.max_draws_factor = max_draws_factor
        self.tree_min_samples_leaf = tree_min_samples_leaf
        self.seed = seed

    # -- columns --------------------------------------------------------------------------------------
    @staticmethod
    def _plan(series: pd.Series, kind: ColumnKind | None) -> _Plan:
        is_date = pd.api.types.is_datetime64_any_dtype(series)
        numeric_dtype = is_date or (pd.api.types.is_numeric_dtype(series) and not isinstance(
            series.dtype, pd.CategoricalDtype))
        numeric = numeric_dtype and kind in (ColumnKind.numeric, None)
        missing = series.isna().to_numpy()
        share = float(missing.mean()) if len(series) else 0.0
        if numeric:
            finite = as_numbers(series)
            finite = finite[~np.isnan(finite)]
            if not finite.size:
                return _Plan(series.name, True, 1.0, has_values=False, datetime=is_date)
            if is_date:
                step = _time_step(finite, series.dtype)
            elif pd.api.types.is_integer_dtype(series) or pd.api.types.is_bool_dtype(series) or bool(
                    np.all(finite == np.round(finite))):
                step = 1.0
            else:
                step = 0.0
            return _Plan(series.name, True, share, lo=float(finite.min()), hi=float(finite.max()), step=step,
                         datetime=is_date)
        codes, count = _factorize(series)
        return _Plan(series.name, False, share, positions=_first_rows(codes, count), has_values=count > 0,
                     missing_position=int(np.argmax(missing)) if missing.any() else -1)

    @staticmethod
    def _draw(plan: _Plan, m: int, rng: np.random.Generator) -> np.ndarray:
        """``m`` draws of one column: floats (NaN missing) or input row positions (categorical)."""
        if plan.numeric:
            if not plan.has_values:
                return np.full(m, np.nan)
            steps = (plan.hi - plan.lo) / plan.step if plan.step > 0 else 0.0
            if 0 < plan.step and steps < MAX_DISCRETE_STEPS:
                top = int(math.floor(steps + 1e-9))
                values = plan.lo + plan.step * rng.integers(0, top + 1, m).astype(np.float64)
                values = np.minimum(values, plan.hi)
            elif plan.step > 0:  # too many steps for an exact discrete draw: continuous, rounded to the step
                values = np.clip(plan.lo + plan.step * np.rint(rng.uniform(0.0, steps, m)), plan.lo, plan.hi)
            else:
                values = rng.uniform(plan.lo, plan.hi, m) if plan.hi > plan.lo else np.full(m, plan.lo)
            if plan.missing_share > 0:
                values[rng.random(m) < plan.missing_share] = np.nan
            return values
        if not plan.has_values:
            return np.full(m, plan.missing_position, dtype=np.int64)
        assert plan.positions is not None  # a categorical plan with values holds their first rows
        rows = plan.positions[rng.integers(0, len(plan.positions), m)]
        if plan.missing_share > 0:
            rows[rng.random(m) < plan.missing_share] = plan.missing_position
        return rows

    @staticmethod
    def _column(plan: _Plan, series: pd.Series, drawn: np.ndarray) -> object:
        """Drawn values in the input column's type (categorical: the input's own cells)."""
        if not plan.numeric:
            return series.array.take(drawn)
        if plan.datetime:
            stamps = pd.DatetimeIndex(pd.to_datetime(drawn, unit="ns"))
            tz = getattr(series.dtype, "tz", None)
            if tz is not None:  # the encoder reads zoned dates as wall-clock time: localize back
                stamps = stamps.tz_localize(tz, ambiguous=np.zeros(len(stamps), dtype=bool),
                                            nonexistent="shift_forward")
            return pd.Series(stamps).astype(series.dtype).array
        if pd.api.types.is_integer_dtype(series):  # cast without wrap-around, within the exact input range
            present = ~np.isnan(drawn)
            bounds = (int(series.min()), int(series.max())) if plan.has_values else (0, 0)
            # pandas-stubs: ExtensionDtype has no numpy_dtype (the nullable integer dtypes have)
            numpy_dtype = series.dtype if isinstance(series.dtype, np.dtype) else series.dtype.numpy_dtype  # type: ignore[attr-defined]
            ints = integers_within(drawn, *bounds, numpy_dtype)
            if isinstance(series.dtype, np.dtype) and present.all():
                return ints
            out = pd.array(ints, dtype=series.dtype if not isinstance(series.dtype, np.dtype) else "Int64")  # type: ignore[call-overload]  # pandas-stubs: pd.array takes no ExtensionDtype instance (pandas does)
            out[~present] = pd.NA
            return out
        try:
            return pd.Series(drawn).astype(series.dtype).array
        except (TypeError, ValueError):
            return drawn

    # -- the work -------------------------------------------------------------------------------------
    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        n = len(frame)
        cls = roles.class_column  # checked by Sanitizer.sanitize (needs_class): the classifiers label the rows
        assert cls is not None
        labels = frame[cls]
        tags = {c.name: c for c in roles.columns}
        identifiers = set(roles.identifiers)
        dropped = [c for c in frame.columns if c != cls and (
            c in identifiers or (c in tags and tags[c].treatment == "dropped"))]
        generated = [c for c in frame.columns if c != cls and c not in dropped]
        if not generated:
            raise InputError("sample_generation: no attribute to generate (every column is an identifier or the "
                             "class)")
        kinds = roles.kinds()
        plans = {c: self._plan(frame[c], kinds.get(c)) for c in generated}
        refuse_huge("sample_generation", frame, [c for c in generated if plans[c].numeric])
        features = {c: ColumnKind.numeric if plans[c].numeric else
                    ColumnKind.ordinal if kinds.get(c) is ColumnKind.ordinal else ColumnKind.nominal for c in generated}
        encoder = TableEncoder(columns=generated, kinds=features, orders=roles.orders()).fit(frame)
        x = encoder.transform(frame)
        y, label_count = _factorize(labels)
        label_rows = _first_rows(y, label_count)

        from sklearn.tree import DecisionTreeClassifier  # imported where used, as scipy above

        tree = DecisionTreeClassifier(criterion="entropy", min_samples_leaf=int(self.tree_min_samples_leaf),
                                      random_state=int(rng.integers(0, 2**31 - 1))).fit(x, y)
        nearest = _NearestRow(x, list(encoder.blocks().values()))

        target = int(self.samples) if self.samples is not None else n
        budget = int(self.max_draws_factor) * target
        cap = max(MIN_BATCH, MAX_BATCH_CELLS // max(encoder.width_, 1))
        kept: dict[str, list[np.ndarray]] = {c: [] for c in generated}
        kept_labels: list[np.ndarray] = []
        have = drawn = agreed = 0
        while have < target and drawn < budget:
            need = target - have
            rate = agreed / drawn if agreed else (1.0 if not drawn else 1.0 / (drawn + 1))
            size = min(max(math.ceil(need / rate * 1.1) + 16, MIN_BATCH), budget - drawn, cap)
            batch = {c: self._draw(plans[c], size, rng) for c in generated}
            candidates = pd.DataFrame({c: (batch[c] if plans[c].numeric else frame[c].array.take(batch[c]))
                                       for c in generated}, copy=False)
            xc = encoder.transform(candidates)
            by_tree = tree.predict(xc)
            by_nn = y[nearest.query(xc)]
            agree = np.flatnonzero(by_tree == by_nn)
            drawn += size
            agreed += agree.size
            take = agree[:need]
            for c in generated:
                kept[c].append(batch[c][take])
            kept_labels.append(by_tree[take])
            have += take.size
        if have < target:
            raise InputError(f"sample_generation: the classifiers agreed on {agreed} of {drawn} draws, fewer than the "
                             f"{target} samples needed (max_draws_factor {self.max_draws_factor}): the tree and 1-NN "
                             "disagree on most of the attributes' ranges")

        out: dict[str, object] = {}
        treatments: dict[str, Treatment] = {}
        for name in frame.columns:
            if name in dropped:
                treatments[name] = "dropped"
                continue
            if name == cls:
                out[name] = labels.array.take(label_rows[np.concatenate(kept_labels)])
            else:
                out[name] = self._column(plans[name], frame[name], np.concatenate(kept[name]))
            treatments[name] = "synthesized"
        return Release(frame=pd.DataFrame(out, index=pd.RangeIndex(target), copy=False), unit="record",
                       treatments=treatments, row_source=np.full(target, -1, dtype=np.int64))
