"""NVCRE's Job-tier event series: counted where the event happens, removed when the Job goes.

Every series here is keyed by ``namespace``, ``job`` and ``workflow`` (the Job's
``nvcre.nvidia.com/workflow`` label, empty when it has none), as NVCRE keys them:

* ``nvcre_reconcile_total{result}`` and the histogram ``nvcre_reconcile_duration_seconds``
  (10 ms to about 20 s): one per Job reconcile; ``result`` is ``success``, ``error`` or
  ``requeue``;
* ``nvcre_workload_created_total``: a Job's workload (its TrainJob) was created;
* ``nvcre_node_health_check_duration_seconds`` (1 ms to about 16 s) and
  ``nvcre_nodes_evaluated_total``: one health-monitor pass over the nodes the Job's pods run on,
  and how many nodes it evaluated;
* ``nvcre_hardware_failed_jobs_total``: 1 once the Job's first hardware failure is detected;
* ``nvcre_hardware_failures_detected_total{node}``: 1 for each node the health monitor newly
  found unhealthy for the Job.

:meth:`JobEventSeries.forget` drops every series of one Job; the controller calls it when the
Job leaves the cache. Recording asks ``alive(namespace, job)`` under the same lock first, so a
reconcile that finishes just after the Job was deleted cannot bring its series back. The
histograms and counters are plain numbers in dictionaries; :meth:`JobEventSeries.collect` copies
them under the lock and makes the samples only while they are written.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

__all__ = ["HEALTH_CHECK_BUCKETS", "RECONCILE_BUCKETS", "RESULTS", "JobEventSeries"]

#: reconcile duration buckets: 10 ms doubling to 20.48 s (NVCRE's)
RECONCILE_BUCKETS = tuple(0.01 * 2**i for i in range(12))
#: health-check duration buckets: 1 ms doubling to 16.384 s (NVCRE's)
HEALTH_CHECK_BUCKETS = tuple(0.001 * 2**i for i in range(15))
#: the values of ``nvcre_reconcile_total``'s ``result`` label
RESULTS = ("success", "error", "requeue")

_LABELS = ("namespace", "job", "workflow")

_HELP = {
    "nvcre_reconcile_total": "Job reconciles by result (success, error, requeue)",
    "nvcre_reconcile_duration_seconds": "Seconds one Job reconcile took",
    "nvcre_workload_created_total": "Workloads the Job tier created",
    "nvcre_node_health_check_duration_seconds": "Seconds one node health-monitor pass over a Job's nodes took",
    "nvcre_nodes_evaluated_total": "Nodes the health monitor evaluated for a Job",
    "nvcre_hardware_failed_jobs_total": "Jobs in which a hardware failure was detected (at most 1 per Job)",
    "nvcre_hardware_failures_detected_total": "Hardware failures the health monitor detected, per Job and node",
}


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.bounds)
        value = max(0.0, float(value))
        index = bisect_left(self.bounds, value)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += value
        self.count += 1

    def copy(self) -> _Histogram:
        return _Histogram(self.bounds, list(self.counts), self.total, self.count)


@dataclass
class _Series:
    """What one (namespace, job, workflow) has counted; None or empty: no such series yet."""

    reconciles: dict[str, int] = field(default_factory=dict)
    reconcile_seconds: _Histogram | None = None
    workloads_created: int | None = None
    health_seconds: _Histogram | None = None
    nodes_evaluated: int | None = None
    hardware_failed_jobs: int | None = None
    hardware_failures: dict[str, int] = field(default_factory=dict)

    def copy(self) -> _Series:
        return _Series(
            dict(self.reconciles),
            self.reconcile_seconds.copy() if self.reconcile_seconds else None,
            self.workloads_created,
            self.health_seconds.copy() if self.health_seconds else None,
            self.nodes_evaluated,
            self.hardware_failed_jobs,
            dict(self.hardware_failures),
        )


_Row = tuple[tuple[str, str, str], _Series]


class _Family(Metric):
    """A family whose samples are made while the exposition writes them."""

    def __init__(self, name: str, kind: str, make: Callable[[], Iterator[Sample]]) -> None:
        super().__init__(name, _HELP.get(name, _HELP.get(name + "_total", name)), kind)
        self._make = make

    @property  # type: ignore[override]
    def samples(self) -> Iterator[Sample]:
        return self._make()

    @samples.setter
    def samples(self, value: Any) -> None:  # Metric.__init__ assigns an empty list
        return None


def _labels(key: tuple[str, str, str], **extra: str) -> dict[str, str]:
    out = dict(zip(_LABELS, key))
    out.update(extra)
    return out


def _histogram_samples(name: str, key: tuple[str, str, str], hist: _Histogram) -> Iterator[Sample]:
    running = 0
    for bound, hits in zip(hist.bounds, hist.counts or [0] * len(hist.bounds)):
        running += hits
        le = floatToGoString(bound)  # type: ignore[no-untyped-call]
        yield Sample(f"{name}_bucket", _labels(key, le=le), float(running))
    yield Sample(f"{name}_bucket", _labels(key, le="+Inf"), float(hist.count))
    yield Sample(f"{name}_count", _labels(key), float(hist.count))
    yield Sample(f"{name}_sum", _labels(key), hist.total)


class JobEventSeries(Collector):
    """The Job-tier counters and histograms, one set per Job (see the module docstring)."""

    def __init__(self, alive: Callable[[str, str], bool] | None = None) -> None:
        self._alive = alive
        self._lock = threading.Lock()
        self._jobs: dict[tuple[str, str], dict[str, _Series]] = {}

    def _series(self, namespace: str, job: str, workflow: str) -> _Series | None:
        """The series of one Job, created on first use; None when the Job is gone (lock held)."""
        if not job or (self._alive is not None and not self._alive(namespace, job)):
            return None
        per_workflow = self._jobs.setdefault((namespace, job), {})
        found = per_workflow.get(workflow)
        if found is None:
            found = per_workflow[workflow] = _Series()
        return found

    # ------------------------------------------------------------------ events

    def reconciled(self, namespace: str, job: str, workflow: str, result: str, seconds: float) -> None:
        """One Job reconcile ended with ``result`` after ``seconds``."""
        if result not in RESULTS:
            raise ValueError(f"reconcile result {result!r} is not one of {RESULTS}")
        with self._lock:
            series = self._series(namespace, job, workflow)
            if series is None:
                return
            series.reconciles[result] = series.reconciles.get(result, 0) + 1
            if series.reconcile_seconds is None:
                series.reconcile_seconds = _Histogram(RECONCILE_BUCKETS)
            series.reconcile_seconds.observe(seconds)

    def workload_created(self, namespace: str, job: str, workflow: str) -> None:
        with self._lock:
            series = self._series(namespace, job, workflow)
            if series is not None:
                series.workloads_created = (series.workloads_created or 0) + 1

    def health_checked(self, namespace: str, job: str, workflow: str, seconds: float, evaluated: int) -> None:
        """One health-monitor pass over ``evaluated`` nodes took ``seconds``."""
        with self._lock:
            series = self._series(namespace, job, workflow)
            if series is None:
                return
            if series.health_seconds is None:
                series.health_seconds = _Histogram(HEALTH_CHECK_BUCKETS)
            series.health_seconds.observe(seconds)
            series.nodes_evaluated = (series.nodes_evaluated or 0) + max(0, int(evaluated))

    def hardware_failures(self, namespace: str, job: str, workflow: str, nodes: Sequence[str], *, first: bool) -> None:
        """``nodes`` were newly found unhealthy; ``first``: the Job had no hardware failure before."""
        names = sorted({node for node in nodes if node})
        if not names and not first:
            return
        with self._lock:
            series = self._series(namespace, job, workflow)
            if series is None:
                return
            if first:
                series.hardware_failed_jobs = (series.hardware_failed_jobs or 0) + 1
            for node in names:
                series.hardware_failures[node] = series.hardware_failures.get(node, 0) + 1

    def forget(self, namespace: str, job: str) -> None:
        """Drop every series of the Job (whatever its workflow label was)."""
        with self._lock:
            self._jobs.pop((namespace, job), None)

    def jobs(self) -> int:
        """How many Jobs have at least one series."""
        with self._lock:
            return len(self._jobs)

    # ------------------------------------------------------------------ exposition

    def _snapshot(self) -> list[_Row]:
        with self._lock:
            return [
                ((namespace, job, workflow), series.copy())
                for (namespace, job), per_workflow in sorted(self._jobs.items())
                for workflow, series in sorted(per_workflow.items())
            ]

    def collect(self) -> Iterator[Metric]:
        rows = self._snapshot()
        for name, kind, make, present in _FAMILIES:
            if any(present(series) for _, series in rows):  # a family with no series is left out
                yield _Family(name, kind, partial(make, rows))


def _reconcile_samples(rows: list[_Row]) -> Iterator[Sample]:
    for key, series in rows:
        for result in RESULTS:
            if result in series.reconciles:
                yield Sample("nvcre_reconcile_total", _labels(key, result=result), float(series.reconciles[result]))


def _counter(name: str, read: Callable[[_Series], int | None]) -> Callable[[list[_Row]], Iterator[Sample]]:
    """The samples of the per-Job counter ``name`` whose value ``read`` takes from a Job's series."""

    def make(rows: list[_Row]) -> Iterator[Sample]:
        for key, series in rows:
            value = read(series)
            if value is not None:
                yield Sample(f"{name}_total", _labels(key), float(value))

    return make


