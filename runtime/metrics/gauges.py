"""Gauge samples projected from the verdict model (no Prometheus import: just name, labels, value).

Status: ``nvcre_certification_status``, ``nvcre_workflow_status`` and ``nvcre_job_status`` carry
one sample per status (``in_progress``, ``succeeded``, ``failed``), 1 for the current one and 0
for the others; objects with no true lifecycle condition are left out, and a timed-out Job counts
as failed. Workflows and Jobs of a Certification or WorkloadRun are read from its verdict; every
other Workflow and Job in the caches (:class:`CacheObjects`) is read with the same readers
(``judge.states``), so each one appears exactly once.

Job tier: ``nvcre_job_failed_nodes{namespace,job,workflow}``, the nodes the Job's health monitor
flagged, for Jobs whose ``HardwareFailed`` condition is true.

Goodput: ``nvcre_goodput_ratio``, ``nvcre_goodput_avg_tflops_per_gpu``,
``nvcre_goodput_avg_step_time_seconds`` and the ``nvcre_goodput_*_time_seconds`` gauges (labels
namespace, measurement, job, workflow) while a GoodputMeasurement measures; once it completes
only the ratio stays, until the measurement is deleted. ``nvcre_goodput_measurement_failed``
(labels namespace, measurement, job, workflow, reason; value 1) names each GoodputMeasurement
whose run cannot be trusted (``TrainingLossNotFinite``: its loss or its nan-iteration count went
non-finite), read with ``judge.measured.measurement_failure``, for as long as the measurement
exists.

Topology: ``nvcre_topology_validated_nodes`` and ``nvcre_topology_failed_nodes`` (labels
namespace, workflow, topology_key, domain, node; value 1) for the finished groups of Workflows
with a topology key.

NCCL: ``nvcre_nccl_algbw_gbs`` and ``nvcre_nccl_busbw_gbs`` (labels namespace, measurement, job,
workflow, nccl_test, message_size_bytes) exist only while their measurement has not completed.
``nvcre_nccl_measurement_failed`` (labels namespace, measurement, job, workflow, nccl_test,
reason; value 1) names each bandwidth measurement whose run could not be trusted
(``CollectiveDataCorrupted``, ``CollectiveRunFailed``, ``CollectiveTableIncomplete``), for as
long as the measurement exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..judge.measured import measurement_failure
from ..judge.model import CertificationVerdict, JobState, WorkflowState
from ..judge.reading import job_ref_name, name_of, namespace_of
from ..judge.states import GOODPUT_FIELDS, goodput_state, hardware_failed_nodes, job_state, job_workflow, topology_nodes, workflow_state

__all__ = ["FAMILIES", "GOODPUT_FAMILIES", "CacheObjects", "Sample", "family_samples", "samples", "status_samples"]

_STATUS_WORDS = {"InProgress": "in_progress", "Succeeded": "succeeded", "Failed": "failed"}
_ORDER = ("in_progress", "succeeded", "failed")
_GOODPUT_KIND = "GoodputMeasurement"

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Sample:
    """One gauge sample; labels sorted by name."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


def _no_labels(node: str) -> Mapping[str, Any]:
    return {}


@dataclass(frozen=True)
class CacheObjects:
    """Every Workflow, Job and GoodputMeasurement the caches hold, and a Node's labels by name."""

    workflows: Sequence[Obj] = ()
    jobs: Sequence[Obj] = ()
    goodputs: Sequence[Obj] = ()
    node_labels: Callable[[str], Mapping[str, Any]] = field(default=_no_labels)


def _sample(name: str, value: float, **labels: str) -> Sample:
    return Sample(name, tuple(sorted(labels.items())), value)


def status_samples(name: str, current: str, **labels: str) -> list[Sample]:
    """The three status samples of one object (none when it has no lifecycle status)."""
    word = _STATUS_WORDS.get(current)
    if word is None:
        return []
    return [_sample(name, 1.0 if status == word else 0.0, status=status, **labels) for status in _ORDER]


GOODPUT_FAMILIES = tuple(gauge for gauge, _ in GOODPUT_FIELDS)

