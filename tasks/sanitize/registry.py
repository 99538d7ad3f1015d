"""The sanitizer registry: one line per method. The spec's ``method`` section is the discriminated union of the
methods' parameter models (:data:`ppdp.schemas.params.MethodSpec`, re-exported here), so adding a method means its
parameter module in :mod:`ppdp.schemas.params` (and its line there), its algorithm module, one line here, and its
tests (which check that this registry and :data:`ppdp.schemas.params.PARAMS` name the same methods and models)."""

from __future__ import annotations

import difflib
import time
from importlib import import_module

import numpy as np
import pandas as pd

from ppdp.schemas.methods import MethodParams
from ppdp.schemas.params import MethodSpec  # noqa: F401 (re-exported: the spec's method union)
from ppdp.schemas.reports import MethodRecord, Roles
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.sanitize.base import Release, Sanitizer
from ppdp.tasks.sanitize.keeping import Kept

METHODS: tuple[str, ...] = (
    "ppdp.tasks.sanitize.condensation:Condensation",
    "ppdp.tasks.sanitize.dmpd:Dmpd",
    "ppdp.tasks.sanitize.dp_synthesizer:DpSynthesizer",
    "ppdp.tasks.sanitize.generalization:Generalization",
    "ppdp.tasks.sanitize.mdav:Mdav",
    "ppdp.tasks.sanitize.mondrian:Mondrian",
    "ppdp.tasks.sanitize.noise:Noise",
    "ppdp.tasks.sanitize.perturbation_tree:PerturbationTree",
    "ppdp.tasks.sanitize.pram:Pram",
    "ppdp.tasks.sanitize.rank_swap:RankSwap",
    "ppdp.tasks.sanitize.sample_generation:SampleGeneration",
    "ppdp.tasks.sanitize.sap:Sap",
    "ppdp.tasks.sanitize.svd:Svd",
    "ppdp.tasks.sanitize.top_bottom_coding:TopBottomCoding",
    "ppdp.tasks.sanitize.uma:Uma",
)


def _load(path: str) -> type[Sanitizer]:
    module, _, name = path.partition(":")
    return getattr(import_module(module), name)


REGISTRY: dict[str, type[Sanitizer]] = {cls.name: cls for cls in map(_load, METHODS)}


def method_class(name: str) -> type[Sanitizer]:
    try:
        return REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), sorted(REGISTRY), n=1)
        if close:
            raise SpecError(f"unknown method {name!r}; did you mean {close[0]!r}?") from None
        raise SpecError(f"unknown method {name!r}: expected one of {', '.join(sorted(REGISTRY))}") from None


def build_sanitizer(params: MethodParams, seed: int = 0) -> Sanitizer:
    """The sanitizer a spec's ``method`` section describes."""
    return method_class(params.name).from_params(params, seed=seed)


def run_method(sanitizer: Sanitizer, frame: pd.DataFrame, roles: Roles, order_key: bytes | None = None,
               previous: Kept | None = None) -> tuple[Release, MethodRecord]:
    """Sanitize and describe the run: (release, the method as it actually ran: every parameter, the unit,
    groups, suppression, seconds, and with ``previous`` the records that kept their group). ``order_key`` and
    ``previous``: see :meth:`Sanitizer.sanitize`."""
    started = time.perf_counter()
    release = sanitizer.sanitize(frame, roles, order_key=order_key, previous=previous)
    params = {**sanitizer.params().model_dump(mode="json", exclude={"name"}), "seed": int(sanitizer.seed)}
    groups = None if release.group is None else int(np.unique(release.group).size)
    return release, MethodRecord(name=sanitizer.name, params=params, unit=release.unit, groups=groups,
                                 suppressed_rows=release.suppressed_rows,
                                 suppressed_cells=dict(release.suppressed_cells),
                                 seconds=time.perf_counter() - started,
                                 kept_members=release.kept_members if previous is not None else None)
