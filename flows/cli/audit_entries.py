"""``ppdp audit show``'s work, which needs pandas: a release's audit entries and, if it was published, a summary
of its manifest (method parameters, claims, utility: figures and names only), as text or JSON."""

from __future__ import annotations

import json
from pathlib import Path

from ppdp.flows.cli.output import console, fail
from ppdp.schemas.federate import FederatedManifest
from ppdp.tasks import audit
from ppdp.tasks.core.errors import PpdpError
from ppdp.tasks.publish import load_manifest, release_folder
from ppdp.tasks.utility import marginals_line


def show_entries(root: Path, release_id: str, as_json: bool) -> None:
    """Every audit entry of ``release_id``, one key: value line each (a blank line between entries)."""
    try:
        entries = audit.find_entries(root, release_id)
    except PpdpError as exc:
        fail(f"error: {exc}", exc.exit_code)
    if not entries:
        fail(f"error: no audit entry for release {release_id} under {root}", 2)
    shown: list[dict] = []
    blocks: list[list[tuple[str, str]]] = []
    for e in entries:
        fields = e.model_dump(mode="json")
        folder = release_folder(root, e.dataset, e.release_id)
        summary: list[tuple[str, str]]
        manifest: dict | None
        summary, manifest = ([], None)
        if e.status == "published" and (folder / "manifest.json").is_file():
            summary, manifest = manifest_summary(folder)
        shown.append({"entry": fields, "folder": str(folder) if manifest is not None else None, "manifest": manifest})
        files = ", ".join(f"{name} {digest[:12]}" for name, digest in (fields["files"] or {}).items()) or None
        blocks.append([(key, readable(files if key == "files" else value)) for key, value in fields.items()]
                      + summary)
    if as_json:
        console.print(json.dumps({"release_id": release_id, "root": str(root), "entries": shown}, indent=2),
                      markup=False)
        return
    width = max(len(key) for rows in blocks for key, _ in rows) + 2  # the values in one column
    for i, rows in enumerate(blocks):
        if i:
            console.print("", markup=False)  # a blank line between entries
        for key, value in rows:
            console.print(f"{key + ':':<{width}} {value}", markup=False)


def manifest_summary(folder: Path) -> tuple[list[tuple[str, str]], dict]:
    """``audit show``'s summary rows of a published release (method parameters on their own indented rows) and
    its manifest as JSON; a damaged manifest ends the command with one line (exit 1)."""
    try:
        summary = federated_summary(folder)  # None: not a federated model's manifest
        if summary is None:
            m = load_manifest(folder)
            claims = "; ".join(f"{c.name} {c.value if c.value is None else format(c.value, '.4g')} "
                               f"{c.comparison} {c.threshold:g}" for c in m.privacy.claims)
            summary = [("folder", str(folder)), ("method", m.method.name),
                       *((f"  {key}", readable(value)) for key, value in (m.method.params or {}).items()),
                       ("privacy", f"unit {m.unit}, k={m.privacy.k}; claims: {claims}"),
                       ("utility", f"accuracy={m.utility.accuracy:.4f} original={m.utility.accuracy_original or 0:.4f}"
                        if m.utility is not None and m.utility.accuracy is not None else
                        marginals_line(m.utility.marginals) if m.utility is not None
                        else "withheld (measured on the input: in the publisher's private record)")]
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except Exception as exc:  # noqa: BLE001 - a damaged manifest is one line, never a traceback
        fail(f"error: {folder / 'manifest.json'} cannot be read ({type(exc).__name__}); run ppdp audit verify", 1)
    return summary, manifest


def readable(value: object) -> str:
    """A JSON value as plain text: ``none``, ``true``, ``a, b``; a mapping as ``key value, key value`` (``key:
    value; key: value`` when its values nest)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        if any(isinstance(v, (dict, list)) for v in value.values()):
            return "; ".join(f"{k}: {readable(v)}" for k, v in value.items())
        return ", ".join(f"{k} {readable(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value)
    return str(value)


def federated_summary(folder: Path) -> list[tuple[str, str]] | None:
    """``audit show``'s summary of a federated naive Bayes model (``ppdp federate``); None for another manifest."""
    data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("kind") != "federated_naive_bayes":
        return None
    m = FederatedManifest.model_validate(data)
    return [("folder", str(folder)), ("model", f"federated naive Bayes, {m.rows} cells, class {m.class_column}"),
            ("parties", ", ".join(p.name for p in m.parties)),
            ("min_count", f"k={m.min_count.k} ({m.min_count.action}): {m.min_count.suppressed_cells} cells "
                          f"suppressed, {m.min_count.complementary_cells} complementary")]
