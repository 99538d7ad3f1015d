"""Great Expectations suites (JSON beside this file) and the one place ppdp runs them.

Results are requested in GX's BASIC format with zero partial values and then reduced to counts, so no data
value ever leaves GX (its default SUMMARY format copies raw values into results and Data Docs).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pandas as pd

from ppdp.schemas.reports import ExpectationOutcome

SUITE_DIR = Path(__file__).parent
AGGREGATE_TYPES = ("expect_table_row_count_to_be_between", "expect_table_column_count_to_be_between")
RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0, "include_unexpected_rows": False}


def base_suite_path(name: str) -> Path:
    return SUITE_DIR / f"{name}_base.json"


def load_suite_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def preload() -> None:
    """Import Great Expectations and ppdp's own expectations (what :func:`validate_frame` imports: 2-3 s), e.g.
    while a command waits for its Prefect server."""
    import great_expectations  # noqa: F401
    from great_expectations.data_context.types.base import ProgressBarsConfig  # noqa: F401
    from great_expectations.execution_engine import pandas_execution_engine  # noqa: F401

    from ppdp.expectations.custom import CUSTOM_TYPES  # noqa: F401


def validate_frame(frame: pd.DataFrame, suite_json: dict[str, Any]) -> list[ExpectationOutcome]:
    """Validate ``frame`` against a suite given as GX JSON; return one count-only outcome per expectation."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.execution_engine import pandas_execution_engine

    from ppdp.expectations.custom import CUSTOM_TYPES  # registers ppdp's expectations before a suite loads

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    # GX would hash every frame under 1e9 bytes whole (an unkeyed MD5 of the raw rows, index included) into the
    # batch markers its results carry: with no threshold it hashes none (a tenth of a partition's check, too)
    pandas_execution_engine.HASH_THRESHOLD = 0
    # GX sets this one module's logger to INFO itself ("Created temporary directory ... for ephemeral docs site")
    logging.getLogger("great_expectations.data_context.types.base").setLevel(logging.ERROR)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    suite = gx.ExpectationSuite(**suite_json)
    if len(suite.expectations) != len(suite_json["expectations"]):
        # GX drops expectations it cannot resolve instead of failing: fail closed here
        raise RuntimeError(
            f"suite {suite_json['name']}: {len(suite_json['expectations'])} expectations declared, "
            f"{len(suite.expectations)} loaded"
        )
    batch = (
        context.data_sources.add_pandas("ppdp")
        .add_dataframe_asset("table")
        .add_batch_definition_whole_dataframe("whole")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(suite, result_format=RESULT_FORMAT)  # BASIC, zero partial values: counts only
    outcomes = []
    for r in result.results:
        config = r.expectation_config
        assert config is not None  # a validation result carries its expectation's configuration
        counts = r.result or {}
        outcomes.append(
            ExpectationOutcome(
                expectation=config.type,
                column=config.kwargs.get("column"),
                success=bool(r.success),
                unexpected_count=_int_or_none(counts.get("unexpected_count")),
                element_count=_int_or_none(counts.get("element_count")),
                observed=_int_or_none(counts.get("observed_value")) if config.type in AGGREGATE_TYPES + CUSTOM_TYPES
                else None,
            )
        )
    return outcomes


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
