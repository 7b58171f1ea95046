"""``nvcrectl dev up --real`` end to end: a detached real-node environment is seen by ``status``
and ``env``, its node holds the catalog's workload image, and ``dev down`` puts the host back
even after its supervisor was killed outright (it finishes the teardown from the environment's
record)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]


def _nvcrectl(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    return subprocess.run([nvcrectl, "dev", *args], capture_output=True, text=True, timeout=timeout, check=False)


def _assert_workload_image_on_nodes(kubeconfig: str) -> None:
    from kubernetes import client, config

    from nvcre.testing.realnodes import workload_images

    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    for node in api.list_node().items:
        names = {name for image in node.status.images or [] for name in image.names or []}
        assert set(workload_images.references()) <= names, (node.metadata.name, sorted(names))


@pytest.fixture
def no_dev_environment(request: pytest.FixtureRequest) -> None:
    from nvcre.testing import simsession
    from nvcre.testing.pytest_plugin import _ensure_real_built
    from nvcre.testing.realnodes import session

    _ensure_real_built(request)
    if session.read_state() is not None or simsession.read_state() is not None:
        pytest.skip("a development cluster is running on this machine; this test starts its own")


def test_dev_up_real_is_seen_by_status_and_env_and_down_cleans_up_after_a_killed_supervisor(no_dev_environment: None) -> None:
    from nvcre.testing.realnodes import cgroups, hoststate

    before = hoststate.snapshot()
    up = _nvcrectl("up", "--real", "--profile", "b200", "--nodes", "1", "--detach", "--fault", "b200-onprem-0=killed-rank")
    try:
        assert up.returncode == 0, up.stderr
        assert up.stdout.startswith("export KUBECONFIG="), up.stdout
        status = json.loads(_nvcrectl("status", "-o", "json").stdout)
        assert status["running"] and status["kind"] == "real"
        [node] = status["nodes"]
        assert (node["name"], node["ready"], node["gpus"], node["ip"]) == ("b200-onprem-0", True, "8", "10.250.0.10")
        assert node["fault"] == "killed-rank"  # put on at start, before the environment said it was ready
        assert node["runtime"].startswith("containerd://")
        _assert_workload_image_on_nodes(up.stdout.splitlines()[0].split("=", 1)[1])
        assert _nvcrectl("env").stdout == up.stdout
        text = _nvcrectl("status").stdout
        assert "b200-onprem-0" in text and "n0-kubelet" in text and "network namespace /proc/" in text
        bad = _nvcrectl("fault", "b200-onprem-0=melt")
        assert bad.returncode == 2 and "unknown fault 'melt' on real nodes" in bad.stderr
        fault = _nvcrectl("fault", "b200-onprem-0=unhealthy-device:3")
        assert fault.returncode == 0 and fault.stdout.strip() == "b200-onprem-0: unhealthy-device:3", fault.stderr
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            [node] = json.loads(_nvcrectl("status", "-o", "json").stdout)["nodes"]
            if node["gpus"] == "5":
                break
            time.sleep(1)
        assert (node["gpus"], node["fault"]) == ("5", "unhealthy-device:3")
        record = json.loads((Path(status["workdir"]) / "teardown.json").read_text())
        top = record["cgroup_top"]
        assert cgroups.pids(top)
        os.kill(int(status["supervisor_pid"]), signal.SIGKILL)  # a crash: no teardown of its own
        deadline = time.monotonic() + 10
        while _nvcrectl("status", "-o", "json").stdout.strip() != '{"running": false}' and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        down = _nvcrectl("down")
    assert down.returncode == 0, down.stderr
    assert "stopped the real-node environment" in down.stdout
    assert hoststate.differences(before, hoststate.snapshot()) == []
    assert cgroups.pids(top) == set()
    assert not Path(status["workdir"]).exists()
