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
4. The minimum-count rule (:func:`apply_min_count`) suppresses (with complementary cells, checked by the LP
   audit :func:`audit_suppression`) or refuses counts in ``[1, k)``; the result is the model, published like any
   release (:func:`publish_model`). :class:`FederatedModel` predicts from it: naive
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
  count at 0 or at least ``k``, and suppresses complementary cells so that every suppressed count's feasible
  range, from the published table and totals, reaches from 0 to ``k - 1``, even for an attacker who knows the
  rule and which suppressed counts are the small ones (:func:`apply_min_count`, :func:`audit_suppression`; the
  total number of rows is not published).
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
from ppdp.tasks.core.labels import column_label, key_path, key_text, looks_like_data
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
    spec; raise :class:`SpecError` naming the line or the key (one line per problem, the first complete on its
    own)."""
    spec_path = Path(path)
    raw = spec_io.read_spec_mapping(spec_path)
    overridden = [spec_io.apply_override(raw, item) for item in overrides or []]
    try:
        spec = FederateSpec.model_validate_json(json.dumps(raw, allow_nan=False), strict=True)
    except ValidationError as exc:
        problems = spec_io.format_validation_error(exc, overridden, FederateSpec)
        raise SpecError(f"spec {spec_path}: {problems}") from None
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
    """The counts as published (suppressed cells 0), which cells are suppressed, and why; ``audited``: the
    suppression passed :func:`audit_suppression` (the release rule's own check before publishing)."""

    counts: np.ndarray
    mask: np.ndarray
    primary: int
    complementary: int
    audited: bool = False


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def apply_min_count(counts: np.ndarray, layout: Layout, rule: MinCountRule) -> Suppressed:
    """The minimum-count rule: counts in ``[1, k)`` (the primary cells) are suppressed (published as 0, flagged)
    or refused (:class:`ReleaseRejected`, naming where). When suppressing, complementary cells are chosen so
    that no suppressed count can be narrowed from the published table (see :func:`audit_suppression` for the
    attacker and the check):

    * a suppressed class count hides every cell of its rows, zeros included (they are published as 0 anyway,
      so the model does not change; hidden, they no longer tell which values the small class holds);
    * in a (class, attribute) row of a published class count with ``a`` primary cells, the complementary cells
      are the row's first ``t`` non-zero, non-primary cells in the declared value order, ``t >= 1`` the smallest
      for which the row's ``s = a + t`` suppressed cells add up to at least ``s * k``. If no ``t`` does, every
      non-zero cell of the row is suppressed, and that must pass the audit; else the release is refused
      (nothing can protect that row short of hiding its class count).

    The choice looks at no count but through that one test, which involves the primary cells only with
    their sum and is met with a margin: an attacker who knows this rule, which suppressed cells are primary
    and that the others are at least ``k`` still finds every value from 1 to ``k - 1`` possible for each primary
    cell of a row of a published class count (a prefix that failed the test says only that its cells add up to
    less than ``s * k``, which every such value allows). It never picks the smallest (or largest) cell, whose
    choice would bound the others. In the rows of a suppressed class count, that attacker bounds a primary
    cell by the class count (below ``k``) less the row's other non-zero cells; one who does not know which
    suppressed cells are non-zero learns nothing there (the zeros are hidden too).
    The result is audited (:func:`audit_suppression`) before it is returned; refuses when no class count is
    left. Deterministic: the same counts give the same suppression."""
    counts = np.asarray(counts, dtype=np.int64)
    k = rule.k
    small = (counts >= 1) & (counts < k)
    n = len(layout.classes)
    if small.any() and rule.action == "refuse":
        where = (["the class counts"] if small[:n].any() else []) + [
            key_text(a) for j, a in enumerate(layout.attributes) if layout.block(small, j).any()]
        raise ReleaseRejected(f"min_count: {_cells(int(small.sum()))} of the model count between 1 and k - 1 = {k - 1} "
                              f"(in {', '.join(where)}): refused (min_count.action: refuse)", ["min_count"])
    if not np.where(small[:n], 0, counts[:n]).any():
        raise ReleaseRejected(f"min_count: every class count is below k = {k}: nothing left to release",
                              ["min_count"])
    mask = small.copy()
    complementary = 0
    unprotected: list[str] = []
    for j, name in enumerate(layout.attributes):
        rows, block = layout.block(mask, j), layout.block(counts, j)
        for c in range(n):
            if small[c]:  # a suppressed class count: its rows have no known total; hide them whole
                complementary += int((~rows[c]).sum())
                rows[c] = True
            elif rows[c].any():
                chosen = _complementary_cells(block[c], rows[c], k)
                if chosen is None:
                    unprotected.append(key_text(name))
                    break
                rows[c, chosen] = True
                complementary += len(chosen)
    if unprotected:
        raise ReleaseRejected(f"min_count: no safe suppression in {', '.join(unprotected)}: a row holds counts "
                              "below k that its other counts cannot hide (even all of them suppressed, its class "
                              "count would bound the small ones); nothing released (merge values, or lower "
                              "min_count.k)", ["min_count"])
    published = np.where(mask, 0, counts)
    findings = audit_suppression(published, layout, k, mask=mask)
    if findings:  # not expected: the rule above is built to pass; fail closed all the same
        raise ReleaseRejected(f"min_count: the suppression does not pass its audit ({findings[0]}); nothing "
                              "released", ["min_count"])
    return Suppressed(published, mask, int(small.sum()), complementary, audited=True)


def _complementary_cells(row: np.ndarray, hidden: np.ndarray, k: int) -> list[int] | None:
    """The complementary cells of one row of a published class count (its counts ``row``, its primary cells
    ``hidden``): the first ``t`` non-zero, non-primary cells in declared order, ``t`` the smallest for which the
    ``s`` suppressed cells add up to at least ``s * k``; else all of them if that passes the audit; else None."""
    s = int(hidden.sum())
    total = int(row[hidden].sum())
    candidates = [v for v in range(row.size) if not hidden[v] and row[v] > 0]
    for t, v in enumerate(candidates, start=1):
        total += int(row[v])
        if total >= (s + t) * k:
            return candidates[:t]
    if not _row_findings(s + len(candidates), total, k):
        return candidates
    return None


# -- the suppression audit ---------------------------------------------------------------------------------------
ATTACKERS = {
    "standard": "its range from the published table and totals (standard LP audit) does not reach from 0 to k - 1",
    "role-aware": "its range does not reach from 0 to k - 1 for an attacker who knows which suppressed counts are "
                  "below k (the others being at least k)",
    "inconsistent": "the published counts do not add up to the published totals",
}


@dataclass(frozen=True)
class SuppressionFinding:
    """A suppressed cell whose feasible range is too narrow (or totals that do not add up). ``low`` and ``high``
    are the narrowest range found (``high`` may be infinite); they follow from the published table and are
    never put into a message (a pinned range is the suppressed count itself)."""

    cell: int
    where: str
    attacker: str
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.where}: {ATTACKERS[self.attacker]}"


