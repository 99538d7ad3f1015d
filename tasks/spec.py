"""Load a release spec from YAML, apply ``--set`` overrides, resolve paths, and check it against the input's
header before any work is done.

The YAML is read by a loader that accepts plain data only and refuses, with the line, what could hurt or
mislead: anchors and aliases (an alias bomb expands a kilobyte into gigabytes), nesting deeper than
:data:`MAX_DEPTH`, more than :data:`MAX_NODES` values, files over :data:`MAX_SPEC_BYTES`, duplicate keys (YAML
lets the last one win silently), tags, merge keys, non-finite numbers, text that is not UTF-8 (a UTF-8
byte-order mark is dropped). Mapping keys are taken as the text written (``no:`` is the key ``"no"``, not
``False``), dates stay text, and ``1e-3`` is a number (YAML 1.2, not 1.1). The result is validated strictly
(pydantic strict mode through JSON: ``true`` is not an integer, ``"7"`` is not a number), both the file and the
``--set`` overrides. Keys and column names that look like data values are never echoed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import os
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from ppdp.schemas.spec import ReleaseSpec, Role
from ppdp.tasks.core.errors import SpecError
from ppdp.tasks.core.io import read_header
from ppdp.tasks.core.labels import (  # noqa: F401  (re-exported for callers)
    SEPARATORS,
    column_label,
    guess_separator,
    key_path,
    key_text,
    looks_like_data,
)
from ppdp.tasks.privacy.partitioned import common_schema, partition_files
from ppdp.tasks.publish import ensure_root
from ppdp.tasks.sanitize.registry import build_sanitizer, method_class
from ppdp.tasks.tag import quasi_identifier_candidates  # the same name rules the tag step applies

MAX_SPEC_BYTES = 256 * 1024
"""A release spec is a few kilobytes; a larger file is refused before it is parsed."""
MAX_DEPTH = 16
"""Deepest nesting of lists and mappings (a spec needs 4: ``columns`` -> a column -> ``order`` -> a value)."""
MAX_NODES = 20_000
"""Most values (keys, scalars, lists, mappings) in a spec. PyYAML's pure-Python composer took 0.85 s for
20,000 here, so a hostile spec costs about a second; a thousand declared columns with their orders stay below."""

_TAG = "tag:yaml.org,2002:"
_PLAIN_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null", "seq", "map")}
_FLOAT_12 = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class _Refused(Exception):
    """A YAML construct the spec loader refuses; ``line`` is 1-based (None: no position)."""

    def __init__(self, line: int | None, text: str) -> None:
        super().__init__(text)
        self.line = line
        self.text = text


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe loader, composing nodes only: no anchors, no aliases, bounded depth, plain tags."""

    yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (_TAG + "timestamp", _TAG + "value")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(line, "YAML anchors and aliases (&name, *name) are not allowed in a spec")
        self._nodes += 1
        if self._nodes > MAX_NODES:
            raise _Refused(line, f"more than {MAX_NODES} values: not a release spec")
        nested = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise _Refused(line, f"nested deeper than {MAX_DEPTH} levels")
        try:
            node = super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1
        assert node is not None  # PyYAML's composer returns a node or raises (its stubs say Node | None)
        if node.tag not in _PLAIN_TAGS:
            raise _Refused(line, "only plain values, lists and mappings are allowed (no YAML tags or merge keys)")
        return node


_SpecLoader.add_implicit_resolver(_TAG + "float", _FLOAT_12, list("-+0123456789"))


def _plain(loader: _SpecLoader, node: yaml.Node, path: tuple[str, ...] = ()) -> Any:
    """A composed node as plain data (str, int, float, bool, None, list, dict), refusing duplicate keys."""
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Refused(key_line, "a key must be plain text, not a list or a mapping")
            key = key_node.value
            if key in first:
                raise _Refused(key_line, f"duplicate key '{key_path((*path, key))}' (first at line {first[key]})")
            first[key] = key_line
            out[key] = _plain(loader, value_node, (*path, key))
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(loader, item, (*path, str(i))) for i, item in enumerate(node.value)]
    try:
        value = loader.construct_object(node)
    except (ValueError, OverflowError):  # e.g. an integer of more than 4300 digits
        raise _Refused(line, "a value is not a valid number") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise _Refused(line, "infinite and NaN numbers (.inf, .nan) are not allowed")
    return value


