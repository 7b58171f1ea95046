"""The diagnose Certification that follows a failed one: one category, its failed run as the prior.

A failed category's Workflow knows which node groups ran and which failed. The diagnose of that
category should start there (``docs/diagnose.md``): its planner gives the nodes of the failed
groups more exposures and searches their paths first. This module turns a failed Certification
and its Workflows (plain objects, read by the caller) into the Certification that runs that
diagnose: the same target and settings, the one category with ``testScale: diagnose``, and the
groups in the ``nvcre.nvidia.com/diagnose-prior`` annotation, which the render passes on to the
diagnose Workflow. Pure: same objects, same document.

Only a failure that implicates nodes belongs in the prior: a Job whose nodes the health monitor
caught failing (``HardwareFailureDetected``), whose measurement missed its threshold
(``ThresholdViolation``) or whose workload failed on them (``WorkloadFailed``). A group that
failed because of something done to its Job (``WorkloadDeleted`` by an operator, a workload never
created or never scheduled) or because a clock ran out (``WorkloadStalled``, ``JobTimedOut``: a
slow log read or a short timeout ends a run as surely as a bad node) says nothing about its
nodes, and a prior built from it would send the diagnose after healthy ones. Such groups are left
out, and :class:`Composed` says which and why.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .diagnostics import CompileError, Diagnostic, error
from .vocabulary import (
    ANNOTATION_DIAGNOSE_PRIOR,
    API_VERSION,
    LABEL_CATEGORY_DOMAIN,
    LABEL_CATEGORY_VARIANT,
    LABEL_GROUP,
    LABEL_WORKFLOW,
)

__all__ = ["Composed", "PriorChoice", "choose_prior", "compose", "compose_diagnose", "diagnose_prior", "failed_categories"]

#: failed-node reasons that implicate the nodes they name
IMPLICATING = frozenset({"HardwareFailureDetected", "ThresholdViolation", "WorkloadFailed"})
#: a hardware finding stands whatever else ended the Job
HARDWARE = "HardwareFailureDetected"
#: Job endings that say nothing about its nodes, and why
NOT_ABOUT_NODES = {
    "WorkloadDeleted": "its workload was deleted by someone other than the controller",
    "WorkloadCreationError": "its workload could not be created",
    "WorkloadUnschedulable": "its pods were never scheduled",
    "WorkloadStalled": "it was stopped as stalled, which a slow log or a slow step causes as well as a node",
    "JobTimedOut": "it ran out of time, which a short timeout causes as well as a node",
    "JobCreationError": "its Job could not be built",
}

#: Kubernetes object names are at most this long; the suffix says what the object is
_NAME_LIMIT = 253
_SUFFIX = "-diagnose"


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def failed_categories(certification: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(domain, variant)`` of every category whose status is Failed, in status order."""
    rows = _list(_map(certification.get("status")).get("categoryStatuses"))
    return [(str(row.get("domain")), str(row.get("variant"))) for row in rows if isinstance(row, Mapping) and row.get("status") == "Failed"]


@dataclass(frozen=True)
class PriorChoice:
    """The prior of one Workflow, and each failed group left out of it with the reason."""

    prior: dict[str, Any] | None
    left_out: tuple[str, ...] = ()


