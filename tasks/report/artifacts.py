"""The summary of a release as Prefect artifacts: markdown (:func:`report_markdown`) and a table
(:func:`report_table`), both escaped for markdown. Aggregates only, classes by position, never a data value."""

from __future__ import annotations

import math
import re

import numpy as np

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.reports import AttackerView, Claim
from ppdp.schemas.units import unit_of
from ppdp.tasks.privacy.attacker import view_lines
from ppdp.tasks.privacy.series import series_line
from ppdp.tasks.report.fmt import claim_text, fmt, md
from ppdp.tasks.report.wording import (
    GATE_MEASURE,
    check_counts,
    covers_every_row,
    objective_text,
    protection_text,
    rows_text,
    verdict_text,
    worst_part_text,
)
from ppdp.tasks.utility import marginals_line, tstr_lines

Cell = str | int | float | None
"""One cell of a table artifact (a JSON scalar)."""
TableRow = dict[str, Cell]

_COMPARISON_TEXT = {">=": "≥", "<=": "≤", "<": "<", ">": ">"}
"""A comparison as the table artifact writes it (``>=`` at the start of a markdown cell opens a blockquote)."""
_BLOCK_START = re.compile(r"^([>+=-]|\d+[.)](?=\s|$))")
"""What opens a block (blockquote, list, heading underline, numbered list) at the start of a markdown text."""


def report_markdown(manifest: Manifest) -> str:
    """A short markdown summary of the release: first the two-part verdict (policy, safety floor; the owner's reason
    when published below the floor), what it protects against and what not, the attacker's view and the floor rows;
    then claims, utility, tuning, checks. Aggregates only, classes by position, never a data value."""
    m = manifest
    lines = _markdown_verdict(m) + _markdown_claims(m) + _markdown_utility(m)
    t = m.tuning
    if t.lattice is not None:
        node = ", ".join(f"{md(c)}={v}" for c, v in t.lattice.node.items())
        lines += ["", f"**Tuning:** lattice node ({node}), {md(objective_text(t))}; {t.lattice.checked:,} of "
                      f"{t.lattice.total:,} nodes checked."]
    elif t.strategy == "fixed" or t.chosen is None:
        lines += ["", f"**Tuning:** fixed: {md(t.rule.rstrip('.'))}."]
    else:
        lines += ["", f"**Tuning:** {md(t.parameter or '')} = {fmt(t.chosen)} chosen by {t.strategy} from "
                      f"{len(t.evaluations)} evaluated values."]
    inp, outp = check_counts(m.ingest.expectations), check_counts(m.output_checks)
    lines += ["", f"**Checks:** input {inp[0]} of {inp[1]} expectations passed; output {outp[0]} of {outp[1]} "
                  "passed.", ""]
    return "\n".join(lines)


def _markdown_verdict(m: Manifest) -> list[str]:
    """The markdown's opening: the verdict, a release below the floor, what is protected and what not, the
    attacker's view, the floor rows and the release's place in its series."""
    policy, floor_part = verdict_text(m)
    floor = m.privacy.floor
    view = m.privacy.attacker_view
    lines = [f"**Verdict: {policy} · {floor_part}**", ""]
    if floor is not None and floor.accepted is not None:
        a = floor.accepted
        lines += [f"**Published below the safety floor: {md(a.reason)}** (approved by {md(a.approved_by)}); "
                  "failed floor rows:"] + [f"- {md(f)}" for f in a.failed] + [""]
    protects, lacks = protection_text(m)
    lines += [md(protects), "", md(lacks), ""]
    if view is not None:
        # the space after "**" matters: ":**Its" does not close the bold (CommonMark's flanking rule)
        where = f" {md(worst_part_text(m))}" if m.parts else ""
        lines += [f"**What an attacker sees:**{where}"] + [f"- {md(line)}" for line in view_lines(view)] + [""]
    if floor is not None and floor.claims:
        lines += ["| verdict | value | limit | safety floor |", "|---|---:|---|---|"]
        for c in floor.claims:
            value, limit = claim_text(c)
            lines.append(f"| {'holds' if c.passed else 'FAILS'} | {value} | "
                         f"{_COMPARISON_TEXT.get(c.comparison, c.comparison)} {limit} | {md(c.name)} |")
        lines.append("")
    if m.series is not None:
        lines += [f"**This release in its series:** {md(series_line(m.series))}", ""]
    return lines


