"""The Certification tier offline: unknown categories, and waiting for nodes within the window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from nvcre.runtime.clock import Clock, format_time
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.reconcile import conditions as cond
from nvcre.runtime.reconcile.certification import FINALIZER, CertificationReconciler
from nvcre.runtime.reconcile.context import Context, Settings

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


class FixedClock(Clock):
    def now(self) -> datetime:
        return NOW


class OneObjectKube:
    """The client seam over a single Certification; nothing else exists."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.events: list[tuple[str, str]] = []
        self.created: list[dict[str, Any]] = []

    def get(self, resource, name, namespace=None):
        if resource.kind == "Certification" and name == self.obj["metadata"]["name"]:
            return self.obj
        raise NotFound(404, "NotFound", name)

    def write_status(self, resource, obj, mutate):
        new = mutate(dict(self.obj.get("status") or {}), self.obj)
        if new is None:
            return None
        self.obj = {**self.obj, "status": new}
        return self.obj

    def emit_event(self, involved, *, type, reason, message, component):
        self.events.append((type, reason))

    def create(self, obj, resource=None):
        self.created.append(obj)
        return obj


def cert(categories: list[dict[str, str]], age: timedelta) -> dict[str, Any]:
    return {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "uid": "u-1",
            "finalizers": [FINALIZER],
            "creationTimestamp": format_time(NOW - age),
        },
        "spec": {"target": {"nodeSelector": {"pool": "gpu"}}, "categories": categories},
    }


def reconcile(obj: dict[str, Any]) -> tuple[OneObjectKube, Any]:
    kube = OneObjectKube(obj)
    ctx = Context(kube=kube, stores={"nodes": Store(), "resourceslices": Store()}, clock=FixedClock(), settings=Settings())  # type: ignore[arg-type]
    result = CertificationReconciler(ctx).reconcile("ns", "c")
    return kube, result


def test_an_unknown_category_fails_the_certification_at_once():
    kube, _ = reconcile(cert([{"domain": "communication", "variant": "nccl-all-reduce"}, {"domain": "nope", "variant": "x"}], timedelta(0)))
    status = kube.obj["status"]
    found = cond.condition(status, cond.FAILED)
    assert (found["status"], found["reason"], found["message"]) == ("True", "CategoryNotFound", "Unknown certification category: nope/x")
    assert [c["status"] for c in status["categoryStatuses"]] == ["Pending", "Failed"]
    assert kube.events == [("Warning", "CategoryNotFound")]
    assert kube.created == []


def test_no_matching_node_waits_inside_the_discovery_window():
    kube, result = reconcile(cert([{"domain": "communication", "variant": "nccl-all-reduce"}], timedelta(seconds=60)))
    found = cond.condition(kube.obj["status"], cond.IN_PROGRESS)
    assert found["reason"] == "WaitingForNodes"
    assert found["message"] == (
        "No schedulable nodes match pool=gpu; retrying for up to 240s more. Nodes that are cordoned or unschedulable do not count."
    )
    assert result.requeue_after == 15.0
    assert kube.created == [] and "categoryStatuses" not in kube.obj["status"]