def _true(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in _list(_map(obj.get("status")).get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def _jobs_of(workflow: Mapping[str, Any], group: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    name = _map(workflow.get("metadata")).get("name")
    ref = _map(group.get("jobRef")).get("name")
    found = []
    for job in jobs:
        meta = _map(job.get("metadata"))
        labels = _map(meta.get("labels"))
        if (labels.get(LABEL_WORKFLOW) == name and labels.get(LABEL_GROUP) == group.get("name")) or (ref and meta.get("name") == ref):
            found.append(job)
    return found


def _implicated(entries: Any, nodes: Sequence[str], reasons: frozenset[str]) -> list[str]:
    return sorted(
        {str(e.get("name")) for e in _list(entries) if isinstance(e, Mapping) and e.get("reason") in reasons and e.get("name") in nodes}
    )


def _judge_job(job: Mapping[str, Any], nodes: Sequence[str]) -> tuple[bool, str]:
    """Whether a failed Job implicates its nodes, and (when not) why."""
    entries = _map(job.get("status")).get("failedNodes")
    if _true(job, "HardwareFailed") is not None or _implicated(entries, nodes, frozenset({HARDWARE})):
        return True, ""
    failed = _true(job, "Failed")
    reason = str(failed.get("reason") or "") if failed is not None else ""
    if reason in NOT_ABOUT_NODES:
        return False, f"its Job ended {reason}: {NOT_ABOUT_NODES[reason]}"
    if _implicated(entries, nodes, IMPLICATING):
        return True, ""
    if failed is None and _true(job, "ValidationFailed") is None:
        return False, "its Job did not fail"
    return False, f"its Job ended {reason or 'ValidationFailed'} and blamed no node"


def _judge_group(
    workflow: Mapping[str, Any], group: Mapping[str, Any], nodes: Sequence[str], jobs: Sequence[Mapping[str, Any]], recorded: Any
) -> str:
    """ "" when the failed group implicates its nodes, else why it is left out of the prior."""
    own = _jobs_of(workflow, group, jobs)
    if not own:
        # the Jobs are gone: only the Workflow's record of hardware and measurement failures can speak for it
        if _implicated(recorded, nodes, frozenset({HARDWARE, "ThresholdViolation"})):
            return ""
        return "no Job or failed-node record shows a hardware or measurement failure on its nodes"
    whys = []
    for job in own:
        implicates, why = _judge_job(job, nodes)
        if implicates:
            return ""
        if why and why not in whys:
            whys.append(why)
    return "; ".join(whys) or "no Job of it failed on its nodes"


def choose_prior(workflow: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]] = (), failed_nodes: Any = ()) -> PriorChoice:
    """``{"groups": [{"nodes", "passed"}]}`` from a Workflow's finished groups: every group that
    passed, and every group that failed in a way that implicates its nodes (its ``jobs``, else the
    Workflow's ``failed_nodes`` record, say so); ``prior`` is None without any."""
    groups: list[dict[str, Any]] = []
    left_out: list[str] = []
    for group in _list(_map(_map(workflow.get("status")).get("orchestration")).get("groups")):
        if not isinstance(group, Mapping) or group.get("phase") not in ("Succeeded", "Failed"):
            continue
        nodes = sorted({str(node) for node in _list(group.get("nodes")) if node})
        if not nodes:
            continue
        if group.get("phase") == "Failed":
            why = _judge_group(workflow, group, nodes, jobs, failed_nodes)
            if why:
                left_out.append(f"{group.get('name')} ({', '.join(nodes)}): {why}")
                continue
        groups.append({"nodes": nodes, "passed": group.get("phase") == "Succeeded"})
    return PriorChoice({"groups": groups} if groups else None, tuple(left_out))


def diagnose_prior(workflow: Mapping[str, Any], jobs: Sequence[Mapping[str, Any]] = (), failed_nodes: Any = ()) -> dict[str, Any] | None:
    """The prior of :func:`choose_prior` alone."""
    return choose_prior(workflow, jobs, failed_nodes).prior


def _workflow_of(workflows: Sequence[Mapping[str, Any]], domain: str, variant: str) -> Mapping[str, Any] | None:
    for workflow in workflows:
        labels = _map(_map(workflow.get("metadata")).get("labels"))
        if labels.get(LABEL_CATEGORY_DOMAIN) == domain and labels.get(LABEL_CATEGORY_VARIANT) == variant:
            return workflow
    return None


def _choose(certification: Mapping[str, Any], category: str | None) -> tuple[tuple[str, str] | None, list[Diagnostic]]:
    failed = failed_categories(certification)
    if category is None:
        if len(failed) == 1:
            return failed[0], []
        if not failed:
            return None, [
                error("NoFailedCategory", "status.categoryStatuses", "no category of this Certification failed: nothing to diagnose")
            ]
        names = ", ".join(f"{d}/{v}" for d, v in failed)
        return None, [error("CategoryRequired", "--category", f"several categories failed ({names}): choose one with --category")]
    domain, _, variant = category.partition("/")
    if (domain, variant) not in failed:
        return None, [error("CategoryNotFailed", "--category", f"{category} is not a failed category of this Certification")]
    return (domain, variant), []


@dataclass(frozen=True)
class Composed:
    """The diagnose Certification, and the failed groups its prior leaves out (with the reason)."""

    document: dict[str, Any]
    left_out: tuple[str, ...] = ()


def compose(
    certification: Mapping[str, Any],
    workflows: Sequence[Mapping[str, Any]],
    *,
    jobs: Sequence[Mapping[str, Any]] = (),
    failed_nodes: Mapping[str, Any] | None = None,
    category: str | None = None,
    name: str | None = None,
) -> Composed:
    """The diagnose Certification for one failed category; raises :class:`CompileError`.

    ``jobs`` are the run's Jobs and ``failed_nodes`` each Workflow's failed-node record (by
    Workflow name): what tells a failure on the nodes from one done to the run."""
    chosen, diags = _choose(certification, category)
    if chosen is None:
        raise CompileError(diags)
    domain, variant = chosen
    spec = copy.deepcopy(dict(_map(certification.get("spec"))))
    original = next(
        (c for c in _list(spec.get("categories")) if isinstance(c, Mapping) and (c.get("domain"), c.get("variant")) == chosen),
        {"domain": domain, "variant": variant},
    )
    options = dict(_map(original.get("options")))
    options["testScale"] = "diagnose"
    spec["categories"] = [{**dict(original), "options": options}]
    meta = _map(certification.get("metadata"))
    base = str(meta.get("name") or "certification")
    metadata: dict[str, Any] = {"name": name or base[: _NAME_LIMIT - len(_SUFFIX)] + _SUFFIX}
    if meta.get("namespace"):
        metadata["namespace"] = meta["namespace"]
    workflow = _workflow_of(workflows, domain, variant)
    choice = PriorChoice(None)
    if workflow is not None:
        recorded = (failed_nodes or {}).get(str(_map(workflow.get("metadata")).get("name")), ())
        choice = choose_prior(workflow, jobs, recorded)
    if choice.prior is not None:
        metadata["annotations"] = {ANNOTATION_DIAGNOSE_PRIOR: json.dumps(choice.prior, sort_keys=True, separators=(",", ":"))}
    document = {"apiVersion": API_VERSION, "kind": "Certification", "metadata": metadata, "spec": spec}
    return Composed(document, choice.left_out)


def compose_diagnose(
    certification: Mapping[str, Any],
    workflows: Sequence[Mapping[str, Any]],
    *,
    jobs: Sequence[Mapping[str, Any]] = (),
    failed_nodes: Mapping[str, Any] | None = None,
    category: str | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The document of :func:`compose` alone."""
    return compose(certification, workflows, jobs=jobs, failed_nodes=failed_nodes, category=category, name=name).document
