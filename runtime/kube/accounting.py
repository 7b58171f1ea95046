"""Client-side accounting of API requests: every call the controller makes, by verb and resource.

:func:`classify` turns an HTTP method, a request path and its query into the verb and resource
names the API server's own audit vocabulary uses (``get``, ``list``, ``watch``, ``create``,
``update``, ``patch``, ``apply``, ``delete``; ``pods/log``, ``jobs/status``, ``discovery``).
:class:`RequestCounter` keeps the totals, thread-safe; the controller serves them as
``nvcre_api_requests_total{verb,resource}``. It also keeps the answers by status code, HTTP method
and host (:meth:`RequestCounter.record_response`), as client-go counts them for
``rest_client_requests_total{code,method,host}``: the code as digits, ``<error>`` when no answer
came. Pure bookkeeping: no I/O.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["RequestCounter", "classify"]

_WRITE_VERBS = {"POST": "create", "PUT": "update", "DELETE": "delete"}


def _segments(path: str) -> list[str]:
    """The path after the group/version prefix, without an empty tail."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"]:
        return parts[2:]
    if parts[:1] == ["apis"]:
        return parts[3:]
    return parts


def classify(method: str, path: str, query: Iterable[tuple[str, Any]] = (), content_type: str = "") -> tuple[str, str]:
    """``(verb, resource)`` of one request.

    ``resource`` is the plural, with the subresource after a slash (``pods/log``); a request
    for a group/version listing is ``discovery``. A GET of a collection is ``list`` (``watch``
    with ``watch=true``); a PATCH is ``apply`` for server-side apply, else ``patch``.
    """
    method = method.upper()
    params = {str(key): str(value) for key, value in query}
    rest = _segments(path)
    if not rest:
        return ("get" if method == "GET" else method.lower()), "discovery"
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    if method == "GET":
        if named:
            return "get", resource
        return ("watch" if params.get("watch") in ("true", "1") else "list"), resource
    if method == "PATCH":
        return ("apply" if "apply-patch" in content_type else "patch"), resource
    return _WRITE_VERBS.get(method, method.lower()), resource


class RequestCounter:
    """Totals of requests by ``(verb, resource)``; safe to share between threads."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str], int] = {}
        self._responses: dict[tuple[str, str, str], int] = {}
        self._lock = threading.Lock()

    def record(self, verb: str, resource: str) -> None:
        key = (verb, resource)
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def record_response(self, code: int | None, method: str, host: str) -> None:
        """One answer (``code`` None: the request failed before one came) to ``method`` at ``host``."""
        key = ("<error>" if code is None else str(code), method.upper(), host)
        with self._lock:
            self._responses[key] = self._responses.get(key, 0) + 1

    def responses(self) -> dict[tuple[str, str, str], int]:
        """A copy of the answer totals by ``(code, method, host)``."""
        with self._lock:
            return dict(self._responses)

    def snapshot(self) -> dict[tuple[str, str], int]:
        """A copy of the totals."""
        with self._lock:
            return dict(self._counts)

    def total(self, verbs: Iterable[str] | None = None) -> int:
        """The sum over every key, or over the given verbs only."""
        wanted = None if verbs is None else frozenset(verbs)
        with self._lock:
            return sum(n for (verb, _), n in self._counts.items() if wanted is None or verb in wanted)

    @staticmethod
    def difference(after: Mapping[tuple[str, str], int], before: Mapping[tuple[str, str], int]) -> dict[tuple[str, str], int]:
        """What was counted between two snapshots (keys that did not grow are left out)."""
        out = {key: count - before.get(key, 0) for key, count in after.items()}
        return {key: count for key, count in out.items() if count > 0}
