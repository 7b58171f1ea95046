"""controller-runtime's standard families: names, label names, buckets, and what they count.

Names, labels and buckets are controller-runtime's (``pkg/internal/controller/metrics/metrics.go``,
``pkg/metrics/workqueue.go``, ``pkg/metrics/client_go_adapter.go``, ``pkg/metrics/leaderelection.go``
in github.com/kubernetes-sigs/controller-runtime), so its community dashboards read them unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.kube.accounting import RequestCounter
from nvcre.runtime.kube.client import ApiServerClient
from nvcre.runtime.kube.errors import Conflict
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.queue import WorkQueue
from nvcre.runtime.kube.resources import NODES
from nvcre.runtime.kube.responses import CountingRestClient, count_responses
from nvcre.runtime.metrics.standard import RECONCILE_TIME_BUCKETS, WORKQUEUE_BUCKETS
from nvcre.runtime.tiers import TABLE, TIERS

#: controller-runtime's ``controller_runtime_reconcile_time_seconds`` buckets, as written there
CONTROLLER_RUNTIME_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                              1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60]  # fmt: skip
#: ``prometheus.ExponentialBuckets(10e-9, 10, 12)``: the bounds Go computes, as Go prints them
WORKQUEUE_LE = ["1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05", "0.001", "0.01", "0.1", "1",
                "10", "100", "1000", "+Inf"]  # fmt: skip


def _families(registry: Any) -> dict[str, Any]:
    return {family.name: family for family in text_string_to_metric_families(generate_latest(registry).decode())}


class _Quiet:
    """No API calls expected."""


def _controller(reconcile: Callable[[str, str], Any], *, leader_elect: bool = False) -> Controller:
    config = ControllerConfig(metrics_address="0", health_address="0", leader_elect=leader_elect, install_logprofiles=False, workers=2)
    ctl = Controller(_Quiet(), config)  # type: ignore[arg-type]
    for tier in TABLE:
        ctl.stores[tier.resource.plural] = Store()
    ctl.reconcilers = {tier.name: reconcile for tier in TABLE}
    return ctl


def test_the_bucket_boundaries_are_controller_runtimes() -> None:
    assert list(RECONCILE_TIME_BUCKETS) == [float(b) for b in CONTROLLER_RUNTIME_BUCKETS]
    assert len(WORKQUEUE_BUCKETS) == 12 and WORKQUEUE_BUCKETS[0] == 10e-9


def test_reconciles_queues_and_workers_are_counted_as_controller_runtime_counts_them() -> None:
    seen: list[str] = []
    finished = threading.Event()

    class Result:
        def __init__(self, after: float | None) -> None:
            self.requeue_after = after

    def reconcile(namespace: str, name: str) -> Result:
        seen.append(name)
        if name == "boom" and seen.count("boom") == 1:
            raise RuntimeError("broken")
        if name == "race" and seen.count("race") == 1:
            raise Conflict(409, "Conflict", "the object has been modified")
        if len(seen) >= 6:
            finished.set()
        return Result(30.0 if name == "later" else None)

    ctl = _controller(reconcile)
    for name in ("ok", "boom", "race", "later"):
        ctl.queues["workflow"].add(("ns", name))
    ctl._start_leading()
    try:
        assert finished.wait(10), seen
        time.sleep(0.1)
        found = _families(ctl.metrics.registry)
    finally:
        ctl.stop()
    totals = {s.labels["result"]: s.value for s in found["controller_runtime_reconcile"].samples if s.labels["controller"] == "workflow"}
    assert totals == {"success": 3.0, "error": 1.0, "requeue": 1.0, "requeue_after": 1.0}
    assert {s.labels["controller"] for s in found["controller_runtime_reconcile"].samples} == set(TIERS)
    errors = {s.labels["controller"]: s.value for s in found["controller_runtime_reconcile_errors"].samples}
    assert errors["workflow"] == 1.0 and errors["job"] == 0.0
    time_family = found["controller_runtime_reconcile_time_seconds"]
    assert time_family.type == "histogram"
    bounds = [s.labels["le"] for s in time_family.samples if s.name.endswith("_bucket") and s.labels["controller"] == "workflow"]
    assert [float(b) for b in bounds[:-1]] == [float(b) for b in CONTROLLER_RUNTIME_BUCKETS] and bounds[-1] == "+Inf"
    count = next(s.value for s in time_family.samples if s.name.endswith("_count") and s.labels["controller"] == "workflow")
    assert count == 6.0
    assert {s.labels["controller"]: s.value for s in found["controller_runtime_max_concurrent_reconciles"].samples}["workflow"] == 2.0
    assert {s.labels["controller"] for s in found["controller_runtime_active_workers"].samples} == set(TIERS)
    for name in ("workqueue_depth", "workqueue_adds", "workqueue_retries", "workqueue_unfinished_work_seconds",
                 "workqueue_longest_running_processor_seconds", "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):  # fmt: skip
        labels = {key for s in found[name].samples for key in s.labels if key != "le"}
        assert {"name", "controller"} <= labels, name
        assert {s.labels["name"] for s in found[name].samples} == set(TIERS), name
    assert {key for s in found["workqueue_depth"].samples for key in s.labels} == {"name", "controller", "priority"}
    by_queue = {s.labels["name"]: s.value for s in found["workqueue_retries"].samples}
    assert by_queue["workflow"] == 2.0  # the failure and the lost write race were retried with backoff
    adds = {s.labels["name"]: s.value for s in found["workqueue_adds"].samples}
    assert adds["workflow"] == 6.0
    for name in ("workqueue_queue_duration_seconds", "workqueue_work_duration_seconds"):
        bounds = [s.labels["le"] for s in found[name].samples if s.name.endswith("_bucket") and s.labels["name"] == "workflow"]
        # the Python client writes 1.0 where Go writes 1; Prometheus 3 stores both as le="1"
        assert [float(b) for b in bounds] == [float(b) for b in WORKQUEUE_LE], name
        count = next(s.value for s in found[name].samples if s.name.endswith("_count") and s.labels["name"] == "workflow")
        assert count == 6.0, name
    assert "process_resident_memory_bytes" in found and "process_cpu_seconds" in found


def test_the_longest_running_processor_and_unfinished_work_are_read_from_the_queue() -> None:
    now = [10.0]
    queue: WorkQueue[str] = WorkQueue(clock=lambda: now[0])
    queue.add("a")
    queue.add("b")
    queue.get(timeout=0)
    now[0] = 13.0
    queue.get(timeout=0)
    now[0] = 15.0
    stats = queue.stats()
    assert (stats.processing, stats.unfinished_seconds, stats.longest_running) == (2, 7.0, 5.0)
    queue.add_rate_limited("c")
    assert queue.stats().retries == 1


def test_leader_status_follows_the_lease() -> None:
    ctl = _controller(lambda namespace, name: None, leader_elect=True)
    ctl._start_leading()
    try:
        gauge = {s.labels["name"]: s.value for s in _families(ctl.metrics.registry)["leader_election_master_status"].samples}
        assert gauge == {"nvcre-controller": 1.0}
        ctl._stop_leading()
        gauge = {s.labels["name"]: s.value for s in _families(ctl.metrics.registry)["leader_election_master_status"].samples}
        assert gauge == {"nvcre-controller": 0.0}
    finally:
        ctl.stop()


class _Response:
    def __init__(self, status: int, body: bytes = b"{}") -> None:
        self.status = status
        self._body = body

    def read(self) -> bytes:
        return self._body


class _Rest:
    def __init__(self) -> None:
        self.answers: list[Any] = [_Response(200, b'{"kind": "Node", "metadata": {"name": "n1"}}'), _Response(404, b"{}"), OSError("reset")]

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class _Configuration:
    host = "https://127.0.0.1:6443"


class _ApiClient:
    """The two things the API client uses of the kubernetes package's ApiClient."""

    def __init__(self) -> None:
        self.configuration = _Configuration()
        self.rest_client: Any = _Rest()

    def param_serialize(self, method: str, path: str, **kwargs: Any) -> tuple[str, str, Mapping[str, str], None, None]:
        return method, self.configuration.host + path, dict(kwargs.get("header_params") or {}), None, None

    def close(self) -> None:
        return None


