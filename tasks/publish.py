"""Publish: write ``data.parquet``, ``manifest.json`` and ``report.html`` into a staging folder, then rename it into
place.

A reader never sees half a release: the staging folder is a sibling under the publish root (same file
system) and ``os.rename`` moves it to ``<root>/<dataset>/<release_id>`` in one step.

:func:`publish_release` makes this crash-safe (issue 8): under the root's publish lock it (1) writes and fsyncs
the release into ``<root>/.staging-<release_id>``, (2) appends a signed ``pending`` audit entry holding the
staged folder's exact file list and hashes, (3) renames the folder into place, (3b) points the dataset's
``LATEST`` at it (:mod:`ppdp.tasks.latest`: temporary file, ``os.replace``), (4) appends the ``published``
entry that completes the pending one (``completes=<pending seq>``); a rollback points ``LATEST`` back. A kill
at any instant leaves either a root that verifies or one that ``ppdp audit recover``
(:func:`ppdp.tasks.recovery.recover`) brings back to one (``LATEST`` rewritten from the trail): a pending entry
whose folder is in place with exactly its files is completed, any other is rolled back, and a staging folder is
removed (it never holds anything that was published). An error (not a kill) rolls back at
once. ``PPDP_FAULT_AT`` names a point where the process kills itself, for the crash tests only
(:func:`ppdp.tasks.staging.fault_point`).

A distributed release publishes its table in row files ``data/part-<n>.parquet`` instead of ``data.parquet``:
:func:`row_staging` makes the staging folder (with ``data/``), the row files are written into it
(:func:`write_data_file`, by many tasks), and :func:`publish_row_files` writes the manifest and the report beside
them and publishes the folder by the same protocol; :func:`discard_staging` removes a refused one.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import platform
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TypeVar, cast

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from ppdp.expectations import base_suite_path, load_suite_json, validate_frame
from ppdp.schemas.manifest import ColumnTreatment, DataFile, Manifest, PartRecord, Versions
from ppdp.schemas.methods import GROUP_COLUMN
from ppdp.schemas.release import PartsRelease
from ppdp.schemas.reports import ExpectationOutcome, RareCategoryReport, Roles
from ppdp.schemas.spec import ReleaseSpec, Role
from ppdp.schemas.units import unit_of
from ppdp.tasks import audit, interrupt
from ppdp.tasks.core.errors import InputError, PublishError, ReleaseRejected
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.expectation_text import describe
from ppdp.tasks.latest import write_latest
from ppdp.tasks.layout import (  # noqa: F401
    DATA_FOLDER,
    data_file_index,
    data_file_name,
    ensure_root,
    is_data_file,
    parts_digest,
    read_parquet_metadata,
    release_folder,
    release_names,
)
from ppdp.tasks.privacy.partitioned import common_schema
from ppdp.tasks.private_record import split
from ppdp.tasks.report import render_report
from ppdp.tasks.staging import STAGING_PREFIX, fault_point, fsync_dir, remove_path, staging_folder

META_RELEASE_ID = b"ppdp.release_id"
META_MANIFEST_SHA = b"ppdp.manifest_sha256"


def new_release_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def canonical_manifest_bytes(manifest: BaseModel) -> bytes:
    return json.dumps(manifest.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode("utf-8")


def manifest_sha256(manifest: Manifest) -> str:
    """Hash of the manifest's canonical JSON with ``output_sha256`` (and each part's ``sha256``) empty: they hash
    the Parquet files, which carry this hash in their metadata."""
    bare = manifest.model_copy(update={"output_sha256": None,
                                       "parts": [p.model_copy(update={"sha256": None}) for p in manifest.parts]})
    return hashlib.sha256(canonical_manifest_bytes(bare)).hexdigest()


def _write_parquet(frame: pd.DataFrame, path: Path, release_id: str, m_hash: str | None) -> str:
    """Write one table with the release's metadata (fault point between row groups and footer); its SHA-256.
    ``m_hash`` None: no ``ppdp.manifest_sha256`` (a distributed release's row files, written before the
    manifest)."""
    return _write_table(frame, path, release_id, m_hash)[1]


def _write_table(frame: pd.DataFrame | pa.Table, path: Path, release_id: str, m_hash: str | None
                 ) -> tuple[int, str]:
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[META_RELEASE_ID] = release_id.encode()
    if m_hash is not None:
        meta[META_MANIFEST_SHA] = m_hash.encode()
    table = table.replace_schema_metadata(meta)
    with pq.ParquetWriter(path, table.schema) as writer:  # what pq.write_table does
        writer.write_table(table)
        fault_point("parquet-unfinished")  # row groups written, footer not yet
    return table.num_rows, file_sha256(path)


def stage_release(frame: pd.DataFrame | dict[str, pd.DataFrame], manifest: Manifest, root: Path,
                  extras: dict[str, bytes] | None = None) -> tuple[Path, Manifest, str, dict[str, str]]:
    """Write the release into ``<root>/.staging-<release_id>`` and fsync it; return (staging folder, manifest with
    ``output_sha256``, manifest hash, the folder's exact file list: name to SHA-256). ``frame`` is the table
    (``data.parquet``), or for a partitioned release each part's table by name (the files its manifest's
    ``parts`` name). On any failure the staging folder is removed and :class:`PublishError` (or the original
    exception) is raised."""
    with new_staging(root, manifest.dataset, manifest.release_id) as staging:
        m_hash = manifest_sha256(manifest)
        if isinstance(frame, dict):
            if [p.name for p in manifest.parts] != list(frame):
                raise PublishError(f"release {manifest.release_id}: its parts and its manifest disagree")
            parts = [p.model_copy(update={"sha256": _write_parquet(frame[p.name], staging / p.file,
                                                                     manifest.release_id, m_hash)})
                     for p in manifest.parts]
            manifest = manifest.model_copy(update={"parts": parts, "output_sha256": parts_digest(
                [(p.file, cast(str, p.sha256)) for p in parts])})  # each sha256 was just written
        else:
            out_sha = _write_parquet(frame, staging / "data.parquet", manifest.release_id, m_hash)
            manifest = manifest.model_copy(update={"output_sha256": out_sha})
        interrupt.check("staging")  # a request to stop while staging: the staging folder is removed
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        check_manifest_reads_back(staging / "manifest.json", manifest)  # else PublishError; staging removed
        for name, payload in (extras or {}).items():
            (staging / name).write_bytes(payload)
        (staging / "report.html").write_text(_render_report(staging), encoding="utf-8")
        files = seal(staging)
        interrupt.check("staging")
    fault_point("staged")
    return staging, manifest, m_hash, files


def _render_report(staging: Path) -> str:
    """``report.html`` from the staged files (deterministic: ``ppdp report`` regenerates the same bytes)."""
    try:
        return render_report(staging)
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - one line, by type: nothing is published without its report
        raise PublishError(f"report.html could not be rendered ({type(exc).__name__})") from None


def rename_into_place(staging: Path, final: Path) -> None:
    """Rename the staged folder to its final place (creating the dataset folder) and make the rename durable.
    On failure nothing is left at the final place (the staging folder is the caller's to remove)."""
    parent_created = False
    try:
        if not final.parent.exists():
            final.parent.mkdir(parents=True)
            parent_created = True
        if os.path.lexists(final):
            raise FileExistsError(17, "exists")
        os.rename(staging, final)
    except OSError as exc:
        if parent_created:
            _rmdir_quiet(final.parent)
        if os.path.lexists(final):
            raise PublishError(f"release folder {final} already exists") from None
        raise PublishError(f"cannot rename the release into {final.parent} "
                           f"({exc.strerror or type(exc).__name__})") from None
    fsync_dir(final.parent)
    fsync_dir(staging.parent)


def write_release(frame: pd.DataFrame | dict[str, pd.DataFrame], manifest: Manifest, root: Path,
                  extras: dict[str, bytes] | None = None
                  ) -> tuple[Path, Manifest, str, dict[str, str]]:
    """Write the release atomically (staging folder, then rename), without the audit trail; return (folder,
    manifest with ``output_sha256``, manifest hash, the folder's exact file list). :func:`publish_release` is
    what publishes: it audits and is crash-safe."""
    staging, manifest, m_hash, files = stage_release(frame, manifest, root, extras)
    final = release_folder(root, manifest.dataset, manifest.release_id)
    try:
        rename_into_place(staging, final)
    finally:
        remove_path(staging)
    return final, manifest, m_hash, files


def release_files(folder: Path) -> dict[str, str]:
    """Name to SHA-256 of every file in a release folder: its files, and a distributed release's row files under
    ``data/`` by relative name (``data/part-00000.parquet``). Another subfolder, or a link, is refused
    (:class:`PublishError`)."""
    return {name: file_sha256(folder / name) for name in release_names(folder)}


@contextmanager
def new_staging(root: Path, dataset: str, release_id: str) -> Iterator[Path]:
    """A new staging folder ``<root>/.staging-<release_id>`` for a release of ``dataset`` that is not published yet;
    on any failure inside the block the folder is removed, and an :class:`OSError` becomes one
    :class:`PublishError` line (any other exception is raised as it is)."""
    final = release_folder(root, dataset, release_id)
    if os.path.lexists(final):
        raise PublishError(f"release folder {final} already exists")
    staging = staging_folder(root, release_id)
    try:
        staging.mkdir(parents=True)
        fault_point("staging-created")
        yield staging
    except OSError as exc:
        remove_path(staging)
        raise PublishError(f"cannot write release under {root} ({exc.strerror or type(exc).__name__})") from None
    except BaseException:
        remove_path(staging)
        raise


def seal(staging: Path) -> dict[str, str]:
    """fsync every staged file (``data/``'s row files too), ``data/`` and the folder; the folder's exact file list
    (relative name to SHA-256)."""
    for name in release_names(staging):
        with open(staging / name, "rb") as fh:
            os.fsync(fh.fileno())
    if (staging / DATA_FOLDER).is_dir():
        fsync_dir(staging / DATA_FOLDER)
    fsync_dir(staging)
    return release_files(staging)


def _restore_latest(root: Path, dataset: str) -> None:
    """Point the dataset's ``LATEST`` back at its latest complete release (a publish rolled back after writing it);
    when that fails, ``ppdp audit recover`` rewrites it."""
    try:
        write_latest(root, dataset, audit.latest_release(root, dataset))
    except Exception:  # noqa: BLE001 - the rollback goes on; verify reports a stale pointer, recover mends it
        pass


def _rmdir_quiet(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def load_manifest(folder: Path) -> Manifest:
    return Manifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))


