"""MDAV on a partitioned input: the capability :class:`MdavOnPartitions` that
:attr:`ppdp.tasks.sanitize.mdav.Mdav.on_partitions` names (the interface:
:class:`ppdp.tasks.sanitize.partitions.OnPartitions`).

The input is cut into parts by Mondrian's strict top cuts, decided from the partitions' merged marginal counts
(:class:`ppdp.tasks.sanitize.mondrian_partitions.MondrianOnPartitions` counts and merges them,
:func:`ppdp.tasks.sanitize.mondrian_cuts.cut_round` cuts), until every part holds at most :data:`MDAV_PART_ROWS`
records (the strict rule leaves at least k records on each side of a cut). The first pass also counts the
quasi-identifiers' values, from which the encoding is fitted once for the whole input (what one machine's
:class:`~ppdp.tasks.core.encoding.TableEncoder` fits on the whole table: categories, medians, means and standard
deviations). Then each part is finished as a task of its own that reads the partitions holding its rows (loaded as
the method receives them), keeps only its rows, encodes them with the global encoding, groups them by
:func:`ppdp.tasks.sanitize.mdav.mdav_groups` and aggregates every group as :class:`~ppdp.tasks.sanitize.mdav.Mdav`
publishes it. What leaves a part task is sanitized: per partition the positions of the part's rows and their group
numbers, and each group's published (aggregated) values. Each partition is then recoded from its share alone.

MDAV within a part is the one-machine algorithm on those rows; a group never spans two parts, so the release is
one-machine MDAV's exactly when the table fits in one part, and otherwise loses a little at the parts' borders
(``benchmarks/mdav_partitions.py`` measures SSE/SST beside one machine's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.params.mdav import MdavParams
from ppdp.schemas.reports import Roles
from ppdp.schemas.spec import ReleaseSpec
from ppdp.tasks.core.counts import Counts, column_counts, merged_column_counts
from ppdp.tasks.core.encoding import TableEncoder
from ppdp.tasks.core.encoding_counts import fit_encoder
from ppdp.tasks.core.errors import InputError, InternalError, SpecError
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.mondrian import Mondrian
from ppdp.tasks.sanitize.mondrian_cuts import Cut, apply_cuts, cut_round
from ppdp.tasks.sanitize.mondrian_partitions import MondrianDim, MondrianJob, MondrianOnPartitions
from ppdp.tasks.sanitize.partitions import Fitted, OnPartitions, partition_quasi_identifiers

MDAV_PART_ROWS = 100_000
"""An MDAV part is finished on one worker once it holds at most this many records: small enough for one task's
memory and time (:func:`~ppdp.tasks.sanitize.mdav.mdav_groups` on 100,000 records: seconds), large enough that few
groups lie at a part's border (``benchmarks/mdav_partitions.py``: a 200,000-row mixture cut in two parts, SSE/SST
1.7% above one machine's; UCI Adult cut in two parts of 16,000, 5.6% above)."""

_CUTS = MondrianOnPartitions()  # the strict top cuts' counting passes and their merge


def parts_of(dims: list[MondrianDim], rounds: list[list[Cut | None]], frame: pd.DataFrame) -> np.ndarray:
    """Each row's part after the top cuts ``rounds``."""
    codes = [d.codes(frame[d.name]) for d in dims]
    part = np.zeros(len(frame), dtype=np.int64)
    for cuts in rounds:
        part = apply_cuts(cuts, part, codes, [d.dim for d in dims])
    return part


def _group_size(sanitizer: Sanitizer) -> int | None:
    params = sanitizer.params()
    assert isinstance(params, MdavParams)
    return None if params.k is None else int(params.k)


@dataclass
class MdavState:
    k: int
    cuts: Any  # the Mondrian state holding the dimensions and the top cuts (MondrianState)
    qis: list[str]
    aggregated: list[str]  # quasi-identifiers and other attributes (what Mdav aggregates over a group)
    roles: Roles
    rounds: list[list[Cut | None]] = field(default_factory=list)  # the top cuts, round by round
    encoder: TableEncoder | None = None
    per_partition: list[np.ndarray] = field(default_factory=list)  # each partition's rows per part (last pass)
    cutting: bool = True


