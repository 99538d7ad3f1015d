"""Naive Bayes over horizontally partitioned parties, summed through two semi-trusted mixers (paper 001,
Information Sciences 180 (2010), section 3.2, "Multi-party privacy-preserving naive Bayes classifier"; the
paper names the semi-trusted mixer model but gives no protocol: this module is one).

Protocol
--------
``n >= 2`` parties hold rows of the same columns ``(A_1..A_m, C)``. The spec (:class:`FederateSpec`) declares the
class domain and every attribute's domain (or bin edges), which fixes one count vector layout for everybody:
the class counts ``N_c``, then for each attribute ``j`` the counts ``N_{c,j,v}`` of every (class, value) pair, all
cells present whether or not a party holds the value (so a party's vector's shape reveals nothing).

1. Each party counts its own rows into that vector ``x_i`` (:func:`party_shares`) and splits it into two
   additive shares modulo 2**64: ``a_i`` uniform from the operating system's CSPRNG (:func:`secrets.token_bytes`),
   ``b_i = x_i - a_i mod 2**64`` (:func:`split_shares`). It sends ``a_i`` to mixer A and ``b_i`` to mixer B.
2. Each mixer adds what it receives modulo 2**64 (:func:`mixer_sum`): ``S_A = sum a_i``, ``S_B = sum b_i``.
3. The publisher adds the two sums modulo 2**64 (:func:`combine`): ``S_A + S_B = sum x_i``, the counts of the
   union of the rows, checked for consistency (every (class, attribute) row adds up to its class count).
4. The minimum-count rule (:func:`apply_min_count`) suppresses or refuses counts in ``[1, k)``; the result is the
   model, published like any release (:func:`publish_model`). :class:`FederatedModel` predicts from it: naive
   Bayes with Laplace correction (alpha = 1), the same arithmetic as scikit-learn's ``CategoricalNB(alpha=1)``.

Threat model
------------
* Parties are semi-honest (they follow the protocol, and may try to learn more from what they see); the two
  mixers are semi-honest and do NOT collude with each other. A party sees only its own vector.
* A single mixer sees ``n`` vectors, each uniform on ``[0, 2**64)^cells`` and independent of the counts (a
  one-time pad over the group Z_(2**64)), and their sum, also uniform: it learns nothing but ``n``. Any
  coalition that holds one share of each party (one mixer, with any parties) learns nothing either. The two
  mixers together learn every party's counts: they must not collude.
* The released model is the total counts. Any ``n - 1`` colluding parties subtract their own counts from it and
  get the last party's counts, exactly: the protocol hides the parties' inputs, not what the output implies.
  That is why a party holding fewer than ``min_count.k`` rows does not take part (:class:`PartyTooSmall`): its
  counts would be learnt as such. A party of many rows can still have small cells; its cell counts are as
  exposed to the other ``n - 1`` parties as the output's. The minimum-count rule then keeps every published
  count at 0 or at least ``k``, and suppresses complementary cells so that no suppressed count is the
  difference of published ones (the total number of rows is not published).
* The publisher (the process that adds the two mixer sums and applies the rule) sees the unsuppressed total
  counts: it is trusted like the release process is. In this single-process orchestration the flow also
  carries each party's two shares to their mixers; in a deployment each party sends each share over its own
  channel, and no process but the party holds both.
* The manifest names each party's file by its SHA-256: whoever can enumerate a tiny party's possible files can
  test them against it (a party-held key, HMAC, would hide it; not done here).
* Shares are never derived from the spec's seed: a seed a mixer knows would let it recompute ``a_i``.

Nothing in this module imports Prefect; messages name parties, files, columns (by position and name) and spec
keys, never a data value nor a count.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from ppdp.schemas.federate import (
    AttributeRecord,
    AttributeSpec,
    FederatedManifest,
    FederateSpec,
    MinCountOutcome,
    MinCountRule,
    PartyRecord,
    PartySpec,
    value_text,
)
from ppdp.schemas.source import SourceSpec
from ppdp.tasks import audit
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import InputError, PpdpError, PublishError, ReleaseRejected, SpecError
from ppdp.tasks.core.labels import column_label, key_path, key_text
from ppdp.tasks.ingest import file_sha256, read_header, read_table
from ppdp.tasks.layout import release_folder
from ppdp.tasks.publish import (
    META_MANIFEST_SHA,
    META_RELEASE_ID,
    canonical_manifest_bytes,
    collect_versions,
    publish_staged,
    release_files,
)

KIND = "federated_naive_bayes"
PROTOCOL = ("additive secret sharing modulo 2**64 through two non-colluding semi-trusted mixers (A, B): each party "
            "sends one uniform share of its count vector to each mixer; the mixers' sums add up to the total counts")
MIXERS = ("A", "B")
COLUMNS = ["class", "attribute", "value", "count", "suppressed"]
MODEL_SCHEMA = pa.schema([("class", pa.string()), ("attribute", pa.string()), ("value", pa.string()),
                          ("count", pa.int64()), ("suppressed", pa.bool_())])


class PartyTooSmall(ReleaseRejected):
    """A party holds fewer rows than ``min_count.k``: the other parties would learn its counts from the model."""

    def __init__(self, message: str) -> None:
        super().__init__(message, ["min_count"])


class MixerUnavailable(PpdpError):
    """A mixer did not return its sum (after its retries): nothing published."""

    exit_code = 1
    status = "error"


class InconsistentSums(PpdpError):
    """The two mixers' sums do not add up to counts (a mixer summed wrongly): nothing published."""

    exit_code = 1
    status = "error"


