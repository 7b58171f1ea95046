"""``workflow render``: a hand-written Workflow planned over mock nodes, with its overrides applied."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from nvcre.compiler.detect import detect_cluster
from nvcre.compiler.diagnostics import CompileError
from nvcre.compiler.facts import facts_from_documents
from nvcre.compiler.mocknodes import mock_nodes

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / "golden" / "expand" / "workloadrun-overrides-applied" / "workflow.yaml"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nvcre.cli.main", "workflow", "render", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("platform", ["aws", "gcp", "azure", "oci", "nscale", "mistral", "togetherai", "forge", "onprem"])
@pytest.mark.parametrize("arch", ["h100", "gb200", "b300"])
def test_mock_nodes_detect_as_what_they_mock(platform: str, arch: str) -> None:
    nodes = mock_nodes(platform, arch, 3)
    detection, _ = detect_cluster(facts_from_documents(nodes), target={}, platform=None, gpu_arch=None, target_path="target")
    assert detection is not None
    assert (detection.platform, detection.gpu_arch) == (platform, arch)
    assert mock_nodes(platform, arch, 3) == nodes


def test_mock_nodes_refuse_unknown_values_together() -> None:
    with pytest.raises(CompileError) as caught:
        mock_nodes("moon", "h999", 0)
    assert {d.path for d in caught.value.diagnostics} == {"--platform", "--gpu-arch", "--nodes"}


def test_overrides_resolve_per_platform() -> None:
    aws = run(str(WORKFLOW), "--platform", "aws", "--gpu-arch", "h100")
    assert aws.returncode == 0, aws.stderr
    spec = yaml.safe_load(aws.stdout)["spec"]
    assert "overrides" not in spec
    assert spec["jobTemplate"]["spec"]["schedulingStallGraceSeconds"] == 60
    assert "override[0] applied" in aws.stderr and "Discovered 2 nodes" in aws.stderr
    annotations = yaml.safe_load(aws.stdout)["metadata"]["annotations"]
    assert annotations["nvcrectl.nvidia.com/detected-platform"] == "aws"
    assert annotations["nvcrectl.nvidia.com/detected-gpu-architecture"] == "h100"
    (applied,) = json.loads(annotations["nvcrectl.nvidia.com/applied-overrides"])
    assert applied["index"] == 0 and applied["when"] and applied["patches"]

    onprem = run(str(WORKFLOW), "--platform", "onprem", "--gpu-arch", "h100", "--nodes", "3")
    spec = yaml.safe_load(onprem.stdout)["spec"]
    assert spec["jobTemplate"]["spec"]["schedulingStallGraceSeconds"] == 900
    assert spec["orchestration"]["execution"]["timeoutPerJob"] == "2h"
    assert "Discovered 3 nodes" in onprem.stderr
    onprem_annotations = yaml.safe_load(onprem.stdout)["metadata"]["annotations"]
    assert onprem_annotations["nvcrectl.nvidia.com/detected-platform"] == "onprem"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--platform", "aws"], "mock nodes need both --platform and --gpu-arch"),
        (["--platform", "aws", "--gpu-arch", "h100", "--dry-run"], "give exactly one of"),
        ([], "give exactly one of"),
    ],
)
def test_bad_flags_exit_2(args: list[str], message: str) -> None:
    result = run(str(WORKFLOW), *args)
    assert result.returncode == 2
    assert message in result.stderr and result.stdout == ""


def test_a_certification_is_not_a_workflow() -> None:
    result = run("examples/certification.yaml", "--platform", "aws", "--gpu-arch", "h100")
    assert result.returncode == 2
    assert "expected kind Workflow" in result.stderr
