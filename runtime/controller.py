"""The controller process: informers, work queues, reconcilers, leader election, endpoints.

Informers start at once (a standby has warm caches); reconcile workers start only while this
replica holds the Lease. Every event is mapped to the keys it concerns (an object, its
controller owner, the Jobs on a Node...) and queued; a Job leaving the cache also drops its
per-Job metric series; a reconcile's answer decides the next
visit (``requeue_after``), errors back off per key. Losing the Lease stops the workers and
ends :meth:`Controller.run` with a non-zero code, so a supervisor restarts the process clean.
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

__all__ = ["TIERS", "Controller", "ControllerConfig"]

log = logging.getLogger("nvcre.runtime.controller")

#: An owner (Workflow, Certification...) is woken this long after an event of an object it owns,
#: so a burst of child events (250 Jobs changing state) costs one owner reconcile, not one each.
#: Owners poll on their own every ``poll_interval``; a second is small next to that.
OWNER_BATCH_SECONDS = 1.0
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
        self.metrics = ControllerMetrics(
            self.stores,
            self.leading.is_set,
            requests=requests if isinstance(requests, RequestCounter) else None,
            queue_stats=lambda: {tier: queue.stats() for tier, queue in self.queues.items()},
            job_alive=self._job_cached,
        )
        self.queues: dict[str, WorkQueue[tuple[str, str]]] = {
            tier: WorkQueue(on_wait=self.metrics.queue_wait.labels(tier).observe) for tier in TIERS
        }
        self.ctx = Context(kube=kube, stores=self.stores, settings=self.config.settings, enqueue=self.enqueue, job_events=self.metrics.jobs)
        self.reconcilers: dict[str, Reconcile] = build_reconcilers(self.ctx)
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._endpoints: list[Endpoint] = []
        self._elector: LeaderElector | None = None
        self._elector_thread: threading.Thread | None = None
        self.metrics_port: int | None = None
        self.health_port: int | None = None

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
            endpoint = Endpoint(health_at, ready=self.synced).start()
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
        for tier in TIERS:
            for store_key in self._existing_keys(tier):
                self.queues[tier].add(store_key)
            for index in range(max(1, self.config.workers)):
                worker = threading.Thread(target=self._work, args=(tier,), name=f"{tier}-worker-{index}", daemon=True)
                worker.start()
                self._workers.append(worker)
        log.info("reconcilers started", extra={"identity": self.config.identity})

    def _stop_leading(self) -> None:
        self.leading.clear()
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
        queue = self.queues[tier]
        reconcile = self.reconcilers[tier]
        while not self._stop.is_set():
            try:
                key = queue.get()
            except ShutDown:
                return
            started = time.monotonic()
            try:
                result = reconcile(*key)
            except Conflict:
                # the object moved on while we worked: run again on fresh state, soon
                queue.add_rate_limited(key)
                self._observe(tier, key, "requeue", "requeue", started)
            except Exception as exc:  # noqa: BLE001 - one bad object must not stop the worker
                delay = queue.add_rate_limited(key)
                self._observe(tier, key, "error", "error", started)
                log.warning(
                    "reconcile failed; retrying",
                    extra={"controller": tier, "object": f"{key[0]}/{key[1]}", "error": str(exc)[:500], "retry_in": round(delay, 3)},
                    exc_info=not isinstance(exc, ApiError),
                )
            else:
                queue.forget(key)
                if result.requeue_after is not None:
                    queue.add_after(key, result.requeue_after)
                    self._observe(tier, key, "requeue", "success", started)
                else:
                    self._observe(tier, key, "success", "success", started)
            finally:
                queue.done(key)

    def _observe(self, tier: str, key: tuple[str, str], result: str, job_result: str, started: float) -> None:
        """Count a reconcile: per tier (``result``), and for a Job still cached also under NVCRE's
        per-Job labels (``job_result``: a reconcile that asked to come back later succeeded)."""
        self.metrics.observe(tier, result, started)
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
        for worker in self._workers:
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
