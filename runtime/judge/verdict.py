"""Builds THE verdict model from the objects the API server returns.

``certification_verdict(certification, workflows, jobs, measurements, failed_nodes)`` reads a
Certification and the Workflows, Jobs, Bandwidth/GoodputMeasurements and failed-node entries
that belong to it (plain dicts, status shapes as ``nvcre.compiler.api`` defines them) and
returns a ``CertificationVerdict``; ``workloadrun_verdict`` does the same for a WorkloadRun.
``failed_nodes`` is either a mapping from Workflow name to ``{name, reason, message}`` entries
or the failed-nodes ConfigMaps themselves. Jobs still present add their own entries, attributed
by ``judge.attribution`` (so a timed-out Job that ran names its nodes even before they reach a
ConfigMap). A group whose Job restarted its workload from a checkpoint (``status.restartCount``
above 0) carries the restarts used and allowed (``spec.checkpoint.maxRestarts``) and the times its
GoodputMeasurement counted for them. ``now`` (optional) dates the runtime of categories
still running; without it their runtime is left out. Nothing here reads a clock or a cluster.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..measure.nccl import results_from_status
from ..measure.profile import parse_rfc3339
from ..measure.timefmt import rfc3339
from .model import (
    FAILED,
    INCOMPLETE,
    PASSED,
    RUNNING,
    BandwidthPoint,
    CategoryVerdict,
    CertificationVerdict,
    DiagnosisVerdict,
    FailedNode,
    FailureLog,
    GroupVerdict,
    InfrastructureFaultVerdict,
    IterationVerdict,
    JobState,
    MeasurementState,
    NodeResult,
    RestartVerdict,
    TrainingMetrics,
    WorkflowState,
)
from .attribution import group_nodes, seed_failed_nodes
from .thresholds import bandwidth_is_final, evaluate_one

__all__ = [
    "NEXT_STEP_DIAGNOSE",
    "certification_verdict",
    "failed_nodes_from_configmap",
    "lifecycle",
    "workloadrun_verdict",
]

GROUP = "nvcre.nvidia.com"
WORKFLOW_LABEL = f"{GROUP}/workflow"
GROUP_LABEL = f"{GROUP}/group"
PLANNER_ANNOTATION = f"{GROUP}/diagnose-planner"
CERT_LABEL = f"{GROUP}/certification"
SCALE_ANNOTATION = f"{GROUP}/requested-test-scale"
GROUP_NODES_ANNOTATION = f"{GROUP}/group-nodes"
FAILED_NODES_KEY = "failed-nodes.json.gz"

NEXT_STEP_DIAGNOSE = (
    "rerun this category with testScale: diagnose; it bisects the group to separate a node-local fault from one on the path between nodes"
)

Obj = Mapping[str, Any]


# --------------------------------------------------------------------------------------------
# Small readers over API dicts.


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _name(obj: Obj) -> str:
    return str(_map(obj.get("metadata")).get("name") or "")


def _namespace(obj: Obj) -> str:
    return str(_map(obj.get("metadata")).get("namespace") or "")


def _labels(obj: Obj) -> Mapping[str, Any]:
    return _map(_map(obj.get("metadata")).get("labels"))


def _annotations(obj: Obj) -> Mapping[str, Any]:
    return _map(_map(obj.get("metadata")).get("annotations"))


def _status(obj: Obj) -> Mapping[str, Any]:
    return _map(obj.get("status"))


def _conditions(obj: Obj) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for cond in _list(_status(obj).get("conditions")):
        if isinstance(cond, Mapping) and isinstance(cond.get("type"), str):
            found[cond["type"]] = cond
    return found


def _true(conds: Mapping[str, Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    cond = conds.get(kind)
    return cond if cond is not None and cond.get("status") == "True" else None


def lifecycle(obj: Obj) -> str:
    """Failed > Succeeded > InProgress over true conditions, else ``status.phase``, else ""."""
    conds = _conditions(obj)
    for kind in ("Failed", "Succeeded", "InProgress"):
        if _true(conds, kind):
            return kind
    phase = _status(obj).get("phase")
    return str(phase) if phase in ("Pending", "InProgress", "Succeeded", "Failed") else ""


def _time(text: Any) -> datetime | None:
    return parse_rfc3339(text) if isinstance(text, str) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _seconds(text: Any) -> float | None:
    """A non-negative decimal-string duration, or None when absent or unreadable."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _positive(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


