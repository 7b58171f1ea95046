"""GCP H100: GKE network names and TCPXO plugin version -> images."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcre.compiler.detect import gcp
from nvcre.compiler.detect.gcp import (
    default_gke_networks,
    default_tcpxo_profile,
    detect_gke_networks,
    detect_tcpxo_profile,
    gcp_detection_applies,
    installer_tag,
    parse_release,
    tcpxo_profile_for,
)
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import ClusterFacts, load_facts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"
PLUGIN = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev"
DAEMON = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev"


def gke_node(name, networks, eth_of=None, extra=()):
    """A node offering ``networks``; ``eth_of`` maps network -> ethN for the annotations."""
    alloc = {"networking.gke.io.networks/default": "1"}
    for net in [*networks, *extra]:
        alloc[f"networking.gke.io.networks/{net}"] = "1"
        alloc[f"networking.gke.io.networks/{net}.IP"] = "1"
    annotations = {}
    if eth_of is not None:
        north = [{"network": net, "ipAddress": f"10.{i}.0.{len(name)}"} for i, net in enumerate(networks)]
        nic_info = [{"birthIP": "10.128.0.2", "birthName": "eth0"}] + [
            {"birthIP": f"10.{i}.0.{len(name)}", "birthName": f"eth{eth_of[net]}"} for i, net in enumerate(networks)
        ]
        annotations = {"networking.gke.io/north-interfaces": json.dumps(north), "networking.gke.io/nic-info": json.dumps(nic_info)}
    return {"kind": "Node", "metadata": {"name": name, "annotations": annotations}, "status": {"allocatable": alloc}}


def installer_pod(name, node, tag, *, phase="Running", namespace="kube-system", deleting=False, image=None):
    meta = {"name": name, "namespace": namespace}
    if deleting:
        meta["deletionTimestamp"] = "2026-10-21T10:00:00Z"
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": node,
            "initContainers": [{"name": "nccl-tcpxo-installer", "image": image or f"{PLUGIN}:{tag}"}],
            "containers": [{"name": "pause", "image": "gcr.io/google-containers/pause:2.0"}],
        },
        "status": {"phase": phase},
    }


def h100_node(name):
    return {"kind": "Node", "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}}}


def tcpxo(pods, node_names=("n1", "n2")):
    facts = ClusterFacts(nodes=tuple(h100_node(n) for n in node_names), pods=tuple(pods))
    return detect_tcpxo_profile(facts, facts.nodes)


def test_gate():
    assert gcp_detection_applies("gcp", "h100")
    assert not gcp_detection_applies("gcp", "gb200")
    assert not gcp_detection_applies("aws", "h100")


# --------------------------------------------------------------------------- networks


def test_fixture_networks_in_interface_order():
    facts = load_facts(FIXTURES / "gcp-h100-a3mega.yaml")
    fact, diags = detect_gke_networks(facts.nodes)
    assert fact.value == tuple(f"aicr-7f3a-gpu-nic-{i}" for i in range(8))
    assert fact.source == "detected" and "interface order" in fact.detail
    assert diags == []


def test_interface_order_beats_name_order():
    nets = [f"vpc{i}" for i in range(1, 9)]
    eth_of = {net: 9 - i for i, net in enumerate(nets, start=1)}  # vpc1 -> eth8 ... vpc8 -> eth1
    fact, _ = detect_gke_networks([gke_node("a", nets, eth_of), gke_node("bb", nets, eth_of)])
    assert fact.value == tuple(reversed(nets))


def test_disagreeing_nodes_fall_back_to_name_order():
    nets = [f"vpc{i}" for i in range(1, 9)]
    forward = {net: i for i, net in enumerate(nets, start=1)}
    backward = {net: 9 - i for i, net in enumerate(nets, start=1)}
    fact, diags = detect_gke_networks([gke_node("a", nets, backward), gke_node("bb", nets, forward)])
    assert fact.value == tuple(nets) and fact.detail.endswith("ordered by name") and diags == []


def test_missing_annotations_fall_back_to_name_order():
    nets = ["net-b", "net-a", "net-d", "net-c", "net-f", "net-e", "net-h", "net-g"]
    fact, _ = detect_gke_networks([gke_node("a", nets)])
    assert fact.value == tuple(sorted(nets))


def test_only_networks_on_every_node_count():
    nets = [f"gpu-nic{i}" for i in range(8)]
    fact, diags = detect_gke_networks([gke_node("a", nets, extra=["stray"]), gke_node("b", nets)])
    assert fact.value == tuple(nets) and diags == []


def test_too_few_shared_networks_fall_back_with_a_warning():
    fact, [diag] = detect_gke_networks([gke_node("a", ["vpc1", "vpc2", "vpc3", "vpc4"]), gke_node("b", ["vpc1", "vpc2", "vpc3", "vpc4"])])
    assert (fact.value, fact.source) == (default_gke_networks(), "defaulted")
    assert default_gke_networks() == tuple(f"gpu-nic{i}" for i in range(8))
    assert (diag.code, diag.severity) == ("GKENetworkDetection", Severity.WARNING)
    assert diag.message == (
        "4 GKE networks are offered by all 2 target nodes (vpc1, vpc2, vpc3, vpc4), but TCPXO needs exactly 8 "
        "(a3-megagpu-8g); rendering the default names gpu-nic0..gpu-nic7. GKE rejects the pods unless Network "
        "objects with those names exist"
    )


def test_no_shared_network_falls_back_with_a_warning():
    fact, [diag] = detect_gke_networks([gke_node("a", []), gke_node("b", [])])
    assert fact.source == "defaulted"
    assert diag.message.startswith("no GKE network is offered by all 2 target nodes")


# --------------------------------------------------------------------------- TCPXO


@pytest.mark.parametrize(
    ("tag", "parsed"),
    [
        ("v1.0.15", (1, 0, 15)),
        ("v1.0.16-gke.1", (1, 0, 16)),
        ("v1.0.17-1", (1, 0, 17)),
        ("v10.2.3", (10, 2, 3)),
        ("1.0.15", None),
        ("v1.0", None),
        ("latest", None),
        ("", None),
        ("v1.0.15-", None),
    ],
)
def test_parse_release(tag, parsed):
    assert parse_release(tag) == parsed


@pytest.mark.parametrize(
    ("image", "tag"),
    [
        (f"{PLUGIN}:v1.0.15", "v1.0.15"),
        (f"{PLUGIN}:v1.0.15@sha256:" + "a" * 64, "v1.0.15"),
        (f"{PLUGIN}@sha256:" + "a" * 64, ""),
        (PLUGIN, ""),
        ("registry.local:5000/mirror/nccl-plugin-gpudirecttcpx-dev:v1.0.17", "v1.0.17"),
        ("nccl-plugin-gpudirecttcpx-dev:v1.0.16", "v1.0.16"),
        ("us-docker.pkg.dev/x/nccl-plugin-gpudirecttcpx:v1.0.16", None),
    ],
)
def test_installer_tag(image, tag):
    assert installer_tag(installer_pod("p", "n1", "", image=image)) == tag


def test_fixture_plugin_v1_0_16():
    facts = load_facts(FIXTURES / "gcp-h100-a3mega.yaml")
    fact, diags = detect_tcpxo_profile(facts, facts.nodes)
    profile = fact.value
    assert fact.source == "detected" and diags == []
    assert (profile.plugin_version, profile.detected_version, profile.exact) == ("v1.0.16", "v1.0.16", True)
    assert profile.daemon_image == f"{DAEMON}:v1.0.22"


@pytest.mark.parametrize(
    ("tag", "row", "nccl", "training", "daemon_tag"),
    [
        ("v1.0.15", "v1.0.15", "nvcr.io/nvidia/pytorch:25.06-py3", "nvcr.io/nvidia/pytorch:25.06-py3", "v1.0.21"),
        ("v1.0.16", "v1.0.16", "nvcr.io/nvidia/pytorch:25.06-py3", "nvcr.io/nvidia/pytorch:25.06-py3", "v1.0.22"),
        ("v1.0.17", "v1.0.17", "nvcr.io/nvidia/pytorch:26.01-py3", "nvcr.io/nvidia/pytorch:25.08-py3", "v1.0.23"),
        ("v1.0.16-gke.1", "v1.0.16", "nvcr.io/nvidia/pytorch:25.06-py3", "nvcr.io/nvidia/pytorch:25.06-py3", "v1.0.22"),
        ("v1.0.17-1", "v1.0.17", "nvcr.io/nvidia/pytorch:26.01-py3", "nvcr.io/nvidia/pytorch:25.08-py3", "v1.0.23"),
    ],
)
def test_exact_releases_render_their_row_silently(tag, row, nccl, training, daemon_tag):
    fact, diags = tcpxo([installer_pod("a", "n1", tag), installer_pod("b", "n2", tag)])
    p = fact.value
    assert diags == [] and fact.source == "detected"
    assert (p.plugin_version, p.detected_version, p.exact) == (row, tag, True)
    assert (p.nccl_image, p.training_image, p.daemon_image) == (nccl, training, f"{DAEMON}:{daemon_tag}")
    assert p.daemon_args == ("--num_hops=2",)


@pytest.mark.parametrize("tag", ["v1.0.18", "v1.1.0", "v2.0.0", "v1.0.18-gke.3"])
def test_newer_release_uses_the_newest_row_with_a_warning(tag):
    fact, [diag] = tcpxo([installer_pod("a", "n1", tag), installer_pod("b", "n2", tag)])
    assert (fact.value.plugin_version, fact.value.exact, fact.source) == ("v1.0.17", False, "detected")
    assert (diag.code, diag.severity) == ("TCPXOPluginDetection", Severity.WARNING)
    assert f"TCPXO plugin {tag} is newer than the newest validated release v1.0.17" in diag.message
    assert "nvcr.io/nvidia/pytorch:26.01-py3" in diag.message and "categories[].options.image" in diag.message


@pytest.mark.parametrize("tag", ["v1.0.14", "v1.0.8", "v0.9.99"])
def test_older_release_falls_back_with_a_warning(tag):
    fact, [diag] = tcpxo([installer_pod("a", "n1", tag), installer_pod("b", "n2", tag)])
    assert (fact.value.plugin_version, fact.value.exact, fact.source) == ("v1.0.15", False, "defaulted")
    assert f"TCPXO plugin {tag} is older than the oldest supported release v1.0.15" in diag.message
    assert "Upgrade the TCPXO installer" in diag.message


def test_release_between_rows_uses_the_newest_older_row(monkeypatch):
    rows = {r["plugin"]: r for r in gcp.table("tcpxo")["releases"]}
    monkeypatch.setattr(
        gcp, "_releases", lambda: ((parse_release("v1.0.15"), rows["v1.0.15"]), (parse_release("v1.0.17"), rows["v1.0.17"]))
    )
    profile, kind = tcpxo_profile_for("v1.0.16")
    assert (profile.plugin_version, profile.exact, kind) == ("v1.0.15", False, "between")
    fact, [diag] = tcpxo([installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "v1.0.16")])
    assert "falls between validated releases; the nearest older one is v1.0.15" in diag.message


@pytest.mark.parametrize(
    ("pods", "reason"),
    [
        ([], "the cluster facts hold no Pods; add the kube-system pods"),
        ([installer_pod("a", "n1", "v1.0.16")], "no running TCPXO installer on 1 of 2 target nodes (n2)"),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "v1.0.17")],
            "the target nodes run different versions: v1.0.16 on 1 node, v1.0.17 on 1 node",
        ),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "", image=PLUGIN)],
            "the target nodes run different versions: untagged on 1 node, v1.0.16 on 1 node",
        ),
        ([installer_pod("a", "n1", "", image=PLUGIN), installer_pod("b", "n2", "", image=PLUGIN)], "the installer image is untagged"),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "v1.0.16", phase="Pending")],
            "no running TCPXO installer on 1 of 2 target nodes (n2)",
        ),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "v1.0.16", deleting=True)],
            "no running TCPXO installer on 1 of 2 target nodes (n2)",
        ),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "n2", "v1.0.16", namespace="default")],
            "no running TCPXO installer on 1 of 2 target nodes (n2)",
        ),
        (
            [installer_pod("a", "n1", "v1.0.16"), installer_pod("b", "other", "v1.0.16")],
            "no running TCPXO installer on 1 of 2 target nodes (n2)",
        ),
    ],
)
def test_version_not_detected_falls_back_with_the_reason(pods, reason):
    fact, [diag] = tcpxo(pods)
    assert (fact.value, fact.source) == (default_tcpxo_profile(), "defaulted")
    assert (diag.code, diag.severity) == ("TCPXOPluginDetection", Severity.WARNING)
    assert diag.message.startswith("TCPXO plugin version not detected: " + reason)
    assert "Rendering the v1.0.15 images (NCCL nvcr.io/nvidia/pytorch:25.06-py3" in diag.message


def test_non_release_tag_falls_back():
    fact, [diag] = tcpxo([installer_pod("a", "n1", "latest"), installer_pod("b", "n2", "latest")])
    assert fact.source == "defaulted" and fact.value.plugin_version == "v1.0.15"
    assert "installer tag latest is not a release tag" in diag.message


def test_installer_in_a_regular_container_is_found_too():
    pod = installer_pod("a", "n1", "v1.0.17")
    pod["spec"]["containers"] = pod["spec"].pop("initContainers")
    fact, diags = tcpxo([pod], node_names=("n1",))
    assert fact.value.plugin_version == "v1.0.17" and diags == []


def test_default_profile():
    p = default_tcpxo_profile()
    assert (p.plugin_version, p.detected_version, p.exact, p.daemon_image) == ("v1.0.15", "", False, f"{DAEMON}:v1.0.21")
    assert p.as_dict()["daemonArgs"] == ["--num_hops=2"]
