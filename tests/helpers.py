"""Small builders shared by several test modules: declared roles, a site folder with its own audit key, and the
same-seed / other-seed runs of a sanitizer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from tests.conftest import census


def declared_tag(name: str, role: Role, kind: ColumnKind, **extra: Any) -> ColumnTag:
    """One column's tag as a spec declares it."""
    return ColumnTag(name=name, role=role, kind=kind, source="declared", reason="test", **extra)


def declared_roles(*columns: tuple[str, Role, ColumnKind]) -> Roles:
    """Roles of declared columns, each given as ``(name, role, kind)``, in that order."""
    return Roles(columns=[declared_tag(name, role, kind) for name, role, kind in columns])


def write_audit_key(path: Path) -> None:
    """A new Ed25519 audit signing key, PEM, at ``path`` (mode 600)."""
    path.write_bytes(Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    path.chmod(0o600)


def site_folder(tmp_path_factory: Any, name: str, rows: int) -> tuple[Path, Path]:
    """A fresh folder holding the census fixture (``rows`` rows) as census.csv, and its ``config`` folder (mode 700)
    with an audit signing key made here (a run killed early never races to create it): ``(folder, config)``."""
    base = tmp_path_factory.mktemp(name)
    census(rows).to_csv(base / "census.csv", index=False)
    config = base / "config"
    config.mkdir(mode=0o700)
    write_audit_key(config / "audit-key.pem")
    return base, config


def seeded_runs(make: Callable[[int], Any], frame: pd.DataFrame, roles: Roles, seed: int) -> tuple[Any, Any, Any]:
    """The outputs of three runs of the sanitizer ``make(s)`` on ``frame``: ``s = seed`` twice, which must publish
    the same table, then ``s = seed + 1``, which must publish another."""
    a, b, c = (make(s).sanitize(frame, roles) for s in (seed, seed, seed + 1))
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(c.frame)
    return a, b, c
