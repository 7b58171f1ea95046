"""A de-duplicating work queue with delayed adds and per-key exponential backoff.

The semantics follow the controller pattern: a key is handed to at most one worker at a time;
adding a key that is already waiting does nothing; adding a key that is being processed marks
it dirty so it comes back once, after :meth:`WorkQueue.done`. A key has at most one pending
:meth:`WorkQueue.add_after`: a later one for a key that already has an earlier (or equal)
deadline is absorbed, an earlier one moves the deadline forward. Without that, every
event-triggered reconcile that asks to come back in N seconds would start one more periodic
chain of reconciles for the same key. Backoff retries (:meth:`WorkQueue.add_rate_limited`)
each keep their own time. :meth:`WorkQueue.add_rate_limited`
delays a key by ``base * 2**failures`` (capped), and :meth:`WorkQueue.forget` resets its count.
The clock is injectable so the timing is tested without sleeping.

The queue measures itself: how long each key waited between becoming ready (added, or its
delay ran out) and being handed to a worker, the longest such wait, and how many adds were
absorbed by a key already waiting or in progress, how many backoff retries were asked for, and
how long the keys being processed now have been at it (:meth:`WorkQueue.stats`). Optional
callbacks receive every wait (``on_wait``) and the time each key was processed, from being
handed out to :meth:`WorkQueue.done` (``on_done``), for histograms.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Backoff", "QueueStats", "ShutDown", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue was shut down while a worker waited for a key."""


class Backoff(Generic[K]):
    """Per-key exponential delays: ``base * 2**n`` for the n-th consecutive failure, capped."""

    def __init__(self, base: float = 0.05, cap: float = 60.0) -> None:
        if base <= 0 or cap < base:
            raise ValueError("backoff needs 0 < base <= cap")
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}
        self._lock = threading.Lock()

    def next_delay(self, key: K) -> float:
        with self._lock:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        return float(min(self.cap, self.base * (2 ** min(failures, 62))))

    def failures(self, key: K) -> int:
        with self._lock:
            return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        with self._lock:
            self._failures.pop(key, None)


@dataclass(frozen=True)
class QueueStats:
    """What a queue has done so far (see :meth:`WorkQueue.stats`)."""

    #: calls that asked for a key to be queued now (``add``, and delayed adds coming due)
    adds: int
    #: of those, the ones absorbed by the same key already waiting or being processed
    coalesced: int
    #: delayed adds absorbed by an earlier deadline of the same key
    delayed_coalesced: int
    #: keys handed to workers
    handed_out: int
    #: total and longest seconds between a key becoming ready and a worker taking it
    wait_seconds: float
    longest_wait: float
    depth: int
    #: backoff retries asked for (``add_rate_limited``)
    retries: int = 0
    #: keys being processed now, the seconds they have been at it summed, and the longest of them
    processing: int = 0
    unfinished_seconds: float = 0.0
    longest_running: float = 0.0

    @property
    def accepted_adds(self) -> int:
        """Adds that queued a key or marked one in progress to come back (not absorbed)."""
        return self.adds - self.coalesced

    @property
    def mean_wait(self) -> float:
        return self.wait_seconds / self.handed_out if self.handed_out else 0.0


