"""The Python API: sanitize and validate DataFrames in a notebook, without writing a spec or role objects.

>>> import ppdp
>>> release = ppdp.sanitize(frame, method="mdav", quasi_identifiers=["age", "zip"], k=5)
>>> release.frame            # the sanitized rows (shuffled)
>>> report = ppdp.validate(release, original=frame, quasi_identifiers=["age", "zip"], k=5)
>>> report.passed, [(c.name, c.value) for c in report.claims]
>>> ppdp.validate(frame, quasi_identifiers=["age", "zip"], k=5).k      # any table
>>> ppdp.validate_release("releases/census/20261126T...")              # a published release's claims

``sanitize`` runs only the method: the release flow (``ppdp run``) adds the input suite, tagging, identifier
protection, the rare-value rule, tuning, the gates and the audited publication. ``ppdp.release(spec_path)`` and
``ppdp.tune(spec_path)`` run those flows from a spec, like ``ppdp run`` and ``ppdp tune`` (``runner="dask"``: on a
local Dask cluster); ``ppdp.federate(spec_path)`` runs a federated naive Bayes release like ``ppdp federate``;
``ppdp.compare(spec_path)`` compares every applicable method on the spec's data like ``ppdp compare``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import pandas as pd

from ppdp.flows.settings import apply_settings
from ppdp.schemas.base import ColumnKind, Role
from ppdp.schemas.privacy import AcceptBelowFloor, PrivacyPolicy, PrivacyThresholds
from ppdp.schemas.release import DpRelease, PartsRelease, Release
from ppdp.schemas.reports import ColumnTag, PrivacyReport, RareCategoryReport, Roles
from ppdp.schemas.spec import ColumnSpec, IdentifierPolicy, TaggingSpec
from ppdp.tasks import compare as comparing
from ppdp.tasks import rare as rare_rule
from ppdp.tasks.compare_report import write_outputs
from ppdp.tasks.core.threads import native_threads_limited
from ppdp.tasks.gates import enforce_floor
from ppdp.tasks.privacy.judge import judge_release
from ppdp.tasks.privacy.measure import check_gates, measure_release, measure_table
from ppdp.tasks.privacy.parts import measure_release_parts
from ppdp.tasks.privacy.validate import read_table_file
from ppdp.tasks.reproduce import recheck_release
from ppdp.tasks.sanitize.base import Sanitizer
from ppdp.tasks.sanitize.registry import REGISTRY
from ppdp.tasks.shapes import rare_rule_skip
from ppdp.tasks.spec import load_spec
from ppdp.tasks.tag import infer_kind, protect_identifiers, tag_frame

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _native_threads_limited(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run an API call with one thread per native pool (BLAS, OpenMP), the caller's settings restored after it
    (see :mod:`ppdp.tasks.core.threads`)."""
    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with native_threads_limited():
            return fn(*args, **kwargs)

    return call


def methods() -> dict[str, type[Sanitizer]]:
    """The registered methods by name."""
    return dict(REGISTRY)


def roles_for(frame: pd.DataFrame, *, quasi_identifiers: list[str], class_column: str | None = None,
              sensitive: list[str] | tuple[str, ...] = (), identifiers: list[str] | tuple[str, ...] = (),
              kinds: dict[str, str] | None = None, orders: dict[str, list[str]] | None = None) -> Roles:
    """Roles for every column of ``frame``: the named ones, "other" for the rest; kinds inferred from the data
    unless given (``numeric``, ``ordinal``, ``nominal``)."""
    named = [*quasi_identifiers, *sensitive, *identifiers, *([class_column] if class_column else [])]
    missing = [n for n in named if n not in frame.columns]
    if missing:
        raise KeyError(f"column '{missing[0]}' is not in the frame")
    kinds = dict(kinds or {})
    orders = dict(orders or {})
    tags = []
    for i, name in enumerate(frame.columns):
        role = (Role.quasi_identifier if name in quasi_identifiers else Role.sensitive if name in sensitive else
                Role.identifier if name in identifiers else Role.class_ if name == class_column else Role.other)
        kind = ColumnKind(kinds[name]) if name in kinds else (
            ColumnKind.ordinal if name in orders else infer_kind(frame[name], role))
        tags.append(ColumnTag(name=str(name), role=role, kind=kind, source="declared", reason="given to the API",
                              order=orders.get(name), position=i))
    return Roles(columns=tags)


