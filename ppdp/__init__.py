"""ppdp: privacy-preserving data publishing.

The package maps the repository's folders into one namespace: ``ppdp.schemas`` (the contract), ``ppdp.tasks``
(the steps and the sanitizers), ``ppdp.flows`` (Prefect flows and the CLI), ``ppdp.expectations`` (Great
Expectations suites) and ``ppdp.deployments``. Importing ``ppdp`` imports neither Prefect nor Great Expectations.

The Python API (see :mod:`ppdp.api`)::

    import ppdp
    release = ppdp.sanitize(frame, method="mdav", quasi_identifiers=["age", "zip"], k=5)
    report = ppdp.validate(release.frame, quasi_identifiers=["age", "zip"], k=5)
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ppdp")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_API = ("sanitize", "validate", "validate_release", "methods", "release", "tune", "federate", "compare")


def __getattr__(name: str):
    if name in _API:
        # deferred: the API facade loads every layer, and every ``import ppdp.x`` runs this package first
        from ppdp import api

        return getattr(api, name)
    raise AttributeError(f"module 'ppdp' has no attribute {name!r}")


__all__ = ["__version__", *_API]
