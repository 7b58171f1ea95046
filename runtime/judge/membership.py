"""Which Workflows, Jobs and measurements belong to a run: one rule for the report and the gauges.

A Workflow belongs to a Certification or WorkloadRun when the run owns it (an owner reference
with the run's uid) or the run's status names it (``categoryStatuses[].workflowRef`` or
``workflowRef``). A label alone is not enough: a Workflow left from an earlier run of the same
name carries the same label until the garbage collector removes it. A Job belongs to a member
Workflow through its ``nvcre.nvidia.com/workflow`` label; a measurement belongs to a member Job
through ``spec.jobRef`` or, failing that, its ``nvcre.nvidia.com/job`` label.

The report (which lists a namespace from the API server) and the metrics (which read the
controller's caches) both index a namespace's objects here and ask for a run's members, so a
run's verdict is made from the same objects wherever it is shown.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.vocabulary import LABEL_JOB, LABEL_WORKFLOW

__all__ = ["Members", "RunIndex", "status_workflow_refs"]

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def _label(obj: Obj, key: str) -> str:
    labels = _meta(obj).get("labels")
    return str(labels.get(key) or "") if isinstance(labels, Mapping) else ""


def _ref_name(value: Any) -> str:
    return str(value.get("name") or "") if isinstance(value, Mapping) else ""


def status_workflow_refs(run: Obj) -> tuple[str, ...]:
    """The Workflow names a run's status points at, in status order."""
    status = run.get("status")
    if not isinstance(status, Mapping):
        return ()
    names = [_ref_name(row.get("workflowRef")) for row in status.get("categoryStatuses") or [] if isinstance(row, Mapping)]
    names.append(_ref_name(status.get("workflowRef")))
    return tuple(dict.fromkeys(name for name in names if name))


@dataclass(frozen=True)
class Members:
    """A run's Workflows, Jobs and measurements, each sorted (measurements by kind, then name)."""

    workflows: tuple[Obj, ...]
    jobs: tuple[Obj, ...]
    measurements: tuple[Obj, ...]
    #: A WorkloadRun's one Workflow: the one its status names, else the first member
    workflow: Obj | None = None


class RunIndex:
    """One namespace's Workflows, Jobs and measurements, indexed by what ties them to a run."""

    def __init__(self, workflows: Iterable[Obj], jobs: Iterable[Obj], measurements: Iterable[Obj]) -> None:
        self._workflows: dict[str, Obj] = {}
        self._owned: dict[str, list[str]] = defaultdict(list)
        for workflow in workflows:
            name = _name(workflow)
            self._workflows[name] = workflow
            for ref in _meta(workflow).get("ownerReferences") or []:
                if isinstance(ref, Mapping) and ref.get("uid"):
                    self._owned[str(ref["uid"])].append(name)
        self._jobs: dict[str, list[Obj]] = defaultdict(list)
        for job in jobs:
            self._jobs[_label(job, LABEL_WORKFLOW)].append(job)
        self._measurements: dict[str, list[Obj]] = defaultdict(list)
        for measurement in measurements:
            spec = measurement.get("spec")
            job_name = _ref_name(spec.get("jobRef")) if isinstance(spec, Mapping) else ""
            self._measurements[job_name or _label(measurement, LABEL_JOB)].append(measurement)

    def members(self, run: Obj) -> Members:
        """The objects of ``run`` (a Certification or WorkloadRun) by the module's rule."""
        uid = str(_meta(run).get("uid") or "")
        names = set(self._owned.get(uid, ())) if uid else set()
        names.update(name for name in status_workflow_refs(run) if name in self._workflows)
        names.discard("")
        workflows = tuple(self._workflows[name] for name in sorted(names))
        jobs = tuple(sorted((job for name in sorted(names) for job in self._jobs.get(name, ())), key=_name))
        measurements = tuple(
            sorted(
                (m for job in jobs for m in self._measurements.get(_name(job), ())),
                key=lambda m: (str(m.get("kind") or ""), _name(m)),
            )
        )
        refs = status_workflow_refs(run)
        primary = next((w for w in workflows if _name(w) in refs), workflows[0] if workflows else None)
        return Members(workflows, jobs, measurements, primary)
