"""MDAV on partitions beside one-machine MDAV: information loss (SSE/SST) on the same table.

    .venv/bin/python -m benchmarks.mdav_partitions [--rows 200000] [--partitions 4] [--part-rows 100000 10000]
        [--k 5] [--smoke]

The partitioned run drives :class:`ppdp.tasks.sanitize.mdav_partitions.MdavOnPartitions` through its methods over
in-memory partitions, as the partitioned plan does (counting passes for the top cuts, one MDAV task per part, each
partition recoded from its share); one machine runs :func:`ppdp.tasks.sanitize.mdav.mdav_groups` on the whole table.
Both losses are measured in one machine's encoding of the whole table (:meth:`Mdav._encode`) with
:func:`ppdp.tasks.sanitize.mdav.information_loss`; the issue's target is a ratio within 2% (1.02). Tables: a
generated mixture (five numbers and one category) and UCI Adult from ``../shared/data`` if present.
``--smoke``: 300 rows, part bound 100, nothing written.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import smoke
from ppdp.api import roles_for
from ppdp.tasks.distributed import inputs
from ppdp.tasks.sanitize import mdav_partitions
from ppdp.tasks.sanitize.mdav import Mdav, information_loss, mdav_groups

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
ADULT_QIS = ["age", "fnlwgt", "education-num", "capital-gain", "hours-per-week", "sex", "race"]


def mixture(rows: int, seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    rng = np.random.default_rng(seed)
    means, scales = rng.normal(scale=4.0, size=(12, 5)), rng.uniform(0.3, 2.0, size=(12, 5))
    comp = rng.choice(12, size=rows, p=rng.dirichlet(np.ones(12)))
    x = means[comp] + rng.normal(size=(rows, 5)) * scales[comp]
    frame = pd.DataFrame(x, columns=[f"x{j}" for j in range(5)])
    frame["group"] = pd.array(np.array(list("abcd"))[comp % 4], dtype="string")
    frame["label"] = pd.array(np.where(x[:, 0] > 0, "yes", "no"), dtype="string")
    return frame, [*frame.columns[:6]]


def counted(frames: list[pd.DataFrame], roles) -> inputs.Counts:
    return inputs.frames_counts(frames, roles)


def partitioned_groups(frames: list[pd.DataFrame], roles, k: int) -> tuple[np.ndarray, int, int]:
    """(each row's group in input order, the counting passes, the parts) of MDAV on the partitions."""
    method, sanitizer = Mdav.on_partitions, Mdav(k=k)
    state = method.start(None, sanitizer, roles, counted(frames, roles))
    passes = 0
    while (job := method.next_pass(state)) is not None:
        passes += 1
        state = method.absorb(state, method.merge([method.count(job, f) for f in frames]))
    fitted = method.fit(state, sanitizer)
    jobs = method.local_jobs(fitted)
    fitted = method.finish_local(fitted, [method.finish_rows(j, lambda i: frames[i]) for j in jobs])
    groups = []
    for i, f in enumerate(frames):
        g = np.full(len(f), -1, dtype=np.int64)
        g[fitted.model[i].positions] = fitted.model[i].group
        groups.append(g)
    return np.concatenate(groups), passes, len(jobs)


def compare(name: str, frame: pd.DataFrame, qis: list[str], k: int, partitions: int, bounds: list[int]) -> None:
    roles = roles_for(frame, quasi_identifiers=qis)
    x = Mdav(k=k)._encode(frame, roles)
    started = time.perf_counter()
    one = information_loss(x, mdav_groups(x, k))
    seconds = time.perf_counter() - started
    print(f"{name}: {len(frame):,} rows, k={k}: one machine SSE/SST {one:.5f} ({seconds:.1f} s)")
    bounds_at = np.linspace(0, len(frame), partitions + 1).astype(int)
    frames = [frame.iloc[a:b].reset_index(drop=True) for a, b in zip(bounds_at[:-1], bounds_at[1:], strict=True)]
    for bound in bounds:
        mdav_partitions.MDAV_PART_ROWS = bound
        started = time.perf_counter()
        groups, passes, parts = partitioned_groups(frames, roles, k)
        seconds = time.perf_counter() - started
        loss = information_loss(x, groups)
        print(f"  partitions={partitions} part bound {bound:,}: {parts} parts, {passes} passes, SSE/SST {loss:.5f}, "
              f"ratio {loss / one if one else float('nan'):.4f} ({seconds:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--part-rows", type=int, nargs="+", default=[mdav_partitions.MDAV_PART_ROWS, 10_000])
    parser.add_argument("--k", type=int, default=5)
    smoke.add_flag(parser)
    args = parser.parse_args()
    adult = ADULT
    if args.smoke:
        adult = smoke.tiny_shared("adult/adult.csv") / "adult" / "adult.csv"
        args.rows, args.part_rows = smoke.SMOKE_ROWS, [100]
        print(f"smoke input: a generated mixture of {args.rows} rows and {adult}")
    compare("mixture", *mixture(args.rows), args.k, args.partitions, args.part_rows)
    if adult.exists():
        frame = pd.read_csv(adult, skipinitialspace=True)
        qis = [q for q in ADULT_QIS if q in frame.columns]
        compare("adult", frame[qis].dropna().reset_index(drop=True), qis, args.k, args.partitions, args.part_rows)
    else:
        print(f"adult: {adult} absent, skipped")


if __name__ == "__main__":
    main()
