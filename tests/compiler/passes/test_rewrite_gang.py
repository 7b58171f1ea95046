"""rewrite_gang: scheduler name and queue labels on every pod template; KAI moves the barrier."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcre.compiler.emit import dump_yaml
from nvcre.compiler.passes.rewrite_gang import WAIT_FOR_WORKERS_SCRIPT, rewrite_gang
from nvcre.compiler.unit import ClusterView, Context, GangSpec, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import ENTRIES, FIXTURES

KAI = GangSpec("kai-scheduler", queue="high-priority")
RUNAI = GangSpec("runai-scheduler", queue="team-a", queue_label_key="runai/queue")


def render(fixture: str, gang: GangSpec | None):
    workflow = load_file(FIXTURES / f"{fixture}.yaml")[0]
    ctx = Context("Certification", "demo", {}, ENTRIES[fixture], ClusterView("onprem", "h100"), "spec.categories[0]", gang=gang)
    return Unit(category={}, options={}, workflow=workflow), ctx


def runtime_of(workflow: dict) -> dict:
    return next(dep for dep in workflow["spec"]["dependencies"] if dep["kind"] == "TrainingRuntime")


def jobs_of(workflow: dict) -> dict[str, dict]:
    return {job["name"]: job for job in runtime_of(workflow)["spec"]["template"]["spec"]["replicatedJobs"]}


def pod_of(job: dict) -> dict:
    return job["template"]["spec"]["template"]


def strip_gang(workflow: dict, key: str) -> dict:
    """The Workflow without what a non-KAI rewrite may add."""
    out = copy.deepcopy(workflow)
    out["spec"].pop("gangScheduler", None)
    for job in jobs_of(out).values():
        pod_of(job)["spec"].pop("schedulerName", None)
        for owner in (job["template"], pod_of(job)):
            labels = owner.get("metadata", {}).get("labels", {})
            labels.pop(key, None)
            if "metadata" in owner and not labels:
                owner["metadata"].pop("labels", None)
                if not owner["metadata"]:
                    del owner["metadata"]
    return out


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_no_gang_is_a_no_op(fixture):
    unit, ctx = render(fixture, None)
    out, diags = rewrite_gang(unit, ctx)
    assert out is unit and diags == []


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
def test_scheduler_and_queue_label_on_every_pod_template(fixture):
    unit, ctx = render(fixture, RUNAI)
    out, diags = rewrite_gang(unit, ctx)
    assert diags == []
    for job in jobs_of(out.workflow).values():
        assert pod_of(job)["spec"]["schedulerName"] == "runai-scheduler"
        assert job["template"]["metadata"]["labels"]["runai/queue"] == "team-a"
        assert pod_of(job)["metadata"]["labels"]["runai/queue"] == "team-a"
    assert out.workflow["spec"]["gangScheduler"] == {
        "schedulerName": "runai-scheduler",
        "queue": "team-a",
        "queueLabelKey": "runai/queue",
    }


def test_catalog_default_scheduler_is_overwritten():
    unit, ctx = render("nemotron5-8b", RUNAI)
    assert pod_of(jobs_of(unit.workflow)["node"])["spec"]["schedulerName"] == "default-scheduler"
    out, _ = rewrite_gang(unit, ctx)
    assert pod_of(jobs_of(out.workflow)["node"])["spec"]["schedulerName"] == "runai-scheduler"


@pytest.mark.parametrize("fixture", ["mpi-all-reduce", "loopback", "dcgm-level4"])
def test_non_kai_changes_nothing_else(fixture):
    unit, ctx = render(fixture, RUNAI)
    out, _ = rewrite_gang(unit, ctx)
    assert dump_yaml(strip_gang(out.workflow, "runai/queue")) == dump_yaml(unit.workflow)


def test_non_kai_keeps_depends_on_and_startup_policy():
    unit, ctx = render("mpi-all-reduce", RUNAI)
    runtime_of(unit.workflow)["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    out, _ = rewrite_gang(unit, ctx)
    assert jobs_of(out.workflow)["launcher"]["dependsOn"] == [{"name": "node", "status": "Ready"}]
    assert runtime_of(out.workflow)["spec"]["template"]["spec"]["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    assert [c["name"] for c in pod_of(jobs_of(out.workflow)["launcher"])["spec"]["initContainers"]] == ["fix-ssh-permissions"]


def test_different_queue_value_conflicts_and_is_never_overwritten():
    unit, ctx = render("mpi-all-reduce", KAI)
    jobs_of(unit.workflow)["launcher"]["template"]["metadata"]["labels"]["kai.scheduler/queue"] = "low"
    out, diags = rewrite_gang(unit, ctx)
    assert out is unit
    assert [d.code for d in diags] == ["GangQueueLabelConflict"]
    assert diags[0].path == (
        'workflow.spec.dependencies[0].spec.template.spec.replicatedJobs[1].template.metadata.labels["kai.scheduler/queue"]'
    )
    assert '"low"' in diags[0].message and '"high-priority"' in diags[0].message


def test_same_queue_value_is_accepted():
    unit, ctx = render("mpi-all-reduce", KAI)
    pod_of(jobs_of(unit.workflow)["node"]).setdefault("metadata", {})["labels"] = {"kai.scheduler/queue": "high-priority"}
    _, diags = rewrite_gang(unit, ctx)
    assert diags == []


def test_kai_drops_depends_on_and_startup_policy_and_adds_the_barrier():
    unit, ctx = render("mpi-all-reduce", KAI)
    runtime_of(unit.workflow)["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    out, diags = rewrite_gang(unit, ctx)
    assert diags == []
    launcher = jobs_of(out.workflow)["launcher"]
    assert "dependsOn" not in launcher
    assert "startupPolicy" not in runtime_of(out.workflow)["spec"]["template"]["spec"]
    spec = pod_of(launcher)["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["fix-ssh-permissions", "wait-for-workers"]
    barrier = spec["initContainers"][1]
    assert barrier["image"] == spec["containers"][0]["image"]
    assert barrier["volumeMounts"] == spec["containers"][0]["volumeMounts"]
    assert barrier["command"] == ["sh", "-c"] and barrier["args"] == [WAIT_FOR_WORKERS_SCRIPT]
    env = {item["name"]: item for item in barrier["env"]}
    assert env["JOBSET_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}}
    assert env["WORKER_JOB"]["value"] == "node"
    assert env["WORKER_COUNT"]["value"] == "2"
    assert "ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=5" in WAIT_FOR_WORKERS_SCRIPT
    # the workers keep their pods untouched apart from scheduling
    assert (
        strip_gang(out.workflow, "kai.scheduler/queue")["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"][0]
        == jobs_of(unit.workflow)["node"]
    )


def test_kai_on_a_single_node_entry_adds_no_barrier():
    unit, ctx = render("nemotron5-8b", KAI)
    out, diags = rewrite_gang(unit, ctx)
    assert diags == []
    assert [c["name"] for c in pod_of(jobs_of(out.workflow)["node"])["spec"]["initContainers"]] == ["megatron-clone"]


def test_kai_counts_workers_from_the_runtime_when_the_trainer_does_not_say():
    unit, ctx = render("mpi-all-reduce", KAI)
    del unit.workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]["numNodes"]
    runtime_of(unit.workflow)["spec"]["mlPolicy"]["numNodes"] = 4
    out, _ = rewrite_gang(unit, ctx)
    barrier = pod_of(jobs_of(out.workflow)["launcher"])["spec"]["initContainers"][1]
    assert {"name": "WORKER_COUNT", "value": "4"} in barrier["env"]


@pytest.mark.parametrize(
    "mutate, code",
    [
        (lambda wf: wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"].update(numNodes=0), "GangWorkerCountUnknown"),
        (lambda wf: pod_of(jobs_of(wf)["launcher"])["spec"]["containers"][0].pop("volumeMounts"), "GangRuntimeInvalid"),
        (lambda wf: jobs_of(wf)["launcher"].update(name="mpirun"), "GangRuntimeInvalid"),
    ],
)
def test_kai_barrier_needs_a_count_ssh_mounts_and_a_launcher(mutate, code):
    unit, ctx = render("mpi-all-reduce", KAI)
    mutate(unit.workflow)
    out, diags = rewrite_gang(unit, ctx)
    assert out is unit
    assert [d.code for d in diags] == [code]


@pytest.mark.parametrize(
    "ref",
    [
        {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "missing-runtime"},
        {"name": "nccl-all-reduce-runtime"},  # Kubeflow's default kind is ClusterTrainingRuntime
        {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "nccl-all-reduce-runtime"},
    ],
)
def test_runtime_must_be_a_namespaced_dependency(ref):
    unit, ctx = render("mpi-all-reduce", KAI)
    unit.workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimeRef"] = ref
    out, diags = rewrite_gang(unit, ctx)
    assert out is unit
    assert [(d.code, d.path) for d in diags] == [("GangRuntimeNotFound", "workflow.spec.jobTemplate.spec.workload.trainJob.runtimeRef")]


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
@pytest.mark.parametrize("gang", [KAI, RUNAI])
def test_input_unit_is_untouched(fixture, gang):
    unit, ctx = render(fixture, gang)
    snapshot = copy.deepcopy(unit)
    rewrite_gang(unit, ctx)
    assert unit == snapshot


# -- the barrier script, run against a stand-in ssh -----------------------------------------

STUB_SSH = """#!/bin/sh
echo "$*" >> "$SSH_LOG"
for arg in "$@"; do
  case " $OK_HOSTS " in *" $arg "*) exit 0 ;; esac
