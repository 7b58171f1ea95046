"""The in-memory API server: versions, conflicts, status writes, deletes, Events, calls and reactors."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.kube.errors import AlreadyExists, ApiError, ApiNotServed, Conflict, NotFound
from nvcre.runtime.kube.resources import CONFIGMAPS, JOBS, LEASES, PODS, Resource
from nvcre.testing.fakeclock import FakeClock
from nvcre.testing.fakekube import PASS, Call, ForbiddenCall, MemoryKube, RecordedEvent


def _job(name: str = "j", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": name, "namespace": "ns"}, **extra}


def test_a_create_gets_a_version_a_uid_and_a_second_create_of_the_name_is_refused() -> None:
    kube = MemoryKube()
    made = kube.create(_job(spec={"a": 1}))
    assert made["metadata"]["resourceVersion"] and made["metadata"]["uid"] and made["metadata"]["generation"] == 1
    assert kube.get(JOBS, "j", "ns") == made
    with pytest.raises(AlreadyExists):
        kube.create(_job())
    assert kube.verbs() == ["create jobs", "get jobs", "create jobs"]


def test_reads_of_a_missing_object_are_404_and_copies_never_share_state() -> None:
    kube = MemoryKube()
    with pytest.raises(NotFound):
        kube.get(JOBS, "nope", "ns")
    kube.create(_job(spec={"a": 1}))
    read = kube.get(JOBS, "j", "ns")
    read["spec"]["a"] = 2
    assert kube.get(JOBS, "j", "ns")["spec"] == {"a": 1}


def test_a_write_with_a_stale_version_conflicts() -> None:
    kube = MemoryKube()
    first = kube.create(_job(spec={"a": 1}))
    kube.merge_patch(JOBS, "j", "ns", {"spec": {"a": 2}})
    with pytest.raises(Conflict):
        kube.replace(JOBS, {**first, "spec": {"a": 3}})
    with pytest.raises(Conflict):
        kube.merge_patch(JOBS, "j", "ns", {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}, "spec": {"a": 4}})
    current = kube.get(JOBS, "j", "ns")
    assert current["spec"] == {"a": 2} and current["metadata"]["generation"] == 2
    replaced = kube.replace(JOBS, {**current, "spec": {"a": 5}})
    assert int(replaced["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])


def test_a_merge_patch_merges_maps_replaces_lists_and_removes_nulls() -> None:
    kube = MemoryKube()
    kube.create(_job(metadata={"name": "j", "namespace": "ns", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]}))
    patched = kube.merge_patch(JOBS, "j", "ns", {"metadata": {"labels": {"b": None, "c": "3"}, "finalizers": ["z"]}})
    assert patched["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert patched["metadata"]["finalizers"] == ["z"]


def test_status_writes_conflict_on_a_stale_copy_and_are_redone_over_the_live_object() -> None:
    kube = MemoryKube()
    stale = kube.create(_job())
    kube.edit(JOBS, "j", "ns", lambda live: live["metadata"].setdefault("labels", {}).update(team="a"))
    seen: list[str] = []

    def mutate(status: dict[str, Any], obj: Any) -> dict[str, Any]:
        seen.append(obj["metadata"]["resourceVersion"])
        return {**status, "phase": "Running"}

    written = kube.write_status(JOBS, stale, mutate)
    assert written is not None and written["status"] == {"phase": "Running"}
    assert written["metadata"]["labels"] == {"team": "a"}
    assert len(seen) == 2 and seen[0] != seen[1]
    assert kube.verbs() == ["create jobs", "update jobs/status", "get jobs", "update jobs/status"]
    assert kube.write_status(JOBS, written, lambda status, obj: dict(status)) is None  # unchanged: nothing sent
    assert kube.count("update", "jobs/status") == 2


def test_main_resource_writes_leave_the_status_alone() -> None:
    kube = MemoryKube()
    made = kube.create(_job())
    written = kube.write_status(JOBS, made, lambda status, obj: {"phase": "Running"})
    assert written is not None
    replaced = kube.replace(JOBS, {**written, "status": {"phase": "Forged"}})
    assert replaced["status"] == {"phase": "Running"}


def test_a_delete_with_finalizers_marks_and_the_last_finalizer_removes() -> None:
    kube = MemoryKube()
    kube.create(_job(metadata={"name": "j", "namespace": "ns", "finalizers": ["f"]}))
    assert kube.delete(JOBS, "j", "ns") is True
    marked = kube.get(JOBS, "j", "ns")
    assert marked["metadata"]["deletionTimestamp"]
    kube.merge_patch(JOBS, "j", "ns", {"metadata": {"finalizers": None}})
    assert kube.find(JOBS, "j", "ns") is None
    assert kube.delete(JOBS, "j", "ns") is False


def test_a_delete_with_another_uid_spares_the_newer_object() -> None:
    kube = MemoryKube()
    kube.create(_job())
    assert kube.delete(JOBS, "j", "ns", uid="an-older-uid") is False
    assert kube.find(JOBS, "j", "ns") is not None


def test_lists_select_by_namespace_labels_and_fields() -> None:
    kube = MemoryKube()
    for name, namespace, labels, node in (("a", "x", {"app": "1"}, "n1"), ("b", "x", {"app": "2"}, "n2"), ("c", "y", {}, "n1")):
        kube.put(
            {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {"nodeName": node},
            }
        )
    names = lambda listing: [o["metadata"]["name"] for o in listing.items]  # noqa: E731
    assert names(kube.list(PODS)) == ["a", "b", "c"]
    assert names(kube.list(PODS, "x")) == ["a", "b"]
    assert names(kube.list(PODS, label_selector="app=1")) == ["a"]
    assert names(kube.list(PODS, label_selector="app,app!=1")) == ["b"]
    assert names(kube.list(PODS, label_selector="!app")) == ["c"]
    assert names(kube.list(PODS, field_selector="spec.nodeName=n1")) == ["a", "c"]
    assert kube.list(PODS).items[0]["kind"] == "Pod"


def test_a_watch_replays_the_changes_after_its_version() -> None:
    kube = MemoryKube()
    start = kube.list(CONFIGMAPS, "ns").resource_version
    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"k": "1"}})
    kube.merge_patch(CONFIGMAPS, "c", "ns", {"data": {"k": "2"}})
    kube.delete(CONFIGMAPS, "c", "ns")
    events = list(kube.watch(CONFIGMAPS, "ns", resource_version=start))
    assert [(e.type, e.object.get("data")) for e in events] == [("ADDED", {"k": "1"}), ("MODIFIED", {"k": "2"}), ("DELETED", {"k": "2"})]
    assert list(kube.watch(CONFIGMAPS, "other", resource_version=start)) == []


def test_a_stored_crd_is_established_and_its_kind_served_until_it_goes() -> None:
    kube = MemoryKube(open_discovery=False)
    crds = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False)
    with pytest.raises(ApiNotServed):
        kube.resource_for("example.com/v1", "Widget")
    spec = {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}, "versions": [{"name": "v1"}]}
    made = kube.create(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": spec,
        },
        crds,
    )
    assert {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"} in made["status"]["conditions"]
    assert kube.resource_for("example.com/v1", "Widget").plural == "widgets"
    kube.delete(crds, "widgets.example.com")
    with pytest.raises(ApiNotServed):
        kube.resource_for("example.com/v1", "Widget")


def test_unserved_groups_and_open_discovery() -> None:
    kube = MemoryKube(unserved_groups={"monitoring.coreos.com"})
    with pytest.raises(ApiNotServed):
        kube.resource_for("monitoring.coreos.com/v1", "ServiceMonitor")
    assert kube.resource_for("networking.k8s.io/v1", "NetworkPolicy").plural == "networkpolicies"
    assert kube.resource_for("networking.k8s.io/v1", "Ingress").plural == "ingresses"
    assert kube.resource_for("rbac.authorization.k8s.io/v1", "ClusterRole").namespaced is False


def test_access_reviews_are_answered_not_stored() -> None:
    kube = MemoryKube()
    kube.denied.add("pods")
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"resource": "pods"}},
    }
    assert kube.create(review)["status"] == {"allowed": False}
    kube.denied.clear()
    assert kube.create(review)["status"] == {"allowed": True}
    assert kube.objects_of(kube.resource_for("authorization.k8s.io/v1", "SelfSubjectAccessReview")) == []


def test_pod_logs_follow_since_tail_limit_and_timestamps() -> None:
    kube = MemoryKube()
    kube.set_log("ns", "p", "2026-01-01T00:00:01.5Z one\n2026-01-01T00:00:02.5Z two\n2026-01-01T00:00:03.5Z three\n", container="node")
    assert kube.pod_log("p", "ns", container="node", timestamps=False) == "one\ntwo\nthree\n"
    assert kube.pod_log("p", "ns", container="node", timestamps=True, since_time="2026-01-01T00:00:02Z").count("\n") == 2
    assert kube.pod_log("p", "ns", container="node", tail_lines=1) == "three\n"
    assert kube.pod_log("p", "ns", container="node", limit_bytes=3) == "one"
    with pytest.raises(NotFound):
        kube.pod_log("missing", "ns")
    (call,) = [c for c in kube.calls if c.options.get("since_time")]
    assert str(call) == "get pods/log" and call.name == "p"


def test_events_and_request_counts_are_recorded() -> None:
    kube = MemoryKube()
    kube.emit_event(_job(), type="Warning", reason="WorkloadFailed", message="died", component="nvcre-controller")
    assert kube.events == [RecordedEvent("Warning", "WorkloadFailed", "died", "Job", "ns", "j", "nvcre-controller")]
    assert kube.requests.snapshot() == {("create", "events"): 1}


def test_a_refused_event_is_dropped_as_the_real_client_drops_it() -> None:
    kube = MemoryKube()
    kube.react("create", "events", lambda call: (_ for _ in ()).throw(ApiError(500, "InternalError", "down")))
    kube.emit_event(_job(), type="Normal", reason="R", message="m", component="c")
    assert kube.events == []


def test_reactors_answer_first_latest_first_and_only_as_often_as_asked() -> None:
    kube = MemoryKube()
    kube.create(_job())
    seen: list[Call] = []

    def busy(call: Call) -> Any:
        raise ApiError(429, "TooManyRequests", "storage is (re)initializing")

    kube.react("list", "jobs", busy, times=2)
    kube.react("list", "*", lambda call: seen.append(call) or PASS)
    for _ in range(2):
        with pytest.raises(ApiError):
            kube.list(JOBS, "ns")
    assert [o["metadata"]["name"] for o in kube.list(JOBS, "ns").items] == ["j"]
    assert len(seen) == 3


def test_a_forbidden_fake_fails_every_call() -> None:
    kube = MemoryKube()
    kube.forbid("the handlers must not call the API")
    with pytest.raises(ForbiddenCall, match="get leases"):
        kube.get(LEASES, "l", "ns")
    with pytest.raises(ForbiddenCall):
        kube.emit_event(_job(), type="Normal", reason="R", message="m", component="c")
    with pytest.raises(ForbiddenCall):
        kube.resource_for("v1", "Pod")
    assert kube.calls == []


def test_someone_elses_writes_are_not_calls_but_move_the_version() -> None:
    kube = MemoryKube()
    kept = kube.put(_job(metadata={"name": "j", "namespace": "ns", "resourceVersion": "100"}))
    assert kept["metadata"]["resourceVersion"] == "100"
    edited = kube.edit(JOBS, "j", "ns", lambda live: live.setdefault("spec", {}).update(x=1))
    assert int(edited["metadata"]["resourceVersion"]) > 100
    assert kube.create(_job("k"))["metadata"]["resourceVersion"] > edited["metadata"]["resourceVersion"]
    kube.remove(JOBS, "j", "ns")
    assert kube.find(JOBS, "j", "ns") is None
    assert kube.verbs() == ["create jobs"]


def test_the_fake_clock_moves_only_forward_and_only_by_hand() -> None:
    clock = FakeClock()
    assert clock() == 100.0
    assert clock.advance(2.5) == 102.5 and clock() == 102.5
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_a_status_write_refused_with_409_each_time_gives_up_as_the_real_client_does() -> None:
    kube = MemoryKube()
    made = kube.create(_job())

    def modified(call: Call) -> Any:
        raise Conflict(409, "Conflict", "the object has been modified")

    stop = kube.react("update", "jobs/status", modified)
    with pytest.raises(Conflict, match="kept changing"):
        kube.write_status(JOBS, made, lambda status, obj: {"phase": "Running"})
    assert kube.count("update", "jobs/status") == 8 and kube.count("get", "jobs") == 8
    stop()
    assert kube.write_status(JOBS, made, lambda status, obj: {"phase": "Running"}) is not None


def test_the_call_log_keeps_each_body_as_it_was_sent() -> None:
    kube = MemoryKube()
    body = _job(spec={"a": 1})
    kube.create(body)
    body["spec"]["a"] = 2
    (call,) = kube.calls
    assert call.options["body"]["spec"] == {"a": 1} and (call.verb, call.resource, call.namespace, call.name) == (
        "create",
        "jobs",
        "ns",
        "j",
    )


def test_a_reactor_can_race_a_create_with_someone_elses() -> None:
    kube = MemoryKube()

    def someone_else_first(call: Call) -> Any:
        kube.put({**call.options["body"], "metadata": {**call.options["body"]["metadata"], "labels": {"by": "them"}}})
        return PASS

    kube.react("create", "jobs", someone_else_first, times=1)
    with pytest.raises(AlreadyExists):
        kube.create(_job())
    assert kube.get(JOBS, "j", "ns")["metadata"]["labels"] == {"by": "them"}
    assert kube.create(_job("k"))["metadata"]["name"] == "k"  # the reactor ran its one time
