"""The documentation: the README's five-minute tour runs as written, and the site has a page for every method.

* every command of the README's tour is one the project accepts: a ``make`` target of the Makefile, or a ``ppdp``
  command whose subcommand, options and arguments the CLI's own parser accepts, on files the repository holds;
* the cheap command of the tour (``ppdp validate`` on the shipped table) is run for real;
* the whole tour runs for real in a copy of ``examples/`` (slow: it publishes a release);
* mkdocs.yml's nav lists a page for every registered method, and each page carries the marker the build fills
  with the method's parameters and example (``docs/hooks/ppdp_docs.py``);
* with mkdocs installed (``make docs`` installs it), ``mkdocs build --strict`` succeeds (slow).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tour_lines() -> list[str]:
    """The README's tour: the command lines of the first ``sh`` block after "## A five-minute tour"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## A five-minute tour" in readme, "the README lost its five-minute tour"
    block = readme.split("## A five-minute tour", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", makefile, flags=re.M))


def test_the_readme_has_the_two_commands_first_and_a_tour():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in first_block.splitlines()] == [["make", "demo"], ["make", "test"]]
    lines = tour_lines()
    assert lines[0] == "make demo"
    assert sum(line.startswith(".venv/bin/ppdp ") for line in lines) >= 4
    assert "table.csv" not in readme  # issue 34: the README's validate example named a file that does not exist
    targets = make_targets()
    for block in re.findall(r"```sh\n(.*?)```", readme, flags=re.S):  # every make command of the README exists
        for target in re.findall(r"^make (\S+)", block, flags=re.M):
            assert target in targets, f"README: make {target}: no such target in the Makefile"
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):  # the README's links into the documentation's pages
        assert (ROOT / link).is_file(), f"README links to {link}, which does not exist"
    assert len(readme.splitlines()) < 150, "the README is the short version: the rest belongs in docs/"


def _ppdp_command(args: list[str]):
    """The click command ``ppdp ARGS`` names, and the arguments left for it."""
    import typer

    from ppdp.flows.cli import app

    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name="ppdp")
    while hasattr(command, "list_commands"):
        assert args, "a ppdp group without a subcommand"
        if args[0].startswith("-"):  # an option of the group itself (ppdp --version)
            break
        sub = command.get_command(ctx, args[0])
        assert sub is not None, f"ppdp has no command {args[0]!r} (commands: {command.list_commands(ctx)})"
        command, args = sub, args[1:]
        ctx = command.context_class(command, info_name=sub.name, parent=ctx)
    return command, args


def _check_arguments(command, args: list[str], line: str) -> None:
    """Every option is one the command declares (and gets its value), and the positional arguments fit."""
    options = {}
    for param in command.params:
        if param.param_type_name == "option":
            for opt in [*param.opts, *param.secondary_opts]:
                options[opt] = param
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    positional, i = [], 0
    while i < len(args):
        token = args[i]
        if token.startswith("--"):
            name, eq, _ = token.partition("=")
            assert name in options, f"{line}: {name} is not an option of this command ({sorted(options)})"
            param = options[name]
            if not (param.is_flag or param.count) and not eq:
                assert i + 1 < len(args), f"{line}: {name} needs a value"
                i += 1
        else:
            positional.append(token)
        i += 1
    assert len(positional) <= len(arguments), f"{line}: {len(positional)} arguments, the command takes {len(arguments)}"
    required = [p for p in arguments if p.required]
    assert len(positional) >= len(required), f"{line}: missing a required argument"


def test_every_tour_command_is_one_the_project_accepts():
    targets = make_targets()
    checked = 0
    for line in tour_lines():
        if re.fullmatch(r"[A-Z_]+=\$\(.*\)", line):  # a shell variable the later lines use
            continue
        words = shlex.split(line)
        if words[0] == "make":
            assert words[1] in targets, f"{line}: no such make target ({sorted(targets)})"
        elif words[0] == "ls":
            continue
        else:
            assert words[0] in (".venv/bin/ppdp", "ppdp"), f"{line}: not a ppdp or make command"
            command, args = _ppdp_command(words[1:])
            _check_arguments(command, args, line)
        for word in words[1:]:  # files the tour reads must be in the repository (releases are made by make demo)
            if word.startswith("examples/") and not word.startswith("examples/releases"):
                assert (ROOT / word).exists(), f"{line}: {word} is not in the repository"
        checked += 1
    assert checked >= 5


