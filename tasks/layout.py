"""Where releases live under a publish root, read by both the publish step and the audit trail (so that
neither imports the other)."""

from __future__ import annotations

import hashlib
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

from ppdp.tasks.core.errors import PublishError


def ensure_root(root: Path) -> None:
    """Create the publish root if needed and prove it is writable (fails with one line naming it)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".ppdp-write-probe-{secrets.token_hex(4)}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise PublishError(f"publish root {root} is not writable ({exc.strerror or type(exc).__name__})") from None


def release_folder(root: Path, dataset: str, release_id: str) -> Path:
    return root / dataset / release_id


TUNING_FOLDER = "tuning"
"""``ppdp tune``'s folder in a dataset's folder: ``<root>/<dataset>/tuning/<UTC time>/`` (no release id has this
name); each run's folder holds only :data:`TUNING_FILES` (aggregates: no data value)."""
TUNING_FILES = frozenset({"trace.json", "tuning.png"})


COMPARE_FOLDER = "compare"
"""``ppdp compare``'s default folder in a dataset's folder: ``<root>/<dataset>/compare/<UTC time>/``; each run's
folder holds only :data:`COMPARE_FILES` (aggregates: no data value)."""
COMPARE_FILES = frozenset({"compare.html", "compare.json"})
AUX_FOLDERS = {TUNING_FOLDER: TUNING_FILES, COMPARE_FOLDER: COMPARE_FILES}
"""The folders beside a dataset's releases that hold no release (aggregates of a command run), and the only files
each run's folder may hold: ``ppdp audit verify`` accepts them and flags anything else."""


def tuning_folder(root: Path, dataset: str, when: datetime) -> Path:
    """A new folder for one ``ppdp tune`` run: ``<root>/<dataset>/tuning/<YYYYmmddTHHMMSSZ>`` (``-2``, ``-3``, ...
    appended when that second is taken)."""
    return run_folder(root, dataset, TUNING_FOLDER, when)


def run_folder(root: Path, dataset: str, kind: str, when: datetime) -> Path:
    """A new folder for one run of a command whose aggregates live beside the releases (:data:`AUX_FOLDERS`):
    ``<root>/<dataset>/<kind>/<YYYYmmddTHHMMSSZ>`` (``-2``, ``-3``, ... appended when that second is taken)."""
    base = Path(root) / dataset / kind
    stamp = f"{when.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    folder, n = base / stamp, 2
    while os.path.lexists(folder):
        folder, n = base / f"{stamp}-{n}", n + 1
    return folder


def read_parquet_metadata(path: Path) -> dict[str, str]:
    meta = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"ppdp.")}


def parts_digest(parts: list[tuple[str, str]]) -> str:
    """A partitioned release's ``output_sha256``: SHA-256 of its part files' ``file sha256`` lines, sorted by file
    name (so the audit trail's file list alone re-derives it)."""
    return hashlib.sha256("".join(f"{name} {sha}\n" for name, sha in sorted(parts)).encode("utf-8")).hexdigest()


def is_part_file(name: str) -> bool:
    """A partitioned release's table file: ``part-<n>.parquet``."""
    return name.startswith("part-") and name.endswith(".parquet") and name[5:-8].isdigit()
