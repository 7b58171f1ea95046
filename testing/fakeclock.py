"""A hand-driven monotonic clock for tests: call it for the time, move it by hand.

Anything in the runtime that takes ``clock: Callable[[], float]`` (the work queue, the lease
elector, the access-review cache) can be given one, so a test steps through minutes of waiting
without sleeping.
"""

from __future__ import annotations

__all__ = ["FakeClock"]


class FakeClock:
    """Seconds on a clock that moves only when the test says so."""

    def __init__(self, start: float = 100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds``; returns the new time."""
        if seconds < 0:
            raise ValueError(f"a clock does not run backwards ({seconds} s)")
        self.now += seconds
        return self.now
