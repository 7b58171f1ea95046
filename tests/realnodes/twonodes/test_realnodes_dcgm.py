"""The ``diagnostics/dcgm-level4`` category on a real node, with JobSet, the Trainer and the nvcre
controller: the rendered privileged, host-network pod runs the workload image's ``dcgmi``
stand-in, which reports from the node's mock GPU state (the file the device plugin mounts). A
healthy node PASSES; a GPU the device plugin reports unhealthy makes it FAIL naming the node
(``WorkloadFailed``: the diagnostic's exit status), and the report keeps the stand-in's result
naming the GPU. It runs on the first node of the package's shared environment."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import Environment, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {name}
spec:
  target:
    nodeNames: [{node}]
  categories:
  - domain: diagnostics
    variant: dcgm-level4
    options:
      gpusPerNode: 4
"""


@pytest.fixture
def cluster(env: Environment) -> Any:
    """The shared environment's cluster (the category targets its first node)."""
    return env.cluster


def _certify(cluster: Any, tmp_path: Path, name: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any], str]:
    cert, results = tmp_path / f"{name}.yaml", tmp_path / f"{name}.json"
    cert.write_text(CERTIFICATION.format(name=name, node=cluster.node_names[0]))
    run = nvcrectl(
        cluster, "certification", "run", "--cert-file", str(cert), "--grant-run-access", "--wait", "--timeout", "5m",
        "--results-file", str(results), timeout=420,
    )  # fmt: skip
    created = re.search(r"created in namespace (\S+?)\.?$", run.stderr, re.MULTILINE)
    assert created is not None and results.is_file(), (run.returncode, run.stderr[-3000:])
    return run, json.loads(results.read_text()), created.group(1)


def _dcgm_log(cluster: Any, namespace: str) -> str:
    from kubernetes import client

    core = client.CoreV1Api(cluster.api_client())
    [pod] = core.list_namespaced_pod(namespace).items
    assert pod.spec.host_network is True and pod.spec.containers[0].security_context.privileged is True  # as rendered
    return str(core.read_namespaced_pod_log(pod.metadata.name, namespace, container="node"))


def test_a_healthy_node_passes_the_dcgm_diagnostic_from_its_mock_gpu_state(cluster: Any, tmp_path: Path) -> None:
    from nvcre.runtime.measure.dcgm import parse_dcgm

    run, results, namespace = _certify(cluster, tmp_path, "dcgm-healthy")
    assert run.returncode == 0, run.stderr[-3000:]
    assert (results["result"], results["failedNodes"]) == ("PASSED", [])
    [category] = results["categories"]
    assert (category["variant"], category["status"]) == ("dcgm-level4", "Succeeded")
    log = _dcgm_log(cluster, namespace)
    parsed = parse_dcgm(log)
    assert parsed.overall == "Pass" and "no GPU and no DCGM" in log
    assert len(json.loads(log)["gpu_device_ids"]) == 4  # the four GPUs the device plugin handed over


def test_an_unhealthy_gpu_makes_the_dcgm_diagnostic_fail_naming_the_node(cluster: Any, tmp_path: Path) -> None:
    from nvcre.runtime.measure.dcgm import parse_dcgm

    node = cluster.node_names[0]
    cluster.set_fault(node, "unhealthy-device:1")
    try:
        run, results, _ = _certify(cluster, tmp_path, "dcgm-unhealthy")
    finally:
        cluster.set_fault(node, "none")
    assert run.returncode == 1, run.stderr[-3000:]
    assert results["result"] == "FAILED" and [d["name"] for d in results["failedNodeDetails"]] == [node]
    assert [d["reason"] for d in results["failedNodeDetails"]] == ["WorkloadFailed"]  # dcgmi exited 1
    # The failed pod is gone with its JobSet; the report keeps its log's tail: the stand-in's document.
    [category] = results["categories"]
    [group] = category["failedGroups"]
    excerpt = group["failureLog"]
    assert (excerpt["nodeName"], excerpt["exitCode"]) == (node, 1)
    parsed = parse_dcgm(excerpt["tail"])
    assert parsed.overall == "Fail" and {t.failed_gpus for t in parsed.tests if t.status == "Fail"} == {("0",)}
