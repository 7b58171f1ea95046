"""One object whose reconcile runs long does not stall every tenant, and ``/healthz`` tells.

The audit's two Certifications with a costly threshold held both Certification workers for 16
minutes: an unrelated tenant's Certification got no status at all while ``/healthz`` answered 200.
Here a reconcile that blocks stands in for any such object: past the per-object budget another
worker takes over the tier's queue, the object is flagged (log, Event, counter) and visited again
only after a delay, and once a worker has been on it past the stuck limit ``/healthz`` fails.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.endpoint.serve import Endpoint
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.tiers import TABLE
from nvcre.runtime.workers import WorkerBoard

BUDGET = 0.3


class _EventsOnly:
    """The client seam: the controller may write Events, nothing else."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def emit_event(self, involved: Mapping[str, Any], *, type: str, reason: str, message: str, component: str) -> None:
        self.events.append((str(involved["metadata"]["name"]), reason, message))


def _certification(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": name, "namespace": namespace}}


def _controller(kube: _EventsOnly, reconcile: Callable[[str, str], Any]) -> Controller:
    config = ControllerConfig(
        metrics_address="0",
        health_address="0",
        leader_elect=False,
        install_logprofiles=False,
        workers=1,
        reconcile_budget=BUDGET,
        stuck_worker_limit=1.0,
    )
    ctl = Controller(kube, config)  # type: ignore[arg-type]
    for tier in TABLE:
        ctl.stores[tier.resource.plural] = Store()
    ctl.reconcilers = {tier.name: reconcile for tier in TABLE}
    return ctl


def _wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_a_long_reconcile_does_not_hold_other_tenants_and_healthz_reports_it() -> None:
    release = threading.Event()
    done: list[str] = []
    calls: dict[str, int] = {}

    class Result:
        requeue_after = None

    def reconcile(namespace: str, name: str) -> Result:
        calls[name] = calls.get(name, 0) + 1
        if name == "cost1" and calls[name] == 1:
            release.wait(20)
        done.append(f"{namespace}/{name}")
        return Result()

    kube = _EventsOnly()
    ctl = _controller(kube, reconcile)
    ctl.stores["certifications"].put(_certification("cost", "cost1"))
    ctl.queues["certification"].add(("cost", "cost1"))
    ctl._start_leading()
    try:
        assert _wait_for(lambda: ctl.board.active("certification") == 1, 5)
        for index in range(3):
            ctl.queues["certification"].add(("normal", f"n{index}"))
        # another worker takes the queue once the first is past its budget
        assert _wait_for(lambda: {"normal/n0", "normal/n1", "normal/n2"} <= set(done), 5), done
        assert "cost/cost1" not in done
        assert [(name, reason) for name, reason, _ in kube.events] == [("cost1", "ReconcileTimeBudgetExceeded")]
        assert "time budget of 0.3 s" in kube.events[0][2]
        assert ctl.metrics.over_budget.labels("certification")._value.get() == 1.0
        # past the stuck limit, /healthz says which worker is on which object
        assert _wait_for(lambda: ctl.health_problem() is not None, 5)
        assert "cost/cost1" in str(ctl.health_problem())
        release.set()
        assert _wait_for(lambda: "cost/cost1" in done, 5)
        assert ctl.health_problem() is None
        # the overrun object comes back, but only after the hold (the budget, for a first overrun)
        finished = time.monotonic()
        assert _wait_for(lambda: calls["cost1"] == 2, 5)
        assert time.monotonic() - finished >= BUDGET * 0.5
        # the flagged worker left: one worker again, not two
        assert _wait_for(lambda: sum(1 for w in ctl._workers if w.is_alive()) == len(TABLE), 5)
    finally:
        release.set()
        ctl.stop()


def test_healthz_fails_with_the_problem_and_recovers() -> None:
    problem: list[str | None] = [None]
    endpoint = Endpoint(("127.0.0.1", 0), healthy=lambda: problem[0]).start()
    url = f"http://127.0.0.1:{endpoint.port}/healthz"
    try:
        assert urllib.request.urlopen(url, timeout=10).read() == b"ok\n"
        problem[0] = "worker certification-worker-0 has been reconciling certification cost/cost1 for 400 s (limit 300 s)"
        try:
            urllib.request.urlopen(url, timeout=10)
            raise AssertionError("expected 500")
        except urllib.error.HTTPError as exc:
            assert exc.code == 500
            assert b"cost/cost1" in exc.read()
        problem[0] = None
        assert urllib.request.urlopen(url, timeout=10).status == 200
    finally:
        endpoint.stop()


def test_the_board_flags_an_overrun_once_and_names_the_stuck_worker() -> None:
    now = [0.0]
    board = WorkerBoard(clock=lambda: now[0])
    board.begin("certification-worker-0", "certification", ("cost", "cost1"))
    board.begin("job-worker-1", "job", ("ns", "j"))
    assert board.active("certification") == 1 and board.active("workflow") == 0
    now[0] = 61.0
    assert [b.object for b in board.over_budget(60.0)] == ["cost/cost1", "ns/j"]
    assert board.over_budget(60.0) == []
    assert board.stuck(300.0) is None
    now[0] = 301.0
    assert board.stuck(300.0) == "worker certification-worker-0 has been reconciling certification cost/cost1 for 301 s (limit 300 s)"
    ended = board.end("certification-worker-0")
    assert ended is not None and ended.over_budget
    assert board.active("certification") == 0


def test_replacements_are_capped_and_the_tier_keeps_its_workers() -> None:
    release = threading.Event()
    done: list[str] = []

    class Result:
        requeue_after = None

    def reconcile(namespace: str, name: str) -> Result:
        if name.startswith("slow") and f"{namespace}/{name}" not in done:
            release.wait(20)
        done.append(f"{namespace}/{name}")
        return Result()

    kube = _EventsOnly()
    ctl = _controller(kube, reconcile)
    ctl._start_leading()

    def certification_workers() -> int:
        return sum(1 for w in ctl._workers if w.is_alive() and w.name.startswith("certification-"))

    try:
        ctl.queues["certification"].add(("a", "slow1"))
        ctl.queues["certification"].add(("b", "slow2"))
        # the first overrun gets a replacement (which takes slow2); the second finds the cap reached
        assert _wait_for(lambda: ctl.board.active("certification") == 2, 5)
        assert _wait_for(lambda: ctl.metrics.over_budget.labels("certification")._value.get() == 2.0, 5)
        time.sleep(BUDGET * 2)
        assert certification_workers() == 2
        release.set()
        assert _wait_for(lambda: {"a/slow1", "b/slow2"} <= set(done), 5)
        # the superseded worker left, the other stayed: one worker again, and it still works
        assert _wait_for(lambda: certification_workers() == 1, 5)
        ctl.queues["certification"].add(("c", "after"))
        assert _wait_for(lambda: "c/after" in done, 5)
    finally:
        release.set()
        ctl.stop()
