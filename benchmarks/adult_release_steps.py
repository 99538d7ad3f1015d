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

``--smoke`` (``make bench-smoke``): the spec's source replaced by 300 rows of Adult (a generated stand-in where
../shared/data is absent), one run per step.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "adult.yaml"
DATA = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
STEPS = ["prepare", "eval10", "eval100", "eval200", "sanitize", "privacy", "utility"]


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of " + ",".join(STEPS))
    parser.add_argument("--profile", default=None, help="print a cProfile of one run of this step")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
