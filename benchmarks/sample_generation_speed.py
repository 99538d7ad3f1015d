"""Speed of paper 004's sample generation (:class:`ppdp.tasks.sanitize.sample_generation.SampleGeneration`) on
Adult, and of the 1-NN searches it could use.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.sample_generation_speed [--repeats 3]
        [--candidates 40000] [--out benchmarks/results/sample_generation_speed.md]

Target: Adult (30,162 rows) generated in < 3 s in-process on the 2-core machine. Three codings of the same rows:

* numeric: ``benchmarks.datasets.adult()`` (UCI Adult; the 8 text attributes coded as integers, all 14 attributes
  numeric, as the other benchmarks read Adult): 14 encoded columns;
* mixed: UCI Adult with the text attributes nominal (one-hot), the 6 numeric ones numeric, as the release flow
  tags Adult: 104 encoded columns;
* arx: ARX's Adult (``../shared/data/adult/arx/adult.csv``, the same rows, 8 attributes and ``salary-class``):
  ``age`` numeric, the 7 text attributes nominal: 93 encoded columns, one of them numeric (issue 33: the
  nearest-row search's single-column bound ties there, and the old search fell back to a k-d tree over all
  columns for almost every candidate). Skipped when the file is absent.

``sanitize()`` seconds are the median of ``--repeats`` in-process runs (``time.perf_counter``; CPU seconds of
this process beside them: the k-d tree queries use both cores, so CPU can exceed wall). The 1-NN comparison
answers one batch of ``--candidates`` uniform draws (drawn as the method draws them) once per search, each
compared with the exact distances of the others; "two-step as before issue 33" is the search the method used
before (the K = 16 nearest rows on the single columns as a bound, then a k-d tree over all columns wherever the
bound does not decide). The machine is shared: /proc/loadavg is printed before and after, and the native thread
settings (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``) in the header; the k-d tree queries use both cores
(``workers=-1``) whatever they say.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import datasets, smoke
from benchmarks.datasets import load
from benchmarks.timing import timed
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.reports import ColumnTag, Roles
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.sanitize.sample_generation import SampleGeneration, _NearestRow

REPO = Path(__file__).resolve().parents[1]


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def benchmark_roles(frame: pd.DataFrame, label: str) -> Roles:
    """``label`` the class, every other column a quasi-identifier (numeric by dtype, else nominal)."""
    tags = []
    for name in frame.columns:
        if name == label:
            tags.append(ColumnTag(name=name, role=Role.class_, kind=ColumnKind.nominal, source="declared",
                                  reason="label"))
        else:
            kind = ColumnKind.numeric if pd.api.types.is_numeric_dtype(frame[name]) else ColumnKind.nominal
            tags.append(ColumnTag(name=name, role=Role.quasi_identifier, kind=kind, source="declared",
                                  reason="benchmark"))
    return Roles(columns=tags)


def mixed_adult() -> tuple[pd.DataFrame, Roles]:
    frame = pd.read_csv(datasets.SHARED / "adult" / "adult.csv")
    frame = frame[~(frame == "?").any(axis=1)].reset_index(drop=True).rename(columns={"income": "class"})
    return frame, benchmark_roles(frame, "class")


def arx_adult() -> tuple[pd.DataFrame, Roles] | None:
    """ARX's Adult as ARX ships it (``;``-separated): age numeric, the other attributes nominal, salary-class the
    class; None when the file is absent."""
    path = datasets.SHARED / "adult" / "arx" / "adult.csv"
    if not path.is_file():
        return None
    frame = pd.read_csv(path, sep=";")
    return frame, benchmark_roles(frame, "salary-class")


def bound_then_full_tree(x: np.ndarray, blocks: list[slice], k: int = 16):
    """The method's 1-NN search before issue 33: the ``k`` nearest rows on the single columns give a bound (their
    full distances) and, from the k-th single-column distance, a lower bound for every other row; a candidate the
    bound does not decide is searched in a k-d tree over all columns."""
    from scipy.spatial import cKDTree

    full = cKDTree(x)
    single = [b.start for b in blocks if b.stop - b.start == 1]
    hot = [b for b in blocks if b.stop - b.start > 1]
    if not (single and hot and len(x) > k):
        return lambda q: full.query(q, k=1, workers=-1)[1]
    low = cKDTree(x[:, single])
    weight = np.array([2.0 * float(x[:, b].max()) ** 2 for b in hot])

    def codes(m: np.ndarray) -> np.ndarray:
        return np.stack([np.argmax(m[:, b], axis=1) for b in hot], axis=1)

    train = codes(x)

    def search(q: np.ndarray) -> np.ndarray:
        dist, rows = low.query(q[:, single], k=k, workers=-1)
        total = dist**2 + (train[rows] != codes(q)[:, None, :]) @ weight
        every = np.arange(len(q))
        pick = np.argmin(total, axis=1)
        found = rows[every, pick]
        unsure = np.flatnonzero(~(dist[:, -1] ** 2 > total[every, pick]))
        if unsure.size:
            found[unsure] = full.query(q[unsure], k=1, workers=-1)[1]
        return found

    return search


def time_sanitize(frame: pd.DataFrame, roles: Roles, repeats: int) -> tuple[float, float, int]:
    wall, cpu, out = timed(lambda: SampleGeneration(seed=1).sanitize(frame, roles), repeats)
    return wall, cpu, len(out.frame)


def compare_searches(frame: pd.DataFrame, roles: Roles, m: int) -> tuple[list[tuple[str, float, bool]], float, int]:
    """Each 1-NN search on one batch of ``m`` candidates: (name, seconds, same distances as the k-d tree)."""
    from scipy.spatial import cKDTree
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    cls = roles.class_column
    cols = [c for c in frame.columns if c != cls]
    kinds = roles.kinds()
    plans = {c: SampleGeneration._plan(frame[c], kinds[c]) for c in cols}
    encoder = TableEncoder(columns=cols, kinds=kinds).fit(frame)
    x = encoder.transform(frame)
    y = pd.factorize(frame[cls], sort=True)[0]
    rng = np.random.default_rng(0)
    draws = {c: SampleGeneration._draw(plans[c], m, rng) for c in cols}
    q = encoder.transform(pd.DataFrame({c: draws[c] if plans[c].numeric else frame[c].array.take(draws[c])
                                        for c in cols}))
    results: list[tuple[str, float, np.ndarray]] = []

    def run(name: str, search) -> None:
        gc.collect()
        start = time.perf_counter()
        rows = search()
        results.append((name, time.perf_counter() - start, np.linalg.norm(q - x[rows], axis=1)))

    for algorithm in ("brute", "kd_tree"):
        knn = KNeighborsClassifier(n_neighbors=1, algorithm=algorithm, n_jobs=-1).fit(x, y)
        run(f"sklearn KNeighborsClassifier(n_neighbors=1, algorithm={algorithm!r}, n_jobs=-1)",
            lambda knn=knn: knn.kneighbors(q, return_distance=False)[:, 0])
    tree = cKDTree(x)
    run("scipy cKDTree over all encoded columns (workers=-1)", lambda: tree.query(q, k=1, workers=-1)[1])
    reference = results[-1][2]
    blocks = list(encoder.blocks().values())
    before = bound_then_full_tree(x, blocks)
    run("two-step as before issue 33 (k-d tree on the single columns, then over all columns)", lambda: before(q))
    nearest = _NearestRow(x, blocks)
    run(f"_NearestRow (the method's search; structured: {nearest.structured})", lambda: nearest.query(q))
    dt = DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=0).fit(x, y)
    agreement = float(np.mean(dt.predict(q) == y[nearest.query(q)]))
    return [(name, s, bool(np.allclose(d, reference, rtol=0, atol=1e-7))) for name, s, d in results], agreement, \
        x.shape[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--candidates", type=int, default=40_000)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "sample_generation_speed.md")
    smoke.add_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        smoke.tiny_shared("adult/adult.csv", "adult/arx/adult.csv")
        args.repeats, args.candidates, args.out = 1, smoke.SMOKE_ROWS, smoke.workdir() / "sample_generation_speed.md"

    before = loadavg()
    sets = {"numeric": load("Adult"), "mixed": mixed_adult()}
    arx = arx_adult()
    if arx is None:
        print(f"arx: {datasets.SHARED / 'adult' / 'arx' / 'adult.csv'} absent, skipped")
    else:
        sets["arx"] = arx
    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"))
    lines = ["# Sample generation (paper 004): speed on Adult", "",
             "Produced by `.venv/bin/python -m benchmarks.sample_generation_speed` "
             "(`benchmarks/sample_generation_speed.py`).", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; native threads: {threads}; load average (1, 5, 15 min) before: "
             f"{before}.", "",
             "## sanitize() in-process (target < 3 s)", "",
             "| coding | rows in | encoded columns | rows out | runs | wall s (median) | CPU s (median) |",
             "|---|---|---|---|---|---|---|"]
    searches = []
    for name, (frame, roles) in sets.items():
        wall, cpu, rows = time_sanitize(frame, roles, args.repeats)
        found, agreement, width = compare_searches(frame, roles, args.candidates)
        searches.append((name, found, agreement))
        print(f"{name}: sanitize {wall:.2f} s wall (median of {args.repeats}), {cpu:.2f} s CPU; {rows} rows; "
              f"{width} encoded columns; tree and 1-NN agree on {agreement:.1%} of uniform draws")
        for label, seconds, same in found:
            print(f"  {seconds:7.2f} s  {label}  exact: {same}")
        lines.append(f"| {name} | {len(frame):,} | {width} | {rows:,} | {args.repeats} | {wall:.2f} | {cpu:.2f} |")
    lines += ["", f"## 1-NN on one batch of {args.candidates:,} uniform candidates (one run each)", "",
              "| coding | search | seconds | same distances as the cKDTree over all columns |", "|---|---|---|---|"]
    for name, found, _ in searches:
        lines += [f"| {name} | {label} | {seconds:.2f} | {'yes' if same else 'NO'} |" for label, seconds, same in found]
    lines += ["", "Agreement of the entropy tree and 1-NN on uniform draws (what sets the number of draws, about "
              "rows / agreement): " + ", ".join(f"{name} {a:.1%}" for name, _, a in searches) + ".", "",
              f"Load average after: {loadavg()}. The machine is shared by several people: compare CPU seconds "
              "when the load is high."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