@dataclass(frozen=True)
class SanitizedRelease(Release):
    """What :func:`sanitize` returns: the method's :class:`~ppdp.tasks.sanitize.base.Release` (``frame``, ``unit``,
    ``treatments``, ...), with what was done before and found after it.

    Attributes
    ----------
    roles : Roles
        Every input column's role, treatment and reason (declared, or tagged as ``ppdp run`` tags).
    rare : RareCategoryReport
        What the rare-value rule merged or suppressed (counts only).
    privacy : PrivacyReport
        The attacker's view (``privacy.attacker_view``) and the safety floor (``privacy.floor``).
    source : DataFrame
        The rows the method was given (identifiers dropped or pseudonymized, rare values merged): the ``original``
        that :func:`validate` compares the release with.
    """

    roles: Roles | None = None
    rare: RareCategoryReport | None = None
    privacy: PrivacyReport | None = None
    source: pd.DataFrame | None = None


@dataclass(frozen=True)
class SanitizedPartsRelease(SanitizedRelease, PartsRelease):
    """:class:`SanitizedRelease` of a partitioned method (its ``parts``, ``recode`` and ``partition`` too)."""


@dataclass(frozen=True)
class SanitizedDpRelease(SanitizedRelease, DpRelease):
    """:class:`SanitizedRelease` of a differentially private method (its ``dp`` guarantee too)."""


_SANITIZED: dict[type[Release], type[SanitizedRelease]] = {
    Release: SanitizedRelease, PartsRelease: SanitizedPartsRelease, DpRelease: SanitizedDpRelease}


@_native_threads_limited
def sanitize(frame: pd.DataFrame, method: str = "condensation", *, quasi_identifiers: list[str] | None = None,
             class_column: str | None = None, sensitive: list[str] | tuple[str, ...] = (),
             identifiers: list[str] | tuple[str, ...] = (), identifier_action: str = "drop",
             pseudonym_key: bytes | None = None, roles: Roles | None = None, seed: int = 0,
             kinds: dict[str, str] | None = None, orders: dict[str, list[str]] | None = None,
             accept_below_floor: dict[str, str] | None = None, **params: Any) -> SanitizedRelease:
    """Sanitize ``frame`` with a registered method, as safely as ``ppdp run`` does: every column is tagged (the
    named ones as named, the others detected: direct identifiers by name or values, quasi-identifiers by name or
    re-identification contribution, undeclared free text or identifier-shaped text dropped), identifiers are
    dropped (``identifier_action="pseudonymize"`` with ``pseudonym_key``: keyed pseudonyms), no categorical value
    seen fewer than k times is kept (k: the method's ``k``, else 2), the method runs, and the release is measured
    as an attacker sees it and held to the safety floor. A release below the floor raises
    :class:`~ppdp.tasks.core.errors.ReleaseRejected` naming the figure, unless ``accept_below_floor={"reason":
    ..., "approved_by": ...}``.

    ``roles`` (a :class:`~ppdp.schemas.reports.Roles`, e.g. from :func:`roles_for`) replaces the tagging: the
    columns are taken as given (identifiers are still dropped, rare values merged, the floor measured).
    ``params`` are the method's parameters (``k=12``, ``variant="class_wise"``, ``scale=0.3``). Returns a
    :class:`SanitizedRelease`.
    """
    cls = methods().get(method)
    if cls is None:
        raise ValueError(f"unknown method {method!r}: expected one of {', '.join(sorted(methods()))}")
    if roles is None:
        declared = {**{q: ColumnSpec(role=Role.quasi_identifier) for q in quasi_identifiers or []},
                    **{s: ColumnSpec(role=Role.sensitive) for s in sensitive},
                    **{i: ColumnSpec(role=Role.identifier) for i in identifiers},
                    **({class_column: ColumnSpec(role=Role.class_)} if class_column else {})}
        missing = [n for n in declared if n not in frame.columns]
        if missing:
            raise KeyError(f"column '{missing[0]}' is not in the frame")
        for name, kind in (kinds or {}).items():
            declared[name] = (declared.get(name) or ColumnSpec(role=Role.other)).model_copy(
                update={"kind": ColumnKind(kind)})
        for name, order in (orders or {}).items():
            declared[name] = ColumnSpec(role=(declared[name].role if name in declared else Role.other),
                                        order=list(order))
        roles = tag_frame(frame, declared, TaggingSpec(), identifier_action)
    policy = IdentifierPolicy(action=identifier_action)
    protected = protect_identifiers(frame, roles, policy, pseudonym_key).reset_index(drop=True)
    k = int(params.get("k") or 2)
    skip = rare_rule_skip(cls, roles)
    source, rare = rare_rule.merge_rare_categories(protected, roles, k, skip)
    source = source.reset_index(drop=True)
    release = cls(**params, seed=seed).sanitize(source, roles)
    accept = AcceptBelowFloor(**accept_below_floor) if accept_below_floor is not None else None
    thresholds = PrivacyPolicy(accept_below_floor=accept)
    if isinstance(release, PartsRelease):
        report, each = measure_release_parts(release, roles, thresholds, protected=cls.protected_columns(roles))
        report = report.model_copy(update={"part_reports": list(each)})
    else:
        report = judge_release(source, release, roles, thresholds, protects=cls.protects,
                               protected=cls.protected_columns(roles), seed=seed, everything=source, attack_queries=0)
    enforce_floor(report)  # raises naming the floor's failed figures
    fields = {f.name: getattr(release, f.name) for f in dataclass_fields(release)}
    return _SANITIZED[type(release)](**fields, roles=roles, rare=rare, privacy=report, source=source)


