"""mkdocs hooks of the ppdp documentation (mkdocs.yml ``hooks:``): the parts of the site that are read from the code.

* ``on_startup`` lays the installed package out as symlinks in ``build/docs/ppdp/`` (``ppdp/``'s files plus one
  symlink per folder of pyproject.toml's ``[tool.setuptools.package-dir]``: ``ppdp.tasks`` is ``tasks/``), so that
  mkdocstrings (griffe, which reads source files and cannot follow the editable install's import hook) resolves
  ``ppdp.*``. mkdocs.yml points the python handler's ``paths`` at ``build/docs``.
* ``<!-- ppdp:method NAME -->`` in a page becomes the method's facts (what it protects, its privacy unit, its
  tunable parameter and the safer direction), its parameter table (from the pydantic model of the spec's
  ``method`` section: name, type, default, description) and its example spec from ``examples/``.
* ``<!-- ppdp:methods -->`` becomes the table of every registered method.
* ``<!-- ppdp:gates k,alpha -->`` becomes the table of those keys of the spec's ``privacy`` section (meaning, the
  privacy units each gate applies to); ``<!-- ppdp:floor -->`` the safety floor's rows;
  ``<!-- ppdp:spec -->`` every key of the release spec, section by section.
* ``<!-- ppdp:cli -->`` becomes the help of every ``ppdp`` command, as ``ppdp COMMAND --help`` prints it.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "docs"
MARKER = re.compile(r"<!--\s*ppdp:(\w+)(?:\s+([\w,]+))?\s*-->")


def _package_tree() -> ModuleType:
    """``.ci/package_tree.py``, which lays the package out as symlinks for mypy too (loaded by path: ``.ci`` is no
    package)."""
    spec = importlib.util.spec_from_file_location("ppdp_package_tree", ROOT / ".ci" / "package_tree.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_tree() -> Path:
    """build/docs/ppdp/: relative symlinks to ppdp/'s entries and to each mapped folder (rebuilt every build)."""
    tree = _package_tree()
    return tree.build_tree(TREE, tree.package_dirs(ROOT), ROOT)


def on_startup(command: str, dirty: bool) -> None:
    # before the plugins' on_config: mkdocstrings' python handler takes its search paths that exist at that point
    build_tree()


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _type(annotation: object) -> str:
    text = str(annotation).replace("typing.", "")
    text = re.sub(r"<class '([\w.]+)'>", r"\1", text)
    text = re.sub(r"\b(?:ppdp|pydantic|pathlib)\.[\w.]*?(\w+)\b(?!\.)", r"\1", text)
    return text.replace(" | ", " or ")  # a "|" inside a code span would break the table


def _constraints(metadata: list[object]) -> str:
    words = []
    for item in metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                words.append(f"{sign} {value}")
    return ", ".join(words)


def method_section(name: str) -> str:
    """The facts, the parameter table and the example spec of one registered method."""
    from pydantic_core import PydanticUndefined

    from ppdp.schemas.params import PARAMS
    from ppdp.tasks.sanitize.registry import REGISTRY

    if name not in REGISTRY:
        raise ValueError(f"ppdp:method {name}: not a registered method ({', '.join(sorted(REGISTRY))})")
    cls, params = REGISTRY[name], PARAMS[name]
    protects = getattr(cls, "protects", None)
    tunable = ", ".join(f"`{p}` ({safer} is safer)" for p, safer in params.tunable.items()) or "none"
    lines = [
        "| fact | |", "|---|---|",
        f"| spec | `method: {{name: {name}}}` |",
        f"| what it does | {_cell(cls.description)} |",
        f"| protects | {_cell(protects if isinstance(protects, str) else 'see below')} |",
        f"| privacy unit | `{params.unit}` |",
        f"| release shape | `{cls.shape}` |",
        f"| tunable | {tunable} |",
        f"| keeps groups across a series (`series.keep_groups`) | {'yes' if params.keeps_groups else 'no'} |",
        f"| code | `tasks/sanitize/{name}.py`, parameters `schemas/params/{name}.py` |",
        "", "### Parameters", "",
        "Every key of the spec's `method` section (from `" + params.__name__ + "`; a key not listed is an error):",
        "", "| key | type | default | constraints | meaning |", "|---|---|---|---|---|",
    ]
    for key, field in params.model_fields.items():
        default = "required" if field.default is PydanticUndefined else f"`{field.default!r}`"
        if field.default_factory is not None:
            default = f"`{field.default_factory()!r}`"  # type: ignore[call-arg]
        lines.append(f"| `{key}` | `{_cell(_type(field.annotation))}` | {_cell(default)} | "
                     f"{_cell(_constraints(field.metadata))} | {_cell(field.description or '')} |")
    examples = sorted(path for path in (ROOT / "examples").glob("*.yaml")
                      if re.search(rf"^method:\s*\n\s+name:\s*{name}\s*$", path.read_text(encoding="utf-8"), re.M))
    if examples:
        lines += ["", "### Example spec", ""]
        for path in examples:
            rel = path.relative_to(ROOT).as_posix()
            lines += [f"`{rel}` (run it with `.venv/bin/ppdp run {rel}`):", "", "```yaml",
                      path.read_text(encoding="utf-8").rstrip("\n"), "```", ""]
    return "\n".join(lines) + "\n"


