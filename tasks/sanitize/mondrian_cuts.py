"""Mondrian's algorithm (LeFevre, DeWitt & Ramakrishnan, ICDE 2006), pure NumPy over :class:`Dimension` objects:
the greedy partitioning (:func:`mondrian_partition`, strict and relaxed, on records or weighted distinct tuples),
each partition's published value (:func:`partition_labels`), one strict round decided from marginal counts
(:func:`cut_round`, :func:`apply_cuts`: a distributed run; :func:`cut_marginals`: the next round's marginals from
pairwise counts, so that one counting pass decides two rounds), and the dimension of one quasi-identifier column
(:func:`dimension`). The sanitizer is :class:`ppdp.tasks.sanitize.mondrian.Mondrian`; see that module's docstring
for the reading of the paper."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import ColumnKind
from ppdp.schemas.hierarchy import ROOT, HierarchySpec
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.encoding import as_numbers
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.hierarchy import Hierarchy, build_hierarchy, text_of, validate_hierarchy
from ppdp.tasks.core.labels import column_label

Mode = Literal["strict", "relaxed"]


# -- dimensions ---------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Dimension:
    """One quasi-identifier as Mondrian sees it (build with :func:`numeric_dimension` or
    :func:`hierarchy_dimension`).

    Attributes
    ----------
    kind : {"range", "hierarchy"}
        ``range``: ordered values cut at the median (numbers, dates, an ordinal column's ranks); ``hierarchy``:
        categories cut into the children of the current hierarchy node.
    code : ndarray of int64, shape (n,)
        ``range``: each record's dense rank among the distinct present values (0..U-1), U for a missing value.
        ``hierarchy``: each record's hierarchy table row, T (the number of table rows) for a missing value.
    values : ndarray of float, shape (U,)
        ``range``: the distinct present values, ascending (the widths are measured on them).
    texts : ndarray of object, shape (U,) or (T + 1, height + 1)
        ``range``: how each distinct value is published; ``hierarchy``: the hierarchy table with one more row
        for a missing value (None below the root, ``*`` at the root).
    nodes : ndarray of int64, shape (T + 1, height + 1)
        ``hierarchy``: each table row's node id at each level (a missing value is a leaf of its own right under
        the root).
    leaves : ndarray of int64, shape (T + 1, height + 1)
        ``hierarchy``: how many leaves (table rows, plus the missing value if any) lie under each row's node at
        each level.
    """

    kind: Literal["range", "hierarchy"]
    code: np.ndarray
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    texts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=object))
    nodes: np.ndarray | None = None
    leaves: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.code)


def numeric_dimension(values: np.ndarray, texts: np.ndarray | None = None) -> Dimension:
    """A ``range`` dimension from numbers (NaN = missing).

    Parameters
    ----------
    values : ndarray of float, shape (n,)
        The records' values (numbers, dates as nanoseconds, an ordinal column's category ranks); NaN missing.
    texts : ndarray of object, shape (n,), optional
        How each record's value is written when published alone or as an interval end (default: the number as
        :func:`ppdp.tasks.core.hierarchy.text_of` writes it).
    """
    x = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(x)
    uniques, first, inverse = np.unique(x[present], return_index=True, return_inverse=True)
    code = np.full(len(x), len(uniques), dtype=np.int64)
    code[present] = inverse.reshape(-1)
    rows = np.flatnonzero(present)[first]
    if texts is None:
        shown = text_of(pd.Series(uniques)).to_numpy(dtype=object)
    else:
        shown = np.asarray(texts, dtype=object)[rows]
    return Dimension(kind="range", code=code, values=uniques, texts=shown)


def hierarchy_dimension(h: Hierarchy, codes: np.ndarray) -> Dimension:
    """A ``hierarchy`` dimension from a hierarchy and the records' table rows (-1 = missing, as
    :meth:`Hierarchy.codes` gives them)."""
    codes = np.asarray(codes, dtype=np.int64)
    t, height = len(h.table), h.height
    code = np.where(codes < 0, t, codes)
    missing = bool((codes < 0).any())
    nodes = np.empty((t + 1, height + 1), dtype=np.int64)
    leaves = np.empty((t + 1, height + 1), dtype=np.int64)
    for level in range(height + 1):
        ids = h.level_codes(level)
        nodes[:t, level] = ids
        # a missing value: a node of its own below the root (a column with no value at all has no other node)
        nodes[t, level] = (int(ids.max()) + 1 if t else 0) if level < height else (ids[0] if t else 0)
        leaves[:t, level] = h.leaves(level)
        leaves[t, level] = 1
    leaves[:, height] = t + int(missing)
    texts = np.empty((t + 1, height + 1), dtype=object)
    texts[:t] = h.table
    texts[t] = None
    texts[t, height] = ROOT
    return Dimension(kind="hierarchy", code=code, texts=texts, nodes=nodes, leaves=leaves)


# -- the algorithm -------------------------------------------------------------------------------------
@dataclass
class _Cuts:
    """One dimension's candidate cut of every active partition."""

    width: np.ndarray  # normalized width per partition
    strict: np.ndarray  # bool: an allowable strict cut exists
    relaxed: np.ndarray  # bool: an allowable relaxed cut exists
    side: Any  # side(selected records, relaxed per partition) -> int64 side of each selected record
    median: np.ndarray | None = None  # range: each partition's median rank
    below_right: np.ndarray | None = None  # range: True where the strict cut is "< median | >= median"
    level: np.ndarray | None = None  # hierarchy: the level of the children a strict cut splits each partition into
    groups: tuple[np.ndarray, np.ndarray] | None = None  # hierarchy: (partition, child node id) of each child, sorted


