"""The Pod cache's node index: kept right through put, rebinding, removal and relist."""

from __future__ import annotations

from typing import Any

import pytest

from nvcre.runtime.kube.informers import Store, pod_node


def _pod(namespace: str, name: str, node: str | None) -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


def _names(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods)


def test_pods_are_found_by_node_across_namespaces_and_follow_their_binding():
    store = Store(indexers={"node": pod_node})
    store.put(_pod("a", "p1", "n1"))
    store.put(_pod("b", "p2", "n1"))
    store.put(_pod("a", "p3", None))
    assert _names(store.by_index("node", "n1")) == ["a/p1", "b/p2"]
    store.put(_pod("a", "p3", "n2"))  # bound later
    store.put(_pod("b", "p2", "n2"))  # the same key, now elsewhere (not a real pod move, but the index must follow)
    assert _names(store.by_index("node", "n1")) == ["a/p1"]
    assert _names(store.by_index("node", "n2")) == ["a/p3", "b/p2"]
    store.remove(_pod("a", "p1", "n1"))
    assert store.by_index("node", "n1") == []
    store.replace([_pod("c", "p9", "n1")])
    assert _names(store.by_index("node", "n1")) == ["c/p9"]
    assert store.by_index("node", "n2") == []


def test_an_unknown_index_is_an_error_not_an_empty_answer():
    with pytest.raises(KeyError):
        Store().by_index("node", "n1")
