"""Tells the install objects nvcrectl created from objects of the same name it found on the cluster.

Every install object the compiler renders with ``app.kubernetes.io/managed-by: nvcrectl`` (the
Namespace, RBAC, ServiceAccount, Deployment, kept values) carries that label on the cluster only
if ``setup init`` applied it. Before applying, ``setup init`` looks for objects that already exist
under those names without the label: a Namespace of that kind is used as it is and never
labelled, so it is never ours to delete; any other such object stops the install before anything
is written (applying would take it over, and a later reset would delete it). ``setup reset``
deletes a labelled install object only when the live one carries the label too, and finds the
installs to remove by their labelled kept-values ConfigMap, in whatever namespace ``setup init``
was told to use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...kube.client import Kube
from ...kube.errors import ApiError, NotFound
from ...kube.resources import CONFIGMAPS

__all__ = ["MANAGED_BY", "ForeignObjects", "describe", "foreign_objects", "install_namespaces", "is_ours", "marked"]

MANAGED_BY = ("app.kubernetes.io/managed-by", "nvcrectl")


class ForeignObjects(Exception):
    """Objects named like install objects that nvcrectl did not create; nothing was applied."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        super().__init__(
            "these objects exist and were not created by nvcrectl, so setup init will not take them over: "
            + ", ".join(self.names)
            + "; remove or rename them, or install into another namespace (--set namespace.name=...)"
        )


def marked(obj: Mapping[str, Any]) -> bool:
    """The rendered object carries the label that says nvcrectl manages it."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY[0]) == MANAGED_BY[1]


def is_ours(kube: Kube, obj: Mapping[str, Any]) -> bool | None:
    """True when the live object of ``obj`` carries our label, False when it does not, None when absent."""
    meta = obj.get("metadata") or {}
    resource = kube.resource_for(str(obj["apiVersion"]), str(obj["kind"]))
    try:
        live = kube.get(resource, str(meta["name"]), meta.get("namespace"))
    except NotFound:
        return None
    return marked(live)


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


def foreign_objects(kube: Kube, objects: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[str]]:
    """(Namespaces that exist without our label, every other marked object that does)."""
    namespaces: list[Mapping[str, Any]] = []
    conflicts: list[str] = []
    for obj in objects:
        if not marked(obj) or is_ours(kube, obj) is not False:
            continue
        if obj.get("kind") == "Namespace":
            namespaces.append(obj)
        else:
            conflicts.append(describe(obj))
    return namespaces, conflicts


def install_namespaces(kube: Kube) -> list[str]:
    """Namespaces holding the kept values of an install nvcrectl made (sorted); empty when none."""
    from nvcre.compiler.install.keep import KEPT_VALUES_NAME

    try:
        found = kube.list(
            CONFIGMAPS, None, label_selector=f"{MANAGED_BY[0]}={MANAGED_BY[1]}", field_selector=f"metadata.name={KEPT_VALUES_NAME}"
        ).items
    except ApiError:
        return []
    return sorted({str((c.get("metadata") or {}).get("namespace")) for c in found if (c.get("metadata") or {}).get("namespace")})
