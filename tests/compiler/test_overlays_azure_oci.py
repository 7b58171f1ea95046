"""Overlays for Azure, OCI, TogetherAI and Forge, and the L40/L40S training override.

Every case renders a Certification through the real render path and checks what the overlays
put into the Workflow: forwarded variables (names, values, position, one owner each), container
and trainer env, NIC requests and SR-IOV annotations, topology ConfigMaps and their mounts,
mpirun options, and that each overlay stays away from the platforms and architectures it does
not name.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from nvcre.compiler.mpi_args import forward_pairs
from nvcre.compiler.overlays import load_overlays
from nvcre.compiler.render import render_certification
from tests.platform_profiles import (
    AZURE_A100,
    AZURE_H100_EXTRA,
    AZURE_IB,
    DCGM,
    FORGE_IB,
    GB200_BASE,
    LOOPBACKS,
    MPI,
    TOGETHER_HCAS,
    TOGETHER_IB,
    TRAINING,
)

PLATFORMS_ROOT = Path(load_overlays().root)


BASE_FORWARDS = ["NCCL_DEBUG", "NCCL_MNNVL_ENABLE"]
LEADING = ["--allow-run-as-root", "--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no"]

OCI_ROCE = {
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_TC": "41",
    "NCCL_IB_SL": "0",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_SOCKET_IFNAME": "eth0",
    "OMPI_MCA_coll_hcoll_enable": "0",
    "OMPI_MCA_orte_keep_fqdn_hostnames": "t",
}
OCI_QP = {"NCCL_IB_GID_INDEX": "3", "NCCL_IB_SPLIT_DATA_ON_QPS": "0"}
OCI_GB300 = {
    "UCX_IB_GID_INDEX": "3",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_IB_ADAPTIVE_ROUTING": "1",
    "NCCL_IB_SPLIT_DATA_ON_QPS": "1",
}
OCI_TRANSPORT = [
    "--mca", "pml", "ob1",
    "--mca", "btl", "tcp,self",
    "--mca", "btl_tcp_if_include", "eth0",
    "--mca", "oob", "tcp",
    "--mca", "oob_tcp_if_include", "eth0",
    "--mca", "coll_ucc_enable", "0",
    "--mca", "coll_hcoll_enable", "0",
]  # fmt: skip
SRIOV_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
NICS = "nvidia.com/mlnxnics"


# --- rendering helpers --------------------------------------------------------------------


def render(platform: str, arch: str, key: str, spec: dict[str, Any] | None = None, **options: Any) -> dict:
    domain, variant = key.split("/")
    category: dict[str, Any] = {"domain": domain, "variant": variant}
    if variant == "nemotron5-56b":
        options = {"nodesPerJob": 8, **options}
    if options:
        category["options"] = options
    document = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "cert"},
        "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, **(spec or {}), "categories": [category]},
    }
    rendered = render_certification(document, platform=platform, gpu_arch=arch, check_purity=True)
    assert len(rendered.workflows) == 1
    return rendered.workflows[0]


def applied(workflow: dict) -> list[str]:
    return json.loads(workflow["metadata"]["annotations"]["nvcre.nvidia.com/applied-overlays"])


def trainer(workflow: dict) -> dict:
    return workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["trainer"]


def forwarded(workflow: dict) -> list[tuple[str, str]]:
    """(name, value) of every -x pair, in order, repeats included."""
    args = trainer(workflow)["args"]
    return [(name, args[index + 1].split("=", 1)[1]) for index, name in forward_pairs(args)]


def forwarded_map(workflow: dict) -> dict[str, str]:
    pairs = forwarded(workflow)
    names = [name for name, _ in pairs]
    assert len(names) == len(set(names)), f"a variable is forwarded twice: {names}"
    return dict(pairs)


def runtime(workflow: dict) -> dict:
    name = workflow["spec"]["jobTemplate"]["spec"]["workload"]["trainJob"]["runtimeRef"]["name"]
    return next(d for d in workflow["spec"]["dependencies"] if d["kind"] == "TrainingRuntime" and d["metadata"]["name"] == name)


def pod(workflow: dict, job: str = "node") -> dict:
    jobs = runtime(workflow)["spec"]["template"]["spec"]["replicatedJobs"]
    return next(j for j in jobs if j["name"] == job)["template"]["spec"]["template"]


def container(workflow: dict, job: str = "node", name: str = "node") -> dict:
    return next(c for c in pod(workflow, job)["spec"]["containers"] if c["name"] == name)


def env_map(items: list[dict] | None) -> dict[str, str]:
    names = [item["name"] for item in items or []]
    assert len(names) == len(set(names)), f"an env name repeats: {names}"
    return {item["name"]: item["value"] for item in items or []}


def dependency(workflow: dict, kind: str, name: str) -> dict | None:
    return next((d for d in workflow["spec"]["dependencies"] if d["kind"] == kind and d["metadata"]["name"] == name), None)


def annotations(workflow: dict) -> dict:
    return (pod(workflow).get("metadata") or {}).get("annotations") or {}


def assert_nics(workflow: dict, count: int) -> None:
    resources = container(workflow)["resources"]
    if count:
        assert resources["limits"][NICS] == str(count)
        assert resources["requests"][NICS] == str(count)
    else:
        assert NICS not in resources.get("limits", {})
        assert NICS not in resources.get("requests", {})


def assert_topology_mount(workflow: dict, config_map: str) -> str:
    """The worker mounts ConfigMap ``config_map`` at /etc/nccl; returns its topo.xml."""
    mounts = {m["name"]: m for m in container(workflow).get("volumeMounts", [])}
    assert mounts["nccl-topo"]["mountPath"] == "/etc/nccl"
    volumes = {v["name"]: v for v in pod(workflow)["spec"]["volumes"]}
    assert volumes["nccl-topo"]["configMap"]["name"] == config_map
    found = dependency(workflow, "ConfigMap", config_map)
    assert found is not None, f"no ConfigMap {config_map}"
    assert set(found["data"]) == {"topo.xml"}
    return found["data"]["topo.xml"]


def rails(xml_text: str) -> list[tuple[str, list[str], list[str]]]:
    """(numa id, GPU bus IDs, NIC bus IDs) for every PCI switch of an NCCL topology file."""
    root = ET.fromstring(xml_text)
    assert root.tag == "system" and root.get("version") == "1"
    out = []
    for cpu in root.findall("cpu"):
        assert cpu.get("numaid") is not None
        for switch in cpu.findall("pci"):
            assert switch.get("class") == "0x060400"
            children = switch.findall("pci")
            gpus = [c.get("busid") for c in children if c.get("class") == "0x030200"]
            nics = [c.get("busid") for c in children if c.get("class", "").startswith("0x02")]
            for child in children:
                assert child.get("link_speed", "").endswith("GT/s PCIe") and child.get("link_width")
            out.append((cpu.get("numaid"), gpus, nics))
    return out


def first_forward_index(workflow: dict) -> int:
    return trainer(workflow)["args"].index("-x")


# --- Azure --------------------------------------------------------------------------------


@pytest.mark.parametrize("key", MPI)
def test_azure_h100_collectives(key: str) -> None:
    workflow = render("azure", "h100", key)
    assert applied(workflow) == ["azure-ib-env", "azure-ib-topo", "azure-h100-ib-env"]
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "0", **AZURE_IB, **AZURE_H100_EXTRA}
    assert [name for name, _ in forwarded(workflow)][:5] == BASE_FORWARDS + list(AZURE_IB)
    assert_nics(workflow, 8)
    variant = key.split("/")[1]
    topo = assert_topology_mount(workflow, f"{variant}-azure-topo")
    assert topo == (PLATFORMS_ROOT / "azure" / "topo-nd-h100-v5.xml").read_text()
    layout = rails(topo)
    assert len(layout) == 8 and all(len(g) == 1 and len(n) == 1 for _, g, n in layout)
    assert [g[0] for _, g, _ in layout] == [
        "0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0008:00:00.0",
        "0009:00:00.0", "000a:00:00.0", "000b:00:00.0", "000c:00:00.0",
    ]  # fmt: skip
    assert [n[0] for _, _, n in layout] == [f"01{i:02x}:00:00.0" for i in range(1, 9)]
    assert {numa for numa, _, _ in layout} == {"0", "1"}
    # The launcher runs no ranks: no topology, no NICs.
    assert "volumes" not in pod(workflow, "launcher")["spec"] or all(
        v["name"] != "nccl-topo" for v in pod(workflow, "launcher")["spec"]["volumes"]
    )
    assert NICS not in container(workflow, "launcher").get("resources", {}).get("limits", {})


def test_azure_h100_keeps_nvls_with_a_cited_reason() -> None:
    text = (PLATFORMS_ROOT / "azure" / "h100-ib-env.patches.yaml.j2").read_text().splitlines()
    line = next(i for i, entry in enumerate(text) if "NCCL_NVLS_ENABLE" in entry)
    assert '"1"' in text[line]
    assert text[line - 1].strip().startswith("#"), "NCCL_NVLS_ENABLE=1 needs the comment that says why"


def test_only_azure_h100_forces_nvls_among_these_platforms() -> None:
    for platform, arch in [("azure", "a100"), ("azure", "h200"), ("azure", "gb200"), ("azure", "gb300"),
                           ("oci", "gb200"), ("oci", "gb300"), ("oci", "l40s"), ("togetherai", "h100"),
                           ("togetherai", "gb200"), ("forge", "l40")]:  # fmt: skip
        assert "NCCL_NVLS_ENABLE" not in forwarded_map(render(platform, arch, MPI[0])), (platform, arch)


def test_azure_a100_collective_uses_its_own_profile_and_topology() -> None:
    workflow = render("azure", "a100", MPI[0])
    assert applied(workflow) == ["azure-a100-ib-env", "azure-ib-topo"]
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "0", **AZURE_A100}
    topo = assert_topology_mount(workflow, "nccl-all-reduce-azure-topo")
    assert topo == (PLATFORMS_ROOT / "azure" / "topo-nd-a100-v4.xml").read_text()
    layout = rails(topo)
    assert [numa for numa, _, _ in layout] == ["0", "1", "2", "3"]
    assert all(len(g) == 2 and len(n) == 2 for _, g, n in layout)
    assert sorted(g for _, gpus, _ in layout for g in gpus) == [
        "0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0",
        "000b:00:00.0", "000c:00:00.0", "000d:00:00.0", "000e:00:00.0",
    ]  # fmt: skip
    assert all('link_speed="16.0 GT/s PCIe"' in line for line in topo.splitlines() if "<pci " in line)
    assert_nics(workflow, 8)


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("key", MPI)
def test_azure_gb200_gb300_args_take_the_gb200_env_in_place_of_the_h100_profile(arch: str, key: str) -> None:
    """NVCRE's GB200 arm replaces the Azure arm's args: no H100 topology path reaches GB200 ranks."""
    workflow = render("azure", arch, key)
    names = applied(workflow)
    assert {"azure-ib-topo", "azure-gb200-gb300-env"} <= set(names)
    assert "azure-h100-ib-env" not in names and "azure-ib-env" not in names
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "1", **GB200_BASE}
    assert_topology_mount(workflow, f"{key.split('/')[1]}-azure-topo")
    assert_nics(workflow, 8)


@pytest.mark.parametrize("key", LOOPBACKS)
def test_azure_gb200_loopbacks_get_the_gb200_base_values(key: str) -> None:
    workflow = render("azure", "gb200", key)
    env = env_map(trainer(workflow)["env"])
    assert {k: env[k] for k in GB200_BASE} == GB200_BASE
    assert "NCCL_NVLS_ENABLE" not in env and "NCCL_TOPO_FILE" not in env
    # the NIC + topology dependency of NVCRE's Azure loopback arm stays
    assert applied(workflow)[0] == "azure-ib-topo" and "azure-ib-env" not in applied(workflow)
    assert_topology_mount(workflow, f"{key.split('/')[1]}-azure-topo")
    assert_nics(workflow, 8)


@pytest.mark.parametrize("arch", ["a100", "h100", "h200"])
@pytest.mark.parametrize("key", LOOPBACKS)
def test_azure_loopbacks_cross_the_hcas_with_the_topology_file(arch: str, key: str) -> None:
    workflow = render("azure", arch, key)
    assert applied(workflow) == ["azure-ib-env", "azure-ib-topo"]
    env = env_map(trainer(workflow)["env"])
    assert {k: env[k] for k in AZURE_IB} == AZURE_IB
    assert (env.get("NCCL_SHM_DISABLE"), env.get("NCCL_P2P_DISABLE")) == (
        ("1", "1") if key == "communication/nccl-loopback" else (None, None)
    )
    assert_topology_mount(workflow, f"{key.split('/')[1]}-azure-topo")
    assert_nics(workflow, 8)


def test_azure_nics_omitted_at_zero_but_topology_kept() -> None:
    workflow = render("azure", "h100", MPI[0], mlnxPerNode=0)
    assert_nics(workflow, 0)
    assert_topology_mount(workflow, "nccl-all-reduce-azure-topo")


# NVCRE's 56B has no Azure GB200 arm (test_azure_gb_56b_takes_the_plain_gb200_base)
@pytest.mark.parametrize(("arch", "overlay", "key"), [
    (arch, overlay, key)
    for arch, overlay in (("h100", "azure-h100-ib-training"), ("gb200", "azure-h100-ib-training"),
                          ("a100", "azure-a100-ib-training"))
    for key in TRAINING
    if not (arch == "gb200" and key == "training/nemotron5-56b")
])  # fmt: skip
def test_azure_training(arch: str, overlay: str, key: str) -> None:
    workflow = render("azure", arch, key)
    assert {"azure-ib-topo", overlay} <= set(applied(workflow))
    node = container(workflow)
    assert "IPC_LOCK" in node["securityContext"]["capabilities"]["add"]
    env = env_map(node["env"])
    assert {k: env[k] for k in AZURE_A100} == AZURE_A100
    assert "NCCL_NVLS_ENABLE" not in env
    assert env["NCCL_DEBUG"] == "INFO"
    assert_nics(workflow, 8)
    # training names the VM family in the ConfigMap, as NVCRE's training fragments do
    family = "a100" if arch == "a100" else "h100"
    topo = assert_topology_mount(workflow, f"{key.split('/')[1]}-azure-{family}-topo")
    expected_file = "topo-nd-a100-v4.xml" if arch == "a100" else "topo-nd-h100-v5.xml"
    assert topo == (PLATFORMS_ROOT / "azure" / expected_file).read_text()
    # The mount joins the catalog's own mounts and volumes.
    assert {m["name"] for m in node["volumeMounts"]} >= {"workspace", "shmem", "training-config", "nccl-topo"}


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
def test_azure_gb_56b_takes_the_plain_gb200_base(arch: str) -> None:
    """NVCRE's nemotron5-56b has Azure arms for A100 and H100 only; on GB200/GB300 it renders the
    GB200 base (ComputeDomain, clique topology), never the 8B's H100 InfiniBand arm."""
    workflow = render("azure", arch, "training/nemotron5-56b")
    assert not {"azure-ib-topo", "azure-h100-ib-training"} & set(applied(workflow))
    assert "gb200-gb300-compute-domain" in applied(workflow)
    env = env_map(container(workflow).get("env") or [])
    assert "NCCL_TOPO_FILE" not in env and "NCCL_COLLNET_ENABLE" not in env and "NCCL_IB_HCA" not in env
    assert_nics(workflow, 0)


