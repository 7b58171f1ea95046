"""What a namespace or a CRD holds that nvcrectl did not create: the check before reset deletes one.

Deleting a Namespace deletes everything in it, and deleting a CustomResourceDefinition deletes
every object of that kind in every namespace. ``setup reset`` deletes either only when all it
holds was made by nvcrectl:

* an object is nvcrectl's when ``ours`` says so (its install label), or when one of its
  ``ownerReferences`` leads to such an object (the ReplicaSets and Pods of our Deployment);
* what Kubernetes puts in every namespace by itself (the ``kube-root-ca.crt`` ConfigMap, the
  ``default`` ServiceAccount and the token Secrets of our ServiceAccounts) and objects already
  being deleted do not count; neither do Events and Leases, which record activity, not data;
* a kind that cannot be listed (other than "not served") counts as holding something: what
  cannot be seen is never deleted.

The namespaced kinds looked at are the built-in kinds that hold workloads, configuration and
access (:data:`BUILTIN_KINDS`) and every namespaced custom resource the cluster defines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...kube.client import Kube
from ...kube.errors import ApiError, ApiNotServed, NotFound
from ...kube.resources import Resource
from .deps import CRDS

__all__ = ["BUILTIN_KINDS", "crd_resource", "foreign_in_namespace", "foreign_instances", "summary"]

Ours = Callable[[Mapping[str, Any]], bool]


def _r(group: str, version: str, plural: str, kind: str) -> Resource:
    return Resource(group, version, plural, kind, namespaced=True)


#: the built-in namespaced kinds a namespace is searched for before it is deleted
BUILTIN_KINDS = (
    _r("", "v1", "configmaps", "ConfigMap"),
    _r("", "v1", "secrets", "Secret"),
    _r("", "v1", "serviceaccounts", "ServiceAccount"),
    _r("", "v1", "services", "Service"),
    _r("", "v1", "pods", "Pod"),
    _r("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    _r("apps", "v1", "deployments", "Deployment"),
    _r("apps", "v1", "statefulsets", "StatefulSet"),
    _r("apps", "v1", "daemonsets", "DaemonSet"),
    _r("apps", "v1", "replicasets", "ReplicaSet"),
    _r("batch", "v1", "jobs", "Job"),
    _r("batch", "v1", "cronjobs", "CronJob"),
    _r("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _r("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _r("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    _r("networking.k8s.io", "v1", "ingresses", "Ingress"),
    _r("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
)

_TOKEN_TYPE = "kubernetes.io/service-account-token"
_TOKEN_OWNER = "kubernetes.io/service-account.name"
_SHOWN = 5


def crd_resource(crd: Mapping[str, Any]) -> Resource:
    """The resource a CustomResourceDefinition serves, at its storage version."""
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or [{}]
    stored = next((v for v in versions if v.get("storage")), versions[0])
    names = spec.get("names") or {}
    return Resource(
        str(spec.get("group") or ""),
        str(stored.get("name") or "v1"),
        str(names.get("plural") or ""),
        str(names.get("kind") or ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
    )


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    found = obj.get("metadata")
    return found if isinstance(found, Mapping) else {}


def _describe(kind: str, obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{kind} {where}{meta.get('name')}"


def _made_by_kubernetes(kind: str, obj: Mapping[str, Any], our_accounts: set[str]) -> bool:
    meta = _meta(obj)
    name = str(meta.get("name") or "")
    if kind == "ConfigMap" and name == "kube-root-ca.crt":
        return True
    if kind == "ServiceAccount" and name == "default":
        return True
    if kind == "Secret" and obj.get("type") == _TOKEN_TYPE:
        owner = str((meta.get("annotations") or {}).get(_TOKEN_OWNER) or "")
        return owner == "default" or owner in our_accounts
    return False


def _namespaced_kinds(kube: Kube) -> tuple[list[Resource], list[str]]:
    """The built-in kinds plus every namespaced custom resource; and the kinds that could not be listed."""
    kinds = list(BUILTIN_KINDS)
    try:
        crds = kube.list(CRDS).items
    except ApiError as exc:
        return kinds, [f"custom resources (CustomResourceDefinitions could not be listed: {exc.message or exc})"]
    for crd in crds:
        resource = crd_resource(crd)
        if resource.namespaced and resource.plural and not _meta(crd).get("deletionTimestamp"):
            kinds.append(resource)
    return kinds, []


def _list(kube: Kube, resource: Resource, namespace: str | None) -> list[dict[str, Any]] | None:
    """Every object of ``resource`` (in ``namespace``), [] when the kind is not served, None when unreadable."""
    try:
        items = kube.list(resource, namespace).items
    except (NotFound, ApiNotServed):
        return []
    except ApiError:
        return None
    return [dict(o) for o in items if namespace is None or _meta(o).get("namespace") in (namespace, None)]


def _owned_closure(objects: Sequence[tuple[str, Mapping[str, Any]]], ours: Ours) -> set[str]:
    """UIDs of the objects that are ours, by label or through a chain of owner references."""
    uids = {str(_meta(o).get("uid")) for _, o in objects if ours(o) and _meta(o).get("uid")}
    grew = True
    while grew:
        grew = False
        for _, obj in objects:
            uid = str(_meta(obj).get("uid") or "")
            if not uid or uid in uids:
                continue
            if any(str(ref.get("uid")) in uids for ref in _meta(obj).get("ownerReferences") or [] if isinstance(ref, Mapping)):
                uids.add(uid)
                grew = True
    return uids


def foreign_in_namespace(kube: Kube, namespace: str, ours: Ours) -> list[str]:
    """What ``namespace`` holds that nvcrectl did not create (``Kind namespace/name`` each, and
    ``could not list ...`` for a kind that could not be read); empty when it may be deleted."""
    kinds, problems = _namespaced_kinds(kube)
    found: list[tuple[str, Mapping[str, Any]]] = []
    for resource in kinds:
        items = _list(kube, resource, namespace)
        if items is None:
            problems.append(f"{resource.kind} objects (could not be listed)")
            continue
        found.extend((resource.kind, o) for o in items if not _meta(o).get("deletionTimestamp"))
    owned = _owned_closure(found, ours)
    accounts = {str(_meta(o).get("name")) for kind, o in found if kind == "ServiceAccount" and str(_meta(o).get("uid")) in owned}
    foreign = [
        _describe(kind, o)
        for kind, o in found
        if str(_meta(o).get("uid") or "") not in owned and not ours(o) and not _made_by_kubernetes(kind, o, accounts)
    ]
    return [*problems, *foreign]


def foreign_instances(kube: Kube, crd_name: str, ours: Ours) -> list[str]:
    """The objects of CRD ``crd_name`` in any namespace that nvcrectl did not create; empty when
    the CRD is absent or holds only ours; ``could not list ...`` when they cannot be read."""
    try:
        crd = kube.get(CRDS, crd_name)
    except NotFound:
        return []
    resource = crd_resource(crd)
    items = _list(kube, resource, None)
    if items is None:
        return [f"{resource.kind} objects (could not be listed)"]
    return [_describe(resource.kind, o) for o in items if not ours(o) and not _meta(o).get("deletionTimestamp")]


def summary(names: Iterable[str]) -> str:
    """At most five names, then how many more."""
    listed = list(names)
    shown = ", ".join(listed[:_SHOWN])
    return shown + (f" and {len(listed) - _SHOWN} more" if len(listed) > _SHOWN else "")
