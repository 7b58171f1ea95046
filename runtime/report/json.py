"""The JSON report (``--results-file``, ``-o json``, MCP): a plain-dict projection of the verdict.

Field names follow NVCRE's report: ``name``, ``platform``, ``gpu``, ``totalNodes``,
``categories[]`` (with ``failedGroups[].failureLog`` and, when a bandwidth measurement failed the
Job, ``failedGroups[].measurementFailure``, ``cliques[]`` for topology-aware runs,
``domains[]`` for training, ``bandwidth[]``, ``transport[]``, ``groupBandwidth[]``,
``iterations[]``, NVCRE's ``diagnose`` block for ``testScale: diagnose``), ``failedNodes``
(names, ``[]`` when none),
``failedNodeDetails`` (each node with its reason and message) and ``result``; ``title`` only for a
WorkloadRun, and a category in progress is ``Running``, as in NVCRE's report. Optional fields
are left out when empty. Failure-log tails keep their raw text. ``dumps`` writes it with
2-space indentation.

Ours adds fields, never renames one: ``diagnosis`` (the planner's view: confirmed nodes with
reasons, unresolved nodes, the planner), ``restartedGroups[]`` (checkpoint restarts),
``retriedGroups[]`` (groups that passed only after failed runs of their workload were retried:
the attempt that passed and each earlier run's node, pod, container, exit code, reason, signal
and end),
``training`` (the category's averages), ``nextStep``, ``envNames``, ``statusDetail``.
"""

from __future__ import annotations

import json as _json
from collections.abc import Sequence
from typing import Any

from ..judge.model import (
    BandwidthPoint,
    CategoryVerdict,
    CertificationVerdict,
    DiagnosisVerdict,
    FailedAttempt,
    FailureLog,
    GroupVerdict,
    RestartVerdict,
    RetryVerdict,
)
from . import format as fmt

__all__ = ["dumps", "to_dict"]


def _bandwidth(point: BandwidthPoint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "size": fmt.size(point.size_bytes),
        "algBW": fmt.bandwidth(point.alg_bw),
        "busBW": fmt.bandwidth(point.bus_bw),
        "samples": point.samples,
    }
    if point.provisional:
        out["provisional"] = True
        if point.provisional_reason:
            out["provisionalReason"] = point.provisional_reason
    return out


def _failure_log(log: FailureLog) -> dict[str, Any]:
    out: dict[str, Any] = {"podName": log.pod_name, "nodeName": log.node_name}
    if log.exit_code is not None:
        out["exitCode"] = log.exit_code
    if log.reason:
        out["reason"] = log.reason
    if log.tail:
        out["tail"] = log.tail
    return out


def _restarts(restarts: RestartVerdict) -> dict[str, Any]:
    """The restart fields of a group: counts, and the measured times when published (seconds)."""
    out: dict[str, Any] = {
        "restartCount": restarts.count,
        "maxRestarts": restarts.maximum,
        "interruptionCount": restarts.interruptions,
    }
    for key, value in (
        ("lostWorkTimeSec", restarts.lost_work_seconds),
        ("rescheduleTimeSec", restarts.reschedule_seconds),
        ("resumeTimeSec", restarts.resume_seconds),
    ):
        if value is not None:
            out[key] = fmt.seconds(value)
    return out


