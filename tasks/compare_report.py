"""``compare.html``: the comparison of ``ppdp compare`` as one self-contained page, like a release's ``report.html``
(its CSS, table, badge and SVG helpers from :mod:`ppdp.tasks.report`'s modules: inline CSS and SVG, no script, nothing
loaded, a ``default-src 'none'`` content policy).

It holds aggregates only (figures, method and column names, one-line reasons that name no data value) and is
deterministic up to the times it shows. Imports neither Prefect nor Great Expectations.
"""

from __future__ import annotations

import math
from pathlib import Path

from ppdp.schemas.compare import CompareResult, CompareRow
from ppdp.schemas.privacy import FLOOR
from ppdp.schemas.units import BY_NAME as UNITS_BY_NAME
from ppdp.tasks.compare import pareto_frontier, risk_of
from ppdp.tasks.report import write_atomic
from ppdp.tasks.report.charts import WIDTH, Scale, draw_axes, legend_html, nice_ticks, num, svg_figure
from ppdp.tasks.report.fmt import esc, fmt, share
from ppdp.tasks.report.markup import STYLE_CSS, badge_html, html_page, html_table

_STATUS = {"passes": ("ok", "passes"), "refused": ("bad", "refused"), "not_applicable": ("muted", "not applicable"),
           "not_run": ("muted", "not run"), "error": ("bad", "error")}

_EXTRA_CSS = """
.chart .dot-grey{fill:#9aa6b5;stroke:#fff;stroke-width:1.2}
.chart .dot-pass{fill:var(--green);stroke:#fff;stroke-width:1.2}
.chart .floor{stroke:var(--red);stroke-width:1.5}
.chart .policy{stroke:#8a5a00;stroke-width:1.5;stroke-dasharray:6 3}
.chart .frontier{stroke:var(--green);stroke-width:2;fill:none}
.chart .name{font-size:11.5px;fill:#2c3848}
.sw-floor{border-top:2px solid #c0392b}
.sw-policy{border-top:2px dashed #8a5a00}
.sw-frontier{border-top:2px solid #1e7b45}
.sw-pass{width:12px;height:12px;border:0;border-radius:50%;background:#1e7b45}
.sw-refused{width:12px;height:12px;border:0;border-radius:50%;background:#c0392b}
.sw-other{width:12px;height:12px;border:0;border-radius:50%;background:#9aa6b5}
.cmp table{font-size:12.5px}
.cmp th,.cmp td{padding:5px 7px}
.cmp th.num{white-space:normal}
"""


def _floor_limit(key: str) -> float:
    return next(r.limit for r in FLOOR if r.key == key)


def _status_badge(row: CompareRow) -> str:
    cls, text = _STATUS[row.status]
    return f'<span class="badge {cls}">{esc(text)}</span>'


def _unit_short(name: str | None) -> str:
    """The unit in a word (:attr:`~ppdp.schemas.units.PrivacyUnit.short`); a name that is no unit as it is."""
    unit = UNITS_BY_NAME.get(name or "")
    return unit.short if unit is not None else name or ""


