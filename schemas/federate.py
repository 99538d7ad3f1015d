"""The federation spec (``ppdp federate SPEC``) and the manifest of a federated naive Bayes release.

A federation learns one naive Bayes model over the union of the rows that several parties hold (the same
columns, horizontally partitioned), following the semi-trusted mixer model of paper 001 (Information Sciences
180 (2010), section 3.2): each party splits its count vector into two additive shares, one per mixer. The spec
fixes the count vector's layout: the class domain and every attribute's domain (or bin edges for a numeric
attribute) are declared here, so that no party reveals which values it holds. See :mod:`ppdp.tasks.federated`
for the protocol and its threat model.

Every model forbids unknown keys; every field has a description. Imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from ppdp.schemas.base import StrictModel
from ppdp.schemas.fields import before_keyed_digests, private_only
from ppdp.schemas.manifest import PublishedStatus, ReleaseFlowRunId, ReleaseId, SoftwareVersions
from ppdp.schemas.source import format_from_suffix

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""A dataset or party name: a plain folder-safe name (it names folders, audit entries and flow runs)."""


def value_text(value: str | int) -> str:
    """A declared domain value as the text it is matched and published as (``3`` and ``"3"`` are the same)."""
    return str(value)


def edge_text(edge: float) -> str:
    """A bin edge as text: an integral edge without a decimal point (``18``), any other as Python's shortest
    round-tripping form (``30.5``)."""
    return str(int(edge)) if float(edge).is_integer() and abs(edge) < 2**53 else repr(float(edge))


def bin_labels(edges: list[float]) -> list[str]:
    """The labels of the bins that ``edges`` delimit: ``[a, b)`` for each bin, the last one closed ``[a, b]``."""
    labels = [f"[{edge_text(a)}, {edge_text(b)})" for a, b in zip(edges[:-1], edges[1:])]
    labels[-1] = labels[-1][:-1] + "]"
    return labels


def _distinct_as_text(values: list[str | int], what: str) -> None:
    texts = [value_text(v) for v in values]
    if len(set(texts)) != len(texts):
        first = next(i for i, t in enumerate(texts) if texts.index(t) != i)
        raise ValueError(f"{what}: value {first + 1} repeats an earlier one (values are compared as text: 3 and "
                         "'3' are the same)")
    if any(t.strip() == "" for t in texts):
        raise ValueError(f"{what}: an empty value")


class PartySpec(StrictModel):
    """One party of the federation: its name and its own table (the same columns as every other party's)."""

    name: str = Field(..., pattern=NAME_PATTERN, description="the party's name (letters, digits, '_', '.', '-'; "
                                                              "at most 64): names its flow run and its manifest entry")
    path: Path = Field(..., description="the party's table; a relative path resolves against the spec file's folder")
    format: Literal["csv", "parquet"] | None = Field(None, description="csv or parquet; inferred from the file "
                                                                       "suffix when absent")
    sep: str = Field(",", min_length=1, max_length=1, description="CSV field separator (one character)")

    @model_validator(mode="after")
    def _infer_format(self) -> PartySpec:
        if self.format is None:
            self.__dict__["format"] = format_from_suffix(self.path)
            if self.format is None:
                raise ValueError(f"party {self.name}: cannot infer the format of its file from its suffix: set format")
        return self


class AttributeSpec(StrictModel):
    """One attribute A_j: a categorical domain, or bin edges for a numeric attribute (exactly one of the two)."""

    domain: list[str | int] | None = Field(
        None, min_length=1, description="every value the attribute may take (text or integers), in the order the "
        "model lists them; a party holding any other value is refused")
    bins: list[float] | None = Field(
        None, min_length=2, description="strictly increasing bin edges e0 < e1 < ... for a numeric attribute: bins "
        "[e0, e1), [e1, e2), ..., the last one closed; every party bins the same way, and a value outside "
        "[first edge, last edge] is refused")

    @model_validator(mode="after")
    def _one_of(self) -> AttributeSpec:
        if (self.domain is None) == (self.bins is None):
            raise ValueError("declare exactly one of domain (categorical) or bins (numeric)")
        if self.domain is not None:
            _distinct_as_text(self.domain, "domain")
        if self.bins is not None and any(b <= a for a, b in zip(self.bins[:-1], self.bins[1:])):
            raise ValueError("bins: edges must be strictly increasing")
        return self

    def labels(self) -> list[str]:
        """The attribute's values as published: the domain values as text, or the bins' labels."""
        return [value_text(v) for v in self.domain] if self.domain is not None else bin_labels(self.bins or [])


