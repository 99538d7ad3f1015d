"""The shared machinery of the class-based models (:mod:`ppdp.tasks.privacy.models`, :mod:`ppdp.tasks.privacy.
class_models`, the partitioned path): the checked column lists, each sensitive attribute encoded once, the partition of
the rows into equivalence classes and, per sensitive attribute, the (class, value) count table every model reads
(ARX's "groupify"). No model is computed here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ppdp.tasks.core.groups import equivalence_class_ids

DENSE_SLACK = 4096  # count (class, value) pairs densely while classes x values <= 2 rows + this
_MIXED_KINDS = {"mixed", "mixed-integer"}  # pandas.api.types.infer_dtype kinds mixing unrelated types

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


def validate_columns(data: pd.DataFrame, quasi_ident: Any, sens_att: Any) -> tuple[list, list]:
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
class Attr:
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


def encode_attr(series: pd.Series, name: str) -> Attr:
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
    return Attr(name, codes, np.asarray(uniques, dtype=object), has_missing, counts, kind)


@dataclass
class Partition:
    ids: np.ndarray  # int64 class id of each row
    sizes: np.ndarray  # int64 (G,)

    @property
    def n_classes(self) -> int:
        return len(self.sizes)


@dataclass
class Table:
    """Present (class, value) pairs of one sensitive attribute, sorted by class then value."""

    attr: Attr
    part: Partition
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


def _build_table(part: Partition, attr: Attr) -> Table:
    m = attr.m
    n_classes = part.n_classes
    n = len(part.ids)
    key = part.ids * m + attr.codes
    if n_classes * m <= 2 * n + DENSE_SLACK:  # dense counting: O(n), no sort
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
    return Table(attr, part, cls, val, cnt.astype(np.int64, copy=False), starts)


def _unique_pairs(part: Partition, key: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
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


class Context:
    """Validated input plus lazily built, shared partitions, attribute codes and count tables."""

    def __init__(self, data: pd.DataFrame, quasi_ident: Any, sens_att: Any = None, gen: bool = True,
                 class_ids: np.ndarray | None = None) -> None:
        self.qi, self.sa = validate_columns(data, quasi_ident, sens_att)
        self.data = data
        self.gen = bool(gen)
        self._parts: dict[tuple, Partition] = {}
        if class_ids is not None:  # the caller's equivalence_class_ids(data, qi): one partition of a large table
            ids = np.asarray(class_ids, dtype=np.int64)
            if ids.shape != (len(data),):
                raise ValueError("class_ids must hold one class id per row")
            self._parts[tuple(self.qi)] = Partition(ids, np.bincount(ids).astype(np.int64))
        self._attrs: dict[Any, Attr] = {}
        self._tables: dict[tuple, Table] = {}

    def partition(self, cols: tuple) -> Partition:
        if cols not in self._parts:
            ids = equivalence_class_ids(self.data, list(cols))
            self._parts[cols] = Partition(ids, np.bincount(ids).astype(np.int64))
        return self._parts[cols]

    @property
    def qi_partition(self) -> Partition:
        return self.partition(tuple(self.qi))

    def attr(self, name: Any) -> Attr:
        if name not in self._attrs:
            self._attrs[name] = encode_attr(self.data[name], name)
        return self._attrs[name]

    def columns_for(self, name: Any, gen: bool | None = None) -> tuple:
        gen = self.gen if gen is None else gen
        if gen:
            return tuple(self.qi)
        return tuple(self.qi) + tuple(s for s in self.sa if s != name)

    def table(self, name: Any, gen: bool | None = None) -> Table:
        cols = self.columns_for(name, gen)
        key = (name, cols)
        if key not in self._tables:
            self._tables[key] = _build_table(self.partition(cols), self.attr(name))
        return self._tables[key]


class Measured(Protocol):
    """What the models read of a context: :class:`Context` (rows) or the partitioned path's count context."""

    @property
    def sa(self) -> list[Any]: ...

    @property
    def gen(self) -> bool: ...

    @property
    def qi_partition(self) -> Partition: ...

    def table(self, name: Any, gen: bool | None = None) -> Table: ...


def first_extreme(per_sa: list[tuple[Any, float, int]], largest: bool) -> tuple[float, int, Any]:
    """(value, class, attribute) of the first attribute attaining the max (or min) of ``per_sa``."""
    values = [v for _, v, _ in per_sa]
    best = max(values) if largest else min(values)
    for name, v, g in per_sa:
        if v == best or (isinstance(v, float) and math.isnan(v) and math.isnan(best)):
            return best, g, name
    raise AssertionError("unreachable")
