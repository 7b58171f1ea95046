"""The controller end to end on the simulated GPU cluster.

Real API server, scheduler, JobSet and Trainer; kwok plays the GPU nodes and the workload
player decides what each pod prints and how it ends. The controller runs in-process (threads)
with short intervals, scoped to the test's namespace, and is always stopped by its fixture; the
restart test runs it as a subprocess and kills it with SIGKILL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    CERTIFICATIONS,
    CONFIGMAPS,
    EVENTS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    JOBSETS,
    PODS,
    TRAINJOBS,
    WORKFLOWS,
    WORKLOADRUNS,
)
from tests.integration.integration_helpers import eventually, fast_settings

pytestmark = [pytest.mark.integration, pytest.mark.sim]

FAST = fast_settings(max_sample_interval=1.0)


@pytest.fixture
def controller(kube, sim_namespace) -> Iterator[Controller]:
    config = ControllerConfig(
        namespace=sim_namespace,
        metrics_address="127.0.0.1:0",
        health_address="127.0.0.1:0",
        leader_elect=True,
        lease_namespace=sim_namespace,
        lease_duration=4.0,
        renew_deadline=3.0,
        retry_period=0.5,
        settings=FAST,
    )
    ctl = Controller(kube, config).start()
    try:
        assert ctl.leading.wait(15), "the controller never took the lease"
        yield ctl
    finally:
        ctl.stop()


def certification(namespace: str, name: str, nodes: list[str], categories: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"target": {"nodeNames": nodes}, "timeoutPerJob": "3m", "categories": categories, **spec},
    }


def nccl_workloadrun(namespace: str, name: str, nodes: list[str], num_nodes: int) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "WorkloadRun",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": "nvcr.io/nvidia/pytorch:26.01-py3",
            "numNodes": num_nodes,
            # The simulated GPU nodes carry the GPU taint; Unpinned adds no blanket toleration.
            "target": {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
            "framework": {
                "mpi": {
                    "binary": "/usr/local/bin/all_reduce_perf_mpi",
                    "mpirunPath": "/usr/local/mpi/bin/mpirun",
                    "args": ["-b", "8", "-e", "1G", "-f", "2", "-n", "20"],
                }
            },
            "orchestration": {"placement": "Unpinned"},
            "bandwidthMeasurement": {"logProfileRef": "nccl-bandwidth", "testType": "all_reduce"},
        },
    }


def lifecycle_of(kube, resource, name: str, namespace: str) -> tuple[str | None, str, str]:
    status = kube.get(resource, name, namespace).get("status") or {}
    life = cond.lifecycle(status)
    found = cond.condition(status, life) if life else None
    return life, str((found or {}).get("reason") or ""), str((found or {}).get("message") or "")


def wait_terminal(kube, resource, name: str, namespace: str, timeout: float = 90.0) -> tuple[str | None, str, str]:
    def done():
        outcome = lifecycle_of(kube, resource, name, namespace)
        return outcome if outcome[0] in (cond.SUCCEEDED, cond.FAILED) else None

    return eventually(done, timeout=timeout, what=f"{resource.kind} {name} to finish")


def event_reasons(kube, namespace: str, kind: str) -> set[str]:
    return {e.get("reason") for e in kube.list(EVENTS, namespace).items if (e.get("involvedObject") or {}).get("kind") == kind}


def node_results(kube, workflow: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    from nvcre.runtime import compile as compiler

    status = workflow.get("status") or {}
    namespace = workflow["metadata"]["namespace"]
    ok = bad = None
    if status.get("succeededNodesRef"):
        ok = kube.get(CONFIGMAPS, status["succeededNodesRef"]["name"], namespace)
    if status.get("failedNodesRef"):
        bad = kube.get(CONFIGMAPS, status["failedNodesRef"]["name"], namespace)
    return compiler.stored_succeeded_nodes(ok), compiler.stored_failed_nodes(bad)


def names(kube, resource, namespace: str) -> list[str]:
    return sorted(o["metadata"]["name"] for o in kube.list(resource, namespace).items)


# ---------------------------------------------------------------------------------------------


def test_a_healthy_certification_succeeds_with_events_metrics_and_node_results(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-ok")
    kube.create(
        certification(
            sim_namespace,
            "healthy",
            nodes,
            [
                {"domain": "communication", "variant": "nccl-all-reduce"},
                {"domain": "communication", "variant": "nccl-loopback"},
                {"domain": "diagnostics", "variant": "dcgm-level4"},
            ],
        )
    )
    life, reason, message = wait_terminal(kube, CERTIFICATIONS, "healthy", sim_namespace, timeout=120)
    assert (life, reason, message) == ("Succeeded", "AllWorkflowsSucceeded", "All certification categories completed successfully")

    cert = kube.get(CERTIFICATIONS, "healthy", sim_namespace)
    categories = cert["status"]["categoryStatuses"]
    assert [(c["variant"], c["status"]) for c in categories] == [
        ("nccl-all-reduce", "Succeeded"),
        ("nccl-loopback", "Succeeded"),
        ("dcgm-level4", "Succeeded"),
    ]
    assert cert["metadata"]["finalizers"] == ["nvcre.nvidia.com/certification-finalizer"]

    first = kube.get(WORKFLOWS, categories[0]["workflowRef"]["name"], sim_namespace)
    assert categories[0]["succeededNodesRef"] == first["status"]["succeededNodesRef"]
    succeeded, failed = node_results(kube, first)
    assert (succeeded, failed) == (sorted(nodes), [])
    groups = first["status"]["orchestration"]["groups"]
    assert [(g["name"], g["nodes"], g["phase"]) for g in groups] == [("group-0", sorted(nodes), "Succeeded")]

    bandwidth = kube.get(BANDWIDTH_MEASUREMENTS, f"{groups[0]['jobRef']['name']}-bandwidth", sim_namespace)
    complete = cond.condition(bandwidth["status"], "Complete")
    assert complete is not None and complete["reason"] == "JobSucceeded"
    assert float(max(bandwidth["status"]["results"], key=lambda r: r["sizeBytes"])["busBW"]) > 0

    assert {"WorkflowCreated", "AllWorkflowsSucceeded"} <= event_reasons(kube, sim_namespace, "Certification")
    assert {"GroupsPartitioned", "JobCompleted"} <= event_reasons(kube, sim_namespace, "Workflow")
    assert {"WorkloadCreated", "WorkloadCompleted"} <= event_reasons(kube, sim_namespace, "Job")

    metrics = urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=10).read().decode()
    assert f'nvcre_certification_status{{certification="healthy",namespace="{sim_namespace}",status="succeeded"}} 1.0' in metrics
    assert (
        f'nvcre_workflow_status{{certification="healthy",namespace="{sim_namespace}",status="succeeded",workflow="{first["metadata"]["name"]}"}} 1.0'
        in metrics
    )
    assert "nvcre_nccl_busbw_gbs{" not in metrics, "NCCL gauges go once a measurement completes"
    health = urllib.request.urlopen(f"http://127.0.0.1:{controller.health_port}/healthz", timeout=10)
    assert health.status == 200


def test_thresholds_judge_bandwidth_and_goodput_and_a_failed_category_does_not_stop_the_next(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-thr")
    kube.create(
        certification(
            sim_namespace,
            "judged",
            nodes,
            [
                {
                    "domain": "communication",
                    "variant": "nccl-all-reduce",
                    "options": {"thresholds": {"busBandwidthGBps": "value >= 100000"}},
                },
                {
                    "domain": "training",
                    "variant": "nemotron5-8b",
                    "options": {"nodesPerJob": 2, "maxSteps": 30, "thresholds": {"goodputRatio": "value >= 0.5"}},
                },
            ],
            # The simulated GPU nodes carry the GPU taint; only MPI workloads tolerate it by default.
            target={"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
        )
    )
    life, reason, _ = wait_terminal(kube, CERTIFICATIONS, "judged", sim_namespace, timeout=150)
    assert (life, reason) == ("Failed", "WorkflowFailed")
    cert = kube.get(CERTIFICATIONS, "judged", sim_namespace)
    assert [c["status"] for c in cert["status"]["categoryStatuses"]] == ["Failed", "Succeeded"]

    nccl, training = (kube.get(WORKFLOWS, c["workflowRef"]["name"], sim_namespace) for c in cert["status"]["categoryStatuses"])
    assert lifecycle_of(kube, WORKFLOWS, nccl["metadata"]["name"], sim_namespace)[:2] == ("Failed", "JobValidationFailed")
    assert cond.condition(nccl["status"], cond.VALIDATION_FAILED)["status"] == "True"
    _, failed = node_results(kube, nccl)
    assert sorted((f["name"], f["reason"]) for f in failed) == [(n, "ThresholdViolation") for n in sorted(nodes)]
    (nccl_job,) = [g["jobRef"]["name"] for g in nccl["status"]["orchestration"]["groups"]]
    verdict = cond.condition(kube.get(JOBS, nccl_job, sim_namespace)["status"], cond.VALIDATION_FAILED)
    assert verdict["reason"] == "ThresholdViolated"
    assert verdict["message"].startswith('Threshold "busBandwidthGBps" violated: measured ')

    assert lifecycle_of(kube, WORKFLOWS, training["metadata"]["name"], sim_namespace)[:2] == ("Succeeded", "JobCompleted")
    (train_job,) = [g["jobRef"]["name"] for g in training["status"]["orchestration"]["groups"]]
    met = cond.condition(kube.get(JOBS, train_job, sim_namespace)["status"], cond.VALIDATION_FAILED)
    assert (met["status"], met["reason"]) == ("False", "ThresholdsMet")
    goodput = kube.get(GOODPUT_MEASUREMENTS, f"{train_job}-goodput", sim_namespace)["status"]
    assert cond.condition(goodput, "Complete")["reason"] == "JobSucceeded"
    assert 0.5 <= float(goodput["result"]) <= 1.0
    assert float(goodput["avgTFLOPSPerGPU"]) > 0
    assert {"ThresholdViolated", "ThresholdsMet"} <= event_reasons(kube, sim_namespace, "Job")


@pytest.mark.slow
def test_a_training_run_whose_steps_stop_fails_as_stalled(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-stall")
    for node in nodes:
        simcluster.set_fault(node, "hang")  # the log stops halfway and the pods never finish
    kube.create(
        certification(
            sim_namespace,
            "stalled",
            nodes,
            [{"domain": "training", "variant": "nemotron5-8b", "options": {"nodesPerJob": 2, "maxSteps": 30}}],
            target={"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
        )
    )
    life, reason, _ = wait_terminal(kube, CERTIFICATIONS, "stalled", sim_namespace, timeout=120)
    assert (life, reason) == ("Failed", "WorkflowFailed")
    (job,) = kube.list(JOBS, sim_namespace).items
    failed = cond.condition(job["status"], cond.FAILED)
    assert (failed["reason"], failed["message"]) == (
        "WorkloadStalled",
        "Workload stalled: no training step within the configured threshold",
    )
    assert sorted(f["name"] for f in job["status"]["failedNodes"]) == sorted(nodes)
    goodput = kube.get(GOODPUT_MEASUREMENTS, f"{job['metadata']['name']}-goodput", sim_namespace)["status"]
    assert int(goodput["currentStep"]) > 0, "the provisional reads saw the steps before they stopped"


def test_an_unpinned_workloadrun_runs_one_job_of_exactly_num_nodes(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-wr")
    kube.create(nccl_workloadrun(sim_namespace, "unpinned", nodes, 3))
    life, reason, message = wait_terminal(kube, WORKLOADRUNS, "unpinned", sim_namespace, timeout=90)
    assert (life, reason, message) == ("Succeeded", "WorkflowSucceeded", "Workflow completed successfully")
    run = kube.get(WORKLOADRUNS, "unpinned", sim_namespace)
    # NVCRE's condition shapes: the lifecycle types that are not current read Superseded
    inactive = {c["type"]: c["reason"] for c in run["status"]["conditions"] if c["status"] == "False"}
    assert inactive == {"InProgress": "Superseded", "Failed": "Superseded"}
    workflow = kube.get(WORKFLOWS, run["status"]["workflowRef"]["name"], sim_namespace)
    # NVCRE's selector finds the run's Workflow
    found = kube.list(WORKFLOWS, sim_namespace, label_selector="nvcre.nvidia.com/workload-run=unpinned").items
    assert [w["metadata"]["name"] for w in found] == [workflow["metadata"]["name"]]
    orchestration = workflow["status"]["orchestration"]
    assert orchestration["placement"] == "Unpinned"
    (group,) = orchestration["groups"]
    assert len(group["nodes"]) == 3 and set(group["nodes"]) <= set(nodes), "backfilled from the bound pods"
    assert names(kube, JOBS, sim_namespace) == [group["jobRef"]["name"]]
    job = kube.get(JOBS, group["jobRef"]["name"], sim_namespace)
    assert "nvcre.nvidia.com/group-nodes" not in (job["metadata"].get("annotations") or {})
    assert run["status"]["succeededNodesRef"]["name"].startswith("succeeded-nodes-")
    # One launcher runs mpirun for the whole job; the workers are the TrainJob's numNodes.
    (jobset,) = kube.list(JOBSETS, sim_namespace).items
    sizes = {r["name"]: r["template"]["spec"]["parallelism"] for r in jobset["spec"]["replicatedJobs"]}
    assert sizes == {"launcher": 1, "node": 3}


def test_a_workloadrun_below_its_threshold_fails_with_nvcres_validation_conditions(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-slowwr")
    run = nccl_workloadrun(sim_namespace, "below", nodes, 2)
    run["spec"]["thresholds"] = {"busBandwidthGBps": "value >= 100"}  # sockets give about 11 GB/s
    kube.create(run)
    life, reason, _ = wait_terminal(kube, WORKLOADRUNS, "below", sim_namespace, timeout=120)
    assert (life, reason) == ("Failed", "WorkflowValidationFailed")
    validation = cond.condition(kube.get(WORKLOADRUNS, "below", sim_namespace)["status"], cond.VALIDATION_FAILED) or {}
    assert (validation.get("status"), validation.get("reason")) == ("True", "ThresholdViolation")


def test_an_impossible_size_fails_with_partition_error(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-small")
    kube.create(nccl_workloadrun(sim_namespace, "too-big", nodes, 5))
    life, reason, message = wait_terminal(kube, WORKLOADRUNS, "too-big", sim_namespace, timeout=60)
    # the render already finds no room: no Workflow is created, and the WorkloadRun says why
    assert (life, reason) == ("Failed", "PartitionError")
    assert "5" in message and "2" in message
    assert names(kube, JOBS, sim_namespace) == [] and names(kube, WORKFLOWS, sim_namespace) == []
    assert "PartitionError" in event_reasons(kube, sim_namespace, "WorkloadRun")


def test_no_capacity_is_reported_blocked_with_the_schedulers_message(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-full")
    simcluster.set_fault(nodes[1], "no-capacity")
    kube.create(
        certification(
            sim_namespace,
            "blocked",
            nodes,
            [{"domain": "communication", "variant": "nccl-all-reduce"}],
            schedulingStallGraceSeconds=3,
        )
    )

    def blocked_job():
        for job in kube.list(JOBS, sim_namespace).items:
            found = cond.condition(job.get("status"), cond.IN_PROGRESS) or {}
            if found.get("status") == "True" and found.get("reason") == "WorkloadSchedulingBlocked":
                return job, found["message"]
        return None

    job, message = eventually(blocked_job, timeout=60, what="the Job to report its pods unschedulable")
    assert message.startswith("Workload pods are unschedulable: 0/")
    assert "nvidia.com/gpu" in message or "Insufficient" in message or "didn't" in message
    assert job["status"]["schedulingBlockedSince"]

    def relayed():
        workflow = kube.list(WORKFLOWS, sim_namespace).items[0]
        found = cond.condition(workflow.get("status"), cond.IN_PROGRESS) or {}
        return found if found.get("reason") == "JobSchedulingBlocked" else None

    relay = eventually(relayed, timeout=30, what="the Workflow to relay the blocked Job")
    assert f"job {job['metadata']['name']} scheduling blocked: Workload pods are unschedulable" in relay["message"]
    assert lifecycle_of(kube, CERTIFICATIONS, "blocked", sim_namespace)[0] == "InProgress"


def test_pods_that_can_never_schedule_fail_after_the_bound_blaming_no_node(simcluster, sim_namespace, kube):
    """No GPU left on any node of the group: no eviction makes room, so the Job ends after
    --never-schedulable-timeout (8 s here) instead of waiting out a paused timeoutPerJob."""
    import dataclasses

    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-never")
    for node in nodes:
        simcluster.set_fault(node, "no-capacity")
    settings = dataclasses.replace(FAST, never_schedulable_timeout=8.0)
    config = ControllerConfig(
        namespace=sim_namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=settings
    )
    ctl = Controller(kube, config).start()
    try:
        kube.create(
            certification(
                sim_namespace, "never", nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}], schedulingStallGraceSeconds=3
            )
        )
        message = failed_without_blame(kube, sim_namespace, "never", "WorkloadUnschedulable", timeout=90)
    finally:
        ctl.stop()
    assert message.startswith("Workload pods can never schedule on the group's nodes")
    assert "Preemption is not helpful for scheduling" in message
    assert "WorkloadUnschedulable" in event_reasons(kube, sim_namespace, "Job")


def test_a_job_or_workflow_deleted_mid_run_fails_with_a_reason_and_an_event(simcluster, sim_namespace, kube, controller):
    """Deleted by hand while running (a hang keeps both running): the group or category fails,
    a Warning Event says which object went, and the report gives the reason."""
    nodes = simcluster.add_nodes(profile="h100", count=4, prefix=f"{sim_namespace}-gone")
    simcluster.set_fault(nodes[0], "hang")
    simcluster.set_fault(nodes[2], "hang")
    category = [{"domain": "communication", "variant": "nccl-all-reduce"}]
    kube.create(certification(sim_namespace, "job-gone", nodes[:2], category))
    kube.create(certification(sim_namespace, "wf-gone", nodes[2:], category))

    def running_job(cert: str):
        workflows = {
            w["metadata"]["name"]
            for w in kube.list(WORKFLOWS, sim_namespace).items
            if w["metadata"]["labels"].get("nvcre.nvidia.com/certification") == cert
        }
        for job in kube.list(JOBS, sim_namespace).items:
            found = cond.condition(job.get("status"), cond.IN_PROGRESS) or {}
            if job["metadata"]["labels"].get("nvcre.nvidia.com/workflow") in workflows and found.get("reason") == "WorkloadRunning":
                return job
        return None

    job = eventually(lambda: running_job("job-gone"), timeout=90, what="the first Certification's Job to run")
    kube.delete(JOBS, job["metadata"]["name"], sim_namespace)
    eventually(lambda: running_job("wf-gone"), timeout=90, what="the second Certification's Job to run")
    (workflow,) = [
        w for w in kube.list(WORKFLOWS, sim_namespace).items if w["metadata"]["labels"].get("nvcre.nvidia.com/certification") == "wf-gone"
    ]
    kube.delete(WORKFLOWS, workflow["metadata"]["name"], sim_namespace)

    for name in ("job-gone", "wf-gone"):
        assert wait_terminal(kube, CERTIFICATIONS, name, sim_namespace, timeout=120)[0] == "Failed"
    warnings = {(e.get("reason"), e.get("message")) for e in kube.list(EVENTS, sim_namespace).items if e.get("type") == "Warning"}
    assert any(r == "JobDeleted" and job["metadata"]["name"] in m for r, m in warnings), warnings
    assert any(r == "WorkflowDeleted" and workflow["metadata"]["name"] in m for r, m in warnings), warnings
    env = {**os.environ, "KUBECONFIG": str(simcluster.kubeconfig)}
    report = subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "certification", "report", "wf-gone", "-n", sim_namespace, "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "was deleted before it finished" in report.stdout, report.stdout + report.stderr


def fail_fast_workflow(kube, cert: dict[str, Any]) -> dict[str, Any]:
    """The Certification's first Workflow, compiled offline and written by hand, with the
    launcher's backoffLimit at 0 so a crashing launcher fails its TrainJob at once (the catalog
    retries it for minutes)."""
    from nvcre.runtime import compile as compiler
    from nvcre.runtime.kube.resources import NODES

    facts = compiler.cluster_facts(kube.list(NODES).items)
    cert = {**cert, "metadata": {**cert["metadata"], "uid": "00000000-0000-0000-0000-000000000000"}}
    workflow = compiler.expand_certification(cert, facts)[0]
    workflow["metadata"].pop("ownerReferences", None)
    for dep in workflow["spec"].get("dependencies") or []:
        if dep.get("kind") == "TrainingRuntime":
            for rj in dep["spec"]["template"]["spec"]["replicatedJobs"]:
                rj.setdefault("template", {}).setdefault("spec", {})["backoffLimit"] = 0
    return workflow


def test_an_nccl_crash_fails_naming_that_node(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=3, prefix=f"{sim_namespace}-crash")
    bad = nodes[1]
    simcluster.set_fault(bad, "nccl-crash")
    cert = certification(
        sim_namespace, "crash", nodes, [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 1}}]
    )
    workflow = kube.create(fail_fast_workflow(kube, cert))
    name = workflow["metadata"]["name"]
    life, reason, message = wait_terminal(kube, WORKFLOWS, name, sim_namespace, timeout=120)
    assert (life, reason, message) == ("Failed", "IterationsFailed", "1 groups failed across 1 iterations")
    workflow = kube.get(WORKFLOWS, name, sim_namespace)
    succeeded, failed = node_results(kube, workflow)
    assert [(f["name"], f["reason"]) for f in failed] == [(bad, "WorkloadFailed")]
    assert succeeded == sorted(n for n in nodes if n != bad)
    phases = {g["name"]: (g["nodes"], g["phase"]) for g in workflow["status"]["orchestration"]["groups"]}
    assert sorted(p for _, p in phases.values()) == ["Failed", "Succeeded", "Succeeded"]
    assert [n for n, p in phases.values() if p == "Failed"] == [[bad]]
    failed_jobs = [j for j in kube.list(JOBS, sim_namespace).items if cond.lifecycle(j.get("status")) == "Failed"]
    assert len(failed_jobs) == 1
    job_status = failed_jobs[0]["status"]
    assert cond.condition(job_status, cond.FAILED)["reason"] == "WorkloadFailed"
    assert job_status["failedNodes"][0]["name"] == bad
    assert job_status["failureLog"]["nodeName"] == bad
    assert job_status["failureLog"]["exitCode"] != 0
    assert "WorkloadFailed" in event_reasons(kube, sim_namespace, "Job")
    assert "IterationsFailed" in event_reasons(kube, sim_namespace, "Workflow")


def test_a_crash_repeated_on_its_node_is_blamed_without_waiting_out_the_backoff(simcluster, sim_namespace, kube, controller):
    """The catalog's own retries (backoffLimit with the Job controller's back-off, about 11 minutes
    to exhaust): the second identical crash on the node ends the Job, naming that node alone."""
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-repeat")
    bad = nodes[1]
    simcluster.set_fault(bad, "nccl-crash")
    started = time.monotonic()
    kube.create(
        certification(sim_namespace, "repeat", nodes, [{"domain": "communication", "variant": "nccl-loopback"}], timeoutPerJob="30m")
    )
    life, _, _ = wait_terminal(kube, CERTIFICATIONS, "repeat", sim_namespace, timeout=180)
    took = time.monotonic() - started
    assert life == "Failed" and took < 120, f"{life} after {took:.0f} s"
    workflow = kube.list(WORKFLOWS, sim_namespace).items[0]
    succeeded, failed = node_results(kube, workflow)
    assert [(f["name"], f["reason"]) for f in failed] == [(bad, "WorkloadFailed")]
    assert succeeded == [nodes[0]]
    (job,) = [j for j in kube.list(JOBS, sim_namespace).items if cond.lifecycle(j.get("status")) == "Failed"]
    assert f"failed 2 times on node {bad}" in cond.condition(job["status"], cond.FAILED)["message"]


def test_a_failing_gpu_fails_the_dcgm_diagnostic_naming_its_node(simcluster, sim_namespace, kube, controller):
    """The simulated side of the real-node unhealthy-device row (docs/testing.md): the diag on the
    node with a failing GPU exits 1, so its Job fails ``WorkloadFailed`` naming that node alone."""
    from nvcre.runtime.measure.dcgm import parse_dcgm

    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-gpu")
    bad = nodes[1]
    simcluster.set_fault(bad, "nccl-crash")  # the player fails GPU 3 in the node's diag
    kube.create(certification(sim_namespace, "diag", nodes, [{"domain": "diagnostics", "variant": "dcgm-level4"}], timeoutPerJob="30m"))
    life, _, _ = wait_terminal(kube, CERTIFICATIONS, "diag", sim_namespace, timeout=180)
    assert life == "Failed"
    workflow = kube.list(WORKFLOWS, sim_namespace).items[0]
    succeeded, failed = node_results(kube, workflow)
    assert [(f["name"], f["reason"]) for f in failed] == [(bad, "WorkloadFailed")]
    assert succeeded == [nodes[0]]
    (job,) = [j for j in kube.list(JOBS, sim_namespace).items if cond.lifecycle(j.get("status")) == "Failed"]
    excerpt = job["status"]["failureLog"]
    parsed = parse_dcgm(excerpt["tail"])
    assert excerpt["nodeName"] == bad and parsed.overall == "Fail"
    assert {t.failed_gpus for t in parsed.tests if t.status == "Fail"} == {("3",)}


def test_a_node_cordoned_mid_run_is_blamed_as_a_hardware_failure(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-hw")
    for node in nodes:
        simcluster.set_fault(node, "hang")
    kube.create(certification(sim_namespace, "hardware", nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    eventually(
        lambda: [p for p in kube.list(PODS, sim_namespace).items if (p.get("status") or {}).get("phase") == "Running"],
        timeout=60,
        what="the workload pods to run",
    )
    sick = nodes[0]
    simcluster.set_fault(sick, "cordon")  # the default monitor: node.spec.unschedulable == true
    life, reason, message = wait_terminal(kube, CERTIFICATIONS, "hardware", sim_namespace, timeout=90)
    assert (life, reason) == ("Failed", "WorkflowFailed")
    cert = kube.get(CERTIFICATIONS, "hardware", sim_namespace)
    workflow = kube.get(WORKFLOWS, cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], sim_namespace)
    life, reason, message = lifecycle_of(kube, WORKFLOWS, workflow["metadata"]["name"], sim_namespace)
    assert (life, reason) == ("Failed", "JobHardwareFailed")
    assert message == "1 groups failed across 1 iterations; hardware failures occurred on one or more nodes"
    _, failed = node_results(kube, workflow)
    assert [(f["name"], f["reason"]) for f in failed] == [(sick, "HardwareFailureDetected")]
    (job_name,) = [g["jobRef"]["name"] for g in workflow["status"]["orchestration"]["groups"]]
    hardware = cond.condition(kube.get(JOBS, job_name, sim_namespace)["status"], cond.HARDWARE_FAILED)
    assert (hardware["status"], hardware["message"]) == ("True", f"Hardware failure detected on node(s): [{sick}]")
    assert "HardwareFailureDetected" in event_reasons(kube, sim_namespace, "Job")

    def left_behind() -> list[str]:
        return [f"{r.kind}/{o['metadata']['name']}" for r in (TRAINJOBS, JOBSETS) for o in kube.list(r, sim_namespace).items]

    eventually(lambda: not left_behind(), timeout=30, what="the failed group's TrainJob and JobSet to go")


def test_a_failed_group_is_retried_under_the_same_job_name(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-retry")
    bad = nodes[0]
    simcluster.set_fault(bad, "nccl-crash")
    cert = certification(
        sim_namespace, "retry", nodes, [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 1}}]
    )
    manifest = fail_fast_workflow(kube, cert)
    manifest["spec"]["orchestration"].setdefault("execution", {})["retryFailedGroups"] = 1
    name = kube.create(manifest)["metadata"]["name"]
    life, reason, _ = wait_terminal(kube, WORKFLOWS, name, sim_namespace, timeout=120)
    assert (life, reason) == ("Failed", "IterationsFailed")
    groups = kube.get(WORKFLOWS, name, sim_namespace)["status"]["orchestration"]["groups"]
    by_node = {tuple(g["nodes"]): g for g in groups}
    assert (by_node[(bad,)]["phase"], by_node[(bad,)].get("retries")) == ("Failed", 1)
    assert by_node[(nodes[1],)]["phase"] == "Succeeded"
    assert len(kube.list(JOBS, sim_namespace).items) == 2, "the retry reused the group's Job name"
    failed_job = kube.get(JOBS, by_node[(bad,)]["jobRef"]["name"], sim_namespace)
    assert failed_job["status"]["failedNodes"][0]["name"] == bad


def test_deleting_a_running_certification_leaves_nothing_behind(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-del")
    for node in nodes:
        simcluster.set_fault(node, "hang")
    kube.create(certification(sim_namespace, "doomed", nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    eventually(
        lambda: [p for p in kube.list(PODS, sim_namespace).items if (p.get("status") or {}).get("phase") == "Running"],
        timeout=60,
        what="the workload pods to run",
    )

    def provisional_gauges():
        text = urllib.request.urlopen(f"http://127.0.0.1:{controller.metrics_port}/metrics", timeout=10).read().decode()
        return [line for line in text.splitlines() if line.startswith("nvcre_nccl_busbw_gbs{")]

    gauges = eventually(provisional_gauges, timeout=30, what="NCCL gauges from the running launcher's log")
    (workflow,) = names(kube, WORKFLOWS, sim_namespace)
    assert all(f'workflow="{workflow}"' in line for line in gauges)
    (bandwidth,) = kube.list(BANDWIDTH_MEASUREMENTS, sim_namespace).items
    assert bandwidth["status"]["results"] and not cond.condition(bandwidth["status"], "Complete")
    kube.delete(CERTIFICATIONS, "doomed", sim_namespace)

    def all_gone():
        try:
            kube.get(CERTIFICATIONS, "doomed", sim_namespace)
            return False
        except NotFound:
            pass
        return not any(kube.list(r, sim_namespace).items for r in (WORKFLOWS, JOBS, TRAINJOBS, JOBSETS, PODS))

    eventually(all_gone, timeout=90, what="the Certification and every object under it to be deleted")


# ---------------------------------------------------------------------------------------------


class ControllerProcess:
    """``python -m nvcre.runtime`` in a subprocess; killed (SIGKILL) on request and always at the end."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path) -> None:
        self.argv = [
            sys.executable,
            "-m",
            "nvcre.runtime",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            namespace,
            "--no-leader-elect",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ]
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.argv, stdout=out, stderr=out, env={**os.environ})

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


