"""``setup init | status | reset`` against a real API server of their own.

The control plane here is private to the module: ``reset`` removes our CRDs, which the session's
shared clusters need.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bare_cluster(request: pytest.FixtureRequest) -> Iterator[object]:
    from nvcre.testing import binaries
    from nvcre.testing.controlplane import ControlPlane
    from nvcre.testing.pytest_plugin import _ensure_built, _ensure_third_party_crds

    _ensure_built(request, binaries.CORE)
    _ensure_third_party_crds(request)
    plane = ControlPlane(crd_dirs=[])
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def nvcrectl(cluster: object, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}  # type: ignore[attr-defined]
    return subprocess.run([sys.executable, "-m", "nvcre.cli.main", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _crd_names(cluster: object) -> set[str]:
    from kubernetes import client

    with cluster.api_client() as api:  # type: ignore[attr-defined]
        return {c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items}


def _install_third_party(cluster: object) -> None:
    from nvcre.testing.crds import apply_crds, crd_files, load_crds, third_party_crd_dirs

    paths = [p for d in third_party_crd_dirs() for p in crd_files(d)]
    with cluster.api_client() as api:  # type: ignore[attr-defined]
        apply_crds(api, load_crds(paths))


def test_setup_lifecycle(bare_cluster: object) -> None:
    # Without Kubeflow Trainer and JobSet, init stops before changing anything and says how to get them.
    first = nvcrectl(bare_cluster, "setup", "init", "--auto-approve")
    assert first.returncode == 1, first.stderr
    assert "missing: Kubeflow Trainer CRDs" in first.stderr
    assert "kubeflow/trainer.git/manifests/overlays/manager?ref=v2.2.1" in first.stderr
    assert not any(name.endswith("nvcre.nvidia.com") for name in _crd_names(bare_cluster))

    _install_third_party(bare_cluster)
    # No controllers run here, so their webhooks are absent: skip the dependency phase.
    init = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps",
                    "--set", "manager.replicas=2", "--set", "rbac.scope=namespaced")
    assert init.returncode == 0, init.stderr
    assert "Values: --set manager.replicas; --set rbac.scope" in init.stderr
    names = _crd_names(bare_cluster)
    assert {"certifications.nvcre.nvidia.com", "workflows.nvcre.nvidia.com", "jobs.nvcre.nvidia.com"} <= names

    # A second init without --set keeps the values applied before.
    again = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps")
    assert again.returncode == 0, again.stderr
    assert "kept on the cluster (manager.replicas, rbac.scope)" in again.stderr
    from kubernetes import client

    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        deployment = client.AppsV1Api(api).read_namespaced_deployment("nvcre-manager", "nvcre")
        assert deployment.spec.replicas == 2
        roles = {r.metadata.name for r in client.RbacAuthorizationV1Api(api).list_cluster_role().items}
        assert {"nvcre-manager-role", "nvcre-run-role"} <= roles
        profiles = client.CustomObjectsApi(api).list_cluster_custom_object("nvcre.nvidia.com", "v1alpha1", "logprofiles")
        assert {"nccl-bandwidth", "nccl-loopback", "megatron-training"} <= {p["metadata"]["name"] for p in profiles["items"]}

    # --reset-values keeps only rbac.scope / rbac.runNamespaces.
    reset_values = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps", "--reset-values")
    assert reset_values.returncode == 0, reset_values.stderr
    assert "kept on the cluster (rbac.scope)" in reset_values.stderr
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        assert client.AppsV1Api(api).read_namespaced_deployment("nvcre-manager", "nvcre").spec.replicas == 1

    status = nvcrectl(bare_cluster, "setup", "status", "-o", "json")
    components = {c["name"]: c for c in json.loads(status.stdout)}
    assert components["CustomResourceDefinition (7)"]["present"]
    assert components["JobSet CRD"]["present"]
    assert not components["JobSet webhooks"]["present"]  # no JobSet controller runs here
    assert not components["controller Deployment nvcre/nvcre-manager"]["present"]  # no kubelet either
    assert status.returncode == 1

    bad = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "nope")
    assert bad.returncode == 2 and "accepted: cr, helm, deps" in bad.stderr

    reset = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr")
    assert reset.returncode == 0, reset.stderr
    names = _crd_names(bare_cluster)
    assert not any(name.endswith("nvcre.nvidia.com") for name in names)
    assert "jobsets.jobset.x-k8s.io" in names
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        roles = {r.metadata.name for r in client.RbacAuthorizationV1Api(api).list_cluster_role().items}
    assert "nvcre-manager-role" not in roles
