"""Checkpoint restarts end to end on the simulated GPU cluster.

A Nemotron training category with ``enableCheckpoint`` runs on two simulated H100 nodes. The
checkpoint claim is bound to a PersistentVolume the test provides (as a cluster's shared file
system would), the workload player remembers what each attempt saved on that claim, and a
``crash-once`` node crashes only the first attempt. The controller runs in-process, scoped to
the test's namespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from nvcre.runtime.controller import Controller
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.resources import CERTIFICATIONS, EVENTS, GOODPUT_MEASUREMENTS, JOBS, WORKFLOWS, Resource
from tests.integration.integration_helpers import eventually, fast_settings, scoped_controller

pytestmark = [pytest.mark.integration, pytest.mark.sim]

PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume")
FAST = fast_settings(max_sample_interval=1.0)


@pytest.fixture
def controller(kube, sim_namespace) -> Iterator[Controller]:
    with scoped_controller(kube, sim_namespace, FAST) as ctl:
        yield ctl


@pytest.fixture
def shared_volume(kube, sim_namespace) -> Iterator[str]:
    """A ReadWriteMany volume the checkpoint claim binds to (no storage class, like the claim)."""
    name = f"{sim_namespace}-checkpoints"
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "10Ti"},
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "hostPath": {"path": f"/srv/{name}"},
            },
        }
    )
    try:
        yield name
    finally:
        try:
            kube.delete(PERSISTENT_VOLUMES, name)
        except NotFound:
            pass


def training_certification(namespace: str, name: str, nodes: list[str], **options: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            # The simulated GPU nodes carry the GPU taint; the training entries do not tolerate it.
            "target": {"nodeNames": nodes, "taintSelectors": [{"key": "nvidia.com/gpu"}]},
            "timeoutPerJob": "4m",
            "categories": [
                {
                    "domain": "training",
                    "variant": "nemotron5-8b",
                    "options": {
                        "nodesPerJob": 2,
                        "maxSteps": 30,
                        "enableCheckpoint": True,
                        # Megatron's --save-interval: a checkpoint every 50 iterations.
                        "env": [{"name": "SAVE_INTERVAL", "value": "50"}],
                        **options,
                    },
                }
            ],
        },
    }


def wait_terminal(kube, resource, name: str, namespace: str, timeout: float) -> tuple[str | None, str]:
    def done():
        status = kube.get(resource, name, namespace).get("status") or {}
        life = cond.lifecycle(status)
        if life in (cond.SUCCEEDED, cond.FAILED):
            return life, str((cond.condition(status, life) or {}).get("reason") or "")
        return None

    return eventually(done, timeout=timeout, what=f"{resource.kind} {name} to finish")


def job_events(kube, namespace: str, job: str) -> list[tuple[str, str, str]]:
    """Every occurrence of the Job's Events: a repeat folded into an Event's series counts as many times."""
    return [
        (str(e.get("type")), str(e.get("reason")), str(e.get("message") or e.get("note") or ""))
        for e in kube.list(EVENTS, namespace).items
        if (e.get("involvedObject") or e.get("regarding") or {}).get("name") == job
        for _ in range(int((e.get("series") or {}).get("count") or e.get("count") or 1))
    ]


def describe(kube, namespace: str) -> str:
    """The Jobs' status, the goodput measurements and the events: the story of a failed run."""
    lines = []
    for job in kube.list(JOBS, namespace).items:
        lines.append(f"job {job['metadata']['name']}: {job.get('status')}")
    for goodput in kube.list(GOODPUT_MEASUREMENTS, namespace).items:
        lines.append(f"goodput {goodput['metadata'].get('annotations')}: {goodput.get('status')}")
    for event in kube.list(EVENTS, namespace).items:
        lines.append(f"event {(event.get('involvedObject') or {}).get('kind')} {event.get('reason')}: {event.get('message')}")
    return "\n".join(lines)


def the_job(kube, namespace: str) -> dict[str, Any]:
    (job,) = kube.list(JOBS, namespace).items
    return job


