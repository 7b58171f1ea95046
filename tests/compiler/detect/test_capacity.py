"""Per-category GPU capacity filter, with GPU counts from allocatable or ResourceSlices."""

from __future__ import annotations

import json
from pathlib import Path

from nvcre.compiler.detect import filter_by_capacity, node_gpu_counts
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts, load_facts, name_of

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"
CATEGORY = "communication/nccl-all-reduce"


def node(name, gpus=None):
    status = {"allocatable": {"nvidia.com/gpu": gpus}} if gpus is not None else {}
    return {"kind": "Node", "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}}, "status": status}


def test_under_capacity_node_is_excluded_and_silent_node_kept():
    facts = load_facts(FIXTURES / "under-capacity.yaml")
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=8, category=CATEGORY)
    assert [name_of(n) for n in kept] == ["h100-01", "h100-02", "h100-04"]
    assert excluded == [("h100-03", "has 4 allocatable nvidia.com/gpu, the workload requests 8 per node")]
    assert [(d.code, d.severity) for d in diags] == [("GPUCountUnknown", Severity.INFO), ("NodeExcluded", Severity.WARNING)]
    assert diags[1].message == (
        "communication/nccl-all-reduce: 1 node matched the target but has insufficient GPU capacity, "
        "the workload requests 8 nvidia.com/gpu per node: h100-03 has 4"
    )


def test_every_node_fits_a_smaller_request():
    facts = load_facts(FIXTURES / "under-capacity.yaml")
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=4, category=CATEGORY)
    assert len(kept) == 4 and excluded == []
    assert [d.code for d in diags] == ["GPUCountUnknown"]


def test_no_node_left_is_an_error_with_the_exact_text():
    facts = ClusterFacts(nodes=(node("a", "4"), node("b", "2")))
    kept, excluded, diags = filter_by_capacity(
        facts, facts.nodes, gpus_per_node=8, category=CATEGORY, path="spec.categories[0].options.gpusPerNode"
    )
    assert kept == ()
    assert [e.name for e in excluded] == ["a", "b"]
    [diag] = diags
    assert (diag.code, diag.severity, diag.path) == ("InsufficientGPUCapacity", Severity.ERROR, "spec.categories[0].options.gpusPerNode")
    assert diag.message == (
        "communication/nccl-all-reduce: no node can supply the 8 nvidia.com/gpu the workload requests per node; "
        "best available is 4 across 2 matching node(s). Lower gpusPerNode or target nodes with more GPUs"
    )


def test_dra_only_nodes_are_counted_from_resource_slices():
    facts = load_facts(FIXTURES / "nscale-gb300-dra.yaml")
    counts = node_gpu_counts(facts, facts.nodes)
    assert {n: (c.count, c.source) for n, c in counts.items()} == {
        "nks-gb300-r01-n01": (4, "resourceslices"),
        "nks-gb300-r01-n02": (4, "resourceslices"),
        "nks-gb300-r02-n01": (4, "resourceslices"),
        "nks-gb300-r02-n02": (4, "resourceslices"),
    }
    kept, _, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=4, category="training/nemotron5-8b")
    assert len(kept) == 4 and diags == []
    kept, excluded, [diag] = filter_by_capacity(facts, facts.nodes, gpus_per_node=8, category="training/nemotron5-8b")
    assert kept == () and excluded[0].reason == "has 4 GPUs in gpu.nvidia.com ResourceSlices, the workload requests 8 per node"
    assert "best available is 4 across 4 matching node(s)" in diag.message


def test_zero_allocatable_falls_back_to_resource_slices():
    slice_ = {
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "a",
            "pool": {"name": "a", "generation": 3},
            "devices": [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(2)],
        },
    }
    facts = ClusterFacts(nodes=(node("a", "0"),), resource_slices=(slice_,))
    assert node_gpu_counts(facts, facts.nodes)["a"].count == 2


