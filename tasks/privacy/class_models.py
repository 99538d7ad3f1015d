"""The anonymity models on a shared context (:class:`ppdp.tasks.privacy.class_table.Context`): k, alpha, the
l-diversities, beta-likeness, delta-disclosure and t-closeness (equal, ordered and hierarchical ground distances), each
returning a :class:`~ppdp.schemas.criteria.base.MeasureDetail`. The pyCANON-shaped functions of
:mod:`ppdp.tasks.privacy.models` and the partitioned path call them; the gates are the criteria's
(:mod:`ppdp.schemas.criteria`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ppdp.schemas.criteria.base import MeasureDetail
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.privacy.class_table import Attr, Measured, Table, first_extreme

_E = np.exp(1)  # pyCANON computes exp(H) as ``np.exp(1) ** H``; the last bit matters before int()

# ----------------------------------------------------------------------------------------------------------
# the models (on a context)
# ----------------------------------------------------------------------------------------------------------


def k_model(ctx: Measured) -> MeasureDetail:
    sizes = ctx.qi_partition.sizes
    g = int(np.argmin(sizes))
    return MeasureDetail(int(sizes[g]), g, None)


def _largest(ctx: Measured, per_class: Callable[[Table], np.ndarray],
             cap: Callable[[Table], float] | None = None) -> MeasureDetail:
    """The largest per-class figure over every sensitive attribute (``cap``: each attribute's figure capped at
    ``cap`` of its table), its class and attribute (ties: first attribute, lowest class)."""
    per_sa = []
    for name in ctx.sa:
        t = ctx.table(name)
        values = per_class(t)
        g = int(np.argmax(values))
        per_sa.append((name, float(values[g]) if cap is None else min(float(values[g]), cap(t)), g))
    value, g, name = first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def alpha_model(ctx: Measured) -> MeasureDetail:
    # max_v len(ec[v]) / len(ec): exact, division is monotonic
    d = _largest(ctx, lambda t: t.class_max(t.cnt) / t.part.sizes)
    return MeasureDetail((d.value, k_model(ctx).value), d.worst_class, d.worst_attribute)


def l_model(ctx: Measured, gen: bool | None = None) -> MeasureDetail:
    per_sa: list[tuple[Any, float, int]] = []
    for name in ctx.sa:
        distinct = ctx.table(name, gen).distinct
        g = int(np.argmin(distinct))
        per_sa.append((name, int(distinct[g]), g))
    value, g, name = first_extreme(per_sa, largest=False)
    return MeasureDetail(value, g, name)


def _class_entropy(t: Table) -> np.ndarray:
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


def _entropy(ctx: Measured) -> tuple[float, int, Any]:
    """(min over classes of e ** entropy, its class, its attribute), computed in pyCANON's order."""
    per_sa, rows = [], []
    for name in ctx.sa:
        ent = _class_entropy(ctx.table(name))
        g = int(np.argmin(ent))
        per_sa.append((name, float(ent[g]), g))
        rows.append(ent)
    _, g, name = first_extreme(per_sa, largest=False)  # least entropy: first SA, then lowest class
    if ctx.gen:  # pyCANON: per class the least entropy over SAs, then np.exp(1) ** that, then the min
        value = np.min(_E ** np.vstack(rows).min(axis=0))
    else:  # pyCANON: per SA the least entropy over classes, then np.exp(1) ** that, then the min
        value = np.min(_E ** np.array([v for _, v, _ in per_sa]))
    return float(value), g, name


def entropy_model(ctx: Measured) -> MeasureDetail:
    value, g, name = _entropy(ctx)
    return MeasureDetail(int(value), g, name)


def entropy_value_model(ctx: Measured) -> MeasureDetail:
    value, g, name = _entropy(ctx)
    return MeasureDetail(value, g, name)


def _class_ratio(t: Table, l_div: int, descending: bool) -> np.ndarray:
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


def _class_c(t: Table, l_div: int, descending: bool) -> np.ndarray:
    """pyCANON's ``floor(r[0] / sum(r[l-1:]) + 1)`` of every class (see :func:`_class_ratio`)."""
    return np.floor(_class_ratio(t, l_div, descending) + 1)


