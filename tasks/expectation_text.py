"""Great Expectations outcomes in plain words, and the cheap checks run before Great Expectations.

A failed expectation is told as a sentence about the column (by its 1-based position in the file and its name),
how many rows fail and the first failing data row (data rows count from 1, the header not counted):
``column 3 ('age'): 1 of 3,000 rows is not a number (first at data row 17)``. A sentence never quotes a value
(Great Expectations copies raw values into its own results: ppdp keeps counts only, and finds the first row
itself, with pandas).

:func:`quick_failures` decides, with pandas alone, the expectations that cost nothing to check (columns exist,
values present, values match a pattern, the table has rows and columns), by the same rules as Great Expectations.
The ingest step runs it before importing Great Expectations (an import of several seconds): a bad input is
refused at once; a good one then goes through the whole suite in Great Expectations, which stays the authority
(an expectation it fails is told with these sentences too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ppdp.schemas.reports import ExpectationOutcome
from ppdp.tasks.core.labels import column_label, looks_like_data

NUMERIC_META = "numeric column holds numbers"
PSEUDONYM_PATTERN = r"^[0-9a-f]{64}$"
QUICK_TYPES = ("expect_column_to_exist", "expect_column_values_to_not_be_null", "expect_column_values_to_match_regex",
               "expect_table_row_count_to_be_between", "expect_table_column_count_to_be_between")
"""The expectation kinds :func:`quick_failures` decides with pandas (the others are left to Great Expectations)."""


def _n(count: int) -> str:
    return f"{count:,}"


def _rows(count: int, total: int | None) -> str:
    """``1 of 3,000 rows is`` / ``2 of 3,000 rows are`` (``total`` None: ``2 rows are``)."""
    of = f" of {_n(total)}" if total is not None else ""
    return f"{_n(count)}{of} row{'s' if (total if total is not None else count) != 1 else ''} " \
           f"{'is' if count == 1 else 'are'}"


def _first(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) + 1 if hits.size else None


def _at(first: int | None) -> str:
    return f" (first at data row {_n(first)})" if first is not None else ""


def _quoted(name: object) -> str:
    return "a column" if looks_like_data(str(name)) else f"'{name}'"


def _columns(names: Sequence[object]) -> str:
    return ", ".join(_quoted(n) for n in names)


def _regex_mask(series: pd.Series, regex: str) -> np.ndarray:
    """Rows whose non-missing value, as text, does not match ``regex`` (Great Expectations' rule: ``str.contains``,
    missing values not counted); each distinct value is tested once."""
    pattern = re.compile(regex)
    present = series.dropna()
    foreign = [v for v in pd.unique(present) if not pattern.search(str(v))]
    return series.isin(foreign).to_numpy() & series.notna().to_numpy() if foreign else \
        np.zeros(len(series), dtype=bool)


def _mask(frame: pd.DataFrame | None, kind: str, kwargs: dict[str, Any]) -> np.ndarray | None:
    """The failing rows of a column expectation, found with pandas (None when not known here)."""
    column = kwargs.get("column")
    if frame is None or column is None or column not in frame.columns:
        return None
    series = frame[column]
    if kind == "expect_column_values_to_not_be_null":
        return series.isna().to_numpy()
    if kind == "expect_column_values_to_match_regex" and isinstance(kwargs.get("regex"), str):
        return _regex_mask(series, kwargs["regex"])
    if kind == "expect_column_values_to_be_in_set" and isinstance(kwargs.get("value_set"), list):
        allowed = set(kwargs["value_set"])
        foreign = [v for v in pd.unique(series.dropna()) if v not in allowed]
        return series.isin(foreign).to_numpy() if foreign else np.zeros(len(series), dtype=bool)
    if kind == "expect_column_value_lengths_to_be_between":
        present = series.notna().to_numpy()
        lengths = series.astype(str).str.len().to_numpy()
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        bad = np.zeros(len(series), dtype=bool)
        if low is not None:
            bad |= lengths < low
        if high is not None:
            bad |= lengths > high
        return bad & present
    if kind == "expect_column_values_to_be_unique":
        return (series.duplicated(keep=False) & series.notna()).to_numpy()
    return None


def sentence(outcome: ExpectationOutcome, kwargs: dict[str, Any] | None = None, frame: pd.DataFrame | None = None,
             meta: dict[str, Any] | None = None, columns: Sequence[str] | None = None, rows_word: str = "data row"
             ) -> str:
    """One failed expectation in plain words: the column by position and name, how many rows fail and the first
    failing row (found in ``frame`` with pandas when given; ``rows_word`` names what rows count). Never a value."""
    kind, kwargs, meta = outcome.expectation, dict(kwargs or {}), dict(meta or {})
    names = list(columns if columns is not None else (frame.columns if frame is not None else []))
    column = outcome.column or kwargs.get("column")
    label = column_label(names.index(column) + 1, column) if column in names else (
        f"column {_quoted(column)}" if column is not None else "the table")
    total = outcome.element_count if outcome.element_count is not None else (len(frame) if frame is not None
                                                                              else None)
    mask = _mask(frame, kind, kwargs)
    count = outcome.unexpected_count if outcome.unexpected_count is not None else (
        int(mask.sum()) if mask is not None else None)
    first = _first(mask) if mask is not None else None
    at = _at(first).replace("data row", rows_word)
    observed = None if outcome.observed is None else int(outcome.observed)

    told = _table_sentence(kind, kwargs, observed, column, names)
    if told is not None:
        return told
    if count is None and kind.startswith("expect_column_values_"):
        count = 0
    return _column_sentence(kind, kwargs, meta, label, count, total, at, frame, column)


def _table_sentence(kind: str, kwargs: dict[str, Any], observed: int | None, column: Any,
                    names: list) -> str | None:
    """A failed expectation about the whole table (a column missing or present, rows, columns, classes); None for
    any other kind."""
    if kind == "expect_column_to_exist":
        return f"column {_quoted(column)} (declared in the spec) is not in the file"
    if kind == "expect_table_row_count_to_be_between":
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        if observed == 0:
            return "the table has no data rows (a header only)"
        rows = "a number of" if observed is None else _n(observed)
        return f"the table has {rows} data rows; " + (f"at least {_n(low)}" if low is not None else "") + (
            " and " if low is not None and high is not None else "") + (
            f"at most {_n(high)}" if high is not None else "") + " needed"
    if kind == "expect_table_column_count_to_be_between":
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        has = "no" if observed == 0 else ("a number of" if observed is None else _n(observed))
        want = " and ".join(x for x in (f"at least {low}" if low is not None else "",
                                        f"at most {high}" if high is not None else "") if x)
        return f"the table has {has} columns; {want or 'another number'} needed"
    if kind == "expect_columns_to_be_absent":
        listed = kwargs.get("column_list") or []
        present = [c for c in listed if c in names] if names else []
        shown = _columns(present or listed)
        return (f"{shown} must not be published (direct identifiers or dropped columns) but "
                f"{'is' if len(present or listed) == 1 else 'are'} present")
    if kind == "expect_quasi_identifiers_to_be_k_anonymous":
        k = kwargs.get("k")
        return (f"the smallest class over {_columns(kwargs.get('column_list') or [])} holds "
                f"{'an unknown number of' if observed is None else _n(observed)} row(s), fewer than k = {k}")
    if kind == "expect_equivalence_classes_to_be_l_diverse":
        return (f"a class holds {'too few' if observed is None else _n(observed)} distinct value(s) of "
                f"{_quoted(kwargs.get('sensitive_column'))}, fewer than l = {kwargs.get('l')}")
    return None


def _column_sentence(kind: str, kwargs: dict[str, Any], meta: dict[str, Any], label: str, count: int | None,
                     total: int | None, at: str, frame: pd.DataFrame | None, column: Any) -> str:
    """A failed expectation about a column's values: how many rows fail and the first one, never a value."""
    if kind == "expect_column_values_to_not_be_null":
        mostly = kwargs.get("mostly")
        if mostly is not None and mostly < 1 and (count is None or total is None or count >= total):
            return (f"{label}: every row is missing a value{'' if total is None else f' ({_n(total)} rows)'}: "
                    f"a quasi-identifier needs values (declare another role for it, or fill it in)")
        why = "the class column needs a value in every row" if not meta else "a value is required in every row"
        return f"{label}: {_rows(count or 0, total)} missing a value{at}: {why}"
    if kind == "expect_column_values_to_match_regex":
        regex = kwargs.get("regex")
        if meta.get("ppdp") == NUMERIC_META or (isinstance(regex, str) and regex.startswith(r"^\s*[-+]?")):
            return (f"{label}: {_rows(count or 0, total)} not a number{at}: make them numbers or missing (a "
                    "missing-value marker goes in source.na_values)")
        if regex == PSEUDONYM_PATTERN:
            return f"{label}: {_rows(count or 0, total)} not a pseudonym (64 hexadecimal digits){at}"
        return f"{label}: {_rows(count or 0, total)} not of the expected form{at}"
    if kind == "expect_column_values_to_be_in_type_list":
        dtype = str(frame[column].dtype) if frame is not None and column in frame.columns else None
        return f"{label}: is not a column of numbers" + (f" (read as {dtype})" if dtype else "")
    if kind == "expect_column_values_to_be_in_set":
        return f"{label}: {_rows(count or 0, total)} not one of the allowed values{at}"
    if kind == "expect_column_value_lengths_to_be_between":
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        what = (f"longer than {high} characters" if low is None else f"shorter than {low} characters"
                if high is None else f"not {low} to {high} characters long")
        return f"{label}: {_rows(count or 0, total)} {what}{at}"
    if kind == "expect_column_values_to_be_unique":
        return f"{label}: {_rows(count or 0, total)} not unique (the value repeats in another row){at}"
    if kind == "expect_column_values_to_be_between":
        return f"{label}: {_rows(count or 0, total)} outside the allowed range{at}"
    words = kind.removeprefix("expect_").replace("_", " ")
    if count is not None:
        return f"{label}: {_rows(count, total)} failing the check '{words}'{at}"
    return f"{label}: fails the check '{words}'"


