"""NVCRE's metric families: the per-Job event series, and the gauges projected from the caches.

Offline: the event series are driven directly and through the Job reconciler's health check and
the controller's reconcile bookkeeping; the gauges are read from ``/metrics`` text built over
hand-made cache contents, with NVCRE's names and label names checked exactly.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS
from nvcre.runtime.metrics.gauges import FAMILIES, GOODPUT_FAMILIES, CacheObjects, samples
from nvcre.runtime.metrics.jobs import HEALTH_CHECK_BUCKETS, RECONCILE_BUCKETS, JobEventSeries
from nvcre.runtime.metrics.registry import ControllerMetrics
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.testing.fakekube import MemoryKube

JOB_LABELS = {"namespace", "job", "workflow"}


def _parse(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """Family name (as served, counters without ``_total``) -> its samples."""
    out: dict[str, list[tuple[str, dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        out[family.name] = [(s.name, dict(s.labels), float(s.value)) for s in family.samples]
    return out


def _text(collector: Any) -> str:
    return generate_latest(collector).decode()


def _cond(type_: str, status: str = "True", reason: str = "R") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": ""}


def _obj(kind: str, name: str, *, namespace: str = "ns", labels: dict[str, str] | None = None, **rest: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": namespace, "labels": labels or {}, "resourceVersion": "1"}, **rest}


# --------------------------------------------------------------------------------------------
# Event series


def test_reconcile_series_carry_nvcre_labels_buckets_and_results() -> None:
    series = JobEventSeries()
    series.reconciled("ns", "job-a", "wf", "success", 0.015)
    series.reconciled("ns", "job-a", "wf", "success", 3.0)
    series.reconciled("ns", "job-a", "wf", "error", 100.0)
    found = _parse(_text(series))

    totals = {s[1]["result"]: s[2] for s in found["nvcre_reconcile"] if s[0] == "nvcre_reconcile_total"}
    assert totals == {"success": 2.0, "error": 1.0}
    assert all(set(labels) == JOB_LABELS | {"result"} for _, labels, _ in found["nvcre_reconcile"])

    hist = found["nvcre_reconcile_duration_seconds"]
    buckets = {labels["le"]: value for name, labels, value in hist if name.endswith("_bucket")}
    assert len(buckets) == len(RECONCILE_BUCKETS) + 1
    assert buckets["0.01"] == 0.0 and buckets["0.02"] == 1.0  # 15 ms lands in the 20 ms bucket
    assert buckets["2.56"] == 1.0 and buckets["5.12"] == 2.0
    assert buckets["20.48"] == 2.0 and buckets["+Inf"] == 3.0  # 100 s only in +Inf
    count = next(v for n, _, v in hist if n.endswith("_count"))
    total = next(v for n, _, v in hist if n.endswith("_sum"))
    assert count == 3.0 and total == pytest.approx(103.015)
    assert all(set(labels) - {"le"} == JOB_LABELS for _, labels, _ in hist)


def test_unknown_reconcile_result_is_refused() -> None:
    with pytest.raises(ValueError):
        JobEventSeries().reconciled("ns", "j", "wf", "requeued", 0.1)


def test_health_and_hardware_series() -> None:
    series = JobEventSeries()
    series.health_checked("ns", "job-a", "wf", 0.0015, 8)
    series.health_checked("ns", "job-a", "wf", 0.5, 8)
    series.hardware_failures("ns", "job-a", "wf", ["node-2", "node-1"], first=True)
    series.hardware_failures("ns", "job-a", "wf", ["node-3"], first=False)
    series.hardware_failures("ns", "job-a", "wf", [], first=False)  # nothing new: nothing counted
    series.workload_created("ns", "job-a", "wf")
    found = _parse(_text(series))

    assert found["nvcre_nodes_evaluated"] == [("nvcre_nodes_evaluated_total", {"namespace": "ns", "job": "job-a", "workflow": "wf"}, 16.0)]
    assert found["nvcre_hardware_failed_jobs"] == [
        ("nvcre_hardware_failed_jobs_total", {"namespace": "ns", "job": "job-a", "workflow": "wf"}, 1.0)
    ]
    assert found["nvcre_workload_created"][0][2] == 1.0
    per_node = {labels["node"]: value for _, labels, value in found["nvcre_hardware_failures_detected"]}
    assert per_node == {"node-1": 1.0, "node-2": 1.0, "node-3": 1.0}
    assert all(set(labels) == JOB_LABELS | {"node"} for _, labels, _ in found["nvcre_hardware_failures_detected"])
    health = found["nvcre_node_health_check_duration_seconds"]
    buckets = {labels["le"]: value for name, labels, value in health if name.endswith("_bucket")}
    assert len(buckets) == len(HEALTH_CHECK_BUCKETS) + 1
    assert buckets["0.001"] == 0.0 and buckets["0.002"] == 1.0 and buckets["0.512"] == 2.0


def test_forget_drops_every_series_of_the_job_only() -> None:
    series = JobEventSeries()
    for job in ("job-a", "job-b"):
        series.reconciled("ns", job, "wf", "success", 0.1)
        series.health_checked("ns", job, "wf", 0.01, 2)
        series.hardware_failures("ns", job, "wf", ["n1"], first=True)
        series.workload_created("ns", job, "wf")
    series.reconciled("ns", "job-a", "", "error", 0.1)  # recorded before its workflow label was known
    series.forget("ns", "job-a")
    text = _text(series)
    assert 'job="job-a"' not in text
    assert text.count('job="job-b"') > 10
    assert series.jobs() == 1
    series.forget("ns", "job-b")
    assert _text(series) == ""


def test_nothing_is_recorded_for_a_job_that_is_gone() -> None:
    alive = {("ns", "here")}
    series = JobEventSeries(lambda namespace, job: (namespace, job) in alive)
    series.reconciled("ns", "gone", "wf", "success", 0.1)
    series.workload_created("ns", "gone", "wf")
    series.reconciled("ns", "here", "wf", "success", 0.1)
    assert series.jobs() == 1
    assert 'job="gone"' not in _text(series)


# --------------------------------------------------------------------------------------------
# Where the events are counted


def _status_kube(job: dict[str, Any]) -> MemoryKube:
    """The server a Job's health check writes to: the Job alone."""
    kube = MemoryKube()
    kube.put({"apiVersion": JOBS.api_version, **job})
    return kube


