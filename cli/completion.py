"""``nvcrectl completion bash|zsh|fish``: print a shell completion script.

Source it (``source <(nvcrectl completion bash)``) or save it where the shell loads completions.
The script asks ``nvcrectl`` itself for candidates, so it never goes stale.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

app = typer.Typer(help="Shell completion scripts.")


class Shell(str, Enum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.callback(invoke_without_command=True)
def completion(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")]) -> None:
    """Print the completion script for SHELL."""
    from typer.completion import get_completion_script

    script = get_completion_script(prog_name="nvcrectl", complete_var="_NVCRECTL_COMPLETE", shell=shell.value)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
