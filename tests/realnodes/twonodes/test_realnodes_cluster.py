"""Real worker nodes: two kubelets with their own containerd register Ready with the profile's
GPU Feature Discovery labels, run a pod each, pods on different nodes reach each other through
headless-service names that the environment's CoreDNS answers, ``kubectl logs`` and ``exec`` reach
the kubelets through the API server's egress proxy, the device plugin hands a pod its GPUs and
an unhealthy GPU leaves the node's allocatable, and each real fault acts on the real data path.
The package's shared environment serves; its stop, checked there, leaves the host as it was."""

from __future__ import annotations

import ipaddress
import time
import uuid
from typing import Any

import pytest

from tests.realnodes.realnodes_helpers import Environment

pytestmark = [pytest.mark.integration, pytest.mark.realnodes]

SERVICE = "peers"


@pytest.fixture(scope="module")
def realcluster(env: Environment) -> Any:
    """The package's shared two nodes."""
    return env.cluster


def _core(cluster: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(cluster.api_client())


def _pod(name: str, node: str, image: str, script: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": SERVICE}},
        "spec": {
            "hostname": name,
            "subdomain": SERVICE,
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"operator": "Exists"}],
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "main", "image": image, "imagePullPolicy": "Never", "command": ["/bin/busybox", "sh", "-c", script]}],
        },
    }


def _exec(core: Any, namespace: str, pod: str, command: list[str]) -> str:
    from kubernetes.stream import stream

    return str(
        stream(core.connect_get_namespaced_pod_exec, pod, namespace, command=command, stderr=True, stdin=False, stdout=True, tty=False)
    )


@pytest.fixture(scope="module")
def peers(realcluster: Any) -> Any:
    """One pod per node serving its name over HTTP, behind a headless Service; yields (namespace, pods)."""
    core = _core(realcluster)
    namespace = f"rn-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    core.create_namespaced_service(
        namespace, {"metadata": {"name": SERVICE}, "spec": {"clusterIP": "None", "selector": {"app": SERVICE}, "ports": [{"port": 8080}]}}
    )
    image = realcluster.test_image.reference
    names = []
    for index, node in enumerate(realcluster.node_names):
        name = f"w-{index}"
        script = f"mkdir -p /www && echo served-by-{name} > /www/id && echo {name} started && exec /bin/busybox httpd -f -p 8080 -h /www"
        core.create_namespaced_pod(namespace, _pod(name, node, image, script))
        names.append(name)
    deadline = time.monotonic() + 90
    pods: dict[str, Any] = {}
    while time.monotonic() < deadline:
        pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
        if len(pods) == len(names) and all(p.status.phase == "Running" and p.status.pod_ip for p in pods.values()):
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"pods not Running: {[(n, p.status.phase) for n, p in pods.items()]}")
    yield namespace, pods
    core.delete_namespace(namespace)


def test_each_real_node_is_ready_with_the_profile_labels_and_a_real_runtime(realcluster: Any) -> None:
    nodes = {n.metadata.name: n for n in _core(realcluster).list_node().items}
    assert sorted(nodes) == sorted(realcluster.node_names) == ["h100-onprem-0", "h100-onprem-1"]
    for index, name in enumerate(realcluster.node_names):
        node = nodes[name]
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        assert node.status.node_info.kubelet_version == "v1.36.3"
        assert node.status.node_info.container_runtime_version.startswith("containerd://")
        assert node.metadata.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
        assert node.metadata.labels["nvidia.com/gpu.present"] == "true"
        assert ("nvidia.com/gpu", "present", "NoSchedule") in [(t.key, t.value, t.effect) for t in node.spec.taints or []]
        assert str(node.status.allocatable["nvidia.com/gpu"]) == "8"  # from the node's device plugin
        addresses = {a.type: a.address for a in node.status.addresses}
        assert addresses["InternalIP"] == f"10.250.0.{10 + index}"


def test_a_pod_runs_on_each_node_with_an_address_from_that_nodes_subnet(realcluster: Any, peers: Any) -> None:
    _, pods = peers
    for index, node in enumerate(realcluster.node_names):
        pod = pods[f"w-{index}"]
        assert pod.spec.node_name == node
        assert ipaddress.ip_address(pod.status.pod_ip) in ipaddress.ip_network(f"10.244.{index}.0/24")


def test_logs_and_exec_reach_the_kubelet_through_the_api_server(realcluster: Any, peers: Any) -> None:
    namespace, _ = peers
    core = _core(realcluster)
    assert "w-1 started" in core.read_namespaced_pod_log("w-1", namespace)
    assert _exec(core, namespace, "w-0", ["/bin/busybox", "cat", "/www/id"]).strip() == "served-by-w-0"


def test_headless_service_names_resolve_in_pods_and_reach_the_pod_on_the_other_node(realcluster: Any, peers: Any) -> None:
    namespace, pods = peers
    core = _core(realcluster)
    fqdn = f"w-1.{SERVICE}.{namespace}.svc.cluster.local"
    assert realcluster.resolve(fqdn) == (0, [pods["w-1"].status.pod_ip])
    answer = _exec(core, namespace, "w-0", ["/bin/busybox", "nslookup", fqdn])
    assert pods["w-1"].status.pod_ip in answer, answer
    # the short name through the pod's search path, then an HTTP fetch across the two nodes' bridges
    fetched = _exec(core, namespace, "w-0", ["/bin/busybox", "wget", "-q", "-O", "-", f"http://w-1.{SERVICE}:8080/id"])
    assert fetched.strip() == "served-by-w-1"
    assert realcluster.resolve(f"nothing-here.{namespace}.svc.cluster.local")[0] == 3  # NXDOMAIN, nothing forwarded


