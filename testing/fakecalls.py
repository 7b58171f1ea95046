"""What the in-memory API server (:mod:`nvcre.testing.fakekube`) records, and how a test scripts it.

A :class:`Call` is one request as the server saw it, a :class:`RecordedEvent` one Event written
about an object; a :class:`Reaction` is a test's handler that runs before the server answers a
verb on a resource, returning :data:`PASS` to let the server answer after all. :class:`Replay`
is the watch stream the fake hands out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from nvcre.runtime.kube.client import WatchEvent

__all__ = ["PASS", "Call", "ForbiddenCall", "Reaction", "Reactor", "RecordedEvent", "Replay"]

#: what a reactor returns to let the fake answer the call itself
PASS: Final = object()


class ForbiddenCall(AssertionError):
    """A call reached a fake the test declared offline."""


@dataclass(frozen=True)
class Call:
    """One request as the server saw it; ``str()`` gives ``verb resource`` as the accounting names it."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    group: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.verb} {self.resource}"


@dataclass(frozen=True)
class RecordedEvent:
    """One Event written about an object."""

    type: str
    reason: str
    message: str
    kind: str
    namespace: str
    name: str
    component: str


#: runs before the fake answers a call; returns :data:`PASS`, a result, or raises
Reactor = Callable[[Call], Any]


@dataclass(eq=False)
class Reaction:
    """A reactor and the calls it answers (``*`` for any verb or resource), at most ``times`` times."""

    verb: str
    resource: str
    handler: Reactor
    times: int | None

    def matches(self, call: Call) -> bool:
        """Whether this reaction is for ``call`` and still has runs left (taking one if so)."""
        if self.verb not in (call.verb, "*") or self.resource not in (call.resource, "*"):
            return False
        if self.times is None:
            return True
        if self.times <= 0:
            return False
        self.times -= 1
        return True


class Replay:
    """A watch over changes already made: yields them, then ends as a timed-out watch does."""

    def __init__(self, events: list[WatchEvent]) -> None:
        self._events = events
        self._closed = False

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self._events:
            if self._closed:
                return
            yield event

    def close(self) -> None:
        self._closed = True
