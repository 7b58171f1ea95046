"""One category's verdict from its Workflow, Jobs, measurements and failed-node entries (pure).

``category_verdict`` turns the Workflow of one category (or of a WorkloadRun) into a
``CategoryVerdict``: each group of the plan with its nodes, phase, failure reason and log,
bandwidth peak and checkpoint restarts; the category's runtime, iterations, peak bandwidth,
training metrics, the diagnosis of a diagnose run, and the next step a failed run suggests.
Assembling categories into a run's verdict is :mod:`.verdict`'s job.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nvcre.compiler.vocabulary import (
    ANNOTATION_GROUP_NODES,
    ANNOTATION_REQUESTED_TEST_SCALE,
    LABEL_GROUP,
)

from ..measure.nccl import results_from_status
from ..measure.timefmt import rfc3339
from .cliques import cliques, domain_training
from .diagnosis import diagnosis_verdict, is_diagnose
from .measured import job_measurement_failure, measurement_failure
from .model import (
    BandwidthPoint,
    CategoryVerdict,
    FailureLog,
    GroupVerdict,
    IterationVerdict,
    RestartVerdict,
    TrainingMetrics,
)
from .reading import (
    Obj,
    annotations_of,
    as_int,
    as_list,
    as_map,
    as_positive,
    as_seconds,
    as_time,
    conditions_of,
    job_ref_name,
    labels_of,
    name_of,
    status_of,
    true_condition,
)
from .retry_note import retries_of_job
from .thresholds import bandwidth_is_final, evaluate_one

__all__ = ["NEXT_STEP_DIAGNOSE", "bandwidth_rows", "category_verdict", "is_diagnose"]

NEXT_STEP_DIAGNOSE = (
    "rerun this category with testScale: diagnose; it bisects the group to separate a node-local fault from one on the path between nodes"
)


# --------------------------------------------------------------------------------------------
# Measurements.


def bandwidth_rows(measurement: Obj) -> tuple[BandwidthPoint, ...]:
    final = bandwidth_is_final(measurement)
    reason = "" if final else _provisional_reason(measurement)
    return tuple(
        BandwidthPoint(row.size_bytes, row.alg_bw, row.bus_bw, row.samples, not final, reason)
        for row in results_from_status(status_of(measurement).get("results"))
    )


def _provisional_reason(measurement: Obj) -> str:
    conds = conditions_of(measurement)
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


# --------------------------------------------------------------------------------------------
# Groups and categories.


def _group_reason(job: Obj | None, entries: Sequence[Mapping[str, Any]], nodes: Sequence[str]) -> str:
    if job is not None:
        conds = conditions_of(job)
        for kind in ("Failed", "HardwareFailed", "ValidationFailed"):
            cond = true_condition(conds, kind)
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
    log = as_map(status_of(job).get("failureLog"))
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
    count = as_int(status_of(job).get("restartCount"))
    if count <= 0:
        return None
    checkpoint = as_map(as_map(job.get("spec")).get("checkpoint"))
    measured = status_of(goodput) if goodput is not None else {}
    return RestartVerdict(
        count=count,
        maximum=max(0, as_int(checkpoint.get("maxRestarts"))),
        interruptions=max(0, as_int(measured.get("interruptionCount"))),
        lost_work_seconds=as_seconds(measured.get("lostWorkTimeSec")),
        reschedule_seconds=as_seconds(measured.get("rescheduleTimeSec")),
        resume_seconds=as_seconds(measured.get("resumeTimeSec")),
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
    validation = as_map(as_map(workflow.get("spec")).get("validation"))
    return as_map(as_map(as_map(validation.get("performance")).get("thresholds")).get("thresholds"))


def _span(starts: Iterable[Any], ends: Iterable[Any]) -> float | None:
    begin = [t for t in (as_time(s) for s in starts) if t is not None]
    finish = [t for t in (as_time(e) for e in ends) if t is not None]
    if not begin or not finish:
        return None
    return max(0.0, (max(finish) - min(begin)).total_seconds())


def _infer_scale(workflow: Obj) -> str:
    scale = annotations_of(workflow).get(ANNOTATION_REQUESTED_TEST_SCALE)
    if isinstance(scale, str) and scale:
        return scale
    orch = as_map(as_map(workflow.get("spec")).get("orchestration"))
    if orch.get("diagnose"):
        return "diagnose"
    if as_map(orch.get("topology")).get("strictDomain"):
        return "intra-rack"
    if as_int(as_map(status_of(workflow).get("orchestration")).get("nodesPerJob")) == 1:
        return "intra-node"
    return "full-scale"


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
        for item in as_list(source.get("env"))
        if isinstance(item, Mapping) and item.get("name")
    }
    return tuple(sorted(names))


def _training(measurements: Sequence[Obj]) -> TrainingMetrics | None:
    goodputs = [m for m in measurements if m.get("kind") == "GoodputMeasurement"]
    if not goodputs:
        return None

    def average(field_name: str, of: Sequence[Obj] = goodputs) -> float | None:
        values = [v for v in (as_positive(status_of(m).get(field_name)) for m in of) if v is not None]
        return sum(values) / len(values) if values else None

    # A diverged run's goodput is no measurement (its finite steps' step time and TFLOP/s still are).
    trusted = [m for m in goodputs if measurement_failure(m) is None]
    metrics = TrainingMetrics(average("result", trusted), average("avgTFLOPSPerGPU"), average("avgStepTimeSec"))
    if metrics.goodput is None and metrics.tflops_per_gpu is None and metrics.step_time_seconds is None:
        return None
    return metrics


def _group_nodes(group: Mapping[str, Any], job: Obj | None) -> tuple[str, ...]:
    nodes = [str(n) for n in as_list(group.get("nodes")) if n]
    if not nodes and job is not None:
        annotation = annotations_of(job).get(ANNOTATION_GROUP_NODES)
        if isinstance(annotation, str):
            nodes = [n.strip() for n in annotation.split(",") if n.strip()]
    return tuple(sorted(set(nodes)))


def _iterations(workflow: Obj, count: int, terminal: bool, now: datetime | None) -> tuple[IterationVerdict, ...]:
    if count <= 1:
        return ()
    orch = as_map(status_of(workflow).get("orchestration"))
    found: list[IterationVerdict] = []
    seen: set[int] = set()
    for record in as_list(orch.get("iterationHistory")):
        if not isinstance(record, Mapping):
            continue
        groups = [g for g in as_list(record.get("groups")) if isinstance(g, Mapping)]
        number = as_int(record.get("iteration"))
        status = "Failed" if any(g.get("phase") == "Failed" for g in groups) else "Succeeded"
        duration = _span((g.get("startTime") for g in groups), (g.get("completionTime") for g in groups))
        found.append(IterationVerdict(number, status, duration))
        seen.add(number)
    current = as_int(orch.get("currentIteration"))
    groups = [g for g in as_list(orch.get("groups")) if isinstance(g, Mapping)]
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


@dataclass(frozen=True)
class _Evidence:
    """A category's Jobs and measurements, indexed the ways its groups look them up."""

    jobs_by_name: Mapping[str, Obj]
    jobs_by_group: Mapping[str, Obj]
    bandwidth_by_job: Mapping[str, list[Obj]]
    goodput_by_job: Mapping[str, Obj]

    @classmethod
    def index(cls, jobs: Sequence[Obj], measurements: Sequence[Obj]) -> _Evidence:
        jobs_by_group: dict[str, Obj] = {}
        for candidate in jobs:
            group_name = labels_of(candidate).get(LABEL_GROUP)
            if isinstance(group_name, str):
                jobs_by_group[group_name] = candidate  # a later iteration's Job replaces an earlier one
        bandwidth_by_job: dict[str, list[Obj]] = {}
        goodput_by_job: dict[str, Obj] = {}
        for measurement in measurements:
            if measurement.get("kind") == "BandwidthMeasurement":
                bandwidth_by_job.setdefault(job_ref_name(measurement), []).append(measurement)
            elif measurement.get("kind") == "GoodputMeasurement":
                goodput_by_job[job_ref_name(measurement)] = measurement
        return cls({name_of(job): job for job in jobs}, jobs_by_group, bandwidth_by_job, goodput_by_job)