# --------------------------------------------------------------------------------------------
# Failed nodes.


#: the largest decompressed node-results payload read (a 1 MiB object holds far less than this)
_MAX_DECODED = 64 * 1024 * 1024


def failed_nodes_from_configmap(configmap: Obj) -> list[dict[str, Any]]:
    """The entries of a ``failed-nodes-<uid8>`` ConfigMap; an unreadable payload gives none."""
    data = _map(configmap.get("binaryData")).get(FAILED_NODES_KEY)
    if not isinstance(data, str):
        return []
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(base64.b64decode(data, validate=True))) as fh:
            raw = fh.read(_MAX_DECODED + 1)
        if len(raw) > _MAX_DECODED:
            return []  # a payload no controller writes: refuse it rather than inflate it
        decoded = json.loads(raw.decode("utf-8"))
    except (binascii.Error, OSError, EOFError, ValueError):
        return []
    return [dict(entry) for entry in _list(decoded) if isinstance(entry, Mapping) and entry.get("name")]


def _failed_node_entries(failed_nodes: Any, workflows: Mapping[str, Obj]) -> dict[str, list[Mapping[str, Any]]]:
    """Failed-node entries per Workflow name, from a mapping or from ConfigMaps."""
    if failed_nodes is None:
        return {}
    if isinstance(failed_nodes, Mapping):
        return {str(k): [e for e in _list(v) if isinstance(e, Mapping)] for k, v in failed_nodes.items()}
    by_configmap: dict[str, str] = {}
    for wf_name, workflow in workflows.items():
        ref = _map(_status(workflow).get("failedNodesRef")).get("name")
        if isinstance(ref, str):
            by_configmap[ref] = wf_name
    out: dict[str, list[Mapping[str, Any]]] = {}
    for configmap in failed_nodes:
        if not isinstance(configmap, Mapping):
            continue
        owner = by_configmap.get(_name(configmap))
        if owner is None:
            for ref in _list(_map(configmap.get("metadata")).get("ownerReferences")):
                if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflows:
                    owner = str(ref["name"])
        if owner is not None:
            out.setdefault(owner, []).extend(failed_nodes_from_configmap(configmap))
    return out


def _dedupe_failed(entries: Iterable[Mapping[str, Any]]) -> tuple[FailedNode, ...]:
    detailed: dict[tuple[str, str], FailedNode] = {}
    names_only: set[str] = set()
    for entry in entries:
        name = str(entry.get("name") or "")
        if not name:
            continue
        reason = str(entry.get("reason") or "")
        if not reason:
            names_only.add(name)
            continue
        detailed.setdefault((name, reason), FailedNode(name, reason, str(entry.get("message") or "")))
    named = {name for name, _ in detailed}
    for name in names_only - named:
        detailed[(name, "")] = FailedNode(name, "")
    return tuple(detailed[key] for key in sorted(detailed))


# --------------------------------------------------------------------------------------------
# Measurements.


def _bandwidth_rows(measurement: Obj) -> tuple[BandwidthPoint, ...]:
    final = bandwidth_is_final(measurement)
    reason = "" if final else _provisional_reason(measurement)
    return tuple(
        BandwidthPoint(row.size_bytes, row.alg_bw, row.bus_bw, row.samples, not final, reason)
        for row in results_from_status(_status(measurement).get("results"))
    )


def _provisional_reason(measurement: Obj) -> str:
    conds = _conditions(measurement)
    for kind in ("Complete", "Measuring"):
        cond = conds.get(kind)
        if cond is not None and cond.get("reason"):
            return str(cond["reason"])
    return "measurement in progress"


def _peak(rows: Iterable[BandwidthPoint]) -> BandwidthPoint | None:
    """The row at the largest message size; the lowest busBW when several reach it."""
    candidates = list(rows)
    if not candidates:
        return None
    largest = max(row.size_bytes for row in candidates)
    return min((row for row in candidates if row.size_bytes == largest), key=lambda row: row.bus_bw)


def _job_ref_name(measurement: Obj) -> str:
    return str(_map(_map(measurement.get("spec")).get("jobRef")).get("name") or _labels(measurement).get(f"{GROUP}/job") or "")


