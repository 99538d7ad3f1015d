"""A partitioned release's manifest: what the single-table path's :func:`ppdp.tasks.publish.build_manifest` records,
from what the partitioned steps measured (the row files are filled in when published)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pyarrow as pa

from ppdp.schemas.manifest import Manifest, UtilitySample
from ppdp.schemas.reports import (
    ExpectationOutcome,
    IngestReport,
    MethodRecord,
    PrivacyReport,
    RareCategoryReport,
    Roles,
    TuningTrace,
)
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks import publish
from ppdp.tasks.distributed.inputs import merged_outcomes
from ppdp.tasks.distributed.output import SamplePlan
from ppdp.tasks.sanitize.partitions import Fitted


def named_per_class(per_class: dict[str, int], totals: dict[str, int], k: int) -> dict[str, int]:
    """The sample's records per class, a label published fewer than ``k`` times named ``class #i`` (its position
    among the sorted labels), as the utility report names it."""
    order = sorted(totals)
    return {(label if totals.get(label, 0) >= k else f"class #{order.index(label)}"): n
            for label, n in per_class.items()}


def build_manifest(*, release_id: str, started: datetime, spec: ReleaseSpec, spec_sha256: str, roles: Roles,
                   ingest: IngestReport, sanitizer: Any, unit: str, fitted: Fitted, seconds: float, columns: list[str],
                   rows: int, rare: RareCategoryReport, privacy: PrivacyReport, utility: UtilityReport,
                   tuning: TuningTrace, output_checks: list[ExpectationOutcome], flow_run_id: str | None,
                   sample: SamplePlan, class_totals: dict[str, int], schema: pa.Schema, series=None) -> Manifest:
    """The manifest of a partitioned release about to be published (its ``data_files`` and ``output_sha256`` are
    filled in by :func:`ppdp.tasks.publish.publish_row_files`)."""
    method = MethodRecord(name=sanitizer.name, params={**sanitizer.params().model_dump(mode="json", exclude={"name"}),
                                                        "seed": int(spec.seed)},
                          unit=unit, groups=fitted.groups, suppressed_rows=fitted.suppressed_rows,
                          suppressed_cells=dict(fitted.suppressed_cells), seconds=seconds)
    treatments: dict[str, str] = {c: str(fitted.treatments.get(c, "kept")) for c in columns}
    return Manifest(
        release_id=release_id, dataset=spec.dataset, created_at=started, input_digest=ingest.input_digest,
        input_key_id=ingest.input_key_id,
        rows=rows, columns=columns, unit=unit,
        treatments=publish.column_treatments(roles, treatments, sanitizer.name, unit, rare),
        spec=spec, spec_sha256=spec_sha256, roles=roles, rare_categories=rare, ingest=ingest, method=method,
        seed=spec.seed, privacy=privacy, series=series, utility=utility, tuning=tuning,
        output_checks=merged_outcomes(output_checks), versions=publish.collect_versions(), flow_run_id=flow_run_id,
        column_types={f.name: str(f.type) for f in schema},
        sample=UtilitySample(rows=sample.size, population=sample.population, seed=spec.seed,
                             per_class=named_per_class(sample.per_class, class_totals, spec.label_k)))
