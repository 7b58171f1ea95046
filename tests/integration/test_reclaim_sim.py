"""A deleted Workflow hands its claim's Retain volume back, on the simulated cluster.

The volume and the claim are bound by the real kube-controller-manager; the claim is owned by
a Workflow that already ended (so the controller only holds it by its finalizer). Deleting the
Workflow must stamp the volume with the Workflow's UID, wait while the volume is Bound, and,
once the claim is gone and the volume Released, switch its reclaim policy to Delete before the
Workflow goes.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from integration_helpers import eventually, fast_settings

from nvcre.compiler.vocabulary import ANNOTATION_WORKFLOW_UID, WORKFLOW_FINALIZER
from nvcre.runtime.controller import Controller, ControllerConfig
from nvcre.runtime.kube.errors import NotFound
from nvcre.runtime.kube.resources import WORKFLOWS
from nvcre.runtime.reconcile import conditions as cond
from nvcre.runtime.reconcile.reclaim import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

pytestmark = [pytest.mark.integration, pytest.mark.sim]

RENDERED = Path(__file__).resolve().parents[2] / "examples/flux/rendered/h100-acceptance/h100-acceptance-communication-nccl-loopback.yaml"


def _get(kube: Any, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return kube.get(resource, name, namespace)
    except NotFound:
        return None


@pytest.fixture
def volume(kube, sim_namespace) -> Iterator[str]:
    """A Retain hostPath volume for this test alone (volumes outlive namespaces: removed here)."""
    name = f"{sim_namespace}-data"
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": f"{sim_namespace}-manual",
                "hostPath": {"path": f"/tmp/{name}"},
            },
        }
    )
    try:
        yield name
    finally:
        with contextlib.suppress(NotFound):
            kube.delete(PERSISTENT_VOLUMES, name)


@pytest.fixture
def ended_workflow(kube, sim_namespace) -> dict[str, Any]:
    """A Workflow that already failed, holding the controller's finalizer."""
    rendered = yaml.safe_load(RENDERED.read_text())
    kube.create(
        {
            "apiVersion": rendered["apiVersion"],
            "kind": "Workflow",
            "metadata": {"name": "keeps-data", "namespace": sim_namespace, "finalizers": [WORKFLOW_FINALIZER]},
            "spec": copy.deepcopy(rendered["spec"]),
        }
    )
    return kube.get(WORKFLOWS, "keeps-data", sim_namespace)


def test_deleting_a_workflow_switches_its_released_claims_volume_to_delete(simcluster, kube, sim_namespace, volume, ended_workflow):
    wf = ended_workflow
    owner = {"apiVersion": wf["apiVersion"], "kind": "Workflow", "name": "keeps-data", "uid": wf["metadata"]["uid"], "controller": True}
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": sim_namespace, "ownerReferences": [owner]},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": f"{sim_namespace}-manual",
                "volumeName": volume,
            },
        }
    )
    ref = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "name": "data", "namespace": sim_namespace, "scope": "workflow"}

    def ended(status: dict[str, Any], live: Any) -> dict[str, Any]:
        status["dependencyRefs"] = [ref]
        return cond.set_lifecycle(status, cond.FAILED, "NoNodes", "ended before the test", "2026-01-01T00:00:00Z")

    kube.write_status(WORKFLOWS, wf, ended)
    eventually(
        lambda: ((_get(kube, PERSISTENT_VOLUMES, volume) or {}).get("status") or {}).get("phase") == "Bound",
        timeout=60,
        what="the controller-manager to bind the volume",
    )

    config = ControllerConfig(
        namespace=sim_namespace, metrics_address="0", health_address="0", leader_elect=False, settings=fast_settings()
    )
    controller = Controller(kube, config).start()
    try:
        kube.delete(WORKFLOWS, "keeps-data", sim_namespace)
        stamped = eventually(
            lambda: (_get(kube, PERSISTENT_VOLUMES, volume) or {}).get("metadata", {}).get("annotations", {}).get(ANNOTATION_WORKFLOW_UID),
            timeout=60,
            what="the volume to carry the Workflow's UID",
        )
        assert stamped == wf["metadata"]["uid"]

        def handed_back() -> bool:
            found = _get(kube, PERSISTENT_VOLUMES, volume)
            return found is None or (found.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"

        eventually(handed_back, timeout=120, what="the Released volume's reclaim policy to become Delete")
        eventually(lambda: _get(kube, WORKFLOWS, "keeps-data", sim_namespace) is None, timeout=60, what="the Workflow to go")
        assert _get(kube, PERSISTENT_VOLUME_CLAIMS, "data", sim_namespace) is None
    finally:
        controller.stop()