# --- OCI ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", MPI)
def test_oci_gb200_collectives_default(key: str) -> None:
    workflow = render("oci", "gb200", key)
    names = applied(workflow)
    assert [n for n in names if n.startswith("oci-")] == [
        "oci-roce-env", "oci-roce-qp-env", "oci-gb200-roce-env", "oci-roce-mpirun-args",
    ]  # fmt: skip
    # mlnxPerNode defaults to 0 on OCI GB200: no NIC request, no empty network annotation.
    assert_nics(workflow, 0)
    assert SRIOV_ANNOTATION not in annotations(workflow)
    assert "oci-sriov-nics" not in names
    ucx = {"UCX_IB_GID_INDEX": "3"}
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "1", **OCI_ROCE, **OCI_QP, **GB200_BASE, **ucx}
    # mpirun's own environment: the shared OCI profile plus the UCX GID index, as NVCRE's trainer.env.
    assert env_map(container(workflow, "launcher").get("env")) == {"NCCL_DEBUG": "INFO", **OCI_ROCE, **OCI_QP, **ucx}
    assert "UCX_IB_GID_INDEX" not in env_map(container(workflow).get("env"))
    # The transport options sit right after the leading arguments, before the first -x pair.
    args = trainer(workflow)["args"]
    assert args[:2] == ["-N", "4"] and args[2:6] == LEADING
    assert args[6 : 6 + len(OCI_TRANSPORT)] == OCI_TRANSPORT
    assert first_forward_index(workflow) == 6 + len(OCI_TRANSPORT)


