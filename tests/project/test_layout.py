"""The test tree is shaped like the code, and a test's folder is its lane.

Read from the sources (AST), not from a collection, so it stays quick:

* no test module sits at the top of ``tests/``, and every folder under ``tests/`` but the
  repository-wide ones mirrors a folder of the source tree (``tests/runtime/judge/`` for
  ``runtime/judge/``);
* a test marked ``integration`` lives under ``tests/integration/`` or ``tests/realnodes/``, and
  every test there is marked ``integration``; ``realnodes`` tests live under ``tests/realnodes/``;
* the ``sim`` tests are the ``*_sim.py`` modules: each of their tests is marked ``sim``, and no
  other module marks one.

A test's markers are its module's ``pytestmark`` plus its class's and its own decorators.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
#: folders that hold tests of the repository as a whole, lanes, or data, not a mirror of a package
NOT_MIRRORS = {"project", "integration", "realnodes", "conformance", "fixtures", "rules", "controlplane", "data", "templates"}
INTEGRATION_FOLDERS = ("integration", "realnodes")


def _mark_names(decorators: list[ast.expr]) -> set[str]:
    names: set[str] = set()
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                names.add(sub.attr)
    return names


def _module_marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            return _mark_names([node.value])
    return set()


def markers_of(source: str) -> dict[str, set[str]]:
    """Each test function of a module (``Class::name`` inside a class) -> the markers it carries."""
    tree = ast.parse(source)
    module = _module_marks(tree)
    found: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found[node.name] = module | _mark_names(node.decorator_list)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            outer = module | _mark_names(node.decorator_list)
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    found[f"{node.name}::{item.name}"] = outer | _mark_names(item.decorator_list)
    return found


def lane_problems(rel: str, source: str) -> list[str]:
    """What is wrong with the lane of one test module, ``rel`` being its path under ``tests/``."""
    top = rel.split("/")[0]
    in_integration = top in INTEGRATION_FOLDERS
    is_sim = rel.endswith("_sim.py")
    problems = []
    for name, marks in markers_of(source).items():
        where = f"tests/{rel}::{name}"
        if in_integration and "integration" not in marks:
            problems.append(f"{where}: under tests/{top}/ but not marked integration")
        if not in_integration and "integration" in marks:
            problems.append(f"{where}: marked integration outside tests/integration/ and tests/realnodes/")
        if "realnodes" in marks and top != "realnodes":
            problems.append(f"{where}: marked realnodes outside tests/realnodes/")
        if is_sim and "sim" not in marks:
            problems.append(f"{where}: a *_sim.py test without the sim marker")
        if not is_sim and "sim" in marks:
            problems.append(f"{where}: marked sim in a module not named *_sim.py")
    return problems


def layout_problems(tests: Path, source_root: Path) -> list[str]:
    """Test modules at the top of the tree, and folders that mirror no source folder."""
    problems = [
        f"tests/{p.name}: a test module at the top of tests/ (place it beside what it tests)" for p in sorted(tests.glob("test_*.py"))
    ]
    for folder in sorted(p for p in tests.rglob("*") if p.is_dir()):
        rel = folder.relative_to(tests)
        if NOT_MIRRORS & set(rel.parts) or "__pycache__" in rel.parts or not any(folder.glob("test_*.py")):
            continue
        if not (source_root / rel).is_dir():
            problems.append(f"tests/{rel.as_posix()}/: mirrors no folder of the source tree ({rel.as_posix()}/ does not exist)")
    return problems


def _test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.relative_to(TESTS).parts)


def test_every_test_module_is_in_the_folder_of_its_lane() -> None:
    problems = [
        problem
        for path in _test_modules()
        for problem in lane_problems(path.relative_to(TESTS).as_posix(), path.read_text(encoding="utf-8"))
    ]
    assert not problems, "\n".join(problems)


def test_the_tree_mirrors_the_source_folders() -> None:
    problems = layout_problems(TESTS, REPO)
    assert not problems, "\n".join(problems)


def test_the_lane_rules_find_each_kind_of_mismatch() -> None:
    integration = "import pytest\n\n@pytest.mark.integration\ndef test_a():\n    pass\n"
    offline = "def test_a():\n    pass\n"
    assert lane_problems("compiler/test_x.py", integration) == [
        "tests/compiler/test_x.py::test_a: marked integration outside tests/integration/ and tests/realnodes/"
    ]
    assert lane_problems("integration/test_x.py", offline) == [
        "tests/integration/test_x.py::test_a: under tests/integration/ but not marked integration"
    ]
    sim_unmarked = "import pytest\n\npytestmark = pytest.mark.integration\n\nclass TestA:\n    def test_b(self):\n        pass\n"
    assert lane_problems("integration/test_x_sim.py", sim_unmarked) == [
        "tests/integration/test_x_sim.py::TestA::test_b: a *_sim.py test without the sim marker"
    ]
    sim_elsewhere = "import pytest\n\npytestmark = [pytest.mark.integration, pytest.mark.sim]\n\ndef test_a():\n    pass\n"
    assert lane_problems("integration/test_x.py", sim_elsewhere) == [
        "tests/integration/test_x.py::test_a: marked sim in a module not named *_sim.py"
    ]
    realnodes = "import pytest\n\n@pytest.mark.integration\n@pytest.mark.realnodes\ndef test_a():\n    pass\n"
    assert lane_problems("integration/test_x.py", realnodes) == [
        "tests/integration/test_x.py::test_a: marked realnodes outside tests/realnodes/"
    ]
    assert lane_problems("realnodes/test_x.py", realnodes) == []
    assert lane_problems("integration/test_x_sim.py", sim_elsewhere) == []
    assert lane_problems("compiler/test_x.py", offline) == []


def test_the_layout_rules_find_a_stray_module_and_a_folder_without_a_source(tmp_path: Path) -> None:
    tests, source = tmp_path / "tests", tmp_path
    (tests / "runtime" / "judge").mkdir(parents=True)
    (tests / "runtime" / "jugde").mkdir(parents=True)
    (source / "runtime" / "judge").mkdir(parents=True)
    for rel in ("test_stray.py", "runtime/judge/test_groups.py", "runtime/jugde/test_groups.py"):
        (tests / rel).write_text("def test_a():\n    pass\n", encoding="utf-8")
    assert layout_problems(tests, source) == [
        "tests/test_stray.py: a test module at the top of tests/ (place it beside what it tests)",
        "tests/runtime/jugde/: mirrors no folder of the source tree (runtime/jugde/ does not exist)",
    ]
