"""Small helpers the tier reconcilers share: metadata access, finalizers, create-or-adopt.

Create-or-adopt is NVCRE's rule at every tier: create; on AlreadyExists read the object live;
terminating -> try again once the name is free; ours (it names us as owner) -> adopt it;
someone else's -> a terminal name collision that never records the foreign object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..kube.errors import AlreadyExists, ApiError, ApiNotServed, Conflict, NotFound
from ..kube.resources import Resource
from .context import Context, Result, referenced_by

__all__ = [
    "Adopted",
    "annotations_of",
    "create_or_adopt",
    "ensure_finalizer",
    "labels",
    "lifecycle_gate",
    "meta",
    "name_of",
    "namespace_of",
    "past_drain_grace",
    "reference",
    "remove_finalizer",
    "uid_of",
]


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict(obj.get("metadata") or {})


def name_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "")


def uid_of(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("uid") or "")


def labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("labels") or {})


def annotations_of(obj: Mapping[str, Any]) -> dict[str, str]:
    return dict(meta(obj).get("annotations") or {})


def reference(obj: Mapping[str, Any], *, namespace: bool = True) -> dict[str, Any]:
    """A WorkloadReference-shaped pointer to ``obj``: its type fields, name and namespace."""
    ref = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    ref["name"] = name_of(obj)
    if namespace and namespace_of(obj):
        ref["namespace"] = namespace_of(obj)
    return ref


def ensure_finalizer(ctx: Context, resource: Resource, obj: Mapping[str, Any], finalizer: str) -> bool:
    """Add ``finalizer`` (merge patch guarded by resourceVersion); True when a patch was sent."""
    current = list(meta(obj).get("finalizers") or [])
    if finalizer in current:
        return False
    patch = {"metadata": {"finalizers": [*current, finalizer], "resourceVersion": meta(obj).get("resourceVersion")}}
    try:
        patched = ctx.kube.merge_patch(resource, name_of(obj), namespace_of(obj) or None, patch)
    except (Conflict, NotFound):
        return True
    # the reconcile that follows at once must not find the cache's copy without the finalizer
    if isinstance(patched, Mapping):
        ctx.recent.wrote(resource.plural, obj, patched)
    return True


def lifecycle_gate(
    ctx: Context,
    resource: Resource,
    obj: Mapping[str, Any] | None,
    finalizer: str,
    finalize: Callable[[Any], Result],
) -> Result | None:
    """The steps every tier takes first, in order: gone -> done; being deleted -> ``finalize``;
    no finalizer yet -> add it and come back. ``None`` means: go on reconciling ``obj``."""
    if obj is None:
        return Result()
    if meta(obj).get("deletionTimestamp"):
        return finalize(obj)
    if ensure_finalizer(ctx, resource, obj, finalizer):
        return Result(ctx.settings.step_interval)
    return None


def past_drain_grace(ctx: Context, started: datetime | None) -> float | None:
    """Seconds waited since ``started`` once the pod-drain grace is over; None while it still runs.

    Every finalizer that tears down what it owns waits this grace for the pods to go before it
    lets its object go anyway (with a Warning naming what is still there). An unknown start
    counts as no wait yet.
    """
    waited = (ctx.clock.now() - started).total_seconds() if started else 0.0
    return waited if waited >= ctx.settings.pod_drain_grace else None


def remove_finalizer(ctx: Context, resource: Resource, obj: Mapping[str, Any], finalizer: str) -> None:
    current = list(meta(obj).get("finalizers") or [])
    if finalizer not in current:
        return
    remaining = [item for item in current if item != finalizer]
    patch = {"metadata": {"finalizers": remaining, "resourceVersion": meta(obj).get("resourceVersion")}}
    try:
        ctx.kube.merge_patch(resource, name_of(obj), namespace_of(obj) or None, patch)
    except NotFound:
        pass


@dataclass(frozen=True)
class Adopted:
    """Outcome of :func:`create_or_adopt`: the live object, and how we came by it."""

    obj: dict[str, Any] | None
    created: bool = False
    adopted: bool = False
    collision: bool = False
    retry: bool = False
    error: str = ""
    #: the cluster serves no API for the manifest's kind
    missing_api: bool = False


def create_or_adopt(ctx: Context, manifest: Mapping[str, Any], owner: Mapping[str, Any] | None) -> Adopted:
    """Create ``manifest``; on AlreadyExists adopt it when ``owner`` controls it (or no owner).

    The create is remembered before it is sent (``ctx.recent``), so a reconcile that runs before
    its outcome reached the cache does not send it again; a create that left nothing of ours
    under the name is forgotten."""
    try:
        resource = ctx.kube.resource_for(str(manifest.get("apiVersion")), str(manifest.get("kind")))
    except ApiNotServed as exc:
        return Adopted(None, error=exc.message or str(exc), missing_api=True)
    except ApiError as exc:
        return Adopted(None, error=exc.message or str(exc))
    name, namespace = name_of(manifest), namespace_of(manifest) or None
    ctx.recent.create(resource.plural, name, namespace)
    try:
        outcome = _create_or_adopt(ctx, resource, manifest, owner)
    except BaseException:
        ctx.recent.forget(resource.plural, name, namespace)
        raise
    if outcome.obj is None:
        ctx.recent.forget(resource.plural, name, namespace)
    return outcome


def _create_or_adopt(ctx: Context, resource: Resource, manifest: Mapping[str, Any], owner: Mapping[str, Any] | None) -> Adopted:
    try:
        created = ctx.kube.create(manifest)
    except AlreadyExists:
        created = None
    except ApiNotServed as exc:
        return Adopted(None, error=exc.message or str(exc), missing_api=True)
    except ApiError as exc:
        return Adopted(None, error=exc.message or str(exc))
    if created is not None:
        return Adopted(created, created=True)
    live = ctx.live(resource, name_of(manifest), namespace_of(manifest) or None)
    if live is None:
        return Adopted(None, retry=True)
    if meta(live).get("deletionTimestamp"):
        # ours or not, an object on its way out is never adopted: wait until the name is free
        return Adopted(None, retry=True)
    if owner is None or referenced_by(live, owner):
        return Adopted(live, adopted=True)
    return Adopted(None, collision=True)
