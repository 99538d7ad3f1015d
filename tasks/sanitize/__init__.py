"""Sanitizers: one module per method, all behind :class:`tasks.sanitize.base.Sanitizer`, found by name here."""

from __future__ import annotations

from schemas.spec import MethodSpec
from tasks.sanitize.base import SanitizedTable, Sanitizer
from tasks.sanitize.condensation import Condensation, approximate_gcd

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


__all__ = ["REGISTRY", "Condensation", "SanitizedTable", "Sanitizer", "approximate_gcd", "build_sanitizer"]
