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
  classifier is 1-NN (WEKA's IB1) by Euclidean distance on the encoded features, found exactly: with numeric
  features only by SciPy's k-d tree (:class:`scipy.spatial.cKDTree`, all cores); with one-hot columns by a
  search over their structure (rows grouped by their tuple of categories, the groups visited by the number of
  categories that differ, only the numeric part searched within a group; see :class:`_NearestRow`). One batch
  of 40,000 uniform candidates, 2 cores, native threads 1, load about 2 (``benchmarks/sample_generation_speed.py``,
  figures in ``benchmarks/results/sample_generation_speed.md``): ARX's Adult (one numeric column, 93 encoded
  columns) 0.73 s, against 55 s for the search used before issue 33 (a bound from the numeric columns, else a
  k-d tree over all columns) and 71 s for one k-d tree over all columns; UCI Adult with the text attributes
  one-hot (104 columns) 0.67 s, against 1.12 s and 1.75 s; all 14 attributes numeric 0.56 s, against 3.1 s for
  scikit-learn's ``KNeighborsClassifier(n_neighbors=1)`` by brute force. Ties between equally near training
  rows (exact duplicates with different classes) go to the lowest row index; with numeric features only, to
  whichever row the k-d tree returns (deterministic for the same input). A tie in a tree leaf goes to the class
  that sorts first.
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
from typing import Any, ClassVar

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
NEAREST_CELLS = 2**22  # candidate-pattern cells (and candidate-row pairs) per step of the nearest-row search


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


