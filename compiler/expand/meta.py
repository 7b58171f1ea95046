"""Identity of the objects the controller creates: names, namespaces, labels and owner references.

Every child gets ``app.kubernetes.io/managed-by: nvcre`` and a controller owner reference
(``controller: true``, ``blockOwnerDeletion: true``) to the object that creates it. The UID of an
owner is read from the owner's ``metadata.uid`` as the API server returned it; expanding a child
of an object that has no UID yet is an error, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..diagnostics import CompileError, error
from ..naming import fnv1a_32, truncate_name
from ..vocabulary import API_VERSION

__all__ = [
    "MANAGED_BY",
    "MAX_JOB_NAME_LEN",
    "MAX_K8S_NAME_LEN",
    "MAX_WORKLOAD_NAME_LEN",
    "managed_labels",
    "name_hash",
    "name_of",
    "namespace_of",
    "owner_reference",
    "short_name",
    "sub",
    "uid_of",
    "workflow_namespace",
]

MANAGED_BY = {"app.kubernetes.io/managed-by": "nvcre"}

MAX_K8S_NAME_LEN = 63
#: a Job name leaves room for ``-workload``
MAX_JOB_NAME_LEN = 35
#: a TrainJob name leaves room for JobSet's pod name suffixes
MAX_WORKLOAD_NAME_LEN = 44


def sub(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else an empty mapping."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return sub(obj, "metadata")


def name_of(obj: Mapping[str, Any], what: str) -> str:
    name = _metadata(obj).get("name")
    if not isinstance(name, str) or not name:
        raise CompileError([error("MissingName", "metadata.name", f"the {what} has no name")])
    return name


def uid_of(obj: Mapping[str, Any], what: str) -> str:
    """The owner's UID; an object the API server has not stored yet has none, which is an error."""
    uid = _metadata(obj).get("uid")
    if not isinstance(uid, str) or not uid:
        raise CompileError(
            [
                error(
                    "MissingUID",
                    "metadata.uid",
                    f"the {what} has no uid: expand its children from the {what} as the API server returned it",
                )
            ]
        )
    return uid


def namespace_of(obj: Mapping[str, Any], what: str) -> str:
    namespace = _metadata(obj).get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise CompileError([error("MissingNamespace", "metadata.namespace", f"the {what} has no namespace")])
    return namespace


def workflow_namespace(workflow: Mapping[str, Any]) -> str:
    """Where a Workflow's Jobs and dependencies live: always the Workflow's own namespace.

    ``spec.namespace`` is part of NVCRE's API, and NVCRE too creates Jobs in the Workflow's
    namespace. Honouring it would let anyone who may create a Workflow in one namespace have
    the controller create Jobs, dependencies (TrainingRuntimes, and so pods under any
    ServiceAccount) and ConfigMaps in another, with the controller's rights rather than theirs.
    """
    return namespace_of(workflow, "Workflow")


def owner_reference(owner: Mapping[str, Any], kind: str, *, api_version: str = API_VERSION) -> dict[str, Any]:
    """A controller owner reference to ``owner`` (a ``kind`` object with a name and uid)."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name_of(owner, kind),
        "uid": uid_of(owner, kind),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def managed_labels(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {**dict(extra or {}), **MANAGED_BY}


def name_hash(name: str) -> str:
    """Five hex digits that identify a Workflow: the tail a shortened name ends with, else its hash."""
    _, sep, tail = name.rpartition("-")
    if sep and len(tail) == 5:
        return tail
    return format(fnv1a_32(name), "05x")[:5]


def short_name(name: str, limit: int) -> str:
    """``name`` shortened (with a hash) to ``limit`` characters, as Workflow names are."""
    return truncate_name(name, limit)
