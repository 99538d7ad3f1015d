"""Time each step of the Adult release (``examples/adult.yaml``) without Prefect (prints a table).

    .venv/bin/python -m benchmarks.adult_release_steps [--repeats 3] [--steps prepare,eval10,...] [--profile STEP]

The steps are the plain functions the release flow calls, with the spec's settings (class-wise condensation,
1-NN utility, hold-out 10 %, seed 7):

* ``prepare``: ingest + tag + protect identifiers + rare categories + hold-out split;
* ``eval10``, ``eval100``, ``eval200``: one tuning evaluation (:func:`ppdp.tasks.tune.evaluate_value`) at k = 10,
  100, 200 (sanitize the training rows, interval privacy, 1-NN accuracy on the held-out rows);
* ``sanitize``: class-wise condensation of the training rows at k = 199 (the value the tuner settles on);
* ``privacy``: :func:`ppdp.tasks.shapes.check_privacy` on that release;
* ``utility``: :func:`ppdp.tasks.utility.evaluate_utility` on that release.

Each step runs ``--repeats`` times; the table gives the median and the minimum wall time, the median CPU time of the
process (every thread), and the load average (``os.getloadavg()``, 1 minute) before and after the step: the machine
is shared, so figures taken under a load above its 2 cores are inflated. Heavy libraries (scikit-learn, SciPy) are
imported before timing: their import cost belongs to process start-up, not to a step. ``--profile STEP`` prints a
CPU-time cProfile of one run of that step. Needs ``../shared/data/adult/adult.csv``; exits with a message when it is
absent.

``--whole`` times whole processes instead, back to back, ``--repeats`` rounds: the floor of the release's data work
(a Python process that reads the CSV with pandas, groups it by the spec's 7 quasi-identifiers and writes Parquet
with pyarrow); the same process importing Prefect and Great Expectations first (the frameworks every release loads:
a lower bound of any release built on them, with no flow, server or check run); then ``ppdp run examples/adult.yaml
--timings`` in the default environment (no thread variable set: what a user's shell gives) and with
``OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1``, each publishing into a temporary root with a fresh ``PPDP_CONFIG_DIR``
and Prefect's temporary server (unless ``PREFECT_API_URL`` is set). It prints each run's wall and CPU seconds (the
process and its children: the temporary server's too), the medians, the ratios default / one thread and run /
floor, and each step's share of the run from ``--timings``. ``--server`` adds a third run per round against a
Prefect server kept running (``ppdp server start`` before the rounds, its start not counted; ``PREFECT_API_URL``
names it), as daily use runs it (docs/daily-use.md).

``--smoke`` (``make bench-smoke``): the spec's source replaced by 300 rows of Adult (a generated stand-in where
../shared/data is absent), one run per step (with ``--whole``: one round).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "adult.yaml"
DATA = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
STEPS = ["prepare", "eval10", "eval100", "eval200", "sanitize", "privacy", "utility"]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "PPDP_NATIVE_THREADS")
TIMINGS = re.compile(r"timings\s+([\d.]+) s in the command, ([\d.]+) s in the steps' own work")
STEP_LINE = re.compile(r"^\s{4}(\S+)\s+([\d.]+) s(?:\s+\((\d+) runs, summed\))?\s*$")
FLOOR = """
import sys
import pandas as pd
frame = pd.read_csv(sys.argv[1], na_values=["?"], skipinitialspace=True)
sizes = frame.groupby(sys.argv[3].split(","), dropna=False, observed=True).size()
frame.to_parquet(sys.argv[2], engine="pyarrow")
"""
# the floor's work in a process that first imports the two frameworks every release must load: its flow engine
# (Prefect) and its input checks (Great Expectations). No flow, no server, no check runs: a lower bound of any
# release built on them
STACK_FLOOR = "import prefect, great_expectations  # noqa: F401, E401\n" + FLOOR
STACK = "floor, Prefect and Great Expectations imported"


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the process and its children, standard output) of one whole process; exits on failure."""
    cpu, started = _child_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    wall, used = time.perf_counter() - started, _child_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"benchmark: {Path(command[0]).name} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return wall, used, done.stdout


def _steps(stdout: str) -> dict[str, float]:
    """Seconds per step from ``ppdp run --timings`` (parallel runs of a step summed)."""
    out: dict[str, float] = {}
    after = False
    for line in stdout.splitlines():
        if TIMINGS.search(line):
            after = True
            continue
        match = STEP_LINE.match(line) if after else None
        if after and match is None:
            break
        if match is not None:
            out[match.group(1)] = float(match.group(2))
    return out


