"""detect_cluster: the single entry point, offline mode, provenance, determinism, purity."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from nvcre.compiler.detect import ClusterDetection, detect_cluster
from nvcre.compiler.diagnostics import Severity
from nvcre.compiler.facts import facts_from_documents, load_facts

FIXTURES = Path(__file__).parents[2] / "fixtures" / "facts"
ALL_GPUS = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}


def run(fixture, target=ALL_GPUS, platform=None, gpu_arch=None):
    facts = load_facts(FIXTURES / fixture) if fixture else None
    return detect_cluster(facts, target=target, platform=platform, gpu_arch=gpu_arch)


def provenance(detection):
    return {k: (f.source, f.value if isinstance(f.value, str) else None) for k, f in detection.decisions.items()}


def test_aws_h100():
    det, diags = run("aws-h100-2nodes.yaml")
    assert (det.platform, det.gpu_arch, det.gpu_arch_known) == ("aws", "h100", True)
    assert det.target_nodes == ("ip-10-0-12-34.ec2.internal", "ip-10-0-12-35.ec2.internal")
    assert det.gpu_products == ("NVIDIA-H100-80GB-HBM3",)
    assert det.gke_networks is None and det.tcpxo is None
    assert provenance(det) == {"platform": ("detected", "aws"), "gpuArchitecture": ("detected", "h100")}
    assert diags == []  # the system node is not selected by the nodeSelector


def test_gcp_h100_detects_networks_and_tcpxo():
    det, diags = run("gcp-h100-a3mega.yaml")
    assert (det.platform, det.gpu_arch) == ("gcp", "h100")
    assert det.gke_networks == tuple(f"aicr-7f3a-gpu-nic-{i}" for i in range(8))
    assert det.tcpxo.plugin_version == "v1.0.16" and det.tcpxo.exact
    assert provenance(det)["gkeNetworks"][0] == "detected" and provenance(det)["tcpxoPlugin"][0] == "detected"
    assert diags == []


def test_nscale_dra_only_gb300():
    det, diags = run("nscale-gb300-dra.yaml", target={})
    assert (det.platform, det.gpu_arch) == ("nscale", "gb300")
    assert det.target_nodes == ("nks-gb300-r01-n01", "nks-gb300-r01-n02", "nks-gb300-r02-n01")
    assert det.dra_product_nodes == det.target_nodes
    assert det.excluded_nodes == (("nks-gb300-r02-n02", "not labelled nvidia.com/gpu.present=true"),)
    assert [d.code for d in diags] == ["NodeExcluded", "GPUProductFromResourceSlice"]


def test_onprem_gb200_excludes_the_cordoned_tray():
    det, diags = run("onprem-gb200-rdma.yaml", target={})
    assert (det.platform, det.gpu_arch) == ("onprem", "gb200")
    assert [e.name for e in det.excluded_nodes] == ["cp-01", "gb200-r01-t04"]
    assert len(det.nodes) == 3


def test_mixed_providers_fail():
    det, diags = run("mixed-providers.yaml")
    assert det is None
    assert [d.code for d in diags if d.is_error] == ["MixedPlatforms"]


def test_platform_flag_wins_and_is_recorded_as_supplied():
    det, diags = run("metal3-gb300.yaml", platform="onprem")
    assert det.platform == "onprem" and det.decisions["platform"].source == "supplied"
    assert [d.code for d in diags] == ["PlatformOverridden"]
    det, _ = run("metal3-gb300.yaml")
    assert det.platform == "mistral"


def test_kind_is_onprem():
    det, _ = run("kind-mokka-h100.yaml")
    assert det.platform == "onprem"


def test_invalid_flags_are_reported_together():
    det, diags = run("aws-h100-2nodes.yaml", platform="eks", gpu_arch="v100")
    assert det is None
    assert [d.code for d in diags] == ["InvalidPlatform", "InvalidGPUArch"]


def test_unknown_gpu_is_detected_and_flagged_as_unknown_to_the_catalog():
    det, diags = run("unknown-gpu.yaml")
    assert (det.gpu_arch, det.gpu_arch_known) == ("v100", False)
    assert diags == []  # the sizing warning comes from the GPU-defaults pass, which knows the sizes


def test_gpu_arch_flag_over_facts_excludes_other_architectures():
    det, diags = run("aws-h100-2nodes.yaml", gpu_arch="gb200")
    assert det is None
    assert [d.code for d in diags] == ["NodeExcluded", "NoTargetNodes"]


def test_no_matching_nodes():
    det, [diag] = run("aws-h100-2nodes.yaml", target={"nodeSelector": {"pool": "none"}})
    assert det is None
    assert (diag.code, diag.path) == ("NoTargetNodes", "spec.target")
    assert diag.message.startswith("no GPU nodes match the target in ") and diag.message.endswith("the facts hold 3 node(s)")


def test_invalid_target_stops_detection():
    det, diags = run("aws-h100-2nodes.yaml", target={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["one"]}]})
    assert det is None and [d.code for d in diags] == ["InvalidTarget"]


def test_facts_loading_notes_come_first():
    facts = facts_from_documents(
        [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n", "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-B300-SXM6-AC"}},
            },
        ],
        source="f.yaml",
    )
    det, diags = detect_cluster(facts, target={}, platform=None, gpu_arch=None)
    assert det.gpu_arch == "b300"
    assert [d.code for d in diags] == ["FactsKindIgnored"]


# --------------------------------------------------------------------------- offline


def test_offline_defaults_platform_and_takes_arch_from_the_flag():
    det, diags = detect_cluster(None, target={}, platform=None, gpu_arch="NVIDIA GB300")
    assert (det.platform, det.gpu_arch) == ("onprem", "gb300")
    assert provenance(det) == {"platform": ("defaulted", "onprem"), "gpuArchitecture": ("supplied", "gb300")}
    assert [(d.code, d.severity) for d in diags] == [("PlatformDefaulted", Severity.INFO)]
    assert det.target_nodes == () and det.nodes == ()


def test_offline_arch_from_node_selector():
    det, _ = detect_cluster(None, target={"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-GB200"}}, platform="oci", gpu_arch=None)
    assert (det.platform, det.gpu_arch) == ("oci", "gb200")
    assert det.decisions["gpuArchitecture"].detail == "target nodeSelector nvidia.com/gpu.product"
    # The flag beats the selector.
    det, _ = detect_cluster(None, target={"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-GB200"}}, platform=None, gpu_arch="h100")
    assert det.gpu_arch == "h100"


def test_offline_without_any_arch_is_an_error():
    det, diags = detect_cluster(None, target={"nodeSelector": {"nvidia.com/gpu.present": "true"}}, platform="aws", gpu_arch=None)
    assert det is None
    assert [(d.code, d.message) for d in diags if d.is_error] == [
        (
            "GPUArchitectureUnknown",
            "cannot determine GPU architecture from target nodeSelector or --gpu-arch (nvidia.com/gpu.product label is required)",
        )
    ]


def test_offline_gcp_h100_renders_defaults_with_a_note():
    det, diags = detect_cluster(None, target={}, platform="gcp", gpu_arch="h100")
    assert det.gke_networks == tuple(f"gpu-nic{i}" for i in range(8))
    assert det.tcpxo.plugin_version == "v1.0.15" and not det.tcpxo.exact
    assert provenance(det)["gkeNetworks"][0] == "defaulted" and provenance(det)["tcpxoPlugin"][0] == "defaulted"
    assert [(d.code, d.severity) for d in diags] == [("GKENetworkDetection", Severity.INFO), ("TCPXOPluginDetection", Severity.INFO)]


# --------------------------------------------------------------------------- output + determinism


def test_as_dict_is_plain_json():
    det, _ = run("gcp-h100-a3mega.yaml")
    data = det.as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["provenance"]["tcpxoPlugin"]["value"]["pluginVersion"] == "v1.0.16"
    assert data["provenance"]["gkeNetworks"]["value"][0] == "aicr-7f3a-gpu-nic-0"


def test_detection_is_frozen():
    det, _ = run("aws-h100-2nodes.yaml")
    assert isinstance(det, ClusterDetection)
    with pytest.raises(AttributeError):
        det.platform = "gcp"  # type: ignore[misc]
    with pytest.raises(TypeError):
        det.decisions["platform"] = None  # type: ignore[index]


def _documents(fixture):
    docs = []
    for doc in YAML(typ="safe").load_all((FIXTURES / fixture).read_text()):
        docs.extend(doc["items"] if doc.get("kind") == "List" else [doc])
    return docs


@pytest.mark.parametrize("fixture", ["gcp-h100-a3mega.yaml", "nscale-gb300-dra.yaml", "onprem-gb200-rdma.yaml", "under-capacity.yaml"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_object_order_gives_the_same_answer(fixture, data):
    docs = _documents(fixture)
    baseline = detect_cluster(facts_from_documents(docs, source="f"), target={}, platform=None, gpu_arch=None)
    shuffled = data.draw(st.permutations(docs))
    again = detect_cluster(facts_from_documents(shuffled, source="f"), target={}, platform=None, gpu_arch=None)
    assert again[0].as_dict() == baseline[0].as_dict()
    assert again[1] == baseline[1]


_PROBE = """
import json, sys
from nvcre.compiler.facts import load_facts
from nvcre.compiler.detect import detect_cluster
out = []
for path in sys.argv[1:]:
    det, diags = detect_cluster(load_facts(path), target={}, platform=None, gpu_arch=None)
    out.append([det.as_dict() if det else None, [d.as_dict() for d in diags]])
assert "kubernetes" not in sys.modules, "detection imported the kubernetes client"
print(json.dumps(out, sort_keys=True))
"""


def test_same_answer_under_any_hash_seed_and_no_kubernetes_import():
    paths = [str(p) for p in sorted(FIXTURES.glob("*.yaml"))]
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {"PYTHONHASHSEED": seed, "PATH": ""}
        result = subprocess.run([sys.executable, "-c", _PROBE, *paths], capture_output=True, text=True, env=env, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1
