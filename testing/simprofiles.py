"""Node profiles of the simulated cluster and the Node objects built from them.

A GPU profile says what one simulated GPU node looks like: the GPU Feature Discovery
labels (product strings taken from the project's own GPU table, so detection maps
them back to the profile's architecture), allocatable GPUs and RDMA NICs, taints,
the CPU architecture, how nodes group into racks or NVLink cliques, and the
nominal NCCL bus bandwidth the workload player reports for a healthy group.

The ``cpu`` profile is a system node: no GPU labels, no GPU or NIC resources and no
taints, so ordinary pods (the controller's Deployment) schedule there and kwok marks
them Running, while certification discovery, which keeps only nodes labelled
``nvidia.com/gpu.present=true``, never targets or even reports it.
Everything here is pure: it returns plain dicts as the API server would accept them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
NIC_RESOURCE = "rdma/ib"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
ARM64_TAINT = {"key": "kubernetes.io/arch", "value": "arm64", "effect": "NoSchedule"}
KWOK_NODE_LABEL = ("type", "kwok")
PROFILE_LABEL = "sim.nvcre.io/profile"
DRA_DRIVER = "gpu.nvidia.com"

# Platforms whose GB200/GB300 overlays tolerate the arm64 taint trays carry there.
ARM64_TAINTED_PLATFORMS = frozenset({"", "onprem", "nscale", "mistral"})

# Node labels that group nodes into network domains, per platform (as clouds set them).
TOPOLOGY_KEYS: Mapping[str, str] = {
    "aws": "topology.k8s.aws/network-node-layer-1",
    "gcp": "cloud.google.com/gce-topology-block",
    "azure": "kubernetes.azure.com/ppg",
}
RACK_LABEL = "sim.nvcre.io/rack"
CLIQUE_LABEL = "nvidia.com/gpu.clique"


class ProfileError(ValueError):
    """An unknown profile or platform, or impossible node parameters."""


@dataclass(frozen=True)
class Profile:
    """What one simulated GPU node of a given kind offers."""

    name: str
    gpu_arch: str
    gpus: int
    nics: int
    cpu_arch: str  # amd64 or arm64
    gpu_memory_mib: int
    nodes_per_domain: int  # trays per NVL72 rack on GB parts, nodes per rack otherwise
    bus_bandwidth_gbps: float  # healthy multi-node all_reduce bus bandwidth
    loopback_bus_bandwidth_gbps: float  # single-node (NVLink only) bus bandwidth
    cuda_compute: str
    dra: bool = False

    @property
    def has_gpus(self) -> bool:
        """False for the ``cpu`` system profile."""
        return self.gpus > 0

    @property
    def nvlink_domains(self) -> bool:
        """GB parts: a rack is one multi-node NVLink domain (a clique)."""
        return self.gpu_arch.startswith("gb")

    @property
    def dra_name(self) -> str:
        """The product name as the DRA driver publishes it (NVML spelling)."""
        return product_string(self.gpu_arch).replace("-", " ")


_BASE: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile("h100", "h100", 8, 8, "amd64", 81559, 8, 370.0, 480.0, "9.0"),
        Profile("h200", "h200", 8, 8, "amd64", 143771, 8, 375.0, 485.0, "9.0"),
        Profile("b200", "b200", 8, 8, "amd64", 183359, 8, 390.0, 820.0, "10.0"),
        Profile("b300", "b300", 8, 8, "amd64", 275040, 8, 760.0, 850.0, "10.3"),
        Profile("gb200", "gb200", 4, 4, "arm64", 189471, 18, 850.0, 680.0, "10.0"),
        Profile("gb300", "gb300", 4, 4, "arm64", 284208, 18, 900.0, 720.0, "10.3"),
    )
}
DRA_SUFFIX = "-dra"
PROFILE_NAMES = tuple(_BASE) + tuple(f"{n}{DRA_SUFFIX}" for n in _BASE)
CPU_PROFILE_NAME = "cpu"
CPU_PROFILE = Profile(CPU_PROFILE_NAME, "", 0, 0, "amd64", 0, 1, 0.0, 0.0, "")


def profile(name: str) -> Profile:
    """The profile called ``name`` (``h100`` ... ``gb300``, each also as ``<name>-dra``, or ``cpu``)."""
    if name == CPU_PROFILE_NAME:
        return CPU_PROFILE
    base = name[: -len(DRA_SUFFIX)] if name.endswith(DRA_SUFFIX) else name
    if base not in _BASE:
        raise ProfileError(f"unknown node profile {name!r}; choose from {', '.join((*PROFILE_NAMES, CPU_PROFILE_NAME))}")
    found = _BASE[base]
    if base != name:
        return Profile(**{**found.__dict__, "name": name, "dra": True})
    return found


def product_string(gpu_arch: str) -> str:
    """The first ``nvidia.com/gpu.product`` value the project's GPU table lists for ``gpu_arch``."""
    from nvcre.compiler.detect.tables import table

    products = (table("gpu_architectures").get("architectures") or {}).get(gpu_arch)
    if not products:
        raise ProfileError(f"the project's GPU table has no product for {gpu_arch!r}")
    return str(products[0])


