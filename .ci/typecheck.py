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

import re
import subprocess
import sys
from pathlib import Path

from package_tree import PACKAGE, build_tree, package_dirs  # .ci/package_tree.py (this script's folder)

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"


def real_path(subpackages: dict[str, str]):
    """A function that rewrites a printed ``ppdp/<sub>/file.py`` at the start of a line to ``<folder>/file.py``."""
    subs = "|".join(re.escape(sub) for sub in sorted(subpackages, key=len, reverse=True))
    pattern = re.compile(rf"^{re.escape(PACKAGE)}/({subs})/", re.MULTILINE)
    return lambda text: pattern.sub(lambda match: subpackages[match.group(1)] + "/", text)


def main(argv: list[str]) -> int:
    try:
        subpackages = package_dirs(ROOT)
    except ValueError as exc:
        sys.exit(f"typecheck: {exc}")
    build_tree(TREE, subpackages, ROOT)
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *argv, "-p", PACKAGE]
    # run from the tree so that `ppdp` resolves to it (the real ppdp/ would shadow it from the repository root)
    done = subprocess.run(command, cwd=TREE, capture_output=True, text=True)
    rewrite = real_path(subpackages)
    sys.stdout.write(rewrite(done.stdout))
    sys.stderr.write(rewrite(done.stderr))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
