"""The client seam: a typed Protocol the reconcilers use, and its API-server implementation.

Every call returns plain dicts exactly as the API server sends them. Writes follow one policy:

* objects the compiler produced are written with server-side apply under ONE field manager,
  ``nvcre-controller``;
* status is written through the ``status`` subresource by :meth:`Kube.write_status`, which
  mutates inside a retry loop (refetch on 409) and skips the write when nothing changed;
* deletes carry a UID precondition when the caller knows the UID, so a newer object that took
  the same name is never removed by mistake.

Every request goes through one method, which counts it by verb and resource
(:attr:`ApiServerClient.requests`, see :mod:`.accounting`) before it is sent.

This module and its siblings are the only importers of the ``kubernetes`` package.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .accounting import RequestCounter, classify
from .errors import ApiError, ApiNotServed, Conflict, NotFound, error_for
from .events import EventSeries, SeriesUpdate, event_body, object_ref
from .resources import EVENTS_V1, WELL_KNOWN, Resource, split_api_version

__all__ = [
    "FIELD_MANAGER",
    "ApiServerClient",
    "Kube",
    "ObjectList",
    "StatusMutator",
    "WatchEvent",
    "WatchStream",
    "object_ref",
]

FIELD_MANAGER = "nvcre-controller"
_STATUS_RETRIES = 8

#: Called with a deep copy of the live status (``{}`` when absent); returns the new status,
#: or None to write nothing.
StatusMutator = Callable[[dict[str, Any], Mapping[str, Any]], "dict[str, Any] | None"]


@dataclass(frozen=True)
class ObjectList:
    """The items of a list call and the collection's resourceVersion."""

    items: tuple[dict[str, Any], ...]
    resource_version: str


@dataclass(frozen=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, with its object."""

    type: str
    object: dict[str, Any]


class WatchStream(Protocol):
    """An open watch: iterate for events, ``close`` from any thread to end it."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class Kube(Protocol):
    """What the controller needs from the API server."""

    def resource_for(self, api_version: str, kind: str) -> Resource: ...

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList: ...

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
    ) -> WatchStream: ...

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]: ...

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    def replace(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]: ...

    def merge_patch(self, resource: Resource, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]: ...

    def write_status(self, resource: Resource, obj: Mapping[str, Any], mutate: StatusMutator) -> dict[str, Any] | None: ...

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> bool: ...

    def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        timestamps: bool = False,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        since_time: str | None = None,
    ) -> str: ...

    def emit_event(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str) -> None: ...


class _HttpWatch:
    """A watch over one streaming HTTP response, split into JSON lines."""

    def __init__(self, response: Any) -> None:
        self._response = response
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        buffer = b""
        try:
            for chunk in self._response.stream(65536, decode_content=True):
                if self._closed.is_set():
                    return
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield _decode_event(line)
            if buffer.strip() and not self._closed.is_set():
                yield _decode_event(buffer)
        except Exception:
            if self._closed.is_set():
                return
            raise
        finally:
            self._release()

    def close(self) -> None:
        self._closed.set()
        self.sever()
        self._release()

    def sever(self) -> None:
        """Shut the socket down, waking a reader blocked in another thread."""
        connection = getattr(self._response, "connection", None)
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _release(self) -> None:
        with contextlib.suppress(Exception):  # closing a dead socket must not raise
            self._response.close()
            self._response.release_conn()


def _decode_event(line: bytes) -> WatchEvent:
    data = json.loads(line)
    return WatchEvent(str(data.get("type") or ""), dict(data.get("object") or {}))


