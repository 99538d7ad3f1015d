"""Field definitions that several schema models share: one definition for one meaning, whatever model holds it.

This module imports nothing from ``ppdp`` (every schema module may import it).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

LEGACY_INPUT_SHA256 = ("manifests written before keyed digests only: the unkeyed SHA-256 of the input file (no longer "
                       "written)")
"""The description of the input's unkeyed SHA-256 in a manifest (and in the ingest report it holds)."""


def _is_none(value: object) -> bool:
    return value is None


def before_keyed_digests(description: str) -> Any:
    """An unkeyed SHA-256 that only records written before keyed digests carry: null by default and left out of a
    dump when null, so a record written before still loads and a new one never shows the field."""
    return Field(None, exclude_if=_is_none, description=description)


def private_only(description: str) -> Any:
    """A value kept for the publisher's private record only: null by default, never serialized, left out of repr
    (annotate it ``SkipJsonSchema[...]`` so that the JSON Schema leaves it out too)."""
    return Field(None, exclude=True, repr=False, description=description)
