"""Costly thresholds on the simulated cluster, with the controller as it ships.

The audit applied two Certifications whose threshold nests six comprehensions over a ten-element
list (206 characters, about 135 s per evaluation) and then an ordinary one: the ordinary one had no
status at all 16 minutes later, both Certification workers being inside the threshold check,
while ``/healthz`` answered 200. Here the same two are refused at once with the field path and
the reason, no Workflow is made for them and no node is blamed, and the ordinary Certification
runs to its end as it does alone.
"""

from __future__ import annotations

import time
import urllib.request
from typing import Any

import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, WORKFLOWS
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import running_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

TEN = "[0,1,2,3,4,5,6,7,8,9]"
COSTLY = "value >= 0.0 && " + "".join(f"{TEN}.all(x{i}, " for i in range(6)) + "true" + ")" * 6


def _certification(namespace: str, name: str, nodes: list[str], thresholds: dict[str, str] | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"nodesPerJob": 2, **({"thresholds": thresholds} if thresholds else {})}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": options}],
        },
    }


def test_costly_thresholds_are_refused_and_the_other_tenant_runs(simcluster: Any, sim_namespace: str, kube: Any, tmp_path: Any) -> None:
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-cost")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log") as controller:
        started = time.monotonic()
        for name in ("cost1", "cost2"):
            kube.create(_certification(sim_namespace, name, nodes, {"busBandwidthGBps": COSTLY}))
        kube.create(_certification(sim_namespace, "normal", nodes))

        def refused(name: str) -> dict[str, Any] | None:
            status = kube.get(CERTIFICATIONS, name, sim_namespace).get("status") or {}
            failed = cond.condition(status, cond.FAILED)
            return failed if failed and failed.get("status") == "True" else None

        for name in ("cost1", "cost2"):
            failed = eventually(lambda name=name: refused(name), timeout=60, what=f"{name} to be refused")
            assert failed["reason"] == "WorkflowValidationFailed"
            assert "spec.categories[0].options.thresholds.busBandwidthGBps" in failed["message"]
            assert "ThresholdExpressionTooCostly" in failed["message"]
        refused_after = time.monotonic() - started

        def finished() -> str | None:
            life = cond.lifecycle(kube.get(CERTIFICATIONS, "normal", sim_namespace).get("status") or {})
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        assert eventually(finished, timeout=240, what="the ordinary Certification to finish") == cond.SUCCEEDED
        owners = {
            (w["metadata"].get("labels") or {}).get("nvcre.nvidia.com/certification") for w in kube.list(WORKFLOWS, sim_namespace).items
        }
        assert owners == {"normal"}, owners
        with urllib.request.urlopen(f"http://127.0.0.1:{controller.health_port}/healthz", timeout=10) as answer:
            assert answer.status == 200
    assert refused_after < 60, controller.tail()
