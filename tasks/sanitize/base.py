"""The one contract every sanitizer shares, so the tuner, the validator and the flow treat them alike.

A sanitizer follows scikit-learn's estimator contract (through :class:`EstimatorParams`, which gives what
:class:`sklearn.base.BaseEstimator` gives without importing scikit-learn, so that reading a spec or a manifest
costs no scikit-learn start-up): the constructor only stores its keyword arguments (a seed among them),
``get_params(deep=True)``, ``set_params`` and :func:`sklearn.base.clone` work, checks run when the work starts
(through the method's parameter model), the input frame is never modified, and the same parameters, input and
seed give the same output.

A method declares, as class attributes:

* ``name`` and ``Params``: its parameter model (a :class:`ppdp.schemas.methods.MethodParams` subclass whose
  fields, less ``name``, are exactly the constructor's keyword arguments less ``seed``: :func:`constructor` makes the
  constructor from it, so a method states its parameters once);
* ``description``: what it does, in one phrase, as a release's report says it;
* ``unit``: what its privacy is measured over (:data:`ppdp.schemas.methods.Unit`), and ``tunable``: each tunable
  parameter and which direction is safer ("larger" or "smaller"), both taken from ``Params`` (as are
  ``lattice_parameters`` and ``keeps_groups``: :attr:`Sanitizer.PARAMS_FACTS`);
* ``needs_class``: whether it needs a class column; ``randomized``: whether the seed changes its output;
* ``protects``: what it protects (:data:`ppdp.schemas.methods.Protection`: ``identity``, hidden by classes, groups
  or record by record as its unit says; or ``attribute``, identities left visible), which decides the rows of the
  safety floor its releases are held to, and :meth:`Sanitizer.protected_columns`, the values an attacker must not
  learn (declared sensitive columns by default).

and implements :meth:`Sanitizer._sanitize` returning an unshuffled :class:`Release`; :meth:`Sanitizer.sanitize`
validates the parameters, puts the released rows in an order no one can recompute from what is published
(:func:`release_order`: seeded by the seed, the publisher's key and the unshuffled output) and numbers generating
groups in order of appearance, so that neither row order nor group ids reveal the input's order, and two releases
joined row by row line up no better than chance.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from pydantic import ValidationError

from ppdp.schemas.base import Role
from ppdp.schemas.methods import GROUP_COLUMN, Domain, IntRange, MethodParams, Protection, Safer, Unit
from ppdp.schemas.release import DpRelease, PartsRelease, Release, ReleasePart
from ppdp.schemas.reports import LatticeSearch, Roles
from ppdp.schemas.units import unit_of
from ppdp.tasks.core.class_column import require_class
from ppdp.tasks.core.errors import InputError, SpecError
from ppdp.tasks.core.labels import key_path

if TYPE_CHECKING:
    from ppdp.tasks.sanitize.keeping import Kept
    from ppdp.tasks.sanitize.partitions import OnPartitions

__all__ = ["GROUP_COLUMN", "DpRelease", "PartsRelease", "Release", "ReleasePart", "Sanitizer", "arrange",
           "release_order"]


class EstimatorParams:
    """scikit-learn's estimator parameter contract, as :class:`sklearn.base.BaseEstimator` (1.x) implements it.

    The parameters are the constructor's arguments, each stored as an attribute of the same name:
    :meth:`get_params` reads them (with ``deep=True`` also ``name__sub`` entries of parameters that have
    parameters themselves), :meth:`set_params` writes them (nested ``name__sub`` keys included) and returns
    the estimator, and :func:`sklearn.base.clone` rebuilds an equal estimator from ``get_params(deep=False)``.
    :meth:`__repr__` shows the parameters that differ from the constructor's defaults, sorted by name, as
    scikit-learn prints them (on one line).
    """

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The constructor's parameter names, sorted (``self`` and ``**kwargs`` excluded; ``*args`` refused)."""
        init = cls.__init__
        if init is object.__init__:
            return []
        parameters = [p for p in inspect.signature(init).parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD]
        if any(p.kind == p.VAR_POSITIONAL for p in parameters):
            raise RuntimeError(f"{cls.__name__}: an estimator's constructor must name its parameters (no *args)")
        return sorted(p.name for p in parameters)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameter name -> value; with ``deep``, also ``name__sub`` for parameters that have parameters."""
        out: dict[str, Any] = {}
        for key in self._get_param_names():
            value = getattr(self, key)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{key}__{sub}", v) for sub, v in value.get_params().items())
            out[key] = value
        return out

    def set_params(self, **params: Any) -> EstimatorParams:
        """Set parameters (``name__sub`` reaches a parameter's own parameter); returns the estimator."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            key, delim, sub = key.partition("__")
            if key not in valid:
                raise ValueError(f"invalid parameter {key!r} for estimator {type(self).__name__}; valid parameters "
                                 f"are: {self._get_param_names()!r}")
            if delim:
                nested.setdefault(key, {})[sub] = value
            else:
                setattr(self, key, value)
                valid[key] = value
        for key, sub_params in nested.items():
            valid[key].set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        defaults = inspect.signature(type(self).__init__).parameters
        shown = []
        for name, value in self.get_params(deep=False).items():
            default = defaults[name].default if name in defaults else inspect.Parameter.empty
            if default is inspect.Parameter.empty or repr(value) != repr(default):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"



def constructor(params: type[MethodParams]) -> Callable[..., None]:
    """The constructor a method's parameter model states (scikit-learn's contract): keyword arguments only, one a
    field of ``params`` (less ``name``) with the field's default (a default factory is called for each instance),
    then ``seed`` (default 0); each stored as the attribute of the same name. Its signature is the one
    :meth:`EstimatorParams.get_params`, ``repr`` and :func:`sklearn.base.clone` read."""
    fields = {name: field for name, field in params.model_fields.items() if name != "name"}
    keyword = inspect.Parameter.KEYWORD_ONLY
    signature = inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        *(inspect.Parameter(name, keyword, default=field.get_default(call_default_factory=True))
          for name, field in fields.items()),
        inspect.Parameter("seed", keyword, default=0)])

    def __init__(self: Any, **values: Any) -> None:
        unknown = sorted(set(values) - set(fields) - {"seed"})
        if unknown:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}")
        for name, field in fields.items():
            setattr(self, name, values[name] if name in values else field.get_default(call_default_factory=True))
        self.seed = values.get("seed", 0)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    return __init__