def test_fractional_allocatable_is_not_a_count():
    facts = ClusterFacts(nodes=(node("a", "500m"),))
    assert node_gpu_counts(facts, facts.nodes)["a"].count is None


def test_nothing_to_filter_gives_nothing():
    assert filter_by_capacity(ClusterFacts(), (), gpus_per_node=8, category=CATEGORY) == ((), [], [])


# ------------------------------------------------------------------ MIG devices are not GPUs

REAL_NODES = Path(__file__).parents[3] / "golden" / "measure" / "real" / "nodes"


def mig_node(name, product, allocatable=None, **labels):
    node = {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product, **labels}},
    }
    if allocatable is not None:
        node["status"] = {"allocatable": {"nvidia.com/gpu": allocatable}}
    return node


def test_mig_devices_are_no_count_of_whole_gpus_from_allocatable_or_labels():
    single = {"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.count": "7"}
    advertised = mig_node("a", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "7", **single)
    labelled = mig_node("b", "A100-SXM4-40GB-MIG-1g.5gb", **single)
    # an instance type that counts whole GPUs does not count the MIG devices' GPUs either
    sized = mig_node("c", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb", **{"node.kubernetes.io/instance-type": "p5.48xlarge"})
    facts = ClusterFacts(nodes=(advertised, labelled, sized))
    counts = node_gpu_counts(facts, facts.nodes)
    assert {n: (c.count, c.source) for n, c in counts.items()} == {"a": (None, "mig"), "b": (None, "mig"), "c": (None, "mig")}


def test_whole_gpus_of_mig_capable_nodes_still_count():
    # MIG disabled under the single strategy, and the mixed strategy: the product names the whole GPU
    disabled = json.loads((REAL_NODES / "onprem-h100-mig-single-all-disabled-gfd-label-map.yaml").read_text())
    mixed = json.loads((REAL_NODES / "onprem-h100-mig-mixed-gfd-label-map.yaml").read_text())
    nodes = tuple({"kind": "Node", "metadata": {"name": name, "labels": labels}} for name, labels in (("d", disabled), ("m", mixed)))
    counts = node_gpu_counts(ClusterFacts(nodes=nodes), nodes)
    assert {n: (c.count, c.source) for n, c in counts.items()} == {"d": (1, "nvidia.com/gpu.count"), "m": (1, "nvidia.com/gpu.count")}
    # a product that merely holds the letters "mig" is a product
    named = mig_node("n", "NVIDIA-MIGHTY-80GB", "8")
    assert node_gpu_counts(ClusterFacts(nodes=(named,)), [named])["n"].count == 8


def test_the_capacity_filter_leaves_mig_nodes_out_with_a_warning():
    facts = ClusterFacts(nodes=(mig_node("mig-1", "A100-SXM4-40GB-MIG-1g.5gb", "7"), node("whole", "8"), node("silent")))
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=4, category=CATEGORY, path="spec.gpusPerNode")
    assert [name_of(n) for n in kept] == ["silent", "whole"]
    assert excluded == [("mig-1", "its nvidia.com/gpu are MIG devices (A100-SXM4-40GB-MIG-1g.5gb), not whole GPUs")]
    assert [(d.code, d.severity, d.path) for d in diags] == [
        ("MIGDevicesNotGPUs", Severity.WARNING, "spec.gpusPerNode"),
        ("GPUCountUnknown", Severity.INFO, "spec.gpusPerNode"),
    ]
    assert diags[0].message == (
        "communication/nccl-all-reduce: 1 node left out: its GPUs are split into MIG devices, which are not whole GPUs, "
        "and the certification needs whole GPUs: mig-1"
    )


