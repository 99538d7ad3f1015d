"""Vectorized anonymity models: the nine pyCANON computes, plus hierarchical t-closeness.

Every function takes the same arguments, in the same order, and returns the same shape as its namesake in
``pycanon.anonymity`` (pyCANON 1.0.1) and gives the same value: exactly for integers and for the values pyCANON
truncates or floors (entropy l-diversity, recursive (c,l)-diversity), to 1e-9 for the other floats. They are
orders of magnitude faster: the table is partitioned once into equivalence classes
(:func:`tasks.core.groups.equivalence_class_ids`) and every model is computed from the (class, sensitive value)
count table built with one ``np.bincount`` / ``np.unique`` on combined codes; there is no Python loop over
rows or classes (only over columns, sensitive attributes, hierarchy levels and distinct class lengths).

Beyond pyCANON:

* :func:`hierarchical_t_closeness`: t-closeness with the hierarchical ground distance of Li, Li &
  Venkatasubramanian (2007), given a generalization hierarchy of the sensitive attribute (ARX format).
* :func:`entropy_l_diversity_value`: the untruncated ``exp(min entropy)`` that pyCANON truncates to an int.
* ``*_detail`` functions returning a :class:`MeasureDetail`: the value plus which equivalence class and which
  sensitive attribute are the worst, for gates and reports (never a data value).
* :func:`all_measures` / :func:`all_measure_details`: every model from one shared computation.

Conventions shared by every function
------------------------------------
``quasi_ident`` and ``sens_att`` are lists (or arrays) of column names; a single name is accepted as well.
``gen=True`` (pyCANON's default) uses the equivalence classes over the quasi-identifiers for every sensitive
attribute (SA); ``gen=False`` uses, for each SA, the classes over the quasi-identifiers plus the *other*
sensitive attributes, as pyCANON does. The input frame is never modified and its index is irrelevant (only
row positions are used).

Class numbering: ``worst_class`` is a class id as returned by
``tasks.core.groups.equivalence_class_ids(data, quasi_ident)`` (so the rows of that class are
``ids == worst_class``); with ``gen=False`` it is the id over ``quasi_ident`` followed by the other
sensitive attributes (in ``sens_att`` order) of ``worst_attribute``. Ties go to the first sensitive attribute
(in ``sens_att`` order) and then to the lowest class id.

Invalid input raises ``ValueError`` with a one-line message naming the column (never a data value): unknown
column, a column listed twice, a sensitive attribute that is also a quasi-identifier, an empty table, a
quasi-identifier with only missing values, a column mixing value types (e.g. text and numbers).

Where we deliberately differ from pyCANON
-----------------------------------------
1. Missing quasi-identifier values: pyCANON groups with ``DataFrame.groupby(dropna=True)``, so rows with a
   missing quasi-identifier silently belong to *no* class (while still counting in the table-wide
   distribution). Here a missing value is a value like any other and forms a class of its own (an attacker can
   match "missing" too), as everywhere else in ppdp. Identical results when no quasi-identifier is missing.
2. Missing sensitive values: pyCANON counts ``data[sa] == value`` which is never true for NaN (and
   ``np.unique`` on text with NaN raises). Here "missing" is one more sensitive value, ordered last.
3. Non-default indexes: pyCANON mixes the groupby *labels* with ``iloc`` *positions*, so its results are
   wrong (or raise) on a shuffled or non-RangeIndex frame. Ours only use positions.
4. Degenerate cases where pyCANON raises: t-closeness of a numeric SA with a single distinct value
   (``ZeroDivisionError`` in ``1/(m-1)``) is 0.0 here; recursive (c,l)-diversity with ``gen=False`` when an
   extended class has fewer than l distinct values (``OverflowError`` from ``int(inf)``) gives ``c = inf``.

References
----------
pyCANON: J. Sáinz-Pardo Díaz and Á. López García, "A Python library to check the level of anonymity of a
dataset", Scientific Data 9, 785 (2022).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ppdp.tasks.core.groups import equivalence_class_ids

__all__ = [
    "MEASURE_NAMES",
    "MeasureDetail",
    "all_measure_details",
    "all_measures",
    "alpha_k_anonymity",
    "alpha_k_anonymity_detail",
    "basic_beta_likeness",
    "basic_beta_likeness_detail",
    "delta_disclosure",
    "delta_disclosure_detail",
    "enhanced_beta_likeness",
    "enhanced_beta_likeness_detail",
    "entropy_l_diversity",
    "entropy_l_diversity_detail",
    "entropy_l_diversity_value",
    "hierarchical_t_closeness",
    "hierarchical_t_closeness_detail",
    "k_anonymity",
    "k_anonymity_detail",
    "l_diversity",
    "l_diversity_detail",
    "recursive_c_l_diversity",
    "recursive_c_l_diversity_detail",
    "recursive_c_l_ratio_detail",
    "t_closeness",
    "t_closeness_detail",
]

_DENSE_SLACK = 4096  # count (class, value) pairs densely while classes x values <= 2 rows + this
_E = np.exp(1)  # pyCANON computes exp(H) as ``np.exp(1) ** H``; the last bit matters before int()
_MIXED_KINDS = {"mixed", "mixed-integer"}  # pandas.api.types.infer_dtype kinds mixing unrelated types


@dataclass(frozen=True)
class MeasureDetail:
    """A model's value and where it is attained.

    Attributes
    ----------
    value
        The value, shaped as pyCANON returns it (``int``, ``float`` or a tuple).
    worst_class
        Id of the equivalence class attaining the value (see the module's "Class numbering"), or ``None``
        when no single class does.
    worst_attribute
        Name of the sensitive attribute attaining the value, or ``None`` for k-anonymity.
    """

    value: Any
    worst_class: int | None
    worst_attribute: str | None


# ----------------------------------------------------------------------------------------------------------
# validation and encoding
# ----------------------------------------------------------------------------------------------------------


def _names(cols: Any, what: str) -> list:
    if isinstance(cols, str):
        return [cols]
    if isinstance(cols, np.ndarray):
        cols = cols.tolist()
    names = list(cols)
    if not names:
        raise ValueError(f"no {what} given")
    return names


def _validate(data: pd.DataFrame, quasi_ident: Any, sens_att: Any) -> tuple[list, list]:
    """Checked lists of quasi-identifiers and sensitive attributes (``sens_att=None``: none needed)."""
    if not isinstance(data, pd.DataFrame):
        raise ValueError("data must be a pandas DataFrame")
    qi = _names(quasi_ident, "quasi-identifiers")
    sa = [] if sens_att is None else _names(sens_att, "sensitive attributes")
    seen: set = set()
    for name in qi + sa:
        if name not in data.columns:
            raise ValueError(f"unknown column {name!r}")
        if name in seen:
            if name in qi and name in sa:
                raise ValueError(f"column {name!r} is both a quasi-identifier and a sensitive attribute")
            raise ValueError(f"column {name!r} is listed twice")
        seen.add(name)
        if isinstance(data[name], pd.DataFrame):
            raise ValueError(f"column {name!r} appears more than once in the table")
    if len(data) == 0:
        raise ValueError("table is empty")
    for name in qi:
        if bool(data[name].isna().all()):
            raise ValueError(f"quasi-identifier {name!r} has only missing values")
    for name in qi + sa:
        col = data[name]
        if col.dtype == object and pd.api.types.infer_dtype(col, skipna=True) in _MIXED_KINDS:
            raise ValueError(f"column {name!r} mixes value types (e.g. text and numbers)")
    return qi, sa


@dataclass
class _Attr:
    """One sensitive attribute coded 0..m-1 in ascending value order (missing, if any, is the last code)."""

    name: str
    codes: np.ndarray  # int64, one per row
    uniques: np.ndarray  # the m values (object), missing excluded
    has_missing: bool
    counts: np.ndarray  # int64 (m,): rows holding each value
    kind: str  # how pyCANON's t_closeness treats the column: "numeric", "text" or "other"

    @property
    def m(self) -> int:
        return len(self.counts)


def _encode_attr(series: pd.Series, name: str) -> _Attr:
    if pd.api.types.is_numeric_dtype(series):
        kind = "numeric"
    elif pd.api.types.is_string_dtype(series) or (
        series.dtype == object and pd.api.types.infer_dtype(series, skipna=True) in ("string", "empty")
    ):
        kind = "text"
    else:
        kind = "other"
    values: pd.Series | np.ndarray = series
    if isinstance(series.dtype, pd.CategoricalDtype):  # np.unique (pyCANON) orders by value, not category
        values = np.asarray(series, dtype=object)
    codes, uniques = pd.factorize(values, sort=True)  # ascending like np.unique; missing -> -1
    codes = np.asarray(codes, dtype=np.int64)
    m = len(uniques)
    has_missing = bool((codes < 0).any())
    if has_missing:
        codes = np.where(codes < 0, m, codes)
        m += 1
    counts = np.bincount(codes, minlength=m).astype(np.int64)
    return _Attr(name, codes, np.asarray(uniques, dtype=object), has_missing, counts, kind)


@dataclass
class _Partition:
    ids: np.ndarray  # int64 class id of each row
    sizes: np.ndarray  # int64 (G,)

    @property
    def n_classes(self) -> int:
        return len(self.sizes)


@dataclass
class _Table:
    """Present (class, value) pairs of one sensitive attribute, sorted by class then value."""

    attr: _Attr
    part: _Partition
    cls: np.ndarray
    val: np.ndarray
    cnt: np.ndarray
    starts: np.ndarray  # (G+1,): pairs of class g are starts[g]:starts[g+1]
    _cache: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return self.part.n_classes

    @property
    def distinct(self) -> np.ndarray:
        return np.diff(self.starts)

    @property
    def q(self) -> np.ndarray:
        """Share of the value within its class, per pair (``len(ec[value]) / len(ec)``)."""
        if "q" not in self._cache:
            self._cache["q"] = self.cnt / self.part.sizes[self.cls]
        return self._cache["q"]

    @property
    def p_all(self) -> np.ndarray:
        """Table-wide share of each value (``len(data[value]) / len(data)``)."""
        return self.attr.counts / len(self.part.ids)

    @property
    def p(self) -> np.ndarray:
        """Table-wide share of the value, per pair."""
        if "p" not in self._cache:
            self._cache["p"] = self.p_all[self.val]
        return self._cache["p"]

    def class_max(self, per_pair: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(per_pair, self.starts[:-1])


def _build_table(part: _Partition, attr: _Attr) -> _Table:
    m = attr.m
    n_classes = part.n_classes
    n = len(part.ids)
    key = part.ids * m + attr.codes
    if n_classes * m <= 2 * n + _DENSE_SLACK:  # dense counting: O(n), no sort
        counts = np.bincount(key, minlength=n_classes * m)
        del key
        ukey = np.flatnonzero(counts)
        cnt = counts[ukey]
        del counts
    else:
        ukey, cnt = _unique_pairs(part, key, m)
        del key
    cls = ukey // m
    val = ukey - cls * m
    del ukey
    starts = np.zeros(n_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(cls, minlength=n_classes), out=starts[1:])
    return _Table(attr, part, cls, val, cnt.astype(np.int64, copy=False), starts)


def _unique_pairs(part: _Partition, key: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_counts=True)`` for ``key = class * m + value``, sorting only the rows of classes
    with more than one row: a row alone in its class is a pair of its own (count 1) whose place in the sorted
    output follows from the number of pairs of the classes before it. On a nearly unique table this avoids
    sorting every row."""
    single = part.sizes == 1
    if not single.any():
        return np.unique(key, return_counts=True)
    alone = single[part.ids]
    rest_key, rest_cnt = np.unique(key[~alone], return_counts=True)  # sorted by class, then value
    rest_cls = rest_key // m
    pairs = np.bincount(rest_cls, minlength=part.n_classes)
    pairs[single] = 1
    first = np.zeros(part.n_classes, dtype=np.int64)  # where each class's pairs start in the output
    np.cumsum(pairs[:-1], out=first[1:])
    ukey = np.empty(int(first[-1] + pairs[-1]), dtype=key.dtype)
    cnt = np.ones(ukey.size, dtype=np.int64)
    ukey[first[part.ids[alone]]] = key[alone]
    rest_first = np.zeros(part.n_classes, dtype=np.int64)  # where each class's pairs start in rest_key
    rest_per_class = np.bincount(rest_cls, minlength=part.n_classes)
    np.cumsum(rest_per_class[:-1], out=rest_first[1:])
    slot = first[rest_cls] + (np.arange(rest_key.size) - rest_first[rest_cls])
    ukey[slot] = rest_key
    cnt[slot] = rest_cnt
    return ukey, cnt


class _Context:
    """Validated input plus lazily built, shared partitions, attribute codes and count tables."""

    def __init__(self, data: pd.DataFrame, quasi_ident: Any, sens_att: Any = None, gen: bool = True,
                 class_ids: np.ndarray | None = None) -> None:
        self.qi, self.sa = _validate(data, quasi_ident, sens_att)
        self.data = data
        self.gen = bool(gen)
        self._parts: dict[tuple, _Partition] = {}
        if class_ids is not None:  # the caller's equivalence_class_ids(data, qi): one partition of a large table
            ids = np.asarray(class_ids, dtype=np.int64)
            if ids.shape != (len(data),):
                raise ValueError("class_ids must hold one class id per row")
            self._parts[tuple(self.qi)] = _Partition(ids, np.bincount(ids).astype(np.int64))
        self._attrs: dict[Any, _Attr] = {}
        self._tables: dict[tuple, _Table] = {}

    def partition(self, cols: tuple) -> _Partition:
        if cols not in self._parts:
            ids = equivalence_class_ids(self.data, list(cols))
            self._parts[cols] = _Partition(ids, np.bincount(ids).astype(np.int64))
        return self._parts[cols]

    @property
    def qi_partition(self) -> _Partition:
        return self.partition(tuple(self.qi))

    def attr(self, name: Any) -> _Attr:
        if name not in self._attrs:
            self._attrs[name] = _encode_attr(self.data[name], name)
        return self._attrs[name]

    def columns_for(self, name: Any, gen: bool | None = None) -> tuple:
        gen = self.gen if gen is None else gen
        if gen:
            return tuple(self.qi)
        return tuple(self.qi) + tuple(s for s in self.sa if s != name)

    def table(self, name: Any, gen: bool | None = None) -> _Table:
        cols = self.columns_for(name, gen)
        key = (name, cols)
        if key not in self._tables:
            self._tables[key] = _build_table(self.partition(cols), self.attr(name))
        return self._tables[key]


class _Measured(Protocol):
    """What the models read of a context: :class:`_Context` (rows) or the partitioned path's count context."""

    @property
    def sa(self) -> list[Any]: ...

    @property
    def gen(self) -> bool: ...

    @property
    def qi_partition(self) -> _Partition: ...

    def table(self, name: Any, gen: bool | None = None) -> _Table: ...


def _first_extreme(per_sa: list[tuple[Any, float, int]], largest: bool) -> tuple[float, int, Any]:
    """(value, class, attribute) of the first attribute attaining the max (or min) of ``per_sa``."""
    values = [v for _, v, _ in per_sa]
    best = max(values) if largest else min(values)
    for name, v, g in per_sa:
        if v == best or (isinstance(v, float) and math.isnan(v) and math.isnan(best)):
            return best, g, name
    raise AssertionError("unreachable")


# ----------------------------------------------------------------------------------------------------------
# the models (on a context)
# ----------------------------------------------------------------------------------------------------------


def _k(ctx: _Measured) -> MeasureDetail:
    sizes = ctx.qi_partition.sizes
    g = int(np.argmin(sizes))
    return MeasureDetail(int(sizes[g]), g, None)


def _alpha(ctx: _Measured) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        t = ctx.table(name)
        alpha = t.class_max(t.cnt) / t.part.sizes  # max_v len(ec[v]) / len(ec): exact, division is monotonic
        g = int(np.argmax(alpha))
        per_sa.append((name, float(alpha[g]), g))
    alpha, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail((alpha, _k(ctx).value), g, name)


def _l(ctx: _Measured, gen: bool | None = None) -> MeasureDetail:
    per_sa: list[tuple[Any, float, int]] = []
    for name in ctx.sa:
        distinct = ctx.table(name, gen).distinct
        g = int(np.argmin(distinct))
        per_sa.append((name, int(distinct[g]), g))
    value, g, name = _first_extreme(per_sa, largest=False)
    return MeasureDetail(value, g, name)


def _class_entropy(t: _Table) -> np.ndarray:
    """``-np.sum(p * np.log(p))`` of every class, bit-identical to pyCANON's per-class call.

    Terms are in ascending value order within each class (as ``np.unique`` gives them) and each class is
    summed by ``np.sum`` over a contiguous row of a 2-D block holding the classes with the same number of
    distinct values, which runs NumPy's pairwise summation exactly as on the 1-D array pyCANON builds.
    """
    if "entropy" in t._cache:  # shared by entropy_l_diversity and its untruncated value
        return t._cache["entropy"]
    q = t.q
    terms = q * np.log(q)
    lengths = t.distinct
    out = np.empty(t.n_classes, dtype=np.float64)
    present = np.flatnonzero(np.bincount(lengths))
    if len(present) <= 32:  # few distinct lengths (at most the number of sensitive values): one scan each
        groups = [(int(length), np.flatnonzero(lengths == length)) for length in present]
    else:  # classes in increasing id order within each length, as the scans give them
        order = np.argsort(lengths, kind="stable")
        sorted_len = lengths[order]
        bounds = np.flatnonzero(np.diff(sorted_len)) + 1
        groups = [(int(sorted_len[lo]), order[lo:hi]) for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(order)])]
    for length, which in groups:  # one pass per distinct class length
        if length == 1:  # np.sum of one term is that term
            out[which] = terms[t.starts[which]]
            continue
        block = terms[t.starts[which][:, None] + np.arange(length)]
        out[which] = np.sum(block, axis=1)
    t._cache["entropy"] = -out
    return t._cache["entropy"]


