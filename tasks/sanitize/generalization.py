"""Full-domain generalization with record suppression: the node of a generalization lattice that meets every
privacy gate and is best under one of ARX's utility measures.

Each quasi-identifier has a generalization hierarchy (:class:`ppdp.tasks.core.hierarchy.Hierarchy`: a value, its
ever coarser labels, ``*``); a *node* of the lattice is one level per quasi-identifier, and publishing a node
replaces every value by its label at that level (full-domain generalization: Samarati, "Protecting respondents'
identities in microdata release", IEEE TKDE 13(6), 2001, sections 3-4; Sweeney, "Achieving k-anonymity privacy
protection using generalization and suppression", IJUFKS 10(5), 2002). Records whose class fails a gate are
suppressed, up to ``suppression_limit`` of the records (ARX's record suppression; Prasser, Kohlmayer, Kuhn,
"The ARX data anonymization tool", Handbook of Big Data Privacy, 2020, section 3).

The utility measures are ARX's (arx-deidentifier/arx, ``src/main/org/deidentifier/arx/metric/v2``, read at
commit aacd487; ARX's defaults: generalization and suppression weighted equally, gs-factor 0.5, attribute
weights equal). ``n`` is the number of records, ``s`` the records suppressed, a class's ``c`` its records:

* ``loss`` (``MetricMDNMLoss``, ARX's "Loss": Iyengar's generalized information loss, "Transforming data to
  satisfy privacy constraints", KDD 2002, with suppression): per quasi-identifier, every record not suppressed costs
  the *share* of its label (``DomainShareMaterialized``: hierarchy rows with that label at that level / all
  hierarchy rows, so ``1/size`` at level 0 and 1 at ``*``), every suppressed record costs 1; the sum ``a`` is
  normalized to ``(a - n/size) / (n - n/size)``, clipped at 0 and cut to 10 decimals (``Metric.round``); the
  attributes are aggregated by ARX's default *geometric mean* ``prod(v_i + 1)^(1/d) - 1``
  (``ILMultiDimensionalGeometricMean``). ``size`` counts every row of the hierarchy, values absent from the
  data included.
* ``discernibility`` (``MetricSDNMDiscernability``, non-monotonic): ``sum c^2`` over classes kept plus ``n``
  per suppressed record.
* ``aecs`` (``MetricSDAECS``): ``n / (classes kept + 1 if any record is suppressed)``.
* ``precision`` (``MetricMDNMPrecision``, non-monotonic): per quasi-identifier ``((n - s) * level / height +
  s) / n``, arithmetic mean.
* ``entropy`` (``MetricMDNUNMEntropyPrecomputed``, non-uniform entropy, non-monotonic, ARX's default *sum*
  aggregate): per quasi-identifier ``-sum_v a_v log2(a_v / b_v) - sum_u c_u log2(c_u / s)``: ``a_v`` records
  holding value ``v``, ``b_v`` records sharing ``v``'s label at the node's level, ``c_u`` suppressed records
  whose label at that level is ``u``; cut to 10 decimals.

Every measure is smaller = better. The search (:func:`search_lattice`) visits nodes in order of a lower bound
of the measure and stops when the bound exceeds the best node found; see its Notes for the pruning and for how
it relates to ARX's Flash (Kohlmayer, Prasser, Eckert, Kemper, Kuhn, "Flash: efficient, stable and optimal
k-anonymity", PASSAT/SocialCom 2012). Ties go to the node with the fewest levels in total (as
``AbstractAlgorithm.trackOptimum``), then to the first in lattice order.

Suppressed records are published, with every quasi-identifier ``*`` (as ARX writes them); they form one
equivalence class of the published table, which must meet the gates too: see :func:`evaluate_node`.
"""

from __future__ import annotations

import time
from typing import ClassVar, Literal, cast

import numpy as np
import pandas as pd

from ppdp.schemas.base import Role
from ppdp.schemas.methods import Domain, Lattice, MethodParams, Treatment
from ppdp.schemas.params.generalization import GeneralizationParams
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.tasks.core.errors import InputError, ReleaseRejected, SpecError
from ppdp.tasks.core.groups import equivalence_class_ids
from ppdp.tasks.core.hierarchy import Hierarchy, hierarchies_for
from ppdp.tasks.core.labels import key_text
from ppdp.tasks.core.suppression import local_suppression
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.generalization_nodes import NodeEvaluation, Problem, evaluate_node, prepare, publish_labels
from ppdp.tasks.sanitize.generalization_partitions import GeneralizationOnPartitions
from ppdp.tasks.sanitize.generalization_search import (
    MAX_NODES,
    MEASURES,
    lattice_grid,
    lattice_size,
    node_measures,
    search_lattice,
)
from ppdp.tasks.sanitize.partitions import OnPartitions