def _failed_group(group: GroupVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {"name": group.name, "nodeCount": len(group.nodes) or group.node_count}
    if group.nodes:
        out["nodes"] = list(group.nodes)
    out["reason"] = group.reason
    if group.measurement_failure:
        out["measurementFailure"] = group.measurement_failure
    if group.failure_log is not None:
        out["failureLog"] = _failure_log(group.failure_log)
    if group.restarts is not None:
        out.update(_restarts(group.restarts))
    return out


def _restarted_group(group: GroupVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {"name": group.name, "nodeCount": len(group.nodes) or group.node_count}
    if group.nodes:
        out["nodes"] = list(group.nodes)
    if group.job_name:
        out["job"] = group.job_name
    out["phase"] = group.phase
    if group.restarts is not None:
        out.update(_restarts(group.restarts))
    return out


def _group_label(group: GroupVerdict) -> str:
    count = len(group.nodes) or group.node_count
    if group.domains:
        return f"{', '.join(group.domains)} ({count} nodes)"
    if group.nodes and len(group.nodes) <= 4:
        return f"{group.name} ({', '.join(group.nodes)})"
    return f"{group.name} ({count} nodes)"


def _group_bandwidth(group: GroupVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {"group": group.name, "groupName": _group_label(group), "nodes": list(group.nodes)}
    out["busBW"] = fmt.group_bandwidth(group.bandwidth.bus_bw) if group.bandwidth is not None else ""
    if group.transport:
        out["transport"] = list(group.transport)
    out["belowMin"] = group.below_min
    out["failed"] = group.failed
    if group.bandwidth is not None and group.bandwidth.provisional:
        out["provisional"] = True
        if group.bandwidth.provisional_reason:
            out["provisionalReason"] = group.bandwidth.provisional_reason
    if group.restarts is not None:
        out.update(_restarts(group.restarts))
    return out


def _diagnosis(diagnosis: DiagnosisVerdict) -> dict[str, Any]:
    out: dict[str, Any] = {
        "stage": diagnosis.stage,
        "rounds": diagnosis.rounds,
        "jobs": diagnosis.jobs,
        "healthyNodes": diagnosis.healthy_nodes,
        "confirmedNodes": [{"name": n.name, "reason": n.reason, "message": n.message} for n in diagnosis.confirmed],
        "infrastructureFaults": [
            {"groupA": list(f.side_a), "groupB": list(f.side_b), "stage": f.stage} for f in diagnosis.infrastructure_faults
        ],
    }
    if diagnosis.unresolved:
        out["unresolvedNodes"] = list(diagnosis.unresolved)
    if diagnosis.planner:
        out["planner"] = diagnosis.planner
    return out


def _failed_attempt(failure: FailedAttempt) -> dict[str, Any]:
    out: dict[str, Any] = {
        "attempt": failure.attempt,
        "node": failure.node,
        "pod": failure.pod,
        "container": failure.container,
        "role": failure.role,
        "exitCode": failure.exit_code,
        "reason": failure.reason,
    }
    if failure.signal:
        out["signal"] = failure.signal
        out["signalName"] = failure.signal_name
    if failure.finished_at:
        out["finishedAt"] = failure.finished_at
    return out


def _retried_group(group: GroupVerdict, retries: RetryVerdict) -> dict[str, Any]:
    """A group that passed on a later attempt: which, and every earlier failed run it knows."""
    out: dict[str, Any] = {"name": group.name}
    if group.nodes:
        out["nodes"] = list(group.nodes)
    if group.job_name:
        out["job"] = group.job_name
    out["passedOnAttempt"] = retries.attempt
    out["failedRuns"] = [_failed_attempt(f) for f in retries.failed]
    if retries.undetailed:
        out["undetailedFailedRuns"] = retries.undetailed
    return out


def _diagnose(category: CategoryVerdict, diagnosis: DiagnosisVerdict) -> dict[str, Any]:
    """NVCRE's ``diagnose`` block: counts, the confirmed node names, faults, extremes and every test."""
    terminal = category.status in ("Succeeded", "Failed")
    out: dict[str, Any] = {
        "stage": "complete" if terminal else diagnosis.stage,
        "rounds": diagnosis.rounds,
        "healthyCount": diagnosis.healthy_nodes,
        "suspectCount": diagnosis.suspect_count,
    }
    if diagnosis.confirmed:
        out["confirmedFaulty"] = sorted({n.name for n in diagnosis.confirmed})
    if diagnosis.infrastructure_faults:
        out["infrastructureFaults"] = [
            {
                "domain": f.domain,
                **({"groupA": list(f.side_a)} if f.side_a else {}),
                **({"groupB": list(f.side_b)} if f.side_b else {}),
                **({"stage": f.stage} if f.stage else {}),
            }
            for f in diagnosis.infrastructure_faults
        ]
    extremes = diagnosis.extremes
    if extremes is not None:
        for prefix, test in zip(("maxBW", "minBW"), extremes):
            out[prefix] = fmt.group_bandwidth(test.bus_bw or 0.0)
            if test.domain:
                out[f"{prefix}Domain"] = test.domain
            if test.nodes:
                out[f"{prefix}Nodes"] = list(test.nodes)
    if diagnosis.tests:
        out["tests"] = [
            {
                "stage": t.stage,
                "name": t.name,
                "nodes": list(t.nodes),
                **({"domain": t.domain} if t.domain else {}),
                "busBW": fmt.bandwidth(t.bus_bw) if t.bus_bw is not None else "",
                "passed": t.passed,
            }
            for t in diagnosis.tests
        ]
    return out


def _domains(category: CategoryVerdict) -> list[dict[str, Any]]:
    """NVCRE's ``domains[]``: training metrics per topology domain ("" without topology)."""
    out = []
    for domain in category.domain_training:
        metrics = domain.metrics
        out.append(
            {
                "name": domain.name,
                "nodeCount": domain.node_count,
                "goodput": fmt.goodput(metrics.goodput) if metrics.goodput else "",
                "tflops": fmt.tflops(metrics.tflops_per_gpu) if metrics.tflops_per_gpu else "",
                "stepTime": fmt.step_time(metrics.step_time_seconds) if metrics.step_time_seconds else "",
            }
        )
    return out


def _category(category: CategoryVerdict) -> dict[str, Any]:
    # NVCRE's report says Running for a category in progress, in the JSON as in the text
    status = "Running" if category.status == "InProgress" else category.status
    out: dict[str, Any] = {"domain": category.domain, "variant": category.variant, "status": status}
    optional: list[tuple[str, Any]] = [
        ("failureReason", category.failure_reason if category.status == "Failed" else ""),
        ("statusDetail", category.blocked),
        ("runtime", fmt.human_duration(category.runtime_seconds) if category.runtime_seconds is not None else ""),
        ("testScale", category.test_scale),
        ("nodesPerJob", category.nodes_per_job),
        ("jobs", category.jobs),
        ("placement", category.placement),
        ("targetNodes", category.target_nodes),
        ("exercisedNodes", category.exercised_nodes),
        ("mnnvl", category.mnnvl),
        ("failedGroups", [_failed_group(g) for g in category.failed_groups]),
        ("cliques", [{"name": c.name, "total": c.total, "validated": c.validated, "passed": c.passed} for c in category.cliques]),
        ("domains", _domains(category)),
        ("bandwidth", [_bandwidth(p) for p in category.bandwidth]),
        ("transport", list(category.transport)),
        (
            "groupBandwidth",
            [_group_bandwidth(g) for g in category.groups] if len(category.groups) > 1 and category.measures_bandwidth else [],
        ),
        (
            "iterations",
            [
                {
                    "number": it.number,
                    "status": it.status,
                    "duration": fmt.human_duration(it.duration_seconds) if it.duration_seconds is not None else "",
                }
                for it in category.iterations
            ]
            if len(category.iterations) > 1
            else [],
        ),
        ("restartedGroups", [_restarted_group(g) for g in category.restarted_groups]),
        ("retriedGroups", [_retried_group(g, g.retries) for g in category.retried_groups if g.retries is not None]),
        ("nextStep", category.next_step),
        ("diagnose", _diagnose(category, category.diagnosis) if category.diagnosis is not None else {}),
        ("diagnosis", _diagnosis(category.diagnosis) if category.diagnosis is not None else {}),
        ("envNames", list(category.env_names)),
    ]
    for key, value in optional:
        if value:
            out[key] = value
    if category.training is not None:
        metrics = category.training
        training: dict[str, Any] = {}
        if metrics.goodput is not None:
            training["goodput"] = fmt.goodput(metrics.goodput)
        if metrics.tflops_per_gpu is not None:
            training["tflops"] = fmt.tflops(metrics.tflops_per_gpu)
        if metrics.step_time_seconds is not None:
            training["stepTime"] = fmt.step_time(metrics.step_time_seconds)
        if training:
            out["training"] = training
    return out


def to_dict(verdict: CertificationVerdict) -> dict[str, Any]:
    """The report object for one verdict."""
    out: dict[str, Any] = {"title": verdict.title} if verdict.kind == "WorkloadRun" else {}  # NVCRE: no title for a Certification
    out.update(
        {
            "name": verdict.name,
            "platform": verdict.platform,
            "gpu": verdict.gpu,
            "totalNodes": verdict.total_nodes,
        }
    )
    if verdict.excluded_nodes:
        out["excludedNodes"] = list(verdict.excluded_nodes)
    if verdict.exclusion_reason:
        out["exclusionReason"] = verdict.exclusion_reason
    out["categories"] = [_category(c) for c in verdict.categories]
    out["failedNodes"] = list(verdict.failed_node_names)
    out["failedNodeDetails"] = [
        {"name": n.name, "reason": n.reason, **({"message": n.message} if n.message else {})} for n in verdict.failed_nodes if n.reason
    ]
    out["result"] = verdict.result
    # NVCRE's node results say Passed or Failed: a node whose group still runs is not listed yet
    finished = [r for r in verdict.node_results if r.status in ("Passed", "Failed")]
    if finished:
        out["nodeResults"] = [{"name": r.name, "group": r.group, "status": r.status} for r in finished]
    return out


def dumps(verdicts: CertificationVerdict | Sequence[CertificationVerdict]) -> str:
    """2-space indented JSON: one object, or an array for several verdicts."""
    if isinstance(verdicts, CertificationVerdict):
        payload: Any = to_dict(verdicts)
    else:
        payload = [to_dict(v) for v in verdicts]
    return _json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
