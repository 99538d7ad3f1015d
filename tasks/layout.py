"""Where releases live under a publish root, read by both the publish step and the audit trail (so that
neither imports the other)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterable
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


DATA_FOLDER = "data"
"""A distributed release's subfolder of row files (``data/part-00000.parquet``, ...): the only subfolder a release
folder may hold."""
_DATA_FILE = re.compile(r"^data/part-[0-9]{5,}\.parquet$")


def data_file_name(i: int) -> str:
    """The ``i``-th row file of a distributed release, relative to the release folder: ``data/part-00000.parquet``
    (5 digits; more from 100000 on)."""
    if i < 0:
        raise ValueError("a data file's number is 0 or more")
    return f"{DATA_FOLDER}/part-{i:05d}.parquet"


def is_data_file(name: str) -> bool:
    """A distributed release's row file, by its name relative to the release folder (``data/part-<n>.parquet``,
    at least 5 digits)."""
    return bool(_DATA_FILE.match(name))


def data_file_index(name: str) -> int:
    """The number of a row file named by :func:`data_file_name` (its order in the table)."""
    return int(name.rsplit("-", 1)[1].removesuffix(".parquet"))


def folder_listing(folder: Path, signed: Iterable[str] = ()) -> set[str]:
    """The entries of a release folder as relative names: its top-level names, with ``data`` replaced by
    ``data/<name>`` for each entry of that subfolder when it is a real folder (not a link) that holds something or
    that ``signed`` (the names the release should hold) expects. So an empty ``data`` folder planted in a release
    without row files stays ``data`` (an unexpected entry), as does any other subfolder, a link, or a folder inside
    ``data/``. Raises :class:`OSError` when a folder cannot be listed."""
    top = set(os.listdir(folder))
    if DATA_FOLDER not in top or not stat.S_ISDIR(os.lstat(Path(folder) / DATA_FOLDER).st_mode):
        return top
    inner = os.listdir(Path(folder) / DATA_FOLDER)
    expects = any(str(name).startswith(f"{DATA_FOLDER}/") for name in signed)
    if not inner and not expects:
        return top
    return (top - {DATA_FOLDER}) | {f"{DATA_FOLDER}/{name}" for name in inner}


def release_names(folder: Path) -> list[str]:
    """Every file of a release folder (or its staging folder) by relative name, ``data/`` walked; sorted. Raises
    :class:`PublishError` (one line) when it holds a link, another subfolder, or a folder inside ``data/``."""
    folder = Path(folder)
    names = []
    for name in sorted(folder_listing(folder, [f"{DATA_FOLDER}/"])):
        mode = os.lstat(folder / name).st_mode
        if not stat.S_ISREG(mode):
            what = "folder" if stat.S_ISDIR(mode) else "link or special file"
            raise PublishError(f"release folder {folder} holds an unexpected {what} {name} (a release holds files, "
                               f"and {DATA_FOLDER}/ for row files)")
        names.append(name)
    return names
