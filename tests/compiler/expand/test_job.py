"""expand_job, expand_job_dependencies, expand_workflow_dependencies and expand_workload."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.expand import (
    expand_job,
    expand_job_dependencies,
    expand_workflow_dependencies,
    expand_workload,
)
from nvcre.compiler.expand.dependencies import (
    classify,
    creation_order,
    dependency_suffix,
)
from nvcre.compiler.expand.meta import name_hash
from nvcre.compiler.naming import fnv1a_32
from nvcre.compiler.plan import Plan, PlannedGroup

WF = "cert-communication-nccl-a-21481"
UID = "5f0c1a2b-0000-4000-8000-000000000001"


def runtime(name: str = "rt", claim: str | None = None) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "node", "image": "img"}]}
    if claim:
        pod["resourceClaims"] = [{"name": "channel", "resourceClaimTemplateName": claim}]
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": pod}}}},
                        {"name": "launcher", "template": {"spec": {"template": {"spec": {"containers": [{"name": "node"}]}}}}},
                    ]
                }
            }
        },
    }


def workflow(**spec: Any) -> dict[str, Any]:
    job_spec = {
        "bandwidthMeasurement": {"logProfileRef": "nccl-bandwidth", "sampleInterval": "30s", "testType": "all_reduce"},
        "workloadMetadata": {"labels": {"team": "rt"}},
        "workload": {
            "trainJob": {
                "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "rt"},
                "trainer": {"numNodes": 4, "image": "img"},
            }
        },
    }
    out = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": WF, "namespace": "burn", "uid": UID},
        "spec": {
            "jobTemplate": {"spec": job_spec},
            "dependencies": [runtime()],
            "orchestration": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
        },
    }
    out["spec"].update(spec)
    return out


def plan(*groups: PlannedGroup, placement: str = "Pinned", iterations: int = 1, cleared: bool = False) -> Plan:
    nodes = tuple(sorted({n for g in groups for n in g.nodes}))
    return Plan(
        groups=tuple(groups),
        nodes_per_job=max((len(g.nodes) for g in groups), default=2),
        target_nodes=nodes,
        excluded_nodes=(),
        exclusion_reason="",
        placement=placement,  # type: ignore[arg-type]
        gpu_products=("NVIDIA-H100-80GB-HBM3",),
        health_monitor_cleared=cleared,
        events=(),
        message="",
        iterations=iterations,
    )


G0 = PlannedGroup("group-0", ("n1", "n2"))
G1 = PlannedGroup("group-1", ("n3", "n4"))


def pod_patch(job: dict[str, Any], replicated: str) -> dict[str, Any]:
    entry = next(p for p in job["spec"]["workload"]["trainJob"]["runtimePatches"] if p["manager"] == "nvcre.nvidia.com/controller")
    rj = next(r for r in entry["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"] if r["name"] == replicated)
    return rj["template"]["spec"]["template"]


def test_single_group_job_is_named_after_the_workflow_and_pinned() -> None:
    job = expand_job(workflow(), plan(G0), G0, 1, check_purity=True)
    meta = job["metadata"]
    assert meta["name"] == f"{WF}-job" and meta["namespace"] == "burn"
    assert meta["labels"] == {"nvcre.nvidia.com/workflow": WF, "nvcre.nvidia.com/group": "group-0", "app.kubernetes.io/managed-by": "nvcre"}
    assert meta["annotations"] == {"nvcre.nvidia.com/group-nodes": "n1,n2"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Workflow",
            "name": WF,
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    train_job = job["spec"]["workload"]["trainJob"]
    assert train_job["trainer"]["numNodes"] == 2
    # the job-scoped runtime is this Job's copy
    assert train_job["runtimeRef"]["name"] == f"rt-{name_hash(WF)}-job" == "rt-21481-job"
    for replicated in ("node", "launcher"):
        spec = pod_patch(job, replicated)["spec"]
        terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms == [
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1", "n2"]},
                    {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
                    {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]},
                ]
            }
        ]
        assert spec["tolerations"] == [{"operator": "Exists"}]
    assert job["spec"]["nodeHealthMonitor"] == {"cel": {"expression": "node.spec.unschedulable == true"}}
    # workload metadata is metadata, never a reference: kept as written
    assert job["spec"]["workloadMetadata"] == {"labels": {"team": "rt"}}


def test_several_groups_or_iterations_name_jobs_per_group_and_iteration() -> None:
    two = plan(G0, G1)
    full = f"{WF}-group-1-iter-1"
    assert expand_job(workflow(), two, G1, 1)["metadata"]["name"] == f"{full[:29]}-{fnv1a_32(full):08x}"[:35]
    assert expand_job(workflow(), two, G0, 1)["metadata"]["name"] != expand_job(workflow(), two, G1, 1)["metadata"]["name"]
    assert expand_job(workflow(), plan(G0, iterations=3), G0, 2)["spec"]["workload"]["trainJob"]["runtimeRef"]["name"] == (
        "rt-21481-group-0-iter-2"
    )
    assert len(expand_job(workflow(), two, G1, 1)["metadata"]["name"]) <= 35


def test_unpinned_has_no_hostname_term_no_annotation_no_blanket_toleration() -> None:
    group = PlannedGroup("group-0")
    job = expand_job(workflow(), plan(group, placement="Unpinned"), group, 1)
    assert "annotations" not in job["metadata"]
    assert job["spec"]["workload"]["trainJob"]["trainer"]["numNodes"] == 4
    spec = pod_patch(job, "node")["spec"]
    keys = [
        e["key"]
        for e in spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0][
            "matchExpressions"
        ]
    ]
    assert keys == ["nvidia.com/gpu.present", "nvidia.com/gpu.product"]
    assert "tolerations" not in spec


def test_taint_selectors_become_tolerations_and_clear_the_monitor() -> None:
    target = {"taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}, {"key": "burn-in", "value": "yes"}]}
    document = workflow(orchestration={"target": target})
    job = expand_job(document, plan(G0, cleared=True), G0, 1)
    assert pod_patch(job, "launcher")["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "burn-in", "operator": "Equal", "value": "yes"},
    ]
    assert "nodeHealthMonitor" not in job["spec"]


def test_thresholds_and_measurement_timeout_are_copied() -> None:
    document = workflow(
        validation={"performance": {"thresholds": {"thresholds": {"busBandwidthGBps": "value >= 400"}}, "measurementTimeout": "10m"}}
    )
    job = expand_job(document, plan(G0), G0, 1)
    assert job["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 400"}
    assert job["spec"]["measurementTimeout"] == "10m"


def test_checkpoint_needs_its_pvc_among_the_dependencies() -> None:
    document = workflow()
    document["spec"]["jobTemplate"]["spec"]["checkpoint"] = {"pvcName": "ckpt", "maxRestarts": 3}
    with pytest.raises(CompileError) as caught:
        expand_job(document, plan(G0), G0, 1)
    assert caught.value.diagnostics[0].code == "CheckpointPVCMissing"
    assert caught.value.diagnostics[0].message == "Checkpoint requires PVC 'ckpt' in dependencies"
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "ckpt"}, "spec": {"accessModes": ["ReadWriteMany"]}}
    document["spec"]["dependencies"].append(pvc)
    job = expand_job(document, plan(G0), G0, 1)
    assert job["spec"]["checkpoint"]["pvcName"] == "ckpt-21481-job"
    deps = expand_job_dependencies(document, plan(G0), G0, 1, job)
    assert [d["metadata"]["name"] for d in deps] == ["rt-21481-job", "ckpt-21481-job"]


def test_job_scoped_dependencies_share_renamed_cross_references_and_follow_creation_order() -> None:
    domain = {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "cd"},
        "spec": {"channel": {"resourceClaimTemplate": {"name": "chan"}}, "numNodes": 2},
    }
    unrelated = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared-config"}, "data": {"k": "v"}}
    document = workflow(dependencies=[runtime(claim="chan"), domain, unrelated])
    wf_deps = expand_workflow_dependencies(document)
    assert [d["metadata"]["name"] for d in wf_deps] == ["shared-config"]
    assert wf_deps[0]["metadata"]["ownerReferences"][0]["kind"] == "Workflow"
    assert wf_deps[0]["metadata"]["annotations"] == {"nvcre.nvidia.com/workflow-uid": UID}
    stored = copy.deepcopy(expand_job(document, plan(G0), G0, 1))
    stored["metadata"]["uid"] = "job-uid-1"
    deps = expand_job_dependencies(document, plan(G0), G0, 1, stored)
    by_kind = {d["kind"]: d for d in deps}
    assert by_kind["ComputeDomain"]["spec"]["channel"]["resourceClaimTemplate"]["name"] == "chan-21481-job"
    claim = by_kind["TrainingRuntime"]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "resourceClaims"
    ]
    assert claim == [{"name": "channel", "resourceClaimTemplateName": "chan-21481-job"}]
    assert all(
        d["metadata"]["ownerReferences"][0]
        == {
            "apiVersion": "nvcre.nvidia.com/v1alpha1",
            "kind": "Job",
            "name": f"{WF}-job",
            "uid": "job-uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        for d in deps
    )
    # before the Job exists, its copies carry only the Workflow's creation identity
    unowned = expand_job_dependencies(document, plan(G0), G0, 1, expand_job(document, plan(G0), G0, 1))
    assert all("ownerReferences" not in d["metadata"] for d in unowned)


def test_classification_and_order_rules() -> None:
    deps = [
        {"kind": "ConfigMap", "metadata": {"name": "cfg"}},
        {"kind": "TrainingRuntime", "metadata": {"name": "rt"}, "spec": {"volumes": [{"configMap": {"name": "cfg"}}]}},
        {"kind": "ClusterTrainingRuntime", "metadata": {"name": "crt"}},
        {"kind": "ConfigMap", "metadata": {"name": "alone"}},
    ]
    job_spec = {"workload": {"trainJob": {"runtimeRef": {"name": "rt"}, "x": "crt"}}, "workloadMetadata": {"labels": {"queue": "alone"}}}
    assert classify(deps, job_spec) == ([2, 3], [0, 1])
    assert creation_order([deps[1], deps[0]]) == [1, 0]
    assert dependency_suffix("wf-plain", 1, 1, "group-0", 1) == f"-{name_hash('wf-plain')}-job"
    assert len(name_hash("wf-plain")) == 5 and name_hash("a-b-c1d2e") == "c1d2e"


def test_conditional_dependencies_are_refused_with_their_path() -> None:
    document = workflow()
    document["spec"]["dependencies"][0]["when"] = {"platform": {"equals": "aws"}}
    with pytest.raises(CompileError) as caught:
        expand_workflow_dependencies(document)
    assert caught.value.diagnostics[0].path == "spec.dependencies[0].when"


def test_workload_is_the_jobs_trainjob_labelled_for_its_pods_with_measurements() -> None:
    document = workflow()
    job = copy.deepcopy(expand_job(document, plan(G0), G0, 1))
    with pytest.raises(CompileError, match="no uid"):
        expand_workload(job, document)
    job["metadata"]["uid"] = "job-uid-7"
    train_job, bandwidth = expand_workload(job, document, check_purity=True)
    assert train_job["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and train_job["kind"] == "TrainJob"
    assert train_job["metadata"]["name"] == f"{WF}-job-workload"
    assert train_job["metadata"]["labels"] == {"team": "rt", "nvcre.nvidia.com/job": f"{WF}-job", "app.kubernetes.io/managed-by": "nvcre"}
    assert train_job["metadata"]["ownerReferences"][0]["uid"] == "job-uid-7"
    assert pod_patch({"spec": {"workload": {"trainJob": train_job["spec"]}}}, "node")["metadata"] == {
        "labels": {"nvcre.nvidia.com/job": f"{WF}-job"}
    }
    assert "metadata" not in pod_patch({"spec": {"workload": {"trainJob": train_job["spec"]}}}, "launcher")
    assert train_job["spec"]["trainer"]["numNodes"] == 2
    assert bandwidth["metadata"]["name"] == f"{WF}-job-bandwidth"
    assert bandwidth["metadata"]["annotations"] == {"nvcre.nvidia.com/job-uid": "job-uid-7"}
    assert bandwidth["metadata"]["ownerReferences"][0]["kind"] == "Workflow"
    assert bandwidth["spec"] == {
        "jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": f"{WF}-job"},
        "logProfileRef": "nccl-bandwidth",
        "sampleInterval": "30s",
        "testType": "all_reduce",
    }


def test_expansion_never_changes_its_inputs() -> None:
    document = workflow()
    before = copy.deepcopy(document)
    job = expand_job(document, plan(G0), G0, 1, check_purity=True)
    job["metadata"]["uid"] = "u"
    job_before = copy.deepcopy(job)
    expand_job_dependencies(document, plan(G0), G0, 1, job)
    expand_workflow_dependencies(document)
    expand_workload(job, document, check_purity=True)
    assert document == before and job == job_before


def test_missing_identity_is_an_error_not_a_guess() -> None:
    document = workflow()
    del document["metadata"]["uid"]
    with pytest.raises(CompileError, match="Workflow has no uid"):
        expand_job(document, plan(G0), G0, 1)
    document = workflow()
    del document["metadata"]["namespace"]
    with pytest.raises(CompileError, match="Workflow has no namespace"):
        expand_job(document, plan(G0), G0, 1)
