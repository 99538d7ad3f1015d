"""``ppdp validate`` on a partitioned Parquet table too large to hold comfortably as one frame: 100,000,000 rows x
8 quasi-identifiers + 1 sensitive attribute, as a folder of Parquet files, measured serially and on a 2-worker Dask
LocalCluster (prints figures; writes ``benchmarks/results/partitioned_validate.md``).

    .venv/bin/python -m benchmarks.partitioned_validate [--rows 100000000] [--files 100] [--dir /tmp/...]
                                                        [--parts generate,cli,phases,dask] [--keep]

1. ``generate``: the folder (``--dir``, default ``/tmp/ppdp-partitioned-bench``), one file at a time from
   ``np.random.default_rng([seed, file])`` (memory: one file's columns). Columns, independent, with skewed
   census-like marginals (fixed by ``--seed``): age 0-99 (int16), sex (2), zip3 (900, Zipf-like popularity),
   education (16), marital (7), race (5), occupation (15), native (40, one value ~90%); sensitive attribute
   disease (10 values, skewed). Text columns are written as Parquet dictionary-encoded strings, row groups of
   262,144 rows. Not committed; deleted at the end unless ``--keep``.
2. ``serial`` (not in the default ``--parts``: ``cli`` measures the same serial run): a fresh Python process
   runs :func:`ppdp.tasks.privacy.partitioned.validate_folder` with k = 5 and l = 2 (every model is computed;
   the gates are k and l); it reports wall seconds around the call, CPU seconds and its peak RSS
   (``resource.getrusage(RUSAGE_SELF).ru_maxrss``).
3. ``phases``: the same work, serial, with each step timed (pass 1 value counts, checks and plan, pass 2 cell
   counts, the combine tree, measuring) and the size of the per-partition and combined count tables.
4. ``dask``: a fresh process starts ``LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`` on the
   loopback and runs the same call with its address; it reports the wall seconds of the call (cluster start
   excluded, timed apart), the driver's peak RSS, and each worker's peak RSS (``client.run`` of ``getrusage``
   in the worker processes) before the cluster closes.
5. ``cli``: ``ppdp validate DIR --qi ... --sa disease --k 5 --l 2`` under ``/usr/bin/time -v`` (whole process:
   Python start-up and imports included), serial; its printed lines go into the results file.

The machine is shared: the 1-minute load average is printed with each figure.

``--smoke`` (``make bench-smoke``): 300 generated rows in 2 files, every part, the folder and the results file in a
temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks import smoke

QI = ["age", "sex", "zip3", "education", "marital", "race", "occupation", "native"]
SA = ["disease"]
RESULTS = Path(__file__).resolve().parent / "results" / "partitioned_validate.md"
DEFAULT_DIR = Path("/tmp/ppdp-partitioned-bench")
ROW_GROUP = 262_144


def _zipf(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return p / p.sum()


def marginals(seed: int) -> dict[str, tuple[list, np.ndarray]]:
    """Each column's values and probabilities (fixed by ``seed``)."""
    rng = np.random.default_rng(seed)
    ages = np.arange(100)
    p_age = np.exp(-0.5 * ((ages - 38) / 20.0) ** 2) + 0.05  # a working-age bulge, a tail to 99
    zips = [f"{z:03d}" for z in rng.permutation(np.arange(100, 1000))]  # 900 zip3 areas, popularity ~ 1/rank^0.9
    return {
        "age": (ages.tolist(), p_age / p_age.sum()),
        "sex": (["female", "male"], np.array([0.51, 0.49])),
        "zip3": (zips, _zipf(900, 0.9)),
        "education": ([f"edu-{i:02d}" for i in range(16)], _zipf(16, 1.1)),
        "marital": ([f"marital-{i}" for i in range(7)], np.array([0.46, 0.33, 0.14, 0.03, 0.03, 0.008, 0.002])),
        "race": ([f"race-{i}" for i in range(5)], np.array([0.85, 0.09, 0.03, 0.02, 0.01])),
        "occupation": ([f"occ-{i:02d}" for i in range(15)], _zipf(15, 0.6)),
        "native": ([f"country-{i:02d}" for i in range(40)], np.r_[0.9, 0.1 * _zipf(39, 1.2)]),
        "disease": ([f"disease-{i}" for i in range(10)], _zipf(10, 0.8)),
    }


