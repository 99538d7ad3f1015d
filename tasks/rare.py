"""The rare-value rule: no published cell of a categorical column holds a value seen fewer than k times.

Applied to the whole protected input (identifiers already dropped or pseudonymized) before the hold-out split,
so the encoders, every sanitizer's decoder and the utility step only ever see values that pass the rule: a
decoder that emits only values it was fitted on (every nominal decoder; see :mod:`tasks.core.encoding`) can
then only emit values seen at least k times in the input.

k is the privacy policy's k (``privacy.k``), or 2 where the policy sets none (record-level methods): a value
seen once is never published (:attr:`ReleaseSpec.rare_k`).

Which columns: every column tagged nominal or ordinal (text, booleans, pandas categoricals and number-coded
nominal columns such as zip codes), the class column included; not numeric columns (dates included) and not
pseudonymized identifiers (their published cells are keyed hashes, not input values, and merging them would
destroy the linkage they exist for). Values are compared exactly as stored (``"Boston"`` and ``"Boston "``
differ); missing values are not values and are never rare.

What happens to the rare values of a column (each column gets exactly one action):

* ``merged``: text columns (str / object / categorical with text categories): every rare value becomes the
  token :data:`RARE_TOKEN` (``"__ppdp_rare__"``, with ``_`` appended until it equals no value of the column, so
  it never collides with a real value), provided the token then holds at least k cells;
* ``suppressed``: where a token is impossible (number, boolean or date columns, and categoricals with number
  categories) or would hold fewer than k cells, rare cells are set missing (integers and booleans become
  pandas' nullable types);
* ``merged_adjacent``: an ordinal column with a declared ``order`` cannot take a token (it is not in the order):
  each rare category is recoded to the nearest category of the order (by rank distance; a tie goes to the lower
  one) that occurs at least k times, as top/bottom coding does. If no category of the column occurs k times,
  its rare cells are suppressed instead. A rare value outside the declared order is suppressed;
* ``rows_removed``: the class column cannot be missing (and class-wise methods need every class), so rare class
  labels are merged into the token as above when the column is text and the token reaches k; otherwise (labels
  that are numbers, or too few rare rows to reach k together) the rows carrying a rare label are left out of
  the release (and out of the held-out rows). The class is handled first; the other columns are then counted on
  the remaining rows, which is stricter than counting on the whole input.

Categorical dtypes lose every category that does not occur after the rule (a Parquet dictionary would
otherwise carry them). The input frame is not modified; the output keeps its index (minus removed rows). The
report holds counts only, never a value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.schemas.reports import ColumnTag, RareCategoryColumn, RareCategoryReport, Roles
from ppdp.schemas.spec import ColumnKind, Role
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.core.labels import column_label, key_text

RARE_TOKEN = "__ppdp_rare__"
_NULLABLE = {"i": "Int", "u": "UInt"}


def categorical_columns(frame: pd.DataFrame, roles: Roles) -> list[ColumnTag]:
    """The tags of the columns the rule applies to (class column first), in input order otherwise."""
    out = [t for t in roles.columns
           if t.name in frame.columns and t.kind in (ColumnKind.nominal, ColumnKind.ordinal)
           and t.role is not Role.identifier and t.treatment is None]
    return sorted(out, key=lambda t: t.role is not Role.class_)


def token_possible(series: pd.Series) -> bool:
    """Can a text token be written into this column without changing what it holds?"""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return not pd.api.types.is_numeric_dtype(series.cat.categories.dtype)
    if pd.api.types.is_bool_dtype(series) or pd.api.types.is_numeric_dtype(series):
        return False
    if pd.api.types.is_datetime64_any_dtype(series) or pd.api.types.is_timedelta64_dtype(series):
        return False
    return pd.api.types.is_string_dtype(series) or series.dtype == object


def token_for(values: pd.Index) -> str:
    """:data:`RARE_TOKEN`, with ``_`` appended until it equals none of ``values`` (compared as text)."""
    seen = {str(v) for v in values}
    token = RARE_TOKEN
    while token in seen:
        token += "_"
    return token


@dataclass
class _Outcome:
    series: pd.Series
    action: str
    values: int
    mask: np.ndarray  # the cells changed (rows_removed: the rows to leave out)
    token: str | None = None


def suppress_cells(series: pd.Series, mask: np.ndarray) -> pd.Series:
    """``series`` with the cells under ``mask`` set missing (integers / booleans -> nullable dtypes)."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in _NULLABLE:
        series = series.astype(pd.api.types.pandas_dtype(f"{_NULLABLE[dtype.kind]}{dtype.itemsize * 8}"))
    elif isinstance(dtype, np.dtype) and dtype.kind == "b":
        series = series.astype("boolean")
    return series.mask(mask)


