"""PersistentVolume reclaim when a Workflow is deleted (NVCRE's deletion phases 0 and 3).

A PersistentVolumeClaim the Workflow created is released with the Workflow, but a volume whose
reclaim policy is ``Retain`` would then stay behind forever. NVCRE hands such volumes back, and
this module does so only for a volume the Workflow's own claim caused to exist:

* :func:`stamp_volumes` runs first, while the claims still exist (a Job-scoped claim goes with
  its Job). A volume is stamped only when every one of these holds (:func:`provisioned_for`):
  the claim is the Workflow's and ``Bound``; the volume's ``spec.claimRef`` names that claim by
  UID; the volume was dynamically provisioned (``pv.kubernetes.io/provisioned-by``) and created
  no earlier than the claim; the claim was bound by the volume controller
  (``pv.kubernetes.io/bound-by-controller``), and no claim of the Workflow names a volume in its
  ``spec.volumeName``. A volume named by the Workflow's author, a pre-existing volume, or one
  bound to anybody else's claim is never stamped. The stamp is two annotations: the Workflow's
  creation identity (``nvcre.nvidia.com/workflow-uid``) and the claim's UID
  (:data:`ANNOTATION_CLAIM_UID`).
* :func:`reclaim_volumes` runs after the claims were deleted: a stamped volume still ``Bound``
  is waited for; a ``Released`` one on ``Retain`` whose ``claimRef`` still carries the stamped
  claim UID, and that is still marked as provisioned, is switched to ``Delete``, so the cluster
  removes it. Anything else (no stamp, a stamp without the claim UID, a ``claimRef`` to another
  claim) is never touched.

The claims are the ``PersistentVolumeClaim`` entries of ``status.dependencyRefs``; a claim
already gone is traced to its volume through the volumes' ``spec.claimRef``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_CLAIM_UID, ANNOTATION_WORKFLOW_UID

from ..clock import parse_time
from ..kube.errors import ApiError
from ..kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from .common import annotations_of, meta, name_of, namespace_of, uid_of
from .context import Context, referenced_by

__all__ = ["ANNOTATION_CLAIM_UID", "provisioned_for", "reclaim_volumes", "stamp_volumes"]

log = logging.getLogger("nvcre.runtime.reconcile.reclaim")

CLAIM_KIND = "PersistentVolumeClaim"
RETAIN = "Retain"
DELETE = "Delete"
BOUND = "Bound"

#: set on a volume by the provisioner that created it (Kubernetes' dynamic provisioning)
ANNOTATION_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
#: set on a claim when the volume controller, not the claim's author, chose its volume
ANNOTATION_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


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


def _named_volumes(wf: Mapping[str, Any]) -> set[str]:
    """The claim names (as written in the Workflow) whose ``spec.volumeName`` the author set."""
    named = set()
    for dep in (wf.get("spec") or {}).get("dependencies") or []:
        if not isinstance(dep, Mapping) or dep.get("kind") != CLAIM_KIND:
            continue
        spec = dep.get("spec")
        if isinstance(spec, Mapping) and spec.get("volumeName"):
            named.add(name_of(dep))
    return named


def _names_a_volume(claim_name: str, wf: Mapping[str, Any]) -> bool:
    """Whether the Workflow wrote this claim (or the claim its Job-scoped copy came from,
    ``<name>-<hash>-...``) with a volume of the author's choosing."""
    return any(claim_name == base or claim_name.startswith(base + "-") for base in _named_volumes(wf))


def _created_no_earlier(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    made, asked = parse_time(meta(volume).get("creationTimestamp")), parse_time(meta(claim).get("creationTimestamp"))
    return made is not None and asked is not None and made >= asked


def provisioned_for(volume: Mapping[str, Any], claim: Mapping[str, Any], wf: Mapping[str, Any]) -> str:
    """Empty when ``volume`` was provisioned for ``claim``, a claim of ``wf``; else why not."""
    if not _owned(claim, wf):
        return "the claim is not the Workflow's"
    claim_spec, claim_status = claim.get("spec") or {}, claim.get("status") or {}
    if claim_spec.get("volumeName") != name_of(volume) or claim_status.get("phase") != BOUND:
        return "the claim is not bound to the volume"
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    if not uid_of(claim) or ref.get("uid") != uid_of(claim) or ref.get("name") != name_of(claim):
        return "the volume's claimRef is not this claim"
    if ref.get("namespace") != namespace_of(claim):
        return "the volume's claimRef is not this claim"
    if not annotations_of(volume).get(ANNOTATION_PROVISIONED_BY):
        return "the volume was not dynamically provisioned"
    if not _created_no_earlier(volume, claim):
        return "the volume existed before the claim"
    if annotations_of(claim).get(ANNOTATION_BOUND_BY_CONTROLLER) != "yes" or _names_a_volume(name_of(claim), wf):
        return "the Workflow named the volume itself"
    return ""


def stamp_volumes(ctx: Context, wf: Mapping[str, Any]) -> None:
    """Stamp the volume provisioned for each claim the Workflow owns (best effort: a failure is
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
            refused = provisioned_for(volume, claim, wf)
            if refused:
                log.info("volume left alone", extra={"volume": volume_name, "claim": f"{namespace}/{name}", "why": refused})
                continue
            stamp = {ANNOTATION_WORKFLOW_UID: uid_of(wf), ANNOTATION_CLAIM_UID: uid_of(claim)}
            patch = {"metadata": {"resourceVersion": meta(volume).get("resourceVersion"), "annotations": stamp}}
            ctx.kube.merge_patch(PERSISTENT_VOLUMES, volume_name, None, patch)
        except ApiError as exc:
            log.warning("volume not stamped", extra={"volume": volume_name, "claim": f"{namespace}/{name}", "error": exc.message})


def _stamped(volume: Mapping[str, Any], wf: Mapping[str, Any]) -> bool:
    """Stamped by this Workflow, with the claim UID, and still bound (or released) from that claim."""
    notes = annotations_of(volume)
    claim_uid = notes.get(ANNOTATION_CLAIM_UID)
    if not uid_of(wf) or notes.get(ANNOTATION_WORKFLOW_UID) != uid_of(wf) or not claim_uid:
        return False
    ref = (volume.get("spec") or {}).get("claimRef") or {}
    return ref.get("uid") == claim_uid and bool(notes.get(ANNOTATION_PROVISIONED_BY))


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
