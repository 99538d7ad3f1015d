"""The page's sections but the risk (:mod:`ppdp.tasks.report.risk`): each a function of the release's
:class:`~ppdp.tasks.report.context.Context` returning its HTML (counts, aggregates and column names only)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ppdp.schemas.manifest import Manifest, is_withheld
from ppdp.schemas.privacy import gates_set
from ppdp.schemas.reports import Claim, ExpectationOutcome, LatticeSearch
from ppdp.schemas.units import unit_of
from ppdp.schemas.utility import UtilityReport
from ppdp.tasks.layout import parts_digest
from ppdp.tasks.report.charts import pareto_svg, per_class_svg, tuning_svg
from ppdp.tasks.report.context import Context
from ppdp.tasks.report.fmt import claim_text, duration_text, esc, fmt, pct_text
from ppdp.tasks.report.markup import COMPARISON, badge_html, html_cards, html_dl, html_table
from ppdp.tasks.report.wording import (
    GATE_MEASURE,
    RECHECK_TEXT,
    below_floor_text,
    check_counts,
    covers_every_row,
    floor_verdict,
    method_text,
    objective_text,
    protection_text,
    verdict_text,
)

_LATTICE_TEXT = {
    "loss": "ARX's loss: mean share of each value's domain lost to generalization (0 none, 1 all)",
    "discernibility": "discernibility: sum of squared class sizes (suppressed records count the table size)",
    "aecs": "average equivalence class size",
    "precision": "precision loss: mean generalization level relative to the hierarchy height",
    "entropy": "non-uniform entropy lost to generalization",
}

_CHOICE_TEXT = {
    "non_dominated": "non-dominated: the strategy's value, unless an evaluated value is at least as safe and at least "
                     "as accurate (better in one); then the most private such value",
    "paper": "paper: Figure 6's last midpoint, as paper 000 returns it (an evaluated value may dominate it)",
}

_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9_.+\-]{1,40}$")
_HIERARCHY_TYPES = {"file", "intervals", "dates", "prefix", "flat", "tree"}


def _param_value(value: object, columns: set[str], depth: int = 0) -> str | None:
    """A method parameter as text, without data values: numbers and flags; a setting word at the top level;
    per-column settings by column; a generalization hierarchy by its type and numeric settings (a tree's
    categories and a file's path are not shown)."""
    if value is None:
        return "none"
    if isinstance(value, bool | int | float):
        return fmt(value)
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
            parts += [f"{key} {fmt(v)}" for key, v in value.items()
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


def _lattice_classes_text(lattice: LatticeSearch) -> str:
    """The chosen node's classes (HTML, continuing "... the "): the search counts the classes of the records it keeps;
    the suppressed records, published with every quasi-identifier '*', form one class more in the published table,
    the count the other sections give."""
    kept, suppressed = lattice.classes, lattice.suppressed_rows
    if not suppressed:
        return f"chosen node has {fmt(kept)} equivalence classes and suppresses no record."
    return (f"chosen node forms {fmt(kept)} equivalence classes of the records it keeps and suppresses "
            f"{fmt(suppressed)} record{'s' if suppressed != 1 else ''}, published with every quasi-identifier '*': "
            f"one class more, so <b>{fmt(kept + 1)} equivalence classes</b> in the published table.")


def _partition(page: Context) -> str:
    """A partitioned release: its tables, the search, and the accuracy-against-k Pareto front."""
    m, fp = page.m, page.m.partition
    assert fp is not None
    out = [f"<h3>The published tables ({len(m.parts)})</h3>",
           '<p class="note">Each table holds some of the features and the class; its rows are sorted by their '
           "own values, so no key and no row order joins two tables back into records. Each is k-anonymous over "
           "its own quasi-identifiers.</p>"]
    rows = []
    for p in m.parts:
        k = p.privacy.k
        rows.append((f"<code>{esc(p.file)}</code>", esc(", ".join(c for c in p.columns)),
                     esc(", ".join(p.quasi_identifiers)) or '<span class="muted">none</span>', esc(fmt(p.rows)),
                     esc(fmt(k)) if k is not None else "n/a"))
    out.append(html_table(("file", "columns", "quasi-identifiers", "rows", "smallest class"), rows, num=(3, 4)))
    if fp.dropped:
        out.append(f'<p class="note">Features in no table (not published): {esc(", ".join(fp.dropped))}.</p>')
    out.append(f'<p class="note">Genetic search: {fmt(fp.evaluations)} partitions evaluated over '
               f"{fmt(fp.generations)} generations in {duration_text(fp.search_seconds)}; inducer {esc(fp.inducer)}; "
               f"inner cross-validated accuracy of the chosen partition {fp.fitness:.4f}.</p>")
    if fp.pareto:
        out.append("<h3>Accuracy against k (Pareto front)</h3>")
        svg, legend = pareto_svg([(pt.k, pt.accuracy) for pt in fp.pareto], m.privacy.k, m.spec.privacy.k)
        out.append(f"<figure>{svg}{legend}<figcaption>Every partition the genetic search evaluated, reduced to "
                   "the non-dominated ones: no other partition reaches a larger k with at least the same "
                   "accuracy (paper 001's multi-objective view).</figcaption></figure>")
        out.append(html_table(("k reached", "inner CV accuracy", "subsets"),
                          [(esc(fmt(pt.k)), f"{pt.accuracy:.4f}",
                            esc(" | ".join(", ".join(s) for s in pt.subsets))) for pt in fp.pareto],
                          num=(0, 1), compact=True))
    return "".join(out)


def _claims_table(claims: Sequence[Claim], recheck: bool = True) -> str:
    rows = []
    for c in claims:
        measure = c.measure or GATE_MEASURE.get(c.name, "")
        value, limit = claim_text(c)
        row = [f"<code>{esc(c.name)}</code>", esc(measure), esc(value),
               f"{COMPARISON.get(c.comparison, esc(c.comparison))} {esc(limit)}", badge_html(c.passed)]
        if recheck:
            row.append(RECHECK_TEXT.get(c.recheck, c.recheck))
        rows.append((*row, esc(c.worst or "")))
    head = ("claim", "measured", "value", "rule", "verdict") + (("re-check from",) if recheck else ()) + (
        "worst",)
    return html_table(head, rows, num=(2,), nowrap=(0, 3, 5) if recheck else (0, 3))


def _uninformative(page: Context) -> list[str]:
    """Published columns '*' (or missing) in every row, from the attacker's view of the release and its parts."""
    views = [v for v in (page.m.privacy.attacker_view, *(p.privacy.attacker_view for p in page.m.parts))
             if v is not None]
    return list(dict.fromkeys(c for v in views for c in v.uninformative_columns))


def _withheld_text(m) -> str:
    """What a release that withholds the figures of its input (a differential_privacy release) says about its input
    (HTML)."""
    return (f"The input had {len(m.ingest.columns)} columns. Every figure computed on the input is <b>withheld</b>: "
            "its row count, the rows held out to measure utility, rare values, accuracy measured on real rows and the "
            "attacker's figures measured against the input are not differentially private, so this folder does not "
            "carry them (they are kept in the publisher's private record, outside the publish root). It carries what "
            "the spec declares, what was computed under differential privacy (the rows and their number) and what "
            "the published table itself shows. Whether the release was published at all still depends on the "
            "utility gate, measured on real rows: one bit about the data.")


def summary(page: Context) -> str:
    m = page.m
    unit_name, unit_text = unit_of(m.unit).plural, unit_of(m.unit).description
    return "".join([*_summary_lead(m, unit_name, unit_text), "<h3>Method and parameters</h3>",
                    *_method_parameters(page, unit_name), *_every_column(page)])


def _summary_cards(m: Manifest, unit_name: str) -> str:
    """The summary's cards: rows and columns published, method, claims, safety floor, accuracy."""
    u = m.utility
    claims = m.privacy.claims
    held = sum(c.passed for c in claims)
    ratio = u.ratio if u is not None else None
    return html_cards([
        ("records published" if m.parts else "rows published", esc(fmt(m.rows)),
         (f"of {esc(fmt(m.ingest.rows))} input rows" if m.ingest.rows is not None else "input rows: withheld")
         + (f", in {len(m.parts)} tables" if m.parts else "")),
        ("columns published", esc(fmt(len(m.columns))), f"of {esc(fmt(len(m.ingest.columns)))} input columns"),
        ("method", esc(m.method.name), f"unit: {esc(unit_name)}"),
        ("privacy claims", f"{held} / {len(claims)}", "hold" if held == len(claims) else "<b>some fail</b>"),
        ("safety floor", {True: "holds", False: '<span class="bad-text">below</span>', None: "n/a"}[
            floor_verdict(m)], {True: "every row applying to it", False: "<b>published below it</b>"
                                if m.privacy.floor is not None and m.privacy.floor.accepted is not None
                                else "<b>some rows fail</b>", None: "made before the floor"}[floor_verdict(m)]),
        ("accuracy", esc(f"{u.accuracy:.3f}"),
         f"original {u.accuracy_original or 0.0:.3f}" + (f", ratio {ratio:.2f}" if ratio is not None else ""))
        if u is not None and u.accuracy is not None else
        ("2-way marginal distance", esc(fmt(u.marginals.two_way, 3)), "label-free utility (0: as the input)")
        if u is not None and u.marginals is not None else ("accuracy", "withheld", "measured on real held-out rows"),
    ])


def _summary_lead(m: Manifest, unit_name: str, unit_text: str) -> list[str]:
    """What the release protects and what it publishes, from which input, by which method, and the cards."""
    u = m.utility
    held_out = u.test_rows if u is not None else None
    rare = m.rare_categories
    removed = rare.rows_removed if rare is not None else 0
    every_row = covers_every_row(m)
    cards = _summary_cards(m, unit_name)
    described = method_text(m.method.name)
    protects, lacks = protection_text(m)
    below = below_floor_text(m)
    return [
        f'<p class="lead protects">{esc(protects)} <b>{esc(lacks)}</b>'
        + (f' <span class="bad-text">{esc(below)}</span>' if below else "") + "</p>",
        (f'<p>This release publishes <b>{fmt(m.rows)} rows</b> and <b>{len(m.columns)} columns</b> '
         if not m.parts else
         f"<p>This release publishes <b>{fmt(m.rows)} records</b> as <b>{len(m.parts)} tables</b> "
         f"({fmt(sum(p.rows for p in m.parts))} rows in all, each record a row of every table) over "
         f"<b>{len(m.columns)} columns</b> ") +
        f"of the dataset <b>{esc(m.dataset)}</b> (release <code>{esc(m.release_id)}</code>). " + (
            _withheld_text(m) if m.withheld is not None else
            f"The input had {fmt(m.ingest.rows)} rows and {len(m.ingest.columns)} columns; " + (
                f"{fmt(held_out)} rows were held out to measure utility (this method publishes every row: the "
                "held-out rows are sanitized like the others)" if every_row else
                f"{fmt(held_out)} rows were held out to measure utility and are not published")
            + (f"; {fmt(removed)} rows were left out by the rare-value rule" if removed else "") + ".")
        + "</p>",
        (f"<p>The table is published in {fmt(len(m.data_files))} file{'s' if len(m.data_files) != 1 else ''} "
         "(data/part-*.parquet): it is every file's rows; which file a row is in carries nothing.</p>"
         if m.data_files else ""),
        f"<p>The table was sanitized by <b>{esc(described)}</b>. Its privacy is measured over "
        f"<b>{esc(unit_name)}</b>: {esc(unit_text)}.</p>",
        cards,
    ]


def _method_parameters(page: Context, unit_name: str) -> list[str]:
    """The method's parameters (those that may hold data values not shown), what it formed, its partition."""
    m = page.m
    tuned = m.tuning.parameter if m.tuning.strategy != "fixed" else None
    prow = []
    for key, value in m.method.params.items():
        text = _param_value(value, page.columns)
        note = "chosen by tuning" if key == tuned else ""
        if key == "levels" and m.tuning.lattice is not None:
            note = "chosen by the lattice search"
        prow.append((f"<code>{esc(key)}</code>", esc(text) if text is not None else '<span class="muted">'
                     "(not shown: may hold data values)</span>", note))
    parts = [html_table(("parameter", "value", ""), prow, compact=True)]
    extra = []
    if m.method.groups is not None:
        extra.append(f"{fmt(m.method.groups)} {unit_name} formed")
    if m.method.suppressed_rows:
        extra.append(f"{fmt(m.method.suppressed_rows)} rows suppressed")
    if m.group_column:
        extra.append(f"each row's generating group is published in column <code>{esc(m.group_column)}</code>")
    if extra:
        parts.append(f'<p class="note">{"; ".join(extra)}.</p>')
    if m.partition is not None:
        parts.append(_partition(page))
    return parts


def _every_column(page: Context) -> list[str]:
    """Every input column with its role, treatment and reason, then the rare-value rule's effect."""
    m = page.m
    parts = ["<h3>Every input column</h3>",
             f'<p class="note">Identifiers: {esc(m.spec.identifiers.action)}. Each column has exactly one '
             "treatment; the reason says why it got its role.</p>"]
    empty = _uninformative(page)
    if empty:
        parts.append(f'<p class="note"><span class="badge t-none">no information</span> '
                     f"{', '.join(f'<code>{esc(c)}</code>' for c in empty)} "
                     f"{'is' if len(empty) == 1 else 'are'} '*' (or missing) in every published row: "
                     f"{'it carries' if len(empty) == 1 else 'they carry'} no information.</p>")
    trow = []
    for t in sorted(m.treatments, key=lambda t: t.position):
        none = ' <span class="badge t-none">no information</span>' if t.name in empty else ""
        trow.append((esc(t.position), f"<code>{esc(t.name)}</code>", esc(t.role.value.replace("_", "-")),
                     f'<span class="badge t-{esc(t.treatment)}">{esc(t.treatment)}</span>{none}', esc(t.reason),
                     esc(fmt(t.rare_cells)) if t.rare_cells else ""))
    parts.append(html_table(("#", "column", "role", "treatment", "reason", "rare cells"), trow, num=(0, 5),
                            nowrap=(2, 3)))
    rare = m.rare_categories
    if rare is not None:
        text = (f"Rare values: no published categorical cell holds a value seen fewer than {rare.k} times in the "
                f"input. {fmt(rare.columns_checked)} categorical columns were checked")
        if rare.columns:
            text += f"; {len(rare.columns)} had rare values:"
        else:
            text += "; none had rare values."
        parts.append(f'<p class="note">{text}</p>')
        parts.append(html_table(("column", "action", "distinct rare values", "cells or rows affected"),
                                [(f"<code>{esc(c.name)}</code>", esc(c.action.replace('_', ' ')),
                                  esc(fmt(c.values_merged)), esc(fmt(c.cells_affected))) for c in rare.columns],
                                num=(2, 3)))
    return parts


def policy(page: Context) -> str:
    m = page.m
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
        rows.append((f"<code>{esc(name)}</code>", esc(fmt(getattr(policy, name))), esc(desc)))
    if policy.max_records_at_risk is not None or policy.max_prosecutor_risk is not None:
        rows.append(("<code>risk_threshold</code>", esc(fmt(policy.risk_threshold)),
                     "a record is at risk when its re-identification risk exceeds this"))
    if policy.min_dcr is not None:
        rows.append(("<code>dcr_quantile</code>", esc(fmt(policy.dcr_quantile)), esc(
            fields["dcr_quantile"].description or "")))
    if policy.l is not None:
        rows.append(("<code>l_variant</code>", esc(policy.l_variant), "how l-diversity is counted"))
    if policy.beta is not None:
        rows.append(("<code>beta_variant</code>", esc(policy.beta_variant), "which beta-likeness"))
    parts.append("<h3>The policy</h3>")
    parts.append(html_table(("gate", "threshold", "meaning"), rows, num=(1,)))
    parts.append("<h3>The claims</h3>")
    if claims:
        parts.append(_claims_table(claims))
        units = sorted({c.unit for c in claims if c.unit})
        if units:
            parts.append(f'<p class="note">Measured over: {", ".join(esc(unit_of(u).plural) for u in units)}.</p>')
    else:
        parts.append('<p class="muted">The manifest lists no privacy claim.</p>')
    if failing:
        verb = "does not hold" if len(failing) == 1 else "do not hold"
        parts.append(f'<div class="verdict bad">{len(failing)} of {len(claims)} claims {verb}.</div>')
    elif claims:
        parts.append(f'<div class="verdict ok">Every privacy claim holds ({len(claims)} of {len(claims)}).</div>')
    parts.append(f'<p class="note">The policy is what this release\'s spec asks for; the safety floor beneath '
                 f"every policy is held to the attacker's view in section 3: {esc(verdict_text(m)[1])}.</p>")
    return "".join(parts)


def utility(page: Context) -> str:
    m, u = page.m, page.m.utility
    if u is None:
        return ("<p>Withheld. Utility is measured by training a classifier on the published rows and testing it on "
                "held-out <em>real</em> rows, beside the same classifier trained on the real rows: every such figure "
                "(accuracy, TSTR accuracy, regression R², per-class accuracy and support, information loss, "
                "marginal distances) is computed on the input and is not "
                "differentially private, so this release does not publish it. It is kept in the publisher's private "
                "record. The utility gates of the spec (" + esc(_utility_gates_text(m)) + ") decided whether the "
                "release was published: that decision is one bit about the data.</p>")
    if u.accuracy is None or u.accuracy_original is None:  # no classifier: nothing held out, no label needed
        return _label_free_utility(m, u)
    ratio = "n/a" if u.ratio is None else f"{u.ratio:.3f}"
    parts = [
        f"<p>A <b>{esc(u.classifier)}</b> classifier trained on the published rows ({fmt(u.train_rows)}) and "
        f"tested on the {fmt(u.test_rows)} held-out original rows reached accuracy <b>{u.accuracy:.4f}</b>; the "
        f"same classifier trained on the original rows reached <b>{u.accuracy_original:.4f}</b> (ratio "
        f"{esc(ratio)}).</p>",
        html_cards([("accuracy on the release", f"{u.accuracy:.3f}", f"{esc(u.classifier)}, held-out rows"),
                    ("accuracy on the original", f"{u.accuracy_original:.3f}", "same classifier and rows"),
                    ("ratio", esc(ratio), "release / original"),
                    ("mean shift", esc(fmt(u.mean_shift, 3)), "|mean difference| / sd"),
                    ("correlation loss", esc(fmt(u.correlation_loss, 3)), "mean |correlation difference|")]),
    ]
    parts.append(_tstr_html(u))
    if u.marginals is not None:
        parts.append("<h3>Label-free measures</h3>")
        parts.append(_marginals_html(u))
    if u.gates:
        parts.append("<h3>Utility gates</h3>")
        parts.append(_claims_table(u.gates, recheck=False))
    if u.per_class:
        parts += _per_class(page, u)
    if u.delta_r:
        parts.append("<h3>Paper 004's ΔR</h3>")
        eps = "" if u.delta_r_epsilon is None else f" with epsilon = {fmt(u.delta_r_epsilon)}"
        parts.append(f'<p class="note">ΔR = R_p - (1 - epsilon) R_o{eps}; the release keeps utility when ΔR ≥ 0 '
                     "for every classifier.</p>")
        parts.append(html_table(("classifier", "R_p (release)", "R_o (original)", "ΔR", "verdict"),
                                [(esc(d.classifier), f"{d.accuracy:.4f}", f"{d.accuracy_original:.4f}",
                                  f"{d.value:+.4f}", badge_html(d.value >= 0)) for d in u.delta_r], num=(1, 2, 3)))
    parts.append("<h3>Information loss per attribute</h3>")
    parts += _information_loss(m)
    return "".join(parts)


def _label_free_utility(m: Manifest, u: UtilityReport) -> str:
    """Utility without a classifier: the label-free measures of the published rows against the input."""
    parts = [f"<p>No classifier was trained (the table has no class column, or the spec sets "
             f"<code>utility.classifier: none</code>): no row was held out, and utility is measured by "
             f"label-free measures of the {fmt(u.train_rows)} published rows against the input.</p>",
             _marginals_html(u),
             html_cards([("mean shift", esc(fmt(u.mean_shift, 3)), "|mean difference| / sd"),
                         ("correlation loss", esc(fmt(u.correlation_loss, 3)), "mean |correlation difference|, "
                          "encoded attributes")])]
    lat = m.tuning.lattice
    if lat is not None and "loss" in lat.measures:
        parts.append(f"<p class=\"note\">ARX's loss (generalized information loss) of the chosen lattice node: "
                     f"{esc(fmt(lat.measures['loss']))}.</p>")
    return "".join(parts)


def _per_class(page: Context, u: UtilityReport) -> list[str]:
    """Accuracy per class on the held-out rows (labels only when seen often enough), with its chart."""
    parts = ["<h3>Accuracy per class</h3>"]
    rows: list[tuple[str, ...]] = []  # the table's rows of escaped cells
    bars = []
    for c in sorted(u.per_class, key=lambda c: c.label):
        name = page.labels[c.label]
        rows.append((esc(name), esc(fmt(c.support)), f"{c.sanitized:.4f}", f"{c.original:.4f}",
                     f"{c.sanitized - c.original:+.4f}"))
        bars.append((name if len(name) <= 26 else name[:25] + "…", c.sanitized, c.original))
    parts.append(html_table(("class", "held-out rows", "release", "original", "difference"), rows,
                            num=(1, 2, 3, 4)))
    parts.append(f'<p class="note">A class label is shown only when it occurs at least {page.k_labels} '
                 "times in the published table; classes are numbered in sorted label order.</p>")
    if len(bars) <= 30:
        svg, legend = per_class_svg(bars)
        parts.append(f"<figure>{svg}{legend}<figcaption>Accuracy per class on the held-out original rows, "
                     "for the classifier trained on the release and on the original rows.</figcaption>"
                     "</figure>")
    return parts


def _information_loss(m: Manifest) -> list[str]:
    """Generalization levels and suppressed cells per attribute, and the chosen lattice node's measures."""
    parts = []
    levels = recorded if isinstance(recorded := m.method.params.get("levels"), dict) else {}
    cells = m.method.suppressed_cells
    attrs = list(dict.fromkeys([*levels, *cells]))
    if attrs:
        rows = []
        for a in attrs:
            level = levels.get(a)
            rows.append((f"<code>{esc(a)}</code>", esc(fmt(level)) if isinstance(level, int | float) else "",
                         esc(fmt(cells.get(a, 0)))))
        head = ("attribute", "generalization level", "suppressed cells") if levels else (
            "attribute", "", "suppressed cells")
        parts.append(html_table(head, rows, num=(1, 2), compact=True))
    lat = m.tuning.lattice
    if lat is not None and lat.measures:
        parts.append(f'<p class="note">The chosen lattice node is best under <b>{esc(lat.measure)}</b> '
                     "(ARX's definitions); all its measures:</p>")
        parts.append(html_table(("measure", "value", "meaning"),
                                [(f"<code>{esc(k)}</code>", esc(fmt(v)), esc(_LATTICE_TEXT.get(k, "")))
                                 for k, v in lat.measures.items()], num=(1,)))
    if not attrs and (lat is None or not lat.measures):
        parts.append('<p class="note">The method reports no per-attribute loss (no generalization level, no '
                     "suppressed cell); the mean shift and correlation loss above summarize the loss over the "
                     "encoded attributes.</p>")
    return parts


def _tstr_html(u) -> str:
    """Train on the release, test on real rows (the spec's utility.tstr) and the regression targets' R², as tables
    beside the baseline trained on the original training rows ("" when neither was measured)."""
    parts = []
    if u.tstr:
        parts.append("<h3>Train on the release, test on real rows (TSTR)</h3>")
        parts.append(html_table(("classifier", "trained on the release", "trained on the original rows", "ratio"),
                            [(esc(t.classifier), f"{t.accuracy:.4f}", f"{t.accuracy_original:.4f}",
                              esc("n/a" if not t.accuracy_original else f"{t.accuracy / t.accuracy_original:.3f}"))
                             for t in u.tstr], num=(1, 2, 3)))
        parts.append(f'<p class="note">Each classifier of <code>utility.tstr</code> is trained on the published rows '
                     f"and, for the baseline, on the original training rows; both are tested on the same "
                     f"{fmt(u.test_rows)} held-out real rows, which were never sanitized nor published (accuracy: "
                     "share of them classified correctly). <code>hist_gradient_boosting</code> is scikit-learn's "
                     "HistGradientBoostingClassifier, seeded, with early stopping.</p>")
    if u.regression:
        parts.append("<h3>Regression targets</h3>")
        parts.append(html_table(("column", "R² trained on the release", "R² trained on the original rows",
                             "held-out rows"),
                            [(f"<code>{esc(r.column)}</code>", esc(fmt(r.r2, 4)), esc(fmt(r.r2_original, 4)),
                              esc(fmt(r.test_rows))) for r in u.regression], num=(1, 2, 3)))
        parts.append('<p class="note">Each column of <code>utility.regression</code> is predicted from the other '
                     "published attributes by scikit-learn's HistGradientBoostingRegressor (seeded, early stopping), "
                     "trained on the release and on the original training rows, scored by R² on the held-out real "
                     "rows (1: exact; 0: no better than their mean; n/a: the release does not publish the column as "
                     "numbers).</p>")
    return "".join(parts)


def _marginals_html(u) -> str:
    """The label-free utility figures (:mod:`ppdp.tasks.marginals`) as cards and a note saying how they are read."""
    g = u.marginals
    if g is None:
        return ""
    return html_cards([
        ("1-way marginal distance", esc(fmt(g.one_way, 3)), f"mean over {fmt(g.columns)} columns (worst "
         f"{esc(fmt(g.one_way_worst, 3))})"),
        ("2-way marginal distance", esc(fmt(g.two_way, 3)), f"mean over {fmt(g.pairs)} column pairs"),
        ("correlation difference", esc(fmt(g.correlation_difference, 3)),
         f"mean |difference| of {fmt(g.numeric_columns)} numeric columns' correlations"),
    ]) + ('<p class="note">Label-free utility: the total variation distance (0: the same distribution, 1: nothing '
          "in common) between the published table and the input table, of each column (1-way) and of each pair of "
          f"columns (2-way); numeric columns are read in up to {g.bins} equal-frequency bins fixed from the input "
          "(an interval label as its midpoint; a suppressed or missing cell as a category of its own).</p>")


def _utility_gates_text(m) -> str:
    spec = m.spec.utility
    gates = []
    if spec.min_accuracy_ratio is not None:
        gates.append(f"min_accuracy_ratio {fmt(spec.min_accuracy_ratio)}")
    if spec.delta_r is not None:
        gates.append(f"delta_r with epsilon {fmt(spec.delta_r.epsilon)}")
    return ", ".join(gates) or "none set"


def tuning(page: Context) -> str:
    t, unit = page.m.tuning, page.m.unit
    parts = [f"<p>{esc(t.rule)}.</p>" if not t.rule.endswith(".") else f"<p>{esc(t.rule)}</p>"]
    searched = t.strategy in ("bisect", "grid")  # fixed, suggested and lattice use no objective and no gap
    facts = [("strategy", esc(t.strategy))]
    if (searched and t.objective) or t.lattice is not None:  # a lattice search's own: least loss (its measure)
        facts.append(("objective", esc(objective_text(t))))
    if searched and t.choice:
        facts.append(("choice rule", esc(_CHOICE_TEXT[t.choice])))
    if t.parameter:
        facts.append(("parameter", f"<code>{esc(t.parameter)}</code>"
                      + (f" ({esc(t.safer)} is safer)" if t.safer else "")))
    if t.low is not None or t.high is not None:
        facts.append(("range searched", f"{esc(fmt(t.low))} to {esc(fmt(t.high))}"))
    if t.threshold is not None:
        facts.append(("policy threshold on the parameter", esc(fmt(t.threshold))))
    if searched and t.accuracy_gap is not None:
        facts.append(("accuracy gap t_a", esc(fmt(t.accuracy_gap))))
    if t.suggested is not None:
        facts.append(("method's suggestion", esc(fmt(t.suggested))))
    if t.chosen is not None:
        facts.append(("value from the spec" if t.strategy == "fixed" else "chosen value",
                      f"<code>{esc(t.parameter or '')}</code> = <b>{esc(fmt(t.chosen))}</b>"))
    if t.figure6_value is not None and t.chosen is not None and t.figure6_value != t.chosen:
        facts.append(("where Figure 6 itself ended", f"<code>{esc(t.parameter or '')}</code> = "
                                                     f"{esc(fmt(t.figure6_value))}"))
    if t.evaluations:
        facts.append(("values evaluated", f"{len(t.evaluations)} of {fmt(t.candidates)} candidates"))
    if t.class_sizes:
        facts.append(("training rows per class", esc(", ".join(f"{k}: {fmt(v)}" for k, v in
                                                              t.class_sizes.items()))))
    elif is_withheld(page.m, "tuning.class_sizes"):
        facts.append(("training rows per class", "withheld (counted on the input)"))
    parts.append(html_dl(facts))
    privacy_label = unit_of(unit).tuning_figure
    if t.evaluations:
        svg, legend = tuning_svg(t, privacy_label)
        notes = ["the band is the accuracy gap the rule allows"] if searched and t.accuracy_gap is not None else []
        notes += ["the dashed line the chosen value"] if t.chosen is not None else []
        notes += ["the dotted red line the policy threshold"] if t.threshold is not None else []
        parts.append(f"<figure>{svg}{legend}<figcaption>Accuracy on the held-out rows (blue, left axis) and the "
                     "privacy figure (red, right axis) for every evaluated value"
                     + (f"; {', '.join(notes)}" if notes else "") + ".</figcaption></figure>")
        rows, marked = [], []
        chosen = float(t.chosen) if t.chosen is not None else None
        for e in sorted(t.evaluations, key=lambda e: e.value):
            rows.append((esc(fmt(e.value)), esc(fmt(e.privacy)), f"{e.accuracy:.4f}",
                         badge_html(e.meets_policy, "passes", "fails") if e.meets_policy is not None else "",
                         esc(fmt(e.runs))))
            marked.append(chosen is not None and math.isclose(e.value, chosen))
        parts.append(html_table((esc(t.parameter or "value"), esc(privacy_label), "accuracy", "policy", "runs"), rows,
                            num=(0, 1, 2, 4), marked=marked, compact=True))
        parts.append('<p class="note">The chosen value is highlighted.</p>')
    elif t.lattice is not None:
        lat = t.lattice
        parts.append(f"<p>Full-domain generalization: the lattice search chose one generalization level per "
                     f"quasi-identifier. It checked {fmt(lat.checked)} of {fmt(lat.total)} nodes against the "
                     f"privacy gates (visiting {fmt(lat.visited)}, the others settled by monotonicity); the "
                     + _lattice_classes_text(lat) + "</p>")
        parts.append(html_table(("quasi-identifier", "level"),
                            [(f"<code>{esc(c)}</code>", esc(fmt(v))) for c, v in lat.node.items()], num=(1,),
                            compact=True))
    else:
        parts.append('<p><span class="badge muted">fixed</span> The method ran with its parameters as given; '
                     "nothing was tuned.</p>")
    return "".join(parts)


def checks(page: Context) -> str:
    m = page.m
    parts = ["<p>Great Expectations suites run on the input before anything else, and on the release before it "
             "was written. Results are counts only.</p>"]
    for title, outcomes, suite in (("Input", m.ingest.expectations, m.ingest.suite),
                                   ("Output", m.output_checks, None)):
        ok, total = check_counts(outcomes)
        parts.append(f"<h3>{title}: {ok} of {total} passed "
                     + badge_html(ok == total, "all passed", f"{total - ok} failed") + "</h3>")
        if suite:
            rows_text = f"{fmt(m.ingest.rows)} rows and " if m.ingest.rows is not None else ""
            parts.append(f'<p class="note">Suite <code>{esc(suite)}</code>, {fmt(m.ingest.expectation_count)} '
                         f"expectations, on {rows_text}{len(m.ingest.columns)} columns "
                         f"({esc(m.ingest.format)})" + ("; the input's counts (rows, unexpected cells) are withheld"
                                                      if m.ingest.rows is None else "") + ".</p>")
        groups: dict[str, list[ExpectationOutcome]] = {}
        for o in outcomes:
            groups.setdefault(o.expectation, []).append(o)
        rows = []
        for name, items in groups.items():
            unexpected = [o.unexpected_count for o in items if o.unexpected_count is not None]
            columns = [o.column for o in items if o.column]
            rows.append((f"<code>{esc(name)}</code>", esc(fmt(len(items))), esc(fmt(sum(o.success for o in items))),
                         esc(fmt(sum(not o.success for o in items))),
                         esc(fmt(sum(unexpected))) if unexpected else "",
                         esc(fmt(len(columns))) if columns else ""))
        parts.append(html_table(("expectation", "checks", "passed", "failed", "unexpected cells", "columns"), rows,
                            num=(1, 2, 3, 4, 5)))
        failed = [o for o in outcomes if not o.success]
        if failed:
            parts.append(html_table(("failed expectation", "column", "unexpected cells", "of"),
                                [(f"<code>{esc(o.expectation)}</code>", f"<code>{esc(o.column)}</code>"
                                  if o.column else "", esc(fmt(o.unexpected_count)), esc(fmt(o.element_count)))
                                 for o in failed], num=(2, 3)))
    return "".join(parts)


def series(page: Context) -> str:
    m = page.m
    r = m.series
    if r is None and is_withheld(m, "series"):
        return ("<p>Withheld. The release was judged, before publishing, with the earlier releases sharing its "
                "records, through the publisher's series ledger (records in common, composed figures, the "
                "differential privacy budget): those figures are computed on the input, so they are kept in the "
                "publisher's private record. This release spends the epsilon and delta of its method (section 1): "
                "under basic composition, an attacker holding every DP release of the same people learns at most "
                "what their epsilons and deltas, added up, allow.</p>")
    if r is None:
        return ('<p class="note">Made before ppdp judged releases as a series: no composed figures were '
                "recorded.</p>")
    parts = []
    if not r.earlier:
        parts.append("<p>The dataset's first release under this publish root: there was nothing to compose it "
                     "with. Its records' places are in the publisher's series ledger, so the next release is "
                     "judged with this one.</p>")
    else:
        parts.append(f"<p>Judged, before publishing, with {esc(fmt(len(r.earlier)))} earlier release(s) of "
                     f"<code>{esc(m.dataset)}</code> ({esc(r.window)}), as an attacker holding all of them would "
                     f"judge it. Records are followed across releases by {esc(r.fingerprinted_by)}, "
                     "fingerprinted under the publisher's key in a ledger that is never published.</p>")
    if r.figures:
        parts.append(html_table(("composed figure", "value", "bound", "verdict", "how"),
                            [(esc(f.name), esc(fmt(f.value)), esc(f"{f.comparison} {fmt(f.limit)}"),
                              badge_html(f.holds), esc(f.detail)) for f in r.figures], num=(1,)))
    if r.pairs:
        parts.append("<h3>With each earlier release</h3>")
        parts.append(html_table(
            ("earlier release", "method", "unit", "records in both", "smallest intersection", "below k"),
            [(f"<code>{esc(p.release_id)}</code>", esc(p.method), esc(p.unit), esc(fmt(p.common_records)),
              esc(fmt(p.smallest_intersection)) if p.smallest_intersection is not None else "n/a",
              esc(pct_text(p.records_below_k)) if p.records_below_k is not None else "n/a") for p in r.pairs],
            num=(3, 4, 5)))
    if r.budget is not None:
        b = r.budget
        limit = "no budget set" if b.epsilon_limit is None else f"budget epsilon {fmt(b.epsilon_limit)}" + (
            f" per {b.period}" if b.period else "")
        parts.append(f"<p>Differential privacy budget ({esc(b.rule)}): earlier DP releases spent epsilon "
                     f"{esc(fmt(b.epsilon_before))} in {esc(fmt(b.releases))} release(s); this one spends "
                     f"{esc(fmt(b.epsilon))}; {esc(limit)}. {badge_html(b.holds, 'within budget', 'over budget')}</p>")
    if r.kept_members is not None:
        frozen = ""
        if r.held_records is not None:
            frozen = (f" Kept groups publish exactly their previous rows: {esc(fmt(r.counterfeit_rows or 0))} of them "
                      f"stand for members who left or were erased (counterfeits); {esc(fmt(r.retired_groups or 0))} "
                      f"previous groups fell below k present members and are no longer published; "
                      f"{esc(fmt(r.held_records))} records are held back (new records until k can form a group, and "
                      "members of retired groups).")
        parts.append(f"<p>Group memberships kept from the previous release (<code>series.keep_groups</code>): "
                     f"{esc(fmt(r.kept_members))} records were placed in their previous group; records not "
                     f"published are counted as suppressed rows ({esc(fmt(m.method.suppressed_rows))}).{frozen}</p>")
    parts.append('<p class="note">These figures are re-checked by the publisher (<code>ppdp series</code>): they '
                 "need the series ledger, which is never published. <code>ppdp validate --release</code> does not "
                 "re-check them.</p>")
    return "".join(parts)


def _input_facts(m) -> list[tuple[str, str]]:
    """How the input is named: its keyed digest and the key's id (a manifest made before keyed digests: its
    SHA-256)."""
    if m.input_digest is None and m.input_sha256:
        return [("input SHA-256", f"<code>{esc(m.input_sha256)}</code> (made before keyed digests)")]
    return [("input digest", f"<code>{esc(m.input_digest or 'none')}</code> (salted HMAC-SHA256 of the input's SHA-256 "
                             "under the publisher's key: only the publisher can check an input against it)"),
            ("input digest key", f"<code>{esc(m.input_key_id or 'none')}</code>")]


def provenance(page: Context) -> str:
    m = page.m
    data_hash = page.files.get("data.parquet")
    if m.parts:
        data_hash = parts_digest([(p.file, page.files.get(p.file, "")) for p in m.parts])
    if m.data_files:  # a distributed release: the digest of its row files' hashes as found
        data_hash = parts_digest([(f.file, page.files.get(f.file, "")) for f in m.data_files])
    matches = data_hash is not None and data_hash == m.output_sha256
    labels = (("the parts match", "a part differs") if m.parts else
              ("the row files match", "a row file differs or is missing") if m.data_files else
              ("data.parquet matches", "data.parquet differs"))
    rows = set(f.file for f in m.data_files)
    facts = [
        ("release id", f"<code>{esc(m.release_id)}</code>"),
        ("dataset", esc(m.dataset)),
        ("created at", esc(m.created_at.isoformat())),
        ("flow run id", f"<code>{esc(m.flow_run_id)}</code>" if m.flow_run_id else "none"),
        ("seed", esc(fmt(m.seed))),
        *_input_facts(m),
        ("spec SHA-256", f"<code>{esc(m.spec_sha256)}</code>"),
        ("output SHA-256", f"<code>{esc(m.output_sha256)}</code> " + badge_html(matches, *labels)),
    ]
    parts = [html_dl(facts)]
    if m.data_files:
        found = sum(page.files.get(f.file) == f.sha256 for f in m.data_files)
        parts += [f"<h3>The row files ({fmt(len(m.data_files))})</h3>",
                  f'<p class="note">The table is published in {fmt(len(m.data_files))} files (data/part-*.parquet); '
                  f"{fmt(found)} of them match the SHA-256 the manifest lists.</p>",
                  html_table(("file", "rows", "SHA-256 (manifest)", ""),
                         [(f"<code>{esc(f.file)}</code>", esc(fmt(f.rows)), f"<code>{esc(f.sha256)}</code>",
                           badge_html(page.files.get(f.file) == f.sha256, "matches",
                                  "missing" if f.file not in page.files else "differs"))
                          for f in m.data_files], num=(1,), compact=True)]
    parts += ["<h3>Files this report was built from</h3>",
              html_table(("file", "SHA-256"), [(f"<code>{esc(n)}</code>", f"<code>{esc(h)}</code>")
                                           for n, h in page.files.items() if n not in rows], compact=True)
              + (f'<p class="note">And the {fmt(len(m.data_files))} row files above.</p>' if m.data_files else ""),
             '<p class="note">The audit trail signs the release folder\'s exact files; '
             "<code>ppdp audit verify</code> checks them, <code>ppdp report DIR</code> regenerates this "
             "report.</p>",
             "<h3>Versions at release time</h3>",
             html_table(("component", "version"), [(esc(k.replace("_", "-")), f"<code>{esc(v)}</code>")
                                               for k, v in m.versions.model_dump().items()], compact=True)]
    return "".join(parts)