def test_oci_gb200_sriov_when_nics_are_set() -> None:
    workflow = render("oci", "gb200", MPI[0], mlnxPerNode=4)
    assert "oci-sriov-nics" in applied(workflow)
    assert annotations(workflow)[SRIOV_ANNOTATION] == ",".join(["network-operator/sriov-net"] * 4)
    assert_nics(workflow, 4)
    assert SRIOV_ANNOTATION not in ((pod(workflow, "launcher").get("metadata") or {}).get("annotations") or {})


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("key", LOOPBACKS)
def test_oci_gb_loopbacks_carry_the_gid_index(arch: str, key: str) -> None:
    workflow = render("oci", arch, key)
    assert "oci-roce-loopback-env" in applied(workflow)
    env = env_map(trainer(workflow)["env"])
    assert env["NCCL_IB_GID_INDEX"] == "3" and env["UCX_IB_GID_INDEX"] == "3"
    assert {k: env[k] for k in GB200_BASE} == GB200_BASE
    assert "NCCL_NVLS_ENABLE" not in env


@pytest.mark.parametrize("key", TRAINING)
def test_oci_gb200_training(key: str) -> None:
    workflow = render("oci", "gb200", key)
    env = env_map(container(workflow)["env"])
    assert {k: env[k] for k in {**OCI_ROCE, **OCI_QP}} == {**OCI_ROCE, **OCI_QP}
    assert env["UCX_IB_GID_INDEX"] == "3"
    assert "NCCL_NVLS_ENABLE" not in env
    assert_nics(workflow, 0)
    assert SRIOV_ANNOTATION not in annotations(workflow)