class Sanitizer(EstimatorParams, ABC):
    """Base class of every method (see the module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    """What the method does, in one phrase for readers of a release's report ("condensation: synthetic records
    generated from ..."); the report reads it through the registry, so a new method describes itself there. Empty:
    the report names the method only."""
    Params: ClassVar[type[MethodParams]]
    unit: ClassVar[Unit]
    protects: ClassVar[Protection] = "identity"
    tunable: ClassVar[dict[str, Safer]] = {}
    needs_class: ClassVar[bool] = False
    randomized: ClassVar[bool] = True
    lattice_parameters: ClassVar[tuple[str, ...]] = ()  # tunable parameters whose domain is a Lattice of levels
    shape: ClassVar[str] = "rows"
    """The name of the kind of release the method makes (a shape of :mod:`ppdp.tasks.shapes`: which rows it is
    given, how its utility and privacy are measured, what is published). Most methods publish rows standing for the
    training rows (``rows``); a recoding of every input row is ``every_row``; several tables are ``parts``. A name,
    not the shape itself: the methods import only the core and the schemas."""
    keeps_groups: ClassVar[bool] = False
    """The method can keep each record's group (or class) of the dataset's previous release
    (:meth:`_sanitize_keeping`, the series option ``keep_groups``)."""
    reproducible: ClassVar[bool] = True
    """The same parameters, input and seed give the same release. False for differentially private methods, whose
    noise comes from a cryptographically secure generator that takes no seed (a seed the manifest publishes would let
    anyone recompute the noise): ``ppdp validate --release`` then re-checks their claims from the manifest instead of
    reproducing the run."""

    on_partitions: ClassVar[OnPartitions | None] = None
    """What the method can do on a partitioned input (a folder of Parquet files): an object implementing
    :class:`ppdp.tasks.sanitize.partitions.OnPartitions` (count-based passes, merge, fit, finish a part, recode a
    partition), declared beside the method; None: the method is refused on partitions."""

    seed: int

    PARAMS_FACTS: ClassVar[tuple[str, ...]] = ("unit", "tunable", "lattice_parameters", "keeps_groups")
    """Class facts the parameter model states (the spec's cross-check reads them there): a method takes them from its
    ``Params`` (:meth:`__init_subclass__`) rather than stating them twice."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        params = cls.__dict__.get("Params")
        if params is not None:
            for fact in cls.PARAMS_FACTS:
                if fact not in cls.__dict__:  # a class that states one itself keeps it (the contract suite checks
                    setattr(cls, fact, getattr(params, fact))  # that registered methods agree with their Params)
            if "__init__" not in cls.__dict__:  # the parameters are stated once, in the parameter model
                cls.__init__ = constructor(params)  # type: ignore[method-assign]

    if TYPE_CHECKING:
        # the constructor contract (module docstring): keyword arguments only, a seed among them; made from the
        # method's Params by :func:`constructor` (at run time _get_param_names reads its signature)
        def __init__(self, **params: Any) -> None: ...

    # -- parameters ---------------------------------------------------------------------------------
    @classmethod
    def param_names(cls) -> list[str]:
        """The constructor's keyword arguments (the method's parameters and ``seed``)."""
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind is p.KEYWORD_ONLY]

    @classmethod
    def from_params(cls, params: MethodParams, seed: int = 0) -> Sanitizer:
        """The sanitizer a spec's ``method`` section describes."""
        values = params.model_dump(exclude={"name"})
        return cls(**values, seed=seed)

    def params(self) -> MethodParams:
        """The current parameters, validated by the method's model (raises :class:`SpecError` naming the
        parameter)."""
        values = {k: v for k, v in self.get_params(deep=False).items() if k != "seed"}
        try:
            return self.Params(name=self.name, **values)
        except ValidationError as exc:
            err = exc.errors()[0]
            # spec keys (a column name in levels or hierarchies) may look like data: key_path never echoes those;
            # integers are list positions
            where = ".".join(str(p) if isinstance(p, int) else key_path([str(p)]) for p in err.get("loc", ()))
            msg = err.get("msg", "invalid")
            if err.get("type") == "union_tag_invalid":  # pydantic's message quotes the tag the spec gave
                ctx = err.get("ctx", {})
                msg = f"unknown {ctx.get('discriminator', 'tag')}, expected one of {ctx.get('expected_tags', '')}"
            raise SpecError(f"{self.name}: parameter {where}: {msg}") from None

    def with_params(self, **updates: Any) -> Sanitizer:
        """A new sanitizer with some parameters changed (this one is left as it is)."""
        unknown = set(updates) - set(self.param_names())
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {', '.join(sorted(unknown))}")
        return type(self)(**{**self.get_params(deep=False), **updates})

    @classmethod
    def protected_columns(cls, roles: Roles) -> list[str]:
        """The columns whose values an attacker must not learn: the declared sensitive columns."""
        return roles.names(Role.sensitive)

    @classmethod
    def rebuild_guarantee(cls, params: dict[str, Any], columns: list[str], roles: Roles, numeric: dict[str, bool],
                          found: dict[str, list[float]] | None = None) -> tuple[float, float, str]:
        """A differentially private method's (epsilon, delta, library) rebuilt from a manifest's recorded parameters
        and published columns (``ppdp validate --release``; ``found``: the bin edges the release recorded as found
        under DP); methods without such a guarantee refuse."""
        raise SpecError(f"method {cls.name} makes no differentially private guarantee to rebuild")

    # -- tuning -------------------------------------------------------------------------------------
    def domains(self, frame: pd.DataFrame, roles: Roles) -> dict[str, Domain]:
        """Each tunable parameter's domain on this data (methods override for data-dependent bounds)."""
        return {name: IntRange(low=2, high=max(2, len(frame))) for name in self.tunable}

    def suggest(self, frame: pd.DataFrame, roles: Roles, threshold: float | None) -> tuple[dict[str, Any], str]:
        """The method's own rule for its tunable parameters (the ``suggested`` strategy): (values, why)."""
        raise SpecError(f"tuning.strategy suggested: method {self.name} has no suggestion rule")

    def search(self, frame: pd.DataFrame, roles: Roles) -> LatticeSearch:
        """The ``lattice`` tuning strategy: search the method's lattice on ``frame`` for the node to publish
        (methods with a lattice parameter, :attr:`lattice_parameters`, override this)."""
        raise SpecError(f"tuning.strategy lattice: method {self.name} has no lattice to search")

    def search_parameter(self, parameter: str, frame: pd.DataFrame, roles: Roles) -> LatticeSearch:
        """:meth:`search` for the tuned ``parameter``, which must be one of :attr:`lattice_parameters`."""
        if parameter not in self.lattice_parameters:
            raise SpecError(f"tuning.strategy lattice: method {self.name} has no lattice parameter")
        return self.search(frame, roles)

    def with_tuned(self, parameter: str | None, value: Any) -> Sanitizer:
        """This sanitizer with the tuned ``parameter`` set to ``value`` (itself when nothing was tuned)."""
        if parameter is None or value is None:
            return self
        return self.with_params(**{parameter: value})

    # -- the work -----------------------------------------------------------------------------------
    def sanitize(self, frame: pd.DataFrame, roles: Roles, *, order_key: bytes | None = None,
                 previous: Kept | None = None) -> Release:
        """Sanitize ``frame`` (columns described by ``roles``); the released rows come out in an order that carries
        nothing (see :func:`release_order`).

        ``order_key``: the publisher's secret (the series key), mixed into the row order so that no one without it
        can recompute the order. ``previous``: for methods that keep earlier memberships (:attr:`keeps_groups`),
        the dataset's previous release as :class:`ppdp.tasks.sanitize.keeping.Kept` (each input row's group and old
        published row there, whether it was ever grouped, the published rows); other methods refuse it.
        """
        self.params()
        if len(frame) == 0:
            raise InputError(f"{self.name}: the input has no rows")
        source = frame.reset_index(drop=True)
        if self.needs_class:  # one check of the class column for every method that needs one

            require_class(source, roles, self.name)
        rng = np.random.default_rng(self.seed)
        if previous is not None:
            if not self.keeps_groups:
                raise SpecError(f"series.keep_groups: method {self.name} cannot keep earlier group memberships "
                                "(methods that can: those with keeps_groups)")
            out = self._sanitize_keeping(source, roles, rng, previous.check(len(source), self.name))
        else:
            out = self._sanitize(source, roles, rng)
        return arrange(out, release_order(out, int(self.seed), order_key), self.unit)

    def _sanitize_keeping(self, source: pd.DataFrame, roles: Roles, rng: np.random.Generator,
                          previous: Kept) -> Release:
        """:meth:`_sanitize` keeping earlier memberships (methods with :attr:`keeps_groups` override this)."""
        raise SpecError(f"series.keep_groups: method {self.name} cannot keep earlier group memberships")

    @abstractmethod
    def _sanitize(self, frame: pd.DataFrame, roles: Roles, rng: np.random.Generator) -> Release:
        """Return the (unshuffled) release of ``frame`` (index 0..n-1); draw every random number from ``rng``."""