# ------------------------------------------------------------------ platforms

PLATFORMS = ("", "onprem", "aws", "gcp", "azure", "oci", "nscale", "mistral")

_INSTANCE_TYPES: Mapping[tuple[str, str], str] = {
    ("aws", "h100"): "p5.48xlarge",
    ("aws", "h200"): "p5en.48xlarge",
    ("aws", "b200"): "p6-b200.48xlarge",
    ("aws", "gb200"): "p6e-gb200.36xlarge",
    ("gcp", "h100"): "a3-megagpu-8g",
    ("gcp", "h200"): "a3-ultragpu-8g",
    ("gcp", "b200"): "a4-highgpu-8g",
    ("gcp", "gb200"): "a4x-highgpu-4g",
    ("azure", "h100"): "Standard_ND96isr_H100_v5",
    ("azure", "h200"): "Standard_ND96isr_H200_v5",
    ("azure", "gb200"): "Standard_ND128isr_NDR_GB200_v6",
    ("oci", "h100"): "BM.GPU.H100.8",
    ("oci", "b200"): "BM.GPU.B200.8",
}


def provider_id(platform: str, node: str) -> str:
    """``spec.providerID`` as each platform writes it (empty on-prem)."""
    digest = hashlib.sha256(node.encode()).hexdigest()
    if platform in ("", "onprem"):
        return ""
    if platform == "aws":
        return f"aws:///us-east-1a/i-{digest[:17]}"
    if platform == "gcp":
        return f"gce://sim-project/us-central1-a/{node}"
    if platform == "azure":
        return (
            "azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/sim/"
            f"providers/Microsoft.Compute/virtualMachineScaleSets/gpu/virtualMachines/{int(digest[:6], 16) % 1000}"
        )
    if platform == "oci":  # OCI writes the raw instance OCID, not an oci:// URL
        return f"ocid1.instance.oc1.iad.{digest[:40]}"
    if platform == "nscale":
        return f"nscale://sim/{node}"
    if platform == "mistral":
        return f"metal3://sim/{node}/{digest[:8]}"
    raise ProfileError(f"unknown platform {platform!r}; choose from {', '.join(p or 'onprem' for p in PLATFORMS[1:])}")


def check_platform(platform: str) -> str:
    """``platform`` normalised ("onprem" -> ""), or :class:`ProfileError`."""
    if platform not in PLATFORMS:
        raise ProfileError(f"unknown platform {platform!r}; choose from {', '.join(p for p in PLATFORMS if p)}")
    return "" if platform == "onprem" else platform


# ----------------------------------------------------------------------- nodes


def domain_of(index: int, prof: Profile) -> int:
    """Which rack (or NVLink clique) the ``index``-th node of a pool is in."""
    return index // prof.nodes_per_domain


def node_labels(name: str, prof: Profile, platform: str, index: int) -> dict[str, str]:
    """The labels a node of ``prof`` carries on ``platform`` (GFD labels unless DRA or ``cpu``)."""
    domain = domain_of(index, prof)
    labels = {
        KWOK_NODE_LABEL[0]: KWOK_NODE_LABEL[1],
        PROFILE_LABEL: prof.name,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": prof.cpu_arch,
    }
    if not prof.has_gpus:
        return labels
    labels[RACK_LABEL] = f"rack-{domain}"
    if not prof.dra:
        labels.update(
            {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product_string(prof.gpu_arch),
                "nvidia.com/gpu.count": str(prof.gpus),
                "nvidia.com/gpu.memory": str(prof.gpu_memory_mib),
                "nvidia.com/cuda.driver-version.major": "580",
                "nvidia.com/gpu.compute.major": prof.cuda_compute.split(".")[0],
            }
        )
        if prof.nvlink_domains:
            labels[CLIQUE_LABEL] = f"{_cluster_uuid(platform)}.{domain}"
    instance = _INSTANCE_TYPES.get((platform, prof.gpu_arch))
    if instance:
        labels["node.kubernetes.io/instance-type"] = instance
    topology_key = TOPOLOGY_KEYS.get(platform)
    if topology_key:
        labels[topology_key] = f"sim-block-{domain}"
    return labels


