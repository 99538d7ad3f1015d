"""What a second release costs with Prefect's temporary server against ``ppdp server start`` (issue 34 item 5).

    .venv/bin/python -m benchmarks.second_run [--spec examples/census_demo.yaml] [--repeats 1]
        [--out benchmarks/results/second_run.md]

Two sequences of whole ``ppdp run SPEC --quiet`` processes, each publishing into a fresh root, in one temporary
ppdp config folder and ``PREFECT_HOME`` (a new user's machine: no Prefect database yet; no ``PREFECT_API_URL``):

* temporary server: run 1, run 2; each ``ppdp`` process starts Prefect's temporary server and stops it at exit
  (run 1 also creates the Prefect database);
* local server: ``ppdp server start`` (timed on its own), run 1, run 2 (both use it: checked in its API
  afterwards), ``ppdp server stop`` (timed).

Wall time of each process, spawn to exit. ``--repeats N`` runs both sequences N times (fresh folders each time)
and reports each figure's median. Prints a markdown table; writes it to ``--out`` (default
``benchmarks/results/second_run.md``) unless ``--smoke``.

``--smoke`` (``make bench-smoke``): the spec's source replaced by 300 rows of ``examples/data/census_demo.csv``, one
repeat, nothing written into ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
PPDP = Path(sys.executable).with_name("ppdp")
DEFAULT_OUT = REPO / "benchmarks" / "results" / "second_run.md"


def timed(env: dict[str, str], *args: object) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run([str(PPDP), *map(str, args)], env=env, capture_output=True, text=True, cwd=REPO,
                          timeout=1800)
    return time.perf_counter() - started, done


def release(env: dict[str, str], spec: Path, root: Path, extra: list[str]) -> float:
    seconds, done = timed(env, "run", spec, "--quiet", "--set", f"publish.root={root}", *extra)
    if done.returncode != 0 or not done.stdout.startswith("published release "):
        raise SystemExit(f"benchmark: ppdp run exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds


def flow_runs(url: str) -> int:
    request = urllib.request.Request(f"{url}/flow_runs/count", data=b"{}", method="POST",
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:  # noqa: S310 - the benchmark's own loopback server
        return int(json.loads(r.read()))


def one_repeat(spec: Path, extra: list[str]) -> dict[str, float]:
    """The figures of one repeat (seconds): temporary 1 and 2, server start, local 1 and 2, server stop."""
    with tempfile.TemporaryDirectory(prefix="ppdp-second-run-") as tmp:
        base = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "PREFECT_PROFILE",
                                                                "PREFECT_PROFILES_PATH")}
        env.update(PPDP_CONFIG_DIR=str(base / "config"), PREFECT_HOME=str(base / "prefect-home"))
        out = {"temporary 1": release(env, spec, base / "t1", extra),
               "temporary 2": release(env, spec, base / "t2", extra)}
        out["server start"], done = timed(env, "server", "start")
        try:
            if done.returncode != 0:
                raise SystemExit(f"benchmark: ppdp server start exited {done.returncode}: {done.stderr.strip()}")
            state = json.loads((base / "config" / "prefect-server" / "server.json").read_text(encoding="utf-8"))
            out["local 1"] = release(env, spec, base / "l1", extra)
            out["local 2"] = release(env, spec, base / "l2", extra)
            if flow_runs(state["url"]) < 2:
                raise SystemExit("benchmark: the runs did not use the local server (its API has no flow run)")
        finally:
            out["server stop"], stopped = timed(env, "server", "stop")
            if stopped.returncode != 0:
                raise SystemExit(f"benchmark: ppdp server stop exited {stopped.returncode}: {stopped.stderr}")
        return out


def table(figures: list[dict[str, float]], spec_text: str, repeats: int) -> str:
    med = {key: statistics.median(f[key] for f in figures) for key in figures[0]}
    return "\n".join([
        "# First and second `ppdp run` with the temporary server vs `ppdp server start`",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.machine()} with {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the end (other jobs "
        f"running: figures vary with it); `python -m benchmarks.second_run` ({spec_text}; median of "
        f"{repeats} repeat(s)). Whole `ppdp run SPEC --quiet` processes, spawn to exit, each into a fresh publish "
        "root, in a fresh ppdp config folder and `PREFECT_HOME`.",
        "",
        "| Prefect API | server start | run 1 | run 2 | server stop |",
        "|---|---:|---:|---:|---:|",
        f"| temporary server (each run starts its own) | - | {med['temporary 1']:.1f} s | "
        f"{med['temporary 2']:.1f} s | - |",
        f"| `ppdp server start` (runs reuse it) | {med['server start']:.1f} s | {med['local 1']:.1f} s | "
        f"{med['local 2']:.1f} s | {med['server stop']:.1f} s |",
        "",
        f"A second run saves {med['temporary 2'] - med['local 2']:.1f} s with the local server "
        f"({med['temporary 2']:.1f} s -> {med['local 2']:.1f} s); starting it costs {med['server start']:.1f} s "
        "once.",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, default=REPO / "examples" / "census_demo.yaml")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    smoke.add_flag(parser)
    args = parser.parse_args()
    extra: list[str] = []
    spec_text = f"`{args.spec.relative_to(REPO) if args.spec.is_relative_to(REPO) else args.spec}`"
    repeats = max(1, args.repeats)
    if args.smoke:
        extra = ["--set", f"source.path={smoke.census_sample()}"]
        spec_text += ", 300-row sample"
        repeats = 1
    figures = [one_repeat(args.spec.resolve(), extra) for _ in range(repeats)]
    text = table(figures, spec_text, repeats)
    print(text)
    if not args.smoke:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
