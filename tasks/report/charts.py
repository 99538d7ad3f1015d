"""The report's private SVG chart kit: scales, round ticks, axes, legends, and the figures drawn with them (class
sizes, a tuning search, a partition search's Pareto front, accuracy per class). Inline SVG drawn here, so no plotting
library's version changes a byte; styled by the page's stylesheet (``.chart`` classes)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

from ppdp.schemas.reports import TuningTrace
from ppdp.tasks.report.fmt import esc, fmt, plural

WIDTH = 940
"""Width of every figure's viewBox (the page's content width: figures are drawn at about 1:1)."""


def num(v: float) -> str:
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


def nice_ticks(lo: float, hi: float, count: int = 5, integer: bool = False) -> tuple[float, float, list[float]]:
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


class Scale:
    def __init__(self, lo: float, hi: float, px_lo: float, px_hi: float, log: bool = False) -> None:
        self.lo, self.hi, self.px_lo, self.px_hi, self.log = lo, hi, px_lo, px_hi, log

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, x = math.log10(self.lo), math.log10(self.hi), math.log10(max(v, self.lo * 1e-3))
        else:
            a, b, x = self.lo, self.hi, v
        frac = 0.5 if b == a else (x - a) / (b - a)
        return self.px_lo + frac * (self.px_hi - self.px_lo)


def svg_figure(height: int, title: str, body: list[str]) -> str:
    tid = "fig-" + hashlib.sha256(title.encode()).hexdigest()[:10]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" role="img" '
            f'aria-labelledby="{tid}" class="chart"><title id="{tid}">{esc(title)}</title>' + "".join(body) + "</svg>")


def legend_html(items: Sequence[tuple[str, str]]) -> str:
    """An HTML legend under a figure: (swatch class, text)."""
    spans = "".join(f'<span><i class="sw {cls}"></i>{esc(text)}</span>' for cls, text in items)
    return f'<div class="legend">{spans}</div>'


def draw_axes(x: Scale, y: Scale, xticks: list[float], yticks: list[float], xlabel: str, ylabel: str,
          height: int) -> list[str]:
    out = []
    for t in yticks:
        py = num(y(t))
        out.append(f'<line class="grid" x1="{num(x.px_lo)}" x2="{num(x.px_hi)}" y1="{py}" y2="{py}"/>')
        out.append(f'<text class="tick" x="{num(x.px_lo - 8)}" y="{py}" text-anchor="end" '
                   f'dominant-baseline="middle">{esc(_tick_text(t))}</text>')
    base = num(y.px_lo)
    out.append(f'<line class="axis" x1="{num(x.px_lo)}" x2="{num(x.px_hi)}" y1="{base}" y2="{base}"/>')
    for t in xticks:
        px = num(x(t))
        out.append(f'<line class="axis" x1="{px}" x2="{px}" y1="{base}" y2="{num(y.px_lo + 5)}"/>')
        out.append(f'<text class="tick" x="{px}" y="{num(y.px_lo + 19)}" text-anchor="middle">{esc(_tick_text(t))}'
                   "</text>")
    out.append(f'<text class="label" x="{num((x.px_lo + x.px_hi) / 2)}" y="{height - 6}" text-anchor="middle">'
               f"{esc(xlabel)}</text>")
    mid = num((y.px_lo + y.px_hi) / 2)
    out.append(f'<text class="label" x="14" y="{mid}" text-anchor="middle" transform="rotate(-90 14 {mid})">'
               f"{esc(ylabel)}</text>")
    return out


def histogram_svg(sizes: np.ndarray, threshold: float | None, what: str) -> str:
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
    x = Scale(x_lo, x_hi, left, WIDTH - right)
    _, ytop, yticks = nice_ticks(0, max(1.0, float(counts.max()) * 1.08), 5, integer=True)  # room for labels
    y = Scale(0, ytop, height - bottom, top)
    _, _, xticks = nice_ticks(x_lo, x_hi, 12, integer=True)
    xticks = [t for t in xticks if x_lo <= t <= x_hi]
    body = draw_axes(x, y, xticks, yticks, f"{what} size (records)", f"number of {plural(what)}", height)
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
        body.append(f'<rect class="{"bar-bad" if small else "bar"}" x="{num(px_a + gap)}" y="{num(bar_top)}" '
                    f'width="{num(max(px_b - px_a - 2 * gap, 0.8))}" height="{num(y(0) - bar_top)}">'
                    f"<title>{esc(label)}: {int(c):,} {esc(plural(what) if c != 1 else what)}</title></rect>")
        if labelled:
            body.append(f'<text class="tick" x="{num((px_a + px_b) / 2)}" y="{num(bar_top - 5)}" '
                        f'text-anchor="middle">{int(c):,}</text>')
    if threshold is not None and math.isfinite(threshold):
        tx = x(threshold - 0.5 if bin_width == 1 else threshold)
        body.append(f'<line class="threshold" x1="{num(tx)}" x2="{num(tx)}" y1="{num(top - 8)}" y2="{num(y(0))}"/>')
        anchor, dx = ("start", 6) if tx < WIDTH * 0.75 else ("end", -6)
        body.append(f'<text class="note-red" x="{num(tx + dx)}" y="{num(top - 10)}" text-anchor="{anchor}">'
                    f"policy k = {esc(_tick_text(threshold))}</text>")
    return svg_figure(height, f"Distribution of {what} sizes", body)


def tuning_svg(trace: TuningTrace, privacy_label: str) -> tuple[str, str]:
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
        x_lo, x_hi, xticks = nice_ticks(lo - pad, hi + pad, 10, integer=all(float(v).is_integer() for v in xs))
    x = Scale(x_lo, x_hi, left, WIDTH - right, log)
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
    a_lo, a_hi, aticks = nice_ticks(max(0.0, a_lo - 0.01), a_hi + 0.01, 5)
    y = Scale(a_lo, a_hi, height - bottom, top)
    xlabel = f"{trace.parameter}" + (f" ({trace.safer} is safer)" if trace.safer else "")
    body = draw_axes(x, y, xticks, aticks, xlabel, "accuracy (held-out rows)", height)
    if band is not None:
        b0, b1 = max(band[0], a_lo), min(band[1], a_hi)
        body.insert(0, f'<rect class="band" x="{num(x.px_lo)}" y="{num(y(b1))}" width="{num(x.px_hi - x.px_lo)}" '
                       f'height="{num(max(y(b0) - y(b1), 0))}"/>')
    priv = [(e.value, e.privacy) for e in evs if e.privacy is not None and math.isfinite(e.privacy)]
    if priv:
        p_lo, p_hi, pticks = nice_ticks(min(p for _, p in priv), max(p for _, p in priv), 5)
        py = Scale(p_lo, p_hi, height - bottom, top)
        for t in pticks:
            body.append(f'<text class="tick red" x="{num(x.px_hi + 8)}" y="{num(py(t))}" dominant-baseline="middle">'
                        f"{esc(_tick_text(t))}</text>")
        mid, rx = num((py.px_lo + py.px_hi) / 2), WIDTH - 12
        body.append(f'<text class="label red" x="{rx}" y="{mid}" text-anchor="middle" '
                    f'transform="rotate(90 {rx} {mid})">{esc(privacy_label)}</text>')
        pts = " ".join(f"{num(x(v))},{num(py(p))}" for v, p in priv)
        body.append(f'<polyline class="line-red" points="{pts}"/>')
        for v, p in priv:
            body.append(f'<rect class="dot-red" x="{num(x(v) - 3.5)}" y="{num(py(p) - 3.5)}" width="7" height="7">'
                        f"<title>{esc(trace.parameter)} = {esc(fmt(v))}: {esc(privacy_label)} {esc(fmt(p))}</title>"
                        "</rect>")
    if trace.threshold is not None and math.isfinite(trace.threshold):
        tx = num(x(trace.threshold))
        body.append(f'<line class="threshold" x1="{tx}" x2="{tx}" y1="{num(top)}" y2="{num(y.px_lo)}"/>')
    if trace.chosen is not None:
        chosen_x = num(x(float(trace.chosen)))
        body.append(f'<line class="chosen" x1="{chosen_x}" x2="{chosen_x}" y1="{num(top)}" y2="{num(y.px_lo)}"/>')
    pts = " ".join(f"{num(x(e.value))},{num(y(e.accuracy))}" for e in evs)
    body.append(f'<polyline class="line-blue" points="{pts}"/>')
    for e in evs:
        cx, cy = x(e.value), y(e.accuracy)
        body.append(f'<circle class="dot-blue" cx="{num(cx)}" cy="{num(cy)}" r="4">'
                    f"<title>{esc(trace.parameter)} = {esc(fmt(e.value))}: accuracy {e.accuracy:.4f}</title></circle>")
        if e.meets_policy is False:
            body.append(f'<path class="cross" d="M{num(cx - 6)} {num(cy - 6)}L{num(cx + 6)} {num(cy + 6)}'
                        f'M{num(cx - 6)} {num(cy + 6)}L{num(cx + 6)} {num(cy - 6)}"/>')
    legend = [("sw-blue", "accuracy on the held-out rows")]
    if priv:
        legend.append(("sw-red", privacy_label))
    if band is not None:
        legend.append(("sw-band", f"accuracy gap t_a = {fmt(trace.accuracy_gap)}"))
    if trace.threshold is not None:
        legend.append(("sw-threshold", f"policy threshold {trace.parameter} = {fmt(trace.threshold)}"))
    if trace.chosen is not None:
        legend.append(("sw-chosen", f"chosen {trace.parameter} = {fmt(trace.chosen)}"))
    if any(e.meets_policy is False for e in evs):
        legend.append(("sw-cross", "fails a privacy gate"))
    title = f"Tuning of {trace.parameter}: accuracy and privacy per evaluated value"
    return svg_figure(height, title, body), legend_html(legend)


def pareto_svg(points: list[tuple[int, float]], k: int | None, policy_k: float | None) -> tuple[str, str]:
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
        x_lo, x_hi, xticks = nice_ticks(lo - pad, hi + pad, 10, integer=True)
    x = Scale(x_lo, x_hi, left, WIDTH - right, log)
    a_lo, a_hi, aticks = nice_ticks(max(0.0, min(a for _, a in pts) - 0.01), max(a for _, a in pts) + 0.01, 5)
    y = Scale(a_lo, a_hi, height - bottom, top)
    body = draw_axes(x, y, xticks, aticks, "anonymity level reached (smallest class over every part)",
                 "inner CV accuracy", height)
    steps = []
    for i, (lv, acc) in enumerate(pts):
        steps.append(f"{num(x(lv))},{num(y(acc))}")
        if i + 1 < len(pts):
            steps.append(f"{num(x(pts[i + 1][0]))},{num(y(acc))}")
    body.append(f'<polyline class="line-blue" points="{" ".join(steps)}"/>')
    for lv, acc in pts:
        body.append(f'<circle class="dot-blue" cx="{num(x(lv))}" cy="{num(y(acc))}" r="4"><title>k reached '
                    f"{esc(fmt(lv))}: accuracy {acc:.4f}</title></circle>")
    legend = [("sw-blue", "Pareto front: the most accurate partition reaching each k")]
    if policy_k is not None and math.isfinite(policy_k):
        tx = num(x(policy_k))
        body.append(f'<line class="threshold" x1="{tx}" x2="{tx}" y1="{num(top)}" y2="{num(y.px_lo)}"/>')
        legend.append(("sw-threshold", f"policy k = {fmt(policy_k)}"))
    if k is not None:
        cx = num(x(k))
        body.append(f'<line class="chosen" x1="{cx}" x2="{cx}" y1="{num(top)}" y2="{num(y.px_lo)}"/>')
        legend.append(("sw-chosen", f"the release reaches k = {fmt(k)}"))
    return svg_figure(height, "Accuracy against k over the partitions searched", body), legend_html(legend)


def per_class_svg(rows: list[tuple[str, float, float]]) -> tuple[str, str]:
    """(figure, legend): accuracy per class trained on the release (blue) and on the original rows (grey)."""
    left, right, top = 190, 60, 10
    bar, gap = 14, 14
    height = top + len(rows) * (2 * bar + gap) + 30
    x = Scale(0.0, 1.0, left, WIDTH - right)
    body = []
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        px = num(x(t))
        body.append(f'<line class="grid" x1="{px}" x2="{px}" y1="{top - 4}" y2="{height - 26}"/>')
        body.append(f'<text class="tick" x="{px}" y="{height - 10}" text-anchor="middle">{t:.0%}</text>')
    y = top
    for label, rel, orig in rows:
        body.append(f'<text class="tick" x="{left - 10}" y="{num(y + bar)}" text-anchor="end" '
                    f'dominant-baseline="middle">{esc(label)}</text>')
        for value, cls, name in ((rel, "bar", "trained on the release"), (orig, "bar-grey", "trained on the "
                                                                                            "original rows")):
            body.append(f'<rect class="{cls}" x="{num(x(0))}" y="{num(y)}" width="{num(max(x(value) - x(0), 0))}" '
                        f'height="{bar}"><title>{esc(label)}, {name}: {value:.4f}</title></rect>')
            body.append(f'<text class="tick" x="{num(x(value) + 5)}" y="{num(y + bar / 2)}" '
                        f'dominant-baseline="middle">{value:.3f}</text>')
            y += bar
        y += gap
    legend = legend_html([("sw-bar", "trained on the release"), ("sw-grey", "trained on the original rows")])
    return svg_figure(height, "Accuracy per class on the held-out rows", body), legend
