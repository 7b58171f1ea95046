"""Platform detection from spec.providerID, the --platform flag, and mixed fleets."""

from __future__ import annotations

import random

import pytest

from nvcre.compiler.detect import detect_platform, node_platform, platform_names, validate_platform_flag
from nvcre.compiler.diagnostics import Severity


def node(name: str, provider_id: str = "", **labels: str) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": dict(labels)}, "spec": {"providerID": provider_id}}


@pytest.mark.parametrize(
    ("provider_id", "labels", "platform"),
    [
        ("aws:///us-east-1a/i-0a1b2c3d4e5f60001", {}, "aws"),
        ("gce://proj/us-central1-a/gke-node", {}, "gcp"),
        ("azure:///subscriptions/x/resourceGroups/y/providers/Microsoft.Compute/virtualMachineScaleSets/z/virtualMachines/0", {}, "azure"),
        ("ocid1.instance.oc1.iad.anuwcljt", {}, "oci"),
        ("oci://ocid1.instance.oc1", {}, "onprem"),  # OCI writes the bare OCID, never oci://
        ("openstack:///5b8f2a9c", {}, "onprem"),
        ("openstack:///5b8f2a9c", {"nscale.com/rdmashare": "8"}, "onprem"),  # the legacy nscale probe is gone
        ("nscale://placement-server/gb300-r01/nks-000123", {}, "nscale"),
        ("nscale://instance/6f1c2d3e-1111", {}, "nscale"),
        ("kubevirt://vm-1", {"node-role.together.ai/worker": ""}, "togetherai"),
        ("kubevirt://vm-1", {}, "onprem"),
        ("metal3://openshift-machine-api/bm-01/bm-01", {}, "mistral"),
        ("kind://docker/mokka/mokka-worker", {}, "onprem"),
        ("vsphere://4201", {}, "onprem"),
        ("baremetalhost://x", {}, "onprem"),
        ("", {}, "onprem"),
        ("", {"kubernetes.io/hostname": "forge-gpu-017"}, "forge"),
        ("", {"nke.nvidia.com/site-name": ""}, "forge"),
        ("aws:///x", {"kubernetes.io/hostname": "forge-gpu-017"}, "aws"),  # forge rules need an empty providerID
    ],
)
def test_node_platform(provider_id, labels, platform):
    assert node_platform(node("n", provider_id, **labels)) == platform


def test_absent_spec_counts_as_empty_provider_id():
    assert node_platform({"metadata": {"name": "n"}}) == "onprem"


def test_platform_names_in_documented_order():
    assert platform_names() == ("aws", "gcp", "azure", "oci", "onprem", "togetherai", "mistral", "forge", "nscale")


def test_validate_platform_flag():
    assert validate_platform_flag(None) == (None, [])
    assert validate_platform_flag("") == (None, [])
    assert validate_platform_flag("nscale") == ("nscale", [])
    value, [diag] = validate_platform_flag("AWS")
    assert value is None
    assert (diag.code, diag.path, diag.severity) == ("InvalidPlatform", "--platform", Severity.ERROR)
    assert diag.message == 'invalid --platform "AWS": must be one of aws, gcp, azure, oci, onprem, togetherai, mistral, forge, nscale'


def test_uniform_platform_is_detected():
    fact, diags = detect_platform([node("b", "aws:///2"), node("a", "aws:///1")])
    assert (fact.value, fact.source) == ("aws", "detected")
    assert fact.detail == "spec.providerID of 2 target nodes"
    assert diags == []


def test_mixed_platforms_are_rejected_with_names_and_counts():
    nodes = [node("gke-1", "gce://p/z/gke-1"), node("ip-1", "aws:///1"), node("ip-2", "aws:///2")]
    fact, [diag] = detect_platform(nodes, target_path="spec.target")
    assert fact is None
    assert (diag.code, diag.path, diag.severity) == ("MixedPlatforms", "spec.target", Severity.ERROR)
    assert diag.message == (
        "target nodes span 2 platforms: aws on 2 nodes (ip-1, ip-2); gcp on 1 node (gke-1); "
        "a certification runs on one platform, so narrow the target to one of them or pass --platform"
    )


def test_mixed_platform_message_does_not_depend_on_order():
    nodes = [node(f"n{i}", pid) for i, pid in enumerate(["aws:///1", "", "gce://x", "aws:///2", "kind://x", "ocid1.x"])]
    _, baseline = detect_platform(nodes)
    for seed in range(5):
        shuffled = nodes[:]
        random.Random(seed).shuffle(shuffled)
        assert detect_platform(shuffled)[1] == baseline
    assert (
        "span 4 platforms: aws on 2 nodes (n0, n3); onprem on 2 nodes (n1, n4); gcp on 1 node (n2); oci on 1 node (n5)"
        in baseline[0].message
    )


def test_supplied_platform_wins_and_mentions_what_it_replaces():
    nodes = [node("bm-01", "metal3://ns/bm-01/bm-01"), node("bm-02", "metal3://ns/bm-02/bm-02")]
    fact, [diag] = detect_platform(nodes, supplied="onprem")
    assert (fact.value, fact.source, fact.detail) == ("onprem", "supplied", "--platform")
    assert (diag.code, diag.severity) == ("PlatformOverridden", Severity.INFO)
    assert "mistral on 2 nodes (bm-01, bm-02)" in diag.message


def test_supplied_platform_also_settles_a_mixed_fleet():
    fact, diags = detect_platform([node("a", "aws:///1"), node("g", "gce://x")], supplied="aws")
    assert fact.value == "aws"
    assert [d.code for d in diags] == ["PlatformOverridden"]


def test_supplied_platform_matching_detection_is_silent():
    fact, diags = detect_platform([node("a", "aws:///1")], supplied="aws")
    assert fact.source == "supplied" and diags == []


def test_metal3_detection_explains_the_trap():
    fact, [diag] = detect_platform([node("bm-01", "metal3://ns/bm-01/bm-01")])
    assert fact.value == "mistral"
    assert (diag.code, diag.severity) == ("PlatformDetectionNote", Severity.INFO)
    assert "--platform onprem" in diag.message and "bm-01" in diag.message


def test_no_nodes_defaults_to_onprem():
    fact, [diag] = detect_platform([])
    assert (fact.value, fact.source) == ("onprem", "defaulted")
    assert (diag.code, diag.severity) == ("PlatformDefaulted", Severity.INFO)
