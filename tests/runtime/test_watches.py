"""The filters and map functions of the tiers' watches, case by case (pure: events and caches in,
keys out)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nvcre.runtime.kube.informers import Store, pod_node
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, CERTIFICATIONS, PODS, WORKLOADRUNS, Resource
from nvcre.runtime.watches import (
    OWNER_BATCH_SECONDS,
    Event,
    Filter,
    Lookup,
    MapFn,
    Owns,
    always,
    cached_keys,
    controlled_by,
    job_of_measurement,
    jobs_of_pod,
    jobs_on_node,
    measurement_of,
    more_than_status,
    node_changed,
    own_key,
    owner_may_care,
    pod_changed,
    pod_phase_changed,
    status_only_change,
    waiting_runs,
)

JOB_LABEL = "nvcre.nvidia.com/job"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


def _obj(name: str = "x", namespace: str = "ns", rv: str = "1", **parts: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "resourceVersion": rv, **parts.pop("meta", {})}
    return {"metadata": meta, **parts}


def _with(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``path`` (dotted) set to ``value`` and the resourceVersion moved on."""
    out = copy.deepcopy(obj)
    out["metadata"]["resourceVersion"] = str(int(out["metadata"].get("resourceVersion") or 0) + 1)
    *parents, leaf = path.split(".")
    target = out
    for part in parents:
        target = target.setdefault(part, {})
    target[leaf] = value
    return out


def _lookup(**stores: Store) -> Lookup:
    by_plural = {plural: store for plural, store in stores.items()}
    return lambda resource: by_plural.get(resource.plural)


def _store(*objects: dict[str, Any], **kwargs: Any) -> Store:
    store = Store(**kwargs)
    for obj in objects:
        store.put(copy.deepcopy(obj))
    return store


# ------------------------------------------------------------------ filters

