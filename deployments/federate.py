"""A scheduled deployment of the federation flow (``ppdp federate``), served by a local process.

    python -m ppdp.deployments.federate                      # serve: weekly on Monday 03:00 UTC, the demo spec
    PPDP_SPEC=/path/federation.yaml PPDP_CRON="0 4 1 * *" python -m ppdp.deployments.federate

Trigger a run by hand, from another shell (against the same Prefect API):

    prefect deployment run 'ppdp-federate/scheduled-federation' --param spec_path=/abs/federation.yaml

Each run reads every party's file afresh, so a schedule publishes a new model when the parties' data change. The
deployment's parameters are paths and overrides only: Prefect stores parameters in its database.
"""

from __future__ import annotations

import os
from pathlib import Path

from prefect import serve

from ppdp.deployments.release import scheduled
from ppdp.flows.federate import federate_flow
from ppdp.flows.settings import apply_settings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SPEC = REPO / "examples" / "federated" / "federated_demo.yaml"
DEFAULT_CRON = "0 3 * * 1"
DEPLOYMENT_NAME = "scheduled-federation"


def build_deployment(spec_path: str | os.PathLike[str] | None = None, cron: str | None = None,
                     name: str = DEPLOYMENT_NAME):
    """The federation flow as a deployment with a cron schedule (UTC) and the spec path as a parameter."""
    return scheduled(federate_flow, name, spec_path or os.environ.get("PPDP_SPEC") or DEFAULT_SPEC,
                     cron or os.environ.get("PPDP_CRON") or DEFAULT_CRON,
                     "Scheduled federated naive Bayes (ppdp): parties' counts summed through two mixers, "
                     "minimum-count rule, publish, audit.", ["ppdp", "federated"])


def main() -> None:
    apply_settings()  # the entry point: ppdp's Prefect settings for this process and the runs it serves
    serve(build_deployment())


if __name__ == "__main__":
    main()
