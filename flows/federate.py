"""The federation flow (``ppdp federate SPEC``): naive Bayes over several parties' rows through two
semi-trusted mixers (paper 001, section 3.2; the protocol and its threat model are in
:mod:`ppdp.tasks.federated`). This file only wires:

* each party is its own subflow run (``ppdp-federate-party``, named ``party-<name>``, one after the other) that
  reads only that party's file and returns only its file hash and its two shares (the counts never leave its
  task);
* each mixer is its own task run (``mixer-A``, ``mixer-B``, with 2 retries) that receives only the shares meant
  for it and returns their sum;
* the flow adds the two sums, applies the minimum-count rule (its complementary cells audited by linear
  programming before anything is published) and publishes the model like any release (staged folder renamed
  into place, signed pending then published audit entries).

As in :mod:`ppdp.flows.release`, every task is a :class:`ppdp.flows.steps.step` (``cache_policy=NO_CACHE,
persist_result=False``; a failure is handed to the flow, never raised inside the task) and no flow raises: a
refusal is audited and the flow returns a ``Failed`` state holding the exception in memory. The mixer task is
the exception: it raises, so that Prefect retries it; its exception carries no data, is never persisted
(``persist_result=False``), and Prefect's task-failure log line for it is kept to one line (no traceback).
Flow parameters are the spec path, the overrides, a party's name and the spec's hash, never data.

``PPDP_MIXER_FAULT`` (tests only) makes a mixer fail: ``A:once`` fails mixer A's first attempt (its retry
succeeds), ``B:always`` fails every attempt of mixer B (the federation is refused, nothing is published).
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from prefect import State, flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run, task_run
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.states import Failed

from ppdp.flows.settings import apply_settings
from ppdp.flows.steps import step
from ppdp.schemas.federate import FederateResult
from ppdp.tasks import audit, federated
from ppdp.tasks import spec as spec_io
from ppdp.tasks.core.errors import PpdpError, SpecError
from ppdp.tasks.publish import new_release_id

STEPS = 5
FAULT_ENV = "PPDP_MIXER_FAULT"
MIXER_RETRIES = 2

load_spec = step(federated.load_spec, "load-federation-spec")
check_federation = step(federated.preflight, "preflight", lambda p: f"{len(p['spec'].parties)} parties")
count_and_split = step(federated.party_shares, "count-and-split", lambda p: p["name"])
combine_sums = step(federated.combine, "combine", lambda p: f"{p['layout'].size:,} cells")
min_count = step(federated.apply_min_count, "min-count", lambda p: f"k={p['rule'].k} {p['rule'].action}")
model_table = step(federated.model_table, "model-table")
build_manifest = step(federated.build_manifest, "build-manifest", lambda p: p["release_id"])
publish_model = step(federated.publish_model, "publish", lambda p: p["manifest"].release_id)


# -- the mixers ----------------------------------------------------------------------------------------------
def mixer_fault(mixer: str, environ: dict[str, str] | None = None) -> str | None:
    """TEST HOOK: ``once``, ``always`` or None for ``mixer`` from ``$PPDP_MIXER_FAULT`` (``A:once``,
    ``B:always``, or both comma-separated)."""
    text = (os.environ if environ is None else environ).get(FAULT_ENV, "").strip()
    found = None
    for item in filter(None, (i.strip() for i in text.split(","))):
        name, _, mode = item.partition(":")
        if name not in federated.MIXERS or mode not in ("once", "always"):
            raise SpecError(f"${FAULT_ENV}: expected A:once, A:always, B:once or B:always (comma-separated)")
        if name == mixer:
            found = mode
    return found


def _mix(mixer: str, shares: list):
    """One mixer: the sum of the shares it received (modulo 2**64)."""
    fault = mixer_fault(mixer)
    if fault == "always" or (fault == "once" and task_run.run_count <= 1):
        raise federated.MixerUnavailable(f"mixer {mixer} did not answer (injected by ${FAULT_ENV}); nothing "
                                         "published")
    return federated.mixer_sum(shares)


mixer = task(name="mixer", task_run_name="mixer-{mixer}", retries=MIXER_RETRIES, retry_delay_seconds=0,
             cache_policy=NO_CACHE, persist_result=False)(_mix)


class _OneLineForExpectedFailures(logging.Filter):
    """Prefect logs a task's final failure with its traceback (``exc_info=True``); for an expected failure (a
    :class:`PpdpError`, such as a mixer that never answered) the log line alone says it all."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PpdpError):
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_expected_task_failures() -> None:
    logger = logging.getLogger("prefect.task_runs")
    if not any(isinstance(f, _OneLineForExpectedFailures) for f in logger.filters):
        logger.addFilter(_OneLineForExpectedFailures())