def _markdown_claims(m: Manifest) -> list[str]:
    """The markdown's release heading, its size and method, and the privacy claims' table."""
    claims = m.privacy.claims
    held = sum(c.passed for c in claims)
    lines = [
        f"# Release {md(m.dataset)} `{m.release_id.replace('`', '')}`",
        "",
        f"{rows_text(m)}, {len(m.columns)} columns, published {m.created_at:%Y-%m-%d %H:%M} UTC with "
        f"**{md(m.method.name)}** (privacy unit: {unit_of(m.unit).plural}"
        + (f", {m.privacy.groups:,} classes, smallest {m.privacy.k:,}" if m.privacy.k is not None
           and m.privacy.groups is not None else "") + ").",
        "",
        f"**Privacy claims: {held} of {len(claims)} hold** (the unit's own figures below).",
        "",
        "| verdict | value | rule | claim | measured |",
        "|---|---:|---|---|---|",
    ]
    for c in claims:
        value, limit = claim_text(c)
        lines.append(f"| {'holds' if c.passed else 'FAILS'} | {value} | "
                     f"{_COMPARISON_TEXT.get(c.comparison, c.comparison)} {limit} | {md(c.name)} | "
                     f"{md(c.measure or '')} |")
    return lines


def _markdown_utility(m: Manifest) -> list[str]:
    """The markdown's utility: withheld, the label-free measures, or the classifier's accuracy and the rest."""
    u = m.utility
    if u is None:  # withheld: measured on real held-out rows (a differential_privacy release)
        return ["", "**Utility:** withheld (measured on real held-out rows, not differentially private: kept in "
                    "the publisher's private record)."]
    if u.accuracy is None:  # no classifier (no class column): the label-free measures only
        return ["", f"**Utility** (no classifier, nothing held out): {marginals_line(u.marginals)}."]
    ratio = "" if u.ratio is None else f", ratio {u.ratio:.3f}"
    lines = ["", f"**Utility:** accuracy {u.accuracy:.4f} when a {md(u.classifier)} classifier is trained on "
                 f"the release, {u.accuracy_original:.4f} when trained on the original rows{ratio} "
                 f"({u.test_rows:,} held-out rows{'' if covers_every_row(m) else ', never published'})."]
    for d in u.delta_r:
        lines.append(f"- delta R {md(d.classifier)}: {d.value:+.4f} (>= 0 keeps utility)")
    lines += [f"- {md(line)}" for line in tstr_lines(u.tstr, u.regression)]
    if u.marginals is not None:
        lines.append(f"- {md(marginals_line(u.marginals))}")
    return lines


class _Table:
    """The rows of :func:`report_table` as they are added, every row with the same keys."""

    def __init__(self) -> None:
        self.rows: list[TableRow] = []

    def row(self, kind: str, name: str, measure: str | None, unit: str | None, value: Cell,
            comparison: str | None, threshold: float | None, verdict: str | None) -> None:
        value, shown_threshold = _table_figures(value, threshold)
        self.rows.append({"verdict": verdict, "value": table_cell(value),
                          "comparison": _COMPARISON_TEXT.get(comparison, comparison) if comparison else None,
                          "threshold": shown_threshold, "name": table_cell(name), "kind": kind,
                          "measure": table_cell(measure), "unit": table_cell(unit)})

    def claim(self, kind: str, c: Claim) -> None:
        self.row(kind, c.name, c.measure or GATE_MEASURE.get(c.name), c.unit, c.value, c.comparison, c.threshold,
                 "holds" if c.passed else "fails")

    def figure(self, name: str, measure: str, value: float | int | str | None, unit: str | None = None) -> None:
        if value is None:
            return
        self.row("figure", name, measure, unit, value, None, None, None)


