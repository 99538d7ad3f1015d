"""A partitioned release in its series: its records fingerprinted on the workers, judged with every earlier release
under the root that shares them, and recorded in the series ledger like any release.

The basis of the fingerprints (:mod:`ppdp.tasks.series`: the declared identifiers, else every published column
holding more than one value) is decided from pass 1: each ingest task reports, per column, whether the partition
holds one value and a keyed hash of it (:func:`column_constants`); a column is constant when every non-empty
partition holds the same one value. Each recode task then writes, into the staging folder's ``.series/`` (never
published: removed before the release folder is sealed), for the rows it publishes:

* ``ledger/part-<n>.parquet``: what the ledger keeps (fingerprint on the release's own basis, class id, sorted by
  fingerprint): moved into the ledger when the release is published;
* ``b<j>/part-<n>.parquet``: for each basis the judgement needs (the own basis, and each earlier release's other
  basis whose columns this input has), the fingerprint on that basis, the class id and the published value of each
  protected column (published anyway in the row files).

A record's class id is a hash of its published values on the columns the attacker's view knows (quasi-identifiers
as published and the columns published beside them), in one form whatever the column's type, so the same
class gets the same id in every partition, and an earlier row-file release's classes are recomputed from its files
(:func:`class_values`). Pieces hold keyed fingerprints, class ids and published values: no input value.

The judgement (:func:`judge_partitioned`) reads the pieces of each basis and runs the figures of
:mod:`ppdp.tasks.privacy.series` (candidate sets, intersected sensitive values) on them, with each group of earlier
releases sharing a basis together; its memory is the records' fingerprints and class ids (16 bytes a record and
basis, plus the protected values), measured in ``benchmarks/distributed_release.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.reports import Roles
from ppdp.tasks import keys
from ppdp.tasks import series as ledger
from ppdp.tasks.privacy.candidates import merge_signatures, signatures

SERIES = ".series"


# -- the basis ----------------------------------------------------------------------------------------------------
def column_constants(frame: pd.DataFrame, hash_key: str) -> dict[str, int | None]:
    """Per column of one partition: a keyed hash of its one value when it holds exactly one (missing counting as
    a value), None when it holds more. An empty partition says nothing ({})."""
    if not len(frame):
        return {}
    out: dict[str, int | None] = {}
    for name in frame.columns:
        column = frame[name]
        if column.nunique(dropna=False) == 1:
            one = ledger.column_hashes(column.iloc[:1])
            keyed = pd.util.hash_pandas_object(pd.Series(one.view("S8")), index=False, hash_key=hash_key)
            out[str(name)] = int(keyed.to_numpy()[0])
        else:
            out[str(name)] = None
    return out


def constant_columns(profiles: Sequence[dict[str, int | None]]) -> set[str]:
    """The columns holding one value over every partition (the same one in each non-empty partition)."""
    seen = [p for p in profiles if p]
    if not seen:
        return set()
    out = set()
    for name in seen[0]:
        values = {p.get(name) for p in seen}
        if len(values) == 1 and None not in values:
            out.add(name)
    return out


@dataclass(frozen=True)
class PartitionedIdentity:
    """A partitioned input's records as the root's ledger knows them: the release's own basis, the earlier bases
    its records must also be fingerprinted on (their columns are all in the input), the bases it cannot compute,
    and the ledger key."""

    basis: ledger.Basis
    key: ledger.LedgerKey
    others: tuple[ledger.Basis, ...] = ()
    unmatched: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def bases(self) -> tuple[ledger.Basis, ...]:
        return (self.basis, *self.others)

    @property
    def by(self) -> str:
        return self.basis.text


def partitioned_identity(root: Path, roles: Roles, header: Sequence[str], constant: set[str],
                         key: ledger.LedgerKey) -> PartitionedIdentity:
    """The bases a partitioned input is fingerprinted on (see the module docstring)."""
    basis = ledger.basis_of(roles, list(header), constant)
    others, unmatched = ledger.match_bases(root, basis, header)
    return PartitionedIdentity(basis=basis, key=key, others=tuple(others), unmatched=unmatched)


# -- the pieces ---------------------------------------------------------------------------------------------------
def class_hash(frame: pd.DataFrame, columns: Sequence[str], hashed: Mapping[str, np.ndarray] | None = None
               ) -> np.ndarray:
    """A class id per row (63 bits, non-negative, unkeyed: an id, not a secret): a hash of its values on ``columns``
    in one form whatever their type (so a row file read back gives the id its recode task gave)."""
    if not columns:
        return np.zeros(len(frame), dtype=np.int64)
    rows = ledger.record_hashes(frame, list(columns), hashed)  # the columns in name order: ids do not depend on it
    return (rows >> np.uint64(1)).astype(np.int64)  # non-negative: -1 means "no class" in the ledger


def _sorted(table: pa.Table) -> pa.Table:
    return table.take(pa.array(np.argsort(table.column("fp").to_numpy(), kind="stable")))


def write_members(raw: pd.DataFrame, published: pd.DataFrame, known: Sequence[str], protected: Sequence[str],
                  identity: PartitionedIdentity, staging: Path, index: int) -> int:
    """One partition's pieces (see the module docstring): ``raw`` is the partition as read (identifiers
    included), ``published`` its published rows (same index: the rows the release publishes), ``known`` the
    attacker's known columns, ``protected`` the protected columns published. Returns the rows written."""
    rows = raw.loc[published.index]
    hashed = {str(c): ledger.column_hashes(published[c]) for c in published.columns}  # each column once
    grp = class_hash(published, [c for c in known if c in published.columns], hashed)
    folder = staging / SERIES
    values = {}  # the published protected values, the same beside every basis's fingerprints
    for c in protected:
        if c in published.columns:
            # missing: null (pyarrow reads pandas' NA as missing; a list of the cells would hold NA objects)
            values[f"v:{c}"] = pa.array(published[c].astype("string"), type=pa.large_string(), from_pandas=True)
    own = None
    for j, basis in enumerate(identity.bases):
        fp = ledger.fingerprints(rows, basis.columns, identity.key.hash_key)
        if j == 0:
            own = fp
        data = {"fp": pa.array(fp), "grp": pa.array(grp), **values}
        (folder / f"b{j}").mkdir(parents=True, exist_ok=True)
        pq.write_table(_sorted(pa.table(data)), folder / f"b{j}" / f"part-{index:05d}.parquet",
                       row_group_size=PIECE_ROWS)
    assert own is not None
    members = pd.DataFrame({"part": ledger.PART_WHOLE, "fp": own, "grp": grp, "row": -1})
    ledger.write_member_file(members, folder / "ledger" / f"part-{index:05d}.parquet")
    columns = [c for c in published.columns if c != GROUP_COLUMN]
    sig = signatures(published, grp, columns, hashed).rename_axis("grp").reset_index()
    (folder / "sig").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(sig, preserve_index=False), folder / "sig" / f"part-{index:05d}.parquet")
    return len(rows)


