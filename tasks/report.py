"""The human-readable report of a release: one self-contained HTML page (``report.html``), and the same summary as
markdown and as a table (for Prefect artifacts).

The page is built from the release folder alone (``manifest.json``, ``data.parquet``; ``tuning.png`` is only
hashed) and is deterministic: the same folder gives byte-identical HTML (no render time, no installed library
version, the manifest's ``versions`` instead; the figures are inline SVG drawn here, so no plotting library's
version changes a byte). It needs nothing to be read: inline CSS, inline SVG, no script, no external link, font
or image; a Content-Security-Policy forbids any load or script.

It says first what the release protects against and what it does not (from the manifest's attacker's view, the
release as an attacker holding the table sees it), and gives a two-part verdict: the policy, and the safety floor
beneath every policy (``manifest.privacy.floor``; a release published below it on purpose gets a red header with
the owner's reason). The risk section leads with the attacker's view and the floor; the privacy unit's own figures
come after. A manifest made before the safety floor (no attacker's view, no floor) still renders and says so.

No data value appears in it: counts, aggregates (sizes, shares, accuracies, hashes) and column names only. A
class label is shown only when it occurs at least k times in the published table (:func:`label_min_count`);
otherwise the class is named by its position among the sorted labels (``class #0``), as the manifest's tuning
trace and gate messages name it. Every string is HTML-escaped (a column may be called ``<script>``).

This module imports neither Prefect nor Great Expectations: the release flow calls it while publishing, and
``ppdp report RELEASE_DIR`` calls it to regenerate a report.
"""

from __future__ import annotations

import hashlib
import html
import math
import os
import re
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.privacy import FLOOR, FloorRule
from ppdp.schemas.reports import AttackerView, Claim, ExpectationOutcome, FloorReport, TuningTrace
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.ingest import file_sha256
from ppdp.tasks.layout import parts_digest
from ppdp.tasks.privacy.attacker import describe_floor_claim, view_lines
from ppdp.tasks.privacy.recheck import load_parts, load_release

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

TableRow = dict[str, str | int | float | None]

_UNIT_TEXT = {
    "equivalence_class": (
        "equivalence classes",
        "published rows that share all their quasi-identifier values form a class; someone who knows a person's "
        "quasi-identifiers can narrow them down to their class, never further"),
    "generating_group": (
        "generating groups",
        "every published row was synthesized from a group of input records, and the published group column "
        "names each row's group, so anyone can re-count the group sizes"),
    "record": (
        "records",
        "rows are perturbed or generated one by one; there are no classes, so the claims compare every original "
        "record with the published ones (distances, linkage, value distortion)"),
}

_METHOD_TEXT = {
    "condensation": "condensation: synthetic records generated from groups of at least k similar records "
                    "(Aggarwal and Yu)",
    "mdav": "MDAV microaggregation: records clustered in groups of at least k, quasi-identifiers replaced by the "
            "group's aggregate",
    "mondrian": "Mondrian multidimensional partitioning: the quasi-identifier space cut into regions of at least "
                "k records, values generalized to their region",
    "generalization": "full-domain generalization: quasi-identifiers coarsened along hierarchies, the level of each "
                      "chosen by a lattice search",
    "noise": "additive or multiplicative noise on the numeric attributes",
    "perturbation_tree": "perturbation tree: records partitioned by a tree, values replaced within each leaf",
    "sample_generation": "sample generation: new records drawn from models learned per class",
    "sap": "SAP: selected quasi-identifier or sensitive values suppressed",
    "svd": "SVD: numeric attributes replaced by a sparsified low-rank reconstruction",
    "uma": "univariate microaggregation: each numeric attribute aggregated on its own",
    "dmpd": "DMPD feature-set partitioning: the features split into disjoint subsets, each published with the class "
            "as its own table, k-anonymous over its quasi-identifiers (Matatov, Rokach and Maimon)",
}

_RISK_TEXT = (
    ("prosecutor_max", "prosecutor risk, highest", "1/|class| of the most exposed record (the attacker knows the "
                                                   "person is in the table)"),
    ("prosecutor_average", "prosecutor risk, average", "1/|class| averaged over the records"),
    ("records_at_risk", "records at risk", "share of records whose prosecutor risk exceeds the risk threshold"),
    ("journalist_max", "journalist risk, highest", "1/|population class| (the attacker does not know who is in "
                                                   "the table)"),
    ("journalist_average", "journalist risk, average", "averaged over the records"),
    ("marketer", "marketer risk", "expected share of records re-identified when every record is attacked"),
    ("sample_uniques", "sample uniques", "share of records alone in their class"),
)

_PERTURBATION_TEXT = (
    ("vd", "value difference (VD)", "||A - A'|| / ||A|| over the numeric attributes; larger: more distortion"),
    ("rp", "rank position change (RP)", "mean change of a value's rank; larger: more privacy"),
    ("rk", "rank kept (RK)", "share of values keeping their rank; smaller: more privacy"),
    ("cp", "correlation position change (CP)", "mean change of an attribute's correlation rank; larger: more "
                                               "privacy"),
    ("ck", "correlation rank kept (CK)", "share of attributes keeping their correlation rank; smaller: more "
                                         "privacy"),
)

_LATTICE_TEXT = {
    "loss": "ARX's loss: mean share of each value's domain lost to generalization (0 none, 1 all)",
    "discernibility": "discernibility: sum of squared class sizes (suppressed records count the table size)",
    "aecs": "average equivalence class size",
    "precision": "precision loss: mean generalization level relative to the hierarchy height",
    "entropy": "non-uniform entropy lost to generalization",
}

_COMPARISON = {">=": "≥", "<=": "≤", "<": "&lt;"}
_GATE_MEASURE = {"min_accuracy_ratio": "accuracy trained on the release / trained on the original rows",
                 "delta_r": "paper 004's R_p - (1 - epsilon) R_o, worst classifier"}

_SENSITIVE_GATES = {"l": "l-diversity", "t": "t-closeness", "alpha": "alpha-k-anonymity", "delta": "delta-disclosure",
                    "beta": "beta-likeness"}
PRE_FLOOR = "made before the safety floor (not measured)"
"""What the report says of a release whose manifest predates the safety floor (no attacker's view, no floor)."""


# -- the two-part verdict and what the release protects (shared by the page and the artifacts) -------------------
def policy_verdict(manifest: Manifest) -> bool | None:
    """Whether every privacy claim of the policy holds (None: the manifest lists no claim)."""
    claims = manifest.privacy.claims
    return all(c.passed for c in claims) if claims else None


def floor_verdict(manifest: Manifest) -> bool | None:
    """Whether the release meets the safety floor: its floor and every part's hold (None: made before the floor)."""
    floors = [f for f in (manifest.privacy.floor, *(p.privacy.floor for p in manifest.parts)) if f is not None]
    if manifest.privacy.floor is None and not floors:
        return None
    return all(f.holds for f in floors)


def verdict_text(manifest: Manifest) -> tuple[str, str]:
    """(the policy's part, the floor's part) of the two-part verdict, in words."""
    policy = {True: "policy holds", False: "policy fails", None: "no privacy claim"}[policy_verdict(manifest)]
    floor = {True: "safety floor holds", False: "below the safety floor", None: PRE_FLOOR}[floor_verdict(manifest)]
    return policy, floor


def floor_rule(claim: Claim) -> FloorRule | None:
    """The row of :data:`ppdp.schemas.privacy.FLOOR` a floor claim measures (None: not a floor claim)."""
    name = claim.name.removeprefix("floor: ")
    for rule in FLOOR:
        words = rule.key.replace("_", " ")
        if name == words or name.startswith(words + " ("):
            return rule
    return None


def floor_source_kind(rule: FloorRule | None) -> str:
    """'ppdp's choice' or 'cited standard': where a floor row's limit comes from."""
    if rule is None:
        return "unknown"
    return "ppdp's choice" if rule.source.startswith("ppdp's choice") else "cited standard"


def _columns_text(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "no column"


def _disclosure_text(view: AttackerView) -> str:
    """Each measured attribute disclosure against its baseline, in one clause each (shares only)."""
    out = []
    for d in view.disclosure:
        within = f" within ±{_fmt(d.tolerance, 3)}" if d.tolerance is not None else " exactly"
        out.append(f"{d.column}{within} for {_share(d.disclosure)} of the records, against {_share(d.baseline)} by the "
                   f"best constant guess without the release ({100 * d.gain:+.1f} points)")
    return "; ".join(out)


def _worst_part_text(m: Manifest) -> str:
    """Which table of a partitioned release the release's attacker's view is (the one with the smallest class)."""
    view = m.privacy.attacker_view
    name = next((p.name for p in m.parts if p.privacy.attacker_view == view), None)
    return (f"Its {len(m.parts)} tables are each seen on their own; these figures are those of "
            + (f"{name}, " if name else "") + "the table with the smallest class, which a linking attacker would "
            "pick.")


def protection_text(manifest: Manifest) -> tuple[str, str]:
    """(what the release protects against, what it does not), two plain sentences from the attacker's view: names,
    counts and shares only. A manifest made before the safety floor says that it was not measured."""
    m = manifest
    view = m.privacy.attacker_view
    unit_name = _UNIT_TEXT[m.unit][0]
    if view is None:
        return (f"This release was made before the safety floor: what an attacker holding the table can learn was not "
                f"measured, so this report can only state its privacy claims, measured over {unit_name} "
                "(section 2).",
                "Which disclosure it does not protect against was not assessed (no attacker's view in its manifest).")
    known = _columns_text(view.quasi_identifiers)
    beside = (f", with {_columns_text(view.counted_columns)} published beside them and counted in"
              if view.counted_columns else "")
    disclosed = _disclosure_text(view)
    if view.identity_by == "none":
        cols = ", ".join(d.column for d in view.disclosure) or "its protected columns"
        protects = (f"This release protects against attribute disclosure of {cols}: "
                    + (f"an attacker holding a person's quasi-identifiers learns {disclosed}." if disclosed
                       else "not measured for this release."))
        lacks = (f"It does not protect against identity disclosure: who is in which row is not hidden: the "
                 f"quasi-identifiers ({known}) are published unchanged{beside}, and {_share(view.records_alone)} of "
                 "the published records are alone on them.")
        return protects + (" " + _worst_part_text(m) if m.parts else ""), lacks
    if view.identity_by == "classes":
        protects = (f"This release protects against identity disclosure (finding a person's row): equivalence "
                    f"classes hide identities: every published record shares its quasi-identifiers as published "
                    f"({known}{beside}) with the other records of its class; the smallest class holds "
                    f"{_fmt(view.smallest_class)} records, {_share(view.records_alone)} of the records are alone on "
                    f"them and the average re-identification risk is {_fmt(view.average_risk, 3)}.")
        lacks = "It does not hide what a class's rows publish: whoever finds a person's class learns its values"
    elif view.identity_by == "groups":
        groups = (f" ({_fmt(view.groups)} groups, the smallest of {_fmt(view.smallest_group)} rows)"
                  if view.groups is not None else "")
        copies = (f"; {_share(view.exact_copies)} of the published rows equal an input record"
                  if view.exact_copies is not None else "")
        protects = (f"This release protects against identity disclosure (finding a person's row): generating "
                    f"groups hide identities: each published row is synthesized from a group of records{groups} and "
                    f"stands for none of them{copies}.")
        lacks = ("It does not hide what a group's records have in common: the synthesized values describe the group "
                 "as a whole")
    else:
        link = (f"; the linkage risk (share of input records whose nearest published record stands for them) is "
                f"{_fmt(view.linkage_risk, 3)}" if view.linkage_risk is not None else "")
        copies = (f"; {_share(view.exact_copies)} of the published rows equal an input record"
                  if view.exact_copies is not None else "")
        protects = (f"This release protects against identity disclosure record by record: each published row "
                    f"is perturbed or generated so that none should lead back to its record{link}{copies}.")
        lacks = (f"It does not hide identities in classes: {_share(view.records_alone)} of the published records are "
                 f"alone on their quasi-identifiers as published ({known}{beside}), so the protection rests on the "
                 "perturbation alone")
    if m.parts:
        protects += " " + _worst_part_text(m)
    if disclosed:
        lacks += f"; attribute disclosure measured: an attacker holding a person's known columns learns {disclosed}."
    else:
        bounded = [_SENSITIVE_GATES[c.name] for c in m.privacy.claims if c.name in _SENSITIVE_GATES]
        lacks += (f"; the policy's {', '.join(dict.fromkeys(bounded))} claims bound that (section 2)." if bounded else
                  "; attribute disclosure was not measured for this release.")
    return protects, lacks


def below_floor_text(manifest: Manifest) -> str | None:
    """One sentence when the release fails the safety floor (None when it holds or was not measured)."""
    if floor_verdict(manifest) is not False:
        return None
    floor = manifest.privacy.floor
    failed = [c.name.removeprefix("floor: ") for c in floor.failed] if floor is not None else []
    return (f"It is below the safety floor ({', '.join(failed) or 'a part fails it'})"
            + (": published on purpose, see section 3." if floor is not None and floor.accepted is not None
               else ": see section 3."))


_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_.+\-]{1,40}$")
_HIERARCHY_TYPES = {"file", "intervals", "dates", "prefix", "flat", "tree"}


