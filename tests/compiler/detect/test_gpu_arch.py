"""GPU architecture: product parsing, the --gpu-arch flag, DRA products, majority vote."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from nvcre.compiler.catalog import load_catalog
from nvcre.compiler.detect import (
    known_architectures,
    parse_gpu_arch_flag,
    parse_product,
)
from nvcre.compiler.detect.dra import dra_gpus_by_node, product_label_value
from nvcre.compiler.detect.gpu_arch import UNKNOWN_ARCH_MESSAGE, arch_from_node_selector, detect_gpu_arch
from nvcre.compiler.detect.tables import table
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts, load_facts, name_of

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"


def node(name, product=None):
    labels = {"nvidia.com/gpu.present": "true"}
    if product is not None:
        labels["nvidia.com/gpu.product"] = product
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}}


def gpu_slice(node_name, product, *, count=4, generation=1, pool=None, dtype="gpu", name=None, qualified=False):
    key = "gpu.nvidia.com/productName" if qualified else "productName"
    devices = [
        {"name": f"gpu-{i}", "attributes": {"type": {"string": dtype}, key: {"string": product}, "architecture": {"string": "Blackwell"}}}
        for i in range(count)
    ]
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node_name}-gpu-{generation}"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node_name,
            "pool": {"name": pool or node_name, "generation": generation},
            "devices": devices,
        },
    }


def detect(nodes, slices=(), **kw):
    facts = ClusterFacts(nodes=tuple(nodes), resource_slices=tuple(slices))
    return detect_gpu_arch(facts, facts.nodes, **kw)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("product", "arch"),
    [
        ("NVIDIA-H100-80GB-HBM3", "h100"),
        ("NVIDIA-H100-NVL", "h100"),
        ("NVIDIA-H100-80GB-HBM3-SHARED", "h100"),
        ("NVIDIA-H100-SXM5-80GB", "h100"),
        ("nvidia-h100-sxm5-80gb", "h100"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA-H200", "h200"),
        ("NVIDIA-A100-SXM4-40GB", "a100"),
        ("NVIDIA-L40", "l40"),
        ("NVIDIA-L40S", "l40s"),
        ("NVIDIA-B200", "b200"),
        ("NVIDIA-B300-SXM6-AC", "b300"),
        ("NVIDIA-GB200", "gb200"),
        ("NVIDIA-GB200-NVL72", "gb200"),
        ("NVIDIA-GB300", "gb300"),
        ("NVIDIA GB300", "gb300"),
        ("gb300", "gb300"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "rtxpro6000"),
        ("nvidia-rtx-pro-6000-blackwell-server-edition", "rtxpro6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtxpro6000"),
        ("RTX PRO 6000", "rtxpro6000"),
        # Distinct Tesla products keep distinct keys (NVCRE's parser makes every one `tesla`).
        ("Tesla-V100-SXM2-16GB", "v100"),
        ("Tesla-T4", "t4"),
        ("Tesla-K80", "k80"),
        ("Tesla V100-SXM2-32GB", "v100"),
        ("nvidia-tesla-t4", "t4"),
        ("NVIDIA-", ""),
        ("", ""),
    ],
)
def test_parse_product(product, arch):
    assert parse_product(product) == arch


def test_every_product_in_the_table_parses_to_its_architecture():
    for arch, products in table("gpu_architectures")["architectures"].items():
        for product in products:
            assert parse_product(product) == arch, product


def test_known_architectures():
    assert known_architectures() == ("a100", "b200", "b300", "gb200", "gb300", "h100", "h200", "l40", "l40s", "rtxpro6000")


@pytest.mark.parametrize("flag", ["gb300", "GB300", "NVIDIA-GB300", "NVIDIA GB300", "nvidia-gb300-nvl72"])
def test_gpu_arch_flag_forms(flag):
    assert parse_gpu_arch_flag(flag) == ("gb300", [])


def test_gpu_arch_flag_b300_and_rtx():
    assert parse_gpu_arch_flag("b300")[0] == "b300"
    assert parse_gpu_arch_flag("NVIDIA-B300-SXM6-AC")[0] == "b300"
    assert parse_gpu_arch_flag("NVIDIA RTX PRO 6000 Blackwell Server Edition")[0] == "rtxpro6000"
    assert parse_gpu_arch_flag("") == (None, [])
    assert parse_gpu_arch_flag(None) == (None, [])


def test_gpu_arch_flag_error_text():
    value, [diag] = parse_gpu_arch_flag("v100")
    assert value is None
    assert (diag.code, diag.path, diag.severity) == ("InvalidGPUArch", "--gpu-arch", Severity.ERROR)
    assert diag.message == 'invalid --gpu-arch "v100": must be one of a100, b200, b300, gb200, gb300, h100, h200, l40, l40s, rtxpro6000'


def test_arch_from_node_selector():
    assert arch_from_node_selector({"nvidia.com/gpu.product": "NVIDIA-GB200"}) == "gb200"
    assert arch_from_node_selector({"nvidia.com/gpu.present": "true"}) == ""
    assert arch_from_node_selector(None) == ""


# --------------------------------------------------------------------------- DRA


def test_product_label_value_examples_from_the_table():
    examples = table("dra")["examples"]
    assert len(examples) >= 5
    for nvml, gfd in examples.items():
        assert product_label_value(nvml) == gfd


def test_dra_reads_newest_generation_whole_gpus_and_skips_other_drivers():
    facts = load_facts(FIXTURES / "nscale-gb300-dra.yaml")
    dra = dra_gpus_by_node(facts)
    assert sorted(dra) == ["nks-gb300-r01-n01", "nks-gb300-r01-n02", "nks-gb300-r02-n01", "nks-gb300-r02-n02"]
    assert {n: d.gpu_count for n, d in dra.items()} == dict.fromkeys(dra, 4)  # r01-n02's stale generation had 2
    assert {d.product for d in dra.values()} == {"NVIDIA-GB300"}
    assert dra["nks-gb300-r02-n01"].architectures == ("Blackwell",)  # v1beta1 layout


def test_dra_skips_vfio_devices_and_counts_only_gpus():
    slices = [
        gpu_slice("n1", "GH100 [H100 SXM5 80GB]", count=2, dtype="vfio", name="a-vfio"),
        gpu_slice("n1", "NVIDIA A100-SXM4-40GB", count=3, dtype="mig", name="b-mig"),
    ]
    dra = dra_gpus_by_node(ClusterFacts(resource_slices=tuple(slices)))
    assert dra["n1"].gpu_count == 0
    assert dra["n1"].products == ("NVIDIA-A100-SXM4-40GB",)


def test_dra_accepts_driver_qualified_attribute_names():
    dra = dra_gpus_by_node(ClusterFacts(resource_slices=(gpu_slice("n1", "NVIDIA B200", qualified=True),)))
    assert dra["n1"].product == "NVIDIA-B200"


def test_dra_only_cluster_detects_gb300():
    facts = load_facts(FIXTURES / "nscale-gb300-dra.yaml")
    nodes = [n for n in facts.nodes if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"]
    found, diags = detect_gpu_arch(facts, nodes)
    assert (found.fact.value, found.fact.source) == ("gb300", "detected")
    assert found.fact.detail == "gpu.nvidia.com ResourceSlices; 3 of 3 target nodes"
    assert found.products == ("NVIDIA-GB300",)
    assert found.dra_product_nodes == ("nks-gb300-r01-n01", "nks-gb300-r01-n02", "nks-gb300-r02-n01")
    assert [d.code for d in diags] == ["GPUProductFromResourceSlice"]
    # Nothing is written back to the facts.
    assert all("nvidia.com/gpu.product" not in n["metadata"]["labels"] for n in facts.nodes)


def test_mixed_gfd_and_dra_fleet_is_homogeneous():
    found, diags = detect([node("a", "NVIDIA-GB300"), node("b")], [gpu_slice("b", "NVIDIA GB300")])
    assert found.fact.value == "gb300" and [name_of(n) for n in found.nodes] == ["a", "b"]
    assert found.products == ("NVIDIA-GB300",)
    assert found.dra_product_nodes == ("b",)
    assert found.fact.detail.startswith("nvidia.com/gpu.product labels and gpu.nvidia.com ResourceSlices")


def test_label_wins_over_resource_slices():
    found, _ = detect([node("a", "NVIDIA-H100-80GB-HBM3")], [gpu_slice("a", "NVIDIA GB300")])
    assert found.fact.value == "h100" and found.dra_product_nodes == ()


def test_node_with_several_dra_products_uses_the_most_common():
    slices = [gpu_slice("a", "NVIDIA B200", count=3, name="s1"), gpu_slice("a", "NVIDIA H200", count=1, name="s2", pool="other")]
    found, diags = detect([node("a")], slices)
    assert found.fact.value == "b200"
    assert any(d.code == "GPUProductsDiffer" and d.severity is Severity.WARNING for d in diags)


# --------------------------------------------------------------------------- vote


def test_majority_wins_and_minority_is_excluded():
    found, diags = detect([node("a", "NVIDIA-H100-80GB-HBM3"), node("b", "NVIDIA-GB200"), node("c", "NVIDIA-GB200")])
    assert found.fact.value == "gb200"
    assert [name_of(n) for n in found.nodes] == ["b", "c"]
    assert found.excluded == (("a", "GPU architecture h100 (NVIDIA-H100-80GB-HBM3) differs from the majority architecture gb200"),)
    [diag] = diags
    assert (diag.code, diag.severity) == ("NodeExcluded", Severity.WARNING)
    assert diag.message == (
        "target set has more than one GPU architecture; certifying gb200 only (the majority, 2 of 3 nodes), leaving out 1 node: a (h100)"
    )


def test_tie_goes_to_the_earliest_node_by_name_whatever_the_order():
    nodes = [
        node("b-node", "NVIDIA-GB200"),
        node("a-node", "NVIDIA-H100-NVL"),
        node("c-node", "NVIDIA-GB200"),
        node("d-node", "NVIDIA-H100-NVL"),
    ]
    for seed in range(6):
        random.Random(seed).shuffle(nodes)
        found, _ = detect(nodes)
        assert found.fact.value == "h100"
        assert [e.name for e in found.excluded] == ["b-node", "c-node"]


def test_unlabelled_nodes_do_not_vote_and_are_left_out():
    found, diags = detect([node("a"), node("b"), node("c", "NVIDIA-B200")])
    assert found.fact.value == "b200"
    assert [name_of(n) for n in found.nodes] == ["c"]
    assert [e.name for e in found.excluded] == ["a", "b"]
    assert any("2 nodes report no GPU product" in d.message for d in diags)


def test_products_of_one_architecture_may_differ():
    found, diags = detect([node("a", "NVIDIA-H100-80GB-HBM3"), node("b", "NVIDIA-H100-80GB-HBM3-SHARED")])
    assert found.fact.value == "h100"
    assert found.products == ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3-SHARED")
    assert [(d.code, d.severity) for d in diags] == [("GPUProductsDiffer", Severity.INFO)]


def test_uncatalogued_architecture_is_detected_not_rejected():
    found, diags = detect([node("a", "Tesla-V100-SXM2-16GB")])
    assert found.fact.value == "v100" and diags == []


def test_tesla_products_are_not_one_architecture():
    # A T4 and a V100 node used to vote together as `tesla`; now the majority wins and the other is left out.
    found, diags = detect([node("a", "Tesla-T4"), node("b", "Tesla-V100-SXM2-16GB"), node("c", "Tesla-V100-SXM2-16GB")])
    assert found.fact.value == "v100" and [name_of(n) for n in found.nodes] == ["b", "c"]
    assert [e.name for e in found.excluded] == ["a"] and "t4" in found.excluded[0].reason


def test_supplied_arch_wins_excludes_others_and_keeps_unknown_nodes():
    found, diags = detect([node("a", "NVIDIA-H100-NVL"), node("b", "NVIDIA-GB300"), node("c")], supplied="gb300")
    assert (found.fact.value, found.fact.source) == ("gb300", "supplied")
    assert [name_of(n) for n in found.nodes] == ["b", "c"]
    assert found.excluded == (("a", "GPU architecture h100 (NVIDIA-H100-NVL) differs from --gpu-arch gb300"),)
    codes = [d.code for d in diags]
    assert codes == ["NodeExcluded", "GPUArchitectureAssumed"]


def test_no_product_anywhere_falls_back_to_the_node_selector():
    found, diags = detect([node("a"), node("b")], node_selector={"nvidia.com/gpu.product": "NVIDIA-GB200"})
    assert (found.fact.value, found.fact.source, found.fact.detail) == ("gb200", "supplied", "target nodeSelector nvidia.com/gpu.product")
    assert [name_of(n) for n in found.nodes] == ["a", "b"]
    assert [d.code for d in diags] == ["GPUArchitectureAssumed"]


def test_no_product_and_no_selector_is_an_error_with_the_exact_text():
    found, diags = detect([node("a")], [gpu_slice("a", "", count=1)])
    assert found is None
    err = [d for d in diags if d.is_error]
    assert [(d.code, d.path, d.message) for d in err] == [("GPUArchitectureUnknown", "spec.target.nodeSelector", UNKNOWN_ARCH_MESSAGE)]
    assert UNKNOWN_ARCH_MESSAGE == (
        "cannot determine GPU architecture from target nodeSelector or --gpu-arch (nvidia.com/gpu.product label is required)"
    )
    [hint] = [d for d in diags if not d.is_error]
    assert "Blackwell" in hint.message  # the architecture attribute alone names a family, not a product


# --------------------------------------------------------------------------- catalog


def test_known_architectures_match_the_catalog_gpu_defaults():
    # --gpu-arch accepts exactly the architectures the catalog can size.
    assert tuple(sorted(load_catalog().gpu_defaults.architectures)) == known_architectures()


def test_detection_does_not_depend_on_document_order():
    docs = list(YAML(typ="safe").load_all((FIXTURES / "nscale-gb300-dra.yaml").read_text()))
    from nvcre.compiler.facts import facts_from_documents

    def run(documents):
        facts = facts_from_documents(documents, source="f")
        return detect_gpu_arch(facts, facts.nodes)

    baseline = run(docs)
    for seed in range(5):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        assert run(shuffled) == baseline
