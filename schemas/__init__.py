"""The contract between steps: pydantic models of the release spec, step reports, manifest and audit entry.

Import models from their modules (``ppdp.schemas.spec``, ``ppdp.schemas.reports``, ``ppdp.schemas.methods``,
``ppdp.schemas.manifest``; each method's parameter model from ``ppdp.schemas.params``). This package imports nothing
eagerly (a sanitizer importing ``ppdp.schemas.reports`` must not pull in the spec), and nothing under it imports
``ppdp.tasks`` or ``ppdp.flows``.
"""
