"""The series ledger: which input records each release under a publish root held, and where each went; kept by the
publisher only.

A series is the same people, whatever the file looks like. An attacker holding every folder published under a root
composes releases of the same records whatever their dataset name, column order or extra columns, so the ledger is
one per publish root (per audit trail) and a release is judged with every earlier release that shares records with
it, of any dataset.

What it stores, and where
-------------------------
``<config>/ledger/<trail_id>/`` (``<config>`` as for the audit key: ``$PPDP_CONFIG_DIR``, else
``$XDG_CONFIG_HOME/ppdp``, else ``~/.config/ppdp``; ``trail_id`` is the root's audit trail id, so the ledger follows
the root if it moves). A ledger under the publish root is refused, like the key.

* ``ledger.sqlite``: ``meta`` (format, the ledger's own fingerprint key wrapped under the series key, that key's id)
  and ``releases`` (per release: id, dataset, time, method, unit, records, k, DP epsilon and delta, the fingerprint
  basis, keep_groups);
* ``members/<release_id>/part-<n>.parquet``: per input record of the release, its keyed fingerprint (``fp``), its
  class or generating group (``grp``, -1 none), the published row standing for it (``row``, -1 none) and the table
  of a partitioned release (``part``); each file sorted by ``fp``, so a range of fingerprints reads only the row
  groups that hold it (bounded memory on a table of any size).

Fingerprints
------------
A record's fingerprint is 64 bits of SipHash, keyed by the ledger's own key, over a hash of the record's canonical
form: its values on the *basis* columns taken in the order of their names, numbers in one form whatever their type
(``3``, ``3.0`` and the text ``3`` are one value), missing values alike, plus its occurrence number among identical
records. The basis is the declared identifiers when there are any, else every input column that is
published and not constant (columns dropped before sanitizing, and columns holding one value, carry nothing that
tells records apart). So a fingerprint depends neither on the column order, nor on an added constant or unpublished
column, nor on the dataset's name. Each release records its basis; a later input that has an earlier release's
basis columns (and perhaps more) is fingerprinted on that basis too, so its records are followed even when it
gained columns. An input lacking a column of an earlier release's basis cannot be matched with that release: it is
refused when that release is of the same dataset (fail closed), and not matched otherwise (said in the README).

The ledger's key is made with the ledger (derived from the series key then, so that one publisher fingerprints a
record alike under every root and a release is reproducible) and stored wrapped (AES-256-GCM) under a key derived
from the publisher's series key (``$PPDP_SERIES_KEY``, at least 32 characters, else ``<config>/series-key``, created on
first use, mode 0600), with that key's id. Rotating the series key therefore never resets history: a ledger
written under another series key refuses in one line until ``ppdp series-rekey`` (given the old key) binds it to
the new one; the fingerprints never change. No data value is stored; without the keys a fingerprint cannot be
recomputed from a record, so the ledger alone does not tell whether someone is in the data. The series key also
keys the published row order (:func:`order_key`).

A release is written to the ledger under the root's publish lock, after its ``pending`` audit entry and before its
folder is renamed into place: its member files first, then its ``releases`` row in one SQLite transaction (the row
is what counts: member files without a row are ignored and replaced). A release the audit trail shows rolled back
is not counted (a kill -9 at any point leaves either no ledger entry or one that the audit trail resolves), and a
release the audit trail shows published that the ledger lacks refuses every later release (the series cannot be
judged).

What it does not protect against: records whose basis values change between releases (without declared
identifiers, an edited record is a new record to the ledger), releases of the same people under another publish
root, and anything an attacker knows from outside the releases.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.schemas.reports import Roles
from ppdp.schemas.series import SeriesEntry, SeriesSpec
from ppdp.schemas.units import find_unit, unit_of
from ppdp.tasks import audit, keys
from ppdp.tasks.core.errors import PublishError, ReleaseRejected
from ppdp.tasks.fingerprints import Basis, fingerprints, record_basis
from ppdp.tasks.fingerprints import basis_of as basis_of  # re-exported: the series' fingerprints
from ppdp.tasks.fingerprints import column_hashes as column_hashes
from ppdp.tasks.fingerprints import record_hashes as record_hashes
from ppdp.tasks.keys import (  # noqa: F401  (the series key lives beside the audit key; re-exported here)
    ENV_SERIES_KEY,
    KEY_NAME,
    MIN_KEY_CHARS,
    existing_series_key,
    series_key,
)
from ppdp.tasks.keys import series_key_id as key_id
from ppdp.tasks.layout import release_folder
from ppdp.tasks.ledger_keys import LedgerKey, first_data_key, unwrap_data_key, wrap_data_key
from ppdp.tasks.sanitize.keeping import Kept

LEDGER_DIR = "ledger"
LEDGER_DB = "ledger.sqlite"
MEMBERS_DIR = "members"
FORMAT = "2"
PART_WHOLE = ""  # the part name of a release that is one table
MEMBER_ROWS = 1 << 20  # rows per row group of a member file (a range of fingerprints reads whole row groups)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS releases (
    release_id TEXT PRIMARY KEY, dataset TEXT NOT NULL, created_at TEXT NOT NULL, method TEXT NOT NULL,
    unit TEXT NOT NULL, records INTEGER NOT NULL, k INTEGER, epsilon REAL, delta REAL,
    basis TEXT NOT NULL, basis_kind TEXT NOT NULL, keep_groups INTEGER NOT NULL DEFAULT 0,
    members INTEGER NOT NULL);
"""


