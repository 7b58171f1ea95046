"""The runtime's layering rules, checked on the source: who may import what, and no manifests."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def _modules() -> list[Path]:
    return sorted(p for p in RUNTIME.rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    package = ".".join(("nvcre", *path.relative_to(RUNTIME.parent).with_suffix("").parts[:-1]))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
    return found


def _rel(path: Path) -> str:
    return path.relative_to(RUNTIME).as_posix()


def test_only_the_kube_package_imports_the_kubernetes_client():
    offenders = [
        _rel(p)
        for p in _modules()
        if not _rel(p).startswith("kube/") and any(m == "kubernetes" or m.startswith("kubernetes.") for m in _imports(p))
    ]
    assert offenders == []


def test_measure_judge_and_report_stay_pure():
    offenders = []
    for path in _modules():
        if _rel(path).split("/")[0] not in ("measure", "judge", "report"):
            continue
        for module in _imports(path):
            if module.startswith(("nvcre.runtime.kube", "nvcre.runtime.reconcile", "nvcre.runtime.controller")):
                offenders.append((_rel(path), module))
    assert offenders == []


def test_the_compiler_entry_points_are_called_from_one_module():
    entry = ("nvcre.compiler.plan", "nvcre.compiler.expand", "nvcre.compiler.render", "nvcre.compiler.workloadrun")
    callers = sorted(_rel(p) for p in _modules() if any(m.startswith(entry) for m in _imports(p)))
    assert callers == ["compile.py"]


def test_relative_imports_are_resolved_to_their_packages():
    imports = _imports(RUNTIME / "reconcile" / "job.py")
    assert "nvcre.runtime.kube.resources" in imports
    assert "nvcre.runtime.reconcile.conditions" not in imports  # "from . import conditions" names the package
    assert "nvcre.runtime.reconcile" in imports


def test_no_runtime_module_writes_an_api_version_literal():
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                for key in node.keys:
                    if isinstance(key, ast.Constant) and key.value == "apiVersion":
                        offenders.append(f"{_rel(path)}:{node.lineno}")
    assert offenders == []
