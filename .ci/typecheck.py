"""Run mypy on the ``ppdp`` package as it is installed, and print paths as they are in the repository.

The package maps the repository's folders into one namespace (pyproject.toml ``[tool.setuptools.package-dir]``:
``ppdp.tasks`` is ``tasks/``, ...). The editable install resolves that with an import hook, which static type checkers
cannot follow, so this script lays the installed layout out as symlinks in ``build/typecheck/ppdp/`` (git-ignored):
the files of ``ppdp/`` plus one symlink per mapped folder, rebuilt on every run. mypy checks ``-p ppdp`` there with
the ``[tool.mypy]`` configuration of pyproject.toml, and each ``ppdp/<sub>/...`` path it prints is rewritten to the real
``<folder>/...`` path, so error locations open in an editor. Extra arguments are passed on to mypy.

Usage: ``make typecheck`` or ``.venv/bin/python .ci/typecheck.py [mypy options]``; exit status is mypy's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
PACKAGE = "ppdp"


def package_dirs() -> dict[str, str]:
    """The folder of each subpackage of ``ppdp`` mapped by setuptools, e.g. ``{"tasks": "tasks"}``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    if mapping.get(PACKAGE) != PACKAGE:
        sys.exit(f"typecheck: expected package-dir {PACKAGE!r} = {PACKAGE!r}, found {mapping.get(PACKAGE)!r}")
    subpackages = {}
    for name, folder in mapping.items():
        prefix, _, sub = name.partition(".")
        if prefix != PACKAGE or not sub:
            continue
        if "." in sub:
            sys.exit(f"typecheck: nested package-dir entry {name!r} is not supported by this script")
        subpackages[sub] = folder
    return subpackages


def build_tree(subpackages: dict[str, str]) -> Path:
    """Lay out build/typecheck/ppdp/: relative symlinks to ppdp/'s entries and to each mapped folder."""
    package = TREE / PACKAGE
    if package.is_symlink() or package.is_file():
        package.unlink()
    elif package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    source = ROOT / PACKAGE
    for entry in sorted(source.iterdir()):
        if entry.name == "__pycache__" or entry.name in subpackages:
            continue
        (package / entry.name).symlink_to(os.path.relpath(entry, package))
    for sub, folder in subpackages.items():
        (package / sub).symlink_to(os.path.relpath(ROOT / folder, package), target_is_directory=True)
    return package


def real_path(subpackages: dict[str, str]):
    """A function that rewrites a printed ``ppdp/<sub>/file.py`` at the start of a line to ``<folder>/file.py``."""
    subs = "|".join(re.escape(sub) for sub in sorted(subpackages, key=len, reverse=True))
    pattern = re.compile(rf"^{re.escape(PACKAGE)}/({subs})/", re.MULTILINE)
    return lambda text: pattern.sub(lambda match: subpackages[match.group(1)] + "/", text)


def main(argv: list[str]) -> int:
    subpackages = package_dirs()
    build_tree(subpackages)
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *argv, "-p", PACKAGE]
    # run from the tree so that `ppdp` resolves to it (the real ppdp/ would shadow it from the repository root)
    done = subprocess.run(command, cwd=TREE, capture_output=True, text=True)
    rewrite = real_path(subpackages)
    sys.stdout.write(rewrite(done.stdout))
    sys.stderr.write(rewrite(done.stderr))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
