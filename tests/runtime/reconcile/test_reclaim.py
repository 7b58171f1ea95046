"""A deleted Workflow hands its claims' Retain volumes back: stamped first, Delete once Released.

Offline, over a small in-memory API server: the test plays the cluster's part (the claim goes,
the volume turns Released) between the Workflow tier's deletion passes and checks what the
tier patched, deleted and whether it let the Workflow go. Only a volume provisioned for the
Workflow's own claim is ever stamped: a volume the author named, one that existed before the
claim, or one bound to someone else's claim stays as it is.
"""

from __future__ import annotations

from typing import Any

from nvcre.compiler.vocabulary import ANNOTATION_WORKFLOW_UID, WORKFLOW_FINALIZER
from nvcre.runtime.kube.informers import Store
from nvcre.runtime.kube.resources import JOBS, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, WORKFLOWS, Resource
from nvcre.runtime.reconcile.context import Context
from nvcre.runtime.reconcile.job import JobReconciler
from nvcre.runtime.reconcile.reclaim import ANNOTATION_CLAIM_UID
from nvcre.runtime.reconcile.workflow import WorkflowReconciler
from nvcre.runtime.reconcile.workflow.delete import RECLAIM_POLL_SECONDS
from nvcre.testing.fakekube import MemoryKube

WF_UID = "uid-wf"


PVC_PROTECTION = "kubernetes.io/pvc-protection"


def _patched(cluster: MemoryKube) -> list[tuple[str, str, Any]]:
    return [(call.resource, call.name, call.options["body"]) for call in cluster.calls if call.verb == "patch"]


def _deleted(cluster: MemoryKube) -> list[tuple[str, str]]:
    return [(call.resource, call.name) for call in cluster.calls if call.verb == "delete"]


