"""Re-check every privacy claim of a published release from what was published (``ppdp validate --release``).

A claim marked ``published`` is re-measured on the published ``data.parquet`` alone, with the same functions the
release flow used: over the equivalence classes of the published quasi-identifiers (``equivalence_class``) or
over the published group column (``generating_group``). A distributed release's table, in row files
``data/part-<n>.parquet``, is never loaded whole: its class claims are re-counted over the folder ``data/`` by
:func:`ppdp.tasks.privacy.partitioned.validate_folder`, file by file (:func:`_recheck_row_files`).

A claim marked ``original`` compares the release with the original records (linkage risk, distance to closest
record, value distortion), so it needs the original input: given it, the run is reproduced from the manifest
(the same spec, seed and method parameters give the same release, a property the release flow guarantees), the
reproduction is compared cell by cell with the published table (pseudonymized identifiers excepted: their key
is not in the manifest), and the claim is re-measured on the reproduction. Without the original such a claim is
reported as not re-checked.

A claim marked ``construction`` (a differentially private release: its (epsilon, delta)) holds by the mechanism's
construction, not by a measure of the rows: the mechanism is rebuilt from the manifest's method parameters and the
published columns (public information only: no data is read) and the DP library's privacy map is asked again what
it spends for one row added or removed. Such a release cannot be reproduced from the original (its noise takes no
seed), and needs none.

A claim counted against the population table the policy names (``privacy.population``: journalist risk, k-map,
marketer risk with a population) is re-measured with that table, read as the release read it (``--population``
gives its path when the table has moved). When it cannot be read, such a claim is reported as not re-checked.

Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from ppdp.schemas.base import Role
from ppdp.schemas.criteria.registry import CRITERIA
from ppdp.schemas.manifest import Manifest
from ppdp.schemas.methods import GROUP_COLUMN, Protection
from ppdp.schemas.privacy import PrivacyThresholds
from ppdp.schemas.release import Release
from ppdp.schemas.reports import AcceptedBelowFloor, Claim, PrivacyReport, Roles
from ppdp.schemas.units import unit_of
from ppdp.tasks import digests
from ppdp.tasks.core.errors import InputError, PpdpError
from ppdp.tasks.core.hierarchy import read_hierarchy
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.layout import DATA_FOLDER, is_data_file, is_part_file, parts_digest, read_parquet_metadata
from ppdp.tasks.privacy.attacker import attacker_view, check_floor
from ppdp.tasks.privacy.judge import judge_release
from ppdp.tasks.privacy.measure import check_gates, class_measures
from ppdp.tasks.privacy.partitioned import file_schema, folder_sha256, partition_files, validate_folder
from ppdp.tasks.privacy.parts import measure_parts
from ppdp.tasks.privacy.validate import read_table_file

Verdict = Literal["holds", "does not hold", "not re-checked", "below the floor, accepted"]


class KnownMethod(Protocol):
    """What re-checking needs to know of a release's method (a sanitizer class)."""

    @property
    def protects(self) -> Protection: ...

    @property
    def reproducible(self) -> bool: ...

    def protected_columns(self, roles: Roles) -> list[str]: ...

    def rebuild_guarantee(self, params: dict[str, Any], columns: list[str], roles: Roles,
                          numeric: dict[str, bool], found: dict[str, list[float]] | None = None
                          ) -> tuple[float, float, str]: ...


@dataclass(frozen=True)
class Reproduction:
    """A release re-run from its original input: the rows the method was given (``source``), the reproduced
    release (in the published order when it matches), whether it equals the published table, a note saying how it
    compares, and every input record after the rare-value rule (``everything``)."""

    source: pd.DataFrame
    release: Release
    same: bool
    note: str
    everything: pd.DataFrame


Reproducer = Callable[[Manifest, Path, pd.DataFrame], Reproduction]


@dataclass(frozen=True)
class ClaimCheck:
    """One claim of the manifest and what re-checking it found."""

    claim: Claim
    verdict: Verdict
    value: float | None
    note: str


