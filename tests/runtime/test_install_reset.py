"""setup reset's CRD teardown: waiting out a cold watch cache and re-queueing a stalled cleanup."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nvcre.runtime.kube.client import ObjectList
from nvcre.runtime.kube.errors import ApiError, NotFound
from nvcre.runtime.ops import install

STALLED = {
    "type": "Terminating",
    "status": "True",
    "reason": "InstanceDeletionFailed",
    "message": "could not list instances: storage is (re)initializing",
}


class StalledCleanupKube:
    """A CRD whose server-side cleanup failed once and finishes only after the CRD is touched;
    its kind's list answers 429 twice before the watch cache is ready."""

    def __init__(self) -> None:
        self.patches: list[Mapping[str, Any]] = []
        self.deleted: list[str] = []
        self.list_calls = 0
        self.gone = False

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.gone:
            raise NotFound(404, "NotFound", name)
        return {"metadata": {"name": name}, "status": {"conditions": [STALLED]}}

    def merge_patch(self, resource: Any, name: str, namespace: str | None, patch: Mapping[str, Any]) -> dict[str, Any]:
        self.patches.append(patch)
        self.gone = True
        return {}

    def list(self, resource: Any, namespace: str | None = None, **_: Any) -> ObjectList:
        self.list_calls += 1
        if self.list_calls <= 2:
            raise ApiError(429, "TooManyRequests", "storage is (re)initializing")
        return ObjectList(items=({"metadata": {"name": "nccl", "namespace": "nvcre", "uid": "u1"}},), resource_version="1")

    def delete(self, resource: Any, name: str, namespace: str | None = None, **_: Any) -> bool:
        self.deleted.append(f"{namespace}/{name}")
        return True


CRD = {
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "logprofiles.nvcre.nvidia.com"},
    "spec": {
        "group": "nvcre.nvidia.com",
        "scope": "Namespaced",
        "names": {"plural": "logprofiles", "kind": "LogProfile"},
        "versions": [{"name": "v1alpha1", "storage": True}],
    },
}


def test_instances_are_deleted_once_the_watch_cache_is_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install.time, "sleep", lambda _s: None)
    kube = StalledCleanupKube()
    install._empty_custom_resource(kube, CRD)  # type: ignore[arg-type]
    assert kube.list_calls == 3
    assert kube.deleted == ["nvcre/nccl"]


def test_a_stalled_crd_cleanup_is_requeued_by_touching_the_crd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install.time, "sleep", lambda _s: None)
    kube = StalledCleanupKube()
    install._wait_crds_gone(kube, ["logprofiles.nvcre.nvidia.com"])  # type: ignore[arg-type]
    assert len(kube.patches) == 1
    assert "nvcre.nvidia.com/cleanup-retry" in kube.patches[0]["metadata"]["annotations"]


def test_other_list_errors_are_not_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    class Refusing(StalledCleanupKube):
        def list(self, resource: Any, namespace: str | None = None, **_: Any) -> ObjectList:
            raise ApiError(403, "Forbidden", "no")

    with pytest.raises(ApiError):
        install._empty_custom_resource(Refusing(), CRD)  # type: ignore[arg-type]