def parse_yaml(text: str) -> Any:
    """Plain data from YAML text under the spec loader's rules; raises ``_Refused`` or ``yaml.YAMLError``."""
    loader = _SpecLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _plain(loader, node)
    finally:
        loader.dispose()


def load_spec(path: str | os.PathLike[str], overrides: list[str] | None = None) -> ReleaseSpec:
    """Read, override, validate (strictly) and resolve a spec; raise :class:`SpecError` naming the line or the key
    (one line per problem, the first complete on its own)."""
    spec_path = Path(path)
    raw = read_spec_mapping(spec_path)
    overridden = [apply_override(raw, item) for item in overrides or []]
    try:
        # strict, through JSON: a boolean is not an integer, text is not a number; paths and enums from text
        spec = ReleaseSpec.model_validate_json(json.dumps(raw, allow_nan=False), strict=True,
                                               context={"release_spec": True})  # vacuous gates refused
    except ValidationError as exc:
        raise SpecError(f"spec {spec_path}: {format_validation_error(exc, overridden, ReleaseSpec)}") from None
    return resolve_paths(spec, spec_path.resolve().parent)


def read_spec_mapping(spec_path: Path) -> dict[str, Any]:
    """The spec file as plain data (see the module docstring for what is refused)."""
    where = f"spec {spec_path}"
    if not spec_path.is_file():
        raise SpecError(f"{where}: file not found")
    try:
        size = spec_path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError(f"{where}: {size} bytes, more than a spec can be ({MAX_SPEC_BYTES} bytes)")
        data = spec_path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{where}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise SpecError(f"{where}: UTF-16 or UTF-32 text (a byte-order mark): save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")  # a UTF-8 byte-order mark is dropped
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SpecError(f"{where}: not UTF-8 text (line {line})") from None
    try:
        raw = parse_yaml(text)
    except _Refused as exc:
        raise SpecError(f"{where}: line {exc.line}: {exc.text}" if exc.line else f"{where}: {exc.text}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        position = getattr(exc, "position", None)  # reader errors (control characters) carry a position instead
        at_line = mark.line + 1 if mark is not None else (
            text[:position].count("\n") + 1 if isinstance(position, int) else None)
        # PyYAML's own text may quote the offending characters: give the line only
        raise SpecError(f"{where}: not valid YAML" + (f" at line {at_line}" if at_line else "")) from None
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: must be a mapping of keys (dataset, source, ...)")
    return raw


def apply_override(raw: dict[str, Any], item: str) -> tuple[str, ...]:
    """Apply ``key.path=value`` to a raw spec mapping; the value is parsed as YAML (``7``, ``true``, ``[a, b]``)
    under the spec loader's rules. Returns the key path (to name it when its value fails validation)."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise SpecError("--set: expected key.path=value")
    parts = tuple(p.strip() for p in key.strip().split("."))
    shown = key_path(parts)
    if any(not p for p in parts):
        raise SpecError(f"--set {shown}: an empty key in the path")
    if len(parts) > MAX_DEPTH:
        raise SpecError(f"--set: a key path deeper than {MAX_DEPTH} levels")
    try:
        value = parse_yaml(text) if text.strip() else None
    except _Refused as exc:
        raise SpecError(f"--set {shown}: {exc.text}") from None
    except yaml.YAMLError:
        raise SpecError(f"--set {shown}: the value is not valid YAML") from None
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise SpecError(f"--set {shown}: {key_path(parts[: i + 1])} is not a mapping")
        node = child
    node[parts[-1]] = value
    return parts


_TYPE_ERRORS = {"int_type", "float_type", "string_type", "bool_type", "dict_type", "list_type", "model_type",
                "enum", "literal_error", "int_parsing", "float_parsing", "bool_parsing"}


def _kind_of(value: object) -> str:
    """The JSON kind of a rejected value, never the value itself."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "text"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


MAX_PROBLEMS_LISTED = 5
"""Most problems of an invalid spec listed, one line each; the rest are counted (``and 3 more problems``)."""


def format_validation_error(exc: ValidationError, overridden: list[tuple[str, ...]] | None = None,
                            model: type[BaseModel] | None = None, *, one_line: bool = False) -> str:
    """Every problem of ``exc``, one line each (see :func:`validation_problems`; at most
    :data:`MAX_PROBLEMS_LISTED`): the first line is the first problem and how many more there are, complete on
    its own for a caller that shows one line (``one_line``: only that line); the others follow, indented."""
    return format_problems(validation_problems(exc, overridden, model), one_line=one_line)


def format_problems(problems: list[str], *, one_line: bool = False) -> str:
    """``first problem (and N more problems)``, then the others on their own indented lines (at most
    :data:`MAX_PROBLEMS_LISTED` in all, then ``and N more problems``)."""
    if not problems:
        return "invalid"

    def more(n: int) -> str:
        return f"and {n} more problem{'s' if n > 1 else ''}"

    first = problems[0] + (f" ({more(len(problems) - 1)})" if len(problems) > 1 else "")
    if one_line or len(problems) == 1:
        return first
    listed = problems[1:MAX_PROBLEMS_LISTED]
    rest = len(problems) - 1 - len(listed)
    return "\n".join([first, *(f"  {p}" for p in listed), *([f"  {more(rest)}"] if rest else [])])


def validation_problems(exc: ValidationError, overridden: list[tuple[str, ...]] | None = None,
                        model: type[BaseModel] | None = None) -> list[str]:
    """One ``key.path: message`` per problem: first the unknown keys that look misspelt (a misspelt key is often
    why a required one is missing), then the other problems, then the other unknown keys. A key given by ``--set``
    is marked so; a type error names the kind of value given (a boolean, text), never the value; an unknown key
    names the closest key ``model`` (the validated model) knows at its place."""
    errors = exc.errors(include_url=False)
    # a value that fits no member of a union (a column given as a role or a mapping) fails each member: report
    # the member its kind of value was meant for, not "should be a role, got a mapping"
    meant = [e for e in errors if not (e["type"] in _TYPE_ERRORS and isinstance(e.get("input"), (dict, list)))]
    missing: dict[tuple[str, ...], list[str]] = {}
    for e in errors:
        if e["type"] == "missing" and e["loc"]:
            missing.setdefault(_keys_of(e["loc"][:-1]), []).append(str(e["loc"][-1]))
    seen: set[tuple[str, ...]] = set()
    misspelt: list[str] = []
    other: list[str] = []
    unknown: list[str] = []
    for e in meant or errors:
        keys = _keys_of(e["loc"])
        if e["type"] == "union_tag_invalid":  # a method name (the discriminator's value) that names no member
            keys = (*keys, str(e.get("ctx", {}).get("discriminator", "name")).strip("'\""))
        if keys in seen:  # one problem per key (the members of a union each fail at the same key)
            continue
        seen.add(keys)
        msg, suggestion = e["msg"], ""
        if e["type"] == "extra_forbidden":
            suggestion = _did_you_mean(e["loc"], missing.get(keys[:-1], []), model)
            msg = "unknown key" + suggestion
        elif e["type"] == "missing":
            msg = "required key is missing"
        elif e["type"] == "union_tag_invalid":
            msg, suggestion = _unknown_tag(keys, e.get("ctx", {}))
        elif e["type"] in _TYPE_ERRORS and "input" in e:
            msg = f"{msg}, got {_kind_of(e['input'])}"
        msg = msg.removeprefix("Value error, ")
        loc = key_path(keys)
        if loc and any(keys[: len(o)] == o or o[: len(keys)] == keys for o in overridden or []):
            loc += " (given by --set)"
        group = other if e["type"] not in ("extra_forbidden", "union_tag_invalid") else (
            misspelt if suggestion else (unknown if e["type"] == "extra_forbidden" else other))
        group.append(f"{loc}: {msg}" if loc else msg)
    return misspelt + other + unknown


def _unknown_tag(keys: tuple[str, ...], ctx: dict[str, Any]) -> tuple[str, str]:
    """(message, suggestion) for a discriminator value no member has, e.g. ``method.name: unknown method 'mdv';
    did you mean 'mdav'?`` (difflib over the names pydantic expects, which are the method registry's); the
    known names when none is close. A value that looks like data is not echoed."""
    tag = str(ctx.get("tag", ""))
    expected = [t.strip().strip("'\"") for t in str(ctx.get("expected_tags", "")).split(",") if t.strip()]
    what = keys[0] if keys and keys[0] == "method" else "value"
    shown = f"unknown {what}" if looks_like_data(tag) else f"unknown {what} {tag!r}"
    close = difflib.get_close_matches(tag, expected, n=1)
    if close:
        return f"{shown}; did you mean {close[0]!r}?", close[0]
    return f"{shown}: expected one of {', '.join(expected)}", ""


def _keys_of(loc: tuple) -> tuple[str, ...]:
    """The spec keys of a pydantic location: union member labels and the method's name after ``method`` left
    out."""
    return tuple(str(p) for i, p in enumerate(loc)
                 if _is_key(p) and not (i == 1 and loc[0] == "method" and len(loc) > 2))


def _did_you_mean(loc: tuple, missing: list[str], model: type[BaseModel] | None) -> str:
    """`` (did you mean 'privacy'?)``: the key closest to the unknown one at ``loc`` (difflib), among the missing
    required keys beside it first, then every key known there; '' when none is close."""
    key = str(loc[-1])
    known = _known_keys(model, loc[:-1]) if model is not None else []
    for pool in (missing, known):
        close = difflib.get_close_matches(key, [k for k in pool if k != key], n=1)
        if close and not looks_like_data(close[0]):
            return f" (did you mean '{close[0]}'?)"
    return ""


def _members(annotation: Any) -> list[Any]:
    """The types an annotation admits, ``Annotated``, ``Optional`` and unions unwrapped."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return [t for arg in get_args(annotation) for t in _members(arg)]
    return [annotation]


def _known_keys(model: type[BaseModel], parent: tuple) -> list[str]:
    """The keys the model(s) at pydantic location ``parent`` of ``model`` accept ([] when it is not a model)."""
    current = _members(model)
    for part in parent:
        models = [t for t in current if isinstance(t, type) and issubclass(t, BaseModel)]
        holding = [m for m in models if part in m.model_fields]
        containers = [t for t in current if get_origin(t) in (dict, list)]
        if holding:  # a field
            current = [t for m in holding for t in _members(m.model_fields[part].annotation)]
        elif containers:  # a mapping's key or a list's index
            current = [t for c in containers for t in _members(get_args(c)[-1])]
        else:  # a union member's label: its class name, or its tag (a discriminator's literal value)
            chosen = [m for m in models if re.search(rf"\b{re.escape(m.__name__)}\b", str(part))
                      or any(get_origin(f.annotation) is Literal and part in get_args(f.annotation)
                             for f in m.model_fields.values())]
            current = chosen or current
    return sorted({k for t in current if isinstance(t, type) and issubclass(t, BaseModel) for k in t.model_fields})


def _is_key(part: object) -> bool:
    # pydantic puts union member labels in locations ("enum[Role]", "ColumnSpec", and the method's name after
    # "method", dropped by the caller); drop them
    text = str(part)
    return not ("[" in text or text in {"ColumnSpec", "condensation"} or text.startswith("function-"))


def resolve_paths(spec: ReleaseSpec, base: Path) -> ReleaseSpec:
    """Relative paths in the spec resolve against the spec file's folder."""

    def absolute(p: Path) -> Path:
        return p if p.is_absolute() else (base / p).resolve()

    source = spec.source.model_copy(update={"path": absolute(spec.source.path)})
    publish = spec.publish.model_copy(update={"root": absolute(spec.publish.root)})
    privacy = spec.privacy.model_copy(update={
        "hierarchies": {k: absolute(v) for k, v in spec.privacy.hierarchies.items()},
        "population": absolute(spec.privacy.population) if spec.privacy.population else None,
    })
    update = {"source": source, "publish": publish, "privacy": privacy}
    hierarchies = getattr(spec.method, "hierarchies", None)
    if hierarchies:  # a method's hierarchy files (generalization, Mondrian)
        update["method"] = spec.method.model_copy(update={"hierarchies": {
            c: h.model_copy(update={"file": absolute(h.file)}) if getattr(h, "file", None) is not None else h
            for c, h in hierarchies.items()}})
    return spec.model_copy(update=update)


def spec_sha256(spec: ReleaseSpec) -> str:
    """Hash of the resolved spec (canonical JSON), recorded in the manifest and the audit trail. The ``runner``
    section is left out: it says where the tasks ran, not what was released (a thread run and a Dask run of the
    same spec, input and seed publish the same data, and get the same hash); so is ``source.obtain`` (where to get
    the input, in words)."""
    text = json.dumps(spec.model_dump(mode="json", exclude={"runner": True, "source": {"obtain"}}), sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def guess_publish_root(path: str | os.PathLike[str], overrides: list[str] | None = None) -> Path | None:
    """The publish root of a spec that failed validation, when it can still be read (for the audit entry)."""
    spec_path = Path(path)
    try:
        raw = read_spec_mapping(spec_path)
        for item in overrides or []:
            apply_override(raw, item)
    except SpecError:
        return None
    root = (raw.get("publish") or {}).get("root") if isinstance(raw.get("publish"), dict) else None
    if not isinstance(root, str) or not root.strip():
        return None
    p = Path(root)
    return p if p.is_absolute() else (spec_path.resolve().parent / p).resolve()


def separator_hint(header: list[str], sep: str) -> str:
    """`` (is the separator ';'? ...)`` when another common separator occurs in the header's names, else ''."""
    guess = guess_separator(header, sep)
    return f" (is the separator {guess!r}? source.sep is {sep!r})" if guess else ""


def check_spec_against_header(spec: ReleaseSpec, header: list[str]) -> None:
    """Rules that need the input's column names: declared columns exist, a quasi-identifier and a class exist."""
    where = spec.source.path.name
    present = set(header)
    for position, name in enumerate(spec.columns, start=1):
        if name not in present:
            hint = separator_hint(header, spec.source.sep) if spec.source.format == "csv" else ""
            if looks_like_data(name):
                raise SpecError(f"spec columns: declared column {position} (a key that looks like a data value) "
                                f"is not in {where}{hint}")
            raise SpecError(f"spec columns.{name}: column '{name}' is not in {where}{hint}")
    declared = spec.declared()
    if not quasi_identifier_candidates(spec, header):
        raise SpecError(
            f"spec columns: no quasi-identifier among the columns of {where}: declare one (role: quasi_identifier)"
        )
    sensitive = [n for n, c in declared.items() if c.role is Role.sensitive]
    needs_sa = spec.privacy.sensitive_gates()
    if needs_sa and not sensitive:
        raise SpecError(f"spec privacy.{needs_sa[0]}: this gate needs a sensitive attribute: declare one "
                        "(role: sensitive) or remove the gate")
    for name in spec.privacy.hierarchies:
        if name not in sensitive:
            raise SpecError(f"spec privacy.hierarchies.{key_path([name])}: not a declared sensitive column")
    for name, h in (getattr(spec.method, "hierarchies", None) or {}).items():
        if name not in present:
            raise SpecError(f"spec method.hierarchies.{key_path([name])}: no such column in {where}")
        path = getattr(h, "file", None)
        if path is not None and not Path(path).is_file():
            raise SpecError(f"spec method.hierarchies.{key_path([name])}: hierarchy file {path} does not exist")
    if spec.declared_class() is None:  # utility needs no label (spec.classifies is False): the method may need one
        if build_sanitizer(spec.method).needs_class:
            variant = getattr(spec.method, "variant", None)
            which = f"{spec.method.name} (variant {variant})" if variant else spec.method.name
            raise SpecError(f"spec method.name: method {which} needs a class column and none is declared "
                            "(role: class)")
    if not spec.classifies:
        if method_class(spec.method.name).shape == "parts":
            raise SpecError(f"spec utility.classifier: method {spec.method.name} publishes feature parts, whose "
                            "utility is a classifier's: declare a class column (role: class) and name a classifier")
    if not spec.classifies and spec.source.partitioned:
        raise SpecError("spec utility.classifier: a partitioned input (a folder) is measured by a classifier: "
                        "declare a class column (role: class) and name a classifier")


def preflight(spec: ReleaseSpec, check_root: bool = True) -> list[str]:
    """Checks that need only the input's header and the file system, before any data is read: the header,
    the spec against it, a writable publish root (unless ``check_root`` is False). Returns the header."""
    if spec.source.partitioned:  # a folder of Parquet files: every file's schema checked, the first's names
        header = [str(n).strip() for n in common_schema(partition_files(spec.source.path)).names]
    else:
        header = read_header(spec.source)
    check_spec_against_header(spec, header)
    if check_root:
        ensure_root(spec.publish.root)
    return header
