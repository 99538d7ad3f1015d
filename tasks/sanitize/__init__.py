"""Sanitizers: one module per method, all behind :class:`tasks.sanitize.base.Sanitizer`, found by name here."""

from __future__ import annotations

import time

from ppdp.schemas.reports import MethodRecord
from ppdp.schemas.spec import MethodSpec
from ppdp.tasks.sanitize.base import SanitizedTable, Sanitizer
from ppdp.tasks.sanitize.condensation import Condensation, approximate_gcd

REGISTRY: dict[str, type[Sanitizer]] = {
    Condensation.name: Condensation,
}


def build_sanitizer(method: MethodSpec, *, k: int | None, seed: int, threshold: int | None = None) -> Sanitizer:
    """The sanitizer a spec's ``method`` section describes, with the (tuned) privacy parameter ``k``."""
    cls = REGISTRY[method.name]
    params = method.params.model_dump()
    params["k"] = k
    kwargs = {name: value for name, value in params.items() if name in cls.param_names()}
    if "variant" in cls.param_names():
        kwargs["variant"] = method.variant
    if "threshold" in cls.param_names():
        kwargs["threshold"] = threshold
    return cls(**kwargs, seed=seed)


def run_with_record(sanitizer: Sanitizer, frame, roles) -> tuple[SanitizedTable, MethodRecord]:
    """Sanitize and describe the run: the method as it actually ran (every parameter), groups, seconds."""
    started = time.perf_counter()
    release = sanitizer.sanitize(frame, roles)
    params = dict(sanitizer.get_params())
    return release, MethodRecord(
        name=sanitizer.name,
        variant=params.pop("variant", None),
        params=params,
        release_kind=release.release_kind,
        groups=int(release.group_sizes.size),
        seconds=time.perf_counter() - started,
    )


__all__ = ["REGISTRY", "Condensation", "SanitizedTable", "Sanitizer", "approximate_gcd", "build_sanitizer",
           "run_with_record"]
