"""What scripts written for NVCRE's ``nvcrectl`` read, run through the installed ``nvcrectl``.

Each test names the NVCRE behaviour it holds us to (NVCRE v0.8.2, ``NVIDIA/cluster-readiness-engine``):

- ``certification list-categories`` prints Go's ``%-20s %s`` table of ``DOMAIN`` and ``VARIANT``
  (``pkg/certification/certification.go``, ``runListCategories``);
- ``--version`` prints cobra's ``nvcrectl version <version>`` (``cmd/nvcrectl/main.go``);
- ``cluster info -o json|yaml`` is the ``ClusterInfo`` struct (``pkg/cluster/cluster.go``);
- ``workloadrun render -o json`` prints the one Workflow as an object (``runWorkloadRunRender``),
  and refuses ``--gpu-arch`` beside ``--dry-run`` with NVCRE's message;
- a closed stdout ends the command without a word, as ``SIGPIPE`` ends a Go program.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
NVCRECTL = shutil.which("nvcrectl", path=str(Path(sys.executable).parent)) or "nvcrectl"
FACTS = REPO / "tests" / "fixtures" / "facts"
CLUSTER_INFO_KEYS = ["platform", "gpuArchitecture", "gpuProduct", "gpusPerNode", "catalogGpusPerNode", "totalNodes", "totalGPUs", "nodes"]


def nvcrectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([NVCRECTL, *args], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


def test_list_categories_default_table_is_domain_and_variant_as_nvcre_prints_it() -> None:
    done = nvcrectl("certification", "list-categories")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header == f"{'DOMAIN':<20} VARIANT"
    as_json = json.loads(nvcrectl("certification", "list-categories", "-o", "json").stdout)
    assert rows == [f"{c['domain']:<20} {c['variant']}" for c in as_json]
    # What a script written for NVCRE does with it: awk 'NR>1{print $1"/"$2}'.
    assert [" ".join(r.split()[:2]).replace(" ", "/") for r in rows][:1] == ["communication/nccl-all-gather"]


def test_list_categories_wide_keeps_timeout_and_description() -> None:
    done = nvcrectl("certification", "list-categories", "-o", "wide")
    assert done.returncode == 0, done.stderr
    assert re.match(r"CATEGORY +TIMEOUT +DESCRIPTION\ncommunication/nccl-all-gather +1h +NCCL", done.stdout)


def test_version_flag_prints_cobras_nvcrectl_version_line() -> None:
    from nvcre import __version__

    flag, command = nvcrectl("--version"), nvcrectl("version")
    assert flag.returncode == command.returncode == 0
    assert flag.stdout == command.stdout == f"nvcrectl version {__version__}\n"


@pytest.mark.parametrize(
    "args",
    [
        ["certification", "list-categories"],
        ["certification", "render", "examples/certification.yaml", "--platform", "aws", "--gpu-arch", "h100"],
        ["cluster", "info", "--facts", "tests/fixtures/facts/aws-h100-2nodes.yaml", "-o", "json"],
        ["--help"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_closed_stdout_ends_quietly_as_sigpipe_ends_a_go_cli(args: list[str]) -> None:
    # The reader is gone before the first write: what `nvcrectl ... | head -1` becomes once head exits.
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([NVCRECTL, *args], cwd=REPO, stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr and "Broken pipe" not in done.stderr
    assert "error" not in done.stderr.lower()


def test_cluster_info_json_is_nvcres_cluster_info() -> None:
    done = nvcrectl("cluster", "info", "--facts", str(FACTS / "aws-h100-2nodes.yaml"), "-o", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert {k: info[k] for k in CLUSTER_INFO_KEYS[:-1]} == {
        "platform": "aws",
        "gpuArchitecture": "h100",
        "gpuProduct": "NVIDIA-H100-80GB-HBM3",
        "gpusPerNode": 8,
        "catalogGpusPerNode": 8,
        "totalNodes": 2,
        "totalGPUs": 16,
    }
    assert info["nodes"] == [
        {"name": "ip-10-0-12-34.ec2.internal", "gpus": 8, "ready": True, "rack": "nn-1a2b3c"},
        {"name": "ip-10-0-12-35.ec2.internal", "gpus": 8, "ready": True, "rack": "nn-1a2b3c"},
    ]
    assert info["topology"] == {
        "key": "topology.k8s.aws/network-node-layer-1",
        "racks": [{"name": "nn-1a2b3c", "nodes": ["ip-10-0-12-34.ec2.internal", "ip-10-0-12-35.ec2.internal"], "nodeCount": 2}],
    }
    # Ours beside NVCRE's, under keys NVCRE does not use.
    assert info["detection"]["platform"] == {"value": "aws", "source": "detected", "detail": "spec.providerID of 2 target nodes"}
    assert info["excludedNodes"][0]["name"] == "ip-10-0-1-10.ec2.internal"


def test_cluster_info_yaml_is_the_same_cluster_info() -> None:
    as_yaml = nvcrectl("cluster", "info", "--facts", str(FACTS / "under-capacity.yaml"), "-o", "yaml")
    as_json = nvcrectl("cluster", "info", "--facts", str(FACTS / "under-capacity.yaml"), "-o", "json")
    assert as_yaml.returncode == as_json.returncode == 0, as_yaml.stderr
    info = yaml.safe_load(as_yaml.stdout)
    assert info == json.loads(as_json.stdout)
    assert set(CLUSTER_INFO_KEYS) <= set(info)
    assert isinstance(info["platform"], str) and isinstance(info["nodes"], list)
    # The smallest node sets gpusPerNode, as NVCRE's buildClusterInfo does.
    assert info["gpusPerNode"] == min(n["gpus"] for n in info["nodes"])
    assert info["totalGPUs"] == sum(n["gpus"] for n in info["nodes"]) and info["totalNodes"] == len(info["nodes"])
    assert all(set(n) <= {"name", "gpus", "ready", "rack"} for n in info["nodes"])


def test_cluster_info_omits_topology_without_racks() -> None:
    done = nvcrectl("cluster", "info", "--facts", str(FACTS / "kind-mokka-h100.yaml"), "-o", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["platform"] == "onprem" and "topology" not in info
    assert all("rack" not in n for n in info["nodes"])


def test_workloadrun_render_json_is_one_workflow_object() -> None:
    done = nvcrectl("workloadrun", "render", "examples/workloadrun-torch.yaml", "--platform", "aws", "--gpu-arch", "h100", "-o", "json")
    assert done.returncode == 0, done.stderr
    workflow = json.loads(done.stdout)
    assert isinstance(workflow, dict) and workflow["kind"] == "Workflow" and workflow["metadata"]["name"]
    # certification render keeps its array of Workflows.
    cert = nvcrectl("certification", "render", "examples/certification.yaml", "--platform", "aws", "--gpu-arch", "h100", "-o", "json")
    assert cert.returncode == 0 and isinstance(json.loads(cert.stdout), list)


def test_workloadrun_render_refuses_gpu_arch_beside_dry_run_with_nvcres_message() -> None:
    done = nvcrectl("workloadrun", "render", "examples/workloadrun-torch.yaml", "--dry-run", "--gpu-arch", "h100")
    assert done.returncode == 2 and done.stdout == ""
    assert "--dry-run detects the GPU architecture from cluster nodes; cannot combine with --gpu-arch" in done.stderr


def test_workloadrun_render_takes_kubeconfig_and_context(tmp_path: Path) -> None:
    # NVCRE's flags exist: an unreadable kubeconfig is a cluster error (exit 1), not an unknown flag (exit 2).
    missing = tmp_path / "nothing"
    done = nvcrectl("workloadrun", "render", "examples/workloadrun-torch.yaml", "--dry-run", "--kubeconfig", str(missing), "--context", "x")
    assert done.returncode == 1 and done.stdout == ""
    assert "cannot load cluster credentials" in done.stderr


def test_workloadrun_render_dry_run_reads_the_cluster_not_a_facts_file() -> None:
    facts = str(FACTS / "aws-h100-2nodes.yaml")
    done = nvcrectl("workloadrun", "render", "examples/workloadrun-torch.yaml", "--dry-run", "--facts", facts)
    assert done.returncode == 2 and done.stdout == ""
    assert "--dry-run reads the facts from the cluster; cannot combine with --facts" in done.stderr
