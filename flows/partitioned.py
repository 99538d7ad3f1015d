# ruff: noqa: I001  (ppdp.flows must be imported before prefect: it applies the data-safety settings)
"""The release flow's steps for a partitioned input (``source.path`` a folder of Parquet files): the same release,
made partition by partition on the flow's task runner (Dask workers, or threads). Called by
:func:`ppdp.flows.release.release_flow` when the spec's source is a folder; this file only wires the plain
functions of :mod:`ppdp.tasks.distributed` (see there for what each does and why).

Per partition, as a task each: ingest (the input suite, the checks, the hash, pass 1's counts); each pass of the
method (counts); recoding (and the partition's share of the utility sample); then one task per published row
file. In the flow, on counts only: the merges, the rare-value rule's plan, the tuning (the method's search), the
privacy measures (from counts over the published files), the gates, the manifest and the publish.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import ppdp.flows  # noqa: F401  (applies Prefect's data-safety settings first)

from ppdp.flows.rerun import stop_if_unchanged
from ppdp.flows.steps import STEPS, log_privacy, log_promoted, step
from ppdp.schemas.manifest import ReleaseResult
from ppdp.schemas.reports import LatticeSearch
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks import gates, publish, secrets, series, tag, tune, utility
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.distributed import inputs, measure, methods, output, rare, record
from ppdp.tasks.distributed import series as distributed_series
from ppdp.tasks.privacy import judge
from ppdp.tasks.privacy import series as series_judge
from ppdp.tasks.privacy.series import series_line
from ppdp.tasks.sanitize.registry import build_sanitizer

list_inputs = step(inputs.list_inputs, "preflight", lambda p: p["spec"].dataset)
sample_frame = step(inputs.sample_frame, "read-sample", lambda p: f"{len(p['inputs'].files)} partitions")
tag_columns = step(tag.tag_columns, "tag", lambda p: f"{len(p['frame'].columns)} columns")
ingest_partition = step(inputs.ingest_partition, "ingest-partition",
                        lambda p: f"partition {p['index']}")  # a file name may hold data (hive keys)
merge_counts = step(inputs.merge_counts, "merge-counts", lambda p: f"{len(p['parts'])} partitions")
ingest_report = step(inputs.ingest_report, "ingest-report")
rare_plan = step(rare.rare_plan, "merge-rare-categories", lambda p: f"k={p['k']}")
count_partition = step(methods.count_partition, "count-partition",
                       lambda p: f"{p['method'].name}, partition {p['index']}")
allot_partition = step(methods.allot_partition, "allot-partition",
                       lambda p: f"{p['method'].name}, partition {p['index']}")
merge_pass = step(methods.merge_pass, "merge-pass", lambda p: f"{len(p['parts'])} tables")
search = step(methods.search, "search-lattice", lambda p: p["method"].name)
fit = step(methods.fit, "fit", lambda p: p["method"].name)
finish_part = step(methods.finish_part, "finish-part", lambda p: f"{len(p['job'][1]):,} distinct tuples")
finish_local = step(methods.finish_local, "finish-local", lambda p: f"{len(p['results'])} parts")
recode_partition = step(output.recode_partition, "recode-partition", lambda p: f"partition {p['index']}")
write_row_file = step(output.write_row_file, "write-row-file", lambda p: f"file {p['number']}")
measure_privacy = step(measure.measure_published, "validate-privacy", lambda p: "from counts over the row files")
enforce_privacy = step(gates.enforce_privacy, "enforce-privacy-gates")
promote_columns = step(judge.promote_counted_columns, "promote-columns")
measure_utility = step(measure.measure_utility, "check-utility", lambda p: p["spec"].utility.classifier)
enforce_utility = step(gates.enforce_utility, "enforce-utility-gates")
build_manifest = step(record.build_manifest, "build-manifest", lambda p: p["release_id"])
publish_files = step(publish.publish_row_files, "publish", lambda p: p["manifest"].release_id)
find_identity = step(distributed_series.partitioned_identity, "fingerprint-basis")
judge_series = step(series_judge.judge_partitioned, "judge-series", lambda p: p["spec"].dataset)
enforce_series = step(gates.enforce_series, "enforce-series-gates")


def _gather(futures: list) -> list:
    return [f.result() for f in futures]


def _dask_address() -> str | None:
    """The scheduler of the flow's Dask runner (the privacy counts run there too), None on threads."""
    from prefect.context import FlowRunContext

    ctx = FlowRunContext.get()
    runner: Any = getattr(ctx, "task_runner", None) if ctx is not None else None
    chosen = getattr(runner, "chosen", None)
    if callable(chosen):
        try:
            runner = chosen()
        except RuntimeError:
            return None
    client = getattr(runner, "_client", None) or None
    try:
        return None if client is None else str(client.scheduler.address)
    except AttributeError:
        return None


