"""Stand-in Nodes for rendering without a cluster: what a platform x GPU architecture looks like.

``nvcrectl workflow render --platform aws --gpu-arch h100`` plans a hand-written Workflow over
nodes like these. They carry what detection and planning read — the GPU Feature Discovery labels
(the product string the project's GPU table lists first for the architecture), a providerID the
platform table maps to the platform, allocatable GPUs and NICs from the catalog's GPU defaults —
and nothing else. Pure data, the same for the same arguments.
"""

from __future__ import annotations

from typing import Any

from .catalog import load_catalog
from .detect.tables import table
from .diagnostics import CompileError, error

__all__ = ["mock_nodes"]

#: a providerID per platform whose prefix the detection rules map back to it
_PROVIDER_IDS = {
    "aws": "aws:///us-east-1a/i-{n:017x}",
    "gcp": "gce://project/us-central1-a/gpu-{n}",
    "azure": "azure:///subscriptions/0/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/gpu-{n}",
    "oci": "ocid1.instance.oc1.iad.gpu{n}",
    "nscale": "nscale://gpu-{n}",
    "mistral": "metal3://gpu-{n}",
    "togetherai": "kubevirt://gpu-{n}",
    "forge": "",
    "onprem": "",
}


def mock_nodes(platform: str, gpu_arch: str, count: int = 2) -> list[dict[str, Any]]:
    """``count`` Ready GPU nodes of ``gpu_arch`` on ``platform``; CompileError for unknown ones."""
    products = (table("gpu_architectures").get("architectures") or {}).get(gpu_arch)
    problems = []
    if not products:
        problems.append(
            error(
                "UnknownGPUArchitecture",
                "--gpu-arch",
                f"no mock nodes for {gpu_arch!r}; known: " + ", ".join(sorted(table("gpu_architectures").get("architectures") or {})),
            )
        )
    if platform not in _PROVIDER_IDS:
        problems.append(
            error("UnknownPlatform", "--platform", f"no mock nodes for {platform!r}; known: " + ", ".join(sorted(_PROVIDER_IDS)))
        )
    if not 1 <= count <= 4096:
        problems.append(error("InvalidValue", "--nodes", f"--nodes must be 1 to 4096, got {count}"))
    if problems:
        raise CompileError(problems)
    gpus, nics, _ = load_catalog().gpu_defaults.lookup(gpu_arch, platform)
    nodes = []
    for n in range(count):
        name = f"{platform}-{gpu_arch}-{n}"
        allocatable = {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": str(gpus)}
        if nics:
            allocatable["rdma/ib"] = str(nics)
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/arch": "arm64" if gpu_arch.startswith("gb") else "amd64",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": str(products[0]),  # type: ignore[index]
            "nvidia.com/gpu.count": str(gpus),
        }
        if gpu_arch.startswith("gb"):
            labels["nvidia.com/gpu.clique"] = "mock-clique.0"
        if platform == "togetherai":
            labels["node-role.together.ai/worker"] = "true"
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {
                "allocatable": allocatable,
                "capacity": allocatable,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        provider = _PROVIDER_IDS[platform].format(n=n)
        if provider:
            node["spec"]["providerID"] = provider
        nodes.append(node)
    return nodes