def _squared(qn: np.ndarray, xn: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between ``qn`` and ``xn`` (broadcast; features on the last axis), summed
    column by column: one order of additions wherever a distance is computed, so that equal inputs give equal
    sums."""
    out = np.zeros(np.broadcast_shapes(qn.shape, xn.shape)[:-1])
    for j in range(qn.shape[-1]):
        out += (qn[..., j] - xn[..., j]) ** 2
    return out


def _lowest(owner: np.ndarray, total: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each run of equal ``owner`` values (``owner`` grouped, e.g. sorted): the owner, the least ``total`` and
    the lowest ``row`` among those at that total."""
    starts = np.flatnonzero(np.concatenate(([True], owner[1:] != owner[:-1]))) if owner.size else owner[:0]
    if not starts.size:
        return owner[:0], total[:0], row[:0]
    least = np.minimum.reduceat(total, starts)
    run = np.repeat(np.arange(starts.size), np.diff(np.append(starts, owner.size)))
    rows = np.minimum.reduceat(np.where(total == least[run], row, np.iinfo(np.int64).max), starts)
    return owner[starts], least, rows


class _NearestRow:
    """Exact nearest training row (Euclidean, encoded features) of each candidate.

    Numeric-only features: one k-d tree over all the encoded columns (:class:`scipy.spatial.cKDTree`, all cores).
    With one-hot blocks such a tree is slow (about 100 indicator columns on Adult, which bound the distances of
    uniform candidates poorly), so the search uses the blocks' structure. A row's squared distance to a candidate
    is ``w * k`` (``w = 2 * scale^2``, ``k`` the number of nominal columns whose category differs) plus the squared
    distance over the single columns (numeric and ordinal). The training rows are grouped by their tuple of
    categories (a *pattern*: 5,988 of them on ARX's Adult). For each candidate, exactly:

    1. the ``K`` nearest rows in the single-column subspace (a k-d tree there) give a first nearest row and,
       from the K-th subspace distance, a floor under the single-column part of every other row; where that
       floor alone exceeds the best distance, the answer is among the K (most candidates when there are several
       real-valued columns);
    2. otherwise the candidate's agreements with every pattern are counted (a table look-up per nominal column,
       candidates in chunks of :data:`NEAREST_CELLS` candidate-pattern cells), and the patterns are visited
       level by level, ``k = 0, 1, ...`` differing columns, while ``w * k`` plus the floor does not exceed the
       best distance found. In each visited pattern the nearest row is found on the single columns: with one, a
       binary search in the pattern's sorted values; with none, the pattern's first row; with several, all the
       pattern's rows.

    Ties: among training rows equally near a candidate (the same computed distance: exact duplicates, or rows on
    either side) the lowest row index wins. The k-d tree over all columns instead returns whichever tied row it
    meets (deterministic for the same input); it serves numeric-only features, and encodings
    :class:`TableEncoder` does not produce (a one-hot block holding no indicator, several, or indicators of
    different values: in a training row such a block turns the structured search off, in a candidate it sends
    that candidate to the full tree).
    """

    K = 16

    def __init__(self, x: np.ndarray, blocks: list[slice]) -> None:
        self.x = x
        self._full: Any = None  # the k-d tree over all columns, built when first needed
        n, width = x.shape
        self.hot = [b for b in blocks if b.stop - b.start > 1]
        in_hot = np.zeros(width, dtype=bool)
        for b in self.hot:
            in_hot[b] = True
        self.single = np.flatnonzero(~in_hot)
        self.structured = False
        if not self.hot or n == 0:
            return
        indicators = x[:, in_hot]
        self.scale = float(indicators[indicators != 0][0]) if np.any(indicators != 0) else 0.0
        codes, ok = self._codes(x, self.scale)
        if not (self.scale > 0 and bool(ok.all())):
            return
        self.structured = True
        self.weight = 2.0 * self.scale * self.scale
        self.xn = np.ascontiguousarray(x[:, self.single])
        patterns, pattern_of = np.unique(codes, axis=0, return_inverse=True)
        self.pattern_of = np.asarray(pattern_of).ravel()
        count = len(patterns)
        self.count_dtype: type[np.unsignedinteger] = np.uint8 if len(self.hot) < 255 else np.uint16
        # per nominal column: for each category, which patterns hold it (a look-up table when small enough)
        self.agree: list[np.ndarray] = []
        for i, b in enumerate(self.hot):
            column = np.ascontiguousarray(patterns[:, i])
            if (b.stop - b.start) * count <= NEAREST_CELLS * 4:
                column = (column[None, :] == np.arange(b.stop - b.start)[:, None]).astype(self.count_dtype)
            self.agree.append(column)
        self.patterns = patterns
        rows = np.arange(n)
        d = len(self.single)
        if d == 0:  # a pattern's first row stands for all of it
            order = np.lexsort((rows, self.pattern_of))
            first = np.concatenate(([True], self.pattern_of[order][1:] != self.pattern_of[order][:-1]))
            self.first = order[first]
        elif d == 1:  # rows sorted by (pattern, value), the lowest index kept among equal values
            self.values = np.unique(self.xn[:, 0])
            self.radix = len(self.values) + 1
            key = self.pattern_of.astype(np.int64) * self.radix + np.searchsorted(self.values, self.xn[:, 0])
            order = np.lexsort((rows, key))
            keep = np.concatenate(([True], key[order][1:] != key[order][:-1]))
            self.keys, self.key_rows = key[order][keep], order[keep]
        else:  # each pattern's rows, in index order
            order = np.lexsort((rows, self.pattern_of))
            self.group_rows = order
            self.group_start = np.searchsorted(self.pattern_of[order], np.arange(count + 1))
        self.low: Any = None
        if d and n > self.K:
            from scipy.spatial import cKDTree  # imported where used: reading a spec or a manifest does not need it

            self.low = cKDTree(self.xn)

    def _codes(self, x: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Category index per one-hot block, and whether each row holds exactly one indicator per block, of value
        ``scale`` (a training row always does; a candidate that does not is searched in the full tree)."""
        every = np.arange(len(x))
        codes = np.stack([np.argmax(x[:, b], axis=1) for b in self.hot], axis=1)
        ok = np.ones(len(x), dtype=bool)
        for i, b in enumerate(self.hot):
            ok &= (np.count_nonzero(x[:, b], axis=1) == 1) & (x[every, b.start + codes[:, i]] == scale)
        return codes, ok

    def _full_tree(self, q: np.ndarray) -> np.ndarray:
        from scipy.spatial import cKDTree  # heavy: SciPy, loaded when neighbours are searched

        if self._full is None:
            self._full = cKDTree(self.x)
        return self._full.query(q, k=1, workers=-1)[1]

    def query(self, q: np.ndarray) -> np.ndarray:
        """Index of the nearest training row of each row of ``q``."""
        if not self.structured:
            return self._full_tree(q)
        found = np.zeros(len(q), dtype=np.int64)
        codes, ok = self._codes(q, self.scale)
        odd = np.flatnonzero(~ok)
        if odd.size:
            found[odd] = self._full_tree(q[odd])
        clean = np.flatnonzero(ok)
        step = max(1, NEAREST_CELLS // (self.K * max(len(self.single), len(self.hot), 1)))
        for start in range(0, clean.size, step):
            part = clean[start:start + step]
            found[part] = self._structured(np.ascontiguousarray(q[np.ix_(part, self.single)]), codes[part])
        return found

    def _structured(self, qn: np.ndarray, codes: np.ndarray) -> np.ndarray:
        m = len(qn)
        best = np.full(m, np.inf)
        best_row = np.full(m, np.iinfo(np.int64).max)
        floor = np.zeros(m)  # under the single-column part of every row not yet looked at
        todo = np.arange(m)
        if self.low is not None:  # step 1: the K nearest rows in the single-column subspace
            rows = self.low.query(qn, k=self.K, workers=-1)[1]
            num = _squared(qn[:, None, :], self.xn[rows])
            differ = np.count_nonzero(self.patterns[self.pattern_of[rows]] != codes[:, None, :], axis=-1)
            total = self.weight * differ + num
            best = total.min(axis=1)
            best_row = np.where(total == best[:, None], rows, np.iinfo(np.int64).max).min(axis=1)
            floor = num[:, -1] * (1.0 - 1e-12)  # margin: the k-d tree's own sums may round otherwise
            todo = np.flatnonzero(~(floor > best))
        # step 2: patterns level by level (k differing nominal columns), while w * k + floor <= best
        hot = len(self.hot)
        count = len(self.patterns)
        chunk = max(1, NEAREST_CELLS // count)
        for start in range(0, todo.size, chunk):
            part = todo[start:start + chunk]
            agree = np.zeros((part.size, count), dtype=self.count_dtype)
            for i, table in enumerate(self.agree):
                agree += table[codes[part, i]] if table.ndim == 2 else table[None, :] == codes[part, i][:, None]
            cb, cr, fl = best[part], best_row[part], floor[part]
            live = np.ones(part.size, dtype=bool)
            for k in range(hot + 1):
                penalty = self.weight * k
                live &= penalty + fl <= cb
                if not live.any():
                    break
                want = np.where(live, hot - k, np.iinfo(self.count_dtype).max).astype(self.count_dtype)
                cell = np.flatnonzero(agree == want[:, None])
                if not cell.size:
                    continue
                owner, pattern = np.divmod(cell, count)
                total, row = self._within(qn[part[owner]], pattern, penalty)
                owner, total, row = _lowest(owner, total, row)
                better = (total < cb[owner]) | ((total == cb[owner]) & (row < cr[owner]))
                cb[owner[better]], cr[owner[better]] = total[better], row[better]
            best[part], best_row[part] = cb, cr
        return best_row

    def _within(self, qn: np.ndarray, pattern: np.ndarray, penalty: float) -> tuple[np.ndarray, np.ndarray]:
        """For each candidate-pattern pair (``qn`` the candidate's single columns), the nearest row of the pattern:
        (its distance, ``penalty`` plus the single-column part; the row), the lowest index among equally near."""
        d = qn.shape[1]
        if d == 0:
            return np.full(len(pattern), penalty), self.first[pattern]
        if d == 1:  # the pattern's values on either side of the candidate's
            at = np.searchsorted(self.keys, pattern * self.radix + np.searchsorted(self.values, qn[:, 0]))
            below, above = np.maximum(at - 1, 0), np.minimum(at, len(self.keys) - 1)
            rb, ra = self.key_rows[below], self.key_rows[above]
            db = np.where((at > 0) & (self.keys[below] // self.radix == pattern),
                          penalty + _squared(qn, self.xn[rb]), np.inf)
            da = np.where((at < len(self.keys)) & (self.keys[above] // self.radix == pattern),
                          penalty + _squared(qn, self.xn[ra]), np.inf)
            take = (da < db) | ((da == db) & (ra < rb))
            return np.where(take, da, db), np.where(take, ra, rb)
        # several single columns: every row of the pattern, pairs taken in slices of bounded size
        sizes = self.group_start[pattern + 1] - self.group_start[pattern]
        total, row = np.empty(len(pattern)), np.empty(len(pattern), dtype=np.int64)
        ends = np.cumsum(sizes)
        first = 0
        while first < len(pattern):
            last = max(first + 1, int(np.searchsorted(ends, ends[first] - sizes[first] + NEAREST_CELLS, "right")))
            pairs = np.arange(first, last)
            size = sizes[pairs]
            owner = np.repeat(pairs, size)
            offset = np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size)
            rows = self.group_rows[self.group_start[pattern[owner]] + offset]
            got, least, lowest = _lowest(owner, penalty + _squared(qn[owner], self.xn[rows]), rows)
            total[got], row[got] = least, lowest
            first = last
        return total, row


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

    samples: int | None
    max_draws_factor: int
    tree_min_samples_leaf: int

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
