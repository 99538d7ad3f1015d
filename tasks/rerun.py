"""Idempotent runs: a run whose input, spec and code are those of the dataset's latest release publishes nothing.

A nightly schedule on a table that did not change would otherwise publish the same release again under a new id.
:func:`check_rerun` compares, right after the input is read and hashed and before anything is tagged, tuned or
sanitized:

- the **spec**: the resolved spec's hash (:func:`ppdp.tasks.spec.spec_sha256`: ``--set`` overrides included, the
  ``runner`` section left out) with the ``spec_sha256`` of the dataset's last ``published`` audit entry;
- the **code**: the installed versions a manifest records (``versions``: ppdp and the libraries that shape a
  release) and the SHA-256 of ppdp's installed code (:func:`ppdp.tasks.publish.code_sha256`, ``versions.code``),
  with those of that
  release's ``manifest.json``. A git commit is not used: an installed wheel has none, and a working tree's
  uncommitted edits are code too;
- the **input**: its unkeyed SHA-256, computed by the ingest step, with the one in the publisher's private record
  of that release (:mod:`ppdp.tasks.private_record`, on the publisher's machine only; compared in memory, never
  written anywhere new). Without that record, the release's published keyed digest is re-checked with its own salt
  under this machine's digest key (:func:`ppdp.tasks.digests.check`); when neither can decide (another machine,
  another series key and no record), the input counts as changed and the run publishes.

The dataset's latest release is the release of its last ``published`` entry, whose folder holds a readable
``manifest.json`` (what ``LATEST`` names: :mod:`ppdp.tasks.latest`); entries are read as stored (``ppdp audit
verify`` checks their signatures). Nothing is judged, spent or written for an unchanged run: no release folder,
no audit entry (the trail records releases and refusals; an unchanged run is neither), no series ledger record,
no privacy budget. ``ppdp run --force`` (the flow's ``force``) publishes anyway.

Whether a scheduled run published tells whoever watches the publish root whether the input changed; a
differential_privacy release under a schedule that must not tell that runs with ``force``.

Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from pathlib import Path

from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import audit, digests
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.layout import release_folder
from ppdp.tasks.private_record import read_record
from ppdp.tasks.publish import collect_versions, load_manifest


@dataclass(frozen=True)
class RerunCheck:
    """The verdict: ``since`` is the latest release's id when the run is unchanged (nothing to publish), None
    otherwise; ``why`` says which in one line (ids and the kind of difference only, never a value)."""

    since: str | None
    why: str
    folder: Path | None = None
    unit: str | None = None

    @property
    def unchanged(self) -> bool:
        return self.since is not None


def _differs(why: str) -> RerunCheck:
    return RerunCheck(None, why)


def check_rerun(spec: ReleaseSpec, spec_sha256: str, input_sha256: str | None) -> RerunCheck:
    """Whether this run (its resolved spec's hash ``spec_sha256``, its input's unkeyed SHA-256 ``input_sha256``, the
    installed code) repeats the latest release of ``spec.dataset`` under its publish root (see the module
    docstring). Never raises: what cannot be read or compared counts as a change (the run goes on and publishes,
    or refuses as it would have)."""
    root, dataset = Path(spec.publish.root), spec.dataset
    try:
        if not audit.db_path(root).is_file():
            return _differs("no earlier release of the dataset")
        entries = [e for e in audit.list_entries(root) if e.status == "published" and e.dataset == dataset]
    except PpdpError:
        return _differs("the audit trail cannot be read")
    if not entries:
        return _differs("no earlier release of the dataset")
    entry = entries[-1]
    rid = entry.release_id
    if entry.spec_sha256 != spec_sha256:
        return _differs(f"the spec differs from release {rid}'s")
    folder = release_folder(root, dataset, rid)
    try:
        manifest = load_manifest(folder)
    except Exception:  # noqa: BLE001 - a missing or damaged manifest: publish again (verify reports the damage)
        return _differs(f"release {rid}'s manifest cannot be read")
    if manifest.release_id != rid or manifest.spec_sha256 != spec_sha256:
        return _differs(f"release {rid}'s manifest does not match its audit entry")
    if manifest.versions != collect_versions():
        return _differs(f"ppdp's code or a library version differs from release {rid}'s")
    same = _same_input(entry, input_sha256)
    if same is not True:
        return _differs(same or f"the input differs from release {rid}'s")
    return RerunCheck(rid, f"unchanged since {rid}", folder, manifest.unit)


def _same_input(entry, input_sha256: str | None) -> bool | str:
    """True when the input is the one ``entry``'s release was made from, False when it differs, else why it cannot
    be told (one line)."""
    if not input_sha256:
        return "the input's hash is not known"
    record = read_record(entry.trail_id, entry.release_id)
    if record is not None and record.input_sha256:
        return hmac.compare_digest(record.input_sha256.lower(), input_sha256.lower())
    checked = digests.check(input_sha256, entry.input_digest, entry.input_key_id, digests.local_key())
    if checked.verdict == "not checked":
        return f"the input cannot be compared with release {entry.release_id}'s ({checked.why})"
    return checked.verdict == "holds"