def check_manifest_reads_back(path: Path, manifest: Manifest) -> None:
    """Read the manifest just written, validate it against its schema and compare it with what was meant to be
    written; raise :class:`PublishError` naming the top-level fields otherwise. JSON has no NaN or infinity
    (pydantic writes them as null): a release whose manifest cannot be read back would fail ``audit verify``
    forever, so it is never published."""
    try:
        back = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError) as exc:
        errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
        fields = sorted({str(e["loc"][0]) for e in errors if e["loc"]})
        where = f" (in {', '.join(fields)})" if fields else ""
        raise PublishError(f"release {manifest.release_id}: its manifest does not read back{where}; "
                           "nothing published") from None
    if canonical_manifest_bytes(back) != canonical_manifest_bytes(manifest):
        meant, read = manifest.model_dump(mode="json"), back.model_dump(mode="json")
        fields = sorted(k for k in meant if meant[k] != read.get(k))
        raise PublishError(f"release {manifest.release_id}: its manifest reads back changed (in "
                           f"{', '.join(fields) or 'its layout'}: a NaN or infinite number?); nothing published")


PSEUDONYM_REGEX = r"^[0-9a-f]{64}$"


def output_suite(frame_columns: list[str], roles: Roles, spec: ReleaseSpec, unit: str) -> dict:
    """The output suite (GX JSON) for a frame about to be published: identifiers absent or pseudonyms, and, for
    releases with classes (equivalence classes over the quasi-identifiers, or the published group column),
    k-anonymity and l-diversity as the policy sets them."""
    suite = load_suite_json(base_suite_path("output"))
    ids = roles.identifiers
    extra: list[dict] = []
    if spec.identifiers.action == "drop":
        if ids:
            extra.append({"type": "expect_columns_to_be_absent", "kwargs": {"column_list": ids}})
    else:
        extra += [{"type": "expect_column_values_to_match_regex", "kwargs": {"column": c, "regex": PSEUDONYM_REGEX}}
                  for c in ids if c in frame_columns]
    dropped = [name for name in roles.dropped if name not in ids]
    if dropped:
        extra.append({"type": "expect_columns_to_be_absent", "kwargs": {"column_list": dropped}})
    checked = unit_of(unit)
    if checked.suite_checks_classes:
        classes = [GROUP_COLUMN] if checked.group_column else [
            q for q in roles.quasi_identifiers if q in frame_columns]
        if spec.privacy.k is not None:
            extra.append({"type": "expect_quasi_identifiers_to_be_k_anonymous",
                          "kwargs": {"column_list": classes, "k": spec.privacy.k}})
        if spec.privacy.l is not None:
            extra += [{"type": "expect_equivalence_classes_to_be_l_diverse",
                       "kwargs": {"column_list": classes, "sensitive_column": sa, "l": spec.privacy.l}}
                      for sa in roles.names(Role.sensitive) if sa in frame_columns]
    suite["expectations"] = list(suite["expectations"]) + extra
    return suite


