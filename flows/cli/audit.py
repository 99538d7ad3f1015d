"""``ppdp audit list|show|verify|recover|head``: read, verify and repair the audit trail of a publish root.

The trail's modules load pandas: they are imported when a command runs, not for ``ppdp audit --help`` (no
command here imports Prefect or a model library: tests/test_startup.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ppdp.flows.cli import lazy
from ppdp.flows.cli.output import console, console_err, fail
from ppdp.tasks.core.errors import PpdpError

ROOT_OPTION = typer.Option(..., "--root", metavar="DIR", help="The publish root (the folder holding audit.db).")


def audit_list(
    root: Path = ROOT_OPTION,
    every: bool = typer.Option(False, "--all", help="Show every stored entry: a publish writes two (pending, then "
                                                     "published or rolled back)."),
) -> None:
    """List the runs recorded under the publish root, one row per run, oldest first.

    A publish is recorded twice (a pending entry before its folder is renamed into place, then the entry that
    completes it): the row shows how it ended, with both sequence numbers. A pending entry that nothing completes is
    an interrupted publish (ppdp audit recover). --all shows the entries as stored; ppdp audit verify checks their
    signatures."""
    try:
        entries = lazy.audit.list_entries(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    completed = {e.completes: e for e in entries if e.completes is not None}
    rows = [("seq", "release", "dataset", "status", "finished (UTC)", "reason")]
    for e in entries:
        seq = str(e.seq)
        if not every:
            if e.completes is not None and e.completes in {p.seq for p in entries}:
                continue  # shown on its pending entry's row
            if e.seq in completed:  # a pending entry and the entry that completes it: one run
                seq, e = f"{e.seq}-{completed[e.seq].seq}", completed[e.seq]
            elif e.status == "pending":
                e = e.model_copy(update={"reason": f"interrupted publish ({e.reason}): run ppdp audit recover"})
        reason = e.reason if len(e.reason) < 100 else e.reason[:97] + "..."
        rows.append((seq, e.release_id, e.dataset, e.status, f"{e.finished_at:%Y-%m-%d %H:%M:%S}", reason))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]  # every column as wide as its widest cell
    for row in rows:
        cells = [row[0].rjust(widths[0]), *(cell.ljust(w) for cell, w in zip(row[1:5], widths[1:], strict=True))]
        console.print("  ".join([*cells, row[5]]).rstrip(), markup=False)


def audit_show(
    release_id: str = typer.Argument(..., metavar="RELEASE_ID", help="The release's id, as ppdp audit list "
                                     "shows it."),
    root: Path = ROOT_OPTION,
    as_json: bool = typer.Option(False, "--json", help="Print JSON for programs: the entries as stored and, if "
                                 "published, the release's folder and manifest."),
) -> None:
    """Show a release's audit entries and, if it was published, a summary of its manifest.

    One key: value line each; --json prints the same as JSON."""
    lazy.audit_entries.show_entries(root, release_id, as_json)


def audit_verify(
    root: Path = ROOT_OPTION,
    expect_head: str | None = typer.Option(
        None, "--expect-head", metavar="HEAD", help="A head printed earlier by ppdp audit head (the JSON text, or a "
        "file holding it): detects a rewound, truncated or forked trail."),
) -> None:
    """Verify the audit trail and every release folder under the publish root.

    Checks every signature, the hash chain, the head, every release folder's exact files and hashes, and that no
    release exists without its entry.

    \b
    Exit codes:
      0  intact
      1  altered or damaged: one line per finding
      2  bad input (no such root, an unreadable --expect-head)
    """
    notes: list[str] = []
    try:
        head = lazy.audit.parse_head(expect_head) if expect_head is not None else None
        problems = lazy.audit.verify(root, expect_head=head, notes=notes)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    for note in notes:  # what was not checked and why (input digests need the publisher's key): no finding
        console.print(f"note: {note}", markup=False)
    if problems:
        for p in problems:
            console_err.print(f"ppdp: audit: {p}", markup=False)
        raise typer.Exit(1)
    entries = lazy.audit.list_entries(root)
    published = sum(1 for e in entries if e.status == "published")
    witnessed = " (expected head matched)" if head is not None else ""
    console.print(f"audit trail intact: {len(entries)} entries, {published} published releases verified{witnessed}")


def audit_recover(root: Path = ROOT_OPTION) -> None:
    """Repair a publish root after a crash while publishing, then verify it.

    Completes each interrupted publish whose folder is in place with exactly its signed files, rolls back the
    others and removes .staging-* leftovers. Safe to run again (also after a crash of its own); waits for a
    running publish to end. Exit 1 when something is left to repair or verification finds a problem."""
    try:
        report = lazy.recovery.recover(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    for line in report.actions:
        console.print(f"recovered: {line}", markup=False)
    if not report.actions:
        console.print("nothing to recover", markup=False)
    problems = lazy.audit.verify(root) if lazy.audit.db_path(root).is_file() else []
    if report.left or problems:
        console_err.print(f"ppdp: audit: {report.left} item(s) left, {len(problems)} finding(s) remain: run "
                          f"ppdp audit verify --root {root}", markup=False)
        raise typer.Exit(1)
    console.print("audit trail intact after recovery" if lazy.audit.db_path(root).is_file() else
                  "no audit trail under the root (nothing was ever published there)", markup=False)


def audit_head(root: Path = ROOT_OPTION) -> None:
    """Print the signed head of the trail (one line of JSON) after checking its chain and signatures.

    Store it outside the root and give it back to ppdp audit verify --expect-head to detect a rewound trail."""
    try:
        head = lazy.audit.signed_head(root)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    console.print(json.dumps(head, sort_keys=True), markup=False)