def _rounds(spec_path: Path, data: Path, overrides: list[str], qis: list[str], repeats: int,
            modes: dict[str, dict[str, str]], runs: dict[str, list[tuple[float, float]]],
            shares: dict[str, list[dict[str, float]]], tmp: str, ppdp: Path, base: dict[str, str]) -> None:
    """``repeats`` rounds back to back: the floor, then ``ppdp run`` in each mode (see :func:`whole`)."""
    for r in range(repeats):
        runs["floor"].append(_timed([sys.executable, "-c", FLOOR, str(data), f"{tmp}/floor.parquet",
                                     ",".join(qis)], base)[:2])
        print(f"  round {r + 1}: floor {runs['floor'][-1][0]:.2f} s (load {_load():.2f})", flush=True)
        runs[STACK].append(_timed([sys.executable, "-c", STACK_FLOOR, str(data), f"{tmp}/stack.parquet",
                                   ",".join(qis)], base)[:2])
        print(f"  round {r + 1}: {STACK} {runs[STACK][-1][0]:.2f} s (load {_load():.2f})", flush=True)
        for mode, env in modes.items():
            folder = Path(tmp) / f"{mode.replace(' ', '_')}-{r}"
            env = {**env, "PPDP_CONFIG_DIR": str(folder / "config")}
            wall, cpu, stdout = _timed([str(ppdp), "run", str(spec_path), "--timings", "--set",
                                        f"publish.root={folder / 'releases'}", *overrides], env)
            runs[mode].append((wall, cpu))
            steps = _steps(stdout)
            steps["(beyond the steps, Python start-up included)"] = max(0.0, wall - float(
                TIMINGS.search(stdout).group(2) if TIMINGS.search(stdout) else 0.0))  # type: ignore[union-attr]
            shares[mode].append(steps)
            print(f"  round {r + 1}: {mode:<10} {wall:7.2f} s wall, {cpu:7.2f} s CPU (load {_load():.2f})",
                  flush=True)


def _kept_server(config: Path, ppdp: Path, env: dict[str, str]) -> str:
    """``ppdp server start`` with its own config folder; the server's API URL (from its state file)."""
    import json

    subprocess.run([str(ppdp), "server", "start"], env={**env, "PPDP_CONFIG_DIR": str(config)}, check=True,
                   capture_output=True)
    return str(json.loads((config / "prefect-server" / "server.json").read_text(encoding="utf-8"))["url"])


