"""The body of an Event the controller writes, as NVCRE's recorder writes them (events.k8s.io/v1).

One Event per emission, named ``<object>.<nanoseconds><random>`` (the events API wants a DNS
subdomain), with the regarding object's identifying fields, the reporting controller and
instance, an action, a reason, a type and a note capped at 1,024 bytes of UTF-8. Core/v1
readers and ``kubectl describe`` see the same object (regarding -> involvedObject, note ->
message). The endpoint names the type, so the body has no apiVersion or kind.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

__all__ = ["EVENT_ACTION", "EVENT_FIELD_LIMIT", "EVENT_NOTE_LIMIT", "event_body", "object_ref"]

EVENT_NOTE_LIMIT = 1024
#: the events.k8s.io/v1 bound on an Event's action, reason and reporting instance
EVENT_FIELD_LIMIT = 128
#: what the controller was doing when it wrote an Event (events.k8s.io/v1 requires one)
EVENT_ACTION = "Reconcile"
_TRUNCATED = "... [truncated]"


def object_ref(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The identifying fields of an object (apiVersion, kind, namespace, name, uid)."""
    meta = obj.get("metadata") or {}
    ref = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    for key in ("namespace", "name", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = meta[key]
    return ref


def _event_name(regarding: str) -> str:
    """``<object>.<nanoseconds><random>`` in hex: unique per emission, the object's name first."""
    suffix = f"{time.time_ns():x}{secrets.token_hex(2)}"
    return f"{regarding[: 253 - len(suffix) - 1]}.{suffix}"


def _micro_now() -> str:
    """Now as the API's MicroTime (an Event's ``eventTime``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _cap_note(message: str) -> str:
    data = message.encode("utf-8")
    if len(data) <= EVENT_NOTE_LIMIT:
        return message
    room = EVENT_NOTE_LIMIT - len(_TRUNCATED)
    return data[:room].decode("utf-8", "ignore") + _TRUNCATED


def event_body(involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str, instance: str) -> dict[str, Any]:
    """The events.k8s.io/v1 Event about ``involved``; its namespace is the object's, else ``default``."""
    ref = object_ref(involved)
    return {
        "metadata": {"name": _event_name(str(ref.get("name") or "object")), "namespace": str(ref.get("namespace") or "default")},
        "eventTime": _micro_now(),
        "reportingController": component,
        "reportingInstance": (instance or component)[:EVENT_FIELD_LIMIT],
        "action": EVENT_ACTION,
        "reason": reason[:EVENT_FIELD_LIMIT],
        "regarding": ref,
        "note": _cap_note(message),
        "type": type,
    }
