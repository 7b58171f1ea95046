"""Every layer contract docs/architecture.md claims, read from the source tree's imports (AST).

One walker reads every module of every source folder (mapped onto ``nvcre.*`` as pyproject's
package-dir maps them) and checks the table :data:`CONTRACTS`, modelled on import-linter's
contracts: deny-lists (the compiler is the floor; only ``nvcre.runtime.kube`` talks to the API;
one door into the compiler's lowering; the reconcile tiers are independent; the CLI loads the
test harness only inside a command), allow-lists for the pure layers (measure, judge, report,
kube), and one door rule: the reconcile tiers, the tier table and its map functions reach the
compiler only through ``nvcre.runtime.compile`` and the shared vocabulary. On top: no import circle anywhere (lazy imports included), no circle between
sibling packages either (so no ``compiler/plan`` <-> ``compiler/diagnose`` loop through
different modules), and the runtime builds no manifest of
its own (no dict literal with an ``apiVersion`` key). The checks walk whatever modules exist,
so they hold while packages grow, and a negative test proves each one can fail. Checked-cache
mode, the runtime's purity check at run time, is tested in tests/runtime/kube/test_cachecheck.py.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _package_dirs() -> dict[str, str]:
    """Source folder -> the package it is installed as, read from pyproject's package-dir."""
    with (REPO / "pyproject.toml").open("rb") as fh:
        mapping = tomllib.load(fh)["tool"]["setuptools"]["package-dir"]
    return {str(folder): str(package) for package, folder in mapping.items()}


#: Source folders and the package each one is installed as (the one map: pyproject's package-dir).
PACKAGES = _package_dirs()


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


def _loaded(imp: Import, known: set[str]) -> list[str]:
    """The project modules an import loads: its target, or the submodules it names."""
    found = [f"{imp.target}.{name}" for name in imp.names if f"{imp.target}.{name}" in known]
    return found or ([imp.target] if imp.target in known else [])


# --------------------------------------------------------------------------- the contracts
#
# Each contract names the modules it governs and what they may (allow-list) or may not
# (deny-list) import. A module is governed by the first contract of each kind that covers it.


@dataclass(frozen=True)
class Forbidden:
    """Modules under ``sources`` (except ``exempt``) may not import anything under ``forbidden``."""

    name: str
    sources: tuple[str, ...]
    forbidden: tuple[str, ...]
    exempt: tuple[str, ...] = ()
    lazy_ok: bool = False  # an import inside a function body is allowed

    def check(self, module: str, imp: Import) -> str | None:
        if not any(_under(module, s) for s in self.sources) or any(_under(module, e) for e in self.exempt):
            return None
        if self.lazy_ok and not imp.at_load:
            return None
        hit = next((f for f in self.forbidden if _reaches(imp, f)), None)
        return None if hit is None else f"{self.name}: may not import {hit}"


@dataclass(frozen=True)
class AllowOnly:
    """Modules under ``source`` may import, of the project, only themselves and ``allowed``, and
    of each module in ``names_from`` only the names listed for it."""

    name: str
    source: str
    allowed: tuple[str, ...]
    names_from: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def check(self, module: str, imp: Import) -> str | None:
        if not _under(module, self.source) or not _under(imp.target, "nvcre"):
            return None
        if any(imp.target == target and imp.names and set(imp.names) <= set(names) for target, names in self.names_from):
            return None
        targets = [f"{imp.target}.{n}" for n in imp.names] if imp.names else [imp.target]
        for target in targets:
            if _under(target, self.source) or any(_under(target, a) or _under(imp.target, a) for a in self.allowed):
                continue
            if target != imp.target and (_under(imp.target, self.source) or any(_under(imp.target, a) for a in self.allowed)):
                continue  # ``from allowed import name``: a name of an allowed module
            return f"{self.name}: may import only {', '.join(self.allowed)} (found {target})"
        return None


