"""The scheduled deployment loads, and a run triggered through Prefect executes the release flow."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppdp.deployments.release import DEPLOYMENT_NAME, build_deployment
from ppdp.tasks import audit
from tests.conftest import run_deployment_once


def test_deployment_definition(tmp_path):
    spec = tmp_path / "spec.yaml"
    dep = build_deployment(spec_path=spec, cron="15 1 * * 1")
    assert dep.name == DEPLOYMENT_NAME
    assert dep.entrypoint == "flows/release.py:release_flow"
    assert dep.parameters == {"spec_path": str(spec.resolve()), "overrides": []}
    [schedule] = dep.schedules
    assert schedule.schedule.cron == "15 1 * * 1" and schedule.schedule.timezone == "UTC"
    assert build_deployment().schedules[0].schedule.cron == "0 2 * * *"


def test_federation_deployment_definition(tmp_path):
    from ppdp.deployments import federate

    spec = tmp_path / "federation.yaml"
    dep = federate.build_deployment(spec_path=spec, cron="0 4 1 * *")
    assert dep.name == federate.DEPLOYMENT_NAME
    assert dep.entrypoint == "flows/federate.py:federate_flow"
    assert dep.parameters == {"spec_path": str(spec.resolve()), "overrides": []}
    [schedule] = dep.schedules
    assert schedule.schedule.cron == "0 4 1 * *" and schedule.schedule.timezone == "UTC"
    default = federate.build_deployment()
    assert default.schedules[0].schedule.cron == "0 3 * * 1" and Path(default.parameters["spec_path"]).is_file()


@pytest.mark.slow  # a runner process polling the API (about 8 s); .ci/run runs it
@pytest.mark.usefixtures("prefect_harness")
def test_triggered_run_executes_the_flow(workspace):
    dep = build_deployment(spec_path=workspace.spec(), name="test-release")
    dep.apply()
    finished = run_deployment_once(dep, "ppdp-release/test-release", {
        "spec_path": str(workspace.spec()), "overrides": ["seed=5"]})
    assert finished.state.is_completed(), finished.state
    pending, entry = audit.list_entries(workspace.root)
    assert entry.status == "published" and entry.completes == pending.seq and entry.flow_run_id == str(finished.id)
