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


# ------------------------------------------------------------------ extended resources


EFA = "vpc.amazonaws.com/efa"


def _advertising(name: str, status: dict, labels: dict | None = None, provider: str = "", **metadata: dict) -> dict:
    node: dict = {"metadata": {"name": name, "labels": labels or {}, **metadata}, "status": status}
    if provider:
        node["spec"] = {"providerID": provider}
    return node


def test_an_efa_resource_places_a_node_without_provider_id_on_aws() -> None:
    allocatable = _advertising("p5-a", {"allocatable": {"nvidia.com/gpu": "8", EFA: "32"}})
    # a pasted piece that kept only its Capacity block
    capacity = _advertising("p5-c", {"capacity": {"nvidia.com/gpu": "8", EFA: "32"}})
    for node in (allocatable, capacity):
        reading = read_platform(node)
        assert (reading.platform, reading.basis, reading.from_labels) == ("aws", f"resource {EFA}", True)
    fact, [diag] = detect_platform([allocatable, capacity])
    assert fact is not None and (fact.value, fact.detail) == ("aws", f"resource {EFA} of 2 target nodes")
    assert diag.message == f"2 nodes without spec.providerID: platform aws read from the resource {EFA}: p5-a, p5-c"


def test_capacity_is_not_read_when_an_allocatable_block_is_present() -> None:
    node = _advertising("n", {"allocatable": {"nvidia.com/gpu": "8"}, "capacity": {EFA: "32"}})
    assert read_platform(node) == ("onprem", "no spec.providerID", "")


def test_a_provider_id_and_a_clouds_own_labels_still_decide_before_the_resource() -> None:
    status = {"allocatable": {EFA: "32"}}
    assert read_platform(_advertising("g", status, provider="gce://p/z/g")) == ("gcp", "spec.providerID", "")
    assert read_platform(_advertising("k", status, provider="kind://docker/k/k")).platform == "onprem"
    aks = read_platform(_advertising("a", status, {"kubernetes.azure.com/agentpool": "gpu"}))
    assert (aks.platform, aks.basis) == ("azure", "label kubernetes.azure.com/agentpool")
    sized = read_platform(_advertising("s", status, {"node.kubernetes.io/instance-type": "p5.48xlarge"}))
    assert (sized.platform, sized.basis) == ("aws", "instance type p5.48xlarge (node.kubernetes.io/instance-type)")
    # the resource, from the table, comes before a block-storage driver's annotation
    csi = {"csi.volume.kubernetes.io/nodeid": '{"pd.csi.storage.gke.io":"projects/p/zones/z/instances/i"}'}
    assert read_platform(_advertising("c", status, annotations=csi)).basis == f"resource {EFA}"


def test_other_resources_name_no_cloud() -> None:
    for resource in ("nvidia.com/gpu", "rdma/ib", "vpc.amazonaws.com/efa-extra", "amazonaws.com/efa"):
        assert read_platform(_advertising("n", {"allocatable": {resource: "1"}})).platform == "onprem", resource


class _CountingNode(dict):
    """A node that counts how often its ``status`` is read."""

    reads = 0

    def get(self, key, default=None):  # type: ignore[override]
        if key == "status":
            type(self).reads += 1
        return super().get(key, default)


def _with_rule(monkeypatch: pytest.MonkeyPatch, rule: dict) -> None:
    """The shipped platforms table with ``rule`` fourth, as :func:`read_platform` reads it."""
    from nvcre.compiler.detect import platform as module
    from nvcre.compiler.detect.tables import table

    shipped = table("platforms")
    patched = {**shipped, "rules": (*shipped["rules"][:3], rule, *shipped["rules"][3:])}
    monkeypatch.setattr(module, "table", lambda name: patched if name == "platforms" else table(name))


def test_each_node_is_read_once_however_many_rules_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_rule(monkeypatch, {"providerID": {"equals": ""}, "resourcePresent": ["example.com/none"], "platform": "gcp"})
    _CountingNode.reads = 0
    node = _CountingNode(metadata={"name": "n", "labels": {}}, status={"allocatable": {"rdma/ib": "1"}})
    assert read_platform(node).platform == "onprem"
    assert _CountingNode.reads == 1  # two resource rules asked; the status was read for the first


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"providerID": {"equals": ""}, "resourcePresent": EFA, "platform": "aws"}, "resourcePresent must be a non-empty list"),
        ({"providerID": {"equals": ""}, "resourcePresent": [], "platform": "aws"}, "resourcePresent must be a non-empty list"),
        ({"providerID": {"equals": ""}, "resourcePresent": [EFA, ""], "platform": "aws"}, "resourcePresent must be a non-empty list"),
        ({"providerID": {"equals": ""}, "labelPrefix": "eks.amazonaws.com/", "platform": "aws"}, "labelPrefix must be a non-empty list"),
        ({"providerID": {"equals": ""}, "resourcesPresent": [EFA], "platform": "aws"}, "unknown condition(s) resourcesPresent"),
        ({"providerID": {"equals": ""}, "resourcePresent": [EFA], "platform": "amazon"}, "platform is one of aws, gcp"),
        ({"providerID": "aws://", "platform": "aws"}, "providerID must be {equals: <s>} or {prefix: <s>}"),
        ({"labelContains": {"key": "kubernetes.io/hostname"}, "platform": "forge"}, "labelContains must be {key: <key>, substring: <s>}"),
    ],
)
def test_a_malformed_rule_is_an_error_when_the_table_is_read(monkeypatch: pytest.MonkeyPatch, rule: dict, message: str) -> None:
    _with_rule(monkeypatch, rule)
    with pytest.raises(ValueError, match=r"^platforms\.yaml: rules\[3\]") as raised:
        read_platform({"metadata": {"name": "n"}})
    assert message in str(raised.value)
    monkeypatch.undo()
    assert read_platform(_advertising("n", {"allocatable": {EFA: "1"}})).platform == "aws"
