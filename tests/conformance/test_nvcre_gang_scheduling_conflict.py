"""A Workflow whose gang settings no longer agree after its overrides fails ``GangSchedulingConflict``.

NVCRE (docs/reference/crds/workflow.md and api/v1alpha1/condition_reasons.go in
github.com/NVIDIA/cluster-readiness-engine): ``spec.gangScheduler`` is a consistency contract.
After every matching override and before any dependency or Job is created, the effective
manifests are checked against it: a changed workload queue label fails with
``spec.jobTemplate.spec.workloadMetadata.labels["<key>"]: conflicting label value "<v>",
expected "<queue>"``; a removed one is put back on the generated Job only; a runtime Job or pod
template label that differs fails with ``gangScheduler is configured with queue "<q>" but
TrainingRuntime "<rt>" replicatedJob "<job>" sets label "<key>" to "<v>" on
template.metadata.labels``, never repaired. The check runs again before each later group.
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.runtime import compile as compiler
from nvcre.runtime.clock import Clock
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge.gang_contract import check_gang_contract
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.runtime.reconcile.workflow import WorkflowReconciler

REPO = Path(__file__).resolve().parent.parent.parent
NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
KEY = "kai.scheduler/queue"


class _Clock(Clock):
    def now(self) -> datetime:
        return NOW


class _Kube:
    """Records Events and refuses to create anything: no child may exist on a conflict."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.created: list[dict[str, Any]] = []

    def emit_event(self, involved: Any, *, type: str, reason: str, message: str, component: str) -> None:
        self.events.append((type, reason, message))

    def create(self, resource: Any, obj: Any, *args: Any, **kwargs: Any) -> Any:
        self.created.append(obj)
        raise AssertionError(f"a child was created: {obj.get('kind')} {obj.get('metadata', {}).get('name')}")


def _node(name: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"nvidia.com/gpu": "8"}},
    }


def _replicated_job(queue: str) -> dict[str, Any]:
    pod = {"schedulerName": "kai-scheduler", "containers": [{"name": "node", "image": "nvcr.io/nvidia/pytorch:26.01-py3"}]}
    return {
        "name": "node",
        "template": {
            "metadata": {"labels": {KEY: queue}},
            "spec": {"template": {"metadata": {"labels": {KEY: queue}}, "spec": pod}},
        },
    }


def _workflow(overrides: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "nccl-runtime"},
        "spec": {"template": {"spec": {"replicatedJobs": [_replicated_job("team-a")]}}},
    }
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "wf", "namespace": "burn", "uid": "5f0c1a2b-0000-4000-8000-000000000001", "generation": 1},
        "spec": {
            "gangScheduler": {"schedulerName": "kai-scheduler", "queue": "team-a", "queueLabelKey": KEY},
            "jobTemplate": {
                "spec": {
                    "workloadMetadata": {"labels": {KEY: "team-a"}},
                    "workload": {
                        "trainJob": {
                            "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "nccl-runtime"},
                            "trainer": {"numNodes": 2},
                        }
                    },
                }
            },
            "dependencies": [runtime],
            "orchestration": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}},
            "overrides": overrides or [],
        },
    }


def _on_every_platform(**change: Any) -> dict[str, Any]:
    return {"when": {"platform": {"notIn": ["no-such-platform"]}}, **change}


def _relabel_workload(queue: str) -> dict[str, Any]:
    return _on_every_platform(jobTemplate={"spec": {"workloadMetadata": {"labels": {KEY: queue}}}})


def _relabel_runtime(queue: str) -> dict[str, Any]:
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "nccl-runtime"},
        "spec": {"template": {"spec": {"replicatedJobs": [_replicated_job(queue)]}}},
    }
    return _on_every_platform(dependencies=[runtime])


class _Harness:
    def __init__(self) -> None:
        self.kube = _Kube()
        self.ctx = Context(kube=self.kube, stores={"nodes": Store(), "resourceslices": Store()}, clock=_Clock())  # type: ignore[arg-type]
        self.reconciler = WorkflowReconciler(self.ctx, JobReconciler(self.ctx))
        self.written: list[dict[str, Any]] = []
        facts = compiler.cluster_facts([_node("n0"), _node("n1")], [])
        self.reconciler.facts = lambda: facts  # type: ignore[method-assign]
        self.reconciler._write = lambda wf, status: self.written.append(copy.deepcopy(status))  # type: ignore[method-assign]

    def partition(self, wf: dict[str, Any]) -> dict[str, Any]:
        status: dict[str, Any] = {}
        self.reconciler._partition(wf, status)
        return self.written[-1]


def _failed(status: dict[str, Any]) -> tuple[str, str]:
    assert cond.lifecycle(status) == cond.FAILED, status
    failed = cond.condition(status, cond.FAILED)
    return failed["reason"], failed["message"]


