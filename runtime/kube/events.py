"""The body of an Event the controller writes, as NVCRE's recorders write them (events.k8s.io/v1).

Each new Event is named ``<object>.<nanoseconds><random>`` (the events API wants a DNS
subdomain), with the regarding object's identifying fields, the reporting controller and
instance, an action, a reason, a type and a note capped at 1,024 bytes of UTF-8. Core/v1
readers and ``kubectl describe`` see the same object (regarding -> involvedObject, note ->
message). The endpoint names the type, so the body has no apiVersion or kind.

The reporting controller is the one of the regarding object's kind, as NVCRE names its
recorders (``job-controller``, ``workflow-controller``, ``certification-controller``,
``workloadrun-controller``, ``goodputmeasurement-controller``,
``bandwidthmeasurement-controller``); an Event about any other kind keeps the component it was
given.

:class:`EventSeries` folds repeats as client-go's events.k8s.io recorder does: the same Event
(regarding object, reason, type, action, note, reporting controller and instance) seen again
within six minutes of its last sighting is not a new object but a ``series`` on the first one,
``{count, lastObservedTime}``, written with a merge patch; after six minutes of quiet a new Event
starts. Unlike client-go, which writes a running series back every thirty minutes and when it
ends, every repeat is patched at once, so the count the server holds is never behind (one
request per occurrence, as a new Event per occurrence cost before). A write that fails drops the
series, so the next occurrence creates a new Event; a patch that finds the Event gone (expired
or deleted) starts a new one with this occurrence. The note is part of the identity here (it is
not in client-go's), so a repeat that says something different is never hidden in a count.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nvcre.compiler.vocabulary import GROUP

from .errors import NotFound

__all__ = [
    "EVENT_ACTION",
    "EVENT_FIELD_LIMIT",
    "EVENT_NOTE_LIMIT",
    "REPORTING_CONTROLLERS",
    "EventSeries",
    "SeriesUpdate",
    "event_body",
    "object_ref",
    "reporting_controller",
]

EVENT_NOTE_LIMIT = 1024
#: the events.k8s.io/v1 bound on an Event's action, reason and reporting instance
EVENT_FIELD_LIMIT = 128
#: what the controller was doing when it wrote an Event (events.k8s.io/v1 requires one)
EVENT_ACTION = "Reconcile"
#: the recorder name of each kind's controller, as NVCRE's manager names them
REPORTING_CONTROLLERS = {
    "Job": "job-controller",
    "Workflow": "workflow-controller",
    "Certification": "certification-controller",
    "WorkloadRun": "workloadrun-controller",
    "GoodputMeasurement": "goodputmeasurement-controller",
    "BandwidthMeasurement": "bandwidthmeasurement-controller",
}
_TRUNCATED = "... [truncated]"


def object_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The identifying fields of an object (apiVersion, kind, namespace, name, uid)."""
    meta = obj.get("metadata") or {}
    ref = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    for key in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def reporting_controller(involved: Mapping[str, Any], component: str) -> str:
    """The controller an Event about ``involved`` comes from: its kind's, else ``component``."""
    if str(involved.get("apiVersion") or "").startswith(f"{GROUP}/"):
        return REPORTING_CONTROLLERS.get(str(involved.get("kind") or ""), component)
    return component


def _event_name(regarding: str) -> str:
    """``<object>.<nanoseconds><random>`` in hex: unique per emission, the object's name first."""
    suffix = f"{time.time_ns():x}{secrets.token_hex(2)}"
    return f"{regarding[: 253 - len(suffix) - 1]}.{suffix}"


def _micro(moment: datetime) -> str:
    """A moment as the API's MicroTime (an Event's ``eventTime``, a series' ``lastObservedTime``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _micro_now() -> str:
    return _micro(datetime.now(UTC))


def _cap_note(message: str) -> str:
    data = message.encode("utf-8")
    if len(data) <= EVENT_NOTE_LIMIT:
        return message
    room = EVENT_NOTE_LIMIT - len(_TRUNCATED)
    return data[:room].decode("utf-8", "ignore") + _TRUNCATED


def event_body(involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str, instance: str) -> dict[str, Any]:
    """The events.k8s.io/v1 Event about ``involved``; its namespace is the object's, else ``default``."""
    ref = object_ref(involved)
    controller = reporting_controller(involved, component)
    return {
        "metadata": {"name": _event_name(str(ref.get("name") or "object")), "namespace": str(ref.get("namespace") or "default")},
        "eventTime": _micro_now(),
        "reportingController": controller,
        "reportingInstance": (instance or controller)[:EVENT_FIELD_LIMIT],
        "action": EVENT_ACTION,
        "reason": reason[:EVENT_FIELD_LIMIT],
        "regarding": ref,
        "note": _cap_note(message),
        "type": type,
    }


