"""Custom Great Expectations expectations used in ppdp's suites.

This module is imported before any suite is loaded (see :func:`expectations.validate_frame`): GX silently
drops an expectation whose class is not registered. Metrics return aggregates (sizes, counts), never values.

* ``expect_quasi_identifiers_to_be_k_anonymous(column_list, k)``: each combination of the columns' values
  appears at least k times (observed: the smallest equivalence class size; 0 for an empty table);
* ``expect_equivalence_classes_to_be_l_diverse(column_list, sensitive_column, l)``: each equivalence class over
  ``column_list`` holds at least l distinct values of ``sensitive_column`` (observed: the smallest count);
* ``expect_columns_to_be_absent(column_list)``: none of the columns is present (observed: how many are).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import numpy as np
import pandas as pd
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import ExecutionEngine, PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider

from ppdp.tasks.core.groups import equivalence_class_ids


def _frame(execution_engine: PandasExecutionEngine, metric_domain_kwargs: dict):
    df, _, _ = execution_engine.get_compute_domain(domain_kwargs=metric_domain_kwargs,
                                                   domain_type=MetricDomainTypes.TABLE)
    return df


class _TableCount(TableMetricProvider):
    """A table metric computed on pandas by the subclass's ``count(df, value_kwargs)`` (GX calls ``_pandas`` with
    the subclass as ``cls``); this base has no metric name, so GX registers only its subclasses."""

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        return cls.count(_frame(execution_engine, metric_domain_kwargs), metric_value_kwargs)

    @staticmethod
    def count(df: pd.DataFrame, value_kwargs: dict) -> int:
        """The metric's value on the table ``df`` (``value_kwargs``: the metric's value keys)."""
        raise NotImplementedError


def _class_ids(df: pd.DataFrame, value_kwargs: dict) -> np.ndarray:
    return equivalence_class_ids(df, list(value_kwargs["column_list"]))


class MinEquivalenceClassSize(_TableCount):
    metric_name = "ppdp.min_equivalence_class_size"
    value_keys = ("column_list",)

    @staticmethod
    def count(df: pd.DataFrame, value_kwargs: dict) -> int:
        if len(df) == 0:
            return 0
        return int(np.bincount(_class_ids(df, value_kwargs)).min())


class MinDistinctSensitivePerClass(_TableCount):
    metric_name = "ppdp.min_distinct_sensitive_per_class"
    value_keys = ("column_list", "sensitive_column")

    @staticmethod
    def count(df: pd.DataFrame, value_kwargs: dict) -> int:
        if len(df) == 0:
            return 0
        ids = _class_ids(df, value_kwargs)
        pairs = equivalence_class_ids(df.assign(__ec__=ids), ["__ec__", value_kwargs["sensitive_column"]])
        first = np.zeros(pairs.max() + 1, dtype=np.int64)
        first[pairs] = ids  # each (class, value) pair belongs to one class
        return int(np.bincount(first).min())


class PresentColumnCount(_TableCount):
    metric_name = "ppdp.present_column_count"
    value_keys = ("column_list",)

    @staticmethod
    def count(df: pd.DataFrame, value_kwargs: dict) -> int:
        return int(sum(1 for c in value_kwargs["column_list"] if c in df.columns))


class _CountExpectation(BatchExpectation):
    """An expectation decided by its one metric, an integer (the result's observed_value), which :meth:`holds`
    judges; abstract, so GX registers only its subclasses."""

    @abstractmethod
    def holds(self, observed: int) -> bool:
        """Whether the observed count meets the expectation."""

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None,
                  execution_engine: ExecutionEngine | None = None) -> dict[str, Any]:
        observed = int(metrics[self.metric_dependencies[0]])
        return {"success": self.holds(observed), "result": {"observed_value": observed}}


class ExpectQuasiIdentifiersToBeKAnonymous(_CountExpectation):
    """Each combination of ``column_list`` values appears at least ``k`` times."""

    column_list: list[str]
    k: int
    metric_dependencies = ("ppdp.min_equivalence_class_size",)
    success_keys = args_keys = ("column_list", "k")

    def holds(self, observed: int) -> bool:
        return observed >= self.k


class ExpectEquivalenceClassesToBeLDiverse(_CountExpectation):
    """Each equivalence class over ``column_list`` holds at least ``l`` distinct ``sensitive_column`` values."""

    column_list: list[str]
    sensitive_column: str
    l: int  # noqa: E741 - the model's name
    metric_dependencies = ("ppdp.min_distinct_sensitive_per_class",)
    success_keys = args_keys = ("column_list", "sensitive_column", "l")

    def holds(self, observed: int) -> bool:
        return observed >= self.l


class ExpectColumnsToBeAbsent(_CountExpectation):
    """None of ``column_list`` is a column of the table (direct identifiers must not be published)."""

    column_list: list[str]
    metric_dependencies = ("ppdp.present_column_count",)
    success_keys = args_keys = ("column_list",)

    def holds(self, observed: int) -> bool:
        return observed == 0


CUSTOM_TYPES = (
    "expect_quasi_identifiers_to_be_k_anonymous",
    "expect_equivalence_classes_to_be_l_diverse",
    "expect_columns_to_be_absent",
)
