"""Secrets a release needs (the pseudonym key), looked up outside the flow module."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from ppdp.schemas.spec import IdentifierPolicy

if TYPE_CHECKING:  # Prefect is imported only when a Secret block is named
    from prefect.blocks.system import Secret  # heavy: Prefect, only for a key kept in a Prefect Secret block


def pseudonym_key(policy: IdentifierPolicy) -> bytes | None:
    """The HMAC key for pseudonyms: a Prefect Secret block if named (Prefect imported only then), else the
    environment variable; None when identifiers are dropped or no key is set."""
    if policy.action != "pseudonymize":
        return None
    if policy.key_secret_block:
        try:
            from prefect.blocks.system import Secret  # heavy: Prefect, only for a key kept in a Prefect Secret block

            # Prefect types load() as "the block or a coroutine" (sync_compatible); called synchronously it is the block
            value = cast("Secret", Secret.load(policy.key_secret_block)).get()
            if value:
                return str(value).encode("utf-8")
        except (ValueError, RuntimeError, ImportError):
            pass
    value = os.environ.get(policy.key_env)
    return value.encode("utf-8") if value else None
