"""Builds THE verdict model from the objects the API server returns (pure).

``certification_verdict(certification, workflows, jobs, measurements, failed_nodes)`` reads a
Certification and the Workflows, Jobs, Bandwidth/GoodputMeasurements and failed-node entries
that belong to it (plain dicts, status shapes as ``nvcre.compiler.api`` defines them) and
returns a ``CertificationVerdict``; ``workloadrun_verdict`` does the same for a WorkloadRun.
``failed_nodes`` is either a mapping from Workflow name to ``{name, reason, message}`` entries
or the failed-nodes ConfigMaps themselves. Jobs still present add their own entries, attributed
by ``judge.attribution`` (so a timed-out Job that ran names its nodes even before they reach a
ConfigMap). Each category is judged by :mod:`.category`; this module decides which objects
belong to which Workflow, and assembles the run's header, result and object states. ``now``
(optional) dates the runtime of categories still running; without it their runtime is left
out. Nothing here reads a clock or a cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nvcre.compiler.nodelists import read_failed
from nvcre.compiler.vocabulary import LABEL_CATEGORY_DOMAIN, LABEL_CATEGORY_VARIANT, LABEL_CERTIFICATION, LABEL_WORKFLOW

from .attribution import group_nodes, seed_failed_nodes
from .category import NEXT_STEP_DIAGNOSE, bandwidth_rows, category_verdict, is_diagnose
from .measured import group_entries, measurement_failure, with_measurement_failures
from .model import (
    FAILED,
    INCOMPLETE,
    PASSED,
    RUNNING,
    CategoryVerdict,
    CertificationVerdict,
    JobState,
    MeasurementState,
    NodeResult,
    WorkflowState,
)
from .reading import (
    Obj,
    as_int,
    as_list,
    as_map,
    conditions_of,
    dedupe_failed,
    failed_node_entries,
    job_ref_name,
    labels_of,
    lifecycle,
    lifecycle_from_conditions,
    name_of,
    namespace_of,
    status_of,
    true_condition,
)

__all__ = [
    "NEXT_STEP_DIAGNOSE",
    "certification_verdict",
    "failed_nodes_from_configmap",
    "lifecycle",
    "lifecycle_from_conditions",
    "workloadrun_verdict",
]

#: the entries of a failed-nodes ConfigMap ([] when unreadable); kept under its older name
failed_nodes_from_configmap = read_failed


# --------------------------------------------------------------------------------------------
# Ownership.


def _by_workflow(objects: Iterable[Obj], workflow_names: set[str], job_workflow: Mapping[str, str]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        owner = labels_of(obj).get(LABEL_WORKFLOW)
        if not isinstance(owner, str) or owner not in workflow_names:
            owner = None
            for ref in as_list(as_map(obj.get("metadata")).get("ownerReferences")):
                if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflow_names:
                    owner = str(ref["name"])
            if owner is None:
                owner = job_workflow.get(job_ref_name(obj))
        if owner is not None:
            out.setdefault(owner, []).append(obj)
    return out


def _states(
    workflows: Mapping[str, Obj], jobs: Sequence[Obj], measurements: Sequence[Obj], job_workflow: Mapping[str, str]
) -> tuple[tuple[WorkflowState, ...], tuple[JobState, ...], tuple[MeasurementState, ...]]:
    wf_states = tuple(
        WorkflowState(name, namespace_of(wf), str(labels_of(wf).get(LABEL_CERTIFICATION) or ""), state)
        for name, wf in sorted(workflows.items())
        if (state := lifecycle_from_conditions(wf))
    )
    job_states = []
    for job in sorted(jobs, key=name_of):
        state = lifecycle_from_conditions(job)
        if not state:
            continue
        failed = true_condition(conditions_of(job), "Failed")
        job_states.append(
            JobState(
                name_of(job),
                namespace_of(job),
                job_workflow.get(name_of(job), ""),
                state,
                bool(failed and failed.get("reason") == "JobTimedOut"),
            )
        )
    bm_states = []
    for bm in sorted(measurements, key=name_of):
        if bm.get("kind") != "BandwidthMeasurement":
            continue
        job_name = job_ref_name(bm)
        complete = true_condition(conditions_of(bm), "Complete") is not None
        bm_states.append(
            MeasurementState(
                name_of(bm),
                namespace_of(bm),
                job_name,
                job_workflow.get(job_name, str(labels_of(bm).get(LABEL_WORKFLOW) or "")),
                str(as_map(bm.get("spec")).get("testType") or ""),
                complete,
                bandwidth_rows(bm),
                failure.reason if (failure := measurement_failure(bm)) is not None else "",
            )
        )
    return wf_states, tuple(job_states), tuple(bm_states)


def _job_workflows(jobs: Sequence[Obj], workflow_names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for job in jobs:
        owner = labels_of(job).get(LABEL_WORKFLOW)
        if not isinstance(owner, str) or owner not in workflow_names:
            owner = next(
                (
                    str(ref["name"])
                    for ref in as_list(as_map(job.get("metadata")).get("ownerReferences"))
                    if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflow_names
                ),
                None,
            )
        if owner is not None:
            out[name_of(job)] = owner
    return out


def _result(status: str, excluded: Sequence[str], categories: Sequence[CategoryVerdict] = ()) -> str:
    if status == "Failed":
        return FAILED
    if status == "Succeeded" and any(group.measurement_failure for category in categories for group in category.groups):
        return FAILED  # a Job failed on its bandwidth measurement (``judge.measured``)
    if status == "Succeeded":
        return INCOMPLETE if excluded else PASSED
    return RUNNING


def _header(workflows: Iterable[Obj]) -> tuple[str, str, int, tuple[str, ...], str]:
    platform = gpu = reason = ""
    total = 0
    excluded: set[str] = set()
    for workflow in workflows:
        orch = as_map(status_of(workflow).get("orchestration"))
        platform = platform or str(orch.get("detectedPlatform") or "")
        gpu = gpu or str(orch.get("detectedGPUArchitecture") or "")
        total = max(total, as_int(orch.get("totalNodes")))
        excluded.update(str(n) for n in as_list(orch.get("excludedNodes")))
        reason = reason or str(orch.get("exclusionReason") or "")
    return platform, gpu, total, tuple(sorted(excluded)), reason


def _category_rows(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[list[Mapping[str, Any]], dict[tuple[str, str], Mapping[str, Any]]]:
    """The status rows (or, before the first status, one Pending row per spec category) and each category's options."""
    statuses = [s for s in as_list(status.get("categoryStatuses")) if isinstance(s, Mapping)]
    spec_categories = [c for c in as_list(spec.get("categories")) if isinstance(c, Mapping)]
    options_of = {(str(c.get("domain")), str(c.get("variant"))): as_map(c.get("options")) for c in spec_categories}
    rows = statuses or [{"domain": c.get("domain"), "variant": c.get("variant"), "status": "Pending"} for c in spec_categories]
    return rows, options_of