#: every gauge family, in the order they are served
FAMILIES = (
    "nvcre_certification_status",
    "nvcre_workflow_status",
    "nvcre_job_status",
    "nvcre_job_failed_nodes",
    *GOODPUT_FAMILIES,
    "nvcre_goodput_measurement_failed",
    "nvcre_topology_validated_nodes",
    "nvcre_topology_failed_nodes",
    "nvcre_nccl_algbw_gbs",
    "nvcre_nccl_busbw_gbs",
    "nvcre_nccl_measurement_failed",
)


def _workflow_samples(name: str, state: WorkflowState) -> list[Sample]:
    return status_samples(name, state.status, namespace=state.namespace, workflow=state.name, certification=state.certification)


def _job_samples(name: str, state: JobState) -> list[Sample]:
    current = "Failed" if state.timed_out else state.status
    return status_samples(name, current, namespace=state.namespace, job=state.name, workflow=state.workflow)


def _workflow_status(verdicts: Sequence[CertificationVerdict], objects: CacheObjects, name: str) -> Iterator[Sample]:
    seen: set[tuple[str, str]] = set()
    for verdict in verdicts:
        for workflow in verdict.workflows:
            if (workflow.namespace, workflow.name) not in seen:
                seen.add((workflow.namespace, workflow.name))
                yield from _workflow_samples(name, workflow)
    for obj in objects.workflows:
        if (namespace_of(obj), name_of(obj)) not in seen:
            state = workflow_state(obj)
            if state is not None:
                yield from _workflow_samples(name, state)


def _job_status(verdicts: Sequence[CertificationVerdict], objects: CacheObjects, name: str) -> Iterator[Sample]:
    seen: set[tuple[str, str]] = set()
    for verdict in verdicts:
        for job in verdict.jobs:
            if (job.namespace, job.name) not in seen:
                seen.add((job.namespace, job.name))
                yield from _job_samples(name, job)
    for obj in objects.jobs:
        if (namespace_of(obj), name_of(obj)) not in seen:
            state = job_state(obj)
            if state is not None:
                yield from _job_samples(name, state)


def _job_workflows(verdicts: Sequence[CertificationVerdict], objects: CacheObjects) -> dict[tuple[str, str], str]:
    """(namespace, job) -> the workflow label ``nvcre_job_status`` gives the Job."""
    out = {(namespace_of(job), name_of(job)): job_workflow(job) for job in objects.jobs}
    for verdict in verdicts:
        for job in verdict.jobs:
            out[(job.namespace, job.name)] = job.workflow
    return out


def _job_failed_nodes(verdicts: Sequence[CertificationVerdict], objects: CacheObjects, name: str) -> Iterator[Sample]:
    workflows: dict[tuple[str, str], str] | None = None
    for obj in objects.jobs:
        count = hardware_failed_nodes(obj)
        if count is None:
            continue
        if workflows is None:
            workflows = _job_workflows(verdicts, objects)
        key = (namespace_of(obj), name_of(obj))
        yield _sample(name, float(count), namespace=key[0], job=key[1], workflow=workflows.get(key, ""))


def _goodput(verdicts: Sequence[CertificationVerdict], objects: CacheObjects, name: str) -> Iterator[Sample]:
    workflows: dict[tuple[str, str], str] | None = None
    for obj in objects.goodputs:
        state = goodput_state(obj)
        if state is None:
            continue
        value = next((v for gauge, v in state.values if gauge == name), None)
        if value is None:
            continue
        if workflows is None:
            workflows = _job_workflows(verdicts, objects)
        workflow = workflows.get((state.namespace, state.job))
        if workflow is None:
            workflow = job_workflow(obj)  # the Job is gone: the measurement's own label
        yield _sample(name, value, namespace=state.namespace, measurement=state.name, job=state.job, workflow=workflow)


def _goodput_failed(verdicts: Sequence[CertificationVerdict], objects: CacheObjects, name: str) -> Iterator[Sample]:
    workflows: dict[tuple[str, str], str] | None = None
    for obj in objects.goodputs:
        # the caches hold only GoodputMeasurements; one listed without its kind is still one
        failure = measurement_failure(obj if obj.get("kind") == _GOODPUT_KIND else {**obj, "kind": _GOODPUT_KIND})
        if failure is None:
            continue
        if workflows is None:
            workflows = _job_workflows(verdicts, objects)
        namespace, job = namespace_of(obj), job_ref_name(obj)
        workflow = workflows.get((namespace, job))
        if workflow is None:
            workflow = job_workflow(obj)  # the Job is gone: the measurement's own label
        yield _sample(name, 1.0, namespace=namespace, measurement=name_of(obj), job=job, workflow=workflow, reason=failure.reason)


