"""The real-node environment puts the host back on every way out: a start that fails half-way
(after the kubelets and containerd started), one refused for a working directory too deep for
Unix sockets, and a foreground ``nvcrectl dev up --real`` stopped with Ctrl-C."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.realnodes.realnodes_helpers import interrupt, start_interruptible

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]


@pytest.fixture
def built(request: pytest.FixtureRequest) -> None:
    from nvcre.testing.pytest_plugin import _ensure_real_built

    _ensure_real_built(request)


def test_a_start_that_fails_after_the_nodes_started_stops_everything_and_puts_the_host_back(built: None, tmp_path: Path) -> None:
    from nvcre.testing.realnodes import cgroups, hoststate
    from nvcre.testing.realnodes.cluster import RealCluster

    class Failing(RealCluster):
        def _wait_nodes_ready(self) -> None:
            assert all(node.kubelet is not None and node.kubelet.running() for node in self.nodes)
            raise RuntimeError("injected failure while waiting for the nodes")

    before = hoststate.snapshot()
    root = Path(tempfile.mkdtemp(prefix="rn", dir="/tmp"))  # short: containerd's sockets live below it
    try:
        cluster = Failing(profile_name="h100", nodes=1, root_dir=root)
        with pytest.raises(RuntimeError, match="injected failure"):
            cluster.start()
        assert cgroups.pids(cluster.cgroup_top) == set()
        assert list(root.iterdir()) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert hoststate.differences(before, hoststate.snapshot()) == []


def test_a_working_directory_too_deep_for_unix_sockets_is_refused_before_anything_starts(built: None, tmp_path: Path) -> None:
    from nvcre.testing.realnodes import hoststate
    from nvcre.testing.realnodes.cluster import RealCluster, RealClusterError

    before = hoststate.snapshot()
    deep = tmp_path / ("d" * 80)
    deep.mkdir()
    with pytest.raises(RealClusterError, match="too deep for the nodes' Unix sockets"):
        RealCluster(nodes=1, root_dir=deep).start()
    assert list(deep.iterdir()) == []
    assert hoststate.differences(before, hoststate.snapshot()) == []


def test_ctrl_c_stops_a_foreground_dev_up_real_and_puts_the_host_back(built: None) -> None:
    from nvcre.testing import simsession
    from nvcre.testing.realnodes import hoststate, session

    if session.read_state() is not None or simsession.read_state() is not None:
        pytest.skip("a development cluster is running on this machine; this test starts its own")
    before = hoststate.snapshot()
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    up = start_interruptible([nvcrectl, "dev", "up", "--real", "--nodes", "1"])
    try:
        deadline = time.monotonic() + 240
        state = None
        while time.monotonic() < deadline and up.poll() is None:
            state = session.read_state()
            if state is not None:
                break
            time.sleep(0.5)
        assert state is not None, up.communicate(timeout=60)
        assert state["supervisor_pid"] == up.pid  # the foreground command supervises itself
        status = json.loads(subprocess.run([nvcrectl, "dev", "status", "-o", "json"], capture_output=True, text=True, timeout=60).stdout)
        assert status["nodes"][0]["ready"] is True
    finally:
        out, err = interrupt(up, 120)
    assert up.returncode == 0, err
    assert out.startswith("export KUBECONFIG=") and "real-node environment stopped" in err
    assert session.read_state() is None and not session.state_path().exists()
    assert hoststate.differences(before, hoststate.snapshot()) == []
    assert not Path(state["workdir"]).exists()
