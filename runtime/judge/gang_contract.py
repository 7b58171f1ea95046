"""The gang-scheduling contract a Workflow's effective manifests must keep before any child exists.

``spec.gangScheduler`` records the resolved intent (scheduler, queue, queue label key) and sits
out of the overrides' reach. After the overrides are applied, :func:`check_gang_contract` holds
the effective spec to it:

* the workload object's queue label: an override that removed it gets it back in the working
  copy the children are made from (never in the stored Workflow); one that changed it fails;
* the TrainJob's runtime must be a TrainingRuntime shipped in ``spec.dependencies``; for each of
  its replicated jobs, with the TrainJob's ``runtimePatches`` folded in, the Job template and
  the pod template carry the queue label with the configured queue, and the pods name the
  configured scheduler. A missing or different value fails and is never repaired.

A failure is reported as ``GangSchedulingConflict`` with one message per problem. A Workflow
without ``spec.gangScheduler`` is left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.workflow_paths import ReplicatedJob, dig, find_runtime, replicated_jobs, runtime_patch_jobs

__all__ = ["REASON_GANG_CONFLICT", "GangCheck", "check_gang_contract"]

REASON_GANG_CONFLICT = "GangSchedulingConflict"
_WORKLOAD_LABELS = ("jobTemplate", "spec", "workloadMetadata", "labels")
_WORKLOAD_LABELS_PATH = "spec.jobTemplate.spec.workloadMetadata.labels"
_JOB_LABELS = ("template", "metadata", "labels")
_POD_LABELS = ("template", "spec", "template", "metadata", "labels")
_POD_SPEC = ("template", "spec", "template", "spec")


@dataclass(frozen=True)
class GangCheck:
    """What the check found: ``problems`` (empty when the contract holds) and the spec to build
    children from (``spec``, the effective one with a removed workload queue label put back,
    ``restored`` when that happened)."""

    problems: tuple[str, ...]
    spec: Mapping[str, Any]
    restored: bool = False

    @property
    def message(self) -> str:
        return "; ".join(self.problems)


def check_gang_contract(stored: Mapping[str, Any], effective: Mapping[str, Any] | None) -> GangCheck:
    """Hold ``effective`` (the Workflow spec after overrides) to ``stored``'s ``spec.gangScheduler``."""
    spec: Mapping[str, Any] = effective if effective is not None else (stored.get("spec") or {})
    intent = (stored.get("spec") or {}).get("gangScheduler")
    if not isinstance(intent, Mapping) or not intent.get("schedulerName"):
        return GangCheck((), spec)
    scheduler = str(intent["schedulerName"])
    queue = str(intent.get("queue") or "default-queue")
    key = str(intent.get("queueLabelKey") or "kai.scheduler/queue")
    problems: list[str] = []
    restored = False
    labels = dig(spec, _WORKLOAD_LABELS)
    if isinstance(labels, Mapping) and key in labels and labels[key] != queue:
        problems.append(f'{_WORKLOAD_LABELS_PATH}["{key}"]: conflicting label value "{labels[key]}", expected "{queue}"')
    elif not isinstance(labels, Mapping) or key not in labels:
        spec, restored = _with_workload_label(spec, key, queue), True
    problems += _runtime_problems(spec, scheduler, queue, key)
    return GangCheck(tuple(problems), spec, restored)


def _with_workload_label(spec: Mapping[str, Any], key: str, queue: str) -> dict[str, Any]:
    """A copy of ``spec`` whose workload object carries ``key: queue`` again."""
    restored = copy.deepcopy(dict(spec))
    labels = dig(restored, _WORKLOAD_LABELS, create=True)
    if isinstance(labels, dict):
        labels[key] = queue
    return restored


def _runtime_problems(spec: Mapping[str, Any], scheduler: str, queue: str, key: str) -> list[str]:
    lookup = find_runtime({"spec": spec})
    if lookup.runtime is None:
        return [f"gangScheduler is configured but {lookup.problem or 'the TrainJob has no TrainingRuntime'}"]
    runtime_name = dig(lookup.runtime.value, ("metadata", "name"))
    patches = runtime_patch_jobs({"spec": spec})
    problems: list[str] = []
    for job in replicated_jobs(lookup.runtime):
        layers = [job, *(p for p in patches if p.name == job.name)]
        owner = f'TrainingRuntime "{runtime_name}" replicatedJob "{job.name}"'
        for parts, where in ((_JOB_LABELS, "template.metadata.labels"), (_POD_LABELS, "template.spec.template.metadata.labels")):
            value = _folded(layers, parts, key)
            if value is None:
                problems.append(f'gangScheduler is configured with queue "{queue}" but {owner} has no label "{key}" on {where}')
            elif value != queue:
                problems.append(f'gangScheduler is configured with queue "{queue}" but {owner} sets label "{key}" to "{value}" on {where}')
        named = _folded(layers, _POD_SPEC, "schedulerName")
        if named != scheduler:
            shown = f'"{named}"' if named is not None else "no schedulerName"
            problems.append(
                f'gangScheduler is configured with schedulerName "{scheduler}" but {owner} sets {shown} on template.spec.template.spec'
            )
    return problems


def _folded(layers: list[ReplicatedJob], parts: tuple[str, ...], key: str) -> Any:
    """``key`` of the mapping at ``parts`` after folding ``layers`` in order (a later one wins)."""
    value = None
    for layer in layers:
        found = dig(layer.job, parts)
        if isinstance(found, Mapping) and key in found:
            value = found[key]
    return value
