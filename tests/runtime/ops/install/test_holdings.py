"""What a namespace or a CRD holds that nvcrectl did not create, before ``setup reset`` deletes it.

Over a small in-memory API server: our objects carry the install label, Kubernetes' own objects
and our Deployment's ReplicaSets and Pods do not count, anything else keeps the namespace, and a
kind that cannot be listed counts as holding something.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nvcre.runtime.kube.client import ObjectList
from nvcre.runtime.kube.errors import ApiError, NotFound
from nvcre.runtime.kube.resources import Resource
from nvcre.runtime.ops.install import holdings
from nvcre.runtime.ops.install import lifecycle as ops

LABEL = ("app.kubernetes.io/managed-by", "nvcrectl")


def ours(obj: Mapping[str, Any]) -> bool:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(LABEL[0]) == LABEL[1]


class Cluster:
    """Objects by plural; ``refused`` plurals answer 403 to a list."""

    def __init__(self) -> None:
        self.items: dict[str, list[dict[str, Any]]] = {}
        self.refused: set[str] = set()

    def add(self, plural: str, name: str, namespace: str | None = "nvcre", **meta: Any) -> dict[str, Any]:
        obj: dict[str, Any] = {"metadata": {"name": name, "uid": f"uid-{plural}-{name}", **meta}}
        if namespace:
            obj["metadata"]["namespace"] = namespace
        self.items.setdefault(plural, []).append(obj)
        return obj

    def list(self, resource: Resource, namespace: str | None = None, **_: Any) -> ObjectList:
        if resource.plural in self.refused:
            raise ApiError(403, "Forbidden", f"cannot list {resource.plural}")
        found = [o for o in self.items.get(resource.plural, []) if namespace is None or o["metadata"].get("namespace") == namespace]
        return ObjectList(items=tuple(copy.deepcopy(found)), resource_version="1")

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        for obj in self.items.get(resource.plural, []):
            if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace:
                return copy.deepcopy(obj)
        raise NotFound(404, "NotFound", name)

    def resource_for(self, api_version: str, kind: str) -> Resource:
        return {"Namespace": Resource("", "v1", "namespaces", "Namespace", namespaced=False)}[kind]


def _install(cluster: Cluster) -> None:
    labels = {LABEL[0]: LABEL[1]}
    deployment = cluster.add("deployments", "nvcre-controller", labels=labels)
    replicas = cluster.add("replicasets", "nvcre-controller-5d", ownerReferences=[{"uid": deployment["metadata"]["uid"]}])
    cluster.add("pods", "nvcre-controller-5d-x", ownerReferences=[{"uid": replicas["metadata"]["uid"]}])
    cluster.add("serviceaccounts", "nvcre-manager", labels=labels)
    cluster.add("serviceaccounts", "default")
    cluster.add("configmaps", "kube-root-ca.crt")
    token = cluster.add("secrets", "nvcre-manager-token", annotations={"kubernetes.io/service-account.name": "nvcre-manager"})
    token["type"] = "kubernetes.io/service-account-token"


def test_a_namespace_holding_only_the_install_and_what_kubernetes_made_may_go() -> None:
    cluster = Cluster()
    _install(cluster)
    cluster.add("configmaps", "elsewhere", namespace="other")
    assert holdings.foreign_in_namespace(cluster, "nvcre", ours) == []  # type: ignore[arg-type]


def test_every_object_nvcrectl_did_not_make_is_named() -> None:
    cluster = Cluster()
    _install(cluster)
    cluster.add("configmaps", "user-config")
    app = cluster.add("deployments", "user-app")
    cluster.add("replicasets", "user-app-7c", ownerReferences=[{"uid": app["metadata"]["uid"]}])
    token = cluster.add("secrets", "theirs-token", annotations={"kubernetes.io/service-account.name": "theirs"})
    token["type"] = "kubernetes.io/service-account-token"
    cluster.add("configmaps", "leaving", deletionTimestamp="2026-01-01T00:00:00Z")
    found = holdings.foreign_in_namespace(cluster, "nvcre", ours)  # type: ignore[arg-type]
    assert sorted(found) == [
        "ConfigMap nvcre/user-config",
        "Deployment nvcre/user-app",
        "ReplicaSet nvcre/user-app-7c",
        "Secret nvcre/theirs-token",
    ]


def test_a_custom_resource_of_any_crd_counts() -> None:
    cluster = Cluster()
    spec = {"group": "example.com", "names": {"plural": "widgets", "kind": "Widget"}, "scope": "Namespaced", "versions": [{"name": "v1"}]}
    cluster.items["customresourcedefinitions"] = [{"metadata": {"name": "widgets.example.com"}, "spec": spec}]
    cluster.add("widgets", "w1")
    assert holdings.foreign_in_namespace(cluster, "nvcre", ours) == ["Widget nvcre/w1"]  # type: ignore[arg-type]


def test_a_kind_that_cannot_be_listed_keeps_the_namespace() -> None:
    cluster = Cluster()
    cluster.refused.add("secrets")
    assert holdings.foreign_in_namespace(cluster, "nvcre", ours) == ["Secret objects (could not be listed)"]  # type: ignore[arg-type]


def test_reset_keeps_the_install_namespace_a_user_put_objects_in() -> None:
    """``setup init`` created the namespace; a user's object added later keeps it on reset."""
    cluster = Cluster()
    cluster.add("namespaces", "nvcre", namespace=None, labels={LABEL[0]: LABEL[1]})
    _install(cluster)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nvcre", "labels": {LABEL[0]: LABEL[1]}}}
    assert ops._namespaces_in_use(cluster, [namespace]) == {}  # type: ignore[arg-type]
    cluster.add("configmaps", "user-config")
    assert ops._namespaces_in_use(cluster, [namespace]) == {"nvcre": ["ConfigMap nvcre/user-config"]}  # type: ignore[arg-type]


def test_summary_names_five_then_counts() -> None:
    assert holdings.summary(f"n{i}" for i in range(7)) == "n0, n1, n2, n3, n4 and 2 more"
