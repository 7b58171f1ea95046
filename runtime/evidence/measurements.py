"""What each Job measured, read from its BandwidthMeasurement and GoodputMeasurement.

The verdict model keeps one peak row per group; evidence keeps every row: for each Job (one
group, one iteration) the bus and algorithm bandwidth per message size, the transports, the
goodput, step time and TFLOPS of a training Job, and the times the objects recorded. A bandwidth
run that cannot be trusted (corrupted data, a failed run, a table that never finished) keeps its
rows and its ``failure``, and has no peak; a training run that diverged (its loss or its count
of nan iterations went non-finite) keeps its step time, TFLOPS and training time and its
``failure``, and has no goodput: nothing downstream compares either as a measurement. Values the
measurement published as strings become numbers; a value that is not a number is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_GROUP_NODES, LABEL_GROUP, LABEL_JOB, LABEL_WORKFLOW

from ..judge.measured import measurement_failure

__all__ = ["job_measurements", "number"]

_ITERATION = re.compile(r"-iter-(\d+)$")


def number(value: Any) -> float | None:
    """A finite float from a number or a numeric string; None otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and out not in (float("inf"), float("-inf")) else None


def _integer(value: Any) -> int | None:
    got = number(value)
    return int(got) if got is not None and got.is_integer() else None


def _condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def _job_of(measurement: Mapping[str, Any]) -> str:
    ref = ((measurement.get("spec") or {}).get("jobRef") or {}).get("name")
    return str(ref or ((measurement.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB) or "")


def _rows(status: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for row in status.get("results") or []:
        if not isinstance(row, Mapping):
            continue
        size = _integer(row.get("sizeBytes"))
        bus = number(row.get("busBW"))
        if size is None or bus is None:
            continue
        out: dict[str, Any] = {"sizeBytes": size, "busBandwidthGBps": bus}
        alg = number(row.get("algBW"))
        if alg is not None:
            out["algBandwidthGBps"] = alg
        samples = _integer(row.get("samples"))
        if samples is not None:
            out["samples"] = samples
        rows.append(out)
    rows.sort(key=lambda r: r["sizeBytes"])
    return rows


def _bandwidth(measurement: Mapping[str, Any]) -> dict[str, Any]:
    status = measurement.get("status") or {}
    rows = _rows(status)
    out: dict[str, Any] = {
        "testType": str((measurement.get("spec") or {}).get("testType") or ""),
        "complete": _condition_true(measurement, "Complete"),
        "rows": rows,
        "transport": sorted({str(t) for t in status.get("transport") or []}),
    }
    failure = status.get("failure")
    if isinstance(failure, Mapping) and failure.get("reason"):
        # a corrupted, failed or unfinished run: its rows stay, but it has no peak to compare
        out["failure"] = {"reason": str(failure["reason"]), "message": str(failure.get("message") or "")}
    elif rows:
        # the verdict's peak: the row of the largest message size
        out["peakBusBandwidthGBps"] = rows[-1]["busBandwidthGBps"]
    return out


def _goodput(measurement: Mapping[str, Any]) -> dict[str, Any]:
    status = measurement.get("status") or {}
    out: dict[str, Any] = {"complete": _condition_true(measurement, "Complete")}
    for key, source in (
        ("goodput", "result"),
        ("stepTimeSeconds", "avgStepTimeSec"),
        ("tflopsPerGPU", "avgTFLOPSPerGPU"),
        ("trainingTimeSeconds", "trainingTimeSec"),
    ):
        value = number(status.get(source))
        if value is not None:
            out[key] = value
    for key in ("startTime", "completionTime"):
        if status.get(key):
            out[key] = str(status[key])
    failure = measurement_failure(measurement)
    if failure is not None:
        # a diverged run: the goodput its finite steps gave is not a measurement of the group
        out.pop("goodput", None)
        out["failure"] = {"reason": failure.reason, "message": failure.message}
    return out


def job_measurements(
    workflow: Mapping[str, Any], jobs: Iterable[Mapping[str, Any]], measurements: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One entry per Job of ``workflow`` (sorted by group, then iteration): its group, nodes,
    times and what its measurements hold."""
    name = str((workflow.get("metadata") or {}).get("name") or "")
    status_groups = {
        str(g.get("name")): g
        for g in ((workflow.get("status") or {}).get("orchestration") or {}).get("groups") or []
        if isinstance(g, Mapping)
    }
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for m in measurements:
        by_job.setdefault(_job_of(m), []).append(m)
    out = []
    for job in jobs:
        meta = job.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(LABEL_WORKFLOW) != name:
            continue
        job_name = str(meta.get("name") or "")
        group = str(labels.get(LABEL_GROUP) or "")
        recorded = status_groups.get(group) or {}
        annotated = str((meta.get("annotations") or {}).get(ANNOTATION_GROUP_NODES) or "")
        nodes = sorted({n.strip() for n in annotated.split(",") if n.strip()}) or sorted(str(n) for n in recorded.get("nodes") or [])
        found = _ITERATION.search(job_name)
        entry: dict[str, Any] = {
            "job": job_name,
            "group": group,
            "iteration": int(found.group(1)) if found else 1,
            "nodes": nodes,
        }
        status = job.get("status") or {}
        times = {
            "created": meta.get("creationTimestamp"),
            "workloadStart": status.get("workloadStartTime"),
            "end": _terminal_time(job),
        }
        entry["times"] = {k: str(v) for k, v in times.items() if v}
        for m in sorted(by_job.get(job_name, ()), key=lambda m: str(m.get("kind"))):
            if m.get("kind") == "BandwidthMeasurement":
                entry["bandwidth"] = _bandwidth(m)
            elif m.get("kind") == "GoodputMeasurement":
                entry["training"] = _goodput(m)
        out.append(entry)
    out.sort(key=lambda e: (e["group"], e["iteration"], e["job"]))
    return out


def _terminal_time(obj: Mapping[str, Any]) -> str:
    """When the object's Succeeded or Failed condition turned true ("" while it runs)."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Succeeded", "Failed") and condition.get("status") == "True":
            return str(condition.get("lastTransitionTime") or "")
    return ""


terminal_time = _terminal_time