def _allocatable_gpus(core: Any, node: str) -> str:
    return str((core.read_node(node).status.allocatable or {}).get("nvidia.com/gpu"))


def test_the_device_plugin_hands_its_gpus_to_a_pod_that_asks_for_them(realcluster: Any, peers: Any) -> None:
    namespace, _ = peers
    core = _core(realcluster)
    node = realcluster.node_names[0]
    pod = _pod(
        "gpu-user",
        node,
        realcluster.test_image.reference,
        "cat /run/nvcre/gpu/state.json; echo; echo visible=$NVIDIA_VISIBLE_DEVICES; sleep 3600",
    )
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
    core.create_namespaced_pod(namespace, pod)
    deadline = time.monotonic() + 60
    log = ""
    while "visible=" not in log and time.monotonic() < deadline:
        time.sleep(0.5)
        if core.read_namespaced_pod(pod["metadata"]["name"], namespace).status.phase == "Running":
            log = core.read_namespaced_pod_log("gpu-user", namespace)
    assert f"visible={','.join(realcluster.gpu_ids(node))}" in log
    assert '{"unhealthy": []}' in log
    core.delete_namespaced_pod("gpu-user", namespace, grace_period_seconds=0)


def test_an_unhealthy_gpu_drops_from_allocatable_and_comes_back_when_healed(realcluster: Any) -> None:
    core = _core(realcluster)
    node = realcluster.node_names[1]
    assert _allocatable_gpus(core, node) == "8"
    ids = realcluster.set_unhealthy_gpus(node, 2)
    assert ids == realcluster.gpu_ids(node)[:2]
    deadline = time.monotonic() + 40
    while _allocatable_gpus(core, node) != "6" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _allocatable_gpus(core, node) == "6"
    assert str(core.read_node(node).status.capacity["nvidia.com/gpu"]) == "8"  # still there, just not usable
    realcluster.set_unhealthy_gpus(node, 0)
    deadline = time.monotonic() + 40
    while _allocatable_gpus(core, node) != "8" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _allocatable_gpus(core, node) == "8"


def _wget_seconds(core: Any, namespace: str, url: str) -> float:
    started = time.monotonic()
    out = _exec(core, namespace, "w-0", ["/bin/busybox", "sh", "-c", f"/bin/busybox wget -q -O - {url} | /bin/busybox wc -c"])
    assert out.strip() == str(4 << 20), out
    return time.monotonic() - started


def test_a_slow_link_fault_rate_limits_the_real_data_path_and_none_lifts_it(realcluster: Any, peers: Any) -> None:
    namespace, _ = peers
    core = _core(realcluster)
    _exec(core, namespace, "w-1", ["/bin/busybox", "dd", "if=/dev/zero", "of=/www/big", "bs=1048576", "count=4"])
    url = f"http://w-1.{SERVICE}:8080/big"
    node = realcluster.node_names[0]  # w-0's node: the filter shapes what its bridge sends to its pods
    free = _wget_seconds(core, namespace, url)
    assert str(realcluster.set_fault(node, "slow-link:8mbit")) == "slow-link:8mbit"
    limited = _wget_seconds(core, namespace, url)  # 32 Mbit at 8 Mbit/s: about 4 s
    realcluster.set_fault(node, "none")
    again = _wget_seconds(core, namespace, url)
    assert limited > 3.0 and limited > 3 * max(free, again), (free, limited, again)


def _fetch(core: Any, namespace: str, url: str) -> str:
    """What w-0 gets from ``url`` within 3 s, or the word ``unreachable``."""
    # busybox's own timeout around wget: Debian busybox 1.35's ``wget -T`` dies of a segmentation fault
    script = f"/bin/busybox timeout 3 /bin/busybox wget -q -O - {url} 2>/dev/null || echo unreachable"
    return _exec(core, namespace, "w-0", ["/bin/busybox", "sh", "-c", script]).strip()


def test_a_dropped_path_cuts_the_real_data_path_between_two_nodes_and_none_restores_it(realcluster: Any, peers: Any) -> None:
    namespace, pods = peers
    core = _core(realcluster)
    url = f"http://{pods['w-1'].status.pod_ip}:8080/id"  # by address: the name server is not on the dropped path
    node, peer = realcluster.node_names
    assert _fetch(core, namespace, url) == "served-by-w-1"
    assert str(realcluster.set_fault(node, f"dropped-path:{peer}")) == f"dropped-path:{peer}"
    assert _fetch(core, namespace, url) == "unreachable"
    assert _exec(core, namespace, "w-0", ["/bin/busybox", "cat", "/www/id"]).strip() == "served-by-w-0"  # the node itself is fine
    realcluster.set_fault(node, "none")
    assert _fetch(core, namespace, url) == "served-by-w-1"


def test_a_stopped_kubelet_turns_its_node_not_ready_and_none_brings_it_back(realcluster: Any) -> None:
    core = _core(realcluster)
    node = realcluster.node_names[1]

    def ready() -> bool:
        return any(c.type == "Ready" and c.status == "True" for c in core.read_node(node).status.conditions)

    realcluster.set_fault(node, "stopped-kubelet")
    deadline = time.monotonic() + 60
    while ready() and time.monotonic() < deadline:
        time.sleep(1)
    assert not ready()
    realcluster.set_fault(node, "none")
    deadline = time.monotonic() + 60
    while not ready() and time.monotonic() < deadline:
        time.sleep(1)
    assert ready()
