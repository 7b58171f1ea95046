"""Names and views the Job tier derives from a Job or its TrainJob alone (pure).

``workload_name`` (the TrainJob a Job runs), ``workflow_label`` (the label of the Job's metric
series), the names of its two measurements, and ``trainjob_phase`` (what a TrainJob's conditions
say about the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import LABEL_WORKFLOW

from ...judge import conditions as cond
from ...judge.reading import labels_of, name_of

__all__ = ["bandwidth_name", "goodput_name", "trainjob_phase", "workflow_label", "workload_name"]


def workload_name(job: Mapping[str, Any]) -> str:
    """The TrainJob's name: the one ``status.workloadRef`` records, else ``<job>-workload``."""
    ref = (job.get("status") or {}).get("workloadRef") or {}
    return str(ref.get("name") or f"{name_of(job)}-workload")


def workflow_label(job: Mapping[str, Any]) -> str:
    """The ``workflow`` label of the Job's metric series: its ``nvcre.nvidia.com/workflow`` label."""
    return str(labels_of(job).get(LABEL_WORKFLOW) or "")


def bandwidth_name(job: Mapping[str, Any]) -> str:
    """The Job's BandwidthMeasurement."""
    return f"{name_of(job)}-bandwidth"


def goodput_name(job: Mapping[str, Any]) -> str:
    """The Job's GoodputMeasurement."""
    return f"{name_of(job)}-goodput"


def trainjob_phase(trainjob: Mapping[str, Any]) -> tuple[str, str]:
    """(phase, message) of a TrainJob: Failed is checked before Complete; suspend is Pending."""
    status = trainjob.get("status") or {}
    for type_, phase in (("Failed", "Failed"), ("Complete", "Succeeded")):
        found = cond.condition(status, type_)
        if found and found.get("status") == "True":
            return phase, str(found.get("message") or "")
    if (trainjob.get("spec") or {}).get("suspend"):
        return "Pending", "TrainJob is suspended (spec.suspend=true), waiting for it to be resumed"
    return "Running", ""
