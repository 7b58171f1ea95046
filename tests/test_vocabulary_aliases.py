"""The runtime, the CLI and the test harness use the vocabulary's names as the vocabulary spells them.

A module that renames a vocabulary name (``JOB_LABEL = LABEL_JOB``, ``import LABEL_JOB as JOB``,
``_X = vocabulary.GROUP``) makes a reader learn two names for one key and lets a second
spelling grow beside the first. The check reads every module's syntax tree (the same module
walk as tests/test_layers.py) and reports each module-level rename; the few that remain are
listed, each with why, and an entry whose rename is gone fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest
from test_layers import PACKAGES, REPO, Module, _tree

VOCABULARY = "nvcre.compiler.vocabulary"
#: the packages held to the rule (the compiler's own renames are its own layer's business)
CHECKED = ("nvcre.runtime", "nvcre.cli", "nvcre.testing")

#: renames that remain, as ``module.NAME``, and why each still exists
ALIASES_ALLOWED: dict[str, str] = {
    "nvcre.runtime.reconcile.certification.FINALIZER": "tests/runtime/test_runtime_certification.py imports it",
    "nvcre.runtime.reconcile.workflow.FINALIZER": "tests/runtime/test_reconcile_reclaim.py and test_reconcile_requests.py import it",
    "nvcre.runtime.reconcile.job.FINALIZER": "tests/runtime/test_reconcile_requests.py and test_reconcile_create_race.py import it",
    "nvcre.runtime.reconcile.workloadrun.FINALIZER": "tests/conformance/test_nvcre_reasons_and_events.py imports it",
    "nvcre.runtime.reconcile.goodput_reads.STATE_ANNOTATION": "tests/runtime/test_goodput_sampling.py reads it",
    "nvcre.runtime.judge.pods.JOB_LABEL": "tests/runtime/test_reconcile_requests.py and test_goodput_sampling.py import it",
    "nvcre.runtime.ops.install.trainer.INSTALLED_VERSION": "tests/runtime/ops/install/test_trainer.py reads it",
    "nvcre.runtime.measure.attempts.PRIOR_ANNOTATION": "tests/runtime/test_runtime_observations.py imports it",
}


def checked_modules(root: Path) -> list[Module]:
    """The modules of the packages the rule holds, named as tests/test_layers.py names them."""
    out = []
    for folder, package in PACKAGES.items():
        base = root / folder
        if package not in CHECKED or not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = [p for p in path.relative_to(base).with_suffix("").parts if p != "__init__"]
            out.append(Module(".".join([package, *parts]), path, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return out


@functools.cache
def _repo_modules() -> tuple[Module, ...]:
    return tuple(checked_modules(REPO))


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
    for module in checked_modules(root) if found is None else found:
        for line, local, original in renames(module):
            if f"{module.name}.{local}" not in ALIASES_ALLOWED:
                out.append(f"{module.path.relative_to(root)}:{line}: {local} renames the vocabulary's {original}")
    return out


def test_no_module_renames_a_vocabulary_name() -> None:
    assert offenders(REPO, _repo_modules()) == []


def test_every_remaining_rename_is_still_there() -> None:
    present = {f"{m.name}.{local}" for m in _repo_modules() for _, local, _ in renames(m)}
    assert set(ALIASES_ALLOWED) <= present, f"gone, drop from the list: {sorted(set(ALIASES_ALLOWED) - present)}"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"runtime/judge/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB\nJOB_LABEL = LABEL_JOB\n"}, "JOB_LABEL renames"),
        ({"runtime/reconcile/x.py": "from nvcre.compiler.vocabulary import LABEL_JOB as JOB\n"}, "JOB renames the vocabulary's LABEL_JOB"),
        ({"runtime/kube/x.py": "from ...compiler import vocabulary\n_GROUP: str = vocabulary.GROUP\n"}, "_GROUP renames"),
        ({"cli/x.py": "import nvcre.compiler.vocabulary as v\nKEY = v.LABEL_WORKFLOW\n"}, "KEY renames the vocabulary's LABEL_WORKFLOW"),
        ({"testing/x.py": "import nvcre.compiler.vocabulary\nKEY = nvcre.compiler.vocabulary.GROUP\n"}, "KEY renames"),
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
            "compiler/z.py": "from .vocabulary import LABEL_JOB\nJOB = LABEL_JOB\n",
        },
    )
    assert offenders(root) == []
