"""Layer contracts, read from the source tree's imports (AST), plus one live check of the render path.

The layers (docs/architecture.md): the compiler imports nothing from the runtime, the CLI or
the test harness, nor the Kubernetes client; within the runtime only ``nvcre.runtime.kube``
talks to ``kubernetes``; measuring, judging and reporting never reach the client or the
reconcilers, and reports read only the verdict model; the runtime builds no manifest of its
own (no dict literal with an ``apiVersion`` key: manifests come from the compiler); the CLI
loads the test harness only inside command bodies. The checks walk whatever modules exist, so
they hold while packages grow, and a negative test proves each one can fail.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Source folders and the package each one is installed as (pyproject's package-dir).
PACKAGES = {
    "pkg": "nvcre",
    "compiler": "nvcre.compiler",
    "runtime": "nvcre.runtime",
    "cli": "nvcre.cli",
    "testing": "nvcre.testing",
    "catalog": "nvcre.catalog",
    "platforms": "nvcre.platforms",
}


@dataclass(frozen=True)
class Import:
    """One imported module as seen from ``importer``; ``at_load`` when it runs on import."""

    importer: str
    target: str
    names: tuple[str, ...]
    at_load: bool
    line: int


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module


def modules(root: Path) -> list[Module]:
    out = []
    for folder, package in PACKAGES.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            out.append(Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(module: Module) -> list[Import]:
    """Every import in ``module``, relative ones resolved; ``if TYPE_CHECKING`` blocks skipped."""
    is_package = module.path.name == "__init__.py"
    here = module.name.split(".") if is_package else module.name.split(".")[:-1]
    out: list[Import] = []

    def visit(node: ast.AST, at_load: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit_stmt(stmt, at_load)
                continue
            visit_stmt(child, at_load)

    def visit_stmt(child: ast.AST, at_load: bool) -> None:
        if isinstance(child, ast.Import):
            for alias in child.names:
                out.append(Import(module.name, alias.name, (), at_load, child.lineno))
        elif isinstance(child, ast.ImportFrom):
            if child.level:
                base = here[: len(here) - child.level + 1]
                target = ".".join(base + ([child.module] if child.module else []))
            else:
                target = child.module or ""
            out.append(Import(module.name, target, tuple(a.name for a in child.names), at_load, child.lineno))
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            visit(child, False)
        else:
            visit(child, at_load)

    visit(module.tree, True)
    return out


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _reaches(imp: Import, package: str) -> bool:
    """The import loads ``package`` or something inside it (``from x import y`` may name a module)."""
    return _under(imp.target, package) or any(_under(f"{imp.target}.{name}", package) for name in imp.names)


def violations(root: Path) -> list[str]:
    """Every broken layer contract in the source tree at ``root``, one line each."""
    found: list[str] = []
    for module in modules(root):
        name = module.name
        for imp in imports(module):
            where = f"{module.path.relative_to(root)}:{imp.line}: {name} imports {imp.target}"
            if _under(name, "nvcre.compiler"):
                for banned in ("nvcre.runtime", "nvcre.cli", "nvcre.testing", "kubernetes"):
                    if _reaches(imp, banned):
                        found.append(f"{where} (the compiler may not import {banned})")
            if _under(name, "nvcre.runtime") and not _under(name, "nvcre.runtime.kube") and _reaches(imp, "kubernetes"):
                found.append(f"{where} (only nvcre.runtime.kube may import kubernetes)")
            if any(_under(name, f"nvcre.runtime.{part}") for part in ("measure", "judge", "report")):
                for banned in ("nvcre.runtime.kube", "nvcre.runtime.reconcile"):
                    if _reaches(imp, banned):
                        found.append(f"{where} (measure, judge and report may not import {banned})")
            if _under(name, "nvcre.runtime.report") and _reaches(imp, "nvcre.runtime.judge"):
                allowed = _under(imp.target, "nvcre.runtime.judge.model") or (
                    imp.target == "nvcre.runtime.judge" and set(imp.names) == {"model"}
                )
                if not allowed:
                    found.append(f"{where} (reports may import only the verdict model, nvcre.runtime.judge.model)")
            if _under(name, "nvcre.cli") and imp.at_load and _reaches(imp, "nvcre.testing"):
                found.append(f"{where} (the CLI may load the test harness only inside a command)")
        if _under(name, "nvcre.runtime"):
            found += [f"{module.path.relative_to(root)}:{line}: {name} {what}" for line, what in _manifest_literals(module.tree)]
    return found


def _manifest_literals(tree: ast.Module) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "apiVersion" for k in node.keys):
            out.append((node.lineno, "writes a dict literal with an apiVersion key (manifests come from the compiler)"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "dict"
            and any(kw.arg == "apiVersion" for kw in node.keywords)
        ):
            out.append((node.lineno, "builds a dict with an apiVersion key (manifests come from the compiler)"))
    return out


# --------------------------------------------------------------------------- the real tree


def test_the_source_tree_keeps_its_layers() -> None:
    assert modules(REPO), "no modules found: the package map is wrong"
    assert violations(REPO) == []


def test_the_walk_sees_the_compiler_and_its_lazy_imports() -> None:
    compiler = [m for m in modules(REPO) if m.name == "nvcre.compiler.render"]
    assert compiler, "nvcre.compiler.render not found"
    found = imports(compiler[0])
    assert any(i.target == "nvcre.compiler.pipeline" and i.at_load for i in found)
    assert any(i.target == "nvcre.compiler.api.validate" and not i.at_load for i in found)


def test_rendering_never_loads_the_kubernetes_client() -> None:
    probe = textwrap.dedent(
        """
        import io, sys, contextlib
        sys.argv = ["nvcrectl", "certification", "render", "examples/certification.yaml",
                    "--platform", "onprem", "--gpu-arch", "gb300"]
        from nvcre.cli.main import run
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                run()
        except SystemExit as exc:
            code = exc.code or 0
        else:
            code = 0
        loaded = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith(("kubernetes.", "nvcre.testing", "nvcre.runtime.kube")))
        print(code, "kind: Workflow" in out.getvalue(), loaded)
        """
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0 True []", result.stdout + result.stderr


# --------------------------------------------------------------------------- the checks can fail


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"compiler/bad.py": "from nvcre.runtime.kube import client\n"}, "the compiler may not import nvcre.runtime"),
        ({"compiler/passes/bad.py": "def f():\n    from ...cli import main\n"}, "the compiler may not import nvcre.cli"),
        ({"compiler/bad.py": "import kubernetes.client\n"}, "the compiler may not import kubernetes"),
        ({"compiler/bad.py": "from nvcre import testing\n"}, "the compiler may not import nvcre.testing"),
        ({"runtime/reconcile/bad.py": "from kubernetes import watch\n"}, "only nvcre.runtime.kube may import kubernetes"),
        ({"runtime/judge/bad.py": "from ..kube import client\n"}, "may not import nvcre.runtime.kube"),
        ({"runtime/measure/bad.py": "def f():\n    from nvcre.runtime.reconcile import job\n"}, "may not import nvcre.runtime.reconcile"),
        ({"runtime/report/bad.py": "from ..judge.verdict import certification_verdict\n"}, "only the verdict model"),
        ({"runtime/report/bad.py": "from ..judge import verdict\n"}, "only the verdict model"),
        ({"runtime/ops/bad.py": "OBJ = {'apiVersion': 'v1', 'kind': 'Pod'}\n"}, "dict literal with an apiVersion key"),
        ({"runtime/ops/bad.py": "OBJ = dict(apiVersion='v1', kind='Pod')\n"}, "builds a dict with an apiVersion key"),
        ({"cli/bad.py": "from nvcre.testing import cluster\n"}, "the CLI may load the test harness only inside a command"),
        ({"cli/bad.py": "try:\n    import nvcre.testing.harness\nexcept ImportError:\n    pass\n"}, "only inside a command"),
    ],
)
def test_each_contract_reports_a_violating_module(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = violations(_tree(tmp_path, files))
    assert len(found) == 1 and expected in found[0], found


def test_allowed_imports_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/kube/client.py": "import kubernetes\n",
            "runtime/report/text.py": "from ..judge.model import CertificationVerdict\nfrom ..judge import model\n",
            "cli/run.py": "def command():\n    from nvcre.testing import cluster\n",
            "cli/types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nvcre.testing import cluster\n",
            "compiler/ok.py": "from .diagnostics import error\n",
        },
    )
    assert violations(root) == []


# --------------------------------------------------------------------------- the pass order, visible


def test_the_passes_package_lists_the_pipeline_order() -> None:
    from nvcre.compiler import passes
    from nvcre.compiler.pipeline import PASSES, WORKFLOW_PASSES
    from nvcre.compiler.workloadrun import WORKLOADRUN_PASSES

    assert passes.ORDER == tuple(p.name for p in PASSES)
    assert passes.WORKFLOW_ORDER == tuple(p.name for p in WORKFLOW_PASSES)
    assert passes.WORKLOADRUN_ORDER == tuple(p.name for p in WORKLOADRUN_PASSES)
    documented = (REPO / "compiler" / "pipeline.py").read_text(encoding="utf-8")
    positions = [documented.index(f" {name} ") for name in passes.ORDER]
    assert positions == sorted(positions), "the pipeline docstring lists the passes out of order"
    for name in set(passes.ORDER + passes.WORKLOADRUN_ORDER):
        assert (REPO / "compiler" / "passes" / f"{name}.py").is_file(), name


def test_every_diagnostic_names_the_stage_that_reported_it() -> None:
    from nvcre.compiler.diagnostics import CompileError
    from nvcre.compiler.render import render_certification
    from nvcre.compiler.yamlio import load_file

    (doc,) = load_file(REPO / "examples" / "certification.yaml")
    rendered = render_certification(doc, gpu_arch="gb300")  # no platform: detection defaults it
    assert rendered.diagnostics and all(d.pass_name for d in rendered.diagnostics)
    assert {d.pass_name for d in rendered.diagnostics if d.code == "PlatformDefaulted"} == {"detect"}
    assert rendered.diagnostics[0].as_dict()["pass"] == "detect"

    too_big = {**doc, "spec": {**doc["spec"], "categories": [{**doc["spec"]["categories"][0], "options": {"nodesPerJob": 2**31}}]}}
    with pytest.raises(CompileError) as failed:
        render_certification(too_big, platform="onprem", gpu_arch="gb300")
    assert {d.pass_name for d in failed.value.errors} == {"validate"}

    (one_node,) = load_file(REPO / "golden" / "render" / "error-56b-one-node" / "certification.yaml")
    with pytest.raises(CompileError) as failed:
        render_certification(one_node, platform="onprem", gpu_arch="h100")
    from nvcre.compiler.passes import ORDER

    stages = {d.pass_name for d in failed.value.errors}
    assert stages and stages <= set(ORDER), [d.render() for d in failed.value.errors]
