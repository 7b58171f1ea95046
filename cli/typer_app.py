"""The Typer application of ``nvcrectl``: the command tree in one table, and the root built from it.

Loaded by :mod:`nvcre.cli.main` whenever a command line is not one its render fast path takes.
:data:`COMMAND_GROUPS` lists every command group once, in the order ``nvcrectl --help`` shows
them, with the apps that hold its commands, one module per command or per small family of them.
A group is built from those apps, each imported where the table says it is (a missing module is
an error, never skipped). A command line that names an offline command of a group
(``certification render``, ``validate``...) gets that group built from its offline apps alone;
any other gets every group.
"""

from __future__ import annotations

from importlib import import_module
from typing import NamedTuple, Optional

import typer

from nvcre import __version__


class Group(NamedTuple):
    """One command group of ``nvcrectl``."""

    name: str
    #: the Typer apps (``module:attribute``) whose commands the group holds, in the order its help
    #: lists them; the first gives the group its help text
    apps: tuple[str, ...]
    #: how many of ``apps``, from the first, need no other module of the CLI: a command line naming
    #: one of their commands builds the group from them alone (the start-up of an offline command)
    alone: int = 0


#: The command tree: every group once, in the order ``nvcrectl --help`` lists them (after ``version``).
COMMAND_GROUPS: tuple[Group, ...] = (
    Group(
        "certification",
        (
            "nvcre.cli.certification:app",  # render, validate, list-categories, evidence
            "nvcre.cli.diff:app",
            "nvcre.cli.images:app",
            "nvcre.cli.certification_run:app",
            "nvcre.cli.operate:certification_app",  # report, status, delete, diagnose
        ),
        alone=3,
    ),
    Group(
        "workloadrun",
        (
            "nvcre.cli.workloadrun:app",  # render, evidence
            "nvcre.cli.workloadrun_run:app",
            "nvcre.cli.operate:workloadrun_app",  # report, status, cancel
        ),
    ),
    Group("cluster", ("nvcre.cli.cluster:app",)),
    Group("dev", ("nvcre.cli.dev:app",)),
    Group("rbac", ("nvcre.cli.rbac:app",)),
    Group("mcp", ("nvcre.cli.mcp:app",)),
    Group("controller", ("nvcre.cli.controller:app",)),
    Group("setup", ("nvcre.cli.setup:app",)),
    Group("gitops", ("nvcre.cli.gitops:app",)),
    Group("completion", ("nvcre.cli.completion:app",)),
    Group("workflow", ("nvcre.cli.workflow:app",)),
    Group("evidence", ("nvcre.cli.evidence:app",)),
)

app = typer.Typer(
    name="nvcrectl",
    help="nvcre: certify GPU clusters on Kubernetes. Renders, runs and reports certifications.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

#: the groups added to :data:`app` so far, and the apps each one holds
_groups: dict[str, tuple[typer.Typer, list[str]]] = {}


def load_app(reference: str) -> typer.Typer:
    """The Typer app a table entry (``module:attribute``) names."""
    module, _, attribute = reference.partition(":")
    found = getattr(import_module(module), attribute)
    if not isinstance(found, typer.Typer):
        raise TypeError(f"{reference} is not a Typer application")
    return found


def _mount(group: Group, apps: tuple[str, ...]) -> None:
    """Add ``group`` to the root with ``apps`` (in table order; an app already added is kept)."""
    if group.name not in _groups:
        head = load_app(group.apps[0])
        if len(group.apps) == 1:  # the module's app is the group, its help and callback included
            app.add_typer(head, name=group.name)
            _groups[group.name] = (head, [group.apps[0]])
            return
        holder = typer.Typer(help=head.info.help, no_args_is_help=head.info.no_args_is_help)
        app.add_typer(holder, name=group.name)
        _groups[group.name] = (holder, [])
    holder, added = _groups[group.name]
    for reference in apps:
        if reference not in added:
            holder.add_typer(load_app(reference))  # no name: its commands join the group's
            added.append(reference)


def mount_commands() -> None:
    """Mount every command group (``run`` does it; tests and embedders may call it too)."""
    for group in COMMAND_GROUPS:
        _mount(group, group.apps)


def version_line() -> str:
    """What ``--version`` prints: cobra's ``<name> version <version>``, as NVCRE's nvcrectl prints it."""
    return f"nvcrectl version {__version__}"


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def main(
    version: Optional[bool] = typer.Option(None, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """nvcre command line."""


@app.command("version")
def version_command() -> None:
    """Print the version, as `--version` does (NVCRE has only the flag)."""
    typer.echo(version_line())


def _offline_part(argv: list[str]) -> tuple[Group, tuple[str, ...]] | None:
    """The group and the apps that alone run ``argv``, when it names an offline command of a group."""
    if len(argv) < 2:
        return None
    for group in COMMAND_GROUPS:
        if group.name == argv[0] and group.alone:
            apps = group.apps[: group.alone]
            commands = {command.name for reference in apps for command in load_app(reference).registered_commands}
            return (group, apps) if argv[1] in commands else None
    return None


def needs_every_group(argv: list[str]) -> bool:
    """False when ``argv`` names an offline command of a group (``certification render``, ``validate``...):
    that command runs the same with only its group's offline apps mounted, and mounting the rest
    (importing their modules, building their parameters) is most of the CLI's start-up. Anything
    else (help, completion, another group, a typo that wants suggestions) gets every group."""
    return _offline_part(argv) is None


def start(argv: list[str], completing: bool) -> None:
    """Run the command line ``argv`` (without the program name) through Typer."""
    if completing:  # a shell asking for candidates (nvcrectl completion)
        from typer.completion import completion_init

        completion_init()
    offline = None if completing else _offline_part(argv)
    if offline is None:
        mount_commands()
    else:
        _mount(*offline)
    app(complete_var="_NVCRECTL_COMPLETE")