@dataclass(frozen=True)
class ThroughDoor:
    """Modules under ``sources`` may import, of ``package``, only the modules under ``allowed``;
    everything else of it they reach through a door outside it (another module that imports it)."""

    name: str
    sources: tuple[str, ...]
    package: str
    allowed: tuple[str, ...]

    def _allowed(self, target: str) -> bool:
        return any(_under(target, a) for a in self.allowed)

    def check(self, module: str, imp: Import) -> str | None:
        if not any(_under(module, s) for s in self.sources) or not _reaches(imp, self.package):
            return None
        if _under(imp.target, self.package):
            # ``from package.allowed import x`` or ``from package import allowed``: the allowed module
            if self._allowed(imp.target) or (imp.names and all(self._allowed(f"{imp.target}.{n}") for n in imp.names)):
                return None
            return f"{self.name} (found {imp.target})"
        # ``from parent import package``: each name under the package must be allowed
        found = next((t for t in (f"{imp.target}.{n}" for n in imp.names) if _under(t, self.package) and not self._allowed(t)), None)
        return None if found is None else f"{self.name} (found {found})"


#: the runtime's door into the compiler's lowering (plan, expand, render, workloadrun)
COMPILER_ENTRY_POINTS = ("nvcre.compiler.plan", "nvcre.compiler.expand", "nvcre.compiler.render", "nvcre.compiler.workloadrun")
#: the reconcile tiers and the modules each is built from: none may import another's (the
#: Workflow tier reaches the Job tier's verdicts through a Protocol it is handed, not through an
#: import)
TIER_PARTS = {
    tier: tuple(f"nvcre.runtime.reconcile.{part}" for part in parts)
    for tier, parts in {
        "certification": ("certification",),
        "workflow": ("workflow", "reclaim"),
        "job": ("job",),
        "measurement": ("measurement", "measurement_kinds"),
        "workloadrun": ("workloadrun",),
    }.items()
}

#: the reconcile tiers with the tier table and its map functions: they reach the compiler only
#: through ``nvcre.runtime.compile`` (each answer a tier needs is a named function there) and
#: the vocabulary (the names both sides spell)
TIER_MODULES = ("nvcre.runtime.reconcile", "nvcre.runtime.tiers", "nvcre.runtime.watches")
TIER_COMPILER_IMPORTS = ("nvcre.compiler.vocabulary",)

CONTRACTS: tuple[Forbidden | AllowOnly | ThroughDoor, ...] = (
    Forbidden("the compiler is the floor", ("nvcre.compiler",), ("nvcre.runtime", "nvcre.cli", "nvcre.testing", "kubernetes")),
    Forbidden("only nvcre.runtime.kube talks to the API", ("nvcre.runtime",), ("kubernetes",), exempt=("nvcre.runtime.kube",)),
    AllowOnly("measuring is pure", "nvcre.runtime.measure", ("nvcre.compiler.vocabulary",)),
    AllowOnly(
        "judging is pure",
        "nvcre.runtime.judge",
        (
            "nvcre.runtime.measure",
            "nvcre.compiler.vocabulary",
            "nvcre.compiler.nodelists",
            "nvcre.compiler.workflow_paths",
            "nvcre.compiler.cel",
            "nvcre.compiler.cel_cost",
            "nvcre.compiler.cel_program",
            "nvcre.compiler.cel_threshold",
        ),
        # the text form of API time, not the clock: a judge is handed ``now``
        names_from=(("nvcre.runtime.clock", ("format_time", "parse_time")),),
    ),
    AllowOnly(
        "reports read only the verdict model",
        "nvcre.runtime.report",
        ("nvcre.runtime.judge.model", "nvcre.runtime.measure", "nvcre.compiler.vocabulary"),
    ),
    AllowOnly("the API client stands alone", "nvcre.runtime.kube", ("nvcre.compiler.vocabulary",)),
    AllowOnly(
        "the install stands on the API client and the compiler alone, below the rest of ops",
        "nvcre.runtime.ops.install",
        ("nvcre.runtime.kube", "nvcre.compiler"),
    ),
    Forbidden(
        "one door into the compiler's lowering (nvcre.runtime.compile)",
        ("nvcre.runtime",),
        COMPILER_ENTRY_POINTS,
        exempt=("nvcre.runtime.compile",),
    ),
    ThroughDoor(
        "the tiers reach the compiler only through nvcre.runtime.compile and the vocabulary",
        TIER_MODULES,
        "nvcre.compiler",
        TIER_COMPILER_IMPORTS,
    ),
    *(
        Forbidden("the reconcile tiers are independent", parts, tuple(m for other, ms in TIER_PARTS.items() if other != tier for m in ms))
        for tier, parts in TIER_PARTS.items()
    ),
    Forbidden("the CLI loads the test harness only inside a command", ("nvcre.cli",), ("nvcre.testing",), lazy_ok=True),
)

