"""The Workflow tier is a short coordinator over parts that never reach it or one another.

Read from the source (AST) of ``runtime/reconcile/workflow/``: a part imports, of its own
package, only the shared names (``spec``) and the Protocols (``ports``), so no part can hold the
coordinator or a sibling except through what it is handed; nothing there imports under
``TYPE_CHECKING`` (the loop the mixins closed that way is gone for good); no class runs past
about 300 lines; and the coordinator inherits only the status-tier shape. Each check is also
run on a small tree that breaks it.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from nvcre.runtime.reconcile.tier import StatusTier
from nvcre.runtime.reconcile.workflow import WorkflowReconciler

PACKAGE = Path(__file__).resolve().parents[4] / "runtime" / "reconcile" / "workflow"
#: what every part may import from its own package
SHARED = {"spec", "ports"}
MAX_CLASS_LINES = 300


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _sibling_imports(tree: ast.Module) -> set[str]:
    """The modules of the same package a module imports (``from .x import``, ``from . import x``)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update([node.module] if node.module else [alias.name for alias in node.names])
    return found


def _type_checking_blocks(tree: ast.Module) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
    )


def _long_classes(tree: ast.Module) -> list[str]:
    return [
        f"{node.name}: {(node.end_lineno or node.lineno) - node.lineno + 1} lines"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_CLASS_LINES
    ]


def problems(package: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(package.glob("*.py")):
        tree = _tree(path)
        if path.name != "__init__.py":
            found += [f"{path.name} imports the part {name}" for name in sorted(_sibling_imports(tree) - SHARED)]
        if _type_checking_blocks(tree):
            found.append(f"{path.name} imports under TYPE_CHECKING")
        found += [f"{path.name}: class {text}" for text in _long_classes(tree)]
    return found


def test_the_workflow_tier_is_a_coordinator_over_parts() -> None:
    parts = {"access.py", "delete.py", "diagnose.py", "groups.py", "iterations.py", "launch.py", "results.py"}
    assert parts <= {p.name for p in PACKAGE.glob("*.py")}, "the Workflow tier's parts are missing"
    assert problems(PACKAGE) == []


def test_the_coordinator_inherits_only_the_status_tier_shape() -> None:
    assert [c for c in WorkflowReconciler.__mro__ if c.__module__.startswith("nvcre")] == [WorkflowReconciler, StatusTier]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"groups.py": "from .launch import Launcher\n"}, "groups.py imports the part launch"),
        ({"diagnose.py": "from . import results\n"}, "diagnose.py imports the part results"),
        ({"groups.py": "def f():\n    from . import WorkflowReconciler\n"}, "groups.py imports the part WorkflowReconciler"),
        (
            {"diagnose.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .spec import FINALIZER\n"},
            "diagnose.py imports under TYPE_CHECKING",
        ),
        ({"launch.py": "class Launcher:\n" + "    x = 1\n" * MAX_CLASS_LINES}, "launch.py: class Launcher: 301 lines"),
    ],
)
def test_each_check_reports_a_part_that_breaks_it(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    for name, text in {"__init__.py": "from .groups import RunningGroups\n", **files}.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    assert problems(tmp_path) == [expected]


def test_a_part_may_import_the_shared_names_and_the_protocols(tmp_path: Path) -> None:
    (tmp_path / "groups.py").write_text("from .ports import Results\nfrom .spec import is_diagnose\nfrom .. import conditions\n")
    assert problems(tmp_path) == []
