"""A diverged training run on the simulated cluster, read by the controller as it ships.

A Megatron-LM run whose loss turns NaN half-way used to be read on its finite steps: the NaN
reports were dropped and its goodput could pass. Here one node of a two-node training group
carries the ``nan-loss`` fault, so the run prints ``lm loss: NAN`` and ``number of nan iterations``
from half-way on and still exits 0: the GoodputMeasurement records ``Diverged`` with the reason
``TrainingLossNotFinite`` (its goodput kept), the Job fails ValidationFailed with that reason,
the Certification's report fails the group and blames both of its nodes with it, and the
controller's ``/metrics`` shows the measurement under ``nvcre_goodput_measurement_failed``.
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
from nvcre.runtime.kube.resources import CERTIFICATIONS, GOODPUT_MEASUREMENTS, JOBS
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import running_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

REPO = Path(__file__).resolve().parents[2]
REASON = "TrainingLossNotFinite"


def _certification(namespace: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "diverged", "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}}],
        },
    }


def test_a_diverged_training_run_is_never_read_as_healthy(simcluster: Any, sim_namespace: str, kube: Any, tmp_path: Path) -> None:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-nan")
    simcluster.set_fault(nodes[1], "nan-loss")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log", "--metrics-secure=false") as controller:
        kube.create(_certification(sim_namespace, nodes))

        def finished() -> str | None:
            life = cond.lifecycle(kube.get(CERTIFICATIONS, "diverged", sim_namespace).get("status") or {})
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(finished, timeout=300, what="the Certification to finish") == cond.FAILED, controller.tail()

        def measured() -> dict[str, Any] | None:
            items = kube.list(GOODPUT_MEASUREMENTS, sim_namespace).items
            done = [m for m in items if cond.is_true(m.get("status"), "Complete")]
            return done[0] if done else None

        measurement = eventually(measured, timeout=120, what="the GoodputMeasurement to complete")
        assert measurement is not None, controller.tail()
        url = f"http://127.0.0.1:{controller.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=10).read().decode()

    status = measurement.get("status") or {}
    diverged = cond.condition(status, "Diverged") or {}
    assert (diverged.get("status"), diverged.get("reason")) == ("True", REASON), status
    assert "iteration" in diverged.get("message", "")
    assert status.get("result") and status.get("highestStep"), "the goodput of the steps stays visible"

    (job,) = kube.list(JOBS, sim_namespace).items
    failed = cond.condition(job.get("status") or {}, "ValidationFailed") or {}
    assert (failed.get("status"), failed.get("reason")) == ("True", REASON), job.get("status")

    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    report = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "report", "diverged", "-n", sim_namespace, "-o", "json"],
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
    failed = [s for s in found["nvcre_goodput_measurement_failed"].samples if s.labels.get("reason") == REASON]
    assert [(s.labels["measurement"], s.labels["job"], s.value) for s in failed] == [
        (measurement["metadata"]["name"], job["metadata"]["name"], 1.0)
    ]