class ApiServerClient:
    """:class:`Kube` over HTTPS to a real API server, built from a kubeconfig or in-cluster."""

    def __init__(self, api_client: Any, *, component: str = "nvcre-controller", instance: str = "") -> None:
        self._api = api_client
        self.component = component
        self.instance = instance
        self._discovered: dict[tuple[str, str], Resource] = dict(WELL_KNOWN)
        self._lock = threading.Lock()
        #: every request sent, by verb and resource (served as ``nvcre_api_requests_total``)
        self.requests = RequestCounter()
        #: the Events written recently, so a repeat becomes a ``series`` on the first
        self.event_series = EventSeries()

    # -------------------------------------------------------------- construction

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, *, context: str | None = None, instance: str = "") -> ApiServerClient:
        """A client from a kubeconfig file, else the in-cluster service account."""
        from kubernetes import client, config

        configuration = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)  # type: ignore[no-untyped-call]
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except config.ConfigException:
                config.load_kube_config(context=context, client_configuration=configuration)  # type: ignore[no-untyped-call]
        configuration.connection_pool_maxsize = 64
        return cls(client.ApiClient(configuration), instance=instance)

    def close(self) -> None:
        self._api.close()

    # -------------------------------------------------------------- transport

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, Any]] = (),
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = 60.0,
        stream: bool = False,
    ) -> Any:
        self.requests.record(*classify(method, path, query, content_type))
        headers = {"Accept": "application/json", "Content-Type": content_type}
        method, url, headers, _, _ = self._api.param_serialize(
            method, path, query_params=list(query) or None, header_params=headers, auth_settings=["BearerToken"]
        )
        # The REST layer serialises dict bodies to JSON itself (for JSON and structured-YAML types).
        response = self._api.rest_client.request(method, url, headers=headers, body=body, _request_timeout=timeout)
        if stream:
            if response.status >= 300:
                raise error_for(response.status, response.read())
            return response.response
        raw = response.read()
        if response.status >= 300:
            raise error_for(response.status, raw)
        return raw

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        raw = self._request(method, path, **kwargs)
        return json.loads(raw) if raw else {}

    # -------------------------------------------------------------- discovery

    def resource_for(self, api_version: str, kind: str) -> Resource:
        key = (api_version, kind)
        with self._lock:
            known = self._discovered.get(key)
        if known is not None:
            return known
        group, version = split_api_version(api_version)
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = self._json("GET", path)
        except NotFound:
            raise ApiNotServed(404, "NotFound", f"the server does not serve the API {api_version} (kind {kind})") from None
        found: Resource | None = None
        with self._lock:
            for item in listing.get("resources") or []:
                if "/" in str(item.get("name", "")):
                    continue
                res = Resource(group, version, str(item["name"]), str(item["kind"]), bool(item.get("namespaced")))
                self._discovered.setdefault((api_version, res.kind), res)
                if res.kind == kind:
                    found = res
        if found is None:
            raise ApiNotServed(404, "NotFound", f"the server has no resource for kind {kind} in {api_version}")
        return found

    def _resource_of(self, obj: Mapping[str, Any]) -> Resource:
        return self.resource_for(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))

    # -------------------------------------------------------------- reads

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        return self._json("GET", resource.path(namespace, name))

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ObjectList:
        query: list[tuple[str, Any]] = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            page = [*query, ("limit", 500)] + ([("continue", token)] if token else [])
            data = self._json("GET", resource.path(namespace), query=page)
            for item in data.get("items") or []:
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
                items.append(item)
            meta = data.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return ObjectList(tuple(items), str(meta.get("resourceVersion") or ""))

    def watch(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
    ) -> WatchStream:
        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", resource_version),
            ("timeoutSeconds", int(timeout_seconds)),
        ]
        response = self._request("GET", resource.path(namespace), query=query, timeout=(10.0, timeout_seconds + 30.0), stream=True)
        return _HttpWatch(response)

    def pod_log(
        self,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        timestamps: bool = False,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
        since_time: str | None = None,
    ) -> str:
        query: list[tuple[str, Any]] = []
        if container:
            query.append(("container", container))
        if timestamps:
            query.append(("timestamps", "true"))
        if since_time is not None:
            query.append(("sinceTime", since_time))
        if tail_lines is not None:
            query.append(("tailLines", int(tail_lines)))
        if limit_bytes is not None:
            query.append(("limitBytes", int(limit_bytes)))
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
        raw = self._request("GET", path, query=query, timeout=120.0)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    # -------------------------------------------------------------- writes

    def create(self, obj: Mapping[str, Any], resource: Resource | None = None) -> dict[str, Any]:
        """POST ``obj``; ``resource`` names the collection when ``obj`` carries no type fields."""
        discovered = resource is None
        resource = resource or self._resource_of(obj)
        namespace = (obj.get("metadata") or {}).get("namespace")
        try:
            return self._json("POST", resource.path(namespace), body=dict(obj))
        except NotFound as exc:
            if not discovered or isinstance(exc.body, dict):
                raise  # a Status body: the server has the collection and refused this object
            # No Status: the collection itself is gone (its CRD was removed since discovery).
            # Discover again, which says plainly which API is missing.
            with self._lock:
                self._discovered.pop((str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")), None)
            self._resource_of(obj)
            raise

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        resource = self._resource_of(obj)
        meta = obj.get("metadata") or {}
        body = {key: value for key, value in obj.items() if key != "status"}
        query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
        return self._json(
            "PATCH",
            resource.path(meta.get("namespace"), str(meta.get("name"))),
            query=query,
            body=body,
            content_type="application/apply-patch+yaml",
        )

    def replace(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        return self._json("PUT", resource.path(meta.get("namespace"), str(meta.get("name"))), body=dict(obj))

    def merge_patch(self, resource: Resource, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]:
        return self._json(
            "PATCH",
            resource.path(namespace, name),
            query=[("fieldManager", FIELD_MANAGER)],
            body=dict(patch),
            content_type="application/merge-patch+json",
        )

    def write_status(self, resource: Resource, obj: Mapping[str, Any], mutate: StatusMutator) -> dict[str, Any] | None:
        """Mutate the status and PUT it; refetch and redo on 409; no write when unchanged.

        Returns the object the server answered with, or None when nothing was written.
        """
        meta = obj.get("metadata") or {}
        name, namespace = str(meta.get("name")), meta.get("namespace")
        current: Mapping[str, Any] = obj
        for _ in range(_STATUS_RETRIES):
            # ``current`` may be a cached object: it is read, never changed; the mutation works
            # on a copy of its status and the body shares everything else with it.
            old = current.get("status") or {}
            new = mutate(copy.deepcopy(dict(old)), current)
            if new is None or new == old:
                return None
            body = {**current, "status": new}
            try:
                return self._json("PUT", resource.path(namespace, name, "status"), body=body)
            except Conflict:
                current = self.get(resource, name, namespace)
        raise Conflict(409, "Conflict", f"status of {resource.kind} {namespace}/{name} kept changing under us")

    def delete(
        self,
        resource: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> bool:
        """Delete; True when a delete was accepted, False when the object was already gone
        or a newer object (another UID) holds the name."""
        body: dict[str, Any] = {"propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            self._json("DELETE", resource.path(namespace, name), body=body)
        except NotFound:
            return False
        except Conflict:
            return False
        return True

    def emit_event(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str) -> None:
        """Write an Event about ``involved``; a repeat within the series window patches the first one's ``series``."""
        event = event_body(involved, type=type, reason=reason, message=message, component=component, instance=self.instance)
        try:
            self.event_series.record(event, self._create_event, self._patch_event)
        except ApiError:
            # An Event is a courtesy to the reader; losing one must never fail a reconcile.
            # The series forgot it, so the next occurrence creates a new Event.
            return

    def _create_event(self, event: dict[str, Any]) -> None:
        self._json("POST", EVENTS_V1.path(event["metadata"]["namespace"]), body=event)

    def _patch_event(self, update: SeriesUpdate) -> None:
        self.merge_patch(EVENTS_V1, update.name, update.namespace, update.patch)