#: modules allowed to write an apiVersion literal in the runtime, and why
API_LITERALS_ALLOWED = {
    "nvcre.runtime.kube.review": "TokenReview and SubjectAccessReview bodies are API calls, not objects the controller creates",
}


#: package circles known and tracked, each with why it still exists; a new one fails the test
PACKAGE_CIRCLES_ALLOWED: dict[frozenset[str], str] = {}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def violations(root: Path) -> list[str]:
    """Every broken contract in the source tree at ``root``, one line each."""
    found: list[str] = []
    all_modules = modules(root)
    known = {m.name for m in all_modules}
    graph: dict[str, set[str]] = {m.name: set() for m in all_modules}
    for module in all_modules:
        name = module.name
        for imp in imports(module):
            graph[name].update(t for t in _loaded(imp, known) if t != name)
            for contract in CONTRACTS:
                problem = contract.check(name, imp)
                if problem:
                    found.append(f"{module.path.relative_to(root)}:{imp.line}: {name} imports {imp.target} ({problem})")
        if _under(name, "nvcre.runtime") and name not in API_LITERALS_ALLOWED:
            found += [f"{module.path.relative_to(root)}:{line}: {name} {what}" for line, what in _manifest_literals(module.tree)]
    for cycle in _cycles(graph):
        found.append(f"import circle (lazy imports included): {' -> '.join(cycle)}")
    packages = {name for name in known if any(m.name.startswith(name + ".") for m in all_modules)}
    for cycle in _cycles(sibling_graph(graph, packages)):
        if frozenset(cycle) not in PACKAGE_CIRCLES_ALLOWED:
            found.append(f"package circle (lazy imports included): {' -> '.join(cycle)}")
    return found


