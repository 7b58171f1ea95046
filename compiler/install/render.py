"""Assemble the install: values in, objects in apply order out (see the package docstring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..diagnostics import Diagnostic, info
from .admission import admission_objects
from .manager import manager_objects
from .monitoring import monitoring_objects
from .rbac import rbac_objects
from .values import resolve_values

__all__ = ["Installed", "crd_objects", "logprofile_objects", "render_install"]

LABELS = {"app.kubernetes.io/managed-by": "nvcrectl", "app.kubernetes.io/part-of": "nvcre"}


@dataclass(frozen=True)
class Installed:
    objects: list[dict[str, Any]]
    values: dict[str, Any]
    diagnostics: list[Diagnostic] = field(default_factory=list)


def crd_objects() -> list[dict[str, Any]]:
    """The CRDs of every nvcre kind, as committed with the package (the ones validation uses)."""
    from ..api.crdgen import CRD_DIR, crd_file_name
    from ..api.kinds import KINDS
    from ..yamlio import load_documents

    objects = []
    for cls in KINDS:
        path = CRD_DIR / crd_file_name(cls)
        objects.extend(load_documents(path.read_text(encoding="utf-8"), str(path)))
    return objects


def logprofile_objects(namespace: str) -> tuple[list[dict[str, Any]], list[Diagnostic]]:
    """The built-in LogProfiles (in the controller's namespace if the kind is namespaced), when shipped."""
    from ..api.kinds import kind_class

    try:
        from ..logprofiles import builtin_logprofiles
    except ImportError:
        return [], [info("LogProfilesUnavailable", "logProfiles.install", "this build ships no built-in LogProfiles")]
    kind = kind_class("LogProfile")
    namespaced = bool(kind is not None and kind.namespaced)
    profiles = []
    for profile in builtin_logprofiles():
        meta = dict(profile.get("metadata") or {})
        if namespaced:
            meta.setdefault("namespace", namespace)
        profiles.append({**profile, "metadata": meta})
    return profiles, []


def render_install(layers: Sequence[Mapping[str, Any]] = ()) -> Installed:
    """Every object of the install for ``layers`` of values (each over the last, defaults first)."""
    values, diagnostics = resolve_values(*layers)
    objects: list[dict[str, Any]] = []
    if values["crds"]["install"]:
        objects.extend(crd_objects())
    manager = manager_objects(values, dict(LABELS))
    namespace_objects = [o for o in manager if o["kind"] == "Namespace"]
    objects.extend(namespace_objects)
    if values["logProfiles"]["install"]:
        profiles, found = logprofile_objects(values["namespace"]["name"])
        objects.extend(profiles)
        diagnostics.extend(found)
    objects.extend(rbac_objects(values, dict(LABELS)))
    objects.extend(admission_objects(values, dict(LABELS)))
    objects.extend(o for o in manager if o["kind"] != "Namespace")
    objects.extend(monitoring_objects(values, dict(LABELS)))
    return Installed(objects=objects, values=values, diagnostics=diagnostics)