# -- public API --------------------------------------------------------------------------------------------------
def load_folder(folder: Path) -> tuple[Manifest, pd.DataFrame]:
    """The manifest and the published table of a release folder; a missing or damaged file raises
    :class:`InputError` naming it (never quoting its content). The loader of ``ppdp validate --release``."""
    manifest, frame, _ = load_release(folder)
    return manifest, frame


def render_report(folder: Path) -> str:
    """The HTML of ``report.html`` for the release folder ``folder`` (``manifest.json``, ``data.parquet``,
    optionally ``tuning.png``): deterministic, self-contained, value-free.

    Raises
    ------
    InputError
        The folder, its manifest or its table is missing or cannot be read (one line naming the file).
    """
    folder = Path(folder)
    manifest, frame, data = load_release(folder)  # data: each data file's SHA-256, hashed once
    tables = load_parts(folder, manifest) if manifest.parts else {}
    files = {**data, **{name: file_sha256(folder / name) for name in ("manifest.json", "tuning.png", "pareto.png")
                        if (folder / name).is_file()}}
    return _Page(manifest, frame, files, tables).render()


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


def label_min_count(manifest: Manifest) -> int:
    """How often a category must occur in the published table to be named in a report: the largest of the
    release's smallest class, the policy's k and the rare-value rule's k; 2 when none is set."""
    candidates = [manifest.privacy.k, manifest.spec.privacy.k,
                  manifest.rare_categories.k if manifest.rare_categories is not None else None]
    return max([2] + [int(c) for c in candidates if c is not None])


def report_markdown(manifest: Manifest) -> str:
    """A short markdown summary of the release: first the two-part verdict (policy, safety floor; the owner's reason
    when published below the floor), what it protects against and what not, the attacker's view and the floor rows;
    then claims, utility, tuning, checks. Aggregates only, classes by position, never a data value."""
    m = manifest
    claims = m.privacy.claims
    held = sum(c.passed for c in claims)
    policy, floor_part = verdict_text(m)
    floor = m.privacy.floor
    view = m.privacy.attacker_view
    lines = [f"**Verdict: {policy} · {floor_part}**", ""]
    if floor is not None and floor.accepted is not None:
        a = floor.accepted
        lines += [f"**Published below the safety floor: {_md(a.reason)}** (approved by {_md(a.approved_by)}); "
                  "failed floor rows:"] + [f"- {_md(f)}" for f in a.failed] + [""]
    protects, lacks = protection_text(m)
    lines += [_md(protects), "", _md(lacks), ""]
    if view is not None:
        where = f" {_worst_part_text(m)}" if m.parts else ""
        lines += [f"**What an attacker sees:**{_md(where)}"] + [f"- {_md(line)}" for line in view_lines(view)] + [""]
    if floor is not None and floor.claims:
        lines += ["| safety floor | value | limit | verdict |", "|---|---:|---|---|"]
        for c in floor.claims:
            lines.append(f"| {_md(c.name)} | {_fmt(c.value)} | {c.comparison} {_fmt(c.threshold)} | "
                         f"{'holds' if c.passed else 'FAILS'} |")
        lines.append("")
    lines += [
        f"# Release {_md(m.dataset)} `{m.release_id.replace('`', '')}`",
        "",
        f"{m.rows:,} rows x {len(m.columns)} columns published {m.created_at:%Y-%m-%d %H:%M} UTC with "
        f"**{_md(m.method.name)}** (privacy unit: {_UNIT_TEXT[m.unit][0]}"
        + (f", {m.privacy.groups:,} classes, smallest {m.privacy.k:,}" if m.privacy.k is not None
           and m.privacy.groups is not None else "") + ").",
        "",
        f"**Privacy claims: {held} of {len(claims)} hold** (the unit's own figures below).",
        "",
        "| claim | measured | value | rule | verdict |",
        "|---|---|---:|---|---|",
    ]
    for c in claims:
        lines.append(f"| {_md(c.name)} | {_md(c.measure or '')} | {_fmt(c.value)} | {c.comparison} "
                     f"{_fmt(c.threshold)} | {'holds' if c.passed else 'FAILS'} |")
    u = m.utility
    ratio = "" if u.ratio is None else f", ratio {u.ratio:.3f}"
    lines += ["", f"**Utility:** accuracy {u.accuracy:.4f} when a {_md(u.classifier)} classifier is trained on "
                  f"the release, {u.accuracy_original:.4f} when trained on the original rows{ratio} "
                  f"({u.test_rows:,} held-out rows{'' if _every_row(m) else ', never published'})."]
    for d in u.delta_r:
        lines.append(f"- delta R {_md(d.classifier)}: {d.value:+.4f} (>= 0 keeps utility)")
    t = m.tuning
    if t.lattice is not None:
        node = ", ".join(f"{_md(c)}={v}" for c, v in t.lattice.node.items())
        lines += ["", f"**Tuning:** lattice node ({node}), {t.lattice.checked:,} of {t.lattice.total:,} nodes "
                      "checked."]
    elif t.strategy == "fixed" or t.chosen is None:
        lines += ["", f"**Tuning:** fixed ({_md(t.rule)})."]
    else:
        lines += ["", f"**Tuning:** {_md(t.parameter or '')} = {_fmt(t.chosen)} chosen by {t.strategy} from "
                      f"{len(t.evaluations)} evaluated values."]
    inp, outp = _check_counts(m.ingest.expectations), _check_counts(m.output_checks)
    lines += ["", f"**Checks:** input {inp[0]} of {inp[1]} expectations passed; output {outp[0]} of {outp[1]} "
                  "passed.", ""]
    return "\n".join(lines)


def report_table(manifest: Manifest) -> list[TableRow]:
    """The summary as a table: the two-part verdict, one row per privacy claim, per safety floor row (kind
    ``floor``), per utility gate and per key figure (the attacker's view before the privacy unit's own), every row
    with the same keys (``kind``, ``name``, ``measure``, ``unit``, ``value``, ``comparison``, ``threshold``,
    ``verdict``). Aggregates only; no class label."""
    m = manifest
    rows: list[TableRow] = []

    def claim(kind: str, c: Claim) -> None:
        rows.append({"kind": kind, "name": c.name, "measure": c.measure or _GATE_MEASURE.get(c.name),
                     "unit": c.unit, "value": c.value,
                     "comparison": c.comparison, "threshold": c.threshold,
                     "verdict": "holds" if c.passed else "fails"})

    def figure(name: str, measure: str, value: float | int | str | None, unit: str | None = None) -> None:
        if value is None:
            return
        rows.append({"kind": "figure", "name": name, "measure": measure, "unit": unit, "value": value,
                     "comparison": None, "threshold": None, "verdict": None})

    policy, floor_part = verdict_text(m)
    figure("policy", "every privacy claim of the policy holds", policy)
    figure("safety floor", "the release meets the safety floor", floor_part)
    for c in m.privacy.claims:
        claim("privacy claim", c)
    floor = m.privacy.floor
    for c in floor.claims if floor is not None else ():
        claim("floor", c)
    for c in m.utility.gates:
        claim("utility gate", c)
    p, u = m.privacy, m.utility
    figure("rows", "published rows", m.rows)
    figure("columns", "published columns", len(m.columns))
    figure("unit", "what the privacy claims are measured over", m.unit)
    figure("method", "sanitization method", m.method.name)
    view = p.attacker_view
    if view is not None:  # the attacker's view, before the unit's own figures
        figure("attacker: protects", "what the method protects (identity or attribute)", view.protects)
        figure("attacker: identities hidden by", "classes, groups, records, or none (published unchanged)",
               view.identity_by)
        figure("attacker: known columns", "the quasi-identifiers as published, and counted columns beside them",
               ", ".join(view.quasi_identifiers + view.counted_columns) or None)
        figure("attacker: classes", "distinct combinations of the known columns", view.classes)
        figure("attacker: smallest class", "rows sharing the rarest combination of the known columns",
               view.smallest_class)
        figure("attacker: records alone", "share of published records alone on the known columns", view.records_alone)
        figure("attacker: average risk", "mean 1/|class| on the known columns", view.average_risk)
        figure("attacker: highest risk", "largest 1/|class| on the known columns", view.highest_risk)
        figure("attacker: groups", "generating groups in the published group column", view.groups)
        figure("attacker: smallest group", "published rows of the smallest generating group", view.smallest_group)
        figure("attacker: rows alone in their group", "share of published rows alone in their generating group",
               view.group_alone)
        figure("attacker: average risk over groups", "mean 1/|group|", view.group_average_risk)
        figure("attacker: exact copies", "share of published rows equal to an input record", view.exact_copies)
        figure("attacker: linkage risk", "share of input records whose nearest published record stands for them",
               view.linkage_risk)
        for key, value in view.nearest_distance.items():
            figure(f"attacker: nearest distance {key}", "distance from an input record to its nearest published "
                   "record, at this quantile", value)
        for d in view.disclosure:
            figure(f"attacker: disclosure ({d.column})", "share of records whose value an attacker learns",
                   d.disclosure)
            figure(f"attacker: disclosure baseline ({d.column})", "share the best constant guess gets right",
                   d.baseline)
            figure(f"attacker: disclosure gain ({d.column})", "disclosure - baseline", d.gain)
        figure("attacker: uninformative columns", "published columns '*' or missing in every row",
               ", ".join(view.uninformative_columns) or None)
    figure("classes", f"{_UNIT_TEXT[m.unit][0]} in the release", p.groups, m.unit)
    figure("smallest class", "records in the smallest class", p.k, m.unit)
    figure("mean class size", "records per class, mean", p.mean_group_size, m.unit)
    if p.risk is not None:
        figure("prosecutor risk (max)", "highest 1/|class|", p.risk.prosecutor_max, m.unit)
        figure("marketer risk", "expected share of records re-identified", p.risk.marketer, m.unit)
    figure("linkage risk", "share of original records linked to their own published record or group",
           p.linkage_risk, m.unit)
    figure("DCR quantile", "distance to closest record at the policy's quantile", p.dcr_quantile, m.unit)
    figure("accuracy", f"{u.classifier} trained on the release, tested on held-out rows", u.accuracy)
    figure("accuracy (original)", f"{u.classifier} trained on the original rows", u.accuracy_original)
    figure("accuracy ratio", "release accuracy / original accuracy", u.ratio)
    for d in u.delta_r:
        figure(f"delta R {d.classifier}", "R_p - (1 - epsilon) R_o", d.value)
    if m.tuning.chosen is not None and m.tuning.parameter:
        figure(f"tuned {m.tuning.parameter}", f"chosen by {m.tuning.strategy}", m.tuning.chosen)
    inp, outp = _check_counts(m.ingest.expectations), _check_counts(m.output_checks)
    figure("input expectations passed", f"of {inp[1]} (Great Expectations, suite {m.ingest.suite})", inp[0])
    figure("output checks passed", f"of {outp[1]} (Great Expectations)", outp[0])
    return rows