def _row_findings(s: int, total: int, k: int) -> list[tuple[str, float, float]]:
    """The narrow ranges of the ``s`` suppressed cells of one row whose suppressed cells add up to ``total`` (the
    class count is published, so ``total`` is known): ``(attacker, low, high)`` for the standard audit (cells
    >= 0) and for the role-aware one (any ``a >= 1`` of the cells are below ``k`` (in ``[0, k - 1]``), ``b`` are at
    least ``k``, the rest 0; each assignment that fits ``total`` is checked). The row alone is the whole linear
    program here, and its optimum has a closed form: a cell below k ranges over ``[0, min(k - 1, total - b k)]``
    when ``b >= 1``, over ``[max(0, total - (a - 1)(k - 1)), min(k - 1, total)]`` when ``b = 0``."""
    found = []
    low, high = (total, total) if s == 1 else (0, total)
    if low > 0 or high < k - 1:
        found.append(("standard", low, high))
    worst = None
    for a in range(1, s + 1):
        for b in range(0, s - a + 1):
            if b * k > total or (b == 0 and total > a * (k - 1)):
                continue  # no counts fit this assignment
            high = min(k - 1, total - b * k)
            low = 0 if b else max(0, total - (a - 1) * (k - 1))
            if (low > 0 or high < k - 1) and (worst is None or high - low < worst[2] - worst[1]):
                worst = ("role-aware", low, high)
    return found + ([worst] if worst else [])


