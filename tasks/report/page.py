"""The report page: its sections in order, the header with the two-part verdict, and reading, rendering and writing
``report.html`` from a release folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.reports import FloorReport
from ppdp.tasks.core.io import file_sha256
from ppdp.tasks.privacy.attacker import describe_floor_claim
from ppdp.tasks.privacy.recheck import load_parts, load_release, row_files_sample
from ppdp.tasks.report import risk, sections
from ppdp.tasks.report.context import Context
from ppdp.tasks.report.fmt import esc
from ppdp.tasks.report.markup import STYLE_CSS, html_page
from ppdp.tasks.report.wording import data_files_text, floor_verdict, policy_verdict, rows_text, verdict_text

REPORT_NAME = "report.html"
"""The report's file name inside a release folder."""

SECTIONS: tuple[tuple[str, str], ...] = (
    ("summary", "What was released"),
    ("policy", "Privacy policy and claims"),
    ("risk", "Disclosure risk"),
    ("series", "This release in its series"),
    ("utility", "Utility"),
    ("tuning", "Tuning"),
    ("checks", "Data checks"),
    ("provenance", "Provenance"),
)
"""The report's sections: stable ids (anchors) and headings, in page order."""


def load_folder(folder: Path) -> tuple[Manifest, pd.DataFrame]:
    """The manifest and the published table of a release folder; a missing or damaged file raises
    :class:`InputError` naming it (never quoting its content). The loader of ``ppdp validate --release``. The table
    is empty for a partitioned release (its parts: :func:`~ppdp.tasks.privacy.recheck.load_parts`) and for a
    distributed release (its row files are never read whole)."""
    manifest, frame, _ = load_release(folder)
    return manifest, frame


def render_report(folder: Path) -> str:
    """The HTML of ``report.html`` for the release folder ``folder`` (``manifest.json``, ``data.parquet``,
    optionally ``tuning.png``): deterministic, self-contained, value-free. A distributed release's row files
    (``data/part-*.parquet``) are each hashed, and only the first is read (a bounded sample: which class labels
    the page may name); its class figures are the manifest's.

    Raises
    ------
    InputError
        The folder, its manifest or its table is missing or cannot be read (one line naming the file).
    """
    folder = Path(folder)
    manifest, frame, data = load_release(folder)  # data: each data file's SHA-256, hashed once
    tables = load_parts(folder, manifest) if manifest.parts else {}
    if manifest.data_files:  # a distributed release: never every row file at once; figures from the manifest
        frame = row_files_sample(folder, manifest)
    files = {**data, **{name: file_sha256(folder / name) for name in ("manifest.json", "tuning.png", "pareto.png")
                        if (folder / name).is_file()}}
    return render(Context(manifest, frame, files, tables))


def write_report(folder: Path, out: Path | None = None) -> Path:
    """Render the report of ``folder`` and write it atomically (temporary file, then ``os.replace``) to ``out``,
    by default ``folder/report.html``; return the path written."""
    text = render_report(folder)
    target = Path(out) if out is not None else Path(folder) / REPORT_NAME
    write_atomic(target, text)
    return target


def write_atomic(target: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` through a temporary file in the same folder and ``os.replace``."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _verdict_badges(page: Context) -> str:
    """The two-part verdict: the policy, and the safety floor."""
    policy, floor = verdict_text(page.m)
    ok_policy, ok_floor = policy_verdict(page.m), floor_verdict(page.m)
    klass = {True: "ok", False: "bad", None: "muted"}
    return (f'<p class="verdicts"><span class="badge {klass[ok_policy]}">{esc(policy)}</span>'
            f'<span class="badge {klass[ok_floor]}">{esc(floor)}</span></p>')


def _alarm(page: Context) -> str:
    """Below the safety floor: the owner's reason, who approved it, and each failed floor row (the header)."""
    if floor_verdict(page.m) is not False:
        return ""
    floor = page.m.privacy.floor
    if floor is not None and floor.accepted is not None:
        a = floor.accepted
        failed = a.failed
        head = (f"<p><b>Published below the safety floor: {esc(a.reason)}</b></p>"
                f"<p>Approved by <b>{esc(a.approved_by)}</b>. Failed floor rows:</p>")
    else:
        failed = [describe_floor_claim(c) for f in _floors(page) for c in f.failed]
        head = ("<p><b>Below the safety floor</b>: no decision to publish below it is recorded.</p>"
                "<p>Failed floor rows:</p>")
    items = "".join(f"<li>{esc(f)}</li>" for f in dict.fromkeys(failed))
    return f'<div class="alarm">{head}<ul>{items}</ul></div>'


def _floors(page: Context) -> list[FloorReport]:
    """The release's floor and each part's (those measured)."""
    return [f for f in (page.m.privacy.floor, *(p.privacy.floor for p in page.m.parts)) if f is not None]


_BODIES: dict[str, Callable[[Context], str]] = {
    "summary": sections.summary, "policy": sections.policy, "risk": risk.risk, "series": sections.series,
    "utility": sections.utility, "tuning": sections.tuning, "checks": sections.checks,
    "provenance": sections.provenance}
"""Each section's body, by its id in :data:`SECTIONS`."""


def render(page: Context) -> str:
    """The page's HTML: the header (the two-part verdict; below the safety floor, the alarm), the table of contents,
    each section of :data:`SECTIONS` in order, the footer."""
    m = page.m
    floor_ok = floor_verdict(m)
    nav = "".join(f'<a href="#{sid}">{i}. {esc(title)}</a>' for i, (sid, title) in enumerate(SECTIONS, 1))
    blocks = []
    for i, (sid, title) in enumerate(SECTIONS, 1):
        body = _BODIES[sid](page)
        blocks.append(f'<section id="{sid}"><h2><span class="num">{i}</span>{esc(title)}</h2>{body}</section>')
    return html_page(
        f"Release report: {m.dataset} {m.release_id}", STYLE_CSS, f"ppdp {m.versions.ppdp}",
        f'<header class="top{" below" if floor_ok is False else ""}"><div class="wrap">'
        '<p class="eyebrow">ppdp release report</p>'
        f"<h1>{esc(m.dataset)}</h1><p class=\"sub\">Release <code>{esc(m.release_id)}</code> · created "
        f"{esc(m.created_at.strftime('%Y-%m-%d %H:%M UTC'))} · {rows_text(m)} · {esc(m.method.name)}</p>"
        f"{_verdict_badges(page)}{_alarm(page)}</div></header>\n"
        f'<nav class="toc"><div class="wrap">{nav}</div></nav>\n'
        f'<main class="wrap">\n' + "\n".join(blocks) + "\n</main>\n"
        f'<footer class="wrap">Generated by ppdp from this release folder\'s manifest.json and '
        f"{esc(data_files_text(m))}. "
        "No data value appears in this report: only counts, aggregates, column names, and class labels that "
        f"occur at least {page.k_labels} times in the published table.</footer>\n")
