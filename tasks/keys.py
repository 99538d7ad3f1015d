"""Keys that sign the audit trail, and the local witness of each trail's head; both live outside any publish root.

Where the signing key comes from (the first that is set wins):

1. ``PPDP_AUDIT_KEY_BLOCK``: the name of a Prefect Secret block holding either an Ed25519 private key (PEM,
   PKCS#8, unencrypted) or an HMAC secret (any other text, at least 32 characters). Prefect is imported only then.
2. ``PPDP_AUDIT_KEY``: the *path* of an Ed25519 private key file (PEM, PKCS#8, unencrypted), e.g. made by
   ``openssl genpkey -algorithm ed25519 -out audit-key.pem``.
3. ``PPDP_AUDIT_HMAC_KEY``: the HMAC-SHA256 secret *itself* (at least 32 characters).
4. Otherwise the default key ``<config>/audit-key.pem``, an Ed25519 key created on first use (mode 0600, folder
   0700) with one line on stderr saying so. ``<config>`` is ``$PPDP_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/ppdp``,
   else ``~/.config/ppdp``.

A key file (configured or default) under the publish root is refused: a writer of the root could re-sign.
Verifiers trust the configured key plus the Ed25519 public keys listed in ``PPDP_AUDIT_TRUSTED_KEYS`` (PEM files
separated by ``os.pathsep``: earlier keys after a rotation, or a publisher's key on an auditor's machine).
Verifying never creates a key.

Key ids: ``ed25519:<first 32 hex digits of SHA-256(raw public key)>`` and, for HMAC,
``hmac-sha256:<first 32 hex digits of HMAC(secret, "ppdp audit key id")>`` (the secret is never stored).

The local witness: after each append, ``<config>/witness/<trail_id>.json`` records the signed head of that trail
(never moving backwards), so that ``verify`` run by the same user notices a rewound or truncated trail without
an external witness.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ppdp.tasks.core.errors import PpdpError, PublishError

if TYPE_CHECKING:  # cryptography and Prefect are imported only where a key is made or loaded
    # heavy: cryptography, loaded when a key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from prefect.blocks.system import Secret  # heavy: Prefect, only for a key kept in a Prefect Secret block

ENV_BLOCK = "PPDP_AUDIT_KEY_BLOCK"
ENV_KEY_FILE = "PPDP_AUDIT_KEY"
ENV_HMAC = "PPDP_AUDIT_HMAC_KEY"
ENV_TRUSTED = "PPDP_AUDIT_TRUSTED_KEYS"
ENV_CONFIG_DIR = "PPDP_CONFIG_DIR"
DEFAULT_KEY_NAME = "audit-key.pem"
MIN_HMAC_CHARS = 32
ED25519 = "ed25519"
HMAC_SHA256 = "hmac-sha256"
_KEY_ID_LABEL = b"ppdp audit key id"


@dataclass(frozen=True)
class SigningKey:
    """A key that signs audit entries. ``source`` says where it came from (for messages: never the secret)."""

    key_id: str
    source: str
    path: Path | None = None  # the key file, when there is one
    _private: Ed25519PrivateKey | None = None
    _secret: bytes | None = None  # HMAC secret

    def sign(self, message: bytes) -> str:
        if self._secret is not None:
            return hmac.new(self._secret, message, hashlib.sha256).hexdigest()
        assert self._private is not None  # a key holds an HMAC secret or an Ed25519 private key
        return self._private.sign(message).hex()

    def verifier(self) -> VerifyKey:
        if self._secret is not None:
            return VerifyKey(self.key_id, self.source, _secret=self._secret)
        assert self._private is not None  # a key holds an HMAC secret or an Ed25519 private key
        return VerifyKey(self.key_id, self.source, _public=self._private.public_key())


@dataclass(frozen=True)
class VerifyKey:
    key_id: str
    source: str
    _public: Ed25519PublicKey | None = None
    _secret: bytes | None = None

    def check(self, message: bytes, signature: str) -> bool:
        if not isinstance(signature, str):
            return False
        if self._secret is not None:
            expected = hmac.new(self._secret, message, hashlib.sha256).hexdigest()
            return hmac.compare_digest(expected, signature)
        from cryptography.exceptions import InvalidSignature  # heavy: cryptography, loaded when a signature is checked

        assert self._public is not None  # a key holds an HMAC secret or an Ed25519 public key
        try:
            self._public.verify(bytes.fromhex(signature), message)
        except (InvalidSignature, ValueError):
            return False
        return True


def config_dir() -> Path:
    """``$PPDP_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/ppdp``, else ``~/.config/ppdp``."""
    if os.environ.get(ENV_CONFIG_DIR):
        return Path(os.environ[ENV_CONFIG_DIR]).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "ppdp"


def default_key_path() -> Path:
    return config_dir() / DEFAULT_KEY_NAME


def _raw_public(public) -> bytes:
    # heavy: cryptography, loaded when a key is used
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def ed25519_key_id(public) -> str:
    return f"{ED25519}:{hashlib.sha256(_raw_public(public)).hexdigest()[:32]}"


def hmac_key_id(secret: bytes) -> str:
    return f"{HMAC_SHA256}:{hmac.new(secret, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:32]}"


def _from_text(text: str, source: str) -> SigningKey:
    """A PEM Ed25519 private key, or else an HMAC secret."""
    if text.lstrip().startswith("-----BEGIN"):
        return _ed25519_from_pem(text.encode("utf-8"), source, None)
    return _hmac_from_text(text, source)


def _hmac_from_text(text: str, source: str) -> SigningKey:
    secret = text.strip()
    if len(secret) < MIN_HMAC_CHARS:
        raise PublishError(f"audit key from {source} is too short for HMAC (at least {MIN_HMAC_CHARS} characters; "
                        "e.g. python -c 'import secrets; print(secrets.token_hex(32))')")
    raw = secret.encode("utf-8")
    return SigningKey(hmac_key_id(raw), source, _secret=raw)


def _ed25519_from_pem(pem: bytes, source: str, path: Path | None) -> SigningKey:
    # heavy: cryptography, loaded when a key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        private = load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise PublishError(f"audit key from {source} is not an unencrypted PEM private key") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise PublishError(f"audit key from {source} is not an Ed25519 key")
    return SigningKey(ed25519_key_id(private.public_key()), source, path, _private=private)


def load_key_file(path: Path, source: str = "a key file") -> SigningKey:
    """An Ed25519 private key file (PEM, PKCS#8, unencrypted) as a signing key."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise PublishError(f"cannot read the audit key {path} from {source} ({reason})") from None
    if not text.lstrip().startswith("-----BEGIN"):
        raise PublishError(f"audit key {path} from {source} is not a PEM file (an Ed25519 private key)")
    return _ed25519_from_pem(text.encode("utf-8"), source, path)


def _from_block(name: str) -> SigningKey:
    source = f"Prefect Secret block '{name}' (${ENV_BLOCK})"
    try:
        from prefect.blocks.system import Secret  # heavy: Prefect, only for a key kept in a Prefect Secret block

        # Prefect types load() as "the block or a coroutine" (sync_compatible); called synchronously it is the block
        value = cast("Secret", Secret.load(name)).get()
    except Exception as exc:  # noqa: BLE001 - Prefect raises several types for a missing or unreachable block
        raise PublishError(f"cannot load the audit key from {source} ({type(exc).__name__})") from None
    if not value:
        raise PublishError(f"audit key from {source} is empty")
    return _from_text(str(value), source)


def configured_key() -> SigningKey | None:
    """The configured signing key, or the default key if it exists already; ``None`` if there is none yet."""
    block = os.environ.get(ENV_BLOCK)
    if block:
        return _from_block(block)
    path = os.environ.get(ENV_KEY_FILE)
    if path:
        return load_key_file(Path(path).expanduser(), f"${ENV_KEY_FILE}")
    secret = os.environ.get(ENV_HMAC)
    if secret:
        return _hmac_from_text(secret, f"${ENV_HMAC}")
    default = default_key_path()
    if default.exists():
        return load_key_file(default, "the default key")
    return None


def signing_key(root: Path) -> SigningKey:
    """The key that signs entries under ``root``: the configured one, or the default key (created on first use).
    A key file under the publish root is refused."""
    key = configured_key()
    for what, path in (("audit key", key.path if key is not None else default_key_path()),
                       ("ppdp configuration folder", config_dir())):
        if path is not None and is_under(path, root):
            raise PublishError(f"{what} {path} lives under the publish root {root}: a writer of the root could "
                               "re-sign or rewind the trail; move it out")
    return key or _create_default_key()


def is_under(path: Path, root: Path) -> bool:
    """Whether ``path`` lies under ``root`` (both resolved)."""
    try:
        path.resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def _create_default_key() -> SigningKey:
    # heavy: cryptography, loaded when a key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    path = default_key_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        tmp = path.parent / f".{DEFAULT_KEY_NAME}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)  # fails if another process created the key first: then use that one
                created = True
            except FileExistsError:
                created = False
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise PublishError(f"cannot create the audit signing key {path} ({exc.strerror or type(exc).__name__}); "
                           f"set ${ENV_CONFIG_DIR} or ${ENV_KEY_FILE}") from None
    key = load_key_file(path, "the default key")
    if created:
        sys.stderr.write(f"ppdp: created the audit signing key {path} ({key.key_id}); it signs every audit entry: "
                         "keep it outside the publish root and back it up\n")
        sys.stderr.flush()
    return key


def trusted_keys() -> tuple[dict[str, VerifyKey], list[str]]:
    """The keys a verifier trusts, by key id, and one line per configured key that could not be loaded.
    Never creates a key."""
    keys: dict[str, VerifyKey] = {}
    problems: list[str] = []
    try:
        key = configured_key()
        if key is not None:
            keys[key.key_id] = key.verifier()
    except PpdpError as exc:
        problems.append(str(exc))
    listed = os.environ.get(ENV_TRUSTED, "")
    for item in (p for p in listed.split(os.pathsep) if p.strip()):
        try:
            vk = _read_public_key(Path(item.strip()).expanduser())
            keys[vk.key_id] = vk
        except PublishError as exc:
            problems.append(str(exc))
    return keys, problems


def _read_public_key(path: Path) -> VerifyKey:
    """An Ed25519 public key (PEM), or a private key file whose public half is used."""
    # heavy: cryptography, loaded when a key is used
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_pem_public_key

    source = f"${ENV_TRUSTED}"
    try:
        pem = path.read_bytes()
    except OSError as exc:
        raise PublishError(f"cannot read the trusted key {path} from {source} ({exc.strerror or type(exc).__name__})"
                        ) from None
    key = None
    for loader in (lambda b: load_pem_public_key(b), lambda b: load_pem_private_key(b, password=None)):
        try:
            key = loader(pem)
            break
        except (ValueError, TypeError):
            continue
    if isinstance(key, Ed25519PrivateKey):
        key = key.public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise PublishError(f"trusted key {path} from {source} is not an Ed25519 PEM key")
    return VerifyKey(ed25519_key_id(key), f"{path}", _public=key)


# -- the local witness -------------------------------------------------------------------------------------
def witness_path(trail_id: str) -> Path | None:
    if not isinstance(trail_id, str) or not trail_id or not all(c in "0123456789abcdef" for c in trail_id):
        return None
    return config_dir() / "witness" / f"{trail_id}.json"


def read_local_witness(trail_id: str) -> dict | None:
    """The head last recorded for this trail by this user, or ``None``. A damaged file reads as a head of seq -1
    (a finding for the caller), never as an exception."""
    path = witness_path(trail_id)
    if path is None or not path.exists():
        return None
    try:
        head = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(head, dict) and isinstance(head.get("seq"), int):
            return head
    except (OSError, ValueError):
        pass
    return {"seq": -1, "path": str(path)}


def record_local_witness(head: dict) -> None:
    """Record ``head`` for its trail unless a later head is recorded already; a failure is one warning line."""
    path = witness_path(head.get("trail_id", ""))
    if path is None:
        return
    try:
        current = read_local_witness(head["trail_id"])
        if current is not None and current.get("seq", -1) >= head["seq"]:
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        tmp.write_text(json.dumps(head, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        sys.stderr.write(f"ppdp: warning: cannot update the local audit witness {path} "
                         f"({exc.strerror or type(exc).__name__})\n")


ENV_SERIES_KEY = "PPDP_SERIES_KEY"
KEY_NAME = "series-key"
MIN_KEY_CHARS = 32


def series_key(root: Path | None = None) -> bytes:
    """The publisher's series key: ``$PPDP_SERIES_KEY`` (at least 32 characters), else ``<config>/series-key``
    (created on first use, mode 0600, folder 0700, one line on stderr). A key file under ``root`` is refused."""
    value = os.environ.get(ENV_SERIES_KEY)
    if value:
        if len(value) < MIN_KEY_CHARS:
            raise PublishError(f"${ENV_SERIES_KEY} is shorter than {MIN_KEY_CHARS} characters")
        return value.encode("utf-8")
    path = config_dir() / KEY_NAME
    if root is not None and is_under(path, root):
        raise PublishError(f"series key {path} lives under the publish root {root}: set ${ENV_CONFIG_DIR} or "
                           f"${ENV_SERIES_KEY} to keep it elsewhere")
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise PublishError(f"series key {path}: cannot read it ({exc.strerror})") from None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        print(f"ppdp: created the series key {path} (it unlocks the series ledger and keys the published row order; "
              "keep it with the audit key)", file=sys.stderr)
    except FileExistsError:  # another run created it meanwhile
        pass
    except OSError as exc:
        raise PublishError(f"series key {path}: cannot create it ({exc.strerror})") from None
    return path.read_bytes().strip()


def existing_series_key() -> bytes | None:
    """The series key if this machine has one (the publisher's), else None; never creates one (an auditor's
    machine re-checking a release)."""
    value = os.environ.get(ENV_SERIES_KEY)
    if value:
        return value.encode("utf-8") if len(value) >= MIN_KEY_CHARS else None
    try:
        return (config_dir() / KEY_NAME).read_bytes().strip() or None
    except OSError:
        return None


def series_key_id(key: bytes) -> str:
    """A series key's id (16 hex digits of an HMAC under it): names the key in messages, never reveals it."""
    return hmac.new(key, b"ppdp series key id", hashlib.sha256).hexdigest()[:16]