@dataclass
class PartJob:
    """One part finished as a task: which part, where its rows are (partition -> how many), and what MDAV needs."""

    part: int
    partitions: dict[int, int]
    dims: list[MondrianDim]
    rounds: list[list[Cut | None]]
    encoder: TableEncoder
    sanitizer: Any  # the tuned Mdav (its _publish aggregates a group as one machine does)
    roles: Roles
    aggregated: list[str]

    @property
    def rows(self) -> int:
        return sum(self.partitions.values())


@dataclass
class PartGroups:
    """A finished part (sanitized only): per partition its rows' positions and group numbers (within the part), and
    each group's published values (row g: group g)."""

    where: dict[int, tuple[np.ndarray, np.ndarray]]
    values: pd.DataFrame


@dataclass
class Share:
    """One partition's share of the fit: its rows' positions (as loaded), each row's group number over the whole
    release, and its groups' published values (``code``: each row's row in ``values``)."""

    positions: np.ndarray
    group: np.ndarray
    code: np.ndarray
    values: pd.DataFrame


class MdavOnPartitions(OnPartitions):
    """MDAV on a partitioned input (see the module docstring): parts from Mondrian's strict top cuts, each part
    grouped by MDAV in a task holding only its rows, with the encoding fitted on the whole input."""

    name: ClassVar[str] = "mdav"
    counts_after_rule: ClassVar[bool] = True  # its top cuts are Mondrian's (MondrianOnPartitions.counts_after_rule)

    def __init__(self, groups: Callable[[np.ndarray, int], np.ndarray]) -> None:
        self.groups = groups  # ppdp.tasks.sanitize.mdav.mdav_groups (given by that module, which imports this one)

    def rare_rule_skip(self, roles: Roles) -> tuple[str, ...]:
        """None: as on one table (its release shape ``rows``), every published value goes through the rule."""
        return ()

    def start(self, spec: ReleaseSpec, sanitizer: Sanitizer, roles: Roles, counts: Counts) -> MdavState:
        k = _group_size(sanitizer)
        if k is None:
            raise SpecError("mdav: k is required (set method.k)")
        qis, _ = partition_quasi_identifiers(self.name, "aggregate", roles, counts, None)
        if int(k) > counts.total:
            raise InputError(f"mdav: {counts.total} records cannot form a group of k={int(k)}")
        other = [c for c in roles.attributes if c not in qis and roles.get(c).role is Role.other]
        cuts = _CUTS.start(spec, Mondrian(k=int(k), mode="strict"), roles, counts)
        return MdavState(k=int(k), cuts=cuts, qis=qis, aggregated=[*qis, *other], roles=roles)

    def next_pass(self, state: MdavState) -> Any | None:
        if not state.cutting:
            return None
        parts = sum(1 if c is None else c.parts for c in state.rounds[-1]) if state.rounds else 1
        marginals = MondrianJob(state.cuts.dims, state.rounds, parts, False, np.ones(parts, dtype=bool), {})
        return marginals, state.qis if state.encoder is None else []

    def count(self, job: Any, frame: pd.DataFrame) -> Any:
        """Every part's marginals (Mondrian's pass), this partition's records per part, and in the first pass the
        quasi-identifiers' values with their counts."""
        marginals, columns = job
        counted = _CUTS.count(marginals, frame)
        return counted, [counted[3]], column_counts(frame, columns)

    def merge(self, parts: Sequence[Any]) -> Any:
        values = merged_column_counts([p[2] for p in parts])
        return _CUTS.merge([p[0] for p in parts]), [s for p in parts for s in p[1]], values

    def absorb(self, state: MdavState, merged: Any) -> MdavState:
        """A strict round on the parts holding more than :data:`MDAV_PART_ROWS` records; the passes end when none
        of them can be cut."""
        (_, marginals, _, sizes), per_partition, values = merged
        if state.encoder is None:  # the first pass: what the encoding needs, over the whole input
            state.encoder = fit_encoder(values, state.qis, state.roles.kinds(), state.roles.orders())
        state.per_partition = per_partition
        cuts = cut_round([d.dim for d in state.cuts.dims], marginals, sizes, state.k)
        cuts = [c if sizes[i] > MDAV_PART_ROWS else None for i, c in enumerate(cuts)]  # small parts: one task each
        if any(c is not None for c in cuts):
            state.rounds.append(cuts)
        else:
            state.cutting = False
        return state

    def fit(self, state: MdavState, sanitizer: Sanitizer) -> Fitted[Any]:
        if _group_size(sanitizer) != state.k:
            raise InternalError("mdav: the parts were cut for another k than the one fitted")
        assert state.encoder is not None
        return Fitted(model=(state, sanitizer), treatments={c: "aggregated" for c in state.aggregated})

    def local_jobs(self, fitted: Fitted[Any]) -> list[PartJob]:
        """One job per part: where its rows are."""
        state, sanitizer = fitted.model
        parts = max((len(s) for s in state.per_partition), default=0)
        where: list[dict[int, int]] = [{} for _ in range(parts)]
        for i, sizes in enumerate(state.per_partition):
            for p in np.flatnonzero(sizes):
                where[p][i] = int(sizes[p])
        return [PartJob(part=p, partitions=w, dims=state.cuts.dims, rounds=state.rounds, encoder=state.encoder,
                        sanitizer=sanitizer, roles=state.roles, aggregated=state.aggregated)
                for p, w in enumerate(where) if w]

    def finish_rows(self, job: PartJob, load: Callable[[int], pd.DataFrame]) -> PartGroups:
        """One part: its rows kept from the partitions that hold them, grouped by MDAV in the global encoding, and
        every group's published values (:meth:`ppdp.tasks.sanitize.mdav.Mdav._publish`)."""
        kept, where = [], {}
        for i, expected in sorted(job.partitions.items()):
            frame = load(i)
            positions = np.flatnonzero(parts_of(job.dims, job.rounds, frame) == job.part)
            if len(positions) != expected:
                raise InputError("mdav: a partition changed since it was counted (a part's rows differ)")
            columns = [c for c in job.aggregated if c in frame.columns]
            kept.append(frame[columns].iloc[positions])
            where[i] = positions
        rows = pd.concat(kept, ignore_index=True)
        k = _group_size(job.sanitizer)
        assert k is not None  # fitted with one
        if len(rows) < k:
            raise InternalError(f"mdav: a part of {len(rows)} records is smaller than k={k}")
        labels = self.groups(job.encoder.transform(rows), k)
        published = job.sanitizer._publish(rows, job.roles, labels).frame
        first = np.unique(labels, return_index=True)[1]  # group g's first row (labels dense 0..G-1)
        out, at = {}, 0
        for i, positions in where.items():
            out[i] = (positions, labels[at:at + len(positions)])
            at += len(positions)
        return PartGroups(where=out, values=published.iloc[first].reset_index(drop=True))

    def finish_local(self, fitted: Fitted[Any], results: list[PartGroups]) -> Fitted[Any]:
        """The parts' groups numbered over the whole release (in part order), and each partition's share."""
        n = len(fitted.model[0].per_partition)
        offsets = np.cumsum([0] + [len(r.values) for r in results])
        values = pd.concat([r.values for r in results], ignore_index=True) if results else pd.DataFrame()
        shares = []
        for i in range(n):
            pieces = [(pos, groups + offsets[j]) for j, r in enumerate(results) if i in r.where
                      for pos, groups in [r.where[i]]]
            positions = np.concatenate([p for p, _ in pieces]) if pieces else np.zeros(0, dtype=np.int64)
            group = np.concatenate([g for _, g in pieces]) if pieces else np.zeros(0, dtype=np.int64)
            present, code = np.unique(group, return_inverse=True)
            shares.append(Share(positions=positions, group=group, code=code.reshape(-1),
                                values=values.iloc[present].reset_index(drop=True)))
        return Fitted(model=shares, treatments=fitted.treatments, groups=int(offsets[-1]))

    def partition_jobs(self, fitted: Fitted[Any], allotted: list[Any]) -> list[Any]:
        """Each partition's number: its recode takes its own share of the fit."""
        return list(range(len(allotted)))

    def recode(self, fitted: Fitted[Any], frame: pd.DataFrame, allotted: int) -> pd.DataFrame:
        """The partition's rows with their groups' published values in the aggregated columns; the others kept."""
        share: Share = fitted.model[allotted]
        order = np.full(len(frame), -1, dtype=np.int64)
        order[share.positions] = np.arange(len(share.positions))
        if len(share.positions) != len(frame) or (order < 0).any():
            raise InputError("mdav: a partition changed since it was counted (a row has no group)")
        out = frame.copy()
        rows = share.code[order]
        for c in share.values.columns:
            out[c] = share.values[c].iloc[rows].array
        return out
