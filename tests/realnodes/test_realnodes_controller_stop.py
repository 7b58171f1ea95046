"""JobSet, the Trainer and the nvcre controller started beside real nodes stop with the environment
on every way out: a start that fails after they started, and Ctrl-C on a foreground
``nvcrectl dev up --real --with-controller``; the host is left as it was each time."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import interrupt, start_interruptible

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

CONTROLLERS = {"jobset-controller", "trainer-controller-manager", "nvcre-controller"}


@pytest.fixture
def built(request: pytest.FixtureRequest) -> None:
    from nvcre.testing.pytest_plugin import _ensure_real_built, _ensure_sim_built

    _ensure_real_built(request)
    _ensure_sim_built(request)


def _gone(pids: dict[str, int]) -> list[str]:
    """Names of ``pids`` whose process still exists."""
    return [name for name, pid in pids.items() if Path(f"/proc/{pid}").exists()]


def test_a_start_that_fails_after_the_controllers_started_stops_them_and_puts_the_host_back(
    built: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nvcre.testing.realnodes import cgroups, controllers, hoststate
    from nvcre.testing.realnodes.cluster import RealCluster

    started: dict[str, int] = {}
    real_start = controllers.start_workload_controllers

    def start_then_fail(cluster: Any) -> dict[str, float]:
        real_start(cluster)
        started.update({name: pid for name, pid in cluster.pids.items() if name in CONTROLLERS})
        raise RuntimeError("injected failure after the controllers started")

    monkeypatch.setattr(controllers, "start_workload_controllers", start_then_fail)
    before = hoststate.snapshot()
    root = Path(tempfile.mkdtemp(prefix="rn", dir="/tmp"))  # short: containerd's sockets live below it
    try:
        cluster = RealCluster(profile_name="h100", nodes=1, root_dir=root, controllers=True)
        with pytest.raises(RuntimeError, match="injected failure"):
            cluster.start()
        assert set(started) == CONTROLLERS
        assert _gone(started) == []
        assert cgroups.pids(cluster.cgroup_top) == set()
        assert list(root.iterdir()) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert hoststate.differences(before, hoststate.snapshot()) == []


def test_ctrl_c_stops_a_foreground_dev_up_real_with_controller_and_puts_the_host_back(built: None) -> None:
    from nvcre.testing import simsession
    from nvcre.testing.realnodes import hoststate, session

    if session.read_state() is not None or simsession.read_state() is not None:
        pytest.skip("a development cluster is running on this machine; this test starts its own")
    before = hoststate.snapshot()
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    argv = [nvcrectl, "dev", "up", "--real", "--nodes", "1", "--with-controller"]
    up = start_interruptible(argv)
    state: dict[str, Any] | None = None
    try:
        deadline = time.monotonic() + 420
        while time.monotonic() < deadline and up.poll() is None:
            state = session.read_state()
            if state is not None:
                break
            time.sleep(0.5)
        assert state is not None, up.communicate(timeout=60)
        assert state["controller"] is True and CONTROLLERS <= set(state["pids"])
        status = json.loads(subprocess.run([nvcrectl, "dev", "status", "-o", "json"], capture_output=True, text=True, timeout=60).stdout)
        assert all(status["alive"][name] for name in CONTROLLERS), status["alive"]
    finally:
        out, err = interrupt(up, 180)
    assert up.returncode == 0, err
    assert "real-node environment stopped" in err
    assert _gone({name: int(pid) for name, pid in state["pids"].items()}) == []
    assert session.read_state() is None and not session.state_path().exists()
    assert hoststate.differences(before, hoststate.snapshot()) == []