def _config(suite_json: dict[str, Any], outcome: ExpectationOutcome) -> dict[str, Any]:
    """The suite's configuration of ``outcome``'s expectation (by type and column; {} when not found)."""
    for e in suite_json.get("expectations", []):
        if e.get("type") == outcome.expectation and e.get("kwargs", {}).get("column") == outcome.column:
            return e
    return {}


def describe(failed: Sequence[ExpectationOutcome], suite_json: dict[str, Any], frame: pd.DataFrame | None = None,
             columns: Sequence[str] | None = None, rows_word: str = "data row") -> list[str]:
    """One sentence per failed outcome (see :func:`sentence`), their configurations taken from ``suite_json``."""
    out = []
    for o in failed:
        config = _config(suite_json, o)
        out.append(sentence(o, config.get("kwargs"), frame, config.get("meta"), columns, rows_word))
    return out


def _quick(frame: pd.DataFrame, config: dict[str, Any]) -> ExpectationOutcome | None:
    """The outcome of one expectation decided with pandas by Great Expectations' rules (None: not decided here)."""
    kind, kwargs = config.get("type"), config.get("kwargs", {})
    if kind not in QUICK_TYPES or not isinstance(kind, str):
        return None
    total = len(frame)
    if kind == "expect_column_to_exist":
        return ExpectationOutcome(expectation=kind, column=kwargs.get("column"),
                                  success=kwargs.get("column") in frame.columns)
    if kind in ("expect_table_row_count_to_be_between", "expect_table_column_count_to_be_between"):
        if set(kwargs) - {"min_value", "max_value"}:
            return None
        observed = total if kind == "expect_table_row_count_to_be_between" else len(frame.columns)
        low, high = kwargs.get("min_value"), kwargs.get("max_value")
        ok = (low is None or observed >= low) and (high is None or observed <= high)
        return ExpectationOutcome(expectation=kind, success=ok, observed=observed)
    column = kwargs.get("column")
    if column not in frame.columns or set(kwargs) - {"column", "mostly", "regex"}:
        return None
    mask = _mask(frame, kind, kwargs)
    if mask is None:
        return None
    bad = int(mask.sum())
    mostly = kwargs.get("mostly")
    # Great Expectations: the share of the non-missing values checked that pass must reach ``mostly`` (all when
    # not given); not_be_null counts over every row, match_regex over the rows that hold a value
    checked = total if kind == "expect_column_values_to_not_be_null" else int(frame[column].notna().sum())
    ok = bad == 0 if mostly is None else (checked == 0 or (checked - bad) / checked >= mostly)
    return ExpectationOutcome(expectation=kind, column=column, success=ok, unexpected_count=bad, element_count=total)


def quick_failures(frame: pd.DataFrame, suite_json: dict[str, Any]) -> list[str]:
    """The suite's cheap expectations (:data:`QUICK_TYPES`) that ``frame`` fails, decided with pandas, as
    sentences (empty: none failed; the full suite still has to run in Great Expectations)."""
    failed: list[str] = []
    for config in suite_json.get("expectations", []):
        outcome = _quick(frame, config)
        if outcome is not None and not outcome.success:
            failed.append(sentence(outcome, config.get("kwargs"), frame, config.get("meta")))
    return failed