def generate(folder: Path, rows: int, files: int, seed: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    spec = marginals(seed)
    started = time.perf_counter()
    per_file = -(-rows // files)
    written = 0
    for f in range(files):
        n = min(per_file, rows - written)
        if n <= 0:
            break
        rng = np.random.default_rng([seed, f])
        arrays = {}
        for name, (values, p) in spec.items():
            codes = rng.choice(len(values), size=n, p=p)
            if name == "age":
                arrays[name] = pa.array(codes.astype(np.int16))
            else:
                arrays[name] = pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(values))
        pq.write_table(pa.table(arrays), folder / f"part-{f:04d}.parquet", row_group_size=ROW_GROUP)
        written += n
    size = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    return {"rows": written, "files": files, "seconds": time.perf_counter() - started, "bytes": size,
            "maxrss_mib": _maxrss_mib(resource.RUSAGE_SELF)}


# -- measurements (each in a fresh process) ---------------------------------------------------------------------
def _maxrss_mib(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime + ch.ru_utime + ch.ru_stime


def _summary(result) -> dict:
    r = result.report
    return {"rows": r.records, "classes": r.groups, "k": r.k, "l": r.measures.l_diversity,
            "cells": result.cells, "partitions": result.partitions,
            "sample_uniques": r.risk.sample_uniques, "prosecutor_max": r.risk.prosecutor_max,
            "gates": [(g.name, g.passed, g.value, g.worst) for g in r.gates]}


def measure_serial(folder: Path) -> dict:
    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.privacy.partitioned import validate_folder

    started = time.perf_counter()
    result = validate_folder(folder, QI, SA, PrivacyThresholds(k=5, l=2))
    seconds = time.perf_counter() - started
    return {"mode": "serial", "seconds": seconds, "cpu_seconds": _cpu_seconds(),
            "maxrss_mib": _maxrss_mib(resource.RUSAGE_SELF), "load": os.getloadavg()[0], **_summary(result)}


def measure_phases(folder: Path) -> dict:
    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.privacy import partitioned as P

    thresholds = PrivacyThresholds(k=5, l=2)
    out: dict = {"mode": "phases"}
    t = time.perf_counter()
    files = P.partition_files(folder)
    schema = P.common_schema(files)
    out["list_and_schemas"] = time.perf_counter() - t
    columns = [*QI, *SA]
    t = time.perf_counter()
    first = [P.column_counts(f, columns) for f in files]
    out["pass1_value_counts"] = time.perf_counter() - t
    t = time.perf_counter()
    merged = [P._merge_values([c[i] for _, c in first], P._same_type(schema.field(columns[i]).type))
              for i in range(len(columns))]
    plan = P.build_plan(str(folder), schema, QI, SA, merged, [])
    out["checks_and_plan"] = time.perf_counter() - t
    out["key_words"] = len(plan.layout.words)
    out["radices"] = list(plan.layout.radices)
    t = time.perf_counter()
    parts = [P.cell_counts(f, plan) for f in files]
    out["pass2_cell_counts"] = time.perf_counter() - t
    out["cells_per_partition_mean"] = float(np.mean([len(p) for p in parts]))
    out["cells_all_partitions"] = int(sum(len(p) for p in parts))
    out["bytes_all_partitions_mib"] = sum(p.nbytes for p in parts) / 2**20
    t = time.perf_counter()
    level = parts
    while len(level) > 1:
        level = [P.merge_cells(level[i:i + P.FANIN]) for i in range(0, len(level), P.FANIN)]
    cells = level[0]
    del parts, level
    out["combine_tree"] = time.perf_counter() - t
    out["cells_combined"] = len(cells)
    out["bytes_combined_mib"] = cells.nbytes / 2**20
    t = time.perf_counter()
    report = P.measure_cells(cells, plan, thresholds)
    out["measure_and_gates"] = time.perf_counter() - t
    out.update(k=report.k, l=report.measures.l_diversity, classes=report.groups,
               maxrss_mib=_maxrss_mib(resource.RUSAGE_SELF), load=os.getloadavg()[0])
    out["note"] = "this run holds every partition's table before combining; validate_folder merges as it goes"
    return out


def _task_stream_summary(stream: list[dict]) -> dict:
    """Compute seconds per kind of task (from the keys' function names), per worker, and the transfers."""
    from dask.utils import key_split

    kinds: dict[str, float] = {}
    workers: dict[str, float] = {}
    transfer = 0.0
    for task in stream:
        name = key_split(task["key"])
        for ss in task["startstops"]:
            seconds = ss["stop"] - ss["start"]
            if ss["action"] == "compute":
                kinds[name] = kinds.get(name, 0.0) + seconds
                workers[task["worker"]] = workers.get(task["worker"], 0.0) + seconds
            elif ss["action"] == "transfer":
                transfer += seconds
    return {"compute_seconds_by_task": {k: round(v, 1) for k, v in sorted(kinds.items())},
            "compute_seconds_by_worker": sorted(round(v, 1) for v in workers.values()),
            "transfer_seconds": round(transfer, 1)}


def measure_dask(folder: Path, workers: int) -> dict:
    from distributed import Client, LocalCluster, get_task_stream

    from ppdp.schemas.privacy import PrivacyThresholds
    from ppdp.tasks.privacy.partitioned import validate_folder

    t = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        start_seconds = time.perf_counter() - t
        started = time.perf_counter()
        with get_task_stream(client) as stream:
            result = validate_folder(folder, QI, SA, PrivacyThresholds(k=5, l=2),
                                     cluster=cluster.scheduler_address)
        seconds = time.perf_counter() - started
        worker_rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        worker_cpu = client.run(lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2]))
    return {"mode": f"dask, {workers} workers", "seconds": seconds, "cluster_start_seconds": start_seconds,
            "driver_maxrss_mib": _maxrss_mib(resource.RUSAGE_SELF),
            "worker_maxrss_mib": sorted(worker_rss.values()), "worker_cpu_seconds": sorted(worker_cpu.values()),
            "load": os.getloadavg()[0], **_task_stream_summary(stream.data), **_summary(result)}


