"""``setup init | status | reset`` against clusters of their own, through the installed ``nvcrectl``.

The cluster here is private to the module: ``reset`` removes our CRDs, which the session's
shared clusters need. The bare control plane starts without Kubeflow Trainer or JobSet: the deps
phase installs them there from the pinned Trainer module's chart (rendered by the helm the tests
build; nothing is downloaded), marks them, skips them on a second run and removes them on reset;
a JobSet someone else installed is left untouched. Later, the third-party CRDs alone (no
controllers) give the missing-dependency path. A fresh simulated cluster, where a ``setup init``
ends with ``setup status`` all present, is tested in ``test_setup_cluster_sim.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.gotools import go_tool, unavailable

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = Path(sys.executable).parent / "nvcrectl"
MARK = "nvcre.nvidia.com/installed-by"
TRAINER_CRDS = {"trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org", "clustertrainingruntimes.trainer.kubeflow.org"}
JOBSET_CRD = "jobsets.jobset.x-k8s.io"


@pytest.fixture(scope="module")
def bare_cluster(request: pytest.FixtureRequest) -> Iterator[object]:
    from nvcre.testing import binaries
    from nvcre.testing.controlplane import ControlPlane
    from nvcre.testing.pytest_plugin import _ensure_built, _ensure_third_party_crds

    _ensure_built(request, binaries.CORE)
    _ensure_third_party_crds(request)
    plane = ControlPlane(crd_dirs=[], controllers=True)  # the namespace controller finishes a reset's deletions
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


def nvcrectl(cluster: object, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}  # type: ignore[attr-defined]
    return subprocess.run([str(NVCRECTL), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture
def helm(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The helm the tests build, for the deps phase (NVCRE_HELM), and the pinned Trainer module present."""
    from nvcre.runtime.ops.install.trainer import JOBSET_MODULE, JOBSET_VERSION, TRAINER_MODULE, TRAINER_VERSION, pinned_module

    binary = go_tool(request, "helm")
    if pinned_module(TRAINER_MODULE, TRAINER_VERSION) is None or pinned_module(JOBSET_MODULE, JOBSET_VERSION) is None:
        unavailable("the pinned Trainer and JobSet Go modules are not in the module cache (testing/gobuild/build.py --sim fetches them)")
    monkeypatch.setenv("NVCRE_HELM", str(binary))
    return binary


def _crd_names(cluster: object) -> set[str]:
    from kubernetes import client

    with cluster.api_client() as api:  # type: ignore[attr-defined]
        return {c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items}


def _install_third_party(cluster: object) -> None:
    from nvcre.testing.crds import apply_crds, crd_files, load_crds, third_party_crd_dirs

    paths = [p for d in third_party_crd_dirs() for p in crd_files(d)]
    with cluster.api_client() as api:  # type: ignore[attr-defined]
        apply_crds(api, load_crds(paths))


def _crds(cluster: object) -> dict[str, dict]:
    """Every CRD by name: its labels and resourceVersion."""
    from kubernetes import client

    with cluster.api_client() as api:  # type: ignore[attr-defined]
        found = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    return {c.metadata.name: {"labels": c.metadata.labels or {}, "rv": c.metadata.resource_version} for c in found}


def _ours_in_trainer_namespace(cluster: object) -> dict[str, set[str]]:
    from kubernetes import client

    selector = f"{MARK}=nvcrectl-setup-deps"
    with cluster.api_client() as api:  # type: ignore[attr-defined]
        apps = client.AppsV1Api(api)
        admission = client.AdmissionregistrationV1Api(api)
        return {
            "deployments": {d.metadata.name for d in apps.list_deployment_for_all_namespaces(label_selector=selector).items},
            "webhooks": {w.metadata.name for w in admission.list_validating_webhook_configuration(label_selector=selector).items}
            | {w.metadata.name for w in admission.list_mutating_webhook_configuration(label_selector=selector).items},
            "namespaces": {n.metadata.name for n in client.CoreV1Api(api).list_namespace(label_selector=selector).items},
        }


def _wait_namespace_gone(cluster: object, name: str, timeout: float = 120.0) -> None:
    """Wait (bounded) until the controller-manager has emptied and removed the namespace."""
    from kubernetes import client
    from kubernetes.client import ApiException

    deadline = time.monotonic() + timeout
    with cluster.api_client() as api:  # type: ignore[attr-defined]
        core = client.CoreV1Api(api)
        while time.monotonic() < deadline:
            try:
                core.read_namespace(name)
            except ApiException as exc:
                assert exc.status == 404
                return
            time.sleep(0.5)
    raise AssertionError(f"namespace {name} was not deleted in {timeout:.0f}s")


