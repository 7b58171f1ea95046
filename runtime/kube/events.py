"""The body of an Event the controller writes, as NVCRE's recorders write them (events.k8s.io/v1).

One Event per emission, named ``<object>.<nanoseconds><random>`` (the events API wants a DNS
subdomain), with the regarding object's identifying fields, the reporting controller and
instance, an action, a reason, a type and a note capped at 1,024 bytes of UTF-8. Core/v1
readers and ``kubectl describe`` see the same object (regarding -> involvedObject, note ->
message). The endpoint names the type, so the body has no apiVersion or kind.

The reporting controller is the one of the regarding object's kind, as NVCRE names its
recorders (``job-controller``, ``workflow-controller``, ``certification-controller``,
``workloadrun-controller``, ``goodputmeasurement-controller``,
``bandwidthmeasurement-controller``); an Event about any other kind keeps the component it was
given.

:class:`EventSeries` does what client-go's events.k8s.io recorder does with a repeat: the same
Event (regarding object, reason, type, action, note, reporting controller) seen again within
six minutes is not a new object but a ``series`` on the first one, ``{count,
lastObservedTime}``, updated at most every thirty seconds; after six minutes of quiet a new
Event starts.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

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
_GROUP = "nvcre.nvidia.com/"
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
    if str(involved.get("apiVersion") or "").startswith(_GROUP):
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


@dataclass
class _Seen:
    namespace: str
    name: str
    count: int
    last_seen: float
    last_written: float


#: client-go's events.k8s.io recorder: a repeat within this many seconds joins the series
SERIES_WINDOW = 6 * 60.0
#: and the series on the server is brought up to date at most this often
SERIES_REFRESH = 30.0
#: the Events remembered for series at once (the oldest is forgotten first)
SERIES_MEMORY = 4096


class EventSeries:
    """Folds repeats of one Event into a ``series`` on the first (see the module docstring).

    ``observe(body)`` answers with the body to create (the first sighting, or one after six
    minutes of quiet), a :class:`SeriesUpdate` for the Event already written, or ``None`` when
    the repeat is only counted (the server copy is refreshed at most every thirty seconds, and
    whenever a later repeat comes after that). ``forget(body)`` drops an Event that could not be
    written, so the next sighting creates it again. Safe across threads.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, now: Callable[[], datetime] | None = None) -> None:
        self._clock = clock
        self._now = now or (lambda: datetime.now(UTC))
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(body: Mapping[str, Any]) -> tuple[str, ...]:
        regarding = body.get("regarding") or {}
        identity = tuple(str(regarding.get(k) or "") for k in ("apiVersion", "kind", "namespace", "name", "uid"))
        fields = tuple(str(body.get(k) or "") for k in ("reason", "type", "action", "note", "reportingController", "reportingInstance"))
        return identity + fields

    def observe(self, body: dict[str, Any]) -> dict[str, Any] | SeriesUpdate | None:
        key = self._key(body)
        at = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or at - seen.last_seen > SERIES_WINDOW:
                meta = body.get("metadata") or {}
                self._seen[key] = _Seen(str(meta.get("namespace") or ""), str(meta.get("name") or ""), 1, at, at)
                self._seen.move_to_end(key)
                while len(self._seen) > SERIES_MEMORY:
                    self._seen.popitem(last=False)
                return body
            seen.count += 1
            seen.last_seen = at
            self._seen.move_to_end(key)
            if seen.count > 2 and at - seen.last_written < SERIES_REFRESH:
                return None
            seen.last_written = at
            series = {"count": seen.count, "lastObservedTime": _micro(self._now())}
            return SeriesUpdate(seen.namespace, seen.name, {"series": series})

    def forget(self, body: Mapping[str, Any]) -> None:
        with self._lock:
            self._seen.pop(self._key(body), None)
