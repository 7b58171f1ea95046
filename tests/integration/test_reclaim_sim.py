"""PersistentVolume reclaim on the simulated cluster, with the controller as the install runs it.

The controller is ``python -m nvcre.runtime`` with the Deployment's flags, authenticated as the
install's ServiceAccount with the install's RBAC; the real kube-controller-manager binds the
volumes (and deletes a ``/tmp`` hostPath volume whose policy became Delete).

* A volume provisioned for the Workflow's own claim (the test plays the provisioner: the volume
  comes after the claim, pre-bound to its UID, with ``pv.kubernetes.io/provisioned-by``) is
  stamped when the Workflow is deleted and switched from Retain to Delete once Released.
* The audit's reproducer: alice may only create Workflows in her namespace. Her Workflows carry
  one more dependency each, a claim naming a volume she did not make: another namespace's
  Released volume (the claim never binds) and an Available pre-provisioned volume of her own
  namespace (the claim binds it). After her Workflows end and she deletes them, both volumes are
  still there, on Retain, unstamped, and their data is untouched.
"""

from __future__ import annotations

import contextlib
import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nvcre.compiler.vocabulary import ANNOTATION_WORKFLOW_UID, WORKFLOW_FINALIZER
from nvcre.runtime.judge import conditions as cond
from nvcre.runtime.kube.errors import ApiError, NotFound
from nvcre.runtime.kube.resources import WORKFLOWS, Resource
from nvcre.runtime.reconcile.reclaim import ANNOTATION_CLAIM_UID, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from tests.integration.as_installed import install_rbac, remove_installed, shipped_controller, token_for
from tests.integration.integration_helpers import eventually

pytestmark = [pytest.mark.integration, pytest.mark.sim]

RENDERED = Path(__file__).resolve().parents[2] / "examples/flux/rendered/h100-acceptance/h100-acceptance-communication-nccl-loopback.yaml"
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PROVISIONER = "example.com/nvcre-test"


def _get(kube: Any, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return kube.get(resource, name, namespace)
    except NotFound:
        return None


def _phase(kube: Any, resource: Any, name: str, namespace: str | None = None) -> str:
    return str(((_get(kube, resource, name, namespace) or {}).get("status") or {}).get("phase") or "")


def _volume(name: str, path: Path, storage_class: str, **extra: Any) -> dict[str, Any]:
    spec = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": storage_class,
        "hostPath": {"path": str(path)},
        **extra.pop("spec", {}),
    }
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, **extra}, "spec": spec}


def _claim(name: str, namespace: str, storage_class: str, volume: str = "", owners: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}},
        "storageClassName": storage_class,
    }
    if volume:
        spec["volumeName"] = volume
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


@pytest.fixture
def volumes(kube) -> Iterator[list[str]]:
    """Names of the volumes a test makes (volumes outlive namespaces: removed here)."""
    made: list[str] = []
    try:
        yield made
    finally:
        for name in made:
            with contextlib.suppress(ApiError):
                kube.delete(PERSISTENT_VOLUMES, name)


@pytest.fixture
def installed(kube) -> Iterator[str]:
    """The install's RBAC for the controller; its namespace."""
    namespace, objects = install_rbac(kube)
    try:
        yield namespace
    finally:
        remove_installed(kube, objects)