def mondrian_partition(dimensions: list[Dimension], k: int, mode: Mode = "strict",
                       weights: np.ndarray | None = None) -> np.ndarray:
    """Mondrian's greedy partitioning: every partition holds at least k records.

    Parameters
    ----------
    dimensions : list of Dimension
        The quasi-identifiers, all over the same n records.
    k : int
        Smallest partition, at least 1, at most n.
    mode : {"strict", "relaxed"}
        ``strict``: partitions do not overlap in value space: a range dimension is cut at the median value with
        every record equal to the median on one side (``<= median | > median``, or ``< median | >= median``
        when only that one leaves k records on each side; the more balanced of the two when both do); a
        hierarchy dimension is cut into the children of the current node, allowable only if every child holds
        k records. ``relaxed``: where a partition has no allowable strict cut, a range dimension whose
        values are not all equal may be cut into halves in value order (records equal to the median divided
        between the sides, floor(n/2) on the left), allowable when the partition holds 2k records; a hierarchy
        dimension may keep the children with k records and pool the others (a pool of fewer than k joins the
        smallest of them), allowable when that leaves two parts or more.
    weights : ndarray of int, shape (n,), optional
        Strict mode only: record i stands for ``weights[i]`` (at least 1) identical records, and every count
        (partition sizes, the median's position, the ``>= k`` tests, the children's sizes) counts weights. Strict
        cuts never separate records with equal codes, so running on the distinct code tuples with their counts
        gives each of them the partition of its records in the run on the rows (relaxed cuts do separate
        them: ValueError). Sums of weights must stay below 2**53.

    Returns
    -------
    ndarray of int64, shape (n,)
        Dense partition labels, numbered in the order of each partition's first record.

    Notes
    -----
    Each round cuts every partition that still has an allowable cut, on the dimension with the widest
    normalized range among those with one (ties: the first dimension); strict cuts come first in relaxed mode
    too, so the relaxed partition refines the strict one (it has at least as many partitions). Normalized
    widths: a range dimension's (max - min) of the partition over (max - min) of the
    whole table; a hierarchy dimension's number of leaves under the partition's lowest common ancestor over
    the number of leaves of the hierarchy. A missing value is a value of its own: in a range dimension it
    ranks above every number and a partition mixing missing and present values has width 1; in a hierarchy
    it is a leaf right under the root.

    The rounds work on all active partitions at once (sorts and segment reductions over the records), so the
    Python loop runs once per round and dimension: about log2(n / k) rounds for range cuts.
    """
    if not dimensions:
        raise ValueError("Mondrian needs at least one dimension")
    n = dimensions[0].n
    if any(d.n != n for d in dimensions):
        raise ValueError("every dimension must hold the same records")
    w = None if weights is None else _check_weights(weights, n, mode)
    total = n if w is None else int(w.sum())
    if k < 1 or total < k:
        raise ValueError(f"Mondrian needs 1 <= k <= n, got k = {k} and n = {total}")
    if mode not in ("strict", "relaxed"):
        raise ValueError(f"unknown mode {mode!r}")
    relaxed = mode == "relaxed"
    part = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    next_id = 1
    while rows.size:
        rows, c, side = _round(dimensions, part, rows, k, w, relaxed)
        if not rows.size:
            break
        side -= side.min()
        _, new = np.unique(c * (int(side.max()) + 1) + side, return_inverse=True)
        new = new.reshape(-1)
        part[rows] = next_id + new
        next_id += int(new.max()) + 1
    return _first_seen(part)


