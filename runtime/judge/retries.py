"""Which attempts of a workload failed before the one that counted, read from its pods (pure).

A catalog workload retries by itself, below anything the controller decides: its pods run with
``restartPolicy: OnFailure``, so the kubelet restarts a failed container in place (the
container's ``restartCount`` goes up and ``lastState.terminated`` keeps how its previous run
ended), and a pod that failed as a whole is replaced by its Job controller (the failed pod
stays, in phase ``Failed``). A run whose retry then completed passes, as it does in NVCRE,
which looks only at the TrainJob's ``Complete`` and ``Failed`` conditions; ``failed_attempts``
says what failed on the way: for each failed run, the node, pod, container, exit code, reason,
signal and when it ended.

Runs are counted per slot: one container of one replica (the replicated job, its index and the
pod's completion index), whichever pod holds it now. A slot's runs are ordered by its pods'
creation and, within a pod, by restart: the kubelet keeps only the last termination of a
container, so a container that restarted three times leaves the first two without detail
(``RetryVerdict.undetailed``). The attempt that counted is the highest a slot reached.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .model import FailedAttempt, RetryVerdict
from .pods import REPLICATED_JOB_LABEL

__all__ = ["MAX_DETAILED", "failed_attempts"]

#: the highest signal number Linux delivers; an exit code of 128 + N above it is a plain code
_MAX_SIGNAL = 64
#: failed runs named one by one; further ones are only counted, so a status message stays short
MAX_DETAILED = 6
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class _Run:
    """One run of a slot, in the order the slot made them."""

    order: tuple[str, str, int]
    failure: FailedAttempt | None  # None: a failed run whose detail the kubelet did not keep


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = pod.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _slot(pod: Mapping[str, Any], container: str) -> tuple[str, str, str, str]:
    labels = _meta(pod).get("labels") or {}
    role = str(labels.get(REPLICATED_JOB_LABEL) or "")
    if not role:
        # no JobSet labels: the pod's generated prefix stands for its replica
        role = str(_meta(pod).get("generateName") or _meta(pod).get("name") or "")
    return role, str(labels.get(JOB_INDEX_LABEL) or ""), str(labels.get(COMPLETION_INDEX_LABEL) or ""), container


def _failure(pod: Mapping[str, Any], container: str, terminated: Mapping[str, Any]) -> FailedAttempt | None:
    """The failed run a ``terminated`` state records, None when it ended with exit code 0."""
    code = terminated.get("exitCode")
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return None
    reported = _int(terminated.get("signal"))
    signal = reported if 0 < reported <= _MAX_SIGNAL else (code - 128 if 128 < code <= 128 + _MAX_SIGNAL else 0)
    labels = _meta(pod).get("labels") or {}
    return FailedAttempt(
        attempt=0,  # numbered once the slot's runs are in order
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
        pod=str(_meta(pod).get("name") or ""),
        container=container,
        role=str(labels.get(REPLICATED_JOB_LABEL) or container),
        exit_code=code,
        reason=str(terminated.get("reason") or "Error"),
        signal=signal,
        signal_reported=0 < reported <= _MAX_SIGNAL,
        finished_at=str(terminated.get("finishedAt") or ""),
    )


def _pod_runs(pod: Mapping[str, Any]) -> Iterable[tuple[tuple[str, str, str, str], _Run]]:
    """Every failed run a pod shows, with its slot. A restart under ``OnFailure`` always followed
    a failure; a container's current termination counts only in a pod that failed as a whole
    and is not being deleted (a pod stopped because its workload completed is not a failure)."""
    created = str(_meta(pod).get("creationTimestamp") or "")
    name = str(_meta(pod).get("name") or "")
    status = pod.get("status") or {}
    failed_pod = status.get("phase") == "Failed" and not _meta(pod).get("deletionTimestamp")
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            if not isinstance(cs, Mapping) or not cs.get("name"):
                continue
            container = str(cs["name"])
            slot = _slot(pod, container)
            restarts = _int(cs.get("restartCount"))
            last = (cs.get("lastState") or {}).get("terminated")
            previous = _failure(pod, container, last) if isinstance(last, Mapping) and restarts >= 1 else None
            undetailed = restarts - (1 if previous is not None else 0)
            for index in range(max(0, undetailed)):
                yield slot, _Run((created, name, index), None)
            if previous is not None:
                yield slot, _Run((created, name, restarts - 1), previous)
            now = (cs.get("state") or {}).get("terminated")
            current = _failure(pod, container, now) if failed_pod and isinstance(now, Mapping) else None
            if current is not None:
                yield slot, _Run((created, name, restarts), current)


def failed_attempts(pods: Iterable[Mapping[str, Any]]) -> RetryVerdict | None:
    """The failed runs before the runs that counted, from a finished workload's pods; None when
    nothing failed on the way (or nothing can be known of it)."""
    runs: dict[tuple[str, str, str, str], list[_Run]] = {}
    for pod in pods:
        if not isinstance(pod, Mapping):
            continue
        for slot, run in _pod_runs(pod):
            runs.setdefault(slot, []).append(run)
    if not runs:
        return None
    detailed: list[FailedAttempt] = []
    undetailed = 0
    highest = 1
    for slot_runs in runs.values():
        slot_runs.sort(key=lambda run: run.order)
        highest = max(highest, len(slot_runs) + 1)
        for number, run in enumerate(slot_runs, start=1):
            if run.failure is None:
                undetailed += 1
            else:
                detailed.append(replace(run.failure, attempt=number))
    detailed.sort(key=lambda f: (f.finished_at or "~", f.attempt, f.node, f.pod, f.container))
    kept = tuple(detailed[:MAX_DETAILED])
    return RetryVerdict(attempt=highest, failed=kept, undetailed=undetailed + len(detailed) - len(kept))