@pytest.mark.parametrize("key", MPI)
def test_oci_gb300_collectives(key: str) -> None:
    workflow = render("oci", "gb300", key)
    names = applied(workflow)
    assert {"oci-roce-env", "oci-sriov-nics", "oci-gb300-nccl-topo", "oci-gb300-roce-env", "oci-roce-mpirun-args"} <= set(names)
    assert "oci-roce-qp-env" not in names and "oci-gb200-roce-env" not in names
    pairs = forwarded(workflow)
    assert [name for name, _ in pairs].count("NCCL_IB_SPLIT_DATA_ON_QPS") == 1
    assert [name for name, _ in pairs].count("NCCL_IB_GID_INDEX") == 1
    assert forwarded_map(workflow) == {
        "NCCL_DEBUG": "INFO",
        "NCCL_MNNVL_ENABLE": "1",
        **OCI_ROCE,
        "NCCL_TOPO_FILE": "/etc/nccl/topo.xml",
        **OCI_GB300,
    }
    assert annotations(workflow)[SRIOV_ANNOTATION] == ",".join(["network-operator/sriov-net"] * 4)
    assert_nics(workflow, 4)
    topo = assert_topology_mount(workflow, f"{key.split('/')[1]}-oci-topo")
    assert topo == (PLATFORMS_ROOT / "oci" / "topo-gb300-tray.xml").read_text()
    layout = rails(topo)
    assert len(layout) == 4 and all(len(g) == 1 and len(n) == 1 for _, g, n in layout)
    # Each GPU shares its PCI domain (its ConnectX-8 switch) with its rail NIC.
    assert all(g[0].split(":")[0] == n[0].split(":")[0] for _, g, n in layout)
    assert trainer(workflow)["args"][6 : 6 + len(OCI_TRANSPORT)] == OCI_TRANSPORT