@dataclass(frozen=True)
class ReleaseCheck:
    folder: Path
    manifest: Manifest
    checks: list[ClaimCheck]
    input_note: str | None = None  # --original given, its digest not checked: why (one line)

    @property
    def holds(self) -> bool:
        return bool(self.checks) and all(c.verdict == "holds" for c in self.checks)

    @property
    def below_floor(self) -> AcceptedBelowFloor | None:
        """The owner's decision to publish below the safety floor, when the manifest records one."""
        floor = self.manifest.privacy.floor
        return floor.accepted if floor is not None else None

    @property
    def exit_code(self) -> int:
        """0 every claim holds; 3 a claim does not hold; 5 every re-checked claim holds but the release was
        published below the safety floor on purpose; 4 some claim could not be re-checked (no original, or no
        population table)."""
        if any(c.verdict == "does not hold" for c in self.checks):
            return 3
        if self.below_floor is not None:
            return 5
        return 0 if self.holds else 4


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def load_release(folder: Path) -> tuple[Manifest, pd.DataFrame, dict[str, str]]:
    """The manifest, the published table and the SHA-256 of each data file: ``data.parquet``, or a partitioned
    release's part files in part order (its table is then empty: :func:`load_parts`). One-line errors name the
    file."""
    folder = Path(folder)
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        raise InputError(f"{manifest_path} is missing")
    try:
        manifest = Manifest.model_validate_json(manifest_path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, UnicodeDecodeError):
        raise InputError(f"{manifest_path} cannot be read as a ppdp manifest") from None
    if manifest.parts:  # a partitioned release: the tables are its parts (load_parts)
        return manifest, pd.DataFrame(), {p.file: file_sha256(_part_path(folder, p.file)) for p in manifest.parts}
    if manifest.data_files:  # a distributed release: its row files are never read whole (row_files_sample)
        return manifest, pd.DataFrame(), {f.file: file_sha256(path) for f in manifest.data_files
                                          if (path := _row_file_path(folder, f.file)).is_file()}
    data_path = folder / "data.parquet"
    return manifest, _read_parquet(data_path), {"data.parquet": file_sha256(data_path)}


def _part_path(folder: Path, name: str) -> Path:
    """A part's file, by the manifest's plain file name only (never a path out of the folder)."""
    if not is_part_file(name):
        raise InputError(f"{folder / 'manifest.json'} names a part file that is not part-<n>.parquet")
    path = folder / name
    if not path.is_file():
        raise InputError(f"{path} is missing")
    return path


def _row_file_path(folder: Path, name: str) -> Path:
    """A distributed release's row file, by the manifest's name only (``data/part-<n>.parquet``: never a path out
    of the folder). It may be missing (an integrity finding, not an error)."""
    if not is_data_file(name):
        raise InputError(f"{folder / 'manifest.json'} names a row file that is not data/part-<n>.parquet")
    return folder / name


SAMPLE_ROWS = 1_000_000
"""The most rows :func:`row_files_sample` reads (the first row file's first batches)."""


def row_files_sample(folder: Path, manifest: Manifest, rows: int = SAMPLE_ROWS) -> pd.DataFrame:
    """A bounded sample of a distributed release's table, for what a report counts on the rows (class labels it
    may name): the first row file's first ``rows`` rows (rows are spread over the files at random, so any file is
    a sample). Empty when the file is missing or unreadable (the report's integrity section says so)."""
    if not manifest.data_files:
        return pd.DataFrame()
    path = _row_file_path(Path(folder), manifest.data_files[0].file)
    try:
        parquet = pq.ParquetFile(path)
        batches, taken = [], 0
        for batch in parquet.iter_batches(batch_size=min(rows, 65_536)):
            batches.append(batch.slice(0, rows - taken))
            taken += batches[-1].num_rows
            if taken >= rows:
                break
        table = pa.Table.from_batches(batches, schema=parquet.schema_arrow) if batches else \
            parquet.schema_arrow.empty_table()
        return table.to_pandas()
    except Exception:  # noqa: BLE001 - a damaged file: no sample (the integrity section reports it)
        return pd.DataFrame()