def _topology(objects: CacheObjects, name: str) -> Iterator[Sample]:
    validated = name == "nvcre_topology_validated_nodes"
    for obj in objects.workflows:
        for node in topology_nodes(obj, objects.node_labels):
            if node.validated == validated:
                yield _sample(
                    name,
                    1.0,
                    namespace=node.namespace,
                    workflow=node.workflow,
                    topology_key=node.topology_key,
                    domain=node.domain,
                    node=node.node,
                )


def _nccl(verdicts: Sequence[CertificationVerdict], name: str) -> Iterator[Sample]:
    bus = name == "nvcre_nccl_busbw_gbs"
    seen: set[tuple[str, str]] = set()
    for verdict in verdicts:
        for measurement in verdict.measurements:
            if measurement.complete or (measurement.namespace, measurement.name) in seen:
                continue
            seen.add((measurement.namespace, measurement.name))
            for row in measurement.rows:
                yield _sample(
                    name,
                    row.bus_bw if bus else row.alg_bw,
                    namespace=measurement.namespace,
                    measurement=measurement.name,
                    job=measurement.job,
                    workflow=measurement.workflow,
                    nccl_test=measurement.test_type,
                    message_size_bytes=str(row.size_bytes),
                )


def _nccl_failed(verdicts: Sequence[CertificationVerdict], name: str) -> Iterator[Sample]:
    seen: set[tuple[str, str]] = set()
    for verdict in verdicts:
        for measurement in verdict.measurements:
            if not measurement.failure_reason or (measurement.namespace, measurement.name) in seen:
                continue
            seen.add((measurement.namespace, measurement.name))
            yield _sample(
                name,
                1.0,
                namespace=measurement.namespace,
                measurement=measurement.name,
                job=measurement.job,
                workflow=measurement.workflow,
                nccl_test=measurement.test_type,
                reason=measurement.failure_reason,
            )


def family_samples(verdicts: Sequence[CertificationVerdict], name: str, objects: CacheObjects | None = None) -> Iterator[Sample]:
    """The samples of one family, one at a time (a scrape at 2,000 running measurements has
    tens of thousands of NCCL samples; none of them needs to exist before it is written).
    ``objects``: every Workflow, Job and GoodputMeasurement cached, for the families (and the
    objects) no verdict covers; without it only the verdicts are projected."""
    cached = objects if objects is not None else CacheObjects()
    if name == "nvcre_certification_status":
        for verdict in verdicts:
            if verdict.kind == "Certification":
                yield from status_samples(name, verdict.status, namespace=verdict.namespace, certification=verdict.name)
    elif name == "nvcre_workflow_status":
        yield from _workflow_status(verdicts, cached, name)
    elif name == "nvcre_job_status":
        yield from _job_status(verdicts, cached, name)
    elif name == "nvcre_job_failed_nodes":
        yield from _job_failed_nodes(verdicts, cached, name)
    elif name in GOODPUT_FAMILIES:
        yield from _goodput(verdicts, cached, name)
    elif name == "nvcre_goodput_measurement_failed":
        yield from _goodput_failed(verdicts, cached, name)
    elif name in ("nvcre_topology_validated_nodes", "nvcre_topology_failed_nodes"):
        yield from _topology(cached, name)
    elif name in ("nvcre_nccl_algbw_gbs", "nvcre_nccl_busbw_gbs"):
        yield from _nccl(verdicts, name)
    elif name == "nvcre_nccl_measurement_failed":
        yield from _nccl_failed(verdicts, name)


def samples(verdicts: Iterable[CertificationVerdict], objects: CacheObjects | None = None) -> list[Sample]:
    """Every gauge sample for the given verdicts (and cached objects), family by family."""
    listed = list(verdicts)
    return [sample for name in FAMILIES for sample in family_samples(listed, name, objects)]
