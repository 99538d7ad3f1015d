"""Every method's parameter model, and the spec's ``method`` section: their discriminated union.

One module per method (``ppdp.schemas.params.<method>``) holds its :class:`~ppdp.schemas.methods.MethodParams`
subclass; the sanitizer of the same name in :mod:`ppdp.tasks.sanitize` uses it as its ``Params``. Adding a method
means its parameter module, one line in :data:`MethodSpec` and :data:`PARAMS`, its algorithm module and its line in
the registry (a test checks that the registry and :data:`PARAMS` name the same methods and models). This package
imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import Annotated, Union, get_args

from pydantic import Field

from ppdp.schemas.methods import MethodParams
from ppdp.schemas.params.condensation import CondensationParams
from ppdp.schemas.params.dmpd import DmpdParams
from ppdp.schemas.params.dp_synthesizer import DpSynthesizerParams
from ppdp.schemas.params.generalization import GeneralizationParams
from ppdp.schemas.params.mdav import MdavParams
from ppdp.schemas.params.mondrian import MondrianParams
from ppdp.schemas.params.noise import NoiseParams
from ppdp.schemas.params.perturbation_tree import PerturbationTreeParams
from ppdp.schemas.params.pram import PramParams
from ppdp.schemas.params.rank_swap import RankSwapParams
from ppdp.schemas.params.sample_generation import SampleGenerationParams
from ppdp.schemas.params.sap import SapParams
from ppdp.schemas.params.svd import SvdParams
from ppdp.schemas.params.top_bottom_coding import TopBottomCodingParams
from ppdp.schemas.params.uma import UmaParams

__all__ = [
    "PARAMS",
    "CondensationParams",
    "DmpdParams",
    "DpSynthesizerParams",
    "GeneralizationParams",
    "MdavParams",
    "MethodSpec",
    "MondrianParams",
    "NoiseParams",
    "PerturbationTreeParams",
    "PramParams",
    "RankSwapParams",
    "SampleGenerationParams",
    "SapParams",
    "SvdParams",
    "TopBottomCodingParams",
    "UmaParams",
]

MethodSpec = Annotated[  # the order is the JSON Schema's order: keep it sorted by method name
    Union[  # noqa: UP007 (one member a line)
        CondensationParams,
        DmpdParams,
        DpSynthesizerParams,
        GeneralizationParams,
        MdavParams,
        MondrianParams,
        NoiseParams,
        PerturbationTreeParams,
        PramParams,
        RankSwapParams,
        SampleGenerationParams,
        SapParams,
        SvdParams,
        TopBottomCodingParams,
        UmaParams,
    ],
    Field(discriminator="name"),
]
"""The spec's ``method`` section: one parameter model per method, told apart by ``name``."""

PARAMS: dict[str, type[MethodParams]] = {
    cls.model_fields["name"].default: cls for cls in get_args(get_args(MethodSpec)[0])
}
"""Method name -> its parameter model (the members of :data:`MethodSpec`, in its order)."""
