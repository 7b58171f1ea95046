"""Platform from a node's labels when spec.providerID is absent, and what decided it.

The label sets are real (``tests/fixtures/facts/platform-labels-real.yaml`` names the public
address of each). Before labels were read, every one of these nodes detected as ``onprem``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nvcre.cli.cluster import app
from nvcre.compiler.detect import detect_platform, node_platform
from nvcre.compiler.detect.platform import read_platform
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import facts_from_text, load_facts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"
REAL = load_facts(FIXTURES / "platform-labels-real.yaml")


def real(name: str) -> dict:
    found = REAL.node(name)
    assert found is not None, name
    return found


@pytest.mark.parametrize(
    ("name", "platform", "basis"),
    [
        ("ip-10-0-114-53.ec2.internal", "aws", "label eks.amazonaws.com/capacityType"),
        ("ip-192-168-164-242.eu-central-1.compute.internal", "aws", "label k8s.io/cloud-provider-aws"),
        ("gke-my-gpu-cluster-default-pool-4d0fa82d-ttxh", "gcp", "label cloud.google.com/gke-accelerator"),
        ("aks-newpool-20956280-vmss000000", "azure", "label kubernetes.azure.com/agentpool"),
        ("10.140.50.107", "oci", "label oci.oraclecloud.com/fault-domain"),
        # no managed-Kubernetes label: a GPU instance type only one cloud sells decides
        ("ip-192-168-87-217.us-west-2.compute.internal", "aws", "instance type g5.xlarge (beta.kubernetes.io/instance-type)"),
        ("k8s-agent-4ef87f69-0", "azure", "instance type Standard_NC6 (beta.kubernetes.io/instance-type)"),
        # k3s's own instance type names no cloud
        ("416a100", "onprem", "no spec.providerID"),
    ],
)
def test_platform_from_labels_without_a_provider_id(name: str, platform: str, basis: str) -> None:
    reading = read_platform(real(name))
    assert (reading.platform, reading.basis) == (platform, basis)
    assert node_platform(real(name)) == platform


def test_the_current_instance_type_label_comes_first() -> None:
    labels = {"beta.kubernetes.io/instance-type": "Standard_NC6", "node.kubernetes.io/instance-type": "Standard_NC6"}
    node = {"metadata": {"name": "k8s-agent-4ef87f69-0", "labels": labels}}
    assert read_platform(node).basis == "instance type Standard_NC6 (node.kubernetes.io/instance-type)"


def test_provider_id_still_wins_over_labels() -> None:
    eks = dict(real("ip-10-0-114-53.ec2.internal"))
    moved = {**eks, "spec": {"providerID": "gce://proj/us-east1-c/n"}}
    reading = read_platform(moved)
    assert (reading.platform, reading.basis) == ("gcp", "spec.providerID")
    # an explicit on-prem providerID is not second-guessed by cloud labels either
    assert node_platform({**eks, "spec": {"providerID": "kind://docker/mokka/mokka-worker"}}) == "onprem"


def test_forge_rules_come_before_cloud_labels() -> None:
    node = {"metadata": {"name": "forge-01", "labels": {"kubernetes.io/hostname": "forge-01", "eks.amazonaws.com/nodegroup": "x"}}}
    assert node_platform(node) == "forge"


def test_detected_platform_names_the_label_that_decided() -> None:
    nodes = [real("ip-10-0-114-53.ec2.internal"), real("ip-192-168-164-242.eu-central-1.compute.internal")]
    fact, diags = detect_platform(nodes)
    assert fact is not None and (fact.value, fact.source) == ("aws", "detected")
    assert fact.detail == "label eks.amazonaws.com/capacityType of 1 target node; label k8s.io/cloud-provider-aws of 1 target node"
    assert [(d.code, d.severity) for d in diags] == [("PlatformFromLabel", Severity.INFO)] * 2
    assert diags[0].message == (
        "1 node without spec.providerID: platform aws read from the label eks.amazonaws.com/capacityType: ip-10-0-114-53.ec2.internal"
    )


def test_provider_id_and_label_nodes_of_one_cloud_agree() -> None:
    with_id = {"metadata": {"name": "a"}, "spec": {"providerID": "aws:///us-east-1a/i-1"}}
    fact, _ = detect_platform([with_id, real("ip-10-0-114-53.ec2.internal")])
    assert fact is not None and fact.value == "aws"
    assert fact.detail == "spec.providerID of 1 target node; label eks.amazonaws.com/capacityType of 1 target node"


def test_a_set_spanning_clouds_by_label_is_reported_as_mixed() -> None:
    fact, [diag] = detect_platform(list(REAL.nodes))
    assert fact is None and diag.code == "MixedPlatforms"
    assert diag.message.startswith(
        "target nodes span 5 platforms: aws on 3 nodes (ip-10-0-114-53.ec2.internal, ip-192-168-164-242.eu-central-1.compute.internal, "
        "ip-192-168-87-217.us-west-2.compute.internal); azure on 2 nodes"
    )


def test_supplied_platform_says_it_replaces_a_label_reading() -> None:
    fact, [diag] = detect_platform([real("aks-newpool-20956280-vmss000000")], supplied="onprem")
    assert fact is not None and fact.value == "onprem"
    assert diag.code == "PlatformOverridden"
    assert "replaces the platform detected from label kubernetes.azure.com/agentpool of 1 target node (azure on 1 node" in diag.message


def test_cluster_info_shows_the_label_that_decided(tmp_path: Path) -> None:
    # The Karpenter node of bottlerocket-os/bottlerocket#4087, with the GPU labels GFD would add.
    text = (
        "kind: Node\napiVersion: v1\nmetadata:\n  name: ip-192-168-164-242.eu-central-1.compute.internal\n  labels:\n"
        "    k8s.io/cloud-provider-aws: e7b76f679c563363cec5c6d5c3\n    karpenter.k8s.aws/instance-gpu-name: t4\n"
        "    karpenter.k8s.aws/instance-gpu-manufacturer: nvidia\n    karpenter.k8s.aws/instance-gpu-count: '1'\n"
        "    nvidia.com/gpu.present: 'true'\n"
    )
    facts = tmp_path / "facts.yaml"
    facts.write_text(text)
    assert len(facts_from_text(text).nodes) == 1
    r = CliRunner().invoke(app, ["info", "--facts", str(facts)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == "Platform:     aws (detected: label k8s.io/cloud-provider-aws of 1 target node)"


def test_explain_names_the_label_that_decided_the_platform(tmp_path: Path) -> None:
    # The EKS managed node of awslabs/kubeflow-manifests#396 as a P5 node with GFD's labels.
    facts = tmp_path / "facts.yaml"
    facts.write_text(
        "kind: Node\napiVersion: v1\nmetadata:\n  name: ip-10-0-114-53.ec2.internal\n  labels:\n"
        "    eks.amazonaws.com/capacityType: ON_DEMAND\n"
        "    eks.amazonaws.com/nodegroup: managed-ondemand-20220925033713447600000001\n"
        "    node.kubernetes.io/instance-type: p5.48xlarge\n    nvidia.com/gpu.present: 'true'\n"
        "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\nstatus:\n  allocatable: {nvidia.com/gpu: '8'}\n"
    )
    from nvcre.cli.certification import app as certification

    example = Path(__file__).resolve().parents[3] / "examples" / "certification.yaml"
    r = CliRunner().invoke(certification, ["render", str(example), "--facts", str(facts), "--explain"])
    assert r.exit_code == 0, r.output
    assert "#   platform: aws (detected: label eks.amazonaws.com/capacityType of 1 target node)" in r.stderr
    assert "platform aws read from the label eks.amazonaws.com/capacityType" in r.stderr


def test_supplied_platform_counts_only_the_nodes_it_overrides() -> None:
    with_id = {"metadata": {"name": "a"}, "spec": {"providerID": "aws:///us-east-1a/i-1"}}
    _, [diag] = detect_platform([with_id, real("aks-newpool-20956280-vmss000000")], supplied="aws")
    assert diag.message == (
        "--platform aws replaces the platform detected from label kubernetes.azure.com/agentpool of 1 target node "
        "(azure on 1 node (aks-newpool-20956280-vmss000000))"
    )


def test_a_label_that_qualifies_a_provider_id_rule_is_not_reported_as_deciding() -> None:
    node = {"metadata": {"name": "w1", "labels": {"node-role.together.ai/worker": ""}}, "spec": {"providerID": "kubevirt://vm-1"}}
    reading = read_platform(node)
    assert (reading.platform, reading.basis, reading.from_labels) == ("togetherai", "spec.providerID", False)
    fact, diags = detect_platform([node])
    assert fact is not None and fact.detail == "spec.providerID of 1 target node" and diags == []


def test_forge_hostnames_are_reported_as_a_label_reading() -> None:
    node = {"metadata": {"name": "forge-gpu-017", "labels": {"kubernetes.io/hostname": "forge-gpu-017"}}}
    fact, [diag] = detect_platform([node])
    assert fact is not None and (fact.value, fact.detail) == ("forge", "label kubernetes.io/hostname of 1 target node")
    assert diag.code == "PlatformFromLabel"
