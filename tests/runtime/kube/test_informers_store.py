"""The informer store: namespace and label indexes stay right through put, relabel, remove, relist."""

from __future__ import annotations

from nvcre.runtime.kube.informers import Store

LABEL = "nvcre.nvidia.com/job"


def obj(ns: str, name: str, rv: str = "1", job: str | None = None) -> dict:
    labels = {LABEL: job} if job else {}
    return {"metadata": {"namespace": ns, "name": name, "resourceVersion": rv, "labels": labels}}


def names(items) -> list[str]:
    return sorted(i["metadata"]["name"] for i in items)


def test_label_index_follows_relabels_and_removals():
    store = Store((LABEL,))
    store.put(obj("a", "p1", job="j1"))
    store.put(obj("a", "p2", job="j1"))
    store.put(obj("b", "p3", job="j1"))
    assert names(store.by_label("a", LABEL, "j1")) == ["p1", "p2"]
    store.put(obj("a", "p2", rv="2", job="j2"))
    assert names(store.by_label("a", LABEL, "j1")) == ["p1"]
    assert names(store.by_label("a", LABEL, "j2")) == ["p2"]
    store.remove(obj("a", "p1"))
    assert store.by_label("a", LABEL, "j1") == []
    assert names(store.list("a")) == ["p2"]
    assert names(store.list()) == ["p2", "p3"]


def test_relist_reports_the_difference_and_rebuilds_the_indexes():
    store = Store((LABEL,))
    store.replace([obj("a", "kept", job="j"), obj("a", "gone", job="j"), obj("a", "changed", job="j")])
    events, size = store.replace([obj("a", "kept", job="j"), obj("a", "changed", rv="2", job="k"), obj("a", "new", job="j")])
    assert size == 3
    assert sorted((t, o["metadata"]["name"]) for t, o, _ in events) == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "changed")]
    assert names(store.by_label("a", LABEL, "j")) == ["kept", "new"]
    assert names(store.by_label("a", LABEL, "k")) == ["changed"]


def test_an_unindexed_label_falls_back_to_a_scan():
    store = Store()
    store.put(obj("a", "p", job="j"))
    assert names(store.by_label("a", LABEL, "j")) == ["p"]
    assert store.by_label("b", LABEL, "j") == []
