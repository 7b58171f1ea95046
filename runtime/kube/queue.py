"""A de-duplicating work queue with delayed adds and per-key exponential backoff.

The semantics follow the controller pattern: a key is handed to at most one worker at a time;
adding a key that is already waiting does nothing; adding a key that is being processed marks
it dirty so it comes back once, after :meth:`WorkQueue.done`. :meth:`WorkQueue.add_rate_limited`
delays a key by ``base * 2**failures`` (capped), and :meth:`WorkQueue.forget` resets its count.
The clock is injectable so the timing is tested without sleeping.
"""

from __future__ import annotations

import heapq
from collections import deque
import itertools
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Backoff", "ShutDown", "WorkQueue"]

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
        return min(self.cap, self.base * (2 ** min(failures, 62)))

    def failures(self, key: K) -> int:
        with self._lock:
            return self._failures.get(key, 0)

    def forget(self, key: K) -> None:
        with self._lock:
            self._failures.pop(key, None)


class WorkQueue(Generic[K]):
    """Thread-safe queue of keys; see the module docstring for the rules."""

    def __init__(
        self, backoff: Backoff[K] | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.backoff: Backoff[K] = backoff or Backoff()
        self._clock = clock
        self._cond = threading.Condition()
        self._order: deque[K] = deque()
        self._queued: set[K] = set()
        self._processing: set[K] = set()
        self._dirty: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        self._shutdown = False

    # ------------------------------------------------------------------ adding

    def add(self, key: K) -> None:
        """Queue ``key`` now, unless it is already waiting."""
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed (at once when <= 0)."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            heapq.heappush(self._delayed, (self._clock() + delay, next(self._seq), key))
            self._cond.notify_all()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` after its next backoff delay; returns the delay chosen."""
        delay = self.backoff.next_delay(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """Reset ``key``'s failure count (after a successful reconcile)."""
        self.backoff.forget(key)

    def _add_locked(self, key: K) -> None:
        if self._shutdown or key in self._queued:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        self._queued.add(key)
        self._order.append(key)
        self._cond.notify()

    # ------------------------------------------------------------------ taking

    def _promote_due_locked(self) -> float | None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key = heapq.heappop(self._delayed)
            self._add_locked(key)
        return (self._delayed[0][0] - now) if self._delayed else None

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
                    return key
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        raise TimeoutError("no key became ready")
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(timeout=wait if wait is None else max(wait, 0.001))

    def done(self, key: K) -> None:
        """Finish with ``key``; it comes back once if it was added while processing."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_locked(key)

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
            return len(self._delayed)
