"""``Gt`` and ``Lt`` in a target's ``matchExpressions`` are admitted and select nodes as Kubernetes does.

NVCRE (api/v1alpha1 in github.com/NVIDIA/cluster-readiness-engine) types a target's
``matchExpressions`` as ``[]corev1.NodeSelectorRequirement``, whose operators include ``Gt``
and ``Lt``. Kubernetes' node affinity rule (k8s.io/component-helpers nodeaffinity, through
``labels.Selector``; https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/):
such a requirement has exactly one value that parses as a 64-bit integer, and a node matches
when its label is present, parses as an int64 and is greater (less) than that value. Here the
requirement's values are checked at admission (one value matching ``^-?[0-9]+$``), the
planner selects the nodes by that rule, and the Job's pods carry the same requirement in their
node affinity, so the scheduler agrees with the planner.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import validate
from nvcre.compiler.plan import PlanError, plan_workflow
from nvcre.runtime import compile as compiler

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "api"
COUNT = "example.com/gpu-count"


def _load(path: Path) -> dict[str, Any]:
    data = dict(yaml.safe_load(path.read_text(encoding="utf-8")))
    data.pop("status", None)
    data["metadata"] = {"name": "gt-lt"}
    return data


def _documents(requirement: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A Certification, a WorkloadRun and a Workflow whose targets all carry ``requirement``."""
    cert = _load(FIXTURES / "certification-multi-category.yaml")
    cert["spec"]["target"]["matchExpressions"] = [copy.deepcopy(requirement)]
    run = _load(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml")
    run["spec"].setdefault("target", {})["matchExpressions"] = [copy.deepcopy(requirement)]
    flow = _load(FIXTURES / "workflow-overrides.yaml")
    flow["spec"]["orchestration"]["target"]["matchExpressions"] = [copy.deepcopy(requirement)]
    return {"certification": cert, "workloadrun": run, "workflow": flow}


_TARGET_PATH = {
    "certification": "spec.target.matchExpressions[0]",
    "workloadrun": "spec.target.matchExpressions[0]",
    "workflow": "spec.orchestration.target.matchExpressions[0]",
}
ADMITTED = [
    {"key": COUNT, "operator": "Gt", "values": ["4"]},
    {"key": COUNT, "operator": "Lt", "values": ["-12"]},
    {"key": COUNT, "operator": "Gt", "values": ["007"]},
]
REFUSED = [
    {"key": COUNT, "operator": "Gt"},
    {"key": COUNT, "operator": "Lt", "values": []},
    {"key": COUNT, "operator": "Gt", "values": ["4", "8"]},
    {"key": COUNT, "operator": "Lt", "values": ["4.5"]},
    {"key": COUNT, "operator": "Gt", "values": ["+4"]},
    {"key": COUNT, "operator": "Gt", "values": ["four"]},
    {"key": COUNT, "operator": "Lt", "values": ["\u0663"]},  # ARABIC-INDIC DIGIT THREE: a digit, not an ASCII one
]


@pytest.mark.parametrize("requirement", ADMITTED, ids=lambda r: f"{r['operator']}-{r['values'][0]}")
@pytest.mark.parametrize("which", sorted(_TARGET_PATH))
def test_a_single_integer_value_is_admitted_in_every_kinds_target(which: str, requirement: dict[str, Any]) -> None:
    doc = _documents(requirement)[which]
    assert [d.render() for d in validate(doc) if d.is_error] == []


@pytest.mark.parametrize("requirement", REFUSED, ids=lambda r: f"{r['operator']}-{r.get('values')}")
@pytest.mark.parametrize("which", sorted(_TARGET_PATH))
def test_anything_but_one_integer_value_is_refused_at_the_values(which: str, requirement: dict[str, Any]) -> None:
    doc = _documents(requirement)[which]
    errors = [d for d in validate(doc) if d.is_error]
    assert [d.path for d in errors] == [_TARGET_PATH[which] + ".values"]
    assert errors[0].message == "operators Gt and Lt take exactly one value, an integer"


def _node(name: str, count: str | None) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    if count is not None:
        labels[COUNT] = count
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def _workflow(requirement: dict[str, Any]) -> dict[str, Any]:
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt"},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {"containers": [{"name": "node", "image": "img"}]}}}}}
                    ]
                }
            }
        },
    }
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "burn", "uid": "5f0c1a2b-0000-4000-8000-000000000002"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "workload": {
                        "trainJob": {
                            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "rt"},
                            "trainer": {"numNodes": 1},
                        }
                    }
                }
            },
            "dependencies": [runtime],
            "orchestration": {"target": {"matchExpressions": [requirement]}},
        },
    }


FACTS = [_node("four", "4"), _node("eight", "8"), _node("padded", "0016"), _node("text", "many"), _node("bare", None)]


@pytest.mark.parametrize(
    ("operator", "value", "selected"),
    [("Gt", "4", ["eight", "padded"]), ("Lt", "16", ["eight", "four"]), ("Gt", "-1", ["eight", "four", "padded"])],
)
def test_the_planner_selects_nodes_whose_label_is_an_integer_beyond_the_value(operator: str, value: str, selected: list[str]) -> None:
    requirement = {"key": COUNT, "operator": operator, "values": [value]}
    plan = plan_workflow(_workflow(requirement), compiler.cluster_facts(FACTS, []))
    assert sorted(plan.target_nodes) == selected


def test_no_node_beyond_the_value_is_a_discovery_failure_not_a_refusal() -> None:
    with pytest.raises(PlanError) as caught:
        plan_workflow(_workflow({"key": COUNT, "operator": "Lt", "values": ["0"]}), compiler.cluster_facts(FACTS, []))
    assert "operator" not in caught.value.message


def test_the_jobs_pods_carry_the_requirement_in_their_node_affinity() -> None:
    from nvcre.compiler.expand import expand_job

    requirement = {"key": COUNT, "operator": "Gt", "values": ["4"]}
    workflow = _workflow(requirement)
    plan = plan_workflow(workflow, compiler.cluster_facts(FACTS, []))
    job = expand_job(workflow, plan, plan.groups[0], 1)
    (patch,) = job["spec"]["workload"]["trainJob"]["runtimePatches"]
    (replicated,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    affinity = replicated["template"]["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert requirement in term["matchExpressions"]
