"""How soon a bad input is refused (issue 34: cheap checks first; target: within 5 s of the flow's start).

    .venv/bin/python -m benchmarks.bad_input_refusal [--runs 3] [--out benchmarks/results/bad_input_refusal.md]

The census demo (``examples/census_demo.yaml``) with one cell of its numeric ``age`` column made text (data row
17) is run as a whole ``ppdp run`` process, each run publishing into a temporary root. Measured per run: the
seconds from the flow's first log line (``Beginning flow run``) to its refusal (``Finished in state Failed``),
read from Prefect's log timestamps, and the whole process's wall time (with ``PREFECT_API_URL`` unset, that
includes starting Prefect's temporary server). Then, in a fresh process without Prefect, the ingest step alone on
the same input: its seconds to the refusal and whether Great Expectations was imported (the cheap checks run with
pandas first; Great Expectations, an import of several seconds, runs only on an input that passes them).

Every run must exit 2 with the plain sentence ``column 3 ('age'): 1 of ... rows is not a number (first at data row
17)``; the script exits 1 otherwise. Over the target it says so (the figure depends on the machine's load).

``--smoke``: 300 rows of the demo's table, one run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from benchmarks import census_demo, smoke

REPO = Path(__file__).resolve().parents[1]
PPDP = Path(sys.executable).with_name("ppdp")
TARGET_SECONDS = 5.0
STAMP = re.compile(r"^(\d\d:\d\d:\d\d\.\d{3}) \| ")
SENTENCE = re.compile(r"column 3 \('age'\): 1 of [\d,]+ rows is not a number \(first at data row 17\)")
INGEST_ONLY = """
import sys, time
from ppdp.tasks import ingest, spec
from ppdp.tasks.core.errors import InputError
s = spec.load_spec(sys.argv[1])
t = time.perf_counter()
try:
    ingest.ingest(s)
except InputError:
    pass
print(f"{time.perf_counter() - t:.3f} {'great_expectations' in sys.modules}")
"""


def _bad_cell(table) -> None:
    table.loc[16, "age"] = "unknown"  # data row 17


def _stamp(line: str) -> datetime | None:
    m = STAMP.match(line)
    return datetime.strptime(m.group(1), "%H:%M:%S.%f") if m else None


def run_once(spec: Path) -> tuple[float, float]:
    """(seconds from the flow's first log line to its refusal, the process's wall seconds)."""
    started = time.perf_counter()
    done = subprocess.run([str(PPDP), "run", str(spec)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PREFECT_LOGGING_LEVEL": "INFO"})
    wall = time.perf_counter() - started
    text = done.stdout + done.stderr
    if done.returncode != 2 or not SENTENCE.search(text):
        raise SystemExit(f"benchmark: expected exit 2 and the plain sentence, got exit {done.returncode}:\n"
                         f"{text[-2000:]}")
    begin = next((_stamp(ln) for ln in text.splitlines() if "Beginning flow run" in ln), None)
    end = next((_stamp(ln) for ln in text.splitlines() if "Finished in state Failed" in ln), None)
    if begin is None or end is None:
        raise SystemExit("benchmark: the flow's log lines were not found")
    return (end - begin).total_seconds(), wall


def ingest_only(spec: Path) -> tuple[float, bool]:
    done = subprocess.run([sys.executable, "-c", INGEST_ONLY, str(spec)], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    seconds, gx = done.stdout.split()
    return float(seconds), gx == "True"


def main() -> None:
    args, runs, folder = census_demo.arguments(__doc__ or "", "ppdp-bad-input-")
    spec = census_demo.demo_spec(folder, smoke.SMOKE_ROWS if args.smoke else None, "census_bad", _bad_cell)
    if args.smoke:
        print(f"smoke input: {smoke.SMOKE_ROWS} rows of examples/data/census_demo.csv, one age cell made text")
    lines = ["| run | flow start to refusal (s) | whole `ppdp run` (s) |", "|---|---|---|"]
    worst = 0.0
    for i in range(1, runs + 1):
        flow, wall = run_once(spec)
        worst = max(worst, flow)
        lines.append(f"| {i} | {flow:.2f} | {wall:.1f} |")
    seconds, gx = ingest_only(spec)
    lines += ["", f"ingest step alone (fresh process, no Prefect): refused in {seconds:.3f} s; Great Expectations "
              f"imported: {'yes' if gx else 'no'}",
              census_demo.target_line(f"refused within {TARGET_SECONDS:g} s of the flow's start", worst,
                                      TARGET_SECONDS)]
    census_demo.finish(lines, args)


if __name__ == "__main__":
    main()
