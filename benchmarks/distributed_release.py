"""The distributed release: ``ppdp run SPEC`` whose ``source.path`` is a folder of Parquet files, on a Dask
LocalCluster of 2 worker processes (the spec's ``runner: {kind: dask, workers: 2}``), for generalization and
Mondrian, at several sizes (prints figures; writes ``benchmarks/results/distributed_release.md``).

    .venv/bin/python -m benchmarks.distributed_release --rows 1000000 --rows 10000000 --files 20
        [--methods generalization,mondrian] [--workers 2] [--seed 0] [--timeout SECONDS] [--keep] [--out FILE]

For each size (``--rows``, repeatable; ``--files`` once for every size, or once per size):

1. ``generate``: a seeded table in a temporary folder, written file by file and row group by row group (memory: one
   row group's columns), removed after the size's runs unless ``--keep``: 8 quasi-identifiers (age 0-99, sex,
   zip3, education, marital, race, occupation, native), 1 sensitive attribute (disease) and a class (income, which
   depends on education, age and occupation). Unlike ``benchmarks/partitioned_validate.py`` (whose file-by-file
   writer this copies; its ``generate`` hard-wires its own marginals), the marginals are chosen so that k = 5..10
   is reachable with modest generalization: zip3 has 36 codes under 3 leading digits, native 6 values, marital
   status depends on age, occupation on education (see :data:`MARGINALS`).
2. ``spec``: one release spec per method (:func:`spec_text`; quasi-identifiers, sensitive and class declared,
   automatic hierarchies, ``privacy.k`` 10, the publish root in the temporary folder, ``runner: {kind: dask,
   workers: 2}``), checked as ``ppdp run`` checks a spec before any work (``load_spec`` then ``preflight``: there is
   no ``ppdp check`` command): first with ``source.path`` set to one of the Parquet files (the spec is valid today),
   then as written, on the folder.
3. ``run``: ``ppdp run SPEC --timings`` in a fresh process (its own process group), with ``PPDP_SERIES_KEY``,
   ``PPDP_AUDIT_HMAC_KEY``, ``PPDP_CONFIG_DIR`` and ``PREFECT_HOME`` in the temporary folder, a publish root of its
   own (removed after the run unless ``--keep``), and the Prefect API at ``PREFECT_API_URL``; without it, a server
   started here WITH its services for the whole run (:class:`PrefectServer`): neither its start nor its memory is
   in the figures, and its task-run recorder keeps each task's times. Every 0.25 s the process and all its
   descendants are sampled (psutil RSS, and the kernel's high-water mark ``VmHWM`` from ``/proc/PID/status``, so a
   peak between samples is not lost): the ``ppdp`` process is the driver (the Dask scheduler and nannies live in
   it), a descendant whose command line holds ``spawn``/``distributed`` is a Dask worker, any other descendant is
   reported apart. Recorded: the wall seconds from spawn to exit, the exit code, the last stderr line of a failed
   run, the peak RSS of each process, the ``--timings`` breakdown (:func:`parse_timings`: the driver's steps only,
   since a step run on a Dask worker is timed in the worker process), and the task runs of the flow run as the
   Prefect server recorded them (:func:`task_runs`: the per-partition tasks on the workers included).
   Just before each run, the floor (:data:`FLOOR`, :func:`floor_run`): one process reads every file with pyarrow,
   groups by the quasi-identifiers and writes the rows as Parquet, timed as a whole process; each run is printed
   and reported as a multiple of it, in wall seconds and in CPU seconds (:func:`child_cpu`: ppdp and the Dask
   workers it reaps; on a shared machine the CPU ratio moves less with the load), with the load averages.
4. ``results``: ``benchmarks/results/distributed_release.md`` (:func:`results_text`), every figure from the run:
   one row per (method, size), the growth between sizes, and an ESTIMATE for more workers (:func:`estimate`).

A failed run (any non-zero exit) is reported in the table with its exit code and last stderr line, and the script
exits 1 after writing the results.

``--smoke`` (``make bench-smoke``): 3,000 rows in 3 files, both methods, the results file in a temporary folder
(printed, nothing written into ``benchmarks/results/``). Under ``make bench-smoke`` the runs use the driver's shared
Prefect server, which runs ``--no-services`` and so records no task runs (the estimate then says so). A run that
times out (``--timeout``; 150 s in a smoke run, where one takes about 20 s) is sent SIGUSR1 first, so that ppdp
prints every thread's stack, and its stderr's last lines go into the results. A smoke run that times out is
reported line by line through ``make bench-smoke`` (``smoke warning:``, shown whether or not the script passes)
and run once more; the second attempt decides. One such timeout was seen in CI (mondrian, 2026-11-28); none in
17 Mondrian runs here the day after.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks import smoke
from benchmarks.release_overhead import healthy

REPO = Path(__file__).resolve().parents[1]
PPDP = Path(sys.executable).with_name("ppdp")
RESULTS = REPO / "benchmarks" / "results" / "distributed_release.md"
METHODS = ("generalization", "mondrian")  # the default
OPTIONAL = ("mdav",)  # with --methods
ROW_GROUP = 262_144  # rows per Parquet row group, and per generation chunk (bounded memory)
SMOKE_ROWS, SMOKE_FILES = 3_000, 3
SAMPLE_SECONDS = 0.25
SMOKE_TIMEOUT = 150.0  # seconds per ppdp run in a smoke run
STACKS_SECONDS = 2.0  # after SIGUSR1, before SIGTERM: time to print the stacks
K = 10
MDAV_K = 12  # MDAV's groups average about k records: at k = 10 the safety floor's average risk over the
# quasi-identifiers (at most 0.09) refuses the release (0.096 measured at 1M rows); 12 publishes at privacy k = 10

QI = ["age", "sex", "zip3", "education", "marital", "race", "occupation", "native"]
SENSITIVE = "disease"
CLASS = "income"


# -- the data ----------------------------------------------------------------------------------------------------
def _zipf(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** s
    return p / p.sum()


def _norm(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return p / p.sum()


EDUCATION = smoke.EDUCATION  # UCI Adult's 16 levels, lowest first (declared as the column's order)
MARITAL = smoke.CATEGORIES["marital-status"]  # 7; index 1 is Never-married
OCCUPATION = smoke.CATEGORIES["occupation"]  # 14
_AGES = np.arange(100)
_ZIP_DIGITS = (_norm([0.5, 0.3, 0.2]), _zipf(4, 1.0), _zipf(3, 1.0))  # zip3 = 3 leading x 4 x 3 codes
MARGINALS: dict[str, tuple[list, np.ndarray]] = {
    "age": (_AGES.tolist(), _norm(np.exp(-0.5 * ((_AGES - 38) / 20.0) ** 2) + 0.05)),  # working-age bulge
    "sex": (["female", "male"], _norm([0.51, 0.49])),
    "zip3": ([f"{a + 1}{b}{c}" for a in range(3) for b in range(4) for c in range(3)],
             np.einsum("i,j,k->ijk", *_ZIP_DIGITS).ravel()),
    "education": (EDUCATION, _norm(np.r_[np.full(8, 0.02), 0.32, 0.22, np.full(6, 0.04)])),
    "marital": (MARITAL, _norm([0.46, 0.33, 0.14, 0.03, 0.03, 0.008, 0.002])),  # aged 25 and over
    "race": (smoke.CATEGORIES["race"], _norm([0.85, 0.09, 0.03, 0.02, 0.01])),
    "occupation": (OCCUPATION, _zipf(14, 0.7)),  # below Bachelors
    "native": (smoke.CATEGORIES["native-country"], _norm([0.9, 0.04, 0.02, 0.015, 0.015, 0.01])),
    SENSITIVE: ([f"disease-{i}" for i in range(10)], _zipf(10, 0.8)),
    CLASS: (["<=50K", ">50K"], _norm([0.75, 0.25])),  # the draw below sets each row's; these are the labels
}
"""Each column's values and (marginal or baseline) probabilities. Dependencies drawn in :func:`_draw`: under 25,
marital status is Never-married with probability 0.9; from Bachelors up, occupation follows :data:`_OCC_HIGH`
(professional and managerial first); income is >50K with probability sigmoid(0.55 (education rank - 10) + 0.06
(min(age, 60) - 40) + 0.6 [professional or managerial]) (0 under 16)."""
_YOUNG_MARITAL = _norm([0.04, 0.9, 0.03, 0.01, 0.005, 0.01, 0.005])
_OCC_HIGH = _norm(_zipf(14, 1.2)[np.argsort([1, 0, 3, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13])])
_BACHELORS = EDUCATION.index("Bachelors")
_PROFESSIONAL = [OCCUPATION.index("Prof-specialty"), OCCUPATION.index("Exec-managerial")]


def _draw(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Codes (indices into :data:`MARGINALS`' values) of ``n`` rows."""
    def pick(name: str, p: np.ndarray | None = None) -> np.ndarray:
        values, base = MARGINALS[name]
        return rng.choice(len(values), size=n, p=base if p is None else p)

    age = pick("age")
    edu = pick("education")
    marital = np.where(age < 25, pick("marital", _YOUNG_MARITAL), pick("marital"))
    occupation = np.where(edu >= _BACHELORS, pick("occupation", _OCC_HIGH), pick("occupation"))
    score = 0.55 * (edu - 10) + 0.06 * (np.minimum(age, 60) - 40) + 0.6 * np.isin(occupation, _PROFESSIONAL)
    income = ((rng.random(n) < 1 / (1 + np.exp(-score))) & (age >= 16)).astype(np.int64)
    return {"age": age, "sex": pick("sex"), "zip3": pick("zip3"), "education": edu, "marital": marital,
            "race": pick("race"), "occupation": occupation, "native": pick("native"), SENSITIVE: pick(SENSITIVE),
            CLASS: income}


