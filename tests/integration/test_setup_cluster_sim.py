"""`setup init|status|reset` and `run --setup --cleanup` on a fresh simulated GPU cluster."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.integration.integration_helpers import fast_settings
from tests.integration.test_setup_cluster import _crd_names, nvcrectl

pytestmark = [pytest.mark.integration, pytest.mark.sim]


@pytest.fixture(scope="module")
def fresh_simcluster(request: pytest.FixtureRequest) -> Iterator[object]:
    """A simulated cluster where nvcre was never installed: no nvcre CRDs, one CPU node, two GPU nodes."""
    from nvcre.testing.pytest_plugin import _ensure_sim_built
    from nvcre.testing.simcluster import SimCluster

    _ensure_sim_built(request)
    cluster = SimCluster(profile="h100", nodes=2, system_nodes=1, project_crds=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def _status(cluster: object) -> tuple[int, dict[str, dict]]:
    result = nvcrectl(cluster, "setup", "status", "-o", "json")
    assert result.stdout, result.stderr
    return result.returncode, {c["name"]: c for c in json.loads(result.stdout)}


def _status_settled(cluster: object, timeout: float = 90.0) -> tuple[int, dict[str, dict]]:
    """``setup status`` once the controller's Deployment had time to become Ready."""
    deadline = time.monotonic() + timeout
    while True:
        code, components = _status(cluster)
        if code == 0 or time.monotonic() > deadline:
            return code, components
        time.sleep(2.0)


def _manager_memory_limit(cluster: object) -> str:
    from kubernetes import client

    with cluster.api_client() as api:  # type: ignore[attr-defined]
        deployment = client.AppsV1Api(api).read_namespaced_deployment("nvcre-manager", "nvcre")
    return str(deployment.spec.template.spec.containers[0].resources.limits["memory"])


@pytest.mark.sim
def test_init_status_reset_on_a_fresh_simulated_cluster(fresh_simcluster: object) -> None:
    cluster = fresh_simcluster
    code, before = _status(cluster)
    assert code == 1
    assert not before["CustomResourceDefinition (7)"]["present"]
    assert before["controller Deployment nvcre/nvcre-manager"]["detail"] == "not installed"
    assert before["Kubeflow Trainer webhooks"]["present"] and before["JobSet webhooks"]["present"]

    init = nvcrectl(cluster, "setup", "init", "--auto-approve", "--set", "manager.resources.limits.memory=1Gi")
    assert init.returncode == 0, init.stderr
    assert "Kubeflow Trainer and JobSet are present." in init.stderr
    assert "Setup complete." in init.stderr

    code, components = _status_settled(cluster)
    missing = {name: c["detail"] for name, c in components.items() if not c["present"]}
    assert code == 0 and not missing, missing
    deployment = components["controller Deployment nvcre/nvcre-manager"]
    assert deployment["detail"] == "1/1 replicas ready"
    assert components["GPU nodes (nvidia.com/gpu.present=true)"]["detail"] == "2 node(s)"  # the CPU node is not one
    assert components["DCGM Service gpu-operator/nvidia-dcgm"]["present"]
    text = nvcrectl(cluster, "setup", "status")
    assert text.returncode == 0 and "MISSING" not in text.stdout

    # A second init without --set keeps the value set on the first.
    assert _manager_memory_limit(cluster) == "1Gi"
    again = nvcrectl(cluster, "setup", "init", "--auto-approve")
    assert again.returncode == 0, again.stderr
    assert "kept on the cluster (manager.resources.limits.memory)" in again.stderr
    assert _manager_memory_limit(cluster) == "1Gi"

    reset = nvcrectl(cluster, "setup", "reset", "--auto-approve")
    assert reset.returncode == 0, reset.stderr
    names = _crd_names(cluster)
    assert not any(name.endswith("nvcre.nvidia.com") for name in names)
    assert "jobsets.jobset.x-k8s.io" in names

    code, after = _status(cluster)
    assert code == 1
    assert not after["CustomResourceDefinition (7)"]["present"]
    assert after["CustomResourceDefinition (7)"]["detail"].startswith("missing: ")
    assert after["controller Deployment nvcre/nvcre-manager"] == {
        "name": "controller Deployment nvcre/nvcre-manager",
        "present": False,
        "detail": "not installed",
    }
    assert after["JobSet CRD"]["present"]


@pytest.mark.sim
def test_run_with_setup_and_cleanup_leaves_nothing_behind(fresh_simcluster: object) -> None:
    from nvcre.runtime.controller import Controller, ControllerConfig
    from nvcre.runtime.kube.client import ApiServerClient

    cluster = fresh_simcluster
    # The in-process controller needs the CRDs before it starts; --setup then applies them again.
    first = nvcrectl(cluster, "setup", "init", "--auto-approve")
    assert first.returncode == 0, first.stderr
    namespace = "setup-run"
    kube = ApiServerClient.from_kubeconfig(str(cluster.kubeconfig))  # type: ignore[attr-defined]
    settings = fast_settings()
    config = ControllerConfig(
        namespace=namespace, metrics_address="127.0.0.1:0", health_address="127.0.0.1:0", leader_elect=False, settings=settings
    )
    controller = Controller(kube, config).start()
    try:
        run = nvcrectl(
            cluster,
            "certification",
            "run",
            "--category",
            "communication/nccl-all-reduce",
            "--name",
            "with-setup",
            "-n",
            namespace,
            "--setup",
            "--image",
            "nvcre/manager:e2e",
            "--wait",
            "--timeout",
            "4m",
            "--cleanup",
        )
    finally:
        controller.stop()
        kube.close()
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines[0] == "[setup] Installing dependencies..."
    assert "[setup] Setup complete." in lines
    assert lines.index("[setup] Setup complete.") < lines.index(f"Certification with-setup created in namespace {namespace}.")
    assert "[watch] Certification succeeded." in run.stderr
    assert "Result:       PASSED" in run.stdout
    tail = lines[lines.index("[cleanup] Cleaning up...") :]
    assert tail[:3] == ["[cleanup] Cleaning up...", "[cleanup] Deleting certification...", f"[cleanup] Deleting namespace {namespace}..."]
    assert "[cleanup] Resetting setup (removing the installed components)..." in tail
    assert tail[-1] == "[cleanup] Done."

    from kubernetes import client
    from kubernetes.client import ApiException

    with cluster.api_client() as api:  # type: ignore[attr-defined]
        with pytest.raises(ApiException) as gone:
            client.CoreV1Api(api).read_namespace(namespace)
        assert gone.value.status == 404
    names = _crd_names(cluster)
    assert not any(name.endswith("nvcre.nvidia.com") for name in names)
    assert "jobsets.jobset.x-k8s.io" in names
