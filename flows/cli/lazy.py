"""The modules the commands use once they run, imported on first use: each loads numpy and pandas (and some load
more), which ``ppdp --help``, a command's ``--help`` and the commands that run no flow must not pay for
(tests/test_startup.py). A command names them as ``lazy.<name>`` (PEP 562: this module's ``__getattr__`` imports
the module the first time; the imports below tell readers and type checkers what each name is).

Prefect's modules are not here: the commands import them themselves, after ppdp's Prefect settings are applied
and the Prefect server is chosen (the order matters, see :mod:`ppdp.flows.cli.release`)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ppdp import expectations as expectations
    from ppdp.flows import interrupts as interrupts
    from ppdp.flows.cli import audit_entries as audit_entries
    from ppdp.flows.cli import checks as checks
    from ppdp.flows.cli import comparison as comparison
    from ppdp.flows.cli import release_summary as release_summary
    from ppdp.flows.cli import release_work as release_work
    from ppdp.tasks import audit as audit
    from ppdp.tasks import publish as publish
    from ppdp.tasks import recovery as recovery
    from ppdp.tasks import report as report
    from ppdp.tasks import series as series_ledger  # noqa: F401 - the name MODULES gives it
    from ppdp.tasks.federated import release as federated_release  # noqa: F401 - the name MODULES gives it
    from ppdp.tasks.privacy import series as privacy_series  # noqa: F401 - the name MODULES gives it

MODULES = {
    "expectations": "ppdp.expectations",
    "interrupts": "ppdp.flows.interrupts",
    "audit_entries": "ppdp.flows.cli.audit_entries",
    "checks": "ppdp.flows.cli.checks",
    "comparison": "ppdp.flows.cli.comparison",
    "release_summary": "ppdp.flows.cli.release_summary",
    "release_work": "ppdp.flows.cli.release_work",
    "audit": "ppdp.tasks.audit",
    "publish": "ppdp.tasks.publish",
    "recovery": "ppdp.tasks.recovery",
    "report": "ppdp.tasks.report",
    "series_ledger": "ppdp.tasks.series",
    "federated_release": "ppdp.tasks.federated.release",
    "privacy_series": "ppdp.tasks.privacy.series",
}
"""``lazy.<name>`` -> the module it imports."""


def __getattr__(name: str) -> ModuleType:
    """``lazy.<name>``: the module of :data:`MODULES`, imported now (numpy and pandas load with it)."""
    if name not in MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(MODULES[name])