def _live(kube: MemoryKube) -> dict[str, Any]:
    return kube.get(JOBS, "job-a", "ns")


def _running_job() -> dict[str, Any]:
    job = _obj(
        "Job",
        "job-a",
        labels={"nvcre.nvidia.com/workflow": "wf-a"},
        spec={"nodeHealthMonitor": {"cel": {"expression": "node.spec.unschedulable == true"}}},
        status={"conditions": [_cond("InProgress", reason="WorkloadRunning")]},
    )
    return job


def _pod(name: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "job-a"}},
        "spec": {"nodeName": node},
        "status": {"phase": "Running"},
    }


def _node(name: str, *, cordoned: bool) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1"}, "spec": {"unschedulable": cordoned}}


def test_health_check_counts_passes_nodes_and_new_hardware_failures() -> None:
    job = _running_job()
    kube = _status_kube(job)
    nodes = Store()
    nodes.replace([_node("n1", cordoned=False), _node("n2", cordoned=True)])
    ctx = Context(kube=kube, stores={"nodes": nodes})
    reconciler = JobReconciler(ctx)
    pods = [_pod("p1", "n1"), _pod("p2", "n2")]

    reconciler.health.check(_live(kube), pods)
    reconciler.health.check(_live(kube), pods)  # n2 again: no new failure, no second first failure
    nodes.put(_node("n1", cordoned=True) | {"metadata": {"name": "n1", "resourceVersion": "2"}})
    reconciler.health.check(_live(kube), pods)

    found = _parse(_text(ctx.job_events))
    labels = {"namespace": "ns", "job": "job-a", "workflow": "wf-a"}
    assert found["nvcre_nodes_evaluated"] == [("nvcre_nodes_evaluated_total", labels, 6.0)]
    health_count = [v for n, _, v in found["nvcre_node_health_check_duration_seconds"] if n.endswith("_count")]
    assert health_count == [3.0]
    assert found["nvcre_hardware_failed_jobs"] == [("nvcre_hardware_failed_jobs_total", labels, 1.0)]
    per_node = {lab["node"]: v for _, lab, v in found["nvcre_hardware_failures_detected"]}
    assert per_node == {"n1": 1.0, "n2": 1.0}
    assert [event.reason for event in kube.events] == ["HardwareFailureDetected"]