def whole(spec_path: Path, data: Path, sets: list[str], repeats: int, both: bool = True,
          server: bool = False) -> int:
    """The ``--whole`` mode (see the module docstring); ``sets``: the spec's overrides (``key=value``); ``both``:
    the one-thread run too (the smoke run has only the default one); ``server``: a run against a Prefect server kept
    running (``ppdp server start``, started once before the rounds: its start is not counted) too."""
    from ppdp.tasks import spec as spec_io

    spec = spec_io.load_spec(str(spec_path), sets)
    overrides = [o for item in sets for o in ("--set", item)]
    qis = [c for c, v in spec.columns.items() if getattr(v, "role", v) == "quasi_identifier"]
    base = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    modes = {"default": base, "one thread": {**base, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}}
    if not both:
        del modes["one thread"]
    ppdp = Path(sys.executable).with_name("ppdp")
    with tempfile.TemporaryDirectory(prefix="ppdp-bench-") as tmp:
        if server:
            modes["kept server"] = {**base, "PREFECT_API_URL": _kept_server(Path(tmp) / "server", ppdp, base)}
        runs: dict[str, list[tuple[float, float]]] = {"floor": [], STACK: [], **{m: [] for m in modes}}
        shares: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
        try:
            _rounds(spec_path, data, overrides, qis, repeats, modes, runs, shares, tmp, ppdp, base)
        finally:
            if server:
                subprocess.run([str(ppdp), "server", "stop"], env={**base, "PPDP_CONFIG_DIR": f"{tmp}/server"},
                               capture_output=True)
    med = {m: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for m, v in runs.items()}
    floor = med["floor"][0]
    print(f"\nAdult release, whole processes ({repeats} rounds, back to back; {os.cpu_count()} CPUs)\n")
    print("| run | wall s (median) | CPU s (median) | x floor |")
    print("|---|---:|---:|---:|")
    for name, (w, c) in med.items():
        print(f"| {name} | {w:.2f} | {c:.2f} | {w / floor:.1f} |")
    if both:
        print(f"\ndefault / one thread: {med['default'][0] / med['one thread'][0]:.2f} (wall), "
              f"{med['default'][1] / med['one thread'][1]:.2f} (CPU)")
    print()
    for mode in modes:
        names = sorted({n for s in shares[mode] for n in s}, key=lambda n: -statistics.median(
            s.get(n, 0.0) for s in shares[mode]))
        wall = med[mode][0]
        print(f"Steps of the {mode} run (median seconds; evaluations summed over their parallel runs; share of the "
              "run's median wall)\n")
        print("| step | s | share |")
        print("|---|---:|---:|")
        for n in names:
            sec = statistics.median(s.get(n, 0.0) for s in shares[mode])
            if sec >= 0.05:
                print(f"| {n} | {sec:.2f} | {sec / wall:.0%} |")
        print()
    return 0


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of " + ",".join(STEPS))
    parser.add_argument("--profile", default=None, help="print a cProfile of one run of this step")
    parser.add_argument("--whole", action="store_true", help="time whole processes: the floor and ppdp run, "
                        "default environment and one thread (see the module docstring)")
    parser.add_argument("--server", action="store_true", help="with --whole: a run against a Prefect server kept "
                        "running (ppdp server start, before the rounds) too")
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    global DATA
    overrides = []
    ks = {"eval10": 10, "eval100": 100, "eval200": 200, "sanitize": 199}
    if args.smoke:
        DATA = smoke.tiny_shared("adult/adult.csv") / "adult" / "adult.csv"
        args.repeats, overrides = 1, [f"source.path={DATA}"]
        # a 300-row table has classes of about 60 rows: the step names keep the real k, the smoke run scales it
        ks.update(eval10=2, eval100=5, eval200=10, sanitize=10)
    if not DATA.is_file():
        print(f"skipped: {DATA} is absent (the shared research data is not on this machine)")
        return 0
    if args.whole:
        return whole(SPEC, DATA, [f"source.path={DATA}"], args.repeats, server=args.server)
    steps = [s for s in args.steps.split(",") if s]
    unknown = set(steps) - set(STEPS)
    if unknown:
        parser.error(f"unknown steps {sorted(unknown)}")

    import scipy.sparse  # noqa: F401
    import scipy.spatial  # noqa: F401
    import sklearn.neighbors  # noqa: F401 - imported before timing (see the docstring)

    from ppdp.tasks import ingest, rare, tag, tune, utility
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.sanitize.registry import build_sanitizer
    from ppdp.tasks.shapes import check_privacy

    os.chdir(REPO)  # the spec's source path is relative to its own folder; publish root is not used
    spec = spec_io.load_spec(str(SPEC.relative_to(REPO)), overrides)
    state: dict = {}

    def prepare():
        frame, _ = ingest.ingest(spec)
        roles = tag.tag_columns(frame, spec)
        prot = tag.protect_identifiers(frame, roles, spec.identifiers, None)
        prot, _ = rare.merge_rare_categories(prot, roles, spec.rare_k, ())
        train, test = utility.split_holdout(prot, roles.class_column, spec.utility.test_fraction, spec.seed)
        state.update(roles=roles, train=train, test=test, base=build_sanitizer(spec.method, seed=spec.seed))

    def evaluation(k: int):
        def run():
            return tune.evaluate_value(state["base"], "k", k, state["train"], state["test"], state["roles"],
                                       spec.utility.classifier, spec.tuning.repeats, spec.privacy, False)
        return run

    def sanitize():
        state["release"] = state["base"].with_params(k=ks["sanitize"]).sanitize(state["train"], state["roles"])

    def privacy():
        return check_privacy(state["base"], state["train"], state["release"], state["roles"], spec,
                             utility.join_rows(state["train"], state["test"]))

    def util():
        return utility.evaluate_utility(state["train"], state["release"].frame, state["test"], state["roles"],
                                        spec.utility, spec.seed)

    jobs = {"prepare": prepare, "eval10": evaluation(ks["eval10"]), "eval100": evaluation(ks["eval100"]),
            "eval200": evaluation(ks["eval200"]),
            "sanitize": sanitize, "privacy": privacy, "utility": util}
    prepare()  # every later step needs its output
    if {"privacy", "utility"} & set(steps) and "sanitize" not in steps:
        sanitize()

    rows = []
    for name in steps:
        if args.profile == name:
            prof = cProfile.Profile(time.process_time)  # CPU time: less distorted by the load than wall time
            prof.enable()
            jobs[name]()
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("cumtime").print_stats(30)
        before = _load()
        times, cpu = [], []
        for _ in range(args.repeats):
            t, c = time.perf_counter(), time.process_time()
            jobs[name]()
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        rows.append((name, statistics.median(times), min(times), statistics.median(cpu), before, _load()))
        print(f"  {name:<9} median {rows[-1][1]:7.2f} s  min {rows[-1][2]:7.2f} s  cpu {rows[-1][3]:7.2f} s  "
              f"load {before:.2f} -> {rows[-1][5]:.2f}", flush=True)

    print(f"\nAdult release steps ({len(state['train'])} training rows, {args.repeats} runs each, "
          f"{os.cpu_count()} CPUs)\n")
    print("| step | median s | min s | CPU s (median) | load before | load after |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, med, low, cpu_s, lb, la in rows:
        print(f"| {name} | {med:.2f} | {low:.2f} | {cpu_s:.2f} | {lb:.2f} | {la:.2f} |")
    print(f"| total | {sum(r[1] for r in rows):.2f} | {sum(r[2] for r in rows):.2f} | {sum(r[3] for r in rows):.2f} "
          "| | |")
    if args.smoke:  # the whole-process mode too, one default run
        print()
        return whole(SPEC, DATA, overrides, 1, both=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
