"""Client-side request accounting: classification, the counter, the client hook and /metrics."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from prometheus_client import generate_latest

from nvcre.runtime.kube.accounting import RequestCounter, classify
from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.resources import JOBS, NODES, PODS
from nvcre.runtime.metrics.registry import ControllerMetrics


@pytest.mark.parametrize(
    ("method", "path", "query", "content_type", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods/p1", (), "", ("get", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods", (("limit", 500),), "", ("list", "pods")),
        ("GET", "/api/v1/nodes", (("watch", "true"),), "", ("watch", "nodes")),
        ("GET", "/api/v1/nodes/n1", (), "", ("get", "nodes")),
        ("GET", "/api/v1/namespaces/ns/pods/p1/log", (("timestamps", "true"),), "", ("get", "pods/log")),
        ("PUT", "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ns/jobs/j1/status", (), "application/json", ("update", "jobs/status")),
        ("PATCH", "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ns/jobs/j1", (), "application/merge-patch+json", ("patch", "jobs")),
        ("PATCH", "/api/v1/namespaces/ns/configmaps/c", (), "application/apply-patch+yaml", ("apply", "configmaps")),
        ("POST", "/api/v1/namespaces/ns/events", (), "application/json", ("create", "events")),
        ("POST", "/apis/events.k8s.io/v1/namespaces/ns/events", (), "application/json", ("create", "events")),
        ("DELETE", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/t", (), "", ("delete", "trainjobs")),
        ("GET", "/apis/nvcre.nvidia.com/v1alpha1", (), "", ("get", "discovery")),
        ("GET", "/api/v1/namespaces", (), "", ("list", "namespaces")),
        ("GET", "/api/v1/namespaces/ns", (), "", ("get", "namespaces")),
    ],
)
def test_requests_are_named_by_verb_and_resource(method, path, query, content_type, expected):
    assert classify(method, path, query, content_type) == expected


def test_the_counter_totals_per_key_and_across_threads():
    counter = RequestCounter()

    def work() -> None:
        for _ in range(500):
            counter.record("get", "pods")
            counter.record("update", "jobs/status")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.snapshot() == {("get", "pods"): 2000, ("update", "jobs/status"): 2000}
    assert counter.total() == 4000
    assert counter.total(["get"]) == 2000
    before = counter.snapshot()
    counter.record("get", "pods")
    assert RequestCounter.difference(counter.snapshot(), before) == {("get", "pods"): 1}


class _Response:
    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self._body = body

    def read(self) -> bytes:
        return self._body


class _FakeApiClient:
    """Stands in for kubernetes.client.ApiClient: answers from a table, records what was asked."""

    def __init__(self, answers: dict[tuple[str, str], tuple[int, Any]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str]] = []
        self.rest_client = self

    def param_serialize(self, method: str, path: str, **kwargs: Any) -> tuple[str, str, dict[str, str], None, None]:
        return method, path, dict(kwargs.get("header_params") or {}), None, None

    def request(self, method: str, url: str, **kwargs: Any) -> _Response:
        self.sent.append((method, url))
        status, body = self.answers.get((method, url), (404, {"reason": "NotFound", "message": "no such thing"}))
        return _Response(status, json.dumps(body).encode())

    def close(self) -> None:
        return None


def test_every_request_the_client_sends_is_counted_once_including_failures():
    fake = _FakeApiClient(
        {
            ("GET", "/api/v1/nodes"): (200, {"items": [{"metadata": {"name": "n1"}}], "metadata": {"resourceVersion": "7"}}),
            ("GET", "/api/v1/namespaces/ns/pods/p1"): (200, {"metadata": {"name": "p1"}}),
            ("PUT", "/apis/nvcre.nvidia.com/v1alpha1/namespaces/ns/jobs/j1/status"): (200, {"metadata": {"name": "j1"}}),
        }
    )
    kube = ApiServerClient(fake)
    assert [n["metadata"]["name"] for n in kube.list(NODES).items] == ["n1"]
    kube.get(PODS, "p1", "ns")
    with pytest.raises(NotFound):
        kube.get(PODS, "gone", "ns")
    job = {"metadata": {"name": "j1", "namespace": "ns", "resourceVersion": "1"}, "status": {}}
    kube.write_status(JOBS, job, lambda status, live: {**status, "phase": "x"})
    # nothing to change: no request at all
    kube.write_status(JOBS, job, lambda status, live: None)
    assert kube.requests.snapshot() == {("list", "nodes"): 1, ("get", "pods"): 2, ("update", "jobs/status"): 1}
    assert kube.requests.total() == len(fake.sent) == 4


def test_the_counts_are_served_as_a_prometheus_counter():
    counter = RequestCounter()
    counter.record("get", "workflows")
    counter.record("get", "workflows")
    counter.record("update", "jobs/status")
    metrics = ControllerMetrics({}, lambda: False, requests=counter)
    body = generate_latest(metrics.registry).decode()
    assert 'nvcre_api_requests_total{resource="workflows",verb="get"} 2.0' in body
    assert 'nvcre_api_requests_total{resource="jobs/status",verb="update"} 1.0' in body
    counter.record("get", "workflows")
    assert 'nvcre_api_requests_total{resource="workflows",verb="get"} 3.0' in generate_latest(metrics.registry).decode()


def test_without_a_counter_no_request_family_is_served():
    body = generate_latest(ControllerMetrics({}, lambda: False).registry).decode()
    assert "nvcre_api_requests_total" not in body
