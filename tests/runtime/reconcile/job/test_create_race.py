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

from nvcre.compiler.vocabulary import JOB_FINALIZER
from nvcre.runtime.kube.errors import Conflict
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, GOODPUT_MEASUREMENTS, JOBS, PODS, TRAINJOBS
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.testing.fakekube import Call, MemoryKube


def _creates(server: MemoryKube) -> Counter[str]:
    """The creates the controller sent, per resource (its Events left out)."""
    return Counter(call.resource for call in server.calls if call.verb == "create" and call.resource != "events")


def _label(server: MemoryKube, name: str, key: str, value: str) -> dict[str, Any]:
    """Someone else's change to the Job (a label), a new version the controller did not write."""
    return server.edit(JOBS, name, "ns", lambda job: job["metadata"].setdefault("labels", {}).update({key: value}))


def _lost(call: Call) -> Any:
    raise Conflict(409, "Conflict", "the object has been modified")


def _manifests(job: dict[str, Any]) -> list[dict[str, Any]]:
    owner = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"], "controller": True}
    meta = {"namespace": "ns", "ownerReferences": [owner]}
    return [
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "j-workload", **meta}, "spec": {}},
        {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "BandwidthMeasurement", "metadata": {"name": "j-bandwidth", **meta}},
    ]


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> tuple[MemoryKube, dict[str, Store], JobReconciler]:
    server = MemoryKube()
    job = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "uid-job", "resourceVersion": "100"},
        "spec": {"bandwidthMeasurement": {}},
    }
    server.put(job)
    stores = {plural: Store() for plural in (JOBS.plural, TRAINJOBS.plural, BANDWIDTH_MEASUREMENTS.plural, GOODPUT_MEASUREMENTS.plural)}
    stores[PODS.plural] = Store()
    stores[JOBS.plural].put(copy.deepcopy(job))
    ctx = Context(kube=server, stores=stores, settings=Settings(poll_interval=15.0))
    reconciler = JobReconciler(ctx)
    monkeypatch.setattr(reconciler.creator, "workload_objects", lambda job, workflow: _manifests(job))
    return server, stores, reconciler


def _cache_job_at(server: MemoryKube, stores: dict[str, Store], obj: dict[str, Any]) -> None:
    """The Job's informer delivers ``obj`` (one version, possibly behind the server)."""
    stores[JOBS.plural].put(copy.deepcopy(obj))


def test_two_writes_in_a_row_while_the_job_cache_trails_both_do_not_create_the_workload_again(world):
    server, stores, jobs = world
    unfinalized = server.get(JOBS, "j", "ns")
    jobs.reconcile("ns", "j")  # the finalizer is added (a write the cache has not seen)
    finalized = server.get(JOBS, "j", "ns")
    assert JOB_FINALIZER in finalized["metadata"]["finalizers"]
    jobs.reconcile("ns", "j")  # the workload and measurement are created, workloadRef written
    assert _creates(server) == {"trainjobs": 1, "bandwidthmeasurements": 1}
    # the TrainJob's event wakes the Job while its own cache still shows the version before both writes
    stores[TRAINJOBS.plural].put(server.get(TRAINJOBS, "j-workload", "ns"))
    _cache_job_at(server, stores, unfinalized)
    jobs.reconcile("ns", "j")
    # then the finalizer's event arrives, still without the workloadRef
    _cache_job_at(server, stores, finalized)
    jobs.reconcile("ns", "j")
    assert _creates(server) == {"trainjobs": 1, "bandwidthmeasurements": 1}
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]["name"] == "j-workload"


def test_a_status_write_redone_over_a_foreign_change_is_what_the_next_reconcile_sees(world):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))  # the finalizer reached the cache
    labelled = _label(server, "j", "team", "a")  # someone else's change, not cached yet
    jobs.reconcile("ns", "j")  # creates; its status write conflicts and is redone over the label
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]
    _cache_job_at(server, stores, labelled)  # the label arrives; the controller's write not yet
    jobs.reconcile("ns", "j")
    assert _creates(server) == {"trainjobs": 1, "bandwidthmeasurements": 1}


def test_a_create_whose_status_write_was_lost_is_read_back_not_sent_again(world):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))
    refusing = server.react("update", "jobs/status", _lost)
    with pytest.raises(Conflict):
        jobs.reconcile("ns", "j")  # created the workload, but workloadRef was never written
    refusing()
    jobs.reconcile("ns", "j")  # nothing in the caches yet: the TrainJob is read, not created
    assert _creates(server) == {"trainjobs": 1, "bandwidthmeasurements": 1}
    status = server.get(JOBS, "j", "ns")["status"]
    assert status["workloadRef"]["name"] == "j-workload"


def test_a_workload_gone_since_this_process_created_it_is_created_again(world):
    server, stores, jobs = world
    jobs.reconcile("ns", "j")
    _cache_job_at(server, stores, server.get(JOBS, "j", "ns"))
    refusing = server.react("update", "jobs/status", _lost)
    with pytest.raises(Conflict):
        jobs.reconcile("ns", "j")
    refusing()
    server.remove(TRAINJOBS, "j-workload", "ns")  # removed by someone else at once
    jobs.reconcile("ns", "j")  # the live read finds the name free: the create goes out again
    assert _creates(server)["trainjobs"] == 2
    assert server.get(JOBS, "j", "ns")["status"]["workloadRef"]["name"] == "j-workload"
