"""Check the invariants a rendered Workflow must hold before it is emitted.

A validator: it reads the document and reports, it never changes it (the unit it returns is the
unit it was given). Every problem is one diagnostic with a path inside the Workflow:

* the TrainJob exists and its ``runtimeRef`` resolves to a TrainingRuntime dependency;
* dependencies are unique by (apiVersion, kind, name) and named within 63 characters;
* replicated job names are unique, and every runtime patch names one of them;
* per pod: container names (init containers included) are unique, volume names are unique,
  and every volumeMount names a volume the pod defines (runtime patches and the volumes
  Kubeflow Trainer adds to MPI pods included);
* ``trainer.args`` and ``trainer.command`` stay within Kubeflow's 128 items, trainer env
  names are unique, and no MPI command line (the trainer's, or a container's that runs
  mpirun itself) forwards the same variable twice;
* with ``spec.gangScheduler`` set, it records the resolved intent, and every pod template
  carries the scheduler name and the queue label on both the Job and the pod template (runtime
  patch labels folded in), as does the workload object.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..diagnostics import Diagnostic, PathPart, error
from ..mpi_args import forward_pairs
from ..unit import Context, Unit
from ..workflow_paths import (
    MPI_INJECTED_VOLUMES,
    ROOT,
    TRAINER,
    WORKLOAD_LABELS,
    Located,
    ReplicatedJob,
    containers,
    dig,
    find_runtime,
    keyed,
    replicated_jobs,
    runtime_patch_jobs,
    trainer,
)

__all__ = ["validate_workflow", "MAX_TRAINER_ITEMS", "MAX_DEPENDENCY_NAME"]

MAX_TRAINER_ITEMS = 128
MAX_DEPENDENCY_NAME = 63
_MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun"})

Path = tuple[PathPart, ...]


def validate_workflow(unit: Unit, ctx: Context) -> tuple[Unit, list[Diagnostic]]:
    workflow = unit.workflow
    if workflow is None:
        return unit, [error("WorkflowMissing", ROOT, "no Workflow was rendered")]
    problems = _dependencies(workflow)
    lookup = find_runtime(workflow)
    patches = runtime_patch_jobs(workflow)
    if lookup.runtime is None:
        problems.append(error("RuntimeNotFound", lookup.problem_path, lookup.problem or "runtime not found"))
        jobs: list[ReplicatedJob] = []
    else:
        jobs = replicated_jobs(lookup.runtime)
        problems += _replicated_jobs(lookup.runtime, jobs, patches)
    problems += _trainer(workflow, ctx)
    problems += _gang(workflow, ctx, jobs, patches)
    return unit, problems


# -- dependencies -------------------------------------------------------------------------------


def _dependencies(workflow: Mapping[str, Any]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    seen: dict[tuple[str, str, str], int] = {}
    dependencies = dig(workflow, ("spec", "dependencies"))
    for index, dep in enumerate(dependencies if isinstance(dependencies, list) else []):
        path = ROOT + ("spec", "dependencies", index)
        name = dig(dep, ("metadata", "name"))
        if not isinstance(name, str) or not name:
            problems.append(error("DependencyNameMissing", path + ("metadata", "name"), "every dependency needs metadata.name"))
            continue
        if len(name) > MAX_DEPENDENCY_NAME:
            problems.append(
                error(
                    "DependencyNameTooLong",
                    path + ("metadata", "name"),
                    f"dependency name {name!r} is {len(name)} characters, over the maximum of {MAX_DEPENDENCY_NAME}",
                )
            )
        identity = (str(dep.get("apiVersion", "")), str(dep.get("kind", "")), name)
        if identity in seen:
            problems.append(
                error(
                    "DuplicateDependency",
                    path,
                    f"{identity[0]} {identity[1]} {name!r} is already spec.dependencies[{seen[identity]}]",
                )
            )
        else:
            seen[identity] = index
    return problems


# -- replicated jobs and pods -------------------------------------------------------------------


def _replicated_jobs(runtime: Located, jobs: list[ReplicatedJob], patches: list[ReplicatedJob]) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    first: dict[str, int] = {}
    for job in jobs:
        if not job.name:
            problems.append(error("ReplicatedJobNameMissing", job.path + ("name",), "every replicated job needs a name"))
        elif job.name in first:
            problems.append(
                error(
                    "DuplicateReplicatedJob",
                    job.path + ("name",),
                    f"replicated job {job.name!r} is already replicatedJobs[{first[job.name]}]",
                )
            )
        else:
            first[job.name] = job.index
    for patch in patches:
        if patch.name not in first:
            problems.append(
                error(
                    "RuntimePatchUnknownJob",
                    patch.path + ("name",),
                    f"runtime patch for replicated job {patch.name!r}, which the runtime does not define",
                )
            )

    injected = MPI_INJECTED_VOLUMES if dig(runtime.value, ("spec", "mlPolicy", "mpi")) is not None else frozenset()
    for job in jobs:
        own_patches = [patch for patch in patches if patch.name == job.name]
        problems += _unique_names(_pod_containers(job), "DuplicateContainerName", "container", f"pod of replicated job {job.name!r}")
        volume_sets = [_volumes(job)] + [_volumes(patch) for patch in own_patches]
        for volumes in volume_sets:
            problems += _unique_names(volumes, "DuplicateVolumeName", "volume", f"pod of replicated job {job.name!r}")
        defined = {item.value.get("name") for volumes in volume_sets for item in volumes if item.value.get("name")} | injected
        for pod in [job] + own_patches:
            problems += _mounts_defined(pod, defined, job.name)
        for container in _pod_containers(job):
            command, args = _command_line(container.value)
            if _runs_mpi(command + args):
                problems += _duplicate_forwards(command, args, container.path)
    return problems


def _pod_containers(job: ReplicatedJob) -> list[Located]:
    pod_spec = job.pod_spec()
    return containers(pod_spec, job.pod_spec_path) + containers(pod_spec, job.pod_spec_path, "initContainers")


def _volumes(job: ReplicatedJob) -> list[Located]:
    return containers(job.pod_spec(), job.pod_spec_path, "volumes")


def _unique_names(items: Iterable[Located], code: str, what: str, owner: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    seen: set[Any] = set()
    for item in items:
        name = item.value.get("name")
        if name in seen:
            problems.append(error(code, item.path + ("name",), f"{what} name {name!r} is used more than once in the {owner}"))
        seen.add(name)
    return problems


def _mounts_defined(pod: ReplicatedJob, defined: set[Any], job_name: str) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    for container in _pod_containers(pod):
        mounts = container.value.get("volumeMounts")
        for index, mount in enumerate(mounts if isinstance(mounts, list) else []):
            name = mount.get("name") if isinstance(mount, dict) else None
            if name not in defined:
                problems.append(
                    error(
                        "UndefinedVolumeMount",
                        container.path + ("volumeMounts", index, "name"),
                        f"container {container.value.get('name')!r} mounts volume {name!r}, "
                        f"which the pod of replicated job {job_name!r} does not define",
                    )
                )
    return problems


# -- trainer ------------------------------------------------------------------------------------


def _trainer(workflow: Mapping[str, Any], ctx: Context) -> list[Diagnostic]:
    found = trainer(workflow)
    if found is None:
        return []
    spec = found.value
    problems: list[Diagnostic] = []
    command, args = _command_line(spec)
    for field, items, code in (("args", args, "TrainerArgsLimit"), ("command", command, "TrainerCommandLimit")):
        if len(items) > MAX_TRAINER_ITEMS:
            problems.append(
                error(
                    code,
                    ROOT + TRAINER + (field,),
                    f"{ctx.entry.key}: trainer.{field} holds {len(items)} items, over Kubeflow's maximum of {MAX_TRAINER_ITEMS}",
                )
            )
    env = spec.get("env") if isinstance(spec.get("env"), list) else []
    seen: set[Any] = set()
    for index, item in enumerate(env):
        name = item.get("name") if isinstance(item, dict) else None
        if name in seen:
            problems.append(
                error(
                    "DuplicateTrainerEnv",
                    ROOT + TRAINER + ("env", index, "name"),
                    f"trainer env {name!r} is set more than once",
                )
            )
        seen.add(name)
    if ctx.entry.forwards_env_with_mpi or _runs_mpi(command + args):
        problems += _duplicate_forwards(command, args, ROOT + TRAINER)
    return problems


def _command_line(spec: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    command, args = spec.get("command"), spec.get("args")
    return (command if isinstance(command, list) else []), (args if isinstance(args, list) else [])


def _runs_mpi(tokens: Sequence[Any]) -> bool:
    return any(isinstance(token, str) and token.rsplit("/", 1)[-1] in _MPI_LAUNCHERS for token in tokens)


def _duplicate_forwards(command: list[Any], args: list[Any], base: Path) -> list[Diagnostic]:
    """One diagnostic per repeated ``-x NAME``; the path points at the repeat."""
    problems: list[Diagnostic] = []
    first: dict[str, int] = {}
    for index, name in forward_pairs([str(token) for token in command + args]):
        value_index = index + 1
        path = base + (("command", value_index) if value_index < len(command) else ("args", value_index - len(command)))
        if name in first:
            problems.append(
                error(
                    "DuplicateForwardedEnv",
                    path,
                    f"the MPI command line forwards {name} more than once (-x pairs at items {first[name]} and {index})",
                )
            )
        else:
            first[name] = index
    return problems


# -- gang scheduling ----------------------------------------------------------------------------


def _gang(workflow: Mapping[str, Any], ctx: Context, jobs: list[ReplicatedJob], patches: list[ReplicatedJob]) -> list[Diagnostic]:
    recorded = dig(workflow, ("spec", "gangScheduler"))
    path = ROOT + ("spec", "gangScheduler")
    intent = ctx.gang.as_dict() if ctx.gang is not None else None
    if recorded is None and intent is None:
        return []
    if recorded != intent:
        return [
            error(
                "GangIntentMismatch",
                path,
                f"spec.gangScheduler is {recorded!r} but the resolved gangScheduler is {intent!r}",
            )
        ]
    scheduler, queue, key = recorded["schedulerName"], recorded["queue"], recorded["queueLabelKey"]
    problems: list[Diagnostic] = []
    for job in jobs:
        pod_spec = job.pod_spec() or {}
        if pod_spec.get("schedulerName") != scheduler:
            problems.append(
                error(
                    "GangSchedulerNameMissing",
                    job.pod_spec_path + ("schedulerName",),
                    f"replicated job {job.name!r} is scheduled by {pod_spec.get('schedulerName')!r}, not {scheduler!r}",
                )
            )
        layers = [job] + [patch for patch in patches if patch.name == job.name]
        owner = f"replicated job {job.name!r}"
        problems += _queue_label(
            [(layer.job_labels(), layer.job_labels_path) for layer in layers],
            key,
            queue,
            f"the Job template of {owner}",
        )
        problems += _queue_label(
            [(layer.pod_labels(), layer.pod_labels_path) for layer in layers],
            key,
            queue,
            f"the pod template of {owner}",
        )
    problems += _queue_label([(dig(workflow, WORKLOAD_LABELS), ROOT + WORKLOAD_LABELS)], key, queue, "the workload object")
    return problems


def _queue_label(layers: list[tuple[Any, Path]], key: str, queue: str, owner: str) -> list[Diagnostic]:
    """The queue label after folding the label ``layers`` in order (later wins) must equal ``queue``."""
    value, where = None, layers[0][1]
    for labels, path in layers:
        if isinstance(labels, dict) and key in labels:
            value, where = labels[key], path
    if value is None:
        return [error("GangQueueLabelMissing", keyed(where, key), f"{owner} lacks the queue label {key}: {queue}")]
    if value != queue:
        return [error("GangQueueLabelConflict", keyed(where, key), f'conflicting label value "{value}", expected "{queue}"')]
    return []
