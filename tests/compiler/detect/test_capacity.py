"""Per-category GPU capacity filter, with GPU counts from allocatable or ResourceSlices."""

from __future__ import annotations

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
