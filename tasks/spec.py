"""Load a release spec from YAML, apply ``--set`` overrides, resolve paths, and check it against the input's
header before any work is done."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ppdp.schemas.spec import ReleaseSpec, Role
from ppdp.tasks.core.errors import SpecError


def load_spec(path: str | os.PathLike[str], overrides: list[str] | None = None) -> ReleaseSpec:
    """Read, override, validate and resolve a spec; raise :class:`SpecError` with one line naming the key."""
    spec_path = Path(path)
    raw = read_spec_mapping(spec_path)
    for item in overrides or []:
        apply_override(raw, item)
    try:
        spec = ReleaseSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(f"spec {spec_path}: {format_validation_error(exc)}") from None
    return resolve_paths(spec, spec_path.resolve().parent)


def read_spec_mapping(spec_path: Path) -> dict[str, Any]:
    if not spec_path.is_file():
        raise SpecError(f"spec {spec_path}: file not found")
    try:
        raw = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SpecError(f"spec {spec_path}: not valid YAML{where}") from None
    except UnicodeDecodeError:
        raise SpecError(f"spec {spec_path}: not UTF-8 text") from None
    if not isinstance(raw, dict):
        raise SpecError(f"spec {spec_path}: must be a mapping of keys (dataset, source, ...)")
    return raw


def apply_override(raw: dict[str, Any], item: str) -> None:
    """Apply ``key.path=value`` to a raw spec mapping; the value is parsed as YAML (``7``, ``true``, ``[a, b]``)."""
    key, sep, text = item.partition("=")
    if not sep or not key.strip():
        raise SpecError(f"--set {item!r}: expected key.path=value")
    parts = key.strip().split(".")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        raise SpecError(f"--set {key}: value is not valid YAML") from None
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise SpecError(f"--set {key}: {'.'.join(parts[: i + 1])} is not a mapping")
        node = child
    node[parts[-1]] = value


def format_validation_error(exc: ValidationError) -> str:
    """One line: the first error's dotted key and message, plus how many more there are."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"] if _is_key(p))
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key"
    elif first["type"] == "missing":
        msg = "required key is missing"
    msg = msg.removeprefix("Value error, ")
    more = len({tuple(e["loc"]) for e in errors}) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return f"{loc}: {msg}{tail}" if loc else f"{msg}{tail}"


def _is_key(part: object) -> bool:
    # pydantic puts union member labels in locations ("condensation", "enum[Role]", "ColumnSpec"); drop them
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
    return spec.model_copy(update={"source": source, "publish": publish, "privacy": privacy})


def spec_sha256(spec: ReleaseSpec) -> str:
    """Hash of the resolved spec (canonical JSON), recorded in the manifest and the audit trail."""
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
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


def check_spec_against_header(spec: ReleaseSpec, header: list[str]) -> None:
    """Rules that need the input's column names: declared columns exist, a quasi-identifier and a class exist."""
    from ppdp.tasks.tag import quasi_identifier_candidates  # the same name rules the tag step applies

    where = spec.source.path.name
    present = set(header)
    for name in spec.columns:
        if name not in present:
            raise SpecError(f"spec columns.{name}: column '{name}' is not in {where}")
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
            raise SpecError(f"spec privacy.hierarchies.{name}: not a declared sensitive column")
    if spec.declared_class() is None:
        need = "the class_wise method and the utility check need it" if spec.method.needs_class else (
            "the utility check needs it"
        )
        raise SpecError(f"spec columns: no class column declared (role: class): {need}")


def preflight(spec: ReleaseSpec, check_root: bool = True) -> list[str]:
    """Checks that need only the input's header and the file system, before any data is read: the header,
    the spec against it, a writable publish root (unless ``check_root`` is False). Returns the header."""
    from ppdp.tasks.ingest import read_header
    from ppdp.tasks.publish import ensure_root

    header = read_header(spec.source)
    check_spec_against_header(spec, header)
    if check_root:
        ensure_root(spec.publish.root)
    return header
