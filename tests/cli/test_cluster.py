"""`nvcrectl cluster info`: text and JSON output, exit codes, stdin, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nvcre.cli.cluster import app

FIXTURES = Path(__file__).parents[1] / "fixtures" / "facts"


def invoke(*args, input=None):
    return CliRunner().invoke(app, ["info", *args], input=input)


def test_text_output_aws():
    r = invoke("--facts", str(FIXTURES / "aws-h100-2nodes.yaml"))
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[:4] == [
        "Platform:     aws (detected: spec.providerID of 2 target nodes)",
        "GPU:          NVIDIA-H100-80GB-HBM3 (h100, 8 GPUs/node)",
        "GPUs:         16 on 2 nodes",
        "Nodes:        2 ready of 2",
    ]
    assert "TOPOLOGY (topology.k8s.aws/network-node-layer-1):\n  nn-1a2b3c    2 nodes\n" in r.stdout
    assert "EXCLUDED (1 node):" in r.stdout
    assert r.stderr.startswith("info: target: 1 node without GPUs")


def test_dra_only_gpus_are_counted_from_resource_slices():
    r = invoke("--facts", str(FIXTURES / "nscale-gb300-dra.yaml"), "-o", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["platform"] == "nscale" and data["detection"]["platform"]["source"] == "detected"
    assert (data["gpuArchitecture"], data["gpuProduct"], data["gpusPerNode"], data["totalGPUs"]) == ("gb300", "NVIDIA-GB300", 4, 12)
    assert data["gpuArchitectureKnown"] is True
    assert data["gpuProducts"] == [{"product": "NVIDIA-GB300", "nodes": 3}]
    assert {n["gpuSource"] for n in data["nodeDetails"]} == {"resourceslices"}
    assert data["topologyDomains"] == [
        {"key": "topology.nks.nscale.com/accelerator-domain", "domains": [{"value": "ad-r01", "nodes": 2}, {"value": "ad-r02", "nodes": 1}]}
    ]
    assert "topology" not in data  # NVCRE's topology is the platform's network-block label, which Nscale has none of
    assert [d["code"] for d in data["diagnostics"]] == ["NodeExcluded", "GPUProductFromResourceSlice"]


def test_gcp_output_shows_networks_and_tcpxo():
    r = invoke("--facts", str(FIXTURES / "gcp-h100-a3mega.yaml"))
    assert r.exit_code == 0, r.output
    assert "TCPXO plugin: v1.0.16 -> v1.0.16 profile (detected)" in r.stdout
    assert "tcpxo-daemon us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.22 --num_hops=2" in r.stdout
    assert "GKE networks: aicr-7f3a-gpu-nic-0, aicr-7f3a-gpu-nic-1," in r.stdout
    assert "TOPOLOGY (cloud.google.com/gce-topology-block):" in r.stdout


def test_gpu_clique_topology_and_mixed_counts():
    r = invoke("--facts", str(FIXTURES / "onprem-gb200-rdma.yaml"))
    assert "TOPOLOGY (nvidia.com/gpu.clique):\n  8a7f3c2e-0d4b-4f6e-9b1a-3c5d7e9f1a2b.1    3 nodes" in r.stdout
    r = invoke("--facts", str(FIXTURES / "under-capacity.yaml"))
    assert "GPU:          NVIDIA-H100-80GB-HBM3 (h100, 4-8 GPUs/node)" in r.stdout


def test_nic_resource_line_for_onprem_gb200_gb300():
    r = invoke("--facts", str(FIXTURES / "onprem-gb200-rdma.yaml"))
    assert "NIC resource: rdma/ib (detected, at mlnxPerNode=8)" in r.stdout
    r = invoke("--facts", str(FIXTURES / "onprem-gb300-ambiguous-nics.yaml"))
    assert "NIC resource: none chosen (defaulted, at mlnxPerNode=8)" in r.stdout
    assert "Set nicResourceName to choose one [NICResourceDetection]" in r.stderr
    r = invoke("--facts", str(FIXTURES / "aws-h100-2nodes.yaml"))
    assert "NIC resource" not in r.stdout


def test_topology_key_flag_replaces_the_detected_keys():
    r = invoke("--facts", str(FIXTURES / "aws-h100-2nodes.yaml"), "--topology-key", "topology.k8s.aws/network-node-layer-2")
    assert "TOPOLOGY (topology.k8s.aws/network-node-layer-2):\n  nn-4d5e6f    1 node\n" in r.stdout
    assert "network-node-layer-1" not in r.stdout


def test_unknown_gpu_prints_the_defaults_warning():
    r = invoke("--facts", str(FIXTURES / "unknown-gpu.yaml"))
    assert r.exit_code == 0
    assert "GPU:          Tesla-V100-SXM2-16GB (v100, 8 GPUs/node)" in r.stdout
    [line] = [text for text in r.stderr.splitlines() if text.endswith("[GPUArchitectureDefaults]")]
    assert line.startswith("warning: target: GPU architecture 'v100'")
    assert "gpusPerNode=4 mlnxPerNode=0" in line
    r = invoke("--facts", str(FIXTURES / "aws-h100-2nodes.yaml"))
    assert "GPUArchitectureDefaults" not in r.stderr


def test_mixed_platforms_exit_2_with_nothing_on_stdout():
    r = invoke("--facts", str(FIXTURES / "mixed-providers.yaml"))
    assert r.exit_code == 2
    assert r.stdout == ""
    assert "error: target: target nodes span 2 platforms: aws on 2 nodes" in r.stderr


def test_malformed_facts_exit_2_with_paths(tmp_path):
    bad = tmp_path / "facts.yaml"
    bad.write_text("kind: List\napiVersion: v1\nitems:\n- {kind: Node, metadata: {name: a}}\n- {kind: Node, metadata: {}}\n")
    r = invoke("--facts", str(bad), "-o", "json")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert r.stderr == (
        f"error: {bad}: items[1].metadata.name: Node needs a non-empty string name [FactsMalformed]\n1 error(s); nothing was written\n"
    )


def test_missing_file_exits_2():
    r = invoke("--facts", "does-not-exist.yaml")
    assert (r.exit_code, r.stdout) == (2, "")
    assert "[FactsUnreadable]" in r.stderr


def test_stdin():
    r = invoke("--facts", "-", input=(FIXTURES / "kind-mokka-h100.yaml").read_text())
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("Platform:     onprem")


def test_bad_output_format_is_a_usage_error():
    r = invoke("--facts", str(FIXTURES / "kind-mokka-h100.yaml"), "-o", "wide")
    assert r.exit_code == 2


@pytest.mark.parametrize("fixture", ["aws-h100-2nodes.yaml", "gcp-h100-a3mega.yaml"])
def test_json_is_stable_bytes(fixture):
    first = invoke("--facts", str(FIXTURES / fixture), "-o", "json").stdout
    second = invoke("--facts", str(FIXTURES / fixture), "-o", "json").stdout
    assert first == second and first.endswith("}\n")


def test_importing_the_sub_app_is_cheap():
    probe = (
        "import sys; import nvcre.cli.cluster; "
        "heavy = [m for m in ('ruamel.yaml', 'nvcre.compiler.facts', 'nvcre.compiler.detect', 'kubernetes') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
