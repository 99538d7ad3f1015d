"""The minimum-count rule of :mod:`ppdp.tasks.federated` and its suppression audit: counts in ``[1, k)`` are
suppressed with complementary cells (or refused), and the LP audit checks that no suppressed count can be narrowed
from the published table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.schemas.federate import MinCountRule
from ppdp.tasks.core.errors import InputError, ReleaseRejected
from ppdp.tasks.core.labels import key_text, looks_like_data
from ppdp.tasks.federated.model import Suppressed, counts_from_table
from ppdp.tasks.federated.protocol import Layout


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def apply_min_count(counts: np.ndarray, layout: Layout, rule: MinCountRule) -> Suppressed:
    """The minimum-count rule: counts in ``[1, k)`` (the primary cells) are suppressed (published as 0, flagged)
    or refused (:class:`ReleaseRejected`, naming where). When suppressing, complementary cells are chosen so
    that no suppressed count can be narrowed from the published table (see :func:`audit_suppression` for the
    attacker and the check):

    * a suppressed class count hides every cell of its rows, zeros included (they are published as 0 anyway,
      so the model does not change; hidden, they no longer tell which values the small class holds);
    * in a (class, attribute) row of a published class count with ``a`` primary cells, the complementary cells
      are the row's first ``t`` non-zero, non-primary cells in the declared value order, ``t >= 1`` the smallest
      for which the row's ``s = a + t`` suppressed cells add up to at least ``s * k``. If no ``t`` does, every
      non-zero cell of the row is suppressed, and that must pass the audit; else the release is refused
      (nothing can protect that row short of hiding its class count).

    The choice looks at no count but through that one test, which involves the primary cells only with
    their sum and is met with a margin: an attacker who knows this rule, which suppressed cells are primary
    and that the others are at least ``k`` still finds every value from 1 to ``k - 1`` possible for each primary
    cell of a row of a published class count (a prefix that failed the test says only that its cells add up to
    less than ``s * k``, which every such value allows). It never picks the smallest (or largest) cell, whose
    choice would bound the others. In the rows of a suppressed class count, that attacker bounds a primary
    cell by the class count (below ``k``) less the row's other non-zero cells; one who does not know which
    suppressed cells are non-zero learns nothing there (the zeros are hidden too).
    The result is audited (:func:`audit_suppression`) before it is returned; refuses when no class count is
    left. Deterministic: the same counts give the same suppression."""
    counts = np.asarray(counts, dtype=np.int64)
    k = rule.k
    small = (counts >= 1) & (counts < k)
    n = len(layout.classes)
    if small.any() and rule.action == "refuse":
        where = (["the class counts"] if small[:n].any() else []) + [
            key_text(a) for j, a in enumerate(layout.attributes) if layout.block(small, j).any()]
        raise ReleaseRejected(f"min_count: {_cells(int(small.sum()))} of the model count between 1 and k - 1 = {k - 1} "
                              f"(in {', '.join(where)}): refused (min_count.action: refuse)", ["min_count"])
    if not np.where(small[:n], 0, counts[:n]).any():
        raise ReleaseRejected(f"min_count: every class count is below k = {k}: nothing left to release",
                              ["min_count"])
    mask = small.copy()
    complementary = 0
    unprotected: list[str] = []
    for j, name in enumerate(layout.attributes):
        rows, block = layout.block(mask, j), layout.block(counts, j)
        for c in range(n):
            if small[c]:  # a suppressed class count: its rows have no known total; hide them whole
                complementary += int((~rows[c]).sum())
                rows[c] = True
            elif rows[c].any():
                chosen = _complementary_cells(block[c], rows[c], k)
                if chosen is None:
                    unprotected.append(key_text(name))
                    break
                rows[c, chosen] = True
                complementary += len(chosen)
    if unprotected:
        raise ReleaseRejected(f"min_count: no safe suppression in {', '.join(unprotected)}: a row holds counts "
                              "below k that its other counts cannot hide (even all of them suppressed, its class "
                              "count would bound the small ones); nothing released (merge values, or lower "
                              "min_count.k)", ["min_count"])
    published = np.where(mask, 0, counts)
    findings = audit_suppression(published, layout, k, mask=mask)
    if findings:  # not expected: the rule above is built to pass; fail closed all the same
        raise ReleaseRejected(f"min_count: the suppression does not pass its audit ({findings[0]}); nothing "
                              "released", ["min_count"])
    return Suppressed(published, mask, int(small.sum()), complementary, audited=True)


def _complementary_cells(row: np.ndarray, hidden: np.ndarray, k: int) -> list[int] | None:
    """The complementary cells of one row of a published class count (its counts ``row``, its primary cells
    ``hidden``): the first ``t`` non-zero, non-primary cells in declared order, ``t`` the smallest for which the
    ``s`` suppressed cells add up to at least ``s * k``; else all of them if that passes the audit; else None."""
    s = int(hidden.sum())
    total = int(row[hidden].sum())
    candidates = [v for v in range(row.size) if not hidden[v] and row[v] > 0]
    for t, v in enumerate(candidates, start=1):
        total += int(row[v])
        if total >= (s + t) * k:
            return candidates[:t]
    if not _row_findings(s + len(candidates), total, k):
        return candidates
    return None


# -- the suppression audit ---------------------------------------------------------------------------------------
ATTACKERS = {
    "standard": "its range from the published table and totals (standard LP audit) does not reach from 0 to k - 1",
    "role-aware": "its range does not reach from 0 to k - 1 for an attacker who knows which suppressed counts are "
                  "below k (the others being at least k)",
    "inconsistent": "the published counts do not add up to the published totals",
}


@dataclass(frozen=True)
class SuppressionFinding:
    """A suppressed cell whose feasible range is too narrow (or totals that do not add up). ``low`` and ``high``
    are the narrowest range found (``high`` may be infinite); they follow from the published table and are
    never put into a message (a pinned range is the suppressed count itself)."""

    cell: int
    where: str
    attacker: str
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.where}: {ATTACKERS[self.attacker]}"


def _row_findings(s: int, total: int, k: int) -> list[tuple[str, int, int]]:
    """The narrow ranges of the ``s`` suppressed cells of one row whose suppressed cells add up to ``total`` (the
    class count is published, so ``total`` is known): ``(attacker, low, high)`` for the standard audit (cells
    >= 0) and for the role-aware one (any ``a >= 1`` of the cells are below ``k`` (in ``[0, k - 1]``), ``b`` are at
    least ``k``, the rest 0; each assignment that fits ``total`` is checked). The row alone is the whole linear
    program here, and its optimum has a closed form: a cell below k ranges over ``[0, min(k - 1, total - b k)]``
    when ``b >= 1``, over ``[max(0, total - (a - 1)(k - 1)), min(k - 1, total)]`` when ``b = 0``."""
    found = []
    low, high = (total, total) if s == 1 else (0, total)
    if low > 0 or high < k - 1:
        found.append(("standard", low, high))
    worst = None
    for a in range(1, s + 1):
        for b in range(0, s - a + 1):
            if b * k > total or (b == 0 and total > a * (k - 1)):
                continue  # no counts fit this assignment
            high = min(k - 1, total - b * k)
            low = 0 if b else max(0, total - (a - 1) * (k - 1))
            if (low > 0 or high < k - 1) and (worst is None or high - low < worst[2] - worst[1]):
                worst = ("role-aware", low, high)
    return found + ([worst] if worst else [])


def _where(layout: Layout, c: int, j: int | None = None, v: int | None = None) -> str:
    def label(kind: str, position: int, name: str) -> str:
        return f"{kind} {position}" if looks_like_data(name) else f"{kind} {position} ('{name}')"

    if j is None:
        return f"the class counts, {label('class', c + 1, layout.classes[c])}"
    where = f"{key_text(layout.attributes[j])}, {label('class', c + 1, layout.classes[c])}"
    return where if v is None else f"{where}, {label('value', v + 1, layout.values[j][v])}"


def _class_ranges(published: np.ndarray, mask: np.ndarray, layout: Layout, c: int
                  ) -> list[tuple[int, float, float]] | None:
    """The LP ranges of a suppressed class count and of every suppressed cell of its rows (coupled through the
    class count, which every row adds up to): ``(cell, low, high)``; None when no counts fit (infeasible)."""
    from scipy.optimize import linprog  # imported here: validate must not import SciPy at start-up

    cells = [c]
    rows: list[tuple[list[int], float]] = []
    for j in range(len(layout.attributes)):
        d = len(layout.values[j])
        start = layout.offsets[j] + c * d
        row = range(start, start + d)
        hidden = [i for i in row if mask[i]]
        cells += hidden
        rows.append((hidden, float(sum(int(published[i]) for i in row if not mask[i]))))
    index = {cell: position for position, cell in enumerate(cells)}
    a_eq = np.zeros((len(rows), len(cells)))
    b_eq = np.zeros(len(rows))
    for r, (hidden, known) in enumerate(rows):
        a_eq[r, 0] = 1.0  # the class count ...
        for i in hidden:
            a_eq[r, index[i]] = -1.0  # ... minus the row's suppressed cells ...
        b_eq[r] = known  # ... is what its published cells add up to
    out = []
    for position, cell in enumerate(cells):
        objective = np.zeros(len(cells))
        objective[position] = 1.0
        lowest = linprog(objective, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        if lowest.status == 2:
            return None
        highest = linprog(-objective, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs")
        low = float(lowest.fun) if lowest.status == 0 else np.nan  # nan (solver trouble) counts as too narrow
        high = np.inf if highest.status == 3 else -float(highest.fun) if highest.status == 0 else np.nan
        out.append((cell, low, high))
    return out


def audit_suppression(table_or_counts: pd.DataFrame | np.ndarray, layout: Layout, k: int,
                      mask: np.ndarray | None = None) -> list[SuppressionFinding]:
    """Audit a suppressed model from what it publishes alone: the model table (``data.parquet``: its counts and
    ``suppressed`` flags) or a published count vector with its ``mask``. Returns every suppressed cell whose
    feasible range is too narrow (empty: the suppression holds).

    The linear program (the cell-suppression audit of tau-Argus and sdcTable): the variables are the suppressed
    cells (their published 0 is ignored), each at least 0; the equalities are every published total: a
    published class count is the sum of each of its (class, attribute) rows, and a suppressed class count is
    one more variable that each of its rows adds up to. (The grand total is not published; when every class
    count is published it follows from them and adds nothing.) Each suppressed cell is minimised and maximised;
    its range must reach from 0 to at least ``k - 1`` (it contains 0 and ``k - 1`` other values).

    Attacker: knows the published table, every total, that counts are whole numbers >= 0, ``k``, and the
    release rule (:func:`apply_min_count`). Two audits: ``standard`` (no more than that) and ``role-aware``,
    for the rows of published class counts: the attacker also knows which suppressed cells are primary (in
    ``[0, k - 1]`` as an LP bound; really 1 to k - 1) and that the others are at least ``k`` (a count not below
    k) or 0. The auditor does not know which are which, so every assignment that fits the row is checked, and
    the worst counts. That is what a rule that picks the smallest other cell fails: ``total - k`` bounds the
    primary cell from above. Rows of a suppressed class count are left to the standard audit: their totals are
    unknown (they are coupled through the class count, an LP variable), and an attacker who knows which of
    their cells are non-zero learns each is at most the class count less the number of other non-zero cells.

    Independent (class, attribute) rows of a published class count are solved in closed form (the LP of one row
    with a known total; see :func:`_row_findings`); a suppressed class count and its rows are one coupled LP,
    solved with SciPy's HiGHS (imported only then)."""
    if isinstance(table_or_counts, pd.DataFrame):
        published = counts_from_table(table_or_counts, layout)
        mask = table_or_counts["suppressed"].to_numpy(dtype=bool)
    else:
        published = np.asarray(table_or_counts, dtype=np.int64)
        if mask is None:
            raise ValueError("audit_suppression: a count vector needs its mask")
        mask = np.asarray(mask, dtype=bool)
    if published.shape != (layout.size,) or mask.shape != (layout.size,):
        raise InputError("the counts to audit do not fit the model's layout")
    findings: list[SuppressionFinding] = []
    n = len(layout.classes)
    for c in range(n):
        if mask[c]:
            ranges = _class_ranges(published, mask, layout, c)
            if ranges is None:
                findings.append(SuppressionFinding(c, _where(layout, c), "inconsistent", np.nan, np.nan))
                continue
            for cell, low, high in ranges:
                if not (low <= 1e-9 and high >= k - 1 - 1e-9):
                    findings.append(SuppressionFinding(cell, _cell_where(layout, cell), "standard", low, high))
            continue
        for j in range(len(layout.attributes)):
            d = len(layout.values[j])
            start = layout.offsets[j] + c * d
            row = np.arange(start, start + d)
            hidden = row[mask[row]]
            total = int(published[c]) - int(published[row[~mask[row]]].sum())
            if total < 0 or (hidden.size == 0 and total != 0):
                findings.append(SuppressionFinding(c, _where(layout, c, j), "inconsistent", np.nan, np.nan))
                continue
            for attacker, low, high in (_row_findings(hidden.size, total, k) if hidden.size else []):
                findings += [SuppressionFinding(int(i), _where(layout, c, j, int(i - start)), attacker, low, high)
                             for i in hidden]
    return findings


def _cell_where(layout: Layout, cell: int) -> str:
    n = len(layout.classes)
    if cell < n:
        return _where(layout, cell)
    j = max(i for i, offset in enumerate(layout.offsets) if offset <= cell)
    c, v = divmod(cell - layout.offsets[j], len(layout.values[j]))
    return _where(layout, c, j, v)
