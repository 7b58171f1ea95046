"""Which reconcile worker is on which object, since when: time budgets, stuck workers, busy counts.

Every worker of every tier writes itself on the board while it reconciles one key and rubs itself
out when it is done. From that the controller learns three things: which workers have been on one
object past the per-object time budget (:meth:`WorkerBoard.over_budget`: the object is flagged
once, and another worker takes over the queue), whether a worker has been on one object so long
that the process should be restarted (:meth:`WorkerBoard.stuck`, what ``/healthz`` reports),
and how many workers of a tier are busy (:meth:`WorkerBoard.active`, served as
``controller_runtime_active_workers``). A Python thread cannot be stopped from outside, so a
reconcile over its budget runs to its end; the board only makes sure it holds up nobody else.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

__all__ = ["Busy", "WorkerBoard"]


@dataclass(frozen=True)
class Busy:
    """One worker on one key."""

    worker: str
    controller: str
    key: tuple[str, str]
    started: float
    #: set once the reconcile ran past the per-object budget
    over_budget: bool = False

    @property
    def object(self) -> str:
        return f"{self.key[0]}/{self.key[1]}" if self.key[0] else self.key[1]


class WorkerBoard:
    """Thread-safe; the clock is injectable so the limits are tested without sleeping."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._busy: dict[str, Busy] = {}
        self._lock = threading.Lock()

    def begin(self, worker: str, controller: str, key: tuple[str, str]) -> None:
        with self._lock:
            self._busy[worker] = Busy(worker, controller, key, self._clock())

    def end(self, worker: str) -> Busy | None:
        """Rub ``worker`` out; what it was on (with ``over_budget`` if it was flagged)."""
        with self._lock:
            return self._busy.pop(worker, None)

    def active(self, controller: str) -> int:
        with self._lock:
            return sum(1 for busy in self._busy.values() if busy.controller == controller)

    def over_budget(self, budget: float) -> list[Busy]:
        """Workers on one key for more than ``budget`` seconds and not flagged before; flags them."""
        now = self._clock()
        found = []
        with self._lock:
            for worker, busy in self._busy.items():
                if not busy.over_budget and now - busy.started > budget:
                    self._busy[worker] = replace(busy, over_budget=True)
                    found.append(busy)
        return found

    def stuck(self, limit: float) -> str | None:
        """Why the process is unhealthy (the longest-running worker past ``limit`` seconds), or None."""
        now = self._clock()
        with self._lock:
            longest = max(self._busy.values(), key=lambda busy: now - busy.started, default=None)
        if longest is None or now - longest.started <= limit:
            return None
        return (
            f"worker {longest.worker} has been reconciling {longest.controller} {longest.object} "
            f"for {now - longest.started:.0f} s (limit {limit:.0f} s)"
        )