def sibling_graph(graph: dict[str, set[str]], packages: set[str]) -> dict[str, set[str]]:
    """The module graph seen one level below each common parent, where sibling packages meet.

    An import from ``a.b.x`` to ``a.c.y`` is an edge ``a.b -> a.c``: two packages under the same
    parent may not reach each other both ways, even through different modules (``plan.planner``
    importing ``diagnose.session`` while ``diagnose.session`` imports ``plan.spec`` is a package
    circle with no module circle). Only edges between packages count: a module importing its own
    package's siblings, or a parent and its child, are not package circles.
    """
    out: dict[str, set[str]] = {p: set() for p in packages}
    for source, targets in graph.items():
        for target in targets:
            a, b = source.split("."), target.split(".")
            common = 0
            while common < min(len(a), len(b)) and a[common] == b[common]:
                common += 1
            if common >= min(len(a), len(b)):
                continue  # one contains the other
            left, right = ".".join(a[: common + 1]), ".".join(b[: common + 1])
            if left in packages and right in packages:
                out[left].add(right)
    return out


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
        ({"compiler/bad.py": "from nvcre.runtime.kube import client\n"}, "the compiler is the floor: may not import nvcre.runtime"),
        ({"compiler/passes/bad.py": "def f():\n    from ...cli import main\n"}, "may not import nvcre.cli"),
        ({"compiler/bad.py": "import kubernetes.client\n"}, "the compiler is the floor: may not import kubernetes"),
        ({"compiler/bad.py": "from nvcre import testing\n"}, "may not import nvcre.testing"),
        ({"runtime/reconcile/bad.py": "from kubernetes import watch\n"}, "only nvcre.runtime.kube talks to the API"),
        ({"runtime/judge/bad.py": "from ..kube import client\n"}, "judging is pure: may import only"),
        ({"runtime/judge/bad.py": "from nvcre.compiler.emit import dump_yaml\n"}, "judging is pure"),
        ({"runtime/judge/bad.py": "from ..clock import Clock, parse_time\n"}, "judging is pure"),
        ({"runtime/judge/bad.py": "from .. import clock\n"}, "judging is pure"),
        ({"runtime/judge/bad.py": "from ..reconcile import context\n"}, "judging is pure"),
        ({"runtime/kube/bad.py": "from nvcre.compiler.install.rbac import access_reviews\n"}, "the API client stands alone"),
        ({"runtime/measure/bad.py": "def f():\n    from nvcre.runtime.reconcile import job\n"}, "measuring is pure"),
        ({"runtime/report/bad.py": "from ..judge.verdict import certification_verdict\n"}, "reports read only the verdict model"),
        ({"runtime/report/bad.py": "from ..judge import verdict\n"}, "reports read only the verdict model"),
        ({"runtime/kube/bad.py": "from ..reconcile import context\n"}, "the API client stands alone"),
        ({"runtime/ops/bad.py": "from nvcre.compiler.expand import expand_job\n"}, "one door into the compiler's lowering"),
        ({"runtime/reconcile/certification.py": "from .workflow import WorkflowReconciler\n"}, "the reconcile tiers are independent"),
        (
            {"runtime/reconcile/context.py": "from nvcre.compiler.install.rbac import access_reviews\n"},
            "only through nvcre.runtime.compile and the vocabulary (found nvcre.compiler.install.rbac)",
        ),
        (
            {"runtime/reconcile/job/observe.py": "def f():\n    from nvcre.compiler.durations import duration_limit\n"},
            "only through nvcre.runtime.compile and the vocabulary (found nvcre.compiler.durations)",
        ),
        (
            {"runtime/tiers.py": "from nvcre import compiler\n"},
            "only through nvcre.runtime.compile and the vocabulary (found nvcre.compiler)",
        ),
        (
            {"runtime/watches.py": "from nvcre.compiler import vocabulary, compose\n"},
            "only through nvcre.runtime.compile and the vocabulary (found nvcre.compiler)",
        ),
        (
            {"runtime/reconcile/workflow/access.py": "from ....compiler.compose import RUN_BINDING\n"},
            "the tiers reach the compiler only through nvcre.runtime.compile",
        ),
        ({"runtime/ops/bad.py": "OBJ = {'apiVersion': 'v1', 'kind': 'Pod'}\n"}, "dict literal with an apiVersion key"),
        ({"runtime/ops/bad.py": "OBJ = dict(apiVersion='v1', kind='Pod')\n"}, "builds a dict with an apiVersion key"),
        ({"cli/bad.py": "from nvcre.testing import cluster\n"}, "the CLI loads the test harness only inside a command"),
        ({"cli/bad.py": "try:\n    import nvcre.testing.harness\nexcept ImportError:\n    pass\n"}, "only inside a command"),
        (
            {"cli/a.py": "def f():\n    from . import b\n", "cli/b.py": "from . import a\n"},
            "import circle (lazy imports included): nvcre.cli.a -> nvcre.cli.b",
        ),
        (
            {"compiler/plan/x.py": "from ..diagnose import y\n", "compiler/diagnose/y.py": "def f():\n    from ..plan import x\n"},
            "import circle",
        ),
        (
            {
                "compiler/plan/__init__.py": "",
                "compiler/plan/planner.py": "from ..diagnose import session\n",
                "compiler/plan/spec.py": "X = 1\n",
                "compiler/diagnose/__init__.py": "",
                "compiler/diagnose/session.py": "def f():\n    from ..plan.spec import X\n",
            },
            "package circle (lazy imports included): nvcre.compiler.diagnose -> nvcre.compiler.plan",
        ),
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
            "runtime/judge/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB\nfrom ..measure import nccl\n",
            "runtime/judge/y.py": "from ..clock import format_time, parse_time\n",
            "runtime/compile.py": "from nvcre.compiler.expand import expand_job\nfrom nvcre.compiler.install.rbac import access_reviews\n",
            "runtime/reconcile/job/names.py": "from nvcre.compiler.vocabulary import LABEL_JOB\nfrom ... import compile as compiler\n",
            "runtime/tiers.py": "from nvcre.compiler import vocabulary\nfrom .compile import catalog_has\n",
            "runtime/watches.py": "import nvcre.compiler.vocabulary\n",
            "runtime/reconcile/workflow.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .job import JobReconciler\n",
            "cli/run.py": "def command():\n    from nvcre.testing import cluster\n",
            "cli/types.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from nvcre.testing import cluster\n",
            "compiler/ok.py": "from .diagnostics import error\n",
        },
    )
    assert violations(root) == []


def test_relative_imports_are_resolved_to_their_packages() -> None:
    (job,) = [m for m in modules(REPO) if m.name == "nvcre.runtime.reconcile.job"]
    targets = {i.target for i in imports(job)}
    assert "nvcre.runtime.kube.resources" in targets
    assert "nvcre.runtime.judge.conditions" not in targets  # "from ...judge import conditions" names the package
    assert "nvcre.runtime.judge" in targets


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