# -- the flows -----------------------------------------------------------------------------------------------
@flow(name="ppdp-federate-party", flow_run_name="party-{party}", persist_result=False, log_prints=False)
def party_flow(spec_path: str, overrides: list[str], party: str, spec_sha256: str) -> federated.PartyShares | State:
    """One party: load the spec (it must be the one the federation started with), read only this party's file,
    count and split; return its file hash and its two shares."""
    try:
        spec = load_spec(spec_path, overrides)
        if federated.spec_sha256(spec) != spec_sha256:
            raise SpecError(f"spec {spec_path} changed while the federation ran")
        return count_and_split(spec, party)
    except PpdpError as exc:
        return Failed(message=f"party {party} refused ({type(exc).__name__})", data=exc)
    except Exception as exc:  # noqa: BLE001 - by type only: the message may quote data
        return Failed(message=f"party {party}: internal error ({type(exc).__name__})", data=exc)


@flow(name="ppdp-federate", persist_result=False, log_prints=False)
def federate_flow(spec_path: str, overrides: list[str] | None = None) -> FederateResult | State:  # State: Failed
    """Run one federation from a spec file; raise :class:`ppdp.tasks.core.errors.PpdpError` when refused
    (nothing published, the refusal audited)."""
    apply_settings()  # called from Python or by a Prefect worker: ppdp's Prefect settings (idempotent)
    logger = get_run_logger()
    _quiet_expected_task_failures()
    overrides = list(overrides or [])
    started = datetime.now(UTC)
    release_id = new_release_id(started)
    run_id = str(flow_run.get_id()) if flow_run.get_id() else None
    spec = None
    sha = None
    try:
        spec = load_spec(spec_path, overrides)
        sha = federated.spec_sha256(spec)
        layout = federated.layout_of(spec)
        logger.info("[1/%d] spec %s: dataset %s, %d parties, %d attributes, %d cells", STEPS, spec_path,
                    spec.dataset, len(spec.parties), len(spec.attributes), layout.size)
        check_federation(spec)
        received: dict[str, list] = {m: [] for m in federated.MIXERS}
        hashes: list[tuple[str, str]] = []  # each party's name and file SHA-256 (only keyed digests are published)
        for party in spec.parties:
            # a subflow that returns a Failed state raises it: the call gives the party's shares
            shares = cast(federated.PartyShares,
                          party_flow(spec_path=spec_path, overrides=overrides, party=party.name, spec_sha256=sha))
            received["A"].append(shares.share_a)
            received["B"].append(shares.share_b)
            hashes.append((shares.name, shares.file_sha256))
            logger.info("[2/%d] party %s: one share sent to each mixer", STEPS, party.name)
        futures = {m: mixer.submit(m, received[m]) for m in federated.MIXERS}
        sums = {m: f.result() for m, f in futures.items()}
        logger.info("[3/%d] mixers A and B: %d shares summed each", STEPS, len(hashes))
        counts = combine_sums(sums["A"], sums["B"], layout)
        result = min_count(counts, layout, spec.min_count)
        logger.info("[4/%d] min_count k=%d (%s): %d cells suppressed, %d complementary, suppression audit %s", STEPS,
                    spec.min_count.k, spec.min_count.action, result.primary, result.complementary,
                    "passed" if result.audited else "not run")
        frame = model_table(result, layout)
        manifest = build_manifest(release_id=release_id, started=started, spec=spec, spec_sha256=sha,
                                  parties=federated.party_records(spec, hashes), result=result, rows=layout.size,
                                  flow_run_id=run_id)
        folder, manifest = publish_model(frame, manifest, started)
        logger.info("[5/%d] published %s", STEPS, folder)
        return FederateResult(release_id=release_id, dataset=spec.dataset, folder=str(folder),
                              parties=[name for name, _ in hashes], cells=layout.size, suppressed_cells=result.primary,
                              complementary_cells=result.complementary)
    except PpdpError as exc:
        root = spec.publish.root if spec is not None else spec_io.guess_publish_root(spec_path, overrides)
        audit.record_refusal(root, release_id=release_id, dataset=spec.dataset if spec else None, error=exc,
                             started_at=started, flow_run_id=run_id, spec_sha256=sha)
        return Failed(message=f"federation refused ({type(exc).__name__}; see the audit trail)", data=exc)
    except Exception as exc:  # an unexpected failure is recorded too, by type only (messages may hold data)
        audit.record_refusal(spec.publish.root if spec is not None else None, release_id=release_id,
                             dataset=spec.dataset if spec else None,
                             error=PpdpError(f"internal error ({type(exc).__name__})"), started_at=started,
                             flow_run_id=run_id, spec_sha256=sha)
        return Failed(message=f"internal error ({type(exc).__name__})", data=exc)


def run_federation(spec_path: str | os.PathLike[str], overrides: list[str] | tuple[str, ...] = ()) -> FederateResult:
    """Call :func:`federate_flow` with the flow heartbeat off (about 1 s per run otherwise); raise the refusal."""
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        # a flow that returns a Failed state raises it: the call gives the result
        return cast(FederateResult, federate_flow(spec_path=str(Path(spec_path).resolve()), overrides=list(overrides)))
