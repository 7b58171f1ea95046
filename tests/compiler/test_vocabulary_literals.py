"""A vocabulary value is written out only in the vocabulary.

tests/compiler/test_vocabulary_aliases.py catches a second name for a vocabulary constant; this check
catches a second spelling of its value: a string literal in code (docstrings aside) equal to
one of the vocabulary's values, the API group, the apiVersion, a label or annotation key, a
finalizer, a ConfigMap key or name prefix, an RBAC name. An f-string's literal pieces count
(``f"failed-nodes-{uid}"`` spells the prefix). The bare version ``v1alpha1`` is left out: other
API groups (Trainer, JobSet, kwok) share it; instead an f-string that assembles the apiVersion
from the group (``f"{GROUP}/v1alpha1"``) counts as spelling it. The few literals that equal a
vocabulary value by coincidence or by necessity are listed with why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from nvcre.compiler import vocabulary
from tests.compiler.test_vocabulary_aliases import _repo_modules, _target
from tests.project.test_layers import REPO, Module, _tree, modules

VOCABULARY = "nvcre.compiler.vocabulary"
#: vocabulary values too generic to hold to the rule
UNCHECKED = {"VERSION"}

#: ``(source path, literal)`` pairs that stay, and why
ALLOWED: dict[tuple[str, str], str] = {
    (
        "compiler/install/manager.py",
        vocabulary.CONTROLLER_SERVICE_ACCOUNT,
    ): "the controller's Deployment, which happens to share its ServiceAccount's name",
}


def _values() -> dict[str, str]:
    """Vocabulary value -> the first vocabulary name that holds it."""
    out: dict[str, str] = {}
    for name in vocabulary.__all__:
        value = getattr(vocabulary, name)
        if name not in UNCHECKED and isinstance(value, str):
            out.setdefault(value, name)
    return out


@dataclass
class _Strings:
    """What one walk of a module finds: its strings, its f-strings, what it takes from the vocabulary."""

    constants: list[ast.Constant] = field(default_factory=list)
    fstrings: list[ast.JoinedStr] = field(default_factory=list)
    imported: dict[str, str] = field(default_factory=dict)  # local name -> vocabulary name
    skipped: set[int] = field(default_factory=set)  # ids of docstrings and ``Literal[...]`` arguments


def _strings(module: Module) -> _Strings:
    found = _Strings()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                found.constants.append(node)
        elif isinstance(node, ast.JoinedStr):
            found.fstrings.append(node)
        elif isinstance(node, ast.ImportFrom):
            if _target(module, node) == VOCABULARY:
                found.imported.update((alias.asname or alias.name, alias.name) for alias in node.names)
        elif isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.skipped.add(id(first.value))
        elif isinstance(node, ast.Subscript):
            head = node.value
            if (isinstance(head, ast.Name) and head.id == "Literal") or (isinstance(head, ast.Attribute) and head.attr == "Literal"):
                found.skipped.update(id(inner) for inner in ast.walk(node.slice))
    return found


def _assembled(node: ast.JoinedStr, imported: dict[str, str]) -> str | None:
    """The f-string's value when every placeholder is a name imported from the vocabulary, else None."""
    parts = []
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            parts.append(part.value)
        elif (
            isinstance(part, ast.FormattedValue)
            and isinstance(part.value, ast.Name)
            and part.value.id in imported
            and part.format_spec is None
            and part.conversion == -1
        ):
            parts.append(str(getattr(vocabulary, imported[part.value.id])))
        else:
            return None
    return "".join(parts)


def spellings(root: Path, found: tuple[Module, ...] | None = None) -> list[str]:
    """``path:line: 'literal' is the vocabulary's NAME`` for every second spelling under ``root``."""
    values = _values()
    out = []
    for module in modules(root) if found is None else found:
        if module.name == VOCABULARY:
            continue
        path = module.path.relative_to(root).as_posix()
        found_here = _strings(module)
        for fstring in found_here.fstrings:
            if _assembled(fstring, found_here.imported) == vocabulary.API_VERSION:
                out.append(f"{path}:{fstring.lineno}: {ast.unparse(fstring)} assembles the vocabulary's API_VERSION")
        for constant in found_here.constants:
            name = values.get(constant.value)
            if name is not None and id(constant) not in found_here.skipped and (path, constant.value) not in ALLOWED:
                out.append(f"{path}:{constant.lineno}: {constant.value!r} is the vocabulary's {name}")
    return sorted(out, key=lambda line: (line.split(":")[0], int(line.split(":")[1])))


def test_no_module_spells_a_vocabulary_value() -> None:
    assert spellings(REPO, _repo_modules()) == []


def test_every_allowed_literal_is_still_there() -> None:
    files = {path for path, _ in ALLOWED}
    present = {
        (path, constant.value)
        for path in files
        for constant in ast.walk(ast.parse((REPO / path).read_text(encoding="utf-8")))
        if isinstance(constant, ast.Constant)
    }
    assert set(ALLOWED) <= present, f"gone, drop from the list: {sorted(set(ALLOWED) - present)}"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"compiler/compose.py": "DOC = {'apiVersion': 'nvcre.nvidia.com/v1alpha1'}\n"},
            "'nvcre.nvidia.com/v1alpha1' is the vocabulary's API_VERSION",
        ),
        (
            {"compiler/install/rbac.py": "GROUP = 'nvcre.nvidia.com'\n"},
            "compiler/install/rbac.py:1: 'nvcre.nvidia.com' is the vocabulary's GROUP",
        ),
        (
            {"compiler/expand/x.py": "def name(uid):\n    return f'failed-nodes-{uid[:8]}'\n"},
            "'failed-nodes-' is the vocabulary's FAILED_NODES_PREFIX",
        ),
        ({"cli/rbac.py": "def f(account: str = 'nvcre-manager') -> None: ...\n"}, "is the vocabulary's CONTROLLER_SERVICE_ACCOUNT"),
        ({"runtime/ops/x.py": "KEYS = ('nvcre.nvidia.com/job',)\n"}, "is the vocabulary's LABEL_JOB"),
        (
            {"compiler/expand/meta.py": "from ..vocabulary import GROUP\nAPI_VERSION = f'{GROUP}/v1alpha1'\n"},
            "compiler/expand/meta.py:2: f'{GROUP}/v1alpha1' assembles the vocabulary's API_VERSION",
        ),
    ],
)
def test_a_second_spelling_is_reported(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    found = spellings(_tree(tmp_path, files))
    assert len(found) == 1 and expected in found[0], found


def test_docstrings_literal_types_and_other_groups_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "compiler/api/x.py": (
                '"""The nvcre.nvidia.com API."""\nfrom typing import Literal\n'
                "class A:\n    '''nvcre.nvidia.com'''\n    api_version: Literal['nvcre.nvidia.com/v1alpha1']\n"
            ),
            "runtime/kube/y.py": (
                "TRAINJOBS = ('trainer.kubeflow.org', 'v1alpha1')\nMESSAGE = 'no nvcre.nvidia.com object found'\n"
                "from nvcre.compiler.vocabulary import GROUP\nOURS = f'{GROUP}/'\nCRD = f'jobs.{GROUP}'\n"
                "def other(VERSION: str) -> str:\n    return f'{GROUP}/{VERSION}'\n"
            ),
            "compiler/install/manager.py": "MANAGER_NAME = 'nvcre-manager'\n",
        },
    )
    assert spellings(root) == []