@pytest.mark.slow
def test_a_controller_killed_mid_run_resumes_to_the_same_objects(simcluster, sim_namespace, kube, tmp_path):
    nodes = simcluster.add_nodes(profile="h100", count=3, prefix=f"{sim_namespace}-kill")
    runner = ControllerProcess(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log")
    try:
        runner.start()
        kube.create(
            certification(
                sim_namespace,
                "resumed",
                nodes,
                [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 1, "maxConcurrent": 1}}],
            )
        )
        eventually(lambda: kube.list(TRAINJOBS, sim_namespace).items, timeout=60, what="the first TrainJob")
        runner.kill()
        time.sleep(2)
        runner.start()
        life, reason, _ = wait_terminal(kube, CERTIFICATIONS, "resumed", sim_namespace, timeout=150)
    finally:
        runner.kill()
    assert (life, reason) == ("Succeeded", "AllWorkflowsSucceeded"), (tmp_path / "controller.log").read_text()[-3000:]
    (workflow_name,) = names(kube, WORKFLOWS, sim_namespace)
    workflow = kube.get(WORKFLOWS, workflow_name, sim_namespace)
    groups = workflow["status"]["orchestration"]["groups"]
    assert [(g["name"], g["phase"]) for g in groups] == [(f"group-{i}", "Succeeded") for i in range(3)]
    expected_jobs = sorted(g["jobRef"]["name"] for g in groups)
    assert len(set(expected_jobs)) == 3
    assert names(kube, JOBS, sim_namespace) == expected_jobs, "no duplicate or orphaned Jobs"
    workloads = sorted(kube.get(JOBS, j, sim_namespace)["status"]["workloadRef"]["name"] for j in expected_jobs)
    assert names(kube, TRAINJOBS, sim_namespace) == workloads
    measured = sorted(b["spec"]["jobRef"]["name"] for b in kube.list(BANDWIDTH_MEASUREMENTS, sim_namespace).items)
    assert measured == expected_jobs
    cert = kube.get(CERTIFICATIONS, "resumed", sim_namespace)
    assert [c["status"] for c in cert["status"]["categoryStatuses"]] == ["Succeeded"]


