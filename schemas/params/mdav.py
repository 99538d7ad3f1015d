"""The spec's ``method`` section with ``name: mdav``: :class:`MdavParams`.

The algorithm is :mod:`ppdp.tasks.sanitize.mdav`; this module imports nothing from ``ppdp.tasks``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from ppdp.schemas.methods import MethodParams, Safer, Unit


class MdavParams(MethodParams):
    """Parameters of :class:`Mdav` (the spec's ``method`` section with ``name: mdav``)."""

    unit: ClassVar[Unit] = "equivalence_class"
    tunable: ClassVar[dict[str, Safer]] = {"k": "larger"}
    keeps_groups: ClassVar[bool] = True

    name: Literal["mdav"] = Field("mdav", description="selects MDAV microaggregation: each record published as "
                                                     "its group's centroid")
    k: int | None = Field(None, ge=2, description="smallest group size; tuned when null")