def _read_parquet(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InputError(f"{path} is missing")
    try:
        return pd.read_parquet(path)
    except Exception:  # noqa: BLE001 - pyarrow raises many types; the message may quote data
        raise InputError(f"{path} cannot be read as Parquet") from None


def load_parts(folder: Path, manifest: Manifest) -> dict[str, pd.DataFrame]:
    """A partitioned release's tables by part name, read from the files its manifest names."""
    return {p.name: _read_parquet(_part_path(Path(folder), p.file)) for p in manifest.parts}


def published_report(manifest: Manifest, frame: pd.DataFrame, method: KnownMethod | None = None,
                     population: pd.DataFrame | None = None) -> PrivacyReport:
    """The claims of the release re-measured on the published table alone (and the ``population`` table its policy
    names, for the claims counted against one: None without)."""
    roles, policy, unit = manifest.roles, manifest.spec.privacy, manifest.unit
    qis = [q for q in roles.quasi_identifiers if q in frame.columns]
    sas = [s for s in roles.names(Role.sensitive) if s in frame.columns]
    privacy_unit = unit_of(unit)
    if privacy_unit.claims_by_construction:
        return PrivacyReport(unit=unit, quasi_identifiers=qis, sensitive_attributes=sas, records=len(frame),
                             dp=rebuilt_guarantee(manifest, frame, method))
    if not privacy_unit.counts_classes or len(frame) == 0:
        return PrivacyReport(unit=unit, quasi_identifiers=qis, sensitive_attributes=sas, records=len(frame))
    if privacy_unit.group_column:
        if GROUP_COLUMN not in frame.columns:
            raise InputError(f"the published table has no {GROUP_COLUMN} column: a generating-group release "
                             "must carry it")
        classes = [GROUP_COLUMN]
    else:
        missing = [q for q in roles.quasi_identifiers if q not in frame.columns]
        if missing:
            raise InputError(f"the published table lacks quasi-identifier column '{missing[0]}'")
        classes = qis
    report = class_measures(frame, classes, qis, sas, policy, None if privacy_unit.group_column else population,
                            _hierarchies(manifest))
    return report.model_copy(update={"unit": unit})


def rebuilt_guarantee(manifest: Manifest, frame: pd.DataFrame, method: KnownMethod | None = None):
    """A differentially private release's guarantee re-derived from its manifest: the mechanism rebuilt from the
    method's recorded parameters and the published columns (which are cut at bins: those named in ``bins``, with
    the edges the release recorded as found under DP), and mapped again by the DP library. The recorded guarantee
    with the re-derived epsilon and delta, as asked and as spent; None when the manifest records none or the
    mechanism cannot be rebuilt (the claims then fail: fail closed). ``method``: the release's method (its
    ``rebuild_guarantee``), None when unknown."""
    recorded = manifest.privacy.dp
    if recorded is None:
        return None
    params = manifest.method.params
    if method is None:
        return None
    try:
        bins: Any = params.get("bins") or {}  # JSON as recorded; a malformed one fails the rebuild (closed)
        columns = [str(c) for c in frame.columns]
        eps, delta, library = method.rebuild_guarantee(params, columns, manifest.roles,
                                                       {c: c in bins for c in columns}, recorded.found_edges)
    except Exception:  # noqa: BLE001 - any failure to rebuild is a claim that cannot be re-checked (fail closed)
        return None
    # the rebuild validated epsilon and delta as numbers (the method's parameter model)
    return recorded.model_copy(update={"epsilon": float(cast(float, params.get("epsilon") or 0.0)),
                                       "delta": float(cast(float, params.get("delta") or 0.0)), "epsilon_spent": eps,
                                       "delta_spent": delta, "library": library,
                                       "mechanism": str(params.get("mechanism", recorded.mechanism))})


def _hierarchies(manifest: Manifest) -> dict[str, pd.DataFrame] | None:
    out = {}
    for column, path in manifest.spec.privacy.hierarchies.items():
        try:
            out[column] = read_hierarchy(path)
        except (OSError, ValueError):
            raise InputError(f"hierarchy for '{column}' named in the manifest cannot be read: {path}") from None
    return out or None


POPULATION_CLAIMS = frozenset(c.key for c in CRITERIA if c.counts_population)
"""Policy claims counted against the population table when the policy names one: the criteria that say so
(:attr:`ppdp.schemas.criteria.base.Criterion.counts_population`)."""


@dataclass(frozen=True)
class Population:
    """The population table a release's policy names, as re-checking found it: the table (None when no claim needs
    it or it cannot be used) and, when it cannot be used, why the claims counted against it are not re-checked
    (``missing``: it cannot be read) or do not hold (``refused``: it does not match the published table)."""

    frame: pd.DataFrame | None = None
    missing: str = ""
    refused: str = ""

    def check(self, claim: Claim) -> ClaimCheck | None:
        """The verdict of a claim counted against the population (a part's claim too: ``part-1: k_map``) when the
        table cannot be used; None for any other claim, or when the table is there."""
        if claim.name.rsplit(": ", 1)[-1] not in POPULATION_CLAIMS or self.frame is not None:
            return None
        if self.missing:
            return ClaimCheck(claim, "not re-checked", None, self.missing)
        if self.refused:
            return ClaimCheck(claim, "does not hold", None, self.refused)
        return None


def read_population(manifest: Manifest, path: Path | None = None) -> Population:
    """The population table the release's policy names (``privacy.population``), read as the release read it, when
    a claim of the policy is counted against it; ``path``: where the table is now (``--population``), instead of
    the path the spec names. A table that cannot be read leaves those claims not re-checked (one line saying why);
    a ``path`` for a release whose policy names no population is bad input."""
    policy = manifest.spec.privacy
    if policy.population is None:
        if path is not None:
            raise InputError(f"--population {path}: release {manifest.release_id} was not measured against a "
                             "population table (its policy names none)")
        return Population()
    if not any(getattr(policy, key) is not None for key in POPULATION_CLAIMS):
        return Population()
    where = Path(path) if path is not None else Path(policy.population)
    try:
        return Population(read_table_file(where))
    except (PpdpError, OSError, ValueError):  # the message may quote data: the path only
        return Population(missing=f"needs the population table (--population): {where} cannot be read")


def _with_population(population: Population, measure: Callable[[pd.DataFrame | None], Any]) -> tuple[Any, Population]:
    """``measure(population table)``, and the population as used: a table the published one does not match (the
    measures refuse a published class larger than its population class, or a column the population lacks) is
    measured without, its claims then do not hold."""
    if population.frame is None:
        return measure(None), population
    try:
        return measure(population.frame), population
    except ValueError as exc:  # the measures name the column, never a value
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return measure(None), Population(refused=f"the population table does not match the published table ({why})")


def recheck_claims(folder: Path, original: Path | None = None, *,
                   method_of: Callable[[str], KnownMethod | None] = lambda name: None,
                   reproduce: Reproducer | None = None, cluster: str | None = None,
                   population: Path | None = None) -> ReleaseCheck:
    """Re-check every claim of the release in ``folder`` (see the module docstring). ``method_of(name)``: the
    release's method by its name (what it protects, whether it reproduces, its guarantee), None for a method this
    ppdp does not know; ``reproduce``: re-runs the release from ``original`` (``ppdp.tasks.reproduce``), needed for
    the claims marked ``original``. Callers use :func:`ppdp.tasks.reproduce.recheck_release`, which gives both.
    ``cluster``: a distributed release's row files are counted on this Dask scheduler (``local``: a LocalCluster
    for the call), as :func:`ppdp.tasks.privacy.partitioned.validate_folder` counts; ignored for other releases.
    ``population``: where the population table the policy names is now (None: the path in the spec)."""
    manifest, frame, hashes = load_release(folder)
    given = None if original is None else input_check(manifest, Path(original))
    if given is None or given.verdict == "not checked":
        note = None if given is None else f"input digest not checked: {given.why}"
        return replace(_recheck(Path(folder), manifest, frame, hashes, original, method_of, reproduce, cluster,
                                given, population), input_note=note)
    claim = Claim(name="input digest", measure="the original's keyed digest equals the manifest's input_digest",
                  value=None, threshold=0.0, passed=True, recheck="original")
    found = ClaimCheck(claim, "holds" if given.verdict == "holds" else "does not hold", None,
                       given.why if given.verdict == "holds" else f"{given.why}: this original is not the input the "
                       "release was made from")
    done = _recheck(Path(folder), manifest, frame, hashes, original, method_of, reproduce, cluster, given,
                    population)
    return replace(done, checks=[found, *done.checks])


def input_check(manifest: Manifest, original: Path):
    """The original input given to ``validate --release --original`` against the release's keyed digest
    (:func:`ppdp.tasks.digests.check`, with this machine's key: only the publisher's machine can check it), or
    against its unkeyed SHA-256 in a manifest made before keyed digests."""
    if not original.exists():
        raise InputError(f"original {original}: file not found")
    if original.is_dir():  # a partitioned input: the hash of its files' '<path> <sha256>' lines

        sha = folder_sha256(original)
    else:
        sha = file_sha256(original)
    legacy = manifest.input_sha256 or manifest.ingest.input_sha256
    if manifest.input_digest is None and legacy:
        same = sha == legacy
        return digests.DigestCheck("holds" if same else "differs", f"SHA-256 {'matches' if same else 'differs from'} "
                                   "the manifest's (a release made before keyed digests)")
    return digests.check(sha, manifest.input_digest, manifest.input_key_id, digests.local_key())


def _recheck(folder: Path, manifest: Manifest, frame: pd.DataFrame, hashes: dict[str, str], original: Path | None,
             method_of: Callable[[str], KnownMethod | None], reproduce: Reproducer | None, cluster: str | None,
             given, population_path: Path | None = None) -> ReleaseCheck:
    """:func:`recheck_claims` once the original (``given``: its digest check, None without one) is checked."""
    cls = method_of(manifest.method.name)
    if manifest.data_files:
        return _recheck_row_files(Path(folder), manifest, hashes, original, cluster)
    population = read_population(manifest, population_path)
    if manifest.parts:
        return _recheck_parts(Path(folder), manifest, hashes, cls, population)
    sha = hashes["data.parquet"]
    checks: list[ClaimCheck] = []
    if manifest.output_sha256 is not None and sha != manifest.output_sha256:
        integrity = Claim(name="integrity", measure="SHA-256 of data.parquet equals the manifest's output_sha256",
                          value=None, threshold=0.0, passed=True)
        checks.append(ClaimCheck(integrity, "does not hold", None,
                                 "data.parquet is not the file the manifest describes (claims below are re-measured "
                                 "on the file as it is)"))
    protected = cls.protected_columns(manifest.roles) if cls is not None else []
    protects = cls.protects if cls is not None else "identity"
    base, population = _with_population(population, lambda table: published_report(manifest, frame, cls, table))
    view = attacker_view(frame, manifest.roles, protects=protects, unit=manifest.unit, protected=protected,
                         dp=base.dp)
    base = base.model_copy(update={"attacker_view": view})
    recomputed = {c.name: c for c in check_gates(base, manifest.spec.privacy).claims}
    floor_again = check_floor(view, protected, manifest.unit).claims
    recomputed.update((c.name, c) for c in floor_again)
    floor_claims = manifest.privacy.floor.claims if manifest.privacy.floor is not None else [
        c.model_copy(update={"value": None}) for c in floor_again]
    claims = [*manifest.privacy.claims, *floor_claims]
    reproduced: dict[str, Claim] = {}
    repro_note, repro_ok = "", False
    # a DP release is never re-run (another run of its mechanism would spend budget on the same rows, uncounted)
    if original is not None and reproduce is not None and any(c.recheck == "original" for c in claims) \
            and unit_of(manifest.unit).reproducible and (cls is None or cls.reproducible):
        reproduced, repro_note, repro_ok = _reproduced_claims(manifest, frame, Path(original), reproduce, given,
                                                              protects, protected)
    new_floor = manifest.privacy.floor is None  # a release made before the safety floor: its figures are new
    for claim in claims:
        if new_floor and claim in floor_claims:
            claim = claim.model_copy(update={"value": (reproduced.get(claim.name) or recomputed[claim.name]).value})
        checks.append(population.check(claim) or _claim_check(claim, original is not None, reproduced, repro_ok,
                                                               repro_note, recomputed, base))
    if not manifest.privacy.claims:
        checks.append(ClaimCheck(Claim(name="(none)", value=None, threshold=0.0, passed=False), "does not hold",
                                 None, "the manifest makes no privacy claim"))
    return ReleaseCheck(folder=Path(folder), manifest=manifest, checks=_floor_verdicts(checks, manifest))


def _reproduced_claims(manifest: Manifest, frame: pd.DataFrame, original: Path, reproduce: Reproducer, given,
                       protects: Protection, protected: list[str]) -> tuple[dict[str, Claim], str, bool]:
    """The claims measured again on the release re-run from the original (by name), a note saying how the re-run
    compares, and whether it equals the published table (without which nothing was measured)."""
    if not original.is_file():
        raise InputError(f"original {original}: file not found")
    reproduced: dict[str, Claim] = {}
    repro_note, repro_ok = "", False
    if given is not None and given.verdict == "differs":
        repro_note = f"this original is not the input the release was made from ({given.why})"
    else:  # the digest holds, or cannot be checked here: the reproduction compares the rows themselves
        rerun = reproduce(manifest, original, frame)
        repro_ok, repro_note = rerun.same, rerun.note
    if repro_ok:
        report = judge_release(rerun.source, rerun.release, manifest.roles, manifest.spec.privacy, protects=protects,
                               protected=protected, seed=manifest.seed, everything=rerun.everything,
                               attack_queries=0)
        reproduced = {c.name: c for c in [*report.claims, *(report.floor.claims if report.floor else [])]}
    return reproduced, repro_note, repro_ok


def _claim_check(claim: Claim, has_original: bool, reproduced: dict[str, Claim], repro_ok: bool, repro_note: str,
                 recomputed: dict[str, Claim], base: PrivacyReport) -> ClaimCheck:
    """One claim's verdict: re-measured on the re-run release (claims that need the original), on the published
    table, or rebuilt from the manifest (claims by construction), then compared with the manifest's value."""
    if claim.recheck == "original":
        if not has_original:
            return ClaimCheck(claim, "not re-checked", None, "needs the original input (--original)")
        again = reproduced.get(claim.name)
        if not repro_ok or again is None:
            return ClaimCheck(claim, "does not hold", None, repro_note or "could not be re-measured")
        note = repro_note
    else:
        again = recomputed.get(claim.name)
        note = "re-measured on the published table"
        if claim.recheck == "construction":
            note = _construction_note(base.dp)
        if again is None:
            return ClaimCheck(claim, "does not hold", None, "could not be re-measured")
    if not again.passed:
        verdict: Verdict = "does not hold"
        note = f"re-measured value {_fmt(again.value)} fails {again.comparison} {again.threshold:g}" + (
            f" ({again.worst})" if again.worst else "")
    elif not _same(again.value, claim.value):
        verdict = "does not hold"
        note = f"re-measured value {_fmt(again.value)} differs from the manifest's {_fmt(claim.value)}"
    else:
        verdict = "holds"
    return ClaimCheck(claim, verdict, again.value, note)


def _construction_note(dp) -> str:
    if dp is None:
        return "the mechanism could not be rebuilt from the manifest"
    return (f"holds by construction: the mechanism rebuilt from the manifest's parameters ({dp.library}, "
            f"{dp.mechanism}) spends epsilon {dp.epsilon_spent:.6g}, delta {dp.delta_spent:.3g} for one row added or "
            "removed")


def _floor_verdicts(checks: list[ClaimCheck], manifest: Manifest) -> list[ClaimCheck]:
    """A floor claim the manifest records as failed (published below the floor on purpose) re-measured at the
    recorded value is "below the floor, accepted" (the release's exit code is then 5), not "does not hold"."""
    floor = manifest.privacy.floor
    if floor is None or floor.accepted is None:
        return checks
    out = []
    for c in checks:
        if c.claim.name.startswith("floor: ") and not c.claim.passed and c.verdict == "does not hold" \
                and c.value is not None and _same(c.value, c.claim.value):
            c = ClaimCheck(c.claim, "below the floor, accepted", c.value,
                           "re-measured at the recorded value (privacy.accept_below_floor)")
        out.append(c)
    return out


def _verdict(claim: Claim, again: Claim | None, note: str) -> ClaimCheck:
    """A claim against its re-measurement: holds when the re-measured claim passes with the same value."""
    if again is None:
        return ClaimCheck(claim, "does not hold", None, "could not be re-measured")
    if not again.passed:
        return ClaimCheck(claim, "does not hold", again.value, f"re-measured value {_fmt(again.value)} fails "
                          f"{again.comparison} {again.threshold:g}" + (f" ({again.worst})" if again.worst else ""))
    if not _same(again.value, claim.value):
        return ClaimCheck(claim, "does not hold", again.value, f"re-measured value {_fmt(again.value)} differs "
                                                               f"from the manifest's {_fmt(claim.value)}")
    return ClaimCheck(claim, "holds", again.value, note)


def _recheck_parts(folder: Path, manifest: Manifest, hashes: dict[str, str], cls: KnownMethod | None,
                   population: Population | None = None) -> ReleaseCheck:
    """A partitioned release (DMPD): each part's claims re-measured on its own file (named ``part-1: k``), then
    the release's claims (the worst part), all with the functions the release flow used
    (:func:`ppdp.tasks.privacy.parts.measure_parts`). ``hashes``: each part file's SHA-256."""
    checks: list[ClaimCheck] = []
    if manifest.output_sha256 is not None and parts_digest(list(hashes.items())) != manifest.output_sha256:
        integrity = Claim(name="integrity", measure="SHA-256 of the part files equals the manifest's",
                          value=None, threshold=0.0, passed=True)
        bad = [p.file for p in manifest.parts if hashes[p.file] != p.sha256]
        checks.append(ClaimCheck(integrity, "does not hold", None,
                                 f"{', '.join(bad) or 'the parts'} not the file(s) the manifest describes (claims "
                                 "below are re-measured on the files as they are)"))
    tables = load_parts(folder, manifest)
    for p in manifest.parts:
        missing = [c for c in p.quasi_identifiers if c not in tables[p.name].columns]
        if missing:
            raise InputError(f"{folder / p.file} lacks quasi-identifier column '{missing[0]}'")
    (combined, each), population = _with_population(population or Population(), lambda table: measure_parts(
        [(p.name, tables[p.name], p.quasi_identifiers) for p in manifest.parts], manifest.roles, manifest.spec.privacy,
        _hierarchies(manifest), table, protected=cls.protected_columns(manifest.roles) if cls is not None else None))
    for p, report in zip(manifest.parts, each):
        again = {c.name: c for c in _all_claims(report)}
        for claim in _all_claims(p.privacy, report):
            named = claim.model_copy(update={"name": f"{p.name}: {claim.name}"})
            checks.append(population.check(named) or _verdict(named, again.get(claim.name), f"re-measured on {p.file}"))
    again = {c.name: c for c in _all_claims(combined)}
    for claim in _all_claims(manifest.privacy, combined):
        checks.append(population.check(claim) or _verdict(claim, again.get(claim.name),
                                                          "re-measured on every part (the worst part)"))
    if not manifest.privacy.claims:
        checks.append(ClaimCheck(Claim(name="(none)", value=None, threshold=0.0, passed=False), "does not hold",
                                 None, "the manifest makes no privacy claim"))
    return ReleaseCheck(folder=folder, manifest=manifest, checks=_floor_verdicts(checks, manifest))


def _all_claims(report: PrivacyReport, again: PrivacyReport | None = None) -> list[Claim]:
    """A report's claims and its floor's; a report made before the safety floor takes the floor claims of
    ``again`` (its re-measurement), so they are checked as new claims."""
    floor = report.floor if report.floor is not None or again is None else again.floor
    return [*report.claims, *(floor.claims if floor is not None else [])]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6g}"