def test_health_check_without_bound_pods_records_nothing() -> None:
    job = _running_job()
    ctx = Context(kube=_status_kube(job), stores={"nodes": Store()})
    JobReconciler(ctx).health.check(job, [])
    assert ctx.job_events.jobs() == 0


def _controller() -> Controller:
    offline = MemoryKube()
    offline.forbid("the reconcile bookkeeping must not call the API")
    ctl = Controller(offline, ControllerConfig(metrics_address="0", health_address="0", leader_elect=False))
    for plural in ("pods", "certifications", "workloadruns", "bandwidthmeasurements", "goodputmeasurements", "jobs", "workflows"):
        ctl.stores[plural] = Store()
    return ctl


def test_controller_counts_job_reconciles_under_nvcre_labels_and_drops_them_with_the_job() -> None:
    ctl = _controller()
    job = _obj("Job", "job-a", labels={"nvcre.nvidia.com/workflow": "wf-a"})
    ctl.stores[JOBS.plural].put(job)
    ctl._observe("job", ("ns", "job-a"), "requeue", "success", 0.0)
    ctl._observe("job", ("ns", "job-a"), "error", "error", 0.0)
    ctl._observe("job", ("ns", "job-a"), "requeue", "requeue", 0.0)
    ctl._observe("workflow", ("ns", "wf-a"), "success", "success", 0.0)
    ctl._observe("job", ("ns", "never-cached"), "success", "success", 0.0)
    found = _parse(_text(ctl.metrics.registry))
    by_result = {lab["result"]: v for n, lab, v in found["nvcre_reconcile"] if n == "nvcre_reconcile_total"}
    assert by_result == {"success": 1.0, "error": 1.0, "requeue": 1.0}
    assert {lab["job"] for _, lab, _ in found["nvcre_reconcile"]} == {"job-a"}
    assert {lab["workflow"] for _, lab, _ in found["nvcre_reconcile"]} == {"wf-a"}
    # every tier still has its own cost series, under the project's own name
    tiers = {lab["controller"] for n, lab, _ in found["nvcre_controller_reconcile"] if n.endswith("_total")}
    assert tiers == {"job", "workflow"}

    ctl.stores[JOBS.plural].remove(job)
    ctl.handlers["jobs"]("DELETED", job, None)
    text = _text(ctl.metrics.registry)
    assert 'job="job-a"' not in text
    assert "nvcre_reconcile_total" not in text and "nvcre_reconcile_duration_seconds" not in text


# --------------------------------------------------------------------------------------------
# Gauges projected from the caches


def _stores(**items: list[dict[str, Any]]) -> dict[str, Store]:
    stores: dict[str, Store] = {}
    for plural in ("certifications", "workloadruns", "workflows", "jobs", "bandwidthmeasurements", "goodputmeasurements", "nodes"):
        stores[plural] = Store()
        stores[plural].replace(items.get(plural, []))
    return stores


def _gauges(stores: dict[str, Store], *, leader: bool = True) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return _parse(_text(ControllerMetrics(stores, lambda: leader).registry))


