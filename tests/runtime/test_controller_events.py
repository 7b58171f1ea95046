"""Which events queue which keys: the filters that keep needless reconciles (and their GETs) away."""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import generate_latest

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.kube.informers import Store
from nvcre.testing.fakekube import MemoryKube


def _controller() -> Controller:
    offline = MemoryKube()
    offline.forbid("the handlers must not call the API")
    ctl = Controller(offline, ControllerConfig(metrics_address="0", health_address="0", leader_elect=False))
    for plural in ("pods", "certifications", "workloadruns", "bandwidthmeasurements", "goodputmeasurements"):
        ctl.stores[plural] = Store()
    return ctl


def _queued(ctl: Controller) -> dict[str, set[tuple[str, str]]]:
    """Every key queued now or for later (owners are woken after a short batching delay); drains them."""
    out: dict[str, set[tuple[str, str]]] = {}
    for tier in list(ctl.queues):
        queue = ctl.queues[tier]
        keys = set(queue.delayed_keys())
        while len(queue):
            key = queue.get(timeout=0)
            queue.done(key)
            keys.add(key)
        ctl.queues[tier] = type(queue)()
        if keys:
            out[tier] = keys
    return out


def _job(rv: str = "1", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "wf-job",
            "namespace": "ns",
            "resourceVersion": rv,
            "ownerReferences": [{"kind": "Workflow", "name": "wf", "controller": True}],
        },
        "spec": {"thresholds": {}},
        "status": status,
    }


def test_a_burst_of_child_events_wakes_the_owner_once_after_the_batching_delay():
    ctl = _controller()
    for index in range(50):
        job = _job(str(index + 2), conditions=[{"type": "InProgress", "status": "True", "reason": f"r{index}"}])
        ctl.handlers["jobs"]("MODIFIED", job, _job(str(index + 1)))
    workflow_queue = ctl.queues["workflow"]
    assert len(workflow_queue) == 0, "owners are not woken at once"
    assert workflow_queue.delayed_keys() == {("ns", "wf")}
    assert workflow_queue.pending_delayed() == 1
    assert workflow_queue.stats().delayed_coalesced == 49


def test_a_job_event_queues_its_measurements_only_when_they_exist():
    ctl = _controller()
    ctl.handlers["jobs"]("ADDED", _job(), None)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}, "workflow": {("ns", "wf")}}
    ctl.stores["bandwidthmeasurements"].put({"metadata": {"name": "wf-job-bandwidth", "namespace": "ns"}})
    ctl.handlers["jobs"]("ADDED", _job(), None)
    assert _queued(ctl) == {
        "job": {("ns", "wf-job")},
        "workflow": {("ns", "wf")},
        "bandwidth": {("ns", "wf-job-bandwidth")},
    }


def test_a_job_update_that_leaves_status_alone_does_not_wake_its_workflow():
    ctl = _controller()
    old = _job("1")
    finalized = copy.deepcopy(old)
    finalized["metadata"]["resourceVersion"] = "2"
    finalized["metadata"]["finalizers"] = ["nvcre.nvidia.com/job-finalizer"]
    ctl.handlers["jobs"]("MODIFIED", finalized, old)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}}
    progressed = _job("3", conditions=[{"type": "Succeeded", "status": "True"}])
    ctl.handlers["jobs"]("MODIFIED", progressed, finalized)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}, "workflow": {("ns", "wf")}}
    deleting = copy.deepcopy(progressed)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    ctl.handlers["jobs"]("MODIFIED", deleting, progressed)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}, "workflow": {("ns", "wf")}}


def _workflow(rv: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "wf",
            "namespace": "ns",
            "resourceVersion": rv,
            "generation": 1,
            "ownerReferences": [{"kind": "Certification", "name": "cert", "controller": True}],
        },
        "spec": {"orchestration": {}},
        "status": status,
    }