class MinCountRule(StrictModel):
    """The minimum-count rule of the released model: a count below ``k`` is suppressed or the release refused."""

    k: int = Field(..., ge=1, description="smallest count published (1: every count is published); also the fewest "
                                          "rows a party must hold to take part")
    action: Literal["suppress", "refuse"] = Field(
        ..., description="suppress: counts in [1, k) are published as 0 and flagged (and complementary cells so that "
        "no suppressed count can be narrowed from the published table; refused when no such cells exist); refuse: "
        "no release when any count is in [1, k)")


class FederatePublish(StrictModel):
    """Where the model is published."""

    root: Path = Field(..., description="the publish root: the model goes to <root>/<dataset>/<release_id>, the "
                                        "audit trail is <root>/audit.db; a relative path resolves against the spec "
                                        "file's folder")


class FederateSpec(StrictModel):
    """A federation: parties with the same columns, the declared layout of their counts, the release rule."""

    dataset: str = Field(..., pattern=NAME_PATTERN, description="name of the federated data set (the release "
                                                                "folder is <publish root>/<dataset>/<release_id>)")
    parties: list[PartySpec] = Field(..., min_length=2, description="the parties (at least two), each with its own "
                                                                    "table")
    class_column: str = Field(..., min_length=1, description="the class column C, in every party's table")
    class_domain: list[str | int] = Field(..., min_length=2, description="every class label (at least two), in the "
                                                                         "order the model lists them")
    attributes: dict[str, AttributeSpec] = Field(
        ..., min_length=1, description="every other column of the parties' tables (A_1..A_m, by name): its domain "
        "or its bin edges; the tables hold exactly these columns and the class column, in any order")
    min_count: MinCountRule = Field(..., description="the minimum-count rule applied to the summed counts")
    seed: int = Field(0, description="recorded for the house rule that every run names a seed; nothing released "
                                     "depends on it, and the secret shares never derive from it (a seed known to a "
                                     "mixer would let it recompute a party's share)")
    publish: FederatePublish = Field(..., description="where the model is published")

    @model_validator(mode="after")
    def _consistent(self) -> FederateSpec:
        names = [p.name for p in self.parties]
        if len(set(names)) != len(names):
            raise ValueError("parties: two parties have the same name")
        paths = [str(p.path) for p in self.parties]
        if len(set(paths)) != len(paths):
            raise ValueError("parties: two parties name the same file")
        if self.class_column in self.attributes:
            raise ValueError("attributes: the class column is not an attribute")
        _distinct_as_text(self.class_domain, "class_domain")
        return self

    def classes(self) -> list[str]:
        """The class labels as text (the model's class order)."""
        return [value_text(v) for v in self.class_domain]

    def cells(self) -> int:
        """Length of a party's count vector: one cell per class, then one per (class, attribute, value)."""
        n = len(self.class_domain)
        return n + n * sum(len(a.labels()) for a in self.attributes.values())


# -- the manifest ------------------------------------------------------------------------------------------
class PartyRecord(BaseModel):
    """One party as the manifest names it: who took part and which file (no row or count figures)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="the party's name (spec parties[].name)")
    file_digest: str | None = Field(None, description="keyed digest of the party's file as it was read (salt:mac): "
                                                      "HMAC-SHA256, under the publisher's digest key (the manifest's "
                                                      "input_key_id), of a random salt and the file's SHA-256; null "
                                                      "in a manifest written before keyed digests")
    file_sha256: str | None = before_keyed_digests("manifests written before keyed digests only: the unkeyed "
                                                   "SHA-256 of the party's file (no longer written)")
    private_sha256: SkipJsonSchema[str | None] = private_only("the file's SHA-256 as the party computed it: for the "
                                                              "publisher's private record only, never serialized")


class AttributeRecord(BaseModel):
    """One attribute of the model and its declared values."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., description="the attribute's column name")
    kind: Literal["categorical", "binned"] = Field(..., description="categorical: a declared domain; binned: a "
                                                                    "numeric column cut at declared edges")
    values: list[str] = Field(..., description="the attribute's values as published in data.parquet's value column "
                                               "(domain values as text, or bin labels such as [18, 30))")
    bins: list[float] | None = Field(None, description="binned: the declared bin edges")


