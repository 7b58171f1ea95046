"""Two Certifications whose long names render one Workflow name both run, each with its own Workflow.

Rendered Workflow names keep NVCRE's 20-bit hash, so the audit's two daily names in one namespace
render ``team-ml-h100-pool-cert-20-41e97`` both. The later Certification used to fail
``WorkflowNameCollision`` (a false FAILED). The controller as it ships now gives the later one a
Workflow under an owner-scoped name, says so in a ``WorkflowNameTaken`` Event, and both Succeed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.resources import CERTIFICATIONS, EVENTS, WORKFLOWS
from tests.integration.integration_helpers import eventually
from tests.integration.secure_metrics import running_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

DAILY = ("team-ml-h100-pool-cert-2028-07-27", "team-ml-h100-pool-cert-2030-03-29")
RENDERED = "team-ml-h100-pool-cert-20-41e97"


def _certification(name: str, namespace: str, nodes: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "5m",
            "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
        },
    }


def test_colliding_rendered_names_give_each_certification_its_own_workflow(
    simcluster: Any, sim_namespace: str, kube: Any, tmp_path: Path
) -> None:
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-nt")
    with running_controller(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log", "--metrics-secure=false") as controller:
        kube.create(_certification(DAILY[0], sim_namespace, nodes[:2]))

        def first_workflow() -> str | None:
            status = kube.get(CERTIFICATIONS, DAILY[0], sim_namespace).get("status") or {}
            ref = ((status.get("categoryStatuses") or [{}])[0].get("workflowRef") or {}).get("name")
            assert cond.lifecycle(status) != cond.FAILED, status
            return str(ref) if ref else None

        assert eventually(first_workflow, timeout=120, what="the first Workflow") == RENDERED
        kube.create(_certification(DAILY[1], sim_namespace, nodes[2:]))

        def finished(name: str) -> str | None:
            life = cond.lifecycle(kube.get(CERTIFICATIONS, name, sim_namespace).get("status") or {})
            return life if life in (cond.SUCCEEDED, cond.FAILED) else None

        for name in DAILY:
            assert eventually(lambda n=name: finished(n), timeout=300, what=f"{name} to finish") == cond.SUCCEEDED, controller.tail()

    refs = [kube.get(CERTIFICATIONS, n, sim_namespace)["status"]["categoryStatuses"][0]["workflowRef"]["name"] for n in DAILY]
    assert refs[0] == RENDERED and refs[1] != RENDERED and len(refs[1]) <= 31
    workflows = {w["metadata"]["name"]: w for w in kube.list(WORKFLOWS, sim_namespace).items}
    assert set(refs) <= set(workflows)
    owners = [workflows[r]["metadata"]["ownerReferences"][0]["name"] for r in refs]
    assert owners == list(DAILY)
    taken = [e for e in kube.list(EVENTS, sim_namespace).items if e.get("reason") == "WorkflowNameTaken"]
    assert len(taken) == 1 and refs[1] in (taken[0].get("note") or taken[0].get("message") or "")
