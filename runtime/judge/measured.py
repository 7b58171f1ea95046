"""A measurement whose run cannot be trusted fails its Job (pure).

A BandwidthMeasurement carries ``status.failure`` (``{reason, message}``) when its log showed
corrupted data, a failed run or a table that never finished
(:mod:`nvcre.runtime.measure.nccl_checks`); a GoodputMeasurement carries a ``Diverged=True``
condition (reason ``TrainingLossNotFinite``) when its training log showed a non-finite loss
(:mod:`nvcre.runtime.measure.training`). Whatever bandwidth the rows print or goodput the finite
steps give, such a Job has not shown its nodes healthy:

* :func:`measurement_failure` reads the failure of one measurement of either kind;
* :func:`failure_outcome` gives the Job tier what to write on the Job: ``ValidationFailed=True``
  with the failure's reason and message, and one ``failedNodes`` entry per group node with
  that reason (a node already blamed for the same reason keeps its entry);
* :func:`with_measurement_failures` applies that to the Jobs a verdict is built from, so a
  report shows the failed group, its reason and the blamed nodes (``failedNodeDetails``) even
  before the Job tier has written it.

A Job that already failed (``Failed=True``) keeps its condition and its own entries: its
workload's failure names the nodes, and a failed run's log blames no one more; a
threshold verdict (``ValidationFailed``) is replaced, since a threshold met or missed on
corrupted data says nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..measure.nccl_checks import REASONS
from ..measure.training import DIVERGED_CONDITION, LOSS_NOT_FINITE
from .attribution import group_nodes
from .health import merge_failed_nodes
from .reading import Obj, as_list, as_map, conditions_of, job_ref_name, status_of, true_condition

__all__ = [
    "MEASUREMENT_FAILURE_REASONS",
    "TRAINING_FAILURE_REASONS",
    "bandwidth_unsettled",
    "first_failure",
    "measurement_unsettled",
    "group_entries",
    "MeasurementFailure",
    "failure_outcome",
    "job_measurement_failure",
    "measurement_failure",
    "with_measurement_failures",
]

#: the ValidationFailed (and failed-node) reasons a training measurement's failure gives
TRAINING_FAILURE_REASONS = frozenset({LOSS_NOT_FINITE})
#: the ValidationFailed (and failed-node) reasons a measurement's failure gives, of either kind
MEASUREMENT_FAILURE_REASONS = frozenset(REASONS) | TRAINING_FAILURE_REASONS
VALIDATION_FAILED = "ValidationFailed"


@dataclass(frozen=True)
class MeasurementFailure:
    """Why a measurement's run is not a measurement."""

    reason: str
    message: str


def _training_failure(measurement: Obj) -> MeasurementFailure | None:
    diverged = true_condition(conditions_of(measurement), DIVERGED_CONDITION)
    reason = diverged.get("reason") if diverged is not None else None
    if not isinstance(reason, str) or reason not in TRAINING_FAILURE_REASONS:
        return None
    message = diverged.get("message") if diverged is not None else None
    return MeasurementFailure(reason, str(message) if isinstance(message, str) and message else reason)


def measurement_failure(measurement: Obj) -> MeasurementFailure | None:
    """The failure a BandwidthMeasurement or a GoodputMeasurement records; None when it records
    none (or an unknown reason). An object without a kind is read as a BandwidthMeasurement."""
    if measurement.get("kind") == "GoodputMeasurement":
        return _training_failure(measurement)
    if measurement.get("kind") not in (None, "BandwidthMeasurement"):
        return None
    failure = as_map(status_of(measurement).get("failure"))
    reason = failure.get("reason")
    if not isinstance(reason, str) or reason not in MEASUREMENT_FAILURE_REASONS:
        return None
    message = failure.get("message")
    return MeasurementFailure(reason, str(message) if isinstance(message, str) and message else reason)


def first_failure(*measurements: Obj | None) -> MeasurementFailure | None:
    """The first failure the given measurements record (absent ones skipped), None when none does."""
    for measurement in measurements:
        failure = measurement_failure(measurement) if measurement is not None else None
        if failure is not None:
            return failure
    return None


def _failures_by_job(measurements: Iterable[Obj]) -> dict[str, MeasurementFailure]:
    """The first (by measurement name) recorded failure of each Job's measurements."""
    found: dict[str, MeasurementFailure] = {}
    for measurement in sorted(
        (m for m in measurements if isinstance(m, Mapping)), key=lambda m: str(as_map(m.get("metadata")).get("name") or "")
    ):
        failure = measurement_failure(measurement)
        job = job_ref_name(measurement)
        if failure is not None and job and job not in found:
            found[job] = failure
    return found