def test_init_installs_trainer_on_a_bare_cluster_and_reset_removes_it(bare_cluster: object, helm: Path) -> None:
    assert not TRAINER_CRDS & set(_crds(bare_cluster)) and JOBSET_CRD not in _crds(bare_cluster)
    first = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "helm")
    assert first.returncode == 0, first.stderr
    assert "[deps] Installing Kubeflow Trainer v2.2.1 from the pinned module github.com/kubeflow/trainer/v2@v2.2.1..." in first.stderr
    crds = _crds(bare_cluster)
    for name in (*TRAINER_CRDS, JOBSET_CRD):
        assert crds[name]["labels"].get(MARK) == "nvcrectl-setup-deps", name
    ours = _ours_in_trainer_namespace(bare_cluster)
    assert {"kubeflow-trainer-controller-manager", "jobset-controller"} <= ours["deployments"]
    assert "validator.trainer.kubeflow.org" in ours["webhooks"] and ours["namespaces"] == {"kubeflow-system"}
    assert not any(name.endswith("nvcre.nvidia.com") for name in crds)  # --skip-phases=helm

    again = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "helm")
    assert again.returncode == 0, again.stderr
    assert "[deps] Kubeflow Trainer and JobSet are present." in again.stderr
    assert {n: c["rv"] for n, c in _crds(bare_cluster).items()} == {n: c["rv"] for n, c in crds.items()}

    kept = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr,helm,deps")
    assert kept.returncode == 0, kept.stderr
    assert TRAINER_CRDS <= set(_crds(bare_cluster))

    reset = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr,helm")
    assert reset.returncode == 0, reset.stderr
    assert "Kubeflow Trainer object(s) that setup init installed." in reset.stderr
    names = set(_crds(bare_cluster))
    assert not TRAINER_CRDS & names and JOBSET_CRD not in names
    gone = _ours_in_trainer_namespace(bare_cluster)
    assert not gone["deployments"] and not gone["webhooks"]
    _wait_namespace_gone(bare_cluster, "kubeflow-system")


def test_a_jobset_someone_else_installed_is_left_untouched(bare_cluster: object, helm: Path) -> None:
    from kubernetes import client

    from nvcre.testing.crds import apply_crds, crd_files, load_crds, sim_crd_dir

    webhook = {
        "metadata": {"name": "their-jobset-webhook"},
        "webhooks": [
            {
                "name": "vjobset.their.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "failurePolicy": "Ignore",
                "clientConfig": {"service": {"name": "jobset-webhook", "namespace": "their-jobset", "path": "/validate"}},
                "rules": [
                    {"apiGroups": ["jobset.x-k8s.io"], "apiVersions": ["v1alpha2"], "operations": ["CREATE"], "resources": ["jobsets"]}
                ],
            }
        ],
    }
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        apply_crds(api, load_crds(crd_files(sim_crd_dir("jobset"))))
        client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(webhook)
    try:
        before = _crds(bare_cluster)[JOBSET_CRD]
        init = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "helm")
        assert init.returncode == 0, init.stderr
        assert "JobSet is installed and was not installed by nvcrectl: it is left alone" in init.stderr
        after = _crds(bare_cluster)
        assert after[JOBSET_CRD] == before and MARK not in before["labels"]
        assert all(after[name]["labels"].get(MARK) for name in TRAINER_CRDS)
        assert "jobset-controller" not in _ours_in_trainer_namespace(bare_cluster)["deployments"]

        reset = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr,helm")
        assert reset.returncode == 0, reset.stderr
        final = _crds(bare_cluster)
        assert final[JOBSET_CRD] == before and not TRAINER_CRDS & set(final)
        _wait_namespace_gone(bare_cluster, "kubeflow-system")
    finally:
        with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
            client.AdmissionregistrationV1Api(api).delete_validating_webhook_configuration("their-jobset-webhook")


def test_setup_lifecycle(bare_cluster: object) -> None:
    # Trainer and JobSet CRDs nvcrectl did not install, without their controllers: init leaves
    # them alone, stops before changing anything and says what is missing and how to get it.
    _install_third_party(bare_cluster)
    first = nvcrectl(bare_cluster, "setup", "init", "--auto-approve")
    assert first.returncode == 1, first.stderr
    assert "[deps] Kubeflow Trainer is already installed (not by nvcrectl): it is left as it is." in first.stderr
    assert "missing: Kubeflow Trainer webhooks" in first.stderr
    assert "kubeflow/trainer.git/manifests/overlays/manager?ref=v2.2.1" in first.stderr
    assert not any(name.endswith("nvcre.nvidia.com") for name in _crd_names(bare_cluster))

    # No controllers run here, so their webhooks are absent: skip the dependency phase.
    init = nvcrectl(
        bare_cluster,
        "setup",
        "init",
        "--auto-approve",
        "--skip-phases",
        "deps",
        "--set",
        "manager.replicas=2",
        "--set",
        "rbac.scope=namespaced",
    )
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


