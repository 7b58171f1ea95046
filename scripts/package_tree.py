#!/usr/bin/env python3
"""Lay the checkout out as the installed ``nvcre`` package, for tools that read source trees.

The source folders are not named after their packages (``compiler/`` is ``nvcre.compiler``, as
``[tool.setuptools.package-dir]`` in pyproject.toml maps them). An editable install resolves
that at import time, but tools that walk files (mypy, import-linter, pydeps) need a directory
named ``nvcre``. This script is the one way the project builds it: a tree of symbolic links read
from pyproject's package-dir, so a new package folder needs no second list anywhere.

    python scripts/package_tree.py [TARGET]     # default build/package-tree; prints TARGET

then point the tool at TARGET (``MYPYPATH=TARGET mypy``, ``PYTHONPATH=TARGET pydeps nvcre``).
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def package_dirs(pyproject: Path = REPO / "pyproject.toml") -> dict[str, str]:
    """Package name -> source folder (relative to the checkout), from pyproject's package-dir."""
    with pyproject.open("rb") as fh:
        config = tomllib.load(fh)
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {str(package): str(folder) for package, folder in mapping.items()}


def build_tree(target: Path, repo: Path = REPO) -> Path:
    """(Re)create ``target`` with ``target/nvcre/...`` linking to the source folders; return it."""
    shutil.rmtree(target, ignore_errors=True)
    for package, folder in sorted(package_dirs(repo / "pyproject.toml").items()):
        where = target.joinpath(*package.split("."))
        source = (repo / folder).resolve()
        if package.count(".") == 0:
            # the top package's folder also holds the others' links: link its files one by one
            where.mkdir(parents=True, exist_ok=True)
            for path in sorted(source.glob("*.py")):
                (where / path.name).symlink_to(path)
        else:
            where.parent.mkdir(parents=True, exist_ok=True)
            where.symlink_to(source, target_is_directory=True)
    return target


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else REPO / "build" / "package-tree"
    print(build_tree(target.resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
