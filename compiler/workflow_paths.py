"""Find the parts of a rendered Workflow that the later passes edit or check, with their paths.

A Workflow runs a Kubeflow TrainJob (``spec.jobTemplate.spec.workload.trainJob``) whose
``runtimeRef`` names a namespaced TrainingRuntime shipped in ``spec.dependencies``. The
runtime's JobSet template holds the replicated jobs (``node`` workers, ``launcher`` for MPI),
each with a Job template and a pod template. These accessors return the live nested dicts of
the document they are given, together with the path of each part (``workflow.spec.
dependencies[0].spec.template.spec.replicatedJobs[1]...``) so that diagnostics can point at it.
A pass that edits must hand them its own deep copy of the Workflow.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .diagnostics import PathPart, format_path
from .unit import Context

__all__ = [
    "ROOT",
    "TRAIN_JOB",
    "TRAINER",
    "WORKLOAD_LABELS",
    "TRAINER_API_GROUP",
    "MPI_INJECTED_VOLUMES",
    "Located",
    "RuntimeLookup",
    "ReplicatedJob",
    "keyed",
    "dig",
    "train_job",
    "trainer",
    "find_runtime",
    "replicated_jobs",
    "containers",
    "runtime_patch_jobs",
    "option_path",
]

Path = tuple[PathPart, ...]

#: diagnostics about the rendered document start with this part
ROOT: Path = ("workflow",)
TRAIN_JOB: Path = ("spec", "jobTemplate", "spec", "workload", "trainJob")
TRAINER: Path = TRAIN_JOB + ("trainer",)
WORKLOAD_LABELS: Path = ("spec", "jobTemplate", "spec", "workloadMetadata", "labels")
TRAINER_API_GROUP = "trainer.kubeflow.org"
#: volumes Kubeflow Trainer adds to MPI pods itself (SSH key Secret, hostfile ConfigMap)
MPI_INJECTED_VOLUMES = frozenset({"mpi-ssh-auth", "mpi-hostfile"})

_RUNTIME_KIND = "TrainingRuntime"
_REPLICATED_JOBS: Path = ("spec", "template", "spec", "replicatedJobs")
_POD_TEMPLATE: Path = ("template", "spec", "template")


def keyed(path: Sequence[PathPart] | str, key: str) -> str:
    """Path of one map key whose name holds dots or slashes: ``...labels["kai.scheduler/queue"]``."""
    base = path if isinstance(path, str) else format_path(path)
    return f'{base}["{key}"]'


def _mapping(value: Any) -> dict[str, Any] | None:
    """``value`` when it is a mapping (the type a caller of a labels or spec path expects), else None."""
    return value if isinstance(value, dict) else None


def dig(obj: Any, parts: Sequence[PathPart], create: bool = False) -> Any:
    """The value at ``parts`` below ``obj``, or None when a step is missing or of the wrong type.

    With ``create``, missing (or null) mapping steps are created as empty dicts; list indexes
    are never created.
    """
    current = obj
    for part in parts:
        if isinstance(part, int):
            if not isinstance(current, list) or not -len(current) <= part < len(current):
                return None
            current = current[part]
            continue
        if type(current) is not dict and not isinstance(current, Mapping):
            return None
        if create and current.get(part) is None and isinstance(current, dict):
            current[part] = {}
        current = current.get(part)
    return current


@dataclass(frozen=True)
class Located:
    """A part of the Workflow and its path (starting with ``workflow``)."""

    value: Any
    path: Path


def _locate_map(workflow: Mapping[str, Any], parts: Path) -> Located | None:
    value = dig(workflow, parts)
    return Located(value, ROOT + parts) if isinstance(value, dict) else None


def train_job(workflow: Mapping[str, Any]) -> Located | None:
    return _locate_map(workflow, TRAIN_JOB)


def trainer(workflow: Mapping[str, Any]) -> Located | None:
    return _locate_map(workflow, TRAINER)


@dataclass(frozen=True)
class RuntimeLookup:
    """Result of resolving ``runtimeRef``: the dependency, or the reason it cannot be found."""

    runtime: Located | None
    #: where the problem is (the runtimeRef, or the TrainJob when that is missing)
    problem_path: Path = ROOT
    problem: str | None = None


def find_runtime(workflow: Mapping[str, Any]) -> RuntimeLookup:
    """Resolve the TrainJob's ``runtimeRef`` to a TrainingRuntime in ``spec.dependencies``.

    Kubeflow defaults ``apiGroup`` to ``trainer.kubeflow.org`` and ``kind`` to
    ``ClusterTrainingRuntime``; only a namespaced TrainingRuntime can ship as a dependency.
    """
    job = train_job(workflow)
    if job is None:
        return RuntimeLookup(None, ROOT + TRAIN_JOB, "the Workflow runs no TrainJob (spec.jobTemplate.spec.workload.trainJob)")
    ref_path = ROOT + TRAIN_JOB + ("runtimeRef",)
    ref = job.value.get("runtimeRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        return RuntimeLookup(None, ref_path, "the TrainJob has no runtimeRef naming its TrainingRuntime")
    name = ref["name"]
    group = ref.get("apiGroup") or TRAINER_API_GROUP
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    if group != TRAINER_API_GROUP or kind != _RUNTIME_KIND:
        return RuntimeLookup(
            None,
            ref_path,
            f"the TrainJob references runtime {group}/{kind} {name!r}; "
            f"only a namespaced {TRAINER_API_GROUP} {_RUNTIME_KIND} shipped in spec.dependencies is supported",
        )
    dependencies = dig(workflow, ("spec", "dependencies"))
    for index, dep in enumerate(dependencies if isinstance(dependencies, list) else []):
        if not isinstance(dep, dict) or dep.get("kind") != _RUNTIME_KIND:
            continue
        if str(dep.get("apiVersion", "")).split("/", 1)[0] != group:
            continue
        if dig(dep, ("metadata", "name")) == name:
            return RuntimeLookup(Located(dep, ROOT + ("spec", "dependencies", index)))
    return RuntimeLookup(None, ref_path, f"no {_RUNTIME_KIND} named {name!r} in spec.dependencies")


@dataclass(frozen=True)
class ReplicatedJob:
    """One replicated job of a runtime's JobSet template."""

    index: int
    name: str
    job: dict[str, Any]
    path: Path

    @property
    def job_labels_path(self) -> Path:
        return self.path + ("template", "metadata", "labels")

    @property
    def pod_template_path(self) -> Path:
        return self.path + _POD_TEMPLATE

    @property
    def pod_labels_path(self) -> Path:
        return self.pod_template_path + ("metadata", "labels")

    @property
    def pod_spec_path(self) -> Path:
        return self.pod_template_path + ("spec",)

    def job_labels(self, create: bool = False) -> dict[str, Any] | None:
        return _mapping(dig(self.job, ("template", "metadata", "labels"), create=create))

    def pod_labels(self, create: bool = False) -> dict[str, Any] | None:
        return _mapping(dig(self.job, _POD_TEMPLATE + ("metadata", "labels"), create=create))

    def pod_spec(self, create: bool = False) -> dict[str, Any] | None:
        found = dig(self.job, _POD_TEMPLATE + ("spec",), create=create)
        return found if isinstance(found, dict) else None


