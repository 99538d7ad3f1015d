"""The summary of a release as Prefect artifacts: markdown (:func:`report_markdown`) and a table
(:func:`report_table`), both escaped for markdown. Aggregates only, classes by position, never a data value."""

from __future__ import annotations

import math
import re

import numpy as np

from ppdp.schemas.manifest import Manifest
from ppdp.schemas.reports import Claim
from ppdp.tasks.privacy.attacker import view_lines
from ppdp.tasks.report.fmt import _claim_text, _fmt, _md
from ppdp.tasks.report.wording import (
    _GATE_MEASURE,
    _UNIT_TEXT,
    _check_counts,
    _every_row,
    _rows_text,
    _worst_part_text,
    objective_text,
    protection_text,
    verdict_text,
)

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
        # the space after "**" matters: ":**Its" does not close the bold (CommonMark's flanking rule)
        where = f" {_md(_worst_part_text(m))}" if m.parts else ""
        lines += [f"**What an attacker sees:**{where}"] + [f"- {_md(line)}" for line in view_lines(view)] + [""]
    if floor is not None and floor.claims:
        lines += ["| verdict | value | limit | safety floor |", "|---|---:|---|---|"]
        for c in floor.claims:
            value, limit = _claim_text(c)
            lines.append(f"| {'holds' if c.passed else 'FAILS'} | {value} | "
                         f"{_COMPARISON_TEXT.get(c.comparison, c.comparison)} {limit} | {_md(c.name)} |")
        lines.append("")
    if m.series is not None:
        from ppdp.tasks.privacy.series import series_line

        lines += [f"**This release in its series:** {_md(series_line(m.series))}", ""]
    lines += [
        f"# Release {_md(m.dataset)} `{m.release_id.replace('`', '')}`",
        "",
        f"{_rows_text(m)}, {len(m.columns)} columns, published {m.created_at:%Y-%m-%d %H:%M} UTC with "
        f"**{_md(m.method.name)}** (privacy unit: {_UNIT_TEXT[m.unit][0]}"
        + (f", {m.privacy.groups:,} classes, smallest {m.privacy.k:,}" if m.privacy.k is not None
           and m.privacy.groups is not None else "") + ").",
        "",
        f"**Privacy claims: {held} of {len(claims)} hold** (the unit's own figures below).",
        "",
        "| verdict | value | rule | claim | measured |",
        "|---|---:|---|---|---|",
    ]
    for c in claims:
        value, limit = _claim_text(c)
        lines.append(f"| {'holds' if c.passed else 'FAILS'} | {value} | "
                     f"{_COMPARISON_TEXT.get(c.comparison, c.comparison)} {limit} | {_md(c.name)} | "
                     f"{_md(c.measure or '')} |")
    u = m.utility
    if u is None:  # withheld: measured on real held-out rows (a differential_privacy release)
        lines += ["", "**Utility:** withheld (measured on real held-out rows, not differentially private: kept in "
                      "the publisher's private record)."]
    elif u.accuracy is None:  # no classifier (no class column): the label-free measures only
        from ppdp.tasks.utility import marginals_line

        lines += ["", f"**Utility** (no classifier, nothing held out): {marginals_line(u.marginals)}."]
    else:
        ratio = "" if u.ratio is None else f", ratio {u.ratio:.3f}"
        lines += ["", f"**Utility:** accuracy {u.accuracy:.4f} when a {_md(u.classifier)} classifier is trained on "
                      f"the release, {u.accuracy_original:.4f} when trained on the original rows{ratio} "
                      f"({u.test_rows:,} held-out rows{'' if _every_row(m) else ', never published'})."]
        for d in u.delta_r:
            lines.append(f"- delta R {_md(d.classifier)}: {d.value:+.4f} (>= 0 keeps utility)")
        from ppdp.tasks.utility import marginals_line, tstr_lines

        lines += [f"- {_md(line)}" for line in tstr_lines(u.tstr, u.regression)]
        if u.marginals is not None:
            lines.append(f"- {_md(marginals_line(u.marginals))}")
    t = m.tuning
    if t.lattice is not None:
        node = ", ".join(f"{_md(c)}={v}" for c, v in t.lattice.node.items())
        lines += ["", f"**Tuning:** lattice node ({node}), {_md(objective_text(t))}; {t.lattice.checked:,} of "
                      f"{t.lattice.total:,} nodes checked."]
    elif t.strategy == "fixed" or t.chosen is None:
        lines += ["", f"**Tuning:** fixed: {_md(t.rule.rstrip('.'))}."]
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
    with the same keys, in the order the table artifact shows them: what a reader needs first (``verdict``,
    ``value``, ``comparison``, ``threshold``), then what it is (``name``, ``kind``, ``measure``, ``unit``).

    Made for Prefect's table artifact, which renders every text cell as markdown on its own: text cells are
    markdown-escaped (a comparison ``>=`` would open a blockquote; it is written ``≥``), figures are rounded to 4
    significant digits (more, up to 6, where 4 would make a value look equal to its threshold). Aggregates only; no
    class label."""
    m = manifest
    rows: list[TableRow] = []

    def row(kind: str, name: str, measure: str | None, unit: str | None, value: Cell,
            comparison: str | None, threshold: float | None, verdict: str | None) -> None:
        value, shown_threshold = _table_figures(value, threshold)
        rows.append({"verdict": verdict, "value": _table_cell(value),
                     "comparison": _COMPARISON_TEXT.get(comparison, comparison) if comparison else None,
                     "threshold": shown_threshold, "name": _table_cell(name), "kind": kind,
                     "measure": _table_cell(measure), "unit": _table_cell(unit)})

    def claim(kind: str, c: Claim) -> None:
        row(kind, c.name, c.measure or _GATE_MEASURE.get(c.name), c.unit, c.value, c.comparison, c.threshold,
            "holds" if c.passed else "fails")

    def figure(name: str, measure: str, value: float | int | str | None, unit: str | None = None) -> None:
        if value is None:
            return
        row("figure", name, measure, unit, value, None, None, None)

    policy, floor_part = verdict_text(m)
    figure("policy", "every privacy claim of the policy holds", policy)
    figure("safety floor", "the release meets the safety floor", floor_part)
    for c in m.privacy.claims:
        claim("privacy claim", c)
    floor = m.privacy.floor
    for c in floor.claims if floor is not None else ():
        claim("floor", c)
    for f in m.series.figures if m.series is not None else ():
        row("series", f.name, f.detail, None, f.value, f.comparison, f.limit, "holds" if f.holds else "fails")
    if m.series is not None and m.series.budget is not None and m.series.budget.epsilon_limit is not None:
        b = m.series.budget
        row("series", "DP budget", f"epsilon spent ({b.rule})", None, b.epsilon_before + b.epsilon, "<=",
            b.epsilon_limit, "holds" if b.holds else "fails")
    for c in m.utility.gates if m.utility is not None else ():
        claim("utility gate", c)
    p, u = m.privacy, m.utility
    if m.parts:  # a partitioned release: every record is a row of each of its tables
        figure("rows", f"published records, each a row of every one of the {len(m.parts)} tables", m.rows)
        figure("tables", "published tables (part files)", len(m.parts))
        figure("table rows", "rows of all the published tables together", sum(part.rows for part in m.parts))
    else:
        figure("rows", "published rows", m.rows)
    if m.data_files:  # a distributed release: one table in row files
        figure("row files", "files the table is published in (data/part-*.parquet)", len(m.data_files))
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
    figure("classes", f"{_UNIT_TEXT[m.unit][0]} in the release", p.groups, m.unit)
    figure("smallest class", "records in the smallest class", p.k, m.unit)
    figure("mean class size", "records per class, mean", p.mean_group_size, m.unit)
    if p.risk is not None:
        figure("prosecutor risk (max)", "highest 1/|class|", p.risk.prosecutor_max, m.unit)
        figure("marketer risk", "expected share of records re-identified", p.risk.marketer, m.unit)
    figure("linkage risk", "share of original records linked to their own published record or group",
           p.linkage_risk, m.unit)
    figure("DCR quantile", "distance to closest record at the policy's quantile", p.dcr_quantile, m.unit)
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
    if m.withheld is not None:
        figure("withheld", f"fields computed on the input, not published ({m.withheld.kept_in})",
               ", ".join(m.withheld.fields))
    if m.tuning.chosen is not None and m.tuning.parameter:
        figure(f"tuned {m.tuning.parameter}", "set in the spec (not tuned)" if m.tuning.strategy == "fixed"
               else f"chosen by {m.tuning.strategy}", m.tuning.chosen)
    inp, outp = _check_counts(m.ingest.expectations), _check_counts(m.output_checks)
    figure("input expectations passed", f"of {inp[1]} (Great Expectations, suite {m.ingest.suite})", inp[0])
    figure("output checks passed", f"of {outp[1]} (Great Expectations)", outp[0])
    return rows


def _table_cell(value: Cell) -> Cell:
    """A table artifact's cell: text markdown-escaped (Prefect renders each text cell as markdown on its own, so
    ``>=``, a ``-`` or ``1.`` at its start would open a block and ``*``, ``_``, backticks, ``|`` would format it);
    anything else as it is."""
    if not isinstance(value, str):
        return value
    text = _md(value)  # ">" and "<" become entities; "#", "*", "_", backticks, "|" are escaped
    start = _BLOCK_START.match(text)
    if start is None:
        return text
    mark = start.group(0)  # "-", "+", "=", ">" or "1." / "1)": escape the punctuation that makes it a block
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
        return _round_figure(float(x), digits) if math.isfinite(x) else _fmt(float(x))

    digits = 4
    while (digits < 6 and isinstance(value, float | np.floating) and threshold is not None and value != threshold
           and figure(value, digits) == figure(threshold, digits)):
        digits += 1
    return figure(value, digits), figure(threshold, digits)  # a non-finite threshold becomes text too