def test_a_volume_provisioned_for_the_workflows_claim_is_handed_back(simcluster, kube, sim_namespace, volumes, installed, tmp_path):
    storage_class = f"{sim_namespace}-provisioned"
    kube.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class},
            "provisioner": PROVISIONER,
            "reclaimPolicy": "Retain",
        }
    )
    try:
        rendered = yaml.safe_load(RENDERED.read_text())
        kube.create(
            {
                "apiVersion": rendered["apiVersion"],
                "kind": "Workflow",
                "metadata": {"name": "keeps-data", "namespace": sim_namespace, "finalizers": [WORKFLOW_FINALIZER]},
                "spec": copy.deepcopy(rendered["spec"]),
            }
        )
        wf = kube.get(WORKFLOWS, "keeps-data", sim_namespace)
        owner = {"apiVersion": wf["apiVersion"], "kind": "Workflow", "name": "keeps-data", "uid": wf["metadata"]["uid"], "controller": True}
        claim = kube.create(_claim("data", sim_namespace, storage_class, owners=[owner]))
        # the provisioner's part: a volume made for this claim, pre-bound to its UID
        name = f"{sim_namespace}-data"
        ref = {"kind": "PersistentVolumeClaim", "namespace": sim_namespace, "name": "data", "uid": claim["metadata"]["uid"]}
        annotations = {"pv.kubernetes.io/provisioned-by": PROVISIONER}
        kube.create(_volume(name, tmp_path / "provisioned", storage_class, annotations=annotations, spec={"claimRef": ref}))
        volumes.append(name)
        eventually(lambda: _phase(kube, PERSISTENT_VOLUME_CLAIMS, "data", sim_namespace) == "Bound", timeout=60, what="the claim to bind")
        dependency = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "data", "namespace": sim_namespace, "scope": "workflow"}

        def ended(status: dict[str, Any], live: Any) -> dict[str, Any]:
            status["dependencyRefs"] = [dependency]
            return cond.set_lifecycle(status, cond.FAILED, "NoNodes", "ended before the test", "2026-01-01T00:00:00Z")

        kube.write_status(WORKFLOWS, wf, ended)
        with shipped_controller(simcluster, installed, sim_namespace, tmp_path) as controller:
            kube.delete(WORKFLOWS, "keeps-data", sim_namespace)

            def stamp() -> dict[str, str] | None:
                notes = ((_get(kube, PERSISTENT_VOLUMES, name) or {}).get("metadata") or {}).get("annotations") or {}
                return notes if ANNOTATION_WORKFLOW_UID in notes else None

            notes = eventually(stamp, timeout=60, what="the volume to carry the Workflow's stamp")
            assert notes[ANNOTATION_WORKFLOW_UID] == wf["metadata"]["uid"], controller.tail()
            assert notes[ANNOTATION_CLAIM_UID] == claim["metadata"]["uid"]

            def handed_back() -> bool:
                found = _get(kube, PERSISTENT_VOLUMES, name)
                return found is None or (found.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"

            eventually(handed_back, timeout=120, what="the Released volume's reclaim policy to become Delete")
            eventually(lambda: _get(kube, WORKFLOWS, "keeps-data", sim_namespace) is None, timeout=60, what="the Workflow to go")
    finally:
        with contextlib.suppress(ApiError):
            kube.delete(STORAGE_CLASSES, storage_class)


def _alice(kube: Any, simcluster: Any, namespace: str) -> Any:
    """alice, who may create, read and delete Workflows in ``namespace`` and nothing else."""
    from nvcre.runtime.kube.client import ApiServerClient

    kube.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "alice", "namespace": namespace}})
    rules = [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["workflows"], "verbs": ["create", "get", "list", "watch", "delete"]}]
    kube.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "alice", "namespace": namespace},
            "rules": rules,
        }
    )
    kube.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "alice", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "alice"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": namespace}],
        }
    )
    return ApiServerClient(simcluster.api_client(token=token_for(simcluster, namespace, "alice")))


def _grabbing_workflow(kube: Any, namespace: str, name: str, claim: str, volume: str, nodes: list[str]) -> dict[str, Any]:
    """A rendered Workflow for ``nodes`` with one more dependency: a claim that names ``volume``."""
    from nvcre.runtime import compile as compiler
    from nvcre.runtime.kube.resources import NODES

    cert = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": name, "namespace": namespace, "uid": "00000000-0000-0000-0000-000000000000"},
        "spec": {
            "target": {"nodeNames": nodes},
            "timeoutPerJob": "3m",
            "categories": [{"domain": "communication", "variant": "nccl-loopback"}],
        },
    }
    rendered = compiler.expand_certification(cert, compiler.cluster_facts(kube.list(NODES).items))[0]
    rendered["metadata"] = {"name": name, "namespace": namespace}
    grab = _claim(claim, namespace, "", volume)
    del grab["metadata"]["namespace"]
    rendered["spec"]["dependencies"] = [*rendered["spec"]["dependencies"], grab]
    return rendered


