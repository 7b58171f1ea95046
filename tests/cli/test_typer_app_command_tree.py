"""The command tree of ``nvcrectl``: one static table, every group once, every command where it was.

The table in :mod:`nvcre.cli.typer_app` is the only place commands are mounted: each entry names
a Typer app that exists, no command is defined twice, no command module is left out of it, and a
module that cannot be imported is an error rather than a group silently missing. ``nvcrectl
--help`` and every group's help list exactly the commands they listed before the table, in the
same order, and the ``run`` commands are plain typed functions (no synthesized signature).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

#: What ``nvcrectl --help`` and each group's ``--help`` listed before the table, in their order.
COMMANDS_BEFORE: dict[tuple[str, ...], list[str]] = {
    (): [
        "version",
        "certification",
        "workloadrun",
        "cluster",
        "dev",
        "rbac",
        "mcp",
        "controller",
        "setup",
        "gitops",
        "completion",
        "workflow",
        "evidence",
    ],
    ("certification",): [
        "render",
        "validate",
        "list-categories",
        "evidence",
        "diff",
        "images",
        "run",
        "report",
        "status",
        "delete",
        "diagnose",
    ],
    ("workloadrun",): ["render", "evidence", "run", "report", "status", "cancel"],
    ("cluster",): ["info"],
    ("dev",): ["up", "env", "fault", "status", "down", "controlplane"],
    ("dev", "controlplane"): ["up", "down", "env", "build"],
    ("rbac",): ["print"],
    ("mcp",): ["serve"],
    ("controller",): [],
    ("setup",): ["render", "chart", "init", "status", "reset"],
    ("gitops",): ["check-renders"],
    ("completion",): [],
    ("workflow",): ["render"],
    ("evidence",): ["verify", "compare"],
}


def _root() -> Any:
    import typer.main

    from nvcre.cli import main

    main.mount_commands()
    return typer.main.get_command(main.app)


def _listed(command: Any, path: tuple[str, ...]) -> list[str]:
    for name in path:
        command = command.commands[name]
    return list(getattr(command, "commands", {}))


@pytest.mark.parametrize("path", list(COMMANDS_BEFORE), ids=[" ".join(p) or "nvcrectl" for p in COMMANDS_BEFORE])
def test_every_help_lists_the_commands_it_listed_before(path: tuple[str, ...]) -> None:
    assert _listed(_root(), path) == COMMANDS_BEFORE[path]


def test_the_root_help_names_the_same_commands_as_before() -> None:
    from typer.testing import CliRunner

    from nvcre.cli import main

    main.mount_commands()
    result = CliRunner().invoke(main.app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    rows = [line.strip("│ ").split(" ", 1)[0] for line in result.stdout.splitlines() if line.startswith("│ ") and "  " in line]
    assert [row for row in rows if not row.startswith("--")] == COMMANDS_BEFORE[()][:]


def test_every_group_is_listed_once_and_every_app_once() -> None:
    from nvcre.cli.typer_app import COMMAND_GROUPS

    names = [group.name for group in COMMAND_GROUPS]
    assert len(names) == len(set(names)), names
    references = [reference for group in COMMAND_GROUPS for reference in group.apps]
    assert len(references) == len(set(references)), references
    assert names == COMMANDS_BEFORE[()][1:]  # the help's order is the table's (``version`` is the root's own)


def test_every_app_in_the_table_is_a_typer_app_and_no_command_is_defined_twice() -> None:
    import typer

    from nvcre.cli.typer_app import COMMAND_GROUPS, load_app

    for group in COMMAND_GROUPS:
        seen: list[str] = []
        for position, reference in enumerate(group.apps):
            found = load_app(reference)
            assert isinstance(found, typer.Typer), reference
            if position and len(group.apps) > 1:  # its commands join the group: it may not bring a callback
                assert found.registered_callback is None, reference
            seen += [str(command.name) for command in found.registered_commands]
        assert len(seen) == len(set(seen)), (group.name, seen)
        assert 0 <= group.alone <= len(group.apps)


def _modules_defining_typer_apps() -> set[str]:
    """``module:attribute`` of every module-level ``NAME = typer.Typer(...)`` under cli/."""
    found = set()
    for path in sorted((REPO / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr == "Typer"
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.add(f"nvcre.cli.{path.stem}:{target.id}")
    return found


def test_no_command_module_is_left_out_of_the_table() -> None:
    from nvcre.cli.typer_app import COMMAND_GROUPS

    listed = {reference for group in COMMAND_GROUPS for reference in group.apps}
    nested = {"nvcre.cli.dev:controlplane_app"}  # a subgroup its own group mounts
    assert _modules_defining_typer_apps() - nested - {"nvcre.cli.typer_app:app"} == listed


def test_a_module_the_table_names_that_cannot_be_imported_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.cli import typer_app

    with pytest.raises(ModuleNotFoundError):
        typer_app.load_app("nvcre.cli.no_such_command:app")
    with pytest.raises(TypeError, match="is not a Typer application"):
        typer_app.load_app("nvcre.cli.output:EXIT_OK")
    broken = (*typer_app.COMMAND_GROUPS, typer_app.Group("gone", ("nvcre.cli.no_such_command:app",)))
    monkeypatch.setattr(typer_app, "COMMAND_GROUPS", broken)
    with pytest.raises(ModuleNotFoundError):
        typer_app.mount_commands()


def test_the_run_commands_are_plain_typed_functions() -> None:
    from nvcre.cli.certification_run import certification_run
    from nvcre.cli.workloadrun_run import workloadrun_run

    for command in (certification_run, workloadrun_run):
        inner = inspect.unwrap(command)
        assert not hasattr(inner, "__signature__") and not hasattr(command, "__signature__")
        parameters = inspect.signature(inner).parameters
        assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters.values())
        assert parameters["wait"].annotation is not inspect.Parameter.empty
    assert "file" in inspect.signature(inspect.unwrap(workloadrun_run)).parameters
    assert "category" in inspect.signature(inspect.unwrap(certification_run)).parameters
