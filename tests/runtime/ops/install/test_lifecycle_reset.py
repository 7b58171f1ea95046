"""setup reset's CRD teardown: waiting out a cold watch cache and re-queueing a stalled cleanup."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.kube.errors import ApiError
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.ops.install import lifecycle
from nvcre.runtime.ops.install.deps import CRDS
from nvcre.runtime.ops.install.holdings import crd_resource
from nvcre.testing.fakekube import PASS, Call, MemoryKube

STALLED = {
    "type": "Terminating",
    "status": "True",
    "reason": "InstanceDeletionFailed",
    "message": "could not list instances: storage is (re)initializing",
}


CLEANUP = "customresourcecleanup.apiextensions.k8s.io"
CRD: dict[str, Any] = {
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "logprofiles.nvcre.nvidia.com"},
    "spec": {
        "group": "nvcre.nvidia.com",
        "scope": "Namespaced",
        "names": {"plural": "logprofiles", "kind": "LogProfile"},
        "versions": [{"name": "v1alpha1", "storage": True}],
    },
}


def _busy(call: Call) -> Any:
    raise ApiError(429, "TooManyRequests", "storage is (re)initializing")


def _with_instance() -> tuple[MemoryKube, Resource]:
    """One instance of the kind, whose list answers 429 twice before the watch cache is ready."""
    kube = MemoryKube()
    kind = crd_resource(CRD)
    kube.put({"apiVersion": kind.api_version, "kind": kind.kind, "metadata": {"name": "nccl", "namespace": "nvcre"}}, kind)
    kube.react("list", kind.plural, _busy, times=2)
    return kube, kind


def _stalled_crd() -> MemoryKube:
    """A CRD whose server-side cleanup failed once and finishes only after the CRD is touched."""
    kube = MemoryKube()
    terminating = {**CRD, "apiVersion": CRDS.api_version, "status": {"conditions": [STALLED]}}
    terminating["metadata"] = {**CRD["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": [CLEANUP]}
    kube.put(terminating, CRDS)

    def cleanup_done_once_touched(call: Call) -> Any:
        live = kube.find(CRDS, call.name)
        if live is not None and (live["metadata"].get("annotations") or {}):
            kube.remove(CRDS, call.name)
        return PASS

    kube.react("get", CRDS.plural, cleanup_done_once_touched)
    return kube


def test_instances_are_deleted_once_the_watch_cache_is_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle.time, "sleep", lambda _s: None)
    kube, kind = _with_instance()
    lifecycle._empty_custom_resource(kube, CRD)
    assert kube.count("list", kind.plural) == 3
    assert [f"{c.namespace}/{c.name}" for c in kube.calls if c.verb == "delete"] == ["nvcre/nccl"]
    assert kube.objects_of(kind) == []


def test_a_stalled_crd_cleanup_is_requeued_by_touching_the_crd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle.time, "sleep", lambda _s: None)
    kube = _stalled_crd()
    lifecycle._wait_crds_gone(kube, ["logprofiles.nvcre.nvidia.com"])
    patches = [call.options["body"] for call in kube.calls if call.verb == "patch"]
    assert len(patches) == 1
    assert "nvcre.nvidia.com/cleanup-retry" in patches[0]["metadata"]["annotations"]


def test_other_list_errors_are_not_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    kube, kind = _with_instance()

    def refused(call: Call) -> Any:
        raise ApiError(403, "Forbidden", "no")

    kube.react("list", kind.plural, refused)
    with pytest.raises(ApiError):
        lifecycle._empty_custom_resource(kube, CRD)
    assert kube.count("list", kind.plural) == 1
