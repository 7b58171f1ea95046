"""``nvcrectl certification render`` starts without the other command groups, and says the same.

A plain ``certification render FILE`` takes the render fast path: no Typer, no Click, no other
command group, no cluster client. Another command of the ``certification`` group itself runs
with only that group mounted (the other groups' modules are not imported); every other
invocation mounts every group. The output of the commands that take a short way is compared
with the same command fully mounted and run through Typer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nvcre.cli.main import needs_every_group
from nvcre.cli.render_shortcut import FastRender, fast_plan

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples/certification.yaml")
FACTS = str(REPO / "tests/fixtures/facts/onprem-gb200-rdma.yaml")

#: What a plain render must not load: the Typer application, its libraries, the other groups, a cluster client.
NOT_ON_THE_RENDER_PATH = (
    "typer",
    "click",
    "rich",
    "shellingham",
    "kubernetes",
    "nvcre.cli.typer_app",
    "nvcre.cli.certification",
    "nvcre.cli.common",
    "nvcre.cli.operate",
    "nvcre.cli.workloadrun",
    "nvcre.cli.evidence",
    "nvcre.runtime",
    "celpy",
)

_RUN = """
import sys
from nvcre.cli import main
if sys.argv[1] == "mounted":  # every group, and through Typer even where the fast path would run
    import nvcre.cli.render_shortcut
    nvcre.cli.render_shortcut.fast_plan = lambda argv: None
    main.mount_commands()
sys.argv = ["nvcrectl", *sys.argv[2:]]
try:
    main.run()
finally:
    sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
"""


def _nvcrectl(mode: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str, set[str]]:
    env = {**os.environ, "NVCRE_NO_CACHE": "1", "COLUMNS": "120", **(env or {})}
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
        ("certification", "render", "-o", "json", "--platform=gcp", EXAMPLE, "--gpu-arch=h100", "-n", "certs"),
        ("certification", "render", EXAMPLE, "--facts", FACTS),
        ("certification", "render", EXAMPLE, "--platform", "aws", "--gpu-arch", "h100", "-n", "Not_A_Namespace"),
        ("certification", "render", EXAMPLE, "--platform", "aws", "--platform", "oci", "--gpu-arch", "h100"),
        ("certification", "render", EXAMPLE, "--env-prefix", "ARGOCD_ENV_"),
        ("certification", "render", str(REPO / "no-such-file.yaml"), "--gpu-arch", "h100"),
        ("certification", "render", str(REPO / "pyproject.toml"), "--gpu-arch", "h100"),
        ("certification", "render", EXAMPLE, "--platform", "aws", "--gpu-arch", "h100", "-o", "JSON"),
        ("certification", "validate", EXAMPLE),
        ("certification", "list-categories", "-o", "json"),
    ],
)
def test_the_short_way_says_exactly_what_the_mounted_cli_says(args: tuple[str, ...]) -> None:
    env = {"ARGOCD_ENV_NVCRE_PLATFORM": "aws", "ARGOCD_ENV_NVCRE_GPU_ARCH": "h100"}
    short = _nvcrectl("short", *args, env=env)
    mounted = _nvcrectl("mounted", *args, env=env)
    assert short[:3] == mounted[:3]
    assert short[1] or short[2]  # something was said, on stdout or stderr
    assert "nvcre.cli.operate" not in short[3] and "nvcre.cli.workloadrun" not in short[3]
    assert "nvcre.cli.operate" in mounted[3]


def test_the_group_help_still_lists_every_command() -> None:
    code, out, _, modules = _nvcrectl("short", "certification", "--help")
    assert code == 0 and "run" in out and "report" in out and "render" in out
    assert "nvcre.cli.operate" in modules


def _loaded(modules: set[str], name: str) -> bool:
    return any(module == name or module.startswith(name + ".") for module in modules)


@pytest.mark.parametrize(
    "args",
    [
        ("certification", "render", EXAMPLE, "--platform", "aws", "--gpu-arch", "h100"),
        ("certification", "render", EXAMPLE, "--facts", FACTS, "-o", "json", "--namespace", "certs"),
    ],
)
def test_a_plain_render_loads_no_typer_click_or_cluster_client(args: tuple[str, ...]) -> None:
    code, out, err, modules = _nvcrectl("short", *args)
    assert code == 0 and out, err
    assert "nvcre.cli.render_shortcut" in modules and "nvcre.compiler.render" in modules
    assert [name for name in NOT_ON_THE_RENDER_PATH if _loaded(modules, name)] == []


def test_a_failing_render_is_reported_by_typer_after_the_fast_path_printed_nothing() -> None:
    code, out, err, modules = _nvcrectl("short", "certification", "render", EXAMPLE, "--gpu-arch", "nope")
    assert code == 2 and out == "" and "error(s); nothing was written" in err
    assert err.count("nope") == 1  # said once: the fast path kept quiet
    assert "typer" in modules  # the report came from the Typer command


def test_which_command_lines_the_fast_path_reads() -> None:
    file = Path(EXAMPLE)
    assert fast_plan(["certification", "render", EXAMPLE]) == FastRender(file=file)
    assert fast_plan(
        ["certification", "render", "--platform=aws", EXAMPLE, "--gpu-arch", "h100", "-o", "json", "-n", "ns", "--env-prefix", "X_"]
    ) == FastRender(file=file, platform="aws", gpu_arch="h100", output="json", namespace="ns", env_prefix="X_")
    assert fast_plan(["certification", "render", EXAMPLE, "--facts", FACTS, "--platform="]) == FastRender(
        file=file, facts=Path(FACTS), platform=""
    )
    for argv in (
        [],
        ["certification", "render"],
        ["certification", "validate", EXAMPLE],
        ["workloadrun", "render", EXAMPLE],
        ["certification", "render", "-"],
        ["certification", "render", str(REPO / "examples")],
        ["certification", "render", str(REPO / "missing.yaml")],
        ["certification", "render", EXAMPLE, EXAMPLE],
        ["certification", "render", EXAMPLE, "--help"],
        ["certification", "render", EXAMPLE, "--explain"],
        ["certification", "render", EXAMPLE, "--dry-run"],
        ["certification", "render", EXAMPLE, "--output-dir", "out"],
        ["certification", "render", EXAMPLE, "--platform"],
        ["certification", "render", EXAMPLE, "--platform", "--gpu-arch", "h100"],
        ["certification", "render", EXAMPLE, "--platform", "aws", "--platform", "oci"],
        ["certification", "render", EXAMPLE, "-o", "JSON"],
        ["certification", "render", EXAMPLE, "-ojson"],
        ["certification", "render", EXAMPLE, "-o=json"],
        ["certification", "render", EXAMPLE, "--plat", "aws"],
        ["certification", "render", "--", EXAMPLE],
    ):
        assert fast_plan(argv) is None, argv
