"""The protocol of :mod:`ppdp.tasks.federated`: what the parties, the two mixers and the publisher exchange.

The layout of a count vector (fixed by the spec, the same for everybody), each party's part (read its own file,
count it, split the counts into two additive shares modulo 2**64), each mixer's sum and the publisher's
combination of the two sums into the total counts.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.schemas.federate import AttributeSpec, FederateSpec, PartySpec, value_text
from ppdp.schemas.source import SourceSpec
from ppdp.tasks.core.errors import InputError, PpdpError, ReleaseRejected, SpecError
from ppdp.tasks.core.io import file_sha256, first_row, read_header, read_table
from ppdp.tasks.core.labels import column_label, key_path, key_text

PROTOCOL = ("additive secret sharing modulo 2**64 through two non-colluding semi-trusted mixers (A, B): each party "
            "sends one uniform share of its count vector to each mixer; the mixers' sums add up to the total counts")
MIXERS = ("A", "B")


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


def _encode_column(series: pd.Series, attribute: AttributeSpec | None, labels: tuple[str, ...], where: str,
                   label: str, key: str) -> np.ndarray:
    missing = series.isna().to_numpy()
    if missing.any():
        raise InputError(f"{where}: {label}, data row {first_row(missing)}: a missing value (every cell must hold a "
                         f"declared value of {key})")
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if attribute is not None and attribute.bins is not None:
        if not numeric:
            raise InputError(f"{where}: {label} does not hold numbers, but {key}.bins are declared for it")
        values = series.to_numpy(dtype=np.float64)
        edges = np.asarray(attribute.bins, dtype=np.float64)
        outside = (values < edges[0]) | (values > edges[-1])
        if outside.any():
            raise InputError(f"{where}: {label}, data row {first_row(outside)}: a value outside the declared bins "
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
        raise InputError(f"{where}: {label}, data row {first_row(outside)}: a value outside the declared domain "
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
    assert classes is not None  # a federation always names its class column
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