# -- a distributed release: the table in row files under data/ ----------------------------------------------
def row_files_integrity(folder: Path, manifest: Manifest, hashes: dict[str, str]) -> list[str]:
    """What differs between a distributed release's row files and its manifest, one phrase each (empty: intact):
    a listed file missing or of another SHA-256, a file in ``data/`` the manifest does not list, a file whose
    ``ppdp.release_id`` names another release, the listed hashes not hashing to ``output_sha256``. ``hashes``:
    the SHA-256 of each listed file present (:func:`load_release`)."""
    out = []
    listed = {f.file: f for f in manifest.data_files}
    for f in manifest.data_files:
        if f.file not in hashes:
            out.append(f"{f.file} is missing")
        elif hashes[f.file] != f.sha256:
            out.append(f"{f.file} is not the file the manifest describes (SHA-256 differs)")
    try:
        present = sorted(os.listdir(folder / DATA_FOLDER))
    except OSError:
        present = []
    out += [f"{DATA_FOLDER}/{name} is not listed in the manifest" for name in present
            if f"{DATA_FOLDER}/{name}" not in listed]
    for name in hashes:
        try:
            if read_parquet_metadata(folder / name).get("ppdp.release_id") != manifest.release_id:
                out.append(f"{name} names another release in its metadata")
            if manifest.column_types and {str(f.name): str(f.type) for f in file_schema(folder / name)
                                          } != manifest.column_types:
                out.append(f"{name} does not have the manifest's column_types")
        except Exception:  # noqa: BLE001 - pyarrow raises many types; the message may quote data
            out.append(f"{name} is not a readable Parquet file")
    if manifest.output_sha256 is not None and parts_digest(
            [(f.file, f.sha256) for f in manifest.data_files]) != manifest.output_sha256:
        out.append("the manifest's data_files do not hash to its output_sha256")
    return out


