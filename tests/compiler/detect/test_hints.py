"""Detection beyond GPU Feature Discovery's product label: cloud, Karpenter, Akash and instance-type labels.

The label sets are real ones from public sources: ``tests/fixtures/facts/label-hints-real.yaml``
names the address of each; the Karpenter p5 set is from Karpenter's instance-type reference. NVCRE
reads only ``nvidia.com/gpu.product``: each node without it would be "unknown" there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from nvcre.compiler.detect import filter_by_capacity, node_gpu_counts
from nvcre.compiler.detect.gpu_arch import detect_gpu_arch
from nvcre.compiler.detect.hints import architecture_hint, count_hint, mig_product
from nvcre.compiler.detect.tables import table
from nvcre.compiler.facts import ClusterFacts, facts_from_documents, labels_of, load_facts

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "facts"
REAL = load_facts(FIXTURES / "label-hints-real.yaml")


def real_labels(name: str) -> dict[str, str]:
    found = REAL.node(name)
    assert found is not None, name
    return labels_of(found)


def node(name: str, labels: dict[str, str], allocatable: dict[str, str] | None = None) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable or {}}}


def detect(*nodes: dict):
    facts = ClusterFacts(nodes=tuple(nodes))
    return detect_gpu_arch(facts, facts.nodes)


GKE_K80 = real_labels("gke-my-gpu-cluster-default-pool-4d0fa82d-ttxh")
KARPENTER_G4DN = real_labels("ip-192-168-164-242.eu-central-1.compute.internal")
DELL_XE9680 = real_labels("poweredge-xe9680")
# https://karpenter.sh/docs/reference/instance-types/ (the p5.48xlarge row: the labels Karpenter writes)
KARPENTER_P5 = {
    "karpenter.k8s.aws/instance-category": "p",
    "karpenter.k8s.aws/instance-family": "p5",
    "karpenter.k8s.aws/instance-gpu-count": "8",
    "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
    "karpenter.k8s.aws/instance-gpu-memory": "81920",
    "karpenter.k8s.aws/instance-gpu-name": "h100",
    "kubernetes.io/os": "linux",
    "node.kubernetes.io/instance-type": "p5.48xlarge",
}


def test_gke_accelerator_label_names_the_architecture_of_a_real_gke_node() -> None:
    found, diags = detect(node("gke-k80", GKE_K80))
    assert found is not None and found.fact.value == "k80"
    assert found.fact.detail.startswith("cloud.google.com/gke-accelerator labels")
    [warn] = [d for d in diags if d.code == "GPUArchitectureFromLabel"]
    assert warn.severity.value == "warning" and "cloud.google.com/gke-accelerator" in warn.message
    assert "nvidia-tesla-k80 -> k80" in warn.message


def test_karpenter_gpu_labels_name_architecture_and_count() -> None:
    assert "nvidia.com/gpu.product" not in KARPENTER_G4DN
    found, diags = detect(node("g4dn", KARPENTER_G4DN))
    assert found is not None and found.fact.value == "t4"
    assert "karpenter.k8s.aws/instance-gpu-name" in found.fact.detail
    counts = node_gpu_counts(ClusterFacts(nodes=(node("g4dn", KARPENTER_G4DN),)), [node("g4dn", KARPENTER_G4DN)])
    assert (counts["g4dn"].count, counts["g4dn"].source) == (1, "karpenter.k8s.aws/instance-gpu-count")


def test_karpenter_labels_of_another_vendor_are_not_read() -> None:
    amd = {**KARPENTER_P5, "karpenter.k8s.aws/instance-gpu-manufacturer": "amd", "karpenter.k8s.aws/instance-gpu-name": "mi300x"}
    del amd["node.kubernetes.io/instance-type"]
    assert architecture_hint(amd) is None


# https://github.com/skypilot-org/skypilot/issues/6701 (the GPU labels of a CoreWeave node)
COREWEAVE_H100 = {
    "gpu.coreweave.cloud/vendor": "NVIDIA",
    "gpu.nvidia.com/class": "H100_NVLINK_80GB",
    "gpu.nvidia.com/count": "8",
    "gpu.nvidia.com/model": "H100_NVLINK_80GB",
    "gpu.nvidia.com/vram": "81",
}


def test_coreweave_model_and_count_labels_name_the_gpu_with_its_tokens_split_at_underscores() -> None:
    hint = architecture_hint(COREWEAVE_H100)
    assert hint is not None and (hint.architecture, hint.label, hint.value) == ("h100", "gpu.nvidia.com/model", "H100_NVLINK_80GB")
    count = count_hint(COREWEAVE_H100)
    assert count is not None and (count.count, count.label) == (8, "gpu.nvidia.com/count")
    # GPU Feature Discovery's own labels still come first
    labelled = {**COREWEAVE_H100, "nvidia.com/gpu.count": "4"}
    assert count_hint(labelled) == count_hint({"nvidia.com/gpu.count": "4"})
    # only this label's value is split at underscores: a product label keeps its first token whole
    gke = architecture_hint({"cloud.google.com/gke-accelerator": "nvidia_h100"})
    assert gke is not None and gke.architecture == "nvidia_h100"


def test_instance_type_table_names_the_architecture_when_nothing_else_does() -> None:
    labels = {"node.kubernetes.io/instance-type": KARPENTER_P5["node.kubernetes.io/instance-type"], "kubernetes.io/os": "linux"}
    hint = architecture_hint(labels)
    assert hint is not None and (hint.architecture, hint.label) == ("h100", "node.kubernetes.io/instance-type")
    count = count_hint(labels)
    assert count is not None and (count.count, count.label) == (8, "node.kubernetes.io/instance-type")
    # AKS writes the VM size; the lookup ignores case.
    azure = architecture_hint({"node.kubernetes.io/instance-type": "standard_nd96isr_h100_v5"})
    assert azure is not None and azure.architecture == "h100"


def test_every_instance_type_row_has_a_public_source_and_an_architecture_key() -> None:
    from nvcre.compiler.detect import parse_product

    groups = table("gpu_hints")["instanceTypes"]
    assert set(groups) <= {"aws", "gcp", "azure", "oci"}
    names = [str(n).lower() for rows in groups.values() for r in rows for n in r["names"]]
    assert len(names) == len(set(names))
    for rows in groups.values():
        for row in rows:
            assert str(row["source"]).startswith("https://"), row
            assert int(row["gpus"]) > 0 and row["names"], row
            # The key is what the GPU's own product label parses to, known to the catalog or not.
            assert parse_product(str(row["architecture"])) == row["architecture"], row
    wanted = {"p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "p6e-gb200.36xlarge"}
    wanted |= {"g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge", "p3.2xlarge", "p3dn.24xlarge"}
    wanted |= {"a2-highgpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g", "g2-standard-4"}
    wanted |= {"standard_nd96asr_v4", "standard_nd96isr_h100_v5", "standard_nd96isr_h200_v5", "standard_nd128isr_ndr_gb200_v6"}
    wanted |= {"standard_nc6", "standard_nc24ads_a100_v4", "standard_nc40ads_h100_v5", "standard_nc4as_t4_v3", "standard_nv36ads_a10_v5"}
    wanted |= {"bm.gpu.h100.8", "bm.gpu.b200.8", "bm.gpu.gb200.4", "vm.gpu.a10.1", "bm.gpu3.8"}
    assert wanted <= set(names)


@pytest.mark.parametrize(
    ("instance_type", "arch", "gpus"),
    [
        # one row per family the table gained; the GPU and count are the provider's own pages'
        ("p3.2xlarge", "v100", 1),
        ("p3.16xlarge", "v100", 8),
        ("g4dn.12xlarge", "t4", 4),
        ("g5.xlarge", "a10g", 1),
        ("g5.48xlarge", "a10g", 8),
        ("g6.xlarge", "l4", 1),
        ("g6e.12xlarge", "l40s", 4),
        ("g2-standard-24", "l4", 2),
        ("Standard_NC6", "k80", 1),
        ("Standard_NC6s_v3", "v100", 1),
        ("Standard_NC4as_T4_v3", "t4", 1),
        ("Standard_NC96ads_A100_v4", "a100", 4),
        ("Standard_NC80adis_H100_v5", "h100", 2),
        ("Standard_NV72ads_A10_v5", "a10", 2),
        ("VM.GPU.A10.2", "a10", 2),
        ("BM.GPU3.8", "v100", 8),
    ],
)
def test_smaller_gpu_instance_types_name_their_gpu_and_count(instance_type: str, arch: str, gpus: int) -> None:
    labels = {"node.kubernetes.io/instance-type": instance_type}
    hint, count = architecture_hint(labels), count_hint(labels)
    assert hint is not None and hint.architecture == arch
    assert count is not None and count.count == gpus


def test_a_fraction_of_a_gpu_is_not_a_gpu_count() -> None:
    # NV6ads A10 v5 gets a sixth of an A10: no row, so neither an architecture nor a count.
    labels = {"node.kubernetes.io/instance-type": "Standard_NV6ads_A10_v5"}
    assert architecture_hint(labels) is None and count_hint(labels) is None


def test_the_product_label_still_wins_over_every_hint() -> None:
    labels = {**KARPENTER_P5, "nvidia.com/gpu.product": "NVIDIA-H200", "cloud.google.com/gke-accelerator": "nvidia-l4"}
    found, diags = detect(node("a", labels))
    assert found is not None and found.fact.value == "h200"
    assert not [d for d in diags if d.code == "GPUArchitectureFromLabel"]


def test_gpu_count_falls_back_to_the_gpu_count_label() -> None:
    n = node("xe9680", DELL_XE9680)  # GFD labels, no allocatable yet
    facts = ClusterFacts(nodes=(n,))
    assert node_gpu_counts(facts, [n])["xe9680"].count == 8
    kept, excluded, _ = filter_by_capacity(facts, [n], gpus_per_node=16, category="communication/nccl-all-reduce")
    assert not kept and "8 GPUs by its nvidia.com/gpu.count label" in excluded[0].reason
    # Allocatable still wins once the device plugin advertises it.
    advertised = node("xe9680", DELL_XE9680, {"nvidia.com/gpu": "4"})
    assert node_gpu_counts(ClusterFacts(nodes=(advertised,)), [advertised])["xe9680"].count == 4


def _gke_without_product(tmp_path: Path) -> Path:
    """The GKE A3 Mega fixture with GFD's product label taken off, as before GFD has run."""
    docs = list(YAML(typ="safe").load_all((FIXTURES / "gcp-h100-a3mega.yaml").read_text()))
    for doc in docs:
        for item in doc.get("items", [doc]) if isinstance(doc, dict) else []:
            if item.get("kind") == "Node":
                item["metadata"]["labels"].pop("nvidia.com/gpu.product", None)
    facts_from_documents(docs)  # still valid facts
    out = tmp_path / "facts.yaml"
    out.write_text("\n---\n".join(json.dumps(d) for d in docs) + "\n")
    return out