WORKFLOW = _obj("wf", spec={"orchestration": {}}, status={"phase": "Pending"})
JOB = _obj("job", spec={}, status={"conditions": []})
POD = _obj("p", meta={"labels": {JOB_LABEL: "job"}}, spec={"nodeName": "n1"}, status={"phase": "Pending"})
NODE = {
    "metadata": {"name": "n1", "resourceVersion": "1", "labels": {"a": "b"}},
    "spec": {},
    "status": {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t0"}], "allocatable": {"cpu": "8"}},
}

FILTER_CASES: list[tuple[str, Filter, Event, bool]] = [
    ("status write", status_only_change, Event("MODIFIED", _with(WORKFLOW, "status.phase", "Running"), WORKFLOW), True),
    ("status write, no old", status_only_change, Event("MODIFIED", WORKFLOW, None), False),
    ("label written", status_only_change, Event("MODIFIED", _with(WORKFLOW, "metadata.labels", {"a": "b"}), WORKFLOW), False),
    ("added", status_only_change, Event("ADDED", WORKFLOW, None), False),
    ("managedFields only", status_only_change, Event("MODIFIED", _with(WORKFLOW, "metadata.managedFields", [{}]), WORKFLOW), True),
    ("status write skipped", more_than_status, Event("MODIFIED", _with(WORKFLOW, "status.phase", "Running"), WORKFLOW), False),
    ("spec edit kept", more_than_status, Event("MODIFIED", _with(WORKFLOW, "spec.x", 1), WORKFLOW), True),
    ("deleted kept", more_than_status, Event("DELETED", WORKFLOW, WORKFLOW), True),
    ("job added", owner_may_care, Event("ADDED", JOB, None), True),
    ("job deleted", owner_may_care, Event("DELETED", JOB, JOB), True),
    ("job finalizer", owner_may_care, Event("MODIFIED", _with(JOB, "metadata.finalizers", ["f"]), JOB), False),
    ("job status", owner_may_care, Event("MODIFIED", _with(JOB, "status.conditions", [{"type": "Succeeded"}]), JOB), True),
    ("job deleting", owner_may_care, Event("MODIFIED", _with(JOB, "metadata.deletionTimestamp", "t"), JOB), True),
    ("job modified, no old", owner_may_care, Event("MODIFIED", JOB, None), True),
    ("pod annotated", pod_changed, Event("MODIFIED", _with(POD, "metadata.annotations", {"a": "b"}), POD), False),
    ("pod condition", pod_changed, Event("MODIFIED", _with(POD, "status.conditions", [{"type": "Ready"}]), POD), True),
    ("pod bound", pod_changed, Event("MODIFIED", _with(POD, "spec.nodeName", "n2"), POD), True),
    ("pod deleting", pod_changed, Event("MODIFIED", _with(POD, "metadata.deletionTimestamp", "t"), POD), True),
    ("pod relabelled", pod_changed, Event("MODIFIED", _with(POD, "metadata.labels", {}), POD), True),
    ("pod deleted", pod_changed, Event("DELETED", POD, POD), True),
    ("pod added", pod_phase_changed, Event("ADDED", POD, None), True),
    ("pod started", pod_phase_changed, Event("MODIFIED", _with(POD, "status.phase", "Running"), POD), True),
    ("pod condition only", pod_phase_changed, Event("MODIFIED", _with(POD, "status.conditions", [{"type": "Ready"}]), POD), False),
    ("pod deleted, same phase", pod_phase_changed, Event("DELETED", POD, POD), False),
    ("pod deleted, unseen", pod_phase_changed, Event("DELETED", POD, None), True),
    ("node added", node_changed, Event("ADDED", NODE, None), True),
    ("node deleted", node_changed, Event("DELETED", NODE, NODE), False),
    (
        "heartbeat",
        node_changed,
        Event("MODIFIED", _with(NODE, "status.conditions", [{"type": "Ready", "status": "True", "lastHeartbeatTime": "t1"}]), NODE),
        False,
    ),
    ("cordoned", node_changed, Event("MODIFIED", _with(NODE, "spec.unschedulable", True), NODE), True),
    ("tainted", node_changed, Event("MODIFIED", _with(NODE, "spec.taints", [{"key": "k"}]), NODE), True),
    ("relabelled", node_changed, Event("MODIFIED", _with(NODE, "metadata.labels", {}), NODE), True),
    ("allocatable", node_changed, Event("MODIFIED", _with(NODE, "status.allocatable", {"cpu": "4"}), NODE), True),
    (
        "not ready",
        node_changed,
        Event("MODIFIED", _with(NODE, "status.conditions", [{"type": "Ready", "status": "False", "lastHeartbeatTime": "t0"}]), NODE),
        True,
    ),
    ("node modified, no old", node_changed, Event("MODIFIED", NODE, None), True),
    ("always", always, Event("DELETED", NODE, None), True),
]


@pytest.mark.parametrize(("case", "when", "event", "expected"), FILTER_CASES, ids=[case[0] for case in FILTER_CASES])
def test_filters(case: str, when: Filter, event: Event, expected: bool) -> None:
    assert when(event) is expected


# ------------------------------------------------------------------ map functions

OWNED = _obj(
    "child",
    meta={
        "ownerReferences": [
            {"kind": "Workflow", "name": "wf", "controller": True},
            {"kind": "Job", "name": "not-controller", "controller": False},
            {"kind": "Job", "name": "", "controller": True},
            {"kind": "Job", "name": "the-job", "controller": True},
        ]
    },
)
LAUNCHER = _obj("launcher", meta={"labels": {JOBSET_LABEL: "wf-job-workload"}}, spec={"nodeName": "n1"}, status={"phase": "Running"})
BOTH = _obj("both", meta={"labels": {JOB_LABEL: "z-job", JOBSET_LABEL: "a-job-workload"}}, spec={"nodeName": "n1"})
SAME = _obj("same", meta={"labels": {JOB_LABEL: "wf-job", JOBSET_LABEL: "wf-job-workload"}}, spec={"nodeName": "n1"})
OTHER_JOBSET = _obj("other", meta={"labels": {JOBSET_LABEL: "someone-elses"}}, spec={"nodeName": "n1"})
ELSEWHERE = _obj("far", meta={"labels": {JOB_LABEL: "far-job"}}, spec={"nodeName": "n2"})
MEASUREMENT = _obj("wf-job-bandwidth", spec={"jobRef": {"name": "wf-job"}})
ON_N1 = [LAUNCHER, BOTH, ELSEWHERE]

MAP_CASES: list[tuple[str, MapFn, Event, Lookup, list[tuple[str, str]]]] = [
    ("own key", own_key, Event("ADDED", _obj("a", namespace="team")), _lookup(), [("team", "a")]),
    ("own key, cluster-scoped", own_key, Event("ADDED", NODE), _lookup(), [("", "n1")]),
    ("controller owner of the kind", controlled_by("Job"), Event("ADDED", OWNED), _lookup(), [("ns", "the-job")]),
    ("controller owner, other kind", controlled_by("Workflow"), Event("ADDED", OWNED), _lookup(), [("ns", "wf")]),
    ("no owner of the kind", controlled_by("Certification"), Event("ADDED", OWNED), _lookup(), []),
    ("no owners", controlled_by("Job"), Event("ADDED", _obj()), _lookup(), []),
    ("pod labelled for its job", jobs_of_pod, Event("ADDED", POD), _lookup(), [("ns", "job")]),
    ("launcher made by a jobset", jobs_of_pod, Event("ADDED", LAUNCHER), _lookup(), [("ns", "wf-job")]),
    ("pod of two jobs, sorted", jobs_of_pod, Event("ADDED", BOTH), _lookup(), [("ns", "a-job"), ("ns", "z-job")]),
    ("both labels, one job", jobs_of_pod, Event("ADDED", SAME), _lookup(), [("ns", "wf-job")]),
    ("someone else's jobset", jobs_of_pod, Event("ADDED", OTHER_JOBSET), _lookup(), []),
    ("measurement's job", job_of_measurement, Event("MODIFIED", MEASUREMENT), _lookup(), [("ns", "wf-job")]),
    ("measurement without jobRef", job_of_measurement, Event("ADDED", _obj("m", spec={})), _lookup(), []),
    (
        "jobs on a node, indexed",
        jobs_on_node,
        Event("MODIFIED", NODE),
        _lookup(pods=_store(*ON_N1, indexers={"node": pod_node})),
        [("ns", "wf-job"), ("ns", "a-job"), ("ns", "z-job")],
    ),
    (
        "jobs on a node, scanned",
        jobs_on_node,
        Event("MODIFIED", NODE),
        _lookup(pods=_store(*ON_N1)),
        [("ns", "wf-job"), ("ns", "a-job"), ("ns", "z-job")],
    ),
    ("jobs on a node, no pod cache", jobs_on_node, Event("MODIFIED", NODE), _lookup(), []),
    (
        "a job's measurement, cached",
        measurement_of(BANDWIDTH_MEASUREMENTS, "bandwidth", own_key),
        Event("MODIFIED", _obj("wf-job")),
        _lookup(bandwidthmeasurements=_store(MEASUREMENT)),
        [("ns", "wf-job-bandwidth")],
    ),
    (
        "a job's measurement, not cached yet",
        measurement_of(BANDWIDTH_MEASUREMENTS, "bandwidth", own_key),
        Event("ADDED", _obj("other-job")),
        _lookup(bandwidthmeasurements=_store(MEASUREMENT)),
        [],
    ),
    (
        "a job's measurement, other namespace",
        measurement_of(BANDWIDTH_MEASUREMENTS, "bandwidth", own_key),
        Event("ADDED", _obj("wf-job", namespace="elsewhere")),
        _lookup(bandwidthmeasurements=_store(MEASUREMENT)),
        [],
    ),
    (
        "a job's measurement, no cache",
        measurement_of(BANDWIDTH_MEASUREMENTS, "bandwidth", own_key),
        Event("ADDED", _obj("wf-job")),
        _lookup(),
        [],
    ),
    (
        "a pod's jobs' measurements",
        measurement_of(BANDWIDTH_MEASUREMENTS, "bandwidth", jobs_of_pod),
        Event("ADDED", BOTH),
        _lookup(bandwidthmeasurements=_store(_obj("z-job-bandwidth"), _obj("a-job-goodput"))),
        [("ns", "z-job-bandwidth")],
    ),
    (
        "runs that wait for nodes",
        waiting_runs(CERTIFICATIONS),
        Event("MODIFIED", NODE),
        _lookup(
            certifications=_store(
                _obj("waiting", status={}),
                _obj("new"),
                _obj("started", status={"categoryStatuses": [{}]}),
                _obj("bound", status={"workflowRef": {"name": "wf"}}),
            )
        ),
        [("ns", "waiting"), ("ns", "new")],
    ),
    ("runs of another resource", waiting_runs(WORKLOADRUNS), Event("MODIFIED", NODE), _lookup(certifications=_store(_obj("waiting"))), []),
]


@pytest.mark.parametrize(("case", "keys", "event", "lookup", "expected"), MAP_CASES, ids=[case[0] for case in MAP_CASES])
def test_map_functions(case: str, keys: MapFn, event: Event, lookup: Lookup, expected: list[tuple[str, str]]) -> None:
    before = copy.deepcopy(event.obj)
    assert keys(event, lookup) == expected
    assert event.obj == before, "a map function must not change the object it is handed"


def test_cached_keys_are_every_cached_object_and_nothing_without_a_cache() -> None:
    lookup = _lookup(certifications=_store(_obj("a"), _obj("b", namespace="other")))
    assert sorted(cached_keys(CERTIFICATIONS, lookup)) == [("ns", "a"), ("other", "b")]
    assert cached_keys(WORKLOADRUNS, lookup) == []


def test_an_owned_resource_wakes_its_controller_after_the_batching_delay() -> None:
    watch = Owns(PODS, pod_changed).watch("Job")
    assert (watch.resource, watch.when, watch.delay) == (PODS, pod_changed, OWNER_BATCH_SECONDS)
    assert watch.keys(Event("ADDED", OWNED), _lookup()) == [("ns", "the-job")]


def test_the_lookup_is_asked_only_for_the_resource_a_map_function_reads() -> None:
    asked: list[Resource] = []

    def lookup(resource: Resource) -> Store | None:
        asked.append(resource)
        return None

    jobs_on_node(Event("ADDED", NODE), lookup)
    waiting_runs(WORKLOADRUNS)(Event("ADDED", NODE), lookup)
    jobs_of_pod(Event("ADDED", POD), lookup)
    assert asked == [PODS, WORKLOADRUNS]
