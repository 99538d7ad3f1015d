"""The series ledger: where each input record went in each release of a dataset, kept by the publisher only.

What it stores, and where
-------------------------
One SQLite database per publish root, ``<config>/ledger/<trail_id>.sqlite`` (``<config>`` as for the audit key:
``$PPDP_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/ppdp``, else ``~/.config/ppdp``; ``trail_id`` is the root's audit
trail id, so the ledger follows the root if it moves). A ledger under the publish root is refused, like the key.

* ``releases``: per release, its id, dataset, time, method, unit, records, k, and (DP methods) epsilon and delta;
* ``members``: per release (and table, for a partitioned release) and input record, a keyed fingerprint of the
  record, its class or generating group in that release, and the published row standing for it (-1 where none).

A fingerprint is 64 bits of a keyed hash (SipHash under a key derived from the series key and the dataset name)
of the record's declared identifiers, or of the whole input record when none is declared, plus its occurrence
number among identical records. No data value is stored; without the series key a fingerprint cannot be
recomputed from a record, so the ledger alone does not tell whether someone is in the data. The series key
(``$PPDP_SERIES_KEY``, at least 32 characters, else ``<config>/series-key``, created on first use, mode 0600) also
keys the published row order (:func:`ppdp.tasks.sanitize.base.release_order`).

A release is written to the ledger in one SQLite transaction, under the root's publish lock, after its ``pending``
audit entry and before its folder is renamed into place; a release the audit trail shows rolled back is not
counted (a kill -9 at any point leaves either no ledger entry or one that the audit trail resolves).

What it does not protect against: records whose identifying values change between releases (without declared
identifiers, an edited record is a new record to the ledger), releases of the same people under another dataset
name or root, and anything an attacker knows from outside the releases.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sqlite3
import sys
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from ppdp.schemas.reports import Roles
from ppdp.schemas.series import SeriesEntry, SeriesSpec
from ppdp.tasks import keys
from ppdp.tasks.core.errors import PublishError, ReleaseRejected

ENV_SERIES_KEY = "PPDP_SERIES_KEY"
KEY_NAME = "series-key"
MIN_KEY_CHARS = 32
LEDGER_DIR = "ledger"
PART_WHOLE = ""  # the part name of a release that is one table

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    release_id TEXT PRIMARY KEY, dataset TEXT NOT NULL, created_at TEXT NOT NULL, method TEXT NOT NULL,
    unit TEXT NOT NULL, records INTEGER NOT NULL, k INTEGER, epsilon REAL, delta REAL,
    fingerprinted_by TEXT NOT NULL, keep_groups INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS members (
    release_id TEXT NOT NULL, part TEXT NOT NULL, fp INTEGER NOT NULL, grp INTEGER NOT NULL, row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS members_release ON members (release_id);
"""


class SeriesError(ReleaseRejected):
    """A release the series forbids (composition with earlier releases, or the DP budget): nothing is published."""


