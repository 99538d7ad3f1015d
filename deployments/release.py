"""A scheduled deployment of the release flow, served by a local process.

    python -m ppdp.deployments.release                      # serve: nightly at 02:00 UTC, the demo spec
    PPDP_SPEC=/path/spec.yaml PPDP_CRON="30 3 * * 1" python -m ppdp.deployments.release

Trigger a run by hand, with other parameters, from another shell (against the same Prefect API):

    prefect deployment run 'ppdp-release/scheduled-release' --param spec_path=/abs/spec.yaml \
        --param 'overrides=["seed=11"]'

The deployment's parameters are paths and overrides only: Prefect stores parameters in its database. A scheduled run
on an input, spec and code unchanged since the dataset's latest release completes without publishing ("unchanged
since RELEASE" in its log); ``--param force=true`` on a run by hand publishes anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect import serve
from prefect.schedules import Cron

from ppdp.flows.release import release_flow
from ppdp.flows.settings import apply_settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "examples" / "census_demo.yaml"
DEFAULT_CRON = "0 2 * * *"
DEPLOYMENT_NAME = "scheduled-release"


def build_deployment(spec_path: str | os.PathLike[str] | None = None, cron: str | None = None,
                     name: str = DEPLOYMENT_NAME):
    """The release flow as a deployment with a cron schedule (UTC) and the spec path as a parameter."""
    return scheduled(release_flow, name, spec_path or os.environ.get("PPDP_SPEC") or DEFAULT_SPEC,
                     cron or os.environ.get("PPDP_CRON") or DEFAULT_CRON,
                     "Scheduled privacy-preserving release (ppdp): sanitize, validate, publish, audit.", ["ppdp"])


def scheduled(flow, name: str, spec_path: str | os.PathLike[str], cron: str, description: str, tags: list[str]):
    """``flow`` as a deployment with a cron schedule (UTC) and the spec path as its parameter (no overrides)."""
    apply_settings()  # a deployment built from Python: ppdp's Prefect settings (idempotent)
    spec = Path(spec_path).resolve()
    return flow.to_deployment(name=name, schedules=[Cron(cron, timezone="UTC")],
                              parameters={"spec_path": str(spec), "overrides": []}, description=description,
                              tags=tags)


def main() -> None:
    apply_settings()  # the entry point: ppdp's Prefect settings for this process and the runs it serves
    serve(build_deployment())


if __name__ == "__main__":
    main()