def test_init_uses_a_namespace_it_finds_and_reset_keeps_it_with_the_users_objects(bare_cluster: object) -> None:
    from kubernetes import client

    namespace = "shared-tools"
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": namespace}})
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "user-config"}, "data": {"important": "keep-me"}})

    init = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps", "--set", f"namespace.name={namespace}")
    assert init.returncode == 0, init.stderr
    assert f"Namespace {namespace} already exists and was not created by nvcrectl" in init.stderr
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        core = client.CoreV1Api(api)
        assert "app.kubernetes.io/managed-by" not in (core.read_namespace(namespace).metadata.labels or {})
        assert client.AppsV1Api(api).read_namespaced_deployment("nvcre-manager", namespace)

    # reset finds the install in its own namespace, removes what it made and nothing else
    reset = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr")
    assert reset.returncode == 0, reset.stderr
    assert f"Kept Namespace {namespace}: it was not created by nvcrectl." in reset.stderr
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        core = client.CoreV1Api(api)
        assert core.read_namespace(namespace).status.phase == "Active"
        assert core.read_namespaced_config_map("user-config", namespace).data == {"important": "keep-me"}
        deployments = client.AppsV1Api(api).list_namespaced_deployment(namespace).items
        assert [d.metadata.name for d in deployments] == []
        assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items if c.metadata.name.startswith("nvcre")] == []

    # an object of the install's name that is not ours stops init before anything is written
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        client.CoreV1Api(api).create_namespaced_service_account(namespace, {"metadata": {"name": "nvcre-manager"}})
    refused = nvcrectl(bare_cluster, "setup", "init", "--auto-approve", "--skip-phases", "deps", "--set", f"namespace.name={namespace}")
    assert refused.returncode == 1
    assert f"ServiceAccount {namespace}/nvcre-manager" in refused.stderr and "not created by nvcrectl" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert not any(name.endswith("nvcre.nvidia.com") for name in _crd_names(bare_cluster))


def test_init_from_a_chart_ref_with_a_version_and_a_pull_secret(bare_cluster: object, helm: Path) -> None:
    """--chart-ref renders nvcre's objects with helm (here the chart directory setup chart writes)."""
    from kubernetes import client

    token = "ghp_exampletoken"
    args = ("setup", "init", "--auto-approve", "--skip-phases", "deps", "--chart-ref", str(REPO / "charts" / "nvcre"))
    init = nvcrectl(bare_cluster, *args, "--version", "0.8.2", "--image-pull-secret", token)
    assert init.returncode == 0, init.stderr
    assert "Created image pull Secret nvcre/nvcrectl-pull-secret for ghcr.io." in init.stderr
    assert token not in init.stderr + init.stdout
    with bare_cluster.api_client() as api:  # type: ignore[attr-defined]
        spec = client.AppsV1Api(api).read_namespaced_deployment("nvcre-manager", "nvcre").spec.template.spec
        secret = client.CoreV1Api(api).read_namespaced_secret("nvcrectl-pull-secret", "nvcre")
    assert spec.containers[0].image.endswith(":0.8.2")
    assert [s.name for s in spec.image_pull_secrets] == ["nvcrectl-pull-secret"]
    assert secret.type == "kubernetes.io/dockerconfigjson"
    assert secret.metadata.labels["app.kubernetes.io/managed-by"] == "nvcrectl"

    again = nvcrectl(bare_cluster, *args, "--image-pull-secret", token)
    assert again.returncode == 0, again.stderr
    assert "Renewed image pull Secret nvcre/nvcrectl-pull-secret" in again.stderr

    bad = nvcrectl(bare_cluster, *args, "--version", "latest")
    assert bad.returncode == 2 and "--version 'latest'" in bad.stderr and "Traceback" not in bad.stderr

    reset = nvcrectl(bare_cluster, "setup", "reset", "--auto-approve", "--skip-phases", "cr")
    assert reset.returncode == 0, reset.stderr
    assert not any(name.endswith("nvcre.nvidia.com") for name in _crd_names(bare_cluster))


def test_the_cpu_system_node_is_never_targeted_nor_reported() -> None:
    """Offline: the planner over a system node and two GPU nodes plans the GPU nodes only."""
    import yaml

    from nvcre.compiler.facts import ClusterFacts
    from nvcre.compiler.plan.planner import plan_workflow
    from nvcre.testing.simprofiles import GPU_RESOURCE, node_object, profile

    def ready(node: dict) -> dict:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        return node

    system = ready(node_object("system-0", profile("cpu"), "", 0))
    assert "nvidia.com/gpu.present" not in system["metadata"]["labels"]
    assert not system["spec"]["taints"] and GPU_RESOURCE not in system["status"]["allocatable"]
    gpus = [ready(node_object(f"h100-{i}", profile("h100"), "", i)) for i in range(2)]
    workflow = yaml.safe_load((REPO / "tests" / "fixtures" / "workflows" / "mpi-all-reduce.yaml").read_text())
    plan = plan_workflow(workflow, ClusterFacts(nodes=(system, *gpus)))
    assert set(plan.target_nodes) == {"h100-0", "h100-1"}
    assert "system-0" not in plan.excluded_nodes
    assert all("system-0" not in group.nodes for group in plan.groups)