# --------------------------------------------------------------------------------------------
# Groups and categories.


def _group_reason(job: Obj | None, entries: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> str:
    if job is not None:
        conds = _conditions(job)
        for kind in ("Failed", "HardwareFailed", "ValidationFailed"):
            cond = _true(conds, kind)
            if cond is not None and (cond.get("message") or cond.get("reason")):
                return str(cond.get("message") or cond.get("reason"))
    relevant = [e for e in entries if not nodes or e.get("name") in nodes]
    for preferred in ("ThresholdViolation", None):
        for entry in relevant:
            if (preferred is None or entry.get("reason") == preferred) and (entry.get("message") or entry.get("reason")):
                return str(entry.get("message") or entry.get("reason"))
    return ""


def _failure_log(job: Obj | None) -> FailureLog | None:
    if job is None:
        return None
    log = _map(_status(job).get("failureLog"))
    if not log:
        return None
    code = log.get("exitCode")
    return FailureLog(
        pod_name=str(log.get("podName") or ""),
        node_name=str(log.get("nodeName") or ""),
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        reason=str(log.get("reason") or ""),
        tail=str(log.get("tail") or ""),
    )


def _restarts(job: Obj | None, goodput: Obj | None) -> RestartVerdict | None:
    """The checkpoint restarts of a group's Job; None when it never restarted."""
    if job is None:
        return None
    count = _int(_status(job).get("restartCount"))
    if count <= 0:
        return None
    checkpoint = _map(_map(job.get("spec")).get("checkpoint"))
    measured = _status(goodput) if goodput is not None else {}
    return RestartVerdict(
        count=count,
        maximum=max(0, _int(checkpoint.get("maxRestarts"))),
        interruptions=max(0, _int(measured.get("interruptionCount"))),
        lost_work_seconds=_seconds(measured.get("lostWorkTimeSec")),
        reschedule_seconds=_seconds(measured.get("rescheduleTimeSec")),
        resume_seconds=_seconds(measured.get("resumeTimeSec")),
    )


def _below_min(thresholds: Mapping[str, Any], point: BandwidthPoint | None) -> bool:
    expression = thresholds.get("busBandwidthGBps")
    if not isinstance(expression, str) or point is None:
        return False
    passed, problem = evaluate_one(expression, point.bus_bw)
    if problem is not None or passed:
        return False
    at_infinity, problem = evaluate_one(expression, math.inf)
    return bool(at_infinity) and problem is None


def _thresholds(workflow: Obj) -> Mapping[str, Any]:
    validation = _map(_map(workflow.get("spec")).get("validation"))
    return _map(_map(_map(validation.get("performance")).get("thresholds")).get("thresholds"))


def _span(starts: Iterable[Any], ends: Iterable[Any]) -> float | None:
    begin = [t for t in (_time(s) for s in starts) if t is not None]
    finish = [t for t in (_time(e) for e in ends) if t is not None]
    if not begin or not finish:
        return None
    return max(0.0, (max(finish) - min(begin)).total_seconds())


def _infer_scale(workflow: Obj) -> str:
    scale = _annotations(workflow).get(SCALE_ANNOTATION)
    if isinstance(scale, str) and scale:
        return scale
    orch = _map(_map(workflow.get("spec")).get("orchestration"))
    if orch.get("diagnose"):
        return "diagnose"
    if _map(orch.get("topology")).get("strictDomain"):
        return "intra-rack"
    if _int(_map(_status(workflow).get("orchestration")).get("nodesPerJob")) == 1:
        return "intra-node"
    return "full-scale"


def _blocked_detail(message: str) -> str:
    for marker in ("Workload pods are unschedulable: ", "scheduling blocked: "):
        if marker in message:
            return message.split(marker, 1)[1].strip()
    return message.strip()


def _mnnvl(spec: Obj, options: Obj) -> str:
    for source in (options, spec):
        value = source.get("enableMNNVL")
        if isinstance(value, bool):
            return "Enabled" if value else "Disabled"
    return ""


def _env_names(spec: Obj, options: Obj) -> tuple[str, ...]:
    names = {
        str(item["name"])
        for source in (spec, options)
        for item in _list(source.get("env"))
        if isinstance(item, Mapping) and item.get("name")
    }
    return tuple(sorted(names))


def _training(measurements: Sequence[Obj]) -> TrainingMetrics | None:
    goodputs = [m for m in measurements if m.get("kind") == "GoodputMeasurement"]
    if not goodputs:
        return None

    def average(field_name: str) -> float | None:
        values = [v for v in (_positive(_status(m).get(field_name)) for m in goodputs) if v is not None]
        return sum(values) / len(values) if values else None

    metrics = TrainingMetrics(average("result"), average("avgTFLOPSPerGPU"), average("avgStepTimeSec"))
    if metrics.goodput is None and metrics.tflops_per_gpu is None and metrics.step_time_seconds is None:
        return None
    return metrics


def _group_nodes(group: Mapping[str, Any], job: Obj | None) -> tuple[str, ...]:
    nodes = [str(n) for n in _list(group.get("nodes")) if n]
    if not nodes and job is not None:
        annotation = _annotations(job).get(GROUP_NODES_ANNOTATION)
        if isinstance(annotation, str):
            nodes = [n.strip() for n in annotation.split(",") if n.strip()]
    return tuple(sorted(set(nodes)))


def _iterations(workflow: Obj, count: int, terminal: bool, now: datetime | None) -> tuple[IterationVerdict, ...]:
    if count <= 1:
        return ()
    orch = _map(_status(workflow).get("orchestration"))
    found: list[IterationVerdict] = []
    seen: set[int] = set()
    for record in _list(orch.get("iterationHistory")):
        if not isinstance(record, Mapping):
            continue
        groups = [g for g in _list(record.get("groups")) if isinstance(g, Mapping)]
        number = _int(record.get("iteration"))
        status = "Failed" if any(g.get("phase") == "Failed" for g in groups) else "Succeeded"
        duration = _span((g.get("startTime") for g in groups), (g.get("completionTime") for g in groups))
        found.append(IterationVerdict(number, status, duration))
        seen.add(number)
    current = _int(orch.get("currentIteration"))
    groups = [g for g in _list(orch.get("groups")) if isinstance(g, Mapping)]
    if current and current not in seen and groups:
        phases = {g.get("phase") for g in groups}
        if phases & {"Running", "Pending"} and not terminal:
            status = "Running"
        elif "Failed" in phases:
            status = "Failed"
        else:
            status = "Succeeded"
        ends = [g.get("completionTime") for g in groups]
        if status == "Running":
            ends = [rfc3339(now)] if now is not None else []
        duration = _span((g.get("startTime") for g in groups), ends)
        found.append(IterationVerdict(current, status, duration))
    return tuple(sorted(found, key=lambda it: it.number))


def _is_diagnose(workflow: Obj) -> bool:
    return bool(_map(_map(workflow.get("spec")).get("orchestration")).get("diagnose") is not None)


def _diagnosis(workflow: Obj, entries: Sequence[Mapping[str, Any]]) -> DiagnosisVerdict | None:
    """The diagnose block of a Workflow's status as a verdict (None outside diagnose)."""
    orch = _map(_status(workflow).get("orchestration"))
    block = _map(orch.get("diagnose"))
    if not _is_diagnose(workflow) or not block:
        return None
    history = [_map(h) for h in _list(orch.get("iterationHistory"))]
    recorded = {_int(h.get("iteration")) for h in history}
    jobs = sum(1 for h in history for g in _list(h.get("groups")) if _map(g).get("jobName"))
    current = _int(orch.get("currentIteration")) or 1
    if current not in recorded:
        jobs += sum(1 for g in _list(orch.get("groups")) if _map(_map(g).get("jobRef")).get("name"))
    confirmed = _dedupe_failed(entries)
    blamed = {node.name for node in confirmed}
    faults = tuple(
        InfrastructureFaultVerdict(
            tuple(str(n) for n in _list(_map(f).get("groupA"))),
            tuple(str(n) for n in _list(_map(f).get("groupB"))),
            str(_map(f).get("stage") or ""),
        )
        for f in _list(block.get("infrastructureFaults"))
    )
    stage = str(block.get("stage") or "")
    suspects = sorted({str(n) for n in _list(block.get("suspectNodes"))} - blamed)
    return DiagnosisVerdict(
        stage=stage,
        rounds=_int(block.get("round")) or current,
        jobs=jobs,
        confirmed=confirmed,
        infrastructure_faults=faults,
        unresolved=tuple(suspects) if stage == "complete" else (),
        healthy_nodes=len(_list(block.get("healthyNodes"))),
        planner=str(_annotations(workflow).get(PLANNER_ANNOTATION) or "adaptive"),
    )


def _category(
    domain: str,
    variant: str,
    status: str,
    workflow: Obj | None,
    jobs: Sequence[Obj],
    measurements: Sequence[Obj],
    entries: Sequence[Mapping[str, Any]],
    spec: Obj,
    options: Obj,
    fallback_reason: str,
    now: datetime | None,
) -> CategoryVerdict:
    mnnvl, env_names = _mnnvl(spec, options), _env_names(spec, options)
    if workflow is None:
        return CategoryVerdict(domain, variant, status, failure_reason=fallback_reason, mnnvl=mnnvl, env_names=env_names)
    wf_status = _status(workflow)
    orch = _map(wf_status.get("orchestration"))
    orch_spec = _map(_map(workflow.get("spec")).get("orchestration"))
    conds = _conditions(workflow)
    terminal = status in ("Succeeded", "Failed")

    failure_reason = fallback_reason
    failed_cond = _true(conds, "Failed")
    if status == "Failed" and failed_cond is not None and failed_cond.get("message"):
        failure_reason = str(failed_cond["message"])
    blocked = ""
    in_progress = _true(conds, "InProgress")
    if status == "InProgress" and in_progress is not None and in_progress.get("reason") == "JobSchedulingBlocked":
        blocked = _blocked_detail(str(in_progress.get("message") or ""))

    placement = str(orch.get("placement") or orch_spec.get("placement") or "")
    unpinned = placement == "Unpinned"
    thresholds = _thresholds(workflow)
    jobs_by_name = {_name(job): job for job in jobs}
    jobs_by_group: dict[str, Obj] = {}
    for candidate in jobs:
        group_name = _labels(candidate).get(GROUP_LABEL)
        if isinstance(group_name, str):
            jobs_by_group[group_name] = candidate  # a later iteration's Job replaces an earlier one
    bandwidth_by_job: dict[str, list[Obj]] = {}
    goodput_by_job: dict[str, Obj] = {}
    for measurement in measurements:
        if measurement.get("kind") == "BandwidthMeasurement":
            bandwidth_by_job.setdefault(_job_ref_name(measurement), []).append(measurement)
        elif measurement.get("kind") == "GoodputMeasurement":
            goodput_by_job[_job_ref_name(measurement)] = measurement

    groups: list[GroupVerdict] = []
    history_failed = {
        str(g.get("name"))
        for record in _list(orch.get("iterationHistory"))
        for g in _list(_map(record).get("groups"))
        if isinstance(g, Mapping) and g.get("phase") == "Failed"
    }
    starts: list[Any] = []
    ends: list[Any] = []
    for record in _list(orch.get("iterationHistory")):
        for g in _list(_map(record).get("groups")):
            if isinstance(g, Mapping):
                starts.append(g.get("startTime"))
                ends.append(g.get("completionTime"))
    for group in _list(orch.get("groups")):
        if not isinstance(group, Mapping):
            continue
        name = str(group.get("name") or "")
        starts.append(group.get("startTime"))
        ends.append(group.get("completionTime"))
        job_name = str(_map(group.get("jobRef")).get("name") or "")
        job: Obj | None = jobs_by_name.get(job_name) or jobs_by_group.get(name)
        nodes = _group_nodes(group, job)
        phase = str(group.get("phase") or "Pending")
        failed = phase == "Failed" or (name in history_failed and phase != "Running")
        job_key = job_name or (_name(job) if job is not None else "")
        bms = bandwidth_by_job.get(job_key, [])
        point = _peak(row for bm in bms for row in _bandwidth_rows(bm))
        transport = tuple(sorted({str(t) for bm in bms for t in _list(_status(bm).get("transport"))}))
        groups.append(
            GroupVerdict(
                name=name,
                nodes=nodes,
                phase=phase,
                failed=failed,
                reason=_group_reason(job, entries, nodes) if failed else "",
                job_name=job_name or (_name(job) if job is not None else ""),
                failure_log=_failure_log(job) if failed else None,
                domains=tuple(str(d) for d in _list(group.get("domains"))),
                bandwidth=point,
                transport=transport,
                below_min=_below_min(thresholds, point),
                node_count=len(nodes) or (_int(orch.get("nodesPerJob")) if unpinned else 0),
                restarts=_restarts(job, goodput_by_job.get(job_key)),
            )
        )

    if terminal:
        end_marks = [*ends, *(c.get("lastTransitionTime") for c in (failed_cond, _true(conds, "Succeeded")) if c)]
    else:
        end_marks = [rfc3339(now)] if now is not None else []
    runtime = _span(starts or [_map(workflow.get("metadata")).get("creationTimestamp")], end_marks)

    # A diagnose run's measurements are evidence of single nodes and sub-groups, not the
    # category's bandwidth: the Diagnosis section reports them, no peak table does.
    all_rows = (
        []
        if _is_diagnose(workflow)
        else [row for bm in measurements if bm.get("kind") == "BandwidthMeasurement" for row in _bandwidth_rows(bm)]
    )
    peak = _peak(all_rows)
    transport = tuple(
        sorted({str(t) for bm in measurements if bm.get("kind") == "BandwidthMeasurement" for t in _list(_status(bm).get("transport"))})
    )
    measures_bandwidth = bool(_map(_map(_map(workflow.get("spec")).get("jobTemplate")).get("spec")).get("bandwidthMeasurement")) or any(
        m.get("kind") == "BandwidthMeasurement" for m in measurements
    )
    iteration_count = max(1, _int(orch_spec.get("iterations")))
    nodes_per_job = _int(orch.get("nodesPerJob"))
    next_step = ""
    silent_group = any(g.bandwidth is None and max(len(g.nodes), g.node_count, nodes_per_job) >= 2 for g in groups if g.failed)
    if status == "Failed" and measures_bandwidth and not orch_spec.get("diagnose") and silent_group:
        next_step = NEXT_STEP_DIAGNOSE
    exercised = len({n for g in groups for n in g.nodes}) if unpinned else 0
    diagnosis = _diagnosis(workflow, entries)
    return CategoryVerdict(
        domain=domain,
        variant=variant,
        status=status,
        workflow=_name(workflow),
        failure_reason=failure_reason,
        blocked=blocked,
        runtime_seconds=runtime,
        iteration_count=iteration_count,
        iterations=_iterations(workflow, iteration_count, terminal, now),
        test_scale="" if unpinned else _infer_scale(workflow),
        placement="Unpinned" if unpinned else "",
        nodes_per_job=nodes_per_job,
        jobs=diagnosis.jobs if diagnosis is not None else (len(jobs) if jobs else _int(orch.get("totalGroups"))),
        target_nodes=_int(orch.get("totalNodes")) if unpinned else 0,
        exercised_nodes=exercised,
        mnnvl=mnnvl,
        groups=tuple(groups),
        bandwidth=(peak,) if peak is not None else (),
        transport=transport,
        measures_bandwidth=measures_bandwidth,
        training=_training(measurements),
        env_names=env_names,
        next_step=next_step,
        diagnosis=diagnosis,
    )


# --------------------------------------------------------------------------------------------
# Ownership.


def _by_workflow(objects: Iterable[Obj], workflow_names: set[str], job_workflow: Mapping[str, str]) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        owner = _labels(obj).get(WORKFLOW_LABEL)
        if not isinstance(owner, str) or owner not in workflow_names:
            owner = None
            for ref in _list(_map(obj.get("metadata")).get("ownerReferences")):
                if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflow_names:
                    owner = str(ref["name"])
            if owner is None:
                owner = job_workflow.get(_job_ref_name(obj))
        if owner is not None:
            out.setdefault(owner, []).append(obj)
    return out


def _states(
    workflows: Mapping[str, Obj], jobs: Sequence[Obj], measurements: Sequence[Obj], job_workflow: Mapping[str, str]
) -> tuple[tuple[WorkflowState, ...], tuple[JobState, ...], tuple[MeasurementState, ...]]:
    wf_states = tuple(
        WorkflowState(name, _namespace(wf), str(_labels(wf).get(CERT_LABEL) or ""), state)
        for name, wf in sorted(workflows.items())
        if (state := lifecycle_from_conditions(wf))
    )
    job_states = []
    for job in sorted(jobs, key=_name):
        state = lifecycle_from_conditions(job)
        if not state:
            continue
        failed = _true(_conditions(job), "Failed")
        job_states.append(
            JobState(
                _name(job), _namespace(job), job_workflow.get(_name(job), ""), state, bool(failed and failed.get("reason") == "JobTimedOut")
            )
        )
    bm_states = []
    for bm in sorted(measurements, key=_name):
        if bm.get("kind") != "BandwidthMeasurement":
            continue
        job_name = _job_ref_name(bm)
        complete = _true(_conditions(bm), "Complete") is not None
        bm_states.append(
            MeasurementState(
                _name(bm),
                _namespace(bm),
                job_name,
                job_workflow.get(job_name, str(_labels(bm).get(WORKFLOW_LABEL) or "")),
                str(_map(bm.get("spec")).get("testType") or ""),
                complete,
                _bandwidth_rows(bm),
            )
        )
    return wf_states, tuple(job_states), tuple(bm_states)


def lifecycle_from_conditions(obj: Obj) -> str:
    """Failed > Succeeded > InProgress over true conditions only ("" when none is true)."""
    conds = _conditions(obj)
    for kind in ("Failed", "Succeeded", "InProgress"):
        if _true(conds, kind):
            return kind
    return ""


def _job_workflows(jobs: Sequence[Obj], workflow_names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for job in jobs:
        owner = _labels(job).get(WORKFLOW_LABEL)
        if not isinstance(owner, str) or owner not in workflow_names:
            owner = next(
                (
                    str(ref["name"])
                    for ref in _list(_map(job.get("metadata")).get("ownerReferences"))
                    if isinstance(ref, Mapping) and ref.get("kind") == "Workflow" and ref.get("name") in workflow_names
                ),
                None,
            )
        if owner is not None:
            out[_name(job)] = owner
    return out


def _result(status: str, excluded: Sequence[str]) -> str:
    if status == "Failed":
        return FAILED
    if status == "Succeeded":
        return INCOMPLETE if excluded else PASSED
    return RUNNING


def _header(workflows: Iterable[Obj]) -> tuple[str, str, int, tuple[str, ...], str]:
    platform = gpu = reason = ""
    total = 0
    excluded: set[str] = set()
    for workflow in workflows:
        orch = _map(_status(workflow).get("orchestration"))
        platform = platform or str(orch.get("detectedPlatform") or "")
        gpu = gpu or str(orch.get("detectedGPUArchitecture") or "")
        total = max(total, _int(orch.get("totalNodes")))
        excluded.update(str(n) for n in _list(orch.get("excludedNodes")))
        reason = reason or str(orch.get("exclusionReason") or "")
    return platform, gpu, total, tuple(sorted(excluded)), reason


# --------------------------------------------------------------------------------------------
# Entry points.


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
    spec = _map(certification.get("spec"))
    cert_status = _status(certification)
    wf_by_name = {_name(wf): wf for wf in workflows if isinstance(wf, Mapping)}
    job_workflow = _job_workflows(jobs, set(wf_by_name))
    jobs_of = _by_workflow(jobs, set(wf_by_name), job_workflow)
    measurements_of = _by_workflow(measurements, set(wf_by_name), job_workflow)
    entries_of = _failed_node_entries(failed_nodes, wf_by_name)

    statuses = [s for s in _list(cert_status.get("categoryStatuses")) if isinstance(s, Mapping)]
    spec_categories = [c for c in _list(spec.get("categories")) if isinstance(c, Mapping)]
    options_of = {(str(c.get("domain")), str(c.get("variant"))): _map(c.get("options")) for c in spec_categories}
    rows = statuses or [{"domain": c.get("domain"), "variant": c.get("variant"), "status": "Pending"} for c in spec_categories]

    categories: list[CategoryVerdict] = []
    failed_entries: list[Mapping[str, Any]] = []
    used: list[Obj] = []
    for row in rows:
        domain, variant = str(row.get("domain") or ""), str(row.get("variant") or "")
        wf_name = str(_map(row.get("workflowRef")).get("name") or "")
        workflow = wf_by_name.get(wf_name)
        if workflow is None:
            workflow = next(
                (
                    wf
                    for wf in wf_by_name.values()
                    if _labels(wf).get(f"{GROUP}/category-domain") == domain and _labels(wf).get(f"{GROUP}/category-variant") == variant
                ),
                None,
            )
        wf_key = _name(workflow) if workflow is not None else ""
        if workflow is not None:
            used.append(workflow)
        entries = entries_of.get(wf_key, [])
        wf_jobs = jobs_of.get(wf_key, [])
        fallback = ""
        if workflow is None and wf_name and row.get("status") == "Failed":
            fallback = f"its Workflow {wf_name} was deleted before it finished"
        categories.append(
            _category(
                domain,
                variant,
                str(row.get("status") or "Pending"),
                workflow,
                wf_jobs,
                measurements_of.get(wf_key, []),
                entries,
                spec,
                options_of.get((domain, variant), {}),
                fallback,
                now,
            )
        )
        failed_entries.extend(entries)
        if workflow is None or not _is_diagnose(workflow):
            # Under diagnose a failed Job is evidence, not blame: only the confirmed nodes count.
            for job in wf_jobs:
                failed_entries.extend(seed_failed_nodes(job, group_nodes(job)))

    status = lifecycle(certification)
    platform, gpu, total, excluded, exclusion_reason = _header(used)
    wf_states, job_states, bm_states = _states(wf_by_name, jobs, measurements, job_workflow)
    return CertificationVerdict(
        kind="Certification",
        name=_name(certification),
        namespace=_namespace(certification),
        status=status,
        result=_result(status, excluded),
        platform=platform,
        gpu=gpu,
        total_nodes=total,
        excluded_nodes=excluded,
        exclusion_reason=exclusion_reason,
        categories=tuple(categories),
        failed_nodes=_dedupe_failed(failed_entries),
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
    name = _name(workloadrun)
    run_status = _status(workloadrun)
    status = lifecycle(workloadrun) or "Pending"
    workflows = {_name(workflow): workflow} if workflow is not None else {}
    job_workflow = _job_workflows(jobs, set(workflows)) if workflows else {}
    if workflow is not None:
        job_workflow = {_name(job): _name(workflow) for job in jobs} | job_workflow
    entries: list[Mapping[str, Any]] = []
    if failed_nodes is not None and workflow is not None:
        items = list(failed_nodes)
        if items and all(isinstance(i, Mapping) and "binaryData" in i for i in items):
            entries = _failed_node_entries(items, workflows).get(_name(workflow), [])
        else:
            entries = [i for i in items if isinstance(i, Mapping)]
    spec = _map(workloadrun.get("spec"))
    fallback = ""
    failed_cond = _true(_conditions(workloadrun), "Failed")
    if failed_cond is not None:
        fallback = str(failed_cond.get("message") or "")
    category = _category("workloadrun", name, status, workflow, list(jobs), list(measurements), entries, spec, {}, fallback, now)
    failed_entries: list[Mapping[str, Any]] = list(entries)
    for job in jobs:
        failed_entries.extend(seed_failed_nodes(job, group_nodes(job)))
    failed = _dedupe_failed(failed_entries)
    failed_names = {node.name for node in failed}
    node_results = []
    for group in category.groups:
        for node in group.nodes:
            if node in failed_names or group.failed:
                state = "Failed"
            elif group.phase == "Succeeded":
                state = "Passed"
            else:
                state = "Running"
            node_results.append(NodeResult(node, group.name, state))
    platform, gpu, total, excluded, exclusion_reason = _header(workflows.values())
    wf_states, job_states, bm_states = _states(workflows, jobs, measurements, job_workflow)
    return CertificationVerdict(
        kind="WorkloadRun",
        name=name,
        namespace=_namespace(workloadrun),
        status=status,
        result=_result(status, ()),
        platform=platform or str(run_status.get("detectedPlatform") or ""),
        gpu=gpu or str(run_status.get("detectedGPUArchitecture") or ""),
        total_nodes=total,
        excluded_nodes=excluded,
        exclusion_reason=exclusion_reason,
        categories=(category,),
        failed_nodes=failed,
        node_results=tuple(sorted(node_results, key=lambda r: (r.group, r.name))),
        workflows=wf_states,
        jobs=job_states,
        measurements=bm_states,
    )