def test_oci_gb300_does_not_force_dmabuf_off() -> None:
    for options in ({}, {"enableMNNVL": False}):
        workflow = render("oci", "gb300", MPI[0], **options)
        assert "NCCL_DMABUF_ENABLE" not in forwarded_map(workflow)
        assert forwarded_map(workflow)["NCCL_MNNVL_ENABLE"] == ("0" if options else "1")


@pytest.mark.parametrize("key", TRAINING)
def test_oci_gb300_training(key: str) -> None:
    workflow = render("oci", "gb300", key)
    names = applied(workflow)
    assert {"oci-sriov-nics", "oci-gb300-nccl-topo", "oci-gb300-roce-env"} <= set(names)
    assert "oci-roce-env" not in names and "oci-roce-qp-env" not in names
    env = env_map(container(workflow)["env"])
    assert {k: env[k] for k in OCI_GB300} == OCI_GB300
    assert env["NCCL_TOPO_FILE"] == "/etc/nccl/topo.xml"
    assert "NCCL_DMABUF_ENABLE" not in env
    assert_topology_mount(workflow, f"{key.split('/')[1]}-oci-topo")
    assert_nics(workflow, 4)


def test_oci_l40s_collective() -> None:
    workflow = render("oci", "l40s", MPI[0])
    assert applied(workflow) == ["oci-roce-env", "oci-roce-qp-env", "oci-sriov-nics"]
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "0", **OCI_ROCE, **OCI_QP}
    assert annotations(workflow)[SRIOV_ANNOTATION] == "network-operator/sriov-net,network-operator/sriov-net"
    assert_nics(workflow, 2)
    # No transport rewrite outside GB200/GB300.
    assert trainer(workflow)["args"][:7] == ["-N", "4", *LEADING, "-x"]


@pytest.mark.parametrize("arch", ["a100", "h100", "h200", "b200", "l40", "l40s", "gb200", "gb300", "rtxpro6000"])
@pytest.mark.parametrize("key", MPI)
def test_oci_each_variable_has_one_owner(arch: str, key: str) -> None:
    workflow = render("oci", arch, key)
    pairs = forwarded(workflow)
    assert len(pairs) == len({name for name, _ in pairs})
    values = dict(pairs)
    assert values["NCCL_IB_GID_INDEX"] == "3"
    assert values["NCCL_IB_SPLIT_DATA_ON_QPS"] == ("1" if arch == "gb300" else "0")