def generate(folder: Path, rows: int, files: int, seed: int) -> dict:
    """``rows`` rows in ``files`` Parquet files ``part-NNNN.parquet`` under ``folder`` (made afresh), each file
    written row group by row group from ``np.random.default_rng([seed, file, group])``: memory holds one row group.
    Text columns are dictionary-encoded strings, age int16."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    schema = pa.schema([("age", pa.int16())] + [(name, pa.dictionary(pa.int32(), pa.string()))
                                                 for name in MARGINALS if name != "age"])
    dictionaries = {name: pa.array([str(v) for v in values]) for name, (values, _) in MARGINALS.items()}
    started = time.perf_counter()
    per_file = -(-rows // files)
    written = positives = 0
    for f in range(files):
        n_file = min(per_file, rows - written)
        if n_file <= 0:
            break
        with pq.ParquetWriter(folder / f"part-{f:04d}.parquet", schema) as writer:
            for g, start in enumerate(range(0, n_file, ROW_GROUP)):
                n = min(ROW_GROUP, n_file - start)
                codes = _draw(np.random.default_rng([seed, f, g]), n)
                positives += int(codes[CLASS].sum())
                arrays = [pa.array(codes["age"].astype(np.int16))] + [
                    pa.DictionaryArray.from_arrays(pa.array(codes[name].astype(np.int32)), dictionaries[name])
                    for name in MARGINALS if name != "age"]
                writer.write_table(pa.Table.from_arrays(arrays, schema=schema), row_group_size=ROW_GROUP)
        written += n_file
    return {"rows": written, "files": len(list(folder.glob("*.parquet"))), "seconds": time.perf_counter() - started,
            "bytes": sum(p.stat().st_size for p in folder.glob("*.parquet")), "income_share": positives / written,
            "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def data_description() -> str:
    """The generated table's columns, from :data:`MARGINALS` (no figure written by hand)."""
    card = {name: len(values) for name, (values, _) in MARGINALS.items()}
    combos = math.prod(card[q] for q in QI)
    top = {name: float(p.max()) for name, (_, p) in MARGINALS.items()}
    return (f"Quasi-identifiers: age 0-{max(MARGINALS['age'][0])} ({card['age']} values, a working-age bulge), sex "
            f"({card['sex']}), zip3 ({card['zip3']} codes: 3 leading digits x 4 x 3, skewed), education "
            f"({card['education']} levels, declared ordered; {top['education']:.0%} in the commonest), marital "
            f"({card['marital']}; depends on age: under 25 mostly never married), race ({card['race']}; "
            f"{top['race']:.0%} one value), occupation ({card['occupation']}; depends on education), native "
            f"({card['native']}; {top['native']:.0%} one value): {combos:,} possible combinations. Sensitive: disease "
            f"({card[SENSITIVE]} values, skewed). Class: income (2 values; depends on education, age and occupation). "
            "Seeded, written file by file in row groups of "
            f"{ROW_GROUP:,} rows, in a temporary folder deleted after the runs.")