def test_a_target_of_mig_nodes_only_says_why_nothing_is_left():
    facts = ClusterFacts(nodes=(mig_node("m1", "A100-SXM4-40GB-MIG-1g.5gb", "7"), mig_node("m2", "A100-SXM4-40GB-MIG-7g.40gb", "1")))
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=1, category=CATEGORY)
    assert kept == () and [e.name for e in excluded] == ["m1", "m2"]
    assert [(d.code, d.severity) for d in diags] == [("MIGDevicesNotGPUs", Severity.WARNING), ("InsufficientGPUCapacity", Severity.ERROR)]
    assert diags[0].message.endswith(
        "2 nodes left out: their GPUs are split into MIG devices, which are not whole GPUs, and the certification needs whole GPUs: m1, m2"
    )


def mixed_node(name, gpus, **devices):
    """A node as the device plugin shows it under the MIG ``mixed`` strategy: ``nvidia.com/gpu``
    beside one resource per MIG profile."""
    allocatable = {"nvidia.com/gpu": gpus, **{f"nvidia.com/mig-{k.replace('_', '.')}": v for k, v in devices.items()}}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
        "status": {"allocatable": allocatable},
    }


def test_a_node_of_mig_devices_only_under_the_mixed_strategy_has_no_whole_gpu_and_is_left_out():
    # the GPU Operator's OpenShift walkthrough: nvidia.com/gpu 0 beside 32 MIG devices of three profiles
    split = mixed_node("split", "0", **{"1g_10gb": "16", "2g_20gb": "8", "3g_40gb": "8"})
    # some GPUs split, some whole: the whole ones count, as allocatable says
    part = mixed_node("part", "4", **{"1g_10gb": "14"})
    # 0 GPUs and no MIG device, or MIG resources at 0: a device plugin that advertises nothing yet
    restarting, emptied = mixed_node("restarting", "0"), mixed_node("emptied", "0", **{"1g_10gb": "0"})
    facts = ClusterFacts(nodes=(split, part, restarting, emptied))
    counts = node_gpu_counts(facts, facts.nodes)
    assert {n: (c.count, c.source) for n, c in counts.items()} == {
        "emptied": (None, ""),
        "part": (4, "allocatable"),
        "restarting": (None, ""),
        "split": (0, "mig"),
    }
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=1, category=CATEGORY)
    assert [name_of(n) for n in kept] == ["emptied", "part", "restarting"]
    assert excluded == [
        (
            "split",
            "it advertises nvidia.com/gpu: 0 and MIG devices (nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, "
            "nvidia.com/mig-3g.40gb), not whole GPUs",
        ),
    ]
    assert diags[0].code == "MIGDevicesNotGPUs"


def test_a_node_that_advertises_only_shared_gpus_has_no_whole_gpu_and_is_left_out():
    # Bottlerocket's device plugin with MIG partitions shared four ways under the renamed resource:
    # nvidia.com/gpu 0 beside nvidia.com/gpu.shared 128 (golden/measure/real/nodes/)
    def shared_node(name: str, gpus: str, shared: str) -> dict:
        return {
            "kind": "Node",
            "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
            "status": {"allocatable": {"nvidia.com/gpu": gpus, "nvidia.com/gpu.shared": shared}},
        }

    facts = ClusterFacts(nodes=(shared_node("shared", "0", "128"), shared_node("both", "2", "8"), shared_node("idle", "0", "0")))
    counts = node_gpu_counts(facts, facts.nodes)
    assert {n: (c.count, c.source) for n, c in counts.items()} == {
        "both": (2, "allocatable"),  # whole GPUs beside shared ones: the whole ones count
        "idle": (None, ""),  # nothing advertised yet: a device plugin may be restarting
        "shared": (0, "shared"),
    }
    kept, excluded, diags = filter_by_capacity(facts, facts.nodes, gpus_per_node=1, category=CATEGORY)
    assert [name_of(n) for n in kept] == ["both", "idle"]
    assert excluded == [
        (
            "shared",
            "has 0 whole nvidia.com/gpu (its GPUs are advertised only as shared replicas, nvidia.com/gpu.shared), "
            "the workload requests 1 per node",
        )
    ]
    assert [d.code for d in diags] == ["GPUCountUnknown", "NodeExcluded"]
