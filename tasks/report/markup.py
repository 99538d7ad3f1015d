"""The report's HTML building blocks: the self-contained page, its stylesheet (``style.css``), badges, tables,
fact lists and key-figure cards. Cells and items come already escaped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.resources import files

from ppdp.tasks.report.fmt import esc

STYLE_CSS = "\n" + files(__package__).joinpath("style.css").read_text(encoding="utf-8")
"""The page's stylesheet (``style.css``), inlined in a ``<style>`` element (whose text starts on a new line)."""

COMPARISON = {">=": "≥", "<=": "≤", "<": "&lt;"}


def html_page(title: str, css: str, generator: str | None, body: str) -> str:
    """A self-contained HTML page: ``title`` and ``generator`` (escaped here), inline ``css``, ``body`` (HTML), and a
    content policy that loads nothing (no script, no fetch; styles and ``data:`` images inline only)."""
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    meta = f'<meta name="generator" content="{esc(generator)}">\n' if generator else ""
    return ("<!DOCTYPE html>\n"
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"{meta}<title>{esc(title)}</title>\n"
            f"<style>{css}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def badge_html(ok: bool | None, yes: str = "holds", no: str = "fails") -> str:
    if ok is None:
        return '<span class="badge muted">n/a</span>'
    return f'<span class="badge ok">{yes}</span>' if ok else f'<span class="badge bad">{no}</span>'


def html_table(head: Sequence[str], rows: Iterable[Sequence[str]], num: Sequence[int] = (), nowrap: Sequence[int] = (),
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


def html_dl(items: Iterable[tuple[str, str]]) -> str:
    inner = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return f'<dl class="facts">{inner}</dl>'


def html_cards(items: Iterable[tuple[str, str, str]]) -> str:
    """Key-figure cards: (label, value, note), already escaped."""
    out = []
    for label, value, note in items:
        out.append(f'<div class="card"><div class="card-label">{label}</div><div class="card-value">{value}</div>'
                   f'<div class="card-note">{note}</div></div>')
    return f'<div class="cards">{"".join(out)}</div>'