class WorkQueue(Generic[K]):
    """Thread-safe queue of keys; see the module docstring for the rules."""

    def __init__(
        self,
        backoff: Backoff[K] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_wait: Callable[[float], None] | None = None,
        on_done: Callable[[float], None] | None = None,
    ) -> None:
        self.backoff: Backoff[K] = backoff or Backoff()
        self._clock = clock
        self._on_wait = on_wait
        self._on_done = on_done
        #: when each key being processed was handed out
        self._started: dict[K, float] = {}
        self._retries = 0
        self._ready_at: dict[K, float] = {}
        self._adds = 0
        self._coalesced = 0
        self._handed_out = 0
        self._wait_total = 0.0
        self._wait_longest = 0.0
        self._cond = threading.Condition()
        self._order: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        #: (due, sequence, key, governed by ``_deadline``)
        self._delayed: list[tuple[float, int, K, bool]] = []
        #: the one live deadline of each delayed key (heap entries that disagree are stale)
        self._deadline: dict[K, float] = {}
        self._delayed_coalesced = 0
        self._seq = itertools.count()
        self._shutdown = False

    # ------------------------------------------------------------------ adding

    def add(self, key: K) -> None:
        """Queue ``key`` now, unless it is already waiting."""
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: K, delay: float, *, coalesce: bool = True) -> None:
        """Queue ``key`` once ``delay`` seconds have passed (at once when <= 0); with
        ``coalesce``, only the earliest pending deadline of a key is kept."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            due = self._clock() + delay
            if coalesce:
                current = self._deadline.get(key)
                if current is not None and current <= due:
                    self._delayed_coalesced += 1
                    return
                self._deadline[key] = due
            heapq.heappush(self._delayed, (due, next(self._seq), key, coalesce))
            self._cond.notify_all()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its next backoff delay; returns the delay chosen."""
        delay = self.backoff.next_delay(key)
        with self._cond:
            self._retries += 1
        self.add_after(key, delay, coalesce=False)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count (after a successful reconcile)."""
        self.backoff.forget(key)

    def _add_locked(self, key: K, ready_at: float | None = None) -> None:
        if self._shutdown:
            return
        self._adds += 1
        if key in self._queued:
            self._coalesced += 1
            return
        if key in self._processing:
            if key in self._dirty:
                self._coalesced += 1
            self._dirty.add(key)
            return
        self._queue_locked(key, ready_at)

    def _queue_locked(self, key: K, ready_at: float | None = None) -> None:
        self._queued.add(key)
        self._order.append(key)
        self._ready_at[key] = self._clock() if ready_at is None else ready_at
        self._cond.notify()

    # ------------------------------------------------------------------ taking

    def _promote_due_locked(self) -> float | None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key, governed = heapq.heappop(self._delayed)
            if governed:
                if self._deadline.get(key) != due:
                    continue  # superseded by an earlier deadline, already promoted
                del self._deadline[key]
            self._add_locked(key, ready_at=due)
        while self._delayed and self._stale(self._delayed[0]):
            heapq.heappop(self._delayed)  # so the wake-up time below is a live deadline
        return (self._delayed[0][0] - now) if self._delayed else None

    def _stale(self, entry: tuple[float, int, K, bool]) -> bool:
        due, _, key, governed = entry
        return governed and self._deadline.get(key) != due

    def get(self, timeout: float | None = None) -> K:
        """Block until a key is ready and hand it out; raise :class:`ShutDown` on shutdown and
        :class:`TimeoutError` when ``timeout`` passes first."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    raise ShutDown()
                wait = self._promote_due_locked()
                if self._order:
                    key = self._order.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    self._started[key] = self._clock()
                    waited = max(0.0, self._clock() - self._ready_at.pop(key, self._clock()))
                    self._handed_out += 1
                    self._wait_total += waited
                    self._wait_longest = max(self._wait_longest, waited)
                    break
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        raise TimeoutError("no key became ready")
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(timeout=wait if wait is None else max(wait, 0.001))
        if self._on_wait is not None:
            self._on_wait(waited)
        return key

    def done(self, key: K, *, hold: float = 0.0) -> None:
        """Finish with ``key``; it comes back once if it was added while processing (after
        ``hold`` seconds when given: a key that just ran too long does not go straight back)."""
        held = False
        with self._cond:
            self._processing.discard(key)
            started = self._started.pop(key, None)
            worked = None if started is None else max(0.0, self._clock() - started)
            if key in self._dirty:
                self._dirty.discard(key)
                if hold > 0:
                    held = True
                elif not self._shutdown and key not in self._queued:
                    self._queue_locked(key)
        if held:
            self.add_after(key, hold)
        if worked is not None and self._on_done is not None:
            self._on_done(worked)

    # ------------------------------------------------------------------ state

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    @property
    def is_shutdown(self) -> bool:
        return self._shutdown

    def __len__(self) -> int:
        with self._cond:
            return len(self._order)

    def pending_delayed(self) -> int:
        with self._cond:
            return sum(1 for entry in self._delayed if not self._stale(entry))

    def delayed_keys(self) -> set[K]:
        """The keys with a delayed add still to come."""
        with self._cond:
            return {entry[2] for entry in self._delayed if not self._stale(entry)}

    def stats(self) -> QueueStats:
        with self._cond:
            now = self._clock()
            running = [max(0.0, now - started) for started in self._started.values()]
            return QueueStats(
                adds=self._adds,
                coalesced=self._coalesced,
                delayed_coalesced=self._delayed_coalesced,
                handed_out=self._handed_out,
                wait_seconds=self._wait_total,
                longest_wait=self._wait_longest,
                depth=len(self._order),
                retries=self._retries,
                processing=len(running),
                unfinished_seconds=sum(running),
                longest_running=max(running, default=0.0),
            )