@dataclass(frozen=True)
class SeriesUpdate:
    """A repeat to record on an Event already written: merge-patch ``patch`` onto ``name``."""

    namespace: str
    name: str
    patch: dict[str, Any]


@dataclass(eq=False)
class _Series:
    """One Event on the server and the occurrences it holds (0 until its create succeeded)."""

    namespace: str
    name: str
    last_seen: float
    count: int = 0
    gone: bool = False
    #: held while this series' Event is written, so repeats from several threads take turns
    gate: threading.Lock = field(default_factory=threading.Lock)


#: client-go's events.k8s.io recorder: a repeat within this many seconds of the last joins the series
SERIES_WINDOW = 6 * 60.0
#: the series remembered at once (the least recently seen is forgotten first)
SERIES_MEMORY = 4096
#: how often one occurrence starts over when another thread's failed write dropped its series
_ATTEMPTS = 3

Create = Callable[[dict[str, Any]], object]
Patch = Callable[[SeriesUpdate], object]


class EventSeries:
    """Folds repeats of one Event into a ``series`` on the first (see the module docstring).

    ``record(body, create, patch)`` writes one occurrence: ``create(body)`` for the first
    sighting (or the first after six minutes of quiet), else ``patch(update)`` with the series'
    new count and time. An error from either is raised after the series is dropped, except a
    patch's :class:`NotFound`, which creates this occurrence anew. Memory is bounded: series
    quiet for six minutes are let go, and at most ``memory`` are kept. Safe across threads.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, now: Callable[[], datetime] | None = None, memory: int = SERIES_MEMORY
    ) -> None:
        self._clock = clock
        self._now = now or (lambda: datetime.now(UTC))
        self._memory = max(1, memory)
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._series)

    @staticmethod
    def key(body: Mapping[str, Any]) -> tuple[str, ...]:
        """What makes two Events one series: the regarding object's identity and every field a reader sees."""
        regarding = body.get("regarding") or {}
        identity = tuple(str(regarding.get(k) or "") for k in ("apiVersion", "kind", "namespace", "name", "uid"))
        fields = tuple(str(body.get(k) or "") for k in ("reason", "type", "action", "note", "reportingController", "reportingInstance"))
        return identity + fields

    def record(self, body: dict[str, Any], create: Create, patch: Patch) -> None:
        """Write one occurrence of ``body`` (see the class docstring)."""
        key = self.key(body)
        for _ in range(_ATTEMPTS):
            series = self._sighting(key, body)
            with series.gate:
                if series.gone:
                    continue  # another thread's write failed and dropped it: start over
                if series.count == 0:
                    meta = body.get("metadata") or {}  # the thread that got here first names the Event
                    series.namespace, series.name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
                    self._write(key, series, create, body)
                    return
                update = SeriesUpdate(
                    series.namespace, series.name, {"series": {"count": series.count + 1, "lastObservedTime": _micro(self._now())}}
                )
                try:
                    self._write(key, series, patch, update)
                except NotFound:
                    continue  # the Event expired or was deleted: this occurrence starts a new one
                return

    def _sighting(self, key: tuple[str, ...], body: Mapping[str, Any]) -> _Series:
        """The live series of ``key``, a new one when there is none or it went quiet; oldest let go."""
        at = self._clock()
        with self._lock:
            while self._series:
                oldest_key, oldest = next(iter(self._series.items()))
                quiet = at - oldest.last_seen > SERIES_WINDOW
                full = len(self._series) >= self._memory and key not in self._series
                if not (quiet or full):
                    break
                del self._series[oldest_key]
            series = self._series.get(key)
            if series is None or series.gone or at - series.last_seen > SERIES_WINDOW:
                series = _Series("", "", at)
                self._series[key] = series
            series.last_seen = at
            self._series.move_to_end(key)
            return series

    def _write(self, key: tuple[str, ...], series: _Series, send: Callable[[Any], object], payload: Any) -> None:
        """``send(payload)``; count the occurrence on success, drop the series on any error (and raise it)."""
        try:
            send(payload)
        except BaseException:
            series.gone = True
            with self._lock:
                if self._series.get(key) is series:
                    del self._series[key]
            raise
        series.count += 1