def test_rest_client_requests_count_answers_by_code_method_and_host() -> None:
    kube = ApiServerClient(_ApiClient())
    assert count_responses(kube)
    assert not count_responses(kube), "counted once"
    assert isinstance(kube._api.rest_client, CountingRestClient)
    kube.get(NODES, "n1")
    for _ in range(2):
        with contextlib.suppress(Exception):  # the 404 and the transport failure are what is counted
            kube.get(NODES, "n2")
    assert kube.requests.responses() == {
        ("200", "GET", "127.0.0.1:6443"): 1,
        ("404", "GET", "127.0.0.1:6443"): 1,
        ("<error>", "GET", "127.0.0.1:6443"): 1,
    }
    ctl_metrics = Controller(kube, ControllerConfig(metrics_address="0", health_address="0", leader_elect=False)).metrics
    samples = {tuple(sorted(s.labels.items())): s.value for s in _families(ctl_metrics.registry)["rest_client_requests"].samples}
    assert samples[(("code", "404"), ("host", "127.0.0.1:6443"), ("method", "GET"))] == 1.0


def test_a_test_double_is_left_alone() -> None:
    assert not count_responses(_Quiet())
    counter = RequestCounter()
    counter.record_response(None, "post", "h:1")
    assert counter.responses() == {("<error>", "POST", "h:1"): 1}
