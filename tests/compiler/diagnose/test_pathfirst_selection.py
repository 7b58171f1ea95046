"""The opt-in path-first planner is chosen by the Workflow's planner annotation, like the others."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.compiler.diagnose import planner
from nvcre.compiler.diagnose.prior import annotation_problems
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import plan_workflow

PLANNER_ANNOTATION = "nvcre.nvidia.com/diagnose-planner"


def _node(name: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def _diagnose_workflow(chosen: str) -> dict[str, Any]:
    trainer = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "cert-diag", "namespace": "ns", "uid": "0123456789abcdef", "annotations": {PLANNER_ANNOTATION: chosen}},
        "spec": {
            "jobTemplate": {
                "spec": {"workload": {"trainJob": {"runtimeRef": {"kind": "TrainingRuntime", "name": "rt"}, "trainer": trainer}}}
            },
            "orchestration": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "diagnose": {"minGroupSize": 1}},
        },
    }


def test_pathfirst_is_a_known_planner_name() -> None:
    assert planner("pathfirst").name == "pathfirst"
    assert annotation_problems({PLANNER_ANNOTATION: "pathfirst"}) == []


def test_the_annotation_plans_one_path_group_of_every_node_first() -> None:
    cluster = facts_from_documents([_node(f"n{i}") for i in range(6)])
    plan = plan_workflow(_diagnose_workflow("pathfirst"), cluster)
    assert [(group.name, group.nodes) for group in plan.groups] == [("path-0", tuple(f"n{i}" for i in range(6)))]
    assert plan.diagnose is not None and plan.diagnose.planner == "pathfirst"


@pytest.mark.parametrize("chosen", ["adaptive", "baseline"])
def test_the_other_planners_still_start_as_before(chosen: str) -> None:
    cluster = facts_from_documents([_node(f"n{i}") for i in range(6)])
    plan = plan_workflow(_diagnose_workflow(chosen), cluster)
    assert not any(group.name.startswith("path-") for group in plan.groups)
