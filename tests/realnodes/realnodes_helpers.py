"""What the real-node test modules share: one started environment, and the installed CLI against it.

``Environment`` is what a fixture hands its tests: the running cluster, the host as it was before
it started, and the sampler of the stack's peak memory (None where nothing samples it).

``started`` builds what is missing, snapshots the host, starts the real nodes (with the workload
image and, by default, JobSet, the Trainer and the nvcre controller) and stops them however the
module ends; a start that fails fails the module with the reason, not a traceback. ``nvcrectl``
runs the installed command as a user does, with the environment's kubeconfig.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Environment:
    """A started environment, the host as it was before it, and its memory sampler."""

    cluster: Any
    host_before: dict[str, Any]
    sampler: Any = None


@contextlib.contextmanager
def started(request: pytest.FixtureRequest, *, nodes: int, controllers: bool = True) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(the running environment, the host as it was before it started); stopped on the way out."""
    from nvcre.testing.errors import ControlPlaneError
    from nvcre.testing.pytest_plugin import _ensure_real_built, _ensure_sim_built
    from nvcre.testing.realnodes import hoststate
    from nvcre.testing.realnodes.cluster import RealCluster
    from nvcre.testing.realnodes.images import ImageError

    _ensure_real_built(request)
    if controllers:
        _ensure_sim_built(request)
    before = hoststate.snapshot()
    cluster = RealCluster(profile_name="h100", nodes=nodes, workload_images=True, controllers=controllers)
    try:
        cluster.start()
    except ImageError as exc:
        pytest.fail(f"the workload image could not be built: {exc}", pytrace=False)
    except ControlPlaneError as exc:
        pytest.fail(f"the real-node environment did not start: {exc}", pytrace=False)
    try:
        yield cluster, before
    finally:
        cluster.stop()


def nvcrectl(cluster: Any, *args: str, timeout: float = 480) -> subprocess.CompletedProcess[str]:
    """The installed CLI, run as a user runs it, against the environment's API server."""
    binary = str(Path(sys.executable).with_name("nvcrectl"))
    environ = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run([binary, *args], env=environ, capture_output=True, text=True, timeout=timeout, check=False)


def start_interruptible(argv: list[str]) -> subprocess.Popen[str]:
    """Start a command a test will Ctrl-C, with SIGINT as a user's terminal gives it. A test run
    started in the background (a CI job's ``&``, ``nohup``) has SIGINT ignored, a child inherits
    that, and Python then never installs its KeyboardInterrupt handler; a handler, unlike an
    ignored signal, is reset to the default when the child starts."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt(up: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """Ctrl-C for a foreground command; its output. One still running ``timeout`` seconds later is
    terminated (then killed) so the test never leaves it behind, and the test fails."""
    up.send_signal(signal.SIGINT)
    try:
        return up.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        up.terminate()
        try:
            up.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            up.kill()
            up.communicate()
        raise AssertionError(f"the command did not end within {timeout:.0f} s of Ctrl-C") from None
