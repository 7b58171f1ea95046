"""A Workflow's dependencies: which are per Workflow and which per Job, their order and their names.

A dependency is **job-scoped** when the Job template names it (its ``metadata.name`` is a string
value anywhere in the template, metadata values excepted), or when a job-scoped dependency names
it or shares a resource-name string with it; cluster-scoped kinds never are. Everything else is
**workflow-scoped** and created once, under its own name, owned by the Workflow.

Each Job gets its own copies of the job-scoped dependencies, named
``<name>-<wfHash>-job`` (one group, one iteration) or ``<name>-<wfHash>-<group>-iter-<n>``,
and every reference to them, in the copies and in the Job spec, is rewritten to match. Resource
names shared by two or more job-scoped dependencies (a ComputeDomain's channel template, say) are
renamed the same way. Labels and annotations of the workload and of runtime patches are metadata,
not references, and are never rewritten.

Objects come out in creation order: a dependency that names another comes after it.
"""

from __future__ import annotations

import copy
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..diagnostics import CompileError, error
from ..plan.model import Plan, PlannedGroup
from ..vocabulary import ANNOTATION_WORKFLOW_UID, LABEL_GROUP, LABEL_WORKFLOW
from .context import effective_workflow
from .meta import (
    MAX_K8S_NAME_LEN,
    managed_labels,
    name_hash,
    name_of,
    owner_reference,
    short_name,
    sub,
    uid_of,
    workflow_namespace,
)

__all__ = [
    "classify",
    "creation_order",
    "dependency_suffix",
    "expand_job_dependencies",
    "expand_workflow_dependencies",
    "is_cluster_scoped",
    "job_replacements",
    "rename_job_spec",
    "rename_value",
    "workflow_dependencies",
]

_RESOURCE_NAME = re.compile(r"^[a-z0-9][-a-z0-9.]*[a-z0-9]$")
_CLUSTER_SCOPED_KINDS = frozenset(
    {
        "Namespace",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "RuntimeClass",
        "DeviceClass",
        "ResourceSlice",
        "LogProfile",
        "CustomResourceDefinition",
        "Node",
    }
)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _is_resource_name(text: str) -> bool:
    return 3 <= len(text) <= 253 and bool(_RESOURCE_NAME.match(text)) and any("a" <= c <= "z" for c in text)


def _dep_name(dep: Mapping[str, Any]) -> str:
    meta = dep.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def is_cluster_scoped(dep: Mapping[str, Any]) -> bool:
    kind = str(dep.get("kind") or "")
    return kind.startswith("Cluster") or kind in _CLUSTER_SCOPED_KINDS