def test_a_job_that_never_scheduled_times_out_blaming_no_node(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-never")
    for node in nodes:
        simcluster.set_fault(node, "no-capacity")
    kube.create(
        certification(
            sim_namespace,
            "never",
            nodes,
            [{"domain": "communication", "variant": "nccl-all-reduce"}],
            schedulingStallGraceSeconds=2,
            timeoutPerJob="15s",
        )
    )
    message = failed_without_blame(kube, sim_namespace, "never", "JobTimedOut", timeout=120)
    assert "unschedulable" in message


def failed_without_blame(kube, namespace: str, certification_name: str, job_reason: str, *, timeout: float) -> str:
    """Wait for the Certification to fail on its one Job with ``job_reason`` and no node blamed; the Job's message."""
    life, reason, _ = wait_terminal(kube, CERTIFICATIONS, certification_name, namespace, timeout=timeout)
    assert (life, reason) == ("Failed", "WorkflowFailed")
    (job,) = kube.list(JOBS, namespace).items
    failed = cond.condition(job["status"], cond.FAILED)
    assert failed["reason"] == job_reason
    assert not job["status"].get("failedNodes")
    workflow = kube.list(WORKFLOWS, namespace).items[0]
    _, blamed = node_results(kube, workflow)
    assert blamed == []
    return str(failed["message"])


def test_a_workload_deleted_by_hand_fails_its_job_blaming_no_node(simcluster, sim_namespace, kube, controller):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-del")
    for node in nodes:
        simcluster.set_fault(node, "hang")  # keep the workload running until it is deleted
    kube.create(certification(sim_namespace, "deleted", nodes, [{"domain": "communication", "variant": "nccl-all-reduce"}]))
    eventually(
        lambda: [p for p in kube.list(PODS, sim_namespace).items if (p.get("status") or {}).get("phase") == "Running"],
        timeout=60,
        what="the workload pods to run",
    )
    (trainjob,) = kube.list(TRAINJOBS, sim_namespace).items
    kube.delete(TRAINJOBS, trainjob["metadata"]["name"], sim_namespace)
    assert "no node is blamed" in failed_without_blame(kube, sim_namespace, "deleted", "WorkloadDeleted", timeout=90)
    assert "WorkloadDeleted" in event_reasons(kube, sim_namespace, "Job")


@pytest.mark.slow
def test_ten_kills_at_random_moments_leave_exactly_the_expected_objects(simcluster, sim_namespace, kube, tmp_path):
    import random

    nodes = simcluster.add_nodes(profile="h100", count=5, prefix=f"{sim_namespace}-ten")
    runner = ControllerProcess(simcluster.kubeconfig, sim_namespace, tmp_path / "controller.log")
    moments = random.Random(20261202)
    kills = 0
    try:
        runner.start()
        kube.create(
            certification(
                sim_namespace,
                "tenfold",
                nodes,
                [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"nodesPerJob": 1, "maxConcurrent": 1}}],
            )
        )
        while kills < 10:
            time.sleep(moments.uniform(0.5, 3.0))
            if lifecycle_of(kube, CERTIFICATIONS, "tenfold", sim_namespace)[0] in ("Succeeded", "Failed"):
                break
            runner.kill()
            kills += 1
            runner.start()
        life, reason, _ = wait_terminal(kube, CERTIFICATIONS, "tenfold", sim_namespace, timeout=240)
    finally:
        runner.kill()
    log_tail = (tmp_path / "controller.log").read_text()[-3000:]
    assert kills >= 5, f"the run ended before the controller was killed often enough ({kills})"
    assert (life, reason) == ("Succeeded", "AllWorkflowsSucceeded"), log_tail
    (workflow_name,) = names(kube, WORKFLOWS, sim_namespace)
    groups = kube.get(WORKFLOWS, workflow_name, sim_namespace)["status"]["orchestration"]["groups"]
    assert [(g["name"], g["phase"]) for g in groups] == [(f"group-{i}", "Succeeded") for i in range(5)]
    expected_jobs = sorted(g["jobRef"]["name"] for g in groups)
    assert names(kube, JOBS, sim_namespace) == expected_jobs, "no duplicate or orphaned Jobs"
    workloads = sorted(kube.get(JOBS, j, sim_namespace)["status"]["workloadRef"]["name"] for j in expected_jobs)
    assert names(kube, TRAINJOBS, sim_namespace) == workloads
    assert sorted(b["spec"]["jobRef"]["name"] for b in kube.list(BANDWIDTH_MEASUREMENTS, sim_namespace).items) == expected_jobs