def test_every_ppdp_command_in_the_docs_is_one_the_cli_accepts():
    """The docs' ``sh`` blocks: each complete ``ppdp`` line (no placeholder such as SPEC, [--opt], $VAR, ...) names a
    command, options and arguments the CLI's parser accepts."""
    checked = 0
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S):
            for raw in block.splitlines():
                line = re.sub(r"\s+#.*$", "", raw).strip()
                if not line.startswith((".venv/bin/ppdp ", "ppdp ")) or line.endswith("\\"):
                    continue
                words = shlex.split(line)
                if any("[" in w or "..." in w or "|" in w or w.startswith("$") or w == ">"
                       or re.fullmatch(r"[A-Z_]+/?", w) for w in words):
                    continue  # a synopsis with placeholders, not a command to run as written
                command, args = _ppdp_command(words[1:])
                _check_arguments(command, args, f"{page.relative_to(ROOT)}: {line}")
                checked += 1
    assert checked >= 20


def test_the_tours_validate_command_runs_as_written():
    line = next(line for line in tour_lines() if line.startswith(".venv/bin/ppdp validate examples/data/"))
    words = shlex.split(line)
    done = subprocess.run([str(BIN / "ppdp"), *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)
    # the raw demo table is not 5-anonymous: the README says the command exits 3, naming the failed gates
    assert done.returncode == 3, done.stderr
    assert re.search(r"\bk\b", done.stdout) and re.search(r"fail", done.stdout, flags=re.I), done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_readme_tour_runs_as_written_on_a_copy_of_the_examples(tmp_path):
    """The tour's lines in one shell, in a folder holding a copy of examples/ and the Makefile's demo command; each
    line exits 0, save the validate of the raw table (3: not k-anonymous, as the README says)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("releases", "__pycache__"))
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "bin").symlink_to(BIN, target_is_directory=True)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo:.*\n(?:\t.*\n)*?\t(\$\(BIN\)/ppdp run .+)$", makefile, flags=re.M)
    assert demo, "the Makefile has no demo recipe"
    recipe = demo.group(1).replace("$(BIN)", ".venv/bin")
    script = []
    lines = tour_lines()
    for line in lines:
        command = recipe if line == "make demo" else line
        script.append(f'{command}\necho "@@rc=$?"')
    env = {**os.environ, "PPDP_CONFIG_DIR": str(tmp_path / "config")}
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=900)
    codes = [int(code) for code in re.findall(r"^@@rc=(\d+)$", done.stdout, flags=re.M)]
    assert len(codes) == len(lines), done.stdout[-3000:] + done.stderr[-3000:]
    for line, code in zip(lines, codes):
        expected = 3 if line.startswith(".venv/bin/ppdp validate examples/data/") else 0
        assert code == expected, f"{line}: exit {code}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    published = sorted((tmp_path / "examples" / "releases" / "census_demo").glob("2*/manifest.json"))
    assert len(published) == 1, "the tour publishes one release (make demo)"


def nav_files() -> list[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    found: list[str] = []

    def walk(node) -> None:
        if isinstance(node, str):
            found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(config["nav"])
    return found


def test_the_docs_nav_has_a_page_for_every_registered_method():
    from ppdp.tasks.sanitize.registry import REGISTRY

    pages = set(nav_files())
    for name in REGISTRY:
        page = f"methods/{name}.md"
        assert page in pages, f"method {name!r} has no page in mkdocs.yml's nav (docs/{page})"
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert f"<!-- ppdp:method {name} -->" in text, f"docs/{page} lacks its parameters marker"
    for page in pages:
        assert (ROOT / "docs" / page).is_file(), f"mkdocs.yml's nav lists docs/{page}, which does not exist"


def test_the_docs_hook_renders_every_method_from_the_code():
    spec = importlib.util.spec_from_file_location("ppdp_docs_hook", ROOT / "docs" / "hooks" / "ppdp_docs.py")
    assert spec and spec.loader
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    from ppdp.schemas.params import PARAMS

    for name, params in PARAMS.items():
        section = hook.method_section(name)
        for key in params.model_fields:
            assert f"| `{key}` |" in section, f"{name}: parameter {key} missing from its page"
        assert f"`{params.unit}`" in section
    with pytest.raises(ValueError, match="not a registered method"):
        hook.method_section("no_such_method")


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    mkdocs = BIN / "mkdocs"
    if not mkdocs.exists():
        pytest.skip("mkdocs is not installed (make docs installs the docs extra)")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    assert (tmp_path / "site" / "methods" / "mdav.html").is_file()
