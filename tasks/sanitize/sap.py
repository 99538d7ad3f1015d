"""SAP, the Suppression Algorithm for Privacy: BORE finds, per class, the attribute values most typical of the
class, and a share of them (S1) or of the class values (S2) is published as missing.

Follows Peters, *Avoiding the Destruction of Data-Mining Utility in Privacy Preserving Data Publishing* (2011):
chapter 3 (SAP and BORE, equations 3.1-3.2, Figure 3.1), section 4.2 (S1 applies SAP to the quasi-identifiers,
S2 to the sensitive attribute value) and appendix A (``get-rules``, ``sap-S1.clj`` Figure A.3, ``sap-S2.clj``
Figure A.4, ``knn.clj`` Figure A.5), which were read for the details below.

The algorithm part (the first section) works on a frame, a label array and a seeded generator and returns the
cells to suppress; the sanitizer (:class:`Sap`, at the end) publishes them as missing (the paper's ``?``). The
release's privacy unit is ``equivalence_class``: SAP makes no k claim of its own, so k (or the prosecutor risk)
is whatever the published table's smallest class over the quasi-identifiers gives, a suppressed cell being a
value of its own there, as in :func:`ppdp.tasks.core.groups.equivalence_class_ids`.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import numpy as np
import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Domain, FloatRange, MethodParams, Protection, Treatment
from ppdp.schemas.params.sap import SapParams
from ppdp.schemas.reports import Roles
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.sanitize.base import Release, Sanitizer

# -- algorithm --

__all__ = [
    "Sap",
    "bore_ranks",
    "bore_rules",
    "share",
    "suppress_s1",
    "suppress_s2",
]

_TOLERANCE = 1e-9  # share(): ceil(p * m) computed as ceil(p * m - 1e-9), so 0.3 * 10 gives 3, not 4


def share(rate: float, m: int) -> int:
    """How many of ``m`` values a rate suppresses: ``ceil(rate * m)``, as ``si-percent`` does (``Math/ceil``).

    A tolerance of 1e-9 keeps floating point from rounding an exact product up (0.3 * 10 is 3.0000000000000004
    in binary floating point; the appendix code would suppress 4 of 10 there, this function 3).
    """
    if m <= 0 or rate <= 0:
        return 0
    return min(m, math.ceil(rate * m - _TOLERANCE))


def _classes(labels: pd.Series) -> tuple[np.ndarray, list[object]]:
    """Codes 0..C-1 of the labels (classes in sort order when they sort, else in order of appearance)."""
    try:
        codes, uniques = pd.factorize(labels, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(labels, sort=False)
    return np.asarray(codes, dtype=np.int64), list(uniques)


def bore_ranks(column: pd.Series, best: np.ndarray) -> pd.Series:
    """BORE's rank of every present value of ``column`` for the rows ``best`` against the other rows.

    Parameters
    ----------
    column : Series
        One attribute (missing values are never ranked).
    best : ndarray of bool
        Which rows are the *best* class (the others are *rest*).

    Returns
    -------
    Series
        Indexed by the distinct present values (in sort order when they sort), the rank
        ``like(best|v)^2 / (like(best|v) + like(rest|v))`` of each (equation 3.2), 0 for values absent from best.

    Notes
    -----
    Figure 3.1: ``p_best = |best| / |data|``, ``freq(v|best) = |v in best| / |best|``, ``like(best|v) =
    freq(v|best) * p_best`` (and the same for rest), ``rank = like(best|v)^2 / (like(best|v) + like(rest|v))``:
    ``P(best|v)`` (equation 3.1) times the support ``like(best|v)``, so that a value seen once, only in best,
    does not outrank a frequent one. ``|best|`` and ``|data|`` count every row, a missing value included; the
    priors cancel, so the rank is ``n(v, best)^2 / (|data| * n(v))``.
    """
    best = np.asarray(best, dtype=bool)
    n = len(column)
    present = column.notna().to_numpy()
    try:
        codes, uniques = pd.factorize(column, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(column, sort=False)
    codes = np.asarray(codes, dtype=np.int64)
    m = len(uniques)
    n_best, n_rest = int(best.sum()), n - int(best.sum())
    in_best = np.bincount(codes[present & best], minlength=m).astype(float)
    in_rest = np.bincount(codes[present & ~best], minlength=m).astype(float)
    p_best, p_rest = n_best / n if n else 0.0, n_rest / n if n else 0.0
    like_best = (in_best / n_best if n_best else 0.0) * p_best
    like_rest = (in_rest / n_rest if n_rest else 0.0) * p_rest
    total = like_best + like_rest
    with np.errstate(invalid="ignore", divide="ignore"):
        rank = np.where(total > 0, like_best * like_best / np.where(total > 0, total, 1.0), 0.0)
    return pd.Series(rank, index=pd.Index(uniques, tupleize_cols=False), dtype=float)


def bore_rules(frame: pd.DataFrame, columns: list[str], labels: pd.Series) -> dict[object, dict[str, object]]:
    """Each class's rule: per attribute, the value BORE ranks highest with that class as best (section 3.1).

    The whole process is repeated with each class in turn as best and all the others as rest ("When a rule
    for each class has been found the process ends"). Ties go to the first value in sort order. An attribute
    with no present value in the class (or none at all) has no entry in the rule.

    Returns
    -------
    dict
        class -> {column: value}.
    """
    codes, classes = _classes(labels)
    rules: dict[object, dict[str, object]] = {}
    for c, label in enumerate(classes):
        best = codes == c
        rule: dict[str, object] = {}
        for col in columns:
            ranks = bore_ranks(frame[col], best)
            if len(ranks) and float(ranks.max()) > 0:
                rule[col] = ranks.index[int(np.argmax(ranks.to_numpy()))]
        rules[label] = rule
    return rules


def suppress_s1(frame: pd.DataFrame, columns: list[str], labels: pd.Series, rate: float, rng: np.random.Generator,
                variant: Literal["prose", "appendix"] = "prose") -> dict[str, np.ndarray]:
    """Which quasi-identifier cells S1 suppresses: column -> boolean mask over the rows.

    Parameters
    ----------
    frame : DataFrame
        The rows handed to SAP (in the paper's experiments: the training rows).
    columns : list of str
        The quasi-identifiers.
    labels : Series
        The class of every row (no missing value).
    rate : float
        p, 0 <= p < 1.
    rng : Generator
        Every random choice is drawn from it (classes in sort order, then columns in the given order).
    variant : {"prose", "appendix"}
        ``"prose"`` (chapter 3): for each class c and attribute a, the cells of the class-c records whose value
        of a is the value of c's rule (:func:`bore_rules`) are the candidates, and ``ceil(p * candidates)`` of
        them, drawn at random, are suppressed. ``"appendix"`` (Figure A.3, ``si-percent1``): for each class c and
        attribute a, ``ceil(p * |class c|)`` positions of the class-c records, drawn at random whatever their
        value, are suppressed (a cell already missing stays missing and is not counted).

    Notes
    -----
    The prose: "the critical value for each attribute [is] extracted (those with the highest ranks) and used as
    a rule for selecting the values of instances to be replaced with a question mark ... we vary the number of
    these that are replaced by 10, 20, and 30%": p is a share of the rule-matching values, class by class
    (a record adheres to its own class's rule on an attribute when it holds the rule's value there; requiring
    all attributes at once would match almost no record). The appendix pairs each class's rule with that class's
    records (``(map suppress-instances crits insts)``) but never uses the rule: ``si-percent1`` ignores its
    ``c`` argument (the rule value) and draws ``ceil(p * n)`` random positions; as printed it even suppresses
    copies of the class column (``i`` is the group's last column; comment "change made for class only"). Its
    structure (one draw per rule entry, i.e. per attribute, per class) is read here as random positions of each
    quasi-identifier within each class, which is what the ``"appendix"`` variant does.
    """
    codes, classes = _classes(labels)
    n = len(frame)
    masks = {col: np.zeros(n, dtype=bool) for col in columns}
    rules = bore_rules(frame, columns, labels) if variant == "prose" else {}
    for c, label in enumerate(classes):
        rows = np.flatnonzero(codes == c)
        for col in columns:
            if variant == "prose":
                if col not in rules[label]:
                    continue
                target = rules[label][col]
                held = frame[col].iloc[rows]
                candidates = rows[(held.notna() & (held == target)).to_numpy(dtype=bool)]
            else:
                candidates = rows
            take = share(rate, len(candidates))
            if take:
                masks[col][rng.choice(candidates, size=take, replace=False)] = True
    if variant == "appendix":  # a position already missing stays missing: not a suppression of SAP's
        for col in columns:
            masks[col] &= frame[col].notna().to_numpy()
    return masks


def suppress_s2(labels: pd.Series, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Which class values (the sensitive attribute values) S2 suppresses: a boolean mask over the rows.

    ``sap-S2`` (Figure A.4, ``si-percent``): for each class c (in sort order), ``ceil(p * |class c|)`` of its
    records, drawn at random, lose their class value. The prose says only that "for S2, SAP is only applied on
    the SAV"; it names no selection rule for it, so this follows the appendix, the code behind Figure 4.7.
    """
    codes, classes = _classes(labels)
    mask = np.zeros(len(labels), dtype=bool)
    for c in range(len(classes)):
        rows = np.flatnonzero(codes == c)
        take = share(rate, len(rows))
        if take:
            mask[rng.choice(rows, size=take, replace=False)] = True
    return mask


def _with_missing(series: pd.Series, mask: np.ndarray) -> pd.Series:
    """The column with the masked cells missing, keeping integers and booleans as such (nullable dtypes)."""
    if not mask.any():
        return series
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "b":
        series = series.astype("boolean")
    elif isinstance(dtype, np.dtype) and dtype.kind in "iu":
        series = series.astype(pd.api.types.pandas_dtype(f"{'U' if dtype.kind == 'u' else ''}Int{8 * dtype.itemsize}"))
    return series.mask(pd.Series(mask, index=series.index))


# -- the sanitizer ---------------------------------------------------------------------------------
class Sap(Sanitizer):
    """SAP suppression (Peters 2011), privacy unit ``equivalence_class``.

    Scenario **S1** (re-identification; Figure A.3) suppresses quasi-identifier values: with ``variant="prose"``
    (the default, chapter 3) a share p of the values that match each class's BORE rule, in that class's records;
    with ``variant="appendix"`` (the appendix code) a share p of random positions of each quasi-identifier within
    each class. The two readings differ: the paper's prose selects values by rule, its code ignores the rule (see
    :func:`suppress_s1`). Scenario **S2** (sensitive attribute disclosure; Figure A.4) suppresses the class value
    of ``ceil(p * |class|)`` random records of each class (:func:`suppress_s2`); in the paper's experiments the
    class is the sensitive attribute ("the classes as sensitive attribute values", section 4.1), so S2 acts on
    the class column, and ``variant`` does not apply. Other columns are kept as they are.

    A suppressed cell is published as missing (the paper's ``?``; integer and boolean columns become nullable).
    Every column's treatment is ``kept`` (values are never altered, only blanked); the number of suppressed
    cells per column is in :attr:`Release.suppressed_cells` (columns with at least one). SAP keeps every row.
    In the paper, SAP is applied to the training rows only and the 1-NN model leaves out the training rows whose
    class was suppressed (``knn.clj``: ``(filter #(not= -10000 (last %)) ...)``); the evaluation code in
    ``benchmarks/sap_evaluation.py`` does the same, and so must any classifier trained on an S2 release. BORE
    ranks every distinct value, numbers included, as the paper does (no discretization): on a continuous column
    the rule value is a single frequent number, so S1 suppresses few of its cells.

    Parameters
    ----------
    scenario : {"S1", "S2"}
        What is suppressed.
    rate : float
        p, the share suppressed, 0 <= p < 1 (the paper: 0, 0.1, 0.2, 0.3). Tunable; larger is safer.
    variant : {"prose", "appendix"}
        S1's reading (ignored by S2).
    seed : int
        Seed of the random choice of suppressed cells and of the published row order.
    """

    name: ClassVar[str] = "sap"
    description: ClassVar[str] = "SAP: selected quasi-identifier or sensitive values suppressed"
    Params: ClassVar[type[MethodParams]] = SapParams
    protects: ClassVar[Protection] = "attribute"  # the quasi-identifiers are published as they are
    needs_class: ClassVar[bool] = True

    scenario: Literal["S1", "S2"]
    rate: float | None
    variant: Literal["prose", "appendix"]

    @classmethod
    def protected_columns(cls, roles: Roles) -> list[str]:
        """The declared sensitive columns and the class: scenario S2 treats the class as the sensitive value
        (paper 002, section 4.2), and S1 hides the quasi-identifier values that point to it."""
        return [*roles.names(Role.sensitive), *([roles.class_column] if roles.class_column else [])]

    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        """p in [0, 0.9]: below 1 by definition; the paper explores 0 to 0.3."""
        return {"rate": FloatRange(low=0.0, high=0.9)}

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        if self.rate is None:
            raise SpecError("sap: rate is required (set method.rate or a tuning strategy)")
        rate = float(self.rate)
        n = len(frame)
        cls = roles.class_column  # checked by Sanitizer.sanitize (needs_class): BORE ranks values per class
        assert cls is not None
        labels = frame[cls]
        qis = [q for q in roles.quasi_identifiers if q in frame.columns and q != cls]
        if self.scenario == "S1":
            if not qis:
                raise InputError("sap: scenario S1 suppresses quasi-identifiers, and none is declared")
            masks = suppress_s1(frame, qis, labels, rate, rng, self.variant)
        else:
            masks = {cls: suppress_s2(labels, rate, rng)}
        data: dict[str, object] = {}
        suppressed: dict[str, int] = {}
        for col in frame.columns:
            mask = masks.get(col)
            if mask is not None and mask.any():
                data[col] = _with_missing(frame[col], mask)
                suppressed[col] = int(mask.sum())
            else:
                data[col] = frame[col]
        released = pd.DataFrame(data, index=pd.RangeIndex(n))
        treatments: dict[str, Treatment] = {col: "kept" for col in frame.columns}
        groups = equivalence_class_ids(released, qis)
        return Release(frame=released, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(n, dtype=np.int64), group=groups, input_group=groups.copy(),
                       suppressed_cells=suppressed)
