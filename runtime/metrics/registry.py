"""Prometheus metrics: NVCRE's families, and the controller's own costs.

State is projected at scrape time, on the elected leader only: every Certification and
WorkloadRun in the caches is turned into ``judge.verdict``'s verdict (with its Workflows, Jobs and
measurements), and ``gauges`` projects those verdicts, and every other Workflow, Job and
GoodputMeasurement in the caches, into gauge samples: the status gauges
``nvcre_certification_status``, ``nvcre_workflow_status`` and ``nvcre_job_status`` (a timed-out
Job counts as failed), ``nvcre_job_failed_nodes``, the ``nvcre_goodput_*`` gauges (with
``nvcre_goodput_measurement_failed`` for a training run that cannot be trusted), the topology
gauges ``nvcre_topology_validated_nodes`` / ``nvcre_topology_failed_nodes`` and the NCCL gauges
``nvcre_nccl_busbw_gbs`` / ``nvcre_nccl_algbw_gbs`` (with ``nvcre_nccl_measurement_failed``).
The report, the CLI and these gauges therefore read the same objects the same way and cannot
disagree.

Events are counted where they happen, per Job, by :class:`~nvcre.runtime.job_metrics.JobEventSeries`
(``nvcre_reconcile_total``, ``nvcre_reconcile_duration_seconds``, ``nvcre_workload_created_total``,
``nvcre_node_health_check_duration_seconds``, ``nvcre_nodes_evaluated_total``,
``nvcre_hardware_failed_jobs_total``, ``nvcre_hardware_failures_detected_total``), and dropped
with the Job.

The controller's own costs are served too: ``nvcre_controller_reconcile_total{controller,result}``
and ``nvcre_controller_reconcile_duration_seconds{controller}`` (every tier), ``nvcre_api_requests_total{verb,resource}``
(every request the client sent, counted client side), the work queues' wait histogram
``nvcre_workqueue_queue_duration_seconds{name}`` with ``nvcre_workqueue_adds_total``,
``nvcre_workqueue_coalesced_adds_total``, ``nvcre_workqueue_longest_wait_seconds`` and
``nvcre_workqueue_depth``, and ``nvcre_node_events_total{result}`` (Node events that could
matter to a run, and those ignored as heartbeats).

Given the controller's tiers, the registry also serves the families every controller-runtime
controller serves (``controller_runtime_*``, ``workqueue_*``, ``rest_client_requests_total``,
``leader_election_master_status``, ``process_*``; see :mod:`nvcre.runtime.standard_metrics`).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample as PromSample

from ..judge.membership import RunIndex
from ..judge.model import CertificationVerdict
from ..judge.verdict import certification_verdict, workloadrun_verdict
from ..kube.accounting import RequestCounter
from ..kube.informers import Store
from ..kube.queue import QueueStats
from .gauges import FAMILIES, CacheObjects, family_samples
from .jobs import JobEventSeries
from .standard import StandardMetrics

__all__ = ["ControllerMetrics", "CostCollector", "StatusCollector", "cache_objects", "verdicts"]

#: queue wait buckets: 1 ms to about 65 s
QUEUE_WAIT_BUCKETS = tuple(0.001 * 2**i for i in range(17))

log = logging.getLogger("nvcre.runtime.metrics")

_HELP = {
    "nvcre_certification_status": "Lifecycle of each Certification (1 = current)",
    "nvcre_workflow_status": "Lifecycle of each Workflow (1 = current)",
    "nvcre_job_status": "Lifecycle of each Job (1 = current; timed out counts as failed)",
    "nvcre_job_failed_nodes": "Nodes the health monitor flagged in each Job with a hardware failure",
    "nvcre_nccl_measurement_failed": "Bandwidth measurements whose run cannot be trusted (1 each; reason label)",
    "nvcre_goodput_measurement_failed": "Training measurements whose run cannot be trusted (1 each; reason label)",
    "nvcre_goodput_ratio": "Goodput of each training measurement, 0 to 1 (kept once it completes)",
    "nvcre_goodput_avg_tflops_per_gpu": "Mean TFLOPS per GPU of the current attempt while measuring",
    "nvcre_goodput_avg_step_time_seconds": "Mean seconds per training step of the current attempt while measuring",
    "nvcre_goodput_training_time_seconds": "Wall-clock seconds of training so far while measuring",
    "nvcre_goodput_reschedule_time_seconds": "Seconds lost between a failure and the next attempt starting, while measuring",
    "nvcre_goodput_resume_time_seconds": "Seconds from each attempt's start to its first step, while measuring",
    "nvcre_goodput_checkpoint_save_time_seconds": "Seconds spent saving checkpoints while measuring",
    "nvcre_goodput_warmup_time_seconds": "Seconds of warm-up steps while measuring",
    "nvcre_goodput_non_warmup_time_seconds": "Seconds of steps after warm-up while measuring",
    "nvcre_goodput_lost_work_time_seconds": "Seconds of work redone after restarts (since the last checkpoint), while measuring",
    "nvcre_topology_validated_nodes": "1 for each node of a topology Workflow that passed, by topology domain",
    "nvcre_topology_failed_nodes": "1 for each node of a topology Workflow that failed, by topology domain",
    "nvcre_nccl_busbw_gbs": "NCCL bus bandwidth per message size while measuring (GB/s)",
    "nvcre_nccl_algbw_gbs": "NCCL algorithm bandwidth per message size while measuring (GB/s)",
}


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def _items(stores: Mapping[str, Store], plural: str) -> list[dict[str, Any]]:
    store = stores.get(plural)
    return store.list() if store is not None else []


def verdicts(stores: Mapping[str, Store]) -> list[CertificationVerdict]:
    """The verdict of every Certification and WorkloadRun the caches hold, each made from the
    objects :class:`~nvcre.runtime.judge.membership.RunIndex` says belong to it."""
    by_namespace: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]] = defaultdict(lambda: ([], [], []))
    for slot, plurals in enumerate((("workflows",), ("jobs",), ("bandwidthmeasurements", "goodputmeasurements"))):
        for plural in plurals:
            for obj in _items(stores, plural):
                by_namespace[str(_meta(obj).get("namespace") or "")][slot].append(obj)
    indexes: dict[str, RunIndex] = {}

    def index(namespace: str) -> RunIndex:
        if namespace not in indexes:
            indexes[namespace] = RunIndex(*by_namespace.get(namespace, ([], [], [])))
        return indexes[namespace]

    out: list[CertificationVerdict] = []
    for cert in _items(stores, "certifications"):
        got = index(str(_meta(cert).get("namespace") or "")).members(cert)
        out.append(certification_verdict(cert, got.workflows, got.jobs, got.measurements))
    for run in _items(stores, "workloadruns"):
        got = index(str(_meta(run).get("namespace") or "")).members(run)
        out.append(workloadrun_verdict(run, got.workflow, got.jobs, got.measurements))
    return out


def cache_objects(stores: Mapping[str, Store]) -> CacheObjects:
    """Every Workflow, Job and GoodputMeasurement the caches hold, and Node labels by name."""
    nodes = stores.get("nodes")

    def node_labels(name: str) -> Mapping[str, Any]:
        node = nodes.get(name, None) if nodes is not None else None
        return (_meta(node).get("labels") or {}) if node else {}

    return CacheObjects(_items(stores, "workflows"), _items(stores, "jobs"), _items(stores, "goodputmeasurements"), node_labels)


class _StreamedGauge(Metric):
    """A gauge family whose samples are made while the exposition writes them, not before."""

    def __init__(self, name: str, verdicts: Sequence[CertificationVerdict], objects: CacheObjects) -> None:
        super().__init__(name, _HELP.get(name, name), "gauge")
        self._verdicts = verdicts
        self._objects = objects

    @property  # type: ignore[override]
    def samples(self) -> Iterator[PromSample]:
        for sample in family_samples(self._verdicts, self.name, self._objects):
            yield PromSample(sample.name, dict(sample.labels), sample.value)

    @samples.setter
    def samples(self, value: Any) -> None:  # Metric.__init__ assigns an empty list
        return None


class StatusCollector(Collector):
    """Projects the verdicts at scrape time; silent unless ``is_leader()``. Each family's samples
    are produced while they are written, so a scrape never holds them all at once."""

    def __init__(self, stores: Mapping[str, Store], is_leader: Callable[[], bool]) -> None:
        self.stores = stores
        self.is_leader = is_leader

    def collect(self) -> Iterator[Metric]:
        if not self.is_leader():
            return
        model = verdicts(self.stores)
        objects = cache_objects(self.stores)
        for name in FAMILIES:
            if next(family_samples(model, name, objects), None) is not None:  # an empty family is left out
                yield _StreamedGauge(name, model, objects)


class CostCollector(Collector):
    """API requests and work-queue state, read at scrape time from the objects that count them."""

    def __init__(
        self,
        requests: RequestCounter | None,
        queue_stats: Callable[[], Mapping[str, QueueStats]],
    ) -> None:
        self.requests = requests
        self.queue_stats = queue_stats

    def collect(self) -> Iterator[Metric]:
        if self.requests is not None:
            family = CounterMetricFamily(
                "nvcre_api_requests", "API requests sent by the controller, by verb and resource", labels=["verb", "resource"]
            )
            for (verb, resource), count in sorted(self.requests.snapshot().items()):
                family.add_metric([verb, resource], count)
            yield family
        stats = dict(self.queue_stats())
        if not stats:
            return
        adds = CounterMetricFamily("nvcre_workqueue_adds", "Keys asked for, by queue", labels=["name"])
        coalesced = CounterMetricFamily(
            "nvcre_workqueue_coalesced_adds", "Adds absorbed by the same key already queued or in progress", labels=["name"]
        )
        longest = GaugeMetricFamily(
            "nvcre_workqueue_longest_wait_seconds", "Longest wait between a key becoming ready and a worker taking it", labels=["name"]
        )
        depth = GaugeMetricFamily("nvcre_workqueue_depth", "Keys ready and waiting for a worker", labels=["name"])
        for name, stat in sorted(stats.items()):
            adds.add_metric([name], stat.adds)
            coalesced.add_metric([name], stat.coalesced)
            longest.add_metric([name], stat.longest_wait)
            depth.add_metric([name], stat.depth)
        yield from (adds, coalesced, longest, depth)


def _over_budget_counter(registry: CollectorRegistry, controllers: Sequence[str]) -> Counter:
    counter = Counter(
        "nvcre_reconcile_over_budget_total",
        "Reconciles that ran past the per-object time budget (another worker took over the queue meanwhile)",
        ["controller"],
        registry=registry,
    )
    for controller in controllers:
        counter.labels(controller)  # each tier's series exists from the start, at 0
    return counter


class ControllerMetrics:
    """The registry served on ``/metrics``.

    ``job_alive(namespace, name)`` tells whether a Job is still cached; the per-Job event series
    are recorded only while it is (see :class:`~nvcre.runtime.job_metrics.JobEventSeries`).
    """

    def __init__(
        self,
        stores: Mapping[str, Store],
        is_leader: Callable[[], bool],
        *,
        requests: RequestCounter | None = None,
        queue_stats: Callable[[], Mapping[str, QueueStats]] = dict,
        job_alive: Callable[[str, str], bool] | None = None,
        controllers: Sequence[str] = (),
        workers: int = 1,
        active: Callable[[str], int] = lambda controller: 0,
    ) -> None:
        # NVCRE's Go client writes no ``<name>_created`` series beside counters and histograms;
        # neither do we (a process-wide switch of the client, set before any metric is made).
        disable_created_metrics()  # type: ignore[no-untyped-call]  # the client leaves this one unannotated
        self.registry = CollectorRegistry()
        self.queue_wait = Histogram(
            "nvcre_workqueue_queue_duration_seconds",
            "Seconds between a key becoming ready and a worker taking it",
            ["name"],
            buckets=QUEUE_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.node_events = Counter(
            "nvcre_node_events_total",
            "Node events seen: relevant ones are mapped to runs, heartbeat-only changes are ignored",
            ["result"],
            registry=self.registry,
        )
        self.registry.register(CostCollector(requests, queue_stats))
        self.reconciles = Counter(
            "nvcre_controller_reconcile_total",
            "Reconciles by controller tier and result (all tiers)",
            ["controller", "result"],
            registry=self.registry,
        )
        self.durations = Histogram(
            "nvcre_controller_reconcile_duration_seconds",
            "Reconcile duration by controller tier (all tiers)",
            ["controller"],
            buckets=tuple(0.01 * 2**i for i in range(12)),
            registry=self.registry,
        )
        self.over_budget = _over_budget_counter(self.registry, controllers)
        self.jobs = JobEventSeries(job_alive)
        self.registry.register(self.jobs)
        self.registry.register(StatusCollector(stores, is_leader))
        #: controller-runtime's families, served when the controller's tiers are given
        self.standard = (
            StandardMetrics(
                self.registry, controllers=controllers, workers=workers, queue_stats=queue_stats, active=active, requests=requests
            )
            if controllers
            else None
        )

    def observe(self, controller: str, result: str, started: float, standard_result: str | None = None) -> None:
        """Count one reconcile: ``result`` for the ``nvcre_controller_*`` families, and
        ``standard_result`` (controller-runtime's vocabulary) for ``controller_runtime_*``."""
        seconds = max(0.0, time.monotonic() - started)
        self.reconciles.labels(controller, result).inc()
        self.durations.labels(controller).observe(seconds)
        if self.standard is not None:
            self.standard.reconciled(controller, standard_result or result, seconds)
