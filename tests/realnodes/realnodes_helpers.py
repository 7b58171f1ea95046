"""What the real-node test modules share: one started environment, and the installed CLI against it.

``started`` builds what is missing, snapshots the host, starts the real nodes (with the workload
image and, by default, JobSet, the Trainer and the nvcre controller) and stops them however the
module ends; a start that fails fails the module with the reason, not a traceback. ``nvcrectl``
runs the installed command as a user does, with the environment's kubeconfig.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


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
