"""Reproducing a release: a published release re-run from its original input (``ppdp validate --release
--original``).

:func:`reproduce` re-runs a published release from its manifest and original input through the release plan's steps
it needs (:mod:`ppdp.tasks.plan`: the preparation of the rows, then the sanitizing with the recorded parameters and
seed), and :func:`recheck_release` re-checks every claim of a published release (:mod:`ppdp.tasks.privacy.recheck`),
giving it the release's method and this reproduction: the privacy measures themselves know no method.

Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.methods import GROUP_COLUMN, Unit
from ppdp.schemas.release import Release
from ppdp.schemas.units import unit_of
from ppdp.tasks import plan, series
from ppdp.tasks import series as ledger
from ppdp.tasks.core.errors import InputError, PpdpError
from ppdp.tasks.core.io import read_header, read_table
from ppdp.tasks.ingest import coerce_types
from ppdp.tasks.privacy.recheck import ReleaseCheck, Reproduction, recheck_claims
from ppdp.tasks.sanitize.base import arrange
from ppdp.tasks.sanitize.registry import REGISTRY, method_class


def recheck_release(folder: Path, original: Path | None = None, cluster: str | None = None,
                    population: Path | None = None) -> ReleaseCheck:
    """Re-check every claim of the release in ``folder`` (:func:`ppdp.tasks.privacy.recheck.recheck_claims`), with
    the method the manifest names (None when this ppdp does not know it) and :func:`reproduce`. ``cluster``: where a
    distributed release's row files are counted (a Dask scheduler's address, or ``local``; None: in this
    process); ``population``: where the population table the policy names is now (None: the spec's path)."""
    return recheck_claims(Path(folder), None if original is None else Path(original), method_of=REGISTRY.get,
                          reproduce=reproduce, cluster=cluster, population=population)


def reproduce(manifest: Manifest, original: Path, published: pd.DataFrame) -> Reproduction:
    """Re-run the release from the original input as the flow ran it (read and type, drop identifiers, merge rare
    values, hold out, settle the rows the method's shape publishes, sanitize with the recorded parameters and seed)
    and compare it with the ``published`` table."""
    if not unit_of(manifest.unit).reproducible:  # recheck_claims never asks: its claims hold by construction
        raise InputError(f"release {manifest.release_id} is differentially private: it is never re-run from its "
                         "original (another run of its mechanism would spend privacy budget on the same rows, which "
                         "no ledger counts); its claims are re-checked from the manifest")
    if manifest.data_files:  # recheck_claims never asks: its claims needing the original are not re-checked
        raise InputError(f"release {manifest.release_id} is a distributed release (row files under data/): it is not "
                         "reproduced from its original on one machine")
    spec = manifest.spec
    source = spec.source.model_copy(update={"path": Path(original)})
    read_header(source)
    frame = coerce_types(read_table(source), spec)
    roles = manifest.roles
    missing = [c.name for c in roles.columns if c.name not in frame.columns]
    if missing:
        raise InputError(f"original {original}: column '{missing[0]}' of the release's input is not in it")
    drop = [*roles.identifiers, *(name for name in roles.dropped if name not in roles.identifiers)]
    protected = frame.drop(columns=[c for c in drop if c in frame.columns])
    cls = method_class(manifest.method.name)
    keep = spec.series.keep_groups  # memberships kept from the publisher's ledger: reproduced only where it is
    identity = _publisher_identity(frame, roles, manifest) if keep else None
    prints = identity.prints if identity is not None else np.zeros(len(protected), dtype=np.int64)
    prepared = plan.prepare_rows(spec, cls, protected, roles, prints)
    params = {k: v for k, v in manifest.method.params.items() if k in cls.param_names()}
    previous = None
    if identity is not None:
        found = ledger.previous_groups(spec.publish.root, spec.dataset, spec.series, manifest.created_at,
                                       identity, prepared.source_prints, before=manifest.release_id)
        previous = ledger.kept_input(spec.publish.root, found, manifest.method.name)
    key = ledger.existing_series_key()  # the publisher's machine: the published order itself, ties included
    order_key = None if key is None else ledger.order_key(key, spec.dataset)
    release, _ = plan.sanitize(cls(**params), prepared, roles, order_key, previous)
    compare = [c for c in published.columns if c in release.frame.columns and c != GROUP_COLUMN]
    same_shape = len(release.frame) == len(published) and len(compare) == len(
        [c for c in published.columns if c not in drop and c != GROUP_COLUMN])
    same = same_shape and _same_rows(release.frame, published, compare) and _same_groups(release.frame, published)
    if same:  # put the reproduced rows in the published order (keyed by the publisher): the same measures follow
        aligned = _in_published_order(release, published, compare, cls.unit)
        same = aligned is not None
        release = aligned if aligned is not None else release
    note = "reproduced from the original: the same rows as the published table (the published order is keyed by the " \
        "publisher's series key)" if same else "the run reproduced from this original differs from the published table"
    return Reproduction(source=prepared.source, release=release, same=same, note=note, everything=prepared.everything)


def _publisher_identity(frame: pd.DataFrame, roles, manifest: Manifest):
    """``series.keep_groups``: the records' fingerprints in the publisher's ledger (the hold-out and the kept
    memberships depend on them), read on the publisher's machine; :class:`InputError` elsewhere."""
    spec = manifest.spec
    try:
        path = series.ledger_path(spec.publish.root)
        if path is None or not path.exists():
            raise InputError("no series ledger for its publish root on this machine")
        key = series.existing_series_key()
        if key is None:
            raise InputError("no series key on this machine")
        return series.identify(frame, roles, spec.publish.root, key)
    except PpdpError as exc:
        raise InputError(f"series.keep_groups: the release kept group memberships recorded in the publisher's series "
                         f"ledger; re-check it on the publisher's machine ({exc})") from None


def _same_rows(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> bool:
    """The same rows in any order: both sorted by every compared column (as text), then compared column by column."""
    if not columns:
        return len(a) == len(b)

    x, y = a[columns].iloc[_content_order(a, columns)], b[columns].iloc[_content_order(b, columns)]
    return all(_equal_column(x[c], y[c]) for c in columns)


def _content_order(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    keys = frame[columns].astype("string").fillna("\x00")
    return np.lexsort([keys[c].to_numpy(dtype=object).astype(str) for c in reversed(columns)])


def _in_published_order(release: Release, published: pd.DataFrame, columns: list[str], unit: Unit
                        ) -> Release | None:
    """The reproduced release with its rows in the published table's order (rows matched by content; identical
    rows in their reproduced order); None when a generating group would not match its published group."""
    if not columns:
        return release
    mine, theirs = _content_order(release.frame, columns), _content_order(published, columns)
    order = np.empty(len(published), dtype=np.int64)
    order[theirs] = mine
    aligned = arrange(release, order, unit)
    if GROUP_COLUMN in published.columns and GROUP_COLUMN in aligned.frame.columns:
        a = aligned.frame[GROUP_COLUMN].to_numpy()
        b = published[GROUP_COLUMN].to_numpy()
        if not np.array_equal(pd.factorize(a)[0], pd.factorize(b)[0]):
            return None
    return aligned


def _same_groups(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Generating groups of the same sizes (their ids follow the published order)."""
    if GROUP_COLUMN not in a.columns and GROUP_COLUMN not in b.columns:
        return True
    if GROUP_COLUMN not in a.columns or GROUP_COLUMN not in b.columns:
        return False
    return sorted(a[GROUP_COLUMN].value_counts().tolist()) == sorted(b[GROUP_COLUMN].value_counts().tolist())


def _equal_column(a: pd.Series, b: pd.Series) -> bool:
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    if pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
        x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
        return bool(np.allclose(x, y, rtol=1e-12, atol=0.0, equal_nan=True))
    missing_a, missing_b = a.isna().to_numpy(), b.isna().to_numpy()
    if not np.array_equal(missing_a, missing_b):
        return False
    return bool(np.array_equal(a[~missing_a].astype(str).to_numpy(), b[~missing_b].astype(str).to_numpy()))