def test_hand_made_workflow_and_job_get_status_gauges() -> None:
    workflow = _obj("Workflow", "hand-made", status={"conditions": [_cond("InProgress")]})
    job = _obj(
        "Job",
        "hand-made-job",
        status={"conditions": [_cond("Failed", reason="JobTimedOut")]},
    )
    job["metadata"]["ownerReferences"] = [{"kind": "Workflow", "name": "hand-made", "controller": True, "uid": "u"}]
    pending = _obj("Job", "no-condition-yet")
    found = _gauges(_stores(workflows=[workflow], jobs=[job, pending]))

    wf = {lab["status"]: v for _, lab, v in found["nvcre_workflow_status"]}
    assert wf == {"in_progress": 1.0, "succeeded": 0.0, "failed": 0.0}
    assert {frozenset(lab) for _, lab, _ in found["nvcre_workflow_status"]} == {
        frozenset({"namespace", "workflow", "certification", "status"})
    }
    jobs = {(lab["job"], lab["workflow"], lab["status"]): v for _, lab, v in found["nvcre_job_status"]}
    assert jobs[("hand-made-job", "hand-made", "failed")] == 1.0  # timed out reports failed
    assert not any(key[0] == "no-condition-yet" for key in jobs)


def test_status_gauges_of_a_certification_are_not_repeated() -> None:
    cert = _obj(
        "Certification",
        "c",
        spec={"categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
        status={"conditions": [_cond("InProgress")]},
    )
    workflow = _obj("Workflow", "c-wf", labels={"nvcre.nvidia.com/certification": "c"}, status={"conditions": [_cond("InProgress")]})
    job = _obj("Job", "c-job", labels={"nvcre.nvidia.com/workflow": "c-wf"}, status={"conditions": [_cond("Succeeded")]})
    found = _gauges(_stores(certifications=[cert], workflows=[workflow], jobs=[job]))
    assert len(found["nvcre_workflow_status"]) == 3
    assert len(found["nvcre_job_status"]) == 3
    assert {lab["certification"] for _, lab, _ in found["nvcre_workflow_status"]} == {"c"}


def test_job_failed_nodes_counts_hardware_flagged_nodes_only() -> None:
    flagged = _obj(
        "Job",
        "hw",
        labels={"nvcre.nvidia.com/workflow": "wf"},
        status={
            "conditions": [_cond("InProgress"), _cond("HardwareFailed", reason="HardwareFailureDetected")],
            "failedNodes": [
                {"name": "n1", "reason": "HardwareFailureDetected"},
                {"name": "n2", "reason": "HardwareFailureDetected"},
                {"name": "n2", "reason": "WorkloadFailed"},
                {"name": "n3", "reason": "WorkloadFailed"},
            ],
        },
    )
    plain_failure = _obj("Job", "wl", status={"conditions": [_cond("Failed")], "failedNodes": [{"name": "n4", "reason": "WorkloadFailed"}]})
    found = _gauges(_stores(jobs=[flagged, plain_failure]))
    assert found["nvcre_job_failed_nodes"] == [("nvcre_job_failed_nodes", {"namespace": "ns", "job": "hw", "workflow": "wf"}, 2.0)]


def _goodput(name: str, job: str, *conditions: dict[str, Any], **status: Any) -> dict[str, Any]:
    return _obj(
        "GoodputMeasurement",
        name,
        spec={"jobRef": {"name": job}, "logProfileRef": "p"},
        status={"conditions": list(conditions), **status},
    )


def test_goodput_gauges_while_measuring_then_only_the_ratio() -> None:
    job = _obj("Job", "train", labels={"nvcre.nvidia.com/workflow": "wf-t"}, status={"conditions": [_cond("InProgress")]})
    measuring = _goodput(
        "train-goodput",
        "train",
        _cond("Measuring", reason="JobRunning"),
        result="0.91",
        avgTFLOPSPerGPU="412.5",
        avgStepTimeSec="1.25",
        trainingTimeSec="600",
        warmupTimeSec="12",
        nonWarmupTimeSec="500",
        lostWorkTimeSec="30",
    )
    found = _gauges(_stores(jobs=[job], goodputmeasurements=[measuring]))
    for family in GOODPUT_FAMILIES:
        assert len(found[family]) == 1, family
        _, labels, _ = found[family][0]
        assert labels == {"namespace": "ns", "measurement": "train-goodput", "job": "train", "workflow": "wf-t"}
    assert found["nvcre_goodput_ratio"][0][2] == pytest.approx(0.91)
    assert found["nvcre_goodput_avg_tflops_per_gpu"][0][2] == pytest.approx(412.5)
    assert found["nvcre_goodput_avg_step_time_seconds"][0][2] == pytest.approx(1.25)
    assert found["nvcre_goodput_lost_work_time_seconds"][0][2] == pytest.approx(30.0)
    assert found["nvcre_goodput_reschedule_time_seconds"][0][2] == 0.0  # not measured yet reads 0

    complete = _goodput("train-goodput", "train", _cond("Complete"), result="0.88", avgTFLOPSPerGPU="400", trainingTimeSec="900")
    found = _gauges(_stores(goodputmeasurements=[complete]))  # the Job is gone by now
    assert [f for f in GOODPUT_FAMILIES if f in found] == ["nvcre_goodput_ratio"]
    assert found["nvcre_goodput_ratio"][0][2] == pytest.approx(0.88)
    assert found["nvcre_goodput_ratio"][0][1]["workflow"] == ""


def test_goodput_after_a_restart_shows_no_stale_attempt_numbers() -> None:
    restarted = _goodput("g", "train", _cond("Measuring", reason="JobRunning"), interruptionCount=1, trainingTimeSec="50")
    waiting = _goodput("w", "other", _cond("Measuring", status="False", reason="WaitingForPods"))
    found = _gauges(_stores(goodputmeasurements=[restarted, waiting]))
    assert "nvcre_goodput_avg_tflops_per_gpu" not in found
    assert "nvcre_goodput_avg_step_time_seconds" not in found
    assert {lab["measurement"] for _, lab, _ in found["nvcre_goodput_training_time_seconds"]} == {"g"}


def test_topology_gauges_per_node_and_domain() -> None:
    workflow = _obj(
        "Workflow",
        "topo",
        spec={"orchestration": {"topology": {"topologyKey": "nvidia.com/gpu.clique"}}},
        status={
            "orchestration": {
                "groups": [
                    {"name": "g0", "phase": "Succeeded", "nodes": ["a1", "a2"], "domains": ["clique-a"]},
                    {"name": "g1", "phase": "Failed", "nodes": ["b1", "b2"], "domains": ["clique-b"]},
                    {"name": "g2", "phase": "Succeeded", "nodes": ["b2", "c1"], "domains": ["clique-b", "clique-c"]},
                    {"name": "g3", "phase": "Running", "nodes": ["d1"], "domains": ["clique-d"]},
                ]
            }
        },
    )
    plain = _obj(
        "Workflow", "no-topology", status={"orchestration": {"groups": [{"phase": "Succeeded", "nodes": ["x"], "domains": ["d"]}]}}
    )
    nodes = [
        {"metadata": {"name": "c1", "labels": {"nvidia.com/gpu.clique": "clique-c"}}},
        {"metadata": {"name": "b2", "labels": {"nvidia.com/gpu.clique": "clique-b"}}},
    ]
    found = _gauges(_stores(workflows=[workflow, plain], nodes=nodes))
    validated = {(lab["domain"], lab["node"]) for _, lab, v in found["nvcre_topology_validated_nodes"] if v == 1.0}
    failed = {(lab["domain"], lab["node"]) for _, lab, v in found["nvcre_topology_failed_nodes"] if v == 1.0}
    assert validated == {("clique-a", "a1"), ("clique-a", "a2"), ("clique-c", "c1")}
    assert failed == {("clique-b", "b1"), ("clique-b", "b2")}
    for family in ("nvcre_topology_validated_nodes", "nvcre_topology_failed_nodes"):
        for _, labels, _ in found[family]:
            assert set(labels) == {"namespace", "workflow", "topology_key", "domain", "node"}
            assert labels["workflow"] == "topo" and labels["topology_key"] == "nvidia.com/gpu.clique"


def test_a_standby_serves_no_state_gauges() -> None:
    workflow = _obj("Workflow", "w", status={"conditions": [_cond("InProgress")]})
    found = _gauges(_stores(workflows=[workflow]), leader=False)
    assert not set(found) & set(FAMILIES)


def test_projection_without_cached_objects_keeps_the_verdict_only_behaviour() -> None:
    assert samples([]) == []
    assert samples([], CacheObjects()) == []