def _without_metadata_values(job_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The Job spec minus the label/annotation maps that are copied verbatim and never reference anything."""
    out = {k: copy.deepcopy(v) for k, v in job_spec.items() if k != "workloadMetadata"}
    for patch in ((out.get("workload") or {}).get("trainJob") or {}).get("runtimePatches") or []:
        for meta in _patch_metadata(patch):
            meta.pop("labels", None)
            meta.pop("annotations", None)
    return out


def _patch_metadata(patch: Any) -> Iterator[dict[str, Any]]:
    """The metadata mappings inside one runtime patch (JobSet, replicated Job and pod template)."""
    template = ((patch or {}).get("trainingRuntimeSpec") or {}).get("template") if isinstance(patch, Mapping) else None
    if not isinstance(template, dict):
        return
    if isinstance(template.get("metadata"), dict):
        yield template["metadata"]
    for job in (template.get("spec") or {}).get("replicatedJobs") or []:
        job_template = job.get("template") if isinstance(job, dict) else None
        if not isinstance(job_template, dict):
            continue
        if isinstance(job_template.get("metadata"), dict):
            yield job_template["metadata"]
        pod = (job_template.get("spec") or {}).get("template")
        if isinstance(pod, dict) and isinstance(pod.get("metadata"), dict):
            yield pod["metadata"]


def classify(dependencies: Sequence[Mapping[str, Any]], job_spec: Mapping[str, Any]) -> tuple[list[int], list[int]]:
    """Indices of the workflow-scoped and the job-scoped dependencies, each in input order."""
    names = {_dep_name(d): i for i, d in enumerate(dependencies) if _dep_name(d)}
    shared: dict[str, list[int]] = {}
    for i, dep in enumerate(dependencies):
        if is_cluster_scoped(dep):
            continue
        for text in set(_strings(dep)):
            if _is_resource_name(text) and text not in names:
                shared.setdefault(text, []).append(i)
    chosen: set[int] = set()
    queue: deque[int] = deque()

    def promote(index: int) -> None:
        if index not in chosen and not is_cluster_scoped(dependencies[index]):
            chosen.add(index)
            queue.append(index)

    for text in _strings(_without_metadata_values(job_spec)):
        if text in names:
            promote(names[text])
    while queue:
        for text in _strings(dependencies[queue.popleft()]):
            if text in names:
                promote(names[text])
            for peer in shared.get(text, ()):
                promote(peer)
    job_scoped = [i for i in range(len(dependencies)) if i in chosen]
    return [i for i in range(len(dependencies)) if i not in chosen], job_scoped


def creation_order(dependencies: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indices in creation order: a dependency whose text names another comes after it; ties keep input order."""
    names = {_dep_name(d): i for i, d in enumerate(dependencies) if _dep_name(d)}
    needs: list[set[int]] = [set() for _ in dependencies]
    for i, dep in enumerate(dependencies):
        needs[i] = {names[t] for t in _strings(dep) if t in names and names[t] != i}
    order: list[int] = []
    placed: set[int] = set()
    while len(order) < len(dependencies):
        ready = [i for i in range(len(dependencies)) if i not in placed and needs[i] <= placed]
        if not ready:  # a reference cycle: keep the rest in input order
            ready = [i for i in range(len(dependencies)) if i not in placed]
        order.append(ready[0])
        placed.add(ready[0])
    return order


def dependency_suffix(workflow_name: str, total_groups: int, iterations: int, group: str, iteration: int) -> str:
    """``-<wfHash>-job`` for a single group and iteration, else ``-<wfHash>-<group>-iter-<n>``."""
    digest = name_hash(workflow_name)
    if iterations <= 1 and total_groups <= 1 and iteration <= 1:
        return f"-{digest}-job"
    return f"-{digest}-{group}-iter-{iteration}"


def job_replacements(job_dependencies: Sequence[Mapping[str, Any]], suffix: str) -> dict[str, str]:
    """Old name -> per-Job name for every job-scoped dependency and every name two of them share."""
    names = {_dep_name(d) for d in job_dependencies if _dep_name(d)}
    counts: dict[str, int] = {}
    for dep in job_dependencies:
        for text in set(_strings(dep)):
            if _is_resource_name(text) and text not in names:
                counts[text] = counts.get(text, 0) + 1
    out: dict[str, str] = {}
    for dep in job_dependencies:
        name = _dep_name(dep)
        if not name:
            continue
        out[name] = short_name(name + suffix, MAX_K8S_NAME_LEN)
        for text in _strings(dep):
            if counts.get(text, 0) >= 2 and text not in out:
                out[text] = short_name(text + suffix, MAX_K8S_NAME_LEN)
    return out


def rename_value(value: Any, replacements: Mapping[str, str]) -> Any:
    """A copy of ``value`` with every string equal to a replacement key replaced."""
    if isinstance(value, str):
        return replacements.get(value, value)
    if isinstance(value, Mapping):
        return {k: rename_value(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [rename_value(v, replacements) for v in value]
    return copy.deepcopy(value)


def rename_job_spec(job_spec: Mapping[str, Any], replacements: Mapping[str, str]) -> dict[str, Any]:
    """The Job spec with references renamed; workload metadata and runtime-patch labels stay as written."""
    if not replacements:
        return copy.deepcopy(dict(job_spec))
    renamed = rename_value({k: v for k, v in job_spec.items() if k != "workloadMetadata"}, replacements)
    if "workloadMetadata" in job_spec:
        renamed["workloadMetadata"] = copy.deepcopy(job_spec["workloadMetadata"])
    original = (((job_spec.get("workload") or {}).get("trainJob") or {}).get("runtimePatches")) or []
    patched = (((renamed.get("workload") or {}).get("trainJob") or {}).get("runtimePatches")) or []
    for before, after in zip(original, patched):
        for meta_before, meta_after in zip(_patch_metadata(copy.deepcopy(before)), _patch_metadata(after)):
            for key in ("labels", "annotations"):
                if key in meta_before:
                    meta_after[key] = meta_before[key]
    return dict(renamed)


#: The kinds a Workflow may ask the controller to create, by (API group, kind): what the catalog
#: renders and the install's run role grants. The controller creates them with its own rights,
#: so anything else (a Role, a ServiceAccount, a cluster-scoped object) is refused up front
#: instead of being tried with them.
ALLOWED_DEPENDENCY_KINDS = frozenset(
    {
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("resource.nvidia.com", "ComputeDomain"),
        ("resource.k8s.io", "ResourceClaimTemplate"),
        ("", "PersistentVolumeClaim"),
        ("", "ConfigMap"),
    }
)


def _allowed(dep: Mapping[str, Any]) -> bool:
    group = str(dep["apiVersion"]).rpartition("/")[0]
    return (group, str(dep["kind"])) in ALLOWED_DEPENDENCY_KINDS


def workflow_dependencies(workflow: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The Workflow's dependency list, checked: each one an object with a kind and a name, of an
    allowed kind (``ALLOWED_DEPENDENCY_KINDS``), no ``when``."""
    spec = sub(workflow, "spec")
    deps = spec.get("dependencies") or []
    if not isinstance(deps, list):
        raise CompileError([error("InvalidWorkflow", "spec.dependencies", "expected a list of objects")])
    problems = []
    for i, dep in enumerate(deps):
        path = f"spec.dependencies[{i}]"
        if not isinstance(dep, Mapping) or not isinstance(dep.get("apiVersion"), str) or not isinstance(dep.get("kind"), str):
            problems.append(error("InvalidDependency", path, "a dependency is an object with apiVersion and kind"))
        elif not _allowed(dep):
            kinds = ", ".join(f"{k} ({g or 'core'})" for g, k in sorted(ALLOWED_DEPENDENCY_KINDS, key=lambda x: x[1]))
            problems.append(
                error(
                    "DependencyKindNotAllowed",
                    f"{path}.kind",
                    f"{dep['kind']} ({dep['apiVersion']}) is not a kind the controller creates for a Workflow; allowed: {kinds}",
                )
            )
        elif not _dep_name(dep):
            problems.append(error("InvalidDependency", f"{path}.metadata.name", "a dependency needs a name"))
        elif dep.get("when") is not None:
            problems.append(
                error(
                    "UnsupportedDependency",
                    f"{path}.when",
                    "conditional dependencies are not expanded; render the Workflow so the condition is decided",
                )
            )
    if problems:
        raise CompileError(problems)
    return list(deps)


def _job_spec(workflow: Mapping[str, Any]) -> Mapping[str, Any]:
    template = (workflow.get("spec") or {}).get("jobTemplate") or {}
    spec = template.get("spec") if isinstance(template, Mapping) else None
    if not isinstance(spec, Mapping):
        raise CompileError([error("InvalidWorkflow", "spec.jobTemplate.spec", "required")])
    return spec


def _instantiate(dep: Mapping[str, Any], workflow: Mapping[str, Any], owner: dict[str, Any] | None) -> dict[str, Any]:
    obj = {k: copy.deepcopy(v) for k, v in dep.items() if k != "when"}
    meta = dict(obj.get("metadata") or {})
    if not is_cluster_scoped(dep):
        meta["namespace"] = workflow_namespace(workflow)
    meta["labels"] = managed_labels({**dict(meta.get("labels") or {}), LABEL_WORKFLOW: name_of(workflow, "Workflow")})
    meta["annotations"] = {**dict(meta.get("annotations") or {}), ANNOTATION_WORKFLOW_UID: uid_of(workflow, "Workflow")}
    if owner is not None and not is_cluster_scoped(dep):
        meta["ownerReferences"] = [owner]
    obj["metadata"] = meta
    return obj


def expand_workflow_dependencies(workflow: Mapping[str, Any], plan: Plan | None = None) -> list[dict[str, Any]]:
    """The workflow-scoped dependencies, in creation order, namespaced and owned by the Workflow.

    A Workflow with overrides needs its ``plan``: overrides can change the dependencies.
    """
    workflow = effective_workflow(workflow, plan)
    deps = workflow_dependencies(workflow)
    scoped, _ = classify(deps, _job_spec(workflow))
    chosen = [deps[i] for i in scoped]
    owner = owner_reference(workflow, "Workflow")
    return [_instantiate(chosen[i], workflow, owner) for i in creation_order(chosen)]


def job_dependency_set(
    workflow: Mapping[str, Any], total_groups: int, iterations: int, group: str, iteration: int
) -> tuple[list[Mapping[str, Any]], dict[str, str]]:
    """The job-scoped dependencies in creation order and the renames one Job applies to them."""
    deps = workflow_dependencies(workflow)
    _, scoped = classify(deps, _job_spec(workflow))
    chosen = [deps[i] for i in scoped]
    ordered = [chosen[i] for i in creation_order(chosen)]
    suffix = dependency_suffix(name_of(workflow, "Workflow"), total_groups, iterations, group, iteration)
    return ordered, job_replacements(ordered, suffix)


def expand_job_dependencies(
    workflow: Mapping[str, Any], plan: Plan, group: PlannedGroup, iteration: int, job: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The per-Job copies of the job-scoped dependencies, renamed, in creation order.

    They are owned by ``job`` once it has a UID (the controller creates them before the Job and
    sets the owner afterwards); until then they carry the Workflow UID annotation only.
    """
    workflow = effective_workflow(workflow, plan)
    ordered, renames = job_dependency_set(workflow, plan.total_groups, plan.iterations, group.name, iteration)
    job_meta = sub(job, "metadata")
    owner = owner_reference(job, "Job") if job_meta.get("uid") else None
    out = []
    for dep in ordered:
        obj = _instantiate(rename_value(dep, renames), workflow, owner)
        obj["metadata"]["labels"] = {**obj["metadata"]["labels"], LABEL_GROUP: group.name}
        out.append(obj)
    return out
