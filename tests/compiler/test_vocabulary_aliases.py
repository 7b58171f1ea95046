"""Every package uses the vocabulary's names as the vocabulary spells them, and the vocabulary
stays a leaf.

A module that renames a vocabulary name (``JOB_LABEL = LABEL_JOB``, ``import LABEL_JOB as JOB``,
``_X = vocabulary.GROUP``) or copies one under its own name to pass it on
(``LABEL_JOB = vocabulary.LABEL_JOB``) makes a reader learn two homes for one key and lets a
second spelling grow beside the first. The check reads every module's syntax tree (the same
module walk as tests/project/test_layers.py), the compiler's included, and reports each module-level
rename; none is allowed. Because every layer imports the vocabulary, it may import nothing of
its own: a second check holds it to ``from __future__`` and constant assignments.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

from tests.project.test_layers import REPO, Module, _tree, modules

VOCABULARY = "nvcre.compiler.vocabulary"


@functools.cache
def _repo_modules() -> tuple[Module, ...]:
    return tuple(modules(REPO))


def _target(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    here = module.name.split(".") if module.path.name == "__init__.py" else module.name.split(".")[:-1]
    base = here[: len(here) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def renames(module: Module) -> list[tuple[int, str, str]]:
    """``(line, local name, vocabulary name)`` of every rename of a vocabulary name in ``module``."""
    names: dict[str, str] = {}  # local name -> vocabulary name
    spaces: set[str] = set()  # local names bound to the vocabulary module itself
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, node)
            for alias in node.names:
                local = alias.asname or alias.name
                if target == VOCABULARY:
                    names[local] = alias.name
                    if local != alias.name:
                        found.append((node.lineno, local, alias.name))
                elif f"{target}.{alias.name}" == VOCABULARY:
                    spaces.add(local)
        elif isinstance(node, ast.Import):
            spaces.update(alias.asname for alias in node.names if alias.name == VOCABULARY and alias.asname)
    for statement in module.tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target_node, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target_node, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target_node, ast.Name):
            continue
        if isinstance(value, ast.Name) and value.id in names:
            found.append((statement.lineno, target_node.id, names[value.id]))
        elif isinstance(value, ast.Attribute) and ast.unparse(value.value) in spaces | {VOCABULARY}:
            found.append((statement.lineno, target_node.id, value.attr))
    return found


def offenders(root: Path, found: tuple[Module, ...] | None = None) -> list[str]:
    out = []
    for module in modules(root) if found is None else found:
        for line, local, original in renames(module):
            out.append(f"{module.path.relative_to(root)}:{line}: {local} renames the vocabulary's {original}")
    return out


def _constant(value: ast.expr) -> bool:
    """A literal, an f-string, or a tuple of them, naming nothing but earlier constants."""
    if isinstance(value, (ast.Constant, ast.Name)):
        return True
    if isinstance(value, ast.JoinedStr):
        return all(_constant(part.value if isinstance(part, ast.FormattedValue) else part) for part in value.values)
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_constant(element) for element in value.elts)
    return False


def leaf_problems(module: Module) -> list[str]:
    """Why ``module`` is not a constants-only leaf: each import (bar ``__future__``) or other statement."""
    problems = []
    for index, statement in enumerate(module.tree.body):
        if index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            continue
        if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets) and _constant(statement.value):
            continue
        problems.append(f"line {statement.lineno}: {ast.unparse(statement).splitlines()[0]}")
    return problems


def test_no_module_renames_a_vocabulary_name() -> None:
    assert offenders(REPO, _repo_modules()) == []


def test_the_vocabulary_imports_nothing_and_holds_only_constants() -> None:
    (vocabulary,) = [m for m in _repo_modules() if m.name == VOCABULARY]
    assert leaf_problems(vocabulary) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from .naming import truncate_name\n", "line 1: from .naming import truncate_name"),
        ("import os\nGROUP = 'g'\n", "line 1: import os"),
        ("GROUP = 'g'\nKEY = GROUP.upper()\n", "line 2: KEY = GROUP.upper()"),
        ("def group():\n    return 'g'\n", "line 1: def group():"),
    ],
)
def test_a_vocabulary_that_is_not_a_leaf_is_reported(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "vocabulary.py"
    path.write_text(text, encoding="utf-8")
    assert leaf_problems(Module(VOCABULARY, path, ast.parse(text))) == [expected]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"runtime/judge/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB\nJOB_LABEL = LABEL_JOB\n"}, "JOB_LABEL renames"),
        ({"runtime/reconcile/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB as JOB\n"}, "JOB renames the vocabulary's LABEL_JOB"),
        ({"runtime/kube/x.py": "from ...compiler import vocabulary\n_GROUP: str = vocabulary.GROUP\n"}, "_GROUP renames"),
        ({"cli/x.py": "import nvcre.compiler.vocabulary as v\nKEY = v.LABEL_WORKFLOW\n"}, "KEY renames the vocabulary's LABEL_WORKFLOW"),
        ({"testing/x.py": "import nvcre.compiler.vocabulary\nKEY = nvcre.compiler.vocabulary.GROUP\n"}, "KEY renames"),
        ({"compiler/expand/x.py": "from ..vocabulary import CONFIGMAP_FAILED_NODES_KEY as FAILED_KEY\n"}, "FAILED_KEY renames"),
        (
            {"compiler/expand/meta.py": "from .. import vocabulary\nLABEL_JOB = vocabulary.LABEL_JOB\n"},
            "LABEL_JOB renames the vocabulary's LABEL_JOB",
        ),
        ({"compiler/api/rules.py": "from ..vocabulary import RESERVED_PREFIX\n_PREFIX = RESERVED_PREFIX\n"}, "_PREFIX renames"),
    ],
)
def test_a_rename_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = offenders(_tree(tmp_path, files))
    assert len(found) == 1 and expected in found[0], found


def test_using_the_vocabulary_names_passes(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "runtime/judge/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB\nSELECTOR = f'{LABEL_JOB}=a'\nKEYS = (LABEL_JOB,)\n",
            "runtime/kube/y.py": "from nvcre.compiler import vocabulary\ndef f():\n    return vocabulary.GROUP\n",
            "compiler/api/kinds.py": "from ..vocabulary import API_VERSION, GROUP\n__all__ = ['API_VERSION', 'GROUP']\n",
            "compiler/z.py": "from .vocabulary import LABEL_JOB\nLABELS = {LABEL_JOB: 'j'}\n",
        },
    )
    assert offenders(root) == []
