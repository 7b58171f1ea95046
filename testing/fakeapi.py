"""The API server's rules that the in-memory fake (:mod:`nvcre.testing.fakekube`) follows.

Pure helpers, each doing what kube-apiserver does for one part of a request: naming a kind's
collection (discovery, a CRD's kinds), matching label and field selectors on a list, applying a
JSON merge patch (RFC 7386), cutting a container log as the log endpoint's parameters ask, and
reading a resourceVersion. Nothing here holds state.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from nvcre.runtime.kube.errors import Invalid
from nvcre.runtime.kube.resources import Resource, split_api_version

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "ESTABLISHED",
    "crd_resources",
    "field_matches",
    "labels_match",
    "log_excerpt",
    "merge_patch",
    "plural_of",
    "resource_of_kind",
    "version_number",
]

#: kinds served without a namespace (the rest are namespaced, as most kinds are)
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "APIService",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterTrainingRuntime",
        "CustomResourceDefinition",
        "LogProfile",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "ResourceSlice",
        "SelfSubjectAccessReview",
        "StorageClass",
        "TokenReview",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
    }
)


def plural_of(kind: str) -> str:
    """The collection name discovery gives a kind: lower case, English plural rules."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


def resource_of_kind(api_version: str, kind: str) -> Resource:
    """A kind's :class:`Resource` by the naming rules alone (for kinds no table lists)."""
    group, version = split_api_version(api_version)
    return Resource(group, version, plural_of(kind), kind, namespaced=kind not in CLUSTER_SCOPED_KINDS)


def version_number(obj: Mapping[str, Any]) -> int:
    """An object's resourceVersion as a number (0 when absent or not numeric)."""
    text = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(text) if text.isdigit() else 0


def _requirements(selector: str) -> list[str]:
    return [part.strip() for part in selector.split(",") if part.strip()]


def labels_match(selector: str | None, labels: Mapping[str, Any]) -> bool:
    """Whether ``labels`` satisfy an equality-based label selector (``a=b,c!=d,e,!f``)."""
    for requirement in _requirements(selector or ""):
        if "!=" in requirement:
            key, _, value = requirement.partition("!=")
            if str(labels.get(key.strip(), "")) == value.strip() and key.strip() in labels:
                return False
        elif "=" in requirement:
            key, _, value = requirement.replace("==", "=").partition("=")
            if key.strip() not in labels or str(labels[key.strip()]) != value.strip():
                return False
        elif requirement.startswith("!"):
            if requirement[1:].strip() in labels:
                return False
        elif " in " in requirement or " notin " in requirement:
            raise Invalid(400, "BadRequest", f"set-based label selectors are not served by the fake: {requirement!r}")
        elif requirement not in labels:
            return False
    return True


def _field(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def field_matches(selector: str | None, obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` satisfies a field selector (``spec.nodeName=n1,metadata.name!=x``)."""
    for requirement in _requirements(selector or ""):
        negate = "!=" in requirement
        path, _, value = requirement.replace("!=", "=").replace("==", "=").partition("=")
        if (_field(obj, path.strip()) == value.strip()) == negate:
            return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge key by key, ``None`` removes a key, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    merged: dict[str, Any] = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


#: the conditions the apiextensions server gives a CRD whose names it accepted
ESTABLISHED = [
    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts"},
    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted"},
]


def crd_resources(crd: Mapping[str, Any]) -> list[Resource]:
    """The resources a CustomResourceDefinition serves, one per version."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    if not (spec.get("group") and names.get("plural") and names.get("kind")):
        return []
    group, plural, kind, namespaced = str(spec["group"]), str(names["plural"]), str(names["kind"]), spec.get("scope") != "Cluster"
    return [Resource(group, str(version.get("name")), plural, kind, namespaced) for version in spec.get("versions") or []]


def log_excerpt(text: str, *, since_time: str | None, tail_lines: int | None, timestamps: bool, limit_bytes: int | None) -> str:
    """What the pod log endpoint returns of ``text`` (each line led by its RFC 3339 timestamp).

    ``sinceTime`` is compared in whole seconds (every line from that second on), then
    ``tailLines`` keeps the last lines, the timestamps go unless asked for, and ``limitBytes``
    cuts the rest."""
    lines = text.splitlines(keepends=True)
    if since_time is not None:
        lines = [line for line in lines if line[:19] + "Z" >= since_time]
    if tail_lines is not None:
        lines = lines[-tail_lines:] if tail_lines > 0 else []
    if not timestamps:
        lines = [line.split(" ", 1)[1] if " " in line else line for line in lines]
    out = "".join(lines)
    return out[:limit_bytes] if limit_bytes is not None else out