def run_cli(folder: Path) -> dict:
    ppdp = Path(sys.executable).with_name("ppdp")
    cmd = ["/usr/bin/time", "-v", str(ppdp), "validate", str(folder), "--qi", ",".join(QI), "--sa", SA[0],
           "--k", "5", "--l", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr).group(1)
    parts = [float(x) for x in wall.split(":")]
    seconds = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 1024
    user = float(re.search(r"User time \(seconds\): (\S+)", done.stderr).group(1))
    system = float(re.search(r"System time \(seconds\): (\S+)", done.stderr).group(1))
    return {"mode": "cli (serial)", "exit": done.returncode, "seconds": seconds, "cpu_seconds": user + system,
            "maxrss_mib": rss, "stdout": done.stdout, "load": os.getloadavg()[0], **_parse_cli(done.stdout)}


def _parse_cli(stdout: str) -> dict:
    """Rows, classes, k and l from the command's printed report."""
    head = re.search(r": (\d+) rows, (\d+) equivalence classes", stdout)
    k = re.search(r"^\s+k_anonymity\s+(\d+)", stdout, re.MULTILINE)
    l_ = re.search(r"^\s+l_diversity\s+(\d+)", stdout, re.MULTILINE)
    if not (head and k and l_):
        return {}
    return {"rows": int(head.group(1)), "classes": int(head.group(2)), "k": int(k.group(1)), "l": int(l_.group(1))}


