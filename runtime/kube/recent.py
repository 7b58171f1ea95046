"""What this process wrote a moment ago, for reads that would otherwise see a lagging cache.

The informer caches trail the API server by the time a watch event takes to arrive. A
reconciler that wrote a status and runs again before its own write reached the cache would
act on the state from before the write (create the workload twice, rewrite a status from an
old copy). :class:`RecentWrites` keeps, for a bounded time, the object each status write
returned and the names this process created:

* :meth:`RecentWrites.overlay` answers with the written object while the cache still shows a
  version the write superseded: the one it replaced, any version a conflict retry met on the
  way (a change by someone else the write was redone over), and the versions an earlier write
  of this process superseded when this write was made over that earlier write's answer (two
  writes in a row, the cache still before both). As soon as the cache shows the written
  version, or any other version (a newer change by someone else), or nothing (the object went
  away), the entry is dropped and the cache is the answer again.
* :meth:`RecentWrites.create` is told before a create is sent (and :meth:`RecentWrites.forget`
  when the create failed), so :meth:`RecentWrites.created` tells whether this process created,
  or is creating, a name recently: a create is not sent a second time only because the
  object's ADDED event, or the status write that records it, is still on its way.
* :meth:`RecentWrites.was_launched` tells whether this process created a Job together with its
  dependencies, so the Job tier may create the workload before the Workflow status says so.

Nothing here is a source of truth: every write stays conditional on resourceVersion, and a
create that meets AlreadyExists still adopts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["RecentWrites"]

#: how long a remembered write or create stays useful; a cache lags by far less
REMEMBER_SECONDS = 30.0

_Key = tuple[str, str, str]
#: the table of Jobs whose dependencies this process created (not a resource plural)
_LAUNCHED = "launched jobs"


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


class RecentWrites:
    """Status writes and creates of the last :data:`REMEMBER_SECONDS`, keyed by resource plural,
    namespace and name. Thread-safe; entries leave when the cache catches up or time runs out."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, ttl: float = REMEMBER_SECONDS) -> None:
        self._clock = clock
        self._ttl = ttl
        #: per object: the versions the write superseded, the written object, when
        self._written: dict[_Key, tuple[frozenset[str], dict[str, Any], float]] = {}
        self._created: dict[_Key, float] = {}
        self._pruned_at = float("-inf")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._written) + len(self._created)

    def _prune(self, now: float) -> None:
        """Drop expired entries (at most every quarter of the TTL; the caller holds the lock)."""
        if now - self._pruned_at < self._ttl / 4:
            return
        self._pruned_at = now
        for key in [k for k, (_, _, at) in self._written.items() if now - at >= self._ttl]:
            del self._written[key]
        for key in [k for k, at in self._created.items() if now - at >= self._ttl]:
            del self._created[key]

    def wrote(
        self,
        plural: str,
        replaced: Mapping[str, Any],
        written: Mapping[str, Any],
        *,
        also_replaced: Iterable[str] = (),
    ) -> None:
        """Remember ``written``, the server's answer to a write made over ``replaced``.

        ``also_replaced`` names the other versions the write superseded (those a conflict retry
        met before the write went through)."""
        meta = written.get("metadata") or {}
        key = (plural, str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        bases = {_rv(replaced), *also_replaced} - {""}
        target = _rv(written)
        if not bases or not target or target in bases:
            return
        kept = dict(written)
        if isinstance(kept.get("metadata"), dict):
            kept["metadata"] = {k: v for k, v in kept["metadata"].items() if k != "managedFields"}
        now = self._clock()
        with self._lock:
            self._prune(now)
            earlier = self._written.get(key)
            if earlier is not None and now - earlier[2] < self._ttl and _rv(earlier[1]) in bases:
                bases |= earlier[0]  # written over our own earlier answer: the cache may trail both
            self._written[key] = (frozenset(bases), kept, now)

    def overlay(self, plural: str, name: str, namespace: str | None, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """``cached``, or the object this process wrote over the version ``cached`` still shows."""
        key = (plural, namespace or "", name)
        now = self._clock()
        with self._lock:
            entry = self._written.get(key)
            if entry is None:
                return cached
            bases, written, at = entry
            if cached is not None and now - at < self._ttl and _rv(cached) in bases:
                return written
            del self._written[key]
            return cached

    def create(self, plural: str, name: str, namespace: str | None) -> None:
        """Remember that this process creates ``namespace/name`` (told before the create is sent)."""
        now = self._clock()
        with self._lock:
            self._prune(now)
            self._created[(plural, namespace or "", name)] = now

    def forget(self, plural: str, name: str, namespace: str | None) -> None:
        """Drop the memory of a create: it failed, or the object it made is being replaced."""
        with self._lock:
            self._created.pop((plural, namespace or "", name), None)

    def launched(self, namespace: str, name: str) -> None:
        """Remember that this process created the Job ``namespace/name`` and its dependencies."""
        self.create(_LAUNCHED, name, namespace)

    def was_launched(self, namespace: str, name: str) -> bool:
        """True when :meth:`launched` was told about the Job within :data:`REMEMBER_SECONDS`."""
        return self.created(_LAUNCHED, name, namespace)

    def created(self, plural: str, name: str, namespace: str | None) -> bool:
        """True when this process created (or is creating) the name within :data:`REMEMBER_SECONDS`."""
        now = self._clock()
        with self._lock:
            at = self._created.get((plural, namespace or "", name))
            return at is not None and now - at < self._ttl
