"""``nvcrectl`` spends no CPU on cyclic garbage collection that a short process does not need.

The fast render runs with the collector paused and gives it back as it found it, whether the
render succeeded, declined (Typer then runs with the collector on) or ended the process; every
command freezes the objects alive at exit, so interpreter shutdown has nothing to walk. The
output is the same bytes either way (the render contract and golden tests hold that).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples/certification.yaml")

#: Runs ``main.run()`` with a fast plan whose ``run`` reports whether the collector was on, then
#: reports whether it is on afterwards; ``sys.argv[1]`` says what the plan does.
_PROBE = """
import gc, sys
from nvcre.cli import main, render_shortcut

mode = sys.argv[1]

class Plan:
    def run(self):
        sys.stderr.write(f"during={gc.isenabled()}\\n")
        if mode == "exit":
            sys.exit(7)
        return mode == "done"

render_shortcut.fast_plan = lambda argv: Plan()
if mode == "typer":
    import nvcre.cli.typer_app
    nvcre.cli.typer_app.start = lambda argv, completing: sys.stderr.write(f"typer={gc.isenabled()}\\n")
sys.argv = ["nvcrectl", "certification", "render", "x.yaml"]
try:
    main.run()
finally:
    sys.stderr.write(f"after={gc.isenabled()}\\n")
"""

#: An exit hook registered before ``main.run()`` runs after every hook it registers, so it sees
#: whether the objects were frozen for shutdown.
_AT_EXIT = """
import atexit, gc, sys
from nvcre.cli import main
atexit.register(lambda: sys.stderr.write(f"\\nfrozen={gc.get_freeze_count()}\\n"))
sys.argv = ["nvcrectl", *sys.argv[1:]]
main.run()
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NVCRE_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize(("mode", "code", "lines"), [("done", 0, []), ("typer", 0, ["typer=True"]), ("exit", 7, [])])
def test_the_fast_render_runs_with_the_collector_paused_and_restores_it(mode: str, code: int, lines: list[str]) -> None:
    result = _python(_PROBE, mode)
    assert result.returncode == code, result.stderr
    assert result.stderr.split() == ["during=False", *lines, "after=True"]


def test_a_caller_that_paused_the_collector_finds_it_paused() -> None:
    result = _python("import gc\ngc.disable()\n" + _PROBE, "done")
    assert result.returncode == 0, result.stderr
    assert result.stderr.split() == ["during=False", "after=False"]


@pytest.mark.parametrize(
    "args",
    [("certification", "render", EXAMPLE, "--platform", "onprem", "--gpu-arch", "gb300"), ("--version",)],
    ids=["fast render", "through Typer"],
)
def test_the_objects_alive_at_exit_are_frozen_for_shutdown(args: tuple[str, ...]) -> None:
    result = _python(_AT_EXIT, *args)
    assert result.returncode == 0 and result.stdout, result.stderr
    frozen = int(result.stderr.rpartition("frozen=")[2])
    assert frozen > 10_000  # every module, function and class loaded, not a handful
