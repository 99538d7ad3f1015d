"""Speed of tasks.privacy.models against pyCANON 1.0.1, and k / l on a large generated table (prints figures).

    .venv/bin/python -m benchmarks.privacy_speed [--rows 10000000] [--repeats 5] [--skip-report]

1. ARX's Adult (30,162 rows; quasi-identifiers age, education, marital-status, occupation, race, sex,
   native-country; sensitive attribute salary-class): each model timed with pyCANON (once: it is slow) and
   with ours (best of ``--repeats``), and the ratio pyCANON / ours; then pyCANON's full report
   (``pycanon.report.get_report_values``, the nine models) against our ``all_measures`` (one shared
   partition). Targets: every model together under 0.5 s, at least 50x pyCANON's report.
2. A generated table (``--rows``, default 10,000,000; 8 integer quasi-identifiers with skewed Adult-like
   cardinalities, one sensitive attribute of 10 values): k and l together via
   ``all_measures(..., measures=("k_anonymity", "l_diversity"))``. Targets: under 10 s, tracemalloc peak
   under 2x the table's size (NumPy reports its buffers to tracemalloc; the peak is of the call alone, the
   table itself excluded).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import time
import tracemalloc
import warnings

import numpy as np
import pandas as pd

from benchmarks.datasets import SHARED
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.privacy import models

QI = ["age", "education", "marital-status", "occupation", "race", "sex", "native-country"]
SA = ["salary-class"]
NAMES = ["k_anonymity", "alpha_k_anonymity", "l_diversity", "entropy_l_diversity", "recursive_c_l_diversity",
         "basic_beta_likeness", "enhanced_beta_likeness", "delta_disclosure", "t_closeness"]


def adult() -> pd.DataFrame:
    path = SHARED / "adult" / "arx" / "adult.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path} (the shared research data is not on this machine)")
    return pd.read_csv(path, sep=";")


def call(module, name: str, frame: pd.DataFrame):
    if name == "k_anonymity":
        return getattr(module, name)(frame, QI)
    return getattr(module, name)(frame, QI, SA)


def best_of(fn, repeats: int) -> tuple[float, object]:
    seconds, value = [], None
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        value = fn()
        seconds.append(time.perf_counter() - started)
    return min(seconds), value


def bench_adult(repeats: int, report: bool) -> None:
    from pycanon import anonymity as pycanon
    from pycanon.report import get_report_values

    frame = adult()
    print(f"ARX Adult: {len(frame):,} rows, {len(QI)} quasi-identifiers, sensitive attribute {SA[0]}")
    print(f"{'model':<26}{'pyCANON s':>11}{'ours s':>11}{'ratio':>10}  value (pyCANON | ours)")
    total_pycanon = 0.0
    for name in NAMES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs_s, theirs = best_of(lambda: call(pycanon, name, frame), 1)
        ours_s, ours = best_of(lambda: call(models, name, frame), repeats)
        total_pycanon += theirs_s
        print(f"{name:<26}{theirs_s:>11.3f}{ours_s:>11.4f}{theirs_s / ours_s:>9.0f}x  {theirs} | {ours}")
    ours_all_s, _ = best_of(lambda: models.all_measures(frame, QI, SA), repeats)
    print(f"{'sum of the nine':<26}{total_pycanon:>11.3f}")
    if report:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # its report passes gen as imp: it prints a message for c
            report_s, _ = best_of(lambda: get_report_values(frame, QI, SA), 1)
        print(f"{'report vs all_measures':<26}{report_s:>11.3f}{ours_all_s:>11.4f}{report_s / ours_all_s:>9.0f}x"
              "  (pycanon.report.get_report_values | models.all_measures)")
    else:
        print(f"{'sum vs all_measures':<26}{total_pycanon:>11.3f}{ours_all_s:>11.4f}"
              f"{total_pycanon / ours_all_s:>9.0f}x  (report skipped: the sum of its nine models instead)")
    print(f"target: all models under 0.5 s -> {'met' if ours_all_s < 0.5 else 'MISSED'} ({ours_all_s:.4f} s)")


def generated(rows: int, seed: int = 0) -> pd.DataFrame:
    """8 skewed integer quasi-identifiers (cardinalities of Adult's) and a 10-valued sensitive attribute."""
    rng = np.random.default_rng(seed)
    cards = {"age": 74, "education": 16, "marital": 7, "occupation": 14, "race": 5, "sex": 2, "country": 41,
             "workclass": 7}
    cols = {}
    for name, card in cards.items():
        weights = 1.0 / np.arange(1, card + 1) ** 1.1  # Zipf-like, as Adult's categories
        cols[name] = rng.choice(card, size=rows, p=weights / weights.sum()).astype(np.int64)
    cols["disease"] = rng.integers(0, 10, rows)
    return pd.DataFrame(cols)


def bench_large(rows: int) -> None:
    frame = generated(rows)
    qi = [c for c in frame.columns if c != "disease"]
    table_bytes = int(frame.memory_usage(deep=True).sum())
    wanted = ("k_anonymity", "l_diversity")
    gc.collect()
    started = time.perf_counter()
    values = models.all_measures(frame, qi, ["disease"], measures=wanted)
    seconds = time.perf_counter() - started
    gc.collect()
    tracemalloc.start()
    models.all_measures(frame, qi, ["disease"], measures=wanted)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n_classes = int(np.bincount(equivalence_class_ids(frame, qi)).size)
    print(f"\nGenerated: {rows:,} rows, {len(qi)} quasi-identifiers, {n_classes:,} classes, "
          f"table {table_bytes / 2**20:,.0f} MiB")
    print(f"k and l: {seconds:.2f} s (target < 10 s: {'met' if seconds < 10 else 'MISSED'}); "
          f"k = {values['k_anonymity']}, l = {values['l_diversity']}")
    print(f"peak memory (tracemalloc): {peak / 2**20:,.0f} MiB = {peak / table_bytes:.2f}x the table "
          f"(target < 2x: {'met' if peak < 2 * table_bytes else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-report", action="store_true", help="do not run pyCANON's full report")
    args = parser.parse_args()
    bench_adult(args.repeats, not args.skip_report)
    bench_large(args.rows)


if __name__ == "__main__":
    main()