def check_output(release, roles: Roles, spec: ReleaseSpec) -> list[ExpectationOutcome]:
    """Run the output suite on the release about to be written; raise :class:`ReleaseRejected` naming the
    failed expectations."""
    outcomes, failed, told = [], [], []
    # a partitioned release: each part against the suite, over its own quasi-identifiers
    for frame in [p.frame for p in release.parts] if isinstance(release, PartsRelease) else [release.frame]:
        suite = output_suite(list(frame.columns), roles, spec, release.unit)
        ran = validate_frame(frame, suite)
        outcomes += ran
        failed += [o for o in ran if not o.success]
        told += describe([o for o in ran if not o.success], suite, frame, rows_word="published row")
    if failed:  # in plain words (never a value): the column by position and name, counts, the first row
        raise ReleaseRejected(f"output suite failed: {'; '.join(told)}", [o.expectation for o in failed])
    return outcomes


CODE_PACKAGES = ("ppdp", "ppdp.schemas", "ppdp.tasks", "ppdp.flows", "ppdp.expectations")
"""The packages whose files :func:`code_sha256` hashes (``ppdp.deployments`` only schedules runs)."""
CODE_SUFFIXES = (".py", ".json", ".css")


@functools.lru_cache(maxsize=1)
def code_sha256() -> str:
    """SHA-256 of the lines ``<package>/<relative path> <sha256>`` of every module, suite, schema and stylesheet of
    the installed ppdp (sorted; ``__pycache__`` left out): the same for an editable install and a wheel of the same
    files. Computed once per process (about 150 files)."""
    lines = []
    for package in CODE_PACKAGES:
        found = importlib.util.find_spec(package)
        for base in (found.submodule_search_locations or []) if found is not None else []:
            base_path = Path(base)
            # ppdp's own folder holds the others in a wheel (ppdp/tasks/...): only its own files, not theirs twice
            for path in base_path.glob("*") if package == "ppdp" else base_path.rglob("*"):
                if path.suffix not in CODE_SUFFIXES or "__pycache__" in path.parts or not path.is_file():
                    continue
                relative = path.relative_to(base_path).as_posix()
                lines.append(f"{package}/{relative} {hashlib.sha256(path.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode("utf-8")).hexdigest()


def collect_versions() -> Versions:
    """Versions of everything that shaped the release."""

    def v(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "not installed"

    return Versions(
        ppdp=v("ppdp"),
        python=platform.python_version(),
        prefect=v("prefect"),
        pandas=v("pandas"),
        numpy=v("numpy"),
        scikit_learn=v("scikit-learn"),
        pyarrow=v("pyarrow"),
        great_expectations=v("great-expectations"),
        code=code_sha256(),
    )


def publish_release(frame: pd.DataFrame | dict[str, pd.DataFrame], manifest: Manifest, extras: dict[str, bytes] | None,
                    started: datetime, series_record=None) -> tuple[Path, Manifest, str]:
    """Publish crash-safely (see the module docstring): stage, ``pending`` entry, rename, completing
    ``published`` entry, all under the root's publish lock. Refuses (:class:`PublishError`, nothing written) when
    the root holds an interrupted publish: ``ppdp audit recover`` first. On an error after the pending entry,
    the release is removed again and the pending entry rolled back (a published release always has its
    completing entry); a kill is repaired by ``ppdp audit recover``. ``series_record``
    (:class:`ppdp.tasks.series.SeriesRecord`) is written to the series ledger after the pending entry, before the
    rename.

    ``manifest`` is the manifest as computed: a differential_privacy release publishes it with every figure of its
    input withheld (:func:`ppdp.tasks.private_record.split`), and the publisher's private record, written with the
    release, keeps them (and, for every release, the input's unkeyed SHA-256). Returns (folder, the manifest
    published, its hash)."""
    public, private = split(manifest)
    return publish_staged(public, lambda root: stage_release(frame, public, root, extras), started,
                          below_floor_note(public), None if series_record is None else series_record.write,
                          private=private)


def below_floor_note(manifest: Manifest) -> str:
    """What the audit entries of a release published below the safety floor add to their reason: the owner's
    reason, who approved it and each failed floor figure (empty for a release that meets the floor)."""
    floor = manifest.privacy.floor
    if floor is None or floor.accepted is None:
        return ""
    a = floor.accepted
    return (f" BELOW THE SAFETY FLOOR, accepted by {a.approved_by}: {a.reason} (failed: {'; '.join(a.failed)})")


_Staged = TypeVar("_Staged", bound=BaseModel)


def publish_staged(manifest, stage: Callable[[Path], tuple[Path, _Staged, str, dict[str, str]]], started: datetime,
                   what: str = "", after_pending=None, private=None) -> tuple[Path, _Staged, str]:
    """The crash-safe publish of any release folder (a release, a federated model): under the root's publish lock,
    ``stage(root)`` writes the staging folder and returns (staging folder, final manifest, manifest hash, file
    list); then the ``pending`` entry, the rename, the completing ``published`` entry. ``manifest`` has the
    fields an audit entry names (release_id, dataset, spec.publish.root, the hashes, flow_run_id); ``what`` is
    added to the entries' reasons; ``after_pending(root)``, when given, runs after the pending entry and before the
    rename (an error there removes the staging folder and rolls the pending entry back); so does writing ``private``
    (:class:`ppdp.tasks.private_record.Record`: the publisher's private record of the release), which is written
    first."""
    root = Path(manifest.spec.publish.root)
    interrupt.check("before publishing")
    with interrupt.critical():  # a request to stop is honoured at the checks below, never in between
        audit.check_signing_key(root)  # a missing or misplaced key refuses before anything is written
    with audit.publish_lock(root), interrupt.critical():
        audit.require_no_interrupted_publish(root, locked=True)
        interrupt.check("before staging")
        staging, manifest, m_hash, files = stage(root)
        try:
            interrupt.check("staged, before the audit entry")
        except BaseException:
            remove_path(staging)
            raise
        final = release_folder(root, manifest.dataset, manifest.release_id)
        entry = dict(release_id=manifest.release_id, dataset=manifest.dataset, started_at=started,
                     spec_sha256=manifest.spec_sha256, input_digest=manifest.input_digest,
                     input_key_id=manifest.input_key_id, output_sha256=manifest.output_sha256,
                     manifest_sha256=m_hash, files=files,
                     flow_run_id=manifest.flow_run_id)
        try:
            pending = audit.append_entry(root, status="pending", reason=f"publishing{what}: staged, about to be "
                                         "renamed into place", **entry)
        except BaseException:
            remove_path(staging)
            raise
        _before_rename(root, staging, pending, private, after_pending)
        _rename_and_complete(root, staging, final, manifest.dataset, manifest.release_id, pending, entry, what)
    return final, manifest, m_hash


def _before_rename(root: Path, staging: Path, pending, private, after_pending) -> None:
    """After the pending entry: the private record, ``after_pending`` (the series ledger), the last check of a
    request to stop; a failure removes the staging folder and rolls the pending entry back."""
    if private is not None and private.needed:
        try:
            private.write(pending.trail_id, root)
        except BaseException:
            remove_path(staging)
            audit.roll_back_quietly(root, pending, "the publisher's private record could not be written")
            raise
    if after_pending is not None:
        try:
            after_pending(root)
        except BaseException:
            remove_path(staging)
            audit.roll_back_quietly(root, pending, "the series ledger could not be written")
            raise
        audit.fault_point("ledger-written")
    audit.fault_point("pending-appended")  # just before the rename
    try:  # the rename is the point of no return: the last check of a request to stop (SIGINT, a cancellation)
        interrupt.check("before the rename")
    except BaseException:
        remove_path(staging)
        audit.roll_back_quietly(root, pending, f"interrupted before its folder was renamed into place "
                                f"(stopped by {interrupt.STATE.reason or 'a request'})")
        raise


def _rename_and_complete(root: Path, staging: Path, final: Path, dataset: str, release_id: str, pending,
                         entry: dict, what: str) -> None:
    """The rename into place, the dataset's LATEST pointer, the completing ``published`` entry; a failure undoes
    what was done and rolls the pending entry back."""
    try:
        rename_into_place(staging, final)
    except BaseException:
        remove_path(staging)
        audit.roll_back_quietly(root, pending, "publish failed before its folder was in place")
        raise
    audit.fault_point("renamed")  # just after the rename
    try:  # the dataset's LATEST pointer names the release before its completing entry is written
        write_latest(root, dataset, release_id)
    except BaseException:
        remove_path(final)
        _rmdir_quiet(final.parent)
        audit.roll_back_quietly(root, pending, "the dataset's LATEST pointer could not be written")
        raise
    audit.fault_point("latest-written")
    try:
        audit.append_entry(root, status="published", reason=f"published{what}", completes=pending.seq, **entry)
    except BaseException:
        remove_path(final)
        _restore_latest(root, dataset)
        _rmdir_quiet(final.parent)
        audit.roll_back_quietly(root, pending, "the completing audit entry could not be written")
        raise
    interrupt.note_published(release_id, final)
    audit.fault_point("completed")


# -- a distributed release: the table in row files under data/ ----------------------------------------------
_RESERVED = frozenset({"manifest.json", "report.html", "data.parquet", DATA_FOLDER})


def row_staging(root: Path, dataset: str, release_id: str) -> Path:
    """Create the staging folder ``<root>/.staging-<release_id>/`` of a distributed release, with an empty
    ``data/`` inside, and return it. The row files are written into ``staging / "data"`` (:func:`write_data_file`,
    by many tasks, on this machine's workers), then :func:`publish_row_files` publishes the folder; a refused
    release is removed by :func:`discard_staging`.

    Writing the row files is not done under the root's publish lock (it may take long): ``ppdp audit recover``
    run meanwhile removes the folder as a leftover, and the publish then fails (nothing is published).

    Raises :class:`PublishError` (one line) when the root is not writable, the release folder or the staging
    folder exists already."""
    root = Path(root)
    ensure_root(root)
    final = release_folder(root, dataset, release_id)
    if os.path.lexists(final):
        raise PublishError(f"release folder {final} already exists")
    staging = staging_folder(root, release_id)
    try:
        staging.mkdir()
    except FileExistsError:
        raise PublishError(f"staging folder {staging} already exists (a run of release {release_id} is writing it, "
                           f"or was interrupted: run ppdp audit recover --root {root})") from None
    except OSError as exc:
        raise PublishError(f"cannot write release under {root} ({exc.strerror or type(exc).__name__})") from None
    try:
        (staging / DATA_FOLDER).mkdir()
    except OSError as exc:
        remove_path(staging)
        raise PublishError(f"cannot write release under {root} ({exc.strerror or type(exc).__name__})") from None
    fsync_dir(root)
    fault_point("staging-created")
    return staging


def write_data_file(frame: pd.DataFrame | pa.Table, path: Path, release_id: str) -> tuple[int, str]:
    """Write one row file of a distributed release (``staging / data_file_name(i)``) with pyarrow (a table as it
    is, in the release's schema; a frame's index not written), the key-value metadata ``ppdp.release_id`` (no
    ``ppdp.manifest_sha256``: the manifest is written after the files, from their measures). Returns (rows,
    SHA-256 of the file). Raises :class:`PublishError` (one line naming the file, never a value)."""
    path = Path(path)
    try:
        return _write_table(frame, path, release_id, None)
    except OSError as exc:
        raise PublishError(f"cannot write {path} ({exc.strerror or type(exc).__name__})") from None
    except (pa.ArrowException, ValueError, TypeError) as exc:  # the message may quote a value: its type only
        raise PublishError(f"{path}: the rows cannot be written as Parquet ({type(exc).__name__})") from None


def discard_staging(staging: Path) -> None:
    """Remove a staging folder (a refused or failed distributed release: nothing half-written remains under the
    root); nothing when it is absent. Refuses (:class:`PublishError`) a folder that is not named
    ``.staging-<release_id>``."""
    staging = Path(staging)
    if not staging.name.startswith(STAGING_PREFIX):
        raise PublishError(f"{staging} is not a staging folder (.staging-<release_id>): not removed")
    remove_path(staging)
    fsync_dir(staging.parent)


def publish_row_files(staging: Path, manifest: Manifest, extras: dict[str, bytes] | None, started: datetime,
                      series_record=None) -> tuple[Path, Manifest, str]:
    """Publish a distributed release from its staging folder (:func:`row_staging`, its row files written), with
    the crash-safe protocol of :func:`publish_staged` (the root's lock, the ``pending`` entry, the rename, the
    completing entry). Under the lock: fills ``manifest.data_files`` from the files in ``staging/data`` (in the
    order of their numbers; rows from the Parquet metadata, each file hashed) and ``output_sha256``
    (:func:`parts_digest` of their ``data/part-<n>.parquet sha256`` lines), writes ``manifest.json``, the
    ``extras`` and ``report.html``, and fsyncs every file and folder. The audit entries' ``files`` list every file,
    the row files by relative name.

    Refuses (:class:`PublishError`, one line) row files that are not ``data/part-<n>.parquet``, unreadable, of
    another release (``ppdp.release_id``), of disagreeing schemas or columns other than ``manifest.columns``, or
    whose rows do not add up to ``manifest.rows``. On any failure the staging folder is removed (nothing
    half-written remains); a kill is repaired by ``ppdp audit recover``. Returns (release folder, the manifest
    published, its hash)."""
    staging = Path(staging)
    root = Path(manifest.spec.publish.root)
    expected = staging_folder(root, manifest.release_id)
    if os.path.abspath(staging) != os.path.abspath(expected):
        raise PublishError(f"release {manifest.release_id}: {staging} is not its staging folder ({expected}); "
                           "nothing published")
    if manifest.parts:
        raise PublishError(f"release {manifest.release_id}: a partitioned release (parts) is not published in row "
                           "files; nothing published")

    public, private = split(manifest)  # what is published; what the publisher's private record keeps

    def stage(_root: Path) -> tuple[Path, Manifest, str, dict[str, str]]:
        finished, m_hash, files = _finish_row_staging(staging, public, extras)
        fault_point("staged")
        return staging, finished, m_hash, files

    try:
        return publish_staged(public, stage, started, below_floor_note(public),
                              None if series_record is None else series_record.write, private=private)
    except BaseException:
        discard_staging(staging)  # gone already once renamed into place
        raise


def _is_real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _finish_row_staging(staging: Path, manifest: Manifest, extras: dict[str, bytes] | None
                        ) -> tuple[Manifest, str, dict[str, str]]:
    """The staged row files measured and hashed into the manifest, then ``manifest.json``, the extras and
    ``report.html`` written and everything fsynced; (manifest, its hash, the folder's exact file list)."""
    rid = manifest.release_id
    if not _is_real_dir(staging) or not _is_real_dir(staging / DATA_FOLDER):
        raise PublishError(f"release {rid}: its staging folder {staging} (with {DATA_FOLDER}/) is missing (removed "
                           "by ppdp audit recover?); nothing published")
    try:
        names = release_names(staging)
        stray = [n for n in names if not is_data_file(n)]
        if stray:
            raise PublishError(f"release {rid}: {staging / stray[0]} is not a row file ({DATA_FOLDER}/part-<n>"
                               ".parquet); nothing published")
        if not names:
            raise PublishError(f"release {rid}: no row file in {staging / DATA_FOLDER}; nothing published")
        names.sort(key=lambda n: (data_file_index(n), n))
        numbers = [data_file_index(n) for n in names]
        if len(set(numbers)) != len(numbers):
            raise PublishError(f"release {rid}: two row files in {staging / DATA_FOLDER} have the same number; "
                               "nothing published")
        data_files = [_data_file(staging, name, rid) for name in names]
        _check_row_schema(staging, names, manifest)
        total = sum(f.rows for f in data_files)
        if total != manifest.rows:
            raise PublishError(f"release {rid}: its {len(names)} row files hold {total} rows, its manifest says "
                               f"{manifest.rows}; nothing published")
        manifest = manifest.model_copy(update={"data_files": data_files, "output_sha256": parts_digest(
            [(f.file, f.sha256) for f in data_files])})
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        check_manifest_reads_back(staging / "manifest.json", manifest)
        for name, payload in (extras or {}).items():
            if not name or name in _RESERVED or name.startswith(".") or "/" in name or "\\" in name:
                raise PublishError(f"release {rid}: an extra file cannot be called {name!r}; nothing published")
            (staging / name).write_bytes(payload)
        (staging / "report.html").write_text(_render_report(staging), encoding="utf-8")
        files = seal(staging)
    except OSError as exc:
        raise PublishError(f"cannot write release under {staging.parent} "
                           f"({exc.strerror or type(exc).__name__})") from None
    return manifest, manifest_sha256(manifest), files


def _data_file(staging: Path, name: str, release_id: str) -> DataFile:
    path = staging / name
    try:
        parquet = pq.ParquetFile(path)
        rows = parquet.metadata.num_rows
        meta = parquet.schema_arrow.metadata or {}
    except OSError:
        raise
    except Exception:  # noqa: BLE001 - pyarrow raises many types; the message may quote data
        raise PublishError(f"release {release_id}: {path} is not a readable Parquet file; nothing published") from None
    if meta.get(META_RELEASE_ID) != release_id.encode():
        raise PublishError(f"release {release_id}: {path} was not written for it (its ppdp.release_id differs); "
                           "nothing published")
    return DataFile(file=name, rows=int(rows), sha256=file_sha256(path))


def _check_row_schema(staging: Path, names: list[str], manifest: Manifest) -> None:
    """Every row file has the same columns of the same types (as ``ppdp validate FOLDER`` needs), and those are
    the manifest's ``columns`` and (when it declares them) its ``column_types``."""
    try:
        schema = common_schema([staging / n for n in names])
    except InputError as exc:
        raise PublishError(f"release {manifest.release_id}: its row files disagree ({exc}); nothing published"
                           ) from None
    if [str(n) for n in schema.names] != list(manifest.columns):
        raise PublishError(f"release {manifest.release_id}: its row files' columns are not the manifest's columns; "
                           "nothing published")
    types = {str(f.name): str(f.type) for f in schema}
    if manifest.column_types and types != manifest.column_types:
        raise PublishError(f"release {manifest.release_id}: its row files' types are not the manifest's "
                           "column_types; nothing published")


def column_treatments(roles: Roles, release_treatments: dict[str, str], method: str, unit: str,
                      rare: RareCategoryReport | None = None) -> list[ColumnTreatment]:
    """Every input column with exactly one treatment and the reason (tagging's reason, then the method's)."""
    rare_cells: dict[str, int] = {}
    for col in rare.columns if rare is not None else ():  # a column may be counted in both passes
        rare_cells[col.name] = rare_cells.get(col.name, 0) + col.cells_affected
    out = []
    for i, tag in enumerate(roles.columns):
        position = tag.position if tag.position is not None else i
        pre = tag.treatment
        if release_treatments.get(tag.name) == "dropped":  # e.g. a pseudonym has no place on a generated row
            treatment, reason = "dropped", f"{tag.reason}; dropped by {method} (unit {unit})"
        elif pre is not None:
            treatment, reason = pre, tag.reason
        elif tag.name in release_treatments:
            treatment = release_treatments[tag.name]
            reason = f"{tag.reason}; {treatment} by {method} (unit {unit})"
        else:
            treatment, reason = "dropped", f"{tag.reason}; not in the release"
        out.append(ColumnTreatment(position=position, name=tag.name, role=tag.role, treatment=treatment,
                                   reason=reason, rare_cells=rare_cells.get(tag.name, 0)))
    return out


def build_manifest(*, release_id: str, started: datetime, spec: ReleaseSpec, spec_sha256: str, roles: Roles,
                   ingest, release, method, privacy, utility, tuning, output_checks, rare=None,
                   flow_run_id: str | None = None, series=None) -> Manifest:
    """The manifest of a release about to be published (``output_sha256`` is filled in when written)."""
    frame = release.frame
    released_parts = release.parts if isinstance(release, PartsRelease) else ()
    parts = [PartRecord(name=p.name, file=f"{p.name}.parquet", rows=len(p.frame),
                        columns=[str(c) for c in p.frame.columns], quasi_identifiers=list(p.quasi_identifiers),
                        sensitive_attributes=[s for s in roles.names(Role.sensitive) if s in p.frame.columns],
                        privacy=report)
             for p, report in zip(released_parts, privacy.part_reports)]
    if len(parts) != len(released_parts):
        raise PublishError(f"release {release_id}: a part's privacy was not measured; nothing published")
    rows = max((p.rows for p in parts), default=0) if parts else len(frame)  # every part holds every record
    columns = list(dict.fromkeys(c for p in parts for c in p.columns)) if parts else [str(c) for c in frame.columns]
    return Manifest(
        release_id=release_id, dataset=spec.dataset, created_at=started, input_digest=ingest.input_digest,
        input_key_id=ingest.input_key_id,
        rows=rows, columns=columns, unit=release.unit, parts=parts,
        partition=release.partition if isinstance(release, PartsRelease) else None,
        group_column=GROUP_COLUMN if GROUP_COLUMN in frame.columns else None,
        treatments=column_treatments(roles, release.treatments, method.name, release.unit, rare),
        spec=spec, spec_sha256=spec_sha256, roles=roles, rare_categories=rare, ingest=ingest, method=method,
        seed=spec.seed, privacy=privacy, series=series, utility=utility, tuning=tuning, output_checks=output_checks,
        versions=collect_versions(), flow_run_id=flow_run_id,
    )