def with_token(series: pd.Series, mask: np.ndarray, token: str) -> pd.Series:
    if isinstance(series.dtype, pd.CategoricalDtype):
        series = series.cat.add_categories([token])
    return series.mask(mask, token)


def recode_adjacent(series: pd.Series, counts: pd.Series, rare: pd.Index, order: list[str], k: int) -> _Outcome | None:
    """Recode rare categories of a declared order to the nearest frequent one; None if none is frequent."""
    rank = {c: i for i, c in enumerate(order)}
    frequent = [(rank[str(v)], v) for v, c in counts.items() if c >= k and str(v) in rank]
    if not frequent:
        return None
    ranks = np.array([r for r, _ in frequent])
    groups: dict[int, list] = {}  # index into frequent -> the rare values recoded to it
    outside: list = []
    for v in rare:
        r = rank.get(str(v))
        if r is None:
            outside.append(v)
            continue
        dist = np.abs(ranks - r)
        best = np.flatnonzero(dist == dist.min())
        groups.setdefault(int(best[np.argmin(ranks[best])]), []).append(v)  # a tie goes to the lower rank
    out = series
    for i, values in groups.items():
        out = out.mask(series.isin(values).to_numpy(), frequent[i][1])
    if outside:
        out = suppress_cells(out, series.isin(outside).to_numpy())
    mask = series.isin(rare).to_numpy()
    return _Outcome(out, "merged_adjacent" if groups else "suppressed", len(rare), mask)


def _column_rule(series: pd.Series, tag: ColumnTag, k: int, taken: pd.Index,
                 count_on: np.ndarray | None = None) -> _Outcome | None:
    """Apply the rule to one column (``taken``: every value of the input column, which the token must differ
    from, rows left out included; ``count_on``: the rows whose values are counted, all when None); None when it
    has no rare value."""
    counted = series if count_on is None else series[count_on]
    counts = counted.value_counts(dropna=True)
    counts = counts[counts > 0]
    rare = counts.index[counts.to_numpy() < k]
    if len(rare) == 0:
        return None
    mask = series.isin(rare).to_numpy()
    if tag.kind is ColumnKind.ordinal and tag.order and tag.role is not Role.class_:
        outcome = recode_adjacent(series, counts, rare, list(tag.order), k)
        if outcome is not None:
            return outcome
        return _Outcome(suppress_cells(series, mask), "suppressed", len(rare), mask)
    counted_mask = mask if count_on is None else mask & count_on
    if token_possible(series) and int(counted_mask.sum()) >= k:
        token = token_for(taken)
        return _Outcome(with_token(series, mask, token), "merged", len(rare), mask, token)
    if tag.role is Role.class_:
        return _Outcome(series, "rows_removed", len(rare), mask)
    return _Outcome(suppress_cells(series, mask), "suppressed", len(rare), mask)