def read_signatures(staging: Path) -> pd.DataFrame:
    """The current release's class signatures over its published columns (every partition's, added up)."""
    folder = staging / SERIES / "sig"
    files = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    return merge_signatures([pq.read_table(f).to_pandas().set_index("grp") for f in files])


def row_file_signatures(folder: Path, manifest, columns: Sequence[str]) -> pd.DataFrame | None:
    """An earlier row-file release's class signatures over ``columns`` (None when it does not publish them all),
    its classes as :func:`write_members` numbered them, read file by file."""
    if any(c not in manifest.columns for c in columns):
        return None
    view = manifest.privacy.attacker_view
    known = [] if view is None else [*view.quasi_identifiers, *view.counted_columns]
    parts = []
    for f in manifest.data_files:
        table = pq.read_table(folder / f.file, columns=list(dict.fromkeys([*known, *columns]))).to_pandas()
        parts.append(signatures(table, class_hash(table, [c for c in known if c in table.columns]), list(columns)))
    return merge_signatures(parts)


PIECE_ROWS = 1 << 17  # rows per row group of a piece: a range of fingerprints reads only the row groups holding it


def read_pieces(staging: Path, basis_index: int, columns: Sequence[str] | None = None,
                fp_range: tuple[int, int] | None = None) -> pd.DataFrame:
    """Every partition's pieces of one basis as one frame (fp, grp and the protected values); ``fp_range``: only
    fingerprints in [lo, hi)."""
    folder = staging / SERIES / f"b{basis_index}"
    files = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    if not files:
        return pd.DataFrame({"fp": pd.Series(dtype=np.int64), "grp": pd.Series(dtype=np.int64)})
    filters = None if fp_range is None else ledger.fp_filters(fp_range)
    return pa.concat_tables([pq.read_table(f, columns=list(columns) if columns else None, filters=filters or None)
                             for f in files]).to_pandas()


def piece_rows(staging: Path) -> int:
    """The records the pieces of the release's own basis hold (from the files' metadata)."""
    folder = staging / SERIES / "b0"
    return sum(pq.ParquetFile(f).metadata.num_rows for f in folder.glob("part-*.parquet")) if folder.is_dir() else 0


def take_ledger_members(staging: Path, release_id: str) -> Path:
    """Move the release's ledger pieces out of the staging folder (which is sealed and published next) into the
    ledger's incoming folder; returns where they are now. The rest of ``.series/`` is removed."""
    incoming = keys.config_dir() / ledger.LEDGER_DIR / "incoming" / release_id
    if incoming.exists():
        shutil.rmtree(incoming)
    incoming.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    source = staging / SERIES / "ledger"
    if source.is_dir():
        shutil.move(str(source), str(incoming))
    else:
        incoming.mkdir(mode=0o700)
    shutil.rmtree(staging / SERIES, ignore_errors=True)
    return incoming


# -- an earlier row-file release's classes --------------------------------------------------------------------
def class_values(folder: Path, manifest, columns: Sequence[str]) -> dict[str, pd.DataFrame]:
    """For each of ``columns`` published by the row-file release in ``folder``: its distinct (class id, value)
    pairs with counts, the class ids as :func:`write_members` gave them (over the manifest's attacker-known
    columns), read file by file."""
    view = manifest.privacy.attacker_view
    known = [] if view is None else [*view.quasi_identifiers, *view.counted_columns]
    present = [c for c in columns if c in manifest.columns]
    parts: dict[str, list[pd.DataFrame]] = {c: [] for c in present}
    for f in manifest.data_files:
        table = pq.read_table(folder / f.file, columns=list(dict.fromkeys([*known, *present]))).to_pandas()
        grp = class_hash(table, [c for c in known if c in table.columns])
        for c in present:
            pairs = pd.DataFrame({"grp": grp, "v": table[c].astype("string").reset_index(drop=True)}).dropna()
            parts[c].append(pairs.value_counts(["grp", "v"]).rename("n").reset_index())
    out: dict[str, pd.DataFrame] = {}
    for c, frames in parts.items():
        if frames:
            out[c] = pd.concat(frames, ignore_index=True).groupby(["grp", "v"])["n"].sum().reset_index()
    return out