# -- the spec ----------------------------------------------------------------------------------------------------
def spec_text(method: str, source: Path, root: Path, workers: int, seed: int) -> str:
    """The release spec of ``method`` on ``source`` (a folder of Parquet files), publishing under ``root``."""
    def q(text: object) -> str:  # a YAML double-quoted scalar (JSON's quoting is valid YAML)
        import json

        return json.dumps(str(text))

    order = ", ".join(q(v) for v in EDUCATION)
    method_lines = {
        "generalization": [
            "method:",
            "  name: generalization",
            f"  k: {K}",
            "  suppression_limit: 0.02",
            "  measure: loss",
            "  # no hierarchies: automatic (age: intervals; zip3: prefix masking; education: intervals over its",
            "  # order; the other quasi-identifiers: flat, value -> *)",
            "tuning:",
            "  strategy: lattice",
        ],
        "mondrian": [
            "method:",
            "  name: mondrian",
            f"  k: {K}",
            "  mode: strict",
            "tuning:",
            "  strategy: fixed",
        ],
        "mdav": [
            "method:",
            "  name: mdav",
            f"  k: {MDAV_K}",
            "tuning:",
            "  strategy: fixed",
        ],
    }[method]
    lines = [
        f"# Distributed release benchmark (benchmarks/distributed_release.py): {method}, k = {K}, on a folder of",
        f"# Parquet files, on a local Dask cluster of {workers} worker processes.",
        f"dataset: distributed_{method}",
        "source:",
        f"  path: {q(source)}",
        "  format: parquet",
        "columns:",
        *[f"  {name}: quasi_identifier" for name in ("age", "sex")],
        "  zip3: {role: quasi_identifier, kind: nominal}",
        "  education:",
        "    role: quasi_identifier",
        f"    order: [{order}]",
        *[f"  {name}: quasi_identifier" for name in ("marital", "race", "occupation", "native")],
        f"  {SENSITIVE}: sensitive",
        f"  {CLASS}: class",
        "privacy:",
        f"  k: {K}",
        *method_lines,
        "utility:",
        "  classifier: decision_tree",
        "  test_fraction: 0.1",
        "  min_accuracy_ratio: 0.8",
        "publish:",
        f"  root: {q(root)}",
        "runner:",
        "  kind: dask",
        f"  workers: {workers}",
        f"seed: {seed}",
    ]
    return "\n".join(lines) + "\n"


def check_spec(spec: Path, source: Path | None = None) -> str | None:
    """What ``ppdp run`` checks before any work (load, validate, the input's header, the publish root), with
    ``source.path`` replaced by ``source`` if given. None if the spec passes, else the refusal's text."""
    from ppdp.tasks import spec as spec_io
    from ppdp.tasks.core.errors import PpdpError

    try:
        spec_io.preflight(spec_io.load_spec(spec, [f"source.path={source}"] if source else []))
    except PpdpError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# -- the floor ---------------------------------------------------------------------------------------------------
FLOOR = """
import sys
from pathlib import Path
import pandas as pd
import pyarrow.parquet as pq
folder, out, qis = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
out.mkdir(parents=True, exist_ok=True)
sizes = []
for i, path in enumerate(sorted(folder.rglob("*.parquet"))):
    frame = pq.read_table(path).to_pandas()
    sizes.append(frame.groupby(qis, dropna=False, observed=True).size())
    frame.to_parquet(out / f"part-{i:05d}.parquet", engine="pyarrow", index=False)
total = pd.concat(sizes).groupby(level=list(range(len(qis))), dropna=False, observed=True).sum()
print(len(total))
"""
"""The floor of a release's data work on the folder: one process reads every file with pyarrow (into pandas),
counts the rows of each quasi-identifier combination, writes each file's rows back as Parquet and merges the
counts. Timed as a whole process (Python's start and imports included), like ``ppdp run``."""


def child_cpu() -> float:
    """CPU seconds (user and system) of this process's waited-for descendants so far: a ``ppdp run`` once it
    exits, with its Dask workers (its own children, reaped by it) included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def floor_run(folder: Path, out: Path) -> dict:
    """The floor (:data:`FLOOR`) on ``folder``, writing under ``out`` (removed after): its wall and CPU seconds and
    the 1-minute load average just before it."""
    load = os.getloadavg()[0]
    cpu = child_cpu()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", FLOOR, str(folder), str(out), ",".join(QI)], capture_output=True,
                          text=True, cwd=REPO)
    wall, cpu = time.perf_counter() - started, child_cpu() - cpu
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"distributed_release: the floor exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return {"floor": wall, "floor_cpu": cpu, "floor_load": load, "floor_classes": int(done.stdout.split()[-1])}


def ratio_text(run: dict) -> str:
    """The run's wall as a multiple of the floor taken just before it (and its CPU seconds as a multiple of the
    floor's: less sensitive to a shared machine's load)."""
    floor, cpu = run.get("floor"), run.get("floor_cpu")
    if not floor:
        return "n/a"
    return f"{run['wall'] / floor:.1f}x" + (f" (CPU {run['cpu'] / cpu:.1f}x)" if cpu and run.get("cpu") else "")


# -- the memory sampler ------------------------------------------------------------------------------------------
def _vm_hwm_bytes(pid: int) -> int:
    """The kernel's peak RSS of ``pid`` (``VmHWM``), 0 if unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def classify(cmdline: list[str], is_root: bool) -> str:
    """driver (the ppdp process), worker (a Dask worker process: its command line names ``spawn`` or
    ``distributed``), or other."""
    if is_root:
        return "driver"
    text = " ".join(cmdline)
    return "worker" if "spawn" in text or "distributed" in text else "other"


@dataclass
class ProcessPeak:
    pid: int
    kind: str
    command: str
    peak_bytes: int = 0  # max of the sampled RSS and VmHWM
    first_seen: float = 0.0
    last_seen: float = 0.0