def comparison_table(result: CompareResult) -> str:
    """The comparison table, in two halves for the page's width (the same rows in the same order): the verdict, then
    the attacker's view and utility; and each refusal's reason."""
    verdicts, figures, marked = [], [], []
    tstr = next((name for r in result.rows for name in r.tstr), None)  # utility.tstr's first classifier
    for r in result.rows:
        measured = r.status in ("passes", "refused") and r.records is not None
        verdicts.append((
            f"<b>{esc(r.method)}</b>", _status_badge(r), esc(_unit_short(r.unit)),
            esc(r.strategy or ""), esc(r.tuned or ""),
            esc(", ".join(r.policy).replace(" >= ", " ≥ ").replace(" <= ", " ≤ ")),
            badge_html(r.policy_holds) if measured else "", badge_html(r.floor_holds) if measured else "",
            badge_html(r.utility_holds) if measured else "",
            esc(fmt(r.accuracy_ratio, 3)) if r.accuracy_ratio is not None else "", f"{r.seconds:.1f}"))
        figures.append((
            f"<b>{esc(r.method)}</b>",
            share(r.records_alone) if measured else "", esc(fmt(r.smallest_class)) if measured else "",
            esc(fmt(r.average_risk, 3)) if measured else "",
            share(r.exact_copies) if r.exact_copies is not None else "",
            esc(fmt(r.linkage_risk, 3)) if r.linkage_risk is not None else "",
            esc(fmt(r.disclosure_gain, 3)) if r.disclosure_gain is not None else "",
            esc(fmt(r.accuracy, 3)) if r.accuracy is not None else "",
            esc(fmt(r.accuracy_original, 3)) if r.accuracy_original is not None else "",
            esc(fmt(r.accuracy_ratio, 3)) if r.accuracy_ratio is not None else "",
            *((esc(fmt(r.tstr[tstr], 3)) if tstr in r.tstr else "",
               esc(fmt(r.tstr_original[tstr], 3)) if tstr in r.tstr_original else "") if tstr else ()),
            esc(fmt(r.mean_shift, 3)) if r.mean_shift is not None else "",
            esc(fmt(r.correlation_loss, 3)) if r.correlation_loss is not None else "",
            esc(fmt(r.loss_measures["loss"], 3)) if "loss" in r.loss_measures else ""))
        marked.append(r.method == result.recommended)
    first = html_table(("method", "status", "unit", "tuning", "tuned value", "policy held to", "policy", "safety floor",
                    "utility gates", "accuracy ratio", "seconds"), verdicts, num=(9, 10), nowrap=(0, 1),
                   marked=marked)
    tstr_heads = (f"TSTR {tstr}", "TSTR original") if tstr else ()  # trained on the release / the original rows
    second = html_table(("method", "records alone", "smallest class", "average risk", "exact copies", "linkage risk",
                     "disclosure gain", "accuracy", "original accuracy", "accuracy ratio", *tstr_heads, "mean shift",
                     "correl. loss", "ARX loss"), figures, num=tuple(range(1, 13 + len(tstr_heads))), nowrap=(0,),
                    marked=marked)
    table = (f'<div class="cmp">{first}</div><h3>The attacker\'s view and utility of each release</h3>'
             f'<div class="cmp">{second}</div>')
    reasons = [(f"<b>{esc(r.method)}</b>", _status_badge(r), esc(r.reason)) for r in result.rows if r.reason]
    why = ("<h3>Why a method is refused, not applicable, not run or not recommended</h3>"
           + html_table(("method", "status", "reason"), reasons, nowrap=(0, 1))) if reasons else ""
    return f"{table}{why}"


class _SqrtScale(Scale):
    """A square-root scale from 0: small risks (0.01 against 0.09) stay apart beside large ones (0.5, 1)."""

    def __call__(self, v: float) -> float:
        a, b = math.sqrt(max(self.lo, 0.0)), math.sqrt(max(self.hi, 0.0))
        frac = 0.5 if b == a else (math.sqrt(max(v, 0.0)) - a) / (b - a)
        return self.px_lo + frac * (self.px_hi - self.px_lo)


_RISK_TICKS = (0.0, 0.01, 0.02, 0.05, 0.09, 0.2, 0.3, 0.5, 0.7, 1.0)


def _place_labels(points: list[tuple[float, float, str]], height: int) -> list[tuple[float, float, str, str]]:
    """(x, y, anchor, text) for each point's label, moved down (then up) in steps of a line until it overlaps no label
    placed before it."""
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for cx, cy, text in sorted(points, key=lambda p: (p[1], p[0])):
        width = 6.6 * len(text) + 4
        anchor, x0 = ("end", cx - 9 - width) if cx > WIDTH * 0.8 else ("start", cx + 9)
        for shift in (0, 13, -13, 26, -26, 39, -39, 52):
            y = cy - 4 + shift
            box = (x0, y - 11, x0 + width, y + 2)
            if not any(box[0] < p[2] and p[0] < box[2] and box[1] < p[3] and p[1] < box[3] for p in placed):
                break
        placed.append(box)
        out.append((cx - 9 if anchor == "end" else cx + 9, min(max(y, 12.0), height - 52.0), anchor, text))
    return out


