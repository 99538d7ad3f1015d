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

from typing import Any, ClassVar

import numpy as np
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


class MinEquivalenceClassSize(TableMetricProvider):
    metric_name = "ppdp.min_equivalence_class_size"
    value_keys = ("column_list",)

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        df = _frame(execution_engine, metric_domain_kwargs)
        if len(df) == 0:
            return 0
        ids = equivalence_class_ids(df, list(metric_value_kwargs["column_list"]))
        return int(np.bincount(ids).min())


class MinDistinctSensitivePerClass(TableMetricProvider):
    metric_name = "ppdp.min_distinct_sensitive_per_class"
    value_keys = ("column_list", "sensitive_column")

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        df = _frame(execution_engine, metric_domain_kwargs)
        if len(df) == 0:
            return 0
        ids = equivalence_class_ids(df, list(metric_value_kwargs["column_list"]))
        pairs = equivalence_class_ids(df.assign(__ec__=ids), ["__ec__", metric_value_kwargs["sensitive_column"]])
        first = np.zeros(pairs.max() + 1, dtype=np.int64)
        first[pairs] = ids  # each (class, value) pair belongs to one class
        return int(np.bincount(first).min())


class PresentColumnCount(TableMetricProvider):
    metric_name = "ppdp.present_column_count"
    value_keys = ("column_list",)

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs, metrics, runtime_configuration):
        df = _frame(execution_engine, metric_domain_kwargs)
        return int(sum(1 for c in metric_value_kwargs["column_list"] if c in df.columns))


class ExpectQuasiIdentifiersToBeKAnonymous(BatchExpectation):
    """Each combination of ``column_list`` values appears at least ``k`` times."""

    column_list: list[str]
    k: int
    metric_dependencies: ClassVar[tuple[str, ...]] = ("ppdp.min_equivalence_class_size",)
    success_keys: ClassVar[tuple[str, ...]] = ("column_list", "k")
    args_keys: ClassVar[tuple[str, ...]] = ("column_list", "k")

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None,
                  execution_engine: ExecutionEngine | None = None) -> dict[str, Any]:
        observed = int(metrics["ppdp.min_equivalence_class_size"])
        return {"success": observed >= self.k, "result": {"observed_value": observed}}


class ExpectEquivalenceClassesToBeLDiverse(BatchExpectation):
    """Each equivalence class over ``column_list`` holds at least ``l`` distinct ``sensitive_column`` values."""

    column_list: list[str]
    sensitive_column: str
    l: int  # noqa: E741 - the model's name
    metric_dependencies: ClassVar[tuple[str, ...]] = ("ppdp.min_distinct_sensitive_per_class",)
    success_keys: ClassVar[tuple[str, ...]] = ("column_list", "sensitive_column", "l")
    args_keys: ClassVar[tuple[str, ...]] = ("column_list", "sensitive_column", "l")

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None,
                  execution_engine: ExecutionEngine | None = None) -> dict[str, Any]:
        observed = int(metrics["ppdp.min_distinct_sensitive_per_class"])
        return {"success": observed >= self.l, "result": {"observed_value": observed}}


class ExpectColumnsToBeAbsent(BatchExpectation):
    """None of ``column_list`` is a column of the table (direct identifiers must not be published)."""

    column_list: list[str]
    metric_dependencies: ClassVar[tuple[str, ...]] = ("ppdp.present_column_count",)
    success_keys: ClassVar[tuple[str, ...]] = ("column_list",)
    args_keys: ClassVar[tuple[str, ...]] = ("column_list",)

    def _validate(self, metrics: dict, runtime_configuration: dict | None = None,
                  execution_engine: ExecutionEngine | None = None) -> dict[str, Any]:
        observed = int(metrics["ppdp.present_column_count"])
        return {"success": observed == 0, "result": {"observed_value": observed}}


CUSTOM_TYPES = (
    "expect_quasi_identifiers_to_be_k_anonymous",
    "expect_equivalence_classes_to_be_l_diverse",
    "expect_columns_to_be_absent",
)
