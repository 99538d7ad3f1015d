"""The human-readable report of a release: one self-contained HTML page (``report.html``), and the same summary as
markdown and as a table (for Prefect artifacts).

The page is built from the release folder alone (``manifest.json``, ``data.parquet``; ``tuning.png`` is only
hashed; a distributed release's row files ``data/part-*.parquet`` are each hashed and only the first is read, its
class figures are the manifest's) and is deterministic: the same folder gives byte-identical HTML (no render time,
no installed library version, the manifest's ``versions`` instead; the figures are inline SVG drawn here, so no
plotting library's version changes a byte). It needs nothing to be read: inline CSS, inline SVG, no script, no
external link, font or image; a Content-Security-Policy forbids any load or script.

It says first what the release protects against and what it does not (from the manifest's attacker's view, the
release as an attacker holding the table sees it), and gives a two-part verdict: the policy, and the safety floor
beneath every policy (``manifest.privacy.floor``; a release published below it on purpose gets a red header with
the owner's reason). The risk section leads with the attacker's view and the floor; the privacy unit's own figures
come after. A manifest made before the safety floor (no attacker's view, no floor) still renders and says so.

No data value appears in it: counts, aggregates (sizes, shares, accuracies, hashes) and column names only. A
class label is shown only when it occurs at least k times in the published table (:func:`label_min_count`);
otherwise the class is named by its position among the sorted labels (``class #0``), as the manifest's tuning
trace and gate messages name it. Every string is HTML-escaped (a column may be called ``<script>``).

This package imports neither Prefect nor Great Expectations: the release flow calls it while publishing, and
``ppdp report RELEASE_DIR`` calls it to regenerate a report.

The package, one responsibility a module: :mod:`~ppdp.tasks.report.page` (the page: its sections in order, the
header, reading and writing ``report.html``), :mod:`~ppdp.tasks.report.sections` and
:mod:`~ppdp.tasks.report.risk` (the sections' bodies), :mod:`~ppdp.tasks.report.context` (the release as the sections
read it), :mod:`~ppdp.tasks.report.charts` (the private SVG chart kit), :mod:`~ppdp.tasks.report.markup` (HTML blocks,
and ``style.css``, the stylesheet), :mod:`~ppdp.tasks.report.artifacts` (markdown and table),
:mod:`~ppdp.tasks.report.wording` (the release in words, shared by the page and the artifacts) and
:mod:`~ppdp.tasks.report.fmt` (how a value is written). A method's description is the method's own
(``Sanitizer.description``): the report holds no table of methods.
"""

from ppdp.tasks.report.artifacts import TableRow, report_markdown, report_table, table_cell
from ppdp.tasks.report.markup import html_page
from ppdp.tasks.report.page import REPORT_NAME, SECTIONS, load_folder, render_report, write_atomic, write_report
from ppdp.tasks.report.wording import label_min_count

__all__ = ["REPORT_NAME", "SECTIONS", "TableRow", "table_cell", "html_page", "label_min_count", "load_folder",
           "render_report", "report_markdown", "report_table", "write_atomic", "write_report"]
