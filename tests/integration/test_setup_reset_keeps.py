"""``setup reset`` removes only what nvcrectl made and nothing that others still use (the CLI as installed).

A bare control plane (the namespace controller runs, so deletions finish). ``setup init`` makes
the ``nvcre`` namespace and the install; the deps phase's Kubeflow Trainer is stood in for by the
objects that phase leaves, marked as it marks them (the three Trainer CRDs, the
``kubeflow-system`` namespace, a ServiceAccount in it), so no helm is needed. Then other teams move
in, as in the audit's reproducer: a ConfigMap in ``nvcre``, a ConfigMap and a Deployment in
``kubeflow-system``, a TrainJob in their own namespace.

A plain reset keeps both namespaces with the other teams' objects, and the whole Trainer while a
TrainJob it did not make exists, and says what it kept and why. ``--delete-crd`` names the CRD
to delete anyway: the Trainer goes, the namespace that still holds others' objects stays.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = Path(sys.executable).parent / "nvcrectl"
DEPS_MARK = {"nvcre.nvidia.com/installed-by": "nvcrectl-setup-deps"}
TRAINER_CRDS = ("trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org")


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    from nvcre.testing import binaries
    from nvcre.testing.controlplane import ControlPlane
    from nvcre.testing.pytest_plugin import _ensure_built, _ensure_third_party_crds

    _ensure_built(request, binaries.CORE)
    _ensure_third_party_crds(request)
    plane = ControlPlane(crd_dirs=[], controllers=True)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def nvcrectl(cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run([str(NVCRECTL), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def _trainer_as_the_deps_phase_leaves_it(kube: Any) -> None:
    from nvcre.testing.crds import crd_files, load_crds, third_party_crd_dirs

    crds = [c for c in load_crds([p for d in third_party_crd_dirs() for p in crd_files(d)]) if c["metadata"]["name"] in TRAINER_CRDS]
    assert len(crds) == 3
    for crd in crds:
        crd["metadata"]["labels"] = {**(crd["metadata"].get("labels") or {}), **DEPS_MARK}
        crd.pop("status", None)
        kube.apply(crd)
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow-system", "labels": dict(DEPS_MARK)}})
    sa = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "kubeflow-trainer-controller-manager", "namespace": "kubeflow-system"},
    }
    sa["metadata"]["labels"] = dict(DEPS_MARK)
    kube.create(sa)


def _other_teams(kube: Any) -> None:
    from nvcre.runtime.kube.errors import ApiError
    from tests.integration.integration_helpers import eventually

    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "user-config", "namespace": "nvcre"}, "data": {"k": "v"}})
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "other-team-config", "namespace": "kubeflow-system"},
            "data": {"owner": "katib-team"},
        }
    )
    labels = {"app": "katib-controller"}
    kube.create(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "katib-controller", "namespace": "kubeflow-system"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            },
        }
    )
    kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}})
    userjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "userjob", "namespace": "ml-team"},
        "spec": {"runtimeRef": {"name": "their-runtime"}, "suspend": True},
    }

    def created() -> bool:
        try:
            kube.create(userjob)
        except ApiError as exc:
            if exc.status == 409:
                return True
            if exc.status in (404, 429, 503):  # the new CRD is not served yet
                return False
            raise
        return True

    eventually(created, timeout=60, what="the TrainJob to be created")


def _exists(kube: Any, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
    from nvcre.runtime.kube.errors import ApiNotServed, NotFound

    try:
        live = kube.get(kube.resource_for(api_version, kind), name, namespace)
    except (NotFound, ApiNotServed):
        return False
    return not (live.get("metadata") or {}).get("deletionTimestamp")


def test_reset_keeps_what_other_teams_put_in_our_namespaces_and_the_trainer_they_use(cluster):
    from nvcre.runtime.kube.client import ApiServerClient

    kube = ApiServerClient.from_kubeconfig(str(cluster.kubeconfig))
    try:
        init = nvcrectl(cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps")
        assert init.returncode == 0, init.stderr
        _trainer_as_the_deps_phase_leaves_it(kube)
        _other_teams(kube)

        reset = nvcrectl(cluster, "setup", "reset", "--auto-approve")
        assert reset.returncode == 0, reset.stderr
        err = reset.stderr
        assert "Kept Namespace nvcre: it holds objects nvcrectl did not create (ConfigMap nvcre/user-config)" in err, err
        assert (
            "Kept CustomResourceDefinition trainjobs.trainer.kubeflow.org: it holds 1 object(s) nvcrectl did not create (TrainJob ml-team/userjob)"
            in err
        )
        assert "pass --delete-crd trainjobs.trainer.kubeflow.org to delete it anyway" in err
        assert "Kept the whole Kubeflow Trainer install" in err
        assert _exists(kube, "v1", "Namespace", "nvcre") and _exists(kube, "v1", "ConfigMap", "user-config", "nvcre")
        assert not _exists(kube, "apps/v1", "Deployment", "nvcre-manager", "nvcre")  # the install itself went
        assert not _exists(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "workflows.nvcre.nvidia.com")
        assert all(_exists(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name) for name in TRAINER_CRDS)
        assert _exists(kube, "trainer.kubeflow.org/v1alpha1", "TrainJob", "userjob", "ml-team")
        assert _exists(kube, "v1", "ConfigMap", "other-team-config", "kubeflow-system")
        assert _exists(kube, "apps/v1", "Deployment", "katib-controller", "kubeflow-system")

        # asked by name: the Trainer CRDs go (and the TrainJob with them); the shared namespace stays
        named = nvcrectl(cluster, "setup", "reset", "--auto-approve", "--delete-crd", "trainjobs.trainer.kubeflow.org")
        assert named.returncode == 0, named.stderr
        assert "Kept Namespace kubeflow-system: it holds objects nvcrectl did not create" in named.stderr, named.stderr
        assert (
            "ConfigMap kubeflow-system/other-team-config" in named.stderr and "Deployment kubeflow-system/katib-controller" in named.stderr
        )
        assert not any(_exists(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition", name) for name in TRAINER_CRDS)
        assert not _exists(kube, "v1", "ServiceAccount", "kubeflow-trainer-controller-manager", "kubeflow-system")
        assert _exists(kube, "v1", "Namespace", "kubeflow-system")
        assert _exists(kube, "v1", "ConfigMap", "other-team-config", "kubeflow-system")
        assert _exists(kube, "apps/v1", "Deployment", "katib-controller", "kubeflow-system")
    finally:
        kube.close()


def test_delete_crd_names_only_the_crds_setup_installs(cluster):
    reset = nvcrectl(cluster, "setup", "reset", "--auto-approve", "--delete-crd", "workflows.nvcre.nvidia.com")
    assert reset.returncode == 2
    assert "--delete-crd workflows.nvcre.nvidia.com: not a CRD setup init installs" in reset.stderr
    assert "Traceback" not in reset.stderr and reset.stdout == ""
