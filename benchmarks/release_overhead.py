"""What a release costs beyond its steps' own work, against a running Prefect server (issue 10 §2).

    .venv/bin/python -m benchmarks.release_overhead [--runs 5] [--spec examples/census_demo.yaml ...]
        [--api http://127.0.0.1:4200/api]

Without ``--api`` (and without ``PREFECT_API_URL``) it starts its own local server (``prefect server start`` in a
temporary ``PREFECT_HOME``, analytics off, port 4277), waits until it answers, and stops it at the end.

Each run is a whole ``ppdp run SPEC --timings`` process, publishing into a temporary root. The process's wall
time is measured here (from spawn to exit); ``--timings`` makes ppdp print the seconds during which at least
one step function was running (the union of the steps' intervals, so parallel tuning evaluations count once).
Overhead = process wall - steps' own work: Python and library imports outside the steps, Prefect's flow and
task-run bookkeeping, the CLI. Imports a step makes itself (Great Expectations inside ingest, for instance) are
part of that step. Writes a markdown table to stdout (and ``--out``).

``--smoke`` (``make bench-smoke``): the spec's source replaced by 300 rows of ``examples/data/census_demo.csv``,
one run and no warm-up run (the server at ``PREFECT_API_URL``: the smoke driver starts one for all its scripts).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
PPDP = Path(sys.executable).with_name("ppdp")
PREFECT = Path(sys.executable).with_name("prefect")
SOURCE: list[str] = []  # --set arguments replacing the spec's source (smoke runs)
TIMINGS = re.compile(r"timings\s+([\d.]+) s in the command, ([\d.]+) s in the steps' own work")


def healthy(api: str) -> bool:
    try:
        with urllib.request.urlopen(f"{api}/health", timeout=2) as r:  # noqa: S310 - loopback only
            return r.read().strip() == b"true"
    except OSError:
        return False


def start_server(home: Path, port: int) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    proc = subprocess.Popen([str(PREFECT), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = f"http://127.0.0.1:{port}/api"
    deadline = time.time() + 120
    while not healthy(api):
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit("benchmark: the Prefect server did not start")
        time.sleep(0.5)
    return proc, api


def one_run(spec: Path, api: str, root: Path) -> tuple[float, float, float]:
    env = {**os.environ, "PREFECT_API_URL": api}
    started = time.perf_counter()
    done = subprocess.run([str(PPDP), "run", str(spec), "--timings", "--set", f"publish.root={root}", *SOURCE],
                          env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"benchmark: ppdp run {spec.name} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    match = TIMINGS.search(done.stdout)
    if match is None:
        raise SystemExit("benchmark: no timings line in ppdp's output")
    return wall, float(match.group(1)), float(match.group(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, action="append")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--api", default=os.environ.get("PREFECT_API_URL"))
    parser.add_argument("--out", type=Path)
    smoke.add_flag(parser)
    args = parser.parse_args()
    global SOURCE
    if args.smoke:
        SOURCE = ["--set", f"source.path={smoke.census_sample()}"]
        args.runs, args.spec, args.out = 1, None, None
    specs = args.spec or [REPO / "examples" / "census_demo.yaml"]
    server = None
    with tempfile.TemporaryDirectory(prefix="ppdp-overhead-") as tmp:
        api = args.api
        if not api:
            server, api = start_server(Path(tmp) / "prefect-home", 4277)
        try:
            lines = ["| spec | run | process wall (s) | steps' own work (s) | overhead (s) | load (1 min) |",
                     "|---|---|---|---|---|---|"]
            summary = []
            for spec in specs:
                if not args.smoke:
                    one_run(spec, api, Path(tmp) / "warm")  # warm the file cache and the server's database
                overheads, walls = [], []
                for i in range(args.runs):
                    wall, _, work = one_run(spec, api, Path(tmp) / f"root-{spec.stem}-{i}")
                    load = os.getloadavg()[0]
                    overheads.append(wall - work)
                    walls.append(wall)
                    lines.append(f"| {spec.name} | {i + 1} | {wall:.2f} | {work:.2f} | {wall - work:.2f} "
                                 f"| {load:.2f} |")
                summary.append(f"{spec.name}: process wall median {statistics.median(walls):.2f} s "
                               f"(min {min(walls):.2f}, max {max(walls):.2f}); overhead median "
                               f"{statistics.median(overheads):.2f} s (min {min(overheads):.2f}, max "
                               f"{max(overheads):.2f}) over {args.runs} runs")
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
    text = "\n".join(lines + [""] + summary) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