def release_partitioned(spec: ReleaseSpec, *, release_id: str, started: datetime, run_id: str | None,
                        spec_sha256: str, known: dict[str, Any], logger, force: bool = False) -> ReleaseResult:
    """The release of a partitioned input (see the module docstring); raises a :class:`PpdpError` when refused,
    having removed anything staged. Unless ``force``, a run whose input (the hash over its files, known once every
    partition is ingested), spec and code are those of the dataset's latest release stops there, unchanged."""
    method = methods.partitioned_method(spec.method.name)
    if spec.tuning.strategy not in ("fixed", "lattice"):
        raise SpecError(f"spec tuning.strategy: {spec.tuning.strategy} evaluates values on rows, which a partitioned "
                        "input does not hold in one place: use fixed (the method's parameters) or lattice")
    src = list_inputs(spec)
    ledger_key = series.ledger_key(spec.publish.root)  # the ledger opens with this machine's series key
    n = len(src.files)
    logger.info("[1/%d] input %s: %d partitions", STEPS, src.folder, n)
    roles = tag_columns(sample_frame(spec, src), spec)
    logger.info("[3/%d] tag: %d quasi-identifiers, %d direct identifiers (%s), class %s (roles detected on the "
                "first partition)", STEPS, len(roles.quasi_identifiers), len(roles.identifiers),
                spec.identifiers.action, "declared" if roles.class_column else "none")
    parts = _gather([ingest_partition.submit(spec, src, i, roles, ledger_key.hash_key) for i in range(n)])
    identity = find_identity(spec.publish.root, roles, src.header,
                             distributed_series.constant_columns([p.constants for p in parts]), ledger_key)
    report = ingest_report(spec, src, parts)
    known.update(report.digests())
    if not force:  # before any count is merged, tuned or recoded
        stop_if_unchanged(spec, spec_sha256, report, logger)
    counts = merge_counts(parts)
    logger.info("[2/%d] ingest: %d rows in %d partitions, %d expectations passed in each", STEPS, report.rows, n,
                report.expectation_count)
    plan = rare_plan(counts, roles, spec.rare_k, method.rare_rule_skip(roles))
    key = secrets.pseudonym_key(spec.identifiers)
    base = build_sanitizer(spec.method, seed=spec.seed)
    cls = roles.class_column
    per_class = [p.counts.get(cls) if cls is not None else None for p in sorted(parts, key=lambda p: p.index)]
    by_class = output.partition_classes(counts, per_class, plan, cls)
    sample = output.sample_plan(by_class, spec.utility.sample_rows)
    class_totals = output.class_totals(by_class)  # published records per class label
    order_key = series.order_key(series.series_key(spec.publish.root), spec.dataset)
    staging = None
    try:
        for attempt in (1, 2):  # once more when a column published beside the quasi-identifiers must become one
            if staging is not None:
                publish.discard_staging(staging)
            tuned_started = time.perf_counter()
            state = method.start(spec, base, roles, counts)
            passes = 0
            while (job := method.next_pass(state)) is not None:
                passes += 1
                tables = _gather([count_partition.submit(method, job, spec, src, i, roles, key, plan)
                                  for i in range(n)])
                state = method.absorb(state, merge_pass(method, tables))
            logger.info("[4/%d] counts: %d pass(es) over %d partitions", STEPS, passes, n)
            def searched(_parameter: str, state: Any = state) -> LatticeSearch:
                return search(method, state)

            trace = tune.tune(spec.tuning, sanitizer=base, domains=method.domains(state), policy=spec.privacy,
                              sizes={}, evaluate_many=None, search=searched, inherited=spec.inherited)
            sanitizer = tune.tuned(base, trace)
            logger.info("[4/%d] tune (%s): %s", STEPS, trace.strategy, trace.rule)
            fitted = fit(method, state, sanitizer)
            jobs = method.local_jobs(fitted)
            fitted_arg: Any = fitted  # what the recode tasks receive
            if jobs:  # parts finished on one worker each, then joined on a worker: the recode tasks receive the
                # join as a future, which Dask sends to each worker once (not pickled once per task by the flow)
                finished = finish_local.submit(method, fitted, [finish_part.submit(job).future for job in jobs])
                fitted = finished.result()
                fitted_arg = finished.future
                logger.info("[5/%d] %s: %d parts finished one per task", STEPS, method.name, len(jobs))
            allot_job = method.allot_pass(fitted)
            allotted: list[Any] = [None] * n
            if allot_job is not None:
                allotted = method.allot(fitted, _gather([allot_partition.submit(method, allot_job, spec, src, i,
                                                                                 roles, key, plan) for i in range(n)]))
            staging = publish.row_staging(spec.publish.root, spec.dataset, release_id)
            protected = tuple(type(base).protected_columns(roles))
            recoded = _gather([recode_partition.submit(spec, src, i, roles, key, plan, method, fitted_arg, allotted[i],
                                                       staging, n, order_key, sample.take[i], identity, protected)
                               for i in range(n)])
            seconds = time.perf_counter() - tuned_started
            schema = output.release_schema([r.schema for r in recoded], method.published_types(fitted))
            files = _gather([write_row_file.submit(staging, j, release_id, spec, roles, order_key, schema)
                             for j in range(n)])
            output.clear_pieces(staging)
            published_rows = sum(f.rows for f in files)
            logger.info("[5/%d] sanitize: %s, %d rows in %d row files", STEPS, method.name, published_rows,
                        sum(1 for f in files if f.rows))
            columns = [str(c) for c in recoded[0].sample_published.columns] if recoded else []
            cls_obj = type(base)
            address = _dask_address()
            privacy = measure_privacy(staging / "data", roles, spec, columns, cls_obj.protects,
                                      list(protected), schema, address)
            logger.info("[6/%d] privacy: counted over the row files %s", STEPS,
                        "on the Dask cluster" if address else "in the flow's process")
            promoted = promote_columns(roles, privacy, spec.privacy) if attempt == 1 else None
            if promoted is None:
                break
            log_promoted(logger, roles, promoted, "searching and recoding again")
            roles = promoted
        privacy = enforce_privacy(privacy)
        log_privacy(logger, privacy)
        judged = judge_series(spec=spec, roles=roles, identity=identity, staging=staging,
                              protected_columns=list(protected), now=started,
                              columns=[f.name for f in schema])
        enforce_series(judged.report)
        logger.info("[6/%d] series: %s", STEPS, series_line(judged.report))
        original, published = output.join_samples(recoded)
        util = enforce_utility(measure_utility(spec, roles, original, published))
        util = utility.name_counted_classes(util, class_totals, spec.label_k)
        logger.info("[7/%d] utility on a sample of %d records: accuracy %.4f (original %.4f)", STEPS, len(original),
                    util.accuracy, util.accuracy_original)
        manifest = build_manifest(
            release_id=release_id, started=started, spec=spec, spec_sha256=spec_sha256, roles=roles, ingest=report,
            sanitizer=sanitizer, unit=method.unit, fitted=fitted, seconds=seconds, columns=columns,
            rows=published_rows, rare=plan.report, privacy=privacy, utility=util, tuning=trace,
            output_checks=[o for f in files for o in f.outcomes], flow_run_id=run_id, sample=sample,
            class_totals=class_totals, schema=schema, series=judged.report)
        assert staging is not None  # the loop above staged the row files
        incoming = distributed_series.take_ledger_members(staging, release_id)
        record = series.record_of(spec, release_id, started, manifest.method, manifest.rows, privacy.k, identity,
                                  judged.report, None, judged.seen, staged=incoming)
        folder, manifest, _ = publish_files(staging, manifest, None, started, record)
    except BaseException:
        if staging is not None:
            publish.discard_staging(staging)
        raise
    logger.info("[8/%d] published %s", STEPS, folder)
    return ReleaseResult(
        release_id=release_id, status="published", reason="published", folder=str(folder), unit=method.unit,
        report=str(Path(folder) / "report.html"), k=privacy.k, linkage_risk=privacy.linkage_risk,
        accuracy=util.accuracy, accuracy_original=util.accuracy_original, claims=privacy.claims,
        attacker_view=privacy.attacker_view, floor=privacy.floor, series=judged.report, tuning_rule=trace.rule,
        tuning_strategy=trace.strategy, tuned=trace.tuned_text(),
        per_class={c.label: c.sanitized for c in util.per_class}, delta_r={d.classifier: d.value for d in util.delta_r},
        tstr=util.tstr, regression=util.regression)
