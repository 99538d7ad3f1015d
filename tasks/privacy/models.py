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
Every function takes ``data`` (the table, a pandas DataFrame), ``quasi_ident`` and ``sens_att`` and, where
pyCANON has it, ``gen`` (default True), as described here; a function's own Parameters section lists only
what it adds.
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
from typing import Any

import numpy as np
import pandas as pd

from ppdp.schemas.criteria.base import MeasureDetail
from ppdp.tasks.privacy.class_models import (
    MEASURES,
    alpha_model,
    basic_beta_model,
    delta_model,
    enhanced_beta_model,
    entropy_model,
    entropy_value_model,
    hierarchical_t_model,
    k_model,
    l_model,
    recursive_model,
    recursive_ratio_model,
    t_model,
)
from ppdp.tasks.privacy.class_table import Context

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


# ----------------------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------------------


def k_anonymity_detail(data: pd.DataFrame, quasi_ident) -> MeasureDetail:
    """:func:`k_anonymity` with the smallest class's id (``worst_attribute`` is ``None``)."""
    return k_model(Context(data, quasi_ident))


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
    return alpha_model(Context(data, quasi_ident, sens_att, gen))


def alpha_k_anonymity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> tuple[float, int]:
    """alpha and k of (alpha,k)-anonymity.

    Parameters
    ----------
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
    return l_model(Context(data, quasi_ident, sens_att, gen))


def l_diversity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> int:
    """l of (distinct) l-diversity: the fewest distinct sensitive values in one class.

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
    return entropy_model(Context(data, quasi_ident, sens_att, gen))


def entropy_l_diversity(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> int:
    """l of entropy l-diversity, truncated as pyCANON: ``int(min over classes of exp(entropy))``.

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
    return entropy_value_model(Context(data, quasi_ident, sens_att, gen)).value


def recursive_c_l_diversity_detail(data: pd.DataFrame, quasi_ident, sens_att, imp=False, gen=True, *,
                                   descending: bool = False) -> MeasureDetail:
    """:func:`recursive_c_l_diversity` with the class and attribute attaining c (the l-diversity's worst
    class and attribute when c is NaN)."""
    ctx = Context(data, quasi_ident, sens_att, gen)
    detail = recursive_model(ctx, descending)
    if imp and not math.isfinite(detail.value[0]) and detail.value[1] <= 1:
        print(f"c for (c,l)-diversity cannot be calculated as l={detail.value[1]}")
    return detail


def recursive_c_l_diversity(data: pd.DataFrame, quasi_ident, sens_att, imp=False, gen=True, *,
                            descending: bool = False) -> tuple[float, int]:
    """c and l of recursive (c,l)-diversity, as pyCANON computes them.

    Parameters
    ----------
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
    return recursive_ratio_model(Context(data, quasi_ident, sens_att, gen, class_ids), int(l))


def t_closeness_detail(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> MeasureDetail:
    """:func:`t_closeness` with the class and attribute attaining t."""
    return t_model(Context(data, quasi_ident, sens_att, gen))


def t_closeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """t of t-closeness: the largest Earth Mover's Distance between a class's and the table's distribution.

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
    return hierarchical_t_model(Context(data, quasi_ident, sens_att, True), hierarchy)


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
    return delta_model(Context(data, quasi_ident, sens_att, gen))


def delta_disclosure(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """delta of delta-disclosure privacy: ``max over classes and present values of |ln(q_v / p_v)|``.

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
    return basic_beta_model(Context(data, quasi_ident, sens_att, gen))


def basic_beta_likeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """beta of basic beta-likeness: ``max over classes and values of (q_v - p_v) / p_v``.

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
    return enhanced_beta_model(Context(data, quasi_ident, sens_att, gen))


def enhanced_beta_likeness(data: pd.DataFrame, quasi_ident, sens_att, gen=True) -> float:
    """beta of enhanced beta-likeness, as pyCANON computes it.

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




MEASURE_NAMES = (*MEASURES, "entropy_l_diversity_value", "hierarchical_t_closeness")


def all_measure_details(data: pd.DataFrame, quasi_ident, sens_att, gen=True,
                        hierarchies: Mapping | None = None,
                        measures: Iterable[str] | None = None, *,
                        class_ids: np.ndarray | None = None) -> dict[str, MeasureDetail]:
    """Every model's :class:`MeasureDetail` from one shared computation; arguments and keys as in
    :func:`all_measures`. ``class_ids``: ``equivalence_class_ids(data, quasi_ident)`` when the caller already has
    it (a large table is then partitioned once for every model and the caller's own measures)."""
    ctx = Context(data, quasi_ident, sens_att, gen, class_ids)
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
            out[name] = entropy_value_model(ctx)
        elif name == "hierarchical_t_closeness":
            names = [s for s in ctx.sa if hierarchies and s in hierarchies]
            if not names:
                raise ValueError("hierarchical_t_closeness needs the hierarchy of a sensitive attribute")
            out[name] = hierarchical_t_model(ctx, hierarchies, names)
        else:
            out[name] = MEASURES[name](ctx)
    return out


def all_measures(data: pd.DataFrame, quasi_ident, sens_att, gen=True,
                 hierarchies: Mapping | None = None, measures: Iterable[str] | None = None, *,
                 class_ids: np.ndarray | None = None) -> dict[str, Any]:
    """Every model at once, sharing one partition into classes and one count table per sensitive attribute.

    Parameters
    ----------
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