def _recheck_row_files(folder: Path, manifest: Manifest, hashes: dict[str, str], original: Path | None,
                       cluster: str | None = None) -> ReleaseCheck:
    """A distributed release (row files under ``data/``): integrity (each file's SHA-256 against the manifest, the
    digest against ``output_sha256``), then every claim marked ``published`` that counts give re-measured from
    counts over the folder ``data/`` (:func:`ppdp.tasks.privacy.partitioned.validate_folder`: file by file, in
    row-group batches; the table is never loaded whole): the policy's class claims over the release's
    quasi-identifiers and sensitive attributes, the safety floor's records alone and average risk over the
    attacker's known columns (quasi-identifiers and the columns counted in). Claims that need the original input
    or whole records are not re-checked: a distributed release is not reproduced from its original here."""
    checks: list[ClaimCheck] = []
    problems = row_files_integrity(folder, manifest, hashes)
    if problems:
        integrity = Claim(name="integrity", measure="SHA-256 of each row file equals the manifest's data_files, "
                          "and their digest its output_sha256", value=None, threshold=0.0, passed=True)
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        checks.append(ClaimCheck(integrity, "does not hold", None, "; ".join(problems[:3]) + more
                                 + " (claims below are re-measured on the files as they are)"))
    floor = manifest.privacy.floor
    claims = [*manifest.privacy.claims, *(floor.claims if floor is not None else [])]
    recomputed: dict[str, Claim] = {}
    failure = ""
    if unit_of(manifest.unit).shares_quasi_identifiers and any(c.recheck == "published" for c in claims):
        _hierarchies(manifest)  # an unreadable hierarchy is bad input (one line), as for data.parquet
        try:
            recomputed = _count_row_files(folder, manifest, cluster)
        except InputError as exc:
            failure = f"could not be re-measured from the row files ({exc})"
    unit_note = "" if unit_of(manifest.unit).shares_quasi_identifiers else f" (unit {manifest.unit})"
    for claim in claims:
        if claim.recheck == "original":
            checks.append(ClaimCheck(claim, "not re-checked", None, "needs the original input (--original); a "
                                     "distributed release is not reproduced from it" if original is None else
                                     "needs the original input: a distributed release is not reproduced from it"))
        elif claim.recheck == "construction":
            checks.append(ClaimCheck(claim, "not re-checked", None, "holds by construction: the mechanism of a "
                                     "distributed release is not rebuilt from its files"))
        elif failure:
            checks.append(ClaimCheck(claim, "does not hold", None, failure))
        elif claim.name in recomputed:
            checks.append(_verdict(claim, recomputed[claim.name], "re-measured from counts over the row files "
                                                                  "(data/)"))
        else:
            checks.append(ClaimCheck(claim, "not re-checked", None, "not re-measured from counts over the row files"
                                     f"{unit_note}: it needs whole records"))
    if not manifest.privacy.claims:
        checks.append(ClaimCheck(Claim(name="(none)", value=None, threshold=0.0, passed=False), "does not hold",
                                 None, "the manifest makes no privacy claim"))
    return ReleaseCheck(folder=folder, manifest=manifest, checks=_floor_verdicts(checks, manifest))


