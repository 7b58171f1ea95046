"""The controller process: informers, work queues, reconcilers, leader election, endpoints.

Informers start at once (a standby has warm caches); reconcile workers start only while this
replica holds the Lease. Every event is mapped to the keys it concerns (an object, its
controller owner, the Jobs on a Node...) and queued; a Job leaving the cache also drops its
per-Job metric series; a reconcile's answer decides the next
visit (``requeue_after``), errors back off per key. Losing the Lease stops the workers and
ends :meth:`Controller.run` with a non-zero code, so a supervisor restarts the process clean.

No object may hold the workers of every tenant: each reconcile has a time budget
(``reconcile_budget``). A watchdog flags a reconcile past it (a log line and a Warning Event
``ReconcileTimeBudgetExceeded`` on the object, ``nvcre_reconcile_over_budget_total``) and starts
another worker for the tier, so the queue keeps moving; the flagged reconcile runs to its end (a
Python thread cannot be stopped), its object comes back only after a delay that doubles with each
overrun, and its worker then leaves. ``/healthz`` fails once a worker has been on one object
longer than ``stuck_worker_limit``, so the liveness probe restarts a process whose workers hang.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import compile as compiler
from .kube.accounting import RequestCounter
from .kube.client import Kube
from .kube.errors import ApiError, Conflict, NotFound
from .kube.informers import Informer, Store, pod_node, wait_all_synced
from .kube.lease import LeaderElector
from .kube.queue import ShutDown, WorkQueue
from .kube.responses import count_responses
from .kube.resources import (
    BANDWIDTH_MEASUREMENTS,
    GOODPUT_MEASUREMENTS,
    JOBS,
    LOGPROFILES,
    NODES,
    PODS,
    RESOURCE_SLICES,
    TRAINJOBS,
    Resource,
)
from .metrics import ControllerMetrics
from .reconcile.context import Context, Settings
from .reconcile.job import workflow_label
from .reconcile.pods import JOB_LABEL, JOBSET_NAME_LABEL
from .serve import Endpoint, parse_address
from .tiers import KIND_TIER, TABLE, TIERS, Reconcile, build_reconcilers
from .workers import Busy, WorkerBoard

__all__ = ["TIERS", "Controller", "ControllerConfig"]

log = logging.getLogger("nvcre.runtime.controller")

#: An owner (Workflow, Certification...) is woken this long after an event of an object it owns,
#: so a burst of child events (250 Jobs changing state) costs one owner reconcile, not one each.
#: Owners poll on their own every ``poll_interval``; a second is small next to that.
OWNER_BATCH_SECONDS = 1.0
#: Longest delay before an object whose reconciles keep running past the budget is visited again.
MAX_OVERRUN_DELAY = 600.0
#: Every tier's own resource, then what the tiers read besides (and wake on).
_WATCHED: tuple[Resource, ...] = (*(tier.resource for tier in TABLE), TRAINJOBS, PODS, NODES, LOGPROFILES, RESOURCE_SLICES)
_OPTIONAL = (RESOURCE_SLICES,)


def _identity() -> str:
    """This process's name in the Lease: the host name, the pid and a random suffix.

    Host name and pid alone are not unique: two containers on a host's network share its host name
    and both run as pid 1, and each would take the other's Lease for its own."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"


@dataclass
class ControllerConfig:
    """Process settings (the CLI flags)."""

    namespace: str | None = None
    metrics_address: str = "127.0.0.1:8080"
    health_address: str = "127.0.0.1:8081"
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str = "nvcre-controller"
    identity: str = field(default_factory=_identity)
    workers: int = 2
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    install_logprofiles: bool = True
    settings: Settings = field(default_factory=Settings)
    #: seconds one reconcile may hold its worker before another worker takes over the tier's queue
    reconcile_budget: float = 60.0
    #: seconds on one object after which ``/healthz`` reports the process unhealthy
    stuck_worker_limit: float = 300.0


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def _node_view(node: Mapping[str, Any] | None) -> Any:
    """The parts of a Node whose change can matter to a run (not heartbeats)."""
    if not node:
        return None
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    conditions = sorted((c.get("type"), c.get("status"), c.get("reason")) for c in status.get("conditions") or [])
    return (
        _meta(node).get("labels"),
        spec.get("taints"),
        spec.get("unschedulable"),
        conditions,
        status.get("allocatable"),
    )


def _pod_view(pod: Mapping[str, Any]) -> Any:
    """The parts of a Pod a Job reconcile reads: labels, node, deletion, status (not annotations)."""
    meta = _meta(pod)
    return (meta.get("labels"), (pod.get("spec") or {}).get("nodeName"), meta.get("deletionTimestamp"), pod.get("status"))