# -- formatting --------------------------------------------------------------------------------------------------
def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _md(value: object) -> str:
    """Text for markdown: HTML-escaped, markdown's special characters backslash-escaped, on one line."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    return re.sub(r"([\\`*_\[\]#|~])", r"\\\1", text)


def _fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        v = float(value)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        if 1e4 <= abs(v) < 1e15:
            return f"{v:,.0f}"
        if abs(v) >= 10 ** digits:
            return f"{v:,.1f}"
        return f"{v:.{digits}g}"
    return str(value)


def _every_row(m: Manifest) -> bool:
    """Whether the release publishes the held-out rows too (sanitized like the others: generalization)."""
    removed = m.rare_categories.rows_removed if m.rare_categories is not None else 0
    return m.rows > m.ingest.rows - removed - m.utility.test_rows


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _share(value: float | None) -> str:
    """A share as a percentage, with enough digits that a share just above 0 or just below 1 does not read as 0% or
    100% (a floor of 0 fails on one record in thousands)."""
    if value is None:
        return "n/a"
    if 0 < value < 0.001 or 0.999 < value < 1:
        return f"{100 * value:.3g}%" if value < 0.5 else f"{100 * value:.4g}%"
    return _pct(value)


def _check_counts(outcomes: Sequence[ExpectationOutcome]) -> tuple[int, int]:
    return sum(o.success for o in outcomes), len(outcomes)


def _badge(ok: bool | None, yes: str = "holds", no: str = "fails") -> str:
    if ok is None:
        return '<span class="badge muted">n/a</span>'
    return f'<span class="badge ok">{yes}</span>' if ok else f'<span class="badge bad">{no}</span>'


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], num: Sequence[int] = (), nowrap: Sequence[int] = (),
           marked: Sequence[bool] = (), compact: bool = False) -> str:
    """A table of already-escaped cells (a column whose cells are all empty is left out); columns in ``num`` are
    right-aligned numbers, those in ``nowrap`` do not wrap; a row whose ``marked`` flag is true is highlighted;
    ``compact``: as wide as its content, not the page."""
    rows = [list(r) for r in rows]
    if not rows:
        return ""
    keep = [i for i in range(len(head)) if any(r[i] != "" for r in rows)]

    def attr(i: int) -> str:
        classes = (["num"] if i in num else []) + (["nw"] if i in nowrap else [])
        return f' class="{" ".join(classes)}"' if classes else ""

    ths = "".join(f"<th{attr(i)}>{head[i]}</th>" for i in keep)
    body = []
    for r, row in enumerate(rows):
        tds = "".join(f"<td{attr(i)}>{row[i]}</td>" for i in keep)
        mark = ' class="chosen"' if r < len(marked) and marked[r] else ""
        body.append(f"<tr{mark}>{tds}</tr>")
    klass = ' class="compact"' if compact else ""
    return f"<table{klass}><thead><tr>{ths}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _dl(items: Iterable[tuple[str, str]]) -> str:
    inner = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="facts">{inner}</dl>'


def _cards(items: Iterable[tuple[str, str, str]]) -> str:
    """Key-figure cards: (label, value, note), already escaped."""
    out = []
    for label, value, note in items:
        out.append(f'<div class="card"><div class="card-label">{label}</div><div class="card-value">{value}</div>'
                   f'<div class="card-note">{note}</div></div>')
    return f'<div class="cards">{"".join(out)}</div>'


def _param_value(value: object, columns: set[str], depth: int = 0) -> str | None:
    """A method parameter as text, without data values: numbers and flags; a setting word at the top level;
    per-column settings by column; a generalization hierarchy by its type and numeric settings (a tree's
    categories and a file's path are not shown)."""
    if value is None:
        return "none"
    if isinstance(value, bool | int | float):
        return _fmt(value)
    if isinstance(value, str):
        return value if depth == 0 and _SAFE_TOKEN.match(value) else None
    if isinstance(value, list):
        return f"{len(value)} items"
    if isinstance(value, dict):
        if value.get("type") in _HIERARCHY_TYPES:
            parts = [str(value["type"])]
            for key in ("binning",):
                if isinstance(value.get(key), str) and _SAFE_TOKEN.match(value[key]):
                    parts.append(value[key])
            parts += [f"{key} {_fmt(v)}" for key, v in value.items()
                      if isinstance(v, int | float) and not isinstance(v, bool)]
            return " ".join(parts[:1]) + (f" ({', '.join(parts[1:])})" if parts[1:] else "")
        if value and all(k in columns for k in value):
            shown = []
            for k, v in value.items():
                text = _param_value(v, columns, depth + 1)
                shown.append(f"{k}: {text}" if text is not None else f"{k}: (not shown)")
            return "; ".join(shown)
        return f"{len(value)} entries"
    return None


# -- SVG figures -------------------------------------------------------------------------------------------------
_WIDTH = 940
"""Width of every figure's viewBox (the page's content width: figures are drawn at about 1:1)."""


def _n(v: float) -> str:
    """A coordinate: one decimal, no negative zero."""
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def _tick_text(v: float) -> str:
    v = round(v, 10)
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.6g}"


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw - 1e-12:
            return m * mag
    return 10 * mag