def test_oci_user_env_still_lands_at_the_anchor() -> None:
    spec = {"env": [{"name": "NCCL_IB_SPLIT_DATA_ON_QPS", "value": "0"}, {"name": "SITE_FLAG", "value": "x"}]}
    workflow = render("oci", "gb300", MPI[0], spec=spec)
    values = forwarded_map(workflow)
    assert values["NCCL_IB_SPLIT_DATA_ON_QPS"] == "0"
    args = trainer(workflow)["args"]
    assert args[args.index("SITE_FLAG=x") + 1] == "/usr/local/bin/all_reduce_perf_mpi"
    assert args[6 : 6 + len(OCI_TRANSPORT)] == OCI_TRANSPORT


def test_oci_dcgm_runs_unprivileged() -> None:
    workflow = render("oci", "gb200", DCGM)
    assert "oci-dcgm-unprivileged" in applied(workflow)
    assert container(workflow)["securityContext"]["privileged"] is False
    elsewhere = render("onprem", "gb200", DCGM)
    assert "oci-dcgm-unprivileged" not in applied(elsewhere)
    assert container(elsewhere)["securityContext"]["privileged"] is True


# --- TogetherAI ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", MPI)
def test_togetherai_h100_collectives(key: str) -> None:
    workflow = render("togetherai", "h100", key)
    assert applied(workflow) == ["togetherai-ib-env", "togetherai-ib-nics"]
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "0", **TOGETHER_IB}
    assert "NCCL_IB_HCA=" + TOGETHER_HCAS in trainer(workflow)["args"]
    assert_nics(workflow, 8)


@pytest.mark.parametrize("arch", ["gb200", "gb300"])
@pytest.mark.parametrize("key", MPI)
def test_togetherai_gb_args_take_the_gb200_env_in_place_of_the_h100_hca_list(arch: str, key: str) -> None:
    workflow = render("togetherai", arch, key)
    assert {"togetherai-ib-nics", "togetherai-gb200-gb300-env"} <= set(applied(workflow))
    assert "togetherai-ib-env" not in applied(workflow)
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "1", **GB200_BASE}
    assert_nics(workflow, 8)


@pytest.mark.parametrize("key", LOOPBACKS)
def test_togetherai_h100_loopbacks_get_the_hcas_and_the_ib_env(key: str) -> None:
    workflow = render("togetherai", "h100", key)
    assert applied(workflow) == ["togetherai-ib-env", "togetherai-ib-nics"]
    env = env_map(trainer(workflow)["env"])
    assert {k: env[k] for k in TOGETHER_IB} == TOGETHER_IB
    assert_nics(workflow, 8)


@pytest.mark.parametrize("key", LOOPBACKS)
def test_togetherai_gb200_loopbacks(key: str) -> None:
    env = env_map(trainer(render("togetherai", "gb200", key))["env"])
    assert {k: env[k] for k in GB200_BASE} == GB200_BASE
    assert "NCCL_NVLS_ENABLE" not in env


@pytest.mark.parametrize("key", TRAINING)
def test_togetherai_training(key: str) -> None:
    workflow = render("togetherai", "h100", key)
    env = env_map(container(workflow)["env"])
    assert {k: env[k] for k in TOGETHER_IB} == TOGETHER_IB
    assert "NCCL_NVLS_ENABLE" not in env
    assert_nics(workflow, 8)


def test_togetherai_nics_omitted_at_zero() -> None:
    workflow = render("togetherai", "h100", MPI[0], mlnxPerNode=0)
    assert "togetherai-ib-nics" not in applied(workflow)
    assert_nics(workflow, 0)
    assert forwarded_map(workflow)["NCCL_IB_HCA"] == TOGETHER_HCAS


# --- Forge --------------------------------------------------------------------------------


@pytest.mark.parametrize("key", MPI)
def test_forge_l40_collectives(key: str) -> None:
    workflow = render("forge", "l40", key)
    assert applied(workflow) == ["forge-ib-env", "forge-ib-nics"]
    assert forwarded_map(workflow) == {"NCCL_DEBUG": "INFO", "NCCL_MNNVL_ENABLE": "0", **FORGE_IB}
    assert_nics(workflow, 4)
    assert [d["kind"] for d in workflow["spec"]["dependencies"]] == ["TrainingRuntime"]
    assert all(v["name"] != "nccl-topo" for v in pod(workflow)["spec"].get("volumes", []))


# --- L40 / L40S training ------------------------------------------------------------------


