"""What the informer caches keep of each object: the fields the reconcilers read, nothing more.

At 2,000 nodes the caches hold thousands of Pods and TrainJobs, and most of each object is spec
the controller never looks at (a pod's containers, volumes, affinity; a TrainJob's runtime
patches). Each cached object passes through its resource's projection once, when it is listed
or arrives on the watch:

* every object loses ``metadata.managedFields``, and its strings, keys and values, are
  interned, so the thousand copies of ``"lastTransitionTime"`` or of one image name across a
  cache are one string;
* a Pod keeps its metadata without annotations (nothing reads a pod's annotations), of its spec
  only ``nodeName`` and the names of its containers and init containers, and its status with
  the image fields of each container status dropped;
* a TrainJob keeps its metadata, ``spec.suspend`` and its status.

Code that needs more of an object than its projection reads it live (``Context.live``): the
cache is an index of state, not a copy of the cluster. Projections work in place on the
decoded object, which belongs to the informer alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Projection", "compact", "project", "project_pod", "project_trainjob", "projection_for"]

#: ``projection(obj) -> obj``: what a cache keeps of a freshly decoded object
Projection = Callable[[dict[str, Any]], dict[str, Any]]

_CONTAINER_STATUS_DROPPED = ("image", "imageID", "containerID", "volumeMounts", "allocatedResources", "resources", "user")


def compact(value: Any) -> Any:
    """``value`` with every string interned, keys and values (lists and mappings rebuilt, other
    scalars as they are). Thousands of Jobs, measurements and pods repeat the same label values,
    image names, commands, reasons and timestamps; interned, each is kept once (a fifth to a
    third of a Job or a measurement). Interned strings are freed when nothing uses them."""
    if isinstance(value, dict):
        return {sys.intern(key) if isinstance(key, str) else key: compact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [compact(item) for item in value]
    if isinstance(value, str):
        return sys.intern(value)
    return value


def _metadata(obj: dict[str, Any], *, annotations: bool) -> None:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        if not annotations:
            meta.pop("annotations", None)


def project(obj: dict[str, Any]) -> dict[str, Any]:
    """The default projection: the whole object without ``managedFields``, keys interned."""
    _metadata(obj, annotations=True)
    return compact(obj)  # type: ignore[no-any-return]


def _names(containers: Any) -> list[dict[str, Any]]:
    return [{"name": c.get("name")} for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def project_pod(obj: dict[str, Any]) -> dict[str, Any]:
    """A Pod as the reconcilers read it: labels, owners and times; the node and the container
    names (the log to read); the status (phase, conditions, container states and exit codes)."""
    _metadata(obj, annotations=False)
    spec = obj.get("spec")
    if isinstance(spec, dict):
        kept: dict[str, Any] = {}
        if spec.get("nodeName"):
            kept["nodeName"] = spec["nodeName"]
        for field in ("containers", "initContainers"):
            if spec.get(field):
                kept[field] = _names(spec[field])
        obj["spec"] = kept
    status = obj.get("status")
    if isinstance(status, dict):
        for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            for entry in status.get(field) or ():
                if isinstance(entry, dict):
                    for dropped in _CONTAINER_STATUS_DROPPED:
                        entry.pop(dropped, None)
    return compact(obj)  # type: ignore[no-any-return]


def project_trainjob(obj: dict[str, Any]) -> dict[str, Any]:
    """A TrainJob as the Job tier reads it: metadata (owner, creation, deletion), whether it is
    suspended, and its status (conditions, jobsStatus)."""
    _metadata(obj, annotations=True)
    spec = obj.get("spec")
    if isinstance(spec, dict):
        obj["spec"] = {"suspend": spec["suspend"]} if "suspend" in spec else {}
    return compact(obj)  # type: ignore[no-any-return]


_BY_PLURAL: dict[str, Projection] = {"pods": project_pod, "trainjobs": project_trainjob}


def projection_for(plural: str) -> Projection:
    """The projection of a resource's cache (the default one for every resource not listed)."""
    return _BY_PLURAL.get(plural, project)
