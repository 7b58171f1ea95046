"""The gang-scheduling contract, offline: what a Workflow spec after overrides must keep.

Hand-built specs in the shape the compiler renders (a TrainJob under the Workflow's job template,
its TrainingRuntime shipped in ``spec.dependencies``); the conformance suite runs the same check
on real renders.
"""

from __future__ import annotations

import copy
from typing import Any

from nvcre.runtime.judge.gang_contract import check_gang_contract

QUEUE_KEY = "kai.scheduler/queue"
INTENT = {"schedulerName": "kai-scheduler", "queue": "team-a", "queueLabelKey": QUEUE_KEY}


def _runtime(job_queue: str | None = "team-a", pod_queue: str | None = "team-a", scheduler: str | None = "kai-scheduler") -> dict[str, Any]:
    job_labels = {QUEUE_KEY: job_queue} if job_queue is not None else {}
    pod_labels = {QUEUE_KEY: pod_queue} if pod_queue is not None else {}
    pod_spec = {"schedulerName": scheduler} if scheduler is not None else {}
    node = {
        "name": "node",
        "template": {"metadata": {"labels": job_labels}, "spec": {"template": {"metadata": {"labels": pod_labels}, "spec": pod_spec}}},
    }
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt"},
        "spec": {"template": {"spec": {"replicatedJobs": [node]}}},
    }


def _spec(runtime: dict[str, Any] | None = None, workload_queue: str | None = "team-a", patches: list[Any] | None = None) -> dict[str, Any]:
    train_job: dict[str, Any] = {"runtimeRef": {"name": "rt", "apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime"}}
    if patches is not None:
        train_job["runtimePatches"] = patches
    labels = {QUEUE_KEY: workload_queue} if workload_queue is not None else {}
    return {
        "gangScheduler": dict(INTENT),
        "dependencies": [runtime if runtime is not None else _runtime()],
        "jobTemplate": {"spec": {"workloadMetadata": {"labels": labels}, "workload": {"trainJob": train_job}}},
    }


def _stored(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": spec}


def test_a_spec_that_keeps_the_contract_has_no_problem_and_is_used_as_it_is() -> None:
    spec = _spec()
    check = check_gang_contract(_stored(spec), spec)
    assert (check.problems, check.restored, check.spec) == ((), False, spec)


def test_a_workflow_without_gang_settings_is_left_alone() -> None:
    spec = _spec(_runtime(job_queue=None, pod_queue="other", scheduler=None))
    del spec["gangScheduler"]
    assert check_gang_contract(_stored(spec), None).problems == ()


def test_a_removed_workload_label_comes_back_in_the_working_copy_only() -> None:
    effective = _spec(workload_queue=None)
    before = copy.deepcopy(effective)
    check = check_gang_contract(_stored(_spec()), effective)
    assert check.problems == () and check.restored
    assert check.spec["jobTemplate"]["spec"]["workloadMetadata"]["labels"] == {QUEUE_KEY: "team-a"}
    assert effective == before


def test_a_changed_workload_label_is_a_conflict_naming_its_path() -> None:
    check = check_gang_contract(_stored(_spec()), _spec(workload_queue="team-b"))
    assert (
        check.message
        == 'spec.jobTemplate.spec.workloadMetadata.labels["kai.scheduler/queue"]: conflicting label value "team-b", expected "team-a"'
    )
    assert not check.restored


def test_a_runtime_patch_is_folded_over_the_runtime_before_it_is_judged() -> None:
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
    check = check_gang_contract(_stored(_spec()), _spec(patches=[patch]))
    assert check.problems == (
        'gangScheduler is configured with schedulerName "kai-scheduler" but TrainingRuntime "rt" replicatedJob "node" '
        'sets "default-scheduler" on template.spec.template.spec',
    )


def test_every_missing_or_different_runtime_value_is_its_own_problem() -> None:
    check = check_gang_contract(_stored(_spec()), _spec(_runtime(job_queue=None, pod_queue="team-b", scheduler=None)))
    assert len(check.problems) == 3
    assert 'has no label "kai.scheduler/queue" on template.metadata.labels' in check.problems[0]
    assert 'sets label "kai.scheduler/queue" to "team-b" on template.spec.template.metadata.labels' in check.problems[1]
    assert "sets no schedulerName on template.spec.template.spec" in check.problems[2]


def test_a_trainjob_without_a_shipped_runtime_cannot_keep_the_contract() -> None:
    spec = _spec()
    spec["dependencies"] = []
    (problem,) = check_gang_contract(_stored(spec), spec).problems
    assert problem == "gangScheduler is configured but no TrainingRuntime named 'rt' in spec.dependencies"