done
echo "ssh: connect to host port 22: Connection refused" >&2
exit 255
"""


def run_barrier(tmp_path: Path, ok_hosts: str) -> subprocess.CompletedProcess:
    if shutil.which("sh") is None:
        pytest.skip("no POSIX shell")
    stub = tmp_path / "bin" / "ssh"
    stub.parent.mkdir()
    stub.write_text(STUB_SSH)
    stub.chmod(0o755)
    env = {
        "PATH": f"{stub.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "SSH_LOG": str(tmp_path / "ssh.log"),
        "OK_HOSTS": ok_hosts,
        "JOBSET_NAME": "demo-job",
        "WORKER_JOB": "node",
        "WORKER_COUNT": "2",
        "WAIT_DEADLINE_SECONDS": "1",
        "WAIT_INTERVAL_SECONDS": "0.1",
    }
    return subprocess.run(["sh", "-c", WAIT_FOR_WORKERS_SCRIPT], env=env, capture_output=True, text=True, timeout=30)


def test_barrier_passes_once_every_worker_answers(tmp_path):
    result = run_barrier(tmp_path, "demo-job-node-0-0.demo-job demo-job-node-0-1.demo-job")
    assert result.returncode == 0, result.stderr
    assert "all 2 workers answered" in result.stdout
    first_call = (tmp_path / "ssh.log").read_text().splitlines()[0]
    assert (
        first_call == "-o BatchMode=yes -o StrictHostKeyChecking=no -o ConnectTimeout=5"
        " -o ServerAliveInterval=5 -o ServerAliveCountMax=2 demo-job-node-0-0.demo-job true"
    )


def test_barrier_fails_naming_the_silent_worker(tmp_path):
    result = run_barrier(tmp_path, "demo-job-node-0-0.demo-job")
    assert result.returncode == 1
    assert "demo-job-node-0-1.demo-job did not answer" in result.stderr
    assert "Connection refused" in result.stderr
