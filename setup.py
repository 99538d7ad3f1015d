"""Find ppdp's packages under the package-dir mapping of pyproject.toml (its only job; everything else is there).

``ppdp.tasks`` is the folder ``tasks/``, ``ppdp.flows`` is ``flows/`` and so on ([tool.setuptools.package-dir]).
setuptools' own ``find`` in pyproject.toml cannot follow such a mapping, so a package list written by hand there
missed a new subpackage once (``ppdp.tasks.privacy.risk``: a wheel install failed with ImportError). Here each mapped
folder is searched with ``find_packages`` and its packages are named under the folder's package.
"""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent


def mapped_packages() -> list[str]:
    """Every package of every folder of the mapping, under its mapped name (``tasks/core`` -> ``ppdp.tasks.core``)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    found = []
    for name, folder in mapping.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(str(ROOT / folder))]
    return sorted(found)


setup(packages=mapped_packages())