@_native_threads_limited
def validate(data: pd.DataFrame | Release | str | Path, *, quasi_identifiers: list[str] | None = None,
             sensitive: list[str] | tuple[str, ...] = (), original: pd.DataFrame | None = None,
             class_column: str | None = None, attack: int = 0, seed: int = 0, **thresholds: Any) -> PrivacyReport:
    """Measure privacy and decide against ``thresholds`` (the spec's ``privacy`` keys: ``k``, ``l``, ``t``,
    ``max_linkage_risk``, ``min_dcr``, ``min_vd``, ...).

    * a DataFrame, or a path to a CSV / Parquet table: every model over its equivalence classes;
    * a :class:`Release` from :func:`sanitize` with the ``original`` frame: measured as its unit requires
      (equivalence classes, generating groups, or records), claims as in a release manifest.
    """
    policy = PrivacyThresholds(**thresholds)
    vacuous = policy.vacuous_gates()
    if vacuous:
        raise ValueError(f"{vacuous[0]}: a gate no table can fail checks nothing")
    if isinstance(data, SanitizedRelease) and data.source is not None and data.roles is not None:
        # what ppdp.sanitize gave the method, with the roles it used: the rows the release stands for
        report = measure_release(data.source, data, data.roles, thresholds=policy, seed=seed, attack_queries=attack)
        return check_gates(report.model_copy(update={"attacker_view": data.privacy.attacker_view
                                                     if data.privacy else None}), policy)
    if isinstance(data, Release):
        if original is None:
            raise ValueError("validating a Release needs the original frame it was made from (original=...)")
        roles = roles_for(original, quasi_identifiers=list(quasi_identifiers or []), sensitive=sensitive,
                          class_column=class_column)
        report = measure_release(original, data, roles, thresholds=policy, seed=seed, attack_queries=attack)
        return check_gates(report, policy)
    frame = data if isinstance(data, pd.DataFrame) else _read(Path(data))
    report = measure_table(frame, list(quasi_identifiers or []), list(sensitive), thresholds=policy, seed=seed,
                           attack_queries=attack)
    return check_gates(report, policy)


@_native_threads_limited
def validate_release(folder: str | Path, original: str | Path | None = None):
    """Re-check every claim of a published release (see :mod:`ppdp.tasks.privacy.recheck`); the result's
    ``holds`` is True only when every claim holds."""
    return recheck_release(Path(folder), Path(original) if original is not None else None)


def _read(path: Path) -> pd.DataFrame:
    return read_table_file(path)


