"""``workloadrun run`` with NVCRE's target flags on the simulated cluster: what reaches the API server.

No controller runs: the submitted WorkloadRun is read back as the API server stored it, so the
test sees exactly what ``--node-list``, ``--topology-domain``/``--topology-key`` and ``--test-scale``
made of the file. ``nvcrectl`` is the installed command, run as the user would run it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = REPO / ".venv" / "bin" / "nvcrectl"
WORKLOADRUN = REPO / "examples" / "workloadrun-nccl-all-reduce.yaml"
RACK = "example.com/rack"


def nvcrectl(simcluster, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    return subprocess.run([str(NVCRECTL), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False)


def _label(simcluster, nodes: list[str], value: str) -> None:
    from kubernetes import client

    with simcluster.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        for node in nodes:
            core.patch_node(node, {"metadata": {"labels": {RACK: value}}})


def test_target_flags_shape_the_submitted_workloadrun(simcluster, sim_namespace, kube) -> None:
    from nvcre.runtime.kube.resources import WORKLOADRUNS

    nodes = simcluster.add_nodes(profile="h100", count=3, prefix=f"{sim_namespace}-n")
    _label(simcluster, nodes[:2], "rack-a")
    _label(simcluster, nodes[2:], "rack-b")

    domain = nvcrectl(
        simcluster, "workloadrun", "run", str(WORKLOADRUN), "-n", sim_namespace, "--name", "in-rack-a", "--grant-run-access",
        "--topology-domain", "rack-a", "--topology-key", RACK, "--test-scale", "full-scale",
    )  # fmt: skip
    assert domain.returncode == 0, domain.stderr
    assert "Discovered 2 GPU nodes with product:" in domain.stderr
    assert f"WorkloadRun in-rack-a created in namespace {sim_namespace}." in domain.stderr
    spec = kube.get(WORKLOADRUNS, "in-rack-a", sim_namespace)["spec"]
    assert spec["target"]["matchExpressions"] == [{"key": RACK, "operator": "In", "values": ["rack-a"]}]
    assert spec["numNodes"] == 2  # every node of the domain
    assert spec["orchestration"]["testScale"] == "full-scale"

    listed = nvcrectl(
        simcluster, "workloadrun", "run", str(WORKLOADRUN), "-n", sim_namespace, "--name", "listed", "--grant-run-access",
        "--node-list", f"{nodes[0]},{nodes[2]}",
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    spec = kube.get(WORKLOADRUNS, "listed", sim_namespace)["spec"]
    assert spec["target"]["nodeNames"] == [nodes[0], nodes[2]] and spec["numNodes"] == 2


def test_a_domain_without_nodes_submits_nothing(simcluster, sim_namespace, kube) -> None:
    from nvcre.runtime.kube.resources import WORKLOADRUNS

    nodes = simcluster.add_nodes(profile="h100", count=1, prefix=f"{sim_namespace}-m")
    _label(simcluster, nodes, "rack-a")
    result = nvcrectl(
        simcluster, "workloadrun", "run", str(WORKLOADRUN), "-n", sim_namespace, "--name", "nowhere", "--grant-run-access",
        "--topology-domain", "rack-z", "--topology-key", RACK,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "--topology-domain" in result.stderr and "selects no GPU node" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert not kube.list(WORKLOADRUNS, sim_namespace).items
