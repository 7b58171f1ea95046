"""Work-queue self-measurement: waits, coalesced adds, and the histogram on /metrics (no sleeping)."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from nvcre.runtime.kube.queue import WorkQueue
from nvcre.runtime.metrics.registry import ControllerMetrics
from nvcre.testing.fakeclock import FakeClock


def test_a_key_waits_from_its_add_until_a_worker_takes_it():
    clock = FakeClock()
    waits: list[float] = []
    queue: WorkQueue[str] = WorkQueue(clock=clock, on_wait=waits.append)
    queue.add("a")
    clock.now += 2.5
    queue.add("b")
    clock.now += 0.5
    assert queue.get(timeout=0) == "a"
    assert queue.get(timeout=0) == "b"
    assert waits == [3.0, 0.5]
    stats = queue.stats()
    assert (stats.handed_out, stats.wait_seconds, stats.longest_wait, stats.depth) == (2, 3.5, 3.0, 0)
    assert stats.mean_wait == 1.75


def test_a_delayed_key_waits_from_when_it_came_due_not_from_when_it_was_added():
    clock = FakeClock()
    waits: list[float] = []
    queue: WorkQueue[str] = WorkQueue(clock=clock, on_wait=waits.append)
    queue.add_after("late", 10.0)
    clock.now += 12.0  # due at +10, taken at +12
    assert queue.get(timeout=0) == "late"
    assert waits == [2.0]


def test_adds_of_a_waiting_or_running_key_are_coalesced_and_counted():
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    for _ in range(3):
        queue.add("k")
    assert queue.stats().adds == 3 and queue.stats().coalesced == 2 and len(queue) == 1
    key = queue.get(timeout=0)
    queue.add("k")  # marked dirty: comes back once
    queue.add("k")  # already dirty: coalesced
    clock.now += 1.0
    queue.done(key)
    stats = queue.stats()
    assert (stats.adds, stats.coalesced, stats.depth) == (5, 3, 1)
    clock.now += 0.25
    assert queue.get(timeout=0) == "k"
    # the re-queued key became ready at done(), not at the add that marked it dirty
    assert queue.stats().longest_wait == 0.25


def test_queue_waits_and_counts_are_served_on_metrics():
    clock = FakeClock()
    metrics = ControllerMetrics({}, lambda: False)
    queue: WorkQueue[str] = WorkQueue(clock=clock, on_wait=metrics.queue_wait.labels("job").observe)
    metrics_with_queue = ControllerMetrics({}, lambda: False, queue_stats=lambda: {"job": queue.stats()})
    queue.add("a")
    queue.add("a")
    clock.now += 0.003
    queue.get(timeout=0)
    body = generate_latest(metrics.registry).decode()
    assert 'nvcre_workqueue_queue_duration_seconds_count{name="job"} 1.0' in body
    assert 'nvcre_workqueue_queue_duration_seconds_bucket{le="0.004",name="job"} 1.0' in body
    assert 'nvcre_workqueue_queue_duration_seconds_bucket{le="0.002",name="job"} 0.0' in body
    served = generate_latest(metrics_with_queue.registry).decode()
    assert 'nvcre_workqueue_adds_total{name="job"} 2.0' in served
    assert 'nvcre_workqueue_coalesced_adds_total{name="job"} 1.0' in served
    assert 'nvcre_workqueue_depth{name="job"} 0.0' in served
    assert "nvcre_workqueue_longest_wait_seconds" in served


def test_a_key_keeps_only_its_earliest_requeue_so_periodic_chains_cannot_multiply():
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("k", 15.0)
    queue.add_after("k", 15.0)  # a second reconcile asking for the same visit
    queue.add_after("k", 20.0)  # a later one: absorbed by the earlier deadline
    assert queue.pending_delayed() == 1
    queue.add_after("k", 5.0)  # an earlier one moves the deadline forward
    assert queue.pending_delayed() == 1
    assert queue.stats().delayed_coalesced == 2
    clock.now += 5.0
    assert queue.get(timeout=0) == "k"
    queue.done("k")
    clock.now += 30.0
    with pytest.raises(TimeoutError):  # the superseded deadlines never fire
        queue.get(timeout=0)


def test_backoff_retries_keep_their_own_times():
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("k", 15.0)
    queue.add_rate_limited("k")  # 0.05 s, not coalesced with the periodic visit
    clock.now += 0.05
    assert queue.get(timeout=0) == "k"
    queue.done("k")
    clock.now += 15.0
    assert queue.get(timeout=0) == "k"
