"""NIC resource auto-detection for on-prem GB200/GB300/B200/B300."""

from __future__ import annotations

from pathlib import Path

import pytest

from nvcre.compiler.detect import detect_nic_resource, nic_detection_applies
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts, load_facts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"


def node(name, alloc):
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": dict(alloc)}}


def nodes(*specs):
    return ClusterFacts(nodes=tuple(specs)).nodes


def run(target_nodes, mlnx=8, platform="onprem", arch="gb200", name=None):
    return detect_nic_resource(target_nodes, platform=platform, gpu_arch=arch, mlnx_per_node=mlnx, nic_resource_name=name)


@pytest.mark.parametrize(
    ("platform", "arch", "applies"),
    [
        ("onprem", "gb200", True),
        ("onprem", "gb300", True),
        ("onprem", "b200", True),
        ("onprem", "b300", True),
        ("onprem", "h100", False),
        ("mistral", "gb300", False),
        ("aws", "gb200", False),
        ("nscale", "gb300", False),
    ],
)
def test_gate(platform, arch, applies):
    assert nic_detection_applies(platform, arch) is applies


def test_single_candidate_is_detected():
    facts = load_facts(FIXTURES / "onprem-gb200-rdma.yaml")
    target = [n for n in facts.nodes if n["metadata"]["name"].startswith("gb200")]
    fact, [diag] = run(target)
    assert (fact.value, fact.source) == ("rdma/ib", "detected")
    assert (diag.code, diag.severity) == ("NICResourceDetection", Severity.INFO)


def test_two_qualifying_candidates_are_ambiguous():
    facts = load_facts(FIXTURES / "onprem-gb300-ambiguous-nics.yaml")
    fact, [diag] = run(facts.nodes, arch="gb300")
    assert (fact.value, fact.source) == ("", "defaulted")
    assert (diag.code, diag.severity, diag.path) == ("NICResourceDetection", Severity.WARNING, "spec.nicResourceName")
    assert "(nvidia.com/mlnxnics, rdma/ib)" in diag.message and "Set nicResourceName to choose one" in diag.message


def test_no_candidate_anywhere():
    fact, [diag] = run(nodes(node("a", {"cpu": "8", "nvidia.com/gpu": "4"})))
    assert fact.value == "" and diag.severity is Severity.INFO
    assert "no target node has an rdma/* or nvidia.com/mlnxnics resource" in diag.message


def test_candidate_below_the_required_count():
    target = nodes(node("a", {"rdma/ib": "1"}), node("b", {"rdma/ib": "1"}))
    fact, [diag] = run(target, mlnx=8)
    assert fact.value == "" and diag.severity is Severity.WARNING
    assert "rdma/ib: a=1, b=1" in diag.message and "none is allocatable at 8 on every target node" in diag.message
    # A pooled plugin is matched by sizing mlnxPerNode to it.
    assert run(target, mlnx=1)[0].value == "rdma/ib"


def test_zero_mlnx_per_node_still_requires_one():
    assert run(nodes(node("a", {"rdma/ib": "1"})), mlnx=0)[0].value == "rdma/ib"
    assert run(nodes(node("a", {"rdma/ib": "0"})), mlnx=0)[0].value == ""


def test_candidate_missing_on_one_node_does_not_qualify():
    target = nodes(node("a", {"rdma/ib": "8", "rdma/roce": "8"}), node("b", {"rdma/roce": "8"}))
    assert run(target)[0].value == "rdma/roce"


def test_shared_device_plugin_quantities_are_parsed():
    target = nodes(node("a", {"rdma/rdma_shared_device_a": "1k"}), node("b", {"rdma/rdma_shared_device_a": "1k"}))
    assert run(target)[0].value == "rdma/rdma_shared_device_a"


def test_mlnxnics_exact_name_is_a_candidate_but_lookalikes_are_not():
    target = nodes(node("a", {"nvidia.com/mlnxnics": "8", "nvidia.com/mlnxnics-x": "8", "example.com/rdma": "8"}))
    assert run(target)[0].value == "nvidia.com/mlnxnics"


def test_explicit_name_wins_even_when_empty():
    facts = load_facts(FIXTURES / "onprem-gb300-ambiguous-nics.yaml")
    fact, diags = run(facts.nodes, arch="gb300", name="rdma/ib")
    assert (fact.value, fact.source, fact.detail, diags) == ("rdma/ib", "supplied", "nicResourceName", [])
    fact, diags = run(facts.nodes, arch="gb300", name="")
    assert (fact.value, fact.source, diags) == ("", "supplied", [])
    fact, diags = run(facts.nodes, platform="aws", arch="h100", name="nvidia.com/mlnxnics")
    assert (fact.value, fact.source) == ("nvidia.com/mlnxnics", "supplied")


def test_other_platforms_get_no_detection_and_no_message():
    facts = load_facts(FIXTURES / "onprem-gb200-rdma.yaml")
    fact, diags = run(facts.nodes, platform="mistral", arch="gb300")
    assert (fact.value, fact.source, diags) == ("", "defaulted", [])
    fact, diags = run(facts.nodes, platform="onprem", arch="h100")
    assert fact.value == "" and diags == []
