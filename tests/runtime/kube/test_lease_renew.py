"""Lease renewal costs one request while held; a foreign write sends the holder back to reading."""

from __future__ import annotations

from typing import Any

from nvcre.runtime.kube.lease import LeaderElector
from nvcre.runtime.kube.resources import LEASES
from nvcre.testing.fakeclock import FakeClock
from nvcre.testing.fakekube import MemoryKube


def _lease(server: MemoryKube) -> dict[str, Any]:
    found = server.find(LEASES, "l", "ns")
    assert found is not None
    return found


def _elector(server: MemoryKube, identity: str, clock: FakeClock) -> LeaderElector:
    return LeaderElector(server, name="l", namespace="ns", identity=identity, clock=clock)


def test_a_holder_renews_with_a_single_put():
    server, clock = MemoryKube(), FakeClock(0.0)
    elector = _elector(server, "a", clock)
    assert elector.try_acquire_or_renew() is True
    assert server.verbs() == ["get leases", "create leases"]
    server.calls.clear()
    for _ in range(5):
        clock.advance(2.0)
        assert elector.try_acquire_or_renew() is True
    assert server.verbs() == ["update leases"] * 5
    assert _lease(server)["spec"]["holderIdentity"] == "a"


def test_after_a_foreign_write_the_holder_reads_again_and_yields_to_a_live_holder():
    server, clock = MemoryKube(), FakeClock(0.0)
    first, second = _elector(server, "a", clock), _elector(server, "b", clock)
    assert first.try_acquire_or_renew() is True
    # "b" takes the Lease over (as after "a" stalled past the lease duration)
    server.edit(LEASES, "l", "ns", lambda lease: lease["spec"].update(holderIdentity="b"))
    server.calls.clear()
    assert first.try_acquire_or_renew() is False
    assert server.verbs() == ["update leases", "get leases"]
    assert _lease(server)["spec"]["holderIdentity"] == "b"
    server.calls.clear()
    assert first.try_acquire_or_renew() is False
    assert server.verbs() == ["get leases"], "a replica that lost the Lease polls it, it does not write blindly"
    assert second.try_acquire_or_renew() is True


def test_two_processes_on_one_host_never_share_a_leader_identity(monkeypatch) -> None:
    """Containers on a host's network share its host name and each runs as pid 1: the identity still differs."""
    from nvcre.runtime import controller

    monkeypatch.setattr(controller.socket, "gethostname", lambda: "vm-1")
    monkeypatch.setattr(controller.os, "getpid", lambda: 1)
    first, second = controller.ControllerConfig().identity, controller.ControllerConfig().identity
    assert first != second
    assert first.startswith("vm-1-1-") and second.startswith("vm-1-1-")
