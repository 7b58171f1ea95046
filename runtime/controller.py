"""The controller process: informers, work queues, reconcilers, leader election, endpoints.

Informers start at once (a standby has warm caches); reconcile workers start only while this
replica holds the Lease. Everything tier-shaped comes from the table in :mod:`.tiers`: one queue
and its workers per row, one informer per resource the rows name, and one handler per watched
resource that routes each event through every row watching it (the row's own objects, the objects
it owns, the map functions of :mod:`.watches`) and queues the keys they give; an object of a tier
with per-object metric series drops them when it leaves the cache. A reconcile's answer decides
the next visit (``requeue_after``), errors back off per key. Losing the Lease stops the workers and
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import compile as compiler
from .endpoint.serve import Endpoint, parse_address
from .kube.accounting import RequestCounter
from .kube.client import Kube
from .kube.errors import ApiError, Conflict, NotFound
from .kube.informers import EventHandler, Informer, Store, wait_all_synced
from .kube.lease import LeaderElector
from .kube.queue import ShutDown, WorkQueue
from .kube.resources import JOBS, LOGPROFILES, NODES, Resource
from .kube.responses import count_responses
from .metrics.registry import ControllerMetrics
from .reconcile.context import Context, Settings
from .reconcile.job import workflow_label
from .tiers import CACHES, TABLE, TIERS, Reconcile, Route, informed, reconcilers, routes, tier_named
from .watches import Event, Filter, cached_keys
from .workers import Busy, WorkerBoard

__all__ = ["TIERS", "Controller", "ControllerConfig"]

log = logging.getLogger("nvcre.runtime.controller")

#: Longest delay before an object whose reconciles keep running past the budget is visited again.
MAX_OVERRUN_DELAY = 600.0


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
        self.reconcilers: dict[str, Reconcile] = reconcilers(self.ctx)
        #: one handler per watched resource, routing its events through every row that watches it
        self.handlers: dict[str, EventHandler] = {plural: self._handler(plural, found) for plural, found in routes().items()}
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

    def _lookup(self, resource: Resource) -> Store | None:
        return self.stores.get(resource.plural)

    def _handler(self, plural: str, found: tuple[Route, ...]) -> EventHandler:
        """The handler of one resource's events: each route whose filter lets the event through
        queues the keys its map function gives, at once or after its delay. A Node event is
        counted as relevant when some route took it; a deleted object of a tier with per-object
        series drops them."""
        counted = self.metrics.node_events if plural == NODES.plural else None
        series = any(tier.object_series and tier.resource.plural == plural for tier in TABLE)
        plan = tuple((route.tier, route.watch.when, route.watch.keys, route.watch.delay) for route in found)
        lookup = self._lookup

        def handle(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            event = Event(event_type, obj, old)
            passed: dict[Filter, bool] = {}  # a filter shared by several rows is asked once
            taken = False
            for tier, when, keys, delay in plan:
                if when not in passed:
                    passed[when] = when(event)
                if not passed[when]:
                    continue
                taken = True
                queue = self.queues[tier]
                for key in keys(event, lookup):
                    if delay:
                        queue.add_after(key, delay)
                    elif key[1]:
                        queue.add(key)
            if counted is not None:
                counted.labels("relevant" if taken else "ignored").inc()
            if series and event_type == "DELETED":
                namespace, name = str(_meta(obj).get("namespace") or ""), str(_meta(obj).get("name") or "")
                self.metrics.jobs.forget(namespace, name)

        return handle

    # ------------------------------------------------------------------ lifecycle

    def _start_informers(self) -> None:
        for resource in informed():
            shape = CACHES.get(resource.plural)
            if shape is not None and shape.optional:
                try:
                    self.kube.list(resource)
                except NotFound:
                    self.stores[resource.plural] = Store()
                    continue
            labels, indexers = (shape.labels, dict(shape.indexers)) if shape is not None else ((), None)
            informer = Informer(self.kube, resource, self.config.namespace, indexed_labels=labels, indexers=indexers or None)
            if resource.plural in self.handlers:
                informer.add_handler(self.handlers[resource.plural])
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
        for row in TABLE:
            for store_key in cached_keys(row.resource, self._lookup):
                self.queues[row.name].add(store_key)
            for _ in range(max(1, self.config.workers)):
                self._start_worker(row.name)
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
        plural = tier_named(tier).resource.plural
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
        for a tier with per-object series whose object is still cached also under NVCRE's per-Job
        labels (``job_result``: a reconcile that asked to come back later succeeded)."""
        self.metrics.observe(tier, result, started, standard)
        row = tier_named(tier)
        if not row.object_series:
            return
        store = self._lookup(row.resource)
        job = store.get(key[1], key[0]) if store is not None else None
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
