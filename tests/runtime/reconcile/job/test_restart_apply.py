"""The Job tier applies each restart step as decided: what it deletes, forgets and waits for.

Offline: the restart part is handed a context of small recording stand-ins and reads that have
no GoodputMeasurement (so nothing is carried forward), and each case checks the calls it made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from nvcre.runtime.clock import format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.judge import restart as restarts
from nvcre.runtime.reconcile.context import Result
from nvcre.runtime.reconcile.job.restart import Restarts

NOW = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(seconds=30)


@dataclass
class Calls:
    made: list[str] = field(default_factory=list)


class Pods:
    def __init__(self, count: int) -> None:
        self.count = count

    def by_label(self, namespace: str, key: str, value: str) -> list[dict[str, Any]]:
        return [{"metadata": {"name": f"p{i}"}} for i in range(self.count)]


def context(calls: Calls, trainjob: dict[str, Any] | None, pods: int) -> Any:
    kube = SimpleNamespace(delete=lambda res, name, ns, **kw: calls.made.append(f"delete {name} {kw}"))
    recent = SimpleNamespace(forget=lambda plural, name, ns: calls.made.append(f"forget {name}"))
    return SimpleNamespace(
        kube=kube,
        recent=recent,
        live=lambda res, name, ns: trainjob,
        store=lambda res: Pods(pods),
        clock=SimpleNamespace(now=lambda: NOW),
        settings=SimpleNamespace(pod_drain_grace=300.0),
    )


class NoGoodput:
    def goodput(self, job: Any) -> None:
        return None


def restarting_job() -> dict[str, Any]:
    status = cond.set_lifecycle({"restartCount": 1}, cond.IN_PROGRESS, restarts.RESTARTING, "restart 1/2", format_time(SINCE))
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "job-uid"}, "status": status}


def trainjob(created: datetime, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "j-workload",
        "uid": "tj-uid",
        "creationTimestamp": format_time(created),
        "ownerReferences": [{"kind": "Job", "name": "j", "uid": "job-uid", "controller": True}],
    }
    if deleting:
        meta["deletionTimestamp"] = format_time(NOW)
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("found", "pods", "result", "made"),
    [
        (
            trainjob(SINCE - timedelta(minutes=5)),
            0,
            Result(1.0),
            ["forget j-workload", "delete j-workload {'uid': 'tj-uid', 'propagation': 'Foreground'}"],
        ),
        (trainjob(SINCE - timedelta(minutes=5), deleting=True), 0, Result(1.0), ["forget j-workload"]),
        (trainjob(SINCE + timedelta(seconds=1)), 0, None, []),  # created for this restart already
        (None, 2, Result(1.0), []),  # the old pods still drain
        (None, 0, None, []),
    ],
)
def test_each_step_is_applied(found: dict[str, Any] | None, pods: int, result: Result | None, made: list[str]) -> None:
    calls = Calls()
    part = Restarts(context(calls, found, pods), NoGoodput(), failure=SimpleNamespace())
    assert part.prepare(restarting_job()) == result
    assert calls.made == made


def test_a_job_that_is_not_restarting_is_left_alone() -> None:
    calls = Calls()
    part = Restarts(context(calls, trainjob(SINCE), 3), NoGoodput(), failure=SimpleNamespace())
    job = restarting_job()
    job["status"] = cond.set_lifecycle(job["status"], cond.IN_PROGRESS, "WorkloadCreated", "created", format_time(NOW))
    assert part.prepare(job) is None
    assert calls.made == []