# -- the spec ----------------------------------------------------------------------------------------------
def load_spec(path: str | os.PathLike[str], overrides: list[str] | None = None) -> FederateSpec:
    """Read (with the release spec's safe YAML loader), override, validate strictly and resolve a federation
    spec; raise :class:`SpecError` with one line naming the line or the key."""
    spec_path = Path(path)
    raw = spec_io.read_spec_mapping(spec_path)
    overridden = [spec_io.apply_override(raw, item) for item in overrides or []]
    try:
        spec = FederateSpec.model_validate_json(json.dumps(raw, allow_nan=False), strict=True)
    except ValidationError as exc:
        raise SpecError(f"spec {spec_path}: {spec_io.format_validation_error(exc, overridden)}") from None
    return resolve_paths(spec, spec_path.resolve().parent)


def resolve_paths(spec: FederateSpec, base: Path) -> FederateSpec:
    """Relative party paths and the publish root resolve against the spec file's folder."""

    def absolute(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    parties = [p.model_copy(update={"path": absolute(p.path)}) for p in spec.parties]
    publish = spec.publish.model_copy(update={"root": absolute(spec.publish.root)})
    return spec.model_copy(update={"parties": parties, "publish": publish})


def spec_sha256(spec: FederateSpec) -> str:
    """SHA-256 of the resolved spec's canonical JSON (sorted keys, no whitespace)."""
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def preflight(spec: FederateSpec) -> None:
    """Checks that read no party's data: every party's file exists, the publish root is writable, the audit key
    is in place and the root holds no interrupted publish. (Each party checks its own header itself.)"""
    from ppdp.tasks.layout import ensure_root

    for party in spec.parties:
        if not party.path.is_file():
            raise InputError(f"party {party.name}: its file {party.path} does not exist")
    ensure_root(spec.publish.root)
    audit.check_signing_key(spec.publish.root)
    audit.require_no_interrupted_publish(spec.publish.root)


def party_of(spec: FederateSpec, name: str) -> PartySpec:
    for party in spec.parties:
        if party.name == name:
            return party
    raise SpecError(f"no party {key_text(name)} in the spec")


# -- the layout of a count vector --------------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """Where each count is in a count vector: the class counts first, then for attribute ``j`` a block of
    ``len(classes) x len(values[j])`` counts (row-major: class, then value) starting at ``offsets[j]``."""

    classes: tuple[str, ...]
    class_values: tuple[str | int, ...]
    attributes: tuple[str, ...]
    specs: tuple[AttributeSpec, ...]
    values: tuple[tuple[str, ...], ...]
    offsets: tuple[int, ...]
    size: int

    def block(self, vector: np.ndarray, j: int) -> np.ndarray:
        """Attribute ``j``'s counts as a (classes, values) view of ``vector``."""
        n, d = len(self.classes), len(self.values[j])
        return vector[self.offsets[j]: self.offsets[j] + n * d].reshape(n, d)


def layout_of(spec: FederateSpec) -> Layout:
    n = len(spec.class_domain)
    offsets, values, at = [], [], n
    for attribute in spec.attributes.values():
        labels = tuple(attribute.labels())
        offsets.append(at)
        values.append(labels)
        at += n * len(labels)
    layout = Layout(classes=tuple(spec.classes()), class_values=tuple(spec.class_domain),
                    attributes=tuple(spec.attributes), specs=tuple(spec.attributes.values()), values=tuple(values),
                    offsets=tuple(offsets), size=at)
    assert layout.size == spec.cells()
    return layout


# -- one party: read, check, count, split ------------------------------------------------------------------
def read_party(spec: FederateSpec, party: PartySpec) -> pd.DataFrame:
    """The party's own table, its header checked against the spec first: exactly the declared columns (the
    attributes and the class column), in any order."""
    where = f"party {party.name} ({party.path.name})"
    source = SourceSpec(path=party.path, format=party.format, sep=party.sep)
    header = read_header(source)
    declared = [spec.class_column, *spec.attributes]
    for position, name in enumerate(header, start=1):
        if name not in declared:
            raise InputError(f"{where}: {column_label(position, name)} is not declared in the spec (attributes or "
                             "class_column): every party holds exactly the declared columns")
    for name in declared:
        if name not in header:
            raise InputError(f"{where}: the declared column {key_text(name)} is missing")
    return read_table(source)


def encode_frame(frame: pd.DataFrame, layout: Layout, where: str, class_column: str | None = None
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Every attribute as codes into its declared values (an ``(n, m)`` int64 array) and, when
    ``class_column`` is given, the class codes; refuse a missing cell, a value outside its domain or bins, and
    a column of decimal numbers with no bins, naming the column (position and name) and the data row."""
    columns = list(frame.columns)
    missing = [a for a in layout.attributes if a not in columns]
    if missing:
        raise InputError(f"{where}: the attribute {key_text(missing[0])} is missing")
    codes = np.empty((len(frame), len(layout.attributes)), dtype=np.int64)
    for j, name in enumerate(layout.attributes):
        codes[:, j] = _encode_column(frame[name], layout.specs[j], layout.values[j], where,
                                     column_label(columns.index(name) + 1, name), f"attributes.{key_path([name])}")
    classes = None
    if class_column is not None:
        classes = _encode_column(frame[class_column], None, layout.classes, where,
                                 column_label(columns.index(class_column) + 1, class_column), "class_domain")
    return codes, classes


def _first_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0]) + 1


def _encode_column(series: pd.Series, attribute: AttributeSpec | None, labels: tuple[str, ...], where: str,
                   label: str, key: str) -> np.ndarray:
    missing = series.isna().to_numpy()
    if missing.any():
        raise InputError(f"{where}: {label}, data row {_first_row(missing)}: a missing value (every cell must hold a "
                         f"declared value of {key})")
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if attribute is not None and attribute.bins is not None:
        if not numeric:
            raise InputError(f"{where}: {label} does not hold numbers, but {key}.bins are declared for it")
        values = series.to_numpy(dtype=np.float64)
        edges = np.asarray(attribute.bins, dtype=np.float64)
        outside = (values < edges[0]) | (values > edges[-1])
        if outside.any():
            raise InputError(f"{where}: {label}, data row {_first_row(outside)}: a value outside the declared bins "
                             f"({key}.bins)")
        return np.minimum(np.searchsorted(edges, values, side="right") - 1, len(edges) - 2).astype(np.int64)
    if numeric and not pd.api.types.is_integer_dtype(series):
        if attribute is None:
            raise InputError(f"{where}: {label} (the class) holds decimal numbers: class labels are text or integers")
        raise InputError(f"{where}: {label} holds decimal numbers: a numeric attribute needs declared bin edges "
                         f"({key}.bins), not a domain")
    texts = series.map(value_text) if pd.api.types.is_integer_dtype(series) else series.astype(str)
    codes = pd.Categorical(texts.to_numpy(dtype=object), categories=list(labels)).codes.astype(np.int64)
    outside = codes < 0
    if outside.any():
        raise InputError(f"{where}: {label}, data row {_first_row(outside)}: a value outside the declared domain "
                         f"({key if key == 'class_domain' else key + '.domain'})")
    return codes


def count_codes(codes: np.ndarray, classes: np.ndarray, layout: Layout) -> np.ndarray:
    """The count vector (uint64, in ``layout``) of encoded rows."""
    n = len(layout.classes)
    out = np.zeros(layout.size, dtype=np.uint64)
    out[:n] = np.bincount(classes, minlength=n)
    for j, labels in enumerate(layout.values):
        d = len(labels)
        out[layout.offsets[j]: layout.offsets[j] + n * d] = np.bincount(classes * d + codes[:, j], minlength=n * d)
    return out


def count_frame(frame: pd.DataFrame, spec: FederateSpec, where: str = "table") -> np.ndarray:
    """The count vector of a whole table (a party's, or the union of them all for a centralized model)."""
    layout = layout_of(spec)
    codes, classes = encode_frame(frame, layout, where, spec.class_column)
    return count_codes(codes, classes, layout)


def split_shares(counts: np.ndarray, random_bytes: Callable[[int], bytes] = secrets.token_bytes
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Two additive shares of ``counts`` modulo 2**64: ``a`` uniform (from the OS CSPRNG), ``b = counts - a``
    (numpy's uint64 arithmetic wraps modulo 2**64). Each alone is uniform and independent of ``counts``."""
    counts = np.asarray(counts, dtype=np.uint64)
    a = np.frombuffer(random_bytes(8 * counts.size), dtype="<u8").astype(np.uint64).reshape(counts.shape)
    return a, counts - a


@dataclass(frozen=True)
class PartyShares:
    """What a party hands out: its file's hash (for the manifest) and one share for each mixer."""

    name: str
    file_sha256: str
    share_a: np.ndarray
    share_b: np.ndarray

    def __repr__(self) -> str:  # never the shares themselves, in a log or a traceback
        return f"PartyShares({self.name}, {self.share_a.size} cells)"


def party_shares(spec: FederateSpec, name: str) -> PartyShares:
    """One party's whole part: read only its own file, check it, count it and split the counts into two shares.
    The counts never leave this function. Refuses a party with no rows (:class:`InputError`) and one with fewer
    rows than ``min_count.k`` (:class:`PartyTooSmall`)."""
    party = party_of(spec, name)
    where = f"party {party.name} ({party.path.name})"
    digest = file_sha256(party.path)
    frame = read_party(spec, party)
    if len(frame) == 0:
        raise InputError(f"{where}: the table has no rows: a party with no rows cannot take part")
    if len(frame) < spec.min_count.k:
        raise PartyTooSmall(f"{where}: fewer rows than min_count.k = {spec.min_count.k}: the party does not take "
                            "part (the other parties would learn its counts from the released model)")
    counts = count_frame(frame, spec, where)
    share_a, share_b = split_shares(counts)
    return PartyShares(party.name, digest, share_a, share_b)


# -- the mixers and the publisher --------------------------------------------------------------------------
def mixer_sum(shares: list[np.ndarray]) -> np.ndarray:
    """What a mixer does: add the shares it received, modulo 2**64."""
    if not shares:
        raise PpdpError("a mixer received no shares")
    arrays = [np.asarray(s) for s in shares]
    if any(a.dtype != np.uint64 or a.shape != arrays[0].shape for a in arrays):
        raise PpdpError("a mixer received shares of different types or lengths")
    return np.add.reduce(np.stack(arrays), axis=0, dtype=np.uint64)


def combine(sum_a: np.ndarray, sum_b: np.ndarray, layout: Layout) -> np.ndarray:
    """The total counts (int64) from the two mixers' sums; refuse (:class:`InconsistentSums`) sums that are no
    counts: a count of 2**63 or more, or a (class, attribute) row that does not add up to its class count."""
    total = np.asarray(sum_a, dtype=np.uint64) + np.asarray(sum_b, dtype=np.uint64)
    bad = InconsistentSums("the two mixers' sums do not add up to consistent counts (a mixer returned a wrong sum): "
                           "nothing published")
    if total.shape != (layout.size,) or (total >= np.uint64(2**63)).any():
        raise bad
    counts = total.astype(np.int64)
    per_class = counts[: len(layout.classes)]
    for j in range(len(layout.attributes)):
        if not np.array_equal(layout.block(counts, j).sum(axis=1), per_class):
            raise bad
    return counts


@dataclass(frozen=True)
class Suppressed:
    """The counts as published (suppressed cells 0), which cells are suppressed, and why."""

    counts: np.ndarray
    mask: np.ndarray
    primary: int
    complementary: int


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def apply_min_count(counts: np.ndarray, layout: Layout, rule: MinCountRule) -> Suppressed:
    """The minimum-count rule: counts in ``[1, k)`` are suppressed (published as 0, flagged) or refused
    (:class:`ReleaseRejected`, naming where). When suppressing, within every (class, attribute) row whose class
    count is published, the suppressed cells must add up to 0 or to at least ``k``, else the class count minus
    the row's published cells gives their total back: the row's smallest published non-zero cell is suppressed
    too (it is at least ``k``, so one suffices). Refuses when no class count is left."""
    counts = np.asarray(counts, dtype=np.int64)
    k = rule.k
    small = (counts >= 1) & (counts < k)
    n = len(layout.classes)
    if small.any() and rule.action == "refuse":
        where = (["the class counts"] if small[:n].any() else []) + [
            key_text(a) for j, a in enumerate(layout.attributes) if layout.block(small, j).any()]
        raise ReleaseRejected(f"min_count: {_cells(int(small.sum()))} of the model count between 1 and k - 1 = {k - 1} "
                              f"(in {', '.join(where)}): refused (min_count.action: refuse)", ["min_count"])
    mask = small.copy()
    complementary = 0
    for j in range(len(layout.attributes)):
        rows, block = layout.block(mask, j), layout.block(counts, j)
        for c in range(n):
            if mask[c]:
                continue  # the class count is suppressed (so is every cell of its rows): nothing to subtract from
            hidden = int(block[c][rows[c]].sum())
            if 0 < hidden < k:
                candidates = np.flatnonzero(~rows[c] & (block[c] > 0))
                if candidates.size:  # always, for counts that add up (see combine)
                    rows[c, candidates[np.argmin(block[c][candidates])]] = True
                    complementary += 1
    if not np.where(mask[:n], 0, counts[:n]).any():
        raise ReleaseRejected(f"min_count: every class count is below k = {k}: nothing left to release",
                              ["min_count"])
    return Suppressed(np.where(mask, 0, counts), mask, int(small.sum()), complementary)


def model_table(result: Suppressed, layout: Layout) -> pd.DataFrame:
    """The model as a table: one row per cell (class counts with attribute and value null, then every (class,
    attribute, value)); the values are the declared domain values or bin labels (spec values, not data)."""
    rows: list[tuple] = []
    n = len(layout.classes)
    for c, label in enumerate(layout.classes):
        rows.append((label, None, None, int(result.counts[c]), bool(result.mask[c])))
    for j, name in enumerate(layout.attributes):
        counts, mask = layout.block(result.counts, j), layout.block(result.mask, j)
        for c in range(n):
            for v, value in enumerate(layout.values[j]):
                rows.append((layout.classes[c], name, value, int(counts[c, v]), bool(mask[c, v])))
    return pd.DataFrame(rows, columns=COLUMNS)


def counts_from_table(frame: pd.DataFrame, layout: Layout) -> np.ndarray:
    """The count vector of a published model table (the inverse of :func:`model_table`); raise
    :class:`InputError` when the table does not hold exactly the layout's cells."""
    expected = model_table(Suppressed(np.zeros(layout.size, np.int64), np.zeros(layout.size, bool), 0, 0), layout)
    if list(frame.columns) != COLUMNS or len(frame) != len(expected):
        raise InputError("the model table does not have the layout its manifest declares")
    def cells(series: pd.Series) -> list:
        return [None if pd.isna(v) else str(v) for v in series.tolist()]

    for column in ("class", "attribute", "value"):
        if cells(frame[column]) != cells(expected[column]):
            raise InputError(f"the model table's {column} column does not follow the layout its manifest declares")
    return frame["count"].to_numpy(dtype=np.int64)


# -- the model ---------------------------------------------------------------------------------------------
class FederatedModel:
    """Naive Bayes from counts, with Laplace correction (alpha = 1) on the conditional probabilities and the
    empirical class prior: ``P(c) = N_c / N``, ``P(A_j = v | c) = (N_cjv + 1) / (sum_v' N_cjv' + |D_j|)``. With
    nothing suppressed ``sum_v' N_cjv' = N_c``. The arithmetic is scikit-learn's ``CategoricalNB(alpha=1)``
    (same order of operations), so the two predict the same classes from the same counts. A class whose count
    is 0 (absent, or suppressed) has prior 0 and is never predicted."""

    alpha = 1.0

    def __init__(self, layout: Layout, counts: np.ndarray) -> None:
        counts = np.asarray(counts, dtype=np.int64)
        if counts.shape != (layout.size,) or (counts < 0).any():
            raise InputError("counts do not fit the model's layout")
        n = len(layout.classes)
        self.layout = layout
        self.classes_ = np.array(layout.class_values, dtype=object)
        self.class_count_ = counts[:n].astype(np.float64)
        if not self.class_count_.any():
            raise InputError("every class count is 0: no model")
        self.category_count_ = [layout.block(counts, j).astype(np.float64) for j in range(len(layout.attributes))]
        with np.errstate(divide="ignore"):
            log_class_count = np.log(self.class_count_)
        self.class_log_prior_ = log_class_count - np.log(self.class_count_.sum())
        self.feature_log_prob_ = []
        for category_count in self.category_count_:
            smoothed = category_count + self.alpha
            self.feature_log_prob_.append(np.log(smoothed) - np.log(smoothed.sum(axis=1).reshape(-1, 1)))

    @classmethod
    def from_counts(cls, spec: FederateSpec, counts: np.ndarray) -> FederatedModel:
        return cls(layout_of(spec), counts)

    @classmethod
    def from_release(cls, folder: str | os.PathLike[str]) -> FederatedModel:
        """The model of a published federated release folder (its manifest and data.parquet)."""
        folder = Path(folder)
        try:
            manifest = FederatedManifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
            frame = pq.read_table(folder / "data.parquet").to_pandas()
        except (OSError, ValueError, pa.ArrowException):
            raise InputError(f"{folder}: not a readable federated release (manifest.json and data.parquet)") from None
        layout = layout_of(manifest.spec)
        return cls(layout, counts_from_table(frame, layout))

    def encode(self, frame: pd.DataFrame) -> np.ndarray:
        """The attribute columns of ``frame`` (by name; other columns are ignored) as codes."""
        codes, _ = encode_frame(frame, self.layout, "input")
        return codes

    def joint_log_likelihood(self, codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        jll = np.zeros((codes.shape[0], len(self.classes_)))
        for j in range(len(self.feature_log_prob_)):
            jll += self.feature_log_prob_[j][:, codes[:, j]].T
        return jll + self.class_log_prior_

    def predict_log_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Log-probabilities of each class (columns in the spec's class order)."""
        jll = self.joint_log_likelihood(self.encode(frame))
        top = jll.max(axis=1, keepdims=True)
        return jll - (np.log(np.exp(jll - top).sum(axis=1, keepdims=True)) + top)

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """Probabilities of each class (columns in the spec's class order)."""
        return np.exp(self.predict_log_proba(frame))

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        """The most probable class of each row (ties: the first in the spec's class order)."""
        return self.classes_[np.argmax(self.joint_log_likelihood(self.encode(frame)), axis=1)]


# -- the release -------------------------------------------------------------------------------------------
def manifest_sha256(manifest: FederatedManifest) -> str:
    """SHA-256 of the manifest's canonical JSON with ``output_sha256`` empty (``data.parquet``'s metadata
    carries it; the Parquet hash cannot be inside the file it hashes)."""
    return hashlib.sha256(canonical_manifest_bytes(manifest.model_copy(update={"output_sha256": None}))).hexdigest()


def inputs_sha256(parties: list[PartyRecord]) -> str:
    """SHA-256 of the canonical JSON of the parties' names and file hashes (the audit entry's input hash)."""
    text = json.dumps([p.model_dump(mode="json") for p in parties], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def build_manifest(*, release_id: str, started: datetime, spec: FederateSpec, spec_sha256: str,
                   parties: list[PartyRecord], result: Suppressed, rows: int, flow_run_id: str | None
                   ) -> FederatedManifest:
    """The manifest of a model about to be published (``output_sha256`` is filled in when written)."""
    attributes = [AttributeRecord(name=name, kind="binned" if a.bins is not None else "categorical",
                                  values=a.labels(), bins=a.bins) for name, a in spec.attributes.items()]
    return FederatedManifest(
        kind=KIND, release_id=release_id, dataset=spec.dataset, created_at=started,
        input_sha256=inputs_sha256(parties), rows=rows, columns=list(COLUMNS), parties=parties, protocol=PROTOCOL,
        class_column=spec.class_column, class_domain=spec.classes(), attributes=attributes,
        min_count=MinCountOutcome(k=spec.min_count.k, action=spec.min_count.action,
                                  suppressed_cells=result.primary, complementary_cells=result.complementary),
        seed=spec.seed, spec=spec, spec_sha256=spec_sha256, versions=collect_versions(), flow_run_id=flow_run_id)


def stage_model(frame: pd.DataFrame, manifest: FederatedManifest, root: Path
                ) -> tuple[Path, FederatedManifest, str, dict[str, str]]:
    """Write ``data.parquet`` and ``manifest.json`` into ``<root>/.staging-<release_id>`` and fsync them, as
    :func:`ppdp.tasks.publish.stage_release` does for a release (no report: a model has no privacy claims to
    render); return (staging folder, manifest with ``output_sha256``, manifest hash, the exact file list)."""
    final = release_folder(root, manifest.dataset, manifest.release_id)
    if os.path.lexists(final):
        raise PublishError(f"release folder {final} already exists")
    staging = audit.staging_folder(root, manifest.release_id)
    try:
        staging.mkdir(parents=True)
        audit.fault_point("staging-created")
        m_hash = manifest_sha256(manifest)
        table = pa.Table.from_pandas(frame, schema=MODEL_SCHEMA, preserve_index=False)
        table = table.replace_schema_metadata({META_RELEASE_ID: manifest.release_id.encode(),
                                               META_MANIFEST_SHA: m_hash.encode()})
        with pq.ParquetWriter(staging / "data.parquet", table.schema) as writer:
            writer.write_table(table)
            audit.fault_point("parquet-unfinished")
        manifest = manifest.model_copy(update={"output_sha256": file_sha256(staging / "data.parquet")})
        (staging / "manifest.json").write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        _check_reads_back(staging / "manifest.json", manifest)
        for name in os.listdir(staging):
            with open(staging / name, "rb") as fh:
                os.fsync(fh.fileno())
        audit.fsync_dir(staging)
        files = release_files(staging)
    except OSError as exc:
        audit.remove_path(staging)
        raise PublishError(f"cannot write release under {root} ({exc.strerror or type(exc).__name__})") from None
    except BaseException:
        audit.remove_path(staging)
        raise
    audit.fault_point("staged")
    return staging, manifest, m_hash, files


def _check_reads_back(path: Path, manifest: FederatedManifest) -> None:
    try:
        back = FederatedManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, ValueError, OSError):
        raise PublishError(f"release {manifest.release_id}: its manifest does not read back; nothing published") \
            from None
    if canonical_manifest_bytes(back) != canonical_manifest_bytes(manifest):
        raise PublishError(f"release {manifest.release_id}: its manifest reads back changed; nothing published")


def publish_model(frame: pd.DataFrame, manifest: FederatedManifest, started: datetime
                  ) -> tuple[Path, FederatedManifest]:
    """Publish crash-safely, as every release is (:func:`ppdp.tasks.publish.publish_staged`): under the root's
    publish lock, stage, append the ``pending`` audit entry, rename into place, append the completing
    ``published`` entry; on an error after the pending entry, remove the folder and roll the entry back."""
    final, manifest, _ = publish_staged(manifest, lambda root: stage_model(frame, manifest, root), started,
                                        " (federated naive Bayes model)")
    return final, manifest


# -- re-checking a published model (ppdp validate --release) -----------------------------------------------------
@dataclass(frozen=True)
class ModelCheck:
    """One claim of a published federated model, re-checked from its folder alone."""

    name: str
    holds: bool
    value: float | None
    note: str


def recheck_model(folder: str | os.PathLike[str]) -> tuple[FederatedManifest, list[ModelCheck]]:
    """Re-check a published federated model from its folder alone (``ppdp validate --release``): the table is the
    file the manifest hashes; every published count is 0 or at least ``min_count.k``; the flagged cells are
    published as 0 and as many as the manifest says; and in every (class, attribute) row of a published class
    count, what the suppressed cells add up to (the class count minus the row's published cells) is 0 or at
    least k, so no suppressed count can be derived below k (the complementary suppression)."""
    folder = Path(folder)
    try:
        manifest = FederatedManifest.model_validate_json((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{folder / 'manifest.json'} cannot be read as a federated model's manifest") from None
    path = folder / "data.parquet"
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError, pa.ArrowException):
        raise InputError(f"{path} cannot be read as Parquet") from None
    layout = layout_of(manifest.spec)
    counts = counts_from_table(frame, layout)
    flagged = frame["suppressed"].to_numpy(dtype=bool)
    k, n = manifest.min_count.k, len(layout.classes)
    checks = [ModelCheck("integrity", file_sha256(path) == manifest.output_sha256, None,
                         "SHA-256 of data.parquet equals the manifest's output_sha256")]
    nonzero = counts[counts > 0]
    smallest = int(nonzero.min()) if nonzero.size else None
    checks.append(ModelCheck("min_count", smallest is None or smallest >= k, smallest,
                             f"smallest published non-zero count, at least k = {k}"))
    expected = manifest.min_count.suppressed_cells + manifest.min_count.complementary_cells
    checks.append(ModelCheck("suppressed cells", int(flagged.sum()) == expected and not counts[flagged].any(),
                             int(flagged.sum()), f"flagged cells published as 0, {expected} in the manifest"))
    worst = None
    for j in range(len(layout.attributes)):
        block = layout.block(counts, j)
        for c in range(n):
            if counts[c] and not flagged[c]:
                hidden = int(counts[c] - block[c].sum())
                if 0 < hidden < k or hidden < 0:
                    worst = hidden if worst is None else min(worst, hidden)
    checks.append(ModelCheck("complementary suppression", worst is None, worst,
                             f"every row's suppressed cells add up to 0 or at least k = {k}"))
    return manifest, checks
