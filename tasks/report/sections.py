"""The page's sections but the risk (:mod:`ppdp.tasks.report.risk`): each a function of the release's
:class:`~ppdp.tasks.report.context.Context` returning its HTML (counts, aggregates and column names only)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ppdp.schemas.manifest import is_withheld
from ppdp.schemas.reports import Claim, ExpectationOutcome, LatticeSearch
from ppdp.tasks.layout import parts_digest
from ppdp.tasks.report.charts import _pareto_svg, _per_class_svg, _tuning_svg
from ppdp.tasks.report.context import Context
from ppdp.tasks.report.fmt import _claim_text, _duration, _e, _fmt, _pct
from ppdp.tasks.report.markup import _COMPARISON, _badge, _cards, _dl, _table
from ppdp.tasks.report.wording import (
    _GATE_MEASURE,
    _RECHECK_TEXT,
    _UNIT_TEXT,
    _check_counts,
    _every_row,
    below_floor_text,
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


def _lattice_classes_text(lattice: LatticeSearch) -> str:
    """The chosen node's classes (HTML, continuing "... the "): the search counts the classes of the records it keeps;
    the suppressed records, published with every quasi-identifier '*', form one class more in the published table,
    the count the other sections give."""
    kept, suppressed = lattice.classes, lattice.suppressed_rows
    if not suppressed:
        return f"chosen node has {_fmt(kept)} equivalence classes and suppresses no record."
    return (f"chosen node forms {_fmt(kept)} equivalence classes of the records it keeps and suppresses "
            f"{_fmt(suppressed)} record{'s' if suppressed != 1 else ''}, published with every quasi-identifier '*': "
            f"one class more, so <b>{_fmt(kept + 1)} equivalence classes</b> in the published table.")


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
        rows.append((f"<code>{_e(p.file)}</code>", _e(", ".join(c for c in p.columns)),
                     _e(", ".join(p.quasi_identifiers)) or '<span class="muted">none</span>', _e(_fmt(p.rows)),
                     _e(_fmt(k)) if k is not None else "n/a"))
    out.append(_table(("file", "columns", "quasi-identifiers", "rows", "smallest class"), rows, num=(3, 4)))
    if fp.dropped:
        out.append(f'<p class="note">Features in no table (not published): {_e(", ".join(fp.dropped))}.</p>')
    out.append(f'<p class="note">Genetic search: {_fmt(fp.evaluations)} partitions evaluated over '
               f"{_fmt(fp.generations)} generations in {_duration(fp.search_seconds)}; inducer {_e(fp.inducer)}; "
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


def _claims_table(claims: Sequence[Claim], recheck: bool = True) -> str:
    rows = []
    for c in claims:
        measure = c.measure or _GATE_MEASURE.get(c.name, "")
        value, limit = _claim_text(c)
        row = [f"<code>{_e(c.name)}</code>", _e(measure), _e(value),
               f"{_COMPARISON.get(c.comparison, _e(c.comparison))} {_e(limit)}", _badge(c.passed)]
        if recheck:
            row.append(_RECHECK_TEXT.get(c.recheck, c.recheck))
        rows.append((*row, _e(c.worst or "")))
    head = ("claim", "measured", "value", "rule", "verdict") + (("re-check from",) if recheck else ()) + (
        "worst",)
    return _table(head, rows, num=(2,), nowrap=(0, 3, 5) if recheck else (0, 3))


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
    unit_name, unit_text = _UNIT_TEXT[m.unit]
    u = m.utility
    held_out = u.test_rows if u is not None else None
    rare = m.rare_categories
    removed = rare.rows_removed if rare is not None else 0
    every_row = _every_row(m)
    claims = m.privacy.claims
    held = sum(c.passed for c in claims)
    ratio = u.ratio if u is not None else None
    cards = _cards([
        ("records published" if m.parts else "rows published", _e(_fmt(m.rows)),
         (f"of {_e(_fmt(m.ingest.rows))} input rows" if m.ingest.rows is not None else "input rows: withheld")
         + (f", in {len(m.parts)} tables" if m.parts else "")),
        ("columns published", _e(_fmt(len(m.columns))), f"of {_e(_fmt(len(m.ingest.columns)))} input columns"),
        ("method", _e(m.method.name), f"unit: {_e(unit_name)}"),
        ("privacy claims", f"{held} / {len(claims)}", "hold" if held == len(claims) else "<b>some fail</b>"),
        ("safety floor", {True: "holds", False: '<span class="bad-text">below</span>', None: "n/a"}[
            floor_verdict(m)], {True: "every row applying to it", False: "<b>published below it</b>"
                                if m.privacy.floor is not None and m.privacy.floor.accepted is not None
                                else "<b>some rows fail</b>", None: "made before the floor"}[floor_verdict(m)]),
        ("accuracy", _e(f"{u.accuracy:.3f}"),
         f"original {u.accuracy_original or 0.0:.3f}" + (f", ratio {ratio:.2f}" if ratio is not None else ""))
        if u is not None and u.accuracy is not None else
        ("2-way marginal distance", _e(_fmt(u.marginals.two_way, 3)), "label-free utility (0: as the input)")
        if u is not None and u.marginals is not None else ("accuracy", "withheld", "measured on real held-out rows"),
    ])
    described = method_text(m.method.name)
    protects, lacks = protection_text(m)
    below = below_floor_text(m)
    parts = [
        f'<p class="lead protects">{_e(protects)} <b>{_e(lacks)}</b>'
        + (f' <span class="bad-text">{_e(below)}</span>' if below else "") + "</p>",
        (f'<p>This release publishes <b>{_fmt(m.rows)} rows</b> and <b>{len(m.columns)} columns</b> '
         if not m.parts else
         f"<p>This release publishes <b>{_fmt(m.rows)} records</b> as <b>{len(m.parts)} tables</b> "
         f"({_fmt(sum(p.rows for p in m.parts))} rows in all, each record a row of every table) over "
         f"<b>{len(m.columns)} columns</b> ") +
        f"of the dataset <b>{_e(m.dataset)}</b> (release <code>{_e(m.release_id)}</code>). " + (
            _withheld_text(m) if m.withheld is not None else
            f"The input had {_fmt(m.ingest.rows)} rows and {len(m.ingest.columns)} columns; " + (
                f"{_fmt(held_out)} rows were held out to measure utility (this method publishes every row: the "
                "held-out rows are sanitized like the others)" if every_row else
                f"{_fmt(held_out)} rows were held out to measure utility and are not published")
            + (f"; {_fmt(removed)} rows were left out by the rare-value rule" if removed else "") + ".")
        + "</p>",
        (f"<p>The table is published in {_fmt(len(m.data_files))} file{'s' if len(m.data_files) != 1 else ''} "
         "(data/part-*.parquet): it is every file's rows; which file a row is in carries nothing.</p>"
         if m.data_files else ""),
        f"<p>The table was sanitized by <b>{_e(described)}</b>. Its privacy is measured over "
        f"<b>{_e(unit_name)}</b>: {_e(unit_text)}.</p>",
        cards,
        "<h3>Method and parameters</h3>",
    ]
    tuned = m.tuning.parameter if m.tuning.strategy != "fixed" else None
    prow = []
    for key, value in m.method.params.items():
        text = _param_value(value, page.columns)
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
        parts.append(_partition(page))
    parts.append("<h3>Every input column</h3>")
    parts.append(f'<p class="note">Identifiers: {_e(m.spec.identifiers.action)}. Each column has exactly one '
                 "treatment; the reason says why it got its role.</p>")
    empty = _uninformative(page)
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


def policy(page: Context) -> str:
    m = page.m
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
        parts.append(_claims_table(claims))
        units = sorted({c.unit for c in claims if c.unit})
        if units:
            parts.append(f'<p class="note">Measured over: {", ".join(_e(_UNIT_TEXT[u][0]) for u in units)}.</p>')
    else:
        parts.append('<p class="muted">The manifest lists no privacy claim.</p>')
    if failing:
        verb = "does not hold" if len(failing) == 1 else "do not hold"
        parts.append(f'<div class="verdict bad">{len(failing)} of {len(claims)} claims {verb}.</div>')
    elif claims:
        parts.append(f'<div class="verdict ok">Every privacy claim holds ({len(claims)} of {len(claims)}).</div>')
    parts.append(f'<p class="note">The policy is what this release\'s spec asks for; the safety floor beneath '
                 f"every policy is held to the attacker's view in section 3: {_e(verdict_text(m)[1])}.</p>")
    return "".join(parts)


def utility(page: Context) -> str:
    m, u = page.m, page.m.utility
    if u is None:
        return ("<p>Withheld. Utility is measured by training a classifier on the published rows and testing it on "
                "held-out <em>real</em> rows, beside the same classifier trained on the real rows: every such figure "
                "(accuracy, TSTR accuracy, regression R², per-class accuracy and support, information loss, "
                "marginal distances) is computed on the input and is not "
                "differentially private, so this release does not publish it. It is kept in the publisher's private "
                "record. The utility gates of the spec (" + _e(_utility_gates_text(m)) + ") decided whether the "
                "release was published: that decision is one bit about the data.</p>")
    if u.accuracy is None or u.accuracy_original is None:  # no classifier: nothing held out, no label needed
        parts = [f"<p>No classifier was trained (the table has no class column, or the spec sets "
                 f"<code>utility.classifier: none</code>): no row was held out, and utility is measured by "
                 f"label-free measures of the {_fmt(u.train_rows)} published rows against the input.</p>",
                 _marginals_html(u),
                 _cards([("mean shift", _e(_fmt(u.mean_shift, 3)), "|mean difference| / sd"),
                         ("correlation loss", _e(_fmt(u.correlation_loss, 3)), "mean |correlation difference|, "
                          "encoded attributes")])]
        lat = m.tuning.lattice
        if lat is not None and "loss" in lat.measures:
            parts.append(f"<p class=\"note\">ARX's loss (generalized information loss) of the chosen lattice node: "
                         f"{_e(_fmt(lat.measures['loss']))}.</p>")
        return "".join(parts)
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
    parts.append(_tstr_html(u))
    if u.marginals is not None:
        parts.append("<h3>Label-free measures</h3>")
        parts.append(_marginals_html(u))
    if u.gates:
        parts.append("<h3>Utility gates</h3>")
        parts.append(_claims_table(u.gates, recheck=False))
    if u.per_class:
        parts.append("<h3>Accuracy per class</h3>")
        rows: list[tuple[str, ...]] = []  # each table's rows of escaped cells
        bars = []
        for c in sorted(u.per_class, key=lambda c: c.label):
            name = page.labels[c.label]
            rows.append((_e(name), _e(_fmt(c.support)), f"{c.sanitized:.4f}", f"{c.original:.4f}",
                         f"{c.sanitized - c.original:+.4f}"))
            bars.append((name if len(name) <= 26 else name[:25] + "…", c.sanitized, c.original))
        parts.append(_table(("class", "held-out rows", "release", "original", "difference"), rows,
                            num=(1, 2, 3, 4)))
        parts.append(f'<p class="note">A class label is shown only when it occurs at least {page.k_labels} '
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
    levels = recorded if isinstance(recorded := m.method.params.get("levels"), dict) else {}
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


def _tstr_html(u) -> str:
    """Train on the release, test on real rows (the spec's utility.tstr) and the regression targets' R², as tables
    beside the baseline trained on the original training rows ("" when neither was measured)."""
    parts = []
    if u.tstr:
        parts.append("<h3>Train on the release, test on real rows (TSTR)</h3>")
        parts.append(_table(("classifier", "trained on the release", "trained on the original rows", "ratio"),
                            [(_e(t.classifier), f"{t.accuracy:.4f}", f"{t.accuracy_original:.4f}",
                              _e("n/a" if not t.accuracy_original else f"{t.accuracy / t.accuracy_original:.3f}"))
                             for t in u.tstr], num=(1, 2, 3)))
        parts.append(f'<p class="note">Each classifier of <code>utility.tstr</code> is trained on the published rows '
                     f"and, for the baseline, on the original training rows; both are tested on the same "
                     f"{_fmt(u.test_rows)} held-out real rows, which were never sanitized nor published (accuracy: "
                     "share of them classified correctly). <code>hist_gradient_boosting</code> is scikit-learn's "
                     "HistGradientBoostingClassifier, seeded, with early stopping.</p>")
    if u.regression:
        parts.append("<h3>Regression targets</h3>")
        parts.append(_table(("column", "R² trained on the release", "R² trained on the original rows",
                             "held-out rows"),
                            [(f"<code>{_e(r.column)}</code>", _e(_fmt(r.r2, 4)), _e(_fmt(r.r2_original, 4)),
                              _e(_fmt(r.test_rows))) for r in u.regression], num=(1, 2, 3)))
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
    return _cards([
        ("1-way marginal distance", _e(_fmt(g.one_way, 3)), f"mean over {_fmt(g.columns)} columns (worst "
         f"{_e(_fmt(g.one_way_worst, 3))})"),
        ("2-way marginal distance", _e(_fmt(g.two_way, 3)), f"mean over {_fmt(g.pairs)} column pairs"),
        ("correlation difference", _e(_fmt(g.correlation_difference, 3)),
         f"mean |difference| of {_fmt(g.numeric_columns)} numeric columns' correlations"),
    ]) + ('<p class="note">Label-free utility: the total variation distance (0: the same distribution, 1: nothing '
          "in common) between the published table and the input table, of each column (1-way) and of each pair of "
          f"columns (2-way); numeric columns are read in up to {g.bins} equal-frequency bins fixed from the input "
          "(an interval label as its midpoint; a suppressed or missing cell as a category of its own).</p>")


def _utility_gates_text(m) -> str:
    spec = m.spec.utility
    gates = []
    if spec.min_accuracy_ratio is not None:
        gates.append(f"min_accuracy_ratio {_fmt(spec.min_accuracy_ratio)}")
    if spec.delta_r is not None:
        gates.append(f"delta_r with epsilon {_fmt(spec.delta_r.epsilon)}")
    return ", ".join(gates) or "none set"


def tuning(page: Context) -> str:
    t, unit = page.m.tuning, page.m.unit
    parts = [f"<p>{_e(t.rule)}.</p>" if not t.rule.endswith(".") else f"<p>{_e(t.rule)}</p>"]
    searched = t.strategy in ("bisect", "grid")  # fixed, suggested and lattice use no objective and no gap
    facts = [("strategy", _e(t.strategy))]
    if (searched and t.objective) or t.lattice is not None:  # a lattice search's own: least loss (its measure)
        facts.append(("objective", _e(objective_text(t))))
    if searched and t.choice:
        facts.append(("choice rule", _e(_CHOICE_TEXT[t.choice])))
    if t.parameter:
        facts.append(("parameter", f"<code>{_e(t.parameter)}</code>"
                      + (f" ({_e(t.safer)} is safer)" if t.safer else "")))
    if t.low is not None or t.high is not None:
        facts.append(("range searched", f"{_e(_fmt(t.low))} to {_e(_fmt(t.high))}"))
    if t.threshold is not None:
        facts.append(("policy threshold on the parameter", _e(_fmt(t.threshold))))
    if searched and t.accuracy_gap is not None:
        facts.append(("accuracy gap t_a", _e(_fmt(t.accuracy_gap))))
    if t.suggested is not None:
        facts.append(("method's suggestion", _e(_fmt(t.suggested))))
    if t.chosen is not None:
        facts.append(("value from the spec" if t.strategy == "fixed" else "chosen value",
                      f"<code>{_e(t.parameter or '')}</code> = <b>{_e(_fmt(t.chosen))}</b>"))
    if t.figure6_value is not None and t.chosen is not None and t.figure6_value != t.chosen:
        facts.append(("where Figure 6 itself ended", f"<code>{_e(t.parameter or '')}</code> = "
                                                     f"{_e(_fmt(t.figure6_value))}"))
    if t.evaluations:
        facts.append(("values evaluated", f"{len(t.evaluations)} of {_fmt(t.candidates)} candidates"))
    if t.class_sizes:
        facts.append(("training rows per class", _e(", ".join(f"{k}: {_fmt(v)}" for k, v in
                                                              t.class_sizes.items()))))
    elif is_withheld(page.m, "tuning.class_sizes"):
        facts.append(("training rows per class", "withheld (counted on the input)"))
    parts.append(_dl(facts))
    privacy_label = {"equivalence_class": "k (smallest class)",
                     "generating_group": "confidence-interval privacy",
                     "record": "DCR quantile", "differential_privacy": "DCR quantile"}[unit]
    if t.evaluations:
        svg, legend = _tuning_svg(t, privacy_label)
        notes = ["the band is the accuracy gap the rule allows"] if searched and t.accuracy_gap is not None else []
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
                     + _lattice_classes_text(lat) + "</p>")
        parts.append(_table(("quasi-identifier", "level"),
                            [(f"<code>{_e(c)}</code>", _e(_fmt(v))) for c, v in lat.node.items()], num=(1,),
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
        ok, total = _check_counts(outcomes)
        parts.append(f"<h3>{title}: {ok} of {total} passed "
                     + _badge(ok == total, "all passed", f"{total - ok} failed") + "</h3>")
        if suite:
            rows_text = f"{_fmt(m.ingest.rows)} rows and " if m.ingest.rows is not None else ""
            parts.append(f'<p class="note">Suite <code>{_e(suite)}</code>, {_fmt(m.ingest.expectation_count)} '
                         f"expectations, on {rows_text}{len(m.ingest.columns)} columns "
                         f"({_e(m.ingest.format)})" + ("; the input's counts (rows, unexpected cells) are withheld"
                                                      if m.ingest.rows is None else "") + ".</p>")
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
        frozen = ""
        if r.held_records is not None:
            frozen = (f" Kept groups publish exactly their previous rows: {_e(_fmt(r.counterfeit_rows or 0))} of them "
                      f"stand for members who left or were erased (counterfeits); {_e(_fmt(r.retired_groups or 0))} "
                      f"previous groups fell below k present members and are no longer published; "
                      f"{_e(_fmt(r.held_records))} records are held back (new records until k can form a group, and "
                      "members of retired groups).")
        parts.append(f"<p>Group memberships kept from the previous release (<code>series.keep_groups</code>): "
                     f"{_e(_fmt(r.kept_members))} records were placed in their previous group; records not "
                     f"published are counted as suppressed rows ({_e(_fmt(m.method.suppressed_rows))}).{frozen}</p>")
    parts.append('<p class="note">These figures are re-checked by the publisher (<code>ppdp series</code>): they '
                 "need the series ledger, which is never published. <code>ppdp validate --release</code> does not "
                 "re-check them.</p>")
    return "".join(parts)


def _input_facts(m) -> list[tuple[str, str]]:
    """How the input is named: its keyed digest and the key's id (a manifest made before keyed digests: its
    SHA-256)."""
    if m.input_digest is None and m.input_sha256:
        return [("input SHA-256", f"<code>{_e(m.input_sha256)}</code> (made before keyed digests)")]
    return [("input digest", f"<code>{_e(m.input_digest or 'none')}</code> (salted HMAC-SHA256 of the input's SHA-256 "
                             "under the publisher's key: only the publisher can check an input against it)"),
            ("input digest key", f"<code>{_e(m.input_key_id or 'none')}</code>")]


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
        ("release id", f"<code>{_e(m.release_id)}</code>"),
        ("dataset", _e(m.dataset)),
        ("created at", _e(m.created_at.isoformat())),
        ("flow run id", f"<code>{_e(m.flow_run_id)}</code>" if m.flow_run_id else "none"),
        ("seed", _e(_fmt(m.seed))),
        *_input_facts(m),
        ("spec SHA-256", f"<code>{_e(m.spec_sha256)}</code>"),
        ("output SHA-256", f"<code>{_e(m.output_sha256)}</code> " + _badge(matches, *labels)),
    ]
    parts = [_dl(facts)]
    if m.data_files:
        found = sum(page.files.get(f.file) == f.sha256 for f in m.data_files)
        parts += [f"<h3>The row files ({_fmt(len(m.data_files))})</h3>",
                  f'<p class="note">The table is published in {_fmt(len(m.data_files))} files (data/part-*.parquet); '
                  f"{_fmt(found)} of them match the SHA-256 the manifest lists.</p>",
                  _table(("file", "rows", "SHA-256 (manifest)", ""),
                         [(f"<code>{_e(f.file)}</code>", _e(_fmt(f.rows)), f"<code>{_e(f.sha256)}</code>",
                           _badge(page.files.get(f.file) == f.sha256, "matches",
                                  "missing" if f.file not in page.files else "differs"))
                          for f in m.data_files], num=(1,), compact=True)]
    parts += ["<h3>Files this report was built from</h3>",
              _table(("file", "SHA-256"), [(f"<code>{_e(n)}</code>", f"<code>{_e(h)}</code>")
                                           for n, h in page.files.items() if n not in rows], compact=True)
              + (f'<p class="note">And the {_fmt(len(m.data_files))} row files above.</p>' if m.data_files else ""),
             '<p class="note">The audit trail signs the release folder\'s exact files; '
             "<code>ppdp audit verify</code> checks them, <code>ppdp report DIR</code> regenerates this "
             "report.</p>",
             "<h3>Versions at release time</h3>",
             _table(("component", "version"), [(_e(k.replace("_", "-")), f"<code>{_e(v)}</code>")
                                               for k, v in m.versions.model_dump().items()], compact=True)]
    return "".join(parts)