class MinCountOutcome(BaseModel):
    """What the minimum-count rule did to the summed counts."""

    model_config = ConfigDict(extra="forbid")

    k: int = Field(..., description="smallest count published")
    action: Literal["suppress", "refuse"] = Field(..., description="the spec's action for counts in [1, k)")
    suppressed_cells: int = Field(..., description="cells whose count was in [1, k), published as 0 and flagged")
    complementary_cells: int = Field(
        ..., description="further cells published as 0 and flagged so that no suppressed count can be narrowed from "
        "the published table: in a row of a published class count, the first non-zero cells in declared value "
        "order until the row's s suppressed cells add up to at least s x k; every cell of the rows of a suppressed "
        "class count (zeros too)")
    suppression_audit: bool = Field(
        False, description="true: before publishing, every suppressed cell passed the LP suppression audit (its "
        "feasible range from the published table and totals reaches from 0 to k - 1, also for an attacker who "
        "knows which suppressed counts are below k); false in a model published before that audit existed")


class FederatedManifest(BaseModel):
    """``manifest.json`` of a federated naive Bayes release: the model (summed counts) in ``data.parquet``.

    ``output_sha256`` is the SHA-256 of ``data.parquet``, whose key-value metadata carries ``ppdp.release_id`` and
    ``ppdp.manifest_sha256`` (the SHA-256 of this manifest's canonical JSON with ``output_sha256`` empty), as for
    every release. No per-party row or count figure is recorded, nor the total number of rows.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["federated_naive_bayes"] = Field(..., description="the kind of release: a naive Bayes model "
                                                                    "learned over several parties' rows")
    release_id: ReleaseId
    dataset: str = Field(..., description="the spec's dataset name")
    created_at: datetime = Field(..., description="when the federation run started (ISO 8601, UTC)")
    status: PublishedStatus = "published"
    input_digest: str | None = Field(
        None, description="keyed digest of the parties' input (salt:mac): HMAC-SHA256, under the publisher's digest "
                          "key (input_key_id), of a random salt and the SHA-256 of the canonical JSON of the parties' "
                          "names and file SHA-256s (the audit entry's input digest)")
    input_key_id: str | None = Field(None, description="id of the key input_digest and the parties' file_digest were "
                                                       "made under (hmac-sha256: and 32 hex digits)")
    input_sha256: str | None = before_keyed_digests("manifests written before keyed digests only: SHA-256 of the "
                                                    "parties' names and file hashes (canonical JSON of the parties "
                                                    "list): the audit entry's input hash")
    output_sha256: str | None = Field(None, description="SHA-256 (64 hex digits) of data.parquet; null only in the "
                                                        "copy hashed into data.parquet's ppdp.manifest_sha256")
    rows: int = Field(..., description="rows of data.parquet: one per cell of the model (class counts, then "
                                       "class x attribute x value counts)")
    columns: list[str] = Field(..., description="names of the columns of data.parquet, in file order")
    parties: list[PartyRecord] = Field(..., description="the parties that took part, in spec order")
    protocol: str = Field(..., description="how the counts were summed, in one line")
    class_column: str = Field(..., description="the class column")
    class_domain: list[str] = Field(..., description="the class labels as text, in the model's order")
    attributes: list[AttributeRecord] = Field(..., description="every attribute with its declared values, in the "
                                                               "model's order")
    min_count: MinCountOutcome = Field(..., description="the minimum-count rule and how many cells it suppressed")
    seed: int = Field(..., description="the spec's seed (nothing released depends on it)")
    spec: FederateSpec = Field(..., description="the federation spec as the run used it: --set overrides applied, "
                                                "paths made absolute")
    spec_sha256: str = Field(..., description="SHA-256 (64 hex digits) of the resolved spec's canonical JSON")
    versions: SoftwareVersions
    flow_run_id: ReleaseFlowRunId


class FederateResult(BaseModel):
    """What the federation flow returns (and ``ppdp federate`` prints)."""

    model_config = ConfigDict(extra="forbid")

    release_id: str = Field(..., description="the release's id")
    dataset: str = Field(..., description="the spec's dataset name")
    folder: str = Field(..., description="the published release folder")
    parties: list[str] = Field(..., description="the parties' names, in spec order")
    cells: int = Field(..., description="cells of the model")
    suppressed_cells: int = Field(..., description="cells suppressed by the minimum-count rule (counts in [1, k))")
    complementary_cells: int = Field(..., description="further cells suppressed so that no suppressed count can be "
                                                      "recovered by subtraction")


__all__ = ["AttributeRecord", "AttributeSpec", "FederateResult", "FederateSpec", "FederatedManifest",
           "MinCountOutcome", "MinCountRule", "PartyRecord", "PartySpec", "bin_labels", "value_text"]