@dataclass
class MemorySampler:
    """Samples the process ``pid`` and its descendants every ``interval`` seconds in a thread; keeps each process's
    peak (by pid and start time) and the peak of their sum."""

    pid: int
    interval: float = SAMPLE_SECONDS
    processes: dict[tuple[int, float], ProcessPeak] = field(default_factory=dict)
    total_peak_bytes: int = 0
    samples: int = 0

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._t0 = time.perf_counter()

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while True:
            self.sample(root)
            if self._stop.wait(self.interval):
                return

    def sample(self, root) -> None:
        import psutil

        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        now = time.perf_counter() - self._t0
        total = 0
        for p in procs:
            try:
                with p.oneshot():
                    key = (p.pid, p.create_time())
                    rss = p.memory_info().rss
                    cmdline = p.cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            entry = self.processes.get(key)
            if entry is None:
                entry = self.processes[key] = ProcessPeak(p.pid, "", "", first_seen=now)
            # classified at every sample: a spawned process shows its parent's command line until it execs
            entry.kind = classify(cmdline, p.pid == self.pid)
            entry.command = " ".join(cmdline)[:200]
            entry.peak_bytes = max(entry.peak_bytes, rss, _vm_hwm_bytes(p.pid))
            entry.last_seen = now
            total += rss
        self.total_peak_bytes = max(self.total_peak_bytes, total)
        self.samples += 1

    def peaks_mib(self, kind: str) -> list[float]:
        return [p.peak_bytes / 2**20 for p in sorted(self.processes.values(), key=lambda p: p.first_seen)
                if p.kind == kind]


# -- ppdp's --timings --------------------------------------------------------------------------------------------
TIMINGS_HEAD = re.compile(r"^  timings\s+(?P<wall>\d+(?:\.\d+)?) s in the command, (?P<work>\d+(?:\.\d+)?) s in the "
                          r"steps' own work, (?P<beyond>-?\d+(?:\.\d+)?) s beyond them")
TIMINGS_STEP = re.compile(r"^    (?P<name>\S(?:.*\S)?)\s+(?P<seconds>\d+(?:\.\d+)?) s"
                          r"(?:  \((?P<runs>\d+) runs, summed\))?$")


def parse_timings(stdout: str) -> dict | None:
    """``ppdp run --timings``'s block (flows/cli/release_summary.py): the line ``  timings  W s in the command,
    S s in the steps' own work, B s beyond them (...)`` then one line per step, ``    NAME  SECONDS s`` with
    ``  (N runs, summed)`` when the step ran more than once, most seconds first, up to the first line of another
    form. None if absent."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        head = TIMINGS_HEAD.match(line)
        if head is None:
            continue
        steps = []
        for step_line in lines[i + 1:]:
            m = TIMINGS_STEP.match(step_line)
            if m is None:
                break
            steps.append({"name": m["name"], "seconds": float(m["seconds"]), "runs": int(m["runs"] or 1)})
        return {"command_wall": float(head["wall"]), "work": float(head["work"]), "beyond": float(head["beyond"]),
                "steps": steps}
    return None


def _summary_line(stdout: str, label: str) -> str | None:
    """The text after ``  LABEL`` in ppdp's run summary (``unit``, ``tuned``, ``fixed``, ``utility``), if printed."""
    m = re.search(rf"^  {label}\s+(.*)$", stdout, re.MULTILINE)
    return m.group(1).strip() if m else None


