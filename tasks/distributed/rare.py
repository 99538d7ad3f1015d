"""The rare-value rule on a partitioned input: decided once from the merged counts of pass 1, applied to every
partition alike, with the decisions of :func:`ppdp.tasks.rare.merge_rare_categories` on the whole table (the same
columns in the same order, the class first; the same actions; the same token; counts after rows with a rare class
label are left out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdp.schemas.reports import ColumnTag, RareCategoryColumn, RareCategoryReport, Roles
from ppdp.schemas.spec import ColumnKind, Role
from ppdp.tasks.core.errors import InputError
from ppdp.tasks.distributed.inputs import Counts
from ppdp.tasks.rare import categorical_columns, recode_adjacent, suppress_cells, token_for, token_possible, with_token


@dataclass
class RareAction:
    """One column's action: ``merged`` (into ``token``), ``suppressed``, ``merged_adjacent`` (``counts`` and
    ``order`` say where each rare value goes) or ``rows_removed`` (the class: rows with a rare label left out)."""

    column: str
    action: str
    rare: pd.Index
    token: str | None = None
    counts: pd.Series | None = None
    order: list[str] | None = None


@dataclass
class RarePlan:
    k: int
    actions: list[RareAction]
    report: RareCategoryReport


def _columns(roles: Roles, counted: Counts, skip: tuple[str, ...]) -> list[ColumnTag]:
    """The single-table rule's columns (:func:`categorical_columns` reads the names only), in its order."""
    return [t for t in categorical_columns(pd.DataFrame(columns=list(counted.columns)), roles) if t.name not in skip]


def rare_plan(counts: Counts, roles: Roles, k: int, skip: tuple[str, ...] = ()) -> RarePlan:
    """The rule's decisions for every column from the input's counts (see the module docstring)."""
    if k < 1:
        raise ValueError(f"the rare-value rule needs k >= 1, got {k}")
    total = counts.total
    if k > total:
        raise InputError(f"privacy.k={k} is larger than the table ({total} rows): no value can be published")
    tags = _columns(roles, counts, skip)
    removed: pd.Index | None = None
    cls = roles.class_column
    actions: list[RareAction] = []
    records: list[RareCategoryColumn] = []
    rows_out = total
    for tag in tags:
        vc = counts.columns[tag.name]
        if removed is not None and tag.name != cls and tag.name in counts.by_class:
            joint = counts.by_class[tag.name]
            kept = joint[~joint["class"].isin(removed)]
            counted = kept.groupby("value", dropna=True, sort=False)["n"].sum()
        else:
            counted = vc.as_counts()
        counted = counted[counted.to_numpy() > 0]
        rare = pd.Index(counted.index[counted.to_numpy() < k])
        if len(rare) == 0:
            continue
        cells = int(counted[counted.index.isin(rare)].sum())
        dtype_probe = vc.series()
        action: RareAction
        if tag.kind is ColumnKind.ordinal and tag.order and tag.role is not Role.class_:
            order = list(tag.order)
            probe = recode_adjacent(pd.Series(rare, dtype=object), counted, rare, order, k)
            action = RareAction(tag.name, "merged_adjacent" if probe is not None and probe.action == "merged_adjacent"
                                else "suppressed", rare, counts=counted, order=order)
        elif token_possible(dtype_probe) and cells >= k:
            action = RareAction(tag.name, "merged", rare, token=token_for(pd.Index(vc.values.dropna())))
        elif tag.role is Role.class_:
            action = RareAction(tag.name, "rows_removed", rare)
            removed = rare
            rows_out -= cells
        else:
            action = RareAction(tag.name, "suppressed", rare)
        actions.append(action)
        records.append(RareCategoryColumn(position=tag.position, name=tag.name, action=action.action,
                                          values_merged=len(rare), cells_affected=cells, token=action.token,
                                          counted_on="input"))
    report = RareCategoryReport(k=k, columns_checked=len(tags), columns=records, rows_in=total, rows_out=rows_out)
    return RarePlan(k=k, actions=actions, report=report)


def apply_rare(frame: pd.DataFrame, plan: RarePlan) -> pd.DataFrame:
    """One partition with the plan's actions applied (rows with a rare class label left out)."""
    out = frame.copy()
    for a in plan.actions:
        series = out[a.column]
        mask = series.isin(a.rare).to_numpy()
        if a.action == "rows_removed":
            out = out.iloc[np.flatnonzero(~mask)]
            continue
        if not mask.any():
            continue
        if a.action == "merged":
            assert a.token is not None
            out[a.column] = with_token(series, mask, a.token).array
        elif a.action == "merged_adjacent":
            assert a.counts is not None and a.order is not None
            outcome = recode_adjacent(series, a.counts, a.rare, a.order, plan.k)
            out[a.column] = (outcome.series if outcome is not None else suppress_cells(series, mask)).array
        else:
            out[a.column] = suppress_cells(series, mask).array
    return out.reset_index(drop=True)
