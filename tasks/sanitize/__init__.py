"""Sanitizers: one module per method, all behind :class:`ppdp.tasks.sanitize.base.Sanitizer`, listed in
:mod:`ppdp.tasks.sanitize.registry`."""

from __future__ import annotations

from ppdp.tasks.sanitize.base import GROUP_COLUMN, Release, Sanitizer

__all__ = ["GROUP_COLUMN", "Release", "Sanitizer"]