def _round(dimensions: list[Dimension], part: np.ndarray, rows: np.ndarray, k: int, w: np.ndarray | None,
           relaxed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One round of :func:`mondrian_partition` over the active ``rows``: the rows of the partitions cut, each one's
    partition index in the round and its side of the cut."""
    ids, c = np.unique(part[rows], return_inverse=True)
    c = c.reshape(-1)
    size = np.bincount(c, minlength=len(ids))
    wr = None if w is None else w[rows]
    wsize = None if wr is None else _sums(c, wr, len(ids))
    cuts = [_cuts(d, rows, c, size, k, wr, wsize) for d in dimensions]
    strict_w = np.stack([np.where(x.strict, x.width, -1.0) for x in cuts], axis=1)
    choice = np.argmax(strict_w, axis=1)
    ok = strict_w.max(axis=1) >= 0
    use_relaxed = np.zeros(len(ids), dtype=bool)
    if relaxed:
        relaxed_w = np.stack([np.where(x.relaxed, x.width, -1.0) for x in cuts], axis=1)
        use_relaxed = ~ok & (relaxed_w.max(axis=1) >= 0)
        choice = np.where(use_relaxed, np.argmax(relaxed_w, axis=1), choice)
        ok |= use_relaxed
    split = ok[c]
    side = np.zeros(len(rows), dtype=np.int64)
    for j, x in enumerate(cuts):
        sel = split & (choice[c] == j)
        if sel.any():
            side[sel] = x.side(sel, use_relaxed)
    return rows[split], c[split], side[split]


def partition_labels(dimension: Dimension, labels: np.ndarray) -> np.ndarray:
    """The published value of each partition in one dimension (object array, one per partition 0..G-1).

    ``range``: ``[min-max]`` of the partition's present values, or the value alone when min == max; ``hierarchy``:
    the label of the lowest common ancestor of its values (``*`` at the root). A partition holding only missing
    values publishes None (missing); one mixing missing and present values publishes ``*``.
    """
    labels = np.asarray(labels, dtype=np.int64)
    g = int(labels.max()) + 1 if labels.size else 0
    size = np.bincount(labels, minlength=g)
    if dimension.kind == "range":
        lo, hi, _, _ = _range_stats(dimension.code, labels, size)
        u = len(dimension.values)
        out = np.empty(g, dtype=object)
        texts = np.append(dimension.texts, np.array([None], dtype=object))
        for i in range(g):  # one per partition: labels are short strings
            a, b = int(lo[i]), int(hi[i])
            if a == u:
                out[i] = None
            elif b == u:
                out[i] = ROOT
            elif a == b:
                out[i] = texts[a]
            else:
                out[i] = f"[{texts[a]}-{texts[b]}]"
        return out
    level, first = _lca_of(dimension, dimension.code, labels, size)
    return dimension.texts[first, level]


# -- the first rounds from marginal counts (a distributed run) -----------------------------------------
@dataclass(frozen=True)
class Cut:
    """How :func:`cut_round` cuts one partition in one strict round (:func:`apply_cuts` sends the records).

    Attributes
    ----------
    dim : int
        The index of the dimension cut.
    kind : {"range", "hierarchy"}
        That dimension's kind.
    median : int
        ``range``: the median rank; a record goes right (side 1) when its rank is > median, or >= median when
        ``below_right``. -1 for a hierarchy cut.
    below_right : bool
        ``range``: the cut is ``< median | >= median`` (else ``<= median | > median``).
    level : int
        ``hierarchy``: the records are split by their node id at this level (``d.nodes[code, level]``, the level
        below the partition's lowest common ancestor). -1 for a range cut.
    children : tuple of int
        ``hierarchy``: the node ids at ``level`` that the partition's records have, ascending; a record goes to
        side i when its node id is ``children[i]``.
    """

    dim: int
    kind: Literal["range", "hierarchy"]
    median: int = -1
    below_right: bool = False
    level: int = -1
    children: tuple[int, ...] = ()

    @property
    def parts(self) -> int:
        """How many partitions the cut makes."""
        return 2 if self.kind == "range" else len(self.children)


def cut_round(dimensions: Sequence[Dimension], marginals: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
              sizes: np.ndarray, k: int) -> list[Cut | None]:
    """One strict Mondrian round of every partition 0..P-1, from marginal counts only.

    Each round of :func:`mondrian_partition` (strict) decides a partition's cut from the partition's count of
    records at each code of each dimension, so a cluster that can count but not gather the records runs the
    first rounds here (the counts of round r come from the records labelled by :func:`apply_cuts` in round
    r-1, starting with one partition 0) and finishes each partition, once small enough, with
    :func:`mondrian_partition` on its own records (or its distinct code tuples with their counts, ``weights``),
    given the dimensions' global metadata: ``dataclasses.replace(d, code=d.code[rows])``. The result is the
    partition of one :func:`mondrian_partition` call on the whole table (labels numbered differently).

    Parameters
    ----------
    dimensions : sequence of Dimension
        The dimensions' global metadata, as built over the whole table: ``values`` of a range dimension (its
        span normalizes the widths, its length U is the missing rank), ``nodes``/``leaves`` of a hierarchy
        (``leaves[0, -1]``, the leaf count, normalizes them); ``code`` is not read (it may be empty).
    marginals : sequence of (part, code, count), one per dimension
        Aligned int arrays: a partition id (0..P-1), a code of the dimension (a rank 0..U, a hierarchy table
        row 0..T) and how many records of the partition have it (or how much weight). Any order; zero counts
        are ignored; a (partition, code) pair may repeat (the counts add up).
    sizes : ndarray of int, shape (P,)
        Each partition's number of records (at least 1): each dimension's counts of a partition sum to it.
    k : int
        Smallest partition, at least 1.

    Returns
    -------
    list of Cut or None, length P
        The cut that :func:`mondrian_partition` (strict) makes of each partition in this round: the dimension
        with the widest normalized range among those with an allowable cut (ties: the first), its median and
        side rule or its children; None where no allowable strict cut exists (the partition is final).
    """
    if not dimensions:
        raise ValueError("Mondrian needs at least one dimension")
    if len(marginals) != len(dimensions):
        raise ValueError(f"one marginal per dimension: {len(dimensions)} dimension(s), {len(marginals)} marginal(s)")
    if k < 1:
        raise ValueError(f"Mondrian needs k >= 1, got k = {k}")
    sizes = np.asarray(sizes)
    if sizes.ndim != 1 or (sizes.size and sizes.dtype.kind not in "iu"):
        raise ValueError("sizes must be a 1-D array of integer counts")
    sizes = sizes.astype(np.int64, copy=False)
    p = len(sizes)
    if p and int(sizes.min()) < 1:
        raise ValueError("every partition must hold at least one record")
    if not p:
        return []
    cuts = [_marginal_cuts(j, d, marginal, sizes, k)
            for j, (d, marginal) in enumerate(zip(dimensions, marginals, strict=True))]
    # as in mondrian_partition: the widest allowable dimension, ties to the first
    strict_w = np.stack([np.where(x.strict, x.width, -1.0) for x in cuts], axis=1)
    choice = np.argmax(strict_w, axis=1)
    ok = strict_w.max(axis=1) >= 0
    out: list[Cut | None] = [None] * p
    for j, x in enumerate(cuts):
        mine = np.flatnonzero(ok & (choice == j)).tolist()
        if x.median is not None and x.below_right is not None:
            for i in mine:
                out[i] = Cut(dim=j, kind="range", median=int(x.median[i]), below_right=bool(x.below_right[i]))
        elif x.level is not None and x.groups is not None:
            owner, child = x.groups
            bounds = np.searchsorted(owner, np.arange(p + 1))
            for i in mine:
                out[i] = Cut(dim=j, kind="hierarchy", level=int(x.level[i]),
                             children=tuple(child[bounds[i]:bounds[i + 1]].tolist()))
    return out


def _marginal_cuts(j: int, d: Dimension, marginal: tuple[np.ndarray, np.ndarray, np.ndarray], sizes: np.ndarray,
                   k: int) -> _Cuts:
    """Dimension ``j``'s candidate cuts of every partition from its checked marginal (:func:`cut_round`)."""
    p = len(sizes)
    part, code, count = (np.asarray(a) for a in marginal)
    if not (part.ndim == code.ndim == count.ndim == 1 and len(part) == len(code) == len(count)):
        raise ValueError(f"dimension {j}: the marginal's partition, code and count arrays must be aligned 1-D")
    if any(a.size and a.dtype.kind not in "iu" for a in (part, code, count)):
        raise ValueError(f"dimension {j}: the marginal must hold integers")
    if count.size and int(count.min()) < 0:
        raise ValueError(f"dimension {j}: negative count in the marginal")
    keep = count > 0
    part, code, count = (a[keep].astype(np.int64, copy=False) for a in (part, code, count))
    if part.size and (int(part.min()) < 0 or int(part.max()) >= p):
        raise ValueError(f"dimension {j}: partition id out of 0..{p - 1} in the marginal")
    top = len(d.values) if d.kind == "range" else (d.nodes.shape[0] - 1 if d.nodes is not None else -1)
    if d.kind == "hierarchy" and (d.nodes is None or d.leaves is None):
        raise ValueError(f"dimension {j}: a hierarchy dimension needs its nodes and leaves")
    if code.size and (int(code.min()) < 0 or int(code.max()) > top):
        raise ValueError(f"dimension {j}: code out of 0..{top} in the marginal")
    if not np.array_equal(_sums(part, count, p), sizes):
        raise ValueError(f"dimension {j}: the marginal counts of some partition do not add up to its size")
    size = np.bincount(part, minlength=p)  # the marginal's entries per partition: its "records"
    return _cuts(replace(d, code=code), np.arange(len(code)), part, size, k, count, sizes)


def apply_cuts(cuts: Sequence[Cut | None], part: np.ndarray, codes: Sequence[np.ndarray],
               dimensions: Sequence[Dimension]) -> np.ndarray:
    """Each record's partition after a round of :func:`cut_round`.

    The new ids are dense and follow from the cuts alone, so machines applying the same cuts to different
    records agree: partition i's parts get ids ``first[i] .. first[i] + parts - 1`` in order of side (range:
    left then right; hierarchy: ``children`` in order; no cut: one part), ``first`` counting the parts of the
    partitions before i.

    Parameters
    ----------
    cuts : sequence of Cut or None, length P
        From :func:`cut_round`.
    part : ndarray of int, shape (m,)
        Each record's partition 0..P-1 in the round that was cut.
    codes : sequence of ndarray of int, shape (m,), one per dimension
        Each record's code in each dimension (``Dimension.code`` of these records).
    dimensions : sequence of Dimension
        The dimensions' global metadata (a hierarchy's ``nodes``).

    Returns
    -------
    ndarray of int64, shape (m,)
        Each record's new partition id.
    """
    part = np.asarray(part)
    if part.ndim != 1 or (part.size and part.dtype.kind not in "iu"):
        raise ValueError("part must be a 1-D array of partition ids")
    part = part.astype(np.int64, copy=False)
    p = len(cuts)
    if part.size and (int(part.min()) < 0 or int(part.max()) >= p):
        raise ValueError(f"partition id out of 0..{p - 1}")
    if len(codes) != len(dimensions):
        raise ValueError(f"one code array per dimension: {len(dimensions)} dimension(s), {len(codes)} array(s)")
    for i, x in enumerate(cuts):
        if x is not None and not (0 <= x.dim < len(dimensions) and dimensions[x.dim].kind == x.kind and x.parts):
            raise ValueError(f"the cut of partition {i} does not fit the dimensions")
    parts = np.array([1 if x is None else x.parts for x in cuts], dtype=np.int64)
    dim = np.array([-1 if x is None else x.dim for x in cuts], dtype=np.int64)
    median = np.array([0 if x is None else x.median for x in cuts], dtype=np.int64)
    below_right = np.array([x is not None and x.below_right for x in cuts], dtype=bool)
    level = np.array([0 if x is None else x.level for x in cuts], dtype=np.int64)
    out = _starts(parts)[part]
    for j, d in enumerate(dimensions):
        sel = (dim == j)[part]
        if not sel.any():
            continue
        code = np.asarray(codes[j])
        if code.shape != part.shape:
            raise ValueError(f"dimension {j}: one code per record, shape {part.shape}; got shape {code.shape}")
        ps, cs = part[sel], code[sel].astype(np.int64, copy=False)
        if d.kind == "range":
            out[sel] += np.where(below_right[ps], cs >= median[ps], cs > median[ps])
            continue
        if d.nodes is None:
            raise ValueError(f"dimension {j}: a hierarchy dimension needs its nodes")
        owners = np.flatnonzero(dim == j)
        children = [np.asarray(cast(Cut, cuts[i]).children, dtype=np.int64) for i in owners.tolist()]
        top = int(d.nodes.max()) + 1
        keys = np.repeat(owners, parts[owners]) * top + np.concatenate(children)
        rank = np.concatenate([np.arange(len(a)) for a in children])
        by_key = np.argsort(keys, kind="stable")
        keys, rank = keys[by_key], rank[by_key]
        query = ps * top + d.nodes[cs, level[ps]]
        at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
        if not np.array_equal(keys[at], query):
            raise ValueError(f"dimension {j}: a record falls in a child node its partition's cut does not list")
        out[sel] += rank[at]
    return out


Marginal = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A marginal count table of :func:`cut_round`: aligned (partition, code, count) arrays."""
Pairwise = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A pairwise count table of dimensions (a, b), a < b: aligned (partition, code in a, code in b, count) arrays."""


def code_space(d: Dimension) -> int:
    """How many codes a dimension has (a range: its U ranks and the missing rank; a hierarchy: its T table rows and
    the missing row)."""
    if d.kind == "range":
        return len(d.values) + 1
    if d.nodes is None:
        raise ValueError("a hierarchy dimension needs its nodes")
    return int(d.nodes.shape[0])


def cut_marginals(dimensions: Sequence[Dimension], cuts: Sequence[Cut | None], marginals: Sequence[Marginal],
                  pairs: dict[tuple[int, int], Pairwise]) -> list[Marginal]:
    """The marginal counts of the partitions after a round (:func:`apply_cuts`' ids), from counts of the partitions
    before it, so that the next round is decided without counting the records again.

    A partition not cut keeps its marginals. The children of a partition cut on dimension a get their marginal on
    a from the partition's marginal on a, and on each other dimension b from the partition's pairwise counts of
    (a, b): each entry goes to the child its code in a sends it to. A child's marginals are whole when its parent's
    pairs hold (a, b) for every b (and its own marginals were whole): the caller knows which parents' pairs were
    counted; the others' children get partial marginals, which :func:`cut_round` refuses.

    Parameters
    ----------
    dimensions, cuts
        As :func:`apply_cuts` (the round's cuts of partitions 0..P-1).
    marginals : sequence of (part, code, count), one per dimension
        The partitions' marginals before the round (as :func:`cut_round` takes them).
    pairs : dict of (a, b) -> (part, code in a, code in b, count), a < b
        Pairwise counts of some partitions (a partition missing from a pair's table has no entry in it).

    Returns
    -------
    list of (part, code, count), one per dimension
        The marginals after the round (a (partition, code) pair may repeat: the counts add up).
    """
    dims = list(dimensions)
    cut_dim = np.array([-1 if c is None else c.dim for c in cuts], dtype=np.int64)

    def sent(part: np.ndarray, j: int, code: np.ndarray) -> np.ndarray:
        """The new partition of entries whose partition is not cut or cut on dimension j (code: their code in j)."""
        blank = np.zeros(len(part), dtype=np.int64)
        return apply_cuts(cuts, part, [code if i == j else blank for i in range(len(dims))], dims)

    out: list[Marginal] = []
    for b in range(len(dims)):
        part, code, count = (np.asarray(a, dtype=np.int64) for a in marginals[b])
        keep = (cut_dim[part] == -1) | (cut_dim[part] == b)
        pieces = [(sent(part[keep], b, code[keep]), code[keep], count[keep])]
        for (x, y), table in pairs.items():
            if b not in (x, y) or x == y:
                continue
            part, cx, cy, count = (np.asarray(t, dtype=np.int64) for t in table)
            a, ca, cb = (x, cx, cy) if y == b else (y, cy, cx)
            keep = cut_dim[part] == a
            pieces.append((sent(part[keep], a, ca[keep]), cb[keep], count[keep]))
        out.append(cast(Marginal, tuple(np.concatenate([p[i] for p in pieces]) for i in range(3))))
    return out


# ---------------------------------------------------------------------------------------------------- internals


def _first_seen(labels: np.ndarray) -> np.ndarray:
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def _starts(size: np.ndarray) -> np.ndarray:
    return np.cumsum(size) - size


def _sums(c: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """Per segment 0..m-1, the sum of the weights of its records (int64; exact below 2**53)."""
    return np.bincount(c, weights=w, minlength=m).astype(np.int64)


def _check_weights(weights: np.ndarray, n: int, mode: str) -> np.ndarray:
    if mode == "relaxed":
        raise ValueError("relaxed Mondrian splits equal records: it needs the rows, not weighted distinct records")
    w = np.asarray(weights)
    if w.shape != (n,):
        raise ValueError(f"weights must hold one count per record, shape ({n},); got shape {w.shape}")
    if w.dtype.kind not in "iu":
        raise ValueError(f"weights must be integers, got dtype {w.dtype}")
    if n and int(w.min()) < 1:
        raise ValueError("every weight must be at least 1")
    return w.astype(np.int64, copy=False)


def _range_stats(code: np.ndarray, c: np.ndarray, size: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per partition: lowest and highest rank; the records sorted by (partition, rank, record); the sort keys."""
    top = int(code.max()) + 1 if code.size else 1
    key = c * top + code
    order = np.argsort(key, kind="stable")
    starts = _starts(size)
    lo = code[order[starts]]
    hi = code[order[starts + size - 1]]
    return lo, hi, order, key[order]


def _lca_of(d: Dimension, code: np.ndarray, c: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per partition: the level of its values' lowest common ancestor and one of its records' table rows."""
    assert d.nodes is not None
    order = np.argsort(c, kind="stable")
    starts = _starts(size)
    sorted_code = code[order]
    level = np.zeros(len(size), dtype=np.int64)
    for lv in range(d.nodes.shape[1]):
        ids = d.nodes[sorted_code, lv]
        level += np.minimum.reduceat(ids, starts) != np.maximum.reduceat(ids, starts)
    return level, sorted_code[starts]


def _cuts(d: Dimension, rows: np.ndarray, c: np.ndarray, size: np.ndarray, k: int,
          w: np.ndarray | None = None, wsize: np.ndarray | None = None) -> _Cuts:
    """One dimension's cuts of the active partitions. ``rows``: the active records; ``c``: each one's partition
    0..A-1; ``size``: records per partition; ``w``, ``wsize``: weighted records (strict only): each active record's
    weight and each partition's weight, which then replace the record counts."""
    if d.kind == "range":
        return _range_cuts(d, rows, c, size, k, w, wsize)
    return _hierarchy_cuts(d, rows, c, size, k, w)


def _range_cuts(d: Dimension, rows: np.ndarray, c: np.ndarray, size: np.ndarray, k: int,
                w: np.ndarray | None = None, wsize: np.ndarray | None = None) -> _Cuts:
    code = d.code[rows]
    u = len(d.values)  # the span and the missing rank come from the values, not from the records present
    lo, hi, order, sorted_key = _range_stats(code, c, size)
    starts = _starts(size)
    top = int(code.max()) + 1 if code.size else 1
    if w is None or wsize is None:
        total = size
        med = code[order[starts + (size - 1) // 2]]
        base = np.arange(len(size)) * top + med
        le = np.searchsorted(sorted_key, base, side="right") - starts  # records <= median
        lt = np.searchsorted(sorted_key, base, side="left") - starts  # records < median
    else:  # weighted records: positions and counts in weight (cum[i]: weight of the sorted records before i)
        total = wsize
        cum = np.zeros(len(code) + 1, dtype=np.int64)
        np.cumsum(w[order], out=cum[1:])
        before = cum[starts]
        med = code[order[np.searchsorted(cum, before + (total - 1) // 2, side="right") - 1]]
        base = np.arange(len(size)) * top + med
        le = cum[np.searchsorted(sorted_key, base, side="right")] - before
        lt = cum[np.searchsorted(sorted_key, base, side="left")] - before
    ok_le = (le >= k) & (total - le >= k)
    ok_lt = (lt >= k) & (total - lt >= k)
    use_lt = ok_lt & (~ok_le | (np.minimum(lt, total - lt) > np.minimum(le, total - le)))
    width = np.zeros(len(size))
    if u:
        span = float(d.values[-1] - d.values[0])
        present = lo < u
        if span > 0:
            width[present] = (d.values[np.minimum(hi[present], u - 1)] - d.values[lo[present]]) / span
        width[present & (hi == u)] = 1.0
    relaxed = (total >= 2 * k) & (lo < hi)
    position = np.empty(len(code), dtype=np.int64)
    position[order] = np.arange(len(code)) - np.repeat(starts, size)

    def side(sel: np.ndarray, use_relaxed: np.ndarray) -> np.ndarray:
        cs = c[sel]
        strict_side = np.where(use_lt[cs], code[sel] >= med[cs], code[sel] > med[cs])
        return np.where(use_relaxed[cs], position[sel] >= size[cs] // 2, strict_side).astype(np.int64)

    return _Cuts(width=width, strict=ok_le | ok_lt, relaxed=relaxed, side=side, median=med, below_right=use_lt)


def _hierarchy_cuts(d: Dimension, rows: np.ndarray, c: np.ndarray, size: np.ndarray, k: int,
                    w: np.ndarray | None = None) -> _Cuts:
    assert d.nodes is not None and d.leaves is not None
    code = d.code[rows]
    level, first = _lca_of(d, code, c, size)
    width = d.leaves[first, level] / float(d.leaves[0, -1])
    below = np.maximum(level - 1, 0)
    child = d.nodes[code, below[c]]
    top = int(d.nodes.max()) + 1
    groups, inverse, count = np.unique(c * top + child, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if w is not None:
        count = _sums(inverse, w, len(groups))
    owner = groups // top
    a = len(size)
    smallest = np.full(a, np.iinfo(np.int64).max)
    np.minimum.at(smallest, owner, count)
    big = count >= k
    n_big = np.bincount(owner, weights=big, minlength=a)
    small = np.bincount(owner, weights=np.where(big, 0, count), minlength=a)
    strict = (level >= 1) & (smallest >= k)
    relaxed = (level >= 1) & ((n_big >= 2) | ((n_big == 1) & (small >= k)))
    # relaxed: the smallest big child of each partition (receives a pool of fewer than k)
    big_groups = np.flatnonzero(big)
    by_size = big_groups[np.lexsort((big_groups, count[big_groups], owner[big_groups]))]
    first_big = np.full(a, -1, dtype=np.int64)
    head = np.r_[True, owner[by_size][1:] != owner[by_size][:-1]] if by_size.size else np.zeros(0, dtype=bool)
    first_big[owner[by_size[head]]] = by_size[head]
    pool = len(groups)  # side of a pool of k or more small children

    def side(sel: np.ndarray, use_relaxed: np.ndarray) -> np.ndarray:
        g = inverse[sel]
        cs = c[sel]
        joined = np.where(small[cs] >= k, pool, first_big[cs])
        return np.where(use_relaxed[cs] & ~big[g], joined, g).astype(np.int64)

    return _Cuts(width=width, strict=strict, relaxed=relaxed, side=side, level=below,
                 groups=(groups // top, groups % top))




def dimension(frame: pd.DataFrame, roles: Roles, name: str, spec: HierarchySpec | None) -> Dimension:
    """The Mondrian dimension of one quasi-identifier (see :class:`Mondrian`)."""
    tag = roles.get(name)
    # column names are unique: get_loc gives an int
    position = int(tag.position) + 1 if tag.position is not None else int(cast(int, frame.columns.get_loc(name))) + 1
    series = frame[name]
    if spec is None and tag.kind is ColumnKind.numeric:
        values = as_numbers(series)
        bad = np.isnan(values) & series.notna().to_numpy()
        if bad.any():
            raise InputError(f"{column_label(position, name)}: {int(bad.sum())} row(s) hold a value that is not a "
                             f"number (first at data row {int(np.flatnonzero(bad)[0]) + 1})")
        return numeric_dimension(values, text_of(series).to_numpy(dtype=object))
    h = build_hierarchy(series, spec, kind=tag.kind, column=name, position=position, order=tag.order)
    validate_hierarchy(h, series, position)
    codes = h.codes(series, position)
    if spec is None and tag.kind is ColumnKind.ordinal and h.bounds is not None:
        rank = np.full(len(codes), np.nan)  # missing: NaN (a column with no value at all has no rank)
        rank[codes >= 0] = h.bounds[codes[codes >= 0], 0, 0]
        return numeric_dimension(rank, np.append(h.table[:, 0], np.array([None], dtype=object))[codes])
    return hierarchy_dimension(h, codes)
