"""What every reconciler is handed: the client, the informer caches, the clock, the settings.

Also the one helper that writes a status and records the phase-transition Event (NVCRE's
rule: an Event only when the exclusive True condition flips, after the write succeeded; Warning
when the new phase is Failed), and ``job_events``, where the Job tier counts what happened to
each Job for the metrics (the controller hands in the series it serves).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import compile as compiler
from ..clock import Clock
from ..judge import conditions as cond
from ..judge.health import HealthCheck
from ..kube.access import NamespaceAccess
from ..kube.client import Kube
from ..kube.errors import Conflict, NotFound
from ..kube.informers import Store
from ..kube.memo import HealthMemo
from ..kube.recent import RecentWrites
from ..kube.resources import Resource
from ..measure.windows import DEFAULT_MAX_WINDOWS, DEFAULT_WINDOW_BYTES
from ..metrics.jobs import JobEventSeries

__all__ = ["SAFETY_NET_POLLS", "Context", "Result", "Settings", "controller_uid", "owned_by", "referenced_by"]

log = logging.getLogger("nvcre.runtime.reconcile")

COMPONENT = "nvcre-controller"
_LIFECYCLE_KINDS = frozenset({"certifications", "workloadruns", "workflows", "jobs"})


@dataclass(frozen=True)
class Result:
    """What a reconcile asks for next: ``requeue_after`` seconds (None = wait for an event)."""

    requeue_after: float | None = None


#: An object that waits for events (a running Job, a measurement with nothing to read yet) comes
#: back on a timer only this many poll intervals apart, as a safety net for a missed event.
SAFETY_NET_POLLS = 8


@dataclass(frozen=True)
class Settings:
    """Timing knobs (NVCRE's defaults); tests shorten them."""

    poll_interval: float = 15.0
    step_interval: float = 0.05
    node_discovery_timeout: float = 300.0
    pod_drain_grace: float = 300.0
    measurement_timeout: float = 300.0
    final_read_grace: float = 120.0
    scheduling_stall_grace: float = 300.0
    #: how long a Job's pods may stay unschedulable on every node for a reason no eviction clears
    #: (taint, selector, cordon, a request over the node's allocatable) before the Job fails
    never_schedulable_timeout: float = 1800.0
    #: how long a launched Job's ComputeDomain may stay not Ready before the Job fails
    compute_domain_timeout: float = 600.0
    #: caps a measurement's sampleInterval (None: honour it as written)
    max_sample_interval: float | None = None
    #: how long a Workflow waits for write access in its namespace before it fails
    namespace_access_timeout: float = 600.0
    #: a Workflow pass rewrites the whole status, every group in it: passes of a Workflow with
    #: many groups are spaced this long per group, at most ``max_workflow_pass_gap`` seconds,
    #: so the events of many Jobs fold into one pass (2,000 groups: a 1 MB write every 10 s)
    workflow_pass_gap_per_group: float = 0.005
    max_workflow_pass_gap: float = 10.0
    #: bytes one pod-log read may return (``limitBytes``); a whole log is read in windows this size
    max_log_read_bytes: int = DEFAULT_WINDOW_BYTES
    #: windows one whole-log read may take before it stops as incomplete
    max_log_windows: int = DEFAULT_MAX_WINDOWS

    def workflow_pass_gap(self, groups: int) -> float:
        """The least time between two passes of a Workflow with ``groups`` groups."""
        return min(self.max_workflow_pass_gap, groups * self.workflow_pass_gap_per_group)

    @property
    def safety_net(self) -> float:
        """The timer of an object that otherwise waits for events (:data:`SAFETY_NET_POLLS` polls)."""
        return self.poll_interval * SAFETY_NET_POLLS


@dataclass
class Context:
    """Shared by the reconcilers of one controller process."""

    kube: Kube
    stores: dict[str, Store]
    clock: Clock = field(default_factory=Clock)
    settings: Settings = field(default_factory=Settings)
    enqueue: Callable[[str, str, str], None] = field(default=lambda tier, namespace, name: None)
    access: NamespaceAccess = field(default_factory=lambda: NamespaceAccess(compiler.access_reviews))
    recent: RecentWrites = field(default_factory=RecentWrites)
    #: node health verdicts of unchanged nodes, shared by every Job of this controller
    health: HealthMemo[HealthCheck] = field(default_factory=HealthMemo)
    job_events: JobEventSeries = field(default_factory=JobEventSeries)

    def store(self, resource: Resource) -> Store:
        return self.stores.setdefault(resource.plural, Store())

    def cached(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
        """The cached object, or the one this process's status write returned while the cache
        still shows the version that write replaced (see :mod:`nvcre.runtime.kube.recent`)."""
        return self.recent.overlay(resource.plural, name, namespace, self.store(resource).get(name, namespace))

    def live(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
        """A live GET; None only when the server says NotFound (never a cache miss)."""
        try:
            return self.kube.get(resource, name, namespace)
        except NotFound:
            return None

    def read(self, resource: Resource, name: str, namespace: str | None) -> dict[str, Any] | None:
        """Cache first; a miss is confirmed with a live GET before it counts as absent."""
        return self.cached(resource, name, namespace) or self.live(resource, name, namespace)

    def event(self, obj: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        self.kube.emit_event(obj, type=type_, reason=reason, message=message, component=COMPONENT)

    def write_status(
        self,
        resource: Resource,
        obj: Mapping[str, Any],
        mutate: Callable[[dict[str, Any]], dict[str, Any] | None],
        *,
        stop_when_terminal: bool = False,
        based_on: Mapping[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Write ``mutate(status)``; emit the phase Event when the lifecycle flipped.

        With ``stop_when_terminal`` a concurrent writer that already made the object terminal
        wins: the mutation is not applied over it. With ``based_on`` (the object the new status
        was computed from) the write happens only if the object has not changed since; else
        :class:`Conflict` is raised so the whole reconcile runs again on fresh state.
        """
        flipped: dict[str, Any] = {}
        # every version the mutation was applied over: a conflict retry redoes it over a newer
        # one, and the cache may show any of them until the written version arrives
        superseded: list[str] = []
        base_rv = str((based_on.get("metadata") or {}).get("resourceVersion") or "") if based_on is not None else ""

        def apply(status: dict[str, Any], live: Mapping[str, Any]) -> dict[str, Any] | None:
            superseded.append(str((live.get("metadata") or {}).get("resourceVersion") or ""))
            if base_rv and str((live.get("metadata") or {}).get("resourceVersion") or "") != base_rv:
                raise Conflict(409, "Conflict", f"{resource.kind} changed while it was being reconciled")
            before = cond.lifecycle(status)
            if stop_when_terminal and before in (cond.SUCCEEDED, cond.FAILED):
                return None
            new = mutate(status)
            if new is None:
                return None
            after = cond.lifecycle(new)
            flipped.clear()
            if after != before and after is not None:
                found = cond.condition(new, after) or {}
                flipped.update(type=after, reason=found.get("reason", after), message=found.get("message", ""))
            generation = (live.get("metadata") or {}).get("generation")
            if generation is not None and resource.plural in _LIFECYCLE_KINDS:
                new["observedGeneration"] = int(generation)
            return new

        written = self.kube.write_status(resource, obj, apply)
        if written is not None:
            self.recent.wrote(resource.plural, obj, written, also_replaced=superseded)
        if written is not None and flipped:
            kind = "Warning" if flipped["type"] == cond.FAILED else "Normal"
            self.event(written, kind, str(flipped["reason"]), str(flipped["message"]))
            log.info(
                "phase transition",
                extra={
                    "kind": resource.kind,
                    "object": f"{(written.get('metadata') or {}).get('namespace')}/{(written.get('metadata') or {}).get('name')}",
                    "phase": flipped["type"],
                    "reason": flipped["reason"],
                },
            )
        return written


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The UID of the object's controller owner, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "") or None
    return None


def referenced_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when ``obj`` names ``owner`` (by UID) among its ownerReferences, controller or not."""
    uid = (owner.get("metadata") or {}).get("uid")
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return bool(uid) and any(ref.get("uid") == uid for ref in refs)


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """True when ``owner`` is the controller of ``obj``."""
    uid = (owner.get("metadata") or {}).get("uid")
    return bool(uid) and controller_uid(obj) == uid
