"""Every Python package in the source folders is one the install ships.

pyproject lists its packages by name (the folders are not named after them), so a new
sub-package left off the list works in the editable install every test uses and is missing from
the wheel the controller image installs: ``nvcre.runtime.reconcile.job`` once was, and the image
could not start its controller.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return dict(tomllib.load(fh)["tool"]["setuptools"])


def _packages_on_disk(mapping: dict[str, str]) -> set[str]:
    found: set[str] = set()
    for package, folder in mapping.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            relative = init.parent.relative_to(base).parts
            found.add(".".join((package, *relative)))
    return found


def test_every_package_in_the_source_folders_is_listed_for_the_install() -> None:
    config = _setuptools()
    listed = set(config["packages"])
    on_disk = _packages_on_disk(config["package-dir"])
    assert sorted(on_disk - listed) == []
    assert sorted(listed - on_disk) == []


def test_a_package_left_off_the_list_is_found() -> None:
    config = _setuptools()
    listed = set(config["packages"]) - {"nvcre.runtime.reconcile.job"}
    assert "nvcre.runtime.reconcile.job" in _packages_on_disk(config["package-dir"]) - listed