def _fresh(part: str, folder: Path, workers: int) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.partitioned_validate", "--measure", part, "--dir", str(folder),
           "--workers", str(workers)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    if done.returncode != 0:
        raise RuntimeError(f"{part} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the results file -------------------------------------------------------------------------------------------
def write_results(figures: dict, args: argparse.Namespace) -> None:
    g, s, ph, d, c = (figures.get(k) for k in ("generate", "serial", "phases", "dask", "cli"))
    if c:
        c = {**_parse_cli(c.get("stdout", "")), **c}
    lines = [f"# `ppdp validate` on a partitioned Parquet table ({args.rows:,} rows)", "",
             "Produced by `.venv/bin/python -m benchmarks.partitioned_validate` "
             f"(`--rows {args.rows} --files {args.files}`), on this machine: "
             f"{len(os.sched_getaffinity(0))} cores (shared with other users), "
             f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB RAM, "
             f"Python {sys.version.split()[0]}.", ""]
    if g:
        lines += ["## Data", "",
                  f"{g['rows']:,} rows in {g['files']} Parquet files ({g['bytes'] / 2**20:,.0f} MiB on disk), "
                  f"generated in {g['seconds']:.0f} s (peak RSS {g['maxrss_mib']:,.0f} MiB: one file at a time). "
                  "8 quasi-identifiers (age 0-99, sex 2, zip3 900, education 16, marital 7, race 5, occupation "
                  "15, native 40; independent, skewed census-like marginals) and 1 sensitive attribute (disease, 10 "
                  "values). Seeded, under /tmp, deleted after measuring."
                  + (f" {d['classes']:,} classes for {d['rows']:,} rows, {d['sample_uniques']:.0%} of the rows alone "
                     f"in their class (k = {d['k']}): a hard case for the combine step, whose size is the number of "
                     "distinct cells." if d else ""), ""]
    lines += ["## Figures", "", "| run | wall s | CPU s | peak RSS MiB | rows | classes | cells | k | l | load |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for f in (s, d, c):
        if not f:
            continue
        rss = f.get("maxrss_mib")
        if "worker_maxrss_mib" in f:
            rss_text = (f"driver {f['driver_maxrss_mib']:,.0f}; workers "
                        + " / ".join(f"{w:,.0f}" for w in f["worker_maxrss_mib"]))
            cpu = "workers " + " / ".join(f"{w:.0f}" for w in f["worker_cpu_seconds"])
        else:
            rss_text, cpu = f"{rss:,.0f}", f"{f['cpu_seconds']:.0f}"
        lines.append(f"| {f['mode']} | {f['seconds']:.1f} | {cpu} | {rss_text} | {f.get('rows', '')} | "
                     f"{f.get('classes', '')} | {f.get('cells', '')} | {f.get('k', '')} | {f.get('l', '')} | "
                     f"{f['load']:.2f} |")
    lines += ["", "When: " + "; ".join(f"{f['mode']}: {f['when']}" for f in (s, d, c, ph) if f and "when" in f)
              + ". The load average is the 1-minute figure at the end of each run (2 cores: above 2 means other "
              "users' processes were waiting for a core too)."]
    if d:
        lines += ["", f"Dask cluster start (2 worker processes): {d['cluster_start_seconds']:.1f} s, not included "
                      "in the wall seconds above."]
        if "compute_seconds_by_task" in d:
            tasks = ", ".join(f"{k} {v:.1f} s" for k, v in d["compute_seconds_by_task"].items())
            lines += ["", f"Dask task stream (`distributed.get_task_stream`): compute seconds by task: {tasks}; by "
                          f"worker: {' / '.join(f'{v:.1f}' for v in d['compute_seconds_by_worker'])} s; transfers "
                          f"between workers: {d['transfer_seconds']:.1f} s."]
    if ph:
        lines += ["", "## Where the serial time goes (`phases` run)", "", "| step | seconds |", "|---|---|"]
        for key in ("list_and_schemas", "pass1_value_counts", "checks_and_plan", "pass2_cell_counts",
                    "combine_tree", "measure_and_gates"):
            lines.append(f"| {key.replace('_', ' ')} | {ph[key]:.1f} |")
        lines += ["", f"Key: {ph['key_words']} int64 word(s) per row (radices {ph['radices']}). Per-partition "
                      f"count tables: {ph['cells_per_partition_mean']:,.0f} cells on average, "
                      f"{ph['cells_all_partitions']:,} in all ({ph['bytes_all_partitions_mib']:,.0f} MiB); combined: "
                      f"{ph['cells_combined']:,} cells ({ph['bytes_combined_mib']:,.0f} MiB). Peak RSS of the "
                      f"phases run {ph['maxrss_mib']:,.0f} MiB ({ph['note']})."]
    if ph:
        lines += ["", "## Reading the figures", "", *_reading(ph, d, c)]
    if c:
        lines += ["", "## The command's output (serial)", "", "```", c["stdout"].rstrip(), "```"]
    lines += ["", "## Method", "", *METHOD, "", "## How the work spreads across workers", "", *SPREAD, ""]
    RESULTS.write_text("\n".join(lines), encoding="utf-8")


def _reading(ph: dict, d: dict | None, c: dict | None) -> list[str]:
    """Derived figures, each computed from the measured ones above (labelled when it is an estimate)."""
    counting = ph["pass1_value_counts"] + ph["pass2_cell_counts"]
    tail = ph["combine_tree"] + ph["measure_and_gates"]
    total = counting + tail + ph["list_and_schemas"] + ph["checks_and_plan"]
    rows = (c or d or {}).get("rows") or 0
    out = [f"* Serial (phases run): reading and counting the rows (passes 1 and 2) took {counting:.1f} s"
           + (f" ({counting / rows * 1e9:.0f} ns a row)" if rows else "")
           + f"; combining the count tables and measuring took {tail:.1f} s ({tail / total:.0%} of {total:.1f} s). "
           f"The second part scales with the number of distinct cells ({ph['cells_combined']:,}), not rows."]
    if d and "compute_seconds_by_task" in d:
        busy = sum(d["compute_seconds_by_worker"])
        cpu = sum(d["worker_cpu_seconds"])
        share = cpu / busy if busy else float("nan")  # a tiny table (smoke runs): no measurable task time
        out.append(f"* Dask: the workers' tasks ran {busy:.0f} s (summed over workers) on {cpu:.0f} CPU seconds, "
                   f"i.e. {share:.0%} of a core while running: on this shared 2-core machine (load "
                   f"{d['load']:.1f} at the end) two workers plus Arrow's decoding threads and other users' "
                   "processes compete for the same two cores, and two workers were not faster than one process "
                   f"here. CPU seconds: serial {c['cpu_seconds']:.0f} s (whole process), Dask workers {cpu:.0f} s; "
                   f"transfers between workers account for {d['transfer_seconds']:.1f} s of the task stream, the "
                   "rest of the difference was not broken down (serialization, memory management and contention "
                   "are candidates)."
                   if c else "")
    if ph:
        out.append(f"* Estimate, not measured: on W otherwise idle cores, counting would take about {counting:.0f}/W "
                   f"s and the combine and measuring tail about {tail:.0f} s (the first merge levels run in "
                   "parallel, the last merge and the measuring on one worker), so about "
                   f"{counting / 2 + tail:.0f} s with 2 workers and {counting / 8 + tail:.0f} s with 8, from the "
                   "serial phase times above; the tail is what to shrink next (see below).")
    return out


METHOD = [
    "Each run is a fresh Python process (`--measure serial|phases|dask`), so its peak RSS "
    "(`resource.getrusage(RUSAGE_SELF).ru_maxrss`) is that of the validation alone plus imports. Seconds are "
    "`time.perf_counter()` around `validate_folder` (one run each: the data is large and the machine shared; the "
    "load average at the end of each run is in the table). For Dask, the workers' peak RSS and CPU seconds come "
    "from `client.run(getrusage)` in each worker process before the cluster closes. The `cli` row is the whole "
    "`ppdp validate` process under `/usr/bin/time -v` (start-up and imports included). Every model is computed in "
    "every run (k, alpha, distinct/entropy/recursive l, t, delta, beta, prosecutor and marketer risk); the gates "
    "are k = 5 and l = 2.",
]
SPREAD = [
    "* Both passes are one task per partition (file) with no communication between tasks: pass 1 returns each "
    "column's distinct values and counts (kilobytes here), pass 2 returns the partition's cell table (its distinct "
    "(quasi-identifier, sensitive) keys as int64 words plus counts: 16 bytes a cell). With W workers this part "
    "divides by about W, as long as W <= the number of files.",
    "* Between the passes the driver merges the value counts into one global dictionary per column (so every "
    "partition codes a value alike and keys can be summed without any further translation) and scatters the plan "
    "to every worker once.",
    "* The combine is a tree of merge tasks (fan-in 8) on the workers; its output has one entry per distinct cell, "
    "whatever the number of rows. The last merge and the measuring (every model, from the combined counts) run on "
    "one worker, and only the report returns to the driver; this tail is serial, and it is most of the time when "
    "nearly every row is its own cell, as here.",
    "* Beyond one worker's memory (about 16 bytes a cell for the table, plus the models' working arrays), the next "
    "step would be to range-partition the cells by their quasi-identifier key (split points from a sample of keys) "
    "so that each worker owns a contiguous key range: a class never straddles two ranges, so k, the l variants, "
    "alpha and the risk figures become minima, maxima and sums over ranges, and class numbers stay global (the "
    "range's offset plus the local number); t-closeness, delta and beta also need the table-wide sensitive "
    "distribution, which pass 1 already gives. Not implemented.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--parts", default="generate,cli,phases,dask")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    smoke.add_flag(parser)
    args = parser.parse_args()
    global RESULTS
    if args.smoke:
        args.rows, args.files, args.dir = smoke.SMOKE_ROWS, 2, smoke.workdir() / "partitioned"
        RESULTS = smoke.workdir() / RESULTS.name
        smoke.say(f"{args.rows} generated rows in {args.files} Parquet files (seed {args.seed})")
    if args.measure:
        fn = {"serial": measure_serial, "phases": measure_phases, "dask": lambda f: measure_dask(f, args.workers),
              "cli": run_cli}[args.measure]
        print(json.dumps(fn(args.dir)))
        return
    parts = args.parts.split(",")
    figures: dict = {}
    figures_path = args.dir.with_suffix(".figures.json")  # figures of earlier runs, kept beside the data
    if figures_path.exists():
        figures = json.loads(figures_path.read_text())
    try:
        if "generate" in parts:
            figures["generate"] = generate(args.dir, args.rows, args.files, args.seed)
            print(json.dumps(figures["generate"]), flush=True)
        for part in ("serial", "phases", "dask", "cli"):
            if part in parts:
                figures[part] = {**_fresh(part, args.dir, args.workers), "when": time.strftime("%Y-%m-%d %H:%M")}
                print(json.dumps({k: v for k, v in figures[part].items() if k != "stdout"}), flush=True)
                figures_path.write_text(json.dumps(figures))
        if any(part in figures for part in ("serial", "phases", "dask", "cli")):
            write_results(figures, args)
            print(f"wrote {RESULTS}")
    finally:
        if not args.keep and args.dir.exists():
            shutil.rmtree(args.dir)


if __name__ == "__main__":
    main()
