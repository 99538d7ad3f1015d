"""The installed layout of the ``ppdp`` package as a folder of symlinks, for tools that read source files and cannot
follow the editable install's import hook (mypy: ``.ci/typecheck.py``; mkdocstrings: ``docs/hooks/ppdp_docs.py``).

pyproject.toml's ``[tool.setuptools.package-dir]`` maps the repository's folders into one namespace (``ppdp.tasks``
is ``tasks/``, ...); :func:`build_tree` lays out ``<tree>/ppdp/`` as ``ppdp/``'s entries plus one symlink per mapped
folder, rebuilt on every call.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "ppdp"


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """The folder of each subpackage of ``ppdp`` mapped by setuptools, e.g. ``{"tasks": "tasks"}``; a ValueError
    for a mapping this layout cannot follow (``ppdp`` itself elsewhere, a nested entry)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    if mapping.get(PACKAGE) != PACKAGE:
        raise ValueError(f"expected package-dir {PACKAGE!r} = {PACKAGE!r}, found {mapping.get(PACKAGE)!r}")
    subpackages = {}
    for name, folder in mapping.items():
        prefix, _, sub = name.partition(".")
        if prefix != PACKAGE or not sub:
            continue
        if "." in sub:
            raise ValueError(f"nested package-dir entry {name!r} is not supported by this script")
        subpackages[sub] = folder
    return subpackages


def build_tree(tree: Path, subpackages: dict[str, str], root: Path = ROOT) -> Path:
    """Lay out ``tree/ppdp/``: relative symlinks to ``ppdp/``'s entries and to each mapped folder."""
    package = tree / PACKAGE
    if package.is_symlink() or package.is_file():
        package.unlink()
    elif package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    for entry in sorted((root / PACKAGE).iterdir()):
        if entry.name == "__pycache__" or entry.name in subpackages:
            continue
        (package / entry.name).symlink_to(os.path.relpath(entry, package))
    for sub, folder in subpackages.items():
        (package / sub).symlink_to(os.path.relpath(root / folder, package), target_is_directory=True)
    return package
