"""On a real API server, a repeated Event is one events.k8s.io object whose ``series`` counts it.

The API server validates a series patch as it validates client-go's (``series.count`` of at
least 2 with a ``lastObservedTime``), and core/v1 readers (``kubectl describe``) see the same
object with the same series.
"""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.resources import CONFIGMAPS, EVENTS, EVENTS_V1
from tests.integration.integration_helpers import unique

pytestmark = pytest.mark.integration

REPEATS = 7


@pytest.fixture
def kube(controlplane: Any) -> Any:
    client = ApiServerClient.from_kubeconfig(str(controlplane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def _watched(kube: ApiServerClient, namespace: str) -> dict[str, Any]:
    name = unique("watched")
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"v": "1"}})
    return kube.get(CONFIGMAPS, name, namespace)


def _emit(kube: ApiServerClient, obj: dict[str, Any], note: str) -> None:
    kube.emit_event(obj, type="Warning", reason="SeriesProbe", message=note, component="nvcre-controller")


def test_a_repeated_event_is_one_object_with_the_count_of_its_repeats(kube: ApiServerClient, namespace: str) -> None:
    watched = _watched(kube, namespace)
    for _ in range(REPEATS):
        _emit(kube, watched, "the same thing again")
    _emit(kube, watched, "something else")

    written = [e for e in kube.list(EVENTS_V1, namespace).items if e.get("reason") == "SeriesProbe"]
    assert sorted(e["note"] for e in written) == ["something else", "the same thing again"], written
    (repeated,) = [e for e in written if e["note"] == "the same thing again"]
    assert repeated["series"]["count"] == REPEATS and repeated["series"]["lastObservedTime"]
    (single,) = [e for e in written if e["note"] == "something else"]
    assert "series" not in single
    (legacy,) = [e for e in kube.list(EVENTS, namespace).items if e["metadata"]["name"] == repeated["metadata"]["name"]]
    assert legacy["series"]["count"] == REPEATS and legacy["involvedObject"]["uid"] == watched["metadata"]["uid"]
    # one create and one patch per repeat: never a request more than an Event per occurrence cost
    verbs = kube.requests.snapshot()
    assert (verbs.get(("create", "events")), verbs.get(("patch", "events"))) == (2, REPEATS - 1)


def test_a_deleted_event_restarts_the_series_with_the_next_occurrence(kube: ApiServerClient, namespace: str) -> None:
    watched = _watched(kube, namespace)
    _emit(kube, watched, "again")
    _emit(kube, watched, "again")
    (first,) = [e for e in kube.list(EVENTS_V1, namespace).items if e.get("reason") == "SeriesProbe"]
    kube.delete(EVENTS_V1, first["metadata"]["name"], namespace)
    _emit(kube, watched, "again")
    _emit(kube, watched, "again")
    (second,) = [e for e in kube.list(EVENTS_V1, namespace).items if e.get("reason") == "SeriesProbe"]
    assert second["metadata"]["name"] != first["metadata"]["name"] and second["series"]["count"] == 2