# -- the key ------------------------------------------------------------------------------------------------------
def series_key(root: Path | None = None) -> bytes:
    """The publisher's series key: ``$PPDP_SERIES_KEY`` (at least 32 characters), else ``<config>/series-key``
    (created on first use, mode 0600, folder 0700, one line on stderr). A key file under ``root`` is refused."""
    value = os.environ.get(ENV_SERIES_KEY)
    if value:
        if len(value) < MIN_KEY_CHARS:
            raise PublishError(f"${ENV_SERIES_KEY} is shorter than {MIN_KEY_CHARS} characters")
        return value.encode("utf-8")
    path = keys.config_dir() / KEY_NAME
    if root is not None and _is_under(path, root):
        raise PublishError(f"series key {path} lives under the publish root {root}: set ${keys.ENV_CONFIG_DIR} or "
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
        print(f"ppdp: created the series key {path} (it keys the ledger's fingerprints and the published row "
              "order; keep it with the audit key)", file=sys.stderr)
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
        return (keys.config_dir() / KEY_NAME).read_bytes().strip() or None
    except OSError:
        return None


def _is_under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(Path(root).resolve())
        return True
    except ValueError:
        return False


def order_key(key: bytes, dataset: str) -> bytes:
    """The key of a dataset's published row order (derived from the series key)."""
    return hmac.new(key, b"ppdp row order\0" + dataset.encode(), hashlib.sha256).digest()


# -- fingerprints -------------------------------------------------------------------------------------------------
def fingerprint_columns(roles: Roles, frame: pd.DataFrame) -> tuple[list[str], str]:
    """The columns that identify a record across releases, and how that reads in a manifest."""
    ids = [c for c in roles.identifiers if c in frame.columns]
    if ids:
        return ids, f"declared identifiers ({', '.join(ids)})"
    return [str(c) for c in frame.columns], "the whole input record (no identifier is declared)"


class Fingerprints(NamedTuple):
    """The keyed fingerprint of every row of a frame (aligned with it), and what they were taken over."""

    values: np.ndarray
    by: str


def fingerprints(frame: pd.DataFrame, roles: Roles, dataset: str, key: bytes) -> Fingerprints:
    """A keyed 64-bit fingerprint of every row of ``frame`` (the input as read, identifiers included), and what
    it was taken over. Identical records get different fingerprints by their occurrence number."""
    columns, by = fingerprint_columns(roles, frame)
    sub = hmac.new(key, b"ppdp ledger fingerprint\0" + dataset.encode(), hashlib.sha256).digest()
    hash_key = "".join(chr(33 + b % 94) for b in sub[:16])  # 16 printable characters: pandas' SipHash key
    if not len(frame):
        return Fingerprints(np.zeros(0, dtype=np.int64), by)
    cells = frame[columns].astype("string").fillna("\x00<NA>")
    text = cells[columns[0]]
    for c in columns[1:]:
        text = text + "\x1f" + cells[c]
    base = pd.util.hash_pandas_object(text, index=False, hash_key=hash_key).to_numpy()
    occurrence = pd.Series(base).groupby(base).cumcount().to_numpy()
    repeated = occurrence > 0
    if repeated.any():
        again = text[repeated] + "\x1e" + pd.Series(occurrence[repeated], index=text.index[repeated]).astype(str)
        base = base.copy()
        base[repeated] = pd.util.hash_pandas_object(again, index=False, hash_key=hash_key).to_numpy()
    return Fingerprints(base.view(np.int64), by)


# -- the ledger ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LedgerRelease:
    """One release as the ledger holds it."""

    release_id: str
    dataset: str
    created_at: datetime
    method: str
    unit: str
    records: int
    k: int | None
    epsilon: float | None
    delta: float | None
    fingerprinted_by: str
    keep_groups: bool = False


def ledger_path(root: Path) -> Path | None:
    """The root's ledger file (None while the root has no audit trail: no release was ever published there)."""
    from ppdp.tasks import audit

    trail = audit.trail_id(Path(root))
    if trail is None:
        return None
    path = keys.config_dir() / LEDGER_DIR / f"{trail}.sqlite"
    if _is_under(path, root):
        raise PublishError(f"series ledger {path} lives under the publish root {root}: set "
                           f"${keys.ENV_CONFIG_DIR} to keep it elsewhere")
    return path


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(_SCHEMA)
    return conn


def _release_of(row: tuple) -> LedgerRelease:
    rid, dataset, created, method, unit, records, k, eps, delta, by, keep = row
    return LedgerRelease(rid, dataset, datetime.fromisoformat(created), method, unit, int(records),
                         None if k is None else int(k), eps, delta, by, bool(keep))


def _audit_states(root: Path, dataset: str) -> dict[str, str]:
    """release id -> published / pending / rolled_back, from the root's audit trail (releases of ``dataset``)."""
    from ppdp.tasks import audit

    states: dict[str, str] = {}
    if not audit.db_path(Path(root)).exists():
        return states
    for e in audit.list_entries(Path(root)):
        if e.dataset != dataset:
            continue
        if e.status == "pending":
            states.setdefault(e.release_id, "pending")
        elif e.status == "published":
            states[e.release_id] = "published"
        elif e.status == "rolled_back" and states.get(e.release_id) != "published":
            states[e.release_id] = "rolled_back"
    return states


def dataset_releases(root: Path, dataset: str, states: dict[str, str] | None = None
                     ) -> list[tuple[LedgerRelease, str]]:
    """Every release of ``dataset`` in the root's ledger, oldest first, with its state per the audit trail
    (published, pending: its publish was interrupted, rolled_back or never published: not counted). ``states``:
    :func:`_audit_states` when the caller has read them already."""
    path = ledger_path(root)
    if path is None or not path.exists():
        return []
    with closing(_connect(path)) as conn:
        rows = conn.execute("SELECT release_id, dataset, created_at, method, unit, records, k, epsilon, delta, "
                            "fingerprinted_by, keep_groups FROM releases WHERE dataset = ? ORDER BY created_at, "
                            "release_id", (dataset,)).fetchall()
    states = _audit_states(root, dataset) if states is None else states
    return [(_release_of(r), states.get(r[0], "never published")) for r in rows]


def earlier_releases(root: Path, dataset: str, series: SeriesSpec, now: datetime, exclude: str | None = None,
                     before: str | None = None) -> list[LedgerRelease]:
    """The earlier releases of ``dataset`` that count for a release made at ``now`` (oldest first): published ones
    and interrupted ones (fail closed), within the spec's window. ``exclude``: a release id left out; ``before``:
    only releases whose id sorts before it (made earlier: re-checking a past release). Raises
    :class:`SeriesError` when the audit trail shows a published release of the dataset that the ledger does not
    hold (the series cannot be judged)."""
    states = _audit_states(root, dataset)  # the audit trail, read once
    held = [(r, state) for r, state in dataset_releases(root, dataset, states) if r.release_id != exclude
            and (before is None or r.release_id < before)]
    known = {r.release_id for r, _ in held}
    missing = sorted(rid for rid, state in states.items()
                     if state in ("published", "pending") and rid not in known and rid != exclude
                     and (before is None or rid < before))
    if missing:
        where = ledger_path(root)
        raise SeriesError(f"series: earlier release {missing[0]} of dataset {dataset} is not in the series ledger "
                          f"{where} (published before ppdp kept one, or the ledger was lost): this release cannot be "
                          "judged with it; restore the ledger, or publish under a new root or dataset name")
    counted = [r for r, state in held if state in ("published", "pending")]
    if series.within is not None:
        counted = [r for r in counted if r.created_at >= now - series.within]
    if series.last is not None:
        counted = counted[-series.last:]
    return counted


def members(root: Path, release_id: str) -> pd.DataFrame:
    """The ledger's records of one release: columns part, fp, grp, row."""
    path = ledger_path(root)
    if path is None or not path.exists():
        return pd.DataFrame({"part": pd.Series(dtype=str), "fp": pd.Series(dtype=np.int64),
                             "grp": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64)})
    with closing(_connect(path)) as conn:
        frame = pd.read_sql_query("SELECT part, fp, grp, row FROM members WHERE release_id = ?", conn,
                                  params=(release_id,))
    return frame.astype({"fp": np.int64, "grp": np.int64, "row": np.int64})


