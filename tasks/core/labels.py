"""Naming columns and spec keys in messages without echoing data: a name that looks like a data value (an
SSN, an e-mail address, a number, a date, a long code, a phone number) is never quoted."""

from __future__ import annotations

import re

_DATA_LIKE = {  # most specific first
    "a US social security number": re.compile(r"^\d{3}-\d{2}-\d{4}$"),
    "an e-mail address": re.compile(r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$"),
    "a number": re.compile(r"^[-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$|^[-+]?(?:inf|infinity|nan)$",
                           re.IGNORECASE),
    "a date or time": re.compile(r"^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[T ].*)?$|^\d{1,2}:\d{2}(?::\d{2})?$"),
    "a long code": re.compile(r"^[A-Za-z]{0,4}\d[\d -]{6,}\d$"),  # card, account, record numbers
    "a phone number": re.compile(r"^\+?\(?\d{1,4}\)?([\s.-]?\(?\d{2,4}\)?){2,5}$"),
}


def looks_like_data(name: str) -> str | None:
    """What a column name (or spec key) looks like when it looks like a data value rather than a name: an
    e-mail address, an SSN, a phone number, a number, a date, a long code (card or account numbers). None for
    an ordinary name. Such a name is never echoed: messages say ``column 3`` instead."""
    text = str(name).strip()
    for what, pattern in _DATA_LIKE.items():
        if pattern.match(text):
            return what
    return None


def key_text(key: object) -> str:
    """A spec key or column name for a message: quoted, or ``(a key that looks like a data value)``."""
    return "(a key that looks like a data value)" if looks_like_data(str(key)) else f"'{key}'"


def key_path(keys: list[str] | tuple[str, ...]) -> str:
    """Dotted spec keys for a message, a key that looks like a data value shown as ``<data-like key>``."""
    return ".".join("<data-like key>" if looks_like_data(str(k)) else str(k) for k in keys)


def column_label(position: int, name: object) -> str:
    """``column 3 ('age')``; ``column 3`` alone when the name looks like a data value. ``position`` is 1-based."""
    return f"column {position}" if looks_like_data(str(name)) else f"column {position} ('{name}')"


SEPARATORS = (",", ";", "\t", "|")


def guess_separator(header: list[str], sep: str) -> str | None:
    """The common separator other than ``sep`` that occurs most often in the header's names, if any."""
    counts = {s: sum(name.count(s) for name in header) for s in SEPARATORS if s != sep}
    best = max(counts, key=lambda s: counts[s])
    return best if counts[best] else None