def _nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> tuple[float, float, list[float]]:
    """(domain low, domain high, ticks) covering [lo, hi] with about ``count`` round steps."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo, hi = 0.0, 1.0
    if hi <= lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    step = _nice_step(hi - lo, count)
    if integer:
        step = max(1.0, math.ceil(step))
    start = math.floor(lo / step + 1e-9) * step
    end = math.ceil(hi / step - 1e-9) * step
    ticks = [round(start + i * step, 10) for i in range(int(round((end - start) / step)) + 1)]
    return start, end, ticks


def _log_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if b == a:
        b += 1
    ticks = []
    for e in range(a, b + 1):
        for m in ((1,) if b - a > 3 else (1, 2, 5)):
            t = m * 10.0 ** e
            if 10.0 ** a <= t <= 10.0 ** b:
                ticks.append(t)
    return 10.0 ** a, 10.0 ** b, ticks


class _Scale:
    def __init__(self, lo: float, hi: float, px_lo: float, px_hi: float, log: bool = False) -> None:
        self.lo, self.hi, self.px_lo, self.px_hi, self.log = lo, hi, px_lo, px_hi, log

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, x = math.log10(self.lo), math.log10(self.hi), math.log10(max(v, self.lo * 1e-3))
        else:
            a, b, x = self.lo, self.hi, v
        frac = 0.5 if b == a else (x - a) / (b - a)
        return self.px_lo + frac * (self.px_hi - self.px_lo)


def _svg(height: int, title: str, body: list[str]) -> str:
    tid = "fig-" + hashlib.sha256(title.encode()).hexdigest()[:10]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_WIDTH} {height}" role="img" '
            f'aria-labelledby="{tid}" class="chart"><title id="{tid}">{_e(title)}</title>' + "".join(body) + "</svg>")


def _legend(items: Sequence[tuple[str, str]]) -> str:
    """An HTML legend under a figure: (swatch class, text)."""
    spans = "".join(f'<span><i class="sw {cls}"></i>{_e(text)}</span>' for cls, text in items)
    return f'<div class="legend">{spans}</div>'


def _axes(x: _Scale, y: _Scale, xticks: list[float], yticks: list[float], xlabel: str, ylabel: str,
          height: int) -> list[str]:
    out = []
    for t in yticks:
        py = _n(y(t))
        out.append(f'<line class="grid" x1="{_n(x.px_lo)}" x2="{_n(x.px_hi)}" y1="{py}" y2="{py}"/>')
        out.append(f'<text class="tick" x="{_n(x.px_lo - 8)}" y="{py}" text-anchor="end" '
                   f'dominant-baseline="middle">{_e(_tick_text(t))}</text>')
    base = _n(y.px_lo)
    out.append(f'<line class="axis" x1="{_n(x.px_lo)}" x2="{_n(x.px_hi)}" y1="{base}" y2="{base}"/>')
    for t in xticks:
        px = _n(x(t))
        out.append(f'<line class="axis" x1="{px}" x2="{px}" y1="{base}" y2="{_n(y.px_lo + 5)}"/>')
        out.append(f'<text class="tick" x="{px}" y="{_n(y.px_lo + 19)}" text-anchor="middle">{_e(_tick_text(t))}'
                   "</text>")
    out.append(f'<text class="label" x="{_n((x.px_lo + x.px_hi) / 2)}" y="{height - 6}" text-anchor="middle">'
               f"{_e(xlabel)}</text>")
    mid = _n((y.px_lo + y.px_hi) / 2)
    out.append(f'<text class="label" x="14" y="{mid}" text-anchor="middle" transform="rotate(-90 14 {mid})">'
               f"{_e(ylabel)}</text>")
    return out


def _plural(what: str) -> str:
    return what + ("es" if what.endswith(("s", "x", "sh", "ch")) else "s")


def _histogram_svg(sizes: np.ndarray, threshold: float | None, what: str) -> str:
    """Bars of how many classes have each size (or size range); bars of classes below ``threshold`` in red."""
    height, left, right, top, bottom = 300, 70, 16, 26, 46
    lo, hi = int(sizes.min()), int(sizes.max())
    if threshold is not None and math.isfinite(threshold):
        lo, hi = min(lo, int(math.floor(threshold))), max(hi, int(math.ceil(threshold)))
    if hi - lo + 1 <= 60:
        bin_width, start = 1, lo
    else:
        bin_width = int(max(1, math.ceil(_nice_step(hi - lo + 1, 40))))
        start = (lo // bin_width) * bin_width
    nbins = (hi - start) // bin_width + 1
    counts = np.bincount((sizes.astype(np.int64) - start) // bin_width, minlength=nbins)
    if bin_width == 1:
        x_lo, x_hi = start - 0.5, start + nbins - 0.5
    else:
        x_lo, x_hi = float(start), float(start + nbins * bin_width)
    x = _Scale(x_lo, x_hi, left, _WIDTH - right)
    _, ytop, yticks = _nice_ticks(0, max(1.0, float(counts.max()) * 1.08), 5, integer=True)  # room for labels
    y = _Scale(0, ytop, height - bottom, top)
    _, _, xticks = _nice_ticks(x_lo, x_hi, 12, integer=True)
    xticks = [t for t in xticks if x_lo <= t <= x_hi]
    body = _axes(x, y, xticks, yticks, f"{what} size (records)", f"number of {_plural(what)}", height)
    labelled = np.count_nonzero(counts) <= 30  # few bars: print each count above its bar
    for i, c in enumerate(counts):
        if c == 0:
            continue
        first = start + i * bin_width
        a = first - 0.5 if bin_width == 1 else float(first)
        px_a, px_b = x(a), x(a + bin_width)
        gap = max(min(1.5, (px_b - px_a) * 0.12), (px_b - px_a - 56) / 2)  # bars at most 56 px wide
        small = threshold is not None and first + bin_width - 1 < threshold
        label = f"size {first}" if bin_width == 1 else f"sizes {first} to {first + bin_width - 1}"
        bar_top = min(y(c), y(0) - 2)  # a bar of a few classes among thousands stays visible
        body.append(f'<rect class="{"bar-bad" if small else "bar"}" x="{_n(px_a + gap)}" y="{_n(bar_top)}" '
                    f'width="{_n(max(px_b - px_a - 2 * gap, 0.8))}" height="{_n(y(0) - bar_top)}">'
                    f"<title>{_e(label)}: {int(c):,} {_e(_plural(what) if c != 1 else what)}</title></rect>")
        if labelled:
            body.append(f'<text class="tick" x="{_n((px_a + px_b) / 2)}" y="{_n(bar_top - 5)}" '
                        f'text-anchor="middle">{int(c):,}</text>')
    if threshold is not None and math.isfinite(threshold):
        tx = x(threshold - 0.5 if bin_width == 1 else threshold)
        body.append(f'<line class="threshold" x1="{_n(tx)}" x2="{_n(tx)}" y1="{_n(top - 8)}" y2="{_n(y(0))}"/>')
        anchor, dx = ("start", 6) if tx < _WIDTH * 0.75 else ("end", -6)
        body.append(f'<text class="note-red" x="{_n(tx + dx)}" y="{_n(top - 10)}" text-anchor="{anchor}">'
                    f"policy k = {_e(_tick_text(threshold))}</text>")
    return _svg(height, f"Distribution of {what} sizes", body)


def _tuning_svg(trace: TuningTrace, privacy_label: str) -> tuple[str, str]:
    """(figure, legend): accuracy (left axis) and the privacy figure (right axis) per evaluated value, with the
    accuracy-gap band, the policy threshold on the parameter and the chosen value."""
    height, left, right, top, bottom = 340, 70, 70, 16, 46
    evs = sorted(trace.evaluations, key=lambda e: e.value)
    xs = [e.value for e in evs]
    marks = [v for v in (trace.threshold, float(trace.chosen) if trace.chosen is not None else None)
             if v is not None and math.isfinite(v)]
    lo, hi = min(xs + marks), max(xs + marks)
    log = lo > 0 and hi / lo > 50
    if log:
        x_lo, x_hi, xticks = _log_ticks(lo, hi)
    else:  # a little room on both sides, whole-number ticks for a whole-number parameter
        pad = 0.03 * (hi - lo)
        x_lo, x_hi, xticks = _nice_ticks(lo - pad, hi + pad, 10, integer=all(float(v).is_integer() for v in xs))
    x = _Scale(x_lo, x_hi, left, _WIDTH - right, log)
    accs = [e.accuracy for e in evs]
    band = None
    if trace.accuracy_gap is not None and trace.objective == "most_privacy_within_gap":
        gap = trace.accuracy_gap
        if trace.strategy == "bisect":  # Figure 6 compares with the least private value's accuracy
            least = evs[0] if trace.safer != "smaller" else evs[-1]
            band = (least.accuracy * (1 - gap), least.accuracy * (1 + gap))
        else:  # grid: within the gap of the best accuracy
            best = max(accs)
            band = (best * (1 - gap), best)
    a_lo = min(accs + ([band[0]] if band else []))
    a_hi = max(accs + ([band[1]] if band else []))
    a_lo, a_hi, aticks = _nice_ticks(max(0.0, a_lo - 0.01), a_hi + 0.01, 5)
    y = _Scale(a_lo, a_hi, height - bottom, top)
    xlabel = f"{trace.parameter}" + (f" ({trace.safer} is safer)" if trace.safer else "")
    body = _axes(x, y, xticks, aticks, xlabel, "accuracy (held-out rows)", height)
    if band is not None:
        b0, b1 = max(band[0], a_lo), min(band[1], a_hi)
        body.insert(0, f'<rect class="band" x="{_n(x.px_lo)}" y="{_n(y(b1))}" width="{_n(x.px_hi - x.px_lo)}" '
                       f'height="{_n(max(y(b0) - y(b1), 0))}"/>')
    priv = [(e.value, e.privacy) for e in evs if e.privacy is not None and math.isfinite(e.privacy)]
    if priv:
        p_lo, p_hi, pticks = _nice_ticks(min(p for _, p in priv), max(p for _, p in priv), 5)
        py = _Scale(p_lo, p_hi, height - bottom, top)
        for t in pticks:
            body.append(f'<text class="tick red" x="{_n(x.px_hi + 8)}" y="{_n(py(t))}" dominant-baseline="middle">'
                        f"{_e(_tick_text(t))}</text>")
        mid, rx = _n((py.px_lo + py.px_hi) / 2), _WIDTH - 12
        body.append(f'<text class="label red" x="{rx}" y="{mid}" text-anchor="middle" '
                    f'transform="rotate(90 {rx} {mid})">{_e(privacy_label)}</text>')
        pts = " ".join(f"{_n(x(v))},{_n(py(p))}" for v, p in priv)
        body.append(f'<polyline class="line-red" points="{pts}"/>')
        for v, p in priv:
            body.append(f'<rect class="dot-red" x="{_n(x(v) - 3.5)}" y="{_n(py(p) - 3.5)}" width="7" height="7">'
                        f"<title>{_e(trace.parameter)} = {_e(_fmt(v))}: {_e(privacy_label)} {_e(_fmt(p))}</title>"
                        "</rect>")
    if trace.threshold is not None and math.isfinite(trace.threshold):
        tx = _n(x(trace.threshold))
        body.append(f'<line class="threshold" x1="{tx}" x2="{tx}" y1="{_n(top)}" y2="{_n(y.px_lo)}"/>')
    if trace.chosen is not None:
        cx = _n(x(float(trace.chosen)))
        body.append(f'<line class="chosen" x1="{cx}" x2="{cx}" y1="{_n(top)}" y2="{_n(y.px_lo)}"/>')
    pts = " ".join(f"{_n(x(e.value))},{_n(y(e.accuracy))}" for e in evs)
    body.append(f'<polyline class="line-blue" points="{pts}"/>')
    for e in evs:
        cx, cy = x(e.value), y(e.accuracy)
        body.append(f'<circle class="dot-blue" cx="{_n(cx)}" cy="{_n(cy)}" r="4">'
                    f"<title>{_e(trace.parameter)} = {_e(_fmt(e.value))}: accuracy {e.accuracy:.4f}</title></circle>")
        if e.meets_policy is False:
            body.append(f'<path class="cross" d="M{_n(cx - 6)} {_n(cy - 6)}L{_n(cx + 6)} {_n(cy + 6)}'
                        f'M{_n(cx - 6)} {_n(cy + 6)}L{_n(cx + 6)} {_n(cy - 6)}"/>')
    legend = [("sw-blue", "accuracy on the held-out rows")]
    if priv:
        legend.append(("sw-red", privacy_label))
    if band is not None:
        legend.append(("sw-band", f"accuracy gap t_a = {_fmt(trace.accuracy_gap)}"))
    if trace.threshold is not None:
        legend.append(("sw-threshold", f"policy threshold {trace.parameter} = {_fmt(trace.threshold)}"))
    if trace.chosen is not None:
        legend.append(("sw-chosen", f"chosen {trace.parameter} = {_fmt(trace.chosen)}"))
    if any(e.meets_policy is False for e in evs):
        legend.append(("sw-cross", "fails a privacy gate"))
    title = f"Tuning of {trace.parameter}: accuracy and privacy per evaluated value"
    return _svg(height, title, body), _legend(legend)


def _pareto_svg(points: list[tuple[int, float]], k: int | None, policy_k: float | None) -> tuple[str, str]:
    """(figure, legend): a partition search's Pareto front, inner CV accuracy against the anonymity level reached
    (a step line: from each point on, no evaluated partition is more accurate), the release's k and the policy's."""
    height, left, right, top, bottom = 320, 70, 16, 16, 46
    pts = sorted(points)
    marks = [float(v) for v in (k, policy_k) if v is not None and math.isfinite(float(v)) and v > 0]
    lo, hi = min([p[0] for p in pts] + marks), max([p[0] for p in pts] + marks)
    log = lo > 0 and hi / lo > 50
    if log:
        x_lo, x_hi, xticks = _log_ticks(lo, hi)
    else:
        pad = 0.03 * max(hi - lo, 1)
        x_lo, x_hi, xticks = _nice_ticks(lo - pad, hi + pad, 10, integer=True)
    x = _Scale(x_lo, x_hi, left, _WIDTH - right, log)
    a_lo, a_hi, aticks = _nice_ticks(max(0.0, min(a for _, a in pts) - 0.01), max(a for _, a in pts) + 0.01, 5)
    y = _Scale(a_lo, a_hi, height - bottom, top)
    body = _axes(x, y, xticks, aticks, "anonymity level reached (smallest class over every part)",
                 "inner CV accuracy", height)
    steps = []
    for i, (lv, acc) in enumerate(pts):
        steps.append(f"{_n(x(lv))},{_n(y(acc))}")
        if i + 1 < len(pts):
            steps.append(f"{_n(x(pts[i + 1][0]))},{_n(y(acc))}")
    body.append(f'<polyline class="line-blue" points="{" ".join(steps)}"/>')
    for lv, acc in pts:
        body.append(f'<circle class="dot-blue" cx="{_n(x(lv))}" cy="{_n(y(acc))}" r="4"><title>k reached '
                    f"{_e(_fmt(lv))}: accuracy {acc:.4f}</title></circle>")
    legend = [("sw-blue", "Pareto front: the most accurate partition reaching each k")]
    if policy_k is not None and math.isfinite(policy_k):
        tx = _n(x(policy_k))
        body.append(f'<line class="threshold" x1="{tx}" x2="{tx}" y1="{_n(top)}" y2="{_n(y.px_lo)}"/>')
        legend.append(("sw-threshold", f"policy k = {_fmt(policy_k)}"))
    if k is not None:
        cx = _n(x(k))
        body.append(f'<line class="chosen" x1="{cx}" x2="{cx}" y1="{_n(top)}" y2="{_n(y.px_lo)}"/>')
        legend.append(("sw-chosen", f"the release reaches k = {_fmt(k)}"))
    return _svg(height, "Accuracy against k over the partitions searched", body), _legend(legend)


def _per_class_svg(rows: list[tuple[str, float, float]]) -> tuple[str, str]:
    """(figure, legend): accuracy per class trained on the release (blue) and on the original rows (grey)."""
    left, right, top = 190, 60, 10
    bar, gap = 14, 14
    height = top + len(rows) * (2 * bar + gap) + 30
    x = _Scale(0.0, 1.0, left, _WIDTH - right)
    body = []
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        px = _n(x(t))
        body.append(f'<line class="grid" x1="{px}" x2="{px}" y1="{top - 4}" y2="{height - 26}"/>')
        body.append(f'<text class="tick" x="{px}" y="{height - 10}" text-anchor="middle">{t:.0%}</text>')
    y = top
    for label, rel, orig in rows:
        body.append(f'<text class="tick" x="{left - 10}" y="{_n(y + bar)}" text-anchor="end" '
                    f'dominant-baseline="middle">{_e(label)}</text>')
        for value, cls, name in ((rel, "bar", "trained on the release"), (orig, "bar-grey", "trained on the "
                                                                                            "original rows")):
            body.append(f'<rect class="{cls}" x="{_n(x(0))}" y="{_n(y)}" width="{_n(max(x(value) - x(0), 0))}" '
                        f'height="{bar}"><title>{_e(label)}, {name}: {value:.4f}</title></rect>')
            body.append(f'<text class="tick" x="{_n(x(value) + 5)}" y="{_n(y + bar / 2)}" '
                        f'dominant-baseline="middle">{value:.3f}</text>')
            y += bar
        y += gap
    legend = _legend([("sw-bar", "trained on the release"), ("sw-grey", "trained on the original rows")])
    return _svg(height, "Accuracy per class on the held-out rows", body), legend


# -- the page ----------------------------------------------------------------------------------------------------
_CSS = """
:root{--ink:#1d2733;--muted:#5b6878;--line:#e3e8ef;--soft:#f4f6f9;--blue:#2563a6;--red:#c0392b;--green:#1e7b45;
--navy:#13283f}
*{box-sizing:border-box}
body{margin:0;background:#eef1f5;color:var(--ink);font:15px/1.55 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",
Arial,"Noto Sans","Liberation Sans","DejaVu Sans",sans-serif}
.wrap{max-width:1060px;margin:0 auto;padding:0 28px}
header.top{background:var(--navy);color:#fff;padding:30px 0 26px}
header.top .eyebrow{margin:0;text-transform:uppercase;letter-spacing:.12em;font-size:12px;color:#9fb6cf}
header.top h1{margin:4px 0 6px;font-size:30px;font-weight:650;letter-spacing:-.01em}
header.top .sub{margin:0;color:#cfdbe8;font-size:14px}
header.top code{background:rgba(255,255,255,.12);color:#fff}
header.top .verdicts{margin:12px 0 0;display:flex;flex-wrap:wrap;gap:8px}
header.top .verdicts .badge{font-size:13px;padding:3px 12px}
header.top.below{background:#8e1f16}
header.top.below .eyebrow{color:#f6c3bd}
header.top.below .sub{color:#fbe0dc}
header.top .alarm{margin:14px 0 0;padding:12px 16px;border:1px solid rgba(255,255,255,.45);border-radius:8px;
background:rgba(0,0,0,.16)}
header.top .alarm p{margin:0 0 4px}
header.top .alarm ul{margin:4px 0 0;padding-left:20px;font-size:14px}
nav.toc{background:#fff;border-bottom:1px solid var(--line)}
nav.toc .wrap{display:flex;flex-wrap:wrap;gap:4px 22px;padding-top:10px;padding-bottom:10px;font-size:14px}
nav.toc a{color:var(--blue);text-decoration:none}
main{padding:8px 0 24px}
section{background:#fff;border:1px solid var(--line);border-radius:10px;padding:22px 30px 24px;margin:20px 0;
box-shadow:0 1px 2px rgba(16,24,40,.04)}
h2{margin:0 0 12px;font-size:21px;font-weight:650}
h2 .num{color:var(--muted);font-weight:500;margin-right:8px}
h3{margin:22px 0 8px;font-size:16px;font-weight:650}
h3.block{margin:28px 0 8px;padding-top:16px;border-top:1px solid var(--line);font-size:17.5px}
h3.block:first-child{margin-top:0;padding-top:0;border-top:0}
h4{margin:18px 0 6px;font-size:15px;font-weight:650}
p{margin:8px 0}
.lead{font-size:16px}
.muted,.note{color:var(--muted)}
.bad-text{color:var(--red);font-weight:600}
.note{font-size:13.5px}
code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;background:var(--soft);
padding:1px 5px;border-radius:4px;overflow-wrap:break-word}
table{width:100%;border-collapse:collapse;margin:10px 0 6px;font-size:13.5px}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--soft);font-weight:600;color:#39475a;border-bottom:1px solid #d5dce6}
tbody tr:nth-child(even) td{background:#fafbfd}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.nw{white-space:nowrap}
table.compact{width:auto;min-width:55%}
tr.chosen td{background:#eaf2fb!important;font-weight:600}
.badge{display:inline-block;padding:1px 9px;border-radius:999px;font-size:12px;font-weight:600;white-space:nowrap}
.badge.ok{background:#e2f4e8;color:var(--green)}
.badge.bad{background:#fde7e5;color:var(--red)}
.badge.muted{background:var(--soft);color:var(--muted)}
.badge.t-dropped{background:#fde7e5;color:#a2302a}
.badge.t-pseudonymized{background:#efe7fb;color:#6a3fb0}
.badge.t-kept{background:var(--soft);color:#46566a}
.badge.t-none{background:#fff4d6;color:#8a5a00}
.badge.src-std{background:#e4eefa;color:#1f5691}
.badge.src-own{background:var(--soft);color:#46566a}
.badge.t-generalized,.badge.t-aggregated,.badge.t-synthesized,.badge.t-perturbed{background:#e4eefa;color:#1f5691}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin:14px 0 6px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fbfcfe}
.card-label{font-size:11.5px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.card-value{font-size:21px;font-weight:650;margin-top:2px}
.card-note{font-size:12.5px;color:var(--muted)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:5px 18px;margin:10px 0;font-size:14px}
dl.facts dt{color:var(--muted)}
dl.facts dd{margin:0}
figure{margin:14px 0 6px}
figcaption{font-size:13px;color:var(--muted);margin-top:4px}
svg.chart{width:100%;height:auto;display:block}
svg.chart text{font-family:inherit}
.chart .grid{stroke:#edf0f4;stroke-width:1}
.chart .axis{stroke:#8a96a6;stroke-width:1}
.chart .tick{font-size:11.5px;fill:#4b5869}
.chart .label{font-size:12.5px;fill:#2c3848}
.chart .red{fill:var(--red)}
.chart .note-red{font-size:12px;fill:var(--red);font-weight:600}
.chart .bar{fill:#4a84c4}
.chart .bar-bad{fill:var(--red)}
.chart .bar-grey{fill:#b4bfcc}
.chart .band{fill:#2563a6;fill-opacity:.11}
.chart .threshold{stroke:var(--red);stroke-width:1.5;stroke-dasharray:2 3}
.chart .chosen{stroke:#444;stroke-width:1.5;stroke-dasharray:6 4}
.chart .line-blue{stroke:var(--blue);stroke-width:2;fill:none}
.chart .line-red{stroke:var(--red);stroke-width:1.6;fill:none;stroke-dasharray:5 3}
.legend{display:flex;flex-wrap:wrap;gap:4px 20px;font-size:12.5px;color:#39475a;margin:6px 0 0 70px}
.legend span{display:inline-flex;align-items:center;gap:7px}
.sw{display:inline-block;width:22px;height:0;border-top:2px solid}
.sw-blue{border-color:#2563a6}
.sw-red{border-top:2px dashed #c0392b}
.sw-threshold{border-top:2px dotted #c0392b}
.sw-chosen{border-top:2px dashed #444}
.sw-band{height:12px;border:0;background:rgba(37,99,166,.15)}
.sw-bar{height:12px;border:0;background:#4a84c4}
.sw-grey{height:12px;border:0;background:#b4bfcc}
.sw-cross{width:12px;height:12px;border:0;background:linear-gradient(45deg,transparent 44%,#111 44%,#111 56%,
transparent 56%),linear-gradient(-45deg,transparent 44%,#111 44%,#111 56%,transparent 56%)}
.chart .dot-blue{fill:var(--blue);stroke:#fff;stroke-width:1.2}
.chart .dot-red{fill:var(--red)}
.chart .cross{stroke:#111;stroke-width:2}
.verdict{margin:14px 0 4px;padding:10px 14px;border-radius:8px;font-weight:600}
.verdict.ok{background:#e9f6ee;color:var(--green);border:1px solid #c7e8d3}
.verdict.bad{background:#fdeeee;color:var(--red);border:1px solid #f3c9c5}
footer{color:var(--muted);font-size:12.5px;padding:6px 0 36px}
@media print{body{background:#fff}section{box-shadow:none;break-inside:avoid}nav.toc{display:none}}
"""


class _Page:
    def __init__(self, manifest: Manifest, frame: pd.DataFrame, files: dict[str, str],
                 parts: dict[str, pd.DataFrame] | None = None) -> None:
        self.m = manifest
        self.parts = parts or {}
        # a partitioned release: every part holds every published row's class (class labels are counted on one)
        self.frame = next(iter(self.parts.values())) if self.parts else frame
        self.files = files
        self.k_labels = label_min_count(manifest)
        self.columns = set(manifest.columns) | {t.name for t in manifest.treatments}
        self._labels = self._class_labels()

    # -- helpers --------------------------------------------------------------------------------------------
    def _class_labels(self) -> dict[str, str]:
        """Each per-class label of the utility report -> what the report may call it: ``class #i`` (position
        among the sorted labels, as the tuning trace numbers classes), with the label itself only when it occurs
        at least k times in the published table."""
        cls = self.m.roles.class_column
        counts: Counter[str] = Counter()
        if cls is not None and cls in self.frame.columns:
            counts = Counter(self.frame[cls].dropna().astype(str).to_list())
        out = {}
        # the manifest lists classes in sorted label order, a label the published data holds too rarely already
        # replaced by its position (ppdp.tasks.utility.name_classes)
        for i, c in enumerate(self.m.utility.per_class):
            label = c.label
            out[label] = f"class #{i} ({label})" if counts.get(label, 0) >= self.k_labels else f"class #{i}"
        return out

    def _partition(self) -> str:
        """A partitioned release: its tables, the search, and the accuracy-against-k Pareto front."""
        m, fp = self.m, self.m.partition
        assert fp is not None
        out = [f"<h3>The published tables ({len(m.parts)})</h3>",
               '<p class="note">Each table holds some of the features and the class; its rows are sorted by their '
               "own values, so no key and no row order joins two tables back into records. Each is k-anonymous over "
               "its own quasi-identifiers.</p>"]
        rows = []
        for p in m.parts:
            k = p.privacy.k
            rows.append((f"<code>{_e(p.file)}</code>", _e(", ".join(c for c in p.columns)),
                         _e(", ".join(p.quasi_identifiers)) or '<span class="muted">none</span>', _e(_fmt(p.rows)),
                         _e(_fmt(k)) if k is not None else "n/a"))
        out.append(_table(("file", "columns", "quasi-identifiers", "rows", "smallest class"), rows, num=(3, 4)))
        if fp.dropped:
            out.append(f'<p class="note">Features in no table (not published): {_e(", ".join(fp.dropped))}.</p>')
        out.append(f'<p class="note">Genetic search: {_fmt(fp.evaluations)} partitions evaluated over '
                   f"{_fmt(fp.generations)} generations in {fp.search_seconds:.1f} s; inducer {_e(fp.inducer)}; "
                   f"inner cross-validated accuracy of the chosen partition {fp.fitness:.4f}.</p>")
        if fp.pareto:
            out.append("<h3>Accuracy against k (Pareto front)</h3>")
            svg, legend = _pareto_svg([(pt.k, pt.accuracy) for pt in fp.pareto], m.privacy.k, m.spec.privacy.k)
            out.append(f"<figure>{svg}{legend}<figcaption>Every partition the genetic search evaluated, reduced to "
                       "the non-dominated ones: no other partition reaches a larger k with at least the same "
                       "accuracy (paper 001's multi-objective view).</figcaption></figure>")
            out.append(_table(("k reached", "inner CV accuracy", "subsets"),
                              [(_e(_fmt(pt.k)), f"{pt.accuracy:.4f}",
                                _e(" | ".join(", ".join(s) for s in pt.subsets))) for pt in fp.pareto],
                              num=(0, 1), compact=True))
        return "".join(out)

    def _claims_table(self, claims: Sequence[Claim], recheck: bool = True) -> str:
        rows = []
        for c in claims:
            measure = c.measure or _GATE_MEASURE.get(c.name, "")
            row = [f"<code>{_e(c.name)}</code>", _e(measure), _e(_fmt(c.value)),
                   f"{_COMPARISON.get(c.comparison, _e(c.comparison))} {_e(_fmt(c.threshold))}", _badge(c.passed)]
            if recheck:
                row.append("published table" if c.recheck == "published" else "needs the original input")
            rows.append((*row, _e(c.worst or "")))
        head = ("claim", "measured", "value", "rule", "verdict") + (("re-check from",) if recheck else ()) + (
            "worst",)
        return _table(head, rows, num=(2,), nowrap=(0, 3, 5) if recheck else (0, 3))

    def _verdict_badges(self) -> str:
        """The two-part verdict: the policy, and the safety floor."""
        policy, floor = verdict_text(self.m)
        ok_policy, ok_floor = policy_verdict(self.m), floor_verdict(self.m)
        klass = {True: "ok", False: "bad", None: "muted"}
        return (f'<p class="verdicts"><span class="badge {klass[ok_policy]}">{_e(policy)}</span>'
                f'<span class="badge {klass[ok_floor]}">{_e(floor)}</span></p>')

    def _alarm(self) -> str:
        """Below the safety floor: the owner's reason, who approved it, and each failed floor row (the header)."""
        if floor_verdict(self.m) is not False:
            return ""
        floor = self.m.privacy.floor
        if floor is not None and floor.accepted is not None:
            a = floor.accepted
            failed = a.failed
            head = (f"<p><b>Published below the safety floor: {_e(a.reason)}</b></p>"
                    f"<p>Approved by <b>{_e(a.approved_by)}</b>. Failed floor rows:</p>")
        else:
            failed = [describe_floor_claim(c) for f in self._floors() for c in f.failed]
            head = ("<p><b>Below the safety floor</b>: no decision to publish below it is recorded.</p>"
                    "<p>Failed floor rows:</p>")
        items = "".join(f"<li>{_e(f)}</li>" for f in dict.fromkeys(failed))
        return f'<div class="alarm">{head}<ul>{items}</ul></div>'

    def _floors(self) -> list[FloorReport]:
        """The release's floor and each part's (those measured)."""
        return [f for f in (self.m.privacy.floor, *(p.privacy.floor for p in self.m.parts)) if f is not None]

    def _uninformative(self) -> list[str]:
        """Published columns '*' (or missing) in every row, from the attacker's view of the release and its parts."""
        views = [v for v in (self.m.privacy.attacker_view, *(p.privacy.attacker_view for p in self.m.parts))
                 if v is not None]
        return list(dict.fromkeys(c for v in views for c in v.uninformative_columns))

    # -- sections -------------------------------------------------------------------------------------------
    def summary(self) -> str:
        m = self.m
        unit_name, unit_text = _UNIT_TEXT[m.unit]
        held_out = m.utility.test_rows
        rare = m.rare_categories
        removed = rare.rows_removed if rare is not None else 0
        every_row = _every_row(m)
        claims = m.privacy.claims
        held = sum(c.passed for c in claims)
        ratio = m.utility.ratio
        cards = _cards([
            ("rows published", _e(_fmt(m.rows)), f"of {_e(_fmt(m.ingest.rows))} input rows"),
            ("columns published", _e(_fmt(len(m.columns))), f"of {_e(_fmt(len(m.ingest.columns)))} input columns"),
            ("method", _e(m.method.name), f"unit: {_e(unit_name)}"),
            ("privacy claims", f"{held} / {len(claims)}", "hold" if held == len(claims) else "<b>some fail</b>"),
            ("safety floor", {True: "holds", False: '<span class="bad-text">below</span>', None: "n/a"}[
                floor_verdict(m)], {True: "every row applying to it", False: "<b>published below it</b>"
                                    if m.privacy.floor is not None and m.privacy.floor.accepted is not None
                                    else "<b>some rows fail</b>", None: "made before the floor"}[floor_verdict(m)]),
            ("accuracy", _e(f"{m.utility.accuracy:.3f}"),
             f"original {m.utility.accuracy_original:.3f}" + (f", ratio {ratio:.2f}" if ratio is not None else "")),
        ])
        method_text = _METHOD_TEXT.get(m.method.name, m.method.name)
        protects, lacks = protection_text(m)
        below = below_floor_text(m)
        parts = [
            f'<p class="lead protects">{_e(protects)} <b>{_e(lacks)}</b>'
            + (f' <span class="bad-text">{_e(below)}</span>' if below else "") + "</p>",
            f'<p>This release publishes <b>{_fmt(m.rows)} rows</b> and <b>{len(m.columns)} columns</b> '
            f"of the dataset <b>{_e(m.dataset)}</b> (release <code>{_e(m.release_id)}</code>). The input had "
            f"{_fmt(m.ingest.rows)} rows and {len(m.ingest.columns)} columns; " + (
                f"{_fmt(held_out)} rows were held out to measure utility (this method publishes every row: the "
                "held-out rows are sanitized like the others)" if every_row else
                f"{_fmt(held_out)} rows were held out to measure utility and are not published")
            + (f"; {_fmt(removed)} rows were left out by the rare-value rule" if removed else "") + ".</p>",
            f"<p>The table was sanitized by <b>{_e(method_text)}</b>. Its privacy is measured over "
            f"<b>{_e(unit_name)}</b>: {_e(unit_text)}.</p>",
            cards,
            "<h3>Method and parameters</h3>",
        ]
        tuned = m.tuning.parameter if m.tuning.strategy != "fixed" else None
        prow = []
        for key, value in m.method.params.items():
            text = _param_value(value, self.columns)
            note = "chosen by tuning" if key == tuned else ""
            if key == "levels" and m.tuning.lattice is not None:
                note = "chosen by the lattice search"
            prow.append((f"<code>{_e(key)}</code>", _e(text) if text is not None else '<span class="muted">'
                         "(not shown: may hold data values)</span>", note))
        parts.append(_table(("parameter", "value", ""), prow, compact=True))
        extra = []
        if m.method.groups is not None:
            extra.append(f"{_fmt(m.method.groups)} {unit_name} formed")
        if m.method.suppressed_rows:
            extra.append(f"{_fmt(m.method.suppressed_rows)} rows suppressed")
        if m.group_column:
            extra.append(f"each row's generating group is published in column <code>{_e(m.group_column)}</code>")
        if extra:
            parts.append(f'<p class="note">{"; ".join(extra)}.</p>')
        if m.partition is not None:
            parts.append(self._partition())
        parts.append("<h3>Every input column</h3>")
        parts.append(f'<p class="note">Identifiers: {_e(m.spec.identifiers.action)}. Each column has exactly one '
                     "treatment; the reason says why it got its role.</p>")
        empty = self._uninformative()
        if empty:
            parts.append(f'<p class="note"><span class="badge t-none">no information</span> '
                         f"{', '.join(f'<code>{_e(c)}</code>' for c in empty)} "
                         f"{'is' if len(empty) == 1 else 'are'} '*' (or missing) in every published row: "
                         f"{'it carries' if len(empty) == 1 else 'they carry'} no information.</p>")
        trow = []
        for t in sorted(m.treatments, key=lambda t: t.position):
            none = ' <span class="badge t-none">no information</span>' if t.name in empty else ""
            trow.append((_e(t.position), f"<code>{_e(t.name)}</code>", _e(t.role.value.replace("_", "-")),
                         f'<span class="badge t-{_e(t.treatment)}">{_e(t.treatment)}</span>{none}', _e(t.reason),
                         _e(_fmt(t.rare_cells)) if t.rare_cells else ""))
        parts.append(_table(("#", "column", "role", "treatment", "reason", "rare cells"), trow, num=(0, 5),
                            nowrap=(2, 3)))
        if rare is not None:
            text = (f"Rare values: no published categorical cell holds a value seen fewer than {rare.k} times in the "
                    f"input. {_fmt(rare.columns_checked)} categorical columns were checked")
            if rare.columns:
                text += f"; {len(rare.columns)} had rare values:"
            else:
                text += "; none had rare values."
            parts.append(f'<p class="note">{text}</p>')
            parts.append(_table(("column", "action", "distinct rare values", "cells or rows affected"),
                                [(f"<code>{_e(c.name)}</code>", _e(c.action.replace('_', ' ')),
                                  _e(_fmt(c.values_merged)), _e(_fmt(c.cells_affected))) for c in rare.columns],
                                num=(2, 3)))
        return "".join(parts)

    def policy(self) -> str:
        m = self.m
        from ppdp.schemas.privacy import gates_set

        policy = m.spec.privacy
        claims = m.privacy.claims
        failing = [c for c in claims if not c.passed]
        parts = [
            "<p>A release is published only when every gate of its privacy policy holds. The claims below were "
            "measured before publication on the published table (and, where marked, against the original input); "
            "anyone holding this folder can re-check them with <code>ppdp validate --release DIR</code> "
            "(adding <code>--original PATH</code> for claims that need the input).</p>",
        ]
        rows = []
        fields = type(policy).model_fields
        for name in gates_set(policy):
            desc = re.sub(r"^[a-z_ ]+ units?: ", "", fields[name].description or "")
            rows.append((f"<code>{_e(name)}</code>", _e(_fmt(getattr(policy, name))), _e(desc)))
        if policy.max_records_at_risk is not None or policy.max_prosecutor_risk is not None:
            rows.append(("<code>risk_threshold</code>", _e(_fmt(policy.risk_threshold)),
                         "a record is at risk when its re-identification risk exceeds this"))
        if policy.min_dcr is not None:
            rows.append(("<code>dcr_quantile</code>", _e(_fmt(policy.dcr_quantile)), _e(
                fields["dcr_quantile"].description or "")))
        if policy.l is not None:
            rows.append(("<code>l_variant</code>", _e(policy.l_variant), "how l-diversity is counted"))
        if policy.beta is not None:
            rows.append(("<code>beta_variant</code>", _e(policy.beta_variant), "which beta-likeness"))
        parts.append("<h3>The policy</h3>")
        parts.append(_table(("gate", "threshold", "meaning"), rows, num=(1,)))
        parts.append("<h3>The claims</h3>")
        if claims:
            parts.append(self._claims_table(claims))
            units = sorted({c.unit for c in claims if c.unit})
            if units:
                parts.append(f'<p class="note">Measured over: {", ".join(_e(_UNIT_TEXT[u][0]) for u in units)}.</p>')
        else:
            parts.append('<p class="muted">The manifest lists no privacy claim.</p>')
        if failing:
            parts.append(f'<div class="verdict bad">{len(failing)} of {len(claims)} claims do not hold.</div>')
        elif claims:
            parts.append(f'<div class="verdict ok">Every privacy claim holds ({len(claims)} of {len(claims)}).</div>')
        parts.append(f'<p class="note">The policy is what this release\'s spec asks for; the safety floor beneath '
                     f"every policy is held to the attacker's view in section 3: {_e(verdict_text(m)[1])}.</p>")
        return "".join(parts)

    def risk(self) -> str:
        m = self.m
        unit_name = _UNIT_TEXT[m.unit][0]
        return "".join([
            '<h3 class="block">What an attacker sees</h3>', self._attacker(),
            '<h3 class="block">The safety floor</h3>', self._floor(),
            f'<h3 class="block">The privacy unit\'s own figures ({_e(unit_name)})</h3>',
            f'<p class="note">Measured over the method\'s privacy unit, {_e(unit_name)}, as the policy\'s claims are '
            "(section 2). They say what the method guarantees by construction; the attacker's view above says what "
            "the published table shows.</p>",
            self._unit_figures()])

    def _attacker(self) -> str:
        """The attacker's view: identity figures on the known columns, groups, copies and linkage, attribute
        disclosure against its baseline, and each part's view of a partitioned release."""
        m = self.m
        view = m.privacy.attacker_view
        if view is None:
            return (f'<p class="muted">This release was {_e(PRE_FLOOR)}: its manifest holds no attacker\'s view (the '
                    "release as an attacker holding the table sees it). The privacy unit's own figures follow.</p>")
        known = view.quasi_identifiers + view.counted_columns
        parts = ['<p class="note">Measured the same way for every method, on the published table as an attacker '
                 "holding it sees it: records are grouped by the columns the attacker can match on, the "
                 "quasi-identifiers as published (labels, intervals, numbers)"
                 + (", and the published columns beside them that split those groups (counted in)"
                    if view.counted_columns else "")
                 + (f". {_e(_worst_part_text(m))} Every table is listed below.</p>" if m.parts else ".</p>")]
        facts = [("identities hidden by", _e({"classes": "equivalence classes", "groups": "generating groups",
                                               "records": "perturbing or generating each record",
                                               "none": "nothing: the quasi-identifiers are published unchanged"}[
                                                   view.identity_by])),
                 ("protects", _e({"identity": "who is in which row", "attribute": "the protected values"}[
                     view.protects])),
                 ("quasi-identifiers as published", ", ".join(f"<code>{_e(c)}</code>" for c in view.quasi_identifiers)
                  or '<span class="muted">none</span>')]
        if view.counted_columns:
            facts.append(("counted in beside them", ", ".join(f"<code>{_e(c)}</code>" for c in view.counted_columns)
                          + ' <span class="note">(published beside the quasi-identifiers, they split the classes an '
                          "attacker sees)</span>"))
        parts.append(_dl(facts))
        on = f"on the {len(known)} known column{'s' if len(known) != 1 else ''}"
        cards = [("records alone", _e(_share(view.records_alone)), _e(on)),
                 ("smallest class", _e(_fmt(view.smallest_class)), f"of {_e(_fmt(view.classes))} classes"),
                 ("average risk", _e(_fmt(view.average_risk, 3)), "mean 1/|class|"),
                 ("highest risk", _e(_fmt(view.highest_risk, 3)), "largest 1/|class|")]
        if view.groups is not None:
            group_cards = [("smallest group", _e(_fmt(view.smallest_group)), f"of {_e(_fmt(view.groups))} groups"),
                           ("average risk, groups", _e(_fmt(view.group_average_risk, 3)), "mean 1/|group|")]
            # a generating-group release hides identities by its groups: their figures first
            cards = group_cards + cards[:1] if view.identity_by == "groups" else cards + group_cards[1:]
        if view.exact_copies is not None:
            cards.append(("exact copies", _e(_share(view.exact_copies)), "published rows equal to an input record"))
        if view.linkage_risk is not None:
            cards.append(("linkage risk", _e(_fmt(view.linkage_risk, 3)), "nearest published record is their own"))
        parts.append(_cards(cards))
        rows = [("classes", _fmt(view.classes), f"distinct combinations of the known columns among the "
                 f"{_fmt(view.records)} published records"),
                ("smallest class", _fmt(view.smallest_class), "rows sharing the rarest combination"),
                ("records alone", _share(view.records_alone), f"share of published records alone {on}"),
                ("average re-identification risk", _fmt(view.average_risk), "mean over published records of "
                 "1/|class| on the known columns"),
                ("highest re-identification risk", _fmt(view.highest_risk), "largest 1/|class|")]
        if view.groups is not None:
            rows += [("generating groups", _fmt(view.groups), "groups in the published group column"),
                     ("smallest group", _fmt(view.smallest_group), "published rows of the smallest group"),
                     ("rows alone in their group", _share(view.group_alone), "share of published rows that are the "
                      "only row of their group"),
                     ("average risk over groups", _fmt(view.group_average_risk), "mean over published rows of "
                      "1/|group|")]
        rows.append(("exact copies", _share(view.exact_copies) if view.exact_copies is not None else "not measured",
                     "share of published rows equal to an input record on every published column (bookkeeping and "
                     "pseudonyms aside)"))
        if view.linkage_risk is not None:
            rows.append(("linkage risk", _fmt(view.linkage_risk), "share of input records whose nearest published "
                         "record stands for them"))
        for key, value in view.nearest_distance.items():
            q = re.fullmatch(r"q(\d+)", key)
            rows.append((f"nearest distance, {int(q.group(1))}% quantile" if q else f"nearest distance {key}",
                         _fmt(value), "distance from an input record to its nearest published record (standardized "
                         "quasi-identifiers)"))
        parts.append(_table(("figure", "value", "meaning"), [tuple(_e(c) for c in r) for r in rows], num=(1,)))
        if view.identity_by == "groups":
            parts.append('<p class="note">The rows are synthesized: a row alone on the known columns leads an attacker '
                         "to its generating group, which stands for none of its records; the group figures are the "
                         "ones the safety floor holds this release to.</p>")
        if view.disclosure:
            parts.append("<h4>Attribute disclosure</h4>")
            parts.append('<p class="note">For each protected column: the share of published records whose value an '
                         "attacker holding their known columns learns (the most common value among the rows sharing "
                         "them; for numbers, within the tolerance), against the best constant guess without the "
                         "release (the baseline). The gain is the difference, in points.</p>")
            parts.append(_table(
                ("column", "kind", "tolerance", "records", "learned", "baseline", "gain", "re-check from"),
                [(f"<code>{_e(d.column)}</code>", _e(d.kind), _e(f"±{_fmt(d.tolerance, 3)}") if d.tolerance
                  is not None else "exact", _e(_fmt(d.records)), _e(_share(d.disclosure)), _e(_share(d.baseline)),
                  _e(f"{100 * d.gain:+.1f} points"),
                  "published table" if d.recheck == "published" else "needs the original input")
                 for d in view.disclosure], num=(2, 3, 4, 5, 6), nowrap=(7,)))
        elif view.protects == "attribute":
            parts.append('<p class="muted">No protected column could be measured for attribute disclosure.</p>')
        if m.parts:
            parts.append("<h4>Each published table</h4>")
            rows = []
            for part in m.parts:
                v, f = part.privacy.attacker_view, part.privacy.floor
                if v is None:
                    rows.append((f"<code>{_e(part.name)}</code>", '<span class="muted">not measured</span>', "", "",
                                 "", "", _badge(None)))
                    continue
                cols = ", ".join(f"<code>{_e(c)}</code>" for c in v.quasi_identifiers + v.counted_columns)
                rows.append((f"<code>{_e(part.name)}</code>", cols or '<span class="muted">none</span>',
                             _e(_fmt(v.classes)), _e(_fmt(v.smallest_class)), _e(_share(v.records_alone)),
                             _e(_fmt(v.average_risk, 3)),
                             _badge(f.holds if f is not None else None, "holds", "below")))
            parts.append(_table(("table", "known columns", "classes", "smallest class", "records alone",
                                 "average risk", "safety floor"), rows, num=(2, 3, 4, 5), nowrap=(0, 6)))
        if view.uninformative_columns:
            parts.append(f'<p class="note"><span class="badge t-none">no information</span> '
                         f"{', '.join(f'<code>{_e(c)}</code>' for c in view.uninformative_columns)}: '*' (or "
                         "missing) in every published row.</p>")
        return "".join(parts)

    def _floor(self) -> str:
        """The safety floor: each applicable row with its figure, limit, value, verdict and where the limit comes
        from."""
        m = self.m
        floor = m.privacy.floor
        if floor is None:
            return (f'<p class="muted">This release was {_e(PRE_FLOOR)}: its manifest records no safety floor. '
                    "Releases made since are held to it whatever their policy says.</p>")
        applies = {"classes": "equivalence classes", "groups": "generating groups", "records": "record by record",
                   "attribute": "a protected attribute"}
        parts = ['<p>Under every policy lies the safety floor: limits no spec can lower, on the attacker\'s view '
                 "above. The rows that apply follow from what the method protects and how it hides identities "
                 f"(here: {_e(', '.join(applies.get(a, a) for a in floor.applies) or 'none')}). A release below it "
                 "is published only when its owner records a reason (<code>privacy.accept_below_floor</code>).</p>"]
        rows = []
        for c in floor.claims:
            rule = floor_rule(c)
            kind = floor_source_kind(rule)
            badge = "src-std" if kind == "cited standard" else "src-own"
            text = rule.source.removeprefix("ppdp's choice: ") if rule is not None else ""
            source = f'<span class="badge {badge}">{_e(kind)}</span> {_e(text)}'
            figure = _e(c.measure) + (f'<br><span class="note">{_e(c.worst)}</span>' if c.worst else "")
            rows.append((f"<code>{_e(c.name.removeprefix('floor: '))}</code>", figure, _e(_fmt(c.value)),
                         f"{_COMPARISON.get(c.comparison, _e(c.comparison))} {_e(_fmt(c.threshold))}",
                         _badge(c.passed), "published table" if c.recheck == "published"
                         else "needs the original input", source))
        if rows:
            parts.append(_table(("floor row", "figure", "value", "limit", "verdict", "re-check from", "source"), rows,
                                num=(2,), nowrap=(0, 3, 4)))
            parts.append('<p class="note">Source: <span class="badge src-std">cited standard</span> a limit taken '
                         'from a published standard; <span class="badge src-own">ppdp\'s choice</span> a limit ppdp '
                         "sets itself, with its reason.</p>")
        else:
            parts.append('<p class="muted">No floor row applies to this release.</p>')
        failed = [c for c in floor.claims if not c.passed]
        if floor.accepted is not None:
            a = floor.accepted
            parts.append(f'<div class="verdict bad">Published below the safety floor on purpose: {_e(a.reason)} '
                         f"(approved by {_e(a.approved_by)}); {len(failed)} of {len(floor.claims)} floor rows "
                         "fail.</div>")
        elif floor_verdict(m) is False:
            parts.append(f'<div class="verdict bad">Below the safety floor: {len(failed)} of {len(floor.claims)} '
                         "floor rows fail" + (", or a table's own floor fails" if m.parts else "") + ".</div>")
        elif floor.claims:
            parts.append(f'<div class="verdict ok">The release meets the safety floor ({len(floor.claims)} of '
                         f"{len(floor.claims)} rows hold).</div>")
        return "".join(parts)

    def _unit_figures(self) -> str:
        """The privacy unit's own figures: class or group sizes, ARX's risks, pyCANON's models, distances,
        distortion, paper 002's attacker."""
        m, p = self.m, self.m.privacy
        parts = []
        threshold = next((c.threshold for c in p.claims if c.name == "k"), None)
        if threshold is None and m.spec.privacy.k is not None:
            threshold = float(m.spec.privacy.k)
        if m.unit == "record":
            parts.append("<p>This release's privacy unit is the <b>record</b>: rows are perturbed or generated one "
                         "by one, so there are no equivalence classes or generating groups to count. Its risk is "
                         "measured by comparing each original record with the published ones (below).</p>")
        else:
            what = "equivalence class" if m.unit == "equivalence_class" else "generating group"
            sizes, note = self._class_sizes()
            if sizes is None:
                parts.append(f'<p class="muted">The {what} sizes cannot be computed from data.parquet: {_e(note)}.</p>')
            elif sizes.size == 0:
                parts.append("<p class=\"muted\">The published table has no rows.</p>")
            else:
                small = int(sizes[sizes < threshold].sum()) if threshold is not None else 0
                over = ("the quasi-identifiers " + ", ".join(f"<code>{_e(q)}</code>" for q in note.split("\x00"))
                        if m.unit == "equivalence_class" else f"the group column <code>{_e(note)}</code>")
                parts.append(
                    f"<p>The {_fmt(int(sizes.sum()))} published rows fall into <b>{_fmt(sizes.size)} "
                    f"{_plural(what) if sizes.size != 1 else what}</b> "
                    f"(grouped by {over}): the smallest holds <b>{_fmt(int(sizes.min()))}</b> "
                    f"record{'s' if sizes.min() != 1 else ''}, the median "
                    f"{_fmt(float(np.median(sizes)))}, the mean {_fmt(float(sizes.mean()))}, the largest "
                    f"{_fmt(int(sizes.max()))}."
                    + (f" {_fmt(small)} records are in {_plural(what)} smaller than the policy's k = "
                       f"{_fmt(threshold)}."
                       if threshold is not None and small else
                       (f" No {what} is smaller than the policy's k = {_fmt(threshold)}." if threshold is not None
                        else "")) + "</p>")
                parts.append(f"<figure>{_histogram_svg(sizes, threshold, what)}<figcaption>How many "
                             f"{_plural(what)} have "
                             f"each size, counted from data.parquet"
                             + (" (red: below the policy's k)." if threshold is not None else ".")
                             + "</figcaption></figure>")
        r = p.risk
        if r is not None:
            parts.append("<h4>Re-identification risk</h4>")
            parts.append('<p class="note">ARX\'s attacker models over the classes above (risk 1 means certain '
                         "re-identification).</p>")
            rows = []
            for key, name, desc in _RISK_TEXT:
                value = getattr(r, key)
                if value is None:
                    continue
                if key == "records_at_risk":
                    desc = f"share of records whose prosecutor risk exceeds {_fmt(r.risk_threshold)}"
                rows.append((_e(name), _e(_fmt(value)), _e(desc)))
            parts.append(_table(("measure", "value", "meaning"), rows, num=(1,)))
        a = p.measures
        if a is not None:
            rows = []
            for key, value in a.model_dump().items():
                if value is None or key == "k_anonymity":
                    continue
                shown = ", ".join(_fmt(v) for v in value) if isinstance(value, list | tuple) else _fmt(value)
                rows.append((f"<code>{_e(key)}</code>", _e(shown)))
            if rows:
                parts.append("<h4>Anonymity models</h4>")
                parts.append(f'<p class="note">pyCANON\'s measures over the classes and the sensitive attributes '
                             f"({', '.join(f'<code>{_e(s)}</code>' for s in p.sensitive_attributes) or 'none'}).</p>")
                parts.append(_table(("measure", "value"), rows, num=(1,)))
        s = p.synthetic
        if s is not None or p.linkage_risk is not None or p.dcr_quantile is not None:
            parts.append("<h4>Distance and linkage</h4>")
            rows = []
            link = s.linkage_risk if s is not None and s.linkage_risk is not None else p.linkage_risk
            if link is not None:
                rows.append(("linkage risk", _e(_fmt(link)), "share of original records whose nearest published "
                             "record stands for them (record) or came from their own group"))
            if s is not None:
                for key, value in s.dcr_quantiles.items():
                    q = re.fullmatch(r"q(\d+)", key)
                    name = f"DCR, {int(q.group(1))}% quantile" if q else f"DCR {key}"
                    rows.append((_e(name), _e(_fmt(value)), "distance from an original record to its closest "
                                 "published record (standardized quasi-identifiers)"))
                if s.dcr_exact_matches is not None:
                    rows.append(("exact matches", _e(_fmt(s.dcr_exact_matches)),
                                 "share of original records published unchanged"))
                if s.confidence_interval_privacy is not None:
                    rows.append(("confidence-interval privacy", _e(_fmt(s.confidence_interval_privacy)),
                                 "paper 000: 95% interval width of a value's estimate / the attribute's range"))
            elif p.dcr_quantile is not None:
                rows.append(("DCR at the policy's quantile", _e(_fmt(p.dcr_quantile)), ""))
            parts.append(_table(("measure", "value", "meaning"), rows, num=(1,)))
        q = p.perturbation
        if q is not None:
            parts.append("<h4>Value distortion</h4>")
            parts.append('<p class="note">Paper 004\'s measures, original against published values (rows '
                         "aligned).</p>")
            parts.append(_table(("measure", "value", "meaning"),
                                [(_e(name), _e(_fmt(getattr(q, key))), _e(desc)) for key, name, desc
                                 in _PERTURBATION_TEXT], num=(1,)))
        att = p.attacker
        if att is not None:
            parts.append("<h4>Random-query attacker</h4>")
            parts.append(f'<p class="note">Paper 002: {_fmt(att.queries)} random queries built from original '
                         "records' quasi-identifier values, asked of the original table and of the release.</p>")
            sides = [("original", att.original)] if att.release_is_original else [
                ("original table", att.original), ("release", att.release)]
            rows = []
            for label, getter in (
                    ("queries matching a record", lambda x: _fmt(x.matched_queries)),
                    ("queries matching exactly one record", lambda x: _pct(x.identifying_share)),
                    ("re-identification probability, median", lambda x: _fmt(x.reidentification_median)),
                    ("re-identification probability, mean", lambda x: _fmt(x.reidentification_mean)),
                    ("re-identification probability, max", lambda x: _fmt(x.reidentification_max)),
                    ("sensitive association, mean", lambda x: _fmt(x.sensitive_association_mean))):
                values = [getter(side) for _, side in sides]
                if all(v == "n/a" for v in values):
                    continue
                rows.append((_e(label), *(_e(v) for v in values)))
            parts.append(_table(("measure", *(name for name, _ in sides)), rows, num=tuple(range(1, len(sides) + 1)),
                                compact=True))
        if not parts:
            parts.append('<p class="muted">The manifest holds no figure of the privacy unit.</p>')
        return "".join(parts)

    def _class_sizes(self) -> tuple[np.ndarray | None, str]:
        m, frame = self.m, self.frame
        if m.unit == "generating_group":
            col = m.group_column
            if not col or col not in frame.columns:
                return None, "the group column is not in the table"
            ids = pd.factorize(frame[col], use_na_sentinel=False)[0]
            return np.bincount(ids) if len(ids) else np.zeros(0, dtype=np.int64), col
        if self.parts:  # each part's classes over its own quasi-identifiers (one class when it has none)
            sizes = [np.bincount(equivalence_class_ids(self.parts[p.name], p.quasi_identifiers))
                     if p.quasi_identifiers else np.array([p.rows]) for p in m.parts if p.rows]
            return (np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)), "each part's quasi-identifiers"
        qis = m.roles.quasi_identifiers
        missing = [q for q in qis if q not in frame.columns]
        if missing or not qis:
            return None, ("a quasi-identifier column is missing" if missing else "no quasi-identifier")
        ids = equivalence_class_ids(frame, qis)
        return (np.bincount(ids) if len(ids) else np.zeros(0, dtype=np.int64)), "\x00".join(qis)

    def utility(self) -> str:
        m, u = self.m, self.m.utility
        ratio = "n/a" if u.ratio is None else f"{u.ratio:.3f}"
        parts = [
            f"<p>A <b>{_e(u.classifier)}</b> classifier trained on the published rows ({_fmt(u.train_rows)}) and "
            f"tested on the {_fmt(u.test_rows)} held-out original rows reached accuracy <b>{u.accuracy:.4f}</b>; the "
            f"same classifier trained on the original rows reached <b>{u.accuracy_original:.4f}</b> (ratio "
            f"{_e(ratio)}).</p>",
            _cards([("accuracy on the release", f"{u.accuracy:.3f}", f"{_e(u.classifier)}, held-out rows"),
                    ("accuracy on the original", f"{u.accuracy_original:.3f}", "same classifier and rows"),
                    ("ratio", _e(ratio), "release / original"),
                    ("mean shift", _e(_fmt(u.mean_shift, 3)), "|mean difference| / sd"),
                    ("correlation loss", _e(_fmt(u.correlation_loss, 3)), "mean |correlation difference|")]),
        ]
        if u.gates:
            parts.append("<h3>Utility gates</h3>")
            parts.append(self._claims_table(u.gates, recheck=False))
        if u.per_class:
            parts.append("<h3>Accuracy per class</h3>")
            rows, bars = [], []
            for c in sorted(u.per_class, key=lambda c: c.label):
                name = self._labels[c.label]
                rows.append((_e(name), _e(_fmt(c.support)), f"{c.sanitized:.4f}", f"{c.original:.4f}",
                             f"{c.sanitized - c.original:+.4f}"))
                bars.append((name if len(name) <= 26 else name[:25] + "…", c.sanitized, c.original))
            parts.append(_table(("class", "held-out rows", "release", "original", "difference"), rows,
                                num=(1, 2, 3, 4)))
            parts.append(f'<p class="note">A class label is shown only when it occurs at least {self.k_labels} '
                         "times in the published table; classes are numbered in sorted label order.</p>")
            if len(bars) <= 30:
                svg, legend = _per_class_svg(bars)
                parts.append(f"<figure>{svg}{legend}<figcaption>Accuracy per class on the held-out original rows, "
                             "for the classifier trained on the release and on the original rows.</figcaption>"
                             "</figure>")
        if u.delta_r:
            parts.append("<h3>Paper 004's ΔR</h3>")
            eps = "" if u.delta_r_epsilon is None else f" with epsilon = {_fmt(u.delta_r_epsilon)}"
            parts.append(f'<p class="note">ΔR = R_p - (1 - epsilon) R_o{eps}; the release keeps utility when ΔR ≥ 0 '
                         "for every classifier.</p>")
            parts.append(_table(("classifier", "R_p (release)", "R_o (original)", "ΔR", "verdict"),
                                [(_e(d.classifier), f"{d.accuracy:.4f}", f"{d.accuracy_original:.4f}",
                                  f"{d.value:+.4f}", _badge(d.value >= 0)) for d in u.delta_r], num=(1, 2, 3)))
        parts.append("<h3>Information loss per attribute</h3>")
        levels = m.method.params.get("levels") if isinstance(m.method.params.get("levels"), dict) else {}
        cells = m.method.suppressed_cells
        attrs = list(dict.fromkeys([*levels, *cells]))
        if attrs:
            rows = []
            for a in attrs:
                level = levels.get(a)
                rows.append((f"<code>{_e(a)}</code>", _e(_fmt(level)) if isinstance(level, int | float) else "",
                             _e(_fmt(cells.get(a, 0)))))
            head = ("attribute", "generalization level", "suppressed cells") if levels else (
                "attribute", "", "suppressed cells")
            parts.append(_table(head, rows, num=(1, 2), compact=True))
        lat = m.tuning.lattice
        if lat is not None and lat.measures:
            parts.append(f'<p class="note">The chosen lattice node is best under <b>{_e(lat.measure)}</b> '
                         "(ARX's definitions); all its measures:</p>")
            parts.append(_table(("measure", "value", "meaning"),
                                [(f"<code>{_e(k)}</code>", _e(_fmt(v)), _e(_LATTICE_TEXT.get(k, "")))
                                 for k, v in lat.measures.items()], num=(1,)))
        if not attrs and (lat is None or not lat.measures):
            parts.append('<p class="note">The method reports no per-attribute loss (no generalization level, no '
                         "suppressed cell); the mean shift and correlation loss above summarize the loss over the "
                         "encoded attributes.</p>")
        return "".join(parts)

    def tuning(self) -> str:
        t, unit = self.m.tuning, self.m.unit
        parts = [f"<p>{_e(t.rule)}.</p>" if not t.rule.endswith(".") else f"<p>{_e(t.rule)}</p>"]
        facts = [("strategy", _e(t.strategy)), ("objective", _e(t.objective.replace("_", " ")))]
        if t.parameter:
            facts.append(("parameter", f"<code>{_e(t.parameter)}</code>"
                          + (f" ({_e(t.safer)} is safer)" if t.safer else "")))
        if t.low is not None or t.high is not None:
            facts.append(("range searched", f"{_e(_fmt(t.low))} to {_e(_fmt(t.high))}"))
        if t.threshold is not None:
            facts.append(("policy threshold on the parameter", _e(_fmt(t.threshold))))
        if t.accuracy_gap is not None:
            facts.append(("accuracy gap t_a", _e(_fmt(t.accuracy_gap))))
        if t.suggested is not None:
            facts.append(("method's suggestion", _e(_fmt(t.suggested))))
        if t.chosen is not None:
            facts.append(("chosen value", f"<b>{_e(_fmt(t.chosen))}</b>"))
        if t.evaluations:
            facts.append(("values evaluated", f"{len(t.evaluations)} of {_fmt(t.candidates)} candidates"))
        if t.class_sizes:
            facts.append(("training rows per class", _e(", ".join(f"{k}: {_fmt(v)}" for k, v in
                                                                  t.class_sizes.items()))))
        parts.append(_dl(facts))
        privacy_label = {"equivalence_class": "k (smallest class)",
                         "generating_group": "confidence-interval privacy",
                         "record": "DCR quantile"}[unit]
        if t.evaluations:
            svg, legend = _tuning_svg(t, privacy_label)
            notes = ["the band is the accuracy gap the rule allows"] if t.accuracy_gap is not None else []
            notes += ["the dashed line the chosen value"] if t.chosen is not None else []
            notes += ["the dotted red line the policy threshold"] if t.threshold is not None else []
            parts.append(f"<figure>{svg}{legend}<figcaption>Accuracy on the held-out rows (blue, left axis) and the "
                         "privacy figure (red, right axis) for every evaluated value"
                         + (f"; {', '.join(notes)}" if notes else "") + ".</figcaption></figure>")
            rows, marked = [], []
            chosen = float(t.chosen) if t.chosen is not None else None
            for e in sorted(t.evaluations, key=lambda e: e.value):
                rows.append((_e(_fmt(e.value)), _e(_fmt(e.privacy)), f"{e.accuracy:.4f}",
                             _badge(e.meets_policy, "passes", "fails") if e.meets_policy is not None else "",
                             _e(_fmt(e.runs))))
                marked.append(chosen is not None and math.isclose(e.value, chosen))
            parts.append(_table((_e(t.parameter or "value"), _e(privacy_label), "accuracy", "policy", "runs"), rows,
                                num=(0, 1, 2, 4), marked=marked, compact=True))
            parts.append('<p class="note">The chosen value is highlighted.</p>')
        elif t.lattice is not None:
            lat = t.lattice
            parts.append(f"<p>Full-domain generalization: the lattice search chose one generalization level per "
                         f"quasi-identifier. It checked {_fmt(lat.checked)} of {_fmt(lat.total)} nodes against the "
                         f"privacy gates (visiting {_fmt(lat.visited)}, the others settled by monotonicity); the "
                         f"chosen node has {_fmt(lat.classes)} equivalence classes and suppresses "
                         f"{_fmt(lat.suppressed_rows)} records.</p>")
            parts.append(_table(("quasi-identifier", "level"),
                                [(f"<code>{_e(c)}</code>", _e(_fmt(v))) for c, v in lat.node.items()], num=(1,),
                                compact=True))
        else:
            parts.append('<p><span class="badge muted">fixed</span> The method ran with its parameters as given; '
                         "nothing was tuned.</p>")
        return "".join(parts)

    def checks(self) -> str:
        m = self.m
        parts = ["<p>Great Expectations suites run on the input before anything else, and on the release before it "
                 "was written. Results are counts only.</p>"]
        for title, outcomes, suite in (("Input", m.ingest.expectations, m.ingest.suite),
                                       ("Output", m.output_checks, None)):
            ok, total = _check_counts(outcomes)
            parts.append(f"<h3>{title}: {ok} of {total} passed "
                         + _badge(ok == total, "all passed", f"{total - ok} failed") + "</h3>")
            if suite:
                parts.append(f'<p class="note">Suite <code>{_e(suite)}</code>, {_fmt(m.ingest.expectation_count)} '
                             f"expectations, on {_fmt(m.ingest.rows)} rows and {len(m.ingest.columns)} columns "
                             f"({_e(m.ingest.format)}).</p>")
            groups: dict[str, list[ExpectationOutcome]] = {}
            for o in outcomes:
                groups.setdefault(o.expectation, []).append(o)
            rows = []
            for name, items in groups.items():
                unexpected = [o.unexpected_count for o in items if o.unexpected_count is not None]
                columns = [o.column for o in items if o.column]
                rows.append((f"<code>{_e(name)}</code>", _e(_fmt(len(items))), _e(_fmt(sum(o.success for o in items))),
                             _e(_fmt(sum(not o.success for o in items))),
                             _e(_fmt(sum(unexpected))) if unexpected else "",
                             _e(_fmt(len(columns))) if columns else ""))
            parts.append(_table(("expectation", "checks", "passed", "failed", "unexpected cells", "columns"), rows,
                                num=(1, 2, 3, 4, 5)))
            failed = [o for o in outcomes if not o.success]
            if failed:
                parts.append(_table(("failed expectation", "column", "unexpected cells", "of"),
                                    [(f"<code>{_e(o.expectation)}</code>", f"<code>{_e(o.column)}</code>"
                                      if o.column else "", _e(_fmt(o.unexpected_count)), _e(_fmt(o.element_count)))
                                     for o in failed], num=(2, 3)))
        return "".join(parts)

    def series(self) -> str:
        m = self.m
        r = m.series
        if r is None:
            return ('<p class="note">Made before ppdp judged releases as a series: no composed figures were '
                    "recorded.</p>")
        parts = []
        if not r.earlier:
            parts.append("<p>The dataset's first release under this publish root: there was nothing to compose it "
                         "with. Its records' places are in the publisher's series ledger, so the next release is "
                         "judged with this one.</p>")
        else:
            parts.append(f"<p>Judged, before publishing, with {_e(_fmt(len(r.earlier)))} earlier release(s) of "
                         f"<code>{_e(m.dataset)}</code> ({_e(r.window)}), as an attacker holding all of them would "
                         f"judge it. Records are followed across releases by {_e(r.fingerprinted_by)}, "
                         "fingerprinted under the publisher's key in a ledger that is never published.</p>")
        if r.figures:
            parts.append(_table(("composed figure", "value", "bound", "verdict", "how"),
                                [(_e(f.name), _e(_fmt(f.value)), _e(f"{f.comparison} {_fmt(f.limit)}"),
                                  _badge(f.holds), _e(f.detail)) for f in r.figures], num=(1,)))
        if r.pairs:
            parts.append("<h3>With each earlier release</h3>")
            parts.append(_table(
                ("earlier release", "method", "unit", "records in both", "smallest intersection", "below k"),
                [(f"<code>{_e(p.release_id)}</code>", _e(p.method), _e(p.unit), _e(_fmt(p.common_records)),
                  _e(_fmt(p.smallest_intersection)) if p.smallest_intersection is not None else "n/a",
                  _e(_pct(p.records_below_k)) if p.records_below_k is not None else "n/a") for p in r.pairs],
                num=(3, 4, 5)))
        if r.budget is not None:
            b = r.budget
            limit = "no budget set" if b.epsilon_limit is None else f"budget epsilon {_fmt(b.epsilon_limit)}" + (
                f" per {b.period}" if b.period else "")
            parts.append(f"<p>Differential privacy budget ({_e(b.rule)}): earlier DP releases spent epsilon "
                         f"{_e(_fmt(b.epsilon_before))} in {_e(_fmt(b.releases))} release(s); this one spends "
                         f"{_e(_fmt(b.epsilon))}; {_e(limit)}. {_badge(b.holds, 'within budget', 'over budget')}</p>")
        if r.kept_members is not None:
            parts.append(f"<p>Group memberships kept from the previous release (<code>series.keep_groups</code>): "
                         f"{_e(_fmt(r.kept_members))} records were placed in their previous group; records whose "
                         f"previous group fell below k are counted as suppressed rows ("
                         f"{_e(_fmt(m.method.suppressed_rows))}).</p>")
        parts.append('<p class="note">These figures are re-checked by the publisher (<code>ppdp series</code>): they '
                     "need the series ledger, which is never published. <code>ppdp validate --release</code> does not "
                     "re-check them.</p>")
        return "".join(parts)

    def provenance(self) -> str:
        m = self.m
        data_hash = self.files.get("data.parquet")
        if m.parts:
            data_hash = parts_digest([(p.file, self.files.get(p.file, "")) for p in m.parts])
        matches = data_hash is not None and data_hash == m.output_sha256
        facts = [
            ("release id", f"<code>{_e(m.release_id)}</code>"),
            ("dataset", _e(m.dataset)),
            ("created at", _e(m.created_at.isoformat())),
            ("flow run id", f"<code>{_e(m.flow_run_id)}</code>" if m.flow_run_id else "none"),
            ("seed", _e(_fmt(m.seed))),
            ("input SHA-256", f"<code>{_e(m.input_sha256)}</code>"),
            ("spec SHA-256", f"<code>{_e(m.spec_sha256)}</code>"),
            ("output SHA-256", f"<code>{_e(m.output_sha256)}</code> "
             + _badge(matches, *(("the parts match", "a part differs") if m.parts else
                                 ("data.parquet matches", "data.parquet differs")))),
        ]
        parts = [_dl(facts), "<h3>Files this report was built from</h3>",
                 _table(("file", "SHA-256"), [(f"<code>{_e(n)}</code>", f"<code>{_e(h)}</code>")
                                              for n, h in self.files.items()], compact=True),
                 '<p class="note">The audit trail signs the release folder\'s exact files; '
                 "<code>ppdp audit verify</code> checks them, <code>ppdp report DIR</code> regenerates this "
                 "report.</p>",
                 "<h3>Versions at release time</h3>",
                 _table(("component", "version"), [(_e(k.replace("_", "-")), f"<code>{_e(v)}</code>")
                                                   for k, v in m.versions.model_dump().items()], compact=True)]
        return "".join(parts)

    # -- page -----------------------------------------------------------------------------------------------
    def render(self) -> str:
        m = self.m
        floor_ok = floor_verdict(m)
        nav = "".join(f'<a href="#{sid}">{i}. {_e(title)}</a>' for i, (sid, title) in enumerate(SECTIONS, 1))
        sections = []
        for i, (sid, title) in enumerate(SECTIONS, 1):
            body = getattr(self, sid)()
            sections.append(f'<section id="{sid}"><h2><span class="num">{i}</span>{_e(title)}</h2>{body}</section>')
        csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
        return (
            "<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta name="generator" content="ppdp {_e(m.versions.ppdp)}">\n'
            f"<title>Release report: {_e(m.dataset)} {_e(m.release_id)}</title>\n"
            f"<style>{_CSS}</style>\n</head>\n<body>\n"
            f'<header class="top{" below" if floor_ok is False else ""}"><div class="wrap">'
            '<p class="eyebrow">ppdp release report</p>'
            f"<h1>{_e(m.dataset)}</h1><p class=\"sub\">Release <code>{_e(m.release_id)}</code> · created "
            f"{_e(m.created_at.strftime('%Y-%m-%d %H:%M UTC'))} · {_fmt(m.rows)} rows · {_e(m.method.name)}</p>"
            f"{self._verdict_badges()}{self._alarm()}</div></header>\n"
            f'<nav class="toc"><div class="wrap">{nav}</div></nav>\n'
            f'<main class="wrap">\n' + "\n".join(sections) + "\n</main>\n"
            '<footer class="wrap">Generated by ppdp from this release folder\'s manifest.json and data.parquet. '
            "No data value appears in this report: only counts, aggregates, column names, and class labels that "
            f"occur at least {self.k_labels} times in the published table.</footer>\n"
            "</body>\n</html>\n"
        )


__all__ = ["REPORT_NAME", "SECTIONS", "label_min_count", "load_folder", "render_report", "report_markdown",
           "report_table", "write_atomic", "write_report"]
