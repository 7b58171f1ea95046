"""The Typer application of ``nvcrectl``: its root, the ``certification`` group and the mounting of the others.

Loaded by :mod:`nvcre.cli.main` whenever a command line is not one its render fast path takes.
"""

from __future__ import annotations

from typing import Optional

import typer

from nvcre import __version__

from . import certification

app = typer.Typer(
    name="nvcrectl",
    help="nvcre: certify GPU clusters on Kubernetes. Renders, runs and reports certifications.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(certification.app, name="certification")


_mounted = False
#: The commands ``cli/certification.py`` defines itself (the others are mounted onto its group).
_OWN_COMMANDS = frozenset(command.name for command in certification.app.registered_commands)


def mount_commands() -> None:
    """Mount every command group once (``run`` does it; tests and embedders may call it too)."""
    global _mounted
    if not _mounted:
        _mount_optional()
        _mounted = True


def _mount_optional() -> None:
    """Command groups that live in their own modules."""
    from importlib import import_module

    from . import operate

    operate.register(certification.app)
    for module, name in (
        ("nvcre.cli.workloadrun", "workloadrun"),
        ("nvcre.cli.cluster", "cluster"),
        ("nvcre.cli.dev", "dev"),
        ("nvcre.cli.rbac", "rbac"),
        ("nvcre.cli.mcp", "mcp"),
        ("nvcre.cli.controller", "controller"),
        ("nvcre.cli.setup", "setup"),
        ("nvcre.cli.gitops", "gitops"),
        ("nvcre.cli.completion", "completion"),
        ("nvcre.cli.workflow", "workflow"),
        ("nvcre.cli.evidence", "evidence"),
    ):
        try:
            sub = import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        if name == "workloadrun":
            operate.register_workloadrun(sub.app)
        app.add_typer(sub.app, name=name)


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


def needs_every_group(argv: list[str]) -> bool:
    """False when ``argv`` names a command of ``certification`` itself (``render``, ``validate``...):
    that command runs the same with the other groups unmounted, and mounting them (importing
    their modules, building their parameters) is most of the CLI's start-up. Anything else
    (help, completion, another group, a typo that wants suggestions) gets every group."""
    if len(argv) < 2 or argv[0] != "certification":
        return True
    return argv[1] not in _OWN_COMMANDS


def start(argv: list[str], completing: bool) -> None:
    """Run the command line ``argv`` (without the program name) through Typer."""
    if completing:  # a shell asking for candidates (nvcrectl completion)
        from typer.completion import completion_init

        completion_init()
    if completing or needs_every_group(argv):
        mount_commands()
    app(complete_var="_NVCRECTL_COMPLETE")