def _entropy(ctx: _Measured) -> tuple[float, int, Any]:
    """(min over classes of e ** entropy, its class, its attribute), computed in pyCANON's order."""
    per_sa, rows = [], []
    for name in ctx.sa:
        ent = _class_entropy(ctx.table(name))
        g = int(np.argmin(ent))
        per_sa.append((name, float(ent[g]), g))
        rows.append(ent)
    _, g, name = _first_extreme(per_sa, largest=False)  # least entropy: first SA, then lowest class
    if ctx.gen:  # pyCANON: per class the least entropy over SAs, then np.exp(1) ** that, then the min
        value = np.min(_E ** np.vstack(rows).min(axis=0))
    else:  # pyCANON: per SA the least entropy over classes, then np.exp(1) ** that, then the min
        value = np.min(_E ** np.array([v for _, v, _ in per_sa]))
    return float(value), g, name


def _entropy_int(ctx: _Measured) -> MeasureDetail:
    value, g, name = _entropy(ctx)
    return MeasureDetail(int(value), g, name)


def _entropy_float(ctx: _Measured) -> MeasureDetail:
    value, g, name = _entropy(ctx)
    return MeasureDetail(value, g, name)


def _class_ratio(t: _Table, l_div: int, descending: bool) -> np.ndarray:
    """``r[0] / sum(r[l-1:])`` of every class, ``r`` its value counts sorted ascending as pyCANON sorts them
    (``descending=True``: sorted descending, Machanavajjhala et al.'s ``r_1 / (r_l + ... + r_m)``); ``inf`` for a
    class with fewer than l distinct values. The one recursive (c,l)-diversity computation: pyCANON's c
    (:func:`_class_c`) and the gate's ratio (:func:`recursive_c_l_ratio_detail`) both come from it."""
    order = np.lexsort((t.cnt, t.cls))  # class, then count ascending
    cnt = t.cnt[order]
    rank = np.arange(len(cnt), dtype=np.int64) - t.starts[t.cls]  # t.cls is already sorted
    if descending:
        rank = t.distinct[t.cls] - 1 - rank
    first = np.zeros(t.n_classes, dtype=np.float64)
    head = rank == 0
    first[t.cls[head]] = cnt[head]
    drop = rank < l_div - 1
    dropped = np.bincount(t.cls[drop], weights=cnt[drop], minlength=t.n_classes)  # exact: integers < 2**53
    rest = t.part.sizes - dropped
    with np.errstate(divide="ignore", invalid="ignore"):
        return first / rest


