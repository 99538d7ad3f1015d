"""Smoke runs of every benchmark (``make bench-smoke``), and the helpers their ``--smoke`` flag uses.

    .venv/bin/python -m benchmarks.smoke [--only NAME,NAME] [--no-shared] [--no-server] [--jobs 1]

Every benchmark script takes ``--smoke``: its real code path end to end on a tiny input (a few hundred rows, the
smallest grid, one repeat), its figures printed as usual, and every file it would write put in a temporary
folder (:func:`workdir`, removed at exit): nothing is written into ``benchmarks/results/``. Data from
``../shared/data`` is read from a temporary copy holding a few hundred rows of each file the script needs
(:func:`tiny_shared`); where ``../shared/data`` is absent (or with ``--no-shared``, to try that here) the copy
holds generated stand-ins for the files this module can generate (UCI Adult, ARX's Adult and its hierarchies,
Vote), and a script whose data set cannot be generated falls back to a table scikit-learn ships (iris, wine,
breast cancer). Each script prints one line ``smoke input: ...`` saying what it read. Nothing is downloaded.

The driver runs each script as its own process (``python -m benchmarks.NAME --smoke``), prints its wall seconds,
and exits 1 naming every script that failed. Modules without a ``__main__`` block (``datasets``,
``sap_evaluation``) are helpers: the scripts that import them exercise them. Two things keep the run short:

* one Prefect server for the whole run (``prefect server start --no-services --no-ui`` on a free loopback port, in
  a temporary ``PREFECT_HOME``), started in the background at once and stopped at the end; the scripts that start
  ``ppdp`` flows (:data:`PREFECT_SCRIPTS`) wait until it answers and get its address as ``PREFECT_API_URL``, so
  their ``ppdp`` processes talk to it instead of each starting a temporary server (about 15 s each).
  ``--no-server`` (or a server that does not start) leaves each ``ppdp`` process its temporary server;
* one thread per process for OpenMP and BLAS (``OMP_NUM_THREADS=1`` and the like, unless set already): on a few
  hundred rows their thread pools only add start-up and, with two scripts at a time on two cores, contention
  (scikit-learn's histogram gradient boosting took 1 to 20 s instead of 0.05 s on 240 rows).

The longest scripts (:data:`FIRST`) are started first, so that the short ones fill the other slot.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REAL_SHARED = REPO.parent / "shared" / "data"
SMOKE_ROWS = 300
SHARED_ENV = "PPDP_BENCH_SHARED"  # benchmarks.datasets.SHARED reads it (spawned worker processes see it too)
NO_SHARED_ENV = "PPDP_SMOKE_NO_SHARED"  # set by ``--no-shared``: behave as if ../shared/data were absent

_workdir: Path | None = None


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--smoke", action="store_true",
                        help="tiny input, smallest grid, one repeat; writes only into a temporary folder "
                             "(make bench-smoke)")


def workdir() -> Path:
    """This process's temporary folder for everything a smoke run writes (removed at exit)."""
    global _workdir
    if _workdir is None:
        _workdir = Path(tempfile.mkdtemp(prefix="ppdp-smoke-"))
        atexit.register(shutil.rmtree, _workdir, True)
    return _workdir


def shared_available() -> bool:
    return REAL_SHARED.is_dir() and not os.environ.get(NO_SHARED_ENV)


def say(text: str) -> None:
    print(f"smoke input: {text}", flush=True)


WARNING = "smoke warning: "


def warn(text: str) -> None:
    """A line ``make bench-smoke`` shows whether or not the script passes (something a reader of CI must see)."""
    print(f"{WARNING}{text}", flush=True)


def tiny_shared(*rels: str, rows: int = SMOKE_ROWS) -> Path:
    """A temporary stand-in for ``../shared/data`` holding ``rels``: the header and ``rows`` evenly spaced data lines
    of each real file (bytes kept: separator, line endings; hierarchy files whole), or a generated stand-in when
    ``../shared/data`` is absent. A file neither present nor generable is left out (the script's own "absent"
    handling runs). Prints one line saying which; sets ``PPDP_BENCH_SHARED`` to the folder."""
    root = workdir() / "shared-data"
    copied, generated, missing = [], [], []
    for rel in rels:
        src, dest = REAL_SHARED / rel, root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if shared_available() and src.is_file():
            with open(src, newline="", encoding="utf-8") as f:
                lines = f.read().splitlines(keepends=True)
            step = max(1, (len(lines) - 1) // rows)  # evenly spaced: class-sorted files keep every class
            keep = lines if "hierarchy" in src.name else lines[:1] + lines[1::step][:rows]
            with open(dest, "w", newline="", encoding="utf-8") as f:
                f.write("".join(keep))
            copied.append(rel)
        elif rel in GENERATORS:
            GENERATORS[rel](dest, rows)
            generated.append(rel)
        else:
            missing.append(rel)
    parts = []
    if copied:
        parts.append(f"{rows} rows evenly spaced through ../shared/data/{{{', '.join(copied)}}}"
                     + (" (hierarchy files whole)" if any("hierarchy" in r for r in copied) else ""))
    if generated:
        parts.append(f"generated {rows}-row stand-ins for {', '.join(generated)} (../shared/data "
                     f"{'absent' if not REAL_SHARED.is_dir() else 'not used: --no-shared'})")
    if missing:
        parts.append(f"no stand-in for {', '.join(missing)} (skipped by the script)")
    say("; ".join(parts))
    os.environ[SHARED_ENV] = str(root)
    datasets = sys.modules.get("benchmarks.datasets")
    if datasets is not None:  # its loaders read its SHARED, bound at import
        datasets.SHARED = root
    return root


# -- generated stand-ins (UCI Adult's columns and categories; values drawn, not real records) --------------------
EDUCATION = ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad", "Some-college",
             "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate"]
CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay"],
    "marital-status": ["Married-civ-spouse", "Never-married", "Divorced", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Prof-specialty", "Craft-repair", "Exec-managerial", "Adm-clerical", "Sales", "Other-service",
                   "Machine-op-inspct", "Transport-moving", "Handlers-cleaners", "Farming-fishing", "Tech-support",
                   "Protective-serv", "Priv-house-serv", "Armed-Forces"],
    "relationship": ["Husband", "Not-in-family", "Own-child", "Unmarried", "Wife", "Other-relative"],
    "race": ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"],
    "sex": ["Male", "Female"],
    "native-country": ["United-States", "Mexico", "Philippines", "Germany", "Canada", "India"],
}
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                 "income"]
ARX_COLUMNS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation",
               "salary-class"]
AGES = list(range(17, 91))


def adult_frame(rows: int, seed: int = 0, missing: bool = True):
    """A table with UCI Adult's 15 columns and categories; income depends on education and age (a signal)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)

    def skewed(values: list[str]) -> np.ndarray:
        p = 1.0 / np.arange(1, len(values) + 1) ** 1.5
        return np.asarray(values, dtype=object)[rng.choice(len(values), rows, p=p / p.sum())]

    p_edu = np.r_[np.full(8, 0.02), 0.32, 0.22, np.full(6, 0.04)]
    edu = rng.choice(len(EDUCATION), rows, p=p_edu / p_edu.sum())
    age = rng.integers(17, 91, rows)
    frame = pd.DataFrame({
        "age": age, "workclass": skewed(CATEGORIES["workclass"]), "fnlwgt": rng.integers(20_000, 600_000, rows),
        "education": np.asarray(EDUCATION, dtype=object)[edu], "education-num": edu + 1,
        "marital-status": skewed(CATEGORIES["marital-status"]), "occupation": skewed(CATEGORIES["occupation"]),
        "relationship": skewed(CATEGORIES["relationship"]), "race": skewed(CATEGORIES["race"]),
        "sex": np.asarray(CATEGORIES["sex"], dtype=object)[rng.integers(0, 2, rows)],
        "capital-gain": np.where(rng.random(rows) < 0.1, rng.integers(1, 20_000, rows), 0),
        "capital-loss": np.where(rng.random(rows) < 0.05, rng.integers(1, 3_000, rows), 0),
        "hours-per-week": rng.integers(1, 100, rows), "native-country": skewed(CATEGORIES["native-country"]),
    })
    score = 0.35 * edu + 0.04 * np.minimum(age, 60) + rng.normal(0, 1.0, rows)
    frame["income"] = np.where(score > np.quantile(score, 0.75), ">50K", "<=50K")
    if missing:  # Adult writes missing cells as '?'
        for col in ("workclass", "occupation", "native-country"):
            frame.loc[rng.random(rows) < 0.03, col] = "?"
    return frame


def census_sample(rows: int = SMOKE_ROWS) -> Path:
    """``rows`` evenly spaced rows of ``examples/data/census_demo.csv`` (shipped with the repository), in
    :func:`workdir`."""
    src = REPO / "examples" / "data" / "census_demo.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    dest = workdir() / "census_demo_sample.csv"
    dest.write_text("".join(lines[:1] + lines[1::max(1, (len(lines) - 1) // rows)][:rows]), encoding="utf-8")
    say(f"{rows} rows evenly spaced through examples/data/census_demo.csv")
    return dest


def _adult(dest: Path, rows: int) -> None:
    adult_frame(rows, 0).to_csv(dest, index=False)


def _adult_test(dest: Path, rows: int) -> None:
    frame = adult_frame(rows, 1)
    frame["income"] = frame["income"] + "."  # as UCI's adult.test
    frame.to_csv(dest, index=False)


def _arx_adult(dest: Path, rows: int) -> None:
    frame = adult_frame(rows, 0, missing=False).rename(columns={"income": "salary-class"})[ARX_COLUMNS]
    frame.to_csv(dest, sep=";", index=False, lineterminator="\r\n")  # ARX's format


def _hierarchy(column: str):
    def write(dest: Path, rows: int) -> None:
        if column == "age":
            lines = [f"{a};{a - a % 5}-{a - a % 5 + 4};{a - a % 10}-{a - a % 10 + 9};{a - a % 20}-{a - a % 20 + 19};*"
                     for a in AGES]
        elif column in ("race", "sex", "salary-class"):
            values = CATEGORIES.get(column, ["<=50K", ">50K"])
            lines = [f"{v};*" for v in values]
        else:
            values = EDUCATION if column == "education" else CATEGORIES[column]
            lines = [f"{v};group-{i * 3 // len(values)};*" for i, v in enumerate(values)]
        dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return write


VOTE_COLUMNS = ["handicapped-infants", "water-project-cost-sharing", "adoption-of-the-budget-resolution",
                "physician-fee-freeze", "el-salvador-aid", "religious-groups-in-schools", "anti-satellite-test-ban",
                "aid-to-nicaraguan-contras", "mx-missile", "immigration", "synfuels-corporation-cutback",
                "education-spending", "superfund-right-to-sue", "crime", "duty-free-exports",
                "export-administration-act-south-africa"]


def _vote(dest: Path, rows: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    party = rng.random(rows) < 0.6
    frame = pd.DataFrame({"class": np.where(party, "democrat", "republican")})
    for i, col in enumerate(VOTE_COLUMNS):
        yes = rng.random(rows) < np.where(party, 0.2 + 0.04 * i, 0.8 - 0.04 * i)
        frame[col] = np.where(rng.random(rows) < 0.04, "?", np.where(yes, "y", "n"))
    frame.to_csv(dest, index=False)


GENERATORS = {
    "adult/adult.csv": _adult,
    "adult/adult_test.csv": _adult_test,
    "adult/arx/adult.csv": _arx_adult,
    **{f"adult/arx/adult_hierarchy_{c}.csv": _hierarchy(c) for c in
       ["age", "education", "marital-status", "native-country", "occupation", "race", "salary-class", "sex",
        "workclass"]},
    "vote/vote.csv": _vote,
}
ARX_FILES = ("adult/arx/adult.csv", *[f"adult/arx/adult_hierarchy_{c}.csv" for c in
                                      ["age", "education", "marital-status", "native-country", "occupation", "race",
                                       "salary-class", "sex", "workclass"]])


# -- the driver ------------------------------------------------------------------------------------------------------
def scripts() -> tuple[list[str], list[str]]:
    """(benchmark scripts, helper modules): every ``benchmarks/*.py`` but ``__init__`` and this module."""
    run, helpers = [], []
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.stem in ("__init__", "smoke"):
            continue
        (run if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8") else helpers).append(path.stem)
    return run, helpers


PREFECT_SCRIPTS = ("adult_release_steps", "bad_input_refusal", "compare_adult", "distributed_release",
                   "interrupt_latency", "release_overhead", "report_screenshots")  # run ppdp flows
FIRST = ("dp_epsilon", "compare_adult", "report_screenshots", "release_overhead", "second_run",
         "privacy_speed")  # the longest
ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def stop_server(proc: subprocess.Popen, log) -> None:
    """Stop a server process (terminate, then kill after 30 s) and close its log."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.close()


class PrefectServer:
    """``prefect server start`` in the background for the whole smoke run (see the module docstring)."""

    def __init__(self, env: dict[str, str]) -> None:
        with socket.socket() as probe:  # a free loopback port
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.home = Path(tempfile.mkdtemp(prefix="ppdp-smoke-prefect-"))
        self.api = f"http://127.0.0.1:{port}/api"
        server_env = {**env, "PREFECT_HOME": str(self.home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                      "PREFECT_SERVER_LOGGING_LEVEL": "WARNING"}
        self.log = open(self.home / "server.log", "w+", encoding="utf-8")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [str(Path(sys.executable).with_name("prefect")), "server", "start", "--host", "127.0.0.1", "--port",
             str(port), "--no-services", "--no-ui", "--analytics-off"],
            env=server_env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.home)
        self.started = time.perf_counter()
        self.state = "starting"  # then "up" or "failed"
        self._next_check = 0.0

    def poll(self) -> str:
        """The server's state: ``starting``, ``up`` or ``failed`` (exited, or not answering after 120 s); asks it
        at most every 0.3 s."""
        now = time.perf_counter()
        if self.state != "starting" or now < self._next_check:
            return self.state
        self._next_check = now + 0.3
        try:
            with urllib.request.urlopen(f"{self.api}/health", timeout=1) as r:  # noqa: S310 - loopback only
                if r.read().strip() == b"true":
                    self.state = "up"
                    print(f"bench-smoke: Prefect server up at {self.api} after {now - self.started:.1f} s",
                          flush=True)
        except OSError:
            if self.proc.poll() is not None or now - self.started > 120:
                self.state = "failed"
                self.log.seek(0)
                tail = self.log.read().strip().splitlines()[-5:]
                print("bench-smoke: the Prefect server did not start; each ppdp process starts its own\n     "
                      + "\n     ".join(tail), flush=True)
        return self.state

    def stop(self) -> None:
        stop_server(self.proc, self.log)
        shutil.rmtree(self.home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated script names (default: every benchmark)")
    parser.add_argument("--no-shared", action="store_true", help="behave as if ../shared/data were absent")
    parser.add_argument("--no-server", action="store_true",
                        help="no shared Prefect server: each ppdp process starts its own temporary one")
    parser.add_argument("--jobs", type=int, default=1, help="scripts run at the same time")
    args = parser.parse_args(argv)
    names, helpers = scripts()
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            parser.error(f"unknown benchmarks {unknown}; known: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    print(f"bench-smoke: {len(names)} benchmarks ({', '.join(helpers)}: helper modules, run through the scripts "
          "that import them)", flush=True)
    env = {k: v for k, v in os.environ.items() if k not in (SHARED_ENV, "PREFECT_API_URL")}
    if args.no_shared:
        env[NO_SHARED_ENV] = "1"
    for key in ONE_THREAD:
        env.setdefault(key, "1")
    logs = Path(tempfile.mkdtemp(prefix="ppdp-bench-smoke-"))
    started = time.perf_counter()
    server = None if args.no_server or not set(PREFECT_SCRIPTS) & set(names) else PrefectServer(env)
    try:
        results = _run_all(names, env, logs, max(1, args.jobs), server)
    finally:
        if server is not None:
            server.stop()
    total = time.perf_counter() - started
    shutil.rmtree(logs, ignore_errors=True)
    failed = [n for n in names if results[n][0] != 0]
    print(f"bench-smoke: {len(names) - len(failed)} of {len(names)} passed in {total:.1f} s wall "
          f"(sum of the scripts' seconds {sum(s for _, s in results.values()):.1f} s, {args.jobs} at a time)")
    if failed:
        print(f"bench-smoke: FAILED: {', '.join(failed)}")
        return 1
    return 0


def _run_all(names: list[str], env: dict[str, str], logs: Path, jobs: int,
             server: PrefectServer | None) -> dict[str, tuple[int, float]]:
    """Run the scripts, ``jobs`` at a time, the longest first; a script of :data:`PREFECT_SCRIPTS` waits for the
    shared server (while others run). Returns {name: (exit status, wall seconds)}."""
    pending = [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]
    running: dict = {}
    results: dict[str, tuple[int, float]] = {}
    while pending or running:
        state = server.poll() if server is not None else "failed"
        while len(running) < jobs:
            name = next((n for n in pending if n not in PREFECT_SCRIPTS or state != "starting"), None)
            if name is None:
                break
            pending.remove(name)
            child_env = env
            if server is not None and state == "up" and name in PREFECT_SCRIPTS:
                child_env = {**env, "PREFECT_API_URL": server.api}
            log = open(logs / f"{name}.log", "w+", encoding="utf-8")  # noqa: SIM115 - closed below
            proc = subprocess.Popen([sys.executable, "-m", f"benchmarks.{name}", "--smoke"], cwd=REPO,
                                    env=child_env, stdout=log, stderr=subprocess.STDOUT)
            running[name] = (proc, log, time.perf_counter())
        for name, (proc, log, t0) in list(running.items()):
            if proc.poll() is None:
                continue
            seconds = time.perf_counter() - t0
            del running[name]
            log.seek(0)
            text = log.read()
            log.close()
            results[name] = (proc.returncode, seconds)
            note = next((ln for ln in text.splitlines() if ln.startswith("smoke input:")), "smoke input: (not said)")
            print(f"{'ok  ' if proc.returncode == 0 else 'FAIL'} {name:<28} {seconds:6.1f} s  {note[13:]}", flush=True)
            warned = [ln[len(WARNING):] for ln in text.splitlines() if ln.startswith(WARNING)]
            if warned:
                print("     warning: " + "\n     warning: ".join(warned), flush=True)
            if proc.returncode != 0:
                print("     " + "\n     ".join(text.rstrip().splitlines()[-25:]), flush=True)
        time.sleep(0.05)
    return results


if __name__ == "__main__":
    raise SystemExit(main())
