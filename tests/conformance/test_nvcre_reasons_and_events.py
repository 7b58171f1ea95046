"""Condition reasons and Events as NVCRE's controllers write them.

From NVCRE's controllers (pkg/controller in github.com/NVIDIA/cluster-readiness-engine):

- a WorkloadRun fails ``WorkflowValidationFailed`` only when its Workflow failed for its
  thresholds alone (the Workflow's Failed reason ``JobValidationFailed``); a mixed hardware and
  threshold failure keeps ``WorkflowFailed`` (hardware takes precedence), while
  ``ValidationFailed=True/ThresholdViolation`` is mirrored either way;
- a WorkloadRun whose build fails and whose Failed condition cannot be written either gets the
  Warning ``BuildFailedStatusUpdateFailed`` naming both errors;
- ``NICResourceDetection`` is an Event only when detection chose no NIC resource; the GKE and
  TCPXO detection Warnings belong to the Certification tier;
- each controller reports its Events under its own name (``job-controller``,
  ``workflow-controller``, ``certification-controller``, ``workloadrun-controller``...); the
  events.k8s.io recorder's ``series`` on a repeated Event is ``test_nvcre_event_series.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from nvcre.compiler.detect.nics import detect_nic_resource
from nvcre.compiler.diagnostics import warning
from nvcre.compiler.vocabulary import WORKLOADRUN_FINALIZER
from nvcre.runtime.clock import Clock
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.errors import ApiError, NotFound
from nvcre.runtime.kube.events import event_body
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.runtime.reconcile.render_events import tier_render_events
from nvcre.runtime.reconcile.workloadrun import WorkloadRunReconciler

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class _Clock(Clock):
    def now(self) -> datetime:
        return NOW


class _Kube:
    """The client seam over one WorkloadRun and, optionally, its Workflow."""

    def __init__(self, run: dict[str, Any], workflow: dict[str, Any] | None = None, *, refuse_status: bool = False) -> None:
        self.run, self.workflow, self.refuse_status = run, workflow, refuse_status
        self.events: list[tuple[str, str, str]] = []

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        if resource.kind == "WorkloadRun" and name == self.run["metadata"]["name"]:
            return self.run
        if resource.kind == "Workflow" and self.workflow is not None and name == self.workflow["metadata"]["name"]:
            return self.workflow
        raise NotFound(404, "NotFound", name)

    def write_status(self, resource: Any, obj: Any, mutate: Any) -> dict[str, Any] | None:
        if self.refuse_status:
            raise ApiError(503, "ServiceUnavailable", "etcd is unavailable")
        new = mutate(dict(self.run.get("status") or {}), self.run)
        if new is None:
            return None
        self.run = {**self.run, "status": new}
        return self.run

    def emit_event(self, involved: Any, *, type: str, reason: str, message: str, component: str) -> None:
        self.events.append((type, reason, message))


def _run(spec_extra: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {
        "image": "nvcr.io/nvidia/pytorch:26.01-py3",
        "numNodes": 2,
        "framework": {"mpi": {"binary": "/bin/all_reduce_perf_mpi", "mpirunPath": "/usr/local/mpi/bin/mpirun"}},
        **(spec_extra or {}),
    }
    run = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "WorkloadRun",
        "metadata": {"name": "adhoc", "namespace": "ns", "uid": "u-1", "finalizers": [WORKLOADRUN_FINALIZER], "resourceVersion": "1"},
        "spec": spec,
    }
    if status is not None:
        run["status"] = status
    return run


def _workflow(failed_reason: str, validation: bool) -> dict[str, Any]:
    conditions = [
        {
            "type": "Failed",
            "status": "True",
            "reason": failed_reason,
            "message": "1 of 2 groups failed",
            "lastTransitionTime": "2026-03-01T11:00:00Z",
        }
    ]
    if validation:
        conditions.append(
            {
                "type": "ValidationFailed",
                "status": "True",
                "reason": "JobValidationFailed",
                "message": "busBandwidthGBps below 400",
                "lastTransitionTime": "2026-03-01T11:00:00Z",
            }
        )
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "adhoc", "namespace": "ns"},
        "status": {"conditions": conditions},
    }


def _reconcile(kube: _Kube) -> None:
    stores = {"nodes": Store(), "resourceslices": Store()}
    ctx = Context(kube=kube, stores=stores, clock=_Clock(), settings=Settings())  # type: ignore[arg-type]
    WorkloadRunReconciler(ctx).reconcile("ns", "adhoc")


def _failed(kube: _Kube) -> tuple[str, str]:
    failed = cond.condition(kube.run["status"], cond.FAILED) or {}
    return str(failed.get("status")), str(failed.get("reason"))


@pytest.mark.parametrize(
    ("workflow_reason", "run_reason"),
    [("JobHardwareFailed", "WorkflowFailed"), ("JobValidationFailed", "WorkflowValidationFailed")],
)
def test_the_workloadrun_failed_reason_follows_the_workflows_failed_reason(workflow_reason: str, run_reason: str) -> None:
    running = {"workflowRef": {"name": "adhoc", "namespace": "ns"}}
    kube = _Kube(_run(status=running), _workflow(workflow_reason, validation=True))
    _reconcile(kube)
    assert _failed(kube) == ("True", run_reason)
    validation = cond.condition(kube.run["status"], cond.VALIDATION_FAILED) or {}
    assert (validation.get("status"), validation.get("reason")) == ("True", "ThresholdViolation")
    assert validation.get("message") == "busBandwidthGBps below 400"


def test_a_build_failure_that_cannot_be_recorded_is_a_build_failed_status_update_failed_warning() -> None:
    # no node matches the target (the cluster has none): the build fails
    kube = _Kube(_run(), refuse_status=True)
    with pytest.raises(ApiError):
        _reconcile(kube)
    ((type_, reason, message),) = kube.events
    assert (type_, reason) == ("Warning", "BuildFailedStatusUpdateFailed")
    assert message.startswith("WorkloadRun build failed: ") and "NoTargetNodes" in message
    assert message.endswith("recording the WorkloadRun Failed condition also failed: 503 ServiceUnavailable: etcd is unavailable")


def test_a_build_failure_that_is_recorded_is_only_the_failed_transition() -> None:
    kube = _Kube(_run())
    _reconcile(kube)
    assert _failed(kube)[0] == "True"
    assert [reason for _, reason, _ in kube.events] == [_failed(kube)[1]]


def _node(name: str, allocatable: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def test_nic_detection_is_an_event_only_when_it_chose_nothing() -> None:
    found = [_node("a", {"rdma/ib": "8"}), _node("b", {"rdma/ib": "8"})]
    _, chosen = detect_nic_resource(found, platform="onprem", gpu_arch="gb200", mlnx_per_node=4)
    _, none = detect_nic_resource([_node("a", {}), _node("b", {})], platform="onprem", gpu_arch="gb200", mlnx_per_node=4)
    two = [_node(n, {"rdma/ib": "8", "nvidia.com/mlnxnics": "8"}) for n in ("a", "b")]
    _, ambiguous = detect_nic_resource(two, platform="onprem", gpu_arch="gb200", mlnx_per_node=4)
    assert chosen and none and ambiguous
    for kind in ("Certification", "WorkloadRun"):
        assert tier_render_events(kind, chosen) == []
        assert [r for _, r, _ in tier_render_events(kind, none + ambiguous)] == ["NICResourceDetection", "NICResourceDetection"]


def test_gke_and_tcpxo_warnings_are_the_certification_tiers() -> None:
    notes = [
        warning("GKENetworkDetection", "spec", "GKE network names not detected"),
        warning("TCPXOPluginDetection", "spec", "TCPXO plugin not detected"),
        warning("GPUArchitectureDefaults", "spec", 'GPU architecture "x1" has no entry'),
    ]
    assert [r for _, r, _ in tier_render_events("Certification", notes)] == [
        "GKENetworkDetection",
        "TCPXOPluginDetection",
        "GPUArchitectureDefaults",
    ]
    assert [r for _, r, _ in tier_render_events("WorkloadRun", notes)] == ["GPUArchitectureDefaults"]


@pytest.mark.parametrize(
    ("kind", "controller"),
    [
        ("Job", "job-controller"),
        ("Workflow", "workflow-controller"),
        ("Certification", "certification-controller"),
        ("WorkloadRun", "workloadrun-controller"),
        ("GoodputMeasurement", "goodputmeasurement-controller"),
        ("BandwidthMeasurement", "bandwidthmeasurement-controller"),
    ],
)
def test_each_controller_reports_its_events_under_its_own_name(kind: str, controller: str) -> None:
    obj = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": kind, "metadata": {"name": "x", "namespace": "ns", "uid": "u"}}
    body = event_body(obj, type="Normal", reason="R", message="m", component="nvcre-controller", instance="")
    assert (body["reportingController"], body["reportingInstance"]) == (controller, controller)
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"}}
    assert (
        event_body(pv, type="Normal", reason="R", message="m", component="nvcre-controller", instance="")["reportingController"]
        == "nvcre-controller"
    )