def scatter_svg(result: CompareResult) -> tuple[str, str] | None:
    """(figure, legend): accuracy ratio against re-identification risk per measured method (square-root scale), the
    safety floor's and the policy's limits, and the Pareto frontier of the methods the recommendation chooses from;
    None when nothing was measured."""
    points = []
    for r in result.rows:
        name, risk = risk_of(r)
        if r.accuracy_ratio is None or risk is None or not math.isfinite(risk):
            continue
        points.append((r, name, float(risk), float(r.accuracy_ratio)))
    if not points:
        return None
    height, left, right, top, bottom = 400, 70, 24, 22, 48
    kinds = {name for _, name, _, _ in points}
    floors = []
    if "average risk" in kinds:
        floors.append(("average risk", _floor_limit("average_risk")))
    if "linkage risk" in kinds:
        floors.append(("linkage risk", _floor_limit("linkage_risk")))
    policies = [(g.removeprefix("max_").replace("_", " "), v) for g, v in sorted(result.risk_gates.items())
                if g.removeprefix("max_").replace("_", " ") in kinds]
    xs = [p[2] for p in points] + [v for _, v in floors] + [v for _, v in policies]
    x_hi = next((t for t in _RISK_TICKS if t >= max(xs) * 1.02), 1.0) or 0.01
    xticks = [t for t in _RISK_TICKS if t <= x_hi]
    ys = [p[3] for p in points] + ([result.min_accuracy_ratio] if result.min_accuracy_ratio is not None else [])
    y_lo, y_hi, yticks = nice_ticks(max(0.0, min(ys) - 0.03), max(ys) + 0.03, 6)
    x = _SqrtScale(0.0, x_hi, left, WIDTH - right)
    y = Scale(y_lo, y_hi, height - bottom, top)
    xlabel = " / ".join(sorted(kinds)) + " (square-root scale; lower is safer)"
    body = draw_axes(x, y, xticks, yticks, xlabel, "accuracy ratio (release / original rows)", height)
    legend = [("sw-pass", "passes policy, floor and utility gates"), ("sw-refused", "below the safety floor"),
              ("sw-other", "refused by a policy or utility gate, or carries nothing for the classifier")]
    for name, v in floors:
        px = num(x(v))
        body.append(f'<line class="floor" x1="{px}" x2="{px}" y1="{num(top)}" y2="{num(y.px_lo)}"><title>safety floor: '
                    f"{esc(name)} at most {esc(fmt(v))}</title></line>")
        legend.append(("sw-floor", f"safety floor: {name} ≤ {fmt(v)}"))
    for name, v in policies:
        px = num(x(v))
        body.append(f'<line class="policy" x1="{px}" x2="{px}" y1="{num(top)}" y2="{num(y.px_lo)}"><title>policy: '
                    f"{esc(name)} at most {esc(fmt(v))}</title></line>")
        legend.append(("sw-policy", f"policy: {name} ≤ {fmt(v)}"))
    if result.min_accuracy_ratio is not None:
        py = num(y(result.min_accuracy_ratio))
        body.append(f'<line class="policy" x1="{num(x.px_lo)}" x2="{num(x.px_hi)}" y1="{py}" y2="{py}"><title>utility '
                    f"gate: accuracy ratio at least {esc(fmt(result.min_accuracy_ratio))}</title></line>")
        legend.append(("sw-policy", f"utility gate: accuracy ratio ≥ {fmt(result.min_accuracy_ratio)}"))
    frontier = pareto_frontier([(risk, ratio, r.method) for r, _, risk, ratio in points if r.eligible])
    if frontier:
        steps = []
        for i, (fx, fy, _) in enumerate(frontier):
            steps.append(f"{num(x(fx))},{num(y(fy))}")
            if i + 1 < len(frontier):
                steps.append(f"{num(x(frontier[i + 1][0]))},{num(y(fy))}")
        if len(frontier) > 1:
            body.append(f'<polyline class="frontier" points="{" ".join(steps)}"/>')
        for fx, fy, _ in frontier:
            body.append(f'<circle class="frontier" cx="{num(x(fx))}" cy="{num(y(fy))}" r="9"/>')
        legend.append(("sw-frontier", "Pareto frontier of the methods that pass (ringed: no other is both safer and "
                                      "more accurate)"))
    labels = []
    for r, name, risk, ratio in sorted(points, key=lambda p: p[0].method):
        cls = "dot-pass" if r.eligible else ("dot-red" if r.floor_holds is False else "dot-grey")
        cx, cy = x(risk), y(ratio)
        body.append(f'<circle class="{cls}" cx="{num(cx)}" cy="{num(cy)}" r="5.5"><title>{esc(r.method)}: {esc(name)} '
                    f"{risk:.4f}, accuracy ratio {ratio:.4f}</title></circle>")
        labels.append((cx, cy, r.method))
    for lx, ly, anchor, text in _place_labels(labels, height):
        body.append(f'<text class="name" x="{num(lx)}" y="{num(ly)}" text-anchor="{anchor}">{esc(text)}</text>')
    return svg_figure(height, "Privacy against utility per method", body), legend_html(legend)