def _row_workflow(wf_name: str, domain: str, variant: str, wf_by_name: Mapping[str, Obj]) -> Obj | None:
    """A status row's Workflow: by its reference, else the one labelled with the row's category."""
    workflow = wf_by_name.get(wf_name)
    if workflow is not None:
        return workflow
    for wf in wf_by_name.values():
        labels = labels_of(wf)
        if labels.get(LABEL_CATEGORY_DOMAIN) == domain and labels.get(LABEL_CATEGORY_VARIANT) == variant:
            return wf
    return None


def _run_entries(
    failed_nodes: Sequence[Mapping[str, Any]] | Sequence[Obj] | None, workflows: Mapping[str, Obj], workflow: Obj | None
) -> list[Mapping[str, Any]]:
    """A WorkloadRun's failed-node entries, given as ConfigMaps or as entries already decoded."""
    if failed_nodes is None or workflow is None:
        return []
    items = list(failed_nodes)
    if items and all(isinstance(i, Mapping) and "binaryData" in i for i in items):
        return list(failed_node_entries(items, workflows).get(name_of(workflow), []))
    return [i for i in items if isinstance(i, Mapping)]


def _node_results(category: CategoryVerdict, failed_names: set[str]) -> tuple[NodeResult, ...]:
    """Per node: Failed (blamed, or in a failed group), Passed (group succeeded) or Running."""
    results = []
    for group in category.groups:
        for node in group.nodes:
            if node in failed_names or group.failed:
                state = "Failed"
            elif group.phase == "Succeeded":
                state = "Passed"
            else:
                state = "Running"
            results.append(NodeResult(node, group.name, state))
    return tuple(sorted(results, key=lambda r: (r.group, r.name)))


# --------------------------------------------------------------------------------------------
# Entry points.