def release(spec: str | Path, *, overrides: list[str] | tuple[str, ...] = (), runner: str | None = None,
            force: bool = False):
    """Run a release from a spec file, as ``ppdp run`` does (ingest, tag, tune, sanitize, validate, check utility,
    publish, audit) and return its :class:`~ppdp.schemas.manifest.ReleaseResult`; raise
    :class:`~ppdp.tasks.core.errors.PpdpError` when refused (nothing published, the refusal audited).

    When the input, the resolved spec and the installed code are those of the dataset's latest release, nothing is
    published: the result's ``status`` is ``unchanged`` and its ``release_id`` and ``folder`` are that release's
    (:mod:`ppdp.tasks.rerun`); ``force=True`` publishes a new release anyway (``ppdp run --force``).

    ``overrides`` are ``--set`` items (``"seed=11"``); ``runner`` is a ``--runner`` value (``thread``, ``dask``,
    ``dask=tcp://host:port``), otherwise the spec's ``runner`` section decides."""
    apply_settings()  # the entry point: ppdp's Prefect settings, before Prefect is imported
    from ppdp.flows.release import release_flow  # heavy: Prefect, loaded by a run only
    from ppdp.flows.runners import call_flow  # heavy: Prefect

    return call_flow(release_flow, spec, list(overrides), runner, force=force)


def federate(spec_path: str | Path, overrides: list[str] | tuple[str, ...] | None = None):
    """Run a federation from a spec file, as ``ppdp federate`` does: each party's counts are split into two
    secret shares, summed by two mixers, the minimum-count rule applied and the naive Bayes model published and
    audited (see :mod:`ppdp.tasks.federated`). Returns the
    :class:`~ppdp.schemas.federate.FederateResult`; raises :class:`~ppdp.tasks.core.errors.PpdpError` when
    refused (nothing published, the refusal audited). The published model predicts through
    ``ppdp.tasks.federated.FederatedModel.from_release(folder)``."""
    apply_settings()  # the entry point: ppdp's Prefect settings, before Prefect is imported
    from ppdp.flows.federate import run_federation  # heavy: Prefect, loaded by a run only

    return run_federation(spec_path, list(overrides or []))


def tune(spec: str | Path, *, overrides: list[str] | tuple[str, ...] = (), runner: str | None = None):
    """Only tune the spec's method parameter, as ``ppdp tune`` does; return the
    :class:`~ppdp.schemas.reports.TuningTrace` (nothing is published). ``overrides`` and ``runner`` as for
    :func:`release`."""
    apply_settings()  # the entry point: ppdp's Prefect settings, before Prefect is imported
    from ppdp.flows.release import tune_flow  # heavy: Prefect, loaded by a run only
    from ppdp.flows.runners import call_flow  # heavy: Prefect

    return call_flow(tune_flow, spec, list(overrides), runner)


def compare(spec: str | Path, *, methods: list[str] | tuple[str, ...] | None = None,
            overrides: list[str] | tuple[str, ...] = (), runner: str | None = None, out: str | Path | None = None,
            write_spec: str | Path | None = None):
    """Compare every applicable registered method (or ``methods``) on the spec's data, as ``ppdp compare`` does:
    each tuned with its default strategy and judged like a release (policy, safety floor, attacker's view,
    utility), nothing published. Returns the :class:`~ppdp.schemas.compare.CompareResult` (rows ranked, the
    recommended method and its one-line reason); raises :class:`~ppdp.tasks.core.errors.PpdpError` on a bad spec or
    input.

    ``out``: a folder to write ``compare.html`` and ``compare.json`` to (aggregates only); ``write_spec``: a file to
    write the recommended method's spec to, its tuned value fixed (raises
    :class:`~ppdp.tasks.core.errors.InputError` when no method passes). ``overrides`` and ``runner`` as for
    :func:`release`."""
    apply_settings()  # the entry point: ppdp's Prefect settings, before Prefect is imported
    from ppdp.flows.compare import run_compare  # heavy: Prefect, loaded by a run only


    resolved = load_spec(spec, list(overrides))
    comparing.check_outside_root(resolved, out, "out")
    comparing.check_outside_root(resolved, write_spec, "write_spec")
    result = run_compare(spec, list(overrides), list(methods) if methods else None, runner)
    if out is not None:
        write_outputs(result, Path(out))
    if write_spec is not None:
        comparing.write_spec(result, spec, Path(write_spec))
    return result
