"""``nvcrectl certification render`` starts without the other command groups, and says the same.

A command of the ``certification`` group itself runs with only that group mounted (the other
groups' modules are not imported); every other invocation mounts every group. The output of
the commands that take the short way is compared with the same command fully mounted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from nvcre.cli.main import needs_every_group

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "examples/certification.yaml")

_RUN = """
import sys
from nvcre.cli import main
if sys.argv[1] == "mounted":
    main.mount_commands()
sys.argv = ["nvcrectl", *sys.argv[2:]]
try:
    main.run()
finally:
    sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def _nvcrectl(mode: str, *args: str) -> tuple[int, str, str, set[str]]:
    env = {**os.environ, "NVCRE_NO_CACHE": "1", "COLUMNS": "120"}
    result = subprocess.run([sys.executable, "-c", _RUN, mode, *args], capture_output=True, text=True, env=env)
    stderr, _, modules = result.stderr.rpartition("\nMODULES ")
    return result.returncode, result.stdout, stderr, set(modules.split())


def test_which_invocations_take_the_short_way() -> None:
    assert not needs_every_group(["certification", "render", "x.yaml"])
    assert not needs_every_group(["certification", "validate", "x.yaml"])
    assert not needs_every_group(["certification", "list-categories"])
    for argv in (
        [],
        ["--help"],
        ["certification"],
        ["certification", "--help"],
        ["certification", "run"],
        ["certification", "rendr"],
        ["workloadrun", "render"],
        ["--version"],
    ):
        assert needs_every_group(argv), argv


@pytest.mark.parametrize(
    "args",
    [
        ("certification", "render", EXAMPLE, "--platform", "aws", "--gpu-arch", "h100"),
        ("certification", "render", EXAMPLE, "--platform", "aws", "--gpu-arch", "h100", "-o", "json", "--explain"),
        ("certification", "render", "--help"),
        ("certification", "render", EXAMPLE, "--gpu-arch", "nope"),
        ("certification", "render", EXAMPLE, "--bogus-flag"),
        ("certification", "validate", EXAMPLE),
        ("certification", "list-categories", "-o", "json"),
    ],
)
def test_the_short_way_says_exactly_what_the_mounted_cli_says(args: tuple[str, ...]) -> None:
    short = _nvcrectl("short", *args)
    mounted = _nvcrectl("mounted", *args)
    assert short[:3] == mounted[:3]
    assert short[1] or short[2]  # something was said, on stdout or stderr
    assert "nvcre.cli.operate" not in short[3] and "nvcre.cli.workloadrun" not in short[3]
    assert "nvcre.cli.operate" in mounted[3]


def test_the_group_help_still_lists_every_command() -> None:
    code, out, _, modules = _nvcrectl("short", "certification", "--help")
    assert code == 0 and "run" in out and "report" in out and "render" in out
    assert "nvcre.cli.operate" in modules
