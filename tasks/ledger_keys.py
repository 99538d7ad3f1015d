"""The series ledger's own key: random, stored in the ledger wrapped (AES-GCM) under the series key of this machine
(:mod:`ppdp.tasks.keys`), so that a rotated series key re-wraps it and fingerprints stay the same."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ppdp.tasks.keys import (  # noqa: F401  (the series key lives beside the audit key; re-exported here)
    ENV_SERIES_KEY,
    KEY_NAME,
    MIN_KEY_CHARS,
    existing_series_key,
    series_key,
)


def _kek(key: bytes) -> bytes:
    """The key that wraps the ledger's own key (derived from the series key)."""
    return hmac.new(key, b"ppdp series ledger key wrap", hashlib.sha256).digest()


def wrap_data_key(data_key: bytes, key: bytes, trail: str) -> str:
    nonce = secrets.token_bytes(12)
    return (nonce + AESGCM(_kek(key)).encrypt(nonce, data_key, b"ppdp ledger\0" + trail.encode())).hex()


def unwrap_data_key(blob: str, key: bytes, trail: str) -> bytes | None:
    raw = bytes.fromhex(blob)
    try:
        return AESGCM(_kek(key)).decrypt(raw[:12], raw[12:], b"ppdp ledger\0" + trail.encode())
    except (InvalidTag, ValueError):
        return None


@dataclass(frozen=True)
class LedgerKey:
    """The ledger's own fingerprint key as this machine's series key unwraps it. ``stored``: False before the
    root's first release (the key is new, and is written with that release)."""

    data_key: bytes = field(repr=False)
    stored: bool

    @property
    def hash_key(self) -> str:
        """The 16 printable characters pandas' SipHash takes as its key."""
        sub = hmac.new(self.data_key, b"ppdp record fingerprint", hashlib.sha256).digest()
        return "".join(chr(33 + b % 94) for b in sub[:16])


def first_data_key(key: bytes) -> bytes:
    """The key a new ledger starts with, derived from the series key: the same records get the same fingerprints
    under every root of one publisher (the keyed hold-out of ``keep_groups``, and so the release, is reproducible);
    after a rotation a ledger keeps the key it started with (stored wrapped)."""
    return hmac.new(key, b"ppdp series ledger key", hashlib.sha256).digest()