def _cluster_uuid(platform: str) -> str:
    digest = hashlib.sha256(f"sim-cluster-{platform}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def node_taints(prof: Profile, platform: str) -> list[dict[str, str]]:
    """The GPU taint, plus the arm64 taint GB trays carry where the overlays tolerate it (none on ``cpu``)."""
    if not prof.has_gpus:
        return []
    taints = [dict(GPU_TAINT)]
    if prof.cpu_arch == "arm64" and platform in ARM64_TAINTED_PLATFORMS:
        taints.append(dict(ARM64_TAINT))
    return taints


# The RDMA NIC resource each platform's device plugin advertises, and how many per GPU.
_NIC_RESOURCES: Mapping[str, tuple[str, int]] = {
    "aws": ("vpc.amazonaws.com/efa", 4),
    "azure": ("nvidia.com/mlnxnics", 1),
    "oci": ("nvidia.com/mlnxnics", 1),
}


def nic_resource(platform: str) -> tuple[str, int]:
    """(resource name, NICs per GPU) of RDMA NICs on ``platform`` (``rdma/ib`` elsewhere)."""
    return _NIC_RESOURCES.get(platform, (NIC_RESOURCE, 1))


def node_resources(prof: Profile, platform: str = "", *, gpus: int | None = None, nic: str | None = None) -> dict[str, str]:
    """Capacity / allocatable of one node; ``gpus`` overrides the GPU count (0 for no capacity).

    ``nic`` overrides the NIC resource name (``""`` for none); GCP nodes have none by default.
    """
    resources = {"cpu": "128", "memory": "2Ti", "pods": "110", "ephemeral-storage": "8Ti"}
    if not prof.has_gpus:
        return {**resources, "cpu": "16", "memory": "64Gi"}
    if not prof.dra:
        resources[GPU_RESOURCE] = str(prof.gpus if gpus is None else gpus)
    name, per_gpu = nic_resource(platform)
    if nic is not None:
        name, per_gpu = nic, 1
    elif platform == "gcp":
        name = ""
    if name:
        resources[name] = str(prof.nics * per_gpu)
    return resources


def node_object(name: str, prof: Profile, platform: str, index: int, *, nic: str | None = None) -> dict[str, Any]:
    """A Node for kwok to manage (it fills in conditions, addresses and heartbeats)."""
    platform = check_platform(platform)
    resources = node_resources(prof, platform, nic=nic)
    spec: dict[str, Any] = {"taints": node_taints(prof, platform)}
    pid = provider_id(platform, name)
    if pid:
        spec["providerID"] = pid
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels(name, prof, platform, index),
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": spec,
        "status": {
            "capacity": resources,
            "allocatable": dict(resources),
            "nodeInfo": {
                "architecture": prof.cpu_arch,
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.3 LTS (simulated)",
                "kernelVersion": "6.8.0-sim",
                "containerRuntimeVersion": "kwok://v0.8.0",
                "kubeletVersion": "v1.36.3",
                "kubeProxyVersion": "",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
        },
    }


def resource_slice(node: str, prof: Profile) -> dict[str, Any]:
    """The ``gpu.nvidia.com`` ResourceSlice a DRA driver publishes for ``node``."""
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "productName": {"string": prof.dra_name},
                "architecture": {"string": _dra_architecture(prof.gpu_arch)},
                "index": {"int": i},
                "uuid": {"string": f"GPU-{hashlib.sha256(f'{node}/{i}'.encode()).hexdigest()[:32]}"},
            },
            "capacity": {"memory": {"value": f"{prof.gpu_memory_mib}Mi"}},
        }
        for i in range(prof.gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRA_DRIVER}", "labels": {PROFILE_LABEL: prof.name}},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _dra_architecture(gpu_arch: str) -> str:
    return "Hopper" if gpu_arch.startswith("h") else "Blackwell"
