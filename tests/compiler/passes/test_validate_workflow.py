"""validate_workflow: every broken invariant is reported with its path; the document never changes."""

from __future__ import annotations

import copy

import pytest

from nvcre.compiler.passes.merge_workload_labels import merge_workload_labels
from nvcre.compiler.passes.rewrite_gang import rewrite_gang
from nvcre.compiler.passes.validate_workflow import validate_workflow
from nvcre.compiler.unit import ClusterView, Context, GangSpec, Unit
from nvcre.compiler.yamlio import load_file
from tests.passkit import ENTRIES, FIXTURES

KAI = GangSpec("kai-scheduler")
RUNTIME = "workflow.spec.dependencies[0].spec.template.spec.replicatedJobs"
TRAINER = "workflow.spec.jobTemplate.spec.workload.trainJob.trainer"


def render(fixture: str, gang: GangSpec | None = None):
    workflow = load_file(FIXTURES / f"{fixture}.yaml")[0]
    ctx = Context("Certification", "demo", {}, ENTRIES[fixture], ClusterView("onprem", "h100"), "spec.categories[0]", gang=gang)
    unit = Unit(category={}, options={}, workflow=workflow)
    if gang is not None:
        for gang_pass in (rewrite_gang, merge_workload_labels):
            unit, diags = gang_pass(unit, ctx)
            assert diags == []
    return unit, ctx


def checked(unit: Unit, ctx: Context):
    """Run the validator and prove it changed nothing."""
    snapshot = copy.deepcopy(unit)
    out, diags = validate_workflow(unit, ctx)
    assert out is unit
    assert unit == snapshot
    return diags


@pytest.mark.parametrize("fixture", sorted(ENTRIES))
@pytest.mark.parametrize("gang", [None, KAI, GangSpec("runai-scheduler", queue="team-a", queue_label_key="runai/queue")])
def test_rendered_fixtures_are_valid(fixture, gang):
    unit, ctx = render(fixture, gang)
    assert checked(unit, ctx) == []


def jobs(wf: dict) -> list[dict]:
    return wf["spec"]["dependencies"][0]["spec"]["template"]["spec"]["replicatedJobs"]


def pod(wf: dict, index: int) -> dict:
    return jobs(wf)[index]["template"]["spec"]["template"]["spec"]


def trainer(wf: dict) -> dict:
    return wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def patch_job(wf: dict, index: int) -> dict:
    patches = wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimePatches"]
    return patches[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][index]


BROKEN = [
    (
        "no TrainJob",
        lambda wf: wf["spec"]["jobTemplate"]["spec"].pop("workload"),
        "RuntimeNotFound",
        "workflow.spec.jobTemplate.spec.workload.trainJob",
    ),
    (
        "runtimeRef to a missing runtime",
        lambda wf: wf["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimeRef"].update(name="other-runtime"),
        "RuntimeNotFound",
        "workflow.spec.jobTemplate.spec.workload.trainJob.runtimeRef",
    ),
    (
        "duplicate replicated job",
        lambda wf: jobs(wf)[1].update(name="node"),
        "DuplicateReplicatedJob",
        f"{RUNTIME}[1].name",
    ),
    (
        "duplicate container name across init and main",
        lambda wf: pod(wf, 1)["initContainers"][0].update(name="node"),
        "DuplicateContainerName",
        f"{RUNTIME}[1].template.spec.template.spec.initContainers[0].name",
    ),
    (
        "duplicate volume name",
        lambda wf: pod(wf, 1)["volumes"].append({"name": "ssh-keys", "emptyDir": {}}),
        "DuplicateVolumeName",
        f"{RUNTIME}[1].template.spec.template.spec.volumes[1].name",
    ),
    (
        "mount of an undefined volume",
        lambda wf: pod(wf, 1)["containers"][0]["volumeMounts"].append({"name": "scratch", "mountPath": "/scratch"}),
        "UndefinedVolumeMount",
        f"{RUNTIME}[1].template.spec.template.spec.containers[0].volumeMounts[2].name",
    ),
    (
        "patch mount whose volume the patch no longer defines",
        lambda wf: patch_job(wf, 0)["template"]["spec"]["template"]["spec"].pop("volumes"),
        "UndefinedVolumeMount",
        "workflow.spec.jobTemplate.spec.workload.trainJob.runtimePatches[0].trainingRuntimeSpec.template.spec"
        ".replicatedJobs[0].template.spec.template.spec.containers[0].volumeMounts[0].name",
    ),
    (
        "patch for an unknown replicated job",
        lambda wf: patch_job(wf, 1).update(name="worker"),
        "RuntimePatchUnknownJob",
        "workflow.spec.jobTemplate.spec.workload.trainJob.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].name",
    ),
    (
        "129 trainer args",
        lambda wf: trainer(wf)["args"].extend(["-v"] * (129 - len(trainer(wf)["args"]))),
        "TrainerArgsLimit",
        f"{TRAINER}.args",
    ),
    (
        "variable forwarded twice",
        lambda wf: trainer(wf)["args"].__setitem__(slice(6, 6), ["-x", "NCCL_DEBUG=WARN"]),
        "DuplicateForwardedEnv",
        f"{TRAINER}.args[9]",
    ),
    (
        "trainer env set twice",
        lambda wf: trainer(wf).update(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "A", "value": "3"}]),
        "DuplicateTrainerEnv",
        f"{TRAINER}.env[2].name",
    ),
    (
        "dependency listed twice",
        lambda wf: wf["spec"]["dependencies"].append(copy.deepcopy(wf["spec"]["dependencies"][0])),
        "DuplicateDependency",
        "workflow.spec.dependencies[1]",
    ),
    (
        "dependency name over 63 characters",
        lambda wf: wf["spec"]["dependencies"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c" * 64}}),
        "DependencyNameTooLong",
        "workflow.spec.dependencies[1].metadata.name",
    ),
]