def test_a_crash_with_checkpoints_on_resumes_and_completes(simcluster, sim_namespace, kube, controller, shared_volume):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-once")
    flaky = nodes[1]
    simcluster.set_fault(flaky, "crash-once")
    kube.create(training_certification(sim_namespace, "resumes", nodes))

    outcome = wait_terminal(kube, CERTIFICATIONS, "resumes", sim_namespace, timeout=300)
    assert outcome[0] == "Succeeded", describe(kube, sim_namespace)
    cert = kube.get(CERTIFICATIONS, "resumes", sim_namespace)
    assert [c["status"] for c in cert["status"]["categoryStatuses"]] == ["Succeeded"]

    job = the_job(kube, sim_namespace)
    name = job["metadata"]["name"]
    status = job["status"]
    assert status["restartCount"] == 1
    assert cond.condition(status, cond.SUCCEEDED)["reason"] == "WorkloadCompleted"
    assert not status.get("failedNodes"), "a restart that recovered blames no node"
    events = job_events(kube, sim_namespace, name)
    assert ("Normal", "WorkloadRestarting", "Restarting workload from checkpoint (restart 1/3)") in events
    (attempt,) = [m for t, r, m in events if r == "WorkloadAttemptFailed"]
    # The crashed rank leaves its peers hung: the Job tier ends the attempt on the stall, or, when
    # a loaded machine lets the container's restarts fail first, on the container's failures. Either
    # way the attempt is ended, names a node, and the next one resumes.
    assert attempt.startswith(("Attempt 1 failed: Workload stalled: ", "Attempt 1 failed: Workload TrainJob/")), attempt
    assert any(f"on node {n} " in attempt for n in nodes), attempt

    # The second attempt loaded the checkpoint the first one saved at iteration 100.
    played = [d for key, d in simcluster.player.decisions.items() if key.startswith(f"{sim_namespace}/")]
    saved = {i for d in played for i, _ in d.saves}
    resumed = [d for d in played if d.resumed_from]
    assert resumed, "a later attempt resumed from the checkpoint claim"
    for decision in resumed:
        assert decision.resumed_from in saved
        iterations = [int(m.group(1)) for line in decision.lines if (m := re.search(r"\] iteration\s+(\d+)/", line.text))]
        assert not iterations or iterations[0] == decision.resumed_from + 10, "steps go on after the loaded iteration"
    assert any(
        f"successfully loaded checkpoint from /mnt/workspace/checkpoints [ t 1/1, p 1/1 ] at iteration {d.resumed_from}" in line.text
        for d in resumed
        for line in d.lines
    ), "the first pod of a resumed run logs Megatron's load lines"
    assert any(d.crash_once_taken == (flaky,) for d in played), "the first attempt took the crash-once fault"

    goodput = kube.get(GOODPUT_MEASUREMENTS, f"{name}-goodput", sim_namespace)["status"]
    assert cond.condition(goodput, "Complete")["reason"] == "JobSucceeded"
    assert goodput["interruptionCount"] == 1
    assert "pendingInterruption" not in goodput
    assert goodput["highestStep"] == 200 and goodput["lastCheckpointStep"] == 200
    ratio = float(goodput["result"])
    assert 0.0 < ratio < 1.0, "the restart's lost, reschedule and resume time count against goodput"
    assert float(goodput["rescheduleTimeSec"]) > 0
    assert float(goodput["trainingTimeSec"]) > float(goodput["rescheduleTimeSec"])


def test_a_persistent_crash_fails_after_max_restarts_naming_the_node(simcluster, sim_namespace, kube, controller, shared_volume):
    nodes = simcluster.add_nodes(profile="h100", count=2, prefix=f"{sim_namespace}-bad")
    bad = nodes[0]
    simcluster.set_fault(bad, "nccl-crash")
    kube.create(training_certification(sim_namespace, "gives-up", nodes, maxRestarts=1))

    outcome = wait_terminal(kube, CERTIFICATIONS, "gives-up", sim_namespace, timeout=300)
    assert outcome[0] == "Failed", describe(kube, sim_namespace)
    job = the_job(kube, sim_namespace)
    status = job["status"]
    assert status["restartCount"] == 1
    failed = cond.condition(status, cond.FAILED)
    # a crash gives no steps (a stall) and, once retried on the node, a repeated failure: whichever
    # the controller sees first ends the last attempt. The crash takes every rank of the group
    # down with the same exit code, so the repeated failure may be counted first on either node
    # (a loaded run saw the healthy one first); which node NCCL lost is the failure log's to say.
    assert failed["reason"] in ("WorkloadStalled", "WorkloadFailed")
    if failed["reason"] == "WorkloadFailed":
        assert any(f"times on node {node} with exit code" in failed["message"] for node in nodes), failed["message"]
    assert bad in status["failureLog"]["tail"], "the failure log names the node NCCL lost"
    assert status["failureLog"]["exitCode"] != 0
    assert sorted(f["name"] for f in status["failedNodes"]) == sorted(nodes)
    events = job_events(kube, sim_namespace, job["metadata"]["name"])
    assert [m for _, r, m in events if r == "WorkloadRestarting"] == ["Restarting workload from checkpoint (restart 1/1)"]
    assert len([r for _, r, _ in events if r == "WorkloadAttemptFailed"]) == 1
    workflow_name = kube.get(CERTIFICATIONS, "gives-up", sim_namespace)["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    assert cond.lifecycle(kube.get(WORKFLOWS, workflow_name, sim_namespace)["status"]) == "Failed"
