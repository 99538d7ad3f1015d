"""Small things a data engineer reads every day (issue 34, item 9): ``audit list`` shows one row per run, a count of
one claim reads in the singular, a fixed parameter that took the policy's value says so, and ``compare`` never cuts a
tuned value off. (The federated model's report.html: tests/test_federated.py.)"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from types import SimpleNamespace

from typer.testing import CliRunner

from ppdp.flows.cli import app
from ppdp.flows.cli.comparison import print_comparison as _print_comparison
from ppdp.flows.steps import log_privacy
from ppdp.schemas.compare import CompareResult, CompareRow
from ppdp.schemas.spec import TuningSpec
from ppdp.tasks import audit, tune
from ppdp.tasks import spec as spec_io
from ppdp.tasks.sanitize.registry import build_sanitizer
from tests.conftest import REPO

EXAMPLES = REPO / "examples"
FILES = {"data.parquet": "0" * 64, "manifest.json": "1" * 64}


def ppdp(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_audit_list_shows_one_row_per_run_and_all_entries_with_all(tmp_path):
    root = tmp_path / "root"
    now = datetime.now(UTC)
    audit.append_entry(root, release_id="r1", dataset="d", status="rejected", reason="a gate failed", started_at=now)
    pending = audit.append_entry(root, release_id="r2", dataset="d", status="pending", reason="publishing",
                                 started_at=now, files=FILES)
    audit.append_entry(root, release_id="r2", dataset="d", status="published", reason="published", started_at=now,
                       completes=pending.seq, files=FILES)
    audit.append_entry(root, release_id="r3", dataset="d", status="pending", reason="publishing", started_at=now,
                       files=FILES)
    listed = ppdp("audit", "list", "--root", root)
    assert listed.exit_code == 0, listed.output
    rows = listed.output.splitlines()[1:]
    assert [row.split()[1] for row in rows] == ["r1", "r2", "r3"], listed.output  # one row per run
    assert rows[1].split()[:4] == ["2-3", "r2", "d", "published"]
    assert "interrupted publish" in rows[2] and "ppdp audit recover" in rows[2]
    every = ppdp("audit", "list", "--root", root, "--all")
    assert every.exit_code == 0 and len(every.output.splitlines()) == 1 + 4, every.output


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_one_claim_reads_in_the_singular():
    logger = logging.getLogger("ppdp-test-claims")
    handler = _Lines()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        for n in (1, 3):
            log_privacy(logger, SimpleNamespace(claims=[object()] * n, floor=SimpleNamespace(holds=True)))
    finally:
        logger.removeHandler(handler)
    assert "1 claim holds;" in handler.lines[0], handler.lines
    assert "3 claims hold;" in handler.lines[1], handler.lines


def test_a_fixed_k_taken_from_the_policy_says_so():
    spec = spec_io.load_spec(EXAMPLES / "mdav_demo.yaml", ["tuning.strategy=fixed"])
    assert spec.method.k == spec.privacy.k and spec.inherited == ("k",)
    sanitizer = build_sanitizer(spec.method, seed=spec.seed)

    def rule(inherited: tuple[str, ...]) -> str:
        return tune.tune(TuningSpec(strategy="fixed"), sanitizer=sanitizer, domains={}, policy=spec.privacy,
                         sizes={}, evaluate_many=None, inherited=inherited).rule

    assert rule(spec.inherited) == f"method.k = {spec.privacy.k} from privacy.k (method.k is not set) (not tuned)"
    own = spec_io.load_spec(EXAMPLES / "mdav_demo.yaml", ["tuning.strategy=fixed", f"method.k={spec.privacy.k + 1}"])
    assert own.inherited == ()
    assert rule(own.inherited).endswith("from the spec (not tuned)")


def test_compare_prints_a_long_tuned_value_whole(capsys):
    node = "levels age=3, zip=2, education=1, marital_status=1, occupation=2, race=0, sex=1"
    rows = [CompareRow(method="generalization", status="passes", tuned=node),
            CompareRow(method="mdav", status="refused", tuned="k=12", reason="the floor fails")]
    result = CompareResult(dataset="d", input_digest=None, input_rows=100, seed=0, runner="thread",
                           classifier="knn1", rows=rows, recommendation="none passes", rule="r", policy_rule="p")
    _print_comparison(result)
    out = capsys.readouterr().out
    assert node in out
    header, first = out.splitlines()[1:3]
    assert first.index("passes") == header.index("status")
    assert first.index(node) + len(node) < header.index("policy")
