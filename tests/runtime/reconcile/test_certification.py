"""The Certification tier offline: unknown categories, and waiting for nodes within the window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nvcre.compiler.vocabulary import CERTIFICATION_FINALIZER
from nvcre.runtime.clock import Clock, format_time
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import CERTIFICATIONS
from nvcre.runtime.reconcile.certification import CertificationReconciler
from nvcre.runtime.reconcile.context import Context, Settings
from nvcre.testing.fakekube import MemoryKube

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class FixedClock(Clock):
    def now(self) -> datetime:
        return NOW


def cert(categories: list[dict[str, str]], age: timedelta) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "uid": "u-1",
            "finalizers": [CERTIFICATION_FINALIZER],
            "creationTimestamp": format_time(NOW - age),
        },
        "spec": {"target": {"nodeSelector": {"pool": "gpu"}}, "categories": categories},
    }


def reconcile(obj: dict[str, Any]) -> tuple[MemoryKube, Any]:
    """The Certification alone on the server; returns the server and the reconcile's result."""
    kube = MemoryKube()
    kube.put(obj)
    ctx = Context(kube=kube, stores={"nodes": Store(), "resourceslices": Store()}, clock=FixedClock(), settings=Settings())
    result = CertificationReconciler(ctx).reconcile("ns", "c")
    return kube, result


def _status(kube: MemoryKube) -> dict[str, Any]:
    return kube.get(CERTIFICATIONS, "c", "ns")["status"]


def _created(kube: MemoryKube) -> list[str]:
    return [str(call) for call in kube.calls if call.verb == "create" and call.resource != "events"]


def test_an_unknown_category_fails_the_certification_at_once():
    kube, _ = reconcile(cert([{"domain": "communication", "variant": "nccl-all-reduce"}, {"domain": "nope", "variant": "x"}], timedelta(0)))
    status = _status(kube)
    found = cond.condition(status, cond.FAILED)
    assert (found["status"], found["reason"], found["message"]) == ("True", "CategoryNotFound", "Unknown certification category: nope/x")
    assert [c["status"] for c in status["categoryStatuses"]] == ["Pending", "Failed"]
    assert [(e.type, e.reason) for e in kube.events] == [("Warning", "CategoryNotFound")]
    assert _created(kube) == []


def test_no_matching_node_waits_inside_the_discovery_window():
    kube, result = reconcile(cert([{"domain": "communication", "variant": "nccl-all-reduce"}], timedelta(seconds=60)))
    found = cond.condition(_status(kube), cond.IN_PROGRESS)
    assert found["reason"] == "WaitingForNodes"
    assert found["message"] == (
        "No schedulable nodes match pool=gpu; retrying for up to 240s more. Nodes that are cordoned or unschedulable do not count."
    )
    assert result.requeue_after == 15.0
    assert _created(kube) == [] and "categoryStatuses" not in _status(kube)
