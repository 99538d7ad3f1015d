"""The class-column check of every method that needs a class (``Sanitizer.needs_class``): made once, by
:meth:`ppdp.tasks.sanitize.base.Sanitizer.sanitize`, before the method runs."""

from __future__ import annotations

import pandas as pd

from ppdp.schemas.reports import Roles
from ppdp.tasks.core.errors import InputError

__all__ = ["require_class"]


def require_class(frame: pd.DataFrame, roles: Roles, method: str) -> str:
    """The class column's name; :class:`InputError` (naming ``method``) when no column has the role class, the
    frame lacks it, or a row has no class."""
    cls = roles.class_column
    if cls is None or cls not in frame.columns:
        raise InputError(f"{method}: needs a class column (declare one with role class)")
    missing = int(frame[cls].isna().sum())
    if missing:
        raise InputError(f"{method}: class column '{cls}' has {missing} missing value(s); every row needs a class")
    return cls
