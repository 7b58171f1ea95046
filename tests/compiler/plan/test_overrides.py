"""Workflow overrides: matched on the detected facts, applied before sizing, carried to the Jobs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand import expand_job, expand_workflow_dependencies
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.plan import PlanError, plan_workflow
from nvcre.compiler.plan.overrides import OverrideContext, apply_overrides, summarize_when


def node(name: str, gpus: str = "8", clique: str = "c1") -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.clique": clique}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": gpus}},
    }


FACTS = facts_from_documents([node("a"), node("b"), node("c", gpus="4")])


def workflow(*overrides: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "ns", "uid": "0123456789"},
        "spec": {
            "jobTemplate": {
                "spec": {
                    "workload": {
                        "trainJob": {
                            "runtimeRef": {"kind": "TrainingRuntime", "name": "rt"},
                            "trainer": {"numNodes": 2, "env": [{"name": "A", "value": "1"}]},
                        }
                    }
                }
            },
            "dependencies": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}}],
            "orchestration": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
            "overrides": list(overrides),
        },
    }


ONPREM_H100 = {"platform": {"equals": "onprem"}, "gpuArchitecture": {"in": ["h100", "h200"]}}


def test_a_matching_override_changes_sizing_capacity_and_the_job() -> None:
    document = workflow(
        {"when": {"platform": {"equals": "aws"}}, "jobTemplate": {"spec": {"schedulingStallGraceSeconds": 5}}},
        {
            "when": ONPREM_H100,
            "jobTemplate": {
                "spec": {
                    "schedulingStallGraceSeconds": 900,
                    "workload": {"trainJob": {"trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}}},
                }
            },
            "dependencies": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"extra": "x"}}],
            "orchestration": {"iterations": 2},
        },
    )
    before = copy.deepcopy(document)
    plan = plan_workflow(document, FACTS)
    assert document == before
    assert plan.target_nodes == ("a", "b")  # the override's GPU request drops c
    assert plan.iterations == 2
    assert [(e.reason, e.message) for e in plan.events][0] == (
        "OverrideApplied",
        "Override[1] matched (gpuArchitecture=in [h100,h200], platform=onprem), patching jobTemplate, 1 dependencies, orchestration",
    )
    # NVCRE's shape: strings a client built from its Go types decodes
    assert plan.applied_overrides == (
        {"index": 1, "when": "gpuArchitecture=in [h100,h200], platform=onprem", "patches": "jobTemplate, 1 dependencies, orchestration"},
    )
    assert plan.as_status()["appliedOverrides"][0]["index"] == 1
    job = expand_job(document, plan, plan.groups[0], 1)
    assert job["spec"]["schedulingStallGraceSeconds"] == 900
    assert job["metadata"]["name"] == "wf-group-0-iter-1"  # two iterations now
    (config,) = expand_workflow_dependencies(document, plan)
    assert config["data"] == {"k": "v", "extra": "x"}
    with pytest.raises(CompileError, match="expand it with the plan"):
        expand_workflow_dependencies(document)


def test_no_match_no_op_and_failures() -> None:
    plan = plan_workflow(workflow({"when": {"platform": {"equals": "gcp"}}, "jobTemplate": {"spec": {"x": 1}}}), FACTS)
    assert [(e.type, e.reason, e.message) for e in plan.events] == [
        ("Normal", "NoOverridesMatched", "0 of 1 overrides matched (platform=onprem, gpuArchitecture=h100)")
    ]
    assert plan.target_nodes == ("a", "b", "c") and plan.applied_overrides == ()
    same = {"when": {}, "jobTemplate": {"spec": {"workload": {"trainJob": {"trainer": {"numNodes": 2}}}}}}
    assert [e.reason for e in plan_workflow(workflow(same), FACTS).events] == ["OverrideNoOp"]
    bad_patch = {"when": {}, "jobTemplatePatch": [{"op": "remove", "path": "/spec/nothing"}]}
    with pytest.raises(PlanError, match="^OverrideError: Failed to apply overrides: override\\[0\\]: failed to apply jobTemplatePatch"):
        plan_workflow(workflow(bad_patch), FACTS)
    bad_cel = {"when": {"expression": "platform +"}}
    with pytest.raises(PlanError, match="OverrideError: .*override\\[0\\]: evaluating when"):
        plan_workflow(workflow(bad_cel), FACTS)


def test_when_matching_rules() -> None:
    ctx = OverrideContext(platform="aws", gpu_architecture="gb200", topology_mode="topology", domain_count=3)
    cases = [
        ({}, True),
        ({"platform": {"notIn": ["aws"]}}, False),
        ({"gpuArchitecture": {"equals": "gb200"}, "workloadKind": "TrainJob"}, True),
        ({"topology": {"mode": "topology", "domainCount": {"greaterThan": 2, "lessThan": 4}}}, True),
        ({"topology": {"domainCount": {"equals": 2}}}, False),
        ({"expression": "domainCount > 2 && platform == 'aws'"}, True),
        ({"config": {"k": "v"}}, False),
    ]
    spec = {"jobTemplate": {"spec": {}}}
    for when, expected in cases:
        result = apply_overrides({**spec, "overrides": [{"when": when, "jobTemplate": {"spec": {"m": 1}}}]}, ctx)
        assert bool(result.applied) is expected, when
        assert "overrides" not in result.spec
    assert summarize_when({}) == "<always>"
    assert summarize_when({"expression": "x" * 50}) == "expression=" + "x" * 37 + "..."