def merge_rare_categories(frame: pd.DataFrame, roles: Roles, k: int, skip: tuple[str, ...] | list[str] = (),
                          count_on: np.ndarray | None = None) -> tuple[pd.DataFrame, RareCategoryReport]:
    """Merge or suppress every categorical value seen fewer than ``k`` times (see the module docstring).

    Parameters
    ----------
    frame : DataFrame
        The protected input (identifiers already handled); not modified. Any index.
    roles : Roles
        Column tags: which columns are categorical (nominal / ordinal), the class, declared orders.
    k : int
        A value must occur at least this many times to be published.
    skip : sequence of str
        Columns left to the method: the quasi-identifiers of a method that publishes them only in classes of at
        least k records (:meth:`ppdp.tasks.shapes.ReleaseShape.rare_rule_skip`), where the rule holds by construction.
    count_on : ndarray of bool, optional
        The rows whose values are counted (the rows that will be published); the recoding applies to every row.
        Default: every row.

    Returns
    -------
    frame : DataFrame
        A new frame, same columns and index labels (minus rows carrying a rare class label, if any).
    report : RareCategoryReport
        Per affected column: action, rare values (count) and cells changed; never a value.
    """
    if k < 1:
        raise ValueError(f"the rare-value rule needs k >= 1, got {k}")
    if k > len(frame):
        raise InputError(f"privacy.k={k} is larger than the table ({len(frame)} rows): no value can be published")
    tags = [t for t in categorical_columns(frame, roles) if t.name not in set(skip)]
    out = frame.copy()
    rows_in = len(frame)
    counted = None if count_on is None else np.asarray(count_on, dtype=bool)
    if counted is not None and int(counted.sum()) < k:
        raise InputError(f"privacy.k={k} is larger than the rows published ({int(counted.sum())}): no value can be "
                         "published")
    columns: list[RareCategoryColumn] = []
    for tag in tags:
        series = out[tag.name]
        outcome = _column_rule(series, tag, k, pd.Index(frame[tag.name].dropna().unique()), counted)
        if outcome is not None:
            if outcome.action == "rows_removed":
                out = out.iloc[np.flatnonzero(~outcome.mask)]
                if counted is not None:
                    counted = counted[~outcome.mask]
            else:
                out[tag.name] = outcome.series.array
            columns.append(RareCategoryColumn(position=tag.position, name=tag.name, action=outcome.action,
                                              values_merged=outcome.values, cells_affected=int(outcome.mask.sum()),
                                              token=outcome.token,
                                              counted_on="input" if count_on is None else "published"))
        if isinstance(out[tag.name].dtype, pd.CategoricalDtype):
            out[tag.name] = out[tag.name].cat.remove_unused_categories()
    report = RareCategoryReport(k=k, columns_checked=len(tags), columns=columns, rows_in=rows_in,
                                rows_out=len(out))
    return out, report


def check_classes_left(frame: pd.DataFrame, roles: Roles, report: RareCategoryReport) -> None:
    """Raise :class:`InputError` when the rule left the rows of rare class labels out (``rows_removed``) and fewer
    than two classes remain, saying why (counts only): the hold-out would otherwise report a single class in a
    column that held many (a numeric target, each value seen a few times)."""
    cls = roles.class_column
    removed = [c for c in report.columns if c.name == cls and c.action == "rows_removed"]
    left = int(frame[cls].nunique(dropna=True)) if cls is not None and removed else 2
    if left >= 2:
        return
    col = removed[0]
    label = column_label(col.position + 1, col.name) if col.position is not None else f"column {key_text(col.name)}"
    raise InputError(
        f"class {label}: {col.values_merged:,} of its labels are each seen fewer than k = {report.k} times, and "
        f"their {col.cells_affected:,} rows are left out (a label that is a number is never merged; text labels "
        f"are merged only when together they reach k rows), leaving {left} class{'' if left == 1 else 'es'}: "
        "nothing to classify (a numeric target with many values is not a class: give the column another role and "
        "measure it with utility.regression, or bin it into classes first)")


def merge_rare_on_published(train: pd.DataFrame, test: pd.DataFrame, roles: Roles, k: int,
                            first: RareCategoryReport, skip: tuple[str, ...] | list[str] = ()
                            ) -> tuple[pd.DataFrame, pd.DataFrame, RareCategoryReport]:
    """The rule again, counted on the rows that are published (``train``: the hold-out keeps ``test`` back, so a
    value seen k times in the input may be published fewer times), applied to both splits alike (the held-out
    rows are recoded as the published ones are, for the utility step). ``first``: the report of the pass over the
    whole input, which the returned report extends."""
    both = pd.concat([train, test], ignore_index=True)
    published = np.arange(len(both)) < len(train)
    out, report = merge_rare_categories(both, roles, k, skip, count_on=published)
    kept = out.index.to_numpy()
    train_out = out[kept < len(train)].reset_index(drop=True)
    test_out = out[kept >= len(train)].reset_index(drop=True)
    merged = first.model_copy(update={"columns": [*first.columns, *report.columns],
                                      "rows_out": first.rows_out - report.rows_removed})
    return train_out, test_out, merged
