"""The families every Kubernetes controller built on controller-runtime serves, under their names.

Dashboards and alerts written for controller-runtime controllers (reconcile rates and errors,
work-queue depth and latency, API client answers, leader status, process memory) read these
families by name, label names and histogram buckets, so they are served here exactly so:

- ``controller_runtime_reconcile_total{controller,result}`` (``success``, ``error``, ``requeue``,
  ``requeue_after``; every result starts at 0 for every controller, as controller-runtime starts
  them), ``controller_runtime_reconcile_errors_total{controller}``,
  ``controller_runtime_reconcile_time_seconds{controller}`` (controller-runtime's 40 buckets,
  5 ms to 60 s), ``controller_runtime_max_concurrent_reconciles{controller}`` and
  ``controller_runtime_active_workers{controller}``;
- client-go's work-queue families with controller-runtime's labels ``name`` and ``controller``
  (both the tier's name): ``workqueue_depth`` (also ``priority``, empty, as controller-runtime's
  queue without priorities writes it), ``workqueue_adds_total``, ``workqueue_retries_total``,
  ``workqueue_queue_duration_seconds`` and ``workqueue_work_duration_seconds`` (buckets 10 ns
  times ten, twelve of them), ``workqueue_unfinished_work_seconds`` and
  ``workqueue_longest_running_processor_seconds``;
- ``rest_client_requests_total{code,method,host}``, ``leader_election_master_status{name}``, and
  the Python client's ``process_*`` families (memory, CPU, open files, start time).

Counters and histograms are counted as things happen; the queue and worker state is read from the
queues (:meth:`~nvcre.runtime.kube.queue.WorkQueue.stats`) at scrape time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..kube.accounting import RequestCounter
from ..kube.queue import QueueStats

__all__ = ["RECONCILE_RESULTS", "RECONCILE_TIME_BUCKETS", "WORKQUEUE_BUCKETS", "StandardMetrics"]

#: controller-runtime's ``controller_runtime_reconcile_time_seconds`` buckets.
RECONCILE_TIME_BUCKETS = (
    *(0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    *(1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0),
)


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's ``prometheus.ExponentialBuckets``: each bound the previous one times ``factor``
    (multiplied step by step, so the bounds are the same doubles Go computes)."""
    out = []
    for _ in range(count):
        out.append(start)
        start *= factor
    return tuple(out)


#: The work-queue latency buckets: ``ExponentialBuckets(10e-9, 10, 12)``, 10 ns to 1,000 s.
WORKQUEUE_BUCKETS = _exponential(10e-9, 10.0, 12)
#: ``result`` values of ``controller_runtime_reconcile_total``.
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


class _StateCollector(Collector):
    """Queue, worker and API-answer state, read at scrape time."""

    def __init__(
        self,
        controllers: Sequence[str],
        workers: int,
        queue_stats: Callable[[], Mapping[str, QueueStats]],
        active: Callable[[str], int],
        requests: RequestCounter | None,
    ) -> None:
        self.controllers = tuple(controllers)
        self.workers = workers
        self.queue_stats = queue_stats
        self.active = active
        self.requests = requests

    def collect(self) -> Iterator[Metric]:
        concurrent = GaugeMetricFamily(
            "controller_runtime_max_concurrent_reconciles", "Maximum number of concurrent reconciles per controller", labels=["controller"]
        )
        active = GaugeMetricFamily(
            "controller_runtime_active_workers", "Number of currently used workers per controller", labels=["controller"]
        )
        for controller in self.controllers:
            concurrent.add_metric([controller], self.workers)
            active.add_metric([controller], self.active(controller))
        yield from (concurrent, active)
        yield from self._queues(dict(self.queue_stats()))
        if self.requests is not None:
            answers = CounterMetricFamily(
                "rest_client_requests",
                "Number of HTTP requests, partitioned by status code, method, and host.",
                labels=["code", "method", "host"],
            )
            for (code, method, host), count in sorted(self.requests.responses().items()):
                answers.add_metric([code, method, host], count)
            yield answers

    def _queues(self, stats: Mapping[str, QueueStats]) -> Iterator[Metric]:
        labels = ["name", "controller"]
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=[*labels, "priority"])
        adds = CounterMetricFamily("workqueue_adds", "Total number of adds handled by workqueue", labels=labels)
        retries = CounterMetricFamily("workqueue_retries", "Total number of retries handled by workqueue", labels=labels)
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration.",
            labels=labels,
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=labels,
        )
        for name, stat in sorted(stats.items()):
            depth.add_metric([name, name, ""], stat.depth)
            adds.add_metric([name, name], stat.accepted_adds)
            retries.add_metric([name, name], stat.retries)
            unfinished.add_metric([name, name], stat.unfinished_seconds)
            longest.add_metric([name, name], stat.longest_running)
        yield from (depth, adds, retries, unfinished, longest)


class StandardMetrics:
    """Registers the families on ``registry``; the controller reports reconciles, queue waits and
    work times, and leadership, through the methods below."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        controllers: Sequence[str],
        workers: int,
        queue_stats: Callable[[], Mapping[str, QueueStats]],
        active: Callable[[str], int],
        requests: RequestCounter | None = None,
        process: bool = True,
    ) -> None:
        self.reconciles = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_TIME_BUCKETS,
            registry=registry,
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            ["name", "controller"],
            buckets=WORKQUEUE_BUCKETS,
            registry=registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master.",
            ["name"],
            registry=registry,
        )
        for controller in controllers:
            for result in RECONCILE_RESULTS:
                self.reconciles.labels(controller, result)
            self.errors.labels(controller)
        registry.register(_StateCollector(controllers, workers, queue_stats, active, requests))
        if process:
            ProcessCollector(registry=registry)

    def reconciled(self, controller: str, result: str, seconds: float) -> None:
        """One reconcile of ``controller`` that ended with ``result`` after ``seconds``."""
        self.reconciles.labels(controller, result).inc()
        if result == "error":
            self.errors.labels(controller).inc()
        self.reconcile_time.labels(controller).observe(max(0.0, seconds))

    def waited(self, queue: str) -> Callable[[float], None]:
        """The callback a queue calls with each key's wait."""
        return self.queue_duration.labels(queue, queue).observe

    def worked(self, queue: str) -> Callable[[float], None]:
        """The callback a queue calls with each key's processing time."""
        return self.work_duration.labels(queue, queue).observe

    def leading(self, lease: str, leading: bool) -> None:
        self.leader.labels(lease).set(1.0 if leading else 0.0)
