"""`nvcrectl dev up/status/env/down` on a real simulated cluster: a GB200 or GB300 cluster comes up, certifies an
all-reduce over multi-node NVLink, and goes away leaving no process and no state behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_dev import _alive, invoke


@pytest.fixture
def no_dev_cluster(request: pytest.FixtureRequest) -> None:
    """The simulated cluster's binaries are built and no development cluster runs on this machine."""
    from nvcre.testing import binaries, simsession

    if simsession.read_state() is not None:
        pytest.skip("a development simulated cluster is already running on this machine")
    # builds what is missing, or skips / fails (CI) like the other simulated-cluster tests
    from nvcre.testing.pytest_plugin import _ensure_sim_built

    _ensure_sim_built(request)
    assert binaries.openssl() is not None


@pytest.mark.integration
@pytest.mark.sim
@pytest.mark.parametrize("prof", ["gb200", "gb300"])
def test_dev_up_gb_runs_an_all_reduce_over_nvlink_and_dev_down_leaves_nothing(no_dev_cluster: None, prof: str, tmp_path: Path) -> None:
    """As a user runs it: `dev up --with-controller` (the controller as `python -m nvcre.runtime`),
    then the installed `nvcrectl certification run --wait`; the all-reduce spans trays over the
    ComputeDomain's IMEX channel, so it measures NVLink bandwidth, not the nodes' Ethernet."""
    from nvcre.testing import simsession

    up = invoke("up", "--profile", prof, "--nodes", "4", "--system-nodes", "1", "--with-controller", "--detach")
    assert up.exit_code == 0, up.output
    state = simsession.read_state()
    try:
        assert state is not None
        kubeconfig = state["kubeconfig"]
        assert f"export KUBECONFIG={kubeconfig}" in up.output
        env = {**os.environ, "KUBECONFIG": kubeconfig}
        from kubernetes import client, config

        with config.new_client_from_config(config_file=kubeconfig) as api_client:
            nodes = [api_client.sanitize_for_serialization(n) for n in client.CoreV1Api(api_client).list_node().items]
            groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
        assert sorted(n["metadata"]["name"] for n in nodes) == [*(f"{prof}-onprem-{i}" for i in range(4)), "system-0"]
        for node in nodes:
            conditions = {c["type"]: c["status"] for c in node["status"]["conditions"]}
            assert conditions["Ready"] == "True"
            gpu = node["metadata"]["name"] != "system-0"
            assert node["metadata"]["labels"].get("nvidia.com/gpu.product") == (f"NVIDIA-{prof.upper()}" if gpu else None)
        assert f"dev fault {prof}-onprem-3=" in up.output  # the example names a GPU node
        assert {"trainer.kubeflow.org", "jobset.x-k8s.io", "resource.nvidia.com"} <= groups

        nvcrectl = Path(sys.executable).with_name("nvcrectl")
        results = tmp_path / "results.json"
        run = subprocess.run(
            [
                str(nvcrectl),
                "certification",
                "run",
                "--category",
                "communication/nccl-all-reduce",
                "--name",
                f"mnnvl-{prof}",
                "--wait",
                "--timeout",
                "4m",
                "--results-file",
                str(results),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert "Result:       PASSED" in run.stdout
        (category,) = json.loads(results.read_text())["categories"]
        assert category["status"] == "Succeeded"
        peak = max(float(row["busBW"].split()[0]) for row in category["bandwidth"])
        assert peak > 500, category["bandwidth"]  # NVLink; the nodes' Ethernet gives about 11 GB/s

        status = json.loads(invoke("status", "-o", "json").output)
        assert status["running"] and len(status["nodes"]) == 5
        changed = invoke("fault", f"{prof}-onprem-1=cordon")
        assert changed.exit_code == 0 and f"{prof}-onprem-1: cordon" in changed.output
    finally:
        down = invoke("down")
    assert down.exit_code == 0 and "stopped the simulated cluster" in down.output
    pids = [int(state["supervisor_pid"]), *(int(p) for p in state["pids"].values())]
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in pids if _alive(p)]
    assert not Path(state["workdir"]).exists()
    assert not simsession.state_path().exists() and not simsession.requests_dir().exists()


@pytest.mark.integration
@pytest.mark.sim
def test_a_foreground_dev_up_is_seen_by_status_env_and_stopped_by_down(no_dev_cluster: None) -> None:
    """The installed command in the foreground, as its banner tells a user to use the others beside it."""
    from nvcre.testing import simsession

    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    up = subprocess.Popen(
        [nvcrectl, "dev", "up", "--profile", "h100", "--nodes", "1"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while simsession.read_state() is None and up.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert up.poll() is None, up.stdout.read().decode() if up.stdout else ""
        status = subprocess.run([nvcrectl, "dev", "status", "-o", "json"], capture_output=True, text=True, timeout=60)
        assert json.loads(status.stdout)["running"] is True, status.stdout + status.stderr
        env = subprocess.run([nvcrectl, "dev", "env"], capture_output=True, text=True, timeout=60)
        assert env.returncode == 0 and "export KUBECONFIG=" in env.stdout
        down = subprocess.run([nvcrectl, "dev", "down"], capture_output=True, text=True, timeout=120)
        assert down.returncode == 0 and "stopped the simulated cluster" in down.stdout
        assert up.wait(timeout=60) is not None
    finally:
        if up.poll() is None:
            os.killpg(up.pid, 9)
            up.wait(timeout=30)
    assert simsession.read_state() is None