def _class_c(t: _Table, l_div: int, descending: bool) -> np.ndarray:
    """pyCANON's ``floor(r[0] / sum(r[l-1:]) + 1)`` of every class (see :func:`_class_ratio`)."""
    return np.floor(_class_ratio(t, l_div, descending) + 1)


def _recursive_ratio(ctx: _Measured, l_div: int) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        ratio = _class_ratio(ctx.table(name), l_div, descending=True)
        g = int(np.argmax(ratio))
        per_sa.append((name, float(ratio[g]), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def _recursive(ctx: _Measured, descending: bool = False) -> MeasureDetail:
    l_detail = _l(ctx, gen=True)  # pyCANON always takes l from the gen=True l-diversity
    l_div = l_detail.value
    if l_div <= 1:
        return MeasureDetail((float("nan"), l_div), l_detail.worst_class, l_detail.worst_attribute)
    per_sa = []
    for name in ctx.sa:
        c = _class_c(ctx.table(name), l_div, descending)
        g = int(np.argmax(c))
        per_sa.append((name, float(c[g]), g))
    c_div, g, name = _first_extreme(per_sa, largest=True)
    value = int(c_div) if math.isfinite(c_div) else c_div
    return MeasureDetail((value, l_div), g, name)


def _beta_dist(t: _Table) -> np.ndarray:
    """pyCANON's per-class ``max((q - p) / p)`` (absent values give -1, never the max)."""
    p = t.p
    return t.class_max((t.q - p) / p)


def _basic_beta(ctx: _Measured) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        dist = _beta_dist(ctx.table(name))
        g = int(np.argmax(dist))
        per_sa.append((name, float(dist[g]), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def _enhanced_beta(ctx: _Measured) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        t = ctx.table(name)
        dist = _beta_dist(t)
        g = int(np.argmax(dist))
        cap = float(np.max(-np.log(t.p_all)))  # max_i min(beta, -ln p_i) == min(beta, max_i -ln p_i)
        per_sa.append((name, min(float(dist[g]), cap), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def _delta(ctx: _Measured) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        t = ctx.table(name)
        per_class = t.class_max(np.abs(np.log(t.q / t.p)))  # present values only, as pyCANON's ``if x > 0``
        g = int(np.argmax(per_class))
        per_sa.append((name, float(per_class[g]), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def _emd_equal(t: _Table) -> np.ndarray:
    """Equal-distance EMD ``0.5 * sum_v |q_v - p_v|`` of every class; absent values add their table share."""
    n = len(t.part.ids)
    present = np.bincount(t.cls, weights=np.abs(t.q - t.p), minlength=t.n_classes)
    covered = np.bincount(t.cls, weights=t.attr.counts[t.val], minlength=t.n_classes)
    return 0.5 * (present + (n - covered) / n)


def _emd_ordered(t: _Table) -> np.ndarray:
    """Ordered-distance EMD ``1/(m-1) * sum_i |Q(i) - P(i)|`` of every class (Q, P cumulative shares).

    Sparse: between two consecutive values present in a class, Q is constant, and as P is non-decreasing
    the sum of ``|c - P(i)|`` over a run of positions splits at ``searchsorted(P, c)`` into two prefix-sum
    differences. One run before the class's first value (Q = 0) and one per present value.
    """
    m = t.attr.m
    if m <= 1:
        return np.zeros(t.n_classes)  # pyCANON: ZeroDivisionError
    n = len(t.part.ids)
    big_p = np.cumsum(t.attr.counts) / n  # P(i), i = 0..m-1
    prefix = np.concatenate(([0.0], np.cumsum(big_p)))  # prefix[i] = sum_{j<i} P(j)
    sizes = t.part.sizes
    cum = np.cumsum(t.cnt)
    class_base = np.concatenate(([0], cum[t.starts[1:-1] - 1]))  # rows before each class
    within = cum - class_base[t.cls]
    nxt = np.empty_like(t.val)
    nxt[:-1] = t.val[1:]
    nxt[t.starts[1:] - 1] = m  # the last value of each class runs to the end
    # runs: one leading run [0, first value) with Q = 0, then [v, next v) with Q = cumulative share
    a = np.concatenate((np.zeros(t.n_classes, dtype=np.int64), t.val))
    b = np.concatenate((t.val[t.starts[:-1]], nxt))
    c = np.concatenate((np.zeros(t.n_classes), within / sizes[t.cls]))
    owner = np.concatenate((np.arange(t.n_classes, dtype=np.int64), t.cls))
    k = np.clip(np.searchsorted(big_p, c, side="left"), a, b)
    run = c * (k - a) - (prefix[k] - prefix[a]) + (prefix[b] - prefix[k]) - c * (b - k)
    return (1 / (m - 1)) * np.bincount(owner, weights=run, minlength=t.n_classes)


def _t(ctx: _Measured) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        t = ctx.table(name)
        if t.attr.kind == "numeric":
            emd = _emd_ordered(t)
        elif t.attr.kind == "text":
            emd = _emd_equal(t)
        else:
            raise ValueError(f"t-closeness: sensitive attribute {name!r} is neither numeric nor text")
        g = int(np.argmax(emd))
        per_sa.append((name, float(emd[g]), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


# ----------------------------------------------------------------------------------------------------------
# hierarchical t-closeness
# ----------------------------------------------------------------------------------------------------------


def _hierarchy_levels(hierarchy: Any, attr: _Attr) -> list[np.ndarray]:
    """Node id at each level (1..H) of each of the attribute's values; the last level is the single root."""
    name = attr.name
    table = hierarchy.to_numpy(dtype=object) if isinstance(hierarchy, pd.DataFrame) else np.asarray(
        hierarchy, dtype=object)
    if table.ndim != 2 or table.shape[1] < 2 or table.shape[0] == 0:
        raise ValueError(f"hierarchy of {name!r} must be a table of rows value;level1;...;root")
    if attr.has_missing:
        raise ValueError(f"sensitive attribute {name!r} has missing values, which a hierarchy cannot place")
    leaves = pd.Index(table[:, 0])
    if not leaves.is_unique:
        raise ValueError(f"hierarchy of {name!r} lists a value twice")
    rows = leaves.get_indexer(attr.uniques)
    if (rows < 0).any():  # ARX hierarchies are text: match numbers by their text too
        texts = pd.Index([str(v) for v in table[:, 0]])
        # pandas-stubs types get_indexer's target as Index; pandas takes any list-like (a list of str here)
        rows = texts.get_indexer([str(v) for v in attr.uniques])  # type: ignore[arg-type]
    if (rows < 0).any():
        raise ValueError(f"hierarchy of {name!r} lacks {int((rows < 0).sum())} of the attribute's values")
    used = pd.DataFrame(table[rows]).astype(str)
    if used.iloc[:, -1].nunique() > 1:  # no common top: add one
        used[used.shape[1]] = "*"
    width = used.shape[1]
    # a node at level j is identified by its labels at levels j..H (labels may repeat under other parents)
    return [equivalence_class_ids(used, list(used.columns[j:])) for j in range(1, width)]


def _emd_hierarchical(t: _Table, levels: list[np.ndarray]) -> np.ndarray:
    """Hierarchical-distance EMD of every class (Li, Li & Venkatasubramanian 2007, Sec. IV-B).

    ``EMD = sum over internal nodes N of height(N)/H * min(pos_extra(N), neg_extra(N))`` where
    ``extra(child) = q(child) - p(child)``. As ``pos_extra - neg_extra = extra(N)``, only the positive extras
    are summed, and only from children present in the class (absent ones have ``extra = -p <= 0``).
    """
    height = len(levels)
    n = len(t.part.ids)
    sizes = t.part.sizes
    cost = np.zeros(t.n_classes)
    child_cnt: np.ndarray  # float64 throughout (NumPy's stubs type a weighted bincount as int)
    child_p: np.ndarray
    child_cls, child_node, child_cnt = t.cls, t.val, t.cnt.astype(np.float64)
    child_p = t.attr.counts.astype(np.float64)  # table-wide count of each node at the child level
    child_level = np.arange(t.attr.m)  # node of each value at the child level
    for j, level in enumerate(levels, start=1):
        n_nodes = int(level.max()) + 1
        parent_of = np.zeros(int(child_level.max()) + 1, dtype=np.int64)
        parent_of[child_level] = level
        par = parent_of[child_node]
        pos = np.maximum(child_cnt / sizes[child_cls] - child_p[child_node] / n, 0.0)
        ukey, inv = np.unique(child_cls * n_nodes + par, return_inverse=True)
        par_cls, par_node = ukey // n_nodes, ukey % n_nodes
        pos_par = np.bincount(inv, weights=pos)
        cnt_par = np.bincount(inv, weights=child_cnt)
        p_level = np.bincount(level, weights=t.attr.counts, minlength=n_nodes)
        extra = cnt_par / sizes[par_cls] - p_level[par_node] / n
        run = (j / height) * np.clip(np.minimum(pos_par, pos_par - extra), 0.0, None)
        cost += np.bincount(par_cls, weights=run, minlength=t.n_classes)
        child_cls, child_node, child_cnt, child_p, child_level = par_cls, par_node, cnt_par, p_level, level
    return cost


def _hierarchies_for(sa: list, hierarchy: Any) -> dict:
    if isinstance(hierarchy, Mapping):
        missing = [s for s in sa if s not in hierarchy]
        if missing:
            raise ValueError(f"no hierarchy given for sensitive attribute {missing[0]!r}")
        return {s: hierarchy[s] for s in sa}
    if len(sa) != 1:
        raise ValueError("several sensitive attributes: give the hierarchies as a mapping column -> hierarchy")
    return {sa[0]: hierarchy}


def _hier_t(ctx: _Measured, hierarchy: Any, names: list | None = None) -> MeasureDetail:
    names = ctx.sa if names is None else names
    hier = _hierarchies_for(names, hierarchy)
    per_sa = []
    for name in names:
        t = ctx.table(name, gen=True)
        emd = _emd_hierarchical(t, _hierarchy_levels(hier[name], t.attr))
        g = int(np.argmax(emd))
        per_sa.append((name, float(emd[g]), g))
    value, g, name = _first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


# ----------------------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------------------


def k_anonymity_detail(data: pd.DataFrame, quasi_ident) -> MeasureDetail:
    """:func:`k_anonymity` with the smallest class's id (``worst_attribute`` is ``None``)."""
    return _k(_Context(data, quasi_ident))


def k_anonymity(data: pd.DataFrame, quasi_ident) -> int:
    """k of k-anonymity: the size of the smallest equivalence class.

    Parameters
    ----------
    data : pandas.DataFrame
        The table (not modified; any index).
    quasi_ident : list of str
        Quasi-identifier columns.

    Returns
    -------
    int
        The smallest number of rows sharing all quasi-identifier values.

    Notes
    -----
    L. Sweeney, "k-anonymity: a model for protecting privacy", Int. J. Uncertainty, Fuzziness and
    Knowledge-Based Systems 10(5), 557-570 (2002). A missing quasi-identifier value forms a class of its own
    (pyCANON drops such rows; see the module docstring).
    """
    return k_anonymity_detail(data, quasi_ident).value


def alpha_k_anonymity_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`alpha_k_anonymity` with the class and attribute attaining alpha."""
    return _alpha(_Context(data, quasi_ident, sens_att, gen))


def alpha_k_anonymity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> tuple[float, int]:
    """alpha and k of (alpha,k)-anonymity.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        Classes over the quasi-identifiers for every SA (True) or over the quasi-identifiers plus the other
        SAs (False), as pyCANON.

    Returns
    -------
    (float, int)
        alpha: the largest share of one sensitive value within one class; k: :func:`k_anonymity` (over the
        quasi-identifiers only, whatever ``gen``).

    Notes
    -----
    R. C.-W. Wong, J. Li, A. W.-C. Fu, K. Wang, "(alpha, k)-anonymity: an enhanced k-anonymity model for
    privacy preserving data publishing", Proc. KDD 2006, 754-759.
    """
    return alpha_k_anonymity_detail(data, quasi_ident, sens_att, gen).value


def l_diversity_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`l_diversity` with the class and attribute having the fewest distinct values."""
    return _l(_Context(data, quasi_ident, sens_att, gen))


def l_diversity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> int:
    """l of (distinct) l-diversity: the fewest distinct sensitive values in one class.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    int

    Notes
    -----
    A. Machanavajjhala, D. Kifer, J. Gehrke, M. Venkitasubramaniam, "l-diversity: privacy beyond
    k-anonymity", ACM TKDD 1(1), 3 (2007). A missing sensitive value counts as one value.
    """
    return l_diversity_detail(data, quasi_ident, sens_att, gen).value


def entropy_l_diversity_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`entropy_l_diversity` (truncated int value) with the class and attribute of least entropy."""
    return _entropy_int(_Context(data, quasi_ident, sens_att, gen))


def entropy_l_diversity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> int:
    """l of entropy l-diversity, truncated as pyCANON: ``int(min over classes of exp(entropy))``.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    int
        ``int(min(exp(H)))`` with ``H = -sum_v p_v ln p_v`` the entropy of a class's sensitive values (its
        least entropy over the SAs). Bit-identical to pyCANON, including its truncation artefact: a
        perfectly balanced class of 2 values has ``np.exp(1) ** ln 2 == 1.9999999999999998``, so l = 1
        (3 balanced values give 2, 4 give 3). Gates should use :func:`entropy_l_diversity_value` with a
        small tolerance (e.g. ``value >= l - 1e-9``).

    Notes
    -----
    Machanavajjhala et al., ACM TKDD 1(1), 3 (2007), Definition 4.1 (entropy l-diversity: every class has
    ``H >= ln l``).
    """
    return entropy_l_diversity_detail(data, quasi_ident, sens_att, gen).value


def entropy_l_diversity_value(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """Untruncated l of entropy l-diversity: ``min over classes of exp(entropy)`` (a float >= 1).

    Same computation as :func:`entropy_l_diversity` (which is ``int`` of this), for gates that need the
    fractional value (e.g. 1.98 rather than 1). Compare it with a tolerance: a perfectly balanced class of
    l values gives l only up to rounding (1.9999999999999998 for l = 2).

    Notes
    -----
    Machanavajjhala et al., ACM TKDD 1(1), 3 (2007), Definition 4.1.
    """
    return _entropy_float(_Context(data, quasi_ident, sens_att, gen)).value


def recursive_c_l_diversity_detail(data: pd.DataFrame, quasi_ident, sens_att, imp=False, gen=True, *,
                                   descending: bool = False) -> MeasureDetail:
    """:func:`recursive_c_l_diversity` with the class and attribute attaining c (the l-diversity's worst
    class and attribute when c is NaN)."""
    ctx = _Context(data, quasi_ident, sens_att, gen)
    detail = _recursive(ctx, descending)
    if imp and not math.isfinite(detail.value[0]) and detail.value[1] <= 1:
        print(f"c for (c,l)-diversity cannot be calculated as l={detail.value[1]}")
    return detail


def recursive_c_l_diversity(data: pd.DataFrame, quasi_ident, sens_att, imp=False, gen=True, *,
                            descending: bool = False) -> tuple[float, int]:
    """c and l of recursive (c,l)-diversity, as pyCANON computes them.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    imp : bool, default False
        Print pyCANON's message when c cannot be computed (l = 1).
    gen : bool, default True
        See the module docstring. As in pyCANON, l is always the ``gen=True`` :func:`l_diversity`; ``gen``
        only changes the classes c is computed on.
    descending : bool, keyword-only, default False
        False: pyCANON's value. True: the paper's order (see Notes).

    Returns
    -------
    (int or float, int)
        ``(c, l)``. ``c = nan`` when ``l <= 1``; otherwise
        ``c = max over classes and SAs of floor(r[0] / (r[l-1] + ... + r[m-1]) + 1)``, ``r`` the class's
        value counts. With ``gen=False`` a class over the extended quasi-identifiers may have fewer than l
        values: c is then ``inf`` (pyCANON raises ``OverflowError``).

    Notes
    -----
    Machanavajjhala et al., ACM TKDD 1(1), 3 (2007), Definition 4.3: a class is (c,l)-diverse when
    ``r_1 < c (r_l + ... + r_m)`` with ``r_1 >= r_2 >= ...`` the counts sorted in *descending* order, so the
    least c is ``floor(r_1 / (r_l + ... + r_m)) + 1``. pyCANON 1.0.1 sorts the counts *ascending*
    (``np.sort``), so its ``r[0]`` is the rarest value and its c is almost always 1 or 2: it does not bound
    the most frequent value. We return pyCANON's value by default (this function is its drop-in
    replacement); pass ``descending=True`` for the paper's c, which is what a gate should use.
    """
    return recursive_c_l_diversity_detail(data, quasi_ident, sens_att, imp, gen, descending=descending).value


def recursive_c_l_ratio_detail(data: pd.DataFrame, quasi_ident, sens_att, l, gen=True, *,  # noqa: E741
                               class_ids: np.ndarray | None = None) -> MeasureDetail:
    """The recursive (c,l)-diversity ratio for a given l, with the class and attribute attaining it.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    l : int
        The l of the requirement (at least 1).
    gen : bool, default True
        See the module docstring.
    class_ids : numpy.ndarray, optional
        ``equivalence_class_ids(data, quasi_ident)`` when the caller already has it.

    Returns
    -------
    MeasureDetail
        ``value``: the largest ``r_1 / (r_l + ... + r_m)`` over classes and sensitive attributes, ``r_1 >= r_2
        >= ...`` a class's value counts (``inf`` when a class has fewer than l distinct values).

    Notes
    -----
    Machanavajjhala et al., ACM TKDD 1(1), 3 (2007), Definition 4.3: a class is recursive (c,l)-diverse when
    ``r_1 < c (r_l + ... + r_m)``, so a table is when this value is below c. Same computation as
    :func:`recursive_c_l_diversity` with ``descending=True`` (whose c is ``floor(value + 1)`` for the table's own
    l), for an l given by the requirement instead of the table's l-diversity.
    """
    if isinstance(l, bool) or not isinstance(l, (int, np.integer)) or l < 1:
        raise ValueError("l must be an integer >= 1")
    return _recursive_ratio(_Context(data, quasi_ident, sens_att, gen, class_ids), int(l))


def t_closeness_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`t_closeness` with the class and attribute attaining t."""
    return _t(_Context(data, quasi_ident, sens_att, gen))


def t_closeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """t of t-closeness: the largest Earth Mover's Distance between a class's and the table's distribution.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        A sensitive attribute neither numeric nor text (e.g. datetime), as pyCANON.

    Notes
    -----
    N. Li, T. Li, S. Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and l-diversity",
    Proc. ICDE 2007, 106-115. The ground distance is chosen as pyCANON does, by
    ``pandas.api.types.is_numeric_dtype`` (numeric, including bool: ordered distance, EMD
    ``1/(m-1) * sum_i |sum_{j<=i} (q_j - p_j)|`` over the m sorted table values) or ``is_string_dtype`` (text,
    including text categoricals: equal distance, EMD ``1/2 sum |q_v - p_v|``). A numeric attribute with a
    single value gives 0.0 (pyCANON divides by zero). For a generalization hierarchy use
    :func:`hierarchical_t_closeness`.
    """
    return t_closeness_detail(data, quasi_ident, sens_att, gen).value


def hierarchical_t_closeness_detail(data: pd.DataFrame, quasi_ident, sens_att, hierarchy) -> MeasureDetail:
    """:func:`hierarchical_t_closeness` with the class and attribute attaining t."""
    return _hier_t(_Context(data, quasi_ident, sens_att, True), hierarchy)


def hierarchical_t_closeness(data: pd.DataFrame, quasi_ident, sens_att, hierarchy) -> float:
    """t of t-closeness with the hierarchical ground distance of a generalization hierarchy.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident : list of str
        Quasi-identifiers (classes are over these only, pyCANON's ``gen=True``).
    sens_att : str or list of str
        Sensitive attribute(s).
    hierarchy : DataFrame, 2-D array, or mapping column -> either
        The attribute's generalization hierarchy, one row per value: ``value, level1, ..., root`` (the
        format of ARX's hierarchy CSVs, e.g. ``pd.read_csv(path, sep=";", header=None)``). Every value of the
        attribute must be in the first column (numbers may match by their text). A mapping is needed for
        several sensitive attributes. If the last column has several labels, a common root is added.

    Returns
    -------
    float
        The largest hierarchical EMD over classes (and attributes), in [0, 1].

    Notes
    -----
    Li, Li & Venkatasubramanian, ICDE 2007, Section IV-B: the distance between two values is
    ``level(lowest common ancestor) / H`` (H the hierarchy's height), and the EMD is
    ``sum over internal nodes N of level(N)/H * min(pos_extra(N), neg_extra(N))`` where ``pos_extra``
    (``neg_extra``) sums the positive (negative) ``q - p`` extras of N's children. A node is identified by its
    labels up to the root, so a label repeated under two parents is two nodes. A flat hierarchy
    (``value; *``) gives the equal-distance EMD of :func:`t_closeness`.
    """
    return hierarchical_t_closeness_detail(data, quasi_ident, sens_att, hierarchy).value


def delta_disclosure_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`delta_disclosure` with the class and attribute attaining delta."""
    return _delta(_Context(data, quasi_ident, sens_att, gen))


def delta_disclosure(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """delta of delta-disclosure privacy: ``max over classes and present values of |ln(q_v / p_v)|``.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    float

    Notes
    -----
    J. Brickell, V. Shmatikov, "The cost of privacy: destruction of data-mining utility in anonymized data
    publishing", Proc. KDD 2008, 70-78. Values absent from a class (``q_v = 0``) are skipped, as pyCANON does.
    """
    return delta_disclosure_detail(data, quasi_ident, sens_att, gen).value


def basic_beta_likeness_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`basic_beta_likeness` with the class and attribute attaining beta."""
    return _basic_beta(_Context(data, quasi_ident, sens_att, gen))


def basic_beta_likeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """beta of basic beta-likeness: ``max over classes and values of (q_v - p_v) / p_v``.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    float

    Notes
    -----
    J. Cao, P. Karras, "Publishing microdata with a robust privacy guarantee", PVLDB 5(11), 1388-1399
    (2012), Definition 2.
    """
    return basic_beta_likeness_detail(data, quasi_ident, sens_att, gen).value


def enhanced_beta_likeness_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`enhanced_beta_likeness` with the class and attribute of the largest relative gain."""
    return _enhanced_beta(_Context(data, quasi_ident, sens_att, gen))


def enhanced_beta_likeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """beta of enhanced beta-likeness, as pyCANON computes it.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring.

    Returns
    -------
    float
        Per SA ``max_v min(beta_basic, -ln p_v)`` (= ``min(beta_basic, -ln min_v p_v)``), then the max over
        SAs, where ``beta_basic`` is that SA's :func:`basic_beta_likeness`.

    Notes
    -----
    Cao & Karras, PVLDB 5(11) (2012), Definition 3 (enhanced beta-likeness bounds the gain of value v by
    ``min(beta, -ln p_v)``). The worst class reported is the one attaining ``beta_basic``.
    """
    return enhanced_beta_likeness_detail(data, quasi_ident, sens_att, gen).value


_MEASURES = {
    "k_anonymity": _k,
    "alpha_k_anonymity": _alpha,
    "l_diversity": _l,
    "entropy_l_diversity": _entropy_int,
    "recursive_c_l_diversity": _recursive,
    "basic_beta_likeness": _basic_beta,
    "enhanced_beta_likeness": _enhanced_beta,
    "delta_disclosure": _delta,
    "t_closeness": _t,
}


MEASURE_NAMES = (*_MEASURES, "entropy_l_diversity_value", "hierarchical_t_closeness")


def all_measure_details(data: pd.DataFrame, quasi_ident, sens_att, gen=True,
                        hierarchies: Mapping | None = None,
                        measures: Iterable[str] | None = None, *,
                        class_ids: np.ndarray | None = None) -> dict[str, MeasureDetail]:
    """Every model's :class:`MeasureDetail` from one shared computation; arguments and keys as in
    :func:`all_measures`. ``class_ids``: ``equivalence_class_ids(data, quasi_ident)`` when the caller already has
    it (a large table is then partitioned once for every model and the caller's own measures)."""
    ctx = _Context(data, quasi_ident, sens_att, gen, class_ids)
    if measures is None:
        wanted = [name for name in MEASURE_NAMES if name != "hierarchical_t_closeness" or hierarchies]
    else:
        wanted = list(measures)
        unknown = [name for name in wanted if name not in MEASURE_NAMES]
        if unknown:
            raise ValueError(f"unknown measure {unknown[0]!r}")
    out: dict[str, MeasureDetail] = {}
    for name in wanted:
        if name == "entropy_l_diversity_value":
            out[name] = _entropy_float(ctx)
        elif name == "hierarchical_t_closeness":
            names = [s for s in ctx.sa if hierarchies and s in hierarchies]
            if not names:
                raise ValueError("hierarchical_t_closeness needs the hierarchy of a sensitive attribute")
            out[name] = _hier_t(ctx, hierarchies, names)
        else:
            out[name] = _MEASURES[name](ctx)
    return out


def all_measures(data: pd.DataFrame, quasi_ident, sens_att, gen=True,
                 hierarchies: Mapping | None = None, measures: Iterable[str] | None = None, *,
                 class_ids: np.ndarray | None = None) -> dict[str, Any]:
    """Every model at once, sharing one partition into classes and one count table per sensitive attribute.

    Parameters
    ----------
    data : pandas.DataFrame
        The table.
    quasi_ident, sens_att : list of str
        Quasi-identifiers and sensitive attributes.
    gen : bool, default True
        See the module docstring (honoured by every model, including (c,l)-diversity; pyCANON's
        ``get_report_values`` passes its ``gen`` as ``imp`` there by mistake).
    hierarchies : mapping column -> hierarchy, optional
        Adds ``"hierarchical_t_closeness"`` (see :func:`hierarchical_t_closeness`) over the sensitive
        attributes that have a hierarchy.
    measures : iterable of str, optional
        Only these keys (any of ``MEASURE_NAMES``), e.g. ``("k_anonymity", "l_diversity")`` on a large table;
        they still share one partition. Default: all.
    class_ids : numpy.ndarray, optional, keyword-only
        ``tasks.core.groups.equivalence_class_ids(data, quasi_ident)`` when the caller already has it: a large
        table is then partitioned once for every model and the caller's own measures. Taken as given.

    Returns
    -------
    dict
        pyCANON's function names as keys and pyCANON-shaped values: ``k_anonymity`` (int),
        ``alpha_k_anonymity`` ((alpha, k)), ``l_diversity`` (int), ``entropy_l_diversity`` (int),
        ``recursive_c_l_diversity`` ((c, l)), ``basic_beta_likeness``, ``enhanced_beta_likeness``,
        ``delta_disclosure``, ``t_closeness`` (floats); plus ``entropy_l_diversity_value`` (float) and, with
        ``hierarchies``, ``hierarchical_t_closeness`` (float).

    Notes
    -----
    The models and their papers are in each function's docstring; pyCANON's ``report.get_report_values``
    computes the same nine, each from scratch.
    """
    details = all_measure_details(data, quasi_ident, sens_att, gen, hierarchies, measures, class_ids=class_ids)
    return {name: d.value for name, d in details.items()}
