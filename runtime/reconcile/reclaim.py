"""PersistentVolume reclaim when a Workflow is deleted (NVCRE's deletion phases 0 and 3).

A PersistentVolumeClaim the Workflow created is released with the Workflow, but a volume whose
reclaim policy is ``Retain`` would then stay behind forever. NVCRE hands such volumes back:

* :func:`stamp_volumes` runs first, while the claims still exist (a Job-scoped claim goes with
  its Job): the volume bound to every claim the Workflow owns gets the Workflow's creation
  identity, the ``nvcre.nvidia.com/workflow-uid`` annotation. Once a claim is gone its volume
  can be proven ours only by that annotation.
* :func:`reclaim_volumes` runs after the claims were deleted: a stamped volume still ``Bound``
  is waited for; a ``Released`` one on ``Retain`` is switched to ``Delete``, so the cluster
  removes it. A volume without this Workflow's stamp, or behind a claim someone else owns, is
  never touched.

The claims are the ``PersistentVolumeClaim`` entries of ``status.dependencyRefs``; a claim
already gone is traced to its volume through the volumes' ``spec.claimRef``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_WORKFLOW_UID

from ..kube.errors import ApiError
from ..kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from .common import annotations_of, meta, name_of, uid_of
from .context import Context, referenced_by

__all__ = ["reclaim_volumes", "stamp_volumes"]

log = logging.getLogger("nvcre.runtime.reconcile.reclaim")

CLAIM_KIND = "PersistentVolumeClaim"
RETAIN = "Retain"
DELETE = "Delete"
BOUND = "Bound"


def _claim_refs(wf: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of every claim the Workflow recorded among its dependencies."""
    refs = (wf.get("status") or {}).get("dependencyRefs") or []
    return [
        (str(ref.get("namespace") or (wf.get("metadata") or {}).get("namespace") or ""), str(ref.get("name") or ""))
        for ref in refs
        if ref.get("kind") == CLAIM_KIND and ref.get("name")
    ]


def _owned(claim: Mapping[str, Any], wf: Mapping[str, Any]) -> bool:
    """The Workflow made this claim: it owns it, or (a Job-scoped copy) it carries its UID."""
    return referenced_by(claim, wf) or annotations_of(claim).get(ANNOTATION_WORKFLOW_UID) == uid_of(wf)


def _stamped(volume: Mapping[str, Any], wf: Mapping[str, Any]) -> bool:
    return bool(uid_of(wf)) and annotations_of(volume).get(ANNOTATION_WORKFLOW_UID) == uid_of(wf)


def stamp_volumes(ctx: Context, wf: Mapping[str, Any]) -> None:
    """Stamp the volume bound to each claim the Workflow owns (best effort: a failure is
    retried on the next pass, which runs while the finalizer holds the Workflow)."""
    for namespace, name in _claim_refs(wf):
        claim = ctx.live(PERSISTENT_VOLUME_CLAIMS, name, namespace)
        if claim is None or not _owned(claim, wf):
            continue
        volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
        if not volume_name:
            continue  # not bound: no volume to hand back
        try:
            volume = ctx.live(PERSISTENT_VOLUMES, volume_name, None)
            if volume is None or _stamped(volume, wf):
                continue
            patch = {"metadata": {"annotations": {ANNOTATION_WORKFLOW_UID: uid_of(wf)}}}
            ctx.kube.merge_patch(PERSISTENT_VOLUMES, volume_name, None, patch)
        except ApiError as exc:
            log.warning("volume not stamped", extra={"volume": volume_name, "claim": f"{namespace}/{name}", "error": exc.message})


def _volume_of(
    ctx: Context, wf: Mapping[str, Any], namespace: str, name: str, listed: dict[str, list[dict[str, Any]]]
) -> dict[str, Any] | None:
    """The volume behind a claim: the one it names while it exists (None when someone else owns
    the claim), else the one whose ``claimRef`` still points at it (``listed`` keeps the one
    list of volumes a pass makes)."""
    claim = ctx.live(PERSISTENT_VOLUME_CLAIMS, name, namespace)
    if claim is not None:
        if not _owned(claim, wf):
            return None
        volume_name = str((claim.get("spec") or {}).get("volumeName") or "")
        return ctx.live(PERSISTENT_VOLUMES, volume_name, None) if volume_name else None
    if "volumes" not in listed:
        listed["volumes"] = list(ctx.kube.list(PERSISTENT_VOLUMES).items)
    for volume in listed["volumes"]:
        ref = (volume.get("spec") or {}).get("claimRef") or {}
        if ref.get("namespace") == namespace and ref.get("name") == name:
            return volume
    return None


def _hand_back(ctx: Context, wf: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """True when the volume needs nothing more; False while it is Bound or the patch failed."""
    if not _stamped(volume, wf):
        return True  # not proven ours: left as it is
    if ((volume.get("status") or {}).get("phase")) == BOUND:
        return False  # a policy switched now would not take effect: wait for Released
    if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") != RETAIN:
        return True
    patch = {
        "metadata": {"resourceVersion": meta(volume).get("resourceVersion")},
        "spec": {"persistentVolumeReclaimPolicy": DELETE},
    }
    try:
        ctx.kube.merge_patch(PERSISTENT_VOLUMES, name_of(volume), None, patch)
    except ApiError as exc:
        log.warning("reclaim policy not switched", extra={"volume": name_of(volume), "error": exc.message})
        return False
    log.info("reclaim policy switched from Retain to Delete", extra={"volume": name_of(volume), "workflow": name_of(wf)})
    return True


def reclaim_volumes(ctx: Context, wf: Mapping[str, Any]) -> bool:
    """Switch every stamped, Released volume of the Workflow's claims to ``Delete``; True when
    none is left to wait for (the Workflow's finalizer may go), False to look again later."""
    done = True
    listed: dict[str, list[dict[str, Any]]] = {}
    for namespace, name in _claim_refs(wf):
        try:
            volume = _volume_of(ctx, wf, namespace, name, listed)
        except ApiError as exc:
            log.warning("volume not found yet", extra={"claim": f"{namespace}/{name}", "error": exc.message})
            done = False
            continue
        if volume is not None and not _hand_back(ctx, wf, volume):
            done = False
    return done
