"""The Job tier never sends a second create for its workload while its caches lag.

Each test plays one interleaving step by step: the server (a small in-memory API with
resourceVersions, conflicts and AlreadyExists) moves on while the informer caches are held back
at the version the test chooses, and the Job is reconciled between the steps. Every create the
controller sends is counted per kind.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from nvcre.runtime.kube.errors import AlreadyExists, Conflict, NotFound
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS, PODS, TRAINJOBS, Resource
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.runtime.reconcile.job import FINALIZER, JobReconciler

_BY_KIND = {"Job": JOBS, "TrainJob": TRAINJOBS, "BandwidthMeasurement": BANDWIDTH_MEASUREMENTS}


class Server:
    """The API server's side: the objects, each write a new resourceVersion, creates counted."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.creates: Counter[str] = Counter()
        self.rv = 100

    def _bump(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        return obj

    def resource_for(self, api_version: str, kind: str) -> Resource:
        return _BY_KIND[kind]

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        found = self.objects.get((resource.plural, namespace or "", name))
        if found is None:
            raise NotFound(404, "NotFound", name)
        return copy.deepcopy(found)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        resource = _BY_KIND[obj["kind"]]
        self.creates[resource.plural] += 1
        key = (resource.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        if key in self.objects:
            raise AlreadyExists(409, "AlreadyExists", obj["metadata"]["name"])
        made = self._bump(copy.deepcopy(obj))
        made["metadata"]["uid"] = f"uid-{self.rv}"
        self.objects[key] = made
        return copy.deepcopy(made)

    def merge_patch(self, resource: Resource, name: str, namespace: str | None, patch: dict[str, Any]) -> dict[str, Any]:
        current = self.objects[(resource.plural, namespace or "", name)]
        wanted = dict(patch.get("metadata") or {})
        if wanted.pop("resourceVersion", None) not in (None, current["metadata"]["resourceVersion"]):
            raise Conflict(409, "Conflict", name)
        current["metadata"].update(wanted)
        return copy.deepcopy(self._bump(current))

    def write_status(self, resource: Resource, obj: dict[str, Any], mutate: Any) -> dict[str, Any] | None:
        """As the real client: mutate the copy it was given, PUT; on 409 refetch and redo."""
        key = (resource.plural, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        current = obj
        for _ in range(3):
            old = copy.deepcopy(current.get("status") or {})
            new = mutate(copy.deepcopy(old), current)
            if new is None or new == old:
                return None
            stored = self.objects[key]
            if stored["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"]:
                current = copy.deepcopy(stored)
                continue
            stored["status"] = new
            return copy.deepcopy(self._bump(stored))
        raise Conflict(409, "Conflict", "kept changing")

    def emit_event(self, involved: Any, *, type: str, reason: str, message: str, component: str) -> None:
        """Events are not what these tests watch: dropped."""

    def label(self, resource: Resource, name: str, key: str, value: str) -> dict[str, Any]:
        """Someone else's change to an object (a label), a new version the controller did not write."""
        current = self.objects[(resource.plural, "ns", name)]
        current["metadata"].setdefault("labels", {})[key] = value
        return copy.deepcopy(self._bump(current))


def _manifests(job: dict[str, Any]) -> list[dict[str, Any]]:
    owner = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"], "controller": True}
    meta = {"namespace": "ns", "ownerReferences": [owner]}
    return [
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "j-workload", **meta}, "spec": {}},
        {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "BandwidthMeasurement", "metadata": {"name": "j-bandwidth", **meta}},
    ]


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> tuple[Server, dict[str, Store], JobReconciler]:
    server = Server()
    job = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "uid-job", "resourceVersion": "100"},
        "spec": {"bandwidthMeasurement": {}},
    }
    server.objects[(JOBS.plural, "ns", "j")] = job
    stores = {plural: Store() for plural in (JOBS.plural, TRAINJOBS.plural, BANDWIDTH_MEASUREMENTS.plural, GOODPUT_MEASUREMENTS.plural)}
    stores[PODS.plural] = Store()
    stores[JOBS.plural].put(copy.deepcopy(job))
    ctx = Context(kube=server, stores=stores, settings=Settings(poll_interval=15.0))  # type: ignore[arg-type]
    reconciler = JobReconciler(ctx)
    monkeypatch.setattr(reconciler.creator, "workload_objects", lambda job, workflow: _manifests(job))
    return server, stores, reconciler


