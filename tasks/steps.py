"""The steps of a release and how they run: :class:`Step` (a name, a plain function, how a run is named) and
:class:`Runner` (plain: in this process, in order; the flow's runs each step as a Prefect task), the record of a
run (:class:`RunIds`), the progress lines, and the steps both plans share (the one-table plan,
:mod:`ppdp.tasks.plan`, and the plan over a folder of partitions, :mod:`ppdp.tasks.distributed.plan`): the tagging,
the promotion of columns and the gates. No Prefect here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from ppdp.schemas.reports import PrivacyReport, Roles
from ppdp.tasks import gates, tag
from ppdp.tasks.privacy import judge
from ppdp.tasks.sanitize.base import Sanitizer

STEPS = 8
"""The numbered stages a release's log lines count (``[4/8] tune ...``)."""

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


# -- how steps run ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step(Generic[R]):
    """One step of the plan: its name (the Prefect task's), its plain function, and how a run is named from its
    parameters (settings, counts and names only: never a data value). ``task``: the flow runs it as a task of its
    own (else it is called in place: a method's own callbacks, the tuner's suggestion rule)."""

    name: str
    fn: Callable[..., R]
    describe: Callable[[dict[str, Any]], str] | None = None
    task: bool = True


class Pending(Protocol[R_co]):
    """A submitted step: its result when asked."""

    def result(self) -> R_co: ...


class Deferred(Generic[R]):
    """A step submitted to the plain runner: run when (and only if) its result is asked, once."""

    def __init__(self, run: Callable[[], R]) -> None:
        self._run: Callable[[], R] | None = run
        self._value: R | None = None

    def result(self) -> R:
        if self._run is not None:
            self._value, self._run = self._run(), None
        return self._value  # type: ignore[return-value]  # set by the line above


def resolved(value: Any) -> Any:
    """An argument with the plain runner's submitted steps (alone, or in a list) replaced by their results."""
    if isinstance(value, Deferred):
        return value.result()
    if isinstance(value, list) and any(isinstance(v, Deferred) for v in value):
        return [resolved(v) for v in value]
    return value


class Runner:
    """Runs the plan's steps in this process, in order (a submitted step runs when its result is asked; a submitted
    step given to another is its result). The flow runs them as Prefect tasks (:class:`ppdp.flows.steps.TaskRunner`);
    compare marks a method's refusals (:func:`ppdp.tasks.compare.compare_method`)."""

    def call(self, step: Step[R], *args: Any, **kwargs: Any) -> R:
        return step.fn(*map(resolved, args), **{k: resolved(v) for k, v in kwargs.items()})

    def submit(self, step: Step[R], *args: Any, **kwargs: Any) -> Pending[R]:
        return Deferred(lambda: self.call(step, *args, **kwargs))

    def cluster(self) -> str | None:
        """The address of the cluster the steps run on (a Dask scheduler), None in this process."""
        return None


PLAIN = Runner()


class Log(Protocol):
    """Where the plan's progress lines go (the flow's run logger)."""

    def info(self, msg: str, *args: Any) -> None: ...

    def warning(self, msg: str, *args: Any) -> None: ...


class Quiet:
    """No progress lines (plain callers)."""

    def info(self, msg: str, *args: Any) -> None:
        pass

    def warning(self, msg: str, *args: Any) -> None:
        pass


QUIET = Quiet()


class Text:
    """A log line's argument computed only when the line is written (a quiet caller never computes it)."""

    def __init__(self, fn: Callable[..., str], *args: Any) -> None:
        self.fn, self.args = fn, args

    def __str__(self) -> str:
        return self.fn(*self.args)


def value_text(v: Any) -> str:
    """A parameter value for a run name: integers with thousands separators, reals to 4 significant digits."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    return f"{int(v):,}" if float(v).is_integer() else f"{v:.4g}"


def sanitizer_settings(s: Sanitizer) -> str:
    shown = []
    for key in ("k", "l", "t", "variant", "levels", "leaf_size", "rank", "samples", "sigma", "epsilon"):
        v = getattr(s, key, None)
        if v is not None and key in s.get_params():
            shown.append(f"{key}={value_text(v) if not isinstance(v, dict) else len(v)}")
    return f"{s.name} " + ",".join(shown)


def log_promoted(logger: Log, roles: Roles, promoted: Roles, again: str) -> None:
    """The log line of columns published beside the quasi-identifiers made quasi-identifiers (``again``: what the
    flow does next)."""
    logger.info("[6/%d] privacy: %s published beside the quasi-identifiers split the classes an attacker sees: made "
                "quasi-identifier(s), %s", STEPS,
                ", ".join(t.name for t in promoted.columns if t.role != roles.get(t.name).role), again)


def log_privacy(logger: Log, privacy: PrivacyReport) -> None:
    """The log line of a release's privacy once its gates passed."""
    n = len(privacy.claims)
    logger.info("[6/%d] privacy: %d %s; safety floor %s", STEPS, n, "claim holds" if n == 1 else "claims hold",
                "holds" if privacy.floor is not None and privacy.floor.holds
                else "fails: published below it on purpose (accepted)")


@dataclass
@dataclass
class RunIds:
    """One release's identity for the steps that record it: its id, when it started, the Prefect flow run, and
    what a refusal's audit entry records (``known``: the spec's hash, the input's digests)."""

    release_id: str
    started: datetime
    flow_run_id: str | None
    known: dict[str, Any]



# -- the steps both plans share ----------------------------------------------------------------------------------
TAG = Step("tag", tag.tag_columns, lambda p: f"{len(p['frame'].columns)} columns")
PROMOTE = Step("promote-columns", judge.promote_counted_columns)
ENFORCE_PRIVACY = Step("enforce-privacy-gates", gates.enforce_privacy)
ENFORCE_SERIES = Step("enforce-series-gates", gates.enforce_series)
ENFORCE_UTILITY = Step("enforce-utility-gates", gates.enforce_utility)
