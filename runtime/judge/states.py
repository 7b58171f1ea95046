"""Per-object states for the gauges that no run's verdict carries, read from the informer caches.

A Certification's or WorkloadRun's verdict (``judge.verdict``) already holds the lifecycle of
its own Workflows and Jobs. These readers cover the rest, with the judge's own readers so the
two can never read an object differently:

* the lifecycle of any Workflow or Job (also one that no Certification or WorkloadRun owns, such
  as a hand-applied Workflow): :func:`workflow_state`, :func:`job_state`;
* the nodes a Job's health monitor flagged: :func:`hardware_failed_nodes`;
* a GoodputMeasurement's numbers while it measures, and its ratio once complete:
  :func:`goodput_state`;
* the nodes of a topology Workflow that passed or failed, per topology domain:
  :func:`topology_nodes`.

Pure: plain dicts in, frozen records out; nothing here reads a clock or a cluster.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.vocabulary import LABEL_CERTIFICATION, LABEL_WORKFLOW

from .health import HARDWARE_FAILURE_REASON
from .model import JobState, WorkflowState
from .reading import (
    Obj,
    as_list,
    as_map,
    conditions_of,
    job_ref_name,
    labels_of,
    lifecycle_from_conditions,
    name_of,
    namespace_of,
    status_of,
    true_condition,
)

__all__ = [
    "GOODPUT_FIELDS",
    "GoodputState",
    "TopologyNode",
    "goodput_state",
    "hardware_failed_nodes",
    "job_state",
    "job_workflow",
    "topology_nodes",
    "workflow_state",
]

TIMED_OUT = "JobTimedOut"

#: gauge name -> the GoodputMeasurement status field it shows (the ratio first)
GOODPUT_FIELDS: tuple[tuple[str, str], ...] = (
    ("nvcre_goodput_ratio", "result"),
    ("nvcre_goodput_avg_tflops_per_gpu", "avgTFLOPSPerGPU"),
    ("nvcre_goodput_avg_step_time_seconds", "avgStepTimeSec"),
    ("nvcre_goodput_training_time_seconds", "trainingTimeSec"),
    ("nvcre_goodput_reschedule_time_seconds", "rescheduleTimeSec"),
    ("nvcre_goodput_resume_time_seconds", "resumeTimeSec"),
    ("nvcre_goodput_checkpoint_save_time_seconds", "checkpointSaveTimeSec"),
    ("nvcre_goodput_warmup_time_seconds", "warmupTimeSec"),
    ("nvcre_goodput_non_warmup_time_seconds", "nonWarmupTimeSec"),
    ("nvcre_goodput_lost_work_time_seconds", "lostWorkTimeSec"),
)
#: point-in-time numbers of the current attempt: absent (not zero) until it has measured them,
#: so a restarted workload shows none until its first new sample
_ATTEMPT_ONLY = frozenset({"avgTFLOPSPerGPU", "avgStepTimeSec"})


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def workflow_state(workflow: Obj) -> WorkflowState | None:
    """The Workflow's lifecycle, None while no lifecycle condition is true."""
    state = lifecycle_from_conditions(workflow)
    if not state:
        return None
    return WorkflowState(name_of(workflow), namespace_of(workflow), str(labels_of(workflow).get(LABEL_CERTIFICATION) or ""), state)


def job_workflow(job: Obj) -> str:
    """The Workflow a Job reports under: its ``nvcre.nvidia.com/workflow`` label, else its
    controlling Workflow owner, else ''."""
    label = labels_of(job).get(LABEL_WORKFLOW)
    if isinstance(label, str) and label:
        return label
    for ref in as_list(as_map(job.get("metadata")).get("ownerReferences")):
        if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("controller") and ref.get("name"):
            return str(ref["name"])
    return ""


def job_state(job: Obj, workflow: str | None = None) -> JobState | None:
    """The Job's lifecycle (timed out marked), None while no lifecycle condition is true."""
    state = lifecycle_from_conditions(job)
    if not state:
        return None
    failed = true_condition(conditions_of(job), "Failed")
    return JobState(
        name_of(job),
        namespace_of(job),
        job_workflow(job) if workflow is None else workflow,
        state,
        bool(failed and failed.get("reason") == TIMED_OUT),
    )