# Long: the signature and the one record of every verdict field; the per-row work is in the helpers above.
def certification_verdict(
    certification: Obj,
    workflows: Sequence[Obj] = (),
    jobs: Sequence[Obj] = (),
    measurements: Sequence[Obj] = (),
    failed_nodes: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[Obj] | None = None,
    *,
    now: datetime | None = None,
) -> CertificationVerdict:
    """The verdict of a Certification from its objects."""
    spec = as_map(certification.get("spec"))
    cert_status = status_of(certification)
    jobs = with_measurement_failures(jobs, measurements)
    wf_by_name = {name_of(wf): wf for wf in workflows if isinstance(wf, Mapping)}
    job_workflow = _job_workflows(jobs, set(wf_by_name))
    jobs_of = _by_workflow(jobs, set(wf_by_name), job_workflow)
    measurements_of = _by_workflow(measurements, set(wf_by_name), job_workflow)
    entries_of = failed_node_entries(failed_nodes, wf_by_name)

    rows, options_of = _category_rows(spec, cert_status)

    categories: list[CategoryVerdict] = []
    failed_entries: list[Mapping[str, Any]] = []
    used: list[Obj] = []
    for row in rows:
        domain, variant = str(row.get("domain") or ""), str(row.get("variant") or "")
        wf_name = str(as_map(row.get("workflowRef")).get("name") or "")
        workflow = _row_workflow(wf_name, domain, variant, wf_by_name)
        wf_key = name_of(workflow) if workflow is not None else ""
        if workflow is not None:
            used.append(workflow)
        entries = entries_of.get(wf_key, [])
        wf_jobs = jobs_of.get(wf_key, [])
        fallback = ""
        if workflow is None and wf_name and row.get("status") == "Failed":
            fallback = f"its Workflow {wf_name} was deleted before it finished"
        status_text = str(row.get("status") or "Pending")
        options = options_of.get((domain, variant), {})
        wf_measurements = measurements_of.get(wf_key, [])
        categories.append(
            category_verdict(domain, variant, status_text, workflow, wf_jobs, wf_measurements, entries, spec, options, fallback, now)
        )
        failed_entries.extend(entries)
        if workflow is None or not is_diagnose(workflow):
            # Under diagnose a failed Job is evidence, not blame: only the confirmed nodes count.
            failed_entries.extend(group_entries(categories[-1].groups))
            for job in wf_jobs:
                failed_entries.extend(seed_failed_nodes(job, group_nodes(job)))

    status = lifecycle(certification)
    platform, gpu, total, excluded, exclusion_reason = _header(used)
    wf_states, job_states, bm_states = _states(wf_by_name, jobs, measurements, job_workflow)
    return CertificationVerdict(
        kind="Certification",
        name=name_of(certification),
        namespace=namespace_of(certification),
        status=status,
        result=_result(status, excluded, categories),
        platform=platform,
        gpu=gpu,
        total_nodes=total,
        excluded_nodes=excluded,
        exclusion_reason=exclusion_reason,
        categories=tuple(categories),
        failed_nodes=dedupe_failed(failed_entries),
        workflows=wf_states,
        jobs=job_states,
        measurements=bm_states,
    )


def workloadrun_verdict(
    workloadrun: Obj,
    workflow: Obj | None = None,
    jobs: Sequence[Obj] = (),
    measurements: Sequence[Obj] = (),
    failed_nodes: Sequence[Mapping[str, Any]] | Sequence[Obj] | None = None,
    *,
    now: datetime | None = None,
) -> CertificationVerdict:
    """The verdict of a WorkloadRun: one category ``workloadrun/<name>`` plus per-node results."""
    name = name_of(workloadrun)
    run_status = status_of(workloadrun)
    jobs = with_measurement_failures(jobs, measurements)
    status = lifecycle(workloadrun) or "Pending"
    workflows = {name_of(workflow): workflow} if workflow is not None else {}
    job_workflow = _job_workflows(jobs, set(workflows)) if workflows else {}
    if workflow is not None:
        job_workflow = {name_of(job): name_of(workflow) for job in jobs} | job_workflow
    entries = _run_entries(failed_nodes, workflows, workflow)
    spec = as_map(workloadrun.get("spec"))
    fallback = ""
    failed_cond = true_condition(conditions_of(workloadrun), "Failed")
    if failed_cond is not None:
        fallback = str(failed_cond.get("message") or "")
    category = category_verdict("workloadrun", name, status, workflow, list(jobs), list(measurements), entries, spec, {}, fallback, now)
    failed_entries: list[Mapping[str, Any]] = [*entries, *group_entries(category.groups)]
    for job in jobs:
        failed_entries.extend(seed_failed_nodes(job, group_nodes(job)))
    failed = dedupe_failed(failed_entries)
    platform, gpu, total, excluded, exclusion_reason = _header(workflows.values())
    wf_states, job_states, bm_states = _states(workflows, jobs, measurements, job_workflow)
    return CertificationVerdict(
        kind="WorkloadRun",
        name=name,
        namespace=namespace_of(workloadrun),
        status=status,
        result=_result(status, (), (category,)),
        platform=platform or str(run_status.get("detectedPlatform") or ""),
        gpu=gpu or str(run_status.get("detectedGPUArchitecture") or ""),
        total_nodes=total,
        excluded_nodes=excluded,
        exclusion_reason=exclusion_reason,
        categories=(category,),
        failed_nodes=failed,
        node_results=_node_results(category, {node.name for node in failed}),
        workflows=wf_states,
        jobs=job_states,
        measurements=bm_states,
    )
