"""``ppdp series`` and ``ppdp series-rekey``: a dataset's releases as the publisher's series ledger holds them,
and the ledger bound to a rotated series key. The ledger's modules load pandas: imported when a command runs."""

from __future__ import annotations

from pathlib import Path

import typer

from ppdp.flows.cli import lazy
from ppdp.flows.cli.output import console, fail
from ppdp.tasks.core.errors import PpdpError


def series(
    dataset: str = typer.Argument(..., metavar="DATASET", help="The dataset's name (the spec's dataset)."),
    root: Path = typer.Option(..., "--root", metavar="DIR", help="The publish root."),
) -> None:
    """List a dataset's releases under a publish root, with their composed figures and the DP budget spent.

    The releases are those the publisher's series ledger holds (in this machine's ppdp config folder), oldest
    first; releases rolled back or never published are listed but not counted. Exit 2 when there is no ledger
    for the root on this machine, or it holds no release of the dataset."""
    try:
        path = lazy.series_ledger.ledger_path(root)
        entries = lazy.series_ledger.series_entries(root, dataset)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if path is None or not path.exists():
        fail(f"error: no series ledger for the publish root {root} on this machine (no release published there, or "
             "published with another ppdp config folder)", 2)
    if not entries:
        fail(f"error: the series ledger {path} holds no release of dataset {dataset}", 2)
    console.print(f"series of {dataset} under {root} (ledger {path})", markup=False)
    console.print(f"  {'release':<26} {'created (UTC)':<25} {'method':<18} {'unit':<19} {'records':>8} {'k':>5} "
                  f"{'epsilon':>8}  state", markup=False)
    spent = 0.0
    for e in entries:
        eps = "" if e.epsilon is None else f"{e.epsilon:.4g}"
        console.print(f"  {e.release_id:<26} {e.created_at:<25} {e.method:<18} {e.unit:<19} {e.records:>8,} "
                      f"{'' if e.k is None else e.k:>5} {eps:>8}  {e.state}", markup=False)
        if e.state in ("published", "pending") and e.epsilon is not None:
            spent += e.epsilon
        if e.state == "published":
            try:
                manifest = lazy.publish.load_manifest(lazy.publish.release_folder(root, dataset, e.release_id))
            except (PpdpError, OSError, ValueError):
                console.print("    (its manifest cannot be read)", markup=False)
                continue
            if manifest.series is not None:
                console.print(f"    {lazy.privacy_series.series_line(manifest.series)}", markup=False)
    console.print(f"  DP budget spent: epsilon {spent:.4g} (basic composition over the published DP releases)",
                  markup=False)


def series_rekey(
    root: Path = typer.Option(..., "--root", metavar="DIR", help="The publish root whose ledger to bind."),
    old_key_file: Path = typer.Option(..., "--old-key-file", metavar="FILE", help="A file holding the series key "
                                      "the ledger was written with (the old key, on one line)."),
) -> None:
    """Bind a publish root's series ledger to this machine's series key after the key was rotated.

    The ledger's own fingerprint key is unwrapped with the old series key and wrapped again with the current one
    ($PPDP_SERIES_KEY, else the config folder's series-key); fingerprints and history do not change, so releases
    stay judged with every earlier one.

    \b
    Exit codes:
      0  the ledger is bound to the current key
      2  no ledger for the root, or the old key does not open it"""
    try:
        old = old_key_file.read_bytes().strip()
    except OSError as exc:
        fail(f"error: --old-key-file {old_key_file}: cannot read it ({exc.strerror})", 2)
    least = lazy.series_ledger.MIN_KEY_CHARS
    if len(old) < least:
        fail(f"error: --old-key-file {old_key_file}: a series key has at least {least} characters", 2)
    try:
        before, after = lazy.series_ledger.rekey(root, old)
    except PpdpError as exc:
        fail(f"error: {exc}", 2)
    console.print(f"series ledger of {root} bound to the series key {after} (was {before})", markup=False)
