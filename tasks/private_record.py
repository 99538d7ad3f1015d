"""The publisher's private record of a run, and what a differential_privacy release withholds from its folder.

A differentially private release is DP *as published*: its folder, its audit entries and its Prefect artifacts
carry only what the spec declares (schema, bins, categories, epsilon and delta, parameters), what was computed under
differential privacy (the synthetic rows and their count: the model's noisy total unless ``samples`` is declared)
and what is computed on the published table alone. :func:`split` takes the manifest a release computed and returns
the one it publishes, with every field computed on the input (:data:`WITHHELD`) set to null or left empty and named
in the manifest's ``withheld``, and the :class:`Record` that keeps them.

The private record of a run is ``<config>/records/<audit trail id>/<release id>.json`` (``<config>``: the
publisher's ppdp configuration folder, :func:`ppdp.tasks.keys.config_dir`; refused under the publish root, as the
audit key and the series ledger are), mode 0600 in a folder of mode 0700. Every release and every refused run that
read its input writes one: it holds the input's unkeyed SHA-256 behind the published keyed digest
(:mod:`ppdp.tasks.digests`), and, for a DP release, the manifest as computed (a refused DP run: its reason, which its
audit entry withholds). It is written with the release, under the root's publish lock, after the ``pending`` audit
entry and before the folder is renamed into place (a failure to write it rolls the release back). ``ppdp audit
verify`` on the publisher's machine checks each entry's digest against it.

Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from ppdp.schemas.manifest import Manifest, PrivateRecord, Withheld
from ppdp.schemas.units import find_unit
from ppdp.tasks import keys
from ppdp.tasks.core.errors import PublishError

RECORDS_DIR = "records"
KEPT_IN = ("the publisher's private record: records/<audit trail id>/<release id>.json in the publisher's ppdp "
           "configuration folder ($PPDP_CONFIG_DIR, else $XDG_CONFIG_HOME/ppdp, else ~/.config/ppdp), never under the "
           "publish root")
REASON = ("a differential_privacy release publishes only what its spec declares, what was computed under "
          "differential privacy and what is computed on the published table alone; these fields were computed on "
          "the input")
REFUSAL_WITHHELD = ("reason withheld: a differential_privacy run publishes no figure of its input (the reason is in "
                    "the publisher's private record)")

# every field of a manifest computed on the input, as Withheld.fields names them
WITHHELD: tuple[str, ...] = (
    "ingest.rows",
    "ingest.expectations[*].unexpected_count",
    "ingest.expectations[*].element_count",
    "ingest.expectations[*].observed",
    "roles.columns[*].reason",
    "treatments[*].reason",
    "treatments[*].rare_cells",
    "rare_categories",
    "privacy.linkage_risk",
    "privacy.synthetic",
    "privacy.perturbation",
    "privacy.attacker",
    "privacy.attacker_view.exact_copies",
    "privacy.attacker_view.linkage_risk",
    "privacy.attacker_view.nearest_distance",
    "privacy.attacker_view.disclosure",
    "series",
    "utility",
    "tuning.class_sizes",
    "tuning.evaluations",
)
_HEX = re.compile(r"^[0-9a-f]{8,64}$")


def withholds(unit: str | None) -> bool:
    """Whether a release of privacy unit ``unit`` withholds what it computed on its input
    (:attr:`~ppdp.schemas.units.PrivacyUnit.withholds_input_figures`)."""
    found = find_unit(unit)  # a name that is no unit (or None) withholds nothing, as the name comparison did
    return found is not None and found.withholds_input_figures


@dataclass(frozen=True)
class Record:
    """A private record about to be written (the trail id is known once the run's first audit entry is)."""

    release_id: str
    dataset: str
    input_sha256: str | None = None
    input_digest: str | None = None
    input_key_id: str | None = None
    withheld: tuple[str, ...] = ()
    manifest: dict | None = field(default=None, repr=False)
    reason: str | None = field(default=None, repr=False)

    @property
    def needed(self) -> bool:
        """Whether there is anything to keep (an input read, or something withheld)."""
        return self.input_sha256 is not None or bool(self.withheld) or self.reason is not None

    def write(self, trail_id: str, root: Path | None = None) -> Path:
        """Write it as ``<config>/records/<trail_id>/<release_id>.json`` (atomically, mode 0600); refuses
        (:class:`PublishError`, one line) a configuration folder under ``root``."""
        return write_record(PrivateRecord(
            release_id=self.release_id, dataset=self.dataset, trail_id=trail_id, written_at=datetime.now(UTC),
            input_sha256=self.input_sha256, input_digest=self.input_digest, input_key_id=self.input_key_id,
            withheld=list(self.withheld), manifest=self.manifest, reason=self.reason), root)


def _public_reason(reason: str, declared: bool) -> str:
    """A role's reason as a DP release publishes it: as it is when it holds no number (a declaration, a rule on the
    column's name), else the rule's kind only (its figures were counted on the input)."""
    if not any(ch.isdigit() for ch in reason):
        return reason
    return ("declared in spec" if declared else "tagged automatically") + " (the rule's figures, counted on the " \
                                                                          "input, withheld)"


def withhold(manifest: Manifest) -> Manifest:
    """The manifest a differential_privacy release publishes: every :data:`WITHHELD` field null or empty (a role's
    reason cut to its declared part), and ``withheld`` naming them and where they are kept."""
    roles = manifest.roles
    public_tags = []
    reasons: dict[str, tuple[str, str]] = {}  # column -> (reason as computed, as published)
    for tag in roles.columns:
        public = _public_reason(tag.reason, tag.source == "declared")
        reasons[tag.name] = (tag.reason, public)
        public_tags.append(tag.model_copy(update={"reason": public}))
    treatments = []
    for t in manifest.treatments:
        computed, public = reasons.get(t.name, (t.reason, t.reason))
        # the treatment's reason is the role's reason and what the method did (no figure of the input)
        reason = public + t.reason[len(computed):] if t.reason.startswith(computed) else _public_reason(t.reason,
                                                                                                       False)
        treatments.append(t.model_copy(update={"reason": reason, "rare_cells": None}))
    ingest = manifest.ingest.model_copy(update={
        "rows": None, "expectations": [e.model_copy(update={"unexpected_count": None, "element_count": None,
                                                            "observed": None})
                                       for e in manifest.ingest.expectations]})
    privacy = manifest.privacy
    view = privacy.attacker_view
    if view is not None:
        view = view.model_copy(update={"exact_copies": None, "linkage_risk": None, "nearest_distance": {},
                                       "disclosure": []})
    privacy = privacy.model_copy(update={"linkage_risk": None, "synthetic": None, "perturbation": None,
                                         "attacker": None, "attacker_view": view})
    tuning = manifest.tuning.model_copy(update={"class_sizes": {}, "evaluations": []})
    return manifest.model_copy(update={
        "roles": roles.model_copy(update={"columns": public_tags}), "treatments": treatments, "ingest": ingest,
        "rare_categories": None, "privacy": privacy, "series": None, "utility": None, "tuning": tuning,
        "withheld": Withheld(reason=REASON, fields=list(WITHHELD), kept_in=KEPT_IN)})


def split(manifest: Manifest) -> tuple[Manifest, Record]:
    """(the manifest a release publishes, its private record): a differential_privacy release withholds every figure
    of its input (:func:`withhold`) and its record keeps the manifest as computed; every release's record keeps
    the input's unkeyed SHA-256 (``manifest.ingest.private_sha256``)."""
    record = Record(release_id=manifest.release_id, dataset=manifest.dataset,
                    input_sha256=manifest.ingest.private_sha256, input_digest=manifest.input_digest,
                    input_key_id=manifest.input_key_id)
    if not withholds(manifest.unit):
        return manifest, record
    return withhold(manifest), replace(record, withheld=WITHHELD, manifest=manifest.model_dump(mode="json"))


# -- the files ----------------------------------------------------------------------------------------------------
def records_dir() -> Path:
    return keys.config_dir() / RECORDS_DIR


def record_path(trail_id: str, release_id: str) -> Path | None:
    """Where the private record of ``release_id`` under the trail ``trail_id`` lives; None for ids that are not
    plain names (read from a trail a writer of the root may have altered)."""
    if not isinstance(trail_id, str) or not _HEX.match(trail_id):
        return None
    if not isinstance(release_id, str) or not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$", release_id):
        return None
    return records_dir() / trail_id / f"{release_id}.json"


def check_location(root: Path | None) -> None:
    """Refuse (:class:`PublishError`) a configuration folder under the publish root: the record would be published."""
    if root is None or not keys.is_under(keys.config_dir(), root):
        return
    raise PublishError(f"ppdp configuration folder {keys.config_dir()} lives under the publish root {root}: the "
                       "publisher's private records would be published; move it out")


def write_record(record: PrivateRecord, root: Path | None = None) -> Path:
    """Write ``record`` atomically (mode 0600, folders 0700); one-line :class:`PublishError` on failure."""
    check_location(root)
    path = record_path(record.trail_id, record.release_id)
    if path is None:
        raise PublishError(f"private record of release {record.release_id}: not a plain release or trail id")
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(record.model_dump_json(indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PublishError(f"cannot write the private record {path} ({exc.strerror or type(exc).__name__})") from None
    return path


def read_record(trail_id: str, release_id: str) -> PrivateRecord | None:
    """The private record of a run on this machine, None when there is none (or it cannot be read as one)."""
    path = record_path(trail_id, release_id)
    if path is None or not path.is_file():
        return None
    try:
        return PrivateRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
