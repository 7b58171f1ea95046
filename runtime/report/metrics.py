"""Gauge samples projected from the verdict model (no Prometheus import: just name, labels, value).

``nvcre_certification_status``, ``nvcre_workflow_status`` and ``nvcre_job_status`` carry one
sample per status (``in_progress``, ``succeeded``, ``failed``), 1 for the current one and 0 for
the others; objects with no true lifecycle condition are left out, and a timed-out Job counts as
failed. NCCL gauges ``nvcre_nccl_algbw_gbs`` and ``nvcre_nccl_busbw_gbs`` (labels namespace,
measurement, job, workflow, nccl_test, message_size_bytes) exist only while their measurement
has not completed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..judge.model import CertificationVerdict

__all__ = ["Sample", "samples", "status_samples"]

_STATUS_WORDS = {"InProgress": "in_progress", "Succeeded": "succeeded", "Failed": "failed"}
_ORDER = ("in_progress", "succeeded", "failed")


@dataclass(frozen=True)
class Sample:
    """One gauge sample; labels sorted by name."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


def _sample(name: str, value: float, **labels: str) -> Sample:
    return Sample(name, tuple(sorted(labels.items())), value)


def status_samples(name: str, current: str, **labels: str) -> list[Sample]:
    """The three status samples of one object (none when it has no lifecycle status)."""
    word = _STATUS_WORDS.get(current)
    if word is None:
        return []
    return [_sample(name, 1.0 if status == word else 0.0, status=status, **labels) for status in _ORDER]


def samples(verdicts: Iterable[CertificationVerdict]) -> list[Sample]:
    """Every gauge sample for the given verdicts."""
    out: list[Sample] = []
    for verdict in verdicts:
        if verdict.kind == "Certification":
            out += status_samples(
                "nvcre_certification_status", verdict.status, namespace=verdict.namespace, certification=verdict.name
            )
        for workflow in verdict.workflows:
            out += status_samples(
                "nvcre_workflow_status",
                workflow.status,
                namespace=workflow.namespace,
                workflow=workflow.name,
                certification=workflow.certification,
            )
        for job in verdict.jobs:
            current = "Failed" if job.timed_out else job.status
            out += status_samples("nvcre_job_status", current, namespace=job.namespace, job=job.name, workflow=job.workflow)
        for measurement in verdict.measurements:
            if measurement.complete:
                continue
            for row in measurement.rows:
                labels = {
                    "namespace": measurement.namespace,
                    "measurement": measurement.name,
                    "job": measurement.job,
                    "workflow": measurement.workflow,
                    "nccl_test": measurement.test_type,
                    "message_size_bytes": str(row.size_bytes),
                }
                out.append(_sample("nvcre_nccl_algbw_gbs", row.alg_bw, **labels))
                out.append(_sample("nvcre_nccl_busbw_gbs", row.bus_bw, **labels))
    return out