def test_a_workflow_status_write_wakes_its_certification_but_not_itself():
    ctl = _controller()
    before, after = _workflow("1", phase="a"), _workflow("2", phase="b")
    ctl.handlers["workflows"]("MODIFIED", after, before)
    assert _queued(ctl) == {"certification": {("ns", "cert")}}
    edited = copy.deepcopy(after)
    edited["metadata"]["resourceVersion"] = "3"
    edited["metadata"]["labels"] = {"x": "y"}
    ctl.handlers["workflows"]("MODIFIED", edited, after)
    assert _queued(ctl) == {"workflow": {("ns", "wf")}, "certification": {("ns", "cert")}}
    ctl.handlers["workflows"]("ADDED", after, None)
    assert _queued(ctl) == {"workflow": {("ns", "wf")}, "certification": {("ns", "cert")}}


def test_node_events_are_counted_as_relevant_or_ignored():
    ctl = _controller()
    node = {"metadata": {"name": "n1", "labels": {"a": "b"}}, "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    heartbeat = copy.deepcopy(node)
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "later"
    cordoned = copy.deepcopy(node)
    cordoned["spec"]["unschedulable"] = True
    ctl.handlers["nodes"]("ADDED", node, None)
    ctl.handlers["nodes"]("MODIFIED", heartbeat, node)
    ctl.handlers["nodes"]("MODIFIED", cordoned, heartbeat)
    body = generate_latest(ctl.metrics.registry).decode()
    assert 'nvcre_node_events_total{result="relevant"} 2.0' in body
    assert 'nvcre_node_events_total{result="ignored"} 1.0' in body


def test_the_controller_serves_its_clients_request_counts():
    ctl = _controller()
    ctl.kube.requests.record("get", "workflows")  # type: ignore[attr-defined]
    body = generate_latest(ctl.metrics.registry).decode()
    assert 'nvcre_api_requests_total{resource="workflows",verb="get"} 1.0' in body
    assert 'nvcre_workqueue_depth{name="job"} 0.0' in body


def test_a_pod_update_that_only_touches_annotations_does_not_wake_its_job():
    ctl = _controller()
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "1", "labels": {"nvcre.nvidia.com/job": "wf-job"}},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    annotated = copy.deepcopy(pod)
    annotated["metadata"]["resourceVersion"] = "2"
    annotated["metadata"]["annotations"] = {"example.com/note": "x"}
    ctl.handlers["pods"]("MODIFIED", annotated, pod)
    assert _queued(ctl) == {}
    finished = copy.deepcopy(annotated)
    finished["status"] = {"phase": "Succeeded"}
    ctl.handlers["pods"]("MODIFIED", finished, annotated)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}}
    ctl.handlers["pods"]("DELETED", finished, None)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}}


def test_a_pod_that_starts_wakes_its_jobs_measurements_and_a_node_event_wakes_only_its_jobs():
    ctl = _controller()
    ctl.stores["pods"] = Store(indexers={"node": lambda p: (p.get("spec") or {}).get("nodeName")})
    ctl.stores["bandwidthmeasurements"].put({"metadata": {"name": "wf-job-bandwidth", "namespace": "ns"}})
    launcher = {
        "metadata": {"name": "wf-job-workload-launcher-0", "namespace": "ns", "resourceVersion": "1",
                     "labels": {"jobset.sigs.k8s.io/jobset-name": "wf-job-workload"}},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Pending"},
    }  # fmt: skip
    ctl.stores["pods"].put(launcher)
    started = copy.deepcopy(launcher)
    started["status"] = {"phase": "Running"}
    ctl.handlers["pods"]("MODIFIED", started, launcher)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}, "bandwidth": {("ns", "wf-job-bandwidth")}}
    ready = copy.deepcopy(started)
    ready["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    ctl.handlers["pods"]("MODIFIED", ready, started)  # same phase: the Job looks, the measurement has nothing new
    assert _queued(ctl) == {"job": {("ns", "wf-job")}}
    node = {"metadata": {"name": "n1"}, "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    cordoned = copy.deepcopy(node)
    cordoned["spec"]["unschedulable"] = True
    ctl.handlers["nodes"]("MODIFIED", cordoned, node)
    assert _queued(ctl) == {"job": {("ns", "wf-job")}}