# -- Prefect: a server for the runs, and the task runs it records ---------------------------------------------
class PrefectServer:
    """``prefect server start`` on a free loopback port in the background, WITH its services: the task-run recorder
    is a service, and the per-partition task times are read back from the task runs it records (the smoke
    driver's shared server runs ``--no-services``: under ``make bench-smoke`` there are none)."""

    def __init__(self, home: Path) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        home.mkdir(parents=True, exist_ok=True)
        self.api = f"http://127.0.0.1:{port}/api"
        self.log = open(home / "server.log", "w+", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update({"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                    "PREFECT_SERVER_LOGGING_LEVEL": "WARNING"})
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1", "--port",
             str(port), "--no-ui", "--analytics-off"], env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=home)
        self.started = time.perf_counter()

    def wait(self, limit: float = 120) -> str | None:
        """The API address once the server answers; None if it exited or did not answer within ``limit`` s (each
        ppdp process then starts its own temporary server)."""
        while not healthy(self.api):
            if self.proc.poll() is not None or time.perf_counter() - self.started > limit:
                print("distributed_release: the Prefect server did not start; each ppdp run starts its own",
                      flush=True)
                return None
            time.sleep(0.3)
        return self.api

    def stop(self) -> None:
        from benchmarks.smoke import stop_server

        stop_server(self.proc, self.log)


def _api_post(api: str, path: str, body: dict) -> list:
    import json
    import urllib.request

    request = urllib.request.Request(f"{api}{path}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:  # noqa: S310 - the Prefect API on the loopback
        return json.loads(r.read())


def step_of(task_run_name: str) -> str:
    """The step of a task run: ppdp names a run ``STEP DETAIL`` (``count-partition generalization, partition 0``)
    or, without detail, Prefect's ``STEP-xyz``."""
    return task_run_name.split(" ", 1)[0] if " " in task_run_name else re.sub(r"-[0-9a-f]{3}$", "", task_run_name)


def task_runs(api: str | None, spec: Path) -> list[dict] | None:
    """The task runs of the flow run of ``spec`` (its ``spec_path`` parameter) as the Prefect server at ``api``
    recorded them: step, name, start and end (seconds since the epoch), seconds running. None without a server or
    a flow run; [] when the server records no task runs (its services off). The recorder writes them from events,
    a moment after the flow ends: read until two reads agree."""
    from datetime import datetime

    if not api:
        return None
    try:
        flows = _api_post(api, "/flow_runs/filter", {"sort": "EXPECTED_START_TIME_DESC", "limit": 200})
        run = next((f for f in flows if (f.get("parameters") or {}).get("spec_path") == str(spec.resolve())), None)
        if run is None:
            return None
        seen, deadline, rows = -1, time.perf_counter() + 2, []
        while True:
            rows = []
            while True:
                page = _api_post(api, "/task_runs/filter", {"flow_runs": {"id": {"any_": [run["id"]]}},
                                                            "sort": "EXPECTED_START_TIME_ASC", "limit": 200,
                                                            "offset": len(rows)})
                rows += page
                if len(page) < 200:
                    break
            if (rows and len(rows) == seen) or (not rows and time.perf_counter() > deadline) \
                    or time.perf_counter() > deadline + 30:
                break
            seen = len(rows)
            time.sleep(1)
    except OSError as exc:
        print(f"distributed_release: the Prefect API did not answer ({type(exc).__name__}): no task runs read",
              flush=True)
        return None
    out = []
    for t in rows:
        if not (t.get("start_time") and t.get("end_time")):
            continue
        out.append({"step": step_of(t["name"]), "name": t["name"], "state": t.get("state_type"),
                    "start": datetime.fromisoformat(t["start_time"]).timestamp(),
                    "end": datetime.fromisoformat(t["end_time"]).timestamp(),
                    "seconds": float(t.get("total_run_time") or 0.0)})
    return out


def _union(intervals: list[tuple[float, float]]) -> float:
    """Seconds covered by at least one of the intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def task_steps(tasks: list[dict]) -> list[dict]:
    """Per step of the recorded task runs: runs, seconds summed, longest run, and span (seconds of wall during
    which at least one of its runs was running); most seconds first."""
    by_step: dict[str, list[dict]] = {}
    for t in tasks:
        by_step.setdefault(t["step"], []).append(t)
    steps = [{"name": name, "runs": len(ts), "seconds": sum(t["seconds"] for t in ts),
              "longest": max(t["seconds"] for t in ts), "span": _union([(t["start"], t["end"]) for t in ts]),
              "intervals": [(t["start"], t["end"]) for t in ts]} for name, ts in by_step.items()]
    return sorted(steps, key=lambda s: (-s["seconds"], s["name"]))


# -- one run -----------------------------------------------------------------------------------------------------
def run_release(spec: Path, env: dict[str, str], logs: Path, timeout: float | None) -> dict:
    """``ppdp run SPEC --timings`` in its own process group, sampled; its figures (and the task runs the Prefect
    server at ``env["PREFECT_API_URL"]`` recorded, if any)."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / f"{spec.stem}.stdout", logs / f"{spec.stem}.stderr"
    cmd = [str(PPDP), "run", str(spec), "--timings"]
    with open(out_path, "w", encoding="utf-8") as out, open(err_path, "w", encoding="utf-8") as err:
        started, cpu = time.perf_counter(), child_cpu()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, cwd=REPO, start_new_session=True)
        sampler = MemorySampler(proc.pid).start()
        timed_out = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.kill(proc.pid, signal.SIGUSR1)  # ppdp prints every thread's stack to its stderr (flows/cli/app.py)
            time.sleep(STACKS_SECONDS)
            os.killpg(proc.pid, signal.SIGTERM)  # the run's own process group (its Dask workers included)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        wall = time.perf_counter() - started
        sampler.stop()
    left = _end_group(proc.pid, grace=5)  # the run's own process group: anything still in it outlived ppdp
    cpu = child_cpu() - cpu  # ppdp and the descendants it reaped (its Dask workers)
    stdout = out_path.read_text(encoding="utf-8", errors="replace")
    stderr = err_path.read_text(encoding="utf-8", errors="replace")
    last = next((ln.strip() for ln in reversed(stderr.splitlines()) if ln.strip()), "(no stderr)")
    tail = _stderr_tail(stderr) if timed_out else []
    return {"command": " ".join(cmd), "exit": code, "timed_out": timed_out, "wall": wall, "cpu": cpu,
            "last_stderr": last, "stderr_tail": tail, "stdout": stdout, "timings": parse_timings(stdout),
            "driver_mib": max(sampler.peaks_mib("driver"), default=float("nan")),
            "workers_mib": sampler.peaks_mib("worker"), "others_mib": sampler.peaks_mib("other"),
            "others": [p.command for p in sampler.processes.values() if p.kind == "other"],
            "total_mib": sampler.total_peak_bytes / 2**20, "samples": sampler.samples, "left_behind": left,
            "unit": _summary_line(stdout, "unit"),
            "parameter": _summary_line(stdout, "tuned") or _summary_line(stdout, "fixed"),
            "utility": _summary_line(stdout, "utility"), "tasks": _task_steps_or_none(env, spec)}


_STACK_LINE = re.compile(r'^(Thread 0x[0-9a-f]+ \(most recent call first\):|Current thread 0x[0-9a-f]+ '
                         r'\(most recent call first\):|  File ".*", line \d+ in \S+)$')
_LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d\.\d+ \| ")


def _stderr_tail(stderr: str, logs: int = 20) -> list[str]:
    """A timed-out run's last ``logs`` Prefect log lines, then the thread stacks ppdp printed on SIGUSR1
    (faulthandler's lines: ``Thread 0x...``, ``  File "...", line N in name``): what was running when it stopped
    moving."""
    lines = [ln.rstrip() for ln in stderr.splitlines()]
    return [ln for ln in lines if _LOG_LINE.match(ln)][-logs:] + [ln for ln in lines if _STACK_LINE.match(ln)]


def _task_steps_or_none(env: dict[str, str], spec: Path) -> list[dict] | None:
    tasks = task_runs(env.get("PREFECT_API_URL"), spec)
    return None if tasks is None else task_steps(tasks)


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _end_group(pgid: int, grace: float = 0.0) -> bool:
    """Terminate what is left of the process group ``pgid`` (a run's, started here with its own session) after
    ``grace`` seconds; True if anything was left then."""
    deadline = time.perf_counter() + grace
    while _alive(pgid) and time.perf_counter() < deadline:
        time.sleep(0.1)
    if not _alive(pgid):
        return False
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.perf_counter() + wait
        while _alive(pgid) and time.perf_counter() < deadline:
            time.sleep(0.1)
        if not _alive(pgid):
            break
    return True


def run_env(tmp: Path, api: str | None) -> dict[str, str]:
    """The ``ppdp`` process's environment: keys, config and Prefect home in ``tmp``; the Prefect API if given."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PPDP_AUDIT_KEY", "PPDP_AUDIT_KEY_BLOCK", "PPDP_AUDIT_TRUSTED_KEYS", "PREFECT_API_URL")}
    env.update({"PPDP_SERIES_KEY": "5e" * 32, "PPDP_AUDIT_HMAC_KEY": "b7" * 32,
                "PPDP_CONFIG_DIR": str(tmp / "config"), "PREFECT_HOME": str(tmp / "prefect-home")})
    if api:
        env["PREFECT_API_URL"] = api
    return env


# -- the results -------------------------------------------------------------------------------------------------
def _mib(x: float) -> str:
    return "n/a" if x != x else f"{x:,.0f}"  # NaN: no sample


def _ok(run: dict) -> bool:
    return run["exit"] == 0


def top_steps(run: dict, n: int = 3) -> str:
    """The ``n`` longest steps of ``--timings`` with their share of the wall."""
    t = run.get("timings")
    if not t:
        return "(no timings printed)"
    return "; ".join(f"{s['name']}{' x' + str(s['runs']) if s['runs'] > 1 else ''} {s['seconds']:.1f} s "
                     f"({s['seconds'] / run['wall']:.0%})" for s in t["steps"][:n])


def top_tasks(run: dict, n: int = 3) -> str:
    """The ``n`` steps of the recorded Prefect task runs (the workers' included) that held the most seconds of wall,
    with their share of the wall."""
    tasks = run.get("tasks")
    if not tasks:
        return "not recorded" if tasks is None else "none recorded"
    return "; ".join(f"{s['name']}{' x' + str(s['runs']) if s['runs'] > 1 else ''} {s['span']:.1f} s "
                     f"({s['span'] / run['wall']:.0%})" for s in sorted(tasks, key=lambda s: -s["span"])[:n])


def per_partition(run: dict) -> tuple[list[dict], str] | None:
    """The steps that ran at least once per input file (per-partition tasks) and where their times come from: the
    Prefect task runs (they include the tasks run on the Dask workers), else ``--timings`` (the driver's steps
    only). None if neither has one."""
    files = run["files"]
    if files < 2:
        return None
    for source, steps in (("Prefect task runs", run.get("tasks")), ("--timings", (run.get("timings") or {}).get(
            "steps"))):
        chosen = [s for s in steps or [] if s["runs"] >= files]
        if chosen:
            return chosen, source
    return None


def per_partition_cell(run: dict) -> str:
    found = per_partition(run)
    if found is None:
        return "not recorded" if run.get("tasks") is None else "none"
    steps, source = found
    spans = _union([iv for s in steps for iv in s.get("intervals", [])])
    plural = "s" if len(steps) != 1 else ""
    return (f"{len(steps)} step{plural}, {sum(s['runs'] for s in steps)} runs, {sum(s['seconds'] for s in steps):.1f} "
            "s summed" + (f", {spans:.1f} s of wall ({spans / run['wall']:.0%})" if spans else "")
            + ("" if source == "Prefect task runs" else f" ({source})"))


def estimate(run: dict) -> dict | None:
    """ESTIMATE (not measured) of the wall seconds on W workers. The per-partition steps (:func:`per_partition`)
    run in passes of one task per file (n runs over F files: n / F passes), each pass in waves of at most W tasks:
    a step of mean m seconds a run takes n / F x ceil(F / W) x m, so no gain beyond W = F. The rest of the
    measured wall (the merge, search and measure steps on one worker or in the driver, start-up, Prefect, the
    cluster) does not change with W: rest = measured wall - the seconds during which a per-partition task was
    running (from the task runs' intervals; from ``--timings``, which has none, the waves at the measured W)."""
    found = per_partition(run)
    if found is None:
        return None
    steps, source = found

    files = run["files"]

    def waves(workers: int) -> float:
        return sum(s["runs"] / files * math.ceil(files / workers) * s["seconds"] / s["runs"] for s in steps)

    w = run["workers"]
    intervals = [iv for s in steps for iv in s.get("intervals", [])]
    measured = _union(intervals) if intervals else waves(w)
    rest = run["wall"] - measured
    grid = sorted({w, *[x for x in (4, 8, 16, 32, 64) if x < files], files})
    return {"steps": steps, "source": source, "measured": measured, "waves_measured": waves(w), "rest": rest,
            "walls": {x: rest + waves(x) for x in grid}}


def _growth(before: float, after: float) -> str:
    ratio = f" (x{after / before:.2f})" if before == before and after == after and before > 0 else ""
    return f"{_mib(before)} -> {_mib(after)} MiB{ratio}"


def reading(runs: list[dict]) -> list[str]:
    """Derived figures, each computed from the measured ones (the estimate labelled as such)."""
    out = []
    for method in dict.fromkeys(r["method"] for r in runs):
        ok = sorted((r for r in runs if r["method"] == method and _ok(r)), key=lambda r: r["rows"])
        if not ok:
            failed = next(r for r in runs if r["method"] == method)
            out.append(f"* {method}: no run succeeded (exit {failed['exit']}: {failed['last_stderr']}); nothing to "
                       "read.")
            continue
        if len(ok) == 1:
            out.append(f"* {method}: one successful size ({ok[0]['rows']:,} rows): no growth to read.")
        for a, b in zip(ok, ok[1:]):
            rows_ratio, wall_ratio = b["rows"] / a["rows"], b["wall"] / a["wall"]
            exponent = math.log(wall_ratio) / math.log(rows_ratio) if rows_ratio > 1 and wall_ratio > 0 else None
            out.append(f"* {method}, {a['rows']:,} -> {b['rows']:,} rows (x{rows_ratio:.1f}): wall {a['wall']:.1f} -> "
                       f"{b['wall']:.1f} s (x{wall_ratio:.2f}"
                       + (f", i.e. wall ~ rows^{exponent:.2f}" if exponent is not None else "")
                       + f"); rows/s {a['rows'] / a['wall']:,.0f} -> {b['rows'] / b['wall']:,.0f}; driver peak "
                       + _growth(a["driver_mib"], b["driver_mib"]) + "; largest worker peak "
                       + _growth(max(a["workers_mib"], default=float("nan")),
                                 max(b["workers_mib"], default=float("nan"))) + ".")
            fixed = [(r["wall"] - e["measured"]) if (e := estimate(r)) else None for r in (a, b)]
            if None not in fixed:
                out.append(f"  Of it, outside the per-partition tasks: {fixed[0]:.1f} -> {fixed[1]:.1f} s.")
        big = ok[-1]
        est = estimate(big)
        if est is None:
            why = ("the Prefect server recorded no task runs (a server started with --no-services, as the smoke "
                   "driver's, has no task-run recorder)" if big.get("tasks") == [] else
                   "no Prefect task runs could be read" if big.get("tasks") is None else
                   f"no recorded step ran once per file ({big['files']} files)")
            out.append(f"* {method}, ESTIMATE for a larger cluster: not computed for the {big['rows']:,}-row run: "
                       f"{why}, and the driver's `--timings` has no per-partition step (steps run on Dask workers "
                       "are timed in the worker processes).")
            continue
        parts = ", ".join(f"{s['name']} x{s['runs']} {s['seconds']:.1f} s" for s in est["steps"])
        walls = "; ".join(f"{x} workers {t:.1f} s" for x, t in est["walls"].items())
        out.append(f"* {method}, ESTIMATE (not measured) for a larger cluster, from the {big['rows']:,}-row run "
                   f"({big['files']} files, {big['workers']} workers, wall {big['wall']:.1f} s). Per-partition "
                   f"steps (from {est['source']}; seconds summed over runs): {parts}. A per-partition task was "
                   f"running during {est['measured']:.1f} s of the wall (one task per file and pass, in ideal waves "
                   f"of {big['workers']}: {est['waves_measured']:.1f} s); the other {est['rest']:.1f} s (the merge, "
                   "search and measure steps on one worker or in the driver, start-up, Prefect, cluster start) do "
                   f"not shrink with more workers. Estimated wall: {walls}. Assumes the runs of a step take equally "
                   "long (the first task on each worker also pays its imports: see the longest run in the task "
                   "table), one task per worker at a time, no gain beyond one worker per file, and nothing else "
                   "growing with the worker count (scheduling, transfers to the merging worker); from a single run "
                   "on a shared machine.")
    return out


def results_text(runs: list[dict], generations: dict[int, dict], machine: dict, command: str) -> str:
    lines = ["# Distributed release: `ppdp run` on a folder of Parquet files, Dask LocalCluster", "",
             f"Produced by `{command}` on {machine['when']}. Machine: {machine['cores']} cores "
             f"({machine['usable']} usable by this process), {machine['ram_gib']:.1f} GiB RAM, Python "
             f"{machine['python']}, dask {machine['dask']}, distributed {machine['distributed']}; 1-minute load "
             f"average {machine['load_start']:.2f} at the start, {machine['load_end']:.2f} at the end (the machine "
             "may be shared).", "", "## Data", "", data_description(), ""]
    lines += ["| rows | files | MiB on disk | generation s | >50K share |", "|---|---|---|---|---|"]
    for _, g in sorted(generations.items()):
        lines.append(f"| {g['rows']:,} | {g['files']} | {g['bytes'] / 2**20:,.1f} | {g['seconds']:.1f} | "
                     f"{g['income_share']:.1%} |")
    workers = sorted({r["workers"] for r in runs})
    lines += ["", "## Figures", "",
              f"Each run: `ppdp run SPEC --timings` on the folder, `runner: {{kind: dask, workers: "
              f"{'/'.join(map(str, workers)) or '?'}}}`, k = {K} (generalization: suppression limit 2%, lattice "
              f"search; Mondrian: strict, k fixed; MDAV: method k = {MDAV_K}, privacy k = {K}, fixed). Wall: spawn to "
              "exit of the `ppdp` process. Peaks: RSS sampled "
              f"every {SAMPLE_SECONDS} s and the kernel's VmHWM, per process; the driver is the `ppdp` process (Dask "
              "scheduler and nannies included), workers are its Dask worker processes; all processes: the peak of "
              "their summed RSS. Top steps: the three longest of `--timings` (the driver's steps only; seconds summed "
              "over a step's runs, as a share of the wall). Top tasks: the three steps of the task runs the Prefect "
              "server recorded (driver and workers) that held the most seconds of wall. Per-partition tasks: the "
              "steps that ran once per file or more, from those task runs: seconds summed over runs, and seconds of "
              "wall during which one was running. Floor: the data work alone (:data:`FLOOR`: one process reads "
              "every file with pyarrow, counts the quasi-identifier combinations and writes the rows as Parquet), "
              "timed as a whole process just before the run; x floor: the run's wall over it.", "",
              "| method | rows | files | exit | wall s | floor s | x floor | driver peak MiB | worker peaks MiB "
              "| all processes peak MiB "
              "| top steps, `--timings` (share of wall) | top tasks, Prefect (share of wall) | per-partition tasks "
              "| rows/s |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        peaks = " / ".join(_mib(x) for x in r["workers_mib"]) or "none seen"
        if _ok(r):
            steps, speed = f"{top_steps(r)} | {top_tasks(r)}", f"{r['rows'] / r['wall']:,.0f}"
        else:
            steps = ("timed out; " if r["timed_out"] else "") + f"FAILED: {r['last_stderr']}".replace("|", "\\|") \
                + " | " + top_tasks(r)
            speed = "n/a"
        floor = f"{r['floor']:.1f}" if r.get("floor") else "n/a"
        lines.append(f"| {r['method']} | {r['rows']:,} | {r['files']} | {r['exit']} | {r['wall']:.1f} | {floor} | "
                     f"{ratio_text(r)} | {_mib(r['driver_mib'])} | {peaks} | {_mib(r['total_mib'])} | {steps} | "
                     f"{per_partition_cell(r)} | {speed} |")
    lines += ["", "## Reading the figures", "", *reading(runs), "", "## Each run", ""]
    for r in runs:
        lines += [f"### {r['method']}, {r['rows']:,} rows in {r['files']} files", ""]
        lines.append(f"* Command: `{r['command']}`; exit {r['exit']}" + (" (timed out)" if r["timed_out"] else "")
                     + f"; {r['samples']} memory samples.")
        lines.append(f"* Spec check with one Parquet file as source: {r['check_file'] or 'passes'}; on the folder: "
                     f"{r['check_folder'] or 'passes'}.")
        if r.get("floor"):
            lines.append(f"* Floor (just before the run): {r['floor']:.2f} s ({r['floor_cpu']:.2f} CPU s), "
                         f"{r['floor_classes']:,} quasi-identifier combinations; the run {r['wall']:.2f} s "
                         f"({r['cpu']:.2f} CPU s of ppdp and its Dask workers), {ratio_text(r)} the floor; 1-minute "
                         f"load average {r['floor_load']:.2f} before the floor, {r['load_end']:.2f} after the run.")
        if r.get("first_attempt"):
            lines.append(f"* A first attempt {r['first_attempt']}; this is the second (smoke runs only).")
        if not _ok(r):
            lines.append(f"* Last stderr line: `{r['last_stderr']}`")
        if r["stderr_tail"]:
            lines += ["* Stderr's last lines (with the thread stacks ppdp printed at the timeout):", "", "```",
                      *r["stderr_tail"], "```", ""]
        for label in ("unit", "parameter", "utility"):
            if r.get(label):
                lines.append(f"* {label.capitalize()}: {r[label]}")
        if r["others_mib"]:
            lines.append("* Other descendant processes (peak MiB): " + "; ".join(
                f"{_mib(m)} ({c[:80]})" for m, c in zip(r["others_mib"], r["others"])))
        if r["left_behind"]:
            lines.append("* Processes of the run were still alive 5 s after `ppdp` exited (terminated here).")
        t = r.get("timings")
        if t:
            lines += [f"* `--timings`: {t['command_wall']:.2f} s in the command, {t['work']:.2f} s in the steps' own "
                      f"work, {t['beyond']:.2f} s beyond them; process wall {r['wall']:.2f} s.", "",
                      "| step (driver) | runs | seconds | share of wall |", "|---|---|---|---|"]
            lines += [f"| {s['name']} | {s['runs']} | {s['seconds']:.2f} | {s['seconds'] / r['wall']:.1%} |"
                      for s in t["steps"]]
            lines.append("")
        if r.get("tasks"):
            lines += [""] if lines[-1] else []
            lines += ["| task (Prefect task runs) | runs | seconds summed | longest | seconds of wall | share of "
                      "wall |", "|---|---|---|---|---|---|"]
            lines += [f"| {s['name']} | {s['runs']} | {s['seconds']:.2f} | {s['longest']:.2f} | {s['span']:.2f} | "
                      f"{s['span'] / r['wall']:.1%} |" for s in r["tasks"]]
        else:
            lines.append("* Prefect task runs: " + ("none recorded (server without services)" if r.get("tasks") == []
                                                    else "not read (no Prefect API, or no flow run)") + ".")
        lines.append("")
    return "\n".join(lines)


def machine_facts() -> dict:
    import dask
    import distributed
    import psutil

    return {"cores": os.cpu_count(), "usable": len(os.sched_getaffinity(0)),
            "ram_gib": psutil.virtual_memory().total / 2**30, "python": sys.version.split()[0],
            "dask": dask.__version__, "distributed": distributed.__version__, "load_start": os.getloadavg()[0],
            "when": time.strftime("%Y-%m-%d %H:%M")}


# -- main --------------------------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, action="append", help="rows of a size (repeatable; default 1e6 and 1e7)")
    parser.add_argument("--files", type=int, action="append", help="files: once for all sizes or once per size "
                                                                   "(default 20)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=0, help="seconds per ppdp run (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (data, specs, logs)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    smoke.add_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.files, args.timeout = [SMOKE_ROWS], [SMOKE_FILES], args.timeout or SMOKE_TIMEOUT
        args.out = smoke.workdir() / RESULTS.name
        smoke.say(f"{SMOKE_ROWS} generated rows in {SMOKE_FILES} Parquet files (seed {args.seed})")
    sizes = args.rows or [1_000_000, 10_000_000]
    files = args.files or [20]
    if len(files) not in (1, len(sizes)):
        parser.error("--files: give it once, or once per --rows")
    files = files * len(sizes) if len(files) == 1 else files
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(methods) - set(METHODS) - set(OPTIONAL))
    if unknown:
        parser.error(f"--methods: unknown {unknown}; known: {', '.join(METHODS + OPTIONAL)}")

    tmp = smoke.workdir() if args.smoke else Path(tempfile.mkdtemp(prefix="ppdp-distributed-release-"))
    machine = machine_facts()
    api = os.environ.get("PREFECT_API_URL")
    server = None if api else PrefectServer(tmp / "prefect-server")  # started now, awaited before the first run
    runs: list[dict] = []
    generations: dict[int, dict] = {}
    try:
        for rows, n_files in zip(sizes, files):
            folder = tmp / f"data-{rows}"
            g = generate(folder, rows, n_files, args.seed)
            generations[rows] = g
            print(f"generated {g['rows']:,} rows in {g['files']} files ({g['bytes'] / 2**20:,.1f} MiB) in "
                  f"{g['seconds']:.1f} s", flush=True)
            for method in methods:
                spec = tmp / "specs" / f"{method}-{rows}.yaml"
                spec.parent.mkdir(parents=True, exist_ok=True)
                root = tmp / "publish" / spec.stem  # a root per run: a partitioned release is not judged with a
                # series, so a second release of the dataset under one root is refused
                spec.write_text(spec_text(method, folder, root, args.workers, args.seed), encoding="utf-8")
                check_file = check_spec(spec, source=sorted(folder.glob("*.parquet"))[0])
                if check_file is not None:  # the spec itself is wrong: not a figure, a bug here
                    raise SystemExit(f"distributed_release: the {method} spec fails on one Parquet file: "
                                     f"{check_file}")
                check_folder = check_spec(spec)
                print(f"spec {spec.name}: passes on one file; on the folder: {check_folder or 'passes'}",
                      flush=True)
                if server is not None and api is None:
                    api = server.wait()
                    server = server if api else None
                floor = floor_run(folder, tmp / "floor")  # back to back with the run: the same load
                r = run_release(spec, run_env(tmp, api), tmp / "logs", args.timeout or None)
                if args.smoke and r["timed_out"]:  # said on every line of smoke's output, then run once more
                    smoke.warn(f"{method} on {g['rows']:,} rows timed out after {r['wall']:.0f} s; its stderr's "
                               "last lines (the thread stacks ppdp printed at the timeout included) follow, then "
                               "a second attempt")
                    for line in r["stderr_tail"]:
                        smoke.warn("| " + line)
                    shutil.rmtree(root, ignore_errors=True)
                    first = r
                    r = run_release(spec, run_env(tmp, api), tmp / "logs", args.timeout or None)
                    r["first_attempt"] = f"timed out after {first['wall']:.0f} s (exit {first['exit']})"
                    smoke.warn(f"{method} second attempt: exit {r['exit']}, wall {r['wall']:.1f} s")
                r.update(method=method, rows=g["rows"], files=g["files"], workers=args.workers,
                         check_file=check_file, check_folder=check_folder, **floor, load_end=os.getloadavg()[0])
                runs.append(r)
                if not args.keep:
                    shutil.rmtree(root, ignore_errors=True)  # the release itself is not looked at
                print(f"{method:<15} {g['rows']:>12,} rows  exit {r['exit']}  wall {r['wall']:7.1f} s  driver "
                      f"{_mib(r['driver_mib'])} MiB  workers {' / '.join(_mib(x) for x in r['workers_mib']) or '-'}"
                      f" MiB  floor {r['floor']:.1f} s  x floor {ratio_text(r)}  load {r['floor_load']:.2f} -> "
                      f"{r['load_end']:.2f}  {top_steps(r) if _ok(r) else 'FAILED: ' + r['last_stderr']}", flush=True)
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            print(f"kept {tmp}")
        elif not args.smoke:  # smoke: smoke.workdir() is removed at exit
            shutil.rmtree(tmp, ignore_errors=True)

    machine["load_end"] = os.getloadavg()[0]
    command = "python -m benchmarks.distributed_release " + " ".join(sys.argv[1:])
    text = results_text(runs, generations, machine, command)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text if args.smoke else f"wrote {args.out}")
    failed = [r for r in runs if not _ok(r)]

    for r in failed:
        print(f"FAILED: {r['method']} on {r['rows']:,} rows: exit {r['exit']}: {r['last_stderr']}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