def recursive_ratio_model(ctx: Measured, l_div: int) -> MeasureDetail:
    per_sa = []
    for name in ctx.sa:
        ratio = _class_ratio(ctx.table(name), l_div, descending=True)
        g = int(np.argmax(ratio))
        per_sa.append((name, float(ratio[g]), g))
    value, g, name = first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)


def recursive_model(ctx: Measured, descending: bool = False) -> MeasureDetail:
    l_detail = l_model(ctx, gen=True)  # pyCANON always takes l from the gen=True l-diversity
    l_div = l_detail.value
    if l_div <= 1:
        return MeasureDetail((float("nan"), l_div), l_detail.worst_class, l_detail.worst_attribute)
    per_sa = []
    for name in ctx.sa:
        c = _class_c(ctx.table(name), l_div, descending)
        g = int(np.argmax(c))
        per_sa.append((name, float(c[g]), g))
    c_div, g, name = first_extreme(per_sa, largest=True)
    value = int(c_div) if math.isfinite(c_div) else c_div
    return MeasureDetail((value, l_div), g, name)


def _beta_dist(t: Table) -> np.ndarray:
    """pyCANON's per-class ``max((q - p) / p)`` (absent values give -1, never the max)."""
    p = t.p
    return t.class_max((t.q - p) / p)


def basic_beta_model(ctx: Measured) -> MeasureDetail:
    return _largest(ctx, _beta_dist)


def enhanced_beta_model(ctx: Measured) -> MeasureDetail:
    # max_i min(beta, -ln p_i) == min(beta, max_i -ln p_i)
    return _largest(ctx, _beta_dist, cap=lambda t: float(np.max(-np.log(t.p_all))))


def delta_model(ctx: Measured) -> MeasureDetail:
    # present values only, as pyCANON's ``if x > 0``
    return _largest(ctx, lambda t: t.class_max(np.abs(np.log(t.q / t.p))))


def _emd_equal(t: Table) -> np.ndarray:
    """Equal-distance EMD ``0.5 * sum_v |q_v - p_v|`` of every class; absent values add their table share."""
    n = len(t.part.ids)
    present = np.bincount(t.cls, weights=np.abs(t.q - t.p), minlength=t.n_classes)
    covered = np.bincount(t.cls, weights=t.attr.counts[t.val], minlength=t.n_classes)
    return 0.5 * (present + (n - covered) / n)


def _emd_ordered(t: Table) -> np.ndarray:
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


def _emd(t: Table) -> np.ndarray:
    if t.attr.kind == "numeric":
        return _emd_ordered(t)
    if t.attr.kind == "text":
        return _emd_equal(t)
    raise ValueError(f"t-closeness: sensitive attribute {t.attr.name!r} is neither numeric nor text")


def t_model(ctx: Measured) -> MeasureDetail:
    return _largest(ctx, _emd)


def _hierarchy_levels(hierarchy: Any, attr: Attr) -> list[np.ndarray]:
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


def _emd_hierarchical(t: Table, levels: list[np.ndarray]) -> np.ndarray:
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


def hierarchical_t_model(ctx: Measured, hierarchy: Any, names: list | None = None) -> MeasureDetail:
    names = ctx.sa if names is None else names
    hier = _hierarchies_for(names, hierarchy)
    per_sa = []
    for name in names:
        t = ctx.table(name, gen=True)
        emd = _emd_hierarchical(t, _hierarchy_levels(hier[name], t.attr))
        g = int(np.argmax(emd))
        per_sa.append((name, float(emd[g]), g))
    value, g, name = first_extreme(per_sa, largest=True)
    return MeasureDetail(value, g, name)

MEASURES = {
    "k_anonymity": k_model,
    "alpha_k_anonymity": alpha_model,
    "l_diversity": l_model,
    "entropy_l_diversity": entropy_model,
    "recursive_c_l_diversity": recursive_model,
    "basic_beta_likeness": basic_beta_model,
    "enhanced_beta_likeness": enhanced_beta_model,
    "delta_disclosure": delta_model,
    "t_closeness": t_model,
}
"""The models all_measure_details computes from a context, by pyCANON's function name."""