def test_cluster_info_and_explain_say_which_label_decided(tmp_path: Path) -> None:
    facts = _gke_without_product(tmp_path)
    nvcrectl = str(Path(sys.executable).with_name("nvcrectl"))
    info = subprocess.run([nvcrectl, "cluster", "info", "--facts", str(facts), "-o", "json"], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stderr
    data = json.loads(info.stdout)
    assert data["gpuArchitecture"] == "h100" and data["gpuProduct"] == ""
    assert data["detection"]["gpuArchitecture"]["detail"].startswith("cloud.google.com/gke-accelerator labels")
    assert "[GPUArchitectureFromLabel]" in info.stderr
    table = subprocess.run([nvcrectl, "cluster", "info", "--facts", str(facts)], capture_output=True, text=True, timeout=60)
    assert "GPU:          product unknown (h100, 8 GPUs/node; from cloud.google.com/gke-accelerator labels" in table.stdout
    render = subprocess.run(
        [nvcrectl, "certification", "render", "examples/certification.yaml", "--facts", str(facts), "--explain"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert render.returncode == 0, render.stderr
    assert "#   gpuArchitecture: h100 (detected: cloud.google.com/gke-accelerator labels" in render.stderr


@pytest.mark.parametrize(
    ("labels", "arch"),
    [
        ({"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}, "h100"),
        ({"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"}, "a100"),
        ({"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}, "t4"),
        ({"cloud.google.com/gke-accelerator": "nvidia-gb200"}, "gb200"),
        ({"node.kubernetes.io/instance-type": "a3-ultragpu-8g"}, "h200"),
        ({"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}, "gb200"),
        ({"node.kubernetes.io/instance-type": "BM.GPU.B200.8"}, "b200"),
        ({"beta.kubernetes.io/instance-type": "p4d.24xlarge"}, "a100"),
        ({"node.kubernetes.io/instance-type": "a4x-highgpu-4g"}, "gb200"),
        ({"node.kubernetes.io/instance-type": "m5.large"}, None),
    ],
)
def test_hint_values(labels: dict[str, str], arch: str | None) -> None:
    hint = architecture_hint(labels)
    assert (hint.architecture if hint else None) == arch


def test_a_node_named_a_gpu_by_its_labels_but_not_gpu_present_gets_the_warning() -> None:
    from nvcre.compiler.detect import select_target_nodes

    facts = ClusterFacts(nodes=(node("gke-k80", GKE_K80), node("plain", {"kubernetes.io/os": "linux"})))
    kept, excluded, diags = select_target_nodes(facts, {})
    assert not kept
    by_severity = {(d.severity.value, "gke-k80" in d.message, "plain" in d.message) for d in diags if d.code == "NodeExcluded"}
    # The GKE node has a GPU (its accelerator label says so): a warning telling to label it; the other an info.
    assert ("warning", True, False) in by_severity and ("info", False, True) in by_severity


# node1 of https://github.com/akash-network/website/issues/172 (an Akash provider, labels only)
AKASH_RTX4090 = {
    "akash.network/capabilities.gpu.vendor.nvidia.model.rtx4090.interface.pcie": "8",
    "akash.network/capabilities.gpu.vendor.nvidia.model.rtx4090.ram.24Gi": "8",
    "akash.network/capabilities.gpu.vendor.nvidia.model.rtx4090": "8",
    "akash.network/capabilities.storage.class.beta3": "1",
    "akash.network": "true",
    "kubernetes.io/hostname": "node1",
    "nvidia.com/gpu.present": "true",
}


def test_akash_capability_labels_name_the_model_and_count() -> None:
    hint, count = architecture_hint(AKASH_RTX4090), count_hint(AKASH_RTX4090)
    assert hint is not None and (hint.architecture, hint.value) == ("rtx4090", "8")
    assert hint.label == "akash.network/capabilities.gpu.vendor.nvidia.model.rtx4090"
    assert count is not None and (count.count, count.label) == (8, hint.label)
    found, diags = detect(node("node1", AKASH_RTX4090))
    assert found is not None and found.fact.value == "rtx4090"
    assert [d.code for d in diags] == ["GPUArchitectureFromLabel"]


def test_akash_labels_of_two_models_decide_nothing() -> None:
    # Two models on one node (the rtx4090 keys plus an h100 key of the same form): ambiguous.
    labels = {**AKASH_RTX4090, "akash.network/capabilities.gpu.vendor.nvidia.model.h100": "2"}
    assert architecture_hint(labels) is None and count_hint(labels) is None


def test_gfd_labels_still_win_over_akash_labels() -> None:
    labels = {**AKASH_RTX4090, "nvidia.com/gpu.count": "4"}
    count = count_hint(labels)
    assert count is not None and (count.count, count.label) == (4, "nvidia.com/gpu.count")


# HAMi's device plugin lists a node's GPUs in an annotation. The k3s node of
# https://github.com/Project-HAMi/HAMi/issues/314, as `kubectl describe` cut it (the second
# device record is cut short), and the two-V100 example of HAMi's protocol document
# (https://github.com/Project-HAMi/HAMi/blob/master/docs/develop/protocol.md).
HAMI_KEY = "hami.io/node-nvidia-register"
HAMI_A100_CUT = (
    "GPU-b7c4eb59-dd76-ca5a-8482-56fd796b0a75,10,40960,100,NVIDIA-NVIDIA A100-PCIE-40GB,0,true:"
    "GPU-ec7d894f-bb24-dc73-1adb-17806ec68749,10,4096..."
)
HAMI_V100_PAIR = (
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
)


def hami_node(name: str, register: str, labels: dict[str, str] | None = None) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}, "annotations": {HAMI_KEY: register}}}


def test_hami_register_annotation_names_the_gpu_and_counts_whole_records() -> None:
    hint, count = architecture_hint({}, {HAMI_KEY: HAMI_V100_PAIR}), count_hint({}, {HAMI_KEY: HAMI_V100_PAIR})
    assert hint is not None and (hint.architecture, hint.label, hint.value) == ("v100", HAMI_KEY, "NVIDIA-Tesla V100-PCIE-32GB")
    assert count is not None and (count.count, count.label) == (2, HAMI_KEY)


def test_a_cut_hami_value_names_the_gpu_but_no_count() -> None:
    hint = architecture_hint({}, {HAMI_KEY: HAMI_A100_CUT})
    assert hint is not None and hint.architecture == "a100"
    assert count_hint({}, {HAMI_KEY: HAMI_A100_CUT}) is None


def test_hami_values_in_another_shape_or_of_two_gpus_decide_nothing() -> None:
    assert architecture_hint({}, {HAMI_KEY: '[{"id":"GPU-1","type":"NVIDIA-NVIDIA A100-PCIE-40GB"}]'}) is None
    mixed = HAMI_V100_PAIR + HAMI_A100_CUT.split(":")[0] + ":"
    assert architecture_hint({}, {HAMI_KEY: mixed}) is None
    # the same text as a label is not the annotation
    assert architecture_hint({HAMI_KEY: HAMI_V100_PAIR}) is None


# HAMi's newer register format appends each device's index and mode (nine fields; HAMi's decoder
# takes both, https://github.com/Project-HAMi/HAMi/blob/master/pkg/device/devices_test.go), as on
# the minikube node of https://github.com/volcano-sh/volcano/issues/4511
HAMI_RTX2060_NINE = "GPU-220d2c17-3969-3911-209a-e08aa68ab060,10,6144,100,NVIDIA-NVIDIA GeForce RTX 2060,0,true,0,hami-core:"


def test_the_nine_field_hami_records_name_the_gpu_and_count_too() -> None:
    hint, count = architecture_hint({}, {HAMI_KEY: HAMI_RTX2060_NINE}), count_hint({}, {HAMI_KEY: HAMI_RTX2060_NINE})
    assert hint is not None and (hint.architecture, hint.value) == ("rtx2060", "NVIDIA-NVIDIA GeForce RTX 2060")
    assert count is not None and count.count == 1
    two = HAMI_RTX2060_NINE + HAMI_RTX2060_NINE.replace("-e08aa68ab060", "-e08aa68ab061").replace(",true,0,", ",true,1,")
    assert count_hint({}, {HAMI_KEY: two}).count == 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("register", "arch", "gpus"),
    [
        # eight fields is neither format (a record cut inside its mode): nothing is read
        (HAMI_RTX2060_NINE.replace(",hami-core:", ":"), None, None),
        # one record of each format: both whole, so both count
        (HAMI_V100_PAIR.split(":")[0] + ":GPU-1,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true,1,hami-core:", "v100", 2),
    ],
)
def test_hami_records_are_whole_in_either_of_its_two_formats_only(register: str, arch: str | None, gpus: int | None) -> None:
    hint, count = architecture_hint({}, {HAMI_KEY: register}), count_hint({}, {HAMI_KEY: register})
    assert (hint.architecture if hint else None) == arch
    assert (count.count if count else None) == gpus


def test_detection_reads_the_hami_annotation_and_says_so() -> None:
    n = hami_node("416a100", HAMI_V100_PAIR, {"nvidia.com/gpu.present": "true", "node.kubernetes.io/instance-type": "k3s"})
    found, diags = detect(n)
    assert found is not None and found.fact.value == "v100"
    assert found.fact.detail == f"{HAMI_KEY} annotations; 1 of 1 target node"
    [diag] = [d for d in diags if d.code == "GPUArchitectureFromLabel"]
    assert f"GPU architecture read from the {HAMI_KEY} annotation: 416a100 (NVIDIA-Tesla V100-PCIE-32GB -> v100)" in diag.message
    facts = ClusterFacts(nodes=(n,))
    assert node_gpu_counts(facts, [n])["416a100"].count == 2
    kept, excluded, _ = filter_by_capacity(facts, [n], gpus_per_node=4, category="communication/nccl-all-reduce")
    assert not kept and f"has 2 GPUs by its {HAMI_KEY} annotation" in excluded[0].reason


@pytest.mark.parametrize(
    ("product", "mig"),
    [
        # GPU Feature Discovery's product under the MIG single strategy: <product>-MIG-<profile>
        ("A100-SXM4-40GB-MIG-1g.5gb", True),
        ("NVIDIA-A100-SXM4-80GB-MIG-3g.40gb", True),
        ("NVIDIA-H100-80GB-HBM3-MIG-7g.80gb", True),
        ("NVIDIA-H200-MIG-1g.18gb+me", True),
        ("NVIDIA-A100-SXM4-40GB-mig-2G.10GB", True),
        ("NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", True),  # MIG devices, time-sliced
        # whole GPUs: the product of the mixed strategy or of MIG disabled, and other names
        ("NVIDIA-A100-SXM4-40GB", False),
        ("NVIDIA-H100-80GB-HBM3-SHARED", False),
        ("NVIDIA-MIGHTY-80GB", False),
        ("A100-SXM4-40GB-MIG", False),
        ("A100-SXM4-40GB-MIG-1g.5gb-extra", False),
        ("A100-SXM4-40GB-MIG-capable", False),
    ],
)
def test_only_gfds_mig_suffix_marks_mig_devices(product: str, mig: bool) -> None:
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": "7"}
    assert (mig_product(labels) is not None) is mig
    assert (count_hint(labels) is None) is mig


def test_a_mig_node_gives_no_count_hint_but_keeps_its_architecture() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.strategy": "single"}
    assert count_hint({**labels, "nvidia.com/gpu.count": "7"}) is None
    assert count_hint({**labels, "node.kubernetes.io/instance-type": "p4d.24xlarge"}) is None
    assert mig_product({"nvidia.com/mig.strategy": "single"}) is None  # the strategy alone says nothing
    found, _ = detect(node("dgx", {**labels, "nvidia.com/gpu.present": "true"}, {"nvidia.com/gpu": "7"}))
    assert found is not None and found.fact.value == "a100"