def render_compare(result: CompareResult) -> str:
    """The HTML page of a comparison."""
    best = result.row(result.recommended) if result.recommended else None
    counts = {s: sum(1 for r in result.rows if r.status == s) for s in _STATUS}
    verdict = (f'<div class="verdict ok">Recommended: {esc(result.recommendation)}</div>' if best else
               f'<div class="verdict bad">{esc(result.recommendation)}</div>')
    scatter = scatter_svg(result)
    figure = ("<figure>" + scatter[0] + scatter[1] + "<figcaption>Each measured method at its tuned value: the "
              "re-identification risk an attacker holding the release sees (average risk for classes and groups, "
              "linkage risk for record-by-record methods) against the accuracy ratio. Attribute-protecting methods "
              "are placed by their average risk on the quasi-identifiers as published; a risk fixed by construction "
              "(linkage where no published row stands for an input record) is not a measure and is not placed."
              "</figcaption></figure>"
              if scatter else '<p class="muted">No method was measured.</p>')
    note = "".join(f'<p class="note"><b>Note:</b> {esc(n)}.</p>' for n in result.notes)
    if best is not None and best.not_applicable_reason:
        note += f'<p class="note"><b>Policy:</b> {esc(best.not_applicable_reason)}.</p>'
    note += "".join(f'<p class="note"><b>Not carried:</b> {esc(n)}.</p>' for n in result.not_carried)
    return html_page(
        f"Method comparison: {result.dataset}", STYLE_CSS + _EXTRA_CSS, None,
        '<header class="top"><div class="wrap"><p class="eyebrow">ppdp method comparison</p>'
        f"<h1>{esc(result.dataset)}</h1><p class=\"sub\">{fmt(result.input_rows)} input rows · seed "
        f"{esc(result.seed)} · classifier {esc(result.classifier)} · {len(result.rows)} methods: {counts['passes']} "
        f"pass, {counts['refused']} refused, {counts['not_applicable']} not applicable"
        + (f", {counts['not_run']} not run" if counts["not_run"] else "")
        + (f", {counts['error']} errors" if counts["error"] else "") + "</p></div></header>\n"
        '<main class="wrap">\n'
        f'<section id="recommendation"><h2><span class="num">1</span>Recommendation</h2>{verdict}'
        f'<p class="note">Rule: {esc(result.rule)}.</p>'
        f'<p class="note">Policy per method: {esc(result.policy_rule)}.</p>'
        '<p class="note">Nothing was published: every method ran in memory on the spec\'s input (its rare-value '
        "rule, hold-out and seed), was tuned with its default strategy, and was judged as <code>ppdp run</code> "
        "judges a release; a differentially private method is not run (a run would spend privacy budget on the "
        "same rows, uncounted). <code>ppdp compare --write-spec PATH</code> writes the recommended method's spec "
        "with its tuned value fixed and the policy as given.</p>" + note + "</section>\n"
        f'<section id="table"><h2><span class="num">2</span>Every method</h2>{comparison_table(result)}'
        '<p class="note">Records alone, smallest class, average risk, exact copies, linkage risk and disclosure gain '
        "are the attacker's view of each release (as in a release report); accuracy ratio is the spec's classifier "
        "trained on the release over the same classifier trained on the original rows, both tested on the held-out "
        "rows. Seconds: the method's hold-out, tuning, sanitizing and judging (they vary between runs).</p></section>\n"
        f'<section id="scatter"><h2><span class="num">3</span>Privacy against utility</h2>{figure}</section>\n'
        "</main>\n"
        '<footer class="wrap">Generated by ppdp compare. No data value appears in this page: only figures, method and '
        "column names, and one-line reasons.</footer>\n")


def write_outputs(result: CompareResult, folder: Path) -> list[Path]:
    """``compare.json`` (the result) and ``compare.html`` (the report) in ``folder``; aggregates only."""
    folder = Path(folder)
    json_path, html_path = folder / "compare.json", folder / "compare.html"
    write_atomic(json_path, result.model_dump_json(indent=2) + "\n")
    write_atomic(html_path, render_compare(result))
    return [html_path, json_path]