class SeriesError(ReleaseRejected):
    """A release the series forbids (composition with earlier releases, the DP budget, a ledger that cannot be read
    with this machine's keys): nothing is published."""


# -- the series key (ppdp.tasks.keys holds it beside the audit key) ------------------------------------------------
def order_key(key: bytes, dataset: str) -> bytes:
    """The key of a dataset's published row order (derived from the series key)."""
    return hmac.new(key, b"ppdp row order\0" + dataset.encode(), hashlib.sha256).digest()


# -- where the ledger lives, and its own key ---------------------------------------------------------------------
def ledger_folder(root: Path) -> Path | None:
    """The root's ledger folder (None while the root has no audit trail: no release was ever made there)."""
    trail = audit.trail_id(Path(root))
    if trail is None:
        return None
    folder = keys.config_dir() / LEDGER_DIR / trail
    if keys.is_under(folder, root):
        raise PublishError(f"series ledger {folder} lives under the publish root {root}: set "
                           f"${keys.ENV_CONFIG_DIR} to keep it elsewhere")
    return folder


def ledger_path(root: Path) -> Path | None:
    """The root's ledger database (None while the root has no audit trail)."""
    folder = ledger_folder(root)
    return None if folder is None else folder / LEDGER_DB


def _legacy_path(root: Path) -> Path | None:
    """Where ppdp kept a root's ledger before fingerprints followed records whatever the file looks like."""
    trail = audit.trail_id(Path(root))
    return None if trail is None else keys.config_dir() / LEDGER_DIR / f"{trail}.sqlite"


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(_SCHEMA)
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(n): str(v) for n, v in conn.execute("SELECT name, value FROM meta").fetchall()}


def ledger_key(root: Path, key: bytes | None = None) -> LedgerKey:
    """The root's ledger key under this machine's series key (``key``; default :func:`series_key`); for a root with
    no ledger yet, the key a new ledger starts with. Raises :class:`SeriesError` (one line) when the ledger is bound
    to another series key, or was written by an earlier ppdp whose fingerprints this one cannot follow."""
    key = series_key(root) if key is None else key
    path = ledger_path(root)
    if path is None or not path.exists():
        legacy = _legacy_path(root)
        if legacy is not None and legacy.exists():
            raise SeriesError(f"series: the ledger {legacy} was written by an earlier ppdp, whose fingerprints depend "
                              "on the dataset's name and column order: this ppdp cannot follow its records, so no "
                              "later release under this root can be judged with the earlier ones; nothing published")
        return LedgerKey(first_data_key(key), stored=False)
    with closing(_connect(path)) as conn:
        meta = _meta(conn)
    if meta.get("format") != FORMAT or "wrapped" not in meta:
        raise SeriesError(f"series: the ledger {path} is not a ledger this ppdp can read (format "
                          f"{meta.get('format', 'unknown')}); nothing published")
    data = unwrap_data_key(meta["wrapped"], key, meta.get("trail", ""))
    if data is None:
        raise SeriesError(f"series: the ledger {path} is bound to the series key {meta.get('key_id', '?')}, and this "
                          f"machine's series key is {key_id(key)}: set ${ENV_SERIES_KEY} (or "
                          f"{keys.config_dir() / KEY_NAME}) to the key the ledger was written with, or bind the ledger "
                          f"to this key with `ppdp series-rekey --root {root} --old-key-file FILE`; nothing published")
    return LedgerKey(data, stored=True)


