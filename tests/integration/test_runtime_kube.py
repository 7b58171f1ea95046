"""The client seam, informers and leader election against the real API server.

Informers must survive a compacted history (410 Gone: list again and report what changed in
between, deletions included) and a dropped connection (watch again from the last
resourceVersion, no relist). A second replica takes the Lease within seconds of the first
one dying, and at once when the first releases it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from nvcre.runtime.kube.client import ApiServerClient, WatchEvent
from nvcre.runtime.kube.errors import AlreadyExists, NotFound
from nvcre.runtime.kube.informers import Informer
from nvcre.runtime.kube.lease import LeaderElector
from nvcre.runtime.kube.resources import CONFIGMAPS, LEASES
from tests.integration.integration_helpers import eventually, unique

pytestmark = pytest.mark.integration


@pytest.fixture
def kube(controlplane):
    client = ApiServerClient.from_kubeconfig(str(controlplane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


def _configmap(namespace: str, name: str, value: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"v": value}}


class GoneStream:
    """What the API server streams when a watch asks for compacted history: one ERROR event."""

    def __init__(self, resource_version: str) -> None:
        self.status = {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": "Expired",
            "code": 410,
            "message": f"too old resource version: {resource_version}",
        }

    def __iter__(self):
        yield WatchEvent("ERROR", self.status)

    def close(self) -> None:
        return None


class Interfering:
    """Delegates to the real client; can answer the next watch with 410 Gone, or cut the open
    watch's connection.

    The server's watch cache keeps history far longer than a test runs, so the 410 is given
    exactly as the server words it rather than waited for.
    """

    def __init__(self, inner: ApiServerClient) -> None:
        self.inner = inner
        self.gone_next = False
        self.watches = 0
        self.streams: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def watch(self, resource, namespace=None, *, resource_version, timeout_seconds=300):
        self.watches += 1
        if self.gone_next:
            self.gone_next = False
            return GoneStream(resource_version)
        stream = self.inner.watch(resource, namespace, resource_version=resource_version, timeout_seconds=timeout_seconds)
        self.streams.append(stream)
        return stream

    def cut(self) -> None:
        """Drop the socket under the newest watch, as a network failure would."""
        self.streams[-1].sever()


def test_server_side_apply_status_write_and_uid_preconditioned_delete(kube, namespace):
    created = kube.apply(_configmap(namespace, "applied"))
    assert created["data"] == {"v": "1"}
    managers = [m["manager"] for m in created["metadata"]["managedFields"]]
    assert managers == ["nvcre-controller"]
    with pytest.raises(AlreadyExists):
        kube.create(_configmap(namespace, "applied"))
    assert kube.delete(CONFIGMAPS, "applied", namespace, uid="not-the-uid") is False
    assert kube.get(CONFIGMAPS, "applied", namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    assert kube.delete(CONFIGMAPS, "applied", namespace, uid=created["metadata"]["uid"]) is True
    with pytest.raises(NotFound):
        kube.get(CONFIGMAPS, "applied", namespace)


def test_informer_lists_again_after_410_and_reports_what_changed_meanwhile(kube, namespace):
    proxy = Interfering(kube)
    kube.create(_configmap(namespace, "kept"))
    kube.create(_configmap(namespace, "doomed"))
    informer = Informer(proxy, CONFIGMAPS, namespace, watch_timeout=30)  # type: ignore[arg-type]
    events: list[tuple[str, str]] = []
    informer.add_handler(lambda t, obj, old: events.append((t, obj["metadata"]["name"])))
    informer.start()
    try:
        assert informer.wait_synced(10)
        eventually(lambda: {"kept", "doomed"} <= {n for _, n in informer.store.keys()}, timeout=10, what="initial list")
        # The next watch is told its history is gone: the informer must list again.
        proxy.gone_next = True
        kube.delete(CONFIGMAPS, "doomed", namespace)
        proxy.cut()
        kube.create(_configmap(namespace, "born"))
        eventually(lambda: informer.relists >= 1, timeout=20, what="a relist after 410 Gone")
        eventually(
            lambda: {n for _, n in informer.store.keys()} >= {"kept", "born"} and "doomed" not in {n for _, n in informer.store.keys()},
            timeout=20,
            what="the store to match the server after the relist",
        )
        assert ("DELETED", "doomed") in events
        assert ("ADDED", "born") in events
    finally:
        informer.stop()


def test_informer_reconnects_after_a_dropped_connection_without_relisting(kube, namespace):
    proxy = Interfering(kube)
    informer = Informer(proxy, CONFIGMAPS, namespace, watch_timeout=30)  # type: ignore[arg-type]
    informer.start()
    try:
        assert informer.wait_synced(10)
        eventually(lambda: proxy.watches >= 1 and proxy.streams, timeout=10, what="the first watch")
        before = proxy.watches
        proxy.cut()
        kube.create(_configmap(namespace, "during-the-gap"))
        eventually(lambda: proxy.watches > before, timeout=15, what="the watch to be reopened")
        eventually(
            lambda: informer.store.get("during-the-gap", namespace) is not None,
            timeout=15,
            what="the object created across the reconnect",
        )
        kube.apply(_configmap(namespace, "during-the-gap", value="2"))
        eventually(
            lambda: (informer.store.get("during-the-gap", namespace) or {}).get("data") == {"v": "2"},
            timeout=15,
            what="a later change seen on the new watch",
        )
        assert informer.relists == 0
    finally:
        informer.stop()


def _elector(kube, namespace: str, identity: str, name: str) -> LeaderElector:
    return LeaderElector(kube, name=name, namespace=namespace, identity=identity, lease_duration=3.0, renew_deadline=2.0, retry_period=0.3)


def test_a_standby_takes_the_lease_within_seconds_when_the_leader_dies(kube, namespace):
    lease = unique("lease")
    first = _elector(kube, namespace, "first", lease)
    second = _elector(kube, namespace, "second", lease)
    assert first.try_acquire_or_renew() is True
    assert second.try_acquire_or_renew() is False, "a live holder keeps the lease"
    died = time.monotonic()  # "first" never renews again: it died without releasing
    stop = threading.Event()
    thread = threading.Thread(target=second.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert second.leading.wait(10), "the standby never took over"
        took = time.monotonic() - died
        assert 2.5 <= took < 6.0, f"takeover after {took:.1f}s (lease 3s)"
        holder = kube.get(LEASES, lease, namespace)["spec"]
        assert holder["holderIdentity"] == "second"
        assert holder["leaseTransitions"] == 1
        assert first.try_acquire_or_renew() is False, "the old leader cannot take it back while it is held"
    finally:
        stop.set()
        thread.join(5)


def test_a_released_lease_is_taken_at_the_next_poll(kube, namespace):
    lease = unique("lease")
    first = _elector(kube, namespace, "first", lease)
    second = _elector(kube, namespace, "second", lease)
    stop_first = threading.Event()
    runner = threading.Thread(target=first.run, args=(stop_first,), daemon=True)
    runner.start()
    assert first.leading.wait(5)
    assert second.try_acquire_or_renew() is False
    stop_first.set()
    runner.join(5)
    released = time.monotonic()
    eventually(second.try_acquire_or_renew, timeout=5, what="the released lease to be taken")
    assert time.monotonic() - released < 2.5


def test_a_standby_controller_starts_reconciling_when_the_leader_dies(kube, namespace):
    from nvcre.runtime.controller import Controller, ControllerConfig

    def config(identity: str) -> ControllerConfig:
        return ControllerConfig(
            namespace=namespace,
            metrics_address="0",
            health_address="0",
            lease_namespace=namespace,
            identity=identity,
            lease_duration=3.0,
            renew_deadline=2.0,
            retry_period=0.3,
            install_logprofiles=False,
        )

    first = Controller(kube, config("first")).start()
    second = Controller(kube, config("second")).start()
    try:
        assert first.leading.wait(15)
        time.sleep(1.0)
        assert not second.leading.is_set(), "two replicas must never reconcile at once"
        assert second.synced(), "the standby keeps warm caches"
        assert first._elector is not None
        first._elector.release = lambda: None  # die without giving the Lease back
        died = time.monotonic()
        first.stop()
        assert second.leading.wait(10), "the standby never took over"
        assert time.monotonic() - died < 6.0
        assert kube.get(LEASES, "nvcre-controller", namespace)["spec"]["holderIdentity"] == "second"
    finally:
        first.stop()
        second.stop()


def test_an_event_goes_through_the_events_api_and_reads_back_as_core_v1(kube, namespace):
    from nvcre.runtime.kube.resources import EVENTS, EVENTS_V1

    kube.apply(_configmap(namespace, "watched"))
    watched = kube.get(CONFIGMAPS, "watched", namespace)
    kube.emit_event(watched, type="Warning", reason="Probe", message="é" * 2000, component="nvcre-controller")
    # a cluster-scoped object with the longest name a Node may have: the Event lands in default
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n" * 253, "uid": unique("uid")}}
    kube.emit_event(node, type="Normal", reason="NodeProbe", message="hello", component="nvcre-controller")

    (written,) = [e for e in kube.list(EVENTS_V1, namespace).items if e.get("reason") == "Probe"]
    assert written["reportingController"] == "nvcre-controller" and written["action"] == "Reconcile"
    assert written["regarding"]["name"] == "watched" and written["type"] == "Warning"
    assert len(written["note"].encode("utf-8")) <= 1024 and written["note"].endswith("[truncated]")
    (legacy,) = [e for e in kube.list(EVENTS, namespace).items if e.get("reason") == "Probe"]
    assert legacy["involvedObject"]["uid"] == watched["metadata"]["uid"] and legacy["message"] == written["note"]
    assert [e["regarding"]["kind"] for e in kube.list(EVENTS_V1, "default").items if e.get("reason") == "NodeProbe"] == ["Node"]
