"""The contract between steps: pydantic models of the release spec, step reports, manifest and audit entry.

Import models from their modules (``ppdp.schemas.spec``, ``ppdp.schemas.reports``, ``ppdp.schemas.methods``,
``ppdp.schemas.manifest``). The spec's ``method`` union is built from the sanitizer registry, so this package
imports nothing eagerly (a sanitizer importing ``ppdp.schemas.reports`` must not pull in the spec).
"""
