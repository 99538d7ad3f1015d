"""Helpers of the benchmarks that time whole ``ppdp run`` processes on the census demo (``bad_input_refusal``,
``interrupt_latency``): the demo's spec and table in a folder of their own, the command line, and the closing
line against a target."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import yaml

from benchmarks import smoke

REPO = Path(__file__).resolve().parents[1]


def demo_spec(folder: Path, rows: int | None, name: str, edit: Callable[[pd.DataFrame], None] | None = None) -> Path:
    """``examples/census_demo.yaml`` and its table (the first ``rows`` rows; ``edit`` applied to the table), both
    written into ``folder`` as ``NAME.csv`` and ``NAME.yaml``, publishing under ``folder/releases``."""
    table = pd.read_csv(REPO / "examples" / "data" / "census_demo.csv", dtype=str)
    if rows is not None:
        table = table.head(rows)
    if edit is not None:
        edit(table)
    table.to_csv(folder / f"{name}.csv", index=False)
    spec = yaml.safe_load((REPO / "examples" / "census_demo.yaml").read_text(encoding="utf-8"))
    spec["source"]["path"] = str(folder / f"{name}.csv")
    spec["publish"]["root"] = str(folder / "releases")
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def arguments(doc: str, prefix: str) -> tuple[argparse.Namespace, int, Path]:
    """The benchmark's options (``--runs``, ``--out``, ``--smoke``), its number of runs and its work folder."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    smoke.add_flag(parser)
    args = parser.parse_args()
    folder = smoke.workdir() if args.smoke else Path(tempfile.mkdtemp(prefix=prefix))
    return args, 1 if args.smoke else args.runs, folder


def target_line(target: str, worst: float, bound: float) -> str:
    """Whether the worst run met the target (``target`` says it in words, ``bound`` in seconds), with the machine's
    load (the figures depend on it)."""
    return (f"target: {target}: {'met' if worst <= bound else 'NOT met'} (worst {worst:.2f} s; load average "
            f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


def finish(lines: list[str], args: argparse.Namespace) -> None:
    """Print the table, and write it to ``--out`` (never for a smoke run)."""
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out and not args.smoke:
        args.out.write_text(text, encoding="utf-8")
