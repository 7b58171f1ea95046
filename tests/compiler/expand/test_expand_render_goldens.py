"""Every Workflow the render golden suites hold plans and expands on a generic GPU cluster.

The cluster has eight ready H100 nodes and twelve cordoned ones (carrying the taints the
taint-selector goldens select), every topology label the catalog uses, and 8 allocatable GPUs
each. Each Workflow must either plan or fail with a plan reason (its target may select nodes
this cluster does not have); a plan must expand, with the purity check, into objects whose names
are DNS-1123 names of at most 63 characters.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.expand import expand_job, expand_job_dependencies, expand_workflow_dependencies, expand_workload
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import PlanError, plan_workflow
from nvcre.compiler.yamlio import load_file

REPO = Path(__file__).resolve().parents[3]
RENDERS = sorted(p for suite in ("render", "workloadrun") for p in (REPO / "golden" / suite).glob("*/expected.yaml"))
NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
CORDON_TAINTS = [
    {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
    {"key": "example.com/burn-in", "effect": "NoSchedule"},
]


def _node(index: int) -> dict[str, Any]:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "pool": "burn-in",
        "nvidia.com/gpu.clique": "fabric.1",
        "topology.nks.nscale.com/accelerator-domain": "domain-1",
    }
    spec: dict[str, Any] = {"unschedulable": True, "taints": CORDON_TAINTS} if index >= 8 else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"gpu-{index:02d}", "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


FACTS = facts_from_documents([_node(i) for i in range(20)])


def _workflows(path: Path) -> list[dict[str, Any]]:
    return [d for d in load_file(path) if isinstance(d, dict) and d.get("kind") == "Workflow"]


@pytest.mark.parametrize("expected", RENDERS, ids=[f"{p.parent.parent.name}/{p.parent.name}" for p in RENDERS])
def test_rendered_workflows_plan_and_expand(expected: Path) -> None:
    for rendered in _workflows(expected):
        workflow = copy.deepcopy(rendered)
        workflow["metadata"].update(namespace="certification", uid="d0c5d0c5-0000-4000-8000-000000000000")
        try:
            plan = plan_workflow(workflow, FACTS)
        except PlanError as exc:
            assert exc.reason in ("NodeDiscoveryError", "PartitionError"), exc
            continue
        group = plan.groups[-1]
        job = expand_job(workflow, plan, group, plan.iterations, check_purity=True)
        job["metadata"]["uid"] = "j0b00000-0000-4000-8000-000000000000"
        objects = [
            job,
            *expand_workflow_dependencies(workflow, plan),
            *expand_job_dependencies(workflow, plan, group, plan.iterations, job),
            *expand_workload(job, workflow, check_purity=True),
        ]
        for obj in objects:
            name = obj["metadata"]["name"]
            assert NAME.match(name) and len(name) <= 63, f"{obj['kind']} {name!r}"
        assert len(job["metadata"]["name"]) <= 35