def _where(layout: Layout, c: int, j: int | None = None, v: int | None = None) -> str:
    def label(kind: str, position: int, name: str) -> str:
        return f"{kind} {position}" if looks_like_data(name) else f"{kind} {position} ('{name}')"

    if j is None:
        return f"the class counts, {label('class', c + 1, layout.classes[c])}"
    where = f"{key_text(layout.attributes[j])}, {label('class', c + 1, layout.classes[c])}"
    return where if v is None else f"{where}, {label('value', v + 1, layout.values[j][v])}"


def _class_ranges(published: np.ndarray, mask: np.ndarray, layout: Layout, c: int
                  ) -> list[tuple[int, float, float]] | None:
    """The LP ranges of a suppressed class count and of every suppressed cell of its rows (coupled through the
    class count, which every row adds up to): ``(cell, low, high)``; None when no counts fit (infeasible)."""
    from scipy.optimize import linprog  # imported here: validate must not import SciPy at start-up

    cells = [c]
    rows: list[tuple[list[int], float]] = []
    for j in range(len(layout.attributes)):
        d = len(layout.values[j])
        start = layout.offsets[j] + c * d
        row = range(start, start + d)
        hidden = [i for i in row if mask[i]]
        cells += hidden
        rows.append((hidden, float(sum(int(published[i]) for i in row if not mask[i]))))
    index = {cell: position for position, cell in enumerate(cells)}
    a_eq = np.zeros((len(rows), len(cells)))
    b_eq = np.zeros(len(rows))
    for r, (hidden, known) in enumerate(rows):
        a_eq[r, 0] = 1.0  # the class count ...
        for i in hidden:
            a_eq[r, index[i]] = -1.0  # ... minus the row's suppressed cells ...
        b_eq[r] = known  # ... is what its published cells add up to
    out = []
    for position, cell in enumerate(cells):
        objective = np.zeros(len(cells))
        objective[position] = 1.0
        lowest = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        if lowest.status == 2:
            return None
        highest = linprog(-objective, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        low = float(lowest.fun) if lowest.status == 0 else np.nan  # nan (solver trouble) counts as too narrow
        high = np.inf if highest.status == 3 else -float(highest.fun) if highest.status == 0 else np.nan
        out.append((cell, low, high))
    return out


def audit_suppression(table_or_counts: pd.DataFrame | np.ndarray, layout: Layout, k: int,
                      mask: np.ndarray | None = None) -> list[SuppressionFinding]:
    """Audit a suppressed model from what it publishes alone: the model table (``data.parquet``: its counts and
    ``suppressed`` flags) or a published count vector with its ``mask``. Returns every suppressed cell whose
    feasible range is too narrow (empty: the suppression holds).

    The linear program (the cell-suppression audit of tau-Argus and sdcTable): the variables are the suppressed
    cells (their published 0 is ignored), each at least 0; the equalities are every published total: a
    published class count is the sum of each of its (class, attribute) rows, and a suppressed class count is
    one more variable that each of its rows adds up to. (The grand total is not published; when every class
    count is published it follows from them and adds nothing.) Each suppressed cell is minimised and maximised;
    its range must reach from 0 to at least ``k - 1`` (it contains 0 and ``k - 1`` other values).

    Attacker: knows the published table, every total, that counts are whole numbers >= 0, ``k``, and the
    release rule (:func:`apply_min_count`). Two audits: ``standard`` (no more than that) and ``role-aware``,
    for the rows of published class counts: the attacker also knows which suppressed cells are primary (in
    ``[0, k - 1]`` as an LP bound; really 1 to k - 1) and that the others are at least ``k`` (a count not below
    k) or 0. The auditor does not know which are which, so every assignment that fits the row is checked, and
    the worst counts. That is what a rule that picks the smallest other cell fails: ``total - k`` bounds the
    primary cell from above. Rows of a suppressed class count are left to the standard audit: their totals are
    unknown (they are coupled through the class count, an LP variable), and an attacker who knows which of
    their cells are non-zero learns each is at most the class count less the number of other non-zero cells.

    Independent (class, attribute) rows of a published class count are solved in closed form (the LP of one row
    with a known total; see :func:`_row_findings`); a suppressed class count and its rows are one coupled LP,
    solved with SciPy's HiGHS (imported only then)."""
    if isinstance(table_or_counts, pd.DataFrame):
        published = counts_from_table(table_or_counts, layout)
        mask = table_or_counts["suppressed"].to_numpy(dtype=bool)
    else:
        published = np.asarray(table_or_counts, dtype=np.int64)
        if mask is None:
            raise ValueError("audit_suppression: a count vector needs its mask")
        mask = np.asarray(mask, dtype=bool)
    if published.shape != (layout.size,) or mask.shape != (layout.size,):
        raise InputError("the counts to audit do not fit the model's layout")
    findings: list[SuppressionFinding] = []
    n = len(layout.classes)
    for c in range(n):
        if mask[c]:
            ranges = _class_ranges(published, mask, layout, c)
            if ranges is None:
                findings.append(SuppressionFinding(c, _where(layout, c), "inconsistent", np.nan, np.nan))
                continue
            for cell, low, high in ranges:
                if not (low <= 1e-9 and high >= k - 1 - 1e-9):
                    findings.append(SuppressionFinding(cell, _cell_where(layout, cell), "standard", low, high))
            continue
        for j in range(len(layout.attributes)):
            d = len(layout.values[j])
            start = layout.offsets[j] + c * d
            row = np.arange(start, start + d)
            hidden = row[mask[row]]
            total = int(published[c]) - int(published[row[~mask[row]]].sum())
            if total < 0 or (hidden.size == 0 and total != 0):
                findings.append(SuppressionFinding(c, _where(layout, c, j), "inconsistent", np.nan, np.nan))
                continue
            for attacker, low, high in (_row_findings(hidden.size, total, k) if hidden.size else []):
                findings += [SuppressionFinding(int(i), _where(layout, c, j, int(i - start)), attacker, low, high)
                             for i in hidden]
    return findings


def _cell_where(layout: Layout, cell: int) -> str:
    n = len(layout.classes)
    if cell < n:
        return _where(layout, cell)
    j = max(i for i, offset in enumerate(layout.offsets) if offset <= cell)
    c, v = divmod(cell - layout.offsets[j], len(layout.values[j]))
    return _where(layout, c, j, v)


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
                                  suppressed_cells=result.primary, complementary_cells=result.complementary,
                                  suppression_audit=result.audited),
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
    published as 0 and as many as the manifest says; and the suppression audit (:func:`audit_suppression`, run
    on the published table alone): every suppressed cell's feasible range reaches from 0 to at least k - 1, for
    the standard LP audit and for an attacker who knows which suppressed counts are below k."""
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
    k = manifest.min_count.k
    checks = [ModelCheck("integrity", file_sha256(path) == manifest.output_sha256, None,
                         "SHA-256 of data.parquet equals the manifest's output_sha256")]
    nonzero = counts[counts > 0]
    smallest = int(nonzero.min()) if nonzero.size else None
    checks.append(ModelCheck("min_count", smallest is None or smallest >= k, smallest,
                             f"smallest published non-zero count, at least k = {k}"))
    expected = manifest.min_count.suppressed_cells + manifest.min_count.complementary_cells
    checks.append(ModelCheck("suppressed cells", int(flagged.sum()) == expected and not counts[flagged].any(),
                             int(flagged.sum()), f"flagged cells published as 0, {expected} in the manifest"))
    findings = audit_suppression(frame, layout, k)
    narrow = len({f.cell for f in findings})
    checks.append(ModelCheck("suppression audit", not findings, narrow,
                             f"suppressed cells whose LP range misses 0 or k - 1 = {k - 1} (standard audit; knowing "
                             f"which are below k): none of {int(flagged.sum())}"))
    return manifest, checks
