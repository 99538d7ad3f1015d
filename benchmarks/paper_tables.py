"""What the scripts reproducing a paper's table share: their common options and the run over the chosen data
sets (a data set whose file is absent is skipped with one line)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from benchmarks import smoke

T = TypeVar("T")


def table_parser(description: str, datasets: Iterable[str], output: Path, repeats: int) -> argparse.ArgumentParser:
    """``--datasets`` (comma-separated, default ``datasets``), ``--repeats``, ``--seed``, ``--no-figures``,
    ``--output`` (default ``output``, the committed results file) and ``--smoke``; the script adds its own."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--datasets", default=",".join(datasets))
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-figures", action="store_true")
    parser.add_argument("--output", type=Path, default=output,
                        help="where to write the tables (default: the committed results file)")
    smoke.add_flag(parser)
    return parser


def dataset_runs(datasets: str, run: Callable[[str], T]) -> Iterator[tuple[str, T]]:
    """``(name, run(name))`` for each name of the comma-separated ``datasets``, in order; a data set whose file is
    absent (``FileNotFoundError``) is skipped with a line saying so."""
    for name in [n.strip() for n in datasets.split(",") if n.strip()]:
        try:
            result = run(name)
        except FileNotFoundError as exc:
            print(f"{name}: skipped: {exc}")
            continue
        yield name, result