_NOT_FROM_COUNTS = frozenset(c.key for c in CRITERIA if not c.from_counts)
"""Policy claims that class counts do not measure (whole records, the original, a population, a mechanism): the
criteria that say so (:attr:`ppdp.schemas.criteria.base.Criterion.from_counts`)."""
_COUNTED_FLOOR = ("floor: records alone", "floor: average risk")
"""The safety floor's claims of an equivalence-class release that class counts re-measure."""


def _count_row_files(folder: Path, manifest: Manifest, cluster: str | None = None) -> dict[str, Claim]:
    """The claims counts re-measure over ``folder/data``, by name: the policy's over the release's
    quasi-identifiers and sensitive attributes, and the floor's records alone and average risk over the attacker's
    known columns (a second pass when those differ). The files are read as the release's own (one schema, the
    first file's, which every file must have; values as published, not checked as hostile input), as the release
    measured them before publishing."""
    p, policy = manifest.privacy, manifest.spec.privacy
    data = folder / DATA_FOLDER
    qi, sa = list(p.quasi_identifiers), list(p.sensitive_attributes)
    hierarchies = {k: Path(v) for k, v in policy.hierarchies.items() if k in sa} or None
    schema = file_schema(partition_files(data)[0])
    report = validate_folder(data, qi, sa, policy, na_values=[], hierarchies=hierarchies, cluster=cluster,
                             schema=schema).report
    out = {c.name: c for c in report.claims if c.name not in _NOT_FROM_COUNTS}
    view = p.attacker_view
    if view is None or p.floor is None or "classes" not in p.floor.applies:
        return out
    known = [*view.quasi_identifiers, *view.counted_columns]
    seen = report if known == qi else validate_folder(data, known, [], PrivacyThresholds(), na_values=[],
                                                      cluster=cluster, schema=schema).report
    if seen.risk is None:
        return out
    again = view.model_copy(update={
        "records": seen.records, "classes": seen.groups or 0, "smallest_class": seen.k or 0,
        "records_alone": seen.risk.sample_uniques, "average_risk": seen.risk.prosecutor_average,
        "highest_risk": seen.risk.prosecutor_max})
    protected = [d.column for d in view.disclosure]
    out.update((c.name, c) for c in check_floor(again, protected, manifest.unit).claims if c.name in _COUNTED_FLOOR)
    return out