def methods_table() -> str:
    from ppdp.schemas.params import PARAMS
    from ppdp.tasks.sanitize.registry import REGISTRY

    lines = ["| method | protects | privacy unit | what it does |", "|---|---|---|---|"]
    for name in sorted(REGISTRY):
        cls = REGISTRY[name]
        protects = getattr(cls, "protects", None)
        lines.append(f"| [`{name}`]({name}.md) | {_cell(protects if isinstance(protects, str) else 'see page')} | "
                     f"`{PARAMS[name].unit}` | {_cell(cls.description)} |")
    return "\n".join(lines) + "\n"


def gates_table(keys: list[str]) -> str:
    """The listed keys of the spec's ``privacy`` section: meaning, default, and the units a gate applies to."""
    from ppdp.schemas.privacy import GATE_UNITS, PrivacyPolicy

    lines = ["| key | meaning | applies to (privacy unit) |", "|---|---|---|"]
    for key in keys:
        field = PrivacyPolicy.model_fields[key]  # a KeyError names a key the page lists that the policy lacks
        units = ", ".join(f"`{unit}`" for unit in GATE_UNITS.get(key, ())) or "(a setting of a gate)"
        lines.append(f"| `privacy.{key}` | {_cell(field.description or '')} | {units} |")
    return "\n".join(lines) + "\n"


def _field_rows(model: Any, prefix: str) -> list[str]:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    rows = []
    for key, field in model.model_fields.items():
        if field.default is PydanticUndefined and field.default_factory is None:
            default = "required"
        else:
            value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
            default = "(its keys' defaults)" if isinstance(value, BaseModel) else f"`{value!r}`"
        rows.append(f"| `{prefix}{key}` | `{_cell(_type(field.annotation))}` | {_cell(default)} | "
                    f"{_cell(field.description or '')} |")
    return rows


def spec_table() -> str:
    """Every key of the release spec, one section (a nested model) at a time; ``method`` is on the method pages and
    ``privacy`` on the privacy model pages."""
    from pydantic import BaseModel

    from ppdp.schemas.spec import ReleaseSpec

    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    lines += _field_rows(ReleaseSpec, "")
    for key, field in ReleaseSpec.model_fields.items():
        model = field.annotation
        if key in ("method", "privacy") or not (isinstance(model, type) and issubclass(model, BaseModel)):
            continue
        lines += ["", f"### `{key}`", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        lines += _field_rows(model, f"{key}.")
    return "\n".join(lines) + "\n"


def floor_table() -> str:
    from ppdp.schemas.privacy import FLOOR

    lines = ["| row | applies to | figure | limit | re-checked from | where the limit comes from |",
             "|---|---|---|---|---|---|"]
    for rule in FLOOR:
        lines.append(f"| `{rule.key}` | {', '.join(rule.applies)} | {_cell(rule.figure)} | {rule.comparison} "
                     f"{rule.limit:g} | {rule.recheck} | {_cell(rule.source)} |")
    return "\n".join(lines) + "\n"


def cli_reference() -> str:
    """Every command's help as ``ppdp COMMAND --help`` prints it in an 88-column terminal, without colours (typer's
    rich help recorded as text; typer's plain click help when rich is not installed)."""
    import typer
    import typer.core

    from ppdp.flows.cli import app

    recorded: list[Any] = []
    patched = None
    if typer.core.HAS_RICH:
        import typer.rich_utils as rich_utils
        from rich.console import Console

        patched = rich_utils._get_rich_console

        def recording_console(stderr: bool = False) -> Console:
            console = Console(record=True, width=88, color_system=None, force_terminal=False, highlight=False,
                              file=open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - recorded, not written
            recorded.append(console)
            return console

        rich_utils._get_rich_console = recording_console  # type: ignore[assignment]
    try:
        command = typer.main.get_command(app)
        parts: list[str] = []

        def walk(cmd: Any, path: list[str], parent: Any) -> None:
            ctx = cmd.context_class(cmd, info_name=path[-1], parent=parent, terminal_width=88, max_content_width=88)
            before = len(recorded)
            text = cmd.get_help(ctx)
            if len(recorded) > before:
                text = recorded[-1].export_text()
                recorded[-1].file.close()
            text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
            parts.extend([f"## `{' '.join(path)}`", "", "```text", text, "```", ""])
            if hasattr(cmd, "list_commands"):
                for sub in cmd.list_commands(ctx):
                    walk(cmd.get_command(ctx, sub), [*path, sub], ctx)

        walk(command, ["ppdp"], None)
    finally:
        if patched is not None:
            rich_utils._get_rich_console = patched
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    def expand(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2)
        if kind == "method" and arg:
            return method_section(arg)
        if kind == "methods":
            return methods_table()
        if kind == "gates" and arg:
            return gates_table(arg.split(","))
        if kind == "spec":
            return spec_table()
        if kind == "floor":
            return floor_table()
        if kind == "cli":
            return cli_reference()
        raise ValueError(f"{page.file.src_path}: unknown marker {match.group(0)}")

    return MARKER.sub(expand, markdown)