def release_order(out: Release, seed: int, order_key: bytes | None = None) -> np.ndarray:
    """The order the released rows are published in: a permutation seeded by a digest of the seed, the
    publisher's key (when given) and the unshuffled output itself (its values and which input row each stands
    for). Reproducible from the same input, parameters, seed and key; not recomputable from what is published
    (the manifest's seed alone does not give it, and the unshuffled order is the input's), so two releases joined
    row by row line up no better than chance."""
    digest = hashlib.sha256()
    digest.update(b"ppdp release order v1\0" + str(int(seed)).encode())
    digest.update(b"\0key\0" + (hmac.new(order_key, b"ppdp release order", hashlib.sha256).digest()
                                   if order_key else b""))
    frame = out.frame
    if len(frame.columns):
        try:
            values = pd.util.hash_pandas_object(frame, index=False).to_numpy()
        except TypeError:  # unhashable cells (lists): their text
            values = pd.util.hash_pandas_object(frame.astype(str), index=False).to_numpy()
        digest.update(np.ascontiguousarray(values).tobytes())
    digest.update(np.ascontiguousarray(np.asarray(out.row_source, dtype=np.int64)).tobytes())
    entropy = int.from_bytes(digest.digest(), "big")
    return np.random.default_rng(entropy).permutation(len(frame))


def arrange(out: Release, order: np.ndarray, unit: Unit) -> Release:
    """``out`` with its rows in ``order`` (published row i is ``out``'s row ``order[i]``), its groups numbered in
    order of appearance (a generating-group release publishes them in :data:`GROUP_COLUMN`)."""
    released = out.frame.take(order).reset_index(drop=True)
    group, input_group = out.group, out.input_group
    if group is not None:
        group = np.asarray(group)[order]
        _, first = np.unique(group, return_index=True)
        top = max(int(group.max()) if group.size else -1,
                  int(np.max(input_group)) if input_group is not None and len(input_group) else -1)
        renumber = np.full(top + 1, -1, dtype=np.int64)
        ids_in_order = group[np.sort(first)]
        renumber[ids_in_order] = np.arange(ids_in_order.size)
        group = renumber[group]
        if input_group is not None:
            ig = np.asarray(input_group)
            input_group = np.where(ig >= 0, renumber[np.maximum(ig, 0)], -1)
        if unit_of(unit).group_column:
            released[GROUP_COLUMN] = group
    return replace(out, frame=released, group=group, input_group=input_group,
                   row_source=np.asarray(out.row_source)[order])