def _history(orch: Obj) -> tuple[set[str], list[Any], list[Any]]:
    """The groups that failed in an earlier iteration, and the start and end marks of those groups."""
    failed: set[str] = set()
    starts: list[Any] = []
    ends: list[Any] = []
    for record in as_list(orch.get("iterationHistory")):
        for g in as_list(as_map(record).get("groups")):
            if isinstance(g, Mapping):
                if g.get("phase") == "Failed":
                    failed.add(str(g.get("name")))
                starts.append(g.get("startTime"))
                ends.append(g.get("completionTime"))
    return failed, starts, ends


def _group_verdict(
    group: Mapping[str, Any],
    evidence: _Evidence,
    history_failed: set[str],
    entries: Sequence[Mapping[str, Any]],
    thresholds: Mapping[str, Any],
    unpinned_size: int,
) -> GroupVerdict:
    """One group of the plan: its Job (by reference, else by group label), nodes, phase and evidence."""
    name = str(group.get("name") or "")
    job_name = str(as_map(group.get("jobRef")).get("name") or "")
    job: Obj | None = evidence.jobs_by_name.get(job_name) or evidence.jobs_by_group.get(name)
    nodes = _group_nodes(group, job)
    phase = str(group.get("phase") or "Pending")
    # a Job whose bandwidth measurement saw corrupted data or a failed run has failed, whatever
    # phase the Workflow wrote for the group (``judge.measured``)
    measured = job_measurement_failure(job)
    failed = phase == "Failed" or (name in history_failed and phase != "Running") or bool(measured)
    job_key = job_name or (name_of(job) if job is not None else "")
    bms = evidence.bandwidth_by_job.get(job_key, [])
    point = _peak(row for bm in bms for row in bandwidth_rows(bm))
    return GroupVerdict(
        name=name,
        nodes=nodes,
        phase=phase,
        failed=failed,
        reason=_group_reason(job, entries, nodes) if failed else "",
        job_name=job_key,
        failure_log=_failure_log(job) if failed else None,
        domains=tuple(str(d) for d in as_list(group.get("domains"))),
        bandwidth=point,
        transport=tuple(sorted({str(t) for bm in bms for t in as_list(status_of(bm).get("transport"))})),
        below_min=_below_min(thresholds, point),
        node_count=len(nodes) or unpinned_size,
        restarts=_restarts(job, evidence.goodput_by_job.get(job_key)),
        measurement_failure=measured,
        retries=None if failed else retries_of_job(job),
    )


