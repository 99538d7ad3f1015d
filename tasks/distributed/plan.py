"""A folder of Parquet partitions as the source of a release (``source.path`` a folder): the steps that differ
from one table's, as :class:`FolderSource` gives them to the one release plan (:func:`ppdp.tasks.plan.run`, which
runs every step in order and holds the steps both sources share: the tagging, the promotion of columns, the gates,
the log lines), run through the same :class:`~ppdp.tasks.steps.Runner` (the flow's: each step a Prefect task on its
task runner, Dask workers or threads). This module holds steps, not a sequence.

Per partition, as a task each: ingest (the input suite, the checks, the hash, pass 1's counts); each pass of the
method (counts); recoding (and the partition's share of the utility sample); then one task per published row
file. The count tables are merged by a tree of tasks (:func:`ppdp.tasks.distributed.tree.merge_tree`), and what
reads the merged counts (the rare-value rule's plan, the method's start and passes, its search, its fit) runs as
tasks given them as submitted steps: on a Dask cluster the merged tables stay on the workers. In the caller, on
small results only: the tuning's rule (the same as one table's), the privacy measures (from counts over the
published files, on the cluster when there is one), the manifest and the publish of the row files. What the method
does on partitions is the capability its sanitizer declares (:class:`ppdp.tasks.sanitize.partitions.OnPartitions`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from ppdp.schemas.manifest import Manifest, ReleaseResult
from ppdp.schemas.reports import IngestReport, LatticeSearch, PrivacyReport, Roles, TuningTrace
from ppdp.schemas.spec import ReleaseSpec
from ppdp.schemas.units import unit_of
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks import publish, secrets, series, tune, utility
from ppdp.tasks.core.counts import Counts
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.distributed import inputs, measure, methods, nearest, output, rare, record, tree
from ppdp.tasks.distributed import series as distributed_series
from ppdp.tasks.privacy.series_partitioned import judge_partitioned
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.partitions import Fitted, OnPartitions
from ppdp.tasks.sanitize.registry import build_sanitizer
from ppdp.tasks.steps import STEPS, Log, Pending, RunIds, Runner, Step

LIST_INPUTS = Step("preflight", inputs.list_inputs, lambda p: p["spec"].dataset)
SAMPLE = Step("read-sample", inputs.sample_frame, lambda p: f"{len(p['inputs'].files)} partitions")
INGEST_PARTITION = Step("ingest-partition", inputs.ingest_partition,
                        lambda p: f"partition {p['index']}")  # a file name may hold data (hive keys)
SLIM_INGESTS = Step("ingest-records", tree.slim_ingests, lambda p: f"{len(p['parts'])} partitions")
MERGE_COUNTS = Step("merge-counts", inputs.merge_counts, lambda p: f"{len(p['parts'])} tables")
INGEST_REPORT = Step("ingest-report", inputs.ingest_report)
RARE_PLAN = Step("merge-rare-categories", rare.rare_plan, lambda p: f"k={p['k']}")
RECOUNT = Step("recount-partition", methods.recount_partition, lambda p: f"partition {p['index']}")
COUNT = Step("count-partition", methods.count_partition, lambda p: f"{p['method'].name}, partition {p['index']}")
ALLOT = Step("allot-partition", methods.allot_partition, lambda p: f"{p['method'].name}, partition {p['index']}")
MERGE_PASS = Step("merge-pass", tree.merge_pass, lambda p: f"{len(p['parts'])} tables")
START = Step("start-method", tree.start, lambda p: p["method"].name)
NEXT_PASS = Step("next-pass", tree.next_pass, lambda p: p["method"].name)
ABSORB = Step("absorb-pass", tree.absorb, lambda p: p["method"].name)
DOMAINS = Step("method-domains", tree.domains, lambda p: p["method"].name)
SEARCH = Step("search-lattice", tree.search, lambda p: p["method"].name)
FIT = Step("fit", tree.fit, lambda p: p["method"].name)
LOCAL_JOBS = Step("local-jobs", tree.local_jobs, lambda p: p["method"].name)
JOB_COUNT = Step("count-jobs", tree.job_count)
FINISH_PART = Step("finish-part", tree.nth_part, lambda p: f"part {p['index']}")
FINISH_LOCAL = Step("finish-local", tree.finish_local, lambda p: f"{len(p['results'])} parts")
FIT_SUMMARY = Step("fit-summary", tree.fit_summary, lambda p: p["method"].name)
ALLOT_JOB = Step("allot-job", tree.allot_job, lambda p: p["method"].name)
ALLOTTED = Step("allot-partitions", tree.allotted, lambda p: p["method"].name)
RECODE = Step("recode-partition", output.recode_partition, lambda p: f"partition {p['index']}")
WRITE_ROW_FILE = Step("write-row-file", output.write_row_file, lambda p: f"file {p['number']}")
MEASURE_PRIVACY = Step("validate-privacy", measure.measure_published, lambda p: "from counts over the row files")
MEASURE_UTILITY = Step("check-utility", measure.measure_utility, lambda p: p["spec"].utility.classifier)
BUILD_MANIFEST = Step("build-manifest", record.build_manifest, lambda p: p["release_id"])
PUBLISH = Step("publish", publish.publish_row_files, lambda p: p["manifest"].release_id)
FIND_IDENTITY = Step("fingerprint-basis", distributed_series.partitioned_identity)
JUDGE_SERIES = Step("judge-series", judge_partitioned, lambda p: p["spec"].dataset)


@dataclass
class Ingested:
    """A partitioned source once ingested: its files, the roles, each partition's ingest and pass 1's merged
    counts, the ingest report, the series identity basis, the rare-value rule's plan, the pseudonym key, the
    method's capability and its (untuned) sanitizer, the utility sample's plan and the class totals."""

    spec: ReleaseSpec
    src: inputs.Inputs
    roles: Roles
    parts: list[inputs.PartitionIngest]
    report: IngestReport
    identity: distributed_series.PartitionedIdentity
    counts: Pending[Counts]  # merged where the merge tree ran (a Dask worker), not in the flow's process
    rare: rare.RarePlan
    key: bytes | None
    method: OnPartitions
    base: Sanitizer
    sample: output.SamplePlan
    class_totals: dict[str, int]
    order_key: bytes

    @property
    def n(self) -> int:
        return len(self.src.files)


@dataclass
class Recoded:
    """The method fitted, tuned and run over the partitions into staged row files, and measured."""

    roles: Roles
    sanitizer: Sanitizer
    trace: TuningTrace
    fitted: Fitted[Any]
    recoded: list[output.Recoded]
    files: list[output.RowFile]
    schema: pa.Schema
    columns: list[str]
    seconds: float
    privacy: PrivacyReport
    protected: tuple[str, ...]
    staging: Path


def ingest(spec: ReleaseSpec, src: inputs.Inputs, ledger_key: Any, method: OnPartitions, roles: Roles,
           runner: Runner, log: Log, after_ingest: Callable[[IngestReport], None]) -> Ingested:
    """Each partition ingested as a task (roles detected on the first partition), the series identity basis, the
    ingest report (``after_ingest``: the digests and the rerun check, before any count is merged, tuned or
    recoded), pass 1's merged counts (a tree of merge tasks: on a Dask cluster they stay on the workers, and this
    process receives each partition's ingest without its value counts) and the rare-value rule's plan."""
    n = len(src.files)
    ingests = [runner.submit(INGEST_PARTITION, spec, src, i, roles, ledger_key.hash_key) for i in range(n)]
    parts = runner.submit(SLIM_INGESTS, ingests, roles.class_column).result()
    identity = runner.call(FIND_IDENTITY, spec.publish.root, roles, src.header,
                           distributed_series.constant_columns([p.constants for p in parts]), ledger_key)
    report = runner.call(INGEST_REPORT, spec, src, parts)
    after_ingest(report)
    counts = tree.merge_tree(runner, MERGE_COUNTS, ingests)
    log.info("[2/%d] ingest: %d rows in %d partitions, %d expectations passed in each", STEPS, report.rows, n,
             report.expectation_count)
    plan_ = runner.submit(RARE_PLAN, counts, roles, spec.rare_k, method.rare_rule_skip(roles)).result()
    key = secrets.pseudonym_key(spec.identifiers)
    base = build_sanitizer(spec.method, seed=spec.seed)
    cls = roles.class_column
    per_class = [p.counts.get(cls) if cls is not None else None for p in sorted(parts, key=lambda p: p.index)]
    rows = Counts(columns={}, by_class={}, rows=[p.report.read_rows for p in parts])  # the rows of each partition
    by_class = output.partition_classes(rows, per_class, plan_, cls)
    return Ingested(spec=spec, src=src, roles=roles, parts=parts, report=report, identity=identity, counts=counts,
                  rare=plan_, key=key, method=method, base=base,
                  sample=output.sample_plan(by_class, spec.utility.sample_rows),
                  class_totals=output.class_totals(by_class),  # published records per class label
                  order_key=series.order_key(series.series_key(spec.publish.root), spec.dataset))


def fitted(source: Ingested, roles: Roles, runner: Runner, log: Log
           ) -> tuple[Sanitizer, TuningTrace, tree.FitSummary, Pending[Fitted[Any]]]:
    """The method's passes over the partitions (count tasks, merged in order by a tree of merge tasks), the tuning
    (the same rule as one table's, its lattice search on the merged counts), the fit and the parts it leaves to a
    task each: (the tuned sanitizer, the trace, the fit's summary, what the recode tasks receive: the fit, or the
    finished parts' join, as a submitted step). Everything that reads the merged counts is a submitted step given
    them as a submitted step: on a Dask cluster it runs on a worker, and this process receives only small results
    (each pass's job, the domains, the search, the fit's summary; :mod:`ppdp.tasks.distributed.tree`)."""
    method, spec, n = source.method, source.spec, source.n
    counts = source.counts
    if methods.recounted(method, source.rare):  # rows left out: the values of the rows one table's run sanitizes
        counts = tree.merge_tree(runner, MERGE_COUNTS, [
            runner.submit(RECOUNT, spec, source.src, i, roles, source.key, source.rare) for i in range(n)])
    state = runner.submit(START, method, spec, source.base, roles, counts)
    passes = 0
    while (job := runner.submit(NEXT_PASS, method, state)).result() is not None:
        passes += 1
        tables = [runner.submit(COUNT, method, job, spec, source.src, i, roles, source.key, source.rare)
                  for i in range(n)]
        state = runner.submit(ABSORB, method, state, tree.merge_tree(runner, MERGE_PASS, tables, method))
    log.info("[4/%d] counts: %d pass(es) over %d partitions", STEPS, passes, n)

    def searched(_parameter: str, state: Any = state) -> LatticeSearch:
        return runner.submit(SEARCH, method, state).result()

    trace = tune.tune(spec.tuning, sanitizer=source.base, domains=runner.submit(DOMAINS, method, state).result(),
                      policy=spec.privacy, sizes={}, evaluate_many=None, search=searched, inherited=spec.inherited)
    sanitizer = tune.tuned(source.base, trace)
    log.info("[4/%d] tune (%s): %s", STEPS, trace.strategy, trace.rule)
    fit = runner.submit(FIT, method, state, sanitizer)
    jobs = runner.submit(LOCAL_JOBS, method, fit)  # the fit hands its parts over to them
    count = runner.submit(JOB_COUNT, jobs).result()
    if count:  # parts finished on one worker each, then joined on a worker: the recode tasks receive the join as a
        # future, which Dask sends to each worker once (not pickled once per task by the flow)
        fit = runner.submit(FINISH_LOCAL, method, fit, [runner.submit(FINISH_PART, method, jobs, j, spec, source.src,
                                                                       roles, source.key, source.rare)
                                                         for j in range(count)])
        log.info("[5/%d] %s: %d parts finished one per task", STEPS, method.name, count)
    return sanitizer, trace, runner.submit(FIT_SUMMARY, method, fit).result(), fit


def recoded(source: Ingested, roles: Roles, stage: Callable[[], Path], ids: RunIds, runner: Runner, log: Log
            ) -> Recoded:
    """One attempt: fit (:func:`fitted`), stage (``stage()``), recode every partition into pieces of the staged row
    files, write each row file, and measure the privacy from counts over them (on the Dask cluster when there is
    one): the attempt (with its staging folder)."""
    spec, method, n = source.spec, source.method, source.n
    started = time.perf_counter()
    sanitizer, trace, summary, given = fitted(source, roles, runner, log)
    per_partition: list[Pending[Any]] | None = None
    if summary.allots:
        job = runner.submit(ALLOT_JOB, method, given)
        per_partition = [runner.submit(ALLOT, method, job, spec, source.src, i, roles, source.key, source.rare)
                         for i in range(n)]
    allotted = runner.submit(ALLOTTED, method, given, per_partition, n).result()
    staging = stage()
    protected = tuple(type(source.base).protected_columns(roles))
    parts = [f.result() for f in [runner.submit(RECODE, spec, source.src, i, roles, source.key, source.rare, method,
                                                given, allotted[i], staging, n, source.order_key,
                                                source.sample.take[i], source.identity, protected)
                                  for i in range(n)]]
    seconds = time.perf_counter() - started
    schema = output.release_schema([r.schema for r in parts], summary.types)
    files = [f.result() for f in [runner.submit(WRITE_ROW_FILE, staging, j, ids.release_id, spec, roles,
                                                source.order_key, schema) for j in range(n)]]
    output.clear_pieces(staging)
    log.info("[5/%d] sanitize: %s, %d rows in %d row files", STEPS, method.name, sum(f.rows for f in files),
             sum(1 for f in files if f.rows))
    columns = [str(c) for c in parts[0].sample_published.columns] if parts else []
    address = runner.cluster()
    unit = type(source.base).unit
    originals = nearest.Originals(n, partial(output.load_partition, spec, source.src, roles=roles,
                                             pseudonym_key=source.key, rare=source.rare),
                                  partial(nearest.republish, method, given.result(), allotted)) if unit_of(
        unit).compares_records else None  # the record-level figures read the input partitions again (a record
    # method's fit is small: its scales)
    privacy = runner.call(MEASURE_PRIVACY, staging / "data", roles, spec, columns, type(source.base).protects,
                          list(protected), schema, address, unit, originals)
    log.info("[6/%d] privacy: counted over the row files %s", STEPS,
             "on the Dask cluster" if address else "in the flow's process")
    return Recoded(roles=roles, sanitizer=sanitizer, trace=trace, fitted=summary.fitted, recoded=parts, files=files,
                   schema=schema, columns=columns, seconds=seconds, privacy=privacy, protected=protected,
                   staging=staging)




class FolderSource:
    """A folder of Parquet partitions as the source of a release (:func:`ppdp.tasks.plan.run` runs the steps in
    order): the steps that differ from one table's, run partition by partition, on counts, into row files. Refuses
    (:class:`SpecError`, in one line) a method without the partition capability and a tuning strategy that
    evaluates values on rows, before anything is read."""

    tag_note = " (roles detected on the first partition)"
    again = "searching and recoding again"
    ingested: Ingested
    src: inputs.Inputs
    ledger_key: series.LedgerKey

    def __init__(self, spec: ReleaseSpec, ids: RunIds, runner: Runner, log: Log,
                 after_ingest: Callable[[IngestReport], None] | None = None) -> None:
        self.method = methods.partitioned_method(spec.method.name)
        if spec.tuning.strategy not in ("fixed", "lattice"):
            raise SpecError(f"spec tuning.strategy: {spec.tuning.strategy} evaluates values on rows, which a "
                            "partitioned input does not hold in one place: use fixed (the method's parameters) or "
                            "lattice")
        self.spec, self.ids, self.runner, self.log, self.after_ingest = spec, ids, runner, log, after_ingest
        self.staged: list[Path] = []  # the attempt's staging folder, once made

    def read(self) -> Any:
        """The folder's files and the sample the roles are detected on (the first partition)."""
        spec, runner = self.spec, self.runner
        self.src = runner.call(LIST_INPUTS, spec)
        self.ledger_key = series.ledger_key(spec.publish.root)  # the ledger opens with this machine's series key
        self.log.info("[1/%d] input %s: %d partitions", STEPS, self.src.folder, len(self.src.files))
        return runner.call(SAMPLE, spec, self.src)

    def ingested_report(self, report: IngestReport) -> None:
        self.ids.known.update(report.digests())
        if self.after_ingest is not None:
            self.after_ingest(report)

    def prepare(self, roles: Roles) -> None:
        """Each partition ingested (:func:`ingest`); ``ids.known`` gains the input's digests once they all are."""
        self.ingested = ingest(self.spec, self.src, self.ledger_key, self.method, roles, self.runner, self.log,
                               self.ingested_report)

    def stage(self) -> Path:
        self.staged.append(publish.row_staging(self.spec.publish.root, self.spec.dataset, self.ids.release_id))
        return self.staged[-1]

    def attempt(self, roles: Roles) -> Recoded:
        """Fit, tune, recode into staged row files and measure (:func:`recoded`); an earlier attempt's staging
        removed first."""
        if self.staged:
            publish.discard_staging(self.staged.pop())
        return recoded(self.ingested, roles, self.stage, self.ids, self.runner, self.log)

    def discard(self) -> None:
        """A refusal or failure: anything staged removed."""
        if self.staged:
            publish.discard_staging(self.staged[-1])

    def judge_series(self, done: Recoded, privacy: PrivacyReport) -> Any:
        return self.runner.call(JUDGE_SERIES, spec=self.spec, roles=done.roles, identity=self.ingested.identity,
                                staging=done.staging, protected_columns=list(done.protected), now=self.ids.started,
                                columns=[f.name for f in done.schema])

    def utility(self, done: Recoded) -> UtilityReport:
        original, published = output.join_samples(done.recoded)
        return self.runner.call(MEASURE_UTILITY, self.spec, done.roles, original, published)

    def named(self, util: UtilityReport, done: Recoded) -> UtilityReport:
        """The utility's classes named by their published counts, and its log line."""
        util = utility.name_counted_classes(util, self.ingested.class_totals, self.spec.label_k)
        self.log.info("[7/%d] utility on a sample of %d records: accuracy %.4f (original %.4f)", STEPS,
                      sum(len(r.sample_original) for r in done.recoded), util.accuracy, util.accuracy_original)
        return util

    def manifest(self, done: Recoded, privacy: PrivacyReport, judged: Any, util: UtilityReport) -> Manifest:
        spec, ids, source = self.spec, self.ids, self.ingested
        return self.runner.call(
            BUILD_MANIFEST, release_id=ids.release_id, started=ids.started, spec=spec,
            spec_sha256=ids.known["spec_sha256"], roles=done.roles, ingest=source.report, sanitizer=done.sanitizer,
            unit=type(source.base).unit, fitted=done.fitted, seconds=done.seconds, columns=done.columns,
            rows=sum(f.rows for f in done.files), rare=source.rare.report, privacy=privacy, utility=util,
            tuning=done.trace, output_checks=[o for f in done.files for o in f.outcomes], flow_run_id=ids.flow_run_id,
            sample=source.sample, class_totals=source.class_totals, schema=done.schema, series=judged.report)

    def publish(self, done: Recoded, manifest: Manifest, privacy: PrivacyReport, judged: Any) -> tuple[Any, Manifest]:
        """The staged row files published with the series ledger's record: (the folder, the manifest published)."""
        ids = self.ids
        incoming = distributed_series.take_ledger_members(done.staging, ids.release_id)
        basis: Any = self.ingested.identity  # the ledger's record reads the partitioned identity's bases as one table's
        entry = series.record_of(self.spec, ids.release_id, ids.started, manifest.method, manifest.rows, privacy.k,
                                 basis, judged.report, None, judged.seen, staged=incoming)
        folder, manifest, _ = self.runner.call(PUBLISH, done.staging, manifest, None, ids.started, entry)
        return folder, manifest

    def result(self, folder: Any, manifest: Manifest, done: Recoded, privacy: PrivacyReport, judged: Any,
               util: UtilityReport) -> tuple[ReleaseResult, Manifest | None]:
        """The run's result; no manifest (the flow makes no artifact of a partitioned release)."""
        trace = done.trace
        return ReleaseResult(
            release_id=self.ids.release_id, status="published", reason="published", folder=str(folder),
            unit=type(self.ingested.base).unit, report=str(Path(folder) / "report.html"), k=privacy.k,
            linkage_risk=privacy.linkage_risk, accuracy=util.accuracy, accuracy_original=util.accuracy_original,
            claims=privacy.claims, attacker_view=privacy.attacker_view, floor=privacy.floor, series=judged.report,
            tuning_rule=trace.rule, tuning_strategy=trace.strategy, tuned=trace.tuned_text(),
            per_class={c.label: c.sanitized for c in util.per_class},
            delta_r={d.classifier: d.value for d in util.delta_r}, tstr=util.tstr, regression=util.regression), None