def _jobs_of_pod(pod: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The pod's namespace and the Jobs it belongs to: the one named by ``nvcre.nvidia.com/job``
    and the one whose JobSet (``<job>-workload``) made it (the MPI launcher lacks the label)."""
    meta = _meta(pod)
    labels = meta.get("labels") or {}
    jobs = {str(labels[JOB_LABEL])} if labels.get(JOB_LABEL) else set()
    jobset = str(labels.get(JOBSET_NAME_LABEL) or "")
    if jobset.endswith("-workload"):
        jobs.add(jobset[: -len("-workload")])
    return str(meta.get("namespace") or ""), sorted(jobs)


class Controller:
    """See the module docstring."""

    def __init__(self, kube: Kube, config: ControllerConfig | None = None) -> None:
        self.kube = kube
        self.config = config or ControllerConfig()
        self.informers: dict[str, Informer] = {}
        self.stores: dict[str, Store] = {}
        self.leading = threading.Event()
        self.lost_leadership = threading.Event()
        requests = getattr(kube, "requests", None)
        self.board = WorkerBoard()
        self.metrics = ControllerMetrics(
            self.stores,
            self.leading.is_set,
            requests=requests if isinstance(requests, RequestCounter) else None,
            queue_stats=lambda: {tier: queue.stats() for tier, queue in self.queues.items()},
            job_alive=self._job_cached,
            controllers=TIERS,
            workers=max(1, self.config.workers),
            active=self.board.active,
        )
        count_responses(kube)
        self.queues: dict[str, WorkQueue[tuple[str, str]]] = {tier: self._queue(tier) for tier in TIERS}
        self.ctx = Context(kube=kube, stores=self.stores, settings=self.config.settings, enqueue=self.enqueue, job_events=self.metrics.jobs)
        self.reconcilers: dict[str, Reconcile] = build_reconcilers(self.ctx)
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._endpoints: list[Endpoint] = []
        self._elector: LeaderElector | None = None
        self._elector_thread: threading.Thread | None = None
        self._watchdog: threading.Thread | None = None
        self._lock = threading.Lock()
        #: workers started in place of one flagged over budget and still running it, per tier
        self._replaced: dict[str, int] = dict.fromkeys(TIERS, 0)
        #: the names of those flagged workers: each leaves once its reconcile ends
        self._superseded: set[str] = set()
        #: consecutive overruns per object, for the delay before its next visit
        self._overruns: dict[tuple[str, tuple[str, str]], int] = {}
        #: workers started so far per tier (for their thread names)
        self._spawned: dict[str, int] = dict.fromkeys(TIERS, 0)
        self.metrics_port: int | None = None
        self.health_port: int | None = None

    def _queue(self, tier: str) -> WorkQueue[tuple[str, str]]:
        ours = self.metrics.queue_wait.labels(tier).observe
        standard = self.metrics.standard
        if standard is None:
            return WorkQueue(on_wait=ours)
        theirs = standard.waited(tier)

        def waited(seconds: float) -> None:
            ours(seconds)
            theirs(seconds)

        return WorkQueue(on_wait=waited, on_done=standard.worked(tier))

    def health_problem(self) -> str | None:
        """Why ``/healthz`` fails (a worker on one object past ``stuck_worker_limit``), or None."""
        return self.board.stuck(self.config.stuck_worker_limit)

    # ------------------------------------------------------------------ events -> keys

    def _job_cached(self, namespace: str, name: str) -> bool:
        store = self.stores.get(JOBS.plural)
        return store is not None and store.get(name, namespace) is not None

    def enqueue(self, tier: str, namespace: str, name: str) -> None:
        if tier in self.queues and name:
            self.queues[tier].add((namespace, name))

    def _owner(self, obj: Mapping[str, Any]) -> None:
        for ref in _meta(obj).get("ownerReferences") or []:
            tier = KIND_TIER.get(str(ref.get("kind")))
            if tier and ref.get("controller") and ref.get("name"):
                key = (str(_meta(obj).get("namespace") or ""), str(ref.get("name")))
                self.queues[tier].add_after(key, OWNER_BATCH_SECONDS)

    def _on(self, tier: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None], None]:
        row = next(t for t in TABLE if t.name == tier)

        def handler(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            meta = _meta(obj)
            namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            if not row.skip_event(event_type, obj, old):
                self.enqueue(tier, namespace, name)
            if row.wakes_owner(event_type, obj, old):
                self._owner(obj)
            if tier == "job":
                if event_type == "DELETED":
                    self.metrics.jobs.forget(namespace, name)
                self._wake_measurements(namespace, name)
            if tier in ("bandwidth", "goodput"):
                job = str(((obj.get("spec") or {}).get("jobRef") or {}).get("name") or "")
                self.enqueue("job", namespace, job)

        return handler

    def _wake_measurements(self, namespace: str, job: str) -> None:
        """Queue the Job's measurements. One not in the cache yet is queued by its own ADDED
        event; queueing it here as well would only make its reconciler confirm the miss with a
        live GET."""
        for measurement_tier, plural in (("bandwidth", BANDWIDTH_MEASUREMENTS.plural), ("goodput", GOODPUT_MEASUREMENTS.plural)):
            store = self.stores.get(plural)
            if store is not None and store.get(f"{job}-{measurement_tier}", namespace) is not None:
                self.enqueue(measurement_tier, namespace, f"{job}-{measurement_tier}")

    def _on_trainjob(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self._owner(obj)

    def _on_pod(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event_type == "MODIFIED" and old is not None and _pod_view(old) == _pod_view(obj):
            return
        namespace, jobs = _jobs_of_pod(obj)
        # A pod that starts (or ends) is what a waiting measurement waits for: its log.
        phase_changed = old is None or (old.get("status") or {}).get("phase") != (obj.get("status") or {}).get("phase")
        for job in jobs:
            self.enqueue("job", namespace, job)
            if phase_changed:
                self._wake_measurements(namespace, job)

    def _on_node(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if event_type == "DELETED" or (event_type == "MODIFIED" and _node_view(old) == _node_view(obj)):
            self.metrics.node_events.labels("ignored").inc()
            return
        self.metrics.node_events.labels("relevant").inc()
        node = str(_meta(obj).get("name") or "")
        pods = self.stores[PODS.plural]
        on_node = (
            pods.by_index("node", node)
            if "node" in pods.indexers
            else [pod for pod in pods.list() if (pod.get("spec") or {}).get("nodeName") == node]
        )
        for pod in on_node:
            namespace, jobs = _jobs_of_pod(pod)
            for job in jobs:
                self.enqueue("job", namespace, job)
        for tier, plural in (("certification", "certifications"), ("workloadrun", "workloadruns")):
            for item in self.stores[plural].list():
                if not (item.get("status") or {}).get("categoryStatuses") and not (item.get("status") or {}).get("workflowRef"):
                    self.enqueue(tier, str(_meta(item).get("namespace") or ""), str(_meta(item).get("name") or ""))

    # ------------------------------------------------------------------ lifecycle

    def _start_informers(self) -> None:
        handlers: dict[str, Callable[[str, dict[str, Any], dict[str, Any] | None], None]] = {
            **{tier.resource.plural: self._on(tier.name) for tier in TABLE},
            TRAINJOBS.plural: self._on_trainjob,
            PODS.plural: self._on_pod,
            NODES.plural: self._on_node,
        }
        for resource in _WATCHED:
            if resource in _OPTIONAL:
                try:
                    self.kube.list(resource)
                except NotFound:
                    self.stores[resource.plural] = Store()
                    continue
            indexed = (JOB_LABEL, JOBSET_NAME_LABEL) if resource is PODS else ()
            indexers = {"node": pod_node} if resource is PODS else None
            informer = Informer(self.kube, resource, self.config.namespace, indexed_labels=indexed, indexers=indexers)
            if resource.plural in handlers:
                informer.add_handler(handlers[resource.plural])
            self.informers[resource.plural] = informer
            self.stores[resource.plural] = informer.store
            informer.start()

    def synced(self) -> bool:
        return all(i.synced.is_set() for i in self.informers.values())

    def start(self) -> Controller:
        self._start_informers()
        metrics_at = parse_address(self.config.metrics_address)
        if metrics_at is not None:
            endpoint = Endpoint(metrics_at, registry=self.metrics.registry).start()
            self.metrics_port = endpoint.port
            self._endpoints.append(endpoint)
        health_at = parse_address(self.config.health_address)
        if health_at is not None:
            endpoint = Endpoint(health_at, ready=self.synced, healthy=self.health_problem).start()
            self.health_port = endpoint.port
            self._endpoints.append(endpoint)
        if self.config.leader_elect:
            self._elector = LeaderElector(
                self.kube,
                name=self.config.lease_name,
                namespace=self.config.lease_namespace,
                identity=self.config.identity,
                lease_duration=self.config.lease_duration,
                renew_deadline=self.config.renew_deadline,
                retry_period=self.config.retry_period,
                on_started_leading=self._start_leading,
                on_stopped_leading=self._stop_leading,
            )
            self._elector_thread = threading.Thread(target=self._elector.run, args=(self._stop,), name="leader-election", daemon=True)
            self._elector_thread.start()
        else:
            self._start_leading()
        return self

    def _start_leading(self) -> None:
        if not wait_all_synced(self.informers.values(), 60.0):
            log.warning("informers not synced after 60s; starting anyway")
        if self.config.install_logprofiles:
            self._install_logprofiles()
        self.leading.set()
        if self.config.leader_elect and self.metrics.standard is not None:
            self.metrics.standard.leading(self.config.lease_name, True)
        for tier in TIERS:
            for store_key in self._existing_keys(tier):
                self.queues[tier].add(store_key)
            for _ in range(max(1, self.config.workers)):
                self._start_worker(tier)
        self._watchdog = threading.Thread(target=self._watch, name="reconcile-watchdog", daemon=True)
        self._watchdog.start()
        log.info("reconcilers started", extra={"identity": self.config.identity})

    def _start_worker(self, tier: str) -> None:
        with self._lock:
            index = self._spawned[tier]
            self._spawned[tier] += 1
        worker = threading.Thread(target=self._work, args=(tier,), name=f"{tier}-worker-{index}", daemon=True)
        worker.start()
        self._workers.append(worker)

    def _watch(self) -> None:
        """Flag reconciles past the budget, and give their tier another worker meanwhile."""
        period = max(0.05, min(1.0, self.config.reconcile_budget / 4))
        while not self._stop.wait(period):
            for busy in self.board.over_budget(self.config.reconcile_budget):
                self._over_budget(busy)

    def _over_budget(self, busy: Busy) -> None:
        tier = busy.controller
        self.metrics.over_budget.labels(tier).inc()
        with self._lock:
            spare = self._replaced[tier] < max(1, self.config.workers)
            if spare:
                self._replaced[tier] += 1
                self._superseded.add(busy.worker)
        message = (
            f"reconcile of {tier} {busy.object} has run past its time budget of {self.config.reconcile_budget:g} s; "
            "other objects are being reconciled meanwhile, and this one is visited again later"
        )
        log.warning(
            message, extra={"controller": tier, "object": busy.object, "reason": "ReconcileTimeBudgetExceeded", "worker": busy.worker}
        )
        plural = next(t.resource.plural for t in TABLE if t.name == tier)
        obj = self.stores[plural].get(busy.key[1], busy.key[0] or None) if plural in self.stores else None
        if obj is not None:
            try:
                self.kube.emit_event(
                    obj, type="Warning", reason="ReconcileTimeBudgetExceeded", message=message, component="nvcre-controller"
                )
            except Exception as exc:  # noqa: BLE001 - an Event is a courtesy; the watchdog must keep watching
                log.debug("event not written", extra={"error": str(exc)[:300]})
        if spare:
            self._start_worker(tier)

    def _stop_leading(self) -> None:
        self.leading.clear()
        if self.config.leader_elect and self.metrics.standard is not None:
            self.metrics.standard.leading(self.config.lease_name, False)
        self.lost_leadership.set()
        self._stop.set()
        for queue in self.queues.values():
            queue.shutdown()

    def _existing_keys(self, tier: str) -> list[tuple[str, str]]:
        plural = next(t.resource.plural for t in TABLE if t.name == tier)
        return [(str(_meta(o).get("namespace") or ""), str(_meta(o).get("name") or "")) for o in self.stores[plural].list()]

    def _install_logprofiles(self) -> None:
        try:
            profiles = compiler.builtin_logprofiles()
        except Exception as exc:  # noqa: BLE001 - a broken profile file must not stop the controller
            log.error("built-in LogProfiles not loaded", extra={"error": str(exc)[:500]})
            return
        for profile in profiles:
            # The install applies the same profiles, and its role only lets the controller read
            # them: write only when one is missing or differs from ours.
            try:
                live = self.kube.get(LOGPROFILES, str(_meta(profile).get("name")))
            except ApiError:
                live = None
            if live is not None and _covers(live.get("spec"), profile.get("spec")):
                continue
            try:
                self.kube.apply(profile)
            except ApiError as exc:
                log.warning("LogProfile not applied", extra={"profile": _meta(profile).get("name"), "error": exc.message})

    def _work(self, tier: str) -> None:
        """Take keys of ``tier`` until shutdown; leave after a reconcile flagged over its budget
        when another worker was started in this one's place (at most ``workers`` at a time)."""
        queue = self.queues[tier]
        name = threading.current_thread().name
        while not self._stop.is_set():
            try:
                key = queue.get()
            except ShutDown:
                return
            self.board.begin(name, tier, key)
            hold = 0.0
            try:
                # None: back off as after a failure; a number: come back after that many seconds
                after = self._reconcile_one(tier, key)
            finally:
                busy = self.board.end(name)
                if busy is not None and busy.over_budget:
                    hold = self._hold_after_overrun(tier, key)
                    queue.done(key, hold=hold)
            if hold:
                with self._lock:
                    superseded = name in self._superseded
                    if superseded:
                        self._superseded.discard(name)
                        self._replaced[tier] = max(0, self._replaced[tier] - 1)
                if superseded:
                    return
                continue
            with self._lock:
                self._overruns.pop((tier, key), None)
            if after is None:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
                if after >= 0:
                    queue.add_after(key, after)
            queue.done(key)

    def _hold_after_overrun(self, tier: str, key: tuple[str, str]) -> float:
        """Queue the next visit of an object that ran past the budget no sooner than the budget,
        doubled for each overrun in a row (at most ``MAX_OVERRUN_DELAY``), whatever the reconcile
        asked for."""
        with self._lock:
            count = self._overruns.get((tier, key), 0)
            self._overruns[(tier, key)] = count + 1
        delay = min(MAX_OVERRUN_DELAY, self.config.reconcile_budget * (1 << min(count, 20)))
        self.queues[tier].add_after(key, delay, coalesce=False)
        return delay

    def _reconcile_one(self, tier: str, key: tuple[str, str]) -> float | None:
        """Run one reconcile and count it; when to come back: None to back off (it failed, or lost
        a write race), seconds (``requeue_after``), or -1 for no planned visit."""
        started = time.monotonic()
        try:
            result = self.reconcilers[tier](*key)
        except Conflict:
            # the object moved on while we worked: run again on fresh state, soon
            self._observe(tier, key, "requeue", "requeue", started, "requeue")
            return None
        except Exception as exc:  # noqa: BLE001 - one bad object must not stop the worker
            self._observe(tier, key, "error", "error", started, "error")
            log.warning(
                "reconcile failed; retrying",
                extra={"controller": tier, "object": f"{key[0]}/{key[1]}", "error": str(exc)[:500]},
                exc_info=not isinstance(exc, ApiError),
            )
            return None
        if result.requeue_after is not None:
            self._observe(tier, key, "requeue", "success", started, "requeue_after")
            return max(0.0, float(result.requeue_after))
        self._observe(tier, key, "success", "success", started, "success")
        return -1.0

    def _observe(self, tier: str, key: tuple[str, str], result: str, job_result: str, started: float, standard: str | None = None) -> None:
        """Count a reconcile: per tier (``result``; ``standard`` in controller-runtime's words), and
        for a Job still cached also under NVCRE's per-Job labels (``job_result``: a reconcile that
        asked to come back later succeeded)."""
        self.metrics.observe(tier, result, started, standard)
        if tier != "job":
            return
        job = self.stores[JOBS.plural].get(key[1], key[0]) if JOBS.plural in self.stores else None
        if job is not None:
            seconds = max(0.0, time.monotonic() - started)
            self.metrics.jobs.reconciled(key[0], key[1], workflow_label(job), job_result, seconds)

    def stop(self) -> None:
        """Stop workers, release the Lease, stop informers and endpoints."""
        self._stop.set()
        for queue in self.queues.values():
            queue.shutdown()
        for worker in list(self._workers):
            worker.join(timeout=10)
        if self._elector_thread is not None:
            self._elector_thread.join(timeout=10)
        for informer in self.informers.values():
            informer.stop()
        for endpoint in self._endpoints:
            endpoint.stop()

    def run(self, stop: threading.Event) -> int:
        """Start, wait for ``stop`` (or lost leadership), stop. 0 on a clean stop, 1 otherwise."""
        self.start()
        while not stop.wait(0.5):
            if self.lost_leadership.is_set():
                break
        self.stop()
        return 1 if self.lost_leadership.is_set() else 0


def _covers(live: Any, ours: Any) -> bool:
    """``live`` holds everything ``ours`` sets, with the same values (it may hold defaults besides)."""
    if isinstance(ours, Mapping):
        return isinstance(live, Mapping) and all(key in live and _covers(live[key], value) for key, value in ours.items())
    if isinstance(ours, list):
        return isinstance(live, list) and len(live) == len(ours) and all(_covers(a, b) for a, b in zip(live, ours))
    return bool(live == ours)