def _cache_job_at(server: Server, stores: dict[str, Store], obj: dict[str, Any]) -> None:
    """The Job's informer delivers ``obj`` (one version, possibly behind the server)."""
    stores[JOBS.plural].put(copy.deepcopy(obj))


def test_two_writes_in_a_row_while_the_job_cache_trails_both_do_not_create_the_workload_again(world):
    server, stores, jobs = world
    unfinalized = server.get(JOBS, "j", "ns")
    jobs.reconcile("ns", "j")  # the finalizer is added (a write the cache has not seen)
    finalized = server.get(JOBS, "j", "ns")
    assert FINALIZER in finalized["metadata"]["finalizers"]
    jobs.reconcile("ns", "j")  # the workload and measurement are created, workloadRef written
    assert server.creates == {"trainjobs": 1, "bandwidthmeasurements": 1}
    # the TrainJob's event wakes the Job while its own cache still shows the version before both writes
    stores[TRAINJOBS.plural].put(server.get(TRAINJOBS, "j-workload", "ns"))
    _cache_job_at(server, stores, unfinalized)
    jobs.reconcile("ns", "j")
    # then the finalizer's event arrives, still without the workloadRef
    _cache_job_at(server, stores, finalized)
    jobs.reconcile("ns", "j")
    assert server.creates == {"trainjobs": 1, "bandwidthmeasurements": 1}
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]["name"] == "j-workload"


def test_a_status_write_redone_over_a_foreign_change_is_what_the_next_reconcile_sees(world):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))  # the finalizer reached the cache
    labelled = server.label(JOBS, "j", "team", "a")  # someone else's change, not cached yet
    jobs.reconcile("ns", "j")  # creates; its status write conflicts and is redone over the label
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]
    _cache_job_at(server, stores, labelled)  # the label arrives; the controller's write not yet
    jobs.reconcile("ns", "j")
    assert server.creates == {"trainjobs": 1, "bandwidthmeasurements": 1}


def test_a_create_whose_status_write_was_lost_is_read_back_not_sent_again(world, monkeypatch: pytest.MonkeyPatch):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))
    real = server.write_status

    def refused(resource: Resource, obj: dict[str, Any], mutate: Any) -> dict[str, Any] | None:
        raise Conflict(409, "Conflict", "kept changing")

    monkeypatch.setattr(server, "write_status", refused)
    with pytest.raises(Conflict):
        jobs.reconcile("ns", "j")  # created the workload, but workloadRef was never written
    monkeypatch.setattr(server, "write_status", real)
    jobs.reconcile("ns", "j")  # nothing in the caches yet: the TrainJob is read, not created
    assert server.creates == {"trainjobs": 1, "bandwidthmeasurements": 1}
    status = server.get(JOBS, "j", "ns")["status"]
    assert status["workloadRef"]["name"] == "j-workload"


def test_a_workload_gone_since_this_process_created_it_is_created_again(world, monkeypatch: pytest.MonkeyPatch):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))
    real = server.write_status
    monkeypatch.setattr(server, "write_status", lambda *args: (_ for _ in ()).throw(Conflict(409, "Conflict", "lost")))
    with pytest.raises(Conflict):
        jobs.reconcile("ns", "j")
    monkeypatch.setattr(server, "write_status", real)
    del server.objects[(TRAINJOBS.plural, "ns", "j-workload")]  # removed by someone else at once
    jobs.reconcile("ns", "j")  # the live read finds the name free: the create goes out again
    assert server.creates["trainjobs"] == 2
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]["name"] == "j-workload"
