"""Lease renewal costs one request while held; a foreign write sends the holder back to reading."""

from __future__ import annotations

import copy
from typing import Any

from nvcre.runtime.kube.errors import Conflict, NotFound
from nvcre.runtime.kube.lease import LeaderElector


class _LeaseServer:
    """One Lease with resourceVersion checks, and a log of the calls made."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.calls: list[str] = []
        self.rv = 0

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        stored = copy.deepcopy(body)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        stored.update(apiVersion="coordination.k8s.io/v1", kind="Lease")
        self.lease = stored
        return copy.deepcopy(stored)

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append("get")
        if self.lease is None:
            raise NotFound(404, "NotFound", "no lease")
        return copy.deepcopy(self.lease)

    def create(self, obj: dict[str, Any], resource: Any = None) -> dict[str, Any]:
        self.calls.append("create")
        return self._store(obj)

    def replace(self, resource: Any, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append("replace")
        if self.lease is None or obj["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict", "the object has been modified")
        return self._store(obj)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _elector(server: _LeaseServer, identity: str, clock: _Clock) -> LeaderElector:
    return LeaderElector(server, name="l", namespace="ns", identity=identity, clock=clock)  # type: ignore[arg-type]


def test_a_holder_renews_with_a_single_put():
    server, clock = _LeaseServer(), _Clock()
    elector = _elector(server, "a", clock)
    assert elector.try_acquire_or_renew() is True
    assert server.calls == ["get", "create"]
    server.calls.clear()
    for _ in range(5):
        clock.now += 2.0
        assert elector.try_acquire_or_renew() is True
    assert server.calls == ["replace"] * 5
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] == "a"


def test_after_a_foreign_write_the_holder_reads_again_and_yields_to_a_live_holder():
    server, clock = _LeaseServer(), _Clock()
    first, second = _elector(server, "a", clock), _elector(server, "b", clock)
    assert first.try_acquire_or_renew() is True
    # "b" takes the Lease over (as after "a" stalled past the lease duration)
    assert server.lease is not None
    taken = copy.deepcopy(server.lease)
    taken["spec"]["holderIdentity"] = "b"
    server._store(taken)
    server.calls.clear()
    assert first.try_acquire_or_renew() is False
    assert server.calls == ["replace", "get"]
    assert server.lease["spec"]["holderIdentity"] == "b"
    server.calls.clear()
    assert first.try_acquire_or_renew() is False
    assert server.calls == ["get"], "a replica that lost the Lease polls it, it does not write blindly"
    assert second.try_acquire_or_renew() is True


def test_two_processes_on_one_host_never_share_a_leader_identity(monkeypatch) -> None:
    """Containers on a host's network share its host name and each runs as pid 1: the identity still differs."""
    from nvcre.runtime import controller

    monkeypatch.setattr(controller.socket, "gethostname", lambda: "vm-1")
    monkeypatch.setattr(controller.os, "getpid", lambda: 1)
    first, second = controller.ControllerConfig().identity, controller.ControllerConfig().identity
    assert first != second
    assert first.startswith("vm-1-1-") and second.startswith("vm-1-1-")
