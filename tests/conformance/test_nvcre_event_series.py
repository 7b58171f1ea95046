"""A repeated Event is one object with a ``series``, as client-go's events.k8s.io recorder keeps it.

NVCRE's controllers record through controller-runtime's events.k8s.io recorder (client-go
``tools/events``): the first occurrence of an Event is created; a repeat of the same Event (the
regarding object, reason, action, type and reporting controller) soon after is written onto that
first object as ``series.count`` and ``series.lastObservedTime``; a series quiet for six minutes
is finished, and the next occurrence starts a new Event. These tests drive the controller's
client, :class:`ApiServerClient`, against an in-memory events API and count what reached it; the
integration test ``tests/integration/test_event_series.py`` does the same on a real API server.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import urlparse

from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.events import SERIES_WINDOW, EventSeries

EVENTS = "/apis/events.k8s.io/v1/namespaces/ns/events"
JOB = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns", "uid": "u-1"}}


class _Response:
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self._body = json.dumps(body).encode()

    def read(self) -> bytes:
        return self._body


class _EventsApi:
    """Stands in for kubernetes.client.ApiClient: an events collection that takes creates and merge patches.

    ``fail`` holds the HTTP status the next request of a method gets instead of an answer.
    """

    def __init__(self) -> None:
        self.rest_client = self
        self.events: dict[str, dict[str, Any]] = {}
        self.sent: list[tuple[str, str]] = []
        self.fail: dict[str, int] = {}
        self._lock = threading.Lock()

    def param_serialize(self, method: str, path: str, **kwargs: Any) -> tuple[str, str, dict[str, str], None, None]:
        return method, path, dict(kwargs.get("header_params") or {}), None, None

    def request(self, method: str, url: str, **kwargs: Any) -> _Response:
        path = urlparse(url).path
        with self._lock:
            self.sent.append((method, path))
            status = self.fail.pop(method, 0)
            if status:
                return _Response(status, {"kind": "Status", "reason": "InternalError", "message": "etcd is unavailable"})
            if method == "POST" and path == EVENTS:
                body = kwargs["body"]
                self.events[body["metadata"]["name"]] = json.loads(json.dumps(body))
                return _Response(201, body)
            name = path.rsplit("/", 1)[-1]
            if method == "PATCH" and path == f"{EVENTS}/{name}":
                if name not in self.events:
                    return _Response(404, {"kind": "Status", "reason": "NotFound", "message": f'events.events.k8s.io "{name}" not found'})
                self.events[name].update(kwargs["body"])
                return _Response(200, self.events[name])
            return _Response(404, {"kind": "Status", "reason": "NotFound", "message": "no such thing"})

    def verbs(self) -> list[str]:
        return [method for method, _ in self.sent]

    def close(self) -> None:
        return None


class _Clock:
    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at


def _client(clock: _Clock | None = None) -> tuple[ApiServerClient, _EventsApi]:
    api = _EventsApi()
    client = ApiServerClient(api)
    if clock is not None:
        client.event_series = EventSeries(clock=clock)
    return client, api


def _emit(client: ApiServerClient, note: str = "node-b lost its GPU", obj: dict[str, Any] = JOB) -> None:
    client.emit_event(obj, type="Warning", reason="HardwareFailureDetected", message=note, component="nvcre-controller")


def test_a_repeated_event_is_one_object_whose_series_counts_every_occurrence() -> None:
    client, api = _client()
    for _ in range(5):
        _emit(client)
    assert api.verbs() == ["POST", "PATCH", "PATCH", "PATCH", "PATCH"]
    (event,) = api.events.values()
    assert event["series"]["count"] == 5
    assert event["series"]["lastObservedTime"].endswith("Z") and event["reportingController"] == "job-controller"
    assert [path for method, path in api.sent if method == "PATCH"] == [f"{EVENTS}/{event['metadata']['name']}"] * 4


def test_a_different_note_reason_or_object_is_an_event_of_its_own() -> None:
    client, api = _client()
    other = {**JOB, "metadata": {**JOB["metadata"], "name": "k", "uid": "u-2"}}
    _emit(client)
    _emit(client, note="node-c lost its GPU")
    _emit(client, obj=other)
    client.emit_event(JOB, type="Warning", reason="WorkloadFailed", message="node-b lost its GPU", component="nvcre-controller")
    assert api.verbs() == ["POST"] * 4 and not any("series" in e for e in api.events.values())


def test_after_six_minutes_of_quiet_the_next_occurrence_starts_a_new_event() -> None:
    clock = _Clock()
    client, api = _client(clock)
    _emit(client)
    clock.at += SERIES_WINDOW - 1
    _emit(client)  # within the window of the first: joins it
    clock.at += SERIES_WINDOW - 1
    _emit(client)  # within the window of the last sighting: still the same series
    clock.at += SERIES_WINDOW + 1
    _emit(client)
    assert api.verbs() == ["POST", "PATCH", "PATCH", "POST"]
    assert sorted((e.get("series") or {}).get("count", 1) for e in api.events.values()) == [1, 3]


def test_a_failed_create_is_forgotten_and_the_next_occurrence_creates_anew() -> None:
    client, api = _client()
    api.fail["POST"] = 500
    _emit(client)  # lost, and never raised into the reconcile
    _emit(client)
    _emit(client)
    assert api.verbs() == ["POST", "POST", "PATCH"]
    (event,) = api.events.values()
    assert event["series"]["count"] == 2


def test_a_failed_patch_forgets_the_series_and_the_next_occurrence_creates_anew() -> None:
    client, api = _client()
    _emit(client)
    api.fail["PATCH"] = 500
    _emit(client)
    _emit(client)
    assert api.verbs() == ["POST", "PATCH", "POST"]
    assert sorted((e.get("series") or {}).get("count", 1) for e in api.events.values()) == [1, 1]


def test_a_series_whose_event_is_gone_starts_a_new_event_with_this_occurrence() -> None:
    client, api = _client()
    _emit(client)
    api.events.clear()  # expired (the API server's event TTL) or deleted by hand
    _emit(client)
    _emit(client)
    assert api.verbs() == ["POST", "PATCH", "POST", "PATCH"]
    (event,) = api.events.values()
    assert event["series"]["count"] == 2


def test_repeats_from_many_threads_make_one_event_with_the_exact_count() -> None:
    client, api = _client()

    def emit_many() -> None:
        for _ in range(25):
            _emit(client)

    threads = [threading.Thread(target=emit_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert api.verbs().count("POST") == 1 and api.verbs().count("PATCH") == 199
    (event,) = api.events.values()
    assert event["series"]["count"] == 200


def test_the_series_remembered_are_bounded_and_quiet_ones_are_let_go() -> None:
    clock = _Clock()
    series = EventSeries(clock=clock, memory=3)
    created: list[str] = []
    for index in range(10):
        body = {"metadata": {"namespace": "ns", "name": f"e{index}"}, "regarding": {"name": f"o{index}"}, "reason": "R"}
        series.record(body, lambda b: created.append(b["metadata"]["name"]), lambda update: None)
    assert len(series) == 3 and len(created) == 10
    clock.at += SERIES_WINDOW + 1
    series.record(
        {"metadata": {"namespace": "ns", "name": "late"}, "regarding": {"name": "late"}, "reason": "R"}, lambda b: None, lambda u: None
    )
    assert len(series) == 1