def report_table(manifest: Manifest) -> list[TableRow]:
    """The summary as a table: the two-part verdict, one row per privacy claim, per safety floor row (kind
    ``floor``), per utility gate and per key figure (the attacker's view before the privacy unit's own), every row
    with the same keys, in the order the table artifact shows them: what a reader needs first (``verdict``,
    ``value``, ``comparison``, ``threshold``), then what it is (``name``, ``kind``, ``measure``, ``unit``).

    Made for Prefect's table artifact, which renders every text cell as markdown on its own: text cells are
    markdown-escaped (a comparison ``>=`` would open a blockquote; it is written ``≥``), figures are rounded to 4
    significant digits (more, up to 6, where 4 would make a value look equal to its threshold). Aggregates only; no
    class label."""
    m = manifest
    t = _Table()
    _table_verdicts(t, m)
    _table_release(t, m)
    if m.privacy.attacker_view is not None:  # the attacker's view, before the unit's own figures
        _table_attacker(t, m.privacy.attacker_view)
    _table_unit(t, m)
    _table_utility(t, m)
    if m.withheld is not None:
        t.figure("withheld", f"fields computed on the input, not published ({m.withheld.kept_in})",
                 ", ".join(m.withheld.fields))
    if m.tuning.chosen is not None and m.tuning.parameter:
        t.figure(f"tuned {m.tuning.parameter}", "set in the spec (not tuned)" if m.tuning.strategy == "fixed"
                 else f"chosen by {m.tuning.strategy}", m.tuning.chosen)
    inp, outp = check_counts(m.ingest.expectations), check_counts(m.output_checks)
    t.figure("input expectations passed", f"of {inp[1]} (Great Expectations, suite {m.ingest.suite})", inp[0])
    t.figure("output checks passed", f"of {outp[1]} (Great Expectations)", outp[0])
    return t.rows


def _table_verdicts(t: _Table, m: Manifest) -> None:
    """The two-part verdict, the privacy claims, the floor rows, the series' figures and the utility gates."""
    policy, floor_part = verdict_text(m)
    t.figure("policy", "every privacy claim of the policy holds", policy)
    t.figure("safety floor", "the release meets the safety floor", floor_part)
    for c in m.privacy.claims:
        t.claim("privacy claim", c)
    floor = m.privacy.floor
    for c in floor.claims if floor is not None else ():
        t.claim("floor", c)
    for f in m.series.figures if m.series is not None else ():
        t.row("series", f.name, f.detail, None, f.value, f.comparison, f.limit, "holds" if f.holds else "fails")
    if m.series is not None and m.series.budget is not None and m.series.budget.epsilon_limit is not None:
        b = m.series.budget
        t.row("series", "DP budget", f"epsilon spent ({b.rule})", None, b.epsilon_before + b.epsilon, "<=",
              b.epsilon_limit, "holds" if b.holds else "fails")
    for c in m.utility.gates if m.utility is not None else ():
        t.claim("utility gate", c)


def _table_release(t: _Table, m: Manifest) -> None:
    """What was published: rows, tables, row files, columns, the unit and the method."""
    if m.parts:  # a partitioned release: every record is a row of each of its tables
        t.figure("rows", f"published records, each a row of every one of the {len(m.parts)} tables", m.rows)
        t.figure("tables", "published tables (part files)", len(m.parts))
        t.figure("table rows", "rows of all the published tables together", sum(part.rows for part in m.parts))
    else:
        t.figure("rows", "published rows", m.rows)
    if m.data_files:  # a distributed release: one table in row files
        t.figure("row files", "files the table is published in (data/part-*.parquet)", len(m.data_files))
    t.figure("columns", "published columns", len(m.columns))
    t.figure("unit", "what the privacy claims are measured over", m.unit)
    t.figure("method", "sanitization method", m.method.name)