def test_an_override_that_changes_the_workload_queue_label_fails_before_anything_is_made() -> None:
    harness = _Harness()
    status = harness.partition(_workflow([_relabel_workload("team-b")]))
    assert _failed(status) == (
        "GangSchedulingConflict",
        'spec.jobTemplate.spec.workloadMetadata.labels["kai.scheduler/queue"]: conflicting label value "team-b", expected "team-a"',
    )
    assert "orchestration" not in status and harness.kube.created == []
    assert ("Warning", "GangSchedulingConflict", _failed(status)[1]) in harness.kube.events


def test_an_override_that_changes_a_runtime_queue_label_fails_and_is_not_repaired() -> None:
    harness = _Harness()
    status = harness.partition(_workflow([_relabel_runtime("team-b")]))
    reason, message = _failed(status)
    assert reason == "GangSchedulingConflict"
    assert message.split("; ") == [
        'gangScheduler is configured with queue "team-a" but TrainingRuntime "nccl-runtime" replicatedJob "node" '
        'sets label "kai.scheduler/queue" to "team-b" on template.metadata.labels',
        'gangScheduler is configured with queue "team-a" but TrainingRuntime "nccl-runtime" replicatedJob "node" '
        'sets label "kai.scheduler/queue" to "team-b" on template.spec.template.metadata.labels',
    ]


def test_a_runtime_patch_that_changes_the_pod_scheduler_fails() -> None:
    patch = {
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {"schedulerName": "default-scheduler"}}}}}
                    ]
                }
            }
        }
    }
    override = _on_every_platform(jobTemplate={"spec": {"workload": {"trainJob": {"runtimePatches": [patch]}}}})
    reason, message = _failed(_Harness().partition(_workflow([override])))
    assert reason == "GangSchedulingConflict"
    assert 'schedulerName "kai-scheduler"' in message and '"default-scheduler"' in message


def test_an_override_that_repoints_the_runtime_outside_the_dependencies_fails() -> None:
    override = _on_every_platform(jobTemplate={"spec": {"workload": {"trainJob": {"runtimeRef": {"name": "elsewhere"}}}}})
    reason, message = _failed(_Harness().partition(_workflow([override])))
    assert reason == "GangSchedulingConflict" and "'elsewhere'" in message


def test_unrelated_overrides_and_a_removed_workload_label_are_accepted() -> None:
    removal = _on_every_platform(jobTemplatePatch=[{"op": "remove", "path": "/spec/workloadMetadata/labels/kai.scheduler~1queue"}])
    harness = _Harness()
    status = harness.partition(_workflow([removal]))
    assert cond.condition(status, cond.IN_PROGRESS)["reason"] == "GroupsPartitioned"
    plan = compiler.plan_workflow(_workflow([removal]), compiler.cluster_facts([_node("n0"), _node("n1")], []))
    assert KEY not in (plan.workflow_spec or {})["jobTemplate"]["spec"]["workloadMetadata"]["labels"]
    check = check_gang_contract(_workflow([removal]), plan.workflow_spec)
    assert check.problems == () and check.restored
    assert check.spec["jobTemplate"]["spec"]["workloadMetadata"]["labels"][KEY] == "team-a"
    # the generated Job carries it again; the stored Workflow is left as it was
    from nvcre.compiler.expand import expand_job

    stored = _workflow([removal])
    job = expand_job(stored, dataclasses.replace(plan, workflow_spec=check.spec), plan.groups[0], 1)
    assert job["spec"]["workloadMetadata"]["labels"][KEY] == "team-a"
    assert stored == _workflow([removal])


def test_the_check_runs_again_before_a_later_group_is_launched() -> None:
    harness = _Harness()
    wf = _workflow()
    status = harness.partition(wf)
    assert cond.condition(status, cond.IN_PROGRESS)["reason"] == "GroupsPartitioned"
    later = _workflow([_relabel_workload("team-c")])  # overrides stay editable after the partition
    harness.reconciler._launch_pending(later, status)
    reason, message = _failed(status)
    assert reason == "GangSchedulingConflict" and 'conflicting label value "team-c"' in message
    assert harness.kube.created == []


def test_a_workflow_without_gang_settings_is_not_checked() -> None:
    wf = _workflow([_relabel_runtime("team-b")])
    del wf["spec"]["gangScheduler"]
    status = _Harness().partition(wf)
    assert cond.condition(status, cond.IN_PROGRESS)["reason"] == "GroupsPartitioned"


GANG_GOLDENS = sorted(
    p
    for folder in ("render", "workloadrun")
    for p in (REPO / "golden" / folder).glob("*/expected.yaml")
    if "gangScheduler:" in p.read_text(encoding="utf-8")
)


def test_the_rendered_gang_goldens_are_found() -> None:
    assert len(GANG_GOLDENS) >= 4


@pytest.mark.parametrize("golden", GANG_GOLDENS, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
def test_every_rendered_gang_workflow_keeps_its_own_contract(golden: Path) -> None:
    for document in yaml.safe_load_all(golden.read_text(encoding="utf-8")):
        if isinstance(document, dict) and document.get("kind") == "Workflow":
            assert check_gang_contract(document, document.get("spec")).problems == ()
