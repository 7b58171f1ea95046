"""`nvcrectl dev up/env/fault/status/down`: bad input exits 2 before anything starts, no
cluster is reported plainly, and (integration) a GB200 or GB300 cluster comes up, certifies an
all-reduce over multi-node NVLink, and goes away leaving no process and no state behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nvcre.cli.dev import app


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root of its own, so no real cluster state is seen or touched."""
    monkeypatch.setenv("NVCRE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["up", "--profile", "a10"], "--profile: unknown profile 'a10'"),
        (["up", "--nodes", "0"], "--nodes: must be at least 1"),
        (["up", "--platform", "mars"], "--platform: unknown platform 'mars'"),
        (["up", "--fault", "h100-onprem-0"], "--fault[0]: fault 'h100-onprem-0' must look like NODE=KIND"),
        (["up", "--fault", "h100-onprem-0=melt"], "--fault[0]: unknown fault 'melt'"),
        (["up", "--nodes", "2", "--fault", "h100-onprem-5=xid"], "--fault[0]: no node 'h100-onprem-5'"),
        (["up", "--system-nodes", "-1"], "--system-nodes: must not be negative, got -1"),
        (["fault", "gpu-0=slow-link:7"], "fault[0]: fault 'slow-link:7': the slow-link factor must be in (0, 1]"),
        (["status", "-o", "yaml"], "--output: must be text or json"),
        (["up", "--real", "--profile", "a10"], "--profile: unknown profile 'a10'"),
        (["up", "--real", "--profile", "gb200-dra"], "--profile: gb200-dra publishes GPUs through DRA"),
        (["up", "--real", "--nodes", "17"], "--nodes: at most 16 real nodes, got 17"),
        (["up", "--real", "--fault", "h100-onprem-0=xid"], "--fault[0]: unknown fault 'xid' on real nodes"),
        (
            ["up", "--real", "--fault", "h100-onprem-0=killed-rank", "--fault", "h100-onprem-9=killed-rank"],
            "--fault[1]: no node 'h100-onprem-9'",
        ),
        (
            ["up", "--real", "--platform", "aws", "--fault", "h100-onprem-0=stopped-kubelet"],
            "--fault[0]: no node 'h100-onprem-0'; the nodes will be h100-aws-0, h100-aws-1",
        ),
        (["up", "--real", "--fault", "h100-onprem-0=slow-link"], "--fault[0]: fault 'slow-link': give a rate"),
        (["up", "--real", "--with-prometheus"], "--with-prometheus and --system-nodes are not available with --real"),
    ],
)
def test_bad_input_exits_2_with_the_option_named(isolated_cache: Path, args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (isolated_cache / "run").exists()  # nothing was started or written


def test_without_a_running_cluster_each_command_says_so(isolated_cache: Path) -> None:
    env = invoke("env")
    assert env.exit_code == 1 and "no simulated cluster is running" in env.output
    status = invoke("status", "-o", "json")
    assert status.exit_code == 0 and json.loads(status.output) == {"running": False}
    assert invoke("status").output.strip() == "no simulated cluster is running"
    assert invoke("down").output.strip() == "no simulated cluster is running"
    fault = invoke("fault", "gpu-0=xid")
    assert fault.exit_code == 1 and "no simulated cluster is running" in fault.output


def test_with_controller_is_refused_when_the_controller_is_not_importable(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nvcre.testing.simsession as simsession

    monkeypatch.setattr(simsession, "controller_available", lambda: False)
    result = invoke("up", "--with-controller")
    assert result.exit_code == 2 and "--with-controller" in result.output


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


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


def test_a_recorded_supervisor_is_known_by_pid_and_start_time_whatever_its_command_line() -> None:
    from nvcre.testing.session import _is_recorded, _started

    me = os.getpid()
    assert _is_recorded({"supervisor_pid": me, "supervisor_started": _started(me)}, "no-such-marker")
    assert not _is_recorded({"supervisor_pid": me, "supervisor_started": (_started(me) or 0) + 1}, "no-such-marker")
    gone = subprocess.Popen(["true"])
    gone.wait()
    assert not _is_recorded({"supervisor_pid": gone.pid, "supervisor_started": 1}, "true")


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


def test_dev_up_real_without_what_real_nodes_need_says_so_and_starts_nothing(isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nvcre.testing.realnodes import toolchain

    monkeypatch.setattr(toolchain, "machine_problems", lambda: ["real nodes need root (the kubelet, containerd and the namespaces)"])
    result = invoke("up", "--real", "--nodes", "2")
    assert result.exit_code == 1, result.output
    assert "error: real nodes need root" in result.output and "Traceback" not in result.output
    assert not (isolated_cache / "run").exists()