def hardware_failed_nodes(job: Obj) -> int | None:
    """How many nodes the Job's health monitor flagged; None unless ``HardwareFailed`` is true."""
    if true_condition(conditions_of(job), "HardwareFailed") is None:
        return None
    names = {
        str(entry.get("name"))
        for entry in as_list(status_of(job).get("failedNodes"))
        if isinstance(entry, Mapping) and entry.get("name") and entry.get("reason") == HARDWARE_FAILURE_REASON
    }
    return len(names)


@dataclass(frozen=True)
class GoodputState:
    """The gauges of one GoodputMeasurement: gauge name -> value, in :data:`GOODPUT_FIELDS` order."""

    name: str
    namespace: str
    job: str
    values: tuple[tuple[str, float], ...]


def goodput_state(measurement: Obj) -> GoodputState | None:
    """What a GoodputMeasurement shows: every number while it measures (a missing cumulative
    time reads 0), only the ratio once complete, nothing before its first sample."""
    status = status_of(measurement)
    conds = conditions_of(measurement)
    complete = true_condition(conds, "Complete") is not None
    measuring = true_condition(conds, "Measuring") is not None
    ratio = _number(status.get("result"))
    if complete:
        if ratio is None:
            return None
        values: tuple[tuple[str, float], ...] = ((GOODPUT_FIELDS[0][0], ratio),)
    elif measuring or ratio is not None:
        found = []
        for gauge, field_name in GOODPUT_FIELDS:
            value = _number(status.get(field_name))
            if value is None and field_name in _ATTEMPT_ONLY:
                continue
            found.append((gauge, value if value is not None else 0.0))
        values = tuple(found)
    else:
        return None
    return GoodputState(name_of(measurement), namespace_of(measurement), job_ref_name(measurement), values)


@dataclass(frozen=True)
class TopologyNode:
    """One node of a topology Workflow's finished group."""

    namespace: str
    workflow: str
    topology_key: str
    domain: str
    node: str
    validated: bool


def topology_nodes(workflow: Obj, node_labels: Callable[[str], Mapping[str, Any]]) -> Iterator[TopologyNode]:
    """The nodes of the Workflow's current groups that finished: failed (every node of a Failed
    group) or validated (a node of a Succeeded group that failed in no group), each under its
    topology domain: the group's domain when it has one, else the node's value of the topology
    key (``node_labels(node)``); a node with no domain is left out. Nothing when the Workflow
    has no ``spec.orchestration.topology.topologyKey``."""
    key = as_map(as_map(as_map(workflow.get("spec")).get("orchestration")).get("topology")).get("topologyKey")
    if not isinstance(key, str) or not key:
        return
    groups = [g for g in as_list(as_map(status_of(workflow).get("orchestration")).get("groups")) if isinstance(g, Mapping)]
    namespace, name = namespace_of(workflow), name_of(workflow)

    def domain_of(node: str, domains: list[Any]) -> str:
        if len(domains) == 1:
            return str(domains[0] or "")
        return str(node_labels(node).get(key) or "")

    failed: dict[tuple[str, str], None] = {}
    for group in groups:
        if group.get("phase") == "Failed":
            domains = as_list(group.get("domains"))
            for node in as_list(group.get("nodes")):
                failed.setdefault((str(node), domain_of(str(node), domains)), None)
    failed_names = {node for node, _ in failed}
    validated: dict[tuple[str, str], None] = {}
    for group in groups:
        if group.get("phase") == "Succeeded":
            domains = as_list(group.get("domains"))
            for node in as_list(group.get("nodes")):
                if str(node) not in failed_names:
                    validated.setdefault((str(node), domain_of(str(node), domains)), None)
    for passed, found in ((True, validated), (False, failed)):
        for node, domain in sorted(found):
            if node and domain:
                yield TopologyNode(namespace, name, key, domain, node, passed)
