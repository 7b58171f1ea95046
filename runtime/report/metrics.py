"""Gauge samples projected from the verdict model (no Prometheus import: just name, labels, value).

``nvcre_certification_status``, ``nvcre_workflow_status`` and ``nvcre_job_status`` carry one
sample per status (``in_progress``, ``succeeded``, ``failed``), 1 for the current one and 0 for
the others; objects with no true lifecycle condition are left out, and a timed-out Job counts as
failed. NCCL gauges ``nvcre_nccl_algbw_gbs`` and ``nvcre_nccl_busbw_gbs`` (labels namespace,
measurement, job, workflow, nccl_test, message_size_bytes) exist only while their measurement
has not completed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..judge.model import CertificationVerdict

__all__ = ["FAMILIES", "Sample", "family_samples", "samples", "status_samples"]

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


#: every gauge family, in the order they are served
FAMILIES = (
    "nvcre_certification_status",
    "nvcre_workflow_status",
    "nvcre_job_status",
    "nvcre_nccl_algbw_gbs",
    "nvcre_nccl_busbw_gbs",
)


def family_samples(verdicts: Sequence[CertificationVerdict], name: str) -> Iterator[Sample]:
    """The samples of one family, one at a time (a scrape at 2,000 running measurements has
    tens of thousands of NCCL samples; none of them needs to exist before it is written)."""
    for verdict in verdicts:
        if name == "nvcre_certification_status" and verdict.kind == "Certification":
            yield from status_samples(name, verdict.status, namespace=verdict.namespace, certification=verdict.name)
        elif name == "nvcre_workflow_status":
            for workflow in verdict.workflows:
                yield from status_samples(
                    name, workflow.status, namespace=workflow.namespace, workflow=workflow.name, certification=workflow.certification
                )
        elif name == "nvcre_job_status":
            for job in verdict.jobs:
                current = "Failed" if job.timed_out else job.status
                yield from status_samples(name, current, namespace=job.namespace, job=job.name, workflow=job.workflow)
        elif name in ("nvcre_nccl_algbw_gbs", "nvcre_nccl_busbw_gbs"):
            bus = name == "nvcre_nccl_busbw_gbs"
            for measurement in verdict.measurements:
                if measurement.complete:
                    continue
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


def samples(verdicts: Iterable[CertificationVerdict]) -> list[Sample]:
    """Every gauge sample for the given verdicts, family by family."""
    listed = list(verdicts)
    return [sample for name in FAMILIES for sample in family_samples(listed, name)]
