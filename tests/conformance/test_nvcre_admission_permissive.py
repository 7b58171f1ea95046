"""Objects NVCRE's CRDs admit are admitted here too, unchanged, and the runtime reads them right.

NVCRE (api/v1alpha1 in github.com/NVIDIA/cluster-readiness-engine) types the Workflow's
``execution.timeoutPerJob`` and ``validation.performance.measurementTimeout``, the Job's
``measurementTimeout`` and every ``sampleInterval`` as ``metav1.Duration``: any Go duration,
``1.5h`` or ``1500ms`` included. A WorkloadRun's ``orchestration.timeoutPerJob`` is a plain
string the controller parses as a Go duration. ``nodeHealthMonitor.cel`` is optional (a Job
without it checks no node), ``when.topology.mode`` and ``mpi.mpiImplementation`` are free
strings, and a Job template's ``metadata`` is object metadata. What stays refused: a negative or
malformed duration, and a Certification option outside NVCRE's own pattern for it
(``^([0-9]+(h|m|s|ms))+$``, which NVCRE puts on the Certification's two duration options).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.api import validate
from nvcre.runtime.clock import Clock
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.runtime.reconcile.workflow import WorkflowReconciler

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "api"


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("status", None)
    return dict(data)


def _problems(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(d.path, d.message) for d in validate(document)]


def _workflow() -> dict[str, Any]:
    workflow = _load(FIXTURES / "workflow-overrides.yaml")
    assert _problems(workflow) == []
    return workflow


def test_a_workflow_with_any_go_duration_is_admitted() -> None:
    workflow = _workflow()
    spec = workflow["spec"]
    spec["orchestration"]["execution"]["timeoutPerJob"] = "1.5h"
    spec["validation"]["performance"]["measurementTimeout"] = "2.5m"
    spec["jobTemplate"]["spec"]["measurementTimeout"] = "90.5s"
    spec["jobTemplate"]["spec"]["goodputMeasurement"]["sampleInterval"] = "1500ms"
    assert _problems(workflow) == []


@pytest.mark.parametrize("text", ["1.5h", "1h30m", "1500ms", "250us", "250µs", "999ns", ".5h", "0", "+5m", "1h0m0.5s"])
def test_every_duration_form_go_parses_is_admitted_on_a_job(text: str) -> None:
    job = _load(FIXTURES / "job-with-status.yaml")
    job["spec"]["measurementTimeout"] = text
    job["spec"]["bandwidthMeasurement"]["sampleInterval"] = text
    assert _problems(job) == []


@pytest.mark.parametrize("text", ["-1h", "1.5hours", "1h 30m", "h", "1", "1e3s", "--1s"])
def test_negative_or_malformed_durations_stay_refused(text: str) -> None:
    workflow = _workflow()
    workflow["spec"]["orchestration"]["execution"]["timeoutPerJob"] = text
    assert [p for p, _ in _problems(workflow)] == ["spec.orchestration.execution.timeoutPerJob"]


def test_a_certification_keeps_nvcres_own_duration_pattern() -> None:
    cert = _load(FIXTURES / "certification-multi-category.yaml")
    cert["spec"]["timeoutPerJob"] = "1.5h"
    assert [p for p, _ in _problems(cert)] == ["spec.timeoutPerJob"]
    cert["spec"]["timeoutPerJob"] = "90m"
    assert _problems(cert) == []


def test_a_workloadrun_with_a_fractional_timeout_and_another_mpi_is_admitted() -> None:
    run = _load(REPO / "examples" / "workloadrun-nccl-all-reduce.yaml")
    run["spec"]["orchestration"]["timeoutPerJob"] = "1.5h"
    run["spec"]["framework"]["mpi"]["mpiImplementation"] = "MPICH"
    run["spec"]["bandwidthMeasurement"]["sampleInterval"] = "2.5s"
    assert _problems(run) == []


def test_a_job_without_a_health_expression_is_admitted() -> None:
    job = _load(FIXTURES / "job-with-status.yaml")
    job["spec"]["nodeHealthMonitor"] = {}
    assert _problems(job) == []


def test_free_topology_modes_and_template_object_metadata_are_admitted() -> None:
    workflow = _workflow()
    workflow["spec"]["overrides"][1]["when"]["topology"]["mode"] = "multi-pod"
    workflow["spec"]["jobTemplate"]["metadata"].update({"name": "ignored", "namespace": "elsewhere", "finalizers": ["x.example.com/keep"]})
    assert _problems(workflow) == []
    workflow["spec"]["jobTemplate"]["metadata"]["bogus"] = 1
    assert [p for p, _ in _problems(workflow)] == ["spec.jobTemplate.metadata.bogus"]


def test_an_update_cannot_add_a_health_monitor_that_was_absent() -> None:
    old = _load(FIXTURES / "job-with-status.yaml")
    new = copy.deepcopy(old)
    new["spec"]["nodeHealthMonitor"] = {}
    assert "spec" in {d.path for d in validate(new, old=old)}


# --- the runtime reads what is newly admitted --------------------------------------------------


class _Clock(Clock):
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


def _timed_out(timeout: str, elapsed: timedelta) -> str:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ctx = Context(kube=None, stores={"pods": Store()}, clock=_Clock(start + elapsed))  # type: ignore[arg-type]
    reconciler = WorkflowReconciler(ctx, JobReconciler(ctx))
    workflow = {"spec": {"orchestration": {"execution": {"timeoutPerJob": timeout}}}}
    job = {"status": {"workloadStartTime": "2026-01-01T00:00:00Z", "workloadRef": {"name": "w"}}}
    return reconciler._timed_out(workflow, {}, job)


def test_a_fractional_timeout_per_job_times_a_job_out_after_its_length() -> None:
    assert _timed_out("1.5h", timedelta(minutes=89, seconds=59)) == ""
    assert _timed_out("1.5h", timedelta(minutes=90, seconds=1)) == "Job exceeded timeoutPerJob"
    assert _timed_out("2500ms", timedelta(seconds=2)) == ""
    assert _timed_out("2500ms", timedelta(seconds=3)) == "Job exceeded timeoutPerJob"


def _expanded_job(template: dict[str, Any]) -> dict[str, Any]:
    """The Job the controller makes from a Workflow whose template is ``template``."""
    from nvcre.compiler.expand import expand_job
    from nvcre.compiler.plan import Plan, PlannedGroup

    pod = {"containers": [{"name": "node", "image": "img"}]}
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt"},
        "spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": pod}}}}]}}},
    }
    workflow = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "burn", "uid": "5f0c1a2b-0000-4000-8000-000000000001"},
        "spec": {"jobTemplate": template, "dependencies": [runtime], "orchestration": {}},
    }
    group = PlannedGroup("group-0", ("n1", "n2"))
    plan = Plan(
        groups=(group,),
        nodes_per_job=2,
        target_nodes=("n1", "n2"),
        excluded_nodes=(),
        exclusion_reason="",
        placement="Pinned",
        gpu_products=(),
        health_monitor_cleared=False,
        events=(),
        message="",
        iterations=1,
    )
    return dict(expand_job(workflow, plan, group, 1, check_purity=True))


def test_a_template_without_a_health_expression_gets_the_default_and_its_metadata_is_the_controllers() -> None:
    template = {
        "metadata": {"name": "ignored", "namespace": "elsewhere", "finalizers": ["x.example.com/keep"], "labels": {"team": "a"}},
        "spec": {
            "nodeHealthMonitor": {},
            "workload": {"trainJob": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "rt"}}},
        },
    }
    job = _expanded_job(template)
    assert job["spec"]["nodeHealthMonitor"] == {"cel": {"expression": "node.spec.unschedulable == true"}}
    meta = job["metadata"]
    assert (meta["name"], meta["namespace"], meta["finalizers"]) == ("wf-job", "burn", ["nvcre.nvidia.com/finalizer"])
    assert meta["labels"]["team"] == "a"
