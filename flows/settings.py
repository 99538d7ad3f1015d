"""Prefect settings ppdp needs, applied through the environment before Prefect is imported.

A Prefect task with any cache policy pickles its return value (raw data included) to disk, and
``PREFECT_TASKS_DEFAULT_PERSIST_RESULT=false`` does not stop it: ``PREFECT_TASKS_DISABLE_CACHING=true`` does,
so it is forced. Every ppdp task is also declared with ``cache_policy=NO_CACHE, persist_result=False``.
"""

from __future__ import annotations

import os

FORCED = {
    "PREFECT_TASKS_DISABLE_CACHING": "true",
    "PREFECT_TASKS_DEFAULT_PERSIST_RESULT": "false",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
}
DEFAULTS = {
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_LOGGING_LOG_PRINTS": "false",
}


def apply() -> None:
    os.environ.update(FORCED)
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