@pytest.mark.parametrize("platform,arch", [("forge", "l40"), ("oci", "l40s"), ("onprem", "l40s"), ("azure", "l40")])
def test_l40_training_one_node_fits_the_model(platform: str, arch: str) -> None:
    workflow = render(platform, arch, "training/nemotron5-8b", nodesPerJob=1)
    assert applied(workflow)[-1] == "l40-training"
    env = env_map(container(workflow)["env"])
    assert env["NCCL_NVLS_ENABLE"] == "0"
    assert env["NCCL_MNNVL_ENABLE"] == "0"
    assert env["SEQ_LENGTH"] == "2048"
    assert env["RECOMPUTE_ARGS"] == "--recompute-granularity full --recompute-method block --recompute-num-layers 32"


def test_l40_training_multi_node_keeps_the_sequence() -> None:
    workflow = render("forge", "l40", "training/nemotron5-8b", nodesPerJob=2)
    env = env_map(container(workflow)["env"])
    assert env["NCCL_NVLS_ENABLE"] == "0" and env["NCCL_MNNVL_ENABLE"] == "0"
    assert "SEQ_LENGTH" not in env and "RECOMPUTE_ARGS" not in env
    big = env_map(container(render("oci", "l40s", "training/nemotron5-56b"))["env"])
    assert big["NCCL_NVLS_ENABLE"] == "0" and "SEQ_LENGTH" not in big


@pytest.mark.parametrize("platform", ["onprem", "forge", "aws", "togetherai"])
def test_l40_training_reaches_56b_only_on_oci(platform: str) -> None:
    # NVCRE's 56B entry has no generic L40/L40S arm; only its OCI arm switches NVLS and MNNVL off
    workflow = render(platform, "l40s", "training/nemotron5-56b")
    assert "l40-training" not in applied(workflow)
    assert "NCCL_NVLS_ENABLE" not in env_map(container(workflow).get("env"))
    assert "l40-training" in applied(render("oci", "l40s", "training/nemotron5-56b"))


def test_l40_training_user_env_still_wins() -> None:
    """The user's env reaches the trainer, which Kubeflow applies over the runtime container's env."""
    spec = {"env": [{"name": "SEQ_LENGTH", "value": "1024"}]}
    workflow = render("forge", "l40", "training/nemotron5-8b", spec=spec, nodesPerJob=1)
    assert env_map(trainer(workflow)["env"])["SEQ_LENGTH"] == "1024"


# --- overlays stay where they are named ---------------------------------------------------

ABSENT = [
    # (overlay, platform, arch, entry): a render the overlay must not reach
    ("azure-ib-topo", "aws", "h100", MPI[0]),
    ("azure-ib-topo", "azure", "l40s", MPI[0]),
    ("azure-ib-env", "azure", "a100", MPI[0]),
    ("azure-ib-env", "onprem", "h100", MPI[0]),
    ("azure-h100-ib-env", "azure", "h200", MPI[0]),
    ("azure-h100-ib-env", "azure", "gb200", MPI[0]),
    ("azure-h100-ib-env", "oci", "h100", MPI[0]),
    ("azure-a100-ib-env", "azure", "h100", MPI[0]),
    ("azure-a100-ib-env", "azure", "a100", TRAINING[0]),
    ("azure-h100-ib-training", "azure", "a100", TRAINING[0]),
    ("azure-h100-ib-training", "azure", "h100", MPI[0]),
    ("azure-a100-ib-training", "azure", "h100", TRAINING[0]),
    ("azure-gb200-gb300-env", "azure", "h100", MPI[0]),
    ("azure-gb200-gb300-env", "togetherai", "gb200", MPI[0]),
    ("oci-roce-env", "azure", "gb200", MPI[0]),
    ("oci-roce-env", "oci", "h100", TRAINING[0]),
    ("oci-roce-env", "oci", "gb300", TRAINING[0]),
    ("oci-roce-env", "oci", "gb200", LOOPBACKS[0]),
    ("oci-roce-qp-env", "oci", "gb300", MPI[0]),
    ("oci-sriov-nics", "oci", "gb200", MPI[0]),
    ("oci-sriov-nics", "oci", "h100", TRAINING[0]),
    ("oci-gb200-roce-env", "oci", "gb300", MPI[0]),
    ("oci-gb300-roce-env", "oci", "gb200", MPI[0]),
    ("oci-gb300-nccl-topo", "oci", "gb200", MPI[0]),
    ("oci-gb300-nccl-topo", "onprem", "gb300", MPI[0]),
    ("oci-roce-mpirun-args", "oci", "l40s", MPI[0]),
    ("oci-roce-mpirun-args", "oci", "h100", MPI[0]),
    ("oci-roce-loopback-env", "oci", "h100", LOOPBACKS[0]),
    ("oci-dcgm-unprivileged", "azure", "gb200", DCGM),
    ("togetherai-ib-env", "azure", "h100", MPI[0]),
    ("togetherai-ib-env", "togetherai", "gb200", MPI[0]),
    ("togetherai-ib-env", "togetherai", "gb300", LOOPBACKS[0]),
    ("azure-ib-env", "azure", "gb200", MPI[0]),
    ("azure-ib-env", "azure", "gb300", LOOPBACKS[0]),
    ("togetherai-gb200-gb300-env", "togetherai", "h100", MPI[0]),
    ("togetherai-gb200-gb300-env", "oci", "gb200", MPI[0]),
    ("forge-ib-env", "forge", "l40s", MPI[0]),
    ("forge-ib-env", "onprem", "l40", MPI[0]),
    ("forge-ib-nics", "forge", "h100", MPI[0]),
    ("forge-ib-nics", "forge", "l40", TRAINING[0]),
    ("l40-training", "forge", "h100", TRAINING[0]),
    ("l40-training", "forge", "l40", MPI[0]),
]