def _found(cluster: MemoryKube, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
    found = cluster.find(resource, name, namespace)
    assert found is not None, f"{resource.plural} {name} is gone"
    return found


def _workflow(claims: list[str]) -> dict[str, Any]:
    refs = [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": c, "namespace": "ns", "scope": "workflow"} for c in claims]
    return {
        "metadata": {
            "name": "wf",
            "namespace": "ns",
            "uid": WF_UID,
            "resourceVersion": "5",
            "finalizers": [WORKFLOW_FINALIZER],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {"dependencyRefs": refs},
    }


CLAIM_MADE = "2026-01-01T00:00:00Z"
VOLUME_MADE = "2026-01-01T00:00:02Z"  # a provisioner answers the claim a moment later


def _claim(name: str, volume: str, *, owned: bool, bound_by_controller: bool = True) -> dict[str, Any]:
    owners = [{"kind": "Workflow", "name": "wf", "uid": WF_UID, "controller": True}] if owned else []
    notes = {"pv.kubernetes.io/bound-by-controller": "yes"} if bound_by_controller else {}
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-claim-{name}",
            "creationTimestamp": CLAIM_MADE,
            "ownerReferences": owners,
            "annotations": notes,
            "finalizers": [PVC_PROTECTION],
        },
        "spec": {"volumeName": volume},
        "status": {"phase": "Bound"},
    }


def _volume(
    name: str,
    claim: str,
    phase: str = "Bound",
    annotations: dict[str, str] | None = None,
    *,
    claim_uid: str | None = None,
    provisioned: bool = True,
    made: str = VOLUME_MADE,
) -> dict[str, Any]:
    notes = {"pv.kubernetes.io/provisioned-by": "example.com/csi"} if provisioned else {}
    ref = {"namespace": "ns", "name": claim, "uid": claim_uid or f"uid-claim-{claim}"}
    return {
        "metadata": {"name": name, "creationTimestamp": made, "annotations": {**notes, **dict(annotations or {})}},
        "spec": {"persistentVolumeReclaimPolicy": "Retain", "claimRef": ref},
        "status": {"phase": phase},
    }


def _setup(claims: list[str], dependencies: list[dict[str, Any]] | None = None) -> tuple[MemoryKube, WorkflowReconciler]:
    cluster = MemoryKube()
    wf = _workflow(claims)
    if dependencies:
        wf["spec"] = {"dependencies": dependencies}
    stores = {WORKFLOWS.plural: Store(), JOBS.plural: Store()}
    stores[WORKFLOWS.plural].put(cluster.put(wf, WORKFLOWS))
    ctx = Context(kube=cluster, stores=stores)
    return cluster, WorkflowReconciler(ctx, JobReconciler(ctx))


def _finalizer_kept(cluster: MemoryKube) -> bool:
    """The Workflow is still held (without its finalizer the server lets a deleted object go)."""
    found = cluster.find(WORKFLOWS, "wf", "ns")
    return found is not None and WORKFLOW_FINALIZER in found["metadata"].get("finalizers", [])


def test_an_owned_claims_volume_is_stamped_waited_for_while_bound_then_switched_to_delete():
    cluster, workflows = _setup(["data"])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("data", "pv-1", owned=True))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("pv-1", "data"))

    result = workflows.reconcile("ns", "wf")
    volume = _found(cluster, PERSISTENT_VOLUMES, "pv-1")
    assert volume["metadata"]["annotations"][ANNOTATION_WORKFLOW_UID] == WF_UID
    assert ("persistentvolumeclaims", "data") in _deleted(cluster)
    assert result.requeue_after == RECLAIM_POLL_SECONDS  # still Bound: nothing switched yet
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert _finalizer_kept(cluster)

    # the cluster removes the claim and releases the volume
    cluster.remove(PERSISTENT_VOLUME_CLAIMS, "data", "ns")
    cluster.edit(PERSISTENT_VOLUMES, "pv-1", None, lambda pv: pv["status"].update(phase="Released"))
    workflows.ctx.stores[WORKFLOWS.plural].put(cluster.get(WORKFLOWS, "wf", "ns"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    assert _found(cluster, PERSISTENT_VOLUMES, "pv-1")["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert not _finalizer_kept(cluster)


def test_a_claim_someone_else_owns_leaves_its_volume_untouched():
    cluster, workflows = _setup(["theirs"])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("theirs", "pv-2", owned=False))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("pv-2", "theirs"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    assert not any(plural == "persistentvolumes" for plural, _, _ in _patched(cluster))
    assert ("persistentvolumeclaims", "theirs") not in _deleted(cluster)
    assert not _finalizer_kept(cluster)


def test_a_released_volume_without_this_workflows_stamp_stays_on_retain():
    cluster, workflows = _setup(["gone"])
    stamp = {ANNOTATION_WORKFLOW_UID: "someone-else", ANNOTATION_CLAIM_UID: "uid-claim-gone"}
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("pv-3", "gone", phase="Released", annotations=stamp))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    assert _found(cluster, PERSISTENT_VOLUMES, "pv-3")["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert not _finalizer_kept(cluster)


def test_a_job_scoped_claim_carrying_the_workflow_uid_counts_as_owned():
    cluster, workflows = _setup(["copy"])
    claim = _claim("copy", "pv-4", owned=False)
    claim["metadata"]["annotations"][ANNOTATION_WORKFLOW_UID] = WF_UID
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=claim)
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("pv-4", "copy"))
    assert workflows.reconcile("ns", "wf").requeue_after == RECLAIM_POLL_SECONDS
    stamp = _found(cluster, PERSISTENT_VOLUMES, "pv-4")["metadata"]["annotations"]
    assert stamp[ANNOTATION_WORKFLOW_UID] == WF_UID
    assert stamp[ANNOTATION_CLAIM_UID] == "uid-claim-copy"


def _grab_dependency(volume: str) -> dict[str, Any]:
    """The reproducer's extra Workflow dependency: a claim that names a volume it did not make."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "grab"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "", "volumeName": volume},
    }


def _never_touched(cluster: MemoryKube, volume: str) -> None:
    found = _found(cluster, PERSISTENT_VOLUMES, volume)
    assert not any(plural == "persistentvolumes" for plural, _, _ in _patched(cluster))
    assert ANNOTATION_WORKFLOW_UID not in found["metadata"]["annotations"]
    assert found["spec"]["persistentVolumeReclaimPolicy"] == "Retain"


def test_a_released_foreign_volume_named_by_a_pending_claim_is_never_stamped_or_switched():
    """Another namespace's Released Retain volume: the Workflow's claim names it but never binds."""
    cluster, workflows = _setup(["grab"], [_grab_dependency("victim-pv")])
    claim = _claim("grab", "victim-pv", owned=True, bound_by_controller=False)
    claim["status"]["phase"] = "Pending"
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=claim)
    victim = _volume("victim-pv", "victim-claim", phase="Released", provisioned=False, made="2025-06-01T00:00:00Z")
    victim["spec"]["claimRef"]["namespace"] = "victim"
    cluster.put(resource=PERSISTENT_VOLUMES, obj=victim)

    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "victim-pv")
    # the claim goes; the next pass traces nothing back to the victim either
    cluster.remove(PERSISTENT_VOLUME_CLAIMS, "grab", "ns")
    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "victim-pv")


def test_an_available_volume_bound_through_a_named_claim_is_never_stamped():
    """A pre-provisioned Available volume (same namespace or not) the Workflow's claim bound by name."""
    cluster, workflows = _setup(["grab"], [_grab_dependency("static-pv")])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("grab", "static-pv", owned=True, bound_by_controller=False))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("static-pv", "grab", provisioned=False, made="2025-06-01T00:00:00Z"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "static-pv")


def test_a_named_volume_stays_untouched_even_with_a_forged_bound_by_controller_annotation():
    cluster, workflows = _setup(["grab"], [_grab_dependency("their-pv")])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("grab", "their-pv", owned=True))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("their-pv", "grab"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "their-pv")


def test_a_provisioned_volume_older_than_the_claim_is_not_the_claims_own():
    cluster, workflows = _setup(["data"])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("data", "old-pv", owned=True))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("old-pv", "data", made="2025-06-01T00:00:00Z"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "old-pv")


def test_a_volume_bound_to_another_claim_uid_is_not_stamped():
    cluster, workflows = _setup(["data"])
    cluster.put(resource=PERSISTENT_VOLUME_CLAIMS, obj=_claim("data", "pv-9", owned=True))
    cluster.put(resource=PERSISTENT_VOLUMES, obj=_volume("pv-9", "data", claim_uid="uid-of-an-earlier-claim"))
    assert workflows.reconcile("ns", "wf").requeue_after is None
    _never_touched(cluster, "pv-9")


def test_a_volume_stamped_without_the_claim_uid_is_never_switched():
    """A stamp an earlier controller wrote from ``volumeName`` alone proves nothing."""
    cluster, workflows = _setup(["gone"])
    stamped = _volume("pv-old", "gone", phase="Released", annotations={ANNOTATION_WORKFLOW_UID: WF_UID})
    cluster.put(resource=PERSISTENT_VOLUMES, obj=stamped)
    assert workflows.reconcile("ns", "wf").requeue_after is None
    assert _found(cluster, PERSISTENT_VOLUMES, "pv-old")["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert not _finalizer_kept(cluster)