__all__ = [
    "MAX_NODES",
    "MEASURES",
    "Generalization",
    "NodeEvaluation",
    "Problem",
    "evaluate_node",
    "lattice_grid",
    "lattice_size",
    "node_measures",
    "prepare",
    "search_lattice",
]



# -- the sanitizer -----------------------------------------------------------------------------------------------
class Generalization(Sanitizer):
    """Full-domain generalization with record suppression (privacy unit ``equivalence_class``).

    Every quasi-identifier is replaced by its hierarchy label at the node's level (readable strings:
    ``[40-50)``, ``130**``, ``*``); records of classes that fail a gate are suppressed, published with every
    quasi-identifier ``*`` (one class of their own, which meets the gates too: see :func:`evaluate_node`).
    Sensitive attributes, the class and other attributes are published unchanged, as ARX publishes
    insensitive attributes: a column tagged ``other`` is taken not to identify anyone (tag it a
    quasi-identifier to generalize it); direct identifiers never reach a sanitizer (the flow drops or
    pseudonymizes them first).

    With ``levels`` null the node is searched (:meth:`search`, :func:`search_lattice`): the one of least
    ``measure`` among those that meet every gate with at most ``suppression_limit`` of the records suppressed
    (a lattice of more than :data:`MAX_NODES` nodes is refused up front). With ``levels`` given, that node is
    published under the same rule: its failing classes are suppressed only while that takes at most
    ``suppression_limit`` of the records, and a node that needs more is refused (:class:`ReleaseRejected`, fail
    closed), never published with more suppressed. The records suppressed are counted in ``suppressed_cells``.

    Parameters
    ----------
    k, l, t : optional
        Gates: smallest class; distinct sensitive values per class (every sensitive column); largest EMD between
        a class and the table (every sensitive column; equal distance for text, ordered distance for numbers).
        At least one is needed; l and t need a sensitive column.
    suppression_limit : float
        Share of records that may be suppressed, in [0, 1).
    measure : {"loss", "discernibility", "aecs", "precision", "entropy"}
        ARX's utility measures (module docstring).
    hierarchies : dict, optional
        Column -> :data:`ppdp.schemas.hierarchy.HierarchySpec`; other quasi-identifiers get automatic ones.
    levels : dict, optional
        Quasi-identifier -> level.
    suppression : {"records", "cells"}
        How the records of failing classes are treated at the chosen node: ``records`` publishes them with every
        quasi-identifier ``*``; ``cells`` runs :func:`ppdp.tasks.core.suppression.local_suppression` instead,
        which suppresses single cells (fewer than record suppression takes: never more) until every class,
        ``*`` cells being a value, holds at least k records. The node is chosen as with record suppression (the
        limit bounds the records suppressed there), and its measures describe that node; only k is supported.
    seed : int
        Seed of the published row order (the method itself is deterministic).
    """

    name: ClassVar[str] = "generalization"
    description: ClassVar[str] = ("full-domain generalization: quasi-identifiers coarsened along hierarchies, the "
                                  "level of each chosen by a lattice search")
    Params: ClassVar[type[MethodParams]] = GeneralizationParams
    randomized: ClassVar[bool] = False
    shape: ClassVar[str] = "every_row"  # a recoding of every input row
    on_partitions: ClassVar[OnPartitions | None] = GeneralizationOnPartitions()

    k: int | None
    l: int | None
    t: float | None
    suppression_limit: float
    measure: str
    hierarchies: dict | None
    levels: dict[str, int] | None
    suppression: Literal["records", "cells"]

    # -- setup ------------------------------------------------------------------------------------------------
    def _setup(self, frame: pd.DataFrame, roles: Roles) -> tuple[GeneralizationParams, list[str], list[Hierarchy],
                                                                 list[np.ndarray]]:
        """The parameters, the quasi-identifiers, their validated hierarchies and each cell's hierarchy row."""
        params = self.params()
        assert isinstance(params, GeneralizationParams)
        qis = [q for q in roles.quasi_identifiers if q in frame.columns and q not in roles.identifiers]
        if not qis:
            raise InputError("generalization: no quasi-identifier to generalize")
        present = roles.model_copy(update={"columns": [c for c in roles.columns if c.name in qis
                                                       or c.role is not Role.quasi_identifier]})
        made = hierarchies_for(frame, present, dict(params.hierarchies or {}))
        hierarchies = [made[q] for q in qis]
        codes = [h.codes(frame[q], self._position(frame, roles, q)) for q, h in zip(qis, hierarchies, strict=True)]
        return params, qis, hierarchies, codes

    @staticmethod
    def _position(frame: pd.DataFrame, roles: Roles, name: str) -> int:
        tag = roles.get(name)
        # column names are unique: get_loc gives an int
        return int(tag.position) + 1 if tag.position is not None else int(cast(int, frame.columns.get_loc(name))) + 1

    @staticmethod
    def _sensitive(frame: pd.DataFrame, roles: Roles) -> list[str]:
        return [s for s in roles.names(Role.sensitive) if s in frame.columns]

    def _problem(self, frame: pd.DataFrame, roles: Roles, *, search: bool) -> tuple[
            GeneralizationParams, list[str], list[Hierarchy], list[np.ndarray], Problem]:
        """The parameters, quasi-identifiers, hierarchies, codes and the prepared problem; with ``search`` a
        lattice too large to search is refused (:func:`lattice_size`) before the table is prepared."""
        params = self.params()
        assert isinstance(params, GeneralizationParams)
        if params.k is None and params.l is None and params.t is None:
            raise SpecError("generalization: no privacy gate: set k (or l, t) in the method or the privacy section")
        if (params.l is not None or params.t is not None) and not self._sensitive(frame, roles):
            gate = "l" if params.l is not None else "t"
            raise SpecError(f"generalization: {gate} needs a sensitive column (declare one with role sensitive)")
        params, qis, hierarchies, codes = self._setup(frame, roles)
        if search:
            lattice_size([h.height for h in hierarchies])
        sensitive = {s: frame[s] for s in self._sensitive(frame, roles)} if (
            params.l is not None or params.t is not None) else {}
        problem = prepare(codes, hierarchies, sensitive=sensitive, k=params.k, l=params.l, t=params.t,
                          suppression_limit=params.suppression_limit)
        return params, qis, hierarchies, codes, problem

    def _gates(self, params: GeneralizationParams) -> str:
        parts = [f"{name} = {value:g}" for name, value in (("k", params.k), ("l", params.l), ("t", params.t))
                 if value is not None]
        return ", ".join(parts)

    def _no_node(self, params: GeneralizationParams) -> ReleaseRejected:
        share = f"{params.suppression_limit * 100:.4g}%"
        gates = [name for name in ("k", "l", "t") if getattr(params, name) is not None]
        return ReleaseRejected(f"generalization: no node of the lattice meets {self._gates(params)} with at most "
                               f"{share} of the records suppressed", failed_gates=gates)

    # -- tuning -----------------------------------------------------------------------------------------------
    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        _, qis, hierarchies, _ = self._setup(frame, roles)
        return {"levels": Lattice(max_level={q: h.height for q, h in zip(qis, hierarchies, strict=True)})}

    def search(self, frame: pd.DataFrame, roles: Roles) -> LatticeSearch:
        """Search the lattice on ``frame`` for the node of least ``measure`` that meets every gate with at most
        ``suppression_limit`` of the records suppressed (:func:`search_lattice`). ``levels`` is ignored.

        Raises
        ------
        ReleaseRejected
            No node meets the gates (names the gates and the limit).
        InputError
            The lattice has more than :data:`MAX_NODES` nodes (refused before any work, :func:`lattice_size`).
        """
        started = time.perf_counter()
        if len(frame) == 0:
            raise InputError(f"{self.name}: the input has no rows")
        params, qis, _, _, problem = self._problem(frame.reset_index(drop=True), roles, search=True)
        ev, measures, counts = search_lattice(problem, params.measure)
        if ev is None:
            raise self._no_node(params)
        return LatticeSearch(node={str(q): int(v) for q, v in zip(qis, ev.node, strict=True)},
                             measure=str(params.measure), measures={str(m): float(v) for m, v in measures.items()},
                             checked=int(counts["checked"]), visited=int(counts["visited"]),
                             total=int(counts["total"]), classes=int(ev.classes),
                             suppressed_rows=int(ev.suppressed_rows), seconds=float(time.perf_counter() - started))

    # -- the work ---------------------------------------------------------------------------------------------
    def _node(self, params: GeneralizationParams, qis: list[str], hierarchies: list[Hierarchy]) -> tuple[int, ...]:
        levels = dict(params.levels or {})
        unknown = [c for c in levels if c not in qis]
        if unknown:
            raise SpecError(f"generalization: levels names column {key_text(unknown[0])}, which is not a "
                            "quasi-identifier of the input")
        node = []
        for q, h in zip(qis, hierarchies, strict=True):
            if q not in levels:
                raise SpecError(f"generalization: levels gives no level for quasi-identifier {key_text(q)}")
            if levels[q] > h.height:
                raise SpecError(f"generalization: level {levels[q]} of {key_text(q)} is above its hierarchy's "
                                f"top level {h.height}")
            node.append(int(levels[q]))
        return tuple(node)

    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        params, qis, hierarchies, codes, problem = self._problem(frame, roles, search=self.levels is None)
        if params.levels is None:
            found, _, _ = search_lattice(problem, params.measure)
            if found is None:
                raise self._no_node(params)
            node = found.node
        else:
            node = self._node(params, qis, hierarchies)
        ev = evaluate_node(problem, node, strict=True)
        if not ev.feasible or not ev.passes:  # fail closed: never more suppression than the limit allows
            if params.levels is None:
                raise self._no_node(params)
            raise ReleaseRejected(f"generalization: the node given in levels does not meet {self._gates(params)} "
                                  f"with at most {params.suppression_limit:.0%} of the records suppressed",
                                  failed_gates=[g for g in ("k", "l", "t") if getattr(params, g) is not None])
        if params.suppression == "cells":
            return self._local(frame, params, qis, hierarchies, codes, node)
        record_class = ev.row_class[problem.inverse]
        pool = ev.suppressed[record_class]
        for donor, count in ev.partial:
            pool[np.flatnonzero(record_class == donor)[-count:]] = True
        out = frame.copy()
        treatments: dict[str, Treatment] = {c: "kept" for c in frame.columns}
        for q, h, c, level in zip(qis, hierarchies, codes, node, strict=True):
            out[q] = publish_labels(h, c, level, pool)
            treatments[q] = "generalized"
        group = np.where(pool, len(ev.sizes), record_class)
        s = int(pool.sum())
        return Release(frame=out, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(len(frame), dtype=np.int64), group=group, input_group=group.copy(),
                       suppressed_cells={q: s for q in qis} if s else {}, suppressed_rows=0)

    def _local(self, frame: pd.DataFrame, params: GeneralizationParams, qis: list[str], hierarchies: list[Hierarchy],
               codes: list[np.ndarray], node: tuple[int, ...]) -> Release:
        """The node's labels with local (cell) suppression instead of record suppression (k only)."""
        if params.k is None or params.l is not None or params.t is not None:
            raise SpecError("generalization: suppression: cells supports k alone (set suppression: records for l "
                            "or t)")
        columns: list[np.ndarray] = []
        star: list[int | None] = []
        for h, c, level in zip(hierarchies, codes, node, strict=True):
            if level == h.height:  # every cell, missing ones too (even with no value at all), is published '*'
                columns.append(np.zeros(len(c), dtype=np.int64))
                star.append(0)
                continue
            present = c >= 0  # missing cells (-1) are a value of their own below the top
            ids = np.full(len(c), -1, dtype=np.int64)
            ids[present] = h.level_codes(level)[c[present]]
            columns.append(ids)
            star.append(None)
        found = local_suppression(np.column_stack(columns), int(params.k), star=star)
        assert found is not None  # no cell budget given
        out = frame.copy()
        treatments: dict[str, Treatment] = {c: "kept" for c in frame.columns}
        cells: dict[str, int] = {}
        for j, (q, h, c, level) in enumerate(zip(qis, hierarchies, codes, node, strict=True)):
            out[q] = publish_labels(h, c, level, found.mask[:, j])
            treatments[q] = "generalized"
            if int(found.mask[:, j].sum()):
                cells[q] = int(found.mask[:, j].sum())
        group = equivalence_class_ids(out, qis)
        return Release(frame=out, unit="equivalence_class", treatments=treatments,
                       row_source=np.arange(len(frame), dtype=np.int64), group=group, input_group=group.copy(),
                       suppressed_cells=cells, suppressed_rows=0)

