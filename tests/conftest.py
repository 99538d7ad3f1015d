"""Shared fixtures. Prefect's home and result storage point into a fresh temporary folder for the whole
session (set before Prefect is imported), so tests can prove nothing is written there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import yaml

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="ppdp-tests-"))
PREFECT_HOME = _SESSION_DIR / "prefect-home"
RESULT_STORAGE = _SESSION_DIR / "prefect-results"
os.environ["PREFECT_HOME"] = str(PREFECT_HOME)
os.environ["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(RESULT_STORAGE)
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ.pop("PREFECT_API_URL", None)
# The audit signing key (created on first use) and the local witnesses go to the session folder, never the real
# home; no audit key from the caller's environment leaks into a test (see the autouse fixture below).
PPDP_CONFIG = _SESSION_DIR / "ppdp-config"
os.environ["PPDP_CONFIG_DIR"] = str(PPDP_CONFIG)
_AUDIT_KEY_ENV = ("PPDP_AUDIT_KEY", "PPDP_AUDIT_HMAC_KEY", "PPDP_AUDIT_KEY_BLOCK", "PPDP_AUDIT_TRUSTED_KEYS")
for _name in _AUDIT_KEY_ENV:
    os.environ.pop(_name, None)

from ppdp.flows.settings import apply_settings  # noqa: E402

apply_settings()  # ppdp's Prefect settings, before Prefect is imported (no ppdp import applies them)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
TEST_SERIES_KEY = "5e" * 32  # the session's series key (see the autouse fixture)
SENTINEL_SSN = "987-65-4329"  # planted in test inputs: must never appear in Prefect's files


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is now: pytest and typer's CliRunner swap (and close) streams between
    tests, while Prefect's console log handler keeps the stream it was created with."""

    def write(self, text: str) -> int:
        import sys

        return sys.stderr.write(text)

    def flush(self) -> None:
        import sys

        sys.stderr.flush()

    def isatty(self) -> bool:
        return False


def _rebind_prefect_console_handlers() -> None:
    import logging

    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger()] + [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if isinstance(handler, PrefectConsoleHandler):
                handler.stream = _CurrentStderr()
                handler.console.file = handler.stream


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            yield


@pytest.fixture(autouse=True)
def _audit_key_in_session_folder(monkeypatch):
    """Every test signs with the session's audit key (made here, quietly, so that no test prints the "created
    the audit signing key" line unless it points PPDP_CONFIG_DIR elsewhere itself)."""
    for name in _AUDIT_KEY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PPDP_CONFIG_DIR", str(PPDP_CONFIG))
    monkeypatch.delenv("PPDP_SERIES_KEY", raising=False)
    series_key = PPDP_CONFIG / "series-key"  # made here too, quietly: no test sees its "created" line by order
    if not series_key.exists():  # fixed, not random: a release's row order (and so a 1-NN score that breaks ties
        # by row order) is the same in every test session
        PPDP_CONFIG.mkdir(mode=0o700, parents=True, exist_ok=True)
        series_key.write_text(TEST_SERIES_KEY + "\n", encoding="utf-8")
        series_key.chmod(0o600)
    key = PPDP_CONFIG / "audit-key.pem"
    if not key.exists():
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

        PPDP_CONFIG.mkdir(mode=0o700, parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        key.write_bytes(pem)
        key.chmod(0o600)
    yield


REFUSALS_SEEN: list[int] = []


@pytest.fixture(autouse=True)
def _no_traceback_in_any_cli_refusal(monkeypatch):
    """Every CLI call of the suite that ends non-zero (a refusal, a rejected release, a failed verify) is
    checked: its stdout and stderr hold no traceback (issue 8: a refusal is one line)."""
    from typer.testing import CliRunner

    invoke = CliRunner.invoke

    def checked(self, *args, **kwargs):
        result = invoke(self, *args, **kwargs)
        if result.exit_code not in (0, None):
            REFUSALS_SEEN.append(result.exit_code)
            text = result.output + (getattr(result, "stderr", "") or "" if not getattr(self, "mix_stderr", True)
                                    else "")
            assert "Traceback" not in text, f"a CLI refusal printed a traceback:\n{text[-2000:]}"
        return result

    monkeypatch.setattr(CliRunner, "invoke", checked)


@pytest.fixture(autouse=True)
def _prefect_logs_to_current_stderr():
    """Prefect configures its console handlers lazily (at the first flow run): rebind before every test."""
    import sys

    if "prefect.logging.handlers" in sys.modules:
        _rebind_prefect_console_handlers()
    yield


def census(rows: int = 600, seed: int = 3):
    """A small census-like table with direct identifiers (a planted SSN among them)."""
    import sys

    sys.path.insert(0, str(REPO / "examples"))
    try:
        from generate_census import generate
    finally:
        sys.path.pop(0)
    frame = generate(rows, seed)
    frame.insert(1, "ssn", [f"{100 + i % 800:03d}-{10 + i % 89:02d}-{1000 + i:04d}" for i in range(rows)])
    frame.loc[5, "ssn"] = SENTINEL_SSN
    return frame


def base_spec(data_path: Path, root: Path, **overrides) -> dict:
    spec = {
        "dataset": "census",
        "source": {"path": str(data_path)},
        "columns": {
            "person_id": "identifier",
            "education": {
                "role": "quasi_identifier",
                "order": ["Preschool", "Primary", "Some-HS", "HS-grad", "Some-college", "Assoc", "Bachelors",
                          "Masters", "Doctorate"],
            },
            "income": "class",
        },
        "privacy": {"k": 10},
        "method": {"name": "condensation", "variant": "class_wise", "k": 20},
        "tuning": {"strategy": "fixed"},
        "utility": {"classifier": "knn1", "test_fraction": 0.1, "min_accuracy_ratio": 0.5},
        "publish": {"root": str(root)},
        "seed": 7,
    }
    for dotted, value in overrides.items():
        node = spec
        parts = dotted.split("__")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return spec


@pytest.fixture
def workspace(tmp_path):
    """A folder with the census table as CSV, a writer for specs, and the publish root."""

    class Workspace:
        dir = tmp_path
        root = tmp_path / "releases"
        data = tmp_path / "census.csv"

        def spec(self, name: str = "spec.yaml", data: Path | None = None, **overrides) -> Path:
            path = tmp_path / name
            path.write_text(yaml.safe_dump(base_spec(data or self.data, self.root, **overrides)), encoding="utf-8")
            return path

        def under_root(self) -> list[str]:
            if not self.root.exists():
                return []
            return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*"))

    census().to_csv(tmp_path / "census.csv", index=False)
    return Workspace()


def run_deployment_once(dep, name: str, parameters: dict | None = None):
    """Trigger a run of the applied deployment ``dep`` (``flow/deployment`` ``name``) and execute it with a Prefect
    runner that takes that one run; returns the finished flow run."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.runner import Runner

    flow_run = run_deployment(name, parameters=parameters, timeout=0)

    async def execute():
        runner = Runner(query_seconds=1, prefetch_seconds=5)
        await runner.aadd_deployment(dep)
        await runner.start(run_once=True)
        async with get_client() as client:
            return await client.read_flow_run(flow_run.id)

    return asyncio.run(execute())
