"""The Job tier is a coordinator over parts: no inheritance between them, none holding its owner.

Read from the source (AST): every class of ``runtime/reconcile/job/`` but the coordinator stands
alone (a Protocol or Enum at most), no part imports the package it belongs to (the coordinator),
not even for type checking, no class is longer than about 300 lines, no two classes of
``runtime/reconcile/`` share a name, and the tier stands at most five layers high in
``runtime/reconcile/``'s import graph (every import counted, lazy and type-checking ones too).
Each check is also run on a small tree that breaks it.
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
RECONCILE = REPO / "runtime" / "reconcile"
#: bases a part may have besides the package's Protocols: none carries another part's behaviour
NEUTRAL_BASES = {"Protocol", "Enum"}
MAX_CLASS_LINES = 300
MAX_LAYERS = 5


def _classes(path: Path) -> list[ast.ClassDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))}


def _imports_own_package(path: Path) -> bool:
    """Whether ``path`` (a module inside the job package) imports the package itself."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            own = node.level == 1 and node.module is None
            absolute = node.level == 0 and node.module == "nvcre.runtime.reconcile.job"
            parent = node.level == 2 and node.module is None and any(a.name == "job" for a in node.names)
            if own or absolute or parent:
                return True
    return False


def _module_name(reconcile: Path, path: Path) -> str:
    parts = path.relative_to(reconcile).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _imported(reconcile: Path, path: Path, known: set[str]) -> set[str]:
    """The modules of ``reconcile`` that ``path`` imports (relative imports only, as the tiers write them)."""
    name = _module_name(reconcile, path)
    package = [p for p in name.split(".") if p] if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if not isinstance(node, ast.ImportFrom) or node.level == 0:
            continue
        if node.level - 1 > len(package):
            continue  # above runtime/reconcile
        base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
        for alias in node.names:
            for candidate in (".".join([*base, alias.name]), ".".join(base)):
                if candidate in known:
                    found.add(candidate)
                    break
    return found


def layers(reconcile: Path, start: str) -> int:
    """How many layers the import chain from ``start`` (a module of ``reconcile``) spans at most."""
    paths = {_module_name(reconcile, p): p for p in reconcile.rglob("*.py")}
    graph = {name: _imported(reconcile, path, set(paths)) - {name} for name, path in paths.items()}
    memo: dict[str, int] = {}

    def depth(name: str, trail: frozenset[str]) -> int:
        if name not in memo:
            memo[name] = 1 + max((depth(c, trail | {name}) for c in graph[name] if c not in trail), default=0)
        return memo[name]

    return depth(start, frozenset())


def problems(reconcile: Path) -> list[str]:
    """Every way the Job tier under ``reconcile/job/`` breaks its shape, one line each."""
    job = reconcile / "job"
    if not (job / "__init__.py").is_file():
        return ["the Job tier is not a package"]
    found = [f"{p.name} is a Job-tier module outside the package" for p in reconcile.glob("job*.py")]
    coordinator = [c for c in _classes(job / "__init__.py") if c.name == "JobReconciler"]
    if not coordinator or _base_names(coordinator[0]) != {"StatusTier"}:
        found.append("the package does not define JobReconciler(StatusTier)")
    parts = sorted(p for p in job.glob("*.py") if p.name != "__init__.py")
    classes = {c.name: c for p in job.glob("*.py") for c in _classes(p)}
    protocols = {name for name, c in classes.items() if "Protocol" in _base_names(c)}
    for path in parts:
        if _imports_own_package(path):
            found.append(f"{path.name} imports the job package (its coordinator)")
        for node in _classes(path):
            behaviour = _base_names(node) - NEUTRAL_BASES - protocols
            if behaviour:
                found.append(f"{path.name}: {node.name} inherits from {', '.join(sorted(behaviour))}")
    for path in job.glob("*.py"):
        for node in _classes(path):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_CLASS_LINES:
                found.append(f"{path.name}: {node.name} has {length} lines")
    height = layers(reconcile, "job")
    if height > MAX_LAYERS:
        found.append(f"the Job tier stands {height} layers high")
    names = Counter(c.name for path in reconcile.rglob("*.py") for c in _classes(path))
    found += [f"two classes are named {name}" for name, count in names.items() if count > 1]
    return found


def test_the_job_tier_keeps_its_shape() -> None:
    assert len(list((RECONCILE / "job").glob("*.py"))) > 2
    assert problems(RECONCILE) == []


GOOD_INIT = "class JobReconciler(StatusTier):\n    pass\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"job.py": "class JobReconciler:\n    pass\n"}, "the Job tier is not a package"),
        ({"job/__init__.py": GOOD_INIT, "job_base.py": "X = 1\n"}, "job_base.py is a Job-tier module outside the package"),
        ({"job/__init__.py": "class JobReconciler(Base):\n    pass\n"}, "does not define JobReconciler(StatusTier)"),
        (
            {"job/__init__.py": GOOD_INIT, "job/a.py": "class A:\n    pass\n", "job/b.py": "from .a import A\nclass B(A):\n    pass\n"},
            "b.py: B inherits from A",
        ),
        (
            {
                "job/__init__.py": GOOD_INIT,
                "job/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import JobReconciler\n",
            },
            "a.py imports the job package",
        ),
        ({"job/__init__.py": GOOD_INIT, "job/a.py": "class A:\n" + "    x = 1\n" * 300}, "a.py: A has 301 lines"),
        (
            {"job/__init__.py": GOOD_INIT, "job/a.py": "class Verdicts:\n    pass\n", "ports.py": "class Verdicts:\n    pass\n"},
            "two classes",
        ),
    ],
)
def test_each_rule_reports_a_tree_that_breaks_it(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    found = problems(tmp_path)
    assert len(found) == 1 and expected in found[0], found


def test_a_part_may_implement_the_packages_protocols(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "__init__.py").write_text(GOOD_INIT, encoding="utf-8")
    (tmp_path / "job" / "parts.py").write_text("class P(Protocol):\n    pass\nclass Q(P, Protocol):\n    pass\n", encoding="utf-8")
    (tmp_path / "job" / "a.py").write_text("from .parts import Q\nclass A(Q):\n    pass\nclass E(Enum):\n    X = 1\n", encoding="utf-8")
    assert problems(tmp_path) == []
