"""Errors a release can end with. Messages name files, columns, keys and counts, never data values:
they reach the console, Prefect's database and the audit trail."""

from __future__ import annotations


class PpdpError(Exception):
    """Base of every expected failure; ``exit_code`` is what the CLI exits with."""

    exit_code = 2
    status = "error"
    prefix = "error"  # how the CLI introduces the message


class SpecError(PpdpError):
    """The release spec is malformed or impossible."""


class InputError(PpdpError):
    """The input table cannot be read or fails its expectations."""


class PublishError(PpdpError):
    """The release cannot be written (root not writable, release folder exists, ...)."""


class ReleaseRejected(PpdpError):
    """A privacy or utility gate failed: nothing is published."""

    exit_code = 3
    status = "rejected"
    prefix = "rejected"

    def __init__(self, message: str, failed_gates: list[str] | None = None) -> None:
        super().__init__(message)
        self.failed_gates = list(failed_gates or [])


class InternalError(PpdpError):
    """ppdp failed on what it made itself (its own staged output, say), not on the user's spec or input: a bug to
    report, never blamed on the input. Nothing is published."""

    exit_code = 1
    prefix = "internal error"
