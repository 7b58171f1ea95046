"""Which keys the controller queues, in which order, for a scripted stream of cluster events.

The controller is started with its informers replaced by inert ones (same stores, same handler
registration), its work queues by recorders, and is fed one event after another the way an
informer delivers them: the cache updated first, then every handler called with the object and
the version it replaced. Each step lists what every queue receives, in order: ``key`` for an
immediate add, ``key+1.0`` for one delayed by that many seconds. The last step is leadership
starting, which queues every cached object of every tier.

The sequence each queue receives is what its workers see, so the steps compare queue by queue,
in order (how the adds of one event to different queues interleave is no part of the contract:
each queue has workers of its own). This is the controller's event-to-work contract end to end: owners woken (batched) through controller references, a
tier's own status writes skipped, a Job waking its measurements and a measurement its Job, a Pod
waking its Jobs (and their measurements when its phase changed), a Node waking the Jobs on it
and the runs still waiting to start, heartbeats and deletions of Nodes ignored.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest

from nvcre.runtime import controller as controller_module
from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.kube.accounting import RequestCounter
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.queue import QueueStats, ShutDown, WorkQueue
from nvcre.runtime.kube.resources import Resource

NS = "ns"
Ops = list[tuple[str, str]]  # (queue, "name" or "name+delay")


class _Listing:
    items: list[dict[str, Any]] = []
    resource_version = "1"


class _Kube:
    """Answers the one call the controller makes before its informers exist (an optional
    resource's list); anything else is a test failure."""

    def __init__(self) -> None:
        self.requests = RequestCounter()

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> _Listing:
        return _Listing()

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the event handlers must not call the API ({name})")


class _Informer:
    """An informer that never lists or watches: its store and handlers are the real thing's."""

    def __init__(self, kube: Any, resource: Resource, namespace: str | None = None, **kwargs: Any) -> None:
        self.resource = resource
        self.store = Store(kwargs.get("indexed_labels", ()), kwargs.get("indexers"), resource=resource.plural)
        self.handlers: list[Callable[[str, dict[str, Any], dict[str, Any] | None], None]] = []
        self.synced = threading.Event()
        self.synced.set()

    def add_handler(self, handler: Callable[[str, dict[str, Any], dict[str, Any] | None], None]) -> None:
        self.handlers.append(handler)

    def start(self) -> _Informer:
        return self

    def stop(self, timeout: float = 5.0) -> None:
        return None

    def wait_synced(self, timeout: float | None = None) -> bool:
        return True


class _Recorder:
    """A work queue that only writes down what it was given; its workers leave at once."""

    def __init__(self, name: str, log: Ops) -> None:
        self.name = name
        self.log = log

    def add(self, key: tuple[str, str]) -> None:
        assert key[0] == NS, key
        self.log.append((self.name, key[1]))

    def add_after(self, key: tuple[str, str], delay: float, *, coalesce: bool = True) -> None:
        assert key[0] == NS, key
        self.log.append((self.name, f"{key[1]}+{delay}"))

    def get(self, timeout: float | None = None) -> tuple[str, str]:
        raise ShutDown()

    def shutdown(self) -> None:
        return None

    def __len__(self) -> int:
        return 0

    def stats(self) -> QueueStats:
        return WorkQueue[tuple[str, str]]().stats()


def _meta(name: str, *, owner: str = "", owner_kind: str = "", controller: bool = True, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "resourceVersion": "1", **extra}
    if owner:
        meta["ownerReferences"] = [{"kind": owner_kind, "name": owner, "controller": controller, "uid": f"uid-{owner}"}]
    return meta


def _pod(name: str, node: str, phase: str, **labels: str) -> dict[str, Any]:
    return {"metadata": _meta(name, labels=dict(labels)), "spec": {"nodeName": node}, "status": {"phase": phase}}


def _node(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1", "resourceVersion": "1", "labels": {"nvidia.com/gpu.present": "true"}},
        "spec": dict(spec),
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}], "allocatable": {"nvidia.com/gpu": "8"}},
    }


