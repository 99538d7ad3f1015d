"""``report.html`` of a federated naive Bayes release: the model, what protects it, and its claims re-checked from
the published folder.

Like a release's report, the page is deterministic (no render time, the manifest's versions), self-contained (inline
CSS, no script, nothing loaded) and value-free: counts of cells, classes, attributes and parties, the minimum-count
rule's outcome and the re-checked claims. No count of the model, no class label and no attribute value is written
(they are in ``data.parquet``, which the page only hashes); no party's row count is known to the publisher.

The claims are re-checked by :func:`ppdp.tasks.federated.release.recheck_model` and passed in, so that this module
imports nothing of the federated package (which writes the page while staging a model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from ppdp.schemas.federate import FederatedManifest
from ppdp.tasks.report.fmt import esc, fmt
from ppdp.tasks.report.markup import STYLE_CSS, badge_html, html_dl, html_page, html_table


class Check(Protocol):
    """A re-checked claim (:class:`ppdp.tasks.federated.release.ModelCheck`)."""

    @property
    def name(self) -> str: ...
    @property
    def holds(self) -> bool: ...
    @property
    def value(self) -> float | None: ...
    @property
    def note(self) -> str: ...


def render_model_report(manifest: FederatedManifest, checks: Iterable[Check], files: Mapping[str, str]) -> str:
    """The HTML of a federated model's ``report.html``: ``checks`` re-checked from the folder, ``files`` the
    SHA-256 of each file the page describes (``data.parquet``, ``manifest.json``)."""
    checks = list(checks)
    m = manifest
    holds = all(c.holds for c in checks)
    rule = m.min_count
    classes = len(m.class_domain)
    values = sum(len(a.values) for a in m.attributes)
    verdict = (f'<div class="verdict {"ok" if holds else "bad"}">'
               + ("Every claim below holds, re-checked from the published folder."
                  if holds else f"{sum(not c.holds for c in checks)} of {len(checks)} claims do not hold.")
               + "</div>")
    what = (f"<p>This release publishes a <b>naive Bayes model</b> of the class column <b>{esc(m.class_column)}</b>, "
            f"learned over the rows of {fmt(len(m.parties))} parties without any party's rows or counts leaving it: "
            f"{esc(m.protocol)}.</p>"
            f"<p>data.parquet holds {fmt(m.rows)} cells: one count per class ({fmt(classes)} classes), then one per "
            f"class, attribute and value ({fmt(len(m.attributes))} attributes, {fmt(values)} values). No row of any "
            "party is published, nor any party's row count or the total number of rows.</p>")
    protects = (f"<p>Every published count is 0 or at least <b>k = {fmt(rule.k)}</b>. A count in [1, {fmt(rule.k)}) "
                + ("refuses the whole model." if rule.action == "refuse" else
                   f"is published as 0 and flagged: {fmt(rule.suppressed_cells)} such cells, and "
                   f"{fmt(rule.complementary_cells)} further cells flagged so that no suppressed count can be "
                   "narrowed from the published table and its totals")
                + ("; every suppressed cell passed the linear-programming suppression audit before publishing "
                   "(its feasible range reaches from 0 to k - 1, also for an attacker who knows which suppressed "
                   "counts are below k)." if rule.suppression_audit and rule.action != "refuse" else ".")
                + "</p><p>It does not protect against what a naive Bayes model reveals by design: the share of "
                "each class, and how each attribute value is spread over the classes, in cells of k or more.</p>")
    claims = html_table(("claim", "", "value", "what is checked"),
                    [(esc(c.name), badge_html(c.holds), "" if c.value is None else fmt(c.value), esc(c.note))
                     for c in checks], num=(2,), nowrap=(0,), marked=[not c.holds for c in checks])
    parties = html_table(("party", "file digest (keyed)"),
                     [(esc(p.name), esc(p.file_digest or "not recorded")) for p in m.parties], nowrap=(0,))
    attributes = html_table(("attribute", "kind", "values"),
                        [(esc(a.name), esc(a.kind), fmt(len(a.values))) for a in m.attributes], num=(2,))
    provenance = html_dl([("release", esc(m.release_id)), ("dataset", esc(m.dataset)),
                      ("created", esc(m.created_at.isoformat())), ("spec SHA-256", esc(m.spec_sha256)),
                      ("input digest", esc(m.input_digest or "not recorded")),
                      ("key id", esc(m.input_key_id or "not recorded")), ("seed", fmt(m.seed)),
                      ("ppdp", esc(m.versions.ppdp)),
                      *((esc(f"{name} SHA-256"), esc(digest)) for name, digest in sorted(files.items()))])
    body = (f"<header><h1>Federated model: {esc(m.dataset)}</h1><p>Release {esc(m.release_id)}</p>{verdict}</header>\n"
            f'<section id="summary"><h2>What was released</h2>{what}</section>\n'
            f'<section id="policy"><h2>What protects it</h2>{protects}</section>\n'
            f'<section id="checks"><h2>Claims, re-checked from the folder</h2>{claims}</section>\n'
            f'<section id="parties"><h2>Parties</h2>{parties}</section>\n'
            f'<section id="attributes"><h2>Attributes</h2>{attributes}</section>\n'
            f'<section id="provenance"><h2>Provenance</h2>{provenance}</section>\n')
    return html_page(f"Federated model report: {m.dataset} {m.release_id}", STYLE_CSS, f"ppdp {m.versions.ppdp}", body)


__all__ = ["render_model_report"]