def _histogram(name: str, read: Callable[[_Series], _Histogram | None]) -> Callable[[list[_Row]], Iterator[Sample]]:
    """The samples of the per-Job histogram ``name`` that ``read`` takes from a Job's series."""

    def make(rows: list[_Row]) -> Iterator[Sample]:
        for key, series in rows:
            hist = read(series)
            if hist is not None:
                yield from _histogram_samples(name, key, hist)

    return make


def _failure_samples(rows: list[_Row]) -> Iterator[Sample]:
    for key, series in rows:
        for node, count in sorted(series.hardware_failures.items()):
            yield Sample("nvcre_hardware_failures_detected_total", _labels(key, node=node), float(count))


#: One row per NVCRE per-Job family: its name, its type, its samples over the rows, and whether a
#: Job's series shows in it (a family with no series is left out of the answer).
_FAMILIES: list[tuple[str, str, Callable[[list[_Row]], Iterator[Sample]], Callable[[_Series], bool]]] = [
    ("nvcre_reconcile", "counter", _reconcile_samples, lambda s: bool(s.reconciles)),
    (
        "nvcre_reconcile_duration_seconds",
        "histogram",
        _histogram("nvcre_reconcile_duration_seconds", lambda s: s.reconcile_seconds),
        lambda s: s.reconcile_seconds is not None,
    ),
    (
        "nvcre_workload_created",
        "counter",
        _counter("nvcre_workload_created", lambda s: s.workloads_created),
        lambda s: s.workloads_created is not None,
    ),
    (
        "nvcre_node_health_check_duration_seconds",
        "histogram",
        _histogram("nvcre_node_health_check_duration_seconds", lambda s: s.health_seconds),
        lambda s: s.health_seconds is not None,
    ),
    (
        "nvcre_nodes_evaluated",
        "counter",
        _counter("nvcre_nodes_evaluated", lambda s: s.nodes_evaluated),
        lambda s: s.nodes_evaluated is not None,
    ),
    (
        "nvcre_hardware_failed_jobs",
        "counter",
        _counter("nvcre_hardware_failed_jobs", lambda s: s.hardware_failed_jobs),
        lambda s: s.hardware_failed_jobs is not None,
    ),
    ("nvcre_hardware_failures_detected", "counter", _failure_samples, lambda s: bool(s.hardware_failures)),
]
