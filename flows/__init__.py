"""Prefect flows that chain the steps, and the ``ppdp`` CLI. Importing this package sets Prefect's
data-safety settings before Prefect itself is imported (see :mod:`flows.settings`)."""

from ppdp.flows import settings as _settings

_settings.apply()