def _headline(status: str, workflow: Obj, fallback_reason: str) -> tuple[str, str]:
    """The category's failure reason (the Workflow's Failed message) and what blocks it, if anything."""
    conds = conditions_of(workflow)
    failure_reason = fallback_reason
    failed_cond = true_condition(conds, "Failed")
    if status == "Failed" and failed_cond is not None and failed_cond.get("message"):
        failure_reason = str(failed_cond["message"])
    blocked = ""
    in_progress = true_condition(conds, "InProgress")
    if status == "InProgress" and in_progress is not None and in_progress.get("reason") == "JobSchedulingBlocked":
        blocked = str(in_progress.get("message") or "").strip()  # the whole message, as NVCRE's statusDetail
    return failure_reason, blocked


def _runtime(workflow: Obj, terminal: bool, starts: list[Any], ends: list[Any], now: datetime | None) -> float | None:
    """Seconds from the first group's start to the last end (to ``now`` while running)."""
    conds = conditions_of(workflow)
    if terminal:
        ends = [*ends, *(c.get("lastTransitionTime") for c in (true_condition(conds, "Failed"), true_condition(conds, "Succeeded")) if c)]
    else:
        ends = [rfc3339(now)] if now is not None else []
    return _span(starts or [as_map(workflow.get("metadata")).get("creationTimestamp")], ends)


