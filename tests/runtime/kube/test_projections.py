"""The informer caches keep each object's projection: everything the reconcilers read, less spec.

The decisive checks run the reconcilers' own pod and TrainJob readers on a full object and on its
projection and require the same answers; the size checks keep the projection from growing back.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from nvcre.runtime.judge.attribution import choose_failure_pod, group_nodes
from nvcre.runtime.judge.pods import blocked_pods, bound_nodes, job_pods, live_pods, scheduler_message
from nvcre.runtime.judge.restart import current_attempt_pods, jobset_restarts
from nvcre.runtime.kube.client import ObjectList, WatchEvent
from nvcre.runtime.kube.informers import Informer
from nvcre.runtime.kube.projections import compact, project, project_pod, project_trainjob, projection_for
from nvcre.runtime.kube.resources import NODES, PODS, TRAINJOBS
from nvcre.runtime.reconcile.job import trainjob_phase

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {"f:phase": {}}}}]
WORKLOAD = "cert-comm-nccl-1a2b-0-workload"


def _container(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "nvcr.io/nvidia/pytorch:26.01-py3",
        "command": ["timeout", "3600", "/usr/local/mpi/bin/mpirun"],
        "args": ["-N", "8", "-x", "NCCL_DEBUG=INFO", "/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "16G"],
        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(12)],
        "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "1Ti"}, "requests": {"nvidia.com/gpu": "8"}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _pod(name: str, *, replicated: str = "node", phase: str = "Running", node: str | None = "gpu-3",
         exit_code: int | None = None, attempt: str = "0", scheduled: bool = True) -> dict[str, Any]:  # fmt: skip
    state: dict[str, Any] = {"running": {"startedAt": "2026-12-03T08:00:05Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "OOMKilled" if exit_code == 137 else "Error"}}
    conditions = [
        {"type": "PodScheduled", "status": "True" if scheduled else "False", "lastTransitionTime": "2026-12-03T08:00:01Z",
         **({} if scheduled else {"reason": "Unschedulable", "message": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu."})},
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-03T08:00:06Z"},
    ]  # fmt: skip
    spec: dict[str, Any] = {
        "containers": [_container("node")],
        "initContainers": [_container("fix-ssh-permissions")],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-3"]}]}]}}},
        "tolerations": [{"operator": "Exists"}],
    }  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "creationTimestamp": "2026-12-03T08:00:00Z",
            "labels": {
                "jobset.sigs.k8s.io/jobset-name": WORKLOAD,
                "jobset.sigs.k8s.io/replicatedjob-name": replicated,
                "jobset.sigs.k8s.io/restart-attempt": attempt,
                "nvcre.nvidia.com/job": "cert-comm-nccl-1a2b-0",
                "training.kubeflow.org/trainjob-ancestor-step": "trainer" if replicated == "launcher" else "node",
            },
            "annotations": {"jobset.sigs.k8s.io/job-key": "db5631ee" * 5, "sim.nvcre.io/duration": "3s"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"{WORKLOAD}-{replicated}-0", "uid": "u", "controller": True}],
            "managedFields": copy.deepcopy(MANAGED),
        },
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": conditions,
            "hostIP": "10.0.0.3",
            "containerStatuses": [{"name": "node", "ready": phase == "Running", "restartCount": 0, "state": state,
                                   "image": "nvcr.io/nvidia/pytorch:26.01-py3", "imageID": "sha256:" + "0" * 64,
                                   "containerID": "containerd://" + "1" * 64}],
        },
    }  # fmt: skip


PODS_SEEN = [
    _pod(f"{WORKLOAD}-node-0-0-a"),
    _pod(f"{WORKLOAD}-node-0-1-b", node="gpu-4", exit_code=137, phase="Failed"),
    _pod(f"{WORKLOAD}-launcher-0-0-c", replicated="launcher", exit_code=1, phase="Failed", attempt="1"),
    _pod(f"{WORKLOAD}-node-0-2-d", node=None, phase="Pending", scheduled=False),
]


def _trainjob(suspend: bool | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "rt"},
        "runtimePatches": [{"manager": "nvcre.nvidia.com/controller", "trainingRuntimeSpec": {"template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
                "affinity": {"nodeAffinity": {}}, "tolerations": [{"operator": "Exists"}]}}}}}]}}}}],
        "trainer": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2, "args": ["-b", "8"] * 20},
    }  # fmt: skip
    if suspend is not None:
        spec["suspend"] = suspend
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": WORKLOAD, "namespace": "ns", "uid": "tj", "creationTimestamp": "2026-12-03T08:00:00Z",
                     "ownerReferences": [{"kind": "Job", "name": "j", "uid": "job-uid", "controller": True}],
                     "managedFields": copy.deepcopy(MANAGED)},
        "spec": spec,
        "status": {"conditions": [{"type": "Failed", "status": "True", "message": "jobset failed"}],
                   "jobsStatus": [{"name": "node", "active": 0, "failed": 1}]},
    }  # fmt: skip


def _projected(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [project_pod(copy.deepcopy(p)) for p in pods]


def test_the_pod_readers_answer_the_same_on_the_projection():
    full, slim = PODS_SEEN, _projected(PODS_SEEN)
    job = {"metadata": {"name": "cert-comm-nccl-1a2b-0", "namespace": "ns"}}
    assert job_pods(slim, "cert-comm-nccl-1a2b-0", WORKLOAD) == _projected(job_pods(full, "cert-comm-nccl-1a2b-0", WORKLOAD))
    assert [p["metadata"]["name"] for p in live_pods(slim)] == [p["metadata"]["name"] for p in live_pods(full)]
    assert bound_nodes(slim) == bound_nodes(full) == ["gpu-3"]
    assert bound_nodes(slim, labelled_for="cert-comm-nccl-1a2b-0") == bound_nodes(full, labelled_for="cert-comm-nccl-1a2b-0")
    assert [p["metadata"]["name"] for p in blocked_pods(slim)] == [p["metadata"]["name"] for p in blocked_pods(full)] != []
    assert scheduler_message(slim) == scheduler_message(full) != ""
    assert choose_failure_pod(slim) == choose_failure_pod(full) is not None
    assert choose_failure_pod(slim, prefer_launcher=True) == choose_failure_pod(full, prefer_launcher=True) is not None
    assert group_nodes(job, slim) == group_nodes(job, full)
    assert jobset_restarts(slim) == jobset_restarts(full) == 1
    workload = _trainjob(False)
    assert _projected(current_attempt_pods(full, workload)) == current_attempt_pods(slim, project_trainjob(copy.deepcopy(workload)))


def test_a_pod_keeps_node_container_names_labels_and_status_only():
    pod = project_pod(copy.deepcopy(PODS_SEEN[1]))
    assert pod["spec"] == {"nodeName": "gpu-4", "containers": [{"name": "node"}], "initContainers": [{"name": "fix-ssh-permissions"}]}
    meta = pod["metadata"]
    assert "managedFields" not in meta and "annotations" not in meta
    assert meta["labels"] == PODS_SEEN[1]["metadata"]["labels"] and meta["ownerReferences"] == PODS_SEEN[1]["metadata"]["ownerReferences"]
    status = pod["status"]
    assert status["phase"] == "Failed" and status["conditions"] == PODS_SEEN[1]["status"]["conditions"]
    assert status["containerStatuses"] == [{"name": "node", "ready": False, "restartCount": 0,
                                            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]  # fmt: skip
    # a pod that is not bound yet has no nodeName to keep
    assert "nodeName" not in project_pod(copy.deepcopy(PODS_SEEN[3]))["spec"]
    assert len(json.dumps(pod)) < len(json.dumps(PODS_SEEN[1])) / 2


@pytest.mark.parametrize("suspend", [True, False, None])
def test_a_trainjob_keeps_suspend_and_status(suspend):
    full = _trainjob(suspend)
    slim = project_trainjob(copy.deepcopy(full))
    assert slim["spec"] == ({} if suspend is None else {"suspend": suspend})
    assert slim["status"] == full["status"]
    assert "managedFields" not in slim["metadata"] and slim["metadata"]["ownerReferences"] == full["metadata"]["ownerReferences"]
    assert trainjob_phase(slim) == trainjob_phase(full)


def test_every_other_resource_keeps_its_whole_object_without_managed_fields():
    node = {"metadata": {"name": "gpu-1", "managedFields": MANAGED, "annotations": {"a": "b"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"images": [{"names": ["x"]}]}}  # fmt: skip
    kept = projection_for(NODES.plural)(copy.deepcopy(node))
    expected = copy.deepcopy(node)
    del expected["metadata"]["managedFields"]
    assert kept == expected
    assert projection_for(PODS.plural) is project_pod and projection_for(TRAINJOBS.plural) is project_trainjob
    assert projection_for("workflows") is project


def test_keys_of_separately_decoded_objects_are_one_string():
    first, second = (compact(json.loads('{"lastTransitionTime%s": [{"reason": 1}]}' % "")) for _ in range(2))
    (key_a,), (key_b,) = first.keys(), second.keys()
    assert key_a == key_b and key_a is key_b
    assert next(iter(first[key_a][0])) is next(iter(second[key_b][0]))


def test_values_of_separately_decoded_objects_are_one_string_and_other_scalars_stay():
    text = '{"spec": {"image": "nvcr.io/nvidia/pytorch:25.01-py3%s", "replicas": 2, "on": true, "x": null, "f": 1.5}}' % ""
    first, second = (compact(json.loads(text)) for _ in range(2))
    assert first == second == json.loads(text)
    assert first["spec"]["image"] is second["spec"]["image"]
    assert [type(first["spec"][k]) for k in ("replicas", "on", "f")] == [int, bool, float]


class _Stream:
    def __init__(self, events: list[Any]) -> None:
        self.events = events

    def __iter__(self) -> Iterator[Any]:
        yield from self.events

    def close(self) -> None:
        return None


class _FixedKube:
    """Lists ``listed`` at resourceVersion 1, then watches ``watched``."""

    def __init__(self, listed: list[dict[str, Any]], watched: list[WatchEvent]) -> None:
        self.listed, self.watched = listed, watched

    def list(self, resource: Any, namespace: Any = None, **kwargs: Any) -> ObjectList:
        return ObjectList(tuple(copy.deepcopy(self.listed)), "1")

    def watch(self, resource: Any, namespace: Any = None, **kwargs: Any) -> _Stream:
        return _Stream(copy.deepcopy(self.watched))


def _informed(kube: _FixedKube) -> tuple[Informer, list[dict[str, Any]]]:
    """A Pod informer after one list and one watch, and every object its handler was given."""
    seen: list[dict[str, Any]] = []
    informer = Informer(kube, PODS, "ns")  # type: ignore[arg-type]
    informer.add_handler(lambda event_type, obj, old: seen.append(obj))
    informer._list()
    informer._watch_once()
    return informer, seen


def test_the_informer_caches_and_hands_out_the_projection_from_list_and_watch():
    newer = copy.deepcopy(PODS_SEEN[0])
    newer["metadata"]["resourceVersion"] = "8"
    informer, seen = _informed(_FixedKube([PODS_SEEN[0]], [WatchEvent("MODIFIED", newer)]))
    cached = informer.store.get(PODS_SEEN[0]["metadata"]["name"], "ns")
    assert cached is not None and cached["metadata"]["resourceVersion"] == "8"
    assert cached["spec"] == {"nodeName": "gpu-3", "containers": [{"name": "node"}], "initContainers": [{"name": "fix-ssh-permissions"}]}
    assert len(seen) == 2 and all("annotations" not in o["metadata"] and "volumes" not in o["spec"] for o in seen)


def _managed_pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "managedFields": list(MANAGED)}, "status": {}}


def test_managed_fields_never_reach_the_cache_or_the_handlers():
    events = [WatchEvent("ADDED", _managed_pod("watched", "2")), WatchEvent("MODIFIED", _managed_pod("listed", "3"))]
    informer, seen = _informed(_FixedKube([_managed_pod("listed", "1")], events))
    stored = informer.store.list()
    assert sorted(o["metadata"]["name"] for o in stored) == ["listed", "watched"]
    assert all("managedFields" not in o["metadata"] for o in [*stored, *seen])
    assert informer.store.get("listed", "ns")["metadata"]["resourceVersion"] == "3"
    assert informer.resource_version == "3"