def _changed(obj: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = str(int(out["metadata"]["resourceVersion"]) + 1)
    change(out)
    return out


CERT = {"metadata": _meta("cert"), "spec": {}}
CERT_STARTED = {"metadata": _meta("cert-started"), "spec": {}, "status": {"categoryStatuses": [{"name": "a"}]}}
WORKLOADRUN = {"metadata": _meta("wr"), "spec": {}, "status": {"workflowRef": {"name": "wf2"}}}
WAITING_RUN = {"metadata": _meta("wr-waiting"), "spec": {}}
WORKFLOW = {"metadata": _meta("wf", owner="cert", owner_kind="Certification"), "spec": {}, "status": {"phase": "Pending"}}
WORKFLOW2 = {"metadata": _meta("wf2", owner="wr", owner_kind="WorkloadRun"), "spec": {}}
JOB = {"metadata": _meta("wf-job", owner="wf", owner_kind="Workflow"), "spec": {}, "status": {}}
BANDWIDTH = {"metadata": _meta("wf-job-bandwidth", owner="wf", owner_kind="Workflow"), "spec": {"jobRef": {"name": "wf-job"}}}
GOODPUT = {"metadata": _meta("wf-job-goodput", owner="wf-job", owner_kind="Job"), "spec": {"jobRef": {"name": "wf-job"}}}
UNREFERENCED = {"metadata": _meta("loose-bandwidth"), "spec": {}}
TRAINJOB = {"metadata": _meta("wf-job-workload", owner="wf-job", owner_kind="Job"), "spec": {}}
DEPENDENCY_TRAINJOB = {"metadata": _meta("dep", owner="wf", owner_kind="Workflow"), "spec": {}}
NOT_CONTROLLED = {"metadata": _meta("tj-free", owner="wf-job", owner_kind="Job", controller=False), "spec": {}}
FOREIGN_OWNER = {"metadata": _meta("tj-foreign", owner="d", owner_kind="Deployment"), "spec": {}}
WORKER = _pod("wf-job-worker", "n1", "Pending", **{"nvcre.nvidia.com/job": "wf-job"})
LAUNCHER = _pod("launcher", "n1", "Pending", **{"nvcre.nvidia.com/job": "a-job", "jobset.sigs.k8s.io/jobset-name": "wf-job-workload"})
ELSEWHERE = _pod("elsewhere", "n2", "Running", **{"nvcre.nvidia.com/job": "b-job"})
NODE = _node()

_started = _changed(WORKER, lambda o: o.update(status={"phase": "Running"}))
_job_progressed = _changed(JOB, lambda o: o.update(status={"conditions": [{"type": "InProgress", "status": "True"}]}))

#: (resource plural, event type, object, what the queues receive, in order)
SCRIPT: list[tuple[str, str, dict[str, Any], Ops]] = [
    ("certifications", "ADDED", CERT, [("certification", "cert")]),
    ("certifications", "ADDED", CERT_STARTED, [("certification", "cert-started")]),
    ("workloadruns", "ADDED", WORKLOADRUN, [("workloadrun", "wr")]),
    ("workloadruns", "ADDED", WAITING_RUN, [("workloadrun", "wr-waiting")]),
    ("workflows", "ADDED", WORKFLOW, [("workflow", "wf"), ("certification", "cert+1.0")]),
    # the Workflow's own status write: not itself, but its owner
    ("workflows", "MODIFIED", _changed(WORKFLOW, lambda o: o.update(status={"phase": "Running"})), [("certification", "cert+1.0")]),
    ("workflows", "ADDED", WORKFLOW2, [("workflow", "wf2"), ("workloadrun", "wr+1.0")]),
    ("jobs", "ADDED", JOB, [("job", "wf-job"), ("workflow", "wf+1.0")]),
    ("bandwidthmeasurements", "ADDED", BANDWIDTH, [("bandwidth", "wf-job-bandwidth"), ("workflow", "wf+1.0"), ("job", "wf-job")]),
    ("goodputmeasurements", "ADDED", GOODPUT, [("goodput", "wf-job-goodput"), ("job", "wf-job+1.0"), ("job", "wf-job")]),
    ("bandwidthmeasurements", "ADDED", UNREFERENCED, [("bandwidth", "loose-bandwidth")]),
    # a finalizer added: the Job and its measurements look, the Workflow is not woken
    (
        "jobs",
        "MODIFIED",
        _changed(JOB, lambda o: o["metadata"].update(finalizers=["nvcre.nvidia.com/job-finalizer"])),
        [("job", "wf-job"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")],
    ),
    (
        "jobs",
        "MODIFIED",
        _job_progressed,
        [("job", "wf-job"), ("workflow", "wf+1.0"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")],
    ),
    ("trainjobs", "ADDED", TRAINJOB, [("job", "wf-job+1.0")]),
    ("trainjobs", "MODIFIED", _changed(TRAINJOB, lambda o: o.update(status={"x": 1})), [("job", "wf-job+1.0")]),
    ("trainjobs", "ADDED", DEPENDENCY_TRAINJOB, [("workflow", "wf+1.0")]),
    ("trainjobs", "ADDED", NOT_CONTROLLED, []),
    ("trainjobs", "ADDED", FOREIGN_OWNER, []),
    ("pods", "ADDED", WORKER, [("job", "wf-job"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")]),
    # labelled for one Job, made by another's JobSet: both Jobs; only one has measurements
    (
        "pods",
        "ADDED",
        LAUNCHER,
        [("job", "a-job"), ("job", "wf-job"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")],
    ),
    ("pods", "ADDED", ELSEWHERE, [("job", "b-job")]),
    ("pods", "MODIFIED", _changed(WORKER, lambda o: o["metadata"].update(annotations={"example.com/a": "b"})), []),
    (
        "pods",
        "MODIFIED",
        _changed(WORKER, lambda o: o["status"].update(conditions=[{"type": "Ready", "status": "False"}])),
        [("job", "wf-job")],
    ),
    ("pods", "MODIFIED", _started, [("job", "wf-job"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")]),
    (
        "nodes",
        "ADDED",
        NODE,
        [("job", "a-job"), ("job", "wf-job"), ("job", "wf-job"), ("certification", "cert"), ("workloadrun", "wr-waiting")],
    ),
    ("nodes", "MODIFIED", _changed(NODE, lambda o: o["status"]["conditions"][0].update(lastHeartbeatTime="t1")), []),
    (
        "nodes",
        "MODIFIED",
        _changed(NODE, lambda o: o["spec"].update(unschedulable=True)),
        [("job", "a-job"), ("job", "wf-job"), ("job", "wf-job"), ("certification", "cert"), ("workloadrun", "wr-waiting")],
    ),
    ("nodes", "DELETED", NODE, []),
    (
        "bandwidthmeasurements",
        "MODIFIED",
        _changed(BANDWIDTH, lambda o: o.update(status={"phase": "Complete"})),
        [("bandwidth", "wf-job-bandwidth"), ("workflow", "wf+1.0"), ("job", "wf-job")],
    ),
    ("pods", "DELETED", _started, [("job", "wf-job")]),
    ("logprofiles", "ADDED", {"metadata": {"name": "nccl", "resourceVersion": "1"}, "spec": {}}, []),
    ("resourceslices", "ADDED", {"metadata": {"name": "slice", "resourceVersion": "1"}, "spec": {}}, []),
    (
        "jobs",
        "DELETED",
        _job_progressed,
        [("job", "wf-job"), ("workflow", "wf+1.0"), ("bandwidth", "wf-job-bandwidth"), ("goodput", "wf-job-goodput")],
    ),
    ("workflows", "DELETED", WORKFLOW2, [("workflow", "wf2"), ("workloadrun", "wr+1.0")]),
]

#: what leadership queues: every cached object of every tier, tier by tier
AT_LEADERSHIP: Ops = [
    ("certification", "cert"),
    ("certification", "cert-started"),
    ("workloadrun", "wr"),
    ("workloadrun", "wr-waiting"),
    ("workflow", "wf"),
    ("bandwidth", "wf-job-bandwidth"),
    ("bandwidth", "loose-bandwidth"),
    ("goodput", "wf-job-goodput"),
]

#: every resource the controller caches
INFORMED = {
    "certifications",
    "workloadruns",
    "workflows",
    "jobs",
    "bandwidthmeasurements",
    "goodputmeasurements",
    "trainjobs",
    "pods",
    "nodes",
    "logprofiles",
    "resourceslices",
}


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Controller, Ops]]:
    monkeypatch.setattr(controller_module, "Informer", _Informer)
    config = ControllerConfig(metrics_address="0", health_address="0", leader_elect=False, install_logprofiles=False, workers=1)
    ctl = Controller(_Kube(), config)  # type: ignore[arg-type]
    log: Ops = []
    for name in list(ctl.queues):
        ctl.queues[name] = _Recorder(name, log)  # type: ignore[assignment]
    ctl._start_informers()
    yield ctl, log
    ctl.stop()


def _deliver(ctl: Controller, plural: str, event_type: str, obj: dict[str, Any]) -> None:
    """What an informer does with one watch event: update its store, then tell its handlers."""
    informer: Any = ctl.informers[plural]
    obj = copy.deepcopy(obj)
    old = informer.store.remove(obj) if event_type == "DELETED" else informer.store.put(obj)
    dispatched = event_type if event_type == "DELETED" else ("ADDED" if old is None else "MODIFIED")
    for handler in informer.handlers:
        handler(dispatched, obj, old)


def _per_queue(ops: Ops) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for queue, key in ops:
        out.setdefault(queue, []).append(key)
    return out


def test_the_controller_caches_the_same_resources(wired: tuple[Controller, Ops]) -> None:
    ctl, _ = wired
    assert set(ctl.informers) == INFORMED
    assert set(ctl.stores) == INFORMED
    pods: Any = ctl.informers["pods"]
    assert set(pods.store.indexers) == {"node"}
    assert pods.store.indexed_labels == ("nvcre.nvidia.com/job", "jobset.sigs.k8s.io/jobset-name")


@pytest.mark.parametrize(
    "step", range(len(SCRIPT)), ids=[f"{i:02d}-{p}-{e}-{o['metadata']['name']}" for i, (p, e, o, _) in enumerate(SCRIPT)]
)
def test_each_event_queues_the_keys_it_always_did(wired: tuple[Controller, Ops], step: int) -> None:
    """Each step after the ones before it (the caches hold what they delivered)."""
    ctl, log = wired
    for plural, event_type, obj, _ in SCRIPT[:step]:
        _deliver(ctl, plural, event_type, obj)
    log.clear()
    plural, event_type, obj, expected = SCRIPT[step]
    _deliver(ctl, plural, event_type, obj)
    assert _per_queue(log) == _per_queue(expected)


def test_the_whole_stream_and_leadership_queue_the_same_keys_in_the_same_order(wired: tuple[Controller, Ops]) -> None:
    ctl, log = wired
    expected: Ops = []
    for plural, event_type, obj, ops in SCRIPT:
        _deliver(ctl, plural, event_type, obj)
        expected += ops
    assert _per_queue(log) == _per_queue(expected)
    log.clear()
    ctl._start_leading()
    assert _per_queue(log) == _per_queue(AT_LEADERSHIP)
    body = generate_latest(ctl.metrics.registry).decode()
    assert 'nvcre_node_events_total{result="relevant"} 2.0' in body
    assert 'nvcre_node_events_total{result="ignored"} 2.0' in body
