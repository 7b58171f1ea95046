"""The reconcile package stands in at most five layers: each module above everything it imports.

Every import counts, ``TYPE_CHECKING`` ones and those inside functions included, so a circle hidden
from the interpreter at load time is still a circle here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "nvcre.runtime.reconcile"
MAX_LAYERS = 5


def _module_name(path: Path, top: Path, package: str) -> str:
    parts = list(path.relative_to(top).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def _targets(node: ast.AST, importer: str, is_package: bool) -> list[str]:
    """The module names one import statement may name (``from a import b`` may name ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        stem = ".".join([*base, node.module] if node.module else base)
    else:
        stem = node.module or ""
    return [stem, *(f"{stem}.{alias.name}" for alias in node.names)]


def import_graph(top: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports."""
    files = {_module_name(path, top, package): path for path in sorted(top.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node, name, path.name == "__init__.py"):
                if target in files and target != name:
                    graph[name].add(target)
    return graph


def layers(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's layer (1 for a module importing none of the tree); ValueError on a circle."""
    found: dict[str, int] = {}

    def visit(name: str, path: tuple[str, ...]) -> int:
        if name in path:
            circle = [*path[path.index(name) :], name]
            raise ValueError("import circle: " + " -> ".join(circle))
        if name not in found:
            found[name] = 1 + max((visit(dep, (*path, name)) for dep in sorted(graph[name])), default=0)
        return found[name]

    for name in sorted(graph):
        visit(name, ())
    return found


def test_the_reconcile_package_has_at_most_five_layers_and_no_circle() -> None:
    found = layers(import_graph(ROOT / "runtime" / "reconcile", PACKAGE))
    deepest = max(found.values())
    too_deep = sorted(name for name, layer in found.items() if layer > MAX_LAYERS)
    assert deepest <= MAX_LAYERS, f"{deepest} layers in {PACKAGE}: {too_deep}"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    top = tmp_path / "reconcile"
    for name, text in files.items():
        path = top / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return top


def test_a_circle_through_a_type_checking_import_is_found(tmp_path: Path) -> None:
    top = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import thing\n",
        },
    )
    with pytest.raises(ValueError, match="import circle"):
        layers(import_graph(top, "pkg"))


def test_a_chain_counts_one_layer_per_module(tmp_path: Path) -> None:
    files = {"__init__.py": ""}
    for index in range(7):
        files[f"m{index}.py"] = f"from .m{index + 1} import x\n" if index < 6 else "x = 1\n"
    found = layers(import_graph(_tree(tmp_path, files), "pkg"))
    assert found["pkg.m0"] == 7 and found["pkg.m6"] == 1
    nested = _tree(
        tmp_path / "n",
        {"__init__.py": "", "job/__init__.py": "from .part import y\n", "job/part.py": "from .. import base\n", "base.py": ""},
    )
    assert layers(import_graph(nested, "pkg")) == {"pkg": 1, "pkg.base": 1, "pkg.job": 3, "pkg.job.part": 2}
