"""The informer cache keeps objects without managedFields, from the list and from watch events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nvcre.runtime.kube.client import ObjectList, WatchEvent
from nvcre.runtime.kube.informers import Informer
from nvcre.runtime.kube.resources import PODS

MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {"f:phase": {}}}}]


def _pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "managedFields": list(MANAGED)}, "status": {}}


class _Stream:
    def __init__(self, events: list[WatchEvent]) -> None:
        self.events = events

    def __iter__(self) -> Iterator[WatchEvent]:
        yield from self.events

    def close(self) -> None:
        return None


class _Kube:
    def __init__(self) -> None:
        self.watched = 0

    def list(self, resource: Any, namespace: Any = None, **kwargs: Any) -> ObjectList:
        return ObjectList((_pod("listed", "1"),), "1")

    def watch(self, resource: Any, namespace: Any = None, **kwargs: Any) -> _Stream:
        self.watched += 1
        return _Stream([WatchEvent("ADDED", _pod("watched", "2")), WatchEvent("MODIFIED", _pod("listed", "3"))])


def test_managed_fields_never_reach_the_cache_or_the_handlers():
    seen: list[dict[str, Any]] = []
    informer = Informer(_Kube(), PODS, "ns")  # type: ignore[arg-type]
    informer.add_handler(lambda event_type, obj, old: seen.append(obj))
    informer._list()
    informer._watch_once()
    stored = informer.store.list()
    assert sorted(o["metadata"]["name"] for o in stored) == ["listed", "watched"]
    assert all("managedFields" not in o["metadata"] for o in [*stored, *seen])
    assert informer.store.get("listed", "ns")["metadata"]["resourceVersion"] == "3"
    assert informer.resource_version == "3"