def _bandwidth_summary(workflow: Obj, measurements: Sequence[Obj]) -> tuple[BandwidthPoint | None, tuple[str, ...], bool]:
    """The category's peak row, its transports, and whether it measures bandwidth at all."""
    bandwidth = [m for m in measurements if m.get("kind") == "BandwidthMeasurement"]
    # A diagnose run's measurements are evidence of single nodes and sub-groups, not the
    # category's bandwidth: the Diagnosis section reports them, no peak table does.
    peak = None if is_diagnose(workflow) else _peak(row for bm in bandwidth for row in bandwidth_rows(bm))
    transport = tuple(sorted({str(t) for bm in bandwidth for t in as_list(status_of(bm).get("transport"))}))
    job_spec = as_map(as_map(as_map(workflow.get("spec")).get("jobTemplate")).get("spec"))
    return peak, transport, bool(job_spec.get("bandwidthMeasurement")) or bool(bandwidth)


def _measured_failure(groups: Sequence[GroupVerdict], status: str, reason: str) -> tuple[str, str]:
    """A finished category one of whose Jobs failed on its bandwidth measurement has failed, with that reason."""
    for group in groups:
        if group.measurement_failure:
            return "Failed", group.reason or reason
    return status, reason


# Long: assembles one category's verdict record; the named readers above do the work and each field is one line.
def category_verdict(
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
    """The verdict of one category; ``workflow`` None gives the bare row (no groups, no numbers)."""
    mnnvl, env_names = _mnnvl(spec, options), _env_names(spec, options)
    if workflow is None:
        return CategoryVerdict(domain, variant, status, failure_reason=fallback_reason, mnnvl=mnnvl, env_names=env_names)
    orch = as_map(status_of(workflow).get("orchestration"))
    orch_spec = as_map(as_map(workflow.get("spec")).get("orchestration"))
    terminal = status in ("Succeeded", "Failed")
    failure_reason, blocked = _headline(status, workflow, fallback_reason)
    unpinned = str(orch.get("placement") or orch_spec.get("placement") or "") == "Unpinned"
    nodes_per_job = as_int(orch.get("nodesPerJob"))
    evidence = _Evidence.index(jobs, measurements)
    history_failed, starts, ends = _history(orch)
    groups: list[GroupVerdict] = []
    for group in as_list(orch.get("groups")):
        if isinstance(group, Mapping):
            starts.append(group.get("startTime"))
            ends.append(group.get("completionTime"))
            groups.append(_group_verdict(group, evidence, history_failed, entries, _thresholds(workflow), nodes_per_job if unpinned else 0))
    peak, transport, measures_bandwidth = _bandwidth_summary(workflow, measurements)
    if status == "Succeeded" and not is_diagnose(workflow):
        status, failure_reason = _measured_failure(groups, status, failure_reason)
    iteration_count = max(1, as_int(orch_spec.get("iterations")))
    next_step = ""
    silent_group = any(g.bandwidth is None and max(len(g.nodes), g.node_count, nodes_per_job) >= 2 for g in groups if g.failed)
    if status == "Failed" and measures_bandwidth and not orch_spec.get("diagnose") and silent_group:
        next_step = NEXT_STEP_DIAGNOSE
    diagnosis = diagnosis_verdict(workflow, entries, groups)
    return CategoryVerdict(
        domain=domain,
        variant=variant,
        status=status,
        workflow=name_of(workflow),
        failure_reason=failure_reason,
        blocked=blocked,
        runtime_seconds=_runtime(workflow, terminal, starts, ends, now),
        iteration_count=iteration_count,
        iterations=_iterations(workflow, iteration_count, terminal, now),
        test_scale="" if unpinned else _infer_scale(workflow),
        placement="Unpinned" if unpinned else "",
        nodes_per_job=nodes_per_job,
        jobs=diagnosis.jobs if diagnosis is not None else (len(jobs) if jobs else as_int(orch.get("totalGroups"))),
        target_nodes=as_int(orch.get("totalNodes")) if unpinned else 0,
        exercised_nodes=len({n for g in groups for n in g.nodes}) if unpinned else 0,
        mnnvl=mnnvl,
        groups=tuple(groups),
        bandwidth=(peak,) if peak is not None else (),
        transport=transport,
        measures_bandwidth=measures_bandwidth,
        training=_training(measurements),
        env_names=env_names,
        next_step=next_step,
        diagnosis=diagnosis,
        cliques=cliques(workflow, [str(e.get("name")) for e in entries if e.get("name")]),
        domain_training=domain_training(workflow, measurements),
    )
