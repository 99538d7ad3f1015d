"""Keyed input digests: what every release publishes in place of its input's SHA-256.

A published SHA-256 of the raw input confirms a guessed input: an attacker who holds every row but one, and has a
short list of candidates for the missing row, hashes each candidate file and compares. So the manifest, the audit
trail, ``compare.json`` and a federated model's manifest carry a keyed digest instead::

    digest key  K = HMAC-SHA256(series key, "ppdp input digest")
    digest      = salt ":" HMAC-SHA256(K, salt ":" the input's SHA-256)   (salt: 32 random hex digits, made per run;
                                                                          the SHA-256 as 64 lowercase hex digits)
    key id      = "hmac-sha256:" + the first 32 hex digits of HMAC-SHA256(K, "ppdp input digest key id")

The salt is drawn afresh for every run: two releases of the same (or of an unchanged) input carry different
digests, so the digests do not tell whether the input changed between two releases (under a DP release, that would
be a bit about the data the mechanism does not cover), nor that two datasets were made from the same file.

The series key is the publisher's (:func:`ppdp.tasks.keys.series_key`: ``$PPDP_SERIES_KEY`` or
``<config>/series-key``, never under the publish root). The file is hashed once (its SHA-256), then keyed, so a large
input is read once. A partitioned input's SHA-256 is that of its ``<relative path> <sha256>`` lines, keyed the same
way. The key id names the key (so a verifier knows which one) and reveals nothing of it.

Only the publisher (the key present) can check a digest: :func:`check` with the input's SHA-256. Without the key a
digest tells nothing about the input, and nobody can confirm a guess with it. The unkeyed SHA-256 itself is kept
only in the publisher's private record (:mod:`ppdp.tasks.private_record`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ppdp.tasks.keys import existing_series_key, series_key

DIGEST_LABEL = b"ppdp input digest"
KEY_ID_LABEL = b"ppdp input digest key id"
KEY_ID_PREFIX = "hmac-sha256:"
NO_KEY = ("the publisher's series key is not on this machine ($PPDP_SERIES_KEY or <config>/series-key): a keyed "
          "digest can only be checked where it was made")


@dataclass(frozen=True)
class InputDigest:
    """A keyed digest of an input and the id of its key."""

    digest: str
    key_id: str


def digest_key(series_key: bytes) -> bytes:
    """The digest key derived from the publisher's series key (never stored, never published)."""
    return hmac.new(series_key, DIGEST_LABEL, hashlib.sha256).digest()


def key_id(key: bytes) -> str:
    """The id of a digest key: ``hmac-sha256:`` and 32 hex digits of an HMAC under it."""
    return KEY_ID_PREFIX + hmac.new(key, KEY_ID_LABEL, hashlib.sha256).hexdigest()[:32]


def keyed(sha256: str, key: bytes, salt: str | None = None) -> InputDigest:
    """The keyed digest of an input whose SHA-256 is ``sha256`` (hex): ``salt:mac``, with a fresh random salt
    unless ``salt`` is given (re-checking a digest)."""
    salt = secrets.token_hex(16) if salt is None else salt
    mac = hmac.new(key, f"{salt}:{sha256.lower()}".encode("ascii"), hashlib.sha256).hexdigest()
    return InputDigest(f"{salt}:{mac}", key_id(key))


def publisher_key(root: Path | str | None) -> bytes:
    """The digest key of the publisher's series key (created on first use, as a release creates it; refused under
    ``root``: :func:`ppdp.tasks.keys.series_key`)."""
    return digest_key(series_key(None if root is None else Path(root)))


def input_digest(sha256: str, root: Path | str | None) -> InputDigest:
    """The keyed digest of an input (its SHA-256) under the publisher's key for the publish root ``root``."""
    return keyed(sha256, publisher_key(root))


def local_key() -> bytes | None:
    """The digest key on this machine, None when it has no series key (never creates one: a verifier's machine)."""
    key = existing_series_key()
    return None if key is None else digest_key(key)


@dataclass(frozen=True)
class DigestCheck:
    """A published digest checked against an input's SHA-256: ``holds``, ``differs`` or ``not checked`` (``why``)."""

    verdict: Literal["holds", "differs", "not checked"]
    why: str


def check(sha256: str, digest: str | None, digest_key_id: str | None, key: bytes | None) -> DigestCheck:
    """Whether ``digest`` (made under the key ``digest_key_id``) is the keyed digest of the input whose SHA-256 is
    ``sha256``, with this machine's digest key ``key`` (:func:`local_key`)."""
    if not digest or not digest_key_id:
        return DigestCheck("not checked", "no keyed input digest is recorded")
    if key is None:
        return DigestCheck("not checked", NO_KEY)
    if key_id(key) != digest_key_id:
        return DigestCheck("not checked", f"the digest was made under the key {digest_key_id}, this machine's series "
                                          f"key gives {key_id(key)}")
    salt, colon, _ = digest.partition(":")
    if not colon or not salt.isascii() or not salt.isalnum():
        return DigestCheck("differs", "the recorded digest is not a salted keyed digest (salt:mac)")
    mine = keyed(sha256, key, salt).digest
    if hmac.compare_digest(mine, digest):
        return DigestCheck("holds", f"keyed digest ({digest_key_id}) matches")
    return DigestCheck("differs", f"keyed digest ({digest_key_id}) differs")


def listing_sha256(files: list[tuple[str, str]]) -> str:
    """SHA-256 of the lines ``<relative path> <sha256>`` of ``files`` (a partitioned input's files, in partition
    order): the unkeyed hash a partitioned input's keyed digest is taken of."""
    lines = "".join(f"{name} {sha}\n" for name, sha in files)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()