def test_a_workflow_authors_claim_never_gets_another_teams_volume_deleted(simcluster, kube, sim_namespace, volumes, installed, tmp_path):
    victim_ns = f"victim-{uuid.uuid4().hex[:6]}"
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": victim_ns}})
    try:
        # another team's volume, kept on Retain for recovery after its claim went: Released
        victim_dir, own_dir = tmp_path / "victim-data", tmp_path / "team-data"
        for folder in (victim_dir, own_dir):
            folder.mkdir()
            (folder / "db.txt").write_text("precious\n")
        victim, available = f"{victim_ns}-pv", f"{sim_namespace}-static-pv"
        kube.create(_volume(victim, victim_dir, ""))
        volumes.append(victim)
        kube.create(_claim("victim-claim", victim_ns, "", victim))
        eventually(lambda: _phase(kube, PERSISTENT_VOLUMES, victim) == "Bound", timeout=60, what="the victim's volume to bind")
        kube.delete(PERSISTENT_VOLUME_CLAIMS, "victim-claim", victim_ns)
        eventually(lambda: _phase(kube, PERSISTENT_VOLUMES, victim) == "Released", timeout=60, what="the victim's volume to be Released")
        # a pre-provisioned, Available volume meant for alice's own namespace
        kube.create(_volume(available, own_dir, ""))
        volumes.append(available)

        nodes = simcluster.add_nodes(profile="h100", count=1, prefix=f"{sim_namespace}-pv")
        alice = _alice(kube, simcluster, sim_namespace)
        try:
            with shipped_controller(simcluster, installed, sim_namespace, tmp_path) as controller:
                alice.create(_grabbing_workflow(kube, sim_namespace, "pvgrab", "grab", victim, nodes))
                alice.create(_grabbing_workflow(kube, sim_namespace, "pvgrab2", "grab2", available, nodes))

                def ended(name: str) -> bool:
                    return cond.lifecycle((_get(kube, WORKFLOWS, name, sim_namespace) or {}).get("status")) in (cond.SUCCEEDED, cond.FAILED)

                for name in ("pvgrab", "pvgrab2"):
                    eventually(lambda name=name: ended(name), timeout=240, what=f"Workflow {name} to end")
                eventually(
                    lambda: _phase(kube, PERSISTENT_VOLUME_CLAIMS, "grab2", sim_namespace) == "Bound",
                    timeout=60,
                    what="alice's second claim to bind the Available volume",
                )
                assert _phase(kube, PERSISTENT_VOLUME_CLAIMS, "grab", sim_namespace) == "Pending"
                for name in ("pvgrab", "pvgrab2"):
                    alice.delete(WORKFLOWS, name, sim_namespace)
                for name in ("pvgrab", "pvgrab2"):
                    eventually(
                        lambda name=name: _get(kube, WORKFLOWS, name, sim_namespace) is None, timeout=120, what=f"Workflow {name} to go"
                    )
                tail = controller.tail()
        finally:
            alice.close()
        for name, folder in ((victim, victim_dir), (available, own_dir)):
            found = _get(kube, PERSISTENT_VOLUMES, name)
            assert found is not None, f"{name} was deleted\n{tail}"
            assert found["spec"]["persistentVolumeReclaimPolicy"] == "Retain", tail
            assert ANNOTATION_WORKFLOW_UID not in (found["metadata"].get("annotations") or {})
            assert (folder / "db.txt").read_text() == "precious\n"
        assert "reclaim policy switched" not in tail
    finally:
        with contextlib.suppress(ApiError):
            kube.delete(NAMESPACES, victim_ns)