def record_release(root: Path, release: LedgerRelease, table: pd.DataFrame, counted: list[str],
                   series: SeriesSpec) -> None:
    """Write one release and its records to the root's ledger, in one transaction. Call under the root's publish
    lock, after the release's ``pending`` audit entry. ``counted``: the earlier releases the release was judged
    with; if the ledger now holds another release of the dataset that counts, another run published meanwhile and
    the release is refused (:class:`SeriesError`, nothing written)."""
    from ppdp.tasks import audit

    path = ledger_path(root)
    if path is None:
        raise PublishError(f"series ledger: the publish root {root} has no audit trail yet")
    now = [r.release_id for r in earlier_releases(root, release.dataset, series, release.created_at,
                                                  exclude=release.release_id)]
    late = sorted(set(now) - set(counted))
    if late:
        raise SeriesError(f"series: release {late[0]} of dataset {release.dataset} was published while this one was "
                          "being made: run again so that it is judged with it")
    rows = zip([release.release_id] * len(table), table["part"].astype(str).tolist(),
               table["fp"].astype(np.int64).tolist(), table["grp"].astype(np.int64).tolist(),
               table["row"].astype(np.int64).tolist())
    with closing(_connect(path)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM members WHERE release_id = ?", (release.release_id,))
            conn.execute("DELETE FROM releases WHERE release_id = ?", (release.release_id,))
            conn.execute("INSERT INTO releases VALUES (?,?,?,?,?,?,?,?,?,?,?)", (
                release.release_id, release.dataset, release.created_at.astimezone(UTC).isoformat(), release.method,
                release.unit, int(release.records), release.k, release.epsilon, release.delta,
                release.fingerprinted_by, int(release.keep_groups)))
            conn.executemany("INSERT INTO members VALUES (?,?,?,?,?)", rows)
            audit.fault_point("ledger-uncommitted")  # test hook: killed inside the transaction
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def forget_release(root: Path, release_id: str) -> None:
    """Drop a release from the ledger (its publish was rolled back)."""
    path = ledger_path(root)
    if path is None or not path.exists():
        return
    with closing(_connect(path)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM members WHERE release_id = ?", (release_id,))
        conn.execute("DELETE FROM releases WHERE release_id = ?", (release_id,))
        conn.execute("COMMIT")


def series_entries(root: Path, dataset: str) -> list[SeriesEntry]:
    """``ppdp series``: every release of the dataset the ledger holds, oldest first."""
    return [SeriesEntry(release_id=r.release_id, created_at=r.created_at.isoformat(timespec="seconds"),
                        method=r.method, unit=r.unit, records=r.records, k=r.k, epsilon=r.epsilon, delta=r.delta,
                        state=state) for r, state in dataset_releases(root, dataset)]


def window_text(series: SeriesSpec) -> str:
    parts = []
    if series.last is not None:
        parts.append(f"the latest {series.last}")
    if series.within is not None:
        parts.append(f"those within {_duration(series.within)}")
    return "all earlier releases of the dataset" if not parts else \
        f"{' and '.join(parts)} earlier release(s) of the dataset"


def _duration(value: timedelta) -> str:
    days, seconds = value.days, value.seconds
    return f"P{days}D" if not seconds else f"P{days}DT{seconds}S"


@dataclass(frozen=True)
class SeriesRecord:
    """What the publish step writes to the ledger for a release (see :func:`record_release`)."""

    release: LedgerRelease
    members: pd.DataFrame
    counted: tuple[str, ...]
    series: SeriesSpec

    def write(self, root: Path) -> None:
        record_release(root, self.release, self.members, list(self.counted), self.series)


def previous_groups(root: Path, dataset: str, series: SeriesSpec, now: datetime, prints: np.ndarray,
                    before: str | None = None) -> tuple[np.ndarray, str | None]:
    """``series.keep_groups``: each record's class or group in the dataset's latest counted release that has classes
    or groups (-1: not in it), and that release's id (None when there is none: every record is new)."""
    prints = np.asarray(prints, dtype=np.int64)
    for rel in reversed(earlier_releases(root, dataset, series, now, before=before)):
        if rel.unit not in ("equivalence_class", "generating_group"):
            continue
        m = members(root, rel.release_id)
        m = m[(m["part"] == PART_WHOLE) & (m["grp"] >= 0)]
        if not len(m):
            continue
        grp = pd.Series(m["grp"].to_numpy(), index=m["fp"].to_numpy())
        grp = grp[~grp.index.duplicated()]
        return grp.reindex(prints).fillna(-1).to_numpy(dtype=np.int64), rel.release_id
    return np.full(prints.size, -1, dtype=np.int64), None


def record_of(spec, release_id: str, created_at: datetime, method, rows: int, k: int | None, fingerprinted_by: str,
              report, members_table: pd.DataFrame) -> SeriesRecord:
    """What the publish step writes to the ledger for a release about to be published (``report``: its
    :class:`ppdp.schemas.series.SeriesReport`; ``members_table``: where its records went)."""
    dp = method.unit == "differential_privacy" and report.budget is not None
    release = LedgerRelease(release_id=release_id, dataset=spec.dataset, created_at=created_at, method=method.name,
                            unit=method.unit, records=int(rows), k=k, fingerprinted_by=fingerprinted_by,
                            epsilon=report.budget.epsilon if dp else None, delta=report.budget.delta if dp else None,
                            keep_groups=spec.series.keep_groups)
    return SeriesRecord(release=release, members=members_table, counted=tuple(report.earlier), series=spec.series)
