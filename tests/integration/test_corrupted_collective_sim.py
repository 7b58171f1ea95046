"""A corrupted collective on the simulated cluster, judged by the controller as it ships.

An nccl-tests run whose rows print a non-zero ``#wrong`` (and end ``Out of bounds values : N
FAILED``) used to be read as a valid measurement: its bandwidth could pass a threshold and the
Certification PASSED. Here one node carries the ``corrupt-data`` fault, so the group's collective
prints healthy bandwidth with corrupted results while the workload exits 0: the measurement
records ``CollectiveDataCorrupted`` (its rows kept), the Job fails with that reason, both nodes of
the group are blamed in the report, and the controller's ``/metrics`` shows the failed measurement.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, CERTIFICATIONS
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import running_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
REASON = "CollectiveDataCorrupted"


def _certification(namespace: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "corrupt", "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 2}}],
        },
    }


def test_a_corrupted_collective_fails_its_job_and_blames_its_nodes(simcluster: Any, sim_namespace: str, kube: Any, tmp_path: Path) -> None:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-cx")
    simcluster.set_fault(nodes[1], "corrupt-data")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log", "--metrics-secure=false") as controller:
        kube.create(_certification(sim_namespace, nodes))

        def finished() -> str | None:
            life = cond.lifecycle(kube.get(CERTIFICATIONS, "corrupt", sim_namespace).get("status") or {})
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(finished, timeout=300, what="the Certification to finish") == cond.FAILED, controller.tail()
        url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()

    (measurement,) = kube.list(BANDWIDTH_MEASUREMENTS, sim_namespace).items
    status = measurement.get("status") or {}
    assert status["failure"]["reason"] == REASON
    assert status.get("results"), "the corrupted run's rows stay visible"

    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    report = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "report", "corrupt", "-n", sim_namespace, "-o", "json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert report.returncode in (0, 1), report.stderr
    data = json.loads(report.stdout)
    assert data["result"] == "FAILED"
    blamed = {d["name"]: d["reason"] for d in data["failedNodeDetails"]}
    assert blamed == {nodes[0]: REASON, nodes[1]: REASON}

    found = {f.name: f for f in text_string_to_metric_families(text)}
    failed = [s for s in found["nvcre_nccl_measurement_failed"].samples if s.labels.get("reason") == REASON]
    assert [s.value for s in failed] == [1.0]