def _table_attacker(t: _Table, view: AttackerView) -> None:
    """The attacker's view: known columns, classes, groups, copies, linkage, distances, disclosure."""
    figure = t.figure
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
    figure("attacker: exact copies", "share of published rows equal to an input record on the known columns",
           view.exact_copies)
    figure("attacker: linkage risk", "share of input records whose nearest published record over the known "
           "columns (quasi-identifiers and every column published beside them) stands for them",
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


def _table_unit(t: _Table, m: Manifest) -> None:
    """The privacy unit's own figures: classes, risks, linkage, distance to the closest record."""
    p = m.privacy
    t.figure("classes", f"{unit_of(m.unit).plural} in the release", p.groups, m.unit)
    t.figure("smallest class", "records in the smallest class", p.k, m.unit)
    t.figure("mean class size", "records per class, mean", p.mean_group_size, m.unit)
    if p.risk is not None:
        t.figure("prosecutor risk (max)", "highest 1/|class|", p.risk.prosecutor_max, m.unit)
        t.figure("marketer risk", "expected share of records re-identified", p.risk.marketer, m.unit)
    t.figure("linkage risk", "share of original records linked to their own published record or group",
             p.linkage_risk, m.unit)
    t.figure("DCR quantile", "distance to closest record at the policy's quantile", p.dcr_quantile, m.unit)


def _table_utility(t: _Table, m: Manifest) -> None:
    """Accuracies, TSTR and regression, and the label-free measures."""
    u, figure = m.utility, t.figure
    if u is not None and u.accuracy is not None:  # None: withheld (a differential_privacy release)
        figure("accuracy", f"{u.classifier} trained on the release, tested on held-out rows", u.accuracy)
        figure("accuracy (original)", f"{u.classifier} trained on the original rows", u.accuracy_original)
        figure("accuracy ratio", "release accuracy / original accuracy", u.ratio)
        for ts in u.tstr:
            figure(f"TSTR {ts.classifier}", "trained on the release, tested on held-out real rows", ts.accuracy)
            figure(f"TSTR {ts.classifier} (original)", "trained on the original rows", ts.accuracy_original)
        for rs in u.regression:
            figure(f"R^2 {rs.column}", "regression trained on the release, held-out real rows", rs.r2)
            figure(f"R^2 {rs.column} (original)", "regression trained on the original rows", rs.r2_original)
    if u is not None and u.marginals is not None:  # label-free: the published table against the input table
        figure("1-way marginal distance", "total variation distance per column, mean", u.marginals.one_way)
        figure("2-way marginal distance", "total variation distance per column pair, mean", u.marginals.two_way)
        figure("correlation difference", "mean |difference| of numeric columns' correlations",
               u.marginals.correlation_difference)
        for dr in u.delta_r:
            figure(f"delta R {dr.classifier}", "R_p - (1 - epsilon) R_o", dr.value)


def table_cell(value: Cell) -> Cell:
    """A table artifact's cell: text markdown-escaped (Prefect renders each text cell as markdown on its own, so
    ``>=``, a ``-`` or ``1.`` at its start would open a block and ``*``, ``_``, backticks, ``|`` would format it);
    anything else as it is."""
    if not isinstance(value, str):
        return value
    text = md(value)  # ">" and "<" become entities; "#", "*", "_", backticks, "|" are escaped
    start = _BLOCK_START.match(text)
    if start is None:
        return text
    mark = start.group(0)  # "-", "+", "=", ">" or "1." / "1)": esc the punctuation that makes it a block
    return mark[:-1] + "\\" + mark[-1] + text[len(mark):]


def _round_figure(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits; whole numbers (counts) and non-finite values unchanged."""
    if not math.isfinite(value) or float(value).is_integer():
        return float(value)
    return float(f"{value:.{digits}g}")


def _table_figures(value: Cell, threshold: float | None) -> tuple[Cell, Cell]:
    """A table artifact row's value and threshold, floats rounded to 4 significant digits, or to as many as 6 when 4
    would make a value look equal to a threshold it differs from (a claim failing by 0.0001 must not read
    0.09 <= 0.09 "fails"). Non-finite floats become text (JSON has no NaN or infinity)."""
    def figure(x: Cell, digits: int) -> Cell:
        if isinstance(x, bool) or not isinstance(x, float | np.floating):
            return x.item() if isinstance(x, np.generic) else x
        return _round_figure(float(x), digits) if math.isfinite(x) else fmt(float(x))

    digits = 4
    while (digits < 6 and isinstance(value, float | np.floating) and threshold is not None and value != threshold
           and figure(value, digits) == figure(threshold, digits)):
        digits += 1
    return figure(value, digits), figure(threshold, digits)  # a non-finite threshold becomes text too
