"""The work queue: de-duplication, dirty re-queue, delays and per-key exponential backoff."""

from __future__ import annotations

import threading

import pytest

from nvcre.runtime.kube.queue import Backoff, ShutDown, WorkQueue
from nvcre.testing.fakeclock import FakeClock


def test_a_key_added_twice_is_handed_out_once():
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert queue.get(timeout=0.1) == "a"
    assert queue.get(timeout=0.1) == "b"
    with pytest.raises(TimeoutError):
        queue.get(timeout=0.05)


def test_a_key_added_while_processing_comes_back_once_after_done():
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = queue.get(timeout=0.1)
    queue.add("a")
    queue.add("a")
    assert len(queue) == 0, "a key being processed is never handed to a second worker"
    queue.done(key)
    assert queue.get(timeout=0.1) == "a"
    queue.done("a")
    with pytest.raises(TimeoutError):
        queue.get(timeout=0.05)


def test_delayed_keys_wait_for_their_time():
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add_after("later", 5.0)
    queue.add_after("sooner", 1.0)
    with pytest.raises(TimeoutError):
        queue.get(timeout=0)
    clock.now += 1.0
    assert queue.get(timeout=0) == "sooner"
    with pytest.raises(TimeoutError):
        queue.get(timeout=0)
    clock.now += 4.0
    assert queue.get(timeout=0) == "later"


def test_backoff_doubles_per_failure_up_to_the_cap_and_forget_resets():
    backoff: Backoff[str] = Backoff(base=0.5, cap=3.0)
    assert [backoff.next_delay("k") for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff.next_delay("other") == 0.5, "keys back off independently"
    backoff.forget("k")
    assert backoff.failures("k") == 0
    assert backoff.next_delay("k") == 0.5


def test_rate_limited_add_uses_the_backoff_delay():
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(Backoff(base=2.0, cap=10.0), clock=clock)
    assert queue.add_rate_limited("k") == 2.0
    assert queue.add_rate_limited("k") == 4.0
    clock.now += 2.0
    assert queue.get(timeout=0) == "k"
    queue.done("k")
    with pytest.raises(TimeoutError):
        queue.get(timeout=0)
    clock.now += 2.0
    assert queue.get(timeout=0) == "k"
    queue.forget("k")
    assert queue.backoff.failures("k") == 0


def test_shutdown_wakes_a_waiting_worker():
    queue: WorkQueue[str] = WorkQueue()
    outcome: list[str] = []

    def worker() -> None:
        try:
            queue.get()
        except ShutDown:
            outcome.append("shutdown")

    thread = threading.Thread(target=worker)
    thread.start()
    queue.shutdown()
    thread.join(timeout=2)
    assert outcome == ["shutdown"]
    queue.add("ignored")
    assert len(queue) == 0


def test_a_delayed_add_wakes_a_blocked_worker_when_due():
    queue: WorkQueue[str] = WorkQueue()
    got: list[str] = []
    thread = threading.Thread(target=lambda: got.append(queue.get(timeout=2)))
    thread.start()
    queue.add_after("k", 0.05)
    thread.join(timeout=3)
    assert got == ["k"]


def test_backoff_rejects_nonsense_settings():
    with pytest.raises(ValueError):
        Backoff(base=0, cap=1)
    with pytest.raises(ValueError):
        Backoff(base=2, cap=1)