def _named_items(base: Any, base_path: Path) -> Iterator[tuple[int, dict[str, Any], Path]]:
    items = base if isinstance(base, list) else []
    for index, item in enumerate(items):
        if isinstance(item, dict):
            yield index, item, base_path + (index,)


def replicated_jobs(runtime: Located) -> list[ReplicatedJob]:
    """The replicated jobs of a TrainingRuntime dependency, in document order."""
    base_path = runtime.path + _REPLICATED_JOBS
    return [
        ReplicatedJob(index, str(job.get("name", "")), job, path)
        for index, job, path in _named_items(dig(runtime.value, _REPLICATED_JOBS), base_path)
    ]


def containers(pod_spec: Mapping[str, Any] | None, pod_spec_path: Path, field: str = "containers") -> list[Located]:
    """Containers (or ``initContainers``) of a pod spec with their paths."""
    if not isinstance(pod_spec, Mapping):
        return []
    return [Located(item, path) for _, item, path in _named_items(pod_spec.get(field), pod_spec_path + (field,))]


def runtime_patch_jobs(workflow: Mapping[str, Any]) -> list[ReplicatedJob]:
    """Replicated-job patches from every ``trainJob.runtimePatches[]`` entry, in document order.

    Kubeflow merges each onto the runtime's replicated job of the same name; the returned
    records have the same shape as the runtime's, so the same accessors apply.
    """
    patches = dig(workflow, TRAIN_JOB + ("runtimePatches",))
    found: list[ReplicatedJob] = []
    for _, patch, patch_path in _named_items(patches, ROOT + TRAIN_JOB + ("runtimePatches",)):
        spec_path = ("trainingRuntimeSpec",) + _REPLICATED_JOBS[1:]
        for index, job, path in _named_items(dig(patch, spec_path), patch_path + spec_path):
            found.append(ReplicatedJob(index, str(job.get("name", "")), job, path))
    return found


def option_path(ctx: Context, *fields: str) -> str:
    """Path of a resolved option in the source: ``spec.categories[2].options.env`` or ``spec.env``.

    Options of a Certification category live under ``options``; a WorkloadRun (``ctx.path``
    is ``spec``) carries the same fields on its spec directly.
    """
    if ctx.source_kind == "WorkloadRun" or ctx.path in ("", "spec"):
        base = ctx.path or "spec"
    else:
        base = f"{ctx.path}.options"
    return ".".join((base,) + fields)
