"""Wait for a run to end, reporting progress: categories, jobs running / blocked / done, elapsed.

Waiting only reads. It polls the run and its Jobs every couple of seconds (a poll survives API
server restarts and dropped watches without any bookkeeping, and a wait has no latency budget
tighter than that). Ctrl-C ends the wait and leaves the run alone; so does the timeout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nvcre.compiler.vocabulary import LABEL_WORKFLOW

from ..kube.client import Kube
from ..kube.errors import ApiError, NotFound
from ..kube.resources import JOBS
from .collect import RunNotFound, phase_of
from .submit import resource_for_kind

__all__ = ["CategoryProgress", "Progress", "WaitOutcome", "wait_for_run"]


@dataclass(frozen=True)
class CategoryProgress:
    """One category (or the WorkloadRun itself) and its phase."""

    label: str
    status: str


@dataclass(frozen=True)
class Progress:
    """A snapshot of a run in flight."""

    elapsed: float
    budget: float
    phase: str
    categories: tuple[CategoryProgress, ...]
    jobs_running: int
    jobs_blocked: int
    jobs_done: int
    jobs_failed: int


@dataclass(frozen=True)
class WaitOutcome:
    """How the wait ended: ``Succeeded``, ``Failed``, ``timeout`` or ``gone``."""

    result: str
    elapsed: float
    run: dict[str, Any] | None


def _categories(run: dict[str, Any]) -> tuple[CategoryProgress, ...]:
    status = run.get("status") or {}
    entries = status.get("categoryStatuses") or []
    if not entries and run.get("kind") == "WorkloadRun":
        return (CategoryProgress(str(run["metadata"]["name"]), phase_of(run)),)
    seen: dict[str, int] = {}
    for entry in entries:
        key = f"{entry.get('domain')}/{entry.get('variant')}"
        seen[key] = seen.get(key, 0) + 1
    out = []
    for entry in entries:
        label = f"{entry.get('domain')}/{entry.get('variant')}"
        if seen[label] > 1:
            label += f" ({entry.get('mnnvl') or 'MNNVL'})"
        out.append(CategoryProgress(label, str(entry.get("status") or "Pending")))
    return tuple(out)


def _job_counts(kube: Kube, namespace: str, workflows: set[str]) -> tuple[int, int, int, int]:
    running = blocked = done = failed = 0
    try:
        jobs = kube.list(JOBS, namespace).items
    except ApiError:
        return 0, 0, 0, 0
    for job in jobs:
        labels = (job.get("metadata") or {}).get("labels") or {}
        if workflows and labels.get(LABEL_WORKFLOW) not in workflows:
            continue
        phase = phase_of(job)
        conditions = (job.get("status") or {}).get("conditions") or []
        reasons = {c.get("reason") for c in conditions if c.get("type") == "InProgress" and c.get("status") == "True"}
        if phase == "Failed":
            failed += 1
            done += 1
        elif phase == "Succeeded":
            done += 1
        elif "WorkloadSchedulingBlocked" in reasons:
            blocked += 1
        else:
            running += 1
    return running, blocked, done, failed


def _workflow_names(run: dict[str, Any]) -> set[str]:
    status = run.get("status") or {}
    names = {str((e.get("workflowRef") or {}).get("name")) for e in status.get("categoryStatuses") or [] if e.get("workflowRef")}
    ref = status.get("workflowRef") or {}
    if ref.get("name"):
        names.add(str(ref["name"]))
    return names


def wait_for_run(
    kube: Kube,
    kind: str,
    name: str,
    namespace: str,
    *,
    timeout: float,
    on_progress: Callable[[Progress], None],
    poll: float = 2.0,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> WaitOutcome:
    """Poll until the run is Succeeded or Failed, the timeout passes, or the run is deleted.

    ``clock`` and ``sleep`` default to :func:`time.monotonic` and :func:`time.sleep`, looked up
    at call time.
    """
    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    resource = resource_for_kind(kind)
    started = clock()
    run: dict[str, Any] | None = None
    while True:
        elapsed = clock() - started
        try:
            run = kube.get(resource, name, namespace)
        except NotFound:
            if run is None:
                raise RunNotFound(kind, name, namespace) from None
            return WaitOutcome("gone", elapsed, None)
        except ApiError:
            pass  # keep the last good view; a transient error is not an outcome
        if run is not None:
            phase = phase_of(run)
            counts = _job_counts(kube, namespace, _workflow_names(run))
            on_progress(Progress(elapsed, timeout, phase, _categories(run), *counts))
            if phase in ("Succeeded", "Failed"):
                return WaitOutcome(phase, elapsed, run)
        if elapsed >= timeout:
            return WaitOutcome("timeout", elapsed, run)
        sleep(min(poll, max(timeout - elapsed, 0.05)))
