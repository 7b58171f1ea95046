"""Requests the reconcilers spare: one measurement create, paced log reads, the context's memory.

Offline, over a recording client: each test counts what a reconcile sends and checks the state
it leaves, so a saving that changed a result would fail here as well.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nvcre.compiler.vocabulary import JOB_FINALIZER, LABEL_JOB, WORKFLOW_FINALIZER
from nvcre.runtime import compile as compiler
from nvcre.runtime.clock import Clock, format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge.pods import JOBSET_NAME_LABEL, REPLICATED_JOB_LABEL
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import BANDWIDTH_MEASUREMENTS, JOBS, LOGPROFILES, PODS, WORKFLOWS
from nvcre.runtime.reconcile import measurement as measurement_module
from nvcre.runtime.reconcile.common import create_or_adopt
from nvcre.runtime.reconcile.context import Context, Result, Settings
from nvcre.runtime.reconcile.job import LAUNCH_POLL_SECONDS, LAUNCH_WAIT_SECONDS, JobReconciler
from nvcre.runtime.reconcile.measurement import MeasurementReconciler
from nvcre.runtime.reconcile.workflow import WorkflowReconciler
from nvcre.testing.fakekube import MemoryKube


def _log_reads(kube: MemoryKube) -> list[str | None]:
    """The pod log reads, each by the ``sinceTime`` it asked from (None: from the start)."""
    return [call.options.get("since_time") for call in kube.calls if str(call) == "get pods/log"]


# ------------------------------------------------------------------ context memory


def ctx_over(kube: MemoryKube, **stores: Store) -> Context:
    return Context(kube=kube, stores=dict(stores), clock=Clock(), settings=Settings(poll_interval=15.0))


def test_a_status_write_is_read_back_while_the_cache_still_lags():
    kube = MemoryKube()
    job = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "resourceVersion": "5"}}
    jobs = Store()
    jobs.put(kube.put(job))
    ctx = ctx_over(kube, jobs=jobs)
    written = ctx.write_status(JOBS, job, lambda s: {**s, "workloadRef": {"name": "j-workload"}})
    assert written is not None
    assert ctx.read(JOBS, "j", "ns")["status"]["workloadRef"] == {"name": "j-workload"}
    assert "get jobs" not in kube.verbs()
    jobs.put(copy.deepcopy(written))  # the watch event arrives
    assert ctx.read(JOBS, "j", "ns") == jobs.get("j", "ns")


def test_create_or_adopt_remembers_what_it_created():
    kube = MemoryKube()
    ctx = ctx_over(kube)
    manifest = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "BandwidthMeasurement",
        "metadata": {"name": "j-bandwidth", "namespace": "ns"},
    }
    assert create_or_adopt(ctx, manifest, None).created
    assert ctx.recent.created(BANDWIDTH_MEASUREMENTS.plural, "j-bandwidth", "ns")
    assert not ctx.recent.created(BANDWIDTH_MEASUREMENTS.plural, "k-bandwidth", "ns")


# ------------------------------------------------------------------ measurement sampling


def _sampling_setup(phase: str) -> tuple[MemoryKube, Context, MeasurementReconciler]:
    kube = MemoryKube()
    stamp = Clock().stamp()
    job = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "uj", "resourceVersion": "3"},
        "status": cond.set_lifecycle({"workloadRef": {"name": "j-workload"}}, cond.IN_PROGRESS, "WorkloadRunning", "running", stamp),
    }
    measurement = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "BandwidthMeasurement",
        "metadata": {"name": "j-bandwidth", "namespace": "ns", "resourceVersion": "4"},
        "spec": {"jobRef": {"name": "j"}, "logProfileRef": "nccl-bandwidth", "sampleInterval": "30s"},
    }
    launcher = {
        "metadata": {
            "name": "j-workload-launcher-0",
            "namespace": "ns",
            "labels": {JOBSET_NAME_LABEL: "j-workload", REPLICATED_JOB_LABEL: "launcher"},
        },
        "spec": {"containers": [{"name": "node"}]},
        "status": {"phase": phase},
    }
    profile = next(p for p in compiler.builtin_logprofiles() if p["metadata"]["name"] == "nccl-bandwidth")
    stores = {
        JOBS.plural: Store(),
        BANDWIDTH_MEASUREMENTS.plural: Store(),
        LOGPROFILES.plural: Store(),
        PODS.plural: Store(indexed_labels=(LABEL_JOB, JOBSET_NAME_LABEL)),
    }
    stores[JOBS.plural].put(job)
    stores[BANDWIDTH_MEASUREMENTS.plural].put(measurement)
    stores[LOGPROFILES.plural].put(profile)
    stores[PODS.plural].put(launcher)
    kube.put(measurement)
    kube.set_log("ns", "j-workload-launcher-0", "")
    ctx = Context(kube=kube, stores=stores, clock=Clock(), settings=Settings(poll_interval=15.0))
    return kube, ctx, MeasurementReconciler(ctx)


def _measurement(kube: MemoryKube) -> dict[str, Any]:
    return kube.get(BANDWIDTH_MEASUREMENTS, "j-bandwidth", "ns")


def test_a_launcher_that_has_not_started_is_not_read(monkeypatch: pytest.MonkeyPatch):
    kube, _, reconciler = _sampling_setup("Pending")
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: 1000.0)
    # nothing to read yet: the pod's start (an event) brings it back, the timer is a safety net
    assert reconciler.reconcile_bandwidth("ns", "j-bandwidth").requeue_after == 15.0 * measurement_module.IDLE_RESYNC_POLLS
    assert "get pods/log" not in kube.verbs()
    status = _measurement(kube)["status"]
    assert (cond.condition(status, "Measuring") or {}).get("reason") == "JobRunning"


def test_samples_that_add_nothing_space_out_and_the_status_is_written_once(monkeypatch: pytest.MonkeyPatch):
    kube, ctx, reconciler = _sampling_setup("Running")
    clock = [1000.0]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: clock[0])
    reads_at = []
    for second in range(0, 400, 5):
        clock[0] = 1000.0 + second
        before = kube.count("get", "pods/log")
        # the reconciler runs on what the cache holds, refreshed the way a watch would
        ctx.stores[BANDWIDTH_MEASUREMENTS.plural].put(_measurement(kube))
        reconciler.reconcile_bandwidth("ns", "j-bandwidth")
        if kube.count("get", "pods/log") > before:
            reads_at.append(second)
    # an empty log: every read doubles the gap (60, 120, then 240 = 8 x 30 at most)
    assert reads_at == [0, 60, 180]
    assert kube.count("update", "bandwidthmeasurements/status") == 1


def test_a_sampled_measurement_comes_back_when_its_next_read_is_due(monkeypatch: pytest.MonkeyPatch):
    kube, _, reconciler = _sampling_setup("Running")
    clock = [1000.0]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: clock[0])
    assert reconciler.reconcile_bandwidth("ns", "j-bandwidth").requeue_after == 60.0  # read at once, then 2 x 30 s
    clock[0] = 1025.0
    assert reconciler.reconcile_bandwidth("ns", "j-bandwidth").requeue_after == 35.0  # woken early: the rest of the gap
    assert kube.count("get", "pods/log") == 1


def test_many_running_measurements_share_the_provisional_read_budget(monkeypatch: pytest.MonkeyPatch):
    kube, _, reconciler = _sampling_setup("Running")
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: 1000.0)
    others = {("ns", f"other-{i}-bandwidth") for i in range(999)}
    reconciler._reading.update(others)
    # 1,000 measurements reading within 5 reads a second: each waits 200 s, not 60
    assert reconciler.reconcile_bandwidth("ns", "j-bandwidth").requeue_after == 1000 / measurement_module.PROVISIONAL_READS_PER_SECOND
    # a measurement that completes leaves the budget to the others
    status = _measurement(kube)
    status["status"] = cond.set_condition(status.get("status") or {}, "Complete", "True", "JobSucceeded", "done", Clock().stamp())
    reconciler.ctx.stores[BANDWIDTH_MEASUREMENTS.plural].put(status)
    reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    assert reconciler._reading == others


def _nccl_row(second: int, size: int, bus: float) -> str:
    stamp = f"2026-12-03T10:00:{second:02d}.5Z"
    return f"{stamp} {size:>12} {size // 4:>13}     float     sum      -1   123.45 {bus / 2:>7.2f} {bus:>7.2f}       0\n"


def test_provisional_bandwidth_reads_take_only_the_new_lines_and_keep_running_averages(monkeypatch: pytest.MonkeyPatch):
    kube, ctx, reconciler = _sampling_setup("Running")
    clock = [1000.0]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(ctx.clock, "now", lambda: datetime(2026, 12, 3, 10, 5, tzinfo=UTC))
    rows = [_nccl_row(1, 1024, 10.0), _nccl_row(2, 2048, 20.0), _nccl_row(2, 1024, 30.0), _nccl_row(4, 2048, 40.0)]
    for written, at in ((2, 0.0), (3, 60.0), (4, 120.0)):
        kube.set_log("ns", "j-workload-launcher-0", "".join(rows[:written]))
        clock[0] = 1000.0 + at
        ctx.stores[BANDWIDTH_MEASUREMENTS.plural].put(_measurement(kube))
        reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    assert _log_reads(kube) == [None, "2026-12-03T10:00:02Z", "2026-12-03T10:00:02Z"]
    results = _measurement(kube)["status"]["results"]
    # the same numbers a read of the whole log gives: every row once
    assert [(r["sizeBytes"], r["busBW"], r["samples"]) for r in results] == [(1024, "20.00", 2), (2048, "30.00", 2)]


def test_a_provisional_read_goes_back_at_most_the_lookback(monkeypatch: pytest.MonkeyPatch):
    kube, ctx, reconciler = _sampling_setup("Running")
    clock = [1000.0]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(ctx.clock, "now", lambda: datetime(2026, 12, 3, 11, 0, 30, tzinfo=UTC))
    kube.set_log("ns", "j-workload-launcher-0", _nccl_row(1, 1024, 10.0))
    reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    clock[0] += 60.0
    reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    assert _log_reads(kube) == [None, "2026-12-03T10:30:30Z"]


# ------------------------------------------------------------------ the Job waits for its launch


def _job_setup(age_seconds: float, recorded: bool) -> tuple[MemoryKube, JobReconciler]:
    kube = MemoryKube()
    now = Clock().now()
    workflow = {
        "metadata": {"name": "wf", "namespace": "ns", "uid": "uw", "resourceVersion": "2"},
        "status": {"orchestration": {"groups": [{"name": "g0", "phase": "Running", **({"jobRef": {"name": "j"}} if recorded else {})}]}},
    }
    job = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": "uj",
            "resourceVersion": "3",
            "finalizers": [JOB_FINALIZER],
            "creationTimestamp": format_time(now - timedelta(seconds=age_seconds)),
            "ownerReferences": [{"kind": "Workflow", "name": "wf", "uid": "uw", "controller": True}],
        },
        "spec": {},
    }
    stores = {JOBS.plural: Store(), WORKFLOWS.plural: Store(), PODS.plural: Store()}
    stores[JOBS.plural].put(kube.put(job))
    stores[WORKFLOWS.plural].put(kube.put(workflow, WORKFLOWS))
    ctx = Context(kube=kube, stores=stores, clock=Clock(), settings=Settings(poll_interval=15.0))
    return kube, JobReconciler(ctx)


def test_a_new_job_waits_until_its_workflow_recorded_the_launch(monkeypatch: pytest.MonkeyPatch):
    kube, jobs = _job_setup(age_seconds=2.0, recorded=False)
    built: list[str] = []
    monkeypatch.setattr(jobs.creator, "workload_objects", lambda job, wf: built.append(job["metadata"]["name"]) or [])
    assert jobs.reconcile("ns", "j").requeue_after == LAUNCH_POLL_SECONDS
    assert built == [] and kube.calls == []


@pytest.mark.parametrize(("age", "recorded"), [(2.0, True), (LAUNCH_WAIT_SECONDS + 1, False)])
def test_a_recorded_or_long_waiting_job_goes_on_to_create_its_workload(monkeypatch: pytest.MonkeyPatch, age: float, recorded: bool):
    _, jobs = _job_setup(age_seconds=age, recorded=recorded)
    built: list[str] = []
    monkeypatch.setattr(jobs.creator, "workload_objects", lambda job, wf: built.append(job["metadata"]["name"]) or [])
    jobs.reconcile("ns", "j")
    assert built == ["j"]


def test_the_workflow_queues_the_jobs_it_recorded_that_have_no_workload_yet():
    kube = MemoryKube()
    queued: list[tuple[str, str, str]] = []
    jobs = Store()
    jobs.put({"metadata": {"name": "waiting", "namespace": "ns"}, "status": {}})
    jobs.put({"metadata": {"name": "started", "namespace": "ns"}, "status": {"workloadRef": {"name": "started-workload"}}})
    ctx = Context(kube=kube, stores={JOBS.plural: jobs}, enqueue=lambda *key: queued.append(key))
    workflows = WorkflowReconciler(ctx, JobReconciler(ctx))
    groups = [
        {"name": "g0", "phase": "Running", "jobRef": {"name": "waiting"}},
        {"name": "g1", "phase": "Running", "jobRef": {"name": "started"}},
        {"name": "g2", "phase": "Pending"},
        {"name": "g3", "phase": "Succeeded", "jobRef": {"name": "done"}},
    ]
    workflows.launch.wake_launched({"metadata": {"name": "wf", "namespace": "ns"}}, {"orchestration": {"groups": groups}})
    assert queued == [("job", "ns", "waiting")]
    assert kube.calls == []


def test_a_job_whose_dependencies_this_process_created_goes_ahead_before_the_status_says_so(monkeypatch: pytest.MonkeyPatch):
    _, jobs = _job_setup(age_seconds=2.0, recorded=False)
    jobs.ctx.recent.launched("ns", "j")
    built: list[str] = []
    monkeypatch.setattr(jobs.creator, "workload_objects", lambda job, wf: built.append(job["metadata"]["name"]) or [])
    jobs.reconcile("ns", "j")
    assert built == ["j"]
    assert not jobs.ctx.recent.was_launched("ns", "other")


# ------------------------------------------------------------------ running Jobs wait for events


def _running_job(spec: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[MemoryKube, JobReconciler]:
    from nvcre.runtime.kube.resources import TRAINJOBS

    job = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "uid": "uj", "resourceVersion": "3", "finalizers": [JOB_FINALIZER]},
        "spec": spec,
        "status": {"workloadRef": {"name": "j-workload", "namespace": "ns"}},
    }
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "j-workload", "namespace": "ns", "uid": "ut",
                     "ownerReferences": [{"kind": "Job", "name": "j", "uid": "uj", "controller": True}]},
        "spec": {"suspend": False},
        "status": {},
    }  # fmt: skip
    kube = MemoryKube()
    stores = {JOBS.plural: Store(), TRAINJOBS.plural: Store(), PODS.plural: Store(indexed_labels=(LABEL_JOB, JOBSET_NAME_LABEL))}
    stores[JOBS.plural].put(kube.put(job))
    stores[TRAINJOBS.plural].put(kube.put(trainjob))
    for pod in pods:
        stores[PODS.plural].put(pod)
    ctx = Context(kube=kube, stores=stores, clock=Clock(), settings=Settings(poll_interval=15.0))
    return kube, JobReconciler(ctx)


def _workload_pod(scheduled: bool) -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "True" if scheduled else "False"}
    if not scheduled:
        condition |= {"reason": "Unschedulable", "message": "0/4 nodes are available"}
    return {
        "metadata": {"name": "j-workload-node-0-0", "namespace": "ns", "labels": {LABEL_JOB: "j", JOBSET_NAME_LABEL: "j-workload"}},
        "spec": {"nodeName": "gpu-0"} if scheduled else {},
        "status": {"phase": "Running" if scheduled else "Pending", "conditions": [condition]},
    }


def test_a_running_job_with_no_clock_to_watch_comes_back_only_as_a_safety_net():
    from nvcre.runtime.reconcile.job import RUNNING_RESYNC_POLLS

    kube, jobs = _running_job({}, [_workload_pod(scheduled=True)])
    assert jobs.reconcile("ns", "j").requeue_after == 15.0 * RUNNING_RESYNC_POLLS
    written = kube.get(JOBS, "j", "ns")
    assert (cond.condition(written["status"], cond.IN_PROGRESS) or {}).get("reason") == "WorkloadRunning"


def test_a_running_job_keeps_the_poll_while_stall_detection_or_a_scheduling_stall_needs_its_clock():
    _, stalling = _running_job({"stallMultiplier": 3, "goodputMeasurement": {"sampleInterval": "10s"}}, [_workload_pod(True)])
    assert stalling.reconcile("ns", "j").requeue_after == 15.0
    _, blocked = _running_job({"schedulingStallGraceSeconds": 20}, [_workload_pod(scheduled=False)])
    assert blocked.reconcile("ns", "j").requeue_after == 5.0  # a quarter of the grace, under the poll


# ------------------------------------------------------------------ workflow pass spacing


def _spaced_workflow(groups: int) -> tuple[WorkflowReconciler, list[str]]:
    workflow = {
        "metadata": {"name": "wf", "namespace": "ns", "uid": "uw", "resourceVersion": "2", "finalizers": [WORKFLOW_FINALIZER]},
        "status": {
            "conditions": [{"type": "NamespaceAccess", "status": "True", "reason": "Granted", "message": ""}],
            "orchestration": {"groups": [{"name": f"g{i}", "phase": "Running", "jobRef": {"name": f"j{i}"}} for i in range(groups)]},
        },
    }
    kube = MemoryKube()
    stores = {JOBS.plural: Store(), WORKFLOWS.plural: Store(), PODS.plural: Store()}
    stores[WORKFLOWS.plural].put(kube.put(workflow, WORKFLOWS))
    ctx = Context(kube=kube, stores=stores, settings=Settings(poll_interval=15.0))
    workflows = WorkflowReconciler(ctx, JobReconciler(ctx))
    passes: list[str] = []
    workflows.access.check = lambda wf, status, write: None  # type: ignore[method-assign]
    workflows.launch.ensure_workflow_dependencies = lambda wf, status: None  # type: ignore[method-assign]
    workflows.running.poll = lambda wf, status: passes.append("pass") or Result(0.05)  # type: ignore[method-assign]
    return workflows, passes


def test_the_passes_of_a_workflow_with_many_groups_are_spaced_and_events_fold_into_one(monkeypatch: pytest.MonkeyPatch):
    from nvcre.runtime.reconcile import workflow as workflow_module

    now = [1000.0]
    monkeypatch.setattr(workflow_module.time, "monotonic", lambda: now[0])
    workflows, passes = _spaced_workflow(2000)
    assert workflows.reconcile("ns", "wf").requeue_after == 0.05
    now[0] += 3.0
    # Events of more Jobs in the gap: each is answered with a requeue for when the gap ends.
    assert workflows.reconcile("ns", "wf").requeue_after == pytest.approx(7.0)
    now[0] += 6.0
    assert workflows.reconcile("ns", "wf").requeue_after == pytest.approx(1.0)
    assert passes == ["pass"]
    now[0] += 1.0
    workflows.reconcile("ns", "wf")
    assert passes == ["pass", "pass"]


def test_a_workflow_with_a_few_groups_is_not_held_back(monkeypatch: pytest.MonkeyPatch):
    from nvcre.runtime.reconcile import workflow as workflow_module

    now = [1000.0]
    monkeypatch.setattr(workflow_module.time, "monotonic", lambda: now[0])
    workflows, passes = _spaced_workflow(4)
    assert Settings().workflow_pass_gap(4) == pytest.approx(0.02)
    workflows.reconcile("ns", "wf")
    now[0] += 0.05  # one step interval later
    workflows.reconcile("ns", "wf")
    assert passes == ["pass", "pass"]
    assert Settings().workflow_pass_gap(100_000) == 10.0


def test_a_restarted_container_is_read_from_its_start_again(monkeypatch: pytest.MonkeyPatch):
    kube, ctx, reconciler = _sampling_setup("Running")
    clock = [1000.0]
    monkeypatch.setattr(measurement_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(ctx.clock, "now", lambda: datetime(2026, 12, 3, 10, 5, tzinfo=UTC))
    kube.set_log("ns", "j-workload-launcher-0", _nccl_row(1, 1024, 10.0))
    reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    launcher = ctx.stores[PODS.plural].list()[0]
    launcher["status"]["containerStatuses"] = [{"name": "node", "restartCount": 1}]
    ctx.stores[PODS.plural].put(launcher)
    kube.set_log("ns", "j-workload-launcher-0", _nccl_row(3, 1024, 30.0))
    clock[0] += 60.0
    ctx.stores[BANDWIDTH_MEASUREMENTS.plural].put(_measurement(kube))
    reconciler.reconcile_bandwidth("ns", "j-bandwidth")
    assert _log_reads(kube) == [None, None]
    results = _measurement(kube)["status"]["results"]
    assert [(r["sizeBytes"], r["busBW"], r["samples"]) for r in results] == [(1024, "30.00", 1)]


def test_a_deleted_workflow_leaves_nothing_remembered():
    """Every memo the Workflow tier and its diagnose rounds keep forgets a Workflow once it is gone."""
    kube = MemoryKube()
    ctx = Context(kube=kube, stores={WORKFLOWS.plural: Store(), JOBS.plural: Store()}, clock=Clock())
    workflows = WorkflowReconciler(ctx, JobReconciler(ctx))
    workflows._passes[("ns", "wf")] = 1.0
    workflows._passes[("ns", "other")] = 1.0
    workflows.diagnose._bandwidth.update({"ns/wf-local-0-iter-1": 11.0, "ns/other-local-0-iter-1": 12.0})
    workflows.diagnose._flags[("uid-wf", 1)] = {"local-0": (True, False)}
    workflows.diagnose._flag_owner[("uid-wf", 1)] = ("ns", "wf")
    assert workflows.reconcile("ns", "wf").requeue_after is None  # not in the cache: deleted
    assert ("ns", "wf") not in workflows._passes and ("ns", "other") in workflows._passes
    assert list(workflows.diagnose._bandwidth) == ["ns/other-local-0-iter-1"]
    assert not workflows.diagnose._flags and not workflows.diagnose._flag_owner