@pytest.mark.parametrize("overlay,platform,arch,key", ABSENT, ids=[f"{o}-{p}-{a}-{k.split('/')[1]}" for o, p, a, k in ABSENT])
def test_overlay_does_not_reach(overlay: str, platform: str, arch: str, key: str) -> None:
    assert overlay in {o.name for o in load_overlays().overlays}
    assert overlay not in applied(render(platform, arch, key))


MY_FOLDERS = ("azure", "oci", "togetherai", "forge", "l40")


def test_overlay_files_follow_the_house_rules() -> None:
    """Every overlay here names its platform (L40 aside) and its entries, and has a one-line reason."""
    mine = [o for o in load_overlays().overlays if o.source.split("/")[0] in MY_FOLDERS]
    assert len(mine) >= 20
    for overlay in mine:
        folder = overlay.source.split("/")[0]
        assert overlay.when.entry is not None and overlay.when.entry.in_, overlay.name
        assert "\n" not in overlay.reason
        if folder == "l40":
            assert overlay.when.platform is None
            assert overlay.when.gpu_architecture is not None and set(overlay.when.gpu_architecture.in_) == {"l40", "l40s"}
        else:
            assert overlay.when.platform is not None and overlay.when.platform.in_ == (folder,), overlay.name
        assert overlay.name.startswith(folder), overlay.name


def test_nvls_forced_on_only_with_a_comment() -> None:
    for path in sorted(PLATFORMS_ROOT.glob("*/*.j2")):
        if path.parent.name not in MY_FOLDERS:
            continue
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if re.search(r'NCCL_NVLS_ENABLE.*"1"', line):
                assert lines[index - 1].strip().startswith("#"), f"{path.name}:{index + 1} forces NVLS without a reason"


# --- loopbacks on the NIC platforms --------------------------------------------------------


@pytest.mark.parametrize("arch,nics", [("h100", 8), ("gb300", 4)])
@pytest.mark.parametrize("key", LOOPBACKS)
def test_oci_loopbacks_attach_the_sriov_nics(arch: str, nics: int, key: str) -> None:
    workflow = render("oci", arch, key)
    assert "oci-sriov-nics" in applied(workflow)
    annotation = pod(workflow)["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
    assert annotation == ",".join(["network-operator/sriov-net"] * nics)
    resources = container(workflow)["resources"]
    assert resources["limits"]["nvidia.com/mlnxnics"] == resources["requests"]["nvidia.com/mlnxnics"] == str(nics)
    env = env_map(trainer(workflow)["env"])
    assert env["NCCL_IB_GID_INDEX"] == "3"
    if arch == "h100":
        assert env["NCCL_IB_TC"] == "41" and env["NCCL_SOCKET_IFNAME"] == "eth0"
    else:
        assert "NCCL_IB_TC" not in env  # GB300: NVCRE's GB200 arm replaces the OCI loopback env


@pytest.mark.parametrize("key", LOOPBACKS)
def test_oci_gb200_loopbacks_request_no_nic_at_the_default_zero(key: str) -> None:
    workflow = render("oci", "gb200", key)
    assert "oci-sriov-nics" not in applied(workflow)
    assert "nvidia.com/mlnxnics" not in json.dumps(workflow)


def test_forge_l40_loopback_orders_gpus_by_pci_bus_and_requests_no_nic() -> None:
    workflow = render("forge", "l40", "communication/nccl-loopback")
    assert applied(workflow) == ["forge-ib-env"]
    env = env_map(trainer(workflow)["env"])
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" and env["NCCL_SHM_DISABLE"] == "1"
    assert "NCCL_IB_GID_INDEX" not in env
    assert "nvidia.com/mlnxnics" not in json.dumps(workflow)