def rekey(root: Path, old: bytes, new: bytes | None = None) -> tuple[str, str]:
    """``ppdp series-rekey``: bind the root's ledger to the series key ``new`` (default: this machine's): its own
    key is unwrapped with ``old`` and wrapped again; fingerprints, releases and members do not change. Returns
    (old key id, new key id). Raises :class:`PublishError` (one line) when there is no ledger or ``old`` does not
    open it."""
    new = series_key(root) if new is None else new
    path = ledger_path(root)
    if path is None or not path.exists():
        raise PublishError(f"no series ledger for the publish root {root} on this machine")
    with closing(_connect(path)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            meta = _meta(conn)
            trail = meta.get("trail", "")
            data = unwrap_data_key(meta.get("wrapped", ""), old, trail) if meta.get("format") == FORMAT else None
            if data is None:
                raise PublishError(f"the old key (id {key_id(old)}) does not open the ledger {path} (bound to "
                                   f"{meta.get('key_id', '?')}): give the key the ledger was written with")
            conn.execute("UPDATE meta SET value = ? WHERE name = 'wrapped'", (wrap_data_key(data, new, trail),))
            conn.execute("UPDATE meta SET value = ? WHERE name = 'key_id'", (key_id(new),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return key_id(old), key_id(new)


@dataclass(frozen=True)
class Identity:
    """An input's records as the root's ledger knows them.

    ``prints``: each input row's fingerprint on the release's own ``basis`` (aligned with the rows as read);
    ``aliases``: for each other basis an earlier release used that this input has every column of, its
    fingerprints mapped to the own ones; ``unmatched``: for each earlier basis this input lacks columns of, those
    columns; ``key``: the ledger key every fingerprint is taken under."""

    basis: Basis
    prints: np.ndarray
    key: LedgerKey
    aliases: dict[str, pd.Series] = field(default_factory=dict)
    unmatched: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def by(self) -> str:
        return self.basis.text

    def translate(self, members: pd.DataFrame, basis: Basis) -> pd.DataFrame:
        """An earlier release's members with their fingerprints in this input's own basis (records of that release
        not in this input keep theirs, which match no record here)."""
        if basis.key == self.basis.key or basis.key not in self.aliases or not len(members):
            return members
        mapped = self.aliases[basis.key].reindex(members["fp"].to_numpy())
        own = mapped.to_numpy(dtype=np.float64, na_value=np.nan)
        found = ~np.isnan(own)
        fp = members["fp"].to_numpy(dtype=np.int64).copy()
        fp[found] = mapped.to_numpy()[found].astype(np.int64)
        return members.assign(fp=fp)


def match_bases(root: Path, basis: Basis, columns: Sequence[str]) -> tuple[list[Basis], dict[str, tuple[str, ...]]]:
    """The bases of the root's earlier releases other than ``basis``: those an input of ``columns`` can be
    fingerprinted on too, and (by key) the columns it lacks of the others."""
    present = set(columns)
    others: list[Basis] = []
    unmatched: dict[str, tuple[str, ...]] = {}
    for other in ledger_bases(root):
        if other.key == basis.key:
            continue
        missing = tuple(c for c in other.columns if c not in present)
        if missing:
            unmatched[other.key] = missing
        else:
            others.append(other)
    return others, unmatched


def refuse_unmatched(release: LedgerRelease, dataset: str, unmatched: dict[str, tuple[str, ...]]) -> bool:
    """Whether the earlier ``release`` is fingerprinted on a basis this input lacks columns of (it cannot be
    matched); raises :class:`SeriesError` when it is a release of ``dataset`` itself (the series cannot be judged)."""
    if release.basis.key not in unmatched:
        return False
    if release.dataset == dataset:
        cols = ", ".join(unmatched[release.basis.key])
        raise SeriesError(f"series: earlier release {release.release_id} of dataset {dataset} followed its records "
                          f"by their values in columns that include {cols}, which this input lacks: its records "
                          f"cannot be matched with that release's; keep {cols} in the input (declare it dropped if it "
                          "must not be published): nothing published")
    return True


def identify(frame: pd.DataFrame, roles: Roles, root: Path, key: bytes | None = None) -> Identity:
    """Fingerprint an input (as read, identifiers included) for the root's ledger: on the release's own basis, and
    on every basis of an earlier release whose columns the input has."""
    lk = ledger_key(root, key)
    basis = record_basis(roles, frame)
    prints = fingerprints(frame, basis.columns, lk.hash_key)
    aliases: dict[str, pd.Series] = {}
    others, unmatched = match_bases(root, basis, list(frame.columns))
    for other in others:
        alias = pd.Series(prints, index=fingerprints(frame, other.columns, lk.hash_key))
        aliases[other.key] = alias[~alias.index.duplicated()]
    return Identity(basis=basis, prints=prints, key=lk, aliases=aliases, unmatched=unmatched)


# -- the ledger's releases ----------------------------------------------------------------------------------------
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
    basis: Basis
    keep_groups: bool = False
    published: bool = True  # per the audit trail (counted_releases); False: pending, its publish interrupted


_COLUMNS = ("release_id, dataset, created_at, method, unit, records, k, epsilon, delta, basis, basis_kind, "
            "keep_groups")


def _release_of(row: tuple) -> LedgerRelease:
    rid, dataset, created, method, unit, records, k, eps, delta, basis, kind, keep = row
    return LedgerRelease(rid, dataset, datetime.fromisoformat(created), method, unit, int(records),
                         None if k is None else int(k), eps, delta, Basis.of(basis, kind), bool(keep))


def _all_releases(root: Path) -> list[LedgerRelease]:
    path = ledger_path(root)
    if path is None or not path.exists():
        return []
    with closing(_connect(path)) as conn:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM releases ORDER BY created_at, release_id").fetchall()
    return [_release_of(r) for r in rows]


def ledger_bases(root: Path) -> list[Basis]:
    """The distinct bases of the releases the root's ledger holds."""
    seen: dict[str, Basis] = {}
    for r in _all_releases(root):
        seen.setdefault(r.basis.key, r.basis)
    return list(seen.values())


def _audit_states(root: Path) -> dict[str, tuple[str, str]]:
    """release id -> (dataset, published / pending / rolled_back) from the root's audit trail (every dataset)."""
    states: dict[str, tuple[str, str]] = {}
    if not audit.db_path(Path(root)).exists():
        return states
    for e in audit.list_entries(Path(root)):
        name = str(e.dataset or "")
        now = states.get(e.release_id, (name, ""))[1]
        if e.status == "pending" and not now:
            states[e.release_id] = (name, "pending")
        elif e.status == "published":
            states[e.release_id] = (name, "published")
        elif e.status == "rolled_back" and now != "published":
            states[e.release_id] = (name, "rolled_back")
    return states


def dataset_releases(root: Path, dataset: str | None = None) -> list[tuple[LedgerRelease, str]]:
    """Every release in the root's ledger (of ``dataset``, or of every dataset), oldest first, with its state per
    the audit trail (published, pending: its publish was interrupted, rolled_back or never published: not
    counted)."""
    states = _audit_states(root)
    return [(r, states.get(r.release_id, ("", "never published"))[1]) for r in _all_releases(root)
            if dataset is None or r.dataset == dataset]


def counted_releases(root: Path, exclude: str | None, before: str | None) -> list[LedgerRelease]:
    """Published and interrupted releases of the ledger (fail closed), after checking that every such release of
    the audit trail is in the ledger."""
    states = _audit_states(root)
    held = [r for r in _all_releases(root) if r.release_id != exclude and (before is None or r.release_id < before)]
    known = {r.release_id for r in held}
    missing = sorted((rid, d) for rid, (d, state) in states.items()
                     if state in ("published", "pending") and rid not in known and rid != exclude
                     and (before is None or rid < before))
    if missing:
        rid, dataset = missing[0]
        raise SeriesError(f"series: release {rid} (dataset {dataset}) is in the audit trail but not in the series "
                          f"ledger {ledger_path(root)} (the ledger was lost or replaced): no later release under this "
                          "root can be judged with it; restore the ledger from a backup: nothing published")
    return [replace(r, published=states[r.release_id][1] == "published") for r in held
            if states.get(r.release_id, ("", ""))[1] in ("published", "pending")]


def published_folder(root: Path, rel: LedgerRelease) -> Path:
    """The folder of an earlier release the series counts, for the figures that read what it published.

    Raises :class:`SeriesError` when the audit trail says it was published and its folder (its manifest) is gone
    from the publish root: whoever was given it still holds it, and this release cannot be judged against it
    (fail closed). A pending release (its publish interrupted) may have no folder: returned as is."""
    folder = release_folder(root, rel.dataset, rel.release_id)
    if rel.published and not (folder / "manifest.json").is_file():
        raise SeriesError(f"series: release {rel.release_id} of dataset {rel.dataset} was published (audit trail) "
                          f"and counts in the series, but its folder {folder} is gone from the publish root: this "
                          "release cannot be judged against what it published (whoever was given it still holds "
                          "it); restore the folder from a backup: nothing published")
    return folder


@dataclass(frozen=True)
class Earlier:
    """An earlier release that counts, with its members in the current input's fingerprints."""

    release: LedgerRelease
    members: pd.DataFrame
    common: int  # records of the current input it holds


def sharing_releases(root: Path, dataset: str, identity: Identity | None, prints: np.ndarray | None = None,
                     exclude: str | None = None, before: str | None = None,
                     counted: list[LedgerRelease] | None = None) -> list[Earlier]:
    """Every earlier release that counts and shares records with this input (oldest first, whatever the series
    window): published and interrupted ones (fail closed) of ``dataset``, and of any other dataset whose records
    overlap those of ``prints`` (the fingerprints of the records the release is about; default
    ``identity.prints``). ``exclude``: a release id left out; ``before``: only releases whose id sorts before it
    (re-checking a past release); ``counted``: the ledger's counted releases as already read (:func:`read_sharing`).

    Raises :class:`SeriesError` when the audit trail shows a published release the ledger does not hold, or an
    earlier release of ``dataset`` fingerprinted its records on columns this input lacks (the series cannot be
    judged)."""
    if counted is None:
        counted = counted_releases(root, exclude, before)
    if prints is None:
        prints = identity.prints if identity is not None else np.zeros(0, dtype=np.int64)
    own = np.unique(np.asarray(prints, dtype=np.int64))
    out: list[Earlier] = []
    for rel in counted:
        if identity is not None and refuse_unmatched(rel, dataset, identity.unmatched):
            continue
        wanted = own
        if identity is not None and rel.basis.key != identity.basis.key and rel.basis.key in identity.aliases:
            wanted = np.sort(identity.aliases[rel.basis.key].index.to_numpy(dtype=np.int64))
        m = members_touching(root, rel.release_id, wanted)
        if identity is not None:
            m = identity.translate(m, rel.basis)
        common = int(np.isin(own, m["fp"].to_numpy(dtype=np.int64)).sum()) if own.size else 0
        if rel.dataset != dataset and not common:
            continue
        out.append(Earlier(rel, m, common))
    return out


@dataclass(frozen=True)
class Sharing:
    """The ledger as one release run reads it, once, before anything is sanitized: ``seen``, the ids of the
    releases counted then (:func:`record_release` refuses the release when one was added since), and ``earlier``,
    those sharing records with the input (:func:`sharing_releases`, whatever the series window)."""

    seen: tuple[str, ...]
    earlier: list[Earlier]


def read_sharing(root: Path, dataset: str, identity: Identity | None, prints: np.ndarray) -> Sharing:
    """:class:`Sharing` for a release of ``dataset`` about the records whose fingerprints are ``prints``."""
    counted = counted_releases(root, None, None)
    return Sharing(tuple(r.release_id for r in counted),
                   sharing_releases(root, dataset, identity, prints, counted=counted))


def in_window(earlier: list[Earlier], series: SeriesSpec, now: datetime) -> list[Earlier]:
    """The releases the series window counts (``last``: the latest N; ``within``: made within that long)."""
    if series.within is not None:
        earlier = [e for e in earlier if e.release.created_at >= now - series.within]
    if series.last is not None:
        earlier = earlier[-series.last:]
    return earlier


def earlier_releases(root: Path, dataset: str, series: SeriesSpec, now: datetime, identity: Identity | None,
                     exclude: str | None = None, before: str | None = None, prints: np.ndarray | None = None
                     ) -> list[Earlier]:
    """:func:`sharing_releases` within the series window: the earlier releases a release made at ``now`` is judged
    with."""
    return in_window(sharing_releases(root, dataset, identity, prints, exclude, before), series, now)


# -- members ------------------------------------------------------------------------------------------------------
def _members_folder(root: Path, release_id: str) -> Path:
    folder = ledger_folder(root)
    if folder is None:
        raise PublishError(f"series ledger: the publish root {root} has no audit trail yet")
    return folder / MEMBERS_DIR / release_id


def empty_members() -> pd.DataFrame:
    return pd.DataFrame({"part": pd.Series(dtype=str), "fp": pd.Series(dtype=np.int64),
                         "grp": pd.Series(dtype=np.int64), "row": pd.Series(dtype=np.int64)})


MEMBER_SCHEMA = pa.schema([("part", pa.string()), ("fp", pa.int64()), ("grp", pa.int64()), ("row", pa.int64())])


def write_member_file(table: pd.DataFrame, path: Path) -> int:
    """One member file: ``table`` (part, fp, grp, row) sorted by fingerprint, fsynced. Returns its rows."""
    order = np.argsort(table["fp"].to_numpy(dtype=np.int64), kind="stable")
    arrow = pa.Table.from_arrays([
        pa.array(table["part"].astype(str).to_numpy()[order], pa.string()),
        pa.array(table["fp"].to_numpy(dtype=np.int64)[order]),
        pa.array(table["grp"].to_numpy(dtype=np.int64)[order]),
        pa.array(table["row"].to_numpy(dtype=np.int64)[order])], schema=MEMBER_SCHEMA)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pq.write_table(arrow, path, row_group_size=MEMBER_ROWS)
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
    return arrow.num_rows


def member_files(root: Path, release_id: str) -> list[Path]:
    folder = _members_folder(root, release_id)
    return sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []


def fp_filters(fp_range: tuple[int, int]) -> list[tuple[str, str, int]]:
    """pyarrow filters for fingerprints in [lo, hi) (hi past the largest int64: no upper bound)."""
    lo, hi = int(fp_range[0]), int(fp_range[1])
    out = [] if lo <= -(2**63) else [("fp", ">=", lo)]
    return out + ([] if hi >= 2**63 else [("fp", "<", hi)])


def members(root: Path, release_id: str, fp_range: tuple[int, int] | None = None) -> pd.DataFrame:
    """The ledger's records of one release: columns part, fp, grp, row (``fp_range``: only fingerprints in
    [lo, hi), read from the row groups that hold them)."""
    files = member_files(root, release_id)
    if not files:
        return empty_members()
    filters = None if fp_range is None else fp_filters(fp_range)
    tables = [pq.read_table(f, filters=filters or None, schema=MEMBER_SCHEMA) for f in files]
    frame = pa.concat_tables(tables).to_pandas()
    return frame.astype({"fp": np.int64, "grp": np.int64, "row": np.int64})


def members_touching(root: Path, release_id: str, prints: np.ndarray) -> pd.DataFrame:
    """The ledger's records of one release that bear on records ``prints`` (sorted, unique): those records, and
    every member of a class or group holding one of them (the records that left it count for the joiners figure),
    read in row-group batches, so that a large earlier release (a partitioned one) is never held whole."""
    files = member_files(root, release_id)
    if not files:
        return empty_members()

    def batches():
        for f in files:
            parquet = pq.ParquetFile(f)
            try:
                yield from parquet.iter_batches(batch_size=MEMBER_ROWS)
            finally:
                parquet.close()

    def among(fp: np.ndarray) -> np.ndarray:
        if not prints.size:
            return np.zeros(fp.size, dtype=bool)
        at = np.minimum(np.searchsorted(prints, fp), prints.size - 1)
        return prints[at] == fp

    touched: set[int] = set()
    for batch in batches():  # pass 1: the classes the records are in
        fp = batch.column("fp").to_numpy(zero_copy_only=False)
        grp = batch.column("grp").to_numpy(zero_copy_only=False)
        hit = among(fp) & (grp >= 0)
        touched.update(np.unique(grp[hit]).tolist())
    classes = np.array(sorted(touched), dtype=np.int64)
    kept = []
    for batch in batches():  # pass 2: the records, and every member of those classes
        fp = batch.column("fp").to_numpy(zero_copy_only=False)
        grp = batch.column("grp").to_numpy(zero_copy_only=False)
        keep = among(fp) | np.isin(grp, classes)
        if keep.any():
            kept.append(batch.filter(pa.array(keep)))
    if not kept:
        return empty_members()
    frame = pa.Table.from_batches(kept).to_pandas()
    return frame.astype({"fp": np.int64, "grp": np.int64, "row": np.int64})


def record_release(root: Path, release: LedgerRelease, table: pd.DataFrame | None, seen: Sequence[str],
                   key: LedgerKey, staged: Path | None = None) -> None:
    """Write one release to the root's ledger. Call under the root's publish lock, after the release's ``pending``
    audit entry. ``table``: its members (part, fp, grp, row); or ``staged``: a folder of member files written by
    the release's tasks (``part-*.parquet``, each sorted by fingerprint), moved into the ledger. ``seen``: the
    releases the ledger counted when the release was judged; if it now counts another, or was created meanwhile
    under another key, another run published meanwhile and the release is refused (:class:`SeriesError`, nothing
    counted)."""
    folder = ledger_folder(root)
    if folder is None:
        raise PublishError(f"series ledger: the publish root {root} has no audit trail yet")
    path = folder / LEDGER_DB
    if path.exists() and ledger_key(root).data_key != key.data_key:  # bound to another key meanwhile
        raise SeriesError(f"series: the ledger {path} changed keys while this release was being made: run again")
    late = sorted({r.release_id for r in counted_releases(root, release.release_id, None)} - set(seen))
    if late:
        raise SeriesError(f"series: release {late[0]} was published under {root} while this one was being made: run "
                          "again so that it is judged with it")
    target = folder / MEMBERS_DIR / release.release_id
    if target.exists():
        shutil.rmtree(target)  # left by a run killed before its row was committed
    if staged is not None:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.replace(staged, target)
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in target.glob("part-*.parquet"))
    else:
        rows = write_member_file(table if table is not None else empty_members(), target / "part-00000.parquet")
    audit.fault_point("ledger-members-written")
    with closing(_connect(path)) as conn:
        try:
            conn.execute("BEGIN IMMEDIATE")
            meta = _meta(conn)
            if not meta:
                trail = folder.name  # the ledger folder is named by the audit trail's id
                k = series_key(root)
                conn.executemany("INSERT INTO meta VALUES (?, ?)", [
                    ("format", FORMAT), ("trail", trail), ("wrapped", wrap_data_key(key.data_key, k, trail)),
                    ("key_id", key_id(k)), ("created_at", datetime.now(UTC).isoformat())])
            conn.execute("DELETE FROM releases WHERE release_id = ?", (release.release_id,))
            conn.execute(f"INSERT INTO releases ({_COLUMNS}, members) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", (
                release.release_id, release.dataset, release.created_at.astimezone(UTC).isoformat(), release.method,
                release.unit, int(release.records), release.k, release.epsilon, release.delta,
                json.dumps(list(release.basis.columns), separators=(",", ":")), release.basis.kind,
                int(release.keep_groups), int(rows)))
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
        conn.execute("DELETE FROM releases WHERE release_id = ?", (release_id,))
        conn.execute("COMMIT")
    target = _members_folder(root, release_id)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)


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
        parts.append(f"those within {duration_text(series.within)}")
    return "every earlier release sharing records with it" if not parts else \
        f"{' and '.join(parts)} earlier release(s) sharing records with it"


def duration_text(value: timedelta) -> str:
    days, seconds = value.days, value.seconds
    return f"P{days}D" if not seconds else f"P{days}DT{seconds}S"


@dataclass(frozen=True)
class SeriesRecord:
    """What the publish step writes to the ledger for a release (see :func:`record_release`)."""

    release: LedgerRelease
    members: pd.DataFrame | None
    seen: tuple[str, ...]
    key: LedgerKey
    staged: Path | None = None

    def write(self, root: Path) -> None:
        record_release(root, self.release, self.members, self.seen, self.key, self.staged)


@dataclass(frozen=True)
class Previous:
    """``series.keep_groups``: the latest counted release sharing records with this input that has classes or
    groups, as the method keeping them needs it (arrays aligned with the rows the method receives).

    ``groups``: each row's class or group in that release (-1: not in one); ``rows``: the published row standing for
    it there (-1: none); ``seen``: the record was in a class or group of some earlier release that counts (a record
    held back or whose group was retired since is ``seen`` with ``groups`` -1); ``release_id`` and ``dataset``: that
    release (None when there is none: every record is new)."""

    groups: np.ndarray
    rows: np.ndarray
    seen: np.ndarray
    release_id: str | None = None
    dataset: str | None = None


def model_record(root: Path, release_id: str, dataset: str, created_at: datetime, method: str, rows: int
                 ) -> SeriesRecord:
    """What a release that publishes no record (a federated model: the parties' rows never reach the publisher)
    writes to the ledger: the release, without members, so that the ledger holds every release of the audit
    trail."""
    key = ledger_key(root)
    seen = tuple(r.release_id for r in counted_releases(root, None, None))
    release = LedgerRelease(release_id=release_id, dataset=dataset, created_at=created_at, method=method,
                            unit="model", records=int(rows), k=None, epsilon=None, delta=None,
                            basis=Basis((), "record"))
    return SeriesRecord(release=release, members=None, seen=seen, key=key)


def previous_groups(root: Path, dataset: str, series: SeriesSpec, now: datetime, identity: Identity,
                    prints: np.ndarray, before: str | None = None, sharing: list[Earlier] | None = None) -> Previous:
    """``series.keep_groups``: :class:`Previous` for the rows whose fingerprints are ``prints``; ``sharing``: the
    releases sharing them as this run already read them (:attr:`Sharing.earlier`), else read here."""
    prints = np.asarray(prints, dtype=np.int64)
    earlier = (in_window(sharing, series, now) if sharing is not None
               else earlier_releases(root, dataset, series, now, identity, before=before, prints=prints))
    seen = np.zeros(prints.size, dtype=bool)
    latest = None
    for e in earlier:
        unit = find_unit(e.release.unit)  # a ledger's name: one that is no unit counts no class
        if unit is None or not unit.counts_classes or not e.common:
            continue
        m = e.members[(e.members["part"] == PART_WHOLE) & (e.members["grp"] >= 0)]
        if not len(m):
            continue
        seen |= np.isin(prints, m["fp"].to_numpy(dtype=np.int64))
        latest = (e, m)
    if latest is None:
        none = np.full(prints.size, -1, dtype=np.int64)
        return Previous(groups=none, rows=none.copy(), seen=seen)
    e, m = latest
    m = m.drop_duplicates("fp")
    by_fp = m.set_index("fp")
    groups = by_fp["grp"].reindex(prints).fillna(-1).to_numpy(dtype=np.int64)
    rows = by_fp["row"].reindex(prints).fillna(-1).to_numpy(dtype=np.int64)
    return Previous(groups=groups, rows=rows, seen=seen, release_id=e.release.release_id, dataset=e.release.dataset)


def previous_table(root: Path, previous: Previous) -> pd.DataFrame | None:
    """The published table of ``previous``'s release (its ``data.parquet``; None when there is none or it is not
    one table): the rows a kept group publishes again."""
    if previous.release_id is None or previous.dataset is None:
        return None
    path = release_folder(root, previous.dataset, previous.release_id) / "data.parquet"
    return pq.read_table(path).to_pandas() if path.exists() else None


def kept_input(root: Path, previous: Previous, method: str):
    """``series.keep_groups``: what the method receives to keep ``previous``'s groups frozen
    (:class:`ppdp.tasks.sanitize.keeping.Kept`: memberships, old rows, ``seen`` and the published table). Raises
    :class:`SeriesError` (one line) when the previous release was made by another method, or its published table
    cannot be read while records kept a group: its groups cannot be kept frozen."""
    table = None
    if previous.release_id is not None:
        made_by = next((r.method for r in _all_releases(root) if r.release_id == previous.release_id), method)
        if made_by != method:
            raise SeriesError(f"series.keep_groups: the previous release {previous.release_id} was made by {made_by}, "
                              f"not {method}: its groups cannot be kept frozen; nothing published")
        table = previous_table(root, previous)
        if table is None and (previous.groups >= 0).any():
            raise SeriesError(f"series.keep_groups: the published table of the previous release "
                              f"{previous.release_id} cannot be read: its groups cannot be kept frozen; nothing "
                              "published")
    return Kept(groups=previous.groups, rows=previous.rows, seen=previous.seen, table=table,
                release_id=previous.release_id)


def record_of(spec, release_id: str, created_at: datetime, method, rows: int, k: int | None, identity: Identity,
              report, members_table: pd.DataFrame | None, seen: Sequence[str], staged: Path | None = None
              ) -> SeriesRecord:
    """What the publish step writes to the ledger for a release about to be published (``report``: its
    :class:`ppdp.schemas.series.SeriesReport`; ``members_table``: where its records went, or ``staged``: member
    files written by the release's tasks; ``seen``: the releases the ledger counted when it was judged)."""
    dp = unit_of(method.unit).spends_budget and report.budget is not None
    release = LedgerRelease(release_id=release_id, dataset=spec.dataset, created_at=created_at, method=method.name,
                            unit=method.unit, records=int(rows), k=k, basis=identity.basis,
                            epsilon=report.budget.epsilon if dp else None, delta=report.budget.delta if dp else None,
                            keep_groups=spec.series.keep_groups)
    return SeriesRecord(release=release, members=members_table, seen=tuple(seen), key=identity.key, staged=staged)