def failure_outcome(
    job: Obj, failure: MeasurementFailure, pods: Iterable[Mapping[str, Any]] = ()
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the ValidationFailed condition to set, or None to keep the Job's own; the ``failedNodes`` after).

    The condition has no ``lastTransitionTime``: the writer stamps it.
    """
    status = status_of(job)
    conds = conditions_of(job)
    existing = [e for e in as_list(status.get("failedNodes")) if isinstance(e, Mapping)]
    if true_condition(conds, "Failed") is not None:
        # the workload's own failure already names its nodes; the log of a run that failed adds
        # no blame (it would put the crash's healthy peers beside the node that crashed)
        return None, [dict(e) for e in existing]
    nodes = group_nodes(job, pods)
    entries = merge_failed_nodes(existing, [{"name": n, "reason": failure.reason, "message": failure.message} for n in nodes])
    current = conds.get(VALIDATION_FAILED)
    if current is not None and current.get("status") == "True" and current.get("reason") == failure.reason:
        return None, entries
    condition = {"type": VALIDATION_FAILED, "status": "True", "reason": failure.reason, "message": failure.message}
    return condition, entries


def _failed_view(job: Obj, failure: MeasurementFailure) -> dict[str, Any]:
    condition, entries = failure_outcome(job, failure)
    view = copy.deepcopy(dict(job))
    status = view.setdefault("status", {})
    if not isinstance(status, dict):
        status = view["status"] = {}
    if entries:
        status["failedNodes"] = entries
    if condition is not None:
        kept = [c for c in as_list(status.get("conditions")) if not (isinstance(c, Mapping) and c.get("type") == VALIDATION_FAILED)]
        status["conditions"] = [*kept, condition]
    return view


def with_measurement_failures(jobs: Sequence[Obj], measurements: Iterable[Obj]) -> list[Obj]:
    """``jobs`` with each Job whose bandwidth measurement failed turned into a failed Job (copies)."""
    failures = _failures_by_job(measurements)
    if not failures:
        return list(jobs)
    out: list[Obj] = []
    for job in jobs:
        name = str(as_map(job.get("metadata")).get("name") or "") if isinstance(job, Mapping) else ""
        failure = failures.get(name)
        out.append(_failed_view(job, failure) if failure is not None else job)
    return out


def group_entries(groups: Iterable[Any]) -> list[dict[str, Any]]:
    """Failed-node entries for the nodes of groups whose Job failed on its measurement.

    ``groups`` are :class:`~nvcre.runtime.judge.model.GroupVerdict` records; this covers the
    nodes a Job does not name itself (an Unpinned group lists them only on the Workflow).
    """
    return [
        {"name": node, "reason": group.measurement_failure, "message": group.reason}
        for group in groups
        if group.measurement_failure
        for node in group.nodes
    ]


def job_measurement_failure(job: Obj | None) -> str:
    """The measurement-failure reason a Job failed with (its ValidationFailed), else ""."""
    if job is None:
        return ""
    cond = true_condition(conditions_of(job), VALIDATION_FAILED)
    reason = str(cond.get("reason") or "") if cond is not None else ""
    if reason in MEASUREMENT_FAILURE_REASONS:
        return reason
    for entry in as_list(status_of(job).get("failedNodes")):
        if isinstance(entry, Mapping) and entry.get("reason") in MEASUREMENT_FAILURE_REASONS:
            return str(entry["reason"])
    return ""


def bandwidth_unsettled(job: Obj, measurement: Obj | None, *, expired: bool) -> bool:
    """Whether a succeeded Job's verdict must wait for its bandwidth measurement.

    A Job that records a bandwidth measurement is not done when its workload succeeds: its log
    may still show a corrupted or failed run. It waits while the measurement is still reading, and
    while a recorded failure has not reached the Job's conditions yet, until ``expired`` (the
    measurement's time is up). A Job with no measurement spec, or whose measurement is gone,
    never waits.
    """
    if not as_map(as_map(job.get("spec")).get("bandwidthMeasurement")) or measurement is None or expired:
        return False
    if measurement_failure(measurement) is not None:
        return not job_measurement_failure(job)
    return true_condition(conditions_of(measurement), "Complete") is None


def measurement_unsettled(job: Obj, measurement: Obj | None, *, expired: bool) -> bool:
    """:func:`bandwidth_unsettled` for a measurement of either kind: a Job that records a goodput
    measurement waits for it the same way (its log may still show a diverged run)."""
    key = "goodputMeasurement" if measurement is not None and measurement.get("kind") == "GoodputMeasurement" else "bandwidthMeasurement"
    if not as_map(as_map(job.get("spec")).get(key)) or measurement is None or expired:
        return False
    if measurement_failure(measurement) is not None:
        return not job_measurement_failure(job)
    return true_condition(conditions_of(measurement), "Complete") is None
