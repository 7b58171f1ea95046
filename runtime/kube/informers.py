"""Informers: list + watch one resource into an in-memory store and tell handlers what changed.

An :class:`Informer` lists, then watches from the list's resourceVersion with bookmarks on.
A stream that ends (server timeout) is reopened from the last resourceVersion seen; a dropped
connection is retried with a growing pause from the same place; a 410 Gone (as an HTTP status
or as an ERROR event) means the history is compacted, so it lists again and reports the
difference (objects that vanished meanwhile come out as DELETED). The store is a cache: callers
that are about to destroy something must confirm absence with a live GET, never a store miss.

Each object is cached as its resource's projection (:mod:`.projections`): without
``metadata.managedFields``, with interned keys, and for Pods and TrainJobs only the fields the
reconcilers read. Handlers see the projected object too.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from . import cachecheck
from .client import Kube, WatchStream
from .errors import ApiError, Gone
from .projections import Projection, projection_for
from .resources import Resource

__all__ = ["EventHandler", "Indexer", "Informer", "Store", "object_key", "pod_node"]

log = logging.getLogger("nvcre.runtime.kube.informers")

#: ``handler(event_type, obj, old)``; event_type is ADDED, MODIFIED or DELETED.
EventHandler = Callable[[str, dict[str, Any], "dict[str, Any] | None"], None]

#: The value an object is filed under in a named index (None: not in the index).
Indexer = Callable[[Mapping[str, Any]], "str | None"]


def pod_node(pod: Mapping[str, Any]) -> str | None:
    """The node a Pod is bound to (the ``node`` index of the Pod cache)."""
    return str((pod.get("spec") or {}).get("nodeName") or "") or None


def object_key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _rv(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _labels_match(obj: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(key) == value for key, value in wanted.items())


class Store:
    """Thread-safe map of (namespace, name) -> object, indexed by namespace, by the values
    of ``indexed_labels`` (per namespace) and by named ``indexers`` (across namespaces)."""

    def __init__(self, indexed_labels: tuple[str, ...] = (), indexers: Mapping[str, Indexer] | None = None, *, resource: str = "") -> None:
        self._items: dict[tuple[str, str], dict[str, Any]] = {}
        self.resource = resource
        #: checked-cache mode (:mod:`.cachecheck`): key -> fingerprint of the object as filed
        self._prints: dict[tuple[str, str], bytes] | None = {} if cachecheck.enabled() else None
        self._by_namespace: dict[str, dict[str, dict[str, Any]]] = {}
        self.indexed_labels = indexed_labels
        self.indexers = dict(indexers or {})
        self._by_label: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = {}
        self._by_index: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _filed(self, key: tuple[str, str], obj: Mapping[str, Any], add: bool) -> None:
        for index, indexer in self.indexers.items():
            value = indexer(obj)
            if value is None:
                continue
            if add:
                self._by_index.setdefault((index, value), {})[key] = obj  # type: ignore[assignment]
                continue
            bucket = self._by_index.get((index, value))
            if bucket is not None:
                bucket.pop(key, None)
                if not bucket:
                    del self._by_index[(index, value)]

    def by_index(self, index: str, value: str) -> builtins.list[dict[str, Any]]:
        """Objects (of every namespace) that the named indexer files under ``value``."""
        if index not in self.indexers:
            raise KeyError(f"no index named {index!r}")
        with self._lock:
            return builtins.list((self._by_index.get((index, value)) or {}).values())

    def _index_keys(self, key: tuple[str, str], obj: Mapping[str, Any]) -> builtins.list[tuple[str, str, str]]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return [(key[0], label, str(labels[label])) for label in self.indexed_labels if label in labels]

    def _unindex(self, key: tuple[str, str], obj: Mapping[str, Any] | None) -> None:
        if obj is None:
            return
        self._filed(key, obj, add=False)
        for entry in self._index_keys(key, obj):
            bucket = self._by_label.get(entry)
            if bucket is not None:
                bucket.pop(key[1], None)
                if not bucket:
                    del self._by_label[entry]

    def _index(self, key: tuple[str, str], obj: Mapping[str, Any]) -> None:
        self._filed(key, obj, add=True)
        for entry in self._index_keys(key, obj):
            self._by_label.setdefault(entry, {})[key[1]] = dict(obj) if not isinstance(obj, dict) else obj

    def by_label(self, namespace: str, label: str, value: str) -> builtins.list[dict[str, Any]]:
        """Objects of ``namespace`` whose ``label`` equals ``value`` (an index lookup when indexed)."""
        if label not in self.indexed_labels:
            return self.list(namespace, {label: value})
        with self._lock:
            return builtins.list((self._by_label.get((namespace, label, value)) or {}).values())

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get((namespace or "", name))

    def list(self, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> builtins.list[dict[str, Any]]:
        with self._lock:
            if namespace is None:
                items = builtins.list(self._items.values())
            else:
                items = builtins.list((self._by_namespace.get(namespace) or {}).values())
        return [obj for obj in items if not labels or _labels_match(obj, labels)]

    def keys(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._items)

    def _check(self, key: tuple[str, str], old: Mapping[str, Any] | None, when: str) -> None:
        """In checked-cache mode: report ``old`` if it changed since it was filed."""
        if self._prints is None or old is None:
            return
        recorded = self._prints.pop(key, None)
        if recorded is not None and recorded != cachecheck.fingerprint(old):
            cachecheck.report_mutation(self.resource, key, when)

    def _record(self, key: tuple[str, str], obj: Mapping[str, Any]) -> None:
        if self._prints is not None:
            self._prints[key] = cachecheck.fingerprint(obj)

    def verify(self) -> int:
        """In checked-cache mode: check every cached object now; how many changed in place."""
        if self._prints is None:
            return 0
        with self._lock:
            changed = [
                key for key, obj in self._items.items() if self._prints.get(key, cachecheck.fingerprint(obj)) != cachecheck.fingerprint(obj)
            ]
            for key in changed:
                self._prints[key] = cachecheck.fingerprint(self._items[key])
        for key in changed:
            cachecheck.report_mutation(self.resource, key, "verify")
        return len(changed)

    def put(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        key = object_key(obj)
        with self._lock:
            old = self._items.get(key)
            self._check(key, old, "update")
            self._record(key, obj)
            self._unindex(key, old)
            self._items[key] = obj
            self._by_namespace.setdefault(key[0], {})[key[1]] = obj
            self._index(key, obj)
            return old

    def remove(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        key = object_key(obj)
        with self._lock:
            (self._by_namespace.get(key[0]) or {}).pop(key[1], None)
            old = self._items.pop(key, None)
            self._check(key, old, "delete")
            self._unindex(key, old)
            return old

    def replace(self, objects: Iterable[dict[str, Any]]) -> tuple[builtins.list[tuple[str, dict[str, Any], dict[str, Any] | None]], int]:
        """Swap the content; returns the events that explain the change, and the new size."""
        fresh = {object_key(obj): obj for obj in objects}
        by_namespace: dict[str, dict[str, dict[str, Any]]] = {}
        for (namespace, name), obj in fresh.items():
            by_namespace.setdefault(namespace, {})[name] = obj
        with self._lock:
            old = self._items
            for key, stale in old.items():
                self._check(key, stale, "relist")
            for key, obj in fresh.items():
                self._record(key, obj)
            self._items = fresh
            self._by_namespace = by_namespace
            self._by_label = {}
            self._by_index = {}
            for key, obj in fresh.items():
                self._index(key, obj)
        events: builtins.list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                events.append(("ADDED", obj, None))
            elif _rv(before) != _rv(obj):
                events.append(("MODIFIED", obj, before))
        for key, before in old.items():
            if key not in fresh:
                events.append(("DELETED", before, None))
        return events, len(fresh)


class Informer:
    """Keeps :attr:`store` in step with one resource (optionally one namespace / label selector)."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        watch_timeout: int = 240,
        max_reconnect_pause: float = 5.0,
        indexed_labels: tuple[str, ...] = (),
        indexers: Mapping[str, Indexer] | None = None,
        projection: Projection | None = None,
    ) -> None:
        self.kube = kube
        self.projection = projection or projection_for(resource.plural)
        self.resource = resource
        self.namespace = namespace if resource.namespaced else None
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.max_reconnect_pause = max_reconnect_pause
        self.store = Store(indexed_labels, indexers, resource=resource.plural)
        self.handlers: list[EventHandler] = []
        self.synced = threading.Event()
        self.relists = 0
        self.reconnects = 0
        self.resource_version = ""
        self._stop = threading.Event()
        self._stream: WatchStream | None = None
        self._thread: threading.Thread | None = None

    def add_handler(self, handler: EventHandler) -> None:
        self.handlers.append(handler)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Informer:
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self.store.verify()  # checked-cache mode only: a change nobody replaced is found here

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self.synced.wait(timeout)

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        need_list = True
        pause = 0.2
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch_once()
                pause = 0.2
            except Gone:
                log.info("watch history compacted; listing again", extra={"resource": self.resource.plural})
                self.relists += 1
                need_list = True
            except Exception as exc:  # noqa: BLE001 - any transport failure means reconnect
                if self._stop.is_set():
                    return
                self.reconnects += 1
                log.warning(
                    "watch interrupted; reconnecting",
                    extra={"resource": self.resource.plural, "error": str(exc)[:300], "pause": pause},
                )
                if isinstance(exc, ApiError) and exc.status not in (0, 429, 500, 503, 504):
                    need_list = True
                self._stop.wait(pause)
                pause = min(self.max_reconnect_pause, pause * 2)

    def _list(self) -> None:
        listed = self.kube.list(self.resource, self.namespace, label_selector=self.label_selector)
        events, _ = self.store.replace(self.projection(item) for item in listed.items)
        self.resource_version = listed.resource_version
        self.synced.set()
        for event_type, obj, old in events:
            self._dispatch(event_type, obj, old)

    def _watch_once(self) -> None:
        stream = self.kube.watch(self.resource, self.namespace, resource_version=self.resource_version, timeout_seconds=self.watch_timeout)
        self._stream = stream
        try:
            if self._stop.is_set():
                return
            for event in stream:
                if self._stop.is_set():
                    return
                self._handle(event.type, event.object)
        finally:
            self._stream = None
            stream.close()

    def _handle(self, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410:
                raise Gone(410, str(obj.get("reason") or "Expired"), str(obj.get("message") or ""))
            raise ApiError(code, str(obj.get("reason") or ""), str(obj.get("message") or ""))
        rv = _rv(obj)
        if event_type == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        obj = self.projection(obj)
        if event_type == "DELETED":
            old = self.store.remove(obj)
            self._dispatch("DELETED", obj, old)
        elif event_type in ("ADDED", "MODIFIED"):
            old = self.store.put(obj)
            self._dispatch("ADDED" if old is None else "MODIFIED", obj, old)
        if rv:
            self.resource_version = rv

    def _dispatch(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        for handler in self.handlers:
            try:
                handler(event_type, obj, old)
            except Exception:
                log.exception("informer handler failed", extra={"resource": self.resource.plural})


def wait_all_synced(informers: Iterable[Informer], timeout: float) -> bool:
    """Wait until every informer listed once; False when ``timeout`` passed first."""
    deadline = time.monotonic() + timeout
    for informer in informers:
        if not informer.wait_synced(max(0.0, deadline - time.monotonic())):
            return False
    return True
