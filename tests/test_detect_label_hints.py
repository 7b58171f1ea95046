"""Detection beyond GPU Feature Discovery's product label: cloud, Karpenter and instance-type labels.

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
from nvcre.compiler.detect.hints import architecture_hint, count_hint
from nvcre.compiler.detect.tables import table
from nvcre.compiler.facts import ClusterFacts, facts_from_documents, labels_of, load_facts

REPO = Path(__file__).resolve().parents[1]
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


def test_instance_type_table_names_the_architecture_when_nothing_else_does() -> None:
    labels = {"node.kubernetes.io/instance-type": KARPENTER_P5["node.kubernetes.io/instance-type"], "kubernetes.io/os": "linux"}
    hint = architecture_hint(labels)
    assert hint is not None and (hint.architecture, hint.label) == ("h100", "node.kubernetes.io/instance-type")
    count = count_hint(labels)
    assert count is not None and (count.count, count.label) == (8, "node.kubernetes.io/instance-type")
    # AKS writes the VM size; the lookup ignores case.
    azure = architecture_hint({"node.kubernetes.io/instance-type": "standard_nd96isr_h100_v5"})
    assert azure is not None and azure.architecture == "h100"


def test_every_instance_type_row_has_a_public_source_and_a_known_architecture() -> None:
    from nvcre.compiler.detect import known_architectures

    rows = table("gpu_hints")["instanceTypes"]
    names = [str(r["name"]).lower() for r in rows]
    assert len(names) == len(set(names))
    for row in rows:
        assert str(row["source"]).startswith("https://"), row
        assert row["architecture"] in known_architectures() and int(row["gpus"]) > 0, row
    wanted = {"p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "p6e-gb200.36xlarge"}
    wanted |= {"a2-highgpu-8g", "a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"}
    wanted |= {"standard_nd96asr_v4", "standard_nd96isr_h100_v5", "standard_nd96isr_h200_v5", "standard_nd128isr_ndr_gb200_v6"}
    wanted |= {"bm.gpu.h100.8", "bm.gpu.b200.8", "bm.gpu.gb200.4"}
    assert wanted <= set(names)


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