@pytest.mark.parametrize("case, mutate, code, path", BROKEN, ids=[case[0] for case in BROKEN])
def test_each_broken_invariant_is_reported(case, mutate, code, path):
    unit, ctx = render("mpi-all-reduce")
    mutate(unit.workflow)
    diags = checked(unit, ctx)
    assert (code, path) in [(d.code, d.path) for d in diags], diags


def test_duplicate_forwarding_is_checked_on_the_whole_mpi_command_line():
    unit, ctx = render("mpi-all-reduce")
    trainer(unit.workflow)["args"][7] = "LD_LIBRARY_PATH"
    diags = checked(unit, ctx)
    assert [d.code for d in diags] == ["DuplicateForwardedEnv"]
    assert "LD_LIBRARY_PATH" in diags[0].message


def test_torch_args_are_not_read_as_mpi_forwarding():
    unit, ctx = render("nemotron5-8b")
    trainer(unit.workflow)["args"] = ["-x", "/config/train.sh", "-x", "/config/train.sh"]
    assert checked(unit, ctx) == []


GANG_BROKEN = [
    (
        "scheduler name missing on a pod",
        lambda wf: pod(wf, 0).pop("schedulerName"),
        "GangSchedulerNameMissing",
        f"{RUNTIME}[0].template.spec.template.spec.schedulerName",
    ),
    (
        "queue label missing on a pod template",
        lambda wf: jobs(wf)[1]["template"]["spec"]["template"]["metadata"]["labels"].clear(),
        "GangQueueLabelMissing",
        f'{RUNTIME}[1].template.spec.template.metadata.labels["kai.scheduler/queue"]',
    ),
    (
        "queue label missing on a Job template",
        lambda wf: jobs(wf)[0]["template"].pop("metadata"),
        "GangQueueLabelMissing",
        f'{RUNTIME}[0].template.metadata.labels["kai.scheduler/queue"]',
    ),
    (
        "runtime patch relabels the queue",
        lambda wf: patch_job(wf, 1).update(template={"metadata": {"labels": {"kai.scheduler/queue": "other"}}}),
        "GangQueueLabelConflict",
        "workflow.spec.jobTemplate.spec.workload.trainJob.runtimePatches[0].trainingRuntimeSpec.template.spec"
        '.replicatedJobs[1].template.metadata.labels["kai.scheduler/queue"]',
    ),
    (
        "queue label missing on the workload object",
        lambda wf: wf["spec"]["jobTemplate"]["spec"].pop("workloadMetadata"),
        "GangQueueLabelMissing",
        'workflow.spec.jobTemplate.spec.workloadMetadata.labels["kai.scheduler/queue"]',
    ),
    (
        "recorded intent differs",
        lambda wf: wf["spec"]["gangScheduler"].update(queue="other"),
        "GangIntentMismatch",
        "workflow.spec.gangScheduler",
    ),
]


@pytest.mark.parametrize("case, mutate, code, path", GANG_BROKEN, ids=[case[0] for case in GANG_BROKEN])
def test_each_broken_gang_invariant_is_reported(case, mutate, code, path):
    unit, ctx = render("mpi-all-reduce", KAI)
    mutate(unit.workflow)
    diags = checked(unit, ctx)
    assert (code, path) in [(d.code, d.path) for d in diags], diags


def test_gang_intent_without_a_rewrite_is_reported():
    unit, ctx = render("loopback")
    ctx = Context(ctx.source_kind, ctx.source_name, ctx.spec, ctx.entry, ctx.cluster, ctx.path, gang=KAI)
    assert [d.code for d in checked(unit, ctx)] == ["GangIntentMismatch"]


def test_missing_workflow_is_reported():
    _, ctx = render("loopback")
    unit = Unit(category={})
    out, diags = validate_workflow(unit, ctx)
    assert out is unit
    assert [d.code for d in diags] == ["WorkflowMissing"]


def test_a_container_running_mpirun_itself_is_checked_too():
    unit, ctx = render("mpi-all-reduce")
    pod(unit.workflow, 1)["containers"][0].update(command=["mpirun"], args=["-x", "A=1", "-x", "A", "/bin/true"])
    diags = checked(unit, ctx)
    assert [(d.code, d.path) for d in diags] == [
        ("DuplicateForwardedEnv", f"{RUNTIME}[1].template.spec.template.spec.containers[0].args[3]")
    ]
