"""API errors as the reconcilers see them, independent of the Kubernetes client library.

The client seam turns every non-2xx answer into one of these, so code above ``kube`` can tell
NotFound from Conflict from Gone without importing ``kubernetes``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ApiNotServed",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "error_for",
]


class ApiError(Exception):
    """A failed API call: HTTP status, the Status reason and the server's message."""

    def __init__(self, status: int, reason: str = "", message: str = "", body: Any = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        super().__init__(f"{status} {reason}: {message}" if reason else f"{status}: {message}")


class NotFound(ApiError):
    """404: the object (or its resource) does not exist."""


class ApiNotServed(NotFound):
    """404 from discovery: the server serves no such API group/version, or no such kind in it."""


class Conflict(ApiError):
    """409 with a stale resourceVersion or a failed precondition."""


class AlreadyExists(Conflict):
    """409 on create: an object with that name is already there."""


class Gone(ApiError):
    """410: the resourceVersion a watch or list asked for has been compacted away."""


class Invalid(ApiError):
    """422: the server refused the object (schema, CEL rules, immutability)."""


class Forbidden(ApiError):
    """403: RBAC denied the call, or the namespace is terminating."""


_BY_STATUS: dict[int, type[ApiError]] = {404: NotFound, 410: Gone, 422: Invalid, 403: Forbidden}


def error_for(status: int, raw: bytes | str | None) -> ApiError:
    """The error matching an HTTP status and a (possibly absent) Status body."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
    body: Any = None
    reason = ""
    message = text.strip()[:2048]
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    if isinstance(body, dict):
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or message)
    if status == 409:
        cls: type[ApiError] = AlreadyExists if reason == "AlreadyExists" else Conflict
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, message, body)
