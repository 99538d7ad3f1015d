"""How the report writes a value: HTML-escaped text, markdown-escaped text, numbers, shares, durations."""

from __future__ import annotations

import html
import math
import re

import numpy as np

from ppdp.schemas.reports import Claim


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def md(value: object) -> str:
    """Text for markdown: HTML-escaped, markdown's special characters backslash-escaped, on one line."""
    text = html.escape(" ".join(str(value).split()), quote=False)
    return re.sub(r"([\\`*_\[\]#|~])", r"\\\1", text)


def claim_text(claim: Claim) -> tuple[str, str]:
    """A claim's value and threshold as text (:func:`fmt`, 4 significant digits, up to 6 where 4 would print a
    value equal to a threshold it differs from)."""
    digits = 4
    while (digits < 6 and claim.value is not None and claim.threshold is not None and claim.value != claim.threshold
           and fmt(claim.value, digits) == fmt(claim.threshold, digits)):
        digits += 1
    return fmt(claim.value, digits), fmt(claim.threshold, digits)


def fmt(value: object, digits: int = 4) -> str:
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


def pct_text(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def share(value: float | None) -> str:
    """A share as a percentage, with enough digits that a share just above 0 or just below 1 does not read as 0% or
    100% (a floor of 0 fails on one record in thousands)."""
    if value is None:
        return "n/a"
    if 0 < value < 0.001 or 0.999 < value < 1:
        return f"{100 * value:.3g}%" if value < 0.5 else f"{100 * value:.4g}%"
    return pct_text(value)


def duration_text(seconds: float) -> str:
    """A wall-clock time readable at any size: "19 ms", "2.4 s", "3 min 5 s" ("under 1 ms" below that)."""
    if seconds < 0.001:
        return "under 1 ms"
    if seconds < 0.9995:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def plural(what: str) -> str:
    return what + ("es" if what.endswith(("s", "x", "sh", "ch")) else "s")
