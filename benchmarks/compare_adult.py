"""Time and peak memory of ``ppdp compare`` on UCI Adult, with the thread runner and with the Dask runner.

    .venv/bin/python -m benchmarks.compare_adult [--runners thread,dask] [--publish] [--output PATH]

Each run is a whole ``ppdp compare examples/adult.yaml --runner R`` process (every registered method, each tuned
with its default strategy; ``--out`` and the publish root in a temporary folder, a fresh ``PPDP_CONFIG_DIR`` and
``PREFECT_HOME``: Prefect's temporary server starts in each run, and its start is in the wall time). Measured from
outside: the process's wall time; memory by sampling, every 0.2 s, the resident set (RSS) of the ``ppdp`` process
and of every process under it (Dask's local cluster: its scheduler and worker processes; Prefect's temporary server,
a uvicorn process, counted apart), with ``psutil``. The peaks are sampled peaks: a spike shorter than 0.2 s may be
missed. Also recorded: each method's own seconds and status (from ``compare.json``), the recommendation, whether
the runs gave the same table (times aside), and the load average (the machine is shared: figures taken under a
load above its cores are inflated). ``--publish``: ``ppdp run`` the spec written for the recommendation and
``ppdp validate --release --original`` it.

Needs ``../shared/data/adult/adult.csv``; exits 0 with a message when it is absent. Writes the markdown table to
``benchmarks/results/compare_adult.md`` (``--output``).

``--smoke`` (``make bench-smoke``): the spec's source replaced by 300 rows of Adult (a generated stand-in where
../shared/data is absent), the thread runner only; the Prefect server at ``PREFECT_API_URL`` when one is set (the
smoke driver starts one for all its scripts) instead of a temporary one per run; the table goes to a temporary
folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "examples" / "adult.yaml"
DATA = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
RESULTS = REPO / "benchmarks" / "results" / "compare_adult.md"
SOURCE: list[str] = []  # --set arguments replacing the spec's source (smoke runs)
KEEP_API = False  # smoke runs: use the server at PREFECT_API_URL (when set) rather than a temporary one per run


def _tree_rss(pid: int) -> tuple[int, int, int]:
    """(RSS of ``pid``, RSS of its descendants except Prefect's server, RSS of Prefect's server), in bytes."""
    import psutil

    try:
        root = psutil.Process(pid)
        main = root.memory_info().rss
        others = server = 0
        for child in root.children(recursive=True):
            try:
                rss = child.memory_info().rss
                if "uvicorn" in " ".join(child.cmdline()):
                    server += rss
                else:
                    others += rss
            except psutil.Error:
                continue
        return main, others, server
    except psutil.Error:
        return 0, 0, 0


def run_compare(runner: str, workdir: Path) -> dict:
    """One ``ppdp compare`` process on Adult with ``runner``; its wall time, sampled memory peaks and result."""
    env = {**os.environ, "PPDP_CONFIG_DIR": str(workdir / "config"), "PREFECT_HOME": str(workdir / "prefect"),
           "PPDP_SERIES_KEY": "b" * 40}  # the same row-order key for the compare and the publish (see the README)
    if not KEEP_API:
        env.pop("PREFECT_API_URL", None)
    out, written = workdir / "out", workdir / "recommended.yaml"
    cmd = [str(Path(sys.executable).with_name("ppdp")), "compare", str(SPEC), "--runner", runner, "--out", str(out),
           "--write-spec", str(written), "--set", f"publish.root={workdir / 'releases'}", *SOURCE]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with open(workdir / "log.txt", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO)
        peak = {"main": 0, "children": 0, "server": 0, "total": 0}
        while proc.poll() is None:
            main, children, server = _tree_rss(proc.pid)
            peak["main"] = max(peak["main"], main)
            peak["children"] = max(peak["children"], children)
            peak["server"] = max(peak["server"], server)
            peak["total"] = max(peak["total"], main + children + server)
            time.sleep(0.2)
    wall = time.perf_counter() - started
    result = json.loads((out / "compare.json").read_text()) if (out / "compare.json").is_file() else None
    return {"runner": runner, "exit": proc.returncode, "wall": wall, "peak": peak, "load": (load_before,
            os.getloadavg()[0]), "result": result, "written": written, "env": env, "workdir": workdir}


def publish(run: dict) -> tuple[int, int, str]:
    """``ppdp run`` the written spec, then ``ppdp validate --release --original``: (run exit, validate exit,
    the published utility line)."""
    ppdp = str(Path(sys.executable).with_name("ppdp"))
    done = subprocess.run([ppdp, "run", str(run["written"])], capture_output=True, text=True, env=run["env"], cwd=REPO)
    line = next((x.strip() for x in done.stdout.splitlines() if x.strip().startswith("utility")), "")
    folders = sorted((run["workdir"] / "releases").glob("*/*/manifest.json"))
    if done.returncode != 0 or not folders:
        return done.returncode, -1, line
    checked = subprocess.run([ppdp, "validate", "--release", str(folders[-1].parent), "--original", str(DATA)],
                             capture_output=True, text=True, env=run["env"], cwd=REPO)
    return done.returncode, checked.returncode, line


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f}"


def _differences(a: dict, b: dict) -> list[str]:
    """The fields two comparable results differ in (``method.field`` for a row's)."""
    out = [k for k in a if k != "rows" and a.get(k) != b.get(k)]
    for row, other in zip(a["rows"], b["rows"], strict=False):
        out += [f"{row['method']}.{k}" for k in row if row.get(k) != other.get(k)]
    return out


def report(runs: list[dict], published: dict[str, tuple[int, int, str]]) -> str:
    rows = next((f"{r['result']['input_rows']:,}" for r in runs if r["result"] is not None), "the")
    lines = [
        "# `ppdp compare` on UCI Adult: time and peak memory, thread and Dask runners",
        "",
        f"`python -m benchmarks.compare_adult` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC), {os.cpu_count()} CPUs; "
        f"`ppdp compare examples/adult.yaml --runner R` ({rows} input rows, `?` read as missing; every registered "
        "method, each tuned with its default strategy). Each run is a fresh process with Prefect's "
        "temporary server (its start and stop are in the wall time). Memory: RSS sampled every 0.2 s with psutil "
        "(sampled peaks): the `ppdp` process, the processes under it (Dask's scheduler and workers) and Prefect's "
        "server apart; \"total\" is the peak of their sum.",
        "",
        "| runner | exit | wall (s) | peak RSS ppdp (MB) | peak RSS Dask processes (MB) | peak RSS Prefect server (MB) "
        "| peak RSS total (MB) | load before / after |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        p = r["peak"]
        lines.append(f"| {r['runner']} | {r['exit']} | {r['wall']:.1f} | {_mb(p['main'])} | {_mb(p['children'])} | "
                     f"{_mb(p['server'])} | {_mb(p['total'])} | {r['load'][0]:.2f} / {r['load'][1]:.2f} |")
    results = [r for r in runs if r["result"] is not None]
    if results:
        lines += ["", "Per method (each method's own seconds inside its task: hold-out, tuning, sanitizing, judging; "
                  "methods run side by side, so they overlap):", "",
                  "| method | status | tuned | accuracy ratio | risk | " + " | ".join(
                      f"s ({r['runner']})" for r in results) + " |",
                  "|---|---|---|---:|---:|" + "---:|" * len(results)]
        first = results[0]["result"]
        for row in first["rows"]:
            risk = row["linkage_risk"] if row["identity_by"] == "records" else row["average_risk"]
            secs = []
            for r in results:
                other = next(x for x in r["result"]["rows"] if x["method"] == row["method"])
                secs.append(f"{other['seconds']:.1f}")
            lines.append(f"| {row['method']} | {row['status'].replace('_', ' ')} | {row['tuned'] or ''} | "
                         f"{'' if row['accuracy_ratio'] is None else format(row['accuracy_ratio'], '.3f')} | "
                         f"{'' if risk is None else format(risk, '.4g')} | " + " | ".join(secs) + " |")
        lines += ["", f"Recommendation ({first['runner']}): {first['recommendation']}"]
        for note in first.get("notes", []):
            lines.append(f"Note: {note}")

        def strip(res: dict) -> dict:
            # as ppdp.tasks.compare.comparable: the input's digest is keyed, and each run has a fresh key
            data = {k: v for k, v in res.items() if k not in ("seconds", "runner", "input_digest", "input_key_id")}
            data["rows"] = [{k: v for k, v in row.items() if k != "seconds"} for row in res["rows"]]
            return data

        if len(results) > 1:
            differ = sorted({name for r in results[1:] for name in _differences(strip(first), strip(r["result"]))})
            same = all(strip(r["result"]) == strip(first) for r in results[1:])
            lines.append(f"The runs gave {'the same' if same else 'DIFFERENT'} table and recommendation (times "
                         "aside, and the input's keyed digest)" + ("." if same else f": {', '.join(differ[:12])}."))
        reasons = [(row["method"], row["reason"]) for row in first["rows"] if row["reason"]]
        if reasons:
            lines += ["", "Reasons given:", ""] + [f"- {m}: {why}" for m, why in reasons]
    for runner, (run_exit, validate_exit, line) in published.items():
        lines += ["", f"The spec written for the recommendation ({runner} run): `ppdp run` exit {run_exit} "
                      f"({line}); `ppdp validate --release --original` exit {validate_exit}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runners", default="thread,dask", help="comma-separated: thread, dask")
    parser.add_argument("--publish", action="store_true", help="publish and validate the recommended spec")
    parser.add_argument("--output", type=Path, default=RESULTS)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    global DATA, SOURCE, KEEP_API
    if args.smoke:
        KEEP_API = True
        DATA = smoke.tiny_shared("adult/adult.csv") / "adult" / "adult.csv"
        # two methods that pass on 300 rows run the comparison's whole path: the Prefect run, a task per method,
        # the table, the recommendation and the written spec
        SOURCE = ["--set", f"source.path={DATA}", "--methods", "condensation,sample_generation"]
        args.runners, args.output = "thread", smoke.workdir() / "compare_adult.md"
    if not DATA.is_file():
        print(f"skipped: {DATA} is absent (the shared research data is not on this machine)")
        return 0
    runs, published = [], {}
    with tempfile.TemporaryDirectory(prefix="ppdp-compare-adult-") as tmp:
        for runner in [r.strip() for r in args.runners.split(",") if r.strip()]:
            workdir = Path(tmp) / runner
            workdir.mkdir()
            run = run_compare(runner, workdir)
            runs.append(run)
            print(f"{runner}: exit {run['exit']} in {run['wall']:.1f} s, peak RSS total {_mb(run['peak']['total'])} MB",
                  flush=True)
            if run["exit"] not in (0, 3):
                print((workdir / "log.txt").read_text()[-3000:])
            if args.publish and run["exit"] == 0:
                published[runner] = publish(run)
                print(f"  published: run exit {published[runner][0]}, validate exit {published[runner][1]}")
        text = report(runs, published)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
