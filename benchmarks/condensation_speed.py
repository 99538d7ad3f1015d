"""Speed and memory of class-wise condensation, and rule-based vs brute-force tuning (prints figures).

    .venv/bin/python -m benchmarks.condensation_speed [--rows 1000000] [--brute-force all|N] [--repeats 3]

Targets on a 2-core machine: Adult (32,561 rows) under 1 s and 1,000,000 generated rows (10 numeric columns,
3 classes) under 30 s at k = 100, peak memory under 4x the input; rule-based tuning at least 10x faster than
brute force over every group size on MAGIC. Memory is the tracemalloc peak of the sanitize call (NumPy
reports its buffers to tracemalloc) divided by the input frame's size. ``--brute-force N`` times N evenly
spread sizes and extrapolates to every size (printed as an extrapolation); ``all`` runs every size.

``--smoke`` (``make bench-smoke``): 300 rows of Adult and MAGIC (Adult generated and MAGIC replaced by
scikit-learn's breast cancer where ../shared/data is absent), 300 generated rows, k = 10, threshold t = 10 for the
tuning, 2 sampled sizes, one run each.
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np
import pandas as pd

from benchmarks import datasets, smoke
from benchmarks.datasets import load, numeric_roles
from ppdp.schemas.spec import PrivacyThresholds, TuningSpec
from ppdp.tasks.sanitize.condensation import Condensation
from ppdp.tasks.tune import class_sizes, evaluate_value, grid_values, sequential, tune
from ppdp.tasks.utility import split_holdout


def adult_all_rows() -> pd.DataFrame:
    """All 32,561 rows of UCI Adult; text attributes coded as integers ('?' a code of its own)."""
    frame = pd.read_csv(datasets.SHARED / "adult" / "adult.csv")
    for col in frame.columns:
        if col != "income" and not pd.api.types.is_numeric_dtype(frame[col]):
            frame[col] = pd.Categorical(frame[col], categories=sorted(frame[col].unique())).codes.astype(np.int64)
    return frame.rename(columns={"income": "class"})


def generated(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, rows)
    x = rng.normal(size=(rows, 10)) + labels[:, None] * 0.5
    frame = pd.DataFrame(x, columns=[f"x{i:02d}" for i in range(10)])
    frame["class"] = np.array(["a", "b", "c"])[labels]
    return frame


K = 100  # the group size timed
MAGIC_T = 480  # the paper's threshold t on MAGIC (the lower end of the tuning search)


def time_sanitize(name: str, frame: pd.DataFrame, k: int, repeats: int) -> None:
    roles = numeric_roles(frame, "class")
    sanitizer = Condensation(variant="class_wise", k=k, seed=0)
    input_bytes = int(frame.memory_usage(deep=True).sum())
    seconds = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        sanitizer.sanitize(frame, roles)
        seconds.append(time.perf_counter() - started)
    gc.collect()
    tracemalloc.start()
    sanitizer.sanitize(frame, roles)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{name:<28} rows={len(frame):>9,} k={k}: seconds min {min(seconds):.3f} median {np.median(seconds):.3f} "
          f"max {max(seconds):.3f} ({repeats} runs); peak memory {peak / 2**20:,.0f} MiB = "
          f"{peak / input_bytes:.2f}x the input ({input_bytes / 2**20:,.0f} MiB)", flush=True)


def tuning_on_magic(brute: str, repeats: int, name: str = "Magic") -> None:
    frame, roles = load(name)
    train, test = split_holdout(frame, "class", 0.1, 0)
    sizes = class_sizes(train, roles)
    t = MAGIC_T
    base = Condensation(variant="class_wise", seed=0)
    evaluate = sequential(lambda k: evaluate_value(base, "k", int(k), train, test, roles, "knn1", repeats))
    common = dict(sanitizer=base, domains=base.domains(train, roles), policy=PrivacyThresholds(k=t), sizes=sizes,
                  evaluate_many=evaluate)
    started = time.perf_counter()
    rule = tune(TuningSpec(strategy="bisect", repeats=repeats, choice="paper"), **common)  # Figure 6 as written
    rule_s = time.perf_counter() - started
    smallest = min(sizes.values())
    every = grid_values(t, smallest, None, integer=True, log=True)
    print(f"MAGIC rule-based: k={rule.chosen}, {len(rule.evaluations)} sizes evaluated in {rule_s:.1f} s "
          f"({repeats} run(s) per size)", flush=True)
    if brute == "all":
        started = time.perf_counter()
        full = tune(TuningSpec(strategy="grid", repeats=repeats), **common)
        brute_s = time.perf_counter() - started
        print(f"MAGIC brute force over every size: k={full.chosen}, {len(every)} sizes in {brute_s:.1f} s "
              f"-> rule-based is {brute_s / rule_s:.1f}x faster (measured)")
    else:
        sample = grid_values(t, smallest, int(brute), integer=True, log=True)
        started = time.perf_counter()
        evaluate(sample)
        sample_s = time.perf_counter() - started
        per_size = sample_s / len(sample)
        estimate = per_size * len(every)
        print(f"MAGIC brute force: {len(sample)} evenly spread sizes took {sample_s:.1f} s ({per_size:.2f} s per "
              f"size); every size would be {len(every)} sizes, about {estimate:.0f} s (EXTRAPOLATED) -> rule-based "
              f"about {estimate / rule_s:.0f}x faster")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--brute-force", default="40", help="'all' or a number of sampled sizes")
    parser.add_argument("--skip-tuning", action="store_true")
    smoke.add_flag(parser)
    args = parser.parse_args()
    global K, MAGIC_T
    tuned = "Magic"
    if args.smoke:
        smoke.tiny_shared("adult/adult.csv", "magic/magic.csv")
        args.rows, args.repeats, args.brute_force, K, MAGIC_T = smoke.SMOKE_ROWS, 1, "2", 10, 10
        if not (datasets.SHARED / "magic" / "magic.csv").is_file():
            tuned = "Breast cancer"
            smoke.say("the tuning runs on scikit-learn's breast cancer (569 rows) in place of MAGIC")
    np.seterr(all="ignore")
    try:
        time_sanitize("Adult (14 attributes)", adult_all_rows(), K, args.repeats)
        magic, _ = load("Magic")
        time_sanitize("MAGIC (10 attributes)", magic, K, args.repeats)
    except FileNotFoundError as exc:
        print(f"skipped the shared data sets: {exc}")
    time_sanitize(f"generated ({args.rows:,} x 10, 3 classes)", generated(args.rows), K, max(1, args.repeats - 2))
    if not args.skip_tuning:
        try:
            tuning_on_magic(args.brute_force, 1, tuned)
        except FileNotFoundError as exc:
            print(f"skipped MAGIC tuning: {exc}")


if __name__ == "__main__":
    main()
